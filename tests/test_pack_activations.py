"""The pack's activations against the torch functions they replace: gelu's erf and tanh forms,
``inplace=``, and each backward's fast lane against its plain path, on both engines."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ext import functions as P

torch = pytest.importorskip("torch")

F = torch.nn.functional

INPLACE = ["silu", "mish", "hardswish", "hardsigmoid"]
# (the forms whose in-place backward keeps only the derivative: double backward raises)
ONCE = ["silu", "mish", "hardswish"]
_rng = np.random.default_rng(11)


def _points() -> np.ndarray:
    """Random values, the hard ops' bounds and kinks, and the far tails."""
    return np.concatenate([_rng.uniform(-6, 6, 24),
                           [-3.0, 3.0, 0.0, -1.5, -2.0, -20.0, 20.0, 25.0, -40.0, 40.0]])


def _on(T, values, *, grad=True, dtype="float64"):
    return T.tensor(values, dtype=getattr(T, dtype), requires_grad=grad)


def _numpy(t) -> np.ndarray:
    return np.asarray(t.detach().numpy())


def _value_and_grad(T, fn, values, weights, **kwargs):
    """fn at values and the gradient of sum(fn * weights), on the engine T."""
    x = _on(T, values)
    y = fn(x, **kwargs)
    (g,) = T.autograd.grad((y * T.tensor(weights)).sum(), x)
    return _numpy(y), _numpy(g)


# ---------------------------------------------------------------------------------- gelu
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_gives_torchs_values_and_gradients(T, approximate):
    values = _points()
    weights = _rng.standard_normal(values.shape)
    y, g = _value_and_grad(T, P.gelu, values, weights, approximate=approximate)
    ry, rg = _value_and_grad(torch, F.gelu, values, weights, approximate=approximate)
    np.testing.assert_allclose(y, ry, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(g, rg, rtol=1e-12, atol=1e-15)


def test_gelu_tanh_is_gelu_with_the_tanh_approximation(T):
    x = _on(T, _points())
    np.testing.assert_array_equal(_numpy(P.gelu(x, approximate="tanh")),
                                  _numpy(P.gelu_tanh(x)))
    assert type(P.gelu(x).grad_fn).__name__ == "GeluBackward"
    assert type(P.gelu(x, approximate="tanh").grad_fn).__name__ == "GeluTanhBackward"


def test_gelu_at_infinity_is_nan_where_the_formula_is():
    # F.gelu gives nan at +inf and -inf; the formula x Phi(x) gives +inf and nan there, and its
    # gradient nan at both, as torch's
    x = torch.tensor([math.inf, -math.inf], requires_grad=True)
    y = P.gelu(x)
    (g,) = torch.autograd.grad(y.sum(), x)
    assert y[0].item() == math.inf and math.isnan(y[1].item())
    assert torch.isnan(g).all() and torch.isnan(torch.autograd.grad(F.gelu(x).sum(), x)[0]).all()
    x = torch.tensor([math.inf, -math.inf], requires_grad=True)
    torch.testing.assert_close(P.gelu(x, approximate="tanh"), F.gelu(x, approximate="tanh"),
                               equal_nan=True)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_at_nan_and_the_far_tails_is_f_gelu(approximate):
    points = [math.nan, 1e30, -1e30, 1e10, -1e10]
    x = torch.tensor(points, requires_grad=True)
    xt = torch.tensor(points, requires_grad=True)
    y, ref = P.gelu(x, approximate=approximate), F.gelu(xt, approximate=approximate)
    (g,) = torch.autograd.grad(y.sum(), x)
    (rg,) = torch.autograd.grad(ref.sum(), xt)
    torch.testing.assert_close(y, ref, equal_nan=True)
    torch.testing.assert_close(g, rg, equal_nan=True)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_passes_gradcheck_and_gradgradcheck(T, approximate):
    x = _on(T, _rng.uniform(-4, 4, (3, 4)))
    assert T.autograd.gradcheck(lambda t: P.gelu(t, approximate=approximate), (x,))
    assert T.autograd.gradgradcheck(lambda t: P.gelu(t, approximate=approximate), (x,))


def test_gelu_refuses_an_unknown_approximation_as_torch(T):
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(torch.ones(2), approximate="erf")
    with pytest.raises(RuntimeError, match=r"gelu\(\): approximate argument must be either none "
                                           r"or tanh, got 'erf'"):
        P.gelu(T.ones(2), approximate="erf")


def test_gelu_refuses_an_integer_tensor(T):
    with pytest.raises(TypeError, match=r"gelu\(\): argument 'x' must be a floating-point tensor"):
        P.gelu(T.tensor([1, 2]))


# ---------------------------------------------------------------------------------- inplace=
@pytest.mark.parametrize("name", INPLACE)
def test_inplace_writes_into_x_and_returns_x_as_torch(T, name):
    values = _points()
    weights = _rng.standard_normal(values.shape)
    seen = []
    for engine, fn in ((T, getattr(P, name)), (torch, getattr(F, name))):
        x = _on(engine, values)
        h = x * 1
        before = h._version
        y = fn(h, inplace=True)
        assert y is h and h._version > before
        (g,) = engine.autograd.grad((y * engine.tensor(weights)).sum(), x)
        seen.append((_numpy(y), _numpy(g)))
    (y, g), (ry, rg) = seen
    np.testing.assert_allclose(y, ry, rtol=1e-12, atol=1e-15)
    # (torch's hardsigmoid gradient multiplies by a float32 1/6, even in float64)
    np.testing.assert_allclose(g, rg, rtol=1e-7, atol=1e-15)


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_gives_the_out_of_place_gradient_with_the_ops_node(T, name):
    values = _points()
    h = _on(T, values) * 1
    y = getattr(P, name)(h, inplace=True)
    cls = {"silu": "Silu", "mish": "Mish", "hardswish": "Hardswish",
           "hardsigmoid": "Hardsigmoid"}[name]
    assert type(y.grad_fn).__name__ == f"{cls}Backward"
    x = _on(T, values)
    y2 = getattr(P, name)(x)
    (g,) = T.autograd.grad(y2.sum(), x)
    x3 = _on(T, values)
    (g3,) = T.autograd.grad(getattr(P, name)(x3 * 1, inplace=True).sum(), x3)
    np.testing.assert_array_equal(_numpy(y), _numpy(y2))
    np.testing.assert_allclose(_numpy(g3), _numpy(g), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_into_a_view_writes_through_to_its_base_as_torch(T, name):
    values = _rng.uniform(-4, 4, (3, 4))
    seen = []
    for engine, fn in ((T, getattr(P, name)), (torch, getattr(F, name))):
        x = _on(engine, values)
        h = x * 1
        row = h[1]
        assert fn(row, inplace=True) is row
        assert type(h.grad_fn).__name__ == "CopySlices"
        (g,) = engine.autograd.grad((h * h).sum(), x)
        seen.append((_numpy(h), _numpy(g)))
    (h, g), (rh, rg) = seen
    np.testing.assert_allclose(h, rh, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(g, rg, rtol=1e-7, atol=1e-15)


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_on_a_leaf_that_requires_grad_is_refused_before_any_work(T, name):
    values = _rng.uniform(-4, 4, 5)
    message = "a leaf Variable that requires grad is being used in an in-place operation"
    with pytest.raises(RuntimeError, match=message):
        getattr(F, name)(torch.tensor(values, requires_grad=True), inplace=True)
    x = _on(T, values)
    with pytest.raises(RuntimeError, match=rf"{name}\(inplace=True\): {message}"):
        getattr(P, name)(x, inplace=True)
    assert x._version == 0
    np.testing.assert_array_equal(_numpy(x), values)


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_on_a_view_of_a_leaf_that_requires_grad_is_refused(T, name):
    values = _rng.uniform(-4, 4, 5)
    message = "a view of a leaf Variable that requires grad is being used in an in-place"
    with pytest.raises(RuntimeError, match=message):
        getattr(F, name)(torch.tensor(values, requires_grad=True)[1:3], inplace=True)
    x = _on(T, values)
    with pytest.raises(RuntimeError, match=message):
        getattr(P, name)(x[1:3], inplace=True)
    np.testing.assert_array_equal(_numpy(x), values)


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_without_a_graph_writes_into_x_as_torch(T, name):
    values = _points()
    plain = _on(T, values, grad=False)
    assert getattr(P, name)(plain, inplace=True) is plain
    native = torch.tensor(values)
    assert getattr(F, name)(native, inplace=True) is native
    np.testing.assert_allclose(_numpy(plain), native.numpy(), rtol=1e-12, atol=1e-15)
    leaf = _on(T, values)
    with T.no_grad():
        out = getattr(P, name)(leaf, inplace=True)
    assert out is leaf and leaf.requires_grad and leaf._version > 0
    np.testing.assert_allclose(_numpy(leaf), native.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_passes_gradcheck(T, name):
    # (away from the hard ops' kinks, where finite differences straddle them)
    x = _on(T, _rng.uniform(-2.5, 2.5, (3, 4)))
    assert T.autograd.gradcheck(lambda t: getattr(P, name)(t * 1, inplace=True), (x,))


@pytest.mark.parametrize("name", ONCE)
def test_differentiating_an_inplace_backward_raises(T, name):
    x = _on(T, _rng.uniform(-2.5, 2.5, 6))
    y = getattr(P, name)(x * 1, inplace=True)
    v = T.ones(6, dtype=T.float64, requires_grad=True)
    (g,) = T.autograd.grad(y, x, v, create_graph=True)
    np.testing.assert_allclose(_numpy(g), _numpy(T.autograd.grad(getattr(P, name)(x).sum(),
                                                                    x)[0]), rtol=1e-12)
    with pytest.raises(RuntimeError, match=rf"{name}\(inplace=True\): double backward is not "
                                           "supported"):
        T.autograd.grad(g.sum(), x)


def test_hardsigmoid_inplace_keeps_its_exact_double_backward(T):
    x = _on(T, _rng.uniform(-2.5, 2.5, (3, 4)))
    assert T.autograd.gradgradcheck(lambda t: P.hardsigmoid(t * 1, inplace=True), (x,))


# ---------------------------------------------------------------------------------- fast lanes
_BACKWARDS = {
    "silu": (P.silu, 1), "mish": (P.mish, 1), "gelu": (P.gelu, 1),
    "gelu_tanh": (P.gelu_tanh, 1), "hardswish": (P.hardswish, 1),
    "hardsigmoid": (P.hardsigmoid, 1), "hardmish": (P.hardmish, 1),
    "swiglu": (P.swiglu, 2), "geglu": (P.geglu, 2),
    "geglu_tanh": (lambda a, b: P.geglu(a, b, "tanh"), 2),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(_BACKWARDS))
def test_the_fast_lane_gives_the_plain_paths_gradient(T, name, dtype):
    # create_graph=True takes the plain path of differentiable ops; without it, the fast lane
    fn, arity = _BACKWARDS[name]
    values = [_points() for _ in range(arity)]
    weights = T.tensor(_rng.standard_normal(values[0].shape), dtype=getattr(T, dtype))
    grads = []
    for create_graph in (False, True):
        xs = [_on(T, v, dtype=dtype) for v in values]
        grads.append(T.autograd.grad(fn(*xs), xs, weights, create_graph=create_graph))
    rtol = 1e-12 if dtype == "float64" else 2e-5
    for fast, plain in zip(*grads):
        np.testing.assert_allclose(_numpy(fast), _numpy(plain), rtol=rtol, atol=rtol)
