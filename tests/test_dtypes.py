"""dtype objects, default dtype inference and type promotion."""

from __future__ import annotations

import numpy as np
import pytest
import torch

FLOATS = ["bfloat16", "float16", "float32", "float64"]
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


# --- every pair, against torch --------------------------------------------------------------------

ALL = ["bfloat16", "float16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64",
       "bool"]


def _name(dt) -> str:
    return str(dt).rsplit(".", 1)[-1]


@pytest.mark.parametrize("a", ALL)
def test_promote_types_of_every_pair_is_torchs(T, a):
    for b in ALL:
        got = T.promote_types(getattr(T, a), getattr(T, b))
        assert _name(got) == _name(torch.promote_types(getattr(torch, a), getattr(torch, b))), b


@pytest.mark.parametrize("a", ALL)
def test_result_type_of_every_pair_and_rank_is_torchs(T, a):
    for b in ALL:
        for da, db in ((1, 1), (1, 0), (0, 1), (0, 0)):
            x, y = T.ones((2,) * da, dtype=getattr(T, a)), T.ones((2,) * db, dtype=getattr(T, b))
            want = torch.result_type(torch.ones((2,) * da, dtype=getattr(torch, a)),
                                     torch.ones((2,) * db, dtype=getattr(torch, b)))
            got = (x | y) if a == b == "bool" else (x * y)
            assert _name(got.dtype) == _name(want), (b, da, db)


@pytest.mark.parametrize("a", ALL)
@pytest.mark.parametrize("number", [2, 2.5, True])
def test_result_type_with_a_python_number_is_torchs(T, a, number):
    x = T.ones(2, dtype=getattr(T, a))
    want = torch.result_type(torch.ones(2, dtype=getattr(torch, a)), number)
    got = (x | number) if a == "bool" and number is True else (x * number)
    assert _name(got.dtype) == _name(want)


@pytest.mark.parametrize(("dtype", "value", "c_name"), [
    ("float16", 65510.0, "c10::Half"), ("float16", 1e5, "c10::Half"),
    ("bfloat16", 3.4e38, "c10::BFloat16"), ("float32", 3.5e38, "float")])
def test_full_refuses_a_value_beyond_a_narrow_float_range(T, dtype, value, c_name):
    message = f"value cannot be converted to type {c_name} without overflow"
    with pytest.raises(RuntimeError, match=message):
        T.full((2,), value, dtype=getattr(T, dtype))
    with pytest.raises(RuntimeError, match=message):
        T.zeros(2, dtype=getattr(T, dtype)).fill_(value)


def test_narrow_floats_take_infinity_and_in_range_values(T):
    assert T.full((2,), float("inf"), dtype=T.float16).tolist() == [float("inf")] * 2
    assert T.full((2,), 65504.0, dtype=T.float16).tolist() == [65504.0] * 2
    assert T.tensor([1e5], dtype=T.float16).tolist() == [float("inf")]  # (the tensor factory)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_conversions_round_as_torchs(T, dtype):
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal(500) * 1000, rng.standard_normal(500) * 1e-5,
                             [65519.9, 65520.0, 6e-8, 3e-8, 2.98e-8, 1 + 2 ** -8 + 2 ** -30]])
    got = T.tensor(values).to(getattr(T, dtype)).float().tolist()
    want = torch.tensor(values).to(getattr(torch, dtype)).float().tolist()
    assert np.array_equal(got, want, equal_nan=True)
    assert T.tensor(values.tolist(), dtype=getattr(T, dtype)).float().tolist() == want


# --- float16 values, bit for bit ------------------------------------------------------------------

HALF_OPS = {
    "mul_float": lambda T, a, b: a * 0.1234567,
    "div_float": lambda T, a, b: a / 0.3,
    "rdiv_float": lambda T, a, b: 0.3 / a,
    "add_float": lambda T, a, b: a + 0.1234567,
    "add": lambda T, a, b: a + b,
    "div": lambda T, a, b: a / b,
    "sigmoid": lambda T, a, b: a.sigmoid(),
    "exp": lambda T, a, b: a.exp(),
    "rsqrt": lambda T, a, b: a.abs().rsqrt(),
    "sum": lambda T, a, b: a.sum(),
    "sum_dim0": lambda T, a, b: a.sum(0),
    "mean_dim1": lambda T, a, b: a.mean(1),
    "var_dim0": lambda T, a, b: a.var(0),
    "cumsum": lambda T, a, b: a.cumsum(0),
    "layer_norm": lambda T, a, b: T.nn.functional.layer_norm(a, (64,)),
    "silu": lambda T, a, b: T.nn.functional.silu(a),
}


@pytest.mark.parametrize("op", HALF_OPS)
def test_float16_values_match_torch_bit_for_bit(op):
    import ext

    rng = np.random.default_rng(7)
    a, b = ((rng.standard_normal((40, 64)) * 3).astype(np.float16) for _ in range(2))
    got = HALF_OPS[op](ext, ext.tensor(a), ext.tensor(b))
    want = HALF_OPS[op](torch, torch.tensor(a), torch.tensor(b))
    assert got.dtype == ext.float16 and want.dtype == torch.float16
    assert np.array_equal(got.numpy().view(np.uint16), want.numpy().view(np.uint16))
