"""erf, gelu and silu.

gelu's exact form needs the error function, which NumPy lacks: ``erf_kernel`` evaluates it with
W. J. Cody's rational approximations, and ``erf`` is a differentiable op of its own so that
gelu's backward can be differentiated again.
"""

from __future__ import annotations

import math

import numpy as np

from ...._tensor import Tensor, wrap
from ..._op import ELEMENTWISE, FLOAT, Overload, declare, dispatch, in_float32, is_half
from .._builtin import namespace_of, not_differentiable_checks
from ._common import check_tensor, float_kernel

__all__ = ["erf", "erf_kernel", "gelu", "gelu_backward", "silu", "silu_backward"]

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


class Erf(Overload):
    """erf(x) = 2/√π ∫₀ˣ exp(-t²) dt: d/dx = 2/√π exp(-x²)."""

    node_name = "ErfBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE  # tangent * 2/√π exp(-x²)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ((x * x).neg().exp() * _TWO_OVER_SQRT_PI)


erf = declare("erf", Erf, kernel=erf_kernel, dtype=FLOAT, inplace="erf_")


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


class Gelu(Overload):
    """x Φ(x) (or its tanh approximation): dx = gelu_backward(grad, x) = grad * gelu'(x)."""

    node_name = "GeluBackward0"
    args = ("self", "approximate")
    saved_fields = ("self",)
    saved_attrs = ("approximate",)
    tensor_positions = (0,)
    jvp = ELEMENTWISE  # gelu_backward(tangent, x)

    @staticmethod
    def forward(x, approximate="none"):
        return namespace_of(x).ops.aten.gelu(x, approximate=approximate)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return namespace_of(grad).ops.aten.gelu_backward(grad, x,
                                                         approximate=ctx.approximate), None


class GeluBackward(Overload):
    """gelu's gradient as one op (torch's ``gelu_backward``), f(g, x) = g gelu'(x). Its own
    gradients: d/dg = f(gg, x), d/dx = gg g gelu''(x)."""

    node_name = "GeluBackwardBackward0"
    args = ("grad_output", "self", "approximate")
    saved_fields = ("grad_output", "self")
    saved_attrs = ("approximate",)
    tensor_positions = (0, 1)

    @staticmethod
    def forward(grad, x, approximate="none"):
        return namespace_of(x).ops.aten.gelu_backward(grad, x, approximate=approximate)

    @staticmethod
    def backward(ctx, gg):
        grad, x = ctx.saved_tensors
        needs = ctx.needs_input_grad
        approximate = ctx.approximate
        return (namespace_of(gg).ops.aten.gelu_backward(gg, x, approximate=approximate)
                if needs[0] else None,
                gg * grad * _gelu_second_derivative(x, approximate) if needs[1] else None, None)

    @staticmethod
    def jvp(ctx, tg, tx, _):
        grad, x = ctx.saved_tensors
        approximate = ctx.approximate
        result = None
        if tg is not None:
            result = namespace_of(tg).ops.aten.gelu_backward(tg, x, approximate=approximate)
        if tx is not None:
            term = tx * grad * _gelu_second_derivative(x, approximate)
            result = term if result is None else result + term
        return result


def _gelu_backward(grad: Tensor, x: Tensor, approximate: str = "none") -> Tensor:
    d = grad._data * _gelu_derivative_kernel(x._data, approximate)
    return dispatch(GeluBackward, np.asarray(d, grad._data.dtype), (grad, x, approximate))


def _gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """x Φ(x), with Φ the standard normal CDF; ``approximate='tanh'`` uses torch's tanh form."""
    check_tensor(x, "gelu")
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    d = x._data
    float_kernel(d, "GeluKernelImpl")
    if is_half(d):
        return in_float32(Gelu, _gelu, (x, approximate))
    return dispatch(Gelu, _gelu_kernel(d, approximate), (x, approximate))


gelu = declare("gelu", Gelu, function=_gelu, methods=(), functions=())
gelu_backward = declare("gelu_backward", GeluBackward, function=_gelu_backward, methods=(),
                        functions=())


# ---------------------------------------------------------------------------------- silu
def _sigmoid_of(d: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-d))


class Silu(Overload):
    """x σ(x): dx = grad * σ(x) (1 + x (1 - σ(x)))."""

    node_name = "SiluBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE  # tangent * silu'(x)

    @staticmethod
    def forward(x):
        return namespace_of(x).ops.aten.silu(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        ns = namespace_of(grad)
        if ns.is_grad_enabled():
            # As torch: a gradient that will be differentiated again is made of tensor ops
            # (silu_backward has no derivative)
            s = x.sigmoid()
            return grad * (s * (x * (1 - s) + 1))
        return ns.ops.aten.silu_backward(grad, x)


def _silu(x: Tensor) -> Tensor:
    """x σ(x) elementwise (also called swish)."""
    check_tensor(x, "silu")
    d = x._data
    float_kernel(d, "silu_cpu")
    if is_half(d):
        return in_float32(Silu, _silu, (x,))
    return dispatch(Silu, d * _sigmoid_of(d), (x,))


def _silu_backward(grad: Tensor, x: Tensor) -> Tensor:
    not_differentiable_checks("silu_backward", grad, x)
    d = x._data
    s = _sigmoid_of(d)
    return wrap(grad._data * (s * (1 + d * (1 - s))))


silu = declare("silu", Silu, function=_silu, methods=(), functions=())
silu_backward = declare("silu_backward", function=_silu_backward, methods=(), functions=())
