"""The views' copies (expand_copy, diagonal_copy, ...), the scatter forms of views (select_scatter,
slice_scatter, diagonal_scatter, as_strided_scatter), as_strided and the conjugate-free complex
spellings on real tensors.

A ``*_copy`` op is its view computed and copied into fresh storage: its node is the view's, named
with torch's ``_copy`` suffix, and its backward the view's own.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from ..._tensor import Tensor, _wrap_dim, wrap
from ..._warnings import warn_once
from .._op import JOINTLY_LINEAR, LINEAR, Overload, declare, dispatch, read_history
from ._builtin import namespace_of
from .arrange import Diagonal, Unfold, diag_embed, show_unsigned
from .indexing import Alias, _slice_args, slice_
from .shape import (
    Expand,
    Permute,
    SplitWithSizes,
    SqueezeAll,
    SqueezeDim,
    SqueezeDims,
    T,
    Transpose,
    Unbind,
    Unsqueeze,
    View,
)

__all__ = ["expand_copy", "diagonal_copy", "alias_copy", "narrow_copy", "view_copy",
           "permute_copy", "split_with_sizes_copy", "unbind_copy", "squeeze_copy",
           "unsqueeze_copy", "t_copy", "transpose_copy", "unfold_copy", "diag", "as_strided",
           "as_strided_copy", "as_strided_scatter", "select_scatter", "slice_scatter"]


def _copy_overload(view: type) -> type:
    """The overload of a view's copy: the view's saves and backward, torch's ``_copy`` node."""
    own = {"node_name": f"{view.node_name}_copy", "is_view": False,
           "__doc__": f"A copy of the view {view.node_name[:-len('Backward0')]}.",
           "__module__": __name__}
    if "setup_context" in view.__dict__:
        own["setup_context"] = view.__dict__["setup_context"]
    return type(f"{view.__name__}Copy", (view,), own)


ExpandCopy, DiagonalCopy, AliasCopy, ViewCopy, PermuteCopy = map(
    _copy_overload, (Expand, Diagonal, Alias, View, Permute))
SplitWithSizesCopy, UnbindCopy, SqueezeAllCopy, SqueezeDimCopy, SqueezeDimsCopy = map(
    _copy_overload, (SplitWithSizes, Unbind, SqueezeAll, SqueezeDim, SqueezeDims))
UnsqueezeCopy, TCopy, TransposeCopy, UnfoldCopy = map(
    _copy_overload, (Unsqueeze, T, Transpose, Unfold))


def _copied(view: Tensor | tuple | list):
    """The data of a view (or of a list of views) copied into fresh C-ordered arrays."""
    if isinstance(view, (tuple, list)):
        return tuple(v._data.copy() for v in view)
    return view._data.copy()


# (each runs its view on a detached alias, so that only the copy's node is recorded)
def expand_copy(input: Tensor, size: Sequence[int], *, implicit: bool = False) -> Tensor:
    """A copy of ``input.expand(size)``."""
    return dispatch(ExpandCopy, _copied(input.detach().expand(size)), (input, tuple(size)))


def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A copy of ``input.diagonal(offset, dim1, dim2)``."""
    return dispatch(DiagonalCopy, _copied(input.detach().diagonal(offset, dim1, dim2)),
                    (input, offset, dim1, dim2))


def alias_copy(input: Tensor) -> Tensor:
    """A copy of ``input``, as the copy of its alias."""
    return dispatch(AliasCopy, input._data.copy(), (input,))


def view_copy(input: Tensor, size: Sequence[int]) -> Tensor:
    """A copy of ``input.view(size)``."""
    size = tuple(size) if isinstance(size, (list, tuple)) else size
    return dispatch(ViewCopy, _copied(input.detach().view(size)), (input, size))


def permute_copy(input: Tensor, dims: Sequence[int]) -> Tensor:
    """A copy of ``input.permute(dims)``."""
    return dispatch(PermuteCopy, _copied(input.detach().permute(dims)), (input, tuple(dims)))


def split_with_sizes_copy(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple:
    """Copies of ``input.split_with_sizes(split_sizes, dim)``."""
    sizes = tuple(map(operator.index, split_sizes))
    return dispatch(SplitWithSizesCopy, _copied(input.detach().split_with_sizes(sizes, dim)),
                    (input, sizes, dim))


def unbind_copy(input: Tensor, dim: int = 0) -> tuple:
    """Copies of ``input.unbind(dim)``."""
    return dispatch(UnbindCopy, _copied(input.detach().unbind(dim)), (input, dim))


def squeeze_copy(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """A copy of ``input.squeeze(dim)``."""
    data = _copied(input.detach().squeeze(dim))
    if dim is None:
        return dispatch(SqueezeAllCopy, data, (input,))
    ov = SqueezeDimsCopy if isinstance(dim, (tuple, list)) else SqueezeDimCopy
    return dispatch(ov, data, (input, tuple(dim) if isinstance(dim, list) else dim))


def unsqueeze_copy(input: Tensor, dim: int) -> Tensor:
    """A copy of ``input.unsqueeze(dim)``."""
    return dispatch(UnsqueezeCopy, _copied(input.detach().unsqueeze(dim)), (input, dim))


def t_copy(input: Tensor) -> Tensor:
    """A copy of ``input.t()``."""
    return dispatch(TCopy, _copied(input.detach().t()), (input,))


def transpose_copy(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """A copy of ``input.transpose(dim0, dim1)``."""
    return dispatch(TransposeCopy, _copied(input.detach().transpose(dim0, dim1)),
                    (input, dim0, dim1))


def unfold_copy(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """A copy of ``input.unfold(dimension, size, step)``."""
    return dispatch(UnfoldCopy, _copied(input.detach().unfold(dimension, size, step)),
                    (input, dimension, size, step))


expand_copy = declare("expand_copy", ExpandCopy, function=expand_copy, methods=())
diagonal_copy = declare("diagonal_copy", DiagonalCopy, function=diagonal_copy, methods=())
alias_copy = declare("alias_copy", AliasCopy, function=alias_copy, methods=())
view_copy = declare("view_copy", ViewCopy, function=view_copy, methods=())
permute_copy = declare("permute_copy", PermuteCopy, function=permute_copy, methods=())
split_with_sizes_copy = declare("split_with_sizes_copy", SplitWithSizesCopy,
                                function=split_with_sizes_copy, methods=())
unbind_copy = declare("unbind_copy", UnbindCopy, function=unbind_copy, methods=())
squeeze_copy = declare("squeeze_copy", SqueezeAllCopy, SqueezeDimCopy, SqueezeDimsCopy,
                       function=squeeze_copy, methods=())
unsqueeze_copy = declare("unsqueeze_copy", UnsqueezeCopy, function=unsqueeze_copy, methods=())
t_copy = declare("t_copy", TCopy, function=t_copy, methods=())
transpose_copy = declare("transpose_copy", TransposeCopy, function=transpose_copy, methods=())
unfold_copy = declare("unfold_copy", UnfoldCopy, function=unfold_copy, methods=())


class NarrowCopy(Overload):
    """A copy of ``length`` entries along ``dim`` from ``start``: the gradient is zeros with
    that range filled."""

    node_name = "NarrowCopyBackward0"
    args = ("self", "dim", "start", "length")
    saved_attrs = ("dim", "length", "self_sym_sizes", "start")
    tensor_positions = (0,)
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        sizes = ctx.self_sym_sizes
        dim = ctx.dim % len(sizes)
        start = ctx.start % sizes[dim] if ctx.start < 0 else ctx.start
        return (namespace_of(grad).ops.aten.slice_backward(
            grad, sizes, dim, start, start + ctx.length, 1), None, None, None)


def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A copy of ``input.narrow(dim, start, length)``."""
    d = input._data
    if d.ndim and not -d.ndim <= dim < d.ndim and dim >= 0:
        raise RuntimeError("Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, "
                           "but got false.  (Could this error message be improved?  If so, "
                           "please report an enhancement request to PyTorch.)")
    if length < 0 and d.ndim:
        size = d.shape[_wrap_dim(dim, d.ndim)]
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({size}).")
    return dispatch(NarrowCopy, _copied(input.detach().narrow(dim, start, length)),
                    (input, dim, start, length))


narrow_copy = declare("narrow_copy", NarrowCopy, function=narrow_copy)
show_unsigned(NarrowCopy, "start")
show_unsigned(DiagonalCopy, "offset")


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-d tensor laid on the diagonal ``diagonal`` of a matrix, or the diagonal of a matrix
    (a copy)."""
    n = input._data.ndim
    if n == 1:
        return diag_embed(input, diagonal)
    if n == 2:
        return diagonal_copy(input, diagonal)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {n}D")


diag = declare("diag", function=diag)


# -------------------------------------------------------------------------------- slice
def _slice_function(input: Tensor, dim: int = 0, start: int | None = None,
                    end: int | None = None, step: int = 1) -> Tensor:
    """aten's ``slice``: ``start:end:step`` along ``dim``, as a view."""
    return slice_(input, dim, start, end, step)


# (``torch.ops.aten.slice.Tensor``, which torch's op list calls ``slice``)
declare("slice.Tensor", function=_slice_function, methods=(), functions={"slice": _slice_function})


# ------------------------------------------------------------------------------ as_strided
def _root(d: np.ndarray) -> np.ndarray:
    """The NumPy array that owns ``d``'s memory (its storage)."""
    while isinstance(d.base, np.ndarray):
        d = d.base
    return d


def _storage(x: Tensor) -> tuple:
    """``x``'s storage as a flat array of its dtype, and ``x``'s offset into it, in elements."""
    d = x._data
    root = _root(d)
    if not root.flags.c_contiguous or root.dtype != d.dtype or not d.size:
        flat = d.reshape(-1) if d.flags.c_contiguous else np.ascontiguousarray(d).reshape(-1)
        return flat, 0
    offset = (d.__array_interface__["data"][0] - root.__array_interface__["data"][0]) \
        // d.itemsize
    return root.reshape(-1), offset


def storage_offset(x: Tensor) -> int:
    """The tensor's offset in elements into its storage (either engine)."""
    if type(x) is Tensor:
        return _storage(x)[1]
    return x.storage_offset()


def _positions(size, stride, offset: int) -> np.ndarray:
    """The storage position of each entry of a strided geometry."""
    pos = np.full(tuple(size), offset, np.int64)
    for k, (n, st) in enumerate(zip(size, stride)):
        pos += (np.arange(n, dtype=np.int64) * st).reshape((-1,) + (1,) * (len(size) - k - 1))
    return pos


def _strided_grad(grad, sizes, strides, offset, in_sizes, in_strides, in_offset):
    """The gradient of an as_strided read: ``grad`` added into the storage positions it read,
    then read back at the input's positions."""
    out_pos = _positions(sizes, strides, offset).reshape(-1)
    in_pos = _positions(in_sizes, in_strides, in_offset).reshape(-1)
    n = int(max(out_pos.max(initial=-1), in_pos.max(initial=-1))) + 1
    ns = namespace_of(grad)
    flat = grad.new_zeros((n,))
    flat = ns.ops.aten.index_add(flat, 0, ns.tensor(out_pos, dtype=ns.int64), grad.reshape(-1))
    return flat.index_select(0, ns.tensor(in_pos, dtype=ns.int64)).reshape(tuple(in_sizes))


class AsStrided(Overload):
    """A view of the storage with the given sizes, strides and offset; the gradient adds each
    entry's back into the positions it read."""

    node_name = "AsStridedBackward0"
    args = ("self", "size", "stride", "storage_offset")
    saved_attrs = ("size", "storage_offset", "stride")
    tensor_positions = (0,)
    is_view = True
    jvp = LINEAR
    ctx_attrs = ("geometry",)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, ctx.size, ctx.stride, ctx.storage_offset = inputs
        ctx.geometry = (tuple(x.shape), tuple(x.stride()), storage_offset(x))

    @staticmethod
    def backward(ctx, grad):
        # (no offset given: the input's own)
        offset = ctx.geometry[2] if ctx.storage_offset is None else ctx.storage_offset
        return (_strided_grad(grad, ctx.size, ctx.stride, offset, *ctx.geometry),
                None, None, None)


AsStridedCopy = _copy_overload(AsStrided)


def _strided(x: Tensor, size, stride, offset) -> tuple:
    """The as_strided NumPy view of ``x``'s storage, and the offset used."""
    size = tuple(map(operator.index, size))
    stride = tuple(map(operator.index, stride))
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    flat, own = _storage(x)
    offset = own if offset is None else operator.index(offset)
    if any(s < 0 for s in size) or any(s < 0 for s in stride) or offset < 0:
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    need = 0 if 0 in size else offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if need > flat.size:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {offset}, and itemsize {flat.itemsize} requiring a storage "
                           f"size of {need * flat.itemsize} are out of bounds for storage of "
                           f"size {flat.size * flat.itemsize}")
    base = flat[offset:] if offset < flat.size else flat[:0]
    data = np.lib.stride_tricks.as_strided(base, size, tuple(s * flat.itemsize for s in stride),
                                           writeable=x._data.flags.writeable)
    return data, size, stride, offset


def as_strided(input: Tensor, size: Sequence[int], stride: Sequence[int],
               storage_offset: int | None = None) -> Tensor:
    """A view of ``input``'s storage with the given sizes, strides (in elements) and offset."""
    if input._vc and input._vc[0]:
        read_history(input)
    data, size, stride, _ = _strided(input, size, stride, storage_offset)
    return dispatch(AsStrided, data, (input, size, stride, storage_offset))


def as_strided_copy(input: Tensor, size: Sequence[int], stride: Sequence[int],
                    storage_offset: int | None = None) -> Tensor:
    """A copy of ``input.as_strided(size, stride, storage_offset)``."""
    data, size, stride, _ = _strided(input, size, stride, storage_offset)
    return dispatch(AsStridedCopy, data.copy(), (input, size, stride, storage_offset))


def _as_strided_(self: Tensor, size: Sequence[int], stride: Sequence[int],
                 storage_offset: int | None = None) -> Tensor:
    """This tensor made the as_strided view of its storage (its values are not written)."""
    if self._requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    view = as_strided(self, size, stride, storage_offset)
    self._data = view._data
    if view._grad_fn is not None:
        self._grad_fn, self._output_nr = view._grad_fn, 0
    return self


as_strided = declare("as_strided", AsStrided, function=as_strided, methods={
    "as_strided": as_strided, "as_strided_": _as_strided_},
    functions={"as_strided": as_strided, "as_strided_": _as_strided_})
as_strided_copy = declare("as_strided_copy", AsStridedCopy, function=as_strided_copy, methods=())


class AsStridedScatter(Overload):
    """A copy of ``input`` with an as_strided view of it set to ``src``."""

    node_name = "AsStridedScatterBackward0"
    args = ("self", "src", "size", "stride", "storage_offset")
    saved_attrs = ("size", "storage_offset", "stride")
    tensor_positions = (0, 1)
    jvp = JOINTLY_LINEAR
    ctx_attrs = ("self_sizes",)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.size, ctx.stride, ctx.storage_offset = inputs[2:]
        ctx.self_sizes = tuple(inputs[0].shape)

    @staticmethod
    def backward(ctx, grad):
        # torch's formula, as torch computes it: the input's gradient is the strided part of
        # grad laid into zeros (where the true one would zero that part), src's that part.
        size, stride, offset = ctx.size, ctx.stride, ctx.storage_offset
        ns = namespace_of(grad)
        part = grad.clone(memory_format=ns.contiguous_format).as_strided(size, stride, offset)
        zeros = grad.new_zeros(ctx.self_sizes)
        return (zeros.as_strided_scatter(part, size, stride, offset), part.clone(), None, None,
                None)


def as_strided_scatter(input: Tensor, src: Tensor, size: Sequence[int], stride: Sequence[int],
                       storage_offset: int | None = None) -> Tensor:
    """A copy of ``input`` (in fresh contiguous storage) whose as_strided view is set to
    ``src``."""
    if type(src) is not Tensor:
        raise TypeError(f"as_strided_scatter(): argument 'src' (position 2) must be Tensor, not "
                        f"{type(src).__name__}")
    out = wrap(np.ascontiguousarray(input._data).copy())
    data, size, stride, _ = _strided(out, size, stride,
                                     0 if storage_offset is None else storage_offset)
    if data.shape != src._data.shape:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src._data.shape)}, slice size = {list(data.shape)}")
    data[...] = src._data
    return dispatch(AsStridedScatter, out._data, (input, src, size, stride, storage_offset))


as_strided_scatter = declare("as_strided_scatter", AsStridedScatter, function=as_strided_scatter)


# ------------------------------------------------------------------------ select/slice scatter
class SelectScatter(Overload):
    """A copy of ``input`` with entry ``index`` along ``dim`` set to ``src``."""

    node_name = "SelectScatterBackward0"
    args = ("self", "src", "dim", "index")
    saved_attrs = ("dim", "index")
    tensor_positions = (0, 1)
    jvp = JOINTLY_LINEAR
    ctx_attrs = ("src_sizes",)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.dim, ctx.index = inputs[2:]
        ctx.src_sizes = tuple(inputs[1].shape)

    @staticmethod
    def backward(ctx, grad):
        zeros = grad.new_zeros(ctx.src_sizes)
        return (grad.select_scatter(zeros, ctx.dim, ctx.index), grad.select(ctx.dim, ctx.index),
                None, None)


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``input.select(dim, index)`` set to ``src``."""
    view = input.detach().select(dim, index)
    if view._data.shape != src._data.shape:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src._data.shape)}, slice size = {list(view._data.shape)}")
    out = input._data.copy()
    pos = _wrap_dim(dim, out.ndim)
    out[(slice(None),) * pos + (operator.index(index), Ellipsis)] = src._data
    return dispatch(SelectScatter, out, (input, src, dim, index))


select_scatter = declare("select_scatter", SelectScatter, function=select_scatter)
show_unsigned(SelectScatter, "index")


class SliceScatter(Overload):
    """A copy of ``input`` with a slice along ``dim`` set to ``src``."""

    node_name = "SliceScatterBackward0"
    args = ("self", "src", "dim", "start", "end", "step")
    saved_attrs = ("dim", "end", "start", "step")
    tensor_positions = (0, 1)
    jvp = JOINTLY_LINEAR
    ctx_attrs = ("src_sizes",)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.dim, ctx.start, ctx.end, ctx.step = inputs[2:]
        ctx.src_sizes = tuple(inputs[1].shape)

    @staticmethod
    def backward(ctx, grad):
        dim, start, end, step = ctx.dim, ctx.start, ctx.end, ctx.step
        zeros = grad.new_zeros(ctx.src_sizes)
        return (grad.slice_scatter(zeros, dim, start, end, step),
                namespace_of(grad).ops.aten.slice(grad, dim, start, end, step),
                None, None, None, None)


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1) -> Tensor:
    """A copy of ``input`` with ``input[..., start:end:step]`` (along ``dim``) set to ``src``."""
    d = input._data
    pos = _wrap_dim(dim, d.ndim)
    a, b, c = _slice_args(slice(start, end, step))
    key = (slice(None),) * pos + (slice(a, b, c),)
    out = d.copy()
    if out[key].shape != src._data.shape:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src._data.shape)}, slice size = {list(out[key].shape)}")
    out[key] = src._data
    return dispatch(SliceScatter, out, (input, src, dim, start, end, step))


slice_scatter = declare("slice_scatter", SliceScatter, function=slice_scatter)
show_unsigned(SliceScatter, "start", "end")


# --------------------------------------------------------------- conjugate transposes (real)
def _conj_transpose(name: str):
    def fn(x: Tensor) -> Tensor:
        if x._data.ndim < 2:
            raise RuntimeError(f"tensor.{name} is only supported on matrices or batches of "
                               f"matrices. Got {x._data.ndim}-D tensor.")
        return x.transpose(-2, -1)

    fn.__doc__ = ("The conjugate transpose of the last two dims (the transpose, for real "
                  "tensors).")
    return fn


def _conj_t(x: Tensor) -> Tensor:
    """The conjugate transpose of a matrix (``x.T`` for a real one)."""
    n = x._data.ndim
    if n == 0:
        warn_once("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().")
        return x
    if n != 2:
        raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{n}-D tensor.")
    return x.transpose(0, 1)


adjoint = declare("adjoint", function=_conj_transpose("adjoint()"), methods={
    "adjoint": _conj_transpose("adjoint()"), "mH": property(_conj_transpose("mH"))})
_conj_t = declare("numpy_H", function=_conj_t, methods={"H": property(_conj_t)}, functions=())
