"""Reading and writing by index beyond ``indexing.py``'s core: index_copy, index_fill, take, put,
take_along_dim, masked_select, masked_scatter and the nonzero family.

Each gradient is written with the same index ops (``index_fill`` zeroes the places an
``index_copy`` overwrote, ``take`` reads back what ``put`` wrote), so every backward runs on
both engines and is itself differentiable.
"""

from __future__ import annotations

import numpy as np

from ..._args import not_a_tensor
from ..._dtype import FROM_NUMPY
from ..._tensor import Tensor, _wrap_dim, wrap
from .._op import JOINTLY_LINEAR, LINEAR, Overload, declare, dispatch
from ._builtin import namespace_of
from .indexing import _colons, _in_range, _index_vector, _Indexing
from .reduction import _check_scatter

_LONG = np.dtype(np.int64)


def _places(d: np.ndarray, dim: int, idx: np.ndarray) -> tuple:
    """The NumPy index of the slices ``idx`` along ``dim`` (a 0-d tensor: the whole)."""
    return _colons(dim) + (idx,) if d.ndim else ()


# ---------------------------------------------------------------------------------- index_copy
class IndexCopy(_Indexing):
    """``x.index_copy(dim, index, source)``: source's slices replace x's at ``index``."""

    node_name = "IndexCopyBackward0"
    args = ("self", "dim", "index", "source")
    tensor_positions = (0, 3)
    saved_fields = ("index", "source")
    saved_for = {"source": "source"}
    saved_attrs = ("dim", "source_dim")
    jvp = JOINTLY_LINEAR

    @staticmethod
    def forward(x, dim, index, source):
        return x.index_copy(dim, index, source)

    @staticmethod
    def backward(ctx, grad):
        index, source = ctx.saved_tensors
        gx = grad.index_fill(ctx.dim, index, 0) if ctx.needs_input_grad[0] else None
        gsource = None
        if ctx.needs_input_grad[3]:
            gsource = grad.index_select(ctx.dim, index) if ctx.source_dim else \
                grad.index_select(ctx.dim, index).reshape(())
        return gx, None, None, gsource


def _index_copy(x: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``x`` with its slices ``index`` along ``dim`` replaced by source's."""
    idx = _index_vector("index_copy", index)
    if type(source) is not Tensor:
        raise not_a_tensor(source, "index_copy", "source", 3)
    d, s = x._data, source._data
    pos = _wrap_dim(dim, d.ndim)
    if s.dtype != d.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, "
                           f"but got (self) {FROM_NUMPY[d.dtype]._short} and (source) "
                           f"{FROM_NUMPY[s.dtype]._short}")
    count = s.shape[pos] if s.ndim else 1
    if idx.size != count:
        raise IndexError(f"index_copy_(): Number of indices ({idx.size}) should be equal to "
                         f"source.size(dim) ({count})")
    _in_range(idx, d.shape[pos] if d.ndim else 1, "index_copy_", pos)
    out = d.copy()
    if d.ndim:
        out[_places(d, pos, idx)] = s if s.ndim else s.reshape((1,) * d.ndim)
    else:
        out[...] = s
    return dispatch(IndexCopy, out, (x, dim, index, source))


index_copy = declare("index_copy", IndexCopy, function=_index_copy, inplace="index_copy_")


# ---------------------------------------------------------------------------------- index_fill
class IndexFill(_Indexing):
    """``x.index_fill(dim, index, value)`` with a number: the filled places get no gradient."""

    node_name = "IndexFillBackward0"
    args = ("self", "dim", "index", "value")
    saved_fields = ("index",)
    saved_attrs = ("dim",)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return grad.index_fill(ctx.dim, index, 0), None, None, None

    @staticmethod
    def jvp(ctx, tangent, *_):
        (index,) = ctx.saved_tensors
        return tangent.index_fill(ctx.dim, index, 0)


class IndexFillTensor(_Indexing):
    """``x.index_fill(dim, index, value)`` with a 0-d tensor: value's gradient is the sum of
    grad over the filled places."""

    node_name = "IndexFillBackward1"
    args = ("self", "dim", "index", "value")
    tensor_positions = (0, 3)
    saved_fields = ("index",)
    saved_attrs = ("dim",)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        gx = grad.index_fill(ctx.dim, index, 0) if ctx.needs_input_grad[0] else None
        # (each filled place once, however often the index names it)
        gv = grad.sum() - grad.index_fill(ctx.dim, index, 0).sum() \
            if ctx.needs_input_grad[3] else None
        return gx, None, None, gv

    @staticmethod
    def jvp(ctx, tangent, _dim, _index, tangent_value):
        (index,) = ctx.saved_tensors
        return tangent.index_fill(ctx.dim, index, tangent_value)

    jvp_zeros = True


def _index_fill(x: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """A copy of ``x`` with its slices ``index`` along ``dim`` set to ``value``."""
    idx = _index_vector("index_fill", index)
    d = x._data
    pos = _wrap_dim(dim, d.ndim)
    if type(value) is Tensor:
        if value._data.ndim:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value._data.ndim} dimension(s).")
        fill = value._data.astype(d.dtype)
    else:
        fill = np.asarray(value).astype(d.dtype)
    _in_range(idx, d.shape[pos] if d.ndim else 1, "index_fill_", pos)
    out = d.copy()
    if d.ndim:
        out[_places(d, pos, idx)] = fill
    elif idx.size:
        out[...] = fill
    node = IndexFillTensor if type(value) is Tensor else IndexFill
    return dispatch(node, out, (x, dim, index, value))


index_fill = declare("index_fill", IndexFill, IndexFillTensor, function=_index_fill,
                     inplace="index_fill_")


# ---------------------------------------------------------------------------------- take, put
class Take(_Indexing):
    """``x.take(index)``: x read as a flat vector at ``index``."""

    node_name = "TakeBackward0"
    args = ("self", "index")
    saved_fields = ("self", "index")
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        x, index = ctx.saved_tensors
        zeros = namespace_of(grad).zeros_like(x)
        return zeros.put(index, grad, accumulate=True), None


def _flat_index(fn: str, index, numel: int) -> np.ndarray:
    if type(index) is not Tensor:
        raise not_a_tensor(index, fn, "index", 2)
    idx = index._data
    if idx.dtype != _LONG:
        raise RuntimeError(f"{fn}(): Expected a long tensor for index, but got "
                           f"{FROM_NUMPY[idx.dtype]._short}")
    if idx.size and numel == 0:
        raise IndexError(f"{fn}(): tried to take from an empty tensor")
    bad = (idx < -numel) | (idx >= numel)
    if bad.any():
        raise IndexError(f"out of range: tried to access index {idx[bad][0]} on a tensor of "
                         f"{numel} elements.")
    return idx


def _take(x: Tensor, index: Tensor) -> Tensor:
    """x's elements at the flat positions ``index``, in index's shape."""
    d = x._data
    idx = _flat_index("take", index, d.size)
    return dispatch(Take, d.reshape(-1)[idx.reshape(-1)].reshape(idx.shape), (x, index))


take = declare("take", Take, function=_take)


class Put(_Indexing):
    """``x.put(index, source, accumulate)``: source written (or added) at x's flat positions."""

    node_name = "PutBackward0"
    args = ("self", "index", "source", "accumulate")
    tensor_positions = (0, 2)
    saved_fields = ("index", "source")
    saved_for = {"source": "self"}
    saved_attrs = ("accumulate",)
    jvp = JOINTLY_LINEAR

    @staticmethod
    def forward(x, index, source, accumulate=False):
        return x.put(index, source, accumulate)

    @staticmethod
    def backward(ctx, grad):
        index, source = ctx.saved_tensors
        gx = gsource = None
        if ctx.needs_input_grad[0]:
            gx = grad if ctx.accumulate else \
                grad.put(index, namespace_of(grad).zeros_like(source), False)
        if ctx.needs_input_grad[2]:
            gsource = grad.take(index).reshape(source.shape)
        return gx, None, gsource, None


def _put(x: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``x`` with ``source`` written (or, accumulating, added) at its flat positions
    ``index``."""
    d = x._data
    idx = _flat_index("put", index, d.size).reshape(-1)
    if type(source) is not Tensor:
        raise not_a_tensor(source, "put", "source", 3)
    s = source._data
    if s.dtype != d.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {FROM_NUMPY[d.dtype]._short} and source.dtype = "
                           f"{FROM_NUMPY[s.dtype]._short}")
    if s.size != idx.size:
        raise RuntimeError(f"put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {s.size}, index.numel() = "
                           f"{idx.size}")
    out = d.copy()
    flat = out.reshape(-1)
    if accumulate:
        np.add.at(flat, idx, s.reshape(-1))
    else:
        flat[idx] = s.reshape(-1)
    return dispatch(Put, flat.reshape(d.shape), (x, index, source, accumulate))


put = declare("put", Put, function=_put, inplace="put_")


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:  # noqa: A002
    """The values of ``input`` at ``indices`` along ``dim`` (NumPy's take_along_axis), the
    shapes broadcast except along ``dim``; with no dim, over the flattened input."""
    if type(input) is not Tensor:
        raise not_a_tensor(input, "take_along_dim", "input", 1)
    if type(indices) is not Tensor:
        raise not_a_tensor(indices, "take_along_dim", "indices", 2)
    if indices._data.dtype.kind not in "iu":
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be int but got "
                           f"{FROM_NUMPY[indices._data.dtype]._short} instead")
    if dim is None:
        return input.reshape(-1).gather(0, indices.reshape(-1))
    if input.dim() != indices.dim():
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.dim()} dimensions for input, "
                           f"and {indices.dim()} dimensions for indices")
    pos = _wrap_dim(dim, input.dim())
    if (indices._data < 0).any():  # (counted from the end, as torch allows here)
        indices = wrap(np.where(indices._data < 0, indices._data + input.shape[pos],
                                indices._data))
    shape_in, shape_ix = list(input.shape), list(indices.shape)
    shape_in[pos] = shape_ix[pos] = 1
    common = np.broadcast_shapes(tuple(shape_in), tuple(shape_ix))
    want_in = list(common)
    want_in[pos] = input.shape[pos]
    want_ix = list(common)
    want_ix[pos] = indices.shape[pos]
    # (torch expands both whatever their shapes: its graph has the ExpandBackward0)
    return input.expand(*want_in).gather(pos, indices.expand(*want_ix))


declare("take_along_dim", function=take_along_dim)


# ---------------------------------------------------------------------------------- masked ops
class MaskedSelect(Overload):
    """``x.masked_select(mask)``: the elements where mask holds, as a vector."""

    node_name = "MaskedSelectBackward0"
    args = ("self", "mask")
    tensor_positions = (0,)
    saved_fields = ("mask", "self")
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        mask, x = ctx.saved_tensors
        T = namespace_of(grad)
        shape = T.broadcast_shapes(tuple(x.shape), tuple(mask.shape))
        full = T.zeros(shape, dtype=grad.dtype).masked_scatter(mask.expand(shape), grad)
        return full.sum_to_size(tuple(x.shape)), None


def _check_mask(fn: str, mask) -> np.ndarray:
    if type(mask) is not Tensor:
        raise not_a_tensor(mask, fn, "mask", 2)
    if mask._data.dtype != np.bool_:
        raise RuntimeError(f"{fn}: expected BoolTensor for mask")
    return mask._data


def _masked_select(x: Tensor, mask: Tensor) -> Tensor:
    """The elements of ``x`` where ``mask`` (broadcast with x) holds, as a vector."""
    m = _check_mask("masked_select", mask)
    d = x._data
    try:
        dd, mm = np.broadcast_arrays(d, m)
    except ValueError:
        from .pointwise._common import broadcast_error

        raise broadcast_error(d, m) from None
    return dispatch(MaskedSelect, dd[mm], (x, mask))


masked_select = declare("masked_select", MaskedSelect, function=_masked_select)


class MaskedScatter(Overload):
    """``x.masked_scatter(mask, source)``: source's leading elements fill x where mask holds."""

    node_name = "MaskedScatterBackward0"
    args = ("self", "mask", "source")
    tensor_positions = (0, 2)
    saved_fields = ("mask",)
    saved_attrs = ("source_sym_sizes",)
    ctx_attrs = ("self_sym_sizes",)
    jvp = JOINTLY_LINEAR

    @staticmethod
    def forward(x, mask, source):
        return x.masked_scatter(mask, source)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        gx = gsource = None
        if ctx.needs_input_grad[0]:
            gx = grad.masked_fill(mask, 0)
            if tuple(gx.shape) != tuple(ctx.self_sym_sizes):  # (x was broadcast with mask)
                gx = gx.sum_to_size(tuple(ctx.self_sym_sizes))
        if ctx.needs_input_grad[2]:
            T = namespace_of(grad)
            numel = 1
            for n in ctx.source_sym_sizes:
                numel *= n
            picked = grad.masked_select(mask)
            pad = T.zeros(numel - picked.numel(), dtype=grad.dtype)
            gsource = T.cat([picked, pad]).reshape(ctx.source_sym_sizes)
        return gx, None, gsource


def _masked_scatter(x: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of ``x`` with source's elements, in order, written where ``mask`` holds."""
    m = _check_mask("masked_scatter_", mask)
    if type(source) is not Tensor:
        raise not_a_tensor(source, "masked_scatter", "source", 3)
    d, s = x._data, source._data
    if s.dtype != d.dtype:
        raise RuntimeError(f"masked_scatter_: expected self and source to have same dtypes but "
                           f"got {FROM_NUMPY[d.dtype]._short} and {FROM_NUMPY[s.dtype]._short}")
    try:
        shape = np.broadcast_shapes(d.shape, m.shape)
    except ValueError:
        from .pointwise._common import broadcast_error

        raise broadcast_error(d, m) from None
    mm = np.broadcast_to(m, shape)
    count = int(mm.sum())
    if count > s.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    out = np.broadcast_to(d, shape).copy()
    out[mm] = s.reshape(-1)[:count]
    return dispatch(MaskedScatter, out, (x, mask, source))


masked_scatter = declare("masked_scatter", MaskedScatter, function=_masked_scatter,
                         inplace="masked_scatter_")


# ---------------------------------------------------------------------------------- fill
class Fill(Overload):
    """``fill(x, value)`` with a number: constant, so no gradient reaches x."""

    node_name = "FillBackward0"
    args = ("self", "value")
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad):
        return namespace_of(grad).zeros_like(grad), None

    @staticmethod
    def jvp(ctx, tangent, _value):
        return namespace_of(tangent).zeros_like(tangent)


class FillTensor(Overload):
    """``fill(x, value)`` with a 0-d tensor: value's gradient is the sum of grad."""

    node_name = "FillBackward1"
    args = ("self", "value")
    tensor_positions = (0, 1)
    jvp_zeros = True

    @staticmethod
    def backward(ctx, grad):
        gx = namespace_of(grad).zeros_like(grad) if ctx.needs_input_grad[0] else None
        return gx, grad.sum() if ctx.needs_input_grad[1] else None

    @staticmethod
    def jvp(ctx, tangent, tangent_value):
        return namespace_of(tangent).zeros_like(tangent) + tangent_value


def _fill(x: Tensor, value) -> Tensor:
    """A new tensor like ``x`` with every element ``value`` (``fill_`` writes x itself)."""
    if type(x) is not Tensor:
        raise not_a_tensor(x, "fill", "input", 1)
    d = x._data
    if type(value) is Tensor:
        if value._data.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value._data.ndim} dimensions.")
        return dispatch(FillTensor, np.full(d.shape, value._data, d.dtype), (x, value))
    return dispatch(Fill, np.full(d.shape, value).astype(d.dtype), (x, value))


# (registered apart from the in-place fill_'s op, whose nodes are FillBackward2 and 3)
declare("fill_out_of_place", Fill, FillTensor, function=_fill, methods=(),
        functions=("fill",), torch_op="aten::fill")


# ---------------------------------------------------------------------------------- nonzero
def nonzero(input: Tensor, *, as_tuple: bool = False):  # noqa: A002
    """The indices of the nonzero elements: one row each (int64), or one vector per dim."""
    d = input._data
    found = np.nonzero(d if d.ndim else d.reshape(1))
    if as_tuple:
        if not d.ndim:
            return (wrap(found[0].astype(np.int64)),)
        return tuple(wrap(f.astype(np.int64)) for f in found)
    if not d.ndim:
        return wrap(np.zeros((found[0].size, 0), np.int64))
    return wrap(np.stack(found, axis=1).astype(np.int64) if found else
                np.zeros((0, 0), np.int64))


def argwhere(input: Tensor) -> Tensor:  # noqa: A002
    """The indices of the nonzero elements, one row each (``nonzero``)."""
    return nonzero(input)


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:  # noqa: A002
    """``nonzero`` with exactly ``size`` rows: cut, or padded with ``fill_value``."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got "
                           f"size: {size}")
    rows = nonzero(input)._data
    out = np.full((size, rows.shape[1]), fill_value, np.int64)
    n = min(size, rows.shape[0])
    out[:n] = rows[:n]
    return wrap(out)


declare("nonzero", function=nonzero)
declare("argwhere", function=argwhere)
declare("nonzero_static", function=nonzero_static)


__all__ = ["index_copy", "index_fill", "take", "put",
           "take_along_dim", "masked_select", "masked_scatter", "nonzero", "argwhere",
           "nonzero_static"]


# ---------------------------------------------------------------------------------- *_reduce
_REDUCES = ("sum", "prod", "mean", "amax", "amin")
_UFUNCS = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
           "amin": np.minimum}


def _identity(reduce: str, dtype: np.dtype):
    """What a place starts from when ``include_self=False``: the reduction's identity."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    big = np.inf if dtype.kind == "f" else np.iinfo(dtype).max
    return -big if reduce == "amax" and dtype.kind == "f" else \
        np.iinfo(dtype).min if reduce == "amax" else big


class _Access:
    """How a *_reduce family reads, adds and zeroes its places: by ``gather``/``scatter_add``
    (scatter_reduce) or ``index_select``/``index_add`` (index_reduce)."""

    def __init__(self, read: str, add: str, zero) -> None:
        self.read, self.add, self.zero = read, add, zero


_SCATTER = _Access("gather", "scatter_add", lambda g, dim, index: g.scatter(dim, index, 0))
_INDEX = _Access("index_select", "index_add", lambda g, dim, index: g.index_fill(dim, index, 0))


def _reduce_backward(ctx, grad, access: _Access, op: str):
    """torch's gradients of scatter_reduce and index_reduce, with ``access`` naming the reads
    and adds of the family: each reduction spreads grad to the elements that made a place's
    value (a tie of maxima shares it evenly, a product divides out the element itself)."""
    x, index, src, result = ctx.saved_tensors
    dim, reduce = ctx.dim, ctx.reduce
    T = namespace_of(grad)

    def read(t):
        return getattr(t, access.read)(dim, index)

    def add(t, u):
        return getattr(t, access.add)(dim, index, u)

    if reduce == "sum":
        gx, gsrc = grad, read(grad)
    elif reduce == "mean":
        n = add(T.ones_like(grad) if ctx.include_self else T.zeros_like(grad), T.ones_like(src))
        n = n.masked_fill(n == 0, 1)
        gx, gsrc = grad / n, read(grad) / read(n)
    elif reduce == "prod":
        masked_x = x.masked_fill(x == 0, 1)
        gx = grad * getattr(masked_x, op)(dim, index, src, reduce,
                                          include_self=ctx.include_self) / masked_x
        src_zero = src == 0
        zeros = read(add(T.zeros_like(x), src_zero.to(x.dtype)))
        single = T.logical_and(src_zero, zeros == 1)
        masked_src_result = getattr(x, op)(dim, index, src.masked_fill(single, 1), reduce,
                                           include_self=ctx.include_self)
        gsrc = T.where(single, read(grad * masked_src_result),
                       read(grad * result) / src.masked_fill(src_zero, 1))
    else:  # amax, amin: ties share the gradient evenly
        value = read(result)
        x_is = (x == result).to(x.dtype)
        src_is = (src == value).to(x.dtype)
        share = grad / add(x_is, src_is)
        gx, gsrc = x_is * share, src_is * read(share)
    if not ctx.include_self:
        gx = access.zero(gx, dim, index)
    return (gx if ctx.needs_input_grad[0] else None, None, None,
            gsrc if ctx.needs_input_grad[3] else None, None, None)


class ScatterReduce(Overload):
    """``x.scatter_reduce(dim, index, src, reduce, include_self=True)``."""

    node_name = "ScatterReduceBackward0"
    args = ("self", "dim", "index", "src", "reduce", "include_self")
    tensor_positions = (0, 3)
    saved_fields = ("self", "index", "src", "result")
    saved_attrs = ("dim", "reduce", "include_self")
    unsigned_attrs = ("index",)
    jvp_zeros = True
    keywords = ("include_self",)

    @staticmethod
    def backward(ctx, grad):
        return _reduce_backward(ctx, grad, _SCATTER, "scatter_reduce")

    @staticmethod
    def jvp(ctx, tx, _dim, _index, tsrc, *_):
        x, index, src, result = ctx.saved_tensors
        dim, reduce, keep = ctx.dim, ctx.reduce, ctx.include_self
        if reduce in ("sum", "mean"):  # (linear)
            return tx.scatter_reduce(dim, index, tsrc, reduce, include_self=keep)
        if reduce == "prod":  # (torch's rule gives no tangent: zeros)
            return namespace_of(result).zeros_like(result)
        x_is = x == result
        src_is = src == result.gather(dim, index)
        count = x_is.to(tx.dtype).scatter_reduce(dim, index, src_is.to(tx.dtype), "sum",
                                                 include_self=keep)
        zero = namespace_of(tx).zeros_like
        return tx.where(x_is, zero(tx)).scatter_reduce(
            dim, index, tsrc.where(src_is, zero(tsrc)), "sum", include_self=keep) / count


def _reduced(d: np.ndarray, places: tuple, values: np.ndarray, reduce: str,
             include_self: bool) -> np.ndarray:
    """``d`` with ``values`` combined into ``places`` by ``reduce`` (NumPy's unbuffered
    ``ufunc.at``, so that a place named twice takes both)."""
    out = d.copy()
    if not include_self:
        out[places] = _identity(reduce, d.dtype)
    _UFUNCS[reduce].at(out, places, values)
    if reduce == "mean":
        count = np.full(d.shape, 1 if include_self else 0, np.int64)
        np.add.at(count, places, 1)
        count[count == 0] = 1
        out = (out / count).astype(d.dtype) if d.dtype.kind == "f" else \
            np.floor_divide(out, count).astype(d.dtype)
    return out


def _check_reduce(fn: str, reduce) -> None:
    if reduce not in _REDUCES:
        raise RuntimeError(f"{fn}(): reduce argument must be either sum, prod, mean, amax or "
                           f"amin, got {reduce}")


def _scatter_reduce(x: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    """A copy of ``x`` with each element of ``src`` reduced (sum, prod, mean, amax or amin)
    into its place along ``dim`` given by ``index``; ``include_self=False`` leaves x's own
    values out of the places written."""
    _check_reduce("scatter_reduce", reduce)
    if type(src) is not Tensor:
        raise not_a_tensor(src, "scatter_reduce", "src", 4)
    d = x._data
    pos = _wrap_dim(dim, d.ndim)
    idx = index._data
    _check_scatter(d, pos, idx, src)
    out = d.copy()
    if idx.size:
        flat = out.reshape(-1) if not d.ndim else out
        ix = idx.reshape(-1) if not idx.ndim else idx
        sd = src._data.reshape(-1) if not src._data.ndim else src._data
        from .indexing import _along

        flat = _reduced(flat, _along(ix, pos), sd[tuple(slice(0, n) for n in ix.shape)],
                        reduce, include_self)
        out = flat.reshape(d.shape)
    return dispatch(ScatterReduce, out, (x, dim, index, src, reduce, include_self))


scatter_reduce = declare("scatter_reduce", ScatterReduce, function=_scatter_reduce,
                         inplace="scatter_reduce_")


class IndexReduce(_Indexing):
    """``x.index_reduce(dim, index, source, reduce, include_self=True)``."""

    node_name = "IndexReduceBackward0"
    args = ("self", "dim", "index", "source", "reduce", "include_self")
    tensor_positions = (0, 3)
    saved_fields = ("self", "index", "source", "result")
    saved_attrs = ("dim", "reduce", "include_self")
    keywords = ("include_self",)

    @staticmethod
    def backward(ctx, grad):
        return _reduce_backward(ctx, grad, _INDEX, "index_reduce")


def _index_reduce(x: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                  include_self: bool = True) -> Tensor:
    """A copy of ``x`` with source's slices reduced (prod, mean, amax or amin) into its slices
    ``index`` along ``dim``."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    idx = _index_vector("index_reduce", index)
    if type(source) is not Tensor:
        raise not_a_tensor(source, "index_reduce", "source", 3)
    d, s = x._data, source._data
    pos = _wrap_dim(dim, d.ndim)
    count = s.shape[pos] if s.ndim else 1
    if idx.size != count:
        raise RuntimeError(f"index_reduce_(): Number of indices ({idx.size}) should be equal "
                           f"to source.size(dim): ({count}), for dim: {pos}")
    _in_range(idx, d.shape[pos] if d.ndim else 1, "index_reduce_", pos)
    flat = d.reshape(1) if not d.ndim else d
    values = s.reshape((1,) * flat.ndim) if not s.ndim else s
    out = _reduced(flat, _colons(pos) + (idx,), values, reduce, include_self).reshape(d.shape)
    return dispatch(IndexReduce, out, (x, dim, index, source, reduce, include_self))


index_reduce = declare("index_reduce", IndexReduce, function=_index_reduce,
                       inplace="index_reduce_")
