"""Elementwise ops: log1p, expm1, tan, rsqrt, sign, round, floor, ceil, clamp / clamp_min /
clamp_max, maximum, minimum, where, pow in all overloads, comparisons and logical ops.

Node names and saved fields, forward values against NumPy, gradcheck and gradgradcheck in
float64, the subgradients torch picks at kinks and ties, result dtypes and error messages.
Every test runs on ``ext`` and on ``torch``; the expectations are torch 2.13's behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import ANY, POS, leaf, sample, to_np

# torch reports a saved negative dim or number as unsigned 64-bit: -1 reads back as 2**64 - 1.
NEG1 = 2**64 - 1

# Input domains besides helpers.ANY and helpers.POS: a (low, high) uniform range.
LOG1P = (-0.8, 2.0)  # inside the domain of log1p
TAN = (-1.2, 1.2)  # away from the poles of tan at +-pi/2
WIDE = (-4.0, 4.0)  # spans several integers: round, floor, ceil, sign


def draw(rng, shape, domain=ANY, dtype=np.float64):
    """Random values of ``shape``: a helpers domain or a (low, high) range."""
    if isinstance(domain, tuple):
        return np.asarray(rng.uniform(*domain, size=shape), dtype=dtype)
    return sample(rng, shape, domain, dtype)


def shape_id(shape):
    return "x".join(map(str, shape)) if shape else "0d"


def shapes_id(shapes):
    return "_".join(shape_id(s) for s in shapes)


def assert_forward(T, y, ref, where=""):
    ref = np.asarray(ref)
    assert tuple(y.shape) == ref.shape, where
    assert y.dtype == T.float64, where
    np.testing.assert_allclose(to_np(y), ref, rtol=1e-12, atol=1e-15, err_msg=where)


def check_grads(T, fn, *arrays):
    inputs = tuple(leaf(T, a) for a in arrays)
    assert T.autograd.gradcheck(fn, inputs)
    assert T.autograd.gradgradcheck(fn, inputs)


def grads_of(T, fn, arrays, g):
    """The gradients of ``(fn(*inputs) * g).sum()`` with respect to every input."""
    inputs = [leaf(T, np.asarray(a, dtype=np.float64)) for a in arrays]
    out = fn(T, *inputs)
    out.backward(T.tensor(np.asarray(g, dtype=np.float64)))
    return [to_np(x.grad) for x in inputs]


# --------------------------------------------------------------------------------------------
# Node names and saved fields
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Is:
    """The saved tensor is this very input object."""

    name: str


@dataclass(frozen=True)
class Result:
    """The saved tensor equals the op's output but is a different object."""


RESULT = Result()


def graph_inputs(T, rng):
    return SimpleNamespace(
        x=leaf(T, sample(rng, (2, 3), POS)),
        w=leaf(T, sample(rng, (2, 3), POS)),
        b=leaf(T, sample(rng, (3,), POS)),
        c=leaf(T, sample(rng, (2, 3), POS), requires_grad=False),
        s=leaf(T, sample(rng, (), POS)),
        cond=T.tensor(np.array([[True, False, True], [False, False, True]])),
    )


def node(id_, fn, name, **saved):
    """A table row: ``fn(T, inputs)``, the node name and every ``_saved_<key>`` field."""
    return pytest.param(fn, name, {f"_saved_{k}": v for k, v in saved.items()}, id=id_)


NODE_CASES = [
    node("x.log1p", lambda T, i: i.x.log1p(), "Log1PBackward0", self=Is("x")),
    node("T.log1p", lambda T, i: T.log1p(i.x), "Log1PBackward0", self=Is("x")),
    node("x.expm1", lambda T, i: i.x.expm1(), "Expm1Backward0", result=RESULT),
    node("T.expm1", lambda T, i: T.expm1(i.x), "Expm1Backward0", result=RESULT),
    node("x.tan", lambda T, i: i.x.tan(), "TanBackward0", result=RESULT),
    node("T.tan", lambda T, i: T.tan(i.x), "TanBackward0", result=RESULT),
    node("x.rsqrt", lambda T, i: i.x.rsqrt(), "RsqrtBackward0", result=RESULT),
    node("T.rsqrt", lambda T, i: T.rsqrt(i.x), "RsqrtBackward0", result=RESULT),
    node("x.sign", lambda T, i: i.x.sign(), "SignBackward0"),
    node("T.sign", lambda T, i: T.sign(i.x), "SignBackward0"),
    node("x.round", lambda T, i: i.x.round(), "RoundBackward0"),
    node("T.round", lambda T, i: T.round(i.x), "RoundBackward0"),
    node("x.round_decimals=2", lambda T, i: i.x.round(decimals=2), "RoundBackward1"),
    node("x.round_decimals=0", lambda T, i: i.x.round(decimals=0), "RoundBackward1"),
    node("T.round_decimals=-1", lambda T, i: T.round(i.x, decimals=-1), "RoundBackward1"),
    node("x.floor", lambda T, i: i.x.floor(), "FloorBackward0"),
    node("T.floor", lambda T, i: T.floor(i.x), "FloorBackward0"),
    node("x.ceil", lambda T, i: i.x.ceil(), "CeilBackward0"),
    node("T.ceil", lambda T, i: T.ceil(i.x), "CeilBackward0"),
    # clamp with Python-number bounds: the numbers are saved as given (int stays int)
    node("x.clamp_0.6_1.2", lambda T, i: i.x.clamp(0.6, 1.2), "ClampBackward1",
         self=Is("x"), min=0.6, max=1.2),
    node("x.clamp_min=0.6", lambda T, i: i.x.clamp(min=0.6), "ClampBackward1",
         self=Is("x"), min=0.6, max=None),
    node("x.clamp_max=1.2", lambda T, i: i.x.clamp(max=1.2), "ClampBackward1",
         self=Is("x"), min=None, max=1.2),
    node("x.clamp_min=1_int", lambda T, i: i.x.clamp(min=1), "ClampBackward1",
         self=Is("x"), min=1, max=None),
    node("x.clamp_0.5_1", lambda T, i: i.x.clamp(min=0.5, max=1), "ClampBackward1",
         self=Is("x"), min=0.5, max=1),
    node("T.clamp_0.6_1.2", lambda T, i: T.clamp(i.x, 0.6, 1.2), "ClampBackward1",
         self=Is("x"), min=0.6, max=1.2),
    node("T.clamp_max=2", lambda T, i: T.clamp(i.x, max=2), "ClampBackward1",
         self=Is("x"), min=None, max=2),
    node("x.clamp_min_0.6", lambda T, i: i.x.clamp_min(0.6), "ClampMinBackward0",
         self=Is("x"), min=0.6),
    node("x.clamp_min_1", lambda T, i: i.x.clamp_min(1), "ClampMinBackward0",
         self=Is("x"), min=1),
    node("T.clamp_min_0.5", lambda T, i: T.clamp_min(i.x, 0.5), "ClampMinBackward0",
         self=Is("x"), min=0.5),
    node("x.clamp_max_1.2", lambda T, i: i.x.clamp_max(1.2), "ClampMaxBackward0",
         self=Is("x"), max=1.2),
    node("T.clamp_max_2", lambda T, i: T.clamp_max(i.x, 2), "ClampMaxBackward0",
         self=Is("x"), max=2),
    # clamp with tensor bounds
    node("x.clamp_min=w", lambda T, i: i.x.clamp(min=i.w), "ClampBackward0",
         self=Is("x"), min=Is("w"), max=None),
    node("x.clamp_max=w", lambda T, i: i.x.clamp(max=i.w), "ClampBackward0",
         self=Is("x"), min=None, max=Is("w")),
    node("x.clamp_w_b", lambda T, i: i.x.clamp(i.w, i.b), "ClampBackward0",
         self=Is("x"), min=Is("w"), max=Is("b")),
    node("x.clamp_min=c_const", lambda T, i: i.x.clamp(min=i.c), "ClampBackward0",
         self=Is("x"), min=Is("c"), max=None),
    node("T.clamp_w_b", lambda T, i: T.clamp(i.x, i.w, i.b), "ClampBackward0",
         self=Is("x"), min=Is("w"), max=Is("b")),
    node("x.clamp_min_w", lambda T, i: i.x.clamp_min(i.w), "ClampMinBackward1",
         self=Is("x"), min=Is("w")),
    node("T.clamp_min_c", lambda T, i: T.clamp_min(i.x, i.c), "ClampMinBackward1",
         self=Is("x"), min=Is("c")),
    node("x.clamp_max_w", lambda T, i: i.x.clamp_max(i.w), "ClampMaxBackward1",
         self=Is("x"), max=Is("w")),
    node("T.clamp_max_b", lambda T, i: T.clamp_max(i.x, i.b), "ClampMaxBackward1",
         self=Is("x"), max=Is("b")),
    # maximum / minimum, and max / min of two tensors
    node("T.maximum", lambda T, i: T.maximum(i.x, i.w), "MaximumBackward0",
         self=Is("x"), other=Is("w")),
    node("x.maximum_b", lambda T, i: i.x.maximum(i.b), "MaximumBackward0",
         self=Is("x"), other=Is("b")),
    node("T.maximum_c_x", lambda T, i: T.maximum(i.c, i.x), "MaximumBackward0",
         self=Is("c"), other=Is("x")),
    node("T.max_x_w", lambda T, i: T.max(i.x, i.w), "MaximumBackward0",
         self=Is("x"), other=Is("w")),
    node("T.minimum", lambda T, i: T.minimum(i.x, i.w), "MinimumBackward0",
         self=Is("x"), other=Is("w")),
    node("x.minimum_c", lambda T, i: i.x.minimum(i.c), "MinimumBackward0",
         self=Is("x"), other=Is("c")),
    node("T.min_x_w", lambda T, i: T.min(i.x, i.w), "MinimumBackward0",
         self=Is("x"), other=Is("w")),
    # where saves only the condition, the very tensor passed in
    node("T.where_x_w", lambda T, i: T.where(i.cond, i.x, i.w), "WhereBackward0",
         condition=Is("cond")),
    node("T.where_x_2.0", lambda T, i: T.where(i.cond, i.x, 2.0), "WhereBackward0",
         condition=Is("cond")),
    node("T.where_2.0_x", lambda T, i: T.where(i.cond, 2.0, i.x), "WhereBackward0",
         condition=Is("cond")),
    node("T.where_c_x", lambda T, i: T.where(i.cond, i.c, i.x), "WhereBackward0",
         condition=Is("cond")),
    node("x.where_w", lambda T, i: i.x.where(i.cond, i.w), "WhereBackward0",
         condition=Is("cond")),
    # pow overloads not already in test_ops_names.py
    node("x.pow_-2", lambda T, i: i.x.pow(-2), "PowBackward0", self=Is("x"), exponent=-2),
    node("x**0.5", lambda T, i: i.x**0.5, "PowBackward0", self=Is("x"), exponent=0.5),
    node("x**s_0d", lambda T, i: i.x**i.s, "PowBackward1",
         self=Is("x"), exponent=Is("s"), result=RESULT),
    node("T.pow_x_b", lambda T, i: T.pow(i.x, i.b), "PowBackward1",
         self=Is("x"), exponent=Is("b"), result=RESULT),
    node("T.pow_2.5_x", lambda T, i: T.pow(2.5, i.x), "PowBackward2",
         self=2.5, exponent=Is("x"), result=RESULT),
    node("3**x", lambda T, i: 3**i.x, "PowBackward2", self=3, exponent=Is("x"), result=RESULT),
]


def check_saved(T, actual, expected, inputs, out):
    if isinstance(expected, Is):
        assert actual is getattr(inputs, expected.name)
    elif isinstance(expected, Result):
        assert isinstance(actual, T.Tensor)
        assert actual is not out
        np.testing.assert_array_equal(to_np(actual), to_np(out))
    elif expected is None:
        assert actual is None
    else:
        assert type(actual) is type(expected)
        assert actual == expected


@pytest.mark.parametrize("fn,name,saved", NODE_CASES)
def test_node_name_and_saved_fields(T, rng, fn, name, saved):
    inputs = graph_inputs(T, rng)
    out = fn(T, inputs)
    grad_fn = out.grad_fn
    assert type(grad_fn).__name__ == name
    assert sorted(a for a in dir(grad_fn) if a.startswith("_saved_")) == sorted(saved)
    for attr, expected in saved.items():
        check_saved(T, getattr(grad_fn, attr), expected, inputs, out)


# --------------------------------------------------------------------------------------------
# Op tables shared by the forward and gradcheck tests
# --------------------------------------------------------------------------------------------


def np_clamp(a, lo=None, hi=None):
    """torch.clamp: min first, then max (so max wins when min > max)."""
    if lo is not None:
        a = np.maximum(a, lo)
    if hi is not None:
        a = np.minimum(a, hi)
    return a


# id, fn(T, x), NumPy reference, input domain
UNARY = [
    ("x.log1p", lambda T, x: x.log1p(), np.log1p, LOG1P),
    ("T.log1p", lambda T, x: T.log1p(x), np.log1p, LOG1P),
    ("x.expm1", lambda T, x: x.expm1(), np.expm1, ANY),
    ("T.expm1", lambda T, x: T.expm1(x), np.expm1, ANY),
    ("x.tan", lambda T, x: x.tan(), np.tan, TAN),
    ("T.tan", lambda T, x: T.tan(x), np.tan, TAN),
    ("x.rsqrt", lambda T, x: x.rsqrt(), lambda a: 1 / np.sqrt(a), POS),
    ("T.rsqrt", lambda T, x: T.rsqrt(x), lambda a: 1 / np.sqrt(a), POS),
    ("x.sign", lambda T, x: x.sign(), np.sign, WIDE),
    ("T.sign", lambda T, x: T.sign(x), np.sign, WIDE),
    ("x.round", lambda T, x: x.round(), np.round, WIDE),
    ("T.round", lambda T, x: T.round(x), np.round, WIDE),
    ("x.round_decimals=2", lambda T, x: x.round(decimals=2), lambda a: np.round(a, 2), WIDE),
    ("T.round_decimals=1", lambda T, x: T.round(x, decimals=1), lambda a: np.round(a, 1), WIDE),
    ("x.round_decimals=-1", lambda T, x: (x * 30).round(decimals=-1),
     lambda a: np.round(a * 30, -1), WIDE),
    ("x.floor", lambda T, x: x.floor(), np.floor, WIDE),
    ("T.floor", lambda T, x: T.floor(x), np.floor, WIDE),
    ("x.ceil", lambda T, x: x.ceil(), np.ceil, WIDE),
    ("T.ceil", lambda T, x: T.ceil(x), np.ceil, WIDE),
    ("x.clamp_-1_1", lambda T, x: x.clamp(-1, 1), lambda a: np_clamp(a, -1, 1), ANY),
    ("x.clamp_min=-0.3", lambda T, x: x.clamp(min=-0.3), lambda a: np_clamp(a, -0.3), ANY),
    ("x.clamp_max=0.3", lambda T, x: x.clamp(max=0.3), lambda a: np_clamp(a, None, 0.3), ANY),
    ("T.clamp_-1.1_0.9", lambda T, x: T.clamp(x, -1.1, 0.9),
     lambda a: np_clamp(a, -1.1, 0.9), ANY),
    ("T.clamp_min=0", lambda T, x: T.clamp(x, min=0), lambda a: np_clamp(a, 0), ANY),
    ("x.clamp_min_1", lambda T, x: x.clamp_min(1), lambda a: np_clamp(a, 1), ANY),
    ("T.clamp_min_-0.7", lambda T, x: T.clamp_min(x, -0.7), lambda a: np_clamp(a, -0.7), ANY),
    ("x.clamp_max_0.25", lambda T, x: x.clamp_max(0.25), lambda a: np_clamp(a, None, 0.25), ANY),
    ("T.clamp_max_-1", lambda T, x: T.clamp_max(x, -1), lambda a: np_clamp(a, None, -1), ANY),
    ("x.clamp_min>max", lambda T, x: x.clamp(1.0, -1.0), lambda a: np_clamp(a, 1.0, -1.0), ANY),
    ("x**3", lambda T, x: x**3, lambda a: a**3, ANY),
    ("x.pow_-2", lambda T, x: x.pow(-2), lambda a: a**-2.0, ANY),
    ("x**1.5", lambda T, x: x**1.5, lambda a: a**1.5, POS),
    ("T.pow_x_0.5", lambda T, x: T.pow(x, 0.5), np.sqrt, POS),
    ("x**0", lambda T, x: x**0, lambda a: np.ones_like(a), ANY),
    ("x**1", lambda T, x: x**1, lambda a: a, ANY),
    ("2.5**x", lambda T, x: 2.5**x, lambda a: 2.5**a, ANY),
    ("T.pow_0.5_x", lambda T, x: T.pow(0.5, x), lambda a: 0.5**a, ANY),
]
UNARY_PARAMS = [pytest.param(*row[1:], id=row[0]) for row in UNARY]

# id, fn(T, a, b), NumPy reference, domain of a, domain of b
BINARY = [
    ("T.maximum", lambda T, a, b: T.maximum(a, b), np.maximum, ANY, ANY),
    ("a.maximum", lambda T, a, b: a.maximum(b), np.maximum, ANY, ANY),
    ("T.max_a_b", lambda T, a, b: T.max(a, b), np.maximum, ANY, ANY),
    ("T.minimum", lambda T, a, b: T.minimum(a, b), np.minimum, ANY, ANY),
    ("a.minimum", lambda T, a, b: a.minimum(b), np.minimum, ANY, ANY),
    ("T.min_a_b", lambda T, a, b: T.min(a, b), np.minimum, ANY, ANY),
    ("a.clamp_min=b", lambda T, a, b: a.clamp(min=b), np_clamp, ANY, ANY),
    ("a.clamp_max=b", lambda T, a, b: a.clamp(max=b), lambda a, b: np_clamp(a, None, b), ANY,
     ANY),
    ("T.clamp_min=b", lambda T, a, b: T.clamp(a, min=b), np_clamp, ANY, ANY),
    ("a.clamp_min_b", lambda T, a, b: a.clamp_min(b), np_clamp, ANY, ANY),
    ("T.clamp_max_b", lambda T, a, b: T.clamp_max(a, b), lambda a, b: np_clamp(a, None, b),
     ANY, ANY),
    ("a**b", lambda T, a, b: a**b, np.power, POS, ANY),
    ("a.pow_b", lambda T, a, b: a.pow(b), np.power, POS, ANY),
    ("T.pow_a_b", lambda T, a, b: T.pow(a, b), np.power, POS, ANY),
]
BINARY_PARAMS = [pytest.param(*row[1:], id=row[0]) for row in BINARY]

# id, fn(T, a, b, c), NumPy reference: clamp with both tensor bounds, where with a bool condition
TERNARY = [
    ("a.clamp_b_c", lambda T, a, b, c: a.clamp(b, c), np_clamp, False),
    ("T.clamp_b_c", lambda T, a, b, c: T.clamp(a, b, c), np_clamp, False),
    ("a.clamp_min=b_max=c", lambda T, a, b, c: a.clamp(min=b, max=c), np_clamp, False),
    ("T.where_cond_b_c", lambda T, a, b, c: T.where(a, b, c), np.where, True),
    ("b.where_cond_c", lambda T, a, b, c: b.where(a, c), np.where, True),
]
TERNARY_PARAMS = [pytest.param(*row[1:], id=row[0]) for row in TERNARY]

UNARY_SHAPES = [(), (1,), (5,), (2, 3)]
BINARY_SHAPES = [
    ((), ()),
    ((1,), (1,)),
    ((4,), (4,)),
    ((2, 3), (2, 3)),
    ((2, 3), (3,)),
    ((3,), (2, 3)),
    ((2, 1), (1, 3)),
    ((), (2, 3)),
    ((2, 3), ()),
]
TERNARY_SHAPES = [
    ((), (), ()),
    ((2, 3), (2, 3), (2, 3)),
    ((2, 3), (3,), ()),
    ((2, 1), (1, 3), (2, 3)),
    ((3,), (2, 1), (1,)),
    ((), (2, 3), (3,)),
]


# --------------------------------------------------------------------------------------------
# Forward values against NumPy
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn,ref,domain", UNARY_PARAMS)
def test_unary_forward(T, rng, fn, ref, domain):
    for shape in UNARY_SHAPES:
        a = draw(rng, shape, domain)
        assert_forward(T, fn(T, T.tensor(a)), ref(a), f"shape {shape}")


@pytest.mark.parametrize("fn,ref,dom_a,dom_b", BINARY_PARAMS)
def test_binary_forward(T, rng, fn, ref, dom_a, dom_b):
    for shapes in BINARY_SHAPES:
        a, b = draw(rng, shapes[0], dom_a), draw(rng, shapes[1], dom_b)
        assert_forward(T, fn(T, T.tensor(a), T.tensor(b)), ref(a, b), f"shapes {shapes}")


@pytest.mark.parametrize("fn,ref,first_is_cond", TERNARY_PARAMS)
def test_ternary_forward(T, rng, fn, ref, first_is_cond):
    for shapes in TERNARY_SHAPES:
        if first_is_cond:
            a = rng.random(shapes[0]) < 0.5
            b, c = draw(rng, shapes[1]), draw(rng, shapes[2])
        else:
            a = draw(rng, shapes[0])
            b, c = -np.abs(draw(rng, shapes[1])), np.abs(draw(rng, shapes[2]))  # min below max
        y = fn(T, T.tensor(a), T.tensor(b), T.tensor(c))
        assert_forward(T, y, ref(a, b, c), f"shapes {shapes}")


@pytest.mark.parametrize(
    "fn,ref",
    [
        pytest.param(lambda T, c, x: T.where(c, x, 2.5), lambda c, a: np.where(c, a, 2.5),
                     id="where_x_2.5"),
        pytest.param(lambda T, c, x: T.where(c, -1.0, x), lambda c, a: np.where(c, -1.0, a),
                     id="where_-1.0_x"),
        pytest.param(lambda T, c, x: T.where(c, x, 0), lambda c, a: np.where(c, a, 0.0),
                     id="where_x_0_int"),
        pytest.param(lambda T, c, x: x.where(c, 3.0), lambda c, a: np.where(c, a, 3.0),
                     id="x.where_3.0"),
    ],
)
def test_where_with_scalar_forward(T, rng, fn, ref):
    for shape in [(), (1,), (2, 3)]:
        c = rng.random(shape) < 0.5
        a = draw(rng, shape)
        assert_forward(T, fn(T, T.tensor(c), T.tensor(a)), ref(c, a), f"shape {shape}")


def test_where_condition_broadcasts_against_scalars(T):
    c = np.array([True, False, True])
    y = T.where(T.tensor(c), 1.0, 0.0)
    assert y.dtype == T.float32
    np.testing.assert_array_equal(to_np(y), [1.0, 0.0, 1.0])


def test_round_half_to_even(T):
    a = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5])
    np.testing.assert_array_equal(to_np(T.tensor(a).round()), [0, 2, 2, -0, -2, -2, 4])
    b = np.array([15.0, 25.0, 1234.5678, -35.0])
    np.testing.assert_array_equal(to_np(T.tensor(b).round(decimals=-1)), [20, 20, 1230, -40])


def test_sign_of_nan_is_zero(T):
    np.testing.assert_array_equal(to_np(T.sign(T.tensor([np.nan, -2.0, 0.0]))), [0, -1, 0])


def test_relu_gradient_of_a_gradient_passes_at_nan(T):
    x = T.tensor([np.nan, 1.0, -1.0], dtype=T.float64, requires_grad=True)
    g = T.ones(3, dtype=T.float64, requires_grad=True)
    (gx,) = T.autograd.grad(T.relu(x), [x], g, create_graph=True)
    (gg,) = T.autograd.grad(gx.sum(), [g])
    np.testing.assert_array_equal(to_np(gg), [1, 1, 0])


def test_second_derivative_of_division_at_an_infinite_divisor_is_zero(T):
    a = T.tensor([1.0], requires_grad=True)
    b = T.tensor([np.inf], requires_grad=True)
    (g,) = T.autograd.grad((a / b).sum(), [b], create_graph=True)
    (gg,) = T.autograd.grad(g.sum(), [b])
    np.testing.assert_array_equal(to_np(gg), [0.0])


def test_sign_of_zero_and_exact_integers(T):
    a = np.array([-2.0, -0.0, 0.0, 3.0])
    np.testing.assert_array_equal(to_np(T.tensor(a).sign()), [-1.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(to_np(T.tensor(a).floor()), a)
    np.testing.assert_array_equal(to_np(T.tensor(a).ceil()), a)


# --------------------------------------------------------------------------------------------
# gradcheck and gradgradcheck in float64
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn,ref,domain", UNARY_PARAMS)
def test_unary_gradcheck(T, rng, fn, ref, domain):
    for shape in [(), (2, 3)]:
        check_grads(T, lambda x: fn(T, x), draw(rng, shape, domain))


@pytest.mark.parametrize("fn,ref,dom_a,dom_b", BINARY_PARAMS)
def test_binary_gradcheck(T, rng, fn, ref, dom_a, dom_b):
    for shapes in [((2, 3), (3,)), ((), (2, 3)), ((2, 1), (1, 3))]:
        a, b = draw(rng, shapes[0], dom_a), draw(rng, shapes[1], dom_b)
        check_grads(T, lambda x, y: fn(T, x, y), a, b)


@pytest.mark.parametrize("shapes", [((2, 3), (2, 3), (2, 3)), ((2, 1), (1, 3), (3,))],
                         ids=shapes_id)
def test_clamp_tensor_bounds_gradcheck(T, rng, shapes):
    # x spans both bounds so each of x, min and max receives some gradient
    x = draw(rng, shapes[0], (-2.0, 2.0))
    lo, hi = draw(rng, shapes[1], (-1.0, -0.1)), draw(rng, shapes[2], (0.1, 1.0))
    check_grads(T, lambda a, b, c: a.clamp(b, c), x, lo, hi)


@pytest.mark.ext_only
@pytest.mark.parametrize("shapes", [((3, 3), (3, 3), (1, 3, 3)), ((), (), (2,))],
                         ids=shapes_id)
def test_clamp_gradients_when_a_bound_broadcasts_the_result_beyond_the_input(rng, shapes):
    # torch 2.13's clamp backward raises here ("output with shape [3, 3] doesn't match the
    # broadcast shape [1, 3, 3]", docs/differences.md); ext sums each gradient to its input.
    import ext

    x = draw(rng, shapes[0], (-2.0, 2.0))
    lo, hi = draw(rng, shapes[1], (-1.0, -0.1)), draw(rng, shapes[2], (0.1, 1.0))
    check_grads(ext, lambda a, b, c: a.clamp(b, c), x, lo, hi)


@pytest.mark.parametrize("shapes", [((2, 3), (2, 3), (2, 3)), ((2, 3), (3,), ()),
                                    ((2, 1), (1, 3), (2, 3))], ids=shapes_id)
def test_where_gradcheck(T, rng, shapes):
    cond = T.tensor(rng.random(shapes[0]) < 0.5)
    check_grads(T, lambda a, b: T.where(cond, a, b), draw(rng, shapes[1]), draw(rng, shapes[2]))


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda T, c, x: T.where(c, x, 2.5), id="where_x_2.5"),
        pytest.param(lambda T, c, x: T.where(c, -1.0, x), id="where_-1.0_x"),
        pytest.param(lambda T, c, x: x.where(c, x * 2), id="x.where_2x"),
    ],
)
def test_where_with_scalar_gradcheck(T, rng, fn):
    cond = T.tensor(np.array([[True, False, True], [False, False, True]]))
    check_grads(T, lambda x: fn(T, cond, x), draw(rng, (2, 3)))


def test_pow_0d_exponent_gradcheck(T, rng):
    check_grads(T, lambda a, s: a**s, draw(rng, (2, 3), POS), draw(rng, (), ANY))


def test_clamp_with_constant_tensor_bounds_gradcheck(T, rng):
    lo = T.tensor(draw(rng, (3,), (-1.0, -0.1)))
    hi = T.tensor(draw(rng, (2, 1), (0.1, 1.0)))
    check_grads(T, lambda x: x.clamp(lo, hi), draw(rng, (2, 3), (-2.0, 2.0)))


def test_clamp_takes_a_0d_tensor_next_to_a_number_as_a_number(T):
    # torch's parser reads a 0-d tensor that does not require grad as a Number, so a tensor
    # bound next to a number bound takes the scalar overload (ClampBackward1)
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.clamp(T.tensor(1.5), 2.5)
    assert y.tolist() == [1.5, 2.0, 2.5] and type(y.grad_fn).__name__ == "ClampBackward1"
    z = T.tensor([1, 3]).clamp(T.tensor(2), 2.5)
    assert z.dtype == T.float32 and z.tolist() == [2.0, 2.5]
    w = T.tensor([1, 3]).clamp(min=2, max=T.tensor(2))
    assert w.dtype == T.int64 and w.tolist() == [2, 2]


def test_a_bool_tensor_to_a_bool_power_stays_bool(T):
    b = T.tensor([True, False])
    assert (b ** True).dtype == T.bool and (b ** True).tolist() == [True, False]
    assert b.pow(False).tolist() == [True, True]
    assert (b ** 2).dtype == T.int64 and (2 ** b).tolist() == [2, 1]


def test_alpha_given_as_a_numpy_number_or_0d_tensor_keeps_the_tensor_dtype(T):
    x = T.tensor([1.0, 2.0])
    for alpha in (np.float64(2.0), T.tensor(2.0, dtype=T.float64)):
        y = x.add(x, alpha=alpha)
        assert y.dtype == T.float32 and y.tolist() == [3.0, 6.0]
        assert x.sub(x, alpha=alpha).dtype == T.float32


# --------------------------------------------------------------------------------------------
# Subgradients at kinks and ties: the exact values torch picks
# --------------------------------------------------------------------------------------------

G5 = [1.0, 2.0, 3.0, 4.0, 5.0]

# id, fn(T, *inputs), input values, upstream gradient, expected gradients
KINK_CASES = [
    # scalar bounds: a value equal to a bound passes the gradient through
    ("clamp_0_1_at_bounds", lambda T, x: x.clamp(0.0, 1.0), [[-1.0, 0.0, 0.5, 1.0, 2.0]], G5,
     [[0, 2, 3, 4, 0]]),
    ("clamp_min=0_at_bound", lambda T, x: x.clamp(min=0.0), [[-1.0, 0.0, 0.5]], G5[:3],
     [[0, 2, 3]]),
    ("clamp_max=1_at_bound", lambda T, x: x.clamp(max=1.0), [[1.0, 0.0, 2.0]], G5[:3],
     [[1, 2, 0]]),
    ("clamp_min_0_at_bound", lambda T, x: x.clamp_min(0.0), [[-1.0, 0.0, 0.5]], G5[:3],
     [[0, 2, 3]]),
    ("clamp_max_1_at_bound", lambda T, x: x.clamp_max(1.0), [[1.0, 0.0, 2.0]], G5[:3],
     [[1, 2, 0]]),
    ("clamp_min>max_scalar", lambda T, x: x.clamp(1.0, 0.0), [[-1.0, 0.5, 2.0]], G5[:3],
     [[0, 0, 0]]),
    # tensor bounds: ties go to x; min gets x < min, max gets x > max
    ("clamp_tensor_bounds", lambda T, x, lo, hi: x.clamp(lo, hi),
     [[-1.0, 0.0, 0.5, 1.0, 2.0], [0.0] * 5, [1.0] * 5], G5,
     [[0, 2, 3, 4, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 5]]),
    ("clamp_tensor_min_only", lambda T, x, lo: x.clamp(min=lo), [[-1.0, 0.0, 0.5], [0.0] * 3],
     G5[:3], [[0, 2, 3], [1, 0, 0]]),
    ("clamp_tensor_max_only", lambda T, x, hi: x.clamp(max=hi), [[2.0, 1.0, 0.5], [1.0] * 3],
     G5[:3], [[0, 2, 3], [1, 0, 0]]),
    ("clamp_min_tensor", lambda T, x, lo: x.clamp_min(lo), [[-1.0, 0.0, 0.5], [0.0] * 3],
     G5[:3], [[0, 2, 3], [1, 0, 0]]),
    ("clamp_max_tensor", lambda T, x, hi: x.clamp_max(hi), [[2.0, 1.0, 0.5], [1.0] * 3],
     G5[:3], [[0, 2, 3], [1, 0, 0]]),
    ("clamp_tensor_min>max", lambda T, x, lo, hi: x.clamp(lo, hi),
     [[-1.0, 0.5, 2.0], [1.0] * 3, [0.0] * 3], G5[:3], [[0, 0, 0], [0, 0, 0], [1, 2, 3]]),
    # min == max: min gets no gradient (torch passes it to min only where min < max)
    ("clamp_tensor_min==max", lambda T, x, lo, hi: x.clamp(lo, hi),
     [[-1.5, -1.25, 1.0], [-1.25] * 3, [-1.25] * 3], G5[:3], [[0, 2, 0], [0, 0, 0], [0, 0, 3]]),
    ("clamp_same_tensor_as_min_and_max", lambda T, x, t: T.clamp(x, t, t),
     [[3.0, -3.0], [1.0, 4.0]], [1.0, 1.0], [[0, 0], [1, 0]]),
    ("clamp_tensor_bounds_broadcast", lambda T, x, lo, hi: x.clamp(lo, hi),
     [[-1.0, 0.0, 0.5, 1.0, 2.0], [0.0], [1.0]], G5, [[0, 2, 3, 4, 0], [1], [5]]),
    # maximum / minimum split a tie evenly
    ("maximum_tie", lambda T, a, b: T.maximum(a, b), [[1.0, 2.0, 3.0], [1.0, 5.0, 0.0]],
     [2.0, 4.0, 6.0], [[1, 0, 6], [1, 4, 0]]),
    ("minimum_tie", lambda T, a, b: T.minimum(a, b), [[1.0, 2.0, 3.0], [1.0, 5.0, 0.0]],
     [2.0, 4.0, 6.0], [[1, 4, 0], [1, 0, 6]]),
    ("T.max_tie", lambda T, a, b: T.max(a, b), [[1.0, 2.0], [1.0, 0.0]], [2.0, 4.0],
     [[1, 4], [1, 0]]),
    ("maximum_tie_broadcast", lambda T, a, b: T.maximum(a, b), [[1.0, 2.0, 1.0, 0.0], [1.0]],
     [2.0, 4.0, 6.0, 8.0], [[1, 4, 3, 0], [12]]),
    # at a nan, relu passes the gradient, and maximum / minimum give it to both operands
    ("relu_at_nan", lambda T, x: T.relu(x), [[np.nan, 1.0, -1.0]], G5[:3], [[1, 2, 0]]),
    ("maximum_at_nan", lambda T, a, b: T.maximum(a, b), [[np.nan, 1.0], [0.0, 0.0]],
     [1.0, 2.0], [[1, 2], [1, 0]]),
    ("minimum_at_nan", lambda T, a, b: T.minimum(a, b), [[np.nan, 1.0], [0.0, 0.0]],
     [1.0, 2.0], [[1, 0], [1, 2]]),
    # piecewise-constant ops have zero gradient, also at their jumps
    ("sign_at_0", lambda T, x: x.sign(), [[-1.0, 0.0, 2.0]], G5[:3], [[0, 0, 0]]),
    ("round_at_half", lambda T, x: x.round(), [[-1.5, 0.5, 2.3]], G5[:3], [[0, 0, 0]]),
    ("round_decimals_1", lambda T, x: x.round(decimals=1), [[-1.55, 0.5, 2.3]], G5[:3],
     [[0, 0, 0]]),
    ("floor_at_integer", lambda T, x: x.floor(), [[-1.5, 1.0, 2.3]], G5[:3], [[0, 0, 0]]),
    ("ceil_at_integer", lambda T, x: x.ceil(), [[-1.5, 1.0, 2.3]], G5[:3], [[0, 0, 0]]),
    # where routes the gradient to the chosen branch
    ("where_routes", lambda T, a, b: T.where(T.tensor([True, False, True]), a, b),
     [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], G5[:3], [[1, 0, 3], [0, 2, 0]]),
    ("where_broadcast_sums", lambda T, a, b: T.where(T.tensor([True, False, True]), a, b),
     [[1.0], [4.0, 5.0, 6.0]], G5[:3], [[4], [0, 2, 0]]),
    # powers at a zero base
    ("x**2_at_0", lambda T, x: x**2, [[0.0, 1.0]], [3.0, 3.0], [[0, 6]]),
    ("x**0_at_0", lambda T, x: x**0, [[0.0, 1.0]], [3.0, 3.0], [[0, 0]]),
    ("x**0.5_at_0", lambda T, x: x**0.5, [[0.0, 1.0]], [3.0, 3.0], [[np.inf, 1.5]]),
    ("x**w_at_0", lambda T, x, w: x**w, [[0.0, 0.0, 2.0], [2.0, 0.0, 0.0]], [1.0, 1.0, 1.0],
     [[0, 0, 0], [0, 0, np.log(2.0)]]),
    ("0**x", lambda T, x: 0.0**x, [[1.0, 2.0]], [1.0, 1.0], [[0, 0]]),
    # c**x at a negative base: c**x * log(c) is nan
    ("(-2.0)**x", lambda T, x: (-2.0) ** x, [[1.0, 2.0]], [1.0, 1.0], [[np.nan, np.nan]]),
    ("(-2)**x", lambda T, x: (-2) ** x, [[1.0, 2.0]], [1.0, 1.0], [[np.nan, np.nan]]),
]


@pytest.mark.parametrize(
    "fn,values,g,expected", [pytest.param(*r[1:], id=r[0]) for r in KINK_CASES]
)
def test_subgradient_at_kinks_and_ties(T, fn, values, g, expected):
    grads = grads_of(T, fn, values, g)
    for got, want in zip(grads, expected, strict=True):
        np.testing.assert_array_equal(got, np.asarray(want, dtype=np.float64))


# --------------------------------------------------------------------------------------------
# dtypes: int and bool inputs, promotion
# --------------------------------------------------------------------------------------------

I64 = np.array([-2, 1, 3], dtype=np.int64)
I32 = np.array([-2, 1, 3], dtype=np.int32)
BOOL = np.array([True, False, True])
F32 = np.array([0.5, -1.5, 2.0], dtype=np.float32)
F64 = np.array([1.0, -1.0, 2.5], dtype=np.float64)
COND3 = np.array([True, False, True])


def t(T, array):
    return T.tensor(array)


# id, fn(T), result dtype, expected values
DTYPE_CASES = [
    # unary ops on int and bool tensors
    ("log1p_int64", lambda T: t(T, np.array([0, 1, 3])).log1p(), "float32", np.log1p([0, 1, 3])),
    ("expm1_bool", lambda T: t(T, BOOL).expm1(), "float32", np.expm1(BOOL.astype(float))),
    ("tan_int32", lambda T: t(T, I32).tan(), "float32", np.tan(I32)),
    ("rsqrt_int64", lambda T: t(T, np.array([1, 4])).rsqrt(), "float32", [1.0, 0.5]),
    ("log1p_float32", lambda T: t(T, np.abs(F32)).log1p(), "float32", np.log1p(np.abs(F32))),
    ("sign_int64", lambda T: t(T, I64).sign(), "int64", [-1, 1, 1]),
    ("sign_int32", lambda T: t(T, I32).sign(), "int32", [-1, 1, 1]),
    ("sign_bool", lambda T: t(T, BOOL).sign(), "bool", BOOL),
    ("round_int64", lambda T: t(T, I64).round(), "int64", I64),
    ("floor_int64", lambda T: t(T, I64).floor(), "int64", I64),
    ("ceil_int32", lambda T: t(T, I32).ceil(), "int32", I32),
    ("floor_float32", lambda T: t(T, F32).floor(), "float32", np.floor(F32)),
    # clamp with Python bounds
    ("clamp_int64_int", lambda T: t(T, I64).clamp(0, 2), "int64", [0, 1, 2]),
    ("clamp_int32_int", lambda T: t(T, I32).clamp(0, 2), "int32", [0, 1, 2]),
    ("clamp_int64_float", lambda T: t(T, I64).clamp(0.5, 2.5), "float32", [0.5, 1.0, 2.5]),
    ("clamp_min_int64_float", lambda T: t(T, I64).clamp_min(1.5), "float32", [1.5, 1.5, 3.0]),
    ("clamp_max_int32_int", lambda T: t(T, I32).clamp_max(1), "int32", [-2, 1, 1]),
    ("clamp_bool_int", lambda T: t(T, BOOL).clamp(0, 1), "int64", [1, 0, 1]),
    ("clamp_float32_int", lambda T: t(T, F32).clamp(0, 1), "float32", [0.5, 0.0, 1.0]),
    # clamp with tensor bounds promotes like a binary op
    ("clamp_int64_min=float32", lambda T: t(T, I64).clamp(min=t(T, F32)), "float32",
     [0.5, 1.0, 3.0]),
    ("clamp_float32_min=float64", lambda T: t(T, F32).clamp(min=t(T, F64)), "float64",
     [1.0, -1.0, 2.5]),
    ("clamp_float32_min=float64_0d", lambda T: t(T, F32).clamp(min=T.tensor(1.0,
     dtype=T.float64)), "float32", [1.0, 1.0, 2.0]),
    ("clamp_float64_min=int64", lambda T: t(T, F64).clamp(min=t(T, I64)), "float64",
     [1.0, 1.0, 3.0]),
    ("clamp_int32_max=int64", lambda T: t(T, I32).clamp(max=t(T, I64)), "int64", [-2, 1, 3]),
    ("clamp_float32_float64_int64", lambda T: t(T, F32).clamp(t(T, F64), t(T, I64)),
     "float64", [-2.0, -1.0, 2.5]),
    ("clamp_min_int32_int64", lambda T: t(T, I32).clamp_min(t(T, I64)), "int64", [-2, 1, 3]),
    # maximum / minimum
    ("maximum_int64_float32", lambda T: T.maximum(t(T, I64), t(T, F32)), "float32",
     [0.5, 1.0, 3.0]),
    ("maximum_int32_int64", lambda T: T.maximum(t(T, I32), t(T, I64)), "int64", [-2, 1, 3]),
    ("maximum_float32_float64", lambda T: T.maximum(t(T, F32), t(T, F64)), "float64",
     [1.0, -1.0, 2.5]),
    ("maximum_float32_float64_0d", lambda T: T.maximum(t(T, F32), T.tensor(1.0,
     dtype=T.float64)), "float32", [1.0, 1.0, 2.0]),
    ("maximum_bool_bool", lambda T: T.maximum(t(T, BOOL), t(T, ~BOOL)), "bool", [1, 1, 1]),
    ("minimum_bool_int32", lambda T: T.minimum(t(T, BOOL), t(T, I32)), "int32", [-2, 0, 1]),
    ("minimum_int64_int64", lambda T: t(T, I64).minimum(t(T, I64 * 2)), "int64", [-4, 1, 3]),
    ("T.max_int32_float64", lambda T: T.max(t(T, I32), t(T, F64)), "float64", [1.0, 1.0, 3.0]),
    # where
    ("where_int64_2.5", lambda T: T.where(t(T, COND3), t(T, I64), 2.5), "float32",
     [-2.0, 2.5, 3.0]),
    ("where_float32_float64", lambda T: T.where(t(T, COND3), t(T, F32), t(T, F64)), "float64",
     [0.5, -1.0, 2.0]),
    ("where_int64_2", lambda T: T.where(t(T, COND3), t(T, I64), 2), "int64", [-2, 2, 3]),
    ("where_int32_2", lambda T: T.where(t(T, COND3), t(T, I32), 2), "int32", [-2, 2, 3]),
    ("where_1.0_0.0", lambda T: T.where(t(T, COND3), 1.0, 0.0), "float32", [1.0, 0.0, 1.0]),
    ("where_1_0", lambda T: T.where(t(T, COND3), 1, 0), "int64", [1, 0, 1]),
    ("where_int32_int64", lambda T: T.where(t(T, COND3), t(T, I32), t(T, I64)), "int64",
     [-2, 1, 3]),
    ("where_float32_float64_0d", lambda T: T.where(t(T, COND3), t(T, F32),
     T.tensor(2.0, dtype=T.float64)), "float32", [0.5, 2.0, 2.0]),
    ("where_bool_bool", lambda T: T.where(t(T, COND3), t(T, BOOL), t(T, ~BOOL)), "bool",
     [True, True, True]),
    ("where_float32_True", lambda T: T.where(t(T, COND3), t(T, F32), True), "float32",
     [0.5, 1.0, 2.0]),
    ("where_2.5_int32", lambda T: T.where(t(T, COND3), 2.5, t(T, I32)), "float32",
     [2.5, 1.0, 2.5]),
    # pow
    ("int32**2", lambda T: t(T, I32) ** 2, "int32", [4, 1, 9]),
    ("int64**int64", lambda T: t(T, I64) ** t(T, np.array([2, 3, 2])), "int64", [4, 1, 9]),
    ("int32**int64", lambda T: t(T, I32) ** t(T, np.array([2, 3, 2])), "int64", [4, 1, 9]),
    ("int64**2.0", lambda T: t(T, I64) ** 2.0, "float32", [4.0, 1.0, 9.0]),
    ("2.5**int64", lambda T: 2.5 ** t(T, I64), "float32", 2.5 ** I64.astype(float)),
    ("int64**float32", lambda T: t(T, I64) ** t(T, np.array([2, 1, 0.5], dtype=np.float32)),
     "float32", [4.0, 1.0, np.sqrt(3.0)]),
    ("float32**float64", lambda T: t(T, np.abs(F32)) ** t(T, F64), "float64",
     np.abs(F32).astype(np.float64) ** F64),
    ("float32**float64_0d", lambda T: t(T, F32) ** T.tensor(2.0, dtype=T.float64), "float32",
     F32**2),
    ("bool**2", lambda T: t(T, BOOL) ** 2, "int64", [1, 0, 1]),
    ("2**bool", lambda T: 2 ** t(T, BOOL), "int64", [2, 1, 2]),
    ("T.pow_2_int32", lambda T: T.pow(2, t(T, np.array([0, 1, 3], dtype=np.int32))), "int32",
     [1, 2, 8]),
    ("T.pow_2.5_int32", lambda T: T.pow(2.5, t(T, np.array([0, 1, 2], dtype=np.int32))),
     "float32", [1.0, 2.5, 6.25]),
    ("int64**int64_0d", lambda T: t(T, I64) ** T.tensor(2), "int64", [4, 1, 9]),
    ("int32**int64_0d", lambda T: t(T, I32) ** T.tensor(2), "int32", [4, 1, 9]),
    ("int64**negative_int64_tensor", lambda T: t(T, np.array([2, 1, 3])) ** t(T, np.array(
     [-1, -1, 2])), "int64", [0, 1, 9]),
    ("int64**0", lambda T: t(T, I64) ** 0, "int64", [1, 1, 1]),
    # A negative integer exponent truncates toward zero: 0 ** -1 is 0, (-1) ** -3 is -1.
    ("int64**negative_int64_tensor_at_0_1_-1", lambda T: t(T, np.array([0, 2, 1, -1, -1])) ** t(
     T, np.array([-1, -1, -5, -3, -2])), "int64", [0, 0, 1, -1, 1]),
    ("int64**negative_int64_0d", lambda T: t(T, np.array([-1, 0, 5])) ** T.tensor(-3), "int64",
     [-1, 0, 0]),
    ("int64.pow_negative_int64_tensor", lambda T: t(T, np.array([0, 2, -1])).pow_(t(
     T, np.array([-1, -2, -1]))), "int64", [0, 0, -1]),
    ("2**negative_int64", lambda T: 2 ** t(T, np.array([-1, 2])), "int64", [0, 4]),
    ("T.pow_-1_negative_int64", lambda T: T.pow(-1, t(T, np.array([-3, -2]))), "int64", [-1, 1]),
    ("True**negative_int64", lambda T: True ** t(T, np.array([-1, 2])), "int64", [1, 1]),
    ("2**negative_int32", lambda T: 2 ** t(T, np.array([-1, 2], dtype=np.int32)), "int32",
     [0, 4]),
    # add with a bool result takes alpha as a bool.
    ("T.add_bool_bool_alpha2", lambda T: T.add(t(T, np.array([True, False, False])), t(
     T, np.array([True, True, False])), alpha=2), "bool", [1, 1, 0]),
    ("bool.add_bool_alpha-1", lambda T: t(T, np.array([True, False])).add(True, alpha=-1),
     "bool", [1, 1]),
    ("bool.add_bool_alpha0", lambda T: t(T, np.array([True, False])).add(True, alpha=0),
     "bool", [1, 0]),
    ("int64.add_int64_alpha3", lambda T: t(T, I64).add(t(T, I64), alpha=3), "int64",
     I64 * 4),
    ("float32**2", lambda T: t(T, F32) ** 2, "float32", F32**2),
]


@pytest.mark.parametrize("fn,dtype,expected", [pytest.param(*r[1:], id=r[0]) for r in DTYPE_CASES])
def test_result_dtype_and_values(T, fn, dtype, expected):
    y = fn(T)
    assert y.dtype == getattr(T, dtype)
    assert y.requires_grad is False
    np.testing.assert_allclose(to_np(y).astype(np.float64), np.asarray(expected, dtype=float),
                               rtol=1e-6)


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda T, x: x.clamp(0.6, 1.2), id="clamp"),
        pytest.param(lambda T, x: T.maximum(x, x * 0.5), id="maximum"),
        pytest.param(lambda T, x: T.where(x > 1, x, 1.0), id="where"),
        pytest.param(lambda T, x: x.tan(), id="tan"),
        pytest.param(lambda T, x: x.rsqrt(), id="rsqrt"),
        pytest.param(lambda T, x: x**2.5, id="pow"),
    ],
)
def test_float32_grads_stay_float32(T, rng, fn):
    x = leaf(T, sample(rng, (2, 3), POS, dtype=np.float32))
    y = fn(T, x)
    assert y.dtype == T.float32
    y.sum().backward()
    assert x.grad.dtype == T.float32


# --------------------------------------------------------------------------------------------
# Comparisons and logical ops
# --------------------------------------------------------------------------------------------

# id, fn(T, a, b), NumPy reference
COMPARE = [
    ("a==b", lambda T, a, b: a == b, np.equal),
    ("a!=b", lambda T, a, b: a != b, np.not_equal),
    ("a<b", lambda T, a, b: a < b, np.less),
    ("a<=b", lambda T, a, b: a <= b, np.less_equal),
    ("a>b", lambda T, a, b: a > b, np.greater),
    ("a>=b", lambda T, a, b: a >= b, np.greater_equal),
    ("T.eq", lambda T, a, b: T.eq(a, b), np.equal),
    ("T.ne", lambda T, a, b: T.ne(a, b), np.not_equal),
    ("T.lt", lambda T, a, b: T.lt(a, b), np.less),
    ("T.le", lambda T, a, b: T.le(a, b), np.less_equal),
    ("T.gt", lambda T, a, b: T.gt(a, b), np.greater),
    ("T.ge", lambda T, a, b: T.ge(a, b), np.greater_equal),
    ("a.eq", lambda T, a, b: a.eq(b), np.equal),
    ("a.ne", lambda T, a, b: a.ne(b), np.not_equal),
    ("a.lt", lambda T, a, b: a.lt(b), np.less),
    ("a.le", lambda T, a, b: a.le(b), np.less_equal),
    ("a.gt", lambda T, a, b: a.gt(b), np.greater),
    ("a.ge", lambda T, a, b: a.ge(b), np.greater_equal),
]
COMPARE_PARAMS = [pytest.param(*r[1:], id=r[0]) for r in COMPARE]


def small_ints(rng, shape):
    """Floats from {-1, 0, 1}: comparisons see plenty of equal pairs."""
    return rng.integers(-1, 2, size=shape).astype(np.float64)


def assert_bool_result(T, y, ref, where=""):
    ref = np.asarray(ref)
    assert y.dtype == T.bool, where
    assert tuple(y.shape) == ref.shape, where
    assert y.requires_grad is False, where
    assert y.grad_fn is None, where
    np.testing.assert_array_equal(to_np(y), ref, err_msg=where)


@pytest.mark.parametrize("fn,ref", COMPARE_PARAMS)
def test_comparison_tensor_tensor(T, rng, fn, ref):
    for shapes in BINARY_SHAPES:
        a, b = small_ints(rng, shapes[0]), small_ints(rng, shapes[1])
        assert_bool_result(T, fn(T, leaf(T, a), leaf(T, b)), ref(a, b), f"shapes {shapes}")


@pytest.mark.parametrize("fn,ref", COMPARE_PARAMS)
def test_comparison_tensor_scalar(T, rng, fn, ref):
    for scalar in [0, 0.5, -1.0, True]:
        a = small_ints(rng, (2, 3))
        assert_bool_result(T, fn(T, leaf(T, a), scalar), ref(a, scalar), f"scalar {scalar}")


@pytest.mark.parametrize(
    "fn,ref",
    [
        pytest.param(lambda x: 0 == x, lambda a: a == 0, id="0==x"),
        pytest.param(lambda x: 0 != x, lambda a: a != 0, id="0!=x"),
        pytest.param(lambda x: 0 < x, lambda a: a > 0, id="0<x"),
        pytest.param(lambda x: 0 <= x, lambda a: a >= 0, id="0<=x"),
        pytest.param(lambda x: 0.5 > x, lambda a: a < 0.5, id="0.5>x"),
        pytest.param(lambda x: 0 >= x, lambda a: a <= 0, id="0>=x"),
    ],
)
def test_comparison_reflected_scalar(T, rng, fn, ref):
    a = small_ints(rng, (2, 3))
    assert_bool_result(T, fn(leaf(T, a)), ref(a))


@pytest.mark.parametrize(
    "fn,ref",
    [
        pytest.param(lambda T: t(T, I64) == t(T, np.array([-2.0, 1.5, 3.0], dtype=np.float32)),
                     [True, False, True], id="int64==float32"),
        pytest.param(lambda T: t(T, I64) < 1.5, [True, True, False], id="int64<1.5"),
        pytest.param(lambda T: t(T, BOOL) > t(T, np.array([0, 1, 0])), [True, False, True],
                     id="bool>int64"),
        pytest.param(lambda T: t(T, I32) >= t(T, I64), [True, True, True], id="int32>=int64"),
        pytest.param(lambda T: t(T, BOOL) == True, BOOL, id="bool==True"),  # noqa: E712
        pytest.param(lambda T: t(T, F32) != T.tensor(2.0, dtype=T.float64), [True, True, False],
                     id="float32!=float64_0d"),
    ],
)
def test_comparison_mixed_dtypes(T, fn, ref):
    assert_bool_result(T, fn(T), ref)


# id, fn(T, a, b), NumPy reference
LOGICAL = [
    ("T.logical_and", lambda T, a, b: T.logical_and(a, b), np.logical_and),
    ("T.logical_or", lambda T, a, b: T.logical_or(a, b), np.logical_or),
    ("T.logical_xor", lambda T, a, b: T.logical_xor(a, b), np.logical_xor),
    ("a.logical_and", lambda T, a, b: a.logical_and(b), np.logical_and),
    ("a.logical_or", lambda T, a, b: a.logical_or(b), np.logical_or),
    ("a.logical_xor", lambda T, a, b: a.logical_xor(b), np.logical_xor),
    ("a&b", lambda T, a, b: a & b, np.logical_and),
    ("a|b", lambda T, a, b: a | b, np.logical_or),
    ("a^b", lambda T, a, b: a ^ b, np.logical_xor),
]
LOGICAL_PARAMS = [pytest.param(*r[1:], id=r[0]) for r in LOGICAL]


@pytest.mark.parametrize("fn,ref", LOGICAL_PARAMS)
def test_logical_binary_on_bool(T, rng, fn, ref):
    for shapes in BINARY_SHAPES:
        a, b = rng.random(shapes[0]) < 0.5, rng.random(shapes[1]) < 0.5
        assert_bool_result(T, fn(T, T.tensor(a), T.tensor(b)), ref(a, b), f"shapes {shapes}")


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda T, a: T.logical_not(a), id="T.logical_not"),
        pytest.param(lambda T, a: a.logical_not(), id="a.logical_not"),
        pytest.param(lambda T, a: ~a, id="~a"),
    ],
)
def test_logical_not_on_bool(T, rng, fn):
    for shape in UNARY_SHAPES:
        a = rng.random(shape) < 0.5
        assert_bool_result(T, fn(T, T.tensor(a)), np.logical_not(a), f"shape {shape}")


@pytest.mark.parametrize(
    "fn,ref",
    [
        pytest.param(lambda T, a, b: T.logical_and(a, b), np.logical_and, id="T.logical_and"),
        pytest.param(lambda T, a, b: T.logical_or(a, b), np.logical_or, id="T.logical_or"),
        pytest.param(lambda T, a, b: a.logical_xor(b), np.logical_xor, id="a.logical_xor"),
        pytest.param(lambda T, a, b: a.logical_not(), lambda a, b: np.logical_not(a),
                     id="a.logical_not"),
    ],
)
@pytest.mark.parametrize(
    "dtypes",
    [(np.float64, np.float64), (np.int64, np.int64), (np.float32, np.bool_),
     (np.int32, np.float64)],
    ids=lambda d: f"{np.dtype(d[0]).name}_{np.dtype(d[1]).name}",
)
def test_logical_ops_on_numbers_give_bool(T, rng, fn, ref, dtypes):
    # logical_* treat nonzero as True on any dtype
    a = rng.integers(-1, 2, size=(2, 3)).astype(dtypes[0])
    b = rng.integers(-1, 2, size=(3,)).astype(dtypes[1])
    assert_bool_result(T, fn(T, T.tensor(a), T.tensor(b)), ref(a, b))


@pytest.mark.parametrize(
    "fn,ref",
    [
        pytest.param(lambda T, a: a & True, lambda a: a, id="a&True"),
        pytest.param(lambda T, a: a | False, lambda a: a, id="a|False"),
        pytest.param(lambda T, a: a ^ True, np.logical_not, id="a^True"),
        pytest.param(lambda T, a: True ^ a, np.logical_not, id="True^a"),
        pytest.param(lambda T, a: False | a, lambda a: a, id="False|a"),
        pytest.param(lambda T, a: True & a, lambda a: a, id="True&a"),
        pytest.param(lambda T, a: ~(a & ~a), lambda a: np.ones_like(a), id="~(a&~a)"),
    ],
)
def test_bool_operators_with_python_bool(T, rng, fn, ref):
    a = rng.random((2, 3)) < 0.5
    assert_bool_result(T, fn(T, T.tensor(a)), ref(a))


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


def f64(*shape):
    return np.zeros(shape, dtype=np.float64)


def btensor(T, *shape):
    return T.tensor(np.ones(shape, dtype=bool))


NO_BROADCAST = "must match the size"
NO_BOUNDS = "At least one of 'min' or 'max' must not be None"

# id, fn(T), exception type, message fragment
ERROR_CASES = [
    ("maximum_no_broadcast", lambda T: T.maximum(T.tensor(f64(2, 3)), T.tensor(f64(4))),
     RuntimeError, NO_BROADCAST),
    ("minimum_no_broadcast", lambda T: T.tensor(f64(2, 3)).minimum(T.tensor(f64(2, 2))),
     RuntimeError, NO_BROADCAST),
    ("where_no_broadcast", lambda T: T.where(btensor(T, 2), T.tensor(f64(2, 3)),
     T.tensor(f64(2, 3))), RuntimeError, NO_BROADCAST),
    ("where_x_y_no_broadcast", lambda T: T.where(btensor(T, 3), T.tensor(f64(2)),
     T.tensor(f64(3))), RuntimeError, NO_BROADCAST),
    ("clamp_min_no_broadcast", lambda T: T.tensor(f64(2, 3)).clamp(min=T.tensor(f64(4))),
     RuntimeError, NO_BROADCAST),
    ("clamp_max_tensor_no_broadcast", lambda T: T.tensor(f64(2, 3)).clamp_max(T.tensor(f64(2))),
     RuntimeError, NO_BROADCAST),
    ("pow_no_broadcast", lambda T: T.tensor(f64(2, 3)) ** T.tensor(f64(2)), RuntimeError,
     NO_BROADCAST),
    ("eq_no_broadcast", lambda T: T.tensor(f64(2, 3)) == T.tensor(f64(4)), RuntimeError,
     NO_BROADCAST),
    ("lt_no_broadcast", lambda T: T.tensor(f64(2, 3)) < T.tensor(f64(2)), RuntimeError,
     NO_BROADCAST),
    ("logical_and_no_broadcast", lambda T: T.logical_and(btensor(T, 2, 3), btensor(T, 2)),
     RuntimeError, NO_BROADCAST),
    ("and_no_broadcast", lambda T: btensor(T, 2, 3) & btensor(T, 2), RuntimeError,
     NO_BROADCAST),
    ("clamp_no_bounds", lambda T: T.tensor(f64(3)).clamp(), RuntimeError, NO_BOUNDS),
    ("clamp_None_None", lambda T: T.tensor(f64(3)).clamp(None, None), RuntimeError, NO_BOUNDS),
    ("T.clamp_no_bounds", lambda T: T.clamp(T.tensor(f64(3))), RuntimeError, NO_BOUNDS),
    ("clamp_number_and_tensor", lambda T: T.tensor(f64(3)).clamp(0.0, T.tensor(f64(3))),
     TypeError, "invalid combination of arguments"),
    ("maximum_python_number", lambda T: T.maximum(T.tensor(f64(3)), 1.0), TypeError,
     "must be Tensor"),
    ("where_int_condition", lambda T: T.where(T.tensor(np.array([1, 0, 1])), T.tensor(f64(3)),
     T.tensor(f64(3))), RuntimeError, "where expected condition to be a boolean tensor"),
    ("where_float_condition", lambda T: T.where(T.tensor(f64(3)), T.tensor(f64(3)), 0.0),
     RuntimeError, "where expected condition to be a boolean tensor"),
    ("and_float", lambda T: T.tensor(f64(3)) & T.tensor(f64(3)), NotImplementedError,
     "not implemented for 'Double'"),
    ("or_float", lambda T: T.tensor(f64(3)) | T.tensor(f64(3)), NotImplementedError,
     "not implemented for 'Double'"),
    ("xor_float", lambda T: T.tensor(f64(3)) ^ T.tensor(f64(3)), NotImplementedError,
     "not implemented for 'Double'"),
    ("and_bool_float32", lambda T: btensor(T, 3) & T.tensor(np.ones(3, dtype=np.float32)),
     NotImplementedError, "not implemented for 'Float'"),
    ("invert_float64", lambda T: ~T.tensor(f64(3)), TypeError,
     "only implemented on integer and Boolean-type tensors"),
    ("invert_float32", lambda T: ~T.tensor(np.ones(3, dtype=np.float32)), TypeError,
     "only implemented on integer and Boolean-type tensors"),
    ("int**negative_int", lambda T: T.tensor(I64) ** -1, RuntimeError,
     "Integers to negative integer powers are not allowed"),
    ("T.pow_int_negative_int", lambda T: T.pow(T.tensor(I32), -2), RuntimeError,
     "Integers to negative integer powers are not allowed"),
    ("round_decimals_int", lambda T: T.tensor(I64).round(decimals=1), NotImplementedError,
     "not implemented for 'Long'"),
    ("floor_bool", lambda T: T.tensor(BOOL).floor(), NotImplementedError,
     "not implemented for 'Bool'"),
    ("round_bool", lambda T: T.tensor(BOOL).round(), NotImplementedError,
     "not implemented for 'Bool'"),
    ("floor_bool_vml", lambda T: T.tensor(BOOL).floor(), NotImplementedError,
     '"floor_vml_cpu" not implemented'),
    ("round_bool_decimals", lambda T: T.tensor(BOOL).round(decimals=1), NotImplementedError,
     '"round_cpu" not implemented'),
    ("abs_bool", lambda T: T.tensor(BOOL).abs(), NotImplementedError,
     '"abs_cpu" not implemented for \'Bool\''),
    ("abs__bool", lambda T: T.tensor(BOOL).abs_(), NotImplementedError,
     '"abs_cpu" not implemented for \'Bool\''),
    ("relu_bool", lambda T: T.relu(T.tensor(BOOL)), RuntimeError,
     "Boolean inputs not supported for relu"),
    ("isclose_float_bool", lambda T: T.isclose(T.ones(2), T.ones(2, dtype=T.bool)),
     RuntimeError, "Float did not match Bool"),
    ("isclose_float_double", lambda T: T.isclose(T.ones(2), T.ones(2, dtype=T.float64)),
     RuntimeError, "Float did not match Double"),
    ("isclose_no_broadcast", lambda T: T.isclose(T.ones(2), T.ones(3)), RuntimeError,
     NO_BROADCAST),
    ("isclose_number", lambda T: T.isclose(T.ones(2), 1.0), TypeError,
     r"argument 'other' \(position 2\) must be Tensor"),
    ("bitwise_not_float", lambda T: T.ones(2).bitwise_not(), NotImplementedError,
     '"bitwise_not_cpu" not implemented for \'Float\''),
    ("T.bitwise_not_float", lambda T: T.bitwise_not(T.ones(2)), NotImplementedError,
     '"bitwise_not_cpu" not implemented for \'Float\''),
    # Shapes are checked before the dtype.
    ("or_float_no_broadcast", lambda T: T.ones(2, 3) | T.ones(4, 3), RuntimeError,
     NO_BROADCAST),
    ("bool-bool", lambda T: T.tensor(BOOL) - T.tensor(BOOL), RuntimeError,
     "with two bool tensors is not supported"),
    ("bool-True", lambda T: T.tensor(BOOL) - True, RuntimeError,
     "with two bool tensors is not supported"),
    ("bool.sub__bool", lambda T: T.tensor(BOOL).sub_(T.tensor(BOOL)), RuntimeError,
     "with two bool tensors is not supported"),
    ("int64.sub__False", lambda T: T.tensor(I64).sub_(False), RuntimeError,
     "with a bool tensor is not supported"),
    ("int64-True", lambda T: T.tensor(I64) - True, RuntimeError,
     "with a bool tensor is not supported"),
    ("bool.sub_1", lambda T: T.tensor(BOOL).sub(1), RuntimeError,
     "with a bool tensor is not supported"),
    ("1-bool", lambda T: 1 - T.tensor(BOOL), RuntimeError, "with a bool tensor is not supported"),
    ("T.rsub_int64_bool", lambda T: T.rsub(T.tensor(I64), T.tensor(BOOL)), RuntimeError,
     "with a bool tensor is not supported"),
    ("int64.add_alpha_float", lambda T: T.tensor(I64).add(T.tensor(I64), alpha=2.5),
     RuntimeError, "For integral input tensors, argument alpha must not be a floating point"),
    ("bool.add_alpha_float", lambda T: T.add(T.tensor(BOOL), T.tensor(BOOL), alpha=2.5),
     RuntimeError, "For integral input tensors, argument alpha must not be a floating point"),
    ("int64.sub_alpha_float", lambda T: T.sub(T.tensor(I64), 1, alpha=1.5), RuntimeError,
     "For integral input tensors, argument alpha must not be a floating point"),
    ("float.add_alpha_True", lambda T: T.tensor(F64).add(T.tensor(F64), alpha=True),
     RuntimeError, "Boolean alpha only supported for Boolean results"),
    ("int64.div__int64", lambda T: T.tensor(I64).div_(T.tensor(I64)), RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
    ("bool.div__bool", lambda T: T.tensor(BOOL).div_(T.tensor(BOOL)), RuntimeError,
     "result type Float can't be cast to the desired output type Bool"),
]


@pytest.mark.parametrize("fn,exc,match", [pytest.param(*r[1:], id=r[0]) for r in ERROR_CASES])
def test_errors(T, fn, exc, match):
    with pytest.raises(exc, match=match):
        fn(T)


def test_masked_fill_with_a_number_and_with_a_0d_tensor(T):
    x = T.tensor([1.0, 2.0, 3.0], dtype=T.float64, requires_grad=True)
    mask = T.tensor([True, False, True])
    value = T.tensor(2.0, dtype=T.float64, requires_grad=True)
    y = x.masked_fill(mask, 0.5)
    z = T.masked_fill(x, mask, value)
    assert y.tolist() == [0.5, 2.0, 0.5] and z.tolist() == [2.0, 2.0, 2.0]
    assert type(y.grad_fn).__name__ == "MaskedFillBackward0"
    assert type(z.grad_fn).__name__ == "MaskedFillBackward1"
    assert y.grad_fn._saved_mask.tolist() == [True, False, True]
    (y.sum() + (z * T.tensor([1.0, 2.0, 3.0], dtype=T.float64)).sum()).backward()
    assert x.grad.tolist() == [0.0, 3.0, 0.0] and value.grad.item() == 4.0
    assert T.autograd.gradgradcheck(lambda x, v: x.masked_fill(mask, v) ** 2, (x, value))


def test_masked_fill_checks_its_mask_and_value(T):
    x = T.ones(3)
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks, but got "
                                           "mask with dtype long int"):
        x.masked_fill(T.tensor([1, 0, 1]), 0.0)
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor, but got "
                                           "tensor with 1 dimension"):
        x.masked_fill(T.tensor([True, False, True]), T.ones(3))
    w = T.ones(2, 3)
    w.masked_fill_(T.tensor([True, False, True]), 5)
    assert w.tolist() == [[5.0, 1.0, 5.0], [5.0, 1.0, 5.0]]


def test_maximum_gradient_is_torchs_masked_fill_of_a_tie_split(T):
    a = T.tensor([1.0, 2.0, 5.0], requires_grad=True)
    b = T.tensor([1.0, 3.0, 0.0], requires_grad=True)
    (ga, gb) = T.autograd.grad((T.maximum(a, b) * a).sum(), [a, b], create_graph=True)
    assert type(gb.grad_fn).__name__ == "MaskedFillBackward0"
    assert ga.tolist() == [1.5, 3.0, 10.0] and gb.tolist() == [0.5, 2.0, 0.0]


@pytest.mark.parametrize(("fn", "node"), [("tanh", "TanhBackwardBackward0"),
                                          ("sigmoid", "SigmoidBackwardBackward0")])
def test_tanh_and_sigmoid_gradients_with_create_graph_are_one_node(T, fn, node):
    x = T.tensor([0.5, -1.2, 2.0], dtype=T.float64, requires_grad=True)
    y = getattr(T, fn)(x)
    (g,) = T.autograd.grad((y * T.tensor([1.0, 2.0, 3.0], dtype=T.float64)).sum(), [x],
                           create_graph=True)
    assert type(g.grad_fn).__name__ == node
    assert g.grad_fn._saved_output.tolist() == y.tolist()
    # third order runs through the gradient node's own backward
    assert T.autograd.gradgradcheck(
        lambda x: T.autograd.grad(getattr(T, fn)(x).pow(2).sum(), [x], create_graph=True)[0],
        (x,))


def test_x_to_the_minus_half_is_rsqrt_at_minus_zero_and_minus_inf(T):
    # torch computes x ** -0.5 as rsqrt (IEEE pow would give inf and 0 there), which also sets
    # the gradient of x ** 0.5 at -inf.
    x = T.tensor([-0.0, float("-inf"), 0.0, 4.0], dtype=T.float64, requires_grad=True)
    np.testing.assert_array_equal(to_np(x.pow(-0.5)), [-np.inf, np.nan, np.inf, 0.5])
    x.pow(0.5).backward(T.ones(4, dtype=T.float64))
    np.testing.assert_array_equal(to_np(x.grad), [-np.inf, np.nan, np.inf, 0.25])


def test_pow_minus_half_is_rsqrt(T):
    # torch computes x ** -0.5 as rsqrt(x): nan at -inf, -inf at -0.0
    x = T.tensor([-np.inf, -0.0, 4.0, np.inf])
    np.testing.assert_array_equal(to_np(x.pow(-0.5)), [np.nan, -np.inf, 0.5, 0.0])


@pytest.mark.parametrize("exponent", [(0.5,), 0.5, "expanded"])
def test_pow_with_a_tensor_exponent_of_one_half_is_pow_not_sqrt(T, exponent):
    # A tensor exponent takes C's pow even when one value serves every element: inf at -inf,
    # +0.0 at -0.0 (a number exponent of 0.5 is sqrt: nan and -0.0)
    x = T.tensor([-np.inf, -0.0, 4.0], dtype=T.float64, requires_grad=True)
    e = T.tensor(0.5, dtype=T.float64).expand(3) if exponent == "expanded" else \
        T.tensor(exponent, dtype=T.float64)
    y = to_np(x.pow(e))
    np.testing.assert_array_equal(y, [np.inf, 0.0, 2.0])
    assert not np.signbit(y[1])
    # the gradient's x ** (e - 1) too: 1.5 * (-inf) ** 0.5
    (g,) = T.autograd.grad(x.pow(e + 1).sum(), [x])
    assert to_np(g)[0] == np.inf


def test_pow_exponent_gradient_is_grad_times_a_where_as_torch(T):
    # torch's pow_backward_exponent: grad * where(x == 0 and y >= 0, 0, x^y * log(x)); its
    # derivative in y is nan at x = 0 (0 * log(0) in the masked branch)
    x = T.tensor([0.0, 0.5], dtype=T.float64, requires_grad=True)
    y = T.tensor([1.0, 1.0], dtype=T.float64, requires_grad=True)
    (gy,) = T.autograd.grad((x ** y).sum(), [y], create_graph=True)
    assert gy.grad_fn.name() == "MulBackward0"
    assert gy.grad_fn.next_functions[1][0].name() == "WhereBackward0"
    (ggy,) = T.autograd.grad(gy.sum(), [y])
    g = to_np(ggy)
    assert np.isnan(g[0])
    np.testing.assert_allclose(g[1], np.log(0.5) ** 2 * 0.5)
