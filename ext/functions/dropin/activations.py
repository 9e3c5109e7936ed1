"""Activations that save less than their composites: silu, mish, gelu_tanh, hardswish,
hardsigmoid, hardmish. Each backward is written from the saved input with differentiable ops, so
double backward is exact (the hard ones: zero almost everywhere)."""

from __future__ import annotations

import math

from ..builtin._builtin import namespace_of
from ._base import PackFunction, documented, floating

__all__ = ["Silu", "Mish", "GeluTanh", "Hardswish", "Hardsigmoid", "Hardmish", "silu", "mish",
           "gelu_tanh", "hardswish", "hardsigmoid", "hardmish"]

_K = math.sqrt(2.0 / math.pi)  # gelu's tanh approximation: tanh(K (x + C x^3))
_C = 0.044715


def _silu_grad(x):
    s = x.sigmoid()
    return s * (1 + x * (1 - s))


class Silu(PackFunction):
    """silu(x) = x * sigmoid(x)."""

    reference = "F.silu; x * sigmoid(x)"
    nan_inf = "as F.silu: silu(-inf) = nan, its gradient at +inf nan"
    saves = "x (the composite: x and sigmoid(x))"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x.sigmoid()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * _silu_grad(x)


def _softplus(x):
    # softplus with torch's threshold 20 (x itself above it); exp is clamped so that the branch
    # not taken stays finite and its gradient 0, not nan
    return namespace_of(x).where(x > 20, x, x.clamp(max=20).exp().log1p())


class Mish(PackFunction):
    """mish(x) = x * tanh(softplus(x))."""

    reference = "F.mish; x * tanh(softplus(x))"
    nan_inf = "propagates nan; mish(+inf) = +inf, mish(-inf) = nan as F.mish"
    saves = "x (the composite: x and softplus(x))"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * _softplus(x).tanh()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        t = _softplus(x).tanh()
        return grad * (t + x * x.sigmoid() * (1 - t * t))


class GeluTanh(PackFunction):
    """gelu with the tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""

    reference = "F.gelu(approximate='tanh')"
    saves = "x (the composite: four tensors)"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (1 + (_K * (x + _C * x * x * x)).tanh())

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        t = (_K * (x + _C * x * x * x)).tanh()
        inner = _K * (1 + 3 * _C * x * x)
        return grad * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * inner)


class Hardswish(PackFunction):
    """hardswish(x) = x * clamp(x + 3, 0, 6) / 6."""

    reference = "F.hardswish"
    double_backward = "exact (1/3 between the bounds, 0 outside)"
    boundary = "as F.hardswish: gradient 0 at x = -3, 1 at x = 3"
    saves = "x (the composite: three tensors)"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * (x + 3).clamp(0, 6) / 6

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        ns = namespace_of(x)
        inside = grad * (x / 3 + 0.5)
        return ns.where(x <= -3, ns.zeros_like(grad), ns.where(x < 3, inside, grad))


class Hardsigmoid(PackFunction):
    """hardsigmoid(x) = clamp(x + 3, 0, 6) / 6."""

    reference = "F.hardsigmoid"
    double_backward = "zero almost everywhere"
    boundary = "as F.hardsigmoid: gradient 0 at x = -3 and x = 3"
    nan_inf = "nan gives nan, its gradient 0 (the mask is False)"
    saves = "a bool mask, one byte per element (F.hardsigmoid saves x)"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward((x > -3) & (x < 3))
        return (x + 3).clamp(0, 6) / 6

    @staticmethod
    def backward(ctx, grad):
        (inside,) = ctx.saved_tensors
        ns = namespace_of(grad)
        return ns.where(inside, grad / 6, ns.zeros_like(grad))


class Hardmish(PackFunction):
    """hardmish(x) = 0.5 x clamp(x + 2, 0, 2) (no native op)."""

    reference = "0.5 * x * clamp(x + 2, 0, 2)"
    double_backward = "exact (1 between the bounds, 0 outside)"
    boundary = "as the composite (clamp passes at its bounds): -1 at x = -2, 1 at x = 0"
    saves = "x"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.5 * x * (x + 2).clamp(0, 2)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        ns = namespace_of(x)
        return ns.where(x < -2, ns.zeros_like(grad), ns.where(x <= 0, grad * (x + 1), grad))


@documented(Silu)
def silu(x):
    """x * sigmoid(x), saving only x."""
    floating("silu", "x", x)
    return Silu.apply(x)


@documented(Mish)
def mish(x):
    """x * tanh(softplus(x)), saving only x."""
    floating("mish", "x", x)
    return Mish.apply(x)


@documented(GeluTanh)
def gelu_tanh(x):
    """gelu's tanh approximation, saving only x."""
    floating("gelu_tanh", "x", x)
    return GeluTanh.apply(x)


@documented(Hardswish)
def hardswish(x):
    """x * clamp(x + 3, 0, 6) / 6, with torch's gradient at the bounds."""
    floating("hardswish", "x", x)
    return Hardswish.apply(x)


@documented(Hardsigmoid)
def hardsigmoid(x):
    """clamp(x + 3, 0, 6) / 6, saving a bool mask."""
    floating("hardsigmoid", "x", x)
    return Hardsigmoid.apply(x)


@documented(Hardmish)
def hardmish(x):
    """0.5 x clamp(x + 2, 0, 2)."""
    floating("hardmish", "x", x)
    return Hardmish.apply(x)
