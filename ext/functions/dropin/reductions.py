"""Stable reductions: safe_logsumexp (an all -inf row gives -inf and a zero gradient, where
torch.logsumexp's gradient is nan) and log1mexp (log(1 - exp(-x)) for x > 0, with a gradient
that stays finite as x approaches 0, where the two-branch composite's is nan)."""

from __future__ import annotations

import math

from ..builtin._builtin import namespace_of
from ._base import PackFunction, documented, floating
from .normalizers import wrap_dim

__all__ = ["SafeLogsumexp", "Log1mexp", "safe_logsumexp", "log1mexp"]

_INF = float("inf")
_NAN = float("nan")
_LN2 = math.log(2.0)


def _kept(t, dims: tuple):
    """t with the reduced dims put back as size 1 (dims ascending)."""
    for d in dims:
        t = t.unsqueeze(d)
    return t


class SafeLogsumexp(PackFunction):
    """log(sum(exp(x))) over dims, shifted by the max; an all -inf row gives -inf and a zero
    gradient."""

    reference = "torch.logsumexp (its gradient on an all -inf row is nan)"
    double_backward = "exact"
    nan_inf = "an all -inf row gives -inf and gradient 0; +inf gives +inf with gradient nan at " \
        "the +inf entries (as torch.logsumexp); nan propagates"
    saves = "x and the result (as torch.logsumexp)"

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        # as torch: an infinite max shifts by 0 (nan stays, to make the result nan)
        top = x.amax(dims, keepdim=True).nan_to_num_(nan=_NAN, posinf=0.0, neginf=0.0)
        total = (x - top).exp_().sum(dims, keepdim=keepdim)
        out = total.log_().add_(top if keepdim else top.reshape(total.shape))
        ctx.save_for_backward(x, out)
        ctx.dims, ctx.keepdim = dims, keepdim
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        if not ctx.keepdim:
            out, grad = _kept(out, ctx.dims), _kept(grad, ctx.dims)
        # exp(x - out) is the softmax; an all -inf row (out = -inf) is shifted by 0, so that
        # exp(-inf) gives 0. (exp in place on the fresh difference; the product out of place:
        # exp's backward keeps its result)
        shift = out.nan_to_num(nan=_NAN, posinf=_INF, neginf=0.0)
        return (x - shift).exp_() * grad, None, None


class Log1mexp(PackFunction):
    """log(1 - exp(-x)) for x > 0, by the two-branch formula (Maechler, 2012):
    log(-expm1(-x)) for x <= ln 2, log1p(-exp(-x)) above."""

    reference = "where(x <= ln2, log(-expm1(-x)), log1p(-exp(-x))) (its gradient is nan near 0 " \
        "in float32)"
    double_backward = "exact"
    boundary = "x = 0 (+0 or -0) gives -inf with gradient +inf, the right limit"
    nan_inf = "x < 0 (outside the domain) gives nan, with the composite's finite gradient " \
        "1 / expm1(x) (at x = -inf -1, where the composite's is nan); x = +inf gives -0 with " \
        "gradient 0; nan propagates"
    saves = "x; backward is grad / expm1(x)"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ns = namespace_of(x)
        return ns.where(x <= _LN2, (-(-x).expm1()).log(), (-(-x).exp()).log1p())

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        # d/dx log(1 - e^-x) = e^-x / (1 - e^-x) = 1 / expm1(x): finite for every x > 0; at
        # x = 0 (either sign of zero) the right limit +inf, so the zero divided by is +0
        d = x.expm1()
        return grad / namespace_of(d).where(d == 0, 0.0, d)


@documented(SafeLogsumexp)
def safe_logsumexp(x, dim, keepdim: bool = False):
    """log(sum(exp(x))) over ``dim`` (an int or a tuple of ints), with a zero gradient (not nan)
    on rows that are all -inf."""
    floating("safe_logsumexp", "x", x)
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if not dims:
        raise ValueError("safe_logsumexp(): argument 'dim' must name at least one dimension")
    wrapped = tuple(wrap_dim("safe_logsumexp", x, d) for d in dims)
    for d in wrapped:
        if wrapped.count(d) > 1:
            raise RuntimeError(f"safe_logsumexp(): dim {d} appears multiple times in the list "
                               f"of dims")
    if x.dim() == 0:  # (a 0-d tensor reduces as one element, as torch.logsumexp)
        return SafeLogsumexp.apply(x.reshape(1), (0,), False).reshape(())
    return SafeLogsumexp.apply(x, tuple(sorted(wrapped)), bool(keepdim))


@documented(Log1mexp)
def log1mexp(x):
    """log(1 - exp(-x)) for x > 0, with a finite gradient as x approaches 0."""
    floating("log1mexp", "x", x)
    return Log1mexp.apply(x)
