"""``ext.masked``: torch.masked's reductions and normalizations of strided tensors.

Each function takes ``mask=`` (a bool tensor broadcastable to the input; None means every
element): the masked-out elements are replaced by the operation's identity (0 for a sum, 1 for
a product, -inf for a maximum, ...) with ``where``, and the ordinary op runs on the result. The
graph is therefore the ordinary op's graph (``SumBackward1`` for ``masked.sum``), as in torch.
"""

from __future__ import annotations

import ext
from ext import Tensor

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp",
           "logsumexp", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin",
           "std", "sum", "var"]

_builtin_sum = sum
# Integer and bool inputs of a sum or product accumulate in int64, as torch's do.
_WIDENED = ("uint8", "bool", "int8", "int16", "int32")


def _dims(dim, ndim: int) -> tuple:
    """``dim`` (None, an int or a sequence) as sorted non-negative dims, with torch's checks."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    found: list = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d in found:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                             f"{ndim - 1}], but got {d})")
        found.append(d)
    return tuple(sorted(d % ndim for d in found))


def _mask(input: Tensor, mask) -> Tensor:
    """The mask as a bool tensor of the input's shape."""
    if mask.shape != input.shape:
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality "
                             "higher than of the input)")
        mask = ext.broadcast_to(mask.clone(), input.shape)
    return mask.to(dtype=ext.bool)


def _identity(op: str, input: Tensor, ord=None):
    """The value a masked-out element takes for ``op``: its identity element."""
    dtype, floating = input.dtype, input.dtype.is_floating_point
    if op in ("sum", "cumsum"):
        return ext.tensor(0, dtype=dtype)
    if op in ("prod", "cumprod"):
        return ext.tensor(1, dtype=dtype)
    if op in ("amax", "argmax", "logaddexp", "logsumexp"):
        return ext.tensor(-ext.inf if floating else ext.iinfo(dtype).min, dtype=dtype)
    if op in ("amin", "argmin"):
        return ext.tensor(ext.inf if floating else ext.iinfo(dtype).max, dtype=dtype)
    if op == "norm":
        return ext.tensor(ext.inf if ord == float("-inf") else 0, dtype=dtype)
    if op == "median":
        return ext.tensor(ext.nan, dtype=dtype if floating else ext.float32)
    raise NotImplementedError(f"identity of {op} on {dtype} input")


def _filled(op: str, input: Tensor, mask, ord=None) -> Tensor:
    """The input with its masked-out elements replaced by op's identity."""
    if mask is None:
        return input
    return ext.where(_mask(input, mask), input, _identity(op, input, ord))


def _widened(input: Tensor, dtype):
    if dtype is not None:
        return dtype
    return ext.int64 if str(input.dtype).rpartition(".")[2] in _WIDENED else input.dtype


def sum(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None,  # noqa: A001
        mask=None) -> Tensor:
    """The sum of the elements the mask keeps."""
    dtype = _widened(input, dtype)
    dims = _dims(dim, input.ndim)
    return ext.sum(_filled("sum", input, mask), dims, bool(keepdim), dtype=dtype)


def prod(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    """The product of the elements the mask keeps (one dim after another, last first)."""
    dtype = _widened(input, dtype)
    dims = _dims(dim, input.ndim)
    result = _filled("prod", input, mask).to(dtype=dtype)
    for d in reversed(dims):
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def _extreme(op: str):
    def reduce(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None,
               mask=None) -> Tensor:
        dtype = input.dtype if dtype is None else dtype
        filled = _filled(op, input, mask)
        dims = _dims(dim, filled.ndim)
        return getattr(ext, op)(filled, dims, bool(keepdim)).to(dtype=dtype)

    reduce.__name__ = reduce.__qualname__ = op
    reduce.__doc__ = f"The {op[1:]}imum of the elements the mask keeps."
    return reduce


amax = _extreme("amax")
amin = _extreme("amin")


def _arg(op: str):
    def reduce(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None,
               mask=None) -> Tensor:
        dtype = input.dtype if dtype is None else dtype
        return getattr(ext, op)(_filled(op, input, mask), dim, bool(keepdim)).to(dtype=dtype)

    reduce.__name__ = reduce.__qualname__ = op
    reduce.__doc__ = f"The index of the {op[3:]}imum among the elements the mask keeps."
    return reduce


argmax = _arg("argmax")
argmin = _arg("argmin")


def _count(input: Tensor, dim, keepdim: bool, mask) -> Tensor:
    if mask is None:
        return sum(ext.ones(input.shape, dtype=ext.int64), dim, keepdim=keepdim)
    return _mask(input, mask).sum(dim=dim, keepdim=bool(keepdim))


def mean(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    """The mean of the elements the mask keeps (nan where it keeps none)."""
    source = "Optional"
    if dtype is None:
        dtype, source = input.dtype, "Input"
    if not dtype.is_floating_point:
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either a "
                         f"floating point or complex dtype. Got: {dtype}")
    kept = None if mask is None else _mask(input, mask)
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=kept)
    return total / _count(input, dim, keepdim, kept)


def _spread(input: Tensor, dim, unbiased, correction, keepdim: bool, dtype, mask,
            root: bool) -> Tensor:
    if unbiased is not None and correction is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    ddof = 1.0 if unbiased is None and correction is None else \
        float(correction) if correction is not None else (1.0 if unbiased else 0.0)
    if dtype is None:
        dtype = input.dtype if input.dtype.is_floating_point else ext.float32
    kept = None if mask is None else _mask(input, mask)
    count = _count(input, dim, True, kept)
    centre = ext.divide(sum(input, dim, keepdim=True, dtype=dtype, mask=kept), count)
    x = ext.subtract(input, centre)
    total = sum(x * x, dim, keepdim=keepdim, dtype=dtype, mask=kept)
    if not keepdim:
        count = count.reshape(total.shape)
    if ddof != 0:
        count = ext.subtract(count.to(dtype), ddof)
        count = ext.maximum(count, count.new_zeros([]))
    out = ext.divide(total, count).to(dtype=dtype)
    return ext.sqrt(out) if root else out


def var(input: Tensor, dim=None, unbiased=None, *, correction=None, keepdim: bool = False,
        dtype=None, mask=None) -> Tensor:
    """The variance of the elements the mask keeps."""
    return _spread(input, dim, unbiased, correction, keepdim, dtype, mask, root=False)


def std(input: Tensor, dim=None, unbiased=None, *, correction=None, keepdim: bool = False,
        dtype=None, mask=None) -> Tensor:
    """The standard deviation of the elements the mask keeps."""
    return _spread(input, dim, unbiased, correction, keepdim, dtype, mask, root=True)


def _normalization(name: str, identity: str, run):
    def normalize(input: Tensor, dim: int, *, dtype=None, mask=None) -> Tensor:
        dtype = input.dtype if dtype is None else dtype
        d = _dims(dim, input.ndim)[0]
        return run(_filled(identity, input, mask), d, dtype)

    normalize.__name__ = normalize.__qualname__ = name
    normalize.__doc__ = f"``{name}`` along ``dim`` with the masked-out elements left out."
    return normalize


softmax = _normalization("softmax", "amax",
                         lambda x, d, dtype: ext.nn.functional.softmax(x, d, dtype=dtype))
log_softmax = _normalization("log_softmax", "amax",
                             lambda x, d, dtype: ext.nn.functional.log_softmax(x, d,
                                                                              dtype=dtype))
softmin = _normalization("softmin", "amin",
                         lambda x, d, dtype: ext.nn.functional.softmin(x, d, dtype=dtype))
cumsum = _normalization("cumsum", "sum",
                        lambda x, d, dtype: ext.cumsum(x, d, dtype=dtype).to(dtype=dtype))
cumprod = _normalization("cumprod", "prod",
                         lambda x, d, dtype: ext.cumprod(x, d, dtype=dtype).to(dtype=dtype))


def median(input: Tensor, dim: int = -1, *, keepdim: bool = False, dtype=None,
           mask=None) -> Tensor:
    """The median of the elements the mask keeps (nan where it keeps none)."""
    dtype = input.dtype if dtype is None else dtype
    d = _dims(dim, input.ndim)[0]
    floating = input.dtype.is_floating_point
    if not floating:
        input = input.to(dtype=ext.float32)
    out = ext.nanmedian(_filled("median", input, mask), d, keepdim).values
    if floating:
        return out
    if ext.isnan(out).any():
        raise ValueError("masked median expects no fully masked out rows if dtype is not "
                         "floating point")
    return out.to(dtype=dtype)


def norm(input: Tensor, ord=2.0, dim=None, *, keepdim: bool = False, dtype=None,
         mask=None) -> Tensor:
    """The vector norm of the elements the mask keeps."""
    dtype = input.dtype if dtype is None else dtype
    filled = _filled("norm", input, mask, ord)
    return ext.linalg.vector_norm(filled, ord, _dims(dim, input.ndim), bool(keepdim),
                                  dtype=dtype)


def normalize(input: Tensor, ord: float, dim: int, *, eps: float = 1e-12, dtype=None,
              mask=None) -> Tensor:
    """The input divided by its masked norm along ``dim`` (at least ``eps``)."""
    dtype = input.dtype if dtype is None else dtype
    filled = _filled("sum", input, mask)
    size = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return ext.divide(filled, ext.maximum(size, size.new_full([], eps)))


def logaddexp(input: Tensor, other: Tensor, *, dtype=None, input_mask=None,
              other_mask=None) -> Tensor:
    """logaddexp of the two inputs, each with its masked-out elements at -inf."""
    dtype = input.dtype if dtype is None else dtype
    return ext.logaddexp(_filled("logaddexp", input, input_mask),
                         _filled("logaddexp", other, other_mask)).to(dtype=dtype)


def logsumexp(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None,
              mask=None) -> Tensor:
    """logsumexp of the elements the mask keeps."""
    dtype = input.dtype if dtype is None else dtype
    dims = _dims(dim, input.ndim)
    return ext.logsumexp(_filled("logsumexp", input, mask), dims,
                         keepdim=keepdim).to(dtype=dtype)
