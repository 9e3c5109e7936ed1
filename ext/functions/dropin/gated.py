"""Gated units: swiglu(a, b) = silu(a) * b and geglu(a, b) = gelu(a) * b. They save the two halves
and recompute the activation in backward (the composites also keep the activated half)."""

from __future__ import annotations

import math

from ._base import PackFunction, documented, floating, same_shape
from .activations import _C, _K, _silu_grad

__all__ = ["SwiGLU", "GeGLU", "swiglu", "geglu"]

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


class SwiGLU(PackFunction):
    """silu(a) * b."""

    reference = "F.silu(a) * b"
    saves = "a, b (the composite: a, b and silu(a))"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * a.sigmoid() * b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad * b * _silu_grad(a), grad * (a * a.sigmoid())


def _gelu(a, approximate: str):
    """gelu(a) and its derivative, from differentiable ops."""
    if approximate == "tanh":
        t = (_K * (a + _C * a * a * a)).tanh()
        return 0.5 * a * (1 + t), 0.5 * (1 + t) + 0.5 * a * (1 - t * t) * _K * (1 + 3 * _C * a * a)
    cdf = 0.5 * (1 + (a * _SQRT_HALF).erf())
    return a * cdf, cdf + a * (-0.5 * a * a).exp() * _INV_SQRT_2PI


class GeGLU(PackFunction):
    """gelu(a, approximate) * b."""

    reference = "F.gelu(a, approximate=...) * b"
    saves = "a, b (the composite: a, b and gelu(a))"

    @staticmethod
    def forward(ctx, a, b, approximate="none"):
        ctx.save_for_backward(a, b)
        ctx.approximate = approximate
        return _gelu(a, approximate)[0] * b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        value, slope = _gelu(a, ctx.approximate)
        return grad * b * slope, grad * value, None


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

