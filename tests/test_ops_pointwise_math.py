"""Elementwise math beyond the basic arithmetic: inverse trigonometric and hyperbolic functions,
other bases, rounding parts, sign tests, and the two- and three-input functions (atan2, hypot,
copysign, fmod, fmax/fmin, logaddexp, ldexp, float_power, nextafter, lerp, addcmul/addcdiv,
gcd/lcm, heaviside).

Each test runs on ``ext`` and on ``torch`` through the ``T`` fixture, except the op-database
check (torch's OpInfos run on ext, compared with torch) and the in-place checks that compare the
two engines directly.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from opdb import considered  # noqa: E402

OPINFOS = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh", "atan2",
           "copysign", "deg2rad", "rad2deg", "exp2", "log10", "log2", "logaddexp", "logaddexp2",
           "fmax", "fmin", "fmod", "frac", "frexp", "ldexp", "float_power", "hypot",
           "heaviside", "gcd", "lcm", "nextafter", "lerp", "addcmul", "addcdiv", "square",
           "trunc", "signbit", "sgn", "positive", "isposinf", "isneginf", "isreal", "angle",
           "real", "conj", "conj_physical", "resolve_conj", "resolve_neg", "true_divide")


def _opinfos():
    return [op for op in considered() if op.name in OPINFOS]


def test_every_opinfo_is_considered():
    assert {op.name for op in _opinfos()} == set(OPINFOS)


# ------------------------------------------------------------------------------ nodes and saves
def _t(T, a, grad=True):
    return T.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


X = [0.3, -0.6, 0.8]
Y = [1.2, -0.4, 0.5]
W = [0.2, 0.7, 0.4]

# (id, function of (T, x, y, w), node name, saved fields)
NODES = [
    ("acos", lambda T, x, y, w: T.acos(x), "AcosBackward0", ["_saved_self"]),
    ("acosh", lambda T, x, y, w: T.acosh(x.abs() + 1), "AcoshBackward0", ["_saved_self"]),
    ("asin", lambda T, x, y, w: T.asin(x), "AsinBackward0", ["_saved_self"]),
    ("asinh", lambda T, x, y, w: T.asinh(x), "AsinhBackward0", ["_saved_self"]),
    ("atan", lambda T, x, y, w: T.atan(x), "AtanBackward0", ["_saved_self"]),
    ("atanh", lambda T, x, y, w: T.atanh(x), "AtanhBackward0", ["_saved_self"]),
    ("cosh", lambda T, x, y, w: T.cosh(x), "CoshBackward0", ["_saved_self"]),
    ("sinh", lambda T, x, y, w: T.sinh(x), "SinhBackward0", ["_saved_self"]),
    ("deg2rad", lambda T, x, y, w: T.deg2rad(x), "Deg2RadBackward0", []),
    ("rad2deg", lambda T, x, y, w: T.rad2deg(x), "Rad2DegBackward0", []),
    ("exp2", lambda T, x, y, w: T.exp2(x), "Exp2Backward0", ["_saved_result"]),
    ("log2", lambda T, x, y, w: T.log2(w), "Log2Backward0", ["_saved_self"]),
    ("log10", lambda T, x, y, w: T.log10(w), "Log10Backward0", ["_saved_self"]),
    ("trunc", lambda T, x, y, w: T.trunc(x), "TruncBackward0", []),
    ("fix", lambda T, x, y, w: T.fix(x), "TruncBackward0", []),
    ("frac", lambda T, x, y, w: T.frac(x), "FracBackward0", []),
    ("frexp", lambda T, x, y, w: T.frexp(x)[0], "FrexpBackward0", ["_saved_exponent"]),
    ("square", lambda T, x, y, w: T.square(x), "PowBackward0",
     ["_saved_exponent", "_saved_self"]),
    ("sgn", lambda T, x, y, w: T.sgn(x), "SgnBackward0", ["_saved_result", "_saved_self"]),
    ("angle", lambda T, x, y, w: T.angle(x), "AngleBackward0", ["_saved_self"]),
    ("atan2", lambda T, x, y, w: T.atan2(x, y), "Atan2Backward0",
     ["_saved_other", "_saved_self"]),
    ("hypot", lambda T, x, y, w: T.hypot(x, y), "HypotBackward0",
     ["_saved_other", "_saved_result", "_saved_self"]),
    ("copysign", lambda T, x, y, w: T.copysign(x, y), "CopysignBackward0",
     ["_saved_result", "_saved_self"]),
    ("copysign_scalar", lambda T, x, y, w: T.copysign(x, -1.0), "CopysignBackward1",
     ["_saved_result", "_saved_self"]),
    ("fmod_scalar", lambda T, x, y, w: T.fmod(x, 0.25), "FmodBackward0", []),
    ("fmod", lambda T, x, y, w: T.fmod(x, y), "FmodBackward1", ["_saved_other", "_saved_self"]),
    ("fmax", lambda T, x, y, w: T.fmax(x, y), "FmaxBackward0", ["_saved_other", "_saved_self"]),
    ("fmin", lambda T, x, y, w: T.fmin(x, y), "FminBackward0", ["_saved_other", "_saved_self"]),
    ("logaddexp", lambda T, x, y, w: T.logaddexp(x, y), "LogaddexpBackward0",
     ["_saved_other", "_saved_self"]),
    ("logaddexp2", lambda T, x, y, w: T.logaddexp2(x, y), "Logaddexp2Backward0",
     ["_saved_other", "_saved_self"]),
    ("ldexp", lambda T, x, y, w: T.ldexp(x, y), "LdexpBackward0",
     ["_saved_other", "_saved_result"]),
    ("nextafter", lambda T, x, y, w: T.nextafter(x, y), "NextafterBackward0",
     ["_saved_other", "_saved_self"]),
    ("float_power", lambda T, x, y, w: T.float_power(w, y), "PowBackward1",
     ["_saved_exponent", "_saved_result", "_saved_self"]),
    ("float_power_scalar", lambda T, x, y, w: T.float_power(x, 2), "PowBackward0",
     ["_saved_exponent", "_saved_self"]),
    ("float_power_base", lambda T, x, y, w: T.float_power(2, x), "PowBackward2",
     ["_saved_exponent", "_saved_result", "_saved_self"]),
    ("lerp_scalar", lambda T, x, y, w: T.lerp(x, y, 0.3), "LerpBackward0", ["_saved_weight"]),
    ("lerp_tensor", lambda T, x, y, w: T.lerp(x, y, w), "LerpBackward1",
     ["_saved_end", "_saved_self", "_saved_weight"]),
    ("addcmul", lambda T, x, y, w: T.addcmul(x, y, w, value=2), "AddcmulBackward0",
     ["_saved_tensor1", "_saved_tensor2", "_saved_value"]),
    ("addcdiv", lambda T, x, y, w: T.addcdiv(x, y, w, value=2), "AddcdivBackward0",
     ["_saved_tensor1", "_saved_tensor2", "_saved_value"]),
    ("acosh_", lambda T, x, y, w: (w + 1).acosh_(), "AcoshBackward1", []),
    ("asinh_", lambda T, x, y, w: (x * 1).asinh_(), "AsinhBackward1", []),
    ("atanh_", lambda T, x, y, w: (x * 1).atanh_(), "AtanhBackward1", []),
]


@pytest.mark.parametrize("name", ["acosh", "asinh", "atanh"])
def test_inplace_without_derivative(T, name):
    """torch records acosh_, asinh_ and atanh_ but has no derivative for them: backward and
    forward AD refuse."""
    x = _t(T, W) + 1 if name == "acosh" else _t(T, W) * 1
    getattr(x, name + "_")()
    with pytest.raises(NotImplementedError, match=f"inplace version of {name}"):
        x.sum().backward()
    fw = T.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(_t(T, W, grad=False) + 1, _t(T, W, grad=False))
        with pytest.raises(NotImplementedError, match=f"forward AD with {name}_"):
            getattr(d * 1, name + "_")()


def _node_and_saved(T, fn):
    y = fn(T, _t(T, X), _t(T, Y), _t(T, W))
    node = y.grad_fn
    return type(node).__name__, sorted(a for a in dir(node) if a.startswith("_saved_")), node


@pytest.mark.parametrize("fn,name,saved", [pytest.param(*r[1:], id=r[0]) for r in NODES])
def test_node_name_and_saved_fields(T, fn, name, saved):
    got_name, got_saved, _ = _node_and_saved(T, fn)
    assert got_name == name
    assert got_saved == saved


def test_saved_values(T):
    """The saved numbers and tensors read back as torch's."""
    x, y, w = _t(T, X), _t(T, Y), _t(T, W)
    node = T.lerp(x, y, 0.3).grad_fn
    assert node._saved_weight == 0.3
    node = T.addcmul(x, y, w, value=2).grad_fn
    assert node._saved_value == 2
    assert node._saved_tensor1 is y and node._saved_tensor2 is w
    node = T.frexp(x).mantissa.grad_fn
    assert node._saved_exponent.dtype == T.int32
    node = T.float_power(x, 2).grad_fn
    assert node._saved_exponent == 2.0 and type(node._saved_exponent) is float
    assert node._saved_self.dtype == T.float64
    node = T.square(x).grad_fn
    assert node._saved_exponent == 2 and type(node._saved_exponent) is int
    y2 = T.copysign(x, y)
    assert y2.grad_fn._saved_result is y2 or np.array_equal(
        y2.grad_fn._saved_result.detach().numpy(), y2.detach().numpy())


def test_saves_only_what_a_needed_gradient_reads(T):
    """torch saves an operand only for the gradients that read it."""
    x, c = _t(T, X), _t(T, Y, grad=False)
    node = T.hypot(x, c).grad_fn
    assert node._saved_other is None and node._saved_self is not None
    node = T.copysign(c, x).grad_fn
    assert node._saved_self is None and node._saved_result is not None
    node = T.ldexp(c, x).grad_fn
    assert node._saved_other is None and node._saved_result is not None
    node = T.addcmul(c, c, x).grad_fn
    assert node._saved_tensor2 is None and node._saved_tensor1 is not None
    node = T.addcdiv(c, x, c).grad_fn
    assert node._saved_tensor1 is None and node._saved_tensor2 is not None
    node = T.lerp(x, c, T.tensor(0.5, dtype=T.float64)).grad_fn
    assert node._saved_self is None and node._saved_end is None
    assert node._saved_weight is not None


def test_heaviside_has_no_derivative(T):
    """torch records heaviside with its NotImplemented node: backward and forward AD refuse."""
    x = T.tensor([1.0, 0.0, -1.0], requires_grad=True)
    y = T.heaviside(x, T.tensor([0.5]))
    assert type(y.grad_fn).__name__ == "NotImplemented"
    assert y.tolist() == [1.0, 0.5, 0.0]
    with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not implemented"):
        y.sum().backward()
    fw = T.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(T.tensor([1.0, 0.0]), T.ones(2))
        with pytest.raises(NotImplementedError, match="forward AD with aten::heaviside"):
            T.heaviside(d, T.tensor([0.5]))


# ------------------------------------------------------------------------------ gradcheck
def _inputs(T, rng, *domains, shape=(2, 3)):
    return [T.tensor(rng.uniform(lo, hi, shape) * (rng.choice((-1.0, 1.0), shape) if sym
                                                       else 1.0), dtype=T.float64,
                     requires_grad=True) for lo, hi, sym in domains]


ANY = (0.2, 1.5, True)
UNIT = (0.1, 0.8, True)
POS = (0.3, 2.0, False)
ABOVE_ONE = (1.2, 3.0, False)
SMALL = (0.05, 0.45, False)

# (id, function of (T, *inputs), input domains)
DIFFERENTIABLE = [
    ("acos", lambda T, x: T.acos(x), [UNIT]),
    ("asin", lambda T, x: T.asin(x), [UNIT]),
    ("atan", lambda T, x: T.atan(x), [ANY]),
    ("acosh", lambda T, x: T.acosh(x), [ABOVE_ONE]),
    ("asinh", lambda T, x: T.asinh(x), [ANY]),
    ("atanh", lambda T, x: T.atanh(x), [UNIT]),
    ("cosh", lambda T, x: T.cosh(x), [ANY]),
    ("sinh", lambda T, x: T.sinh(x), [ANY]),
    ("deg2rad", lambda T, x: T.deg2rad(x), [ANY]),
    ("rad2deg", lambda T, x: T.rad2deg(x), [ANY]),
    ("exp2", lambda T, x: T.exp2(x), [ANY]),
    ("log2", lambda T, x: T.log2(x), [POS]),
    ("log10", lambda T, x: T.log10(x), [POS]),
    ("frac", lambda T, x: T.frac(x), [SMALL]),
    ("trunc", lambda T, x: T.trunc(x), [SMALL]),
    ("frexp", lambda T, x: T.frexp(x).mantissa, [(0.55, 0.95, True)]),
    ("square", lambda T, x: T.square(x), [ANY]),
    ("sgn", lambda T, x: T.sgn(x), [ANY]),
    ("angle", lambda T, x: T.angle(x), [ANY]),
    ("atan2", lambda T, a, b: T.atan2(a, b), [ANY, ANY]),
    ("hypot", lambda T, a, b: T.hypot(a, b), [ANY, ANY]),
    ("copysign", lambda T, a, b: T.copysign(a, b), [ANY, ANY]),
    ("copysign_scalar", lambda T, a: T.copysign(a, -2.0), [ANY]),
    ("fmod", lambda T, a, b: T.fmod(a, b), [SMALL, (1.0, 2.0, True)]),
    ("fmod_scalar", lambda T, a: T.fmod(a, 1.5), [SMALL]),
    ("fmax", lambda T, a, b: T.fmax(a, b), [ANY, ANY]),
    ("fmin", lambda T, a, b: T.fmin(a, b), [ANY, ANY]),
    ("logaddexp", lambda T, a, b: T.logaddexp(a, b), [ANY, ANY]),
    ("logaddexp2", lambda T, a, b: T.logaddexp2(a, b), [ANY, ANY]),
    ("ldexp", lambda T, a, b: T.ldexp(a, b), [ANY, ANY]),
    ("float_power", lambda T, a, b: T.float_power(a, b), [POS, ANY]),
    ("float_power_scalar", lambda T, a: T.float_power(a, 3), [ANY]),
    ("float_power_base", lambda T, b: T.float_power(2.5, b), [ANY]),
    ("nextafter", lambda T, a, b: T.nextafter(a, b), [ANY, ANY]),
    ("lerp_scalar", lambda T, a, b: T.lerp(a, b, 0.7), [ANY, ANY]),
    ("lerp_tensor", lambda T, a, b, w: T.lerp(a, b, w), [ANY, ANY, UNIT]),
    ("lerp_broadcast", lambda T, a, b, w: T.lerp(a, b[0], w[:, :1]), [ANY, ANY, UNIT]),
    ("addcmul", lambda T, a, b, c: T.addcmul(a, b, c, value=0.5), [ANY, ANY, ANY]),
    ("addcmul_broadcast", lambda T, a, b, c: T.addcmul(a[0], b[:, :1], c), [ANY, ANY, ANY]),
    ("addcdiv", lambda T, a, b, c: T.addcdiv(a, b, c, value=-2), [ANY, ANY, ANY]),
]


@pytest.mark.parametrize("fn,domains", [pytest.param(*r[1:], id=r[0]) for r in DIFFERENTIABLE])
def test_gradcheck_and_gradgradcheck(T, rng, fn, domains):
    inputs = _inputs(T, rng, *domains)
    f = lambda *a: fn(T, *a)  # noqa: E731
    assert T.autograd.gradcheck(f, inputs, check_forward_ad=True)
    assert T.autograd.gradgradcheck(f, inputs)


def test_gradients_at_special_points(T):
    """torch's gradients where the formula divides by zero or the function jumps."""
    a = T.tensor([0.0, 1.0, 1e-170, 1e-160], dtype=T.float64, requires_grad=True)
    b = T.tensor([0.0, 0.0, 0.0, 0.0], dtype=T.float64, requires_grad=True)
    ga, gb = T.autograd.grad(T.atan2(a, b).sum(), (a, b))
    np.testing.assert_array_equal(ga.numpy(), [0.0, 0.0, 0.0, np.nan])
    np.testing.assert_array_equal(gb.numpy(), [-0.0, -1.0, -0.0, -np.inf])
    x = T.tensor([np.inf, -2.5, np.nan, 0.0, -0.0, 3.0], dtype=T.float64, requires_grad=True)
    (g,) = T.autograd.grad(T.copysign(x, -1.0).sum(), x)
    np.testing.assert_array_equal(g.numpy(), [np.nan, 1.0, np.nan, 0.0, 0.0, -1.0])
    (g,) = T.autograd.grad(T.fmax(x, T.tensor(1.0, dtype=T.float64)).sum(), x)
    np.testing.assert_array_equal(g.numpy(), [1.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    (g,) = T.autograd.grad(T.nextafter(x, T.tensor(3.0, dtype=T.float64)).sum(), x)
    np.testing.assert_array_equal(g.numpy(), [1.0, 1.0, 1.0, 1.0, 1.0, 0.0])


def test_broadcast_gradients_reduce_to_input_shapes(T, rng):
    (a,) = _inputs(T, rng, ANY, shape=(3,))
    (m,) = _inputs(T, rng, ANY, shape=(2, 3))
    for out in (T.atan2(m, a), T.hypot(a, m), T.fmax(m, a), T.ldexp(a, m),
                T.lerp(a, m, a), T.addcdiv(a, m, a)):
        ga, gm = T.autograd.grad(out.sum(), (a, m))
        assert tuple(ga.shape) == (3,) and tuple(gm.shape) == (2, 3)


# ------------------------------------------------------------------------------ dtypes and errors
INTS = [3, -4, 0, 7]


@pytest.mark.parametrize("name", ["acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh",
                                  "sinh", "exp2", "log2", "log10", "deg2rad", "rad2deg",
                                  "angle"])
def test_integer_input_gives_default_float(T, name):
    for dtype in (T.int64, T.int32, T.uint8, T.bool):
        x = T.tensor([1, 0], dtype=dtype)
        assert getattr(T, name)(x).dtype == T.get_default_dtype()


def test_binary_result_dtypes(T):
    i, j = T.tensor(INTS), T.tensor([2, 3, 5, 2])
    f32 = T.tensor([1.5, -2.0, 0.0, 4.0])
    f64 = f32.double()
    assert T.atan2(i, j).dtype == T.float32
    assert T.atan2(f32, f64).dtype == T.float64
    assert T.atan2(f32, T.tensor(2.0, dtype=T.float64)).dtype == T.float32
    assert T.copysign(i, -1).dtype == T.float32
    assert T.copysign(i, j).dtype == T.float32
    assert T.fmod(i, j).dtype == T.int64
    assert T.fmod(i, 2.5).dtype == T.float32
    assert T.fmax(i, j).dtype == T.int64
    assert T.fmax(i, f32).dtype == T.float32
    assert T.ldexp(i, j).dtype == T.float32
    assert T.ldexp(f64, j).dtype == T.float64
    assert T.float_power(i, 2).dtype == T.float64
    assert T.float_power(f32, f32).dtype == T.float64
    assert T.float_power(2, j).dtype == T.float64
    assert T.square(T.tensor([True, False])).dtype == T.int64
    assert T.square(T.tensor([2], dtype=T.uint8)).dtype == T.uint8
    assert T.trunc(i).dtype == T.int64
    assert T.sgn(T.tensor([True])).dtype == T.bool
    assert T.heaviside(i, j).dtype == T.int64
    assert T.gcd(i, T.tensor([2, 3, 5, 2], dtype=T.int32)).dtype == T.int64
    assert T.addcmul(i, i, j).dtype == T.int64
    assert T.addcmul(f32, i, f64).dtype == T.float64
    assert T.frexp(f32).exponent.dtype == T.int32


def test_values_at_special_points(T):
    inf, nan = float("inf"), float("nan")
    x = T.tensor([inf, -2.5, nan, 0.0, -0.0, -inf])
    np.testing.assert_array_equal(T.frac(x).numpy(), [nan, -0.5, nan, 0.0, -0.0, nan])
    np.testing.assert_array_equal(T.sgn(x).numpy(), [1.0, -1.0, 0.0, 0.0, 0.0, -1.0])
    np.testing.assert_array_equal(T.angle(x).numpy(), [0.0, np.float32(np.pi), nan, 0.0,
                                                        0.0, np.float32(np.pi)])
    assert T.signbit(x).tolist() == [False, True, False, False, True, True]
    assert T.isposinf(x).tolist() == [True, False, False, False, False, False]
    assert T.isneginf(x).tolist() == [False, False, False, False, False, True]
    assert T.isreal(x).tolist() == [True] * 6
    assert T.heaviside(x, T.tensor([0.5])).tolist()[3:5] == [0.5, 0.5]
    assert T.fmax(x, T.tensor(1.0)).tolist()[2] == 1.0
    assert T.fmin(T.tensor([nan]), T.tensor([nan])).isnan().all()
    assert T.gcd(T.tensor([0, -4, 6]), T.tensor([0, 6, -9])).tolist() == [0, 2, 3]
    assert T.lcm(T.tensor([0, -4, 6]), T.tensor([0, 6, -9])).tolist() == [0, 12, 18]
    one = T.tensor([1.0], dtype=T.float64)
    assert T.nextafter(one, T.tensor([2.0], dtype=T.float64)).item() == np.nextafter(1.0, 2.0)


def test_identities_return_the_tensor(T):
    x = T.tensor([1.0, -2.0])
    for name in ("conj", "resolve_conj", "resolve_neg", "conj_physical", "positive", "real"):
        assert getattr(T, name)(x) is x
    for name in ("conj", "resolve_conj", "resolve_neg", "conj_physical", "positive"):
        assert getattr(x, name)() is x
    assert x.conj_physical_() is x
    i = T.tensor([1, 0])
    assert T.conj(i) is i and T.real(i) is i


ERRORS = [
    (lambda T, i, f: T.atan2(i, 2), TypeError, "atan2"),
    (lambda T, i, f: T.atan2(2, i), TypeError, "atan2"),
    (lambda T, i, f: T.fmax(f, 2.0), TypeError, "fmax"),
    (lambda T, i, f: T.logaddexp(f, 1), TypeError, "logaddexp"),
    (lambda T, i, f: T.ldexp(f, 2), TypeError, "ldexp"),
    (lambda T, i, f: T.heaviside(f, 2), TypeError, "heaviside"),
    (lambda T, i, f: T.float_power(2, 3), TypeError, "float_power"),
    (lambda T, i, f: T.gcd(f, f), NotImplementedError, "gcd_cpu"),
    (lambda T, i, f: T.lcm(T.tensor([True]), T.tensor([True])), NotImplementedError, "Bool"),
    (lambda T, i, f: T.logaddexp(i, i), NotImplementedError, "logaddexp_cpu"),
    (lambda T, i, f: T.hypot(i, i), NotImplementedError, "hypot_cpu"),
    (lambda T, i, f: T.nextafter(i, i), NotImplementedError, "nextafter_cpu"),
    (lambda T, i, f: T.frac(i), NotImplementedError, "frac_cpu"),
    (lambda T, i, f: T.trunc(T.tensor([True])), NotImplementedError, "trunc_vml_cpu"),
    (lambda T, i, f: T.fmod(T.tensor([True]), T.tensor([True])), NotImplementedError,
     "fmod_cpu"),
    (lambda T, i, f: T.fmod(i, 0), RuntimeError, "ZeroDivisionError"),
    (lambda T, i, f: T.frexp(i), RuntimeError, "frexp"),
    (lambda T, i, f: T.positive(T.tensor([True])), RuntimeError, "bool"),
    (lambda T, i, f: T.heaviside(f, f.double()), RuntimeError, "different dtypes"),
    (lambda T, i, f: T.lerp(f.double(), f, 0.5), RuntimeError, "`end`"),
    (lambda T, i, f: T.lerp(f, f, f.double()), RuntimeError, "`weight`"),
    (lambda T, i, f: T.lerp(i, i, 0.5), NotImplementedError, "lerp_kernel_scalar"),
    (lambda T, i, f: T.addcdiv(f, i, i), RuntimeError, "Integer division with addcdiv"),
    (lambda T, i, f: T.addcmul(T.tensor([True]), T.tensor([True]), T.tensor([True])),
     NotImplementedError, "addcmul"),
    (lambda T, i, f: T.atan2(f, T.ones(3)), RuntimeError, "must match the size"),
    (lambda T, i, f: i.atan2_(i), RuntimeError, "can't be cast to the desired output type"),
    (lambda T, i, f: i.copysign_(i), RuntimeError, "can't be cast"),
    (lambda T, i, f: i.fmod_(2.5), RuntimeError, "can't be cast"),
    (lambda T, i, f: f.float_power_(2), RuntimeError, "float_power_ has dtype Float"),
    (lambda T, i, f: T.ones(2, 3).lerp_(f[:1].expand(1, 4), 0.5), RuntimeError, ""),
]


@pytest.mark.parametrize("fn,error,text", ERRORS)
def test_errors(T, fn, error, text):
    with pytest.raises(error, match=None) as info:
        fn(T, T.tensor(INTS), T.tensor([1.5, -2.0, 0.0, 4.0]))
    assert text in str(info.value)


# ------------------------------------------------------------------------------ names and in place
ALIASES = [("arccos", "acos"), ("arcsin", "asin"), ("arctan", "atan"), ("arccosh", "acosh"),
           ("arcsinh", "asinh"), ("arctanh", "atanh"), ("arctan2", "atan2"), ("fix", "trunc"),
           ("true_divide", "div")]


@pytest.mark.parametrize("alias,name", ALIASES)
def test_aliases(T, alias, name):
    x = T.tensor([0.25, -0.5], dtype=T.float64)
    args = (x,) if name not in ("atan2", "div") else (x, x + 1)
    expected = getattr(T, name)(*args)
    np.testing.assert_array_equal(getattr(T, alias)(*args).numpy(), expected.numpy())
    np.testing.assert_array_equal(getattr(args[0], alias)(*args[1:]).numpy(), expected.numpy())
    y = args[0].clone()
    getattr(y, alias + "_")(*args[1:])
    np.testing.assert_array_equal(y.numpy(), expected.numpy())


def test_keyword_names(T):
    x = T.tensor([0.25, -0.5], dtype=T.float64)
    w = T.tensor([0.5, 2.0], dtype=T.float64)
    assert T.atan2(input=x, other=w).shape == (2,)
    assert T.lerp(input=x, end=w, weight=0.5).shape == (2,)
    assert T.addcmul(input=x, tensor1=w, tensor2=w, value=2).shape == (2,)
    assert T.float_power(input=x, exponent=2).shape == (2,)
    assert T.heaviside(input=x, values=w).shape == (2,)


INPLACE = [
    ("acos_", ()), ("asin_", ()), ("atan_", ()), ("cosh_", ()),
    ("sinh_", ()), ("exp2_", ()), ("deg2rad_", ()), ("rad2deg_", ()), ("trunc_", ()),
    ("frac_", ()), ("sgn_", ()), ("square_", ()), ("atan2_", ("y",)), ("hypot_", ("y",)),
    ("copysign_", ("y",)), ("copysign_", (-1.0,)), ("fmod_", ("y",)), ("fmod_", (0.3,)),
    ("ldexp_", ("y",)), ("float_power_", ("y",)), ("float_power_", (2,)),
    ("nextafter_", ("y",)), ("lerp_", ("y", 0.3)), ("lerp_", ("y", "y")),
    ("addcmul_", ("y", "y")), ("addcdiv_", ("y", "y")), ("true_divide_", ("y",)),
]


@pytest.mark.parametrize("name,args", INPLACE, ids=[f"{n}{len(a)}{a[:1]}" for n, a in INPLACE])
def test_inplace_matches_out_of_place(T, name, args):
    """``x.op_(...)`` writes op(x, ...) into x, and the gradient flows through it."""
    base = T.tensor([0.3, -0.6, 0.8], dtype=T.float64, requires_grad=True)
    y = T.tensor([0.5, -0.25, 0.75], dtype=T.float64)
    real = [y if a == "y" else a for a in args]
    expected = getattr(T, name[:-1])(base * 1, *real)
    x = base * 1
    if isinstance(expected, tuple):
        expected = expected[0]
    version = x._version
    out = getattr(x, name)(*real)
    assert out is x and x._version == version + 1
    np.testing.assert_allclose(x.detach().numpy(), expected.detach().numpy(), rtol=1e-15)
    (g,) = T.autograd.grad(x.sum(), base)
    (ge,) = T.autograd.grad(expected.sum(), base)
    # (torch's zero gradients, sgn's, are ZeroTensors: added to zeros, they read as arrays)
    np.testing.assert_allclose((T.zeros(3, dtype=T.float64) + g).numpy(),
                               (T.zeros(3, dtype=T.float64) + ge).numpy(), rtol=1e-15)


def test_inplace_into_integer_tensor(T):
    i = T.tensor(INTS)
    assert i.fmod_(3).tolist() == [0, -1, 0, 1]
    assert i.gcd_(T.tensor([2, 2, 2, 2])).tolist() == [2, 1, 2, 1]
    assert i.heaviside_(T.tensor([5, 5, 5, 5])).tolist() == [1, 1, 1, 1]
    i = T.tensor(INTS)
    assert i.trunc_().tolist() == INTS and i.square_().tolist() == [9, 16, 0, 49]
