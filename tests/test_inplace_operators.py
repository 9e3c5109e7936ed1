"""Augmented bitwise operators write into the tensor (as torch's do), and ``__rmatmul__``.

``x &= y`` must modify ``x`` itself, so that its views and every other reference see the new
values: falling back to ``x = x & y`` would rebind the name and leave them stale.
"""

from __future__ import annotations

import operator

import pytest

# (augmented operator, its out-of-place operator, the in-place method torch runs for it)
BITWISE = [
    (operator.iand, operator.and_, "bitwise_and_"),
    (operator.ior, operator.or_, "bitwise_or_"),
    (operator.ixor, operator.xor, "bitwise_xor_"),
]
IDS = ["and", "or", "xor"]


@pytest.mark.parametrize("aug, plain, method", BITWISE, ids=IDS)
def test_augmented_bitwise_writes_into_the_tensor_its_views_see_it(T, aug, plain, method):
    x = T.tensor([5, 6, 7, 12])
    other = T.tensor([3, 10, 1, 4])
    expected = plain(x.clone(), other)
    view = x[1:]
    before = x._version
    result = aug(x, other)
    assert result is x  # not a new tensor bound to the name
    assert x.tolist() == expected.tolist()
    assert view.tolist() == expected[1:].tolist()
    assert x._version == before + 1


@pytest.mark.parametrize("aug, plain, method", BITWISE, ids=IDS)
def test_inplace_bitwise_methods_write_and_keep_the_dtype(T, aug, plain, method):
    x = T.tensor([5, 6], dtype=T.int32)
    other = T.tensor([3, 12])  # int64: the result is cast back into int32, as torch allows
    expected = plain(x.clone(), other).to(T.int32)
    assert getattr(x, method)(other) is x
    assert x.dtype == T.int32
    assert x.tolist() == expected.tolist()


@pytest.mark.parametrize("aug, plain, method", BITWISE, ids=IDS)
def test_augmented_bitwise_on_bools_with_a_bool(T, aug, plain, method):
    x = T.tensor([True, False, True])
    ref = x
    x = aug(x, True)
    assert x is ref
    assert x.dtype == T.bool
    assert x.tolist() == [plain(v, True) for v in (True, False, True)]


def test_augmented_bitwise_through_a_view_writes_the_base(T):
    base = T.tensor([[1, 2], [3, 4]])
    row = base[1]
    row |= 8
    assert base.tolist() == [[1, 2], [3 | 8, 4 | 8]]


@pytest.mark.parametrize("aug, plain, method", BITWISE, ids=IDS)
def test_augmented_bitwise_on_a_float_tensor_raises_the_kernel_error(T, aug, plain, method):
    x = T.tensor([1.0, 2.0])
    with pytest.raises(NotImplementedError, match=f'"{method[:-1]}_cpu" not implemented for '
                                                  "'Float'"):
        aug(x, 1)
    assert x.tolist() == [1.0, 2.0]


def test_augmented_bitwise_refuses_a_result_that_cannot_be_cast_back(T):
    x = T.tensor([5, 6])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        x &= 1.5
    flags = T.tensor([True, False])
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired "
                                           "output type Bool"):
        flags |= T.tensor([3, 1])
    assert x.tolist() == [5, 6] and flags.tolist() == [True, False]


def test_augmented_bitwise_checks_shape_and_overlap(T):
    x = T.tensor([1, 2])
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the "
                                           r"broadcast shape \[2, 2\]"):
        x |= T.tensor([[1, 2], [3, 4]])
    y = T.tensor([1, 2, 3, 4])
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        y[1:].__iand__(y[:-1])


def test_augmented_bitwise_on_a_leaf_that_requires_grad_is_refused(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x ^= 1


def test_augmented_bitwise_with_an_unknown_operand_is_a_type_error(T):
    x = T.tensor([1, 2])
    with pytest.raises(TypeError):
        x &= "a"
    assert x.tolist() == [1, 2]


def test_ipow_writes_into_the_tensor(T):
    x = T.tensor([1.0, 2.0, 3.0])
    view = x[1:]
    expected = (x.clone() ** 2).tolist()
    x **= 2
    assert x.tolist() == expected and view.tolist() == expected[1:]


def test_matmul_assignment_rebinds_as_in_torch(T):
    # torch's Tensor has no __imatmul__: ``x @= y`` is ``x = x @ y``, a new tensor.
    assert not hasattr(T.Tensor, "__imatmul__")
    x = T.ones(2, 2)
    ref = x
    x @= T.full((2, 2), 2.0)
    assert x is not ref
    assert ref.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert x.tolist() == (ref @ T.full((2, 2), 2.0)).tolist()


def test_rmatmul_called_directly_is_the_product_with_the_operand_first(T, rng):
    a = rng.standard_normal((4, 2))
    b = rng.standard_normal((2, 3))
    x = T.tensor(b, requires_grad=True)
    y = T.tensor(a, requires_grad=True)
    out = x.__rmatmul__(y)
    expected = T.tensor(a) @ T.tensor(b)
    assert out.shape == (4, 3)
    assert T.allclose(out.detach(), expected)
    out.sum().backward()
    assert T.allclose(y.grad, T.ones(4, 3, dtype=T.float64) @ T.tensor(b).T)
    assert T.allclose(x.grad, T.tensor(a).T @ T.ones(4, 3, dtype=T.float64))
    v = T.tensor([2.0, 3.0])
    assert v.__rmatmul__(T.tensor([1.0, 4.0])).item() == 2.0 * 1.0 + 3.0 * 4.0


@pytest.mark.parametrize("other", [2, 2.5, None, "a"])
def test_rmatmul_with_a_non_tensor_is_not_implemented(T, other):
    assert T.ones(2, 3).__rmatmul__(other) is NotImplemented


# ---------------------------------------------------------------------------------- // % << >>
def _wrap64(v: int) -> int:
    """A Python integer as an int64 holds it (two's complement wraparound)."""
    return (v + 2**63) % 2**64 - 2**63


INTEGER = [
    (operator.ifloordiv, lambda v, s: v // s, "floor_divide_"),
    (operator.imod, lambda v, s: v % s, "remainder_"),
    (operator.ilshift, lambda v, s: _wrap64(v << s), "bitwise_left_shift_"),
    (operator.irshift, lambda v, s: v >> s, "bitwise_right_shift_"),
]
INTEGER_IDS = ["floordiv", "mod", "lshift", "rshift"]
VALUES = [5, -7, 12, 0]


@pytest.mark.parametrize("aug, python, method", INTEGER, ids=INTEGER_IDS)
def test_augmented_integer_operators_write_into_the_tensor(T, aug, python, method):
    x = T.tensor(VALUES)
    view = x[1:]
    ref = x
    x = aug(x, 3)
    assert x is ref
    expected = [python(v, 3) for v in VALUES]
    assert x.tolist() == expected and view.tolist() == expected[1:]
    assert x._version == 1
    y = T.tensor(VALUES, dtype=T.int32)
    assert getattr(y, method)(T.tensor([3])) is y  # (int64 operand, written back as int32)
    assert y.dtype == T.int32 and y.tolist() == expected


@pytest.mark.parametrize("aug, python, method", INTEGER, ids=INTEGER_IDS)
def test_augmented_integer_operators_refuse_what_cannot_be_cast_back(T, aug, python, method):
    x = T.tensor([5, 6])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        aug(x, 1.5)
    flags = T.tensor([True, False])
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired "
                                           "output type Bool"):
        aug(flags, 1)
    with pytest.raises(TypeError):
        aug(x, "a")
    assert x.tolist() == [5, 6] and flags.tolist() == [True, False]


@pytest.mark.parametrize("aug", [operator.ifloordiv, operator.imod], ids=["floordiv", "mod"])
def test_integer_division_by_zero_raises_and_writes_nothing(T, aug):
    x = T.tensor([5, 6])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        aug(x, 0)
    assert x.tolist() == [5, 6] and x._version == 0
    # (with a tensor divisor torch may have written the elements before the zero: only the
    # error is its behaviour)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        aug(x, T.tensor([1, 0]))


def test_floor_divide_and_remainder_follow_python_signs(T):
    a, b = [5, -7, 7, -5], [3, 3, -3, -3]
    x, y = T.tensor(a), T.tensor(b)
    assert (x // y).tolist() == [p // q for p, q in zip(a, b)]
    assert (x % y).tolist() == [p % q for p, q in zip(a, b)]
    assert T.remainder(x, y).tolist() == x.remainder(y).tolist() == (x % y).tolist()
    assert T.floor_divide(x, y).tolist() == (x // y).tolist()
    f = T.tensor([5.5, -7.0, 0.5])
    assert (f // 2).tolist() == [v // 2 for v in (5.5, -7.0, 0.5)]
    assert (f % -2).tolist() == [v % -2 for v in (5.5, -7.0, 0.5)]
    assert (T.tensor([5, 6]) // 2.5).dtype == T.float32  # (an int tensor and a float: float)


def test_reflected_integer_operators(T):
    x = T.tensor([2, -3, 5])
    assert (7 // x).tolist() == [7 // v for v in (2, -3, 5)]
    assert (7 % x).tolist() == [7 % v for v in (2, -3, 5)]
    assert T.remainder(7, x).tolist() == (7 % x).tolist()
    assert (1 << T.tensor([0, 3])).tolist() == [1, 8]
    assert (64 >> T.tensor([0, 3])).tolist() == [64, 8]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        7 // T.tensor([0])


def test_shifts_by_amounts_outside_the_width_shift_every_bit_out(T):
    x = T.tensor([-5, 5])
    assert (x << T.tensor([64, 70])).tolist() == [0, 0]
    assert (x >> 70).tolist() == [-5 >> 70, 5 >> 70]
    # a negative amount shifts everything out too: torch's rule, not Python's error
    assert (x >> -1).tolist() == [-1, 0] and (x << -1).tolist() == [0, 0]
    assert (T.tensor([5], dtype=T.int8) << 9).tolist() == [0]


def test_kernel_refusals_of_the_integer_operators(T):
    f, b = T.tensor([1.0]), T.tensor([True])
    with pytest.raises(NotImplementedError, match="\"lshift_cpu\" not implemented for 'Float'"):
        f << 1
    with pytest.raises(NotImplementedError, match="\"rshift_cpu\" not implemented for 'Bool'"):
        b >> b
    with pytest.raises(NotImplementedError, match="\"remainder_cpu\" not implemented for 'Bool'"):
        b % b
    with pytest.raises(NotImplementedError, match="\"div_floor_cpu\" not implemented for 'Bool'"):
        b // b
    assert (b << 1).tolist() == [2] and (b % 2).dtype == T.int64


def test_remainder_gradients(T):
    a, b = [5.0, -7.0, 2.5], [2.0, 3.0, -1.5]
    x = T.tensor(a, requires_grad=True)
    y = T.tensor(b, requires_grad=True)
    out = x % y
    assert type(out.grad_fn).__name__ == "RemainderBackward1"
    out.sum().backward()
    # d/dx = 1, d/dy = -floor(x / y)
    assert x.grad.tolist() == [1.0, 1.0, 1.0]
    assert y.grad.tolist() == [-float(p // q) for p, q in zip(a, b)]
    z = x.detach().clone().requires_grad_()
    w = z.clone()
    w %= 2
    assert type(w.grad_fn).__name__ == "RemainderBackward0"
    w.sum().backward()
    assert z.grad.tolist() == [1.0, 1.0, 1.0]


def test_remainder_gradcheck(T, rng):
    x = T.tensor(rng.uniform(-3.0, 3.0, (3, 4)), requires_grad=True)
    y = T.tensor(rng.uniform(0.5, 1.5, (1, 4)), requires_grad=True)
    assert T.autograd.gradcheck(lambda a, b: a % b, (x, y))
    assert T.autograd.gradgradcheck(lambda a, b: a % b, (x, y))
    assert T.autograd.gradcheck(lambda a: T.remainder(a, -0.7), (x,))


def _floor_divided_in_place(x):
    y = x.clone()
    y //= 2
    return y


@pytest.mark.parametrize("make, op", [
    (lambda x: x // 2, "floor_divide"),
    (_floor_divided_in_place, "floor_divide_"),
    (lambda x: 3 % x, "remainder"),
], ids=["floordiv", "floordiv_", "rmod"])
def test_ops_without_a_derivative_refuse_backward(T, make, op):
    x = T.tensor([5.0, -7.0], requires_grad=True)
    out = make(x)
    assert out.requires_grad and repr(out.grad_fn).startswith("<NotImplemented object")
    with pytest.raises(RuntimeError, match=f"derivative for aten::{op} is not implemented"):
        out.sum().backward()


def test_remainder_forward_ad_and_refusals(T):
    fw = T.autograd.forward_ad
    a, b = [5.0, -7.0], [2.0, 3.0]
    with fw.dual_level():
        x = fw.make_dual(T.tensor(a), T.tensor([1.0, 2.0]))
        y = fw.make_dual(T.tensor(b), T.tensor([10.0, 20.0]))
        tangent = fw.unpack_dual(x % y).tangent
        # tx - ty * floor(x / y)
        assert tangent.tolist() == [t - u * (p // q) for t, u, p, q in
                                    zip([1.0, 2.0], [10.0, 20.0], a, b)]
        assert fw.unpack_dual(x % 2).tangent.tolist() == [1.0, 2.0]
        with pytest.raises(NotImplementedError, match="forward AD with aten::floor_divide "):
            x // 2
        with pytest.raises(NotImplementedError, match="forward AD with aten::remainder "):
            3 % x
        with pytest.raises(NotImplementedError, match="forward AD with aten::floor_divide_ "):
            x.clone().floor_divide_(2)
