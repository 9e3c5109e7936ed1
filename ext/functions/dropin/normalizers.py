"""Normalizing maps: sparsemax, entmax15, safe_softmax and rms_norm. The first three save only
their output (the backward rebuilds the Jacobian-vector product from it); rms_norm saves x and
its weight and recomputes the row scale."""

from __future__ import annotations

from ..builtin._builtin import namespace_of
from ._base import PackFunction, documented, floating

__all__ = ["Sparsemax", "Entmax15", "SafeSoftmax", "RMSNorm", "sparsemax", "entmax15",
           "safe_softmax", "rms_norm", "wrap_dim"]

_NEG_INF = float("-inf")
_INF = float("inf")
_NAN = float("nan")


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
        if mask is not None:
            x = namespace_of(x).where(mask, x, _NEG_INF)
        # an empty row (max -inf) is shifted by 0 and its exps are all 0; +inf or nan in a row
        # keep their max, so that the row is nan throughout, as softmax's
        top = x.amax(dim, keepdim=True).nan_to_num_(nan=_NAN, posinf=_INF, neginf=0.0)
        e = (x - top).exp_()
        # a row with a finite max sums to at least 1 (its max gives exp(0)); an empty row to 0,
        # divided by 1 to stay zeros (one pass each: the exps and the division in place)
        y = e.div_(e.sum(dim, keepdim=True).clamp_(min=1.0))
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        # y * (grad - sum(grad * y)): one full-size tensor at a time (the product for the sum is
        # freed before the difference is made, and the difference is scaled in place)
        total = (grad * y).sum(ctx.dim, keepdim=True)
        return (grad - total).mul_(y), None, None


def _up(t):
    """t in float32 when it is a half type (row statistics accumulate in float32)."""
    return t.float() if t.element_size() < 4 else t


class RMSNorm(PackFunction):
    """input / sqrt(mean(input ** 2) + eps) * weight, the mean over the trailing ``dims``
    dimensions (normalized_shape)."""

    reference = "F.rms_norm(input, normalized_shape, weight, eps); " \
        "x * rsqrt(mean(x ** 2 over normalized_shape) + eps) * weight"
    nan_inf = "propagates nan and inf along the normalized dims"
    autocast = "ambient; float16 and bfloat16 inputs are normalized in float32, times the " \
        "weight, and rounded to the input's dtype once (as F.rms_norm)"
    saves = "input and weight; the scale is recomputed in backward (F.rms_norm: input, " \
        "weight, rstd and more)"

    @staticmethod
    def forward(ctx, x, weight, dims, eps):
        ctx.save_for_backward(x, weight)
        ctx.dims, ctx.eps = dims, eps
        xf = _up(x)
        y = xf * _inverse_rms(xf, dims, eps)
        if weight is not None:
            # (in place on the fresh product unless the weight's dtype promotes it)
            y = y.mul_(weight) if weight.dtype == y.dtype else y * weight
        # (the output has the input's dtype, whatever the weight's, as F.rms_norm's)
        return y if y.dtype == x.dtype else y.to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        dims = ctx.dims
        xf, gf = _up(x), _up(grad)
        r = _inverse_rms(xf, dims, ctx.eps)
        xhat = xf * r
        dy = gf if weight is None else gf * weight
        # d/dx (x r) = r (dy - xhat mean(dy xhat)), as (xhat mean(dy xhat) - dy) (-r): one
        # full-size tensor, the rest in place on it
        dx = (xhat * (dy * xhat).mean(dims, keepdim=True)).sub_(dy).mul_(r.neg())
        if dx.dtype != x.dtype:
            dx = dx.to(x.dtype)
        dw = None
        if weight is not None and ctx.needs_input_grad[1]:
            # summed over every leading index, in float32 for half types
            dw = (gf * xhat).reshape((-1,) + tuple(weight.shape)).sum(0)
            if dw.dtype != weight.dtype:
                dw = dw.to(weight.dtype)
        return dx, dw, None, None


def _inverse_rms(xf, dims: tuple, eps: float):
    """1 / sqrt(mean(x ** 2) + eps) over dims, kept as size-1 dims (a fresh tensor, so the
    add and the rsqrt run in place)."""
    return (xf * xf).mean(dims, keepdim=True).add_(eps).rsqrt_()


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


# F.rms_norm's eps when none is given: the machine epsilon of the dtype the statistics are
# computed in (float32 for half types)
_EPS = {8: 2.0 ** -52, 4: 2.0 ** -23, 2: 2.0 ** -23}


def _normalized_dims(input, normalized_shape, weight) -> tuple:
    """The trailing dims that normalized_shape names, checked as F.rms_norm checks them."""
    if isinstance(normalized_shape, (list, tuple)):  # (torch.Size and ext.Size are tuples)
        shape = tuple(normalized_shape)
    else:
        raise TypeError(f"rms_norm(): argument 'normalized_shape' must be tuple of ints, not "
                        f"{type(normalized_shape).__name__}")
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, int):
            raise TypeError(f"rms_norm(): argument 'normalized_shape' must be tuple of ints, "
                            f"but found element of type {type(d).__name__}")
    if not shape:
        raise RuntimeError("rms_norm(): Expected normalized_shape to be at least 1-dimensional, "
                           "i.e., containing at least one element, but got normalized_shape = []")
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(f"rms_norm(): Expected weight to be of same shape as normalized_shape, "
                           f"but got weight of shape {list(weight.shape)} and normalized_shape "
                           f"= {list(shape)}")
    if input.dim() < len(shape):
        raise ValueError(f"rms_norm(): Input tensor must have at least {len(shape)} dimensions, "
                         f"but got {input.dim()}")
    if tuple(input.shape[input.dim() - len(shape):]) != shape:
        raise RuntimeError(f"rms_norm(): Given normalized_shape={list(shape)}, expected input "
                           f"with shape [*{str(list(shape))[1:]}, but got input of size"
                           f"{list(input.shape)}")
    return tuple(range(-len(shape), 0))


@documented(RMSNorm)
def rms_norm(input, normalized_shape, weight=None, eps: float | None = None):
    """F.rms_norm: RMS normalization over the trailing dims of ``normalized_shape`` (a list or
    tuple of ints), times ``weight`` (of that shape) when given; ``eps`` None is the machine
    epsilon of float32 (float64 for float64 input). The output has the input's dtype."""
    if not hasattr(input, "is_floating_point"):
        raise TypeError(f"rms_norm(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if not input.is_floating_point():
        raise NotImplementedError(f"rms_norm(): \"rms_norm\" not implemented for "
                                  f"'{str(input.dtype).rsplit('.', 1)[-1]}' (argument 'input')")
    if weight is not None and not hasattr(weight, "is_floating_point"):
        raise TypeError(f"rms_norm(): argument 'weight' must be Tensor, not "
                        f"{type(weight).__name__}")
    dims = _normalized_dims(input, normalized_shape, weight)
    if eps is None:
        eps = _EPS[input.element_size()]
    elif isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise TypeError(f"rms_norm(): argument 'eps' must be float, not {type(eps).__name__}")
    return RMSNorm.apply(input, weight, dims, float(eps))
