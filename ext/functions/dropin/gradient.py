"""Ops that change only the gradient: grad_reverse (the gradient reversal layer) and grad_scale.
Both return a view of their input (never the input object itself, which a later in-place op
would refuse), save nothing, and take their factor as a number on ctx."""

from __future__ import annotations

from ._base import PackFunction, documented, floating

__all__ = ["GradReverse", "GradScale", "grad_reverse", "grad_scale"]


class GradReverse(PackFunction):
    """Identity forward; backward multiplies the gradient by -alpha."""

    reference = "(-alpha * x) + ((1 + alpha) * x).detach()"
    double_backward = "exact"
    boundary = "-"
    output = "view"
    saves = "nothing (alpha is a number on ctx)"

    @staticmethod
    def forward(ctx, x, alpha=1.0):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return -ctx.alpha * grad, None


class GradScale(PackFunction):
    """Identity forward; backward multiplies the gradient by scale (a number or a 0-d tensor)."""

    reference = "x * s + (x * (1 - s)).detach()"
    double_backward = "exact"
    boundary = "-"
    output = "view"
    saves = "nothing (the scale is kept on ctx)"

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None


@documented(GradReverse)
def grad_reverse(x, alpha: float = 1.0):
    """x unchanged (a view); its gradient multiplied by -alpha."""
    floating("grad_reverse", "x", x)
    if hasattr(alpha, "requires_grad"):
        raise TypeError("grad_reverse(): alpha must be a number (scheduled per step), not a "
                        "tensor")
    return GradReverse.apply(x, float(alpha))


@documented(GradScale)
def grad_scale(x, scale):
    """x unchanged (a view); its gradient multiplied by scale (a number or a 0-d tensor)."""
    floating("grad_scale", "x", x)
    if hasattr(scale, "dim") and scale.dim() != 0:
        raise ValueError(f"grad_scale(): scale must be a number or a 0-d tensor, got shape "
                         f"{list(scale.shape)}")
    return GradScale.apply(x, scale)
