"""erf, gelu and silu.

gelu's exact form needs the error function, which NumPy lacks: ``erf_kernel`` evaluates it with
W. J. Cody's rational approximations, and ``erf`` is a differentiable op of its own so that
gelu's backward can be differentiated again.
"""

from __future__ import annotations

import math

import numpy as np

from ..._state import STATE
from ..._tensor import Tensor, wrap
from .._builtin import BuiltinFunction, namespace_of, record
from ..pointwise._common import SavesInput, unary
from ._common import check_tensor, float_kernel, records

__all__ = ["erf", "erf_kernel", "gelu", "gelu_backward", "silu"]

_SQRT1_2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_TANH_BETA = math.sqrt(2 / math.pi)
_TANH_KAPPA = 0.044715


# ---------------------------------------------------------------------------------- erf
# W. J. Cody's rational approximations (1969): erf on |x| <= 0.5, erfc = exp(-x²) R(x) beyond,
# accurate to a few units in the last place of a double.
_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
      3.20937758913846947e03, 1.85777706184603153e-1)
_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
      2.84423683343917062e03)
_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
      2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
      2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8)
_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
      1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
      3.43936767414372164e03, 1.23033935480374942e03)
_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
      1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)
_Q = (2.56852019228982242e00, 1.87295284992346725e00, 5.27905102951428412e-1,
      6.05183413124413191e-2, 2.33520497626869185e-3)


def _exp_neg_square(y: np.ndarray) -> np.ndarray:
    # exp(-y²) with y² split in two, so that its rounding error does not reach the result.
    head = np.trunc(y * 16) / 16
    return np.exp(-head * head) * np.exp(-(y - head) * (y + head))


def _rational(coeffs_num: tuple, coeffs_den: tuple, z: np.ndarray, n: int) -> tuple:
    num = coeffs_num[-1] * z
    den = z
    for i in range(n):
        num = (num + coeffs_num[i]) * z
        den = (den + coeffs_den[i]) * z
    return num, den


def erf_kernel(d: np.ndarray) -> np.ndarray:
    """The error function of a floating array, in its dtype."""
    y = np.asarray(np.abs(d.astype(np.float64)))  # an array even for 0-d input
    out = y.copy()  # NaN stays NaN: it falls in none of the ranges below
    small = y <= 0.5
    if small.any():
        ys = y[small]
        num, den = _rational(_A, _B, ys * ys, 3)
        out[small] = ys * (num + _A[3]) / (den + _B[3])
    mid = (y > 0.5) & (y <= 4.0)
    if mid.any():
        ym = y[mid]
        num, den = _rational(_C, _D, ym, 7)
        out[mid] = 1 - _exp_neg_square(ym) * (num + _C[7]) / (den + _D[7])
    big = y > 4.0
    if big.any():
        yb = y[big]
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            z = 1 / (yb * yb)
            num, den = _rational(_P, _Q, z, 4)
            tail = (1 / math.sqrt(math.pi) - z * (num + _P[4]) / (den + _Q[4])) / yb
            # Beyond 27, erfc underflows: erf is exactly 1.
            out[big] = 1 - np.where(yb < 27, _exp_neg_square(np.minimum(yb, 27)) * tail, 0)
    return np.copysign(out, d).astype(d.dtype, copy=False)


class Erf(SavesInput):
    """erf(x) = 2/√π ∫₀ˣ exp(-t²) dt: d/dx = 2/√π exp(-x²)."""

    node_name = "ErfBackward0"
    method = "erf"

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ((x * x).neg().exp() * _TWO_OVER_SQRT_PI)

    @staticmethod
    def jvp(args, out, tangents):
        x = args[0]
        return tangents[0] * ((x * x).neg().exp() * _TWO_OVER_SQRT_PI)


def erf(x: Tensor) -> Tensor:
    """The error function, elementwise (integers are converted to the default float)."""
    return unary(Erf, x, erf_kernel, to_float=True)


# ---------------------------------------------------------------------------------- gelu
def _gelu_kernel(d: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        inner = _TANH_BETA * (d + _TANH_KAPPA * d * d * d)
        return 0.5 * d * (1 + np.tanh(inner))
    return d * 0.5 * (1 + erf_kernel(d * _SQRT1_2))


def _gelu_derivative_kernel(d: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        x2 = d * d
        t = np.tanh(_TANH_BETA * (d + _TANH_KAPPA * x2 * d))
        return 0.5 * (1 + t) + 0.5 * d * (1 - t * t) * _TANH_BETA * (1 + 3 * _TANH_KAPPA * x2)
    cdf = 0.5 * (1 + erf_kernel(d * _SQRT1_2))
    return cdf + d * np.exp(-0.5 * d * d) * _INV_SQRT_2PI


def _gelu_derivative(x, approximate: str):
    """gelu'(x) in tensor ops: Φ(x) + x φ(x), or the derivative of the tanh form."""
    if approximate == "tanh":
        x2 = x * x
        t = ((x + x2 * x * _TANH_KAPPA) * _TANH_BETA).tanh()
        inner_slope = (x2 * (3 * _TANH_KAPPA) + 1) * _TANH_BETA
        return (t + 1) * 0.5 + x * 0.5 * (1 - t * t) * inner_slope
    cdf = (x * _SQRT1_2).erf() * 0.5 + 0.5
    return cdf + x * (x * x * -0.5).exp() * _INV_SQRT_2PI


class Gelu(BuiltinFunction):
    """x Φ(x) (or its tanh approximation): dx = grad * gelu'(x)."""

    node_name = "GeluBackward0"
    saved_fields = ("self",)
    saved_attrs = ("approximate",)
    tensor_positions = (0,)

    @staticmethod
    def forward(x, approximate="none"):
        return namespace_of(x).nn.functional.gelu(x, approximate=approximate)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.approximate = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return gelu_backward(grad, x, ctx.approximate), None

    @staticmethod
    def jvp(args, out, tangents):
        return gelu_backward(tangents[0], args[0], args[1])


def _gelu_second_derivative(x, approximate: str):
    """gelu''(x) in tensor ops: 2 φ(x) - x² φ(x), or the tanh form's second derivative."""
    if approximate == "tanh":
        x2 = x * x
        t = ((x + x2 * x * _TANH_KAPPA) * _TANH_BETA).tanh()
        sech2 = 1 - t * t
        slope = (x2 * (3 * _TANH_KAPPA) + 1) * _TANH_BETA
        curve = x * (6 * _TANH_KAPPA * _TANH_BETA)
        return sech2 * slope - x * sech2 * t * slope * slope + x * 0.5 * sech2 * curve
    pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
    return pdf * 2 - x * x * pdf


class GeluBackward(BuiltinFunction):
    """gelu's gradient as one op, f(g, x) = g gelu'(x). Its own gradients: d/dg = f(gg, x),
    d/dx = gg g gelu''(x)."""

    node_name = "GeluBackwardBackward0"
    saved_fields = ("grad_output", "self")
    saved_attrs = ("approximate",)
    tensor_positions = (0, 1)

    @staticmethod
    def forward(grad, x, approximate="none"):
        return gelu_backward(grad, x, approximate)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], inputs[1])
        ctx.approximate = inputs[2]

    @staticmethod
    def backward(ctx, gg):
        grad, x = ctx.saved_tensors
        needs = ctx.needs_input_grad
        return (gelu_backward(gg, x, ctx.approximate) if needs[0] else None,
                gg * grad * _gelu_second_derivative(x, ctx.approximate) if needs[1] else None,
                None)

    @staticmethod
    def jvp(args, out, tangents):
        grad, x, approximate = args
        tg, tx = tangents[:2]
        result = None if tg is None else gelu_backward(tg, x, approximate)
        if tx is not None:
            term = tx * grad * _gelu_second_derivative(x, approximate)
            result = term if result is None else result + term
        return result


def gelu_backward(grad, x, approximate: str):
    """grad * gelu'(x) (recorded as one node when grad or x requires grad)."""
    if type(grad) is not Tensor:
        return grad * _gelu_derivative(x, approximate)
    out = wrap(np.asarray(grad._data * _gelu_derivative_kernel(x._data, approximate),
                          grad._data.dtype))
    if STATE.grad_enabled and (grad._requires_grad or x._requires_grad) or STATE.special:
        record(GeluBackward, out, (grad, x), (grad, x, approximate))
    return out


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """x Φ(x), with Φ the standard normal CDF; ``approximate='tanh'`` uses torch's tanh form."""
    check_tensor(x, "gelu")
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    d = x._data
    float_kernel(d, "GeluKernelImpl")
    out = wrap(_gelu_kernel(d, approximate))
    if records(x):
        record(Gelu, out, (x,), (x, approximate))
    return out


# ---------------------------------------------------------------------------------- silu
def _sigmoid_of(d: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-d))


class Silu(BuiltinFunction):
    """x σ(x): dx = grad * σ(x) (1 + x (1 - σ(x)))."""

    node_name = "SiluBackward0"
    saved_fields = ("self",)

    @staticmethod
    def forward(x):
        return namespace_of(x).nn.functional.silu(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if type(grad) is Tensor and not STATE.grad_enabled:
            d = x._data
            s = _sigmoid_of(d)
            return wrap(grad._data * (s * (1 + d * (1 - s))))
        s = x.sigmoid()
        return grad * (s * (x * (1 - s) + 1))

    @staticmethod
    def jvp(args, out, tangents):
        x = args[0]
        s = x.sigmoid()
        return tangents[0] * (s * (x * (1 - s) + 1))


def silu(x: Tensor) -> Tensor:
    """x σ(x) elementwise (also called swish)."""
    check_tensor(x, "silu")
    d = x._data
    float_kernel(d, "silu_cpu")
    out = wrap(d * _sigmoid_of(d))
    if records(x):
        record(Silu, out, (x,), (x,))
    return out
