"""torch's keyword spellings and ``out=`` on the ``ext.*`` functions, ``div``'s rounding modes,
and the argument checks op_db's error inputs ask for; each run on ext and torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest


def test_input_and_other_by_keyword(T):
    a = T.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = T.tensor([[0.5, 0.0], [0.0, 2.0]])
    assert T.matmul(input=a, other=b).tolist() == (a @ b).tolist()
    assert T.add(a, other=b, alpha=2).tolist() == (a + 2 * b).tolist()
    assert T.exp(input=a).tolist() == a.exp().tolist()


def test_numpy_axis_and_keepdims(T):
    a = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert T.sum(a, axis=0).tolist() == [5.0, 7.0, 9.0]
    assert T.mean(a, axis=1, keepdims=True).shape == (2, 1)
    assert T.amax(a, axis=1).tolist() == [3.0, 6.0]


def test_out_is_written_and_returned(T):
    x = T.tensor([1.0, 2.0, 3.0])
    out = T.empty(3)
    version = out._version
    got = T.add(x, x, out=out)
    assert got is out and out.tolist() == [2.0, 4.0, 6.0] and out._version > version


def test_out_of_another_shape_is_resized_with_torchs_warning(T):
    out = T.empty(5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        T.exp(T.zeros(2), out=out)
    assert out.tolist() == [1.0, 1.0]
    assert any("was resized since it had shape [5]" in str(w.message) for w in caught)
    empty = T.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (an empty out is resized silently)
        T.exp(T.zeros(2), out=empty)
    assert empty.shape == (2,)


def test_out_keeps_its_dtype_when_the_result_casts_into_it(T):
    out = T.empty(2, dtype=T.float64)
    T.add(T.tensor([1, 2]), 1, out=out)
    assert out.dtype == T.float64 and out.tolist() == [2.0, 3.0]


def test_out_of_a_narrower_kind_is_refused_before_writing(T):
    out = T.zeros(3, dtype=T.long)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        T.add(T.ones(3), 1.5, out=out)
    assert out.tolist() == [0, 0, 0]


def test_out_with_an_input_requiring_grad_is_refused(T):
    x = T.ones(3, requires_grad=True)
    out = T.zeros(3)
    with pytest.raises(RuntimeError, match=r"add\(\): functions with out=\.\.\. arguments "
                                           "don't support automatic differentiation"):
        T.add(x, x, out=out)
    assert out.tolist() == [0.0, 0.0, 0.0]


def test_an_expanded_out_is_refused(T):
    out = T.zeros(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        T.add(T.ones(2, 3), 1, out=out)


def test_out_pair_for_values_and_indices(T):
    values, indices = T.empty(2), T.empty(2, dtype=T.long)
    got = T.max(T.tensor([[1.0, 5.0], [7.0, 2.0]]), 1, out=(values, indices))
    assert got[0] is values and got[1] is indices
    assert values.tolist() == [5.0, 7.0] and indices.tolist() == [1, 0]


def test_a_factory_makes_outs_dtype(T):
    out = T.empty(0, dtype=T.long)
    T.arange(0, 6, 2, out=out)
    assert out.dtype == T.long and out.tolist() == [0, 2, 4]
    z = T.empty(2, 2)
    assert T.zeros(2, 2, out=z) is z


@pytest.mark.parametrize("mode", ["trunc", "floor", None])
def test_div_rounding_modes(T, mode, rng):
    a = rng.uniform(-5, 5, 6)
    b = rng.choice([-2.0, 0.5, 3.0], 6)
    x = T.tensor(a, requires_grad=True)
    y = T.tensor(b, requires_grad=True)
    out = T.div(x, y, rounding_mode=mode)
    expected = {"trunc": np.trunc(a / b), "floor": np.floor(a / b), None: a / b}[mode]
    np.testing.assert_allclose(out.detach().numpy(), expected)
    node = out.grad_fn
    assert type(node).__name__ == "DivBackward2"
    assert node._saved_rounding_mode == mode
    assert node._saved_other is y and node._saved_self is x
    out.backward(T.ones(6))
    if mode is None:
        np.testing.assert_allclose(x.grad.numpy(), 1 / b)
    else:
        assert x.grad.tolist() == [0.0] * 6 and y.grad.tolist() == [0.0] * 6


def test_div_rounding_of_integers_stays_integer(T):
    a = T.tensor([7, -7, 6, -6])
    assert T.div(a, 2, rounding_mode="trunc").tolist() == [3, -3, 3, -3]
    assert T.div(a, 2, rounding_mode="floor").tolist() == [3, -4, 3, -3]
    assert T.div(a, 2, rounding_mode="floor").dtype == T.int64
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        T.div(a, 0, rounding_mode="floor")


def test_div_with_a_number_saves_it_as_a_tensor(T):
    x = T.tensor([1.5, -2.5], requires_grad=True)
    node = T.div(x, 2, rounding_mode="floor").grad_fn
    assert node._saved_other.tolist() == 2 and node._saved_self is None


def test_div_refuses_an_unknown_rounding_mode(T):
    with pytest.raises(RuntimeError, match="div expected rounding_mode to be one of None, "
                                           "'trunc', or 'floor' but found 'round'"):
        T.div(T.ones(2), 2, rounding_mode="round")


def test_div_in_place_with_a_rounding_mode(T):
    x = T.tensor([7.0, -7.0])
    assert x.div_(2, rounding_mode="floor") is x and x.tolist() == [3.0, -4.0]


@pytest.mark.parametrize("name", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparisons_in_place_and_refusing_a_number_first(T, name):
    x = T.tensor([1.0, 2.0, 3.0])
    expected = getattr(x, name)(2.0).tolist()
    assert getattr(x, f"{name}_")(2.0) is x and x.tolist() == [float(v) for v in expected]
    with pytest.raises(TypeError, match=f"{name}\\(\\) received an invalid combination"):
        getattr(T, name)(2, T.tensor([1.0]))


def test_bitwise_function_takes_a_number_first(T):
    assert T.bitwise_and(6, T.tensor([3, 5])).tolist() == [2, 4]
    with pytest.raises(TypeError):
        T.bitwise_and(6, 3)


def test_logical_ops_in_place(T):
    x = T.tensor([1.0, 0.0, 2.0])
    assert x.logical_not_() is x and x.tolist() == [0.0, 1.0, 0.0]
    y = T.tensor([True, False])
    y.logical_or_(T.tensor([False, False]))
    assert y.tolist() == [True, False]
    z = T.tensor([1, 2])
    assert z.bitwise_not_().tolist() == [-2, -3]


@pytest.mark.parametrize("which", ["rtol", "atol"])
def test_isclose_refuses_a_negative_tolerance(T, which):
    with pytest.raises(RuntimeError, match=f"{which} must be greater than or equal to zero, "
                                           "but got -0.4"):
        T.isclose(T.tensor(1.0), T.tensor(1.0), **{which: -0.4})


def test_linspace_takes_only_scalar_tensor_bounds(T):
    assert T.linspace(T.tensor(0.0), T.tensor(1.0), 3).tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(RuntimeError, match="got start with 1 dimension"):
        T.linspace(T.ones(2), 1, 3)
    with pytest.raises(RuntimeError, match="got start with 1 dimension\\(s\\) and end with 1"):
        T.linspace(T.ones(2), T.ones(2), 3)


def test_swapaxes_and_swapdims_are_transpose(T):
    x = T.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], requires_grad=True)
    for y in (T.swapaxes(x, 0, 1), x.swapaxes(axis0=0, axis1=1), T.swapdims(x, dim0=1, dim1=0),
              x.swapdims(0, 1)):
        assert y.tolist() == x.transpose(0, 1).tolist()
        assert type(y.grad_fn).__name__ == "TransposeBackward0"
        assert y._base is x  # (a view, as transpose is)
