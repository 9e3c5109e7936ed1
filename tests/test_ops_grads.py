"""Gradient values of the elementary ops against NumPy derivatives, and grad dtypes.

Every test runs on ``ext`` and on ``torch``.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import ANY, POS, leaf, sample, to_np

# id, fn(T, *inputs), input shapes and domains, reference grads(g, *arrays)
GRAD_REF = [
    ("mul_broadcast", lambda T, a, b: a * b, [((2, 3), ANY), ((3,), ANY)],
     lambda g, a, b: (g * b, (g * a).sum(0))),
    ("div_broadcast", lambda T, a, b: a / b, [((2, 3), ANY), ((2, 1), ANY)],
     lambda g, a, b: (g / b, (-g * a / b**2).sum(1, keepdims=True))),
    ("pow_tensor", lambda T, a, b: a**b, [((2, 3), POS), ((2, 3), ANY)],
     lambda g, a, b: (g * b * a ** (b - 1), g * a**b * np.log(a))),
    ("pow_scalar", lambda T, a: a**3, [((2, 3), ANY)], lambda g, a: (g * 3 * a**2,)),
    ("rpow_scalar", lambda T, a: 2**a, [((2, 3), ANY)], lambda g, a: (g * 2**a * np.log(2),)),
    ("mat@mat", lambda T, a, b: a @ b, [((2, 3), ANY), ((3, 4), ANY)],
     lambda g, a, b: (g @ b.T, a.T @ g)),
    ("mat@vec", lambda T, a, b: a @ b, [((2, 3), ANY), ((3,), ANY)],
     lambda g, a, b: (np.outer(g, b), a.T @ g)),
    ("vec@vec", lambda T, a, b: a @ b, [((3,), ANY), ((3,), ANY)],
     lambda g, a, b: (g * b, g * a)),
    ("vec@mat", lambda T, a, b: a @ b, [((2,), ANY), ((2, 3), ANY)],
     lambda g, a, b: (b @ g, np.outer(a, g))),
    ("sum_1_keepdim", lambda T, a: a.sum(1, keepdim=True), [((2, 3), ANY)],
     lambda g, a: (np.broadcast_to(g, a.shape),)),
    ("sum_(0,2)", lambda T, a: a.sum((0, 2)), [((2, 1, 3), ANY)],
     lambda g, a: (np.broadcast_to(g.reshape(1, 1, 1), a.shape),)),
    ("mean_of_broadcast_sum", lambda T, a, b: (a + b).mean(), [((2, 3), ANY), ((3,), ANY)],
     lambda g, a, b: (np.full(a.shape, g / 6), np.full(b.shape, g * 2 / 6))),
    ("mean_0_of_broadcast_mul", lambda T, a, b: (a * b).mean(0), [((2, 3), ANY), ((2, 1), ANY)],
     lambda g, a, b: (np.broadcast_to(g / 2 * b, a.shape), (g / 2 * a).sum(1, keepdims=True))),
]


@pytest.mark.parametrize(
    "fn,specs,grads_ref", [pytest.param(*row[1:], id=row[0]) for row in GRAD_REF]
)
def test_grad_values_match_numpy(T, rng, fn, specs, grads_ref):
    arrays = [sample(rng, shape, domain) for shape, domain in specs]
    inputs = [leaf(T, a) for a in arrays]
    out = fn(T, *inputs)
    g = sample(rng, tuple(out.shape))
    out.backward(T.tensor(g))
    for x, expected in zip(inputs, grads_ref(g, *arrays), strict=True):
        assert x.grad.dtype == T.float64
        assert tuple(x.grad.shape) == tuple(x.shape)
        np.testing.assert_allclose(to_np(x.grad), expected, rtol=1e-12, atol=1e-14)


FLOAT32_CASES = [
    ("mul_broadcast", lambda T, a, b: a * b, [(2, 3), (3,)]),
    ("div", lambda T, a, b: a / b, [(2, 3), (2, 3)]),
    ("pow_tensor", lambda T, a, b: a**b, [(2, 3), (2, 3)]),
    ("x*2.5", lambda T, a: a * 2.5, [(2, 3)]),
    ("2**x", lambda T, a: 2**a, [(2, 3)]),
    ("exp", lambda T, a: a.exp(), [(3,)]),
    ("sqrt", lambda T, a: a.sqrt(), [(3,)]),
    ("sigmoid", lambda T, a: T.sigmoid(a), [(3,)]),
    ("mat@mat", lambda T, a, b: a @ b, [(2, 3), (3, 2)]),
    ("mat@vec", lambda T, a, b: a @ b, [(2, 3), (3,)]),
    ("sum_0", lambda T, a: a.sum(0), [(2, 3)]),
    ("mean", lambda T, a: a.mean(), [(2, 3)]),
    ("transpose_reshape", lambda T, a: a.transpose(0, 1).reshape(-1), [(2, 3)]),
]


@pytest.mark.parametrize("fn,shapes", [pytest.param(*r[1:], id=r[0]) for r in FLOAT32_CASES])
def test_float32_inputs_keep_float32_grads(T, rng, fn, shapes):
    arrays = [sample(rng, shape, POS, dtype=np.float32) for shape in shapes]
    inputs = [leaf(T, a) for a in arrays]
    out = fn(T, *inputs)
    assert out.dtype == T.float32
    out.sum().backward()
    for x in inputs:
        assert x.grad.dtype == T.float32
        assert tuple(x.grad.shape) == tuple(x.shape)
        assert to_np(x.grad).dtype == np.float32


@pytest.mark.parametrize(
    "src,convert",
    [
        pytest.param(np.float64, lambda T, t: t.float(), id="float64.float"),
        pytest.param(np.float64, lambda T, t: t.to(T.float32), id="float64.to_float32"),
        pytest.param(np.float32, lambda T, t: t.double(), id="float32.double"),
    ],
)
def test_grad_through_dtype_conversion_has_input_dtype(T, rng, src, convert):
    a = sample(rng, (2, 3), dtype=src)
    x = leaf(T, a)
    g = sample(rng, (2, 3))
    y = convert(T, x)
    (y * T.tensor(g.astype(to_np(y).dtype))).sum().backward()
    assert x.grad.dtype == getattr(T, np.dtype(src).name)
    np.testing.assert_allclose(to_np(x.grad), g.astype(src), rtol=1e-6)


@pytest.mark.parametrize("exponent,expected,has_graph", [
    (0, [0.0, 0.0, 0.0], False),
    (0.0, [0.0, 0.0, 0.0], False),
    # torch's test for a zero exponent is never true of a bool: False goes through the formula
    (False, [0.0, -0.0, np.nan], True),
    (True, [1.0, 2.0, 3.0], True),
])
def test_pow_scalar_gradient_at_zero_and_bool_exponents(T, exponent, expected, has_graph):
    x = leaf(T, np.array([1.5, -0.75, 0.0]))
    g = leaf(T, np.array([1.0, 2.0, 3.0]))
    (gx,) = T.autograd.grad(x.pow(exponent), x, g, create_graph=True)
    np.testing.assert_array_equal(to_np(gx), expected)
    np.testing.assert_array_equal(np.signbit(to_np(gx)[:2]), np.signbit(expected[:2]))
    assert gx.requires_grad is has_graph


@pytest.mark.parametrize("fn,wrt,names", [
    pytest.param(lambda T, x, y: T.add(x, y, alpha=2), 1, "MulBackward1", id="add_alpha"),
    pytest.param(lambda T, x, y: T.sub(x, y, alpha=2), 1, "MulBackward1", id="sub_alpha"),
    pytest.param(lambda T, x, y: T.rsub(x, y, alpha=3), 0, "MulBackward1", id="rsub_alpha"),
    pytest.param(lambda T, x, y: T.sub(x, y), 1, "NegBackward0", id="sub"),
    pytest.param(lambda T, x, y: T.addmm(x[0], x, y, beta=0.5, alpha=2), 1, "MulBackward1",
                 id="addmm_alpha"),
    pytest.param(lambda T, x, y: x.mean(), 0, "DivBackward1", id="mean"),
    pytest.param(lambda T, x, y: x.mean(0), 0, "DivBackward1", id="mean_0"),
])
def test_scalar_factor_of_a_gradient_is_torchs_scalar_overload(T, fn, wrt, names):
    # torch's formulas scale by a number with the C++ Scalar overloads (mul.Scalar, div.Scalar)
    x = leaf(T, np.array([[1.0, 2.0], [3.0, 4.0]]))
    y = leaf(T, np.array([[0.5, -2.0], [1.5, 4.0]]))
    out = fn(T, x, y)
    g = leaf(T, np.ones(tuple(out.shape)))
    grad = T.autograd.grad(out, [x, y][wrt], g, create_graph=True)[0]
    assert grad.grad_fn.name() == names
    (gg,) = T.autograd.grad(grad.sum(), g)  # the node is differentiable in turn
    assert gg.shape == g.shape


def test_pow_scalar_gradient_scales_x_pow_e_minus_1_with_the_scalar_overload(T):
    # torch's pow_backward is grad * (e * x.pow(e - 1)), the product its C++ mul.Scalar
    x = leaf(T, np.array([1.5, -0.75]))
    (gx,) = T.autograd.grad(x.pow(3).sum(), x, create_graph=True)
    assert gx.grad_fn.name() == "MulBackward0"
    scale = gx.grad_fn.next_functions[1][0]
    assert scale.name() == "MulBackward1"
    assert scale.next_functions[0][0].name() == "PowBackward0"


def test_nan_to_num_gradient_is_grad_times_isfinite(T):
    # torch: grad * isfinite(x), so a non-finite gradient at a non-finite x gives nan
    x = leaf(T, np.array([1.0, np.inf, np.nan]))
    g = leaf(T, np.array([2.0, np.inf, 3.0]))
    (gx,) = T.autograd.grad(x.nan_to_num(), [x], g, create_graph=True)
    assert gx.grad_fn.name() == "MulBackward0"
    np.testing.assert_array_equal(to_np(gx), [2.0, np.nan, 0.0])
