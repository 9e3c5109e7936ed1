"""Special functions (torch.special and their top-level names): gamma and its relatives, error
functions, Bessel functions, orthogonal polynomials, zeta; kernels from scipy.special where
NumPy has none.

scipy is imported by the kernels on first use, never when ``ext`` is imported. The kernels
compute in float64 and round to the input's dtype: torch's float32 kernels are accurate to
float32, which scipy's float32 loops are not everywhere. Where torch's own steps give other
values (trigamma, float32 log_ndtr, J0 and Y1 beyond 5), those steps are followed, so that the
values and the gradients read from them agree with torch's.
"""

from __future__ import annotations

import math

import numpy as np

from ... import _dtype
from ..._args import not_a_tensor
from ..._tensor import Tensor, wrap
from .._op import (
    ELEMENTWISE,
    FLOAT,
    Overload,
    declare,
    dispatch,
    loaded,
    lookup,
    read_history,
)
from ._builtin import binary_operands, namespace_of
from .special_polynomials import POLYNOMIALS

# torch.special's names this module gives (``ext.special`` collects them): name -> function.
SPECIAL: dict = {}

_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)


def scipy_special():
    """scipy.special, loaded on first use (``import ext`` stays quick)."""
    import scipy.special

    return scipy.special


def _kernel(name: str, *pre):
    """The elementwise kernel ``scipy.special.<name>(*pre, d)``, computed in float64 and given
    back in ``d``'s dtype, silently out of the domain (nan or inf, as torch gives)."""
    def kernel(d: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            out = getattr(scipy_special(), name)(*pre, d.astype(np.float64, copy=False))
        return np.asarray(out).astype(d.dtype, copy=False)

    return kernel


def _floating(x: Tensor, name: str) -> np.ndarray:
    """x's array, in the default dtype when it is an integer or bool tensor."""
    if type(x) is not Tensor:
        raise not_a_tensor(x, name)
    if x._vc and x._vc[0]:
        read_history(x)
    d = x._data
    return d if d.dtype.kind in "fV" else d.astype(_dtype.get_default_dtype()._np)


# ---------------------------------------------------------------------------- gamma and kin
class Digamma(Overload):
    """ψ(x) = d/dx log Γ(x): d/dx = ψ'(x) = polygamma(1, x)."""

    node_name = "DigammaBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * namespace_of(grad).polygamma(1, x)


def _digamma_kernel(d: np.ndarray) -> np.ndarray:
    # torch's ψ at ±0 is ∓inf (scipy's is nan at -0 and at 0 alike)
    out = _kernel("psi")(d)
    return np.where(d == 0, np.copysign(np.inf, -d).astype(d.dtype), out)


digamma = declare("digamma", Digamma, kernel=_digamma_kernel, dtype=FLOAT, inplace="digamma_")
SPECIAL.update(digamma=digamma, psi=digamma)


class Polygamma(Overload):
    """The n-th derivative of ψ: d/dx polygamma(n, x) = polygamma(n + 1, x)."""

    node_name = "PolygammaBackward0"
    args = ("n", "self")
    tensor_positions = (1,)
    saved_fields = ("self",)
    saved_attrs = ("n",)
    jvp = ELEMENTWISE

    @staticmethod
    def forward(n, x):
        return namespace_of(x).polygamma(n, x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return None, grad * namespace_of(grad).polygamma(ctx.n + 1, x)


def _trigamma(x: np.ndarray) -> np.ndarray:
    """ψ'(x) as torch computes it, in x's dtype throughout: its reflection through sin(πx) is
    finite (if huge) at the poles, and in float32 it costs digits that scipy's kernel keeps."""
    f = x.dtype.type
    pi = f(math.pi)
    with np.errstate(all="ignore"):
        low = x < f(0.5)
        s = np.sin(pi * x)
        result = np.where(low, -((pi * pi) / (s * s)), f(0))
        x = np.where(low, f(1) - x, x)
        for _ in range(6):  # (ψ'(x) = 1/x² + ψ'(x + 1): push x up before the series)
            result = result + f(1) / (x * x)
            x = x + f(1)
        ixx = f(1) / (x * x)
        tail = ixx * (f(1 / 6) - ixx * (f(1 / 30) - ixx * f(1 / 42)))
        result = result + (f(1) + f(1) / (f(2) * x) + tail) / x
        return np.where(low, -result, result).astype(f)


def _polygamma_kernel(n: int, d: np.ndarray) -> np.ndarray:
    if n == 0:
        return _digamma_kernel(d)
    if n == 1 and d.dtype.kind == "f":
        return _trigamma(d)
    return _kernel("polygamma", n)(d)


def _polygamma(n: int, input: Tensor) -> Tensor:
    """The n-th derivative of the digamma function."""
    d = _floating(input, "polygamma")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    out = _polygamma_kernel(n, d)
    return dispatch(Polygamma, out, (n, input))


def _polygamma_method(self: Tensor, n: int) -> Tensor:
    return _polygamma(n, self)


polygamma = declare("polygamma", Polygamma, function=_polygamma,
                    methods={"polygamma": _polygamma_method},
                    inplace=(("polygamma_", _polygamma_method),))
SPECIAL["polygamma"] = polygamma


class Lgamma(Overload):
    """log |Γ(x)|: d/dx = ψ(x)."""

    node_name = "LgammaBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.digamma()


lgamma = declare("lgamma", Lgamma, kernel=_kernel("gammaln"), dtype=FLOAT, inplace="lgamma_")
SPECIAL["gammaln"] = lgamma


class Mvlgamma(Overload):
    """The multivariate log-gamma of dimension p, Σ_j log Γ(x - j/2) + p(p-1)/4 log π:
    d/dx = Σ_j ψ(x - j/2)."""

    node_name = "MvlgammaBackward0"
    args = ("self", "p")
    tensor_positions = (0,)
    saved_fields = ("self",)
    saved_attrs = ("p",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * sum((x - j / 2).digamma() for j in range(ctx.p)), None


def _mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension ``p``."""
    d = _floating(input, "mvlgamma")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    gammaln = _kernel("gammaln")
    out = sum(gammaln(d - j / 2) for j in range(p)) + p * (p - 1) / 4 * math.log(math.pi)
    return dispatch(Mvlgamma, np.asarray(out, d.dtype), (input, p))


mvlgamma = declare("mvlgamma", Mvlgamma, function=_mvlgamma, inplace="mvlgamma_")
SPECIAL["multigammaln"] = mvlgamma


# ------------------------------------------------------------------------- error functions
class Erfc(Overload):
    """1 - erf x: d/dx = -2/√π e^(-x²)."""

    node_name = "ErfcBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (-(x * x)).exp() * (-2 / _SQRT_PI)


erfc = declare("erfc", Erfc, kernel=_kernel("erfc"), dtype=FLOAT, inplace="erfc_")
SPECIAL["erfc"] = erfc


class Erfinv(Overload):
    """The inverse of erf: d/dx = √π/2 e^(erfinv(x)²)."""

    node_name = "ErfinvBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        y = x.erfinv()
        return grad * (y * y).exp() * (_SQRT_PI / 2)


erfinv = declare("erfinv", Erfinv, kernel=_kernel("erfinv"), dtype=FLOAT, inplace="erfinv_")
SPECIAL["erfinv"] = erfinv


class Erfcx(Overload):
    """The scaled complementary error function e^(x²) erfc x: d/dx = 2x erfcx(x) - 2/√π."""

    node_name = "SpecialErfcxBackward0"
    saved_fields = ("self", "result")
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * (2 * x * y - 2 / _SQRT_PI)


SPECIAL["erfcx"] = declare("special_erfcx", Erfcx, kernel=_kernel("erfcx"), dtype=FLOAT,
                           methods=(), functions=())


def _ndtr(input: Tensor) -> Tensor:
    """The standard normal distribution function, (1 + erf(x/√2)) / 2."""
    d = _floating(input, "special_ndtr")
    x = input if d is input._data else wrap(d)
    mul = namespace_of(x).ops.aten.mul.Scalar
    return mul(mul(x, math.sqrt(0.5)).erf() + 1, 0.5)


SPECIAL["ndtr"] = declare("special_ndtr", function=_ndtr, methods=(), functions=())


class Ndtri(Overload):
    """The inverse of ndtr: d/dx = √(2π) e^(y²/2) with y the result."""

    node_name = "SpecialNdtriBackward0"
    saved_fields = ("result",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (y * y / 2).exp() * _SQRT_2PI


SPECIAL["ndtri"] = declare("special_ndtri", Ndtri, kernel=_kernel("ndtri"), dtype=FLOAT,
                           methods=(), functions=())


class LogNdtr(Overload):
    """log ndtr(x): d/dx = e^(-x²/2 - y) / √(2π) with y the result."""

    node_name = "SpecialLogNdtrBackward0"
    saved_fields = ("self", "result")
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * (-(y + x * x / 2)).exp() / _SQRT_2PI


def _erfcx_float32(x: np.ndarray) -> np.ndarray:
    """erfcx(x) for x >= 0 as torch's float32 kernel gives it: its argument reaches the
    approximation through y = 400 / (4 + x) rounded to float32 (and through float32 x² in the
    continued fraction beyond 50), which moves the result by an ulp; evaluated at that
    rounded argument in float64, it rounds to torch's value."""
    f, f64 = np.float32, np.float64
    y100 = f(400) / (f(4) + x)
    near = scipy_special().erfcx(400 / y100.astype(f64) - 4)
    xx = (x * x).astype(f64)
    far = f64(f(1 / math.sqrt(math.pi))) * (xx * (xx + 4.5) + 2) / \
        (x.astype(f64) * (xx * (xx + 5) + 3.75))
    return np.where(x > 50, far, near).astype(f)


def _log_ndtr_kernel(d: np.ndarray) -> np.ndarray:
    # In float32, torch's result is off the true one by an ulp or two, and the second
    # derivative, -(y'(x + y')), cancels to magnify that: its float32 steps are followed here.
    if d.dtype != np.float32:
        return _kernel("log_ndtr")(d)
    f = np.float32
    with np.errstate(all="ignore"):
        t = d * f(math.sqrt(0.5))
        low = np.log(_erfcx_float32(-t) / f(2)) - t * t
        high = np.log1p(-_kernel("erfc")(t) / f(2))
        return np.where(d < -1, low, high)


SPECIAL["log_ndtr"] = declare("special_log_ndtr", LogNdtr, kernel=_log_ndtr_kernel,
                              dtype=FLOAT, methods=(), functions=())


# ---------------------------------------------------------------- modified Bessel functions
class I0(Overload):
    """The modified Bessel function of the first kind, order 0: d/dx = I₁(x)."""

    node_name = "I0Backward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * namespace_of(grad).special.i1(x)


i0 = declare("i0", I0, kernel=_kernel("i0"), dtype=FLOAT, inplace="i0_")
SPECIAL["i0"] = i0


class I0e(Overload):
    """e^(-|x|) I₀(x): d/dx = i1e(x) - sign(x) i0e(x)."""

    node_name = "SpecialI0EBackward0"
    saved_fields = ("self", "result")
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * (namespace_of(grad).special.i1e(x) - x.sign() * y)


SPECIAL["i0e"] = declare("special_i0e", I0e, kernel=_kernel("i0e"), dtype=FLOAT, methods=(),
                         functions=())


def _near_zero(x, value: float, expr):
    """``expr(x)``, but ``value`` (its limit at 0) where |x| is below the dtype's epsilon, where
    expr loses its digits; expr is evaluated at epsilon there, so that a gradient of this one
    stays finite (torch's rule)."""
    ns = namespace_of(x)
    eps = ns.finfo(x.dtype).eps
    big = x.abs() > eps
    safe = ns.where(big, x, ns.full_like(x, eps))
    return ns.where(big, expr(safe), ns.full_like(x, value))


class I1(Overload):
    """The modified Bessel function of the first kind, order 1: d/dx = I₀(x) - I₁(x)/x (1/2 at
    0)."""

    node_name = "SpecialI1Backward0"
    saved_fields = ("self", "result")
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * _near_zero(x, 0.5, lambda z: z.i0() - y / z)


SPECIAL["i1"] = declare("special_i1", I1, kernel=_kernel("i1"), dtype=FLOAT, methods=(),
                        functions=())


class I1e(Overload):
    """e^(-|x|) I₁(x): d/dx = i0e(x) - i1e(x) (sign(x) + 1/x) (1/2 at 0)."""

    node_name = "SpecialI1EBackward0"
    saved_fields = ("self", "result")
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        i0e = namespace_of(grad).special.i0e
        return grad * _near_zero(x, 0.5, lambda z: i0e(z) - y * (z.sign() + z.reciprocal()))


SPECIAL["i1e"] = declare("special_i1e", I1e, kernel=_kernel("i1e"), dtype=FLOAT, methods=(),
                         functions=())


# ----------------------------------------------------------------------------- the others
class Sinc(Overload):
    """sin(πx)/(πx), 1 at 0: d/dx = (πx cos πx - sin πx) / (πx²), 0 where πx² is 0."""

    node_name = "SincBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        ns = namespace_of(grad)
        px, pxx = x * math.pi, x * x * math.pi
        slope = (px * px.cos() - px.sin()) / pxx
        # (0 where πx² underflows to 0, not only at 0, as torch gives)
        return ns.where(pxx == 0, ns.zeros_like(slope), grad * slope)


def _sinc_kernel(d: np.ndarray) -> np.ndarray:
    return np.sinc(d.astype(np.float64, copy=False)).astype(d.dtype, copy=False)


sinc = declare("sinc", Sinc, kernel=_sinc_kernel, dtype=FLOAT, inplace="sinc_")
SPECIAL["sinc"] = sinc


class Entr(Overload):
    """-x log x (0 at 0, -inf below): d/dx = -(1 + log x)."""

    node_name = "SpecialEntrBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * -(x.log() + 1)


SPECIAL["entr"] = declare("special_entr", Entr, kernel=_kernel("entr"), dtype=FLOAT,
                          methods=(), functions=())


class Logit(Overload):
    """log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps is given: d/dx =
    1 / (x (1 - x)), 0 outside the clamp's range (nan outside [0, 1] without eps)."""

    node_name = "LogitBackward0"
    args = ("self", "eps")
    tensor_positions = (0,)
    saved_fields = ("self",)
    saved_attrs = ("eps",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        eps = ctx.eps
        g = grad / (x * (1 - x))
        ns = namespace_of(grad)
        if eps is None:
            out, lo, hi = math.nan, 0.0, 1.0
        else:
            out, lo, hi = 0.0, eps, 1 - eps
        return ns.where((x < lo) | (x > hi), ns.full_like(g, out), g), None


def _logit(input: Tensor, eps: float | None = None) -> Tensor:
    """log(x / (1 - x)), x clamped to [eps, 1 - eps] first when ``eps`` is given."""
    d = _floating(input, "logit")
    z = d if eps is None else np.clip(d, eps, 1 - eps)
    with np.errstate(all="ignore"):
        out = np.log(z / (1 - z))
    return dispatch(Logit, out.astype(d.dtype, copy=False), (input, eps))


logit = declare("logit", Logit, function=_logit, inplace="logit_")
SPECIAL["logit"] = logit


# --------------------------------------------------------------------- two-argument functions
def binary_floating(a, b, name: str) -> tuple:
    """The NumPy operands of ``name(a, b)`` (a tensor and a tensor or number, either way round)
    under torch's promotion, integer and bool results computed in the default dtype; and the
    result's dtype."""
    if type(a) is Tensor:
        ops = binary_operands(a, b)
        if ops is None:
            raise not_a_tensor(b, name, "other", 2)
        ad, bd = ops
        dt = ad.dtype
    elif type(b) is Tensor and isinstance(a, (bool, int, float)):
        bd, ad = binary_operands(b, a)
        dt = bd.dtype
    else:
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({type(a).__name__}, {type(b).__name__}), but expected one of "
                        "(Tensor, Tensor), (Number, Tensor) or (Tensor, Number)")
    if dt.kind not in "fV":
        dt = _dtype.get_default_dtype()._np
    for t in (a, b):
        if type(t) is Tensor and t._vc and t._vc[0]:
            read_history(a, b)
            break
    return ad, bd, dt


def _binary_kernel(name: str, ad, bd, dt) -> np.ndarray:
    f64 = np.float64
    with np.errstate(all="ignore"):
        out = getattr(scipy_special(), name)(np.asarray(ad, f64), np.asarray(bd, f64))
    return np.asarray(out).astype(dt, copy=False)


def _three_overloads(a, b, both: type, number_self: type, number_other: type):
    """The overload of a two-argument op by which arguments are tensors."""
    if type(a) is not Tensor:
        return number_self
    return both if type(b) is Tensor else number_other


class Xlogy(Overload):
    """x log y, 0 where x is 0 (unless y is nan): d/dx = log y (0 where x = y = 0),
    d/dy = x / y."""

    node_name = "XlogyBackward0"
    args = ("self", "other")
    saved_fields = ("self", "other")
    tensor_positions = (0, 1)

    @staticmethod
    def jvp(ctx, tx, ty):
        x, y = ctx.saved_tensors
        return _xlogy_tangent(tx, ty, x, y, "xlogy")

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return _xlogy_grads(ctx, grad, x, y, "xlogy")


def _xlogy_tangent(tx, ty, x, y, first: str):
    """The forward-mode rule of xlogy (``first="xlogy"``) or xlog1py: xlogy(tx, y) + ty x / y
    (y + 1 for xlog1py), torch's rule: unlike the gradient, it is not 0 where x = y = 0."""
    out = None
    if tx is not None:
        out = namespace_of(tx).xlogy(tx, y) if first == "xlogy" else \
            namespace_of(tx).special.xlog1py(tx, y)
    if ty is not None:
        term = ty * x / (y if first == "xlogy" else y + 1)
        out = term if out is None else out + term
    return out


def _xlogy_grads(ctx, grad, x, y, first: str) -> tuple:
    """The gradients of xlogy (``first="xlogy"``) or xlog1py (y + 1 in place of y): log y in x,
    but 0 where x and y are both 0 (as torch gives), x / y in y."""
    ns = namespace_of(grad)
    arg = y if first == "xlogy" else y + 1
    gx = gy = None
    if ctx.needs_input_grad[0]:
        if isinstance(y, type(grad)):
            keep = ((x != 0) | (arg != 0)).to(grad.dtype)
        else:
            keep = (x != 0).to(grad.dtype) if arg == 0 else ns.ones_like(grad)
        gx = grad * (ns.xlogy(keep, y) if first == "xlogy" else ns.special.xlog1py(keep, y))
    if ctx.needs_input_grad[1]:
        gy = grad * x / arg
    return gx, gy


class XlogyNumberSelf(Overload):
    """xlogy of a number and a tensor."""

    node_name = "XlogyBackward1"
    args = ("self", "other")
    tensor_positions = (1,)
    saved_fields = ("other",)
    saved_attrs = ("self",)

    @staticmethod
    def forward(x, y):
        return namespace_of(y).xlogy(x, y)

    @staticmethod
    def jvp(ctx, tx, ty):
        (y,) = ctx.saved_tensors
        x = ctx.self
        return _xlogy_tangent(tx, ty, x, y, "xlogy")

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return _xlogy_grads(ctx, grad, ctx.self, y, "xlogy")


class XlogyNumberOther(Overload):
    """xlogy of a tensor and a number."""

    node_name = "XlogyBackward2"
    args = ("self", "other")
    tensor_positions = (0,)
    saved_fields = ("self",)
    saved_attrs = ("other",)

    @staticmethod
    def jvp(ctx, tx, ty):
        (x,) = ctx.saved_tensors
        y = ctx.other
        return _xlogy_tangent(tx, ty, x, y, "xlogy")

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return _xlogy_grads(ctx, grad, x, ctx.other, "xlogy")


def _xlogy(input, other) -> Tensor:
    """x log y, 0 where x is 0 (unless y is nan)."""
    ad, bd, dt = binary_floating(input, other, "xlogy")
    out = _binary_kernel("xlogy", ad, bd, dt)
    return dispatch(_three_overloads(input, other, Xlogy, XlogyNumberSelf, XlogyNumberOther),
                    out, (input, other))


xlogy = declare("xlogy", Xlogy, XlogyNumberSelf, XlogyNumberOther, function=_xlogy,
                inplace="xlogy_")
SPECIAL["xlogy"] = xlogy


class Xlog1py(Overload):
    """x log(1 + y), 0 where x is 0 (unless y is nan): d/dx = log(1 + y), d/dy = x / (1 + y)."""

    node_name = "SpecialXlog1PyBackward0"
    args = ("self", "other")
    saved_fields = ("self", "other")
    tensor_positions = (0, 1)

    @staticmethod
    def jvp(ctx, tx, ty):
        x, y = ctx.saved_tensors
        return _xlogy_tangent(tx, ty, x, y, "xlog1py")

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return _xlogy_grads(ctx, grad, x, y, "xlog1py")


class Xlog1pyNumberSelf(XlogyNumberSelf):
    """xlog1py of a number and a tensor."""

    node_name = "SpecialXlog1PyBackward1"

    @staticmethod
    def forward(x, y):
        return namespace_of(y).special.xlog1py(x, y)

    @staticmethod
    def jvp(ctx, tx, ty):
        (y,) = ctx.saved_tensors
        return _xlogy_tangent(tx, ty, ctx.self, y, "xlog1py")

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return _xlogy_grads(ctx, grad, ctx.self, y, "xlog1py")


class Xlog1pyNumberOther(XlogyNumberOther):
    """xlog1py of a tensor and a number."""

    node_name = "SpecialXlog1PyBackward2"

    @staticmethod
    def jvp(ctx, tx, ty):
        (x,) = ctx.saved_tensors
        return _xlogy_tangent(tx, ty, x, ctx.other, "xlog1py")

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return _xlogy_grads(ctx, grad, x, ctx.other, "xlog1py")


def _xlog1py(input, other) -> Tensor:
    """x log(1 + y), 0 where x is 0 (unless y is nan)."""
    ad, bd, dt = binary_floating(input, other, "special_xlog1py")
    out = _binary_kernel("xlog1py", ad, bd, dt)
    return dispatch(_three_overloads(input, other, Xlog1py, Xlog1pyNumberSelf,
                                     Xlog1pyNumberOther), out, (input, other))


SPECIAL["xlog1py"] = declare("special_xlog1py", Xlog1py, Xlog1pyNumberSelf, Xlog1pyNumberOther,
                             function=_xlog1py, methods=(), functions=())


def _zeta_self_grad(ctx) -> None:
    if ctx.needs_input_grad[0]:
        raise NotImplementedError("the derivative for 'zeta' is not implemented.")


class Zeta(Overload):
    """The Hurwitz zeta function ζ(x, q) = Σ_k (k + q)^-x: d/dq = -x ζ(x + 1, q); torch has no
    derivative in x."""

    node_name = "SpecialZetaBackward0"
    args = ("self", "other")
    saved_fields = ("self", "other")
    tensor_positions = (0, 1)

    @staticmethod
    def backward(ctx, grad):
        _zeta_self_grad(ctx)
        x, q = ctx.saved_tensors
        return None, grad * -x * namespace_of(grad).special.zeta(x + 1, q)


class ZetaNumberSelf(Overload):
    """ζ of a number and a tensor."""

    node_name = "SpecialZetaBackward1"
    args = ("self", "other")
    tensor_positions = (1,)
    saved_fields = ("other",)
    saved_attrs = ("self",)

    @staticmethod
    def forward(x, q):
        return namespace_of(q).special.zeta(x, q)

    @staticmethod
    def backward(ctx, grad):
        (q,) = ctx.saved_tensors
        x = ctx.self
        return None, grad * -x * namespace_of(grad).special.zeta(x + 1, q)


class ZetaNumberOther(Overload):
    """ζ of a tensor and a number."""

    node_name = "SpecialZetaBackward2"
    args = ("self", "other")
    tensor_positions = (0,)  # (it saves nothing: torch has no derivative in self)

    @staticmethod
    def backward(ctx, grad):
        _zeta_self_grad(ctx)
        return None, None


def _zeta(input, other) -> Tensor:
    """The Hurwitz zeta function ζ(input, other)."""
    ad, bd, dt = binary_floating(input, other, "special_zeta")
    out = _binary_kernel("zeta", ad, bd, dt)
    return dispatch(_three_overloads(input, other, Zeta, ZetaNumberSelf, ZetaNumberOther),
                    out, (input, other))


SPECIAL["zeta"] = declare("special_zeta", Zeta, ZetaNumberSelf, ZetaNumberOther,
                          function=_zeta, methods=(), functions=())


def _igamma_op(name: str, kernel: str, sign: int, doc: str):
    """igamma or igammac: the regularized lower or upper incomplete gamma function; torch
    differentiates it in ``other`` (x) only: d/dx = ±x^(a-1) e^-x / Γ(a)."""
    class Igamma(Overload):
        __doc__ = doc
        node_name = f"{name.capitalize()}Backward0"
        args = ("self", "other")
        saved_fields = ("self", "other")
        tensor_positions = (0, 1)

        @staticmethod
        def backward(ctx, grad):
            if ctx.needs_input_grad[0]:
                raise NotImplementedError(f"the derivative for '{name}: input' is not "
                                          "implemented.")
            a, x = ctx.saved_tensors
            return None, grad * ((a - 1) * x.log() - x - a.lgamma()).exp() * sign

    Igamma.__name__ = Igamma.__qualname__ = name.capitalize()

    def function(input: Tensor, other: Tensor) -> Tensor:
        if type(input) is not Tensor:
            raise not_a_tensor(input, name)
        if type(other) is not Tensor:
            raise not_a_tensor(other, name, "other", 2)
        ad, bd = binary_operands(input, other)
        if ad.dtype.kind not in "fV":
            raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                      f"'{_dtype.FROM_NUMPY[ad.dtype]._short}'")
        if input._vc and input._vc[0] or other._vc and other._vc[0]:
            read_history(input, other)
        return dispatch(Igamma, _binary_kernel(kernel, ad, bd, ad.dtype), (input, other))

    function.__doc__ = doc
    return declare(name, Igamma, function=function, inplace=f"{name}_")


igamma = _igamma_op("igamma", "gammainc", 1, "The regularized lower incomplete gamma "
                    "function P(a, x).")
igammac = _igamma_op("igammac", "gammaincc", -1, "The regularized upper incomplete gamma "
                     "function Q(a, x) = 1 - P(a, x).")
SPECIAL.update(gammainc=igamma, gammaincc=igammac)


# ------------------------------------------------------- functions torch does not differentiate
def _not_differentiated(name: str, kernel, doc: str):
    """A one-input torch.special function without a derivative in torch: its result never
    requires grad."""
    def function(input: Tensor) -> Tensor:
        d = _floating(input, f"special_{name}")
        return wrap(kernel(d))

    function.__doc__ = doc
    SPECIAL[name] = declare(f"special_{name}", function=function, methods=(), functions=())


def _airy_ai(d: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return scipy_special().airy(d.astype(np.float64, copy=False))[0].astype(d.dtype)


# The coefficients of the rational approximations P(z) = pp/pq, Q(z) = qp/qq (z = 25/x²) of the
# Hankel asymptotic form J0, Y1 ~ √(2/(πx)) (P cos ∓ (5/x) Q sin)(x - phase) that torch uses for
# x > 5, highest power first. torch evaluates qq without the leading z⁷ term of the classical
# approximation, so its values there differ from scipy's in the sixth digit: they are evaluated
# here as torch does.
_J0_ASYMPTOTIC = (
    (7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
     5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
     9.99999999999999997821e-01),
    (9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
     5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
     1.00000000000000000218e+00),
    (-1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
     -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
     -5.14105326766599330220e+01, -6.05014350600728481186e+00),
    (6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
     7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
     2.42005740240291393179e+02),
)
_Y1_ASYMPTOTIC = (
    (7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
     5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
     1.00000000000000000254e+00),
    (5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
     5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
     9.99999999999999997461e-01),
    (5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
     3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
     2.11688757100572135698e+02, 2.52070205858023719784e+01),
    (7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
     9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
     3.36093607810698293419e+02),
)


def _bessel(name: str, coefficients: tuple, order: int):
    """J0 (order 0, even) or Y1 (order 1, nan below 0): scipy's up to 5, torch's asymptotic
    form beyond."""
    def kernel(d: np.ndarray) -> np.ndarray:
        out = _kernel(name)(d)
        x = np.abs(d) if order == 0 else d
        far = x > 5
        if far.any():
            x = x[far]
            pp, pq, qp, qq = (np.polyval(np.asarray(c, d.dtype), 25 / (x * x))
                              for c in coefficients)
            phase = x - (math.pi / 4 if order == 0 else 3 * math.pi / 4)
            p, q = pp / pq, 5 / x * (qp / qq)
            wave = p * np.cos(phase) - q * np.sin(phase) if order == 0 else \
                p * np.sin(phase) + q * np.cos(phase)
            out[far] = wave * math.sqrt(2 / math.pi) / np.sqrt(x)
        return out

    return kernel


_not_differentiated("airy_ai", _airy_ai, "The Airy function Ai(x).")
_not_differentiated("bessel_j0", _bessel("j0", _J0_ASYMPTOTIC, 0),
                    "The Bessel function of the first kind, order 0.")
_not_differentiated("bessel_y1", _bessel("y1", _Y1_ASYMPTOTIC, 1),
                    "The Bessel function of the second kind, order 1.")
for _name, _scipy, _doc in (
        ("bessel_j1", "j1", "The Bessel function of the first kind, order 1."),
        ("bessel_y0", "y0", "The Bessel function of the second kind, order 0."),
        ("modified_bessel_i0", "i0", "The modified Bessel function of the first kind, order 0."),
        ("modified_bessel_i1", "i1", "The modified Bessel function of the first kind, order 1."),
        ("modified_bessel_k0", "k0", "The modified Bessel function of the second kind, order 0."),
        ("modified_bessel_k1", "k1", "The modified Bessel function of the second kind, order 1."),
        ("scaled_modified_bessel_k0", "k0e", "e^x K₀(x)."),
        ("scaled_modified_bessel_k1", "k1e", "e^x K₁(x)."),
):
    _not_differentiated(_name, _kernel(_scipy), _doc)
_not_differentiated("spherical_bessel_j0", _kernel("spherical_jn", 0),
                    "The spherical Bessel function of the first kind, order 0: sin x / x.")
SPECIAL.update(POLYNOMIALS)


# ----------------------------------------------------------- torch.special's names of other ops
def _alias(name: str):
    """torch.special's name for the op ``name`` of a family that may not have loaded yet (it
    loads on first use): the op is found when the alias is first called, so that loading this
    family loads no other."""
    def function(*args, **kwargs):
        return lookup(name).function(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"torch.special's name for ``{name}``."
    return function


_LOADED = {op.name: op.function for op in loaded()}
for _name, _target in (("expit", "sigmoid"), ("erf", "erf"), ("exp2", "exp2"),
                       ("expm1", "expm1"), ("log1p", "log1p"), ("logsumexp", "logsumexp"),
                       ("softmax", "softmax"), ("log_softmax", "log_softmax"), ("round", "round")):
    SPECIAL[_name] = _LOADED.get(_target) or _alias(_target)
