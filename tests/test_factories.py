"""Tensor creation functions."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

# --- tensor ---------------------------------------------------------------------------------------


def test_tensor_from_nested_lists(T):
    x = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert x.shape == (2, 3)
    assert x.dtype is T.float32
    assert x.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def test_tensor_from_python_scalars(T):
    f = T.tensor(3.5)
    assert f.shape == ()
    assert f.dtype is T.float32
    assert f.item() == 3.5
    i = T.tensor(3)
    assert i.shape == ()
    assert i.dtype is T.int64
    assert T.tensor(False).dtype is T.bool


def test_tensor_from_empty_list(T):
    x = T.tensor([])
    assert x.shape == (0,)
    assert x.dtype is T.float32


def test_tensor_from_numpy_array_copies(T, rng):
    a = rng.standard_normal((3, 4))
    x = T.tensor(a)
    assert x.shape == (3, 4)
    assert x.dtype is T.float64
    np.testing.assert_array_equal(x.numpy(), a)
    a[0, 0] = 100.0
    assert x.tolist()[0][0] != 100.0


def test_tensor_dtype_argument(T):
    x = T.tensor([1, 2, 3], dtype=T.float64)
    assert x.dtype is T.float64
    assert x.tolist() == [1.0, 2.0, 3.0]
    y = T.tensor(np.array([1.7, 2.2]), dtype=T.float32)
    assert y.dtype is T.float32


def test_tensor_requires_grad(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    assert x.requires_grad is True
    assert x.is_leaf is True
    assert x.grad_fn is None


def test_tensor_of_tensor_warns_copy_construct(T):
    src = T.tensor([1.0, 2.0])
    with pytest.warns(UserWarning, match="To copy construct"):
        x = T.tensor(src)
    assert x.tolist() == [1.0, 2.0]
    assert x.dtype is T.float32


def test_tensor_of_list_does_not_warn(T):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        T.tensor([1.0, 2.0])
        T.tensor(np.ones(2))


# --- as_tensor / from_numpy -----------------------------------------------------------------------


def test_as_tensor_shares_memory_with_same_dtype_array(T):
    a = np.arange(3.0)
    x = T.as_tensor(a)
    assert x.dtype is T.float64
    a[0] = 9.0
    assert x.tolist() == [9.0, 1.0, 2.0]


def test_as_tensor_with_other_dtype_copies(T):
    a = np.arange(3.0)
    x = T.as_tensor(a, dtype=T.float32)
    assert x.dtype is T.float32
    a[0] = 9.0
    assert x.tolist() == [0.0, 1.0, 2.0]


def test_as_tensor_of_tensor_returns_it(T):
    x = T.ones(2)
    assert T.as_tensor(x) is x


def test_as_tensor_of_list(T):
    x = T.as_tensor([1, 2])
    assert x.dtype is T.int64
    assert x.tolist() == [1, 2]


def test_from_numpy_shares_memory(T):
    a = np.zeros(3)
    x = T.from_numpy(a)
    assert x.dtype is T.float64
    a[1] = 5.0
    assert x.tolist() == [0.0, 5.0, 0.0]
    x.numpy()[2] = 7.0
    assert a.tolist() == [0.0, 5.0, 7.0]


def test_from_numpy_keeps_int32(T):
    assert T.from_numpy(np.arange(3, dtype=np.int32)).dtype is T.int32


# --- zeros / ones / full / empty ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_size_as_varargs_or_sequence(T, name):
    f = getattr(T, name)
    assert f(2, 3).shape == (2, 3)
    assert f((2, 3)).shape == (2, 3)
    assert f([2, 3]).shape == (2, 3)
    assert f(4).shape == (4,)
    assert f(()).shape == ()


def test_zeros_and_ones_values(T):
    assert T.zeros(2, 2).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert T.ones(3).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_dtype_and_requires_grad_kwargs(T, name):
    f = getattr(T, name)
    x = f(2, dtype=T.int32)
    assert x.dtype is T.int32
    y = f(2, 3, dtype=T.float64, requires_grad=True)
    assert y.dtype is T.float64
    assert y.requires_grad is True
    assert y.is_leaf is True


def test_ones_int_values(T):
    assert T.ones(2, dtype=T.int64).tolist() == [1, 1]


def test_full(T):
    x = T.full((2, 2), 7.0)
    assert x.shape == (2, 2)
    assert x.tolist() == [[7.0, 7.0], [7.0, 7.0]]
    y = T.full([3], 2, dtype=T.float64)
    assert y.dtype is T.float64
    assert y.tolist() == [2.0, 2.0, 2.0]


def test_full_requires_grad(T):
    x = T.full((2,), 1.5, requires_grad=True)
    assert x.requires_grad is True


@pytest.mark.parametrize(
    ("value", "dtype"),
    [(1.5, "float32"), (3, "int64"), (True, "bool")],
)
def test_full_dtype_inference(T, value, dtype):
    x = T.full((2,), value)
    assert x.dtype is getattr(T, dtype)
    assert x.tolist() == [value, value]


# --- arange / linspace / eye ----------------------------------------------------------------------


def test_arange_int_forms(T):
    assert T.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert T.arange(1, 4).tolist() == [1, 2, 3]
    assert T.arange(0, 10, 3).tolist() == [0, 3, 6, 9]
    assert T.arange(3, 0, -1).tolist() == [3, 2, 1]
    assert T.arange(5).dtype is T.int64


def test_arange_float_forms(T):
    x = T.arange(0, 1, 0.25)
    assert x.dtype is T.float32
    assert x.tolist() == [0.0, 0.25, 0.5, 0.75]
    y = T.arange(3.0)
    assert y.dtype is T.float32
    assert y.tolist() == [0.0, 1.0, 2.0]


def test_arange_dtype_argument(T):
    x = T.arange(4, dtype=T.float64)
    assert x.dtype is T.float64
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_arange_empty(T):
    assert T.arange(0).shape == (0,)


def test_linspace(T):
    x = T.linspace(0, 1, 5)
    assert x.dtype is T.float32
    assert x.shape == (5,)
    assert x.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_linspace_dtype_and_single_step(T):
    x = T.linspace(0, 10, 3, dtype=T.float64)
    assert x.dtype is T.float64
    assert x.tolist() == [0.0, 5.0, 10.0]
    assert T.linspace(2, 2, 1).tolist() == [2.0]


def test_eye_square(T):
    x = T.eye(3)
    assert x.dtype is T.float32
    assert x.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]


def test_eye_rectangular(T):
    assert T.eye(2, 3).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    assert T.eye(3, 2).shape == (3, 2)


def test_eye_dtype(T):
    x = T.eye(2, dtype=T.int64)
    assert x.dtype is T.int64
    assert x.tolist() == [[1, 0], [0, 1]]


# --- random ---------------------------------------------------------------------------------------


def test_rand_shape_dtype_and_range(T):
    x = T.rand(200, 3)
    assert x.shape == (200, 3)
    assert x.dtype is T.float32
    a = x.numpy()
    assert a.min() >= 0.0 and a.max() < 1.0
    assert a.std() > 0.1
    assert T.rand((2, 3)).shape == (2, 3)


def test_randn_shape_and_dtype(T):
    x = T.randn(1000)
    assert x.shape == (1000,)
    assert x.dtype is T.float32
    a = x.numpy()
    assert abs(a.mean()) < 0.2
    assert 0.8 < a.std() < 1.2
    assert T.randn(2, 3, dtype=T.float64).dtype is T.float64


def test_rand_requires_grad(T):
    x = T.rand(3, requires_grad=True)
    assert x.requires_grad is True
    assert x.is_leaf is True


def test_randint_range_and_dtype(T):
    x = T.randint(2, 5, (500,))
    assert x.dtype is T.int64
    assert x.shape == (500,)
    assert set(x.tolist()) == {2, 3, 4}


def test_randint_high_only_and_dtype(T):
    x = T.randint(3, (100,))
    assert set(x.tolist()) <= {0, 1, 2}
    assert T.randint(0, 5, (2, 2), dtype=T.int32).dtype is T.int32


def test_manual_seed_makes_rand_reproducible(T):
    T.manual_seed(123)
    a = T.rand(5).tolist()
    b = T.randn(3).tolist()
    T.manual_seed(123)
    assert T.rand(5).tolist() == a
    assert T.randn(3).tolist() == b


def test_different_draws_differ(T):
    T.manual_seed(0)
    assert T.rand(5).tolist() != T.rand(5).tolist()


# --- *_like ---------------------------------------------------------------------------------------


def test_zeros_like_and_ones_like_keep_shape_and_dtype(T):
    x = T.ones(2, 3, dtype=T.float64)
    z = T.zeros_like(x)
    assert z.shape == (2, 3)
    assert z.dtype is T.float64
    assert z.tolist() == [[0.0] * 3] * 2
    o = T.ones_like(T.zeros(2, dtype=T.int32))
    assert o.dtype is T.int32
    assert o.tolist() == [1, 1]


def test_like_dtype_override(T):
    x = T.ones(2, 3, dtype=T.float64)
    assert T.ones_like(x, dtype=T.int32).dtype is T.int32
    assert T.zeros_like(x, dtype=T.float32).dtype is T.float32
    assert T.full_like(x, 2, dtype=T.int64).dtype is T.int64
    assert T.randn_like(x, dtype=T.float32).dtype is T.float32


def test_full_like(T):
    x = T.full_like(T.zeros(2, dtype=T.float64), 7)
    assert x.dtype is T.float64
    assert x.tolist() == [7.0, 7.0]
    y = T.full_like(T.zeros(2, dtype=T.int64), 2.7)
    assert y.dtype is T.int64
    assert y.tolist() == [2, 2]


def test_randn_like(T):
    x = T.zeros(4, 5, dtype=T.float64)
    r = T.randn_like(x)
    assert r.shape == (4, 5)
    assert r.dtype is T.float64


def test_like_does_not_copy_requires_grad(T):
    x = T.ones(2, requires_grad=True)
    assert T.zeros_like(x).requires_grad is False
    assert T.ones_like(x, requires_grad=True).requires_grad is True


# Each builds a float64 tensor from the Python float 0.123, which must arrive unrounded (a pass
# through float32 would give 0.12300000339746475).
_EXACT_0123 = {
    "tensor": lambda T, v: T.tensor([v], dtype=T.float64),
    "tensor_0d": lambda T, v: T.tensor(v, dtype=T.float64).reshape(1),
    "tensor_nested_mixed": lambda T, v: T.tensor([[1, v]], dtype=T.float64)[:, 1],
    "tensor_numpy_scalar": lambda T, v: T.tensor([np.float64(v)]),
    "as_tensor": lambda T, v: T.as_tensor([v], dtype=T.float64),
    "full": lambda T, v: T.full((1,), v, dtype=T.float64),
    "full_like": lambda T, v: T.full_like(T.zeros(1, dtype=T.float64), v),
    "new_full": lambda T, v: T.zeros(1, dtype=T.float64).new_full((1,), v),
    "new_tensor": lambda T, v: T.zeros(1, dtype=T.float64).new_tensor([v]),
    "new_tensor_dtype": lambda T, v: T.zeros(1).new_tensor([v], dtype=T.float64),
    "arange": lambda T, v: T.arange(v, 1.0, 1.0, dtype=T.float64),
    "linspace": lambda T, v: T.linspace(v, 1.0, 3, dtype=T.float64)[:1],
    "add_scalar": lambda T, v: T.zeros(1, dtype=T.float64) + v,
    "rsub_scalar": lambda T, v: v - T.zeros(1, dtype=T.float64),
    "fill_": lambda T, v: T.zeros(1, dtype=T.float64).fill_(v),
    "setitem": lambda T, v: T.zeros(1, dtype=T.float64).index_put_((T.tensor([0]),),
                                                                   T.tensor(v, dtype=T.float64)),
    "where_scalar": lambda T, v: T.where(T.tensor([True]), v, T.zeros(1, dtype=T.float64)),
    "clamp_min": lambda T, v: T.zeros(1, dtype=T.float64).clamp(min=v),
    "clamp_max": lambda T, v: T.ones(1, dtype=T.float64).clamp(max=v),
}


@pytest.mark.parametrize("make", _EXACT_0123.values(), ids=_EXACT_0123.keys())
def test_python_float_reaches_float64_unrounded(T, make):
    out = make(T, 0.123)
    assert out.dtype is T.float64
    assert out.tolist() == [0.123]


def test_tensor_infers_float64_from_numpy_float64_elements(T):
    assert T.tensor([np.float64(0.5), 1.0]).dtype is T.float64
    assert T.tensor([np.int32(1), np.int32(2)]).dtype is T.int32
    assert T.tensor([np.int32(1), 2]).dtype is T.int64
    assert T.tensor([np.float16(1), 2.0]).dtype is T.float32


def test_tensor_of_one_element_tensors_reads_their_numbers(T):
    out = T.tensor([T.tensor([1.5]), T.tensor(2.5, dtype=T.float64)])
    assert out.shape == (2,)
    assert out.dtype is T.float64
    assert out.tolist() == [1.5, 2.5]


def test_linspace_values_are_torchs_bit_for_bit(T):
    # Values taken from torch 2.13: the first half counts up from start, the second half down
    # from end, in the dtype's own precision.
    assert T.linspace(-3.3, 7.1, 11, dtype=T.float64).tolist() == [
        -3.3, -2.26, -1.2200000000000002, -0.18000000000000038, 0.8599999999999994,
        1.9000000000000006, 2.9400000000000004, 3.9800000000000004, 5.02, 6.06, 7.1]
    assert T.linspace(0.1, 0.9, 9).tolist() == [
        0.10000000149011612, 0.19999998807907104, 0.29999998211860657, 0.3999999761581421, 0.5,
        0.6000000238418579, 0.699999988079071, 0.7999999523162842, 0.8999999761581421]


def test_arange_values_are_torchs_bit_for_bit(T):
    assert T.arange(0.123, 1, 0.25, dtype=T.float64).tolist() == [0.123, 0.373, 0.623, 0.873]
    assert T.arange(-3.3, 0, 0.7).tolist() == [
        -3.299999952316284, -2.5999999046325684, -1.899999976158142, -1.2000000476837158, -0.5]


def test_integer_arange_truncates_bounds_and_step(T):
    assert T.arange(0, 5, 1.5, dtype=T.int64).tolist() == [0, 1, 2, 3, 4]
    assert T.arange(-2.5, 2, 1, dtype=T.int64).tolist() == [-2, -1, 0, 1]
