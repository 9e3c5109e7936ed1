"""Conversions and helpers: long / int / bool / half / float / double, type_as, equal, allclose,
isnan / isinf / isfinite, any / all, nan_to_num, new_* factories and *_like factories.

Node names and saved fields, forward values against NumPy, gradcheck and gradgradcheck in
float64, gradients at non-finite inputs, dtypes for every dtype and error messages.
Every test runs on ``ext`` and on ``torch``; the expectations are torch 2.13's behaviour.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from helpers import ANY, leaf, sample, to_np

DTYPES = ["float16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64", "bool"]
FLOATS = ["float16", "float32", "float64"]
NON_FLOATS = ["uint8", "int8", "int16", "int32", "int64", "bool"]


def shape_id(shape):
    return "x".join(map(str, shape)) if shape else "0d"


def check_grads(T, fn, *arrays):
    inputs = tuple(leaf(T, a) for a in arrays)
    assert T.autograd.gradcheck(fn, inputs)
    assert T.autograd.gradgradcheck(fn, inputs)


def with_nonfinite(rng, shape, dtype=np.float64):
    """Random values with nan, +inf and -inf sprinkled in (when there is room)."""
    a = sample(rng, shape, ANY, dtype)
    flat = a.reshape(-1)
    for i, v in zip(rng.permutation(flat.size), [np.nan, np.inf, -np.inf]):
        flat[i] = v
    return a


def np_array_of(dtype, shape=(2, 3)):
    """Small values representable in every dtype: 0, 1, 2, ... (0/1 for bool)."""
    values = np.arange(int(np.prod(shape))).reshape(shape) % 3
    return values.astype(np.bool_ if dtype == "bool" else np.dtype(dtype))


# --------------------------------------------------------------------------------------------
# Node names and saved fields
# --------------------------------------------------------------------------------------------


def graph_inputs(T, rng):
    return SimpleNamespace(
        x=leaf(T, sample(rng, (2, 3))),
        xf=leaf(T, sample(rng, (2, 3), dtype=np.float32)),
        h=T.tensor(np.zeros(2, dtype=np.float16)),
        f=T.tensor(np.zeros(2, dtype=np.float32)),
    )


NODE_CASES = [
    pytest.param(lambda T, i: i.x.half(), "ToCopyBackward0", {}, id="x.half"),
    pytest.param(lambda T, i: i.x.to(T.float16), "ToCopyBackward0", {}, id="x.to_float16"),
    pytest.param(lambda T, i: i.x.float(), "ToCopyBackward0", {}, id="x.float"),
    pytest.param(lambda T, i: i.xf.double(), "ToCopyBackward0", {}, id="xf.double"),
    pytest.param(lambda T, i: i.xf.half(), "ToCopyBackward0", {}, id="xf.half"),
    pytest.param(lambda T, i: i.x.type_as(i.f), "ToCopyBackward0", {}, id="x.type_as_float32"),
    pytest.param(lambda T, i: i.xf.type_as(i.h), "ToCopyBackward0", {}, id="xf.type_as_float16"),
    pytest.param(lambda T, i: i.x.nan_to_num(), "NanToNumBackward0", {"_saved_self": "x"},
                 id="x.nan_to_num"),
    pytest.param(lambda T, i: i.x.nan_to_num(nan=0.0, posinf=1.0, neginf=-1.0),
                 "NanToNumBackward0", {"_saved_self": "x"}, id="x.nan_to_num_all_args"),
    pytest.param(lambda T, i: T.nan_to_num(i.x, 1.0), "NanToNumBackward0", {"_saved_self": "x"},
                 id="T.nan_to_num_positional"),
    pytest.param(lambda T, i: T.nan_to_num(i.xf, posinf=2.0), "NanToNumBackward0",
                 {"_saved_self": "xf"}, id="T.nan_to_num_float32"),
]


@pytest.mark.parametrize("fn,name,saved", NODE_CASES)
def test_node_name_and_saved_fields(T, rng, fn, name, saved):
    inputs = graph_inputs(T, rng)
    out = fn(T, inputs)
    grad_fn = out.grad_fn
    assert type(grad_fn).__name__ == name
    assert sorted(a for a in dir(grad_fn) if a.startswith("_saved_")) == sorted(saved)
    for attr, input_name in saved.items():  # every saved tensor here is an input object
        assert getattr(grad_fn, attr) is getattr(inputs, input_name)


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda T, x: x.long(), id="long"),
        pytest.param(lambda T, x: x.int(), id="int"),
        pytest.param(lambda T, x: x.bool(), id="bool"),
        pytest.param(lambda T, x: x.type_as(T.tensor(np.array([1]))), id="type_as_int64"),
        pytest.param(lambda T, x: x.isnan(), id="isnan"),
        pytest.param(lambda T, x: T.isinf(x), id="T.isinf"),
        pytest.param(lambda T, x: x.isfinite(), id="isfinite"),
        pytest.param(lambda T, x: x.any(), id="any"),
        pytest.param(lambda T, x: T.all(x, 1), id="T.all_1"),
        pytest.param(lambda T, x: x.new_zeros((2,)), id="new_zeros"),
        pytest.param(lambda T, x: x.new_ones(2), id="new_ones"),
        pytest.param(lambda T, x: x.new_full((2,), 3.0), id="new_full"),
        pytest.param(lambda T, x: x.new_tensor([1.0, 2.0]), id="new_tensor"),
        pytest.param(lambda T, x: x.new_empty((2,)), id="new_empty"),
        pytest.param(lambda T, x: T.zeros_like(x), id="zeros_like"),
        pytest.param(lambda T, x: T.ones_like(x), id="ones_like"),
        pytest.param(lambda T, x: T.full_like(x, 2.0), id="full_like"),
        pytest.param(lambda T, x: T.empty_like(x), id="empty_like"),
        pytest.param(lambda T, x: T.rand_like(x), id="rand_like"),
        pytest.param(lambda T, x: T.randn_like(x), id="randn_like"),
    ],
)
def test_results_without_graph(T, rng, fn):
    """Integer/bool results and fresh factories do not join the graph of a grad input."""
    x = leaf(T, sample(rng, (2, 3)))
    y = fn(T, x)
    assert y.requires_grad is False
    assert y.grad_fn is None
    assert y.is_leaf


@pytest.mark.parametrize(
    "src,convert",
    [
        pytest.param("float64", lambda T, t: t.double(), id="float64.double"),
        pytest.param("float32", lambda T, t: t.float(), id="float32.float"),
        pytest.param("float16", lambda T, t: t.half(), id="float16.half"),
        pytest.param("int64", lambda T, t: t.long(), id="int64.long"),
        pytest.param("int32", lambda T, t: t.int(), id="int32.int"),
        pytest.param("bool", lambda T, t: t.bool(), id="bool.bool"),
        pytest.param("float64", lambda T, t: t.type_as(T.zeros(1, dtype=T.float64)),
                     id="float64.type_as_float64"),
        pytest.param("int32", lambda T, t: t.type_as(T.zeros(1, dtype=T.int32)),
                     id="int32.type_as_int32"),
    ],
)
def test_conversion_to_same_dtype_returns_self(T, src, convert):
    x = T.tensor(np_array_of(src))
    assert convert(T, x) is x


# --------------------------------------------------------------------------------------------
# Conversions: values against NumPy
# --------------------------------------------------------------------------------------------

# id, fn(T, t), target dtype
CONVERSIONS = [
    ("long", lambda T, t: t.long(), "int64"),
    ("int", lambda T, t: t.int(), "int32"),
    ("bool", lambda T, t: t.bool(), "bool"),
    ("half", lambda T, t: t.half(), "float16"),
    ("float", lambda T, t: t.float(), "float32"),
    ("double", lambda T, t: t.double(), "float64"),
    ("type_as_int64", lambda T, t: t.type_as(T.zeros(1, dtype=T.int64)), "int64"),
    ("type_as_float16", lambda T, t: t.type_as(T.zeros(1, dtype=T.float16)), "float16"),
    ("type_as_bool", lambda T, t: t.type_as(T.zeros(1, dtype=T.bool)), "bool"),
    ("type_as_uint8", lambda T, t: t.type_as(T.zeros(1, dtype=T.uint8)), "uint8"),
]
CONVERSION_PARAMS = [pytest.param(*r[1:], id=r[0]) for r in CONVERSIONS]


def source_values(rng, src, shape):
    if src == "float64":
        # fractional values of both signs (float -> int truncates toward zero), and zeros
        a = rng.uniform(-3.0, 3.0, size=shape)
        return np.where(rng.random(shape) < 0.2, 0.0, a)
    if src == "bool":
        return rng.random(shape) < 0.5
    return rng.integers(0, 4, size=shape).astype(src)


@pytest.mark.parametrize("src", ["float64", "int64", "int32", "bool"])
@pytest.mark.parametrize("fn,dst", CONVERSION_PARAMS)
def test_conversion_forward(T, rng, fn, dst, src):
    for shape in [(), (1,), (2, 3)]:
        a = source_values(rng, src, shape)
        if dst == "uint8":
            a = np.abs(a)  # negative floats to uint8 are unspecified
        y = fn(T, T.tensor(a))
        assert y.dtype == getattr(T, dst)
        assert tuple(y.shape) == shape
        out = to_np(y)
        assert out.dtype == (np.bool_ if dst == "bool" else np.dtype(dst))
        np.testing.assert_array_equal(out, a.astype(out.dtype), err_msg=f"shape {shape}")


def test_float_to_int_truncates_toward_zero(T):
    a = np.array([-1.7, 1.7, 0.5, -0.5, 2.0, -2.0])
    np.testing.assert_array_equal(to_np(T.tensor(a).long()), [-1, 1, 0, 0, 2, -2])
    np.testing.assert_array_equal(to_np(T.tensor(a).int()), [-1, 1, 0, 0, 2, -2])


def test_bool_conversion_of_nan_and_negative_zero(T):
    a = np.array([np.nan, -0.0, 0.0, -1.5, np.inf])
    np.testing.assert_array_equal(to_np(T.tensor(a).bool()), [True, False, False, True, True])


def test_half_rounds_and_overflows(T):
    a = np.array([1 / 3, 65504.0, 1e5, -1e5, 1e-8])
    y = T.tensor(a).half()
    assert y.dtype == T.float16
    expected = np.array([np.float16(1 / 3), 65504.0, np.inf, -np.inf, 0.0], dtype=np.float16)
    np.testing.assert_array_equal(to_np(y), expected)


# --------------------------------------------------------------------------------------------
# Gradients through conversions and nan_to_num
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn,dst",
    [
        pytest.param(lambda T, x: x.half(), "float16", id="half"),
        pytest.param(lambda T, x: x.float(), "float32", id="float"),
        pytest.param(lambda T, x: x.to(T.float16), "float16", id="to_float16"),
        pytest.param(lambda T, x: x.type_as(T.zeros(1, dtype=T.float32)), "float32",
                     id="type_as_float32"),
        pytest.param(lambda T, x: x.type_as(T.zeros(1, dtype=T.float16)), "float16",
                     id="type_as_float16"),
    ],
)
def test_grad_through_lower_precision_comes_back_float64(T, rng, fn, dst):
    x = leaf(T, sample(rng, (2, 3)))
    g = np.array([[0.5, 1.0, 2.0], [-1.0, 4.0, 0.25]])  # exact in float16
    y = fn(T, x)
    assert y.dtype == getattr(T, dst)
    assert y.requires_grad is True
    y.backward(T.tensor(g.astype(to_np(y).dtype)))
    assert x.grad.dtype == T.float64
    np.testing.assert_array_equal(to_np(x.grad), g)


def test_grad_through_double_of_float16(T, rng):
    x = leaf(T, sample(rng, (3,), dtype=np.float16))
    x.double().sum().backward()
    assert x.grad.dtype == T.float16
    np.testing.assert_array_equal(to_np(x.grad), np.ones(3, dtype=np.float16))


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda T, x: x.nan_to_num(), id="nan_to_num"),
        pytest.param(lambda T, x: T.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0),
                     id="T.nan_to_num_args"),
        pytest.param(lambda T, x: x.type_as(x), id="type_as_self"),
        pytest.param(lambda T, x: (x * x).type_as(T.zeros(1, dtype=T.float64)),
                     id="type_as_float64"),
        pytest.param(lambda T, x: (x * 2).double(), id="double"),
    ],
)
def test_gradcheck(T, rng, fn):
    for shape in [(), (1,), (2, 3)]:
        check_grads(T, lambda x: fn(T, x), sample(rng, shape))


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda T, x: x.nan_to_num(), id="default"),
        pytest.param(lambda T, x: x.nan_to_num(nan=1.0, posinf=2.0, neginf=-3.0), id="args"),
        pytest.param(lambda T, x: T.nan_to_num(x, 0.5), id="T.positional"),
    ],
)
def test_nan_to_num_grad_is_zero_at_nonfinite(T, fn):
    a = np.array([np.nan, 1.5, np.inf, -np.inf, -2.0])
    x = leaf(T, a)
    g = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    fn(T, x).backward(T.tensor(g))
    np.testing.assert_array_equal(to_np(x.grad), [0.0, 2.0, 0.0, 0.0, 5.0])


# --------------------------------------------------------------------------------------------
# nan_to_num, isnan / isinf / isfinite
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "fn,ref",
    [
        pytest.param(lambda T, x: x.nan_to_num(), lambda a: np.nan_to_num(a), id="default"),
        pytest.param(lambda T, x: T.nan_to_num(x), lambda a: np.nan_to_num(a), id="T.default"),
        pytest.param(lambda T, x: x.nan_to_num(nan=1.0, posinf=2.0, neginf=-3.0),
                     lambda a: np.nan_to_num(a, nan=1.0, posinf=2.0, neginf=-3.0), id="all_args"),
        pytest.param(lambda T, x: T.nan_to_num(x, 0.5, 7.0, -7.0),
                     lambda a: np.nan_to_num(a, nan=0.5, posinf=7.0, neginf=-7.0),
                     id="T.positional"),
        pytest.param(lambda T, x: x.nan_to_num(posinf=5.0),
                     lambda a: np.nan_to_num(a, posinf=5.0), id="posinf_only"),
        pytest.param(lambda T, x: x.nan_to_num(neginf=-5.0, nan=-1.0),
                     lambda a: np.nan_to_num(a, nan=-1.0, neginf=-5.0), id="neginf_nan"),
    ],
)
def test_nan_to_num_forward(T, rng, fn, ref, dtype):
    for shape in [(), (1,), (5,), (2, 3)]:
        a = with_nonfinite(rng, shape, dtype)
        y = fn(T, T.tensor(a))
        assert y.dtype == getattr(T, dtype)
        assert tuple(y.shape) == shape
        np.testing.assert_array_equal(to_np(y), ref(a), err_msg=f"shape {shape}")


def test_nan_to_num_defaults_are_dtype_extremes(T):
    a = [np.nan, np.inf, -np.inf]
    for dtype in (np.float16, np.float32, np.float64):
        y = to_np(T.tensor(np.array(a, dtype=dtype)).nan_to_num())
        info = np.finfo(dtype)
        np.testing.assert_array_equal(y, np.array([0, info.max, info.min], dtype=dtype))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_nan_to_num_of_int_and_bool_is_unchanged(T, dtype):
    a = np_array_of(dtype)
    y = T.tensor(a).nan_to_num()
    assert y.dtype == getattr(T, dtype)
    np.testing.assert_array_equal(to_np(y), a)


@pytest.mark.parametrize(
    "fn,ref",
    [
        pytest.param(lambda T, x: x.isnan(), np.isnan, id="x.isnan"),
        pytest.param(lambda T, x: T.isnan(x), np.isnan, id="T.isnan"),
        pytest.param(lambda T, x: x.isinf(), np.isinf, id="x.isinf"),
        pytest.param(lambda T, x: T.isinf(x), np.isinf, id="T.isinf"),
        pytest.param(lambda T, x: x.isfinite(), np.isfinite, id="x.isfinite"),
        pytest.param(lambda T, x: T.isfinite(x), np.isfinite, id="T.isfinite"),
    ],
)
def test_isnan_isinf_isfinite(T, rng, fn, ref):
    for dtype in FLOATS:
        for shape in [(), (1,), (5,), (2, 3)]:
            a = with_nonfinite(rng, shape, dtype)
            y = fn(T, T.tensor(a))
            assert y.dtype == T.bool
            assert tuple(y.shape) == shape
            np.testing.assert_array_equal(to_np(y), ref(a), err_msg=f"{dtype} {shape}")


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_isnan_isinf_isfinite_of_int_and_bool(T, dtype):
    x = T.tensor(np_array_of(dtype))
    for y, expected in ((x.isnan(), False), (x.isinf(), False), (x.isfinite(), True)):
        assert y.dtype == T.bool
        np.testing.assert_array_equal(to_np(y), np.full((2, 3), expected))


# --------------------------------------------------------------------------------------------
# any / all
# --------------------------------------------------------------------------------------------

# id, fn(T, x), NumPy reference
ANY_ALL = [
    ("x.any", lambda T, x: x.any(), np.any),
    ("T.any", lambda T, x: T.any(x), np.any),
    ("x.all", lambda T, x: x.all(), np.all),
    ("T.all", lambda T, x: T.all(x), np.all),
    ("x.any_0", lambda T, x: x.any(0), lambda a: a.any(0)),
    ("x.any_-1_keepdim", lambda T, x: x.any(-1, keepdim=True), lambda a: a.any(-1, keepdims=True)),
    ("T.any_dim=1", lambda T, x: T.any(x, dim=1), lambda a: a.any(1)),
    ("x.all_1", lambda T, x: x.all(1), lambda a: a.all(1)),
    ("x.all_0_keepdim", lambda T, x: x.all(0, keepdim=True), lambda a: a.all(0, keepdims=True)),
    ("T.all_dim=-1", lambda T, x: T.all(x, dim=-1), lambda a: a.all(-1)),
]


def any_all_input(rng, dtype):
    """Rows all zero, some zero and none zero, so any and all differ along both dims."""
    a = np.array([[0, 0, 0], [1, 2, 0], [3, 1, 2], [0, 1, 0]])[rng.permutation(4)]
    if dtype == "bool":
        return a != 0
    return (a * rng.choice([-1, 1], size=a.shape)).astype(dtype)


@pytest.mark.parametrize("fn,ref", [pytest.param(*r[1:], id=r[0]) for r in ANY_ALL])
def test_any_all(T, rng, fn, ref):
    for dtype in ["bool", "float64", "float32", "int64", "int32"]:
        a = any_all_input(rng, dtype)
        y = fn(T, T.tensor(a))
        expected = np.asarray(ref(a))
        assert y.dtype == T.bool, dtype
        assert tuple(y.shape) == expected.shape, dtype
        np.testing.assert_array_equal(to_np(y), expected, err_msg=dtype)


@pytest.mark.parametrize(
    "fn,expected",
    [
        pytest.param(lambda x: x.any(), 1, id="any"),
        pytest.param(lambda x: x.all(), 0, id="all"),
        pytest.param(lambda x: x.all(1), [0, 1], id="all_1"),
    ],
)
def test_any_all_of_uint8_keep_uint8(T, fn, expected):
    y = fn(T.tensor(np.array([[0, 2], [1, 3]], dtype=np.uint8)))
    assert y.dtype == T.uint8
    np.testing.assert_array_equal(to_np(y), expected)


def test_any_all_of_empty_and_0d(T):
    empty = T.tensor(np.zeros(0))
    assert empty.any().item() is False
    assert empty.all().item() is True
    zero = T.tensor(np.array(0.0))
    assert zero.any().item() is False
    assert tuple(zero.all(0).shape) == ()
    assert T.tensor(np.array(-0.5)).all().item() is True


def test_any_all_see_nan_as_true(T):
    x = T.tensor(np.array([0.0, np.nan]))
    assert x.any().item() is True
    assert x.all().item() is False
    assert T.tensor(np.array([np.nan])).all().item() is True


# --------------------------------------------------------------------------------------------
# equal and allclose
# --------------------------------------------------------------------------------------------


def t64(values):
    return np.asarray(values, dtype=np.float64)


# id, fn(T), expected Python bool
EQUAL_CASES = [
    ("equal_same", lambda T: T.equal(T.tensor(t64([1, 2])), T.tensor(t64([1, 2]))), True),
    ("equal_differs", lambda T: T.equal(T.tensor(t64([1, 2])), T.tensor(t64([1, 2.5]))), False),
    ("x.equal", lambda T: T.tensor(t64([[1, 2]])).equal(T.tensor(t64([[1, 2]]))), True),
    ("equal_shape_differs", lambda T: T.equal(T.tensor(t64([1, 1])), T.tensor(t64([[1, 1]]))),
     False),
    ("equal_no_broadcast", lambda T: T.equal(T.tensor(np.ones((2, 2))), T.tensor(np.ones(2))),
     False),
    ("equal_dtypes_differ", lambda T: T.equal(T.tensor(np.ones(3, dtype=np.float32)),
                                              T.tensor(np.ones(3))), True),
    ("equal_int_float", lambda T: T.equal(T.tensor(np.array([1])), T.tensor(t64([1]))), True),
    ("equal_nan", lambda T: T.equal(T.tensor(t64([np.nan])), T.tensor(t64([np.nan]))), False),
    ("equal_0d", lambda T: T.equal(T.tensor(2.0), T.tensor(2.0)), True),
    ("equal_bool", lambda T: T.equal(T.tensor([True, False]), T.tensor([True, True])), False),
    ("allclose_same", lambda T: T.allclose(T.tensor(t64([1, 2])), T.tensor(t64([1, 2]))), True),
    ("allclose_within_rtol", lambda T: T.allclose(T.tensor(t64([1.0])), T.tensor(t64([1 + 5e-6]))),
     True),
    ("allclose_outside_rtol", lambda T: T.allclose(T.tensor(t64([1.0])),
                                                   T.tensor(t64([1 + 1e-4]))), False),
    ("allclose_atol", lambda T: T.allclose(T.tensor(t64([0.0])), T.tensor(t64([1e-3])),
                                           atol=1e-2), True),
    ("allclose_default_atol", lambda T: T.allclose(T.tensor(t64([0.0])), T.tensor(t64([1e-7])))
     , False),
    ("allclose_rtol", lambda T: T.allclose(T.tensor(t64([100.0])), T.tensor(t64([101.0])),
                                           rtol=0.02), True),
    ("allclose_rtol_uses_other", lambda T: T.allclose(T.tensor(t64([1.0])), T.tensor(t64([2.0])),
                                                      rtol=0.6, atol=0.0), True),
    ("allclose_rtol_not_self", lambda T: T.allclose(T.tensor(t64([2.0])), T.tensor(t64([1.0])),
                                                    rtol=0.6, atol=0.0), False),
    ("allclose_nan", lambda T: T.allclose(T.tensor(t64([np.nan])), T.tensor(t64([np.nan]))),
     False),
    ("allclose_equal_nan", lambda T: T.allclose(T.tensor(t64([np.nan, 1])),
                                                T.tensor(t64([np.nan, 1])), equal_nan=True), True),
    ("allclose_inf", lambda T: T.allclose(T.tensor(t64([np.inf])), T.tensor(t64([np.inf]))), True),
    ("allclose_broadcast", lambda T: T.allclose(T.tensor(np.ones((2, 3))), T.tensor(np.ones(3))),
     True),
    ("x.allclose", lambda T: T.tensor(t64([1.0, 2.0])).allclose(T.tensor(t64([1.0, 2.1]))),
     False),
    ("allclose_int_int", lambda T: T.allclose(T.tensor(np.array([1, 2])),
                                              T.tensor(np.array([1, 2]))), True),
]


@pytest.mark.parametrize("fn,expected", [pytest.param(*r[1:], id=r[0]) for r in EQUAL_CASES])
def test_equal_and_allclose(T, fn, expected):
    result = fn(T)
    assert type(result) is bool
    assert result is expected


def test_allclose_matches_numpy(T, rng):
    for shape in [(), (1,), (2, 3)]:
        a = sample(rng, shape)
        noise = rng.uniform(-2e-5, 2e-5, size=shape) * np.abs(a)
        for b in (a + noise, a + noise / 10, a):
            assert T.allclose(T.tensor(a), T.tensor(b)) is bool(np.allclose(a, b))
            assert T.allclose(T.tensor(b), T.tensor(a)) is bool(np.allclose(b, a))


# --------------------------------------------------------------------------------------------
# new_* factories
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn,ref",
    [
        pytest.param(lambda x: x.new_zeros((2, 3)), lambda d: np.zeros((2, 3), d),
                     id="new_zeros_tuple"),
        pytest.param(lambda x: x.new_zeros(2, 3), lambda d: np.zeros((2, 3), d),
                     id="new_zeros_varargs"),
        pytest.param(lambda x: x.new_ones([3]), lambda d: np.ones(3, d), id="new_ones_list"),
        pytest.param(lambda x: x.new_ones(()), lambda d: np.ones((), d), id="new_ones_0d"),
        pytest.param(lambda x: x.new_full((2,), 1), lambda d: np.full(2, 1, d),
                     id="new_full"),
        pytest.param(lambda x: x.new_tensor([1, 0, 1]), lambda d: np.array([1, 0, 1], d),
                     id="new_tensor"),
        pytest.param(lambda x: x.new_tensor(1), lambda d: np.array(1, d), id="new_tensor_0d"),
    ],
)
def test_new_factories_follow_self_dtype(T, fn, ref):
    for dtype in DTYPES:
        y = fn(T.tensor(np_array_of(dtype, (4,))))
        expected = ref(np.bool_ if dtype == "bool" else np.dtype(dtype))
        assert y.dtype == getattr(T, dtype)
        assert tuple(y.shape) == expected.shape, dtype
        assert y.requires_grad is False
        np.testing.assert_array_equal(to_np(y), expected, err_msg=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_new_empty_follows_self_dtype(T, dtype):
    x = T.tensor(np_array_of(dtype, (4,)))
    for y, shape in ((x.new_empty((2, 3)), (2, 3)), (x.new_empty(5), (5,)),
                     (x.new_empty(()), ())):
        assert y.dtype == getattr(T, dtype)
        assert tuple(y.shape) == shape


@pytest.mark.parametrize(
    "fn,dtype,expected",
    [
        pytest.param(lambda T, x: x.new_zeros((2,), dtype=T.bool), "bool", [False, False],
                     id="new_zeros_dtype_bool"),
        pytest.param(lambda T, x: x.new_ones(2, dtype=T.int32), "int32", [1, 1],
                     id="new_ones_dtype_int32"),
        pytest.param(lambda T, x: x.new_full((2,), 2.5, dtype=T.float16), "float16", [2.5, 2.5],
                     id="new_full_dtype_float16"),
        pytest.param(lambda T, x: x.new_tensor([1, 2], dtype=T.int32), "int32", [1, 2],
                     id="new_tensor_dtype_int32"),
        pytest.param(lambda T, x: x.new_tensor([1.5], dtype=T.float32), "float32", [1.5],
                     id="new_tensor_dtype_float32"),
    ],
)
def test_new_factories_dtype_argument(T, fn, dtype, expected):
    y = fn(T, T.tensor(np.zeros(3)))
    assert y.dtype == getattr(T, dtype)
    np.testing.assert_array_equal(to_np(y), expected)


def test_new_empty_dtype_argument(T):
    y = T.tensor(np.zeros(3)).new_empty((2,), dtype=T.int16)
    assert y.dtype == T.int16
    assert tuple(y.shape) == (2,)


def test_new_factories_convert_values_to_self_dtype(T):
    i = T.tensor(np.array([1, 2, 3]))
    y = i.new_tensor([1.5, 2.7])
    assert y.dtype == T.int64
    np.testing.assert_array_equal(to_np(y), [1, 2])
    z = i.new_full((2,), 2.5)
    assert z.dtype == T.int64
    np.testing.assert_array_equal(to_np(z), [2, 2])
    f = T.tensor(np.zeros(2)).new_tensor([1, 2])
    assert f.dtype == T.float64


def test_new_factories_requires_grad(T, rng):
    x = leaf(T, sample(rng, (2,)))
    assert x.new_zeros((2,)).requires_grad is False
    for y in (x.new_ones((2,), requires_grad=True), x.new_tensor([1.0], requires_grad=True),
              x.new_full((1,), 2.0, requires_grad=True), x.new_zeros(3, requires_grad=True)):
        assert y.requires_grad is True
        assert y.is_leaf
        assert y.dtype == T.float64


def test_new_tensor_copies_its_data(T):
    a = np.array([1.0, 2.0])
    y = T.tensor(np.zeros(1)).new_tensor(a)
    a[0] = 5.0
    np.testing.assert_array_equal(to_np(y), [1.0, 2.0])


# --------------------------------------------------------------------------------------------
# *_like factories for every dtype
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "fn,value",
    [
        pytest.param(lambda T, x: T.zeros_like(x), 0, id="zeros_like"),
        pytest.param(lambda T, x: T.ones_like(x), 1, id="ones_like"),
        pytest.param(lambda T, x: T.full_like(x, 1), 1, id="full_like_1"),
        pytest.param(lambda T, x: T.full_like(x, 0), 0, id="full_like_0"),
    ],
)
def test_like_factories_keep_dtype_and_shape(T, fn, value, dtype):
    np_dtype = np.bool_ if dtype == "bool" else np.dtype(dtype)
    for shape in [(), (1,), (2, 3)]:
        y = fn(T, T.tensor(np_array_of(dtype, shape)))
        assert y.dtype == getattr(T, dtype)
        assert tuple(y.shape) == shape
        assert y.requires_grad is False
        out = to_np(y)
        assert out.dtype == np_dtype
        np.testing.assert_array_equal(out, np.full(shape, value, dtype=np_dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_like_keeps_dtype_and_shape(T, dtype):
    y = T.empty_like(T.tensor(np_array_of(dtype, (2, 3))))
    assert y.dtype == getattr(T, dtype)
    assert tuple(y.shape) == (2, 3)


@pytest.mark.parametrize(
    "dtype,value,expected",
    [
        pytest.param("float16", 1 / 3, np.float16(1 / 3), id="float16_third"),
        pytest.param("float32", 1 / 3, np.float32(1 / 3), id="float32_third"),
        pytest.param("float64", -2.5, -2.5, id="float64"),
        pytest.param("int8", 2.7, 2, id="int8_truncates"),
        pytest.param("int16", -3, -3, id="int16"),
        pytest.param("int64", 7, 7, id="int64"),
        pytest.param("uint8", -1, 255, id="uint8_wraps_-1"),
        pytest.param("bool", 2, True, id="bool_2"),
        pytest.param("bool", 0.0, False, id="bool_0.0"),
    ],
)
def test_full_like_converts_fill_value(T, dtype, value, expected):
    y = T.full_like(T.tensor(np_array_of(dtype, (2,))), value)
    assert y.dtype == getattr(T, dtype)
    np.testing.assert_array_equal(to_np(y), np.full(2, expected, dtype=to_np(y).dtype))


@pytest.mark.parametrize("shape", [(), (1,), (40,)], ids=shape_id)
@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_like_and_randn_like_keep_dtype_and_shape(T, dtype, shape):
    x = T.tensor(np_array_of(dtype, shape))
    r = T.rand_like(x)
    n = T.randn_like(x)
    for y in (r, n):
        assert y.dtype == getattr(T, dtype)
        assert tuple(y.shape) == shape
        assert y.requires_grad is False
        assert np.isfinite(to_np(y)).all()
    values = to_np(r)
    assert ((values >= 0) & (values < 1)).all()
    if shape == (40,):
        assert len(np.unique(values)) > 20
        assert len(np.unique(to_np(n))) > 20
        assert (to_np(n) < 0).any()


@pytest.mark.parametrize("dtype", DTYPES)
def test_like_factories_dtype_argument(T, dtype):
    x = T.tensor(np_array_of(dtype))
    for target in (T.float16, T.float32, T.float64):
        for fn in (T.zeros_like, T.ones_like, T.empty_like, T.rand_like, T.randn_like):
            y = fn(x, dtype=target)
            assert y.dtype == target
            assert tuple(y.shape) == (2, 3)
        assert T.full_like(x, 3, dtype=target).dtype == target
    assert T.zeros_like(T.tensor(np.zeros(2)), dtype=getattr(T, dtype)).dtype == getattr(T, dtype)


def test_like_factories_requires_grad_argument(T, rng):
    x = leaf(T, sample(rng, (2,)))
    assert T.zeros_like(x).requires_grad is False
    for fn in (T.zeros_like, T.ones_like, T.empty_like, T.rand_like, T.randn_like):
        y = fn(x, requires_grad=True)
        assert y.requires_grad is True
        assert y.is_leaf
    assert T.full_like(x, 2.0, requires_grad=True).requires_grad is True


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


def tensor_of(T, dtype, shape=(2, 3)):
    return T.tensor(np_array_of(dtype, shape))


ERROR_CASES = [
    pytest.param(lambda T, d=d: T.rand_like(tensor_of(T, d)), NotImplementedError,
                 "not implemented for", id=f"rand_like_{d}")
    for d in NON_FLOATS
] + [
    pytest.param(lambda T, d=d: T.randn_like(tensor_of(T, d)), NotImplementedError,
                 "not implemented for", id=f"randn_like_{d}")
    for d in NON_FLOATS
] + [
    pytest.param(lambda T: T.allclose(tensor_of(T, "int64"), tensor_of(T, "float64")),
                 RuntimeError, "Long did not match Double", id="allclose_int64_float64"),
    pytest.param(lambda T: T.allclose(tensor_of(T, "float32"), tensor_of(T, "float64")),
                 RuntimeError, "Float did not match Double", id="allclose_float32_float64"),
    pytest.param(lambda T: T.allclose(tensor_of(T, "float64", (3,)), tensor_of(T, "float64", (2,))),
                 RuntimeError, "must match the size", id="allclose_no_broadcast"),
    pytest.param(lambda T: tensor_of(T, "float64").new_full(2, 3.0), TypeError,
                 "must be tuple of ints", id="new_full_int_size"),
    pytest.param(lambda T: tensor_of(T, "int64").new_tensor([1, 2], requires_grad=True),
                 RuntimeError, "Only Tensors of floating point and complex dtype can require "
                 "gradients", id="new_tensor_int_requires_grad"),
    pytest.param(lambda T: tensor_of(T, "int64").new_zeros((2,), requires_grad=True),
                 RuntimeError, "Only Tensors of floating point and complex dtype can require "
                 "gradients", id="new_zeros_int_requires_grad"),
    pytest.param(lambda T: T.full_like(tensor_of(T, "uint8"), 300), RuntimeError,
                 "without overflow", id="full_like_uint8_300"),
    pytest.param(lambda T: T.zeros_like(tensor_of(T, "int64"), requires_grad=True),
                 RuntimeError, "Only Tensors of floating point and complex dtype can require "
                 "gradients", id="zeros_like_int_requires_grad"),
    pytest.param(lambda T: tensor_of(T, "float64").any(2), IndexError, "Dimension out of range",
                 id="any_dim_2"),
    pytest.param(lambda T: tensor_of(T, "bool").all(-3), IndexError, "Dimension out of range",
                 id="all_dim_-3"),
]


@pytest.mark.parametrize("fn,exc,match", ERROR_CASES)
def test_errors(T, fn, exc, match):
    with pytest.raises(exc, match=match):
        fn(T)
