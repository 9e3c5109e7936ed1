"""Indexing reads: ``x[...]``, ``select``, ``index_select`` and ``gather``.

``x[index]`` runs in torch's two phases. The basic part (ints, slices, None, Ellipsis) is a chain
of NumPy views, one node per step (SelectBackward0, SliceBackward0, UnsqueezeBackward0, or
AliasBackward0 when nothing changes). Index tensors, lists and bools are collected on the way into
torch's index list and applied at the end as one advanced-indexing copy (IndexBackward0).

Each backward scatters the gradient into zeros through a backward op of torch's name
(``select_backward``, ``slice_backward``, ``_index_put_impl``, ``index_select_backward``,
``gather_backward``), called as ``namespace_of(grad).ops.aten.<name>`` so that it runs on either
engine. Their nodes (SelectBackwardBackward0, SliceBackwardBackward0, IndexPutImplBackward0,
IndexAddBackward0, ScatterAddBackward0) have the read again as their backward, so gradients of
any order work.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Sequence

import numpy as np

from ..._args import not_a_tensor
from ..._dtype import FROM_NUMPY
from ..._tensor import Tensor, _wrap_dim, wrap
from .._op import JOINTLY_LINEAR, LINEAR, Overload, declare, dispatch, read_history
from ._builtin import namespace_of

__all__ = ["getitem", "select", "index_select", "gather", "narrow"]

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_ALL = slice(None)
_MASKS = (np.dtype(np.bool_), np.dtype(np.uint8))
_INTEGERS = (np.dtype(np.int64), np.dtype(np.int32))
_ZERO_DIM = ("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
_SEQUENCE_WARNING = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed "
    "in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be "
    "interpreted as tensor index, x[ext.tensor(seq)], which will result either in an error or a "
    "different result")
_UINT8_WARNING = ("indexing with dtype ext.uint8 is now deprecated, please use a dtype ext.bool "
                  "instead.")


# ------------------------------------------------------------------------------ node plumbing
class _Indexing(Overload):
    """Base of the overloads here: torch reads a saved index, start or end back as an unsigned
    64-bit integer, as it does a dim (-1 shows as 2**64 - 1)."""

    tensor_positions = (0,)
    unsigned_attrs = ("index", "start", "end")


def _zeros(sizes, dtype) -> Tensor:
    # The zeros a scatter writes into are an input of its node; nothing reads them, so a
    # broadcast scalar stands in for a full array.
    return wrap(np.broadcast_to(np.zeros((), dtype), tuple(sizes)))


def _colons(dim: int) -> tuple:
    return (_ALL,) * dim


def _index_vector(fn: str, index, position: int = 2) -> np.ndarray:
    """The index of an index_* op: a tensor of int64 (or int32) with at most one dim."""
    if type(index) is not Tensor:
        raise not_a_tensor(index, fn, "index", position)
    idx = index._data
    if idx.dtype not in _INTEGERS:
        raise IndexError(f"{fn}(): Expected dtype int32/int64 for index but got "
                         f"{FROM_NUMPY[idx.dtype]._short}")
    if idx.ndim > 1:
        raise IndexError(f"{fn}(): Index is supposed to be a vector")
    return idx.reshape(-1)


def _in_range(idx: np.ndarray, size: int, fn: str, dim: int = 0,
              error: type = IndexError) -> None:
    bad = (idx < -size) | (idx >= size)
    if bad.any():
        raise error(f"{fn}(): index {idx[bad][0]} is out of bounds for dimension {dim} with "
                    f"size {size}")


# ------------------------------------------------------------------------------ basic reads
class Alias(_Indexing):
    """``x[...]``: a new tensor over the same values; the gradient passes through."""

    node_name = "AliasBackward0"
    is_view = True
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        return grad


alias = declare("alias", Alias, function=lambda x: dispatch(Alias, x._data.view(), (x,)),
                methods=(), functions=())


class Select(_Indexing):
    """Entry ``index`` along ``dim`` (``x[i]``): the gradient is zeros with that entry filled."""

    node_name = "SelectBackward0"
    args = ("self", "dim", "index")
    saved_attrs = ("dim", "index", "self_sym_sizes")
    is_view = True
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        return namespace_of(grad).ops.aten.select_backward(
            grad, ctx.self_sym_sizes, ctx.dim, ctx.index), None, None


class Slice(_Indexing):
    """``start:end:step`` along ``dim``: the gradient is zeros with the slice filled."""

    node_name = "SliceBackward0"
    args = ("self", "dim", "start", "end", "step")
    saved_attrs = ("dim", "start", "end", "step", "self_sym_sizes")
    is_view = True
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        return (namespace_of(grad).ops.aten.slice_backward(
            grad, ctx.self_sym_sizes, ctx.dim, ctx.start, ctx.end, ctx.step),
            None, None, None, None)


class SelectBackward(_Indexing):
    """The gradient of a select (zeros of the input's shape, the entry set to ``grad``); its
    own gradient is the select again."""

    node_name = "SelectBackwardBackward0"
    args = ("grad_output", "input_sizes", "dim", "index")
    saved_attrs = ("dim", "index")
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        return grad.select(ctx.dim, ctx.index), None, None, None


class SliceBackward(_Indexing):
    """The gradient of a slice (zeros of the input's shape, the slice set to ``grad``); its own
    gradient is the slice again."""

    node_name = "SliceBackwardBackward0"
    args = ("grad_output", "input_sizes", "dim", "start", "end", "step")
    saved_attrs = ("dim", "start", "end", "step")
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        return (namespace_of(grad).ops.aten.slice(grad, ctx.dim, ctx.start, ctx.end, ctx.step),
                None, None, None, None, None)


def _select_backward(grad_output: Tensor, input_sizes, dim: int, index: int) -> Tensor:
    """Zeros of shape ``input_sizes`` with entry ``index`` along ``dim`` set to the gradient."""
    g = grad_output._data
    out = np.zeros(input_sizes, g.dtype)
    out[_colons(dim % len(input_sizes)) + (index, ...)] = g
    return dispatch(SelectBackward, out, (grad_output, input_sizes, dim, index))


def _slice_backward(grad_output: Tensor, input_sizes, dim: int, start: int, end: int,
                    step: int) -> Tensor:
    """Zeros of shape ``input_sizes`` with ``start:end:step`` along ``dim`` set to the
    gradient."""
    g = grad_output._data
    out = np.zeros(input_sizes, g.dtype)
    out[_colons(dim) + (slice(start, end, step),)] = g
    return dispatch(SliceBackward, out, (grad_output, input_sizes, dim, start, end, step))


select_backward = declare("select_backward", SelectBackward, function=_select_backward,
                          methods=(), functions=())
slice_backward = declare("slice_backward", SliceBackward, function=_slice_backward, methods=(),
                         functions=())


def _slice(x: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
           step: int = 1) -> Tensor:
    """aten's ``slice``: ``start:end:step`` along ``dim``, as a view."""
    pos = _wrap_dim(dim, x._data.ndim)
    start, end, step = _slice_args(slice(start, end, step))
    return dispatch(Slice, x._data[_colons(pos) + (slice(start, end, step),)],
                    (x, dim, start, end, step))


slice_ = declare("slice", Slice, function=_slice, methods=(), functions=())


def _select_error(index: int, real_dim: int, size: int) -> Exception:
    if not _INT64_MIN <= index <= _INT64_MAX:
        return ValueError("Overflow when unpacking long long")
    return IndexError(f"index {index} is out of bounds for dimension {real_dim} with size {size}")


def _select(x: Tensor, dim: int, index: int) -> Tensor:
    """Entry ``index`` along ``dim``, as a view without that dim."""
    if x._vc and x._vc[0]:
        read_history(x)
    d = x._data
    if not d.ndim:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    pos = _wrap_dim(dim, d.ndim)
    index = operator.index(index)
    if not -d.shape[pos] <= index < d.shape[pos]:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(d.shape)} at dimension {pos}")
    return dispatch(Select, d[_colons(pos) + (index, ...)], (x, dim, index))


select = declare("select", Select, function=_select)


def _slice_bound(value) -> int:
    if not hasattr(type(value), "__index__"):
        raise TypeError("slice indices must be integers or None or have an __index__ method")
    # Python clamps slice bounds to the 64-bit range.
    return min(max(operator.index(value), _INT64_MIN), _INT64_MAX)


def _slice_args(s: slice) -> tuple:
    """``(start, end, step)`` as torch records them (0 and 2**63 - 1 for missing bounds)."""
    step = 1 if s.step is None else _slice_bound(s.step)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    start = 0 if s.start is None else _slice_bound(s.start)
    end = _INT64_MAX if s.stop is None else _slice_bound(s.stop)
    if step < 0:
        raise ValueError("step must be greater than zero")
    return start, end, step


# ------------------------------------------------------------------------------ advanced reads
class Index(_Indexing):
    """``x[indices]`` with index tensors (advanced indexing, a copy): the gradient adds each
    element of grad where it was read, so repeated indices accumulate."""

    node_name = "IndexBackward0"
    args = ("self", "indices")
    saved_list = "indices"
    saved_attrs = ("self_sym_sizes",)
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        indices = ctx.saved_tensors
        return namespace_of(grad).ops.aten._index_put_impl(
            grad.new_zeros(ctx.self_sym_sizes), indices, grad, True, True), None


class IndexPutImpl(_Indexing):
    """``_index_put_impl(x, indices, values, accumulate, unsafe)``, out of place: the gradient
    of ``Index``. Its own gradients are grad (for ``x``) and the read ``grad[indices]``."""

    node_name = "IndexPutImplBackward0"
    args = ("self", "indices", "values", "accumulate", "unsafe")
    tensor_positions = (0, 2)
    saved_list = "indices"
    saved_attrs = ("accumulate",)
    jvp = JOINTLY_LINEAR

    @staticmethod
    def backward(ctx, grad):
        indices = ctx.saved_tensors
        ns = namespace_of(grad)
        gx = gv = None
        if ctx.needs_input_grad[0]:
            gx = grad if ctx.accumulate else \
                ns.ops.aten.index_put(grad, indices, grad.new_zeros(()))
        if ctx.needs_input_grad[2]:
            gv = ns.ops.aten.index(grad, indices)
        return gx, None, gv, None, None


def _sequence_as_tuple(index) -> bool:
    """NumPy's old rule, kept by torch with a warning: a short list holding a sequence, tensor,
    slice, None or Ellipsis is a tuple of indices (``x[[0, [1]]]`` is ``x[0, [1]]``)."""
    if not isinstance(index, Sequence) or len(index) >= 32:
        return False
    for obj in index:
        if isinstance(obj, (Tensor, Sequence, np.ndarray, slice)) or obj is None \
                or obj is Ellipsis:
            warnings.warn(_SEQUENCE_WARNING, UserWarning, stacklevel=4)
            return True
    return False


def _type_name(obj) -> str:
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _index_tensor(obj) -> Tensor:
    """A list or array used as an index, as torch converts it: bool (and uint8) arrays stay
    masks, anything else becomes int64 (floats truncated)."""
    if not isinstance(obj, (Sequence, np.ndarray)):
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                         f"Variables are valid indices (got {_type_name(obj)})")
    arr = np.asarray(obj)
    if arr.dtype.kind not in "biuf":
        kind = "str" if arr.dtype.kind in "SU" else "object"
        raise TypeError(f"new(): invalid data type '{kind}'")
    return wrap(arr if arr.dtype in _MASKS else arr.astype(np.int64))


def check_mask(mask_shape: tuple, shape: tuple, pos: int) -> None:
    """torch's IndexError for a mask whose shape differs from the dims it indexes."""
    for j, s in enumerate(mask_shape):
        if pos + j >= len(shape) or shape[pos + j] != s:
            raise IndexError(f"The shape of the mask {list(mask_shape)} at index {j} does not "
                             f"match the shape of the indexed tensor {list(shape)} at index "
                             f"{pos + j}")


def _check_arrays(key: list, shape: tuple, bounds: bool = True) -> None:
    """torch's checks of the index arrays: they broadcast together, and (with ``bounds``) each
    is in range (the first element out of range, in order, is the one reported; none when
    nothing is read)."""
    if _check_index_shapes(key, shape) and bounds:
        check_bounds(key, shape)


def _check_index_shapes(key: list, shape: tuple) -> bool:
    # The checks of the index arrays that come before the value's (in index_put): they
    # broadcast together, and no non-empty one indexes an empty dim. False: nothing is read.
    arrays = [(k, a) for k, a in enumerate(key) if type(a) is np.ndarray]
    if not arrays:
        return False
    if len(arrays) > 1:
        try:
            full = np.broadcast_shapes(*(a.shape for _, a in arrays))
        except ValueError:
            shapes = ", ".join(str(list(a.shape)) for _, a in arrays)
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                             f"with shapes {shapes}") from None
    else:
        full = arrays[0][1].shape
    if 0 in full:
        return False
    if any(shape[k] == 0 for k, _ in arrays):
        # No index is valid in an empty dim; torch says so even when nothing is read.
        raise IndexError("index is out of bounds for dimension with size 0")
    return True


def check_bounds(key, shape: tuple) -> None:
    """torch's IndexError for the first index out of range (none when nothing is read)."""
    arrays = [(k, a) for k, a in enumerate(key) if type(a) is np.ndarray]
    if not arrays:
        return
    full = np.broadcast_shapes(*(a.shape for _, a in arrays))
    if 0 in full:
        return
    for k, a in arrays:
        if a.size and (a.min() < -shape[k] or a.max() >= shape[k]):
            break
    else:
        return
    if not np.prod(_result_shape(shape, key)):
        return
    bad = [np.broadcast_to((a < -shape[k]) | (a >= shape[k]), full) for k, a in arrays]
    first = np.flatnonzero(np.logical_or.reduce(bad))[0]
    for n, ((k, a), b) in enumerate(zip(arrays, bad)):
        if b.flat[first]:
            value = np.broadcast_to(a, full).flat[first]
            raise IndexError(f"index {value} is out of bounds for dimension {n} with size "
                             f"{shape[k]}")


def _result_shape(shape: tuple, key) -> tuple:
    """The shape of an advanced read: the broadcast index shape replaces the indexed dims where
    they are adjacent, else it comes first."""
    arrays = [k for k, a in enumerate(key) if type(a) is np.ndarray]
    full = np.broadcast_shapes(*(key[k].shape for k in arrays))
    rest = tuple(s for k, s in enumerate(shape) if k not in arrays)
    if arrays == list(range(arrays[0], arrays[-1] + 1)):
        return rest[:arrays[0]] + full + rest[arrays[0]:]
    return full + rest


def take(d: np.ndarray, key: tuple) -> np.ndarray:
    """``d[key]``. An empty read with an index out of range is no error in torch (it reads
    nothing, so checks nothing), only in NumPy."""
    try:
        # Row-major like torch's result (NumPy lays some gathers out otherwise), so that which
        # later reshapes are views is the same.
        return np.ascontiguousarray(d[key])
    except IndexError:
        return np.empty(_result_shape(d.shape, key), d.dtype)


def numpy_key(shape: tuple, indices, validate: bool = True, bounds: bool = True) -> tuple:
    """NumPy's index for torch's index list on a tensor of ``shape``, and whether it reads each
    element at most once (masks only); with torch's checks when ``validate`` (but for the
    indices' range without ``bounds``)."""
    if validate:
        spans = sum(1 if e is None or e._data.dtype not in _MASKS else e._data.ndim
                    for e in indices)
        if spans > len(shape):
            raise IndexError(f"too many indices for tensor of dimension {len(shape)} (got "
                             f"{spans})")
    key = []
    unique = True
    for entry in indices:
        if entry is None:
            key.append(_ALL)
            continue
        a = entry._data
        if a.dtype in _MASKS:
            if validate:
                if a.dtype == np.uint8:
                    warnings.warn(_UINT8_WARNING, UserWarning, stacklevel=4)
                check_mask(a.shape, shape, len(key))
            key.extend(np.nonzero(a))
        elif a.dtype in _INTEGERS:
            key.append(a)
            unique = False
        else:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if validate:
        _check_arrays(key, shape, bounds)
    return tuple(key), unique


def _index(x: Tensor, indices, validate: bool = True) -> Tensor:
    """aten's ``index``: ``x[indices]`` for torch's index list (tensors, None for a whole dim),
    one copy."""
    indices = tuple(indices)
    key, _ = numpy_key(x._data.shape, indices, validate)
    return dispatch(Index, take(x._data, key), (x, indices))


index = declare("index", Index, function=_index, methods=(), functions=())


def _index_put_impl(x: Tensor, indices, values: Tensor, accumulate: bool = False,
                    unsafe: bool = False) -> Tensor:
    """A copy of ``x`` with ``values`` written (or added) at ``x[indices]``."""
    indices = tuple(indices)
    d, v = x._data, values._data
    key, unique = numpy_key(d.shape, indices, False)
    out = np.array(d)
    # When nothing was read there is nothing to add (and the indices may be out of range),
    # unless the saved indices were changed since (through saved-tensor hooks or ``.data``,
    # which no version check sees): then they are checked as torch's index_put_ does.
    if v.size or np.prod(_result_shape(d.shape, key)):
        try:
            if not accumulate:
                out[key] = v
            elif unique:
                out[key] += v
            else:
                np.add.at(out, key, v)
        except (ValueError, IndexError):
            _check_put(d.shape, key, v.shape)
            raise
    return dispatch(IndexPutImpl, out, (x, indices, values, accumulate, unsafe))


index_put_impl = declare("_index_put_impl", IndexPutImpl, function=_index_put_impl, methods=(),
                         functions=())


def _check_put(sizes: tuple, key: tuple, values_shape: tuple) -> None:
    """torch's errors for putting values of ``values_shape`` at ``key`` in a tensor of
    ``sizes``: the values must broadcast to what the indices select, which must be in range."""
    target = _result_shape(sizes, key)
    try:
        fits = np.broadcast_shapes(values_shape, target) == target
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values_shape)} cannot "
                           f"be broadcast to indexing result of shape {list(target)}")
    _check_arrays(list(key), sizes)


# ------------------------------------------------------------------------------ x[index]
def _bool_index(value: bool) -> Tensor:
    # A bool indexes a new dim of size 1: whole (True) or empty (False).
    return wrap(np.zeros(1 if value else 0, np.int64))


def _getitem_tuple(x: Tensor, index: tuple, for_write: bool = False):
    """torch's applySlicing: basic steps in order on a chain of views, index tensors collected
    into one index list for a final advanced read. With ``for_write``, the sliced view (or x
    itself when there are no basic steps) and the index list, which a write puts into."""
    d = x._data
    ndim = d.ndim
    specified = 0
    for obj in index:
        if type(obj) is Tensor:
            specified += obj._data.ndim if obj._data.dtype in _MASKS else 1
        elif obj is not None and obj is not Ellipsis and type(obj) is not bool:
            specified += 1
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    steps = []      # (op, args, view) per basic step
    indices = []    # torch's index list: a tensor, or None for a whole dim
    covered = 0     # the dims of the indexed tensor that ``indices`` spans
    cur = d
    dim = 0
    for i, obj in enumerate(index):
        t = type(obj)
        if t is not bool and isinstance(obj, (int, np.integer)):
            t = int
        elif not (t is slice or t is bool or obj is None or obj is Ellipsis or t is Tensor):
            obj = _index_tensor(obj)
            t = Tensor
        if t is Tensor and not obj._data.ndim and obj._data.dtype.kind in "biu":
            # A 0-d integer tensor indexes like an int, a 0-d bool like a bool.
            t = bool if obj._data.dtype in _MASKS else int
        if t is int:
            obj = int(obj)
            # Two Ellipses can push dim past the end; torch then sees a size of 0.
            size = cur.shape[dim] if dim < cur.ndim else 0
            if not -size <= obj < size:
                raise _select_error(obj, i, size)
            cur = cur[_colons(dim) + (obj, ...)]
            steps.append((Select, (dim, obj), cur))
        elif t is slice:
            start, end, step = _slice_args(obj)
            if dim >= cur.ndim:
                _wrap_dim(dim, cur.ndim)  # raises torch's error
            if start == 0 and step == 1 and end >= cur.shape[dim]:
                # torch skips a slice that keeps the whole dim (a lone one is still recorded).
                dim += 1
                continue
            cur = cur[_colons(dim) + (slice(start, end, step),)]
            steps.append((Slice, (dim, start, end, step), cur))
            dim += 1
        elif obj is None or t is bool:
            cur = np.expand_dims(cur, _wrap_dim(dim, cur.ndim + 1))
            steps.append((None, (dim,), cur))  # (unsqueeze)
            if t is bool:
                covered = _put_index(indices, covered, dim, _bool_index(bool(obj)))
            dim += 1
        elif obj is Ellipsis:
            dim += ndim - specified
        else:
            covered = _put_index(indices, covered, dim, obj)
            dim += obj._data.ndim if obj._data.dtype in _MASKS else 1
    if for_write:
        return _chain(x, steps), tuple(indices)
    if indices:
        key, _ = numpy_key(cur.shape, indices)
        return dispatch(Index, take(cur, key), (_chain(x, steps), tuple(indices)))
    if not steps:
        return dispatch(Alias, d.view(), (x,))
    return _chain(x, steps)


def _put_index(indices: list, covered: int, dim: int, tensor: Tensor) -> int:
    """Put ``tensor`` into the index list at ``dim``; return the dims the list now spans."""
    while covered < dim:
        indices.append(None)
        covered += 1
    indices.append(tensor)
    return covered + (tensor._data.ndim if tensor._data.dtype in _MASKS else 1)


def _chain(x: Tensor, steps: list) -> Tensor:
    """The tensor after the basic steps, one view (and node, when recording) per step."""
    for op, args, data in steps:
        x = x.unsqueeze(*args) if op is None else dispatch(op, data, (x, *args))
    return x


def slicing(x: Tensor, index) -> tuple:
    """Where ``x[index] = value`` writes: the view the basic part of ``index`` selects (x itself
    if none) and the index list (tensors, None for a whole dim) applied within it."""
    t = type(index)
    if t is Tensor and index._data.ndim and index._data.dtype in _INTEGERS and x._data.ndim:
        return x, (index,)
    if t is not tuple:
        if t is int or t is slice or index is None or index is Ellipsis or \
                isinstance(index, np.integer):
            return getitem(x, index), ()
        index = tuple(index) if t is not Tensor and _sequence_as_tuple(index) else (index,)
    return _getitem_tuple(x, index, for_write=True)


def getitem(x: Tensor, index) -> Tensor:
    """``x[index]`` with torch's semantics: ints, slices (positive steps), None, Ellipsis and
    0-d integer tensors give views; bool masks, index tensors and lists give copies."""
    t = type(index)
    if t is Tensor and index._data.ndim and index._data.dtype in _INTEGERS and x._data.ndim:
        # One index tensor: no basic steps, straight to the advanced read.
        return _index(x, (index,))
    if t is int:
        d = x._data
        if not d.ndim:
            raise IndexError(_ZERO_DIM) if index == 0 else _select_error(index, 0, 0)
        if not -d.shape[0] <= index < d.shape[0]:
            raise _select_error(index, 0, d.shape[0])
        return dispatch(Select, d[index, ...], (x, 0, index))
    if t is slice:
        start, end, step = _slice_args(index)
        if not x._data.ndim:
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        return dispatch(Slice, x._data[start:end:step], (x, 0, start, end, step))
    if t is not tuple and t is not Tensor:
        if index is None:
            return x.unsqueeze(0)
        if index is Ellipsis:
            return dispatch(Alias, x._data.view(), (x,))
        if isinstance(index, np.integer):
            return getitem(x, int(index))
        index = tuple(index) if _sequence_as_tuple(index) else (index,)
    return _getitem_tuple(x, index if t is not Tensor else (index,))


# ------------------------------------------------------------------------------ index_select
class IndexSelect(_Indexing):
    """Entries ``index`` along ``dim``: the gradient adds grad back at those entries."""

    node_name = "IndexSelectBackward0"
    args = ("self", "dim", "index")
    saved_fields = ("index",)
    saved_attrs = ("dim", "self_sym_sizes")
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return namespace_of(grad).ops.aten.index_select_backward(
            grad, ctx.self_sym_sizes, ctx.dim, index), None, None


class IndexAdd(_Indexing):
    """``x.index_add(dim, index, source, alpha=alpha)``: the gradient of ``IndexSelect``. Its
    own gradients are grad (for ``x``) and ``alpha * grad.index_select(dim, index)``."""

    node_name = "IndexAddBackward0"
    args = ("self", "dim", "index", "source", "alpha")
    tensor_positions = (0, 3)
    saved_fields = ("index", "source")
    saved_attrs = ("alpha", "dim", "source_dim")
    jvp = JOINTLY_LINEAR

    @staticmethod
    def forward(x, dim, index, source, alpha=1):
        return namespace_of(x).ops.aten.index_add(x, dim, index, source, alpha=alpha)

    @staticmethod
    def backward(ctx, grad):
        index, source = ctx.saved_tensors
        gsource = None
        if ctx.needs_input_grad[3]:
            if ctx.source_dim:
                gsource = grad.index_select(ctx.dim, index).expand_as(source)
            else:
                # A 0-d source was added through a one-element index.
                gsource = grad.index_select(ctx.dim, index.squeeze(0))
            if ctx.alpha != 1:
                gsource = gsource * ctx.alpha
        return grad if ctx.needs_input_grad[0] else None, None, None, gsource, None


def _check_index_arg(fn: str, index) -> None:
    if type(index) is not Tensor:
        raise not_a_tensor(index, fn, "index", 2)


def _index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """The entries ``index`` (a vector of int64 or int32) along ``dim``, as a copy."""
    _check_index_arg("index_select", index)
    d, idx = x._data, index._data
    pos = _wrap_dim(dim, d.ndim)
    if idx.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if idx.dtype not in _INTEGERS:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if not d.ndim and idx.size != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                           f"{idx.size} value(s)")
    size = d.shape[pos] if d.ndim else 1
    bad = (idx < 0) | (idx >= size)
    if bad.any():
        if pos == 1 and d.ndim > 1:
            # torch's kernel for dim 1 has its own check and message.
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={idx[bad][0]} "
                               f"axis_dim={size}")
        raise IndexError("index out of range in self")
    data = np.take(d, idx.reshape(-1), axis=pos) if d.ndim else d.copy()
    return dispatch(IndexSelect, data, (x, dim, index))


index_select = declare("index_select", IndexSelect, function=_index_select)


def _index_add(x: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """aten's ``index_add``: a copy of ``x`` with ``alpha * source`` added at entries ``index``
    along ``dim``."""
    out = np.array(x._data)
    s = source._data if alpha == 1 else source._data * alpha
    if out.ndim:
        np.add.at(out, _colons(_wrap_dim(dim, out.ndim)) + (index._data.reshape(-1),), s)
    else:
        out += s.reshape(())
    return dispatch(IndexAdd, out, (x, dim, index, source, alpha))




def _index_select_backward(grad: Tensor, self_sizes, dim: int, index: Tensor) -> Tensor:
    """Zeros of shape ``self_sizes`` plus ``grad`` at entries ``index`` along ``dim``."""
    return _index_add(_zeros(self_sizes, grad._data.dtype), dim, index, grad)


index_select_backward = declare("index_select_backward", function=_index_select_backward,
                                methods=(), functions=())


# ------------------------------------------------------------------------------ gather
class Gather(_Indexing):
    """``out[i][j] = x[index[i][j]][j]`` (for dim 0): the gradient adds grad back where each
    element was read."""

    node_name = "GatherBackward0"
    args = ("self", "dim", "index", "sparse_grad")
    saved_fields = ("self", "index")
    saved_attrs = ("dim", "sparse_grad")
    jvp = LINEAR

    @staticmethod
    def forward(x, dim, index, sparse_grad=False):
        return x.gather(dim, index, sparse_grad=sparse_grad)

    @staticmethod
    def backward(ctx, grad):
        x, index = ctx.saved_tensors
        return namespace_of(grad).ops.aten.gather_backward(
            grad, x, ctx.dim, index, ctx.sparse_grad), None, None, None


class ScatterAdd(_Indexing):
    """``x.scatter_add(dim, index, src)``: the gradient of ``Gather``. Its own gradients are
    grad (for ``x``) and ``grad.gather(dim, index)`` (for ``src``)."""

    node_name = "ScatterAddBackward0"
    args = ("self", "dim", "index", "src")
    tensor_positions = (0, 3)
    saved_fields = ("index",)
    saved_attrs = ("dim",)
    jvp = JOINTLY_LINEAR

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        gsrc = grad.gather(ctx.dim, index) if ctx.needs_input_grad[3] else None
        return grad if ctx.needs_input_grad[0] else None, None, None, gsrc


def _along(index: np.ndarray, dim: int) -> tuple:
    """The NumPy index that pairs each element of ``index`` with its own position in the other
    dims: what gather reads and scatter_add writes."""
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


def _gather(x: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """Values of ``x`` along ``dim`` at ``index``, one per element of ``index``. ext has no
    sparse tensors: the gradient is dense whatever ``sparse_grad`` says."""
    _check_index_arg("gather", index)
    d, idx = x._data, index._data
    pos = _wrap_dim(dim, d.ndim)
    if not idx.size:  # (torch reads nothing and checks nothing for an empty index)
        return dispatch(Gather, np.empty(idx.shape, d.dtype), (x, dim, index, sparse_grad))
    if idx.dtype not in _INTEGERS:
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    if max(idx.ndim, 1) != max(d.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    # A 0-d tensor reads like a 1-d tensor of one element.
    src = d.reshape(-1) if not d.ndim else d
    ix = idx.reshape(-1) if not idx.ndim else idx
    for k, s in enumerate(ix.shape):
        if k != pos and s > src.shape[k]:
            raise RuntimeError(f"Size does not match at dimension {k} expected index "
                               f"{list(idx.shape)} to be no larger than self {list(d.shape)} "
                               f"apart from dimension {pos}")
    size = src.shape[pos]
    bad = (ix < 0) | (ix >= size)
    if bad.any():
        raise RuntimeError(f"index {ix[bad][0]} is out of bounds for dimension {pos} with size "
                           f"{size}")
    return dispatch(Gather, src[_along(ix, pos)].reshape(idx.shape), (x, dim, index, sparse_grad))


gather = declare("gather", Gather, function=_gather)


def _scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """aten's ``scatter_add``: a copy of ``x`` with each element of ``src`` (as far as
    ``index`` reaches) added at its place along ``dim`` given by ``index``."""
    out = np.array(x._data)
    flat = out.reshape(-1) if not out.ndim else out
    idx = index._data
    ix = idx.reshape(-1) if not idx.ndim else idx
    s = src._data.reshape(-1) if not src._data.ndim else src._data
    if ix.size:  # (an empty index adds nothing, whatever its shape)
        np.add.at(flat, _along(ix, _wrap_dim(dim, flat.ndim)),
                  s[tuple(slice(n) for n in ix.shape)])
    return dispatch(ScatterAdd, out, (x, dim, index, src))




# ---------------------------------------------------------------------------------- index_add
def _index_add_checked(x: Tensor, dim: int, index: Tensor, source: Tensor, *,
                       alpha=1) -> Tensor:
    """A copy of ``x`` with ``alpha * source`` added at its slices ``index`` along ``dim``
    (an index named twice adds twice)."""
    idx = _index_vector("index_add", index)
    if type(source) is not Tensor:
        raise not_a_tensor(source, "index_add", "source", 3)
    d, s = x._data, source._data
    pos = _wrap_dim(dim, d.ndim)
    if s.ndim and d.ndim and (s.ndim != d.ndim or any(
            a != b for k, (a, b) in enumerate(zip(d.shape, s.shape)) if k != pos)):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(d.shape)} "
                           f"source.shape = {list(s.shape)}")
    count = s.shape[pos] if s.ndim else 1
    if idx.size != count:
        raise RuntimeError(f"index_add_(): Number of indices ({idx.size}) should be equal to "
                           f"source.size(dim): ({count}), for dim: {pos}")
    _in_range(idx, d.shape[pos] if d.ndim else 1, "index_add_", pos, RuntimeError)
    return _index_add(x, dim, index, source, alpha=alpha)


index_add = declare("index_add", IndexAdd, function=_index_add,
                    methods={"index_add": _index_add_checked},
                    functions={"index_add": _index_add_checked},
                    inplace=(("index_add_", _index_add_checked),))


def _scatter_add_checked(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``x`` with each element of ``src`` added at its place along ``dim`` given by
    ``index`` (``out[index[i][j]][j] += src[i][j]`` for dim 0)."""
    if type(index) is not Tensor:
        raise not_a_tensor(index, "scatter_add", "index", 3)
    if type(src) is not Tensor:
        raise not_a_tensor(src, "scatter_add", "src", 4)
    from .reduction import _check_scatter  # (reduction's ops load after these)

    _check_scatter(x._data, _wrap_dim(dim, x._data.ndim), index._data, src)
    return _scatter_add(x, dim, index, src)


scatter_add = declare("scatter_add", ScatterAdd, function=_scatter_add,
                      methods={"scatter_add": _scatter_add_checked},
                      functions={"scatter_add": _scatter_add_checked},
                      inplace=(("scatter_add_", _scatter_add_checked),))


def _gather_backward(grad: Tensor, self: Tensor, dim: int, index: Tensor,
                     sparse_grad: bool) -> Tensor:
    """Zeros of self's shape plus each element of ``grad`` where gather read it."""
    return _scatter_add(_zeros(self._data.shape, grad._data.dtype), dim, index, grad)


gather_backward = declare("gather_backward", function=_gather_backward, methods=(),
                          functions=())



def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    """``length`` entries along ``dim`` from ``start``, as a view (a slice, as in torch)."""
    d = x._data
    if not d.ndim:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    pos = _wrap_dim(dim, d.ndim)
    size = d.shape[pos]
    if isinstance(start, Tensor):  # (torch takes a 0-d integer tensor as the start)
        if start._data.ndim or start._data.dtype.kind not in "iu":
            raise RuntimeError("start must be an 0-dim integral Tensor.")
        start = int(start._data)
    start, length = operator.index(start), operator.index(length)
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], "
                         f"but got {start})")
    if start < 0:
        start += size
    if length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({size}).")
    return dispatch(Slice, d[_colons(pos) + (slice(start, start + length),)],
                    (x, pos, start, start + length, 1))

narrow = declare("narrow", function=narrow)
getitem = declare("getitem", function=getitem, methods=("__getitem__",), functions=())
# (every op of this module is declared)
