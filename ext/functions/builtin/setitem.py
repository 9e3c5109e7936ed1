"""Indexing writes: ``x[index] = value`` (and so ``x[index] += value``).

A basic index (ints, slices, None, Ellipsis) writes through a view, so the base gets a
``CopySlices`` node; an index with tensors, lists or masks writes with ``index_put_``
(IndexPutBackward0), as in torch.
"""

from __future__ import annotations

import numpy as np

from ..._args import not_a_tensor, not_a_tensor_element
from ..._dtype import FROM_NUMPY
from ..._factories import fill_number
from ..._tensor import Tensor, wrap
from .._op import declare, dispatch
from .indexing import IndexPutImpl, check_bounds, check_mask, numpy_key, slicing, take
from .inplace import (
    apply_inplace,
    check_inplace,
    refuse_any_overlap,
    refuse_partial_overlap,
    warn_expanded,
)

__all__ = ["setitem", "index_put"]


class IndexPut(IndexPutImpl):
    """``x.index_put(indices, values, accumulate)``: values' gradient is grad at the written
    places; x's is grad with those places zeroed (unless accumulating)."""

    node_name = "IndexPutBackward0"
    args = ("self", "indices", "values", "accumulate")

    @staticmethod
    def backward(ctx, grad):
        # torch: accumulate ? grad : grad.index_put(indices, zeros_like(values)) for x, and
        # grad.index(indices) for values (whose backward adds up repeated indices), as
        # _index_put_impl's
        return IndexPutImpl.backward(ctx, grad)[:4]


def _fill_mask(x: Tensor, index, values, accumulate: bool):
    """The mask, when torch's index_put_ is a masked fill (not accumulating, one value, one
    index tensor and that a bool or uint8 mask), else None. torch then reads the value as a
    number first, so neither its dtype nor its memory matters. Raises torch's errors for a mask
    whose shape does not match and for a uint8 mask."""
    if accumulate or type(values) is not Tensor or values._data.size != 1:
        return None
    mask = None
    pos = 0
    for k, i in enumerate(index):
        if type(i) is Tensor:
            if mask is not None or i._data.dtype not in (np.bool_, np.uint8):
                return None
            mask, pos = i, k
    if mask is None:
        return None
    check_mask(mask._data.shape, x._data.shape, pos)
    if mask._data.dtype == np.uint8:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           "unsigned char")
    return mask


def _index_put_overlap(x: Tensor, inputs) -> None:
    # index_put_ refuses values or indices that share any memory with the tensor; a masked fill
    # (which has read the value) only a mask that is part of the tensor's elements.
    index, values, *rest = inputs
    mask = _fill_mask(x, index, values, rest[0] if rest else False)
    if mask is None:
        refuse_any_overlap(x, inputs)
    else:
        refuse_partial_overlap(x, mask)


def index_put(x: Tensor, index, values, accumulate: bool = False) -> Tensor:
    """A copy of ``x`` with ``values`` written (or added) at ``x[index]`` (a None in ``index``
    stands for a whole dim, as in torch's index lists): aten's ``index_put``."""
    index = tuple(index)
    mask = _fill_mask(x, index, values, accumulate)
    if mask is not None:
        return _masked_fill(x, index, mask, values)
    # torch's order: the index tensors' shapes, the value's shape, its dtype, then the range
    # of the indices
    shape = x._data.shape
    key, _ = numpy_key(shape, index, bounds=False)
    positions = take(np.arange(x._data.size).reshape(shape), key)
    src = values._data if type(values) is Tensor else np.asarray(values)
    try:
        src = np.broadcast_to(src, positions.shape)
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(np.shape(src))} cannot "
                           f"be broadcast to indexing result of shape "
                           f"{list(positions.shape)}") from None
    if type(values) is Tensor and values._data.dtype != x._data.dtype:
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{FROM_NUMPY[x._data.dtype]._short} for the destination and "
            f"{FROM_NUMPY[values._data.dtype]._short} for the source.")
    check_bounds(key, shape)
    d = x._data.copy()
    flat = d.reshape(-1)
    if accumulate:
        np.add.at(flat, positions.reshape(-1), src.reshape(-1))
    else:
        flat[positions.reshape(-1)] = src.reshape(-1)
    return dispatch(IndexPut, flat.reshape(d.shape), (x, index, values, accumulate))


index_put.writes_through_aliases = True
index_put.check_overlap = _index_put_overlap


def _masked_fill(x: Tensor, index, mask: Tensor, values: Tensor) -> Tensor:
    """index_put as torch's masked fill: the value, read as a number of x's dtype, written
    where the mask (at its place in ``index``, broadcast over the other dims) is true."""
    d = x._data.copy()
    m = mask._data
    pos = next(k for k, i in enumerate(index) if i is mask)
    where = m.reshape((1,) * pos + m.shape + (1,) * (d.ndim - pos - m.ndim))
    d[np.broadcast_to(where, d.shape)] = fill_number(values._data.item(), d.dtype)
    return dispatch(IndexPut, d, (x, index, values, False))


def setitem(x: Tensor, index, value) -> None:
    """``x[index] = value`` with torch's autograd semantics."""
    if type(value) is not Tensor:
        if not isinstance(value, (int, float, np.generic)):
            kind = type(value)
            name = kind.__name__ if kind.__module__ == "builtins" else \
                f"{kind.__module__}.{kind.__name__}"
            raise TypeError(f"can't assign a {name} to a "
                            f"ext.{FROM_NUMPY[x._data.dtype]._legacy}")
        # torch writes a number as a 0-d tensor of x's dtype (so the node has an edge for it).
        value = wrap(np.asarray(fill_number(value, x._data.dtype), x._data.dtype))
    if index is Ellipsis:
        _write_whole(x, value)
        return
    # Like torch: the basic part of the index selects a view (a slice that keeps a whole dim is
    # skipped), and the index tensors are put into that view, so a write through a view gives
    # the base a CopySlices node.
    sliced, indices = slicing(x, index if type(index) is tuple or (
        type(index) is Tensor and index._data.ndim) else (index,))
    if not indices:
        _write_whole(sliced, value)
        return
    shape = value._data.shape
    if shape and shape[0] == 1:
        value = value.view(_drop_leading_ones(shape))
    tensors = [i for i in indices if i is not None]
    if len(tensors) == 1 and tensors[0]._data.dtype == np.bool_ and value._data.size == 1:
        # One mask and one value: torch fills, casting the value to x's dtype (and reading it
        # before writing, so that it may be one of x's elements).
        value = value.to(x.dtype)
    elif np.shares_memory(value._data, sliced._data):
        raise RuntimeError("unsupported operation: some elements of the input tensor and the "
                           "written-to tensor refer to a single memory location. Please clone() "
                           "the tensor before performing the operation.")
    warn_expanded(sliced, "index_put_", "tensor[indices] = tensor")
    apply_inplace(sliced, index_put, indices, value)


def _drop_leading_ones(shape: tuple) -> tuple:
    # torch drops a value's leading size-1 dims before writing it.
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return shape[k:]


def _write_whole(target: Tensor, value: Tensor) -> None:
    # torch's copy_to: a value of the target's shape is copied (copy_), a 0-d one fills
    # (fill_), and any other is viewed without its leading size-1 dims and expanded to the
    # target's shape first (so that view and expand are in the graph, with expand's errors).
    shape = value._data.shape
    if shape == target._data.shape:
        target.copy_(value)
    elif not shape:
        target.fill_(value)
    else:
        value = value.view(_drop_leading_ones(shape))
        if value._data.shape != target._data.shape:
            value = value.expand(target.shape)
        target.copy_(value)


def _check_values(values, name: str) -> None:
    if not isinstance(values, Tensor):
        raise not_a_tensor(values, name, "values", 2)


def _check_index_types(indices, name: str) -> None:
    # torch's index_put takes a tuple (or list) of index tensors.
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{name}(): argument 'indices' (position 1) must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    for i, index in enumerate(indices):
        if type(index) is not Tensor:
            raise not_a_tensor_element(index, i, name)


def _check_index_count(x: Tensor, indices) -> None:
    # at most one index tensor per dim (checked by torch's kernel, after its autograd checks)
    if len(indices) > x._data.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x._data.ndim} (got "
                         f"{len(indices)})")


def _index_put_(x: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """In-place ``index_put``: ``x[indices] = values`` (or ``+=`` with ``accumulate``)."""
    _check_index_types(indices, "index_put_")
    _check_values(values, "index_put_")
    if len(indices) > x._data.ndim:
        check_inplace(x, x._requires_grad or values._requires_grad)
        _check_index_count(x, indices)
    warn_expanded(x, "index_put_", "tensor[indices] = tensor")
    return apply_inplace(x, index_put, tuple(indices), values, accumulate)


def _index_put(x: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """``x`` with ``values`` written at ``indices`` (a copy)."""
    _check_index_types(indices, "index_put")
    _check_values(values, "index_put")
    _check_index_count(x, indices)
    return index_put(x, tuple(indices), values, accumulate)


index_put = declare("index_put", IndexPut, function=index_put,
                    methods={"index_put": _index_put, "index_put_": _index_put_},
                    functions={"index_put": _index_put})
setitem = declare("setitem", function=setitem, methods=("__setitem__",), functions=())
# (every op of this module is declared)
