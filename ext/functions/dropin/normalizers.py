"""Normalizing maps: sparsemax, entmax15, safe_softmax and rms_norm. The first three save only
their output (the backward rebuilds the Jacobian-vector product from it); rms_norm saves x and
its weight and recomputes the row scale."""

from __future__ import annotations

from ..builtin._builtin import namespace_of
from ._base import PackFunction, documented, floating

__all__ = ["Sparsemax", "Entmax15", "SafeSoftmax", "RMSNorm", "sparsemax", "entmax15",
           "safe_softmax", "rms_norm", "wrap_dim"]

_NEG_INF = float("-inf")


def wrap_dim(op: str, x, dim) -> int:
    """``dim`` as a non-negative index into ``x``'s dimensions (a 0-d tensor has one, as torch
    counts), refused with torch's IndexError, naming the op, when out of range."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    n = max(x.dim(), 1)
    if not -n <= dim < n:
        raise IndexError(f"{op}(): Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return dim % n


def _shifted(x, dim: int):
    """x minus its max along dim; where the row is all -inf (its max is -inf: it is shifted by
    0, and the caller gives it zeros); and the max minus itself, 0 on rows whose max is finite
    and nan on rows holding +inf or nan (which the sparse maps then give nan throughout)."""
    ns = namespace_of(x)
    top = x.amax(dim, keepdim=True)
    empty = top == _NEG_INF
    return x - ns.where(empty, 0.0, top), empty, top - top


class Sparsemax(PackFunction):
    """sparsemax(x) along dim: the Euclidean projection of x onto the probability simplex,
    max(x - tau, 0) with tau chosen so that each row sums to 1 (Martins & Astudillo, 2016)."""

    reference = "a sort-based composite (sort, cumsum, support, tau, clamp); no native op"
    double_backward = "zero almost everywhere (the Jacobian is piecewise constant)"
    boundary = "an entry exactly at the threshold (output 0) is outside the support: gradient 0"
    nan_inf = "-inf entries give 0 and gradient 0; an all -inf row gives zeros and gradient 0; " \
        "a row holding +inf or nan gives nan throughout and gradient 0"
    saves = "the output (the composite: sort values, indices and cumsum)"

    @staticmethod
    def forward(ctx, x, dim):
        ns = namespace_of(x)
        z, empty, poison = _shifted(x, dim)
        # the threshold is at least max - 1, so entries below max - 2 never enter the support:
        # clamping them keeps -inf out of the cumulative sums
        z = z.clamp(min=-2.0)
        zs = z.sort(dim, descending=True)[0]
        k = ns.ones_like(zs).cumsum(dim)
        support = 1 + k * zs > zs.cumsum(dim)  # a prefix of the sorted row
        count = support.to(zs.dtype).sum(dim, keepdim=True)
        tau = (ns.where(support, zs, 0.0).sum(dim, keepdim=True) - 1) / count
        y = ns.where(empty, 0.0, (z - tau).clamp(min=0.0) + poison)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        ns = namespace_of(grad)
        dim = ctx.dim
        inside = y > 0
        g = ns.where(inside, grad, 0.0)
        count = inside.to(grad.dtype).sum(dim, keepdim=True).clamp(min=1.0)
        return ns.where(inside, g - g.sum(dim, keepdim=True) / count, 0.0), None


class Entmax15(PackFunction):
    """1.5-entmax along dim: max(x / 2 - tau, 0) ** 2 with tau chosen so that each row sums to 1
    (Peters, Niculae & Martins, 2019), by the exact sort-based threshold."""

    reference = "the sort-based closed-form threshold (entmax.entmax15); no native op"
    double_backward = "exact, with no nan on sparse outputs (the square root of the output is " \
        "taken where it is positive only)"
    boundary = "an entry exactly at the threshold (output 0) is outside the support: gradient 0"
    nan_inf = "-inf entries give 0 and gradient 0; an all -inf row gives zeros and gradient 0; " \
        "a row holding +inf or nan gives nan throughout and gradient 0"
    saves = "the output (the composite: sort values, cumsums and the threshold)"

    @staticmethod
    def forward(ctx, x, dim):
        ns = namespace_of(x)
        z, empty, poison = _shifted(x, dim)
        # the threshold is at least max/2 - 1: entries below max/2 - 2 never enter the support
        z = (z / 2).clamp(min=-2.0)
        zs = z.sort(dim, descending=True)[0]
        k = ns.ones_like(zs).cumsum(dim)
        mean = zs.cumsum(dim) / k
        mean_sq = (zs * zs).cumsum(dim) / k
        delta = (1 - k * (mean_sq - mean * mean)) / k
        support = mean - delta.clamp(min=0.0).sqrt() <= zs  # a prefix of the sorted row
        # the threshold of the support's size, from its sums (no gather, no integer index)
        count = support.to(zs.dtype).sum(dim, keepdim=True)
        inside = ns.where(support, zs, 0.0)
        mean = inside.sum(dim, keepdim=True) / count
        spread = (inside * inside).sum(dim, keepdim=True) - count * mean * mean
        tau = mean - ((1 - spread) / count).clamp(min=0.0).sqrt()
        root = (z - tau).clamp(min=0.0)
        y = ns.where(empty, 0.0, root * root + poison)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        ns = namespace_of(grad)
        dim = ctx.dim
        inside = y > 0
        # sqrt(y) on the support and 0 off it, with a finite derivative everywhere (sqrt of 1
        # off the support, then masked): sqrt's infinite slope at 0 times 0 would be nan in a
        # second derivative
        root = ns.where(inside, ns.where(inside, y, 1.0).sqrt(), 0.0)
        g = grad * root
        total = root.sum(dim, keepdim=True)
        q = g.sum(dim, keepdim=True) / ns.where(total == 0, 1.0, total)
        return g - q * root, None


class SafeSoftmax(PackFunction):
    """softmax along dim of x where mask is True (mask broadcasts to x); a row with nothing kept
    (masked, or all -inf) gives zeros and a zero gradient, not nan."""

    reference = "torch._safe_softmax(x.masked_fill(~mask, -inf), dim); softmax elsewhere"
    double_backward = "exact"
    nan_inf = "a fully masked or all -inf row gives zeros and gradient 0; +inf or nan in a row " \
        "gives nan (as softmax)"
    saves = "the output (as softmax)"

    @staticmethod
    def forward(ctx, x, mask, dim):
        ns = namespace_of(x)
        if mask is not None:
            x = ns.where(mask, x, _NEG_INF)
        z = _shifted(x, dim)[0]
        e = z.exp()
        total = e.sum(dim, keepdim=True)
        y = e / ns.where(total == 0, 1.0, total)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return y * (grad - (grad * y).sum(ctx.dim, keepdim=True)), None, None


def _up(t):
    """t in float32 when it is a half type (row statistics accumulate in float32)."""
    return t.float() if t.element_size() < 4 else t


class RMSNorm(PackFunction):
    """x / sqrt(mean(x ** 2) + eps) * weight over the last dimension."""

    reference = "F.rms_norm(x, (x.shape[-1],), weight, eps); x * rsqrt(mean(x ** 2) + eps) * w"
    nan_inf = "propagates nan and inf along the row"
    autocast = "ambient; float16 and bfloat16 inputs get their row statistics in float32"
    saves = "x and weight; the row scale is recomputed in backward (F.rms_norm: x, weight, " \
        "rstd and more)"

    @staticmethod
    def forward(ctx, x, weight, eps):
        ctx.save_for_backward(x, weight)
        ctx.eps = eps
        xf = _up(x)
        y = xf * ((xf * xf).mean(-1, keepdim=True) + eps).rsqrt()
        if xf is not x:
            y = y.to(x.dtype)
        return y if weight is None else y * weight

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        xf, gf = _up(x), _up(grad)
        r = ((xf * xf).mean(-1, keepdim=True) + ctx.eps).rsqrt()
        xhat = xf * r
        dy = gf if weight is None else gf * weight
        dx = r * (dy - xhat * (dy * xhat).mean(-1, keepdim=True))
        if dx.dtype != x.dtype:
            dx = dx.to(x.dtype)
        dw = None
        if weight is not None and ctx.needs_input_grad[1]:
            # summed over every row, in float32 for half types
            dw = (gf * xhat).reshape(-1, x.shape[-1]).sum(0)
            if dw.dtype != weight.dtype:
                dw = dw.to(weight.dtype)
        return dx, dw, None


@documented(Sparsemax)
def sparsemax(x, dim: int = -1):
    """sparsemax along ``dim``: like softmax, but exact zeros outside a support."""
    floating("sparsemax", "x", x)
    return Sparsemax.apply(x, wrap_dim("sparsemax", x, dim))


@documented(Entmax15)
def entmax15(x, dim: int = -1):
    """1.5-entmax along ``dim``: between softmax and sparsemax, sparse and smooth."""
    floating("entmax15", "x", x)
    return Entmax15.apply(x, wrap_dim("entmax15", x, dim))


@documented(SafeSoftmax)
def safe_softmax(x, mask=None, dim: int = -1):
    """softmax along ``dim`` over the entries where ``mask`` is True (None keeps all; it
    broadcasts to x's shape); a row with nothing kept gives zeros and a zero gradient."""
    floating("safe_softmax", "x", x)
    dim = wrap_dim("safe_softmax", x, dim)
    if mask is not None:
        if getattr(mask, "dtype", None) is None or not hasattr(mask, "is_floating_point"):
            raise TypeError(f"safe_softmax(): argument 'mask' must be a bool tensor or None, "
                            f"not {type(mask).__name__}")
        if str(mask.dtype).rsplit(".", 1)[-1] != "bool":
            raise TypeError(f"safe_softmax(): argument 'mask' must be a bool tensor, got "
                            f"{str(mask.dtype).rsplit('.', 1)[-1]}")
        if not _broadcasts(tuple(mask.shape), tuple(x.shape)):
            raise ValueError(f"safe_softmax(): argument 'mask' of shape {list(mask.shape)} does "
                             f"not broadcast to x's shape {list(x.shape)}")
    return SafeSoftmax.apply(x, mask, dim)


def _broadcasts(shape: tuple, to: tuple) -> bool:
    """Whether a tensor of ``shape`` broadcasts to ``to`` (without growing it)."""
    if len(shape) > len(to):
        return False
    return all(a in (1, b) for a, b in zip(reversed(shape), reversed(to)))


@documented(RMSNorm)
def rms_norm(x, weight=None, eps: float = 1e-6):
    """RMS normalization over the last dimension, times ``weight`` (shape ``[x.shape[-1]]``)
    when given."""
    floating("rms_norm", "x", x)
    if x.dim() == 0:
        raise ValueError("rms_norm(): argument 'x' must have at least one dimension")
    if weight is not None:
        floating("rms_norm", "weight", weight)
        if tuple(weight.shape) != (x.shape[-1],):
            raise ValueError(f"rms_norm(): argument 'weight' must have shape [{x.shape[-1]}] "
                             f"(x's last dimension), got {list(weight.shape)}")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or eps < 0:
        raise ValueError(f"rms_norm(): argument 'eps' must be a non-negative number, got "
                         f"{eps!r}")
    return RMSNorm.apply(x, weight, float(eps))
