"""Tensor attributes: autograd flags, grad, leaves, detach, shape queries, conversions, repr."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

FLOAT_ONLY = r"(?i)only Tensors of floating point"
LEAF_ONLY = "you can only change requires_grad flags of leaf variables"


# --- requires_grad --------------------------------------------------------------------------------


def test_requires_grad_defaults_to_false(T):
    assert T.ones(3).requires_grad is False
    assert T.tensor([1.0, 2.0]).requires_grad is False


def test_requires_grad_settable_on_float_leaf(T):
    x = T.ones(3)
    x.requires_grad = True
    assert x.requires_grad is True
    x.requires_grad = False
    assert x.requires_grad is False


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_factory_requires_grad_on_float_dtypes(T, dtype):
    x = T.zeros(2, dtype=getattr(T, dtype), requires_grad=True)
    assert x.requires_grad is True
    assert x.is_leaf is True


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_factory_requires_grad_rejects_non_float(T, dtype):
    with pytest.raises(RuntimeError, match=FLOAT_ONLY):
        T.zeros(3, dtype=getattr(T, dtype), requires_grad=True)


def test_tensor_requires_grad_rejects_int_list(T):
    with pytest.raises(RuntimeError, match=FLOAT_ONLY):
        T.tensor([1, 2], requires_grad=True)


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_requires_grad_method_rejects_non_float(T, dtype):
    x = T.zeros(3, dtype=getattr(T, dtype))
    with pytest.raises(RuntimeError, match=FLOAT_ONLY):
        x.requires_grad_()
    assert x.requires_grad is False


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_requires_grad_setter_rejects_non_float(T, dtype):
    x = T.zeros(3, dtype=getattr(T, dtype))
    with pytest.raises(RuntimeError, match=FLOAT_ONLY):
        x.requires_grad = True
    assert x.requires_grad is False


def test_requires_grad_false_on_int_tensor_is_allowed(T):
    x = T.tensor([1, 2])
    x.requires_grad = False
    assert x.requires_grad_(False) is x
    assert x.requires_grad is False


def test_requires_grad_method_returns_self(T):
    x = T.ones(2)
    assert x.requires_grad_() is x
    assert x.requires_grad is True
    assert x.requires_grad_(False) is x
    assert x.requires_grad is False


def test_non_leaf_requires_grad_setter_raises(T):
    x = T.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=LEAF_ONLY):
        y.requires_grad = False
    assert y.requires_grad is True


def test_non_leaf_requires_grad_method_false_raises(T):
    x = T.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=LEAF_ONLY):
        y.requires_grad_(False)
    assert y.requires_grad is True


def test_output_requires_grad_if_any_input_does(T):
    a = T.ones(2, requires_grad=True)
    b = T.ones(2)
    assert (a + b).requires_grad is True
    assert (b + a).requires_grad is True
    assert (b * b).requires_grad is False


# --- grad -----------------------------------------------------------------------------------------


def test_grad_is_none_before_backward(T):
    x = T.ones(2, requires_grad=True)
    assert x.grad is None


def test_grad_setter_accepts_matching_tensor(T):
    x = T.ones(2, requires_grad=True)
    g = T.tensor([3.0, 4.0])
    x.grad = g
    assert x.grad.tolist() == [3.0, 4.0]


def test_grad_setter_accepts_none(T):
    x = T.ones(2, requires_grad=True)
    x.grad = T.ones(2)
    x.grad = None
    assert x.grad is None


def test_grad_setter_rejects_wrong_shape(T):
    x = T.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient of size"):
        x.grad = T.ones(3)
    assert x.grad is None


def test_grad_setter_rejects_wrong_dtype(T):
    x = T.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="dtype"):
        x.grad = T.ones(2, dtype=T.float64)
    assert x.grad is None


@pytest.mark.parametrize("value", [5, 1.5, [1.0, 1.0]])
def test_grad_setter_rejects_non_tensor(T, value):
    x = T.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="expected to be a Tensor or None"):
        x.grad = value


def test_grad_setter_rejects_ndarray(T):
    x = T.ones(2, requires_grad=True)
    with pytest.raises(TypeError):
        x.grad = np.ones(2, dtype=np.float32)


def test_grad_filled_by_backward(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    assert x.grad.requires_grad is False


def test_grad_of_non_leaf_warns_and_is_none(T):
    x = T.ones(2, requires_grad=True)
    y = x * 2
    with pytest.warns(UserWarning, match="is not a leaf Tensor"):
        assert y.grad is None


def test_grad_of_leaf_without_requires_grad_does_not_warn(T):
    x = T.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.grad is None


def test_grad_of_leaf_requiring_grad_does_not_warn(T):
    x = T.ones(2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.grad is None


# --- grad_fn, is_leaf, output_nr ------------------------------------------------------------------


def test_grad_fn_none_for_leaves(T):
    assert T.ones(2).grad_fn is None
    assert T.ones(2, requires_grad=True).grad_fn is None


def test_grad_fn_names_the_op(T):
    x = T.ones(2, requires_grad=True)
    y = x * 2
    assert y.grad_fn is not None
    assert type(y.grad_fn).__name__ == "MulBackward0"
    assert y.grad_fn.name() == "MulBackward0"


def test_grad_fn_none_when_no_input_requires_grad(T):
    assert (T.ones(2) * 2).grad_fn is None


def test_is_leaf_for_user_tensors(T):
    assert T.ones(2).is_leaf is True
    assert T.ones(2, requires_grad=True).is_leaf is True
    assert T.tensor([1.0], requires_grad=True).is_leaf is True


def test_is_leaf_false_for_op_outputs(T):
    x = T.ones(2, requires_grad=True)
    assert (x * 2).is_leaf is False
    assert (x + x).sum().is_leaf is False


def test_result_without_grad_inputs_is_leaf(T):
    y = T.ones(2) * 3
    assert y.is_leaf is True
    assert y.requires_grad is False


def test_result_under_no_grad_is_leaf(T):
    x = T.ones(2, requires_grad=True)
    with T.no_grad():
        y = x * 2
    assert y.is_leaf is True
    assert y.requires_grad is False
    assert y.grad_fn is None


def test_output_nr_of_leaf_is_zero(T):
    assert T.ones(2, requires_grad=True).output_nr == 0
    assert T.ones(2).output_nr == 0


def test_output_nr_of_single_output_op_is_zero(T):
    x = T.ones(2, requires_grad=True)
    assert (x * 2).output_nr == 0


# --- retain_grad ----------------------------------------------------------------------------------


def test_retain_grad_on_non_leaf(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    assert y.retains_grad is False
    y.retain_grad()
    assert y.retains_grad is True
    (y * y).sum().backward()
    assert y.grad.tolist() == [6.0, 12.0]


def test_retain_grad_on_leaf_is_noop(T):
    x = T.ones(2, requires_grad=True)
    assert x.retain_grad() is None
    assert x.retains_grad is False
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_retain_grad_without_requires_grad_raises(T):
    x = T.ones(2)
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad"):
        x.retain_grad()


# --- detach ---------------------------------------------------------------------------------------


def test_detach_flags(T):
    x = T.ones(2, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert d.requires_grad is False
    assert d.is_leaf is True
    assert d.grad_fn is None
    assert d is not y
    assert y.requires_grad is True


def test_detach_shares_storage(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    d = x.detach()
    assert np.shares_memory(d.numpy(), x.detach().numpy())
    d.numpy()[0] = 10.0
    assert x.tolist() == [10.0, 2.0, 3.0]


# --- Size, shape and friends ----------------------------------------------------------------------


def test_size_is_tuple_subclass(T):
    s = T.ones(2, 3).shape
    assert isinstance(s, T.Size)
    assert isinstance(s, tuple)
    assert s == (2, 3)
    assert tuple(s) == (2, 3)


def test_size_repr(T):
    assert repr(T.ones(2, 3).shape) == f"{T.__name__}.Size([2, 3])"
    assert repr(T.tensor(1.0).shape) == f"{T.__name__}.Size([])"


def test_shape_ndim_dim(T):
    x = T.zeros(2, 3, 4)
    assert x.shape == (2, 3, 4)
    assert x.ndim == 3
    assert x.dim() == 3
    s = T.tensor(1.0)
    assert s.shape == ()
    assert s.ndim == 0
    assert s.dim() == 0


def test_size_method(T):
    x = T.zeros(2, 3, 4)
    assert x.size() == (2, 3, 4)
    assert isinstance(x.size(), T.Size)
    assert x.size(0) == 2
    assert x.size(2) == 4
    assert x.size(-1) == 4
    assert x.size(-3) == 2


def test_numel(T):
    assert T.zeros(2, 3, 4).numel() == 24
    assert T.tensor(5.0).numel() == 1
    assert T.zeros(0, 3).numel() == 0


def test_dtype_and_device(T):
    x = T.ones(2)
    assert x.dtype is T.float32
    assert T.ones(2, dtype=T.float64).dtype is T.float64
    assert str(x.device) == "cpu"


# --- Python conversions ---------------------------------------------------------------------------


def test_item(T):
    v = T.tensor([2.5]).item()
    assert v == 2.5 and isinstance(v, float)
    i = T.tensor(3).item()
    assert i == 3 and isinstance(i, int)
    b = T.tensor(True).item()
    assert b is True


def test_item_of_multi_element_raises(T):
    with pytest.raises(RuntimeError):
        T.tensor([1.0, 2.0]).item()


def test_tolist(T):
    assert T.tensor([[1.0, 2.0], [3.0, 4.0]]).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert T.tensor([1, 2]).tolist() == [1, 2]
    assert T.tensor(2.5).tolist() == 2.5
    assert isinstance(T.tensor([1, 2]).tolist()[0], int)


def test_len(T):
    assert len(T.zeros(4, 2)) == 4
    assert len(T.zeros(0)) == 0


def test_len_of_0d_raises(T):
    with pytest.raises(TypeError, match="0-d tensor"):
        len(T.tensor(1.0))


def test_iteration_yields_rows(T):
    x = T.tensor([[1, 2], [3, 4], [5, 6]])
    rows = list(x)
    assert len(rows) == 3
    assert all(isinstance(r, T.Tensor) for r in rows)
    assert [r.tolist() for r in rows] == [[1, 2], [3, 4], [5, 6]]
    assert rows[0].shape == (2,)


def test_iteration_over_vector_yields_0d_tensors(T):
    items = list(T.tensor([1.0, 2.0]))
    assert [t.shape for t in items] == [(), ()]
    assert [t.item() for t in items] == [1.0, 2.0]


def test_scalar_conversions(T):
    assert float(T.tensor([1.5])) == 1.5
    assert int(T.tensor(2.7)) == 2
    assert bool(T.tensor([0.0])) is False
    assert bool(T.tensor(3)) is True


def test_bool_of_multi_element_raises(T):
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(T.tensor([1.0, 2.0]))


# --- NumPy interop --------------------------------------------------------------------------------


def test_numpy_shares_memory(T):
    x = T.zeros(3)
    a = x.numpy()
    assert isinstance(a, np.ndarray)
    assert a.dtype == np.float32
    a[0] = 5.0
    assert x.tolist() == [5.0, 0.0, 0.0]


def test_numpy_of_tensor_requiring_grad_raises(T):
    x = T.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        x.numpy()
    with pytest.raises(RuntimeError, match="requires grad"):
        (x * 2).numpy()


def test_numpy_after_detach_works(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    np.testing.assert_array_equal(x.detach().numpy(), [1.0, 2.0])


def test_array_protocol(T):
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=T.float64)
    a = np.asarray(x)
    assert isinstance(a, np.ndarray)
    assert a.dtype == np.float64
    np.testing.assert_array_equal(a, [[1.0, 2.0], [3.0, 4.0]])
    assert np.asarray(T.tensor([1, 2])).dtype == np.int64


def test_array_protocol_shares_memory(T):
    x = T.zeros(3)
    np.asarray(x)[1] = 7.0
    assert x.tolist() == [0.0, 7.0, 0.0]


def test_numpy_scalar_on_the_left_gives_tensor(T):
    t = T.ones(3)
    r = np.float64(2.0) * t
    assert isinstance(r, T.Tensor)
    assert r.dtype is T.float32
    assert r.tolist() == [2.0, 2.0, 2.0]
    assert isinstance(np.float32(1.0) + t, T.Tensor)


def test_numpy_scalar_on_the_left_keeps_graph(T):
    x = T.ones(3, requires_grad=True)
    r = np.float64(2.0) + x
    assert isinstance(r, T.Tensor)
    assert r.requires_grad is True
    assert type(r.grad_fn).__name__ == "AddBackward0"


def test_ndarray_defers_to_tensor(T):
    t = T.ones(3)
    assert np.ones(3).__add__(t) is NotImplemented
    assert np.ones(3).__mul__(t) is NotImplemented
    assert t.__array_priority__ > 0


# --- repr -----------------------------------------------------------------------------------------


def test_repr_requires_grad(T):
    assert repr(T.tensor([1.0, 2.0], requires_grad=True)) == "tensor([1., 2.], requires_grad=True)"


def test_repr_grad_fn(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * T.tensor([6.0, 6.0])
    assert repr(y) == "tensor([ 6., 12.], grad_fn=<MulBackward0>)"


def test_repr_dtype_suffix(T):
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    assert repr(x) == f"tensor([1., 2.], dtype={T.__name__}.float64)"


def test_repr_default_dtypes_have_no_suffix(T):
    assert repr(T.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(T.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(T.tensor([True, False])) == "tensor([ True, False])"


def test_the_data_of_an_inference_tensor_is_an_inference_tensor(T):
    import pytest

    with T.inference_mode():
        d = T.ones(2).data
    assert d.is_inference()
    with pytest.raises(RuntimeError, match="Inference tensors do not track version counter"):
        d._version


# --- strides of empty tensors ---------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 3), (2, 0, 3), (3, 1, 0)])
def test_a_new_empty_tensor_has_contiguous_strides_counting_size_0_as_1(T, shape):
    expected, step = [], 1
    for n in reversed(shape):
        expected.insert(0, step)
        step *= max(n, 1)
    assert T.zeros(shape).stride() == tuple(expected)
    assert T.empty(shape).stride(-1) == 1


def test_an_empty_slice_keeps_the_strides_of_its_base(T):
    assert T.zeros(2, 3)[:, :0].stride() == (3, 1)


def test_an_empty_tensor_views_as_a_smaller_dtype(T):
    v = T.zeros((2, 0), dtype=T.float64, requires_grad=True).view(T.float32)
    assert tuple(v.shape) == (2, 0) and v.dtype == T.float32
