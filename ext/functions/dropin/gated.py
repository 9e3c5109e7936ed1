"""Gated units: swiglu(a, b) = silu(a) * b and geglu(a, b) = gelu(a) * b. They save the two halves
and recompute the activation in backward (the composites also keep the activated half). As the
activations' (``activations``), each backward has a plain path of differentiable ops and, when
backward is not recorded, a fast lane of in-place ops on fresh intermediates."""

from __future__ import annotations

from ._base import PackFunction, documented, floating, same_shape
from .activations import (
    _C,
    _INV_SQRT_2PI,
    _K,
    _SQRT_HALF,
    _erf_cdf,
    _gelu_slope,
    _gelu_tanh_slope,
    _recording,
    _silu_grad,
    _tanh_gate,
)

__all__ = ["SwiGLU", "GeGLU", "swiglu", "geglu"]


class SwiGLU(PackFunction):
    """silu(a) * b."""

    reference = "F.silu(a) * b"
    saves = "a, b (the composite: a, b and silu(a))"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a.sigmoid().mul_(a).mul_(b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        if _recording(grad):
            return grad * b * _silu_grad(a), grad * (a * a.sigmoid())
        # silu'(a) = s + silu(a) (1 - s), s = sigmoid(a)
        s = a.sigmoid()
        value = s * a
        slope = (1 - s).mul_(value).add_(s)
        return slope.mul_(grad).mul_(b), value.mul_(grad)


def _gelu(a, approximate: str):
    """gelu(a) and its derivative, from differentiable ops."""
    if approximate == "tanh":
        t = (_K * (a + _C * a * a * a)).tanh()
        return 0.5 * a * (1 + t), 0.5 * (1 + t) + 0.5 * a * (1 - t * t) * _K * (1 + 3 * _C * a * a)
    cdf = 0.5 * (1 + (a * _SQRT_HALF).erf())
    return a * cdf, cdf + a * (-0.5 * a * a).exp() * _INV_SQRT_2PI


def _gate(a, approximate: str):
    """gelu(a) / a, fresh: Phi(a), or sigmoid(2u) for the tanh form."""
    return _tanh_gate(a) if approximate == "tanh" else _erf_cdf(a)


class GeGLU(PackFunction):
    """gelu(a, approximate) * b."""

    reference = "F.gelu(a, approximate=...) * b"
    saves = "a, b (the composite: a, b and gelu(a))"

    @staticmethod
    def forward(ctx, a, b, approximate="none"):
        ctx.save_for_backward(a, b)
        ctx.approximate = approximate
        return _gate(a, approximate).mul_(a).mul_(b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        if _recording(grad):
            value, slope = _gelu(a, ctx.approximate)
            return grad * b * slope, grad * value, None
        slope = _gelu_tanh_slope(a) if ctx.approximate == "tanh" else _gelu_slope(a)
        value = _gate(a, ctx.approximate).mul_(a)
        return slope.mul_(grad).mul_(b), value.mul_(grad), None


@documented(SwiGLU)
def swiglu(a, b):
    """silu(a) * b for the two halves of a gated unit (same shape)."""
    floating("swiglu", "a", a)
    floating("swiglu", "b", b)
    same_shape("swiglu", a, b)
    return SwiGLU.apply(a, b)


@documented(GeGLU)
def geglu(a, b, approximate: str = "none"):
    """gelu(a) * b for the two halves of a gated unit; ``approximate`` is F.gelu's
    (``"none"``: the erf form, ``"tanh"``)."""
    floating("geglu", "a", a)
    floating("geglu", "b", b)
    same_shape("geglu", a, b)
    if approximate not in ("none", "tanh"):
        raise ValueError(f"geglu(): approximate must be 'none' or 'tanh', got {approximate!r}")
    return GeGLU.apply(a, b, approximate)

