"""dtype objects, default dtype inference and type promotion."""

from __future__ import annotations

import numpy as np
import pytest

FLOATS = ["float16", "float32", "float64"]
NON_FLOATS = ["int32", "int64", "bool"]


def ones(T, dtype, shape=(3,)):
    return T.ones(shape, dtype=getattr(T, dtype))


def scalar(T, value, dtype):
    return T.tensor(value, dtype=getattr(T, dtype))


# --- dtype objects --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FLOATS + NON_FLOATS)
def test_dtype_exists_and_prints_with_module_name(T, name):
    dt = getattr(T, name)
    assert str(dt) == f"{T.__name__}.{name}"
    assert repr(dt) == f"{T.__name__}.{name}"


def test_dtypes_are_instances_of_dtype(T):
    for name in FLOATS + NON_FLOATS:
        assert isinstance(getattr(T, name), T.dtype)


def test_dtype_aliases(T):
    assert T.float is T.float32
    assert T.double is T.float64
    assert T.long is T.int64


def test_dtypes_are_distinct(T):
    dts = [getattr(T, n) for n in FLOATS + NON_FLOATS]
    assert len(set(dts)) == len(dts)
    assert T.float32 != T.float64


@pytest.mark.parametrize("name", FLOATS)
def test_is_floating_point_true(T, name):
    assert getattr(T, name).is_floating_point is True
    assert ones(T, name).is_floating_point() is True


@pytest.mark.parametrize("name", NON_FLOATS)
def test_is_floating_point_false(T, name):
    assert getattr(T, name).is_floating_point is False
    assert ones(T, name).is_floating_point() is False


@pytest.mark.parametrize("name", FLOATS + NON_FLOATS)
def test_factory_dtype_argument(T, name):
    dt = getattr(T, name)
    assert T.zeros(2, dtype=dt).dtype is dt
    assert T.tensor([1, 0], dtype=dt).dtype is dt


@pytest.mark.parametrize("bad", ["float", "float32", "int64"])
def test_string_dtype_raises_type_error(T, bad):
    with pytest.raises(TypeError):
        T.zeros(2, dtype=bad)
    with pytest.raises(TypeError):
        T.tensor([1.0], dtype=bad)


# --- defaults -------------------------------------------------------------------------------------


def test_default_dtype_is_float32(T):
    assert T.get_default_dtype() is T.float32


def test_inferred_dtype_from_python_values(T):
    assert T.tensor([1.0]).dtype is T.float32
    assert T.tensor(1.5).dtype is T.float32
    assert T.tensor([1]).dtype is T.int64
    assert T.tensor(7).dtype is T.int64
    assert T.tensor([True]).dtype is T.bool
    assert T.tensor([1, 2.0]).dtype is T.float32
    assert T.tensor([True, 2]).dtype is T.int64


def test_factories_default_to_float32(T):
    assert T.zeros(2).dtype is T.float32
    assert T.ones(2).dtype is T.float32
    assert T.empty(2).dtype is T.float32


def test_numpy_dtype_is_kept(T):
    assert T.tensor(np.array([1.0])).dtype is T.float64
    assert T.tensor(np.array([1.0], dtype=np.float32)).dtype is T.float32
    assert T.tensor(np.array([1], dtype=np.int32)).dtype is T.int32
    assert T.tensor(np.array([1], dtype=np.int64)).dtype is T.int64
    assert T.tensor(np.array([True])).dtype is T.bool
    assert T.tensor(np.array([1.0], dtype=np.float16)).dtype is T.float16


# --- promotion between dimensioned tensors --------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("int32", "int64", "int64"),
        ("float32", "float64", "float64"),
        ("float16", "float32", "float32"),
        ("bool", "int32", "int32"),
        ("bool", "int64", "int64"),
        ("int32", "float32", "float32"),
        ("int64", "float16", "float16"),
        ("bool", "float64", "float64"),
    ],
)
def test_tensor_tensor_promotion(T, a, b, expected):
    x, y = ones(T, a), ones(T, b)
    want = getattr(T, expected)
    assert (x + y).dtype is want
    assert (y + x).dtype is want
    assert (x * y).dtype is want


def test_subtraction_promotion(T):
    assert (ones(T, "int32") - ones(T, "int64")).dtype is T.int64
    assert (ones(T, "float32") - ones(T, "float64")).dtype is T.float64
    assert (ones(T, "int64") - ones(T, "float32")).dtype is T.float32


def test_same_dtype_is_kept(T):
    for name in ["float16", "float32", "float64", "int32", "int64"]:
        assert (ones(T, name) + ones(T, name)).dtype is getattr(T, name)


# --- Python scalars -------------------------------------------------------------------------------


def test_float_scalar_keeps_float16(T):
    assert (ones(T, "float16") * 2.0).dtype is T.float16
    assert (2.0 * ones(T, "float16")).dtype is T.float16


def test_float_scalar_keeps_float64(T):
    assert (ones(T, "float64") * 2.0).dtype is T.float64


def test_int_scalar_keeps_int32(T):
    assert (ones(T, "int32") * 2).dtype is T.int32
    assert (ones(T, "int32") - 1).dtype is T.int32
    assert (2 - ones(T, "int32")).dtype is T.int32


def test_float_scalar_upcasts_int_to_default_dtype(T):
    r = ones(T, "int64") * 2.5
    assert r.dtype is T.float32
    assert r.tolist() == [2.5, 2.5, 2.5]
    assert (2.0 / ones(T, "int32")).dtype is T.float32


def test_int_scalar_upcasts_bool_to_int64(T):
    r = ones(T, "bool") + 1
    assert r.dtype is T.int64
    assert r.tolist() == [2, 2, 2]


def test_float_scalar_upcasts_bool_to_float32(T):
    assert (ones(T, "bool") * 1.5).dtype is T.float32


def test_bool_scalar_keeps_bool(T):
    assert (ones(T, "bool") + True).dtype is T.bool


# --- 0-d tensors ----------------------------------------------------------------------------------


def test_0d_float64_does_not_upcast_float32_tensor(T):
    r = ones(T, "float32") * scalar(T, 2.0, "float64")
    assert r.dtype is T.float32
    assert r.tolist() == [2.0, 2.0, 2.0]


def test_0d_float64_does_not_upcast_float16_tensor(T):
    assert (ones(T, "float16") + scalar(T, 1.0, "float64")).dtype is T.float16


def test_0d_int64_does_not_upcast_int32_tensor(T):
    r = ones(T, "int32") + scalar(T, 2, "int64")
    assert r.dtype is T.int32
    assert r.tolist() == [3, 3, 3]


def test_0d_float_of_higher_category_upcasts(T):
    assert (ones(T, "int32") + scalar(T, 1.0, "float64")).dtype is T.float64
    assert (ones(T, "bool") + scalar(T, 1, "int32")).dtype is T.int32


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("int32", "float16", "float16"),
        ("float32", "float64", "float64"),
        ("int32", "int64", "int64"),
        ("bool", "int32", "int32"),
    ],
)
def test_two_0d_tensors_promote_normally(T, a, b, expected):
    x, y = scalar(T, 1, a), scalar(T, 1, b)
    assert (x + y).dtype is getattr(T, expected)
    assert (y * x).dtype is getattr(T, expected)
    assert (x + y).shape == ()


# --- division -------------------------------------------------------------------------------------


def test_true_division_of_ints_gives_float32(T):
    r = ones(T, "int32") / ones(T, "int32")
    assert r.dtype is T.float32
    assert (ones(T, "int64") / 2).dtype is T.float32
    assert (T.tensor([1, 3]) / 2).tolist() == [0.5, 1.5]


def test_true_division_of_bools_gives_float32(T):
    assert (ones(T, "bool") / ones(T, "bool")).dtype is T.float32


def test_division_keeps_float_dtype(T):
    assert (ones(T, "float64") / 2).dtype is T.float64
    assert (ones(T, "float16") / ones(T, "float16")).dtype is T.float16
    assert (ones(T, "int64") / ones(T, "float64")).dtype is T.float64


# --- conversions ----------------------------------------------------------------------------------


def test_to_dtype(T):
    x = T.tensor([1.5, 2.5])
    y = x.to(T.float64)
    assert y.dtype is T.float64
    assert y.tolist() == [1.5, 2.5]
    assert x.dtype is T.float32
    assert x.to(T.int64).tolist() == [1, 2]


def test_to_same_dtype_returns_self(T):
    x = T.ones(2)
    assert x.to(T.float32) is x


def test_float_and_double_methods(T):
    x = T.tensor([1, 2])
    assert x.float().dtype is T.float32
    assert x.double().dtype is T.float64
    assert x.float().tolist() == [1.0, 2.0]
