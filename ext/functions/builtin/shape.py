"""Ops that rearrange elements: view, reshape, flatten, t, transpose, permute, (un)squeeze,
expand, clone, contiguous and dtype conversion; and the joins: cat, stack, and their inverses
split, chunk and unbind.

Views (view, permute, expand, the pieces of split ...) are NumPy views of their input, as torch's
share storage.
"""

from __future__ import annotations

import operator

import numpy as np

from ... import _dtype
from ..._args import check_device, check_int, not_a_tensor, not_a_tensor_element
from ..._dtype import FROM_NUMPY
from ..._legacy import channels_last, contiguous_format, copy_in_format, in_format, preserve_format
from ..._state import STATE
from ..._tensor import Tensor, _wrap_dim, bump_version
from ..._warnings import warn_once
from ...autograd.engine import sum_to
from ...autograd.graph import move_retains_grad, output_meta
from ...autograd.views import check_inplace
from .._op import LINEAR, Overload, declare, dispatch, read_history
from ._builtin import namespace_of

__all__ = ["view", "reshape", "unsafe_view", "flatten", "t", "transpose", "matrix_transpose",
           "permute", "unsqueeze", "squeeze", "expand", "clone", "contiguous", "to", "unbind",
           "stack", "cat", "split", "split_with_sizes", "chunk"]

# Each op's function reads its inputs' history first when their version counter has moved
# (``read_history``): a view that may not follow its base's in-place change raises there, before
# the op's own argument errors, as in torch.


def _infer_shape(shape: tuple, numel: int) -> tuple:
    """Resolve a single -1 in ``shape`` and check the element count, with torch's messages."""
    shape = tuple(int(s) for s in shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for i, s in enumerate(shape):
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape "
                                   f"{list(shape)}")
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _is_int(s) -> bool:
    """Whether a size argument counts as an int (NumPy integers and one-element integer tensors
    do; bools and floats do not)."""
    if isinstance(s, Tensor):
        return s._data.size == 1 and s._data.dtype.kind in "iu"
    return isinstance(s, (int, np.integer)) and not isinstance(s, bool)


def _shape_args(shape: tuple, fn: str = "", name: str = "shape") -> tuple:
    """The sizes of ``x.view(2, 3)`` or ``x.view((2, 3))`` as a tuple of ints; anything else is
    torch's TypeError (checked only when an element is not a plain int, so the usual call pays
    one type test per size)."""
    if len(shape) == 1 and type(shape[0]) is not int:
        if not isinstance(shape[0], (tuple, list)):
            if not _is_int(shape[0]):
                if fn == "view":
                    raise TypeError(f"view() received an invalid combination of arguments - got "
                                    f"({type(shape[0]).__name__})")
                raise TypeError(f"{fn}(): argument '{name}' (position 1) must be tuple of ints, "
                                f"not {type(shape[0]).__name__}")
            return (int(shape[0]),)
        shape = tuple(shape[0])
        packed = True
    else:
        packed = False
    for i, s in enumerate(shape):
        if type(s) is not int and not _is_int(s):
            if packed:
                raise TypeError(f"{fn}(): argument '{name}' (position 1) must be tuple of ints, "
                                f"but found element of type {type(s).__name__} at pos {i}")
            if fn == "view":
                got = ", ".join(type(v).__name__ for v in shape)
                raise TypeError(f"view() received an invalid combination of arguments - got "
                                f"({got})")
            raise TypeError(f"{fn}() takes 1 positional argument but {len(shape)} were given")
    return shape


def _try_view(d: np.ndarray, shape: tuple) -> np.ndarray | None:
    """A view of ``d`` with ``shape`` if the strides allow one (None if a copy is needed)."""
    v = d.view()
    try:
        v.shape = shape
    except AttributeError:
        return None
    return v


class View(Overload):
    """A view with another shape: the gradient is reshaped back."""

    node_name = "ViewBackward0"
    args = ("self", "size")
    saved_attrs = ("self_sym_sizes",)
    tensor_positions = (0,)
    is_view = True
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.self_sym_sizes), None

    @classmethod
    def tangents(cls, args: tuple, out, tangents: tuple):
        """Linear, by reshape: a tangent may be laid out otherwise than its primal, so that
        the view's shape does not fit its strides (it is copied then)."""
        return tangents[0].reshape(out.shape)


class UnsafeView(View):
    """The reshape of a copy (reshape of a tensor whose strides allow no view)."""

    node_name = "UnsafeViewBackward0"
    is_view = False


class ReshapeAlias(View):
    """The reshape of a non-contiguous tensor whose strides still allow a view."""

    node_name = "ReshapeAliasBackward0"


def _view_shape(x: Tensor, *shape) -> Tensor:
    """The same values seen with another shape (no copy); -1 infers one size."""
    d = x._data
    if len(shape) == 1 and isinstance(shape[0], _dtype.dtype):
        return _view_dtype(x, shape[0])
    shape = _shape_args(shape, "view", "size")
    if x._vc and x._vc[0]:
        read_history(x)
    shape = _infer_shape(shape, d.size)
    v = _try_view(d, shape)
    if v is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    return dispatch(View, v, (x, shape))


view = declare("view", View, function=_view_shape, functions=())  # (torch has no torch.view)


def _view_dtype(x: Tensor, dtype: _dtype.dtype) -> Tensor:
    """The same bytes read as another dtype: an alias outside autograd (torch gives it no
    grad_fn), sharing the version counter; the last dim rescales when item sizes differ."""
    d = x._data
    item = d.itemsize
    if dtype._np.itemsize != item:
        what = f"to view {FROM_NUMPY[d.dtype]._short} as {dtype._short} (different element sizes)"
        if d.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        strides = x.stride()
        if dtype._np.itemsize > item:
            ratio = dtype._np.itemsize // item
            if d.shape[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got "
                                   f"{d.shape[-1]}")
            base = x._base
            offset = 0 if base is None or not d.size else (
                d.__array_interface__["data"][0] - base._data.__array_interface__["data"][0]
            ) // item
            if offset % ratio:
                raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {what}, "
                                   f"but got {offset}")
        if strides[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
        if dtype._np.itemsize > item:
            for i, st in enumerate(strides[:-1]):
                if st % ratio:
                    raise RuntimeError(f"self.stride({i}) must be divisible by {ratio} {what}, "
                                       f"but got {st}")
    out = x.detach()
    if d.size:
        out._data = d.view(dtype._np)
    else:  # (NumPy may refuse the layout of an empty array that torch accepts)
        last = d.shape[-1] * item // dtype._np.itemsize if d.ndim else None
        out._data = np.empty(d.shape[:-1] + (last,) if d.ndim else (), dtype._np)
    return out


def reshape(x: Tensor, *shape) -> Tensor:
    """``view`` when the strides allow it, else a reshaped copy."""
    shape = _shape_args(shape, "reshape")
    if x._vc and x._vc[0]:
        read_history(x)
    return _reshape(x, _infer_shape(shape, x._data.size))


def _reshape(x: Tensor, shape: tuple) -> Tensor:
    # torch views a contiguous tensor, aliases a strided one when its strides allow, and else
    # reshapes a contiguous copy; each way has its own node.
    d = x._data
    if d.flags.c_contiguous:
        return dispatch(View, d.reshape(shape), (x, shape))
    v = _try_view(d, shape)
    if v is not None:
        return dispatch(ReshapeAlias, v, (x, shape))
    return unsafe_view(contiguous(x), shape)


reshape = declare("reshape", ReshapeAlias, function=reshape)


def unsafe_view(x: Tensor, shape: tuple) -> Tensor:
    """The reshape of a fresh contiguous tensor, as a node of its own (torch's
    ``_unsafe_view``, which composite ops such as matmul end with)."""
    return dispatch(UnsafeView, x._data.reshape(shape), (x, shape))


unsafe_view = declare("_unsafe_view", UnsafeView, function=unsafe_view, methods=(),
                      functions=())


def view_as(x: Tensor, other: Tensor) -> Tensor:
    """``x.view(other.shape)``."""
    return view(x, _other(other, "view_as")._data.shape)


def reshape_as(x: Tensor, other: Tensor) -> Tensor:
    """``x.reshape(other.shape)``."""
    return reshape(x, _other(other, "reshape_as")._data.shape)


# (composites: their nodes are those of the ops they call)
view_as = declare("view_as", function=view_as, functions=())
reshape_as = declare("reshape_as", function=reshape_as, functions=())


def _other(other, name: str) -> Tensor:
    if type(other) is not Tensor:
        raise not_a_tensor(other, name, "other", 1)
    return other


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim`` to ``end_dim`` into one (a view when the strides allow)."""
    d = x._data
    start, end = _wrap_dim(start_dim, d.ndim), _wrap_dim(end_dim, d.ndim)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if d.ndim == 0:
        return _reshape(x, (1,))
    if start == end:
        # Nothing to merge: torch returns the tensor itself, without a node.
        return x
    merged = 1
    for s in d.shape[start:end + 1]:
        merged *= s
    return _reshape(x, d.shape[:start] + (merged,) + d.shape[end + 1:])


flatten = declare("flatten", function=flatten)  # (a composite, as view_as)


class T(Overload):
    """The transpose of a matrix (``x.t()``)."""

    node_name = "TBackward0"
    is_view = True
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        return grad.t()


def t(x: Tensor) -> Tensor:
    """Transpose a tensor of at most 2 dims."""
    if x._vc and x._vc[0]:
        read_history(x)
    d = x._data
    if d.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {d.ndim}D")
    return dispatch(T, d.T, (x,))


t = declare("t", T, function=t)


class Transpose(Overload):
    """Swap two dims; the gradient swaps them back."""

    node_name = "TransposeBackward0"
    args = ("self", "dim0", "dim1")
    saved_attrs = ("dim0", "dim1")
    tensor_positions = (0,)
    is_view = True
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        return grad.transpose(ctx.dim0, ctx.dim1), None, None


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap dims ``dim0`` and ``dim1`` (a view)."""
    if x._vc and x._vc[0]:
        read_history(x)
    d = x._data
    a, b = _wrap_dim(dim0, d.ndim), _wrap_dim(dim1, d.ndim)
    return dispatch(Transpose, np.swapaxes(d, a, b) if d.ndim else d.view(), (x, dim0, dim1))


def _swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:  # noqa: A002 - torch's name
    """NumPy's spelling of ``transpose`` (``swapaxes``)."""
    return transpose(input, axis0, axis1)


def _swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:  # noqa: A002 - torch's name
    """Another spelling of ``transpose`` (``swapdims``)."""
    return transpose(input, dim0, dim1)


transpose = declare("transpose", Transpose, function=transpose,
                    methods={"transpose": transpose, "swapaxes": _swapaxes,
                             "swapdims": _swapdims},
                    functions={"transpose": transpose, "swapaxes": _swapaxes,
                               "swapdims": _swapdims})


def matrix_transpose(x: Tensor) -> Tensor:
    """The transpose of the last two dims, for matrices and batches of matrices: ``x.mT``."""
    n = x._data.ndim
    if n == 0:
        warn_once("Tensor.mT is deprecated on 0-D tensors. This function is the identity in "
                  "these cases.")
        return x
    if n == 1:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got "
                           "1-D tensor.")
    return transpose(x, -2, -1)


class Permute(Overload):
    """Reorder the dims (a view); the gradient is put back by the inverse permutation."""

    node_name = "PermuteBackward0"
    args = ("self", "dims")
    saved_attrs = ("dims",)
    tensor_positions = (0,)
    is_view = True
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        n = len(ctx.dims)
        inverse = [0] * n
        for i, d in enumerate(ctx.dims):
            inverse[d % n] = i
        return grad.permute(inverse), None


def permute(x: Tensor, dims: tuple | list) -> Tensor:
    """A view with the dims in the order ``dims`` (a permutation of ``range(x.dim())``)."""
    d = x._data
    n = d.ndim
    dims = tuple(map(operator.index, dims))
    if x._vc and x._vc[0]:
        read_history(x)
    if len(dims) != n:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            "length of the desired ordering of dimensions i.e. input.dim() = "
            f"{n} is not equal to len(dims) = {len(dims)}")
    axes = []
    for dim in dims:
        a = _wrap_dim(dim, n)
        if a in axes:
            raise RuntimeError("permute(): duplicate dims are not allowed.")
        axes.append(a)
    return dispatch(Permute, d.transpose(axes), (x, dims))


def _permute_method(self, *dims, **kwargs) -> Tensor:
    """A view with the dims in the given order: ``x.permute(2, 0, 1)`` or ``x.permute((2, 0,
    1))``."""
    if not dims and "dims" in kwargs:
        dims = (kwargs.pop("dims"),)
    if kwargs:
        raise TypeError(f"permute() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if not dims:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    return permute(self, _shape_args(dims, "permute", "dims"))


permute = declare("permute", Permute, function=permute, methods={"permute": _permute_method})


_T_OTHER_RANK = (
    "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated "
    "and it will throw an error in a future release. Consider `x.mT` to transpose batches of "
    "matrices or `x.permute(*ext.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a "
    "tensor."
)


def _dims_reversed(x: Tensor) -> Tensor:
    """The dims in reverse order (the transpose of a matrix): ``x.T``."""
    n = x._data.ndim
    if n != 2:
        warn_once("Tensor.T is deprecated on 0-D tensors. This function is the identity in these "
                  "cases." if n == 0 else _T_OTHER_RANK)
    return permute(x, tuple(range(n - 1, -1, -1)))


# (composites, which torch lists as aten::numpy_T and aten::mT; Tensor properties)
_dims_reversed = declare("numpy_T", function=_dims_reversed,
                         methods={"T": property(_dims_reversed)}, functions=())
matrix_transpose = declare("mT", function=matrix_transpose,
                           methods={"mT": property(matrix_transpose)}, functions=())


class Unsqueeze(Overload):
    """Insert a dim of size 1."""

    node_name = "UnsqueezeBackward0"
    args = ("self", "dim")
    saved_attrs = ("dim",)
    tensor_positions = (0,)
    is_view = True
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        return grad.squeeze(ctx.dim), None


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """A view with a new dim of size 1 at ``dim``."""
    if type(dim) is not int:
        dim = check_int(dim, "unsqueeze", "dim", 1)
    if x._vc and x._vc[0]:
        read_history(x)
    d = x._data
    pos = _wrap_dim(dim, d.ndim + 1)
    # (reshape is what np.expand_dims ends in, without its axis parsing: a third of the op)
    return dispatch(Unsqueeze, d.reshape(d.shape[:pos] + (1,) + d.shape[pos:]), (x, dim))


unsqueeze = declare("unsqueeze", Unsqueeze, function=unsqueeze)


class SqueezeDim(Overload):
    """Remove dim ``dim`` if its size is 1."""

    node_name = "SqueezeBackward1"
    args = ("self", "dim")
    saved_attrs = ("dim", "self_sym_sizes")
    tensor_positions = (0,)
    is_view = True
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        # torch's unsqueeze_to: one unsqueeze per named dim of size 1, in dim order (none, as
        # for a 0-d input: grad itself)
        sizes = ctx.self_sym_sizes
        dims = (ctx.dim,) if isinstance(ctx.dim, int) else ctx.dim
        for d in sorted({d % len(sizes) for d in dims}) if sizes else ():
            if sizes[d] == 1:
                grad = grad.unsqueeze(d)
        return grad, None


class SqueezeDims(SqueezeDim):
    """Remove those of the dims ``dim`` (a tuple) that have size 1."""

    node_name = "SqueezeBackward2"


class SqueezeMatmul(SqueezeDim):
    """The squeeze that ends a vector-matrix product (torch's in-place ``squeeze_``): matmul
    squeezes its own fresh result, so the result is no view."""

    node_name = "SqueezeBackward4"
    is_view = False


class SqueezeAll(Overload):
    """Remove every dim of size 1."""

    node_name = "SqueezeBackward0"
    saved_attrs = ("self_sym_sizes",)
    is_view = True
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        # torch's unsqueeze_to: one unsqueeze per dim of size 1 (none: grad itself)
        for dim, size in enumerate(ctx.self_sym_sizes):
            if size == 1:
                grad = grad.unsqueeze(dim)
        return grad


def wrap_dims(dims, ndim: int) -> tuple:
    """``dims`` wrapped into range, in their order, with torch's error for a dim named twice."""
    out = []
    for d in dims:
        pos = _wrap_dim(d, ndim)
        if pos in out:
            raise RuntimeError(f"dim {pos} appears multiple times in the list of dims")
        out.append(pos)
    return tuple(out)


def squeeze(x: Tensor, dim: int | None = None, *, _op: type = SqueezeDim) -> Tensor:
    """A view without dims of size 1 (only ``dim``, if given)."""
    if x._vc and x._vc[0]:
        read_history(x)
    d = x._data
    if dim is None:
        return dispatch(SqueezeAll, d.reshape(tuple(s for s in d.shape if s != 1)), (x,))
    if isinstance(dim, (tuple, list)):
        dims = tuple(dim)
        ones = tuple(sorted(a for a in wrap_dims(dims, d.ndim) if d.ndim and d.shape[a] == 1))
        return dispatch(SqueezeDims, np.squeeze(d, ones) if ones else d.view(), (x, dims))
    pos = _wrap_dim(dim, d.ndim)
    return dispatch(_op, np.squeeze(d, pos) if d.ndim and d.shape[pos] == 1 else d.view(),
                    (x, dim))


squeeze = declare("squeeze", SqueezeAll, SqueezeDim, SqueezeDims, function=squeeze)


# ---------------------------------------------------------------------------- in-place views
# t_, transpose_, unsqueeze_ and squeeze_ change the tensor's own sizes and strides: no element
# is written, so nothing goes through apply_inplace's write. As in torch, the tensor gets the
# op's node (TBackward1 ...) as its grad_fn, over its old history, and a new version; a view
# keeps its base (the geometry it now has is read from its data) and takes that node as its
# own, up to date at the new version.
def _restride(x: Tensor, ov: type, data: np.ndarray, args: tuple) -> Tensor:
    """Give ``x`` the geometry of ``data`` (a view of its elements), recording ``ov``."""
    if x._requires_grad:
        check_inplace(x, True)
    out = dispatch(ov, data, (x, *args))
    bump_version(x)  # (an inference tensor outside inference mode refuses here, unchanged)
    x._data = data
    node = out._grad_fn
    if node is not None:
        move_retains_grad(x, node, 0)
        x._grad_fn = node
        x._output_nr = 0
        node._out_meta = output_meta(data)
        info = getattr(x, "_view", None)
        if info is not None:
            info.version = x._vc[0]
    if STATE.special and STATE.fw_level is not None:
        from ...autograd.forward_ad import set_tangent, tangent_of

        tangent = tangent_of(out)
        if tangent is not None:
            set_tangent(x, tangent)
    return x


class TInplace(T):
    """``x.t_()``."""

    node_name = "TBackward1"
    is_view = False

    @staticmethod
    def forward(x):
        """The out-of-place op (for the bridge and the forward-mode rule)."""
        return x.t()


class TransposeInplace(Transpose):
    """``x.transpose_(dim0, dim1)``."""

    node_name = "TransposeBackward1"
    is_view = False

    @staticmethod
    def forward(x, dim0, dim1):
        """The out-of-place op."""
        return x.transpose(dim0, dim1)


class UnsqueezeInplace(Unsqueeze):
    """``x.unsqueeze_(dim)``."""

    node_name = "UnsqueezeBackward1"
    is_view = False

    @staticmethod
    def forward(x, dim):
        """The out-of-place op."""
        return x.unsqueeze(dim)


class SqueezeAllInplace(SqueezeAll):
    """``x.squeeze_()``."""

    node_name = "SqueezeBackward3"
    is_view = False

    @staticmethod
    def forward(x):
        """The out-of-place op."""
        return x.squeeze()


def _squeeze_dims(x, dim):
    return x.squeeze(dim)


# (torch's squeeze_(dim) node, which matmul's squeeze of its own result records too)
SqueezeMatmul.forward = staticmethod(_squeeze_dims)


class SqueezeDimsInplace(SqueezeDim):
    """``x.squeeze_(dims)``."""

    node_name = "SqueezeBackward5"
    is_view = False
    forward = staticmethod(_squeeze_dims)


def t_(x: Tensor) -> Tensor:
    """Transpose ``x`` itself (at most 2 dims)."""
    if x._vc and x._vc[0]:
        read_history(x)
    d = x._data
    if d.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {d.ndim}D")
    return _restride(x, TInplace, d.T, ())


def transpose_(x: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap dims ``dim0`` and ``dim1`` of ``x`` itself."""
    if x._vc and x._vc[0]:
        read_history(x)
    d = x._data
    a, b = _wrap_dim(dim0, d.ndim), _wrap_dim(dim1, d.ndim)
    return _restride(x, TransposeInplace, np.swapaxes(d, a, b) if d.ndim else d.view(),
                     (dim0, dim1))


def unsqueeze_(x: Tensor, dim: int) -> Tensor:
    """Insert a dim of size 1 at ``dim`` into ``x`` itself."""
    if type(dim) is not int:
        dim = check_int(dim, "unsqueeze_", "dim", 1)
    if x._vc and x._vc[0]:
        read_history(x)
    d = x._data
    pos = _wrap_dim(dim, d.ndim + 1)
    return _restride(x, UnsqueezeInplace, d.reshape(d.shape[:pos] + (1,) + d.shape[pos:]),
                     (dim,))


def squeeze_(x: Tensor, dim: int | tuple | list | None = None) -> Tensor:
    """Remove the dims of size 1 of ``x`` itself (only ``dim``, if given)."""
    if x._vc and x._vc[0]:
        read_history(x)
    d = x._data
    if dim is None:
        return _restride(x, SqueezeAllInplace, d.reshape(tuple(s for s in d.shape if s != 1)),
                         ())
    if isinstance(dim, (tuple, list)):
        dims = tuple(dim)
        ones = tuple(sorted(a for a in wrap_dims(dims, d.ndim) if d.ndim and d.shape[a] == 1))
        return _restride(x, SqueezeDimsInplace, np.squeeze(d, ones) if ones else d.view(),
                         (dims,))
    pos = _wrap_dim(dim, d.ndim)
    return _restride(x, SqueezeMatmul, np.squeeze(d, pos) if d.ndim and d.shape[pos] == 1
                     else d.view(), (dim,))


t_ = declare("t_", TInplace, function=t_, functions=())
transpose_ = declare("transpose_", TransposeInplace, function=transpose_, functions=())
unsqueeze_ = declare("unsqueeze_", UnsqueezeInplace, function=unsqueeze_, functions=())
squeeze_ = declare("squeeze_", SqueezeAllInplace, SqueezeMatmul, SqueezeDimsInplace,
                   function=squeeze_, functions=())


class Expand(Overload):
    """Broadcast to a larger shape (a view); the gradient is summed back."""

    node_name = "ExpandBackward0"
    args = ("self", "size")
    saved_attrs = ("self_sym_sizes",)
    tensor_positions = (0,)
    is_view = True
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        return sum_to(grad, ctx.self_sym_sizes), None


def expand(x: Tensor, *sizes) -> Tensor:
    """A view broadcast to ``sizes`` (-1 keeps a size)."""
    sizes = _shape_args(sizes, "expand", "size")
    if x._vc and x._vc[0]:
        read_history(x)
    d = x._data
    lead = len(sizes) - d.ndim
    if lead < 0:
        raise RuntimeError(f"expand(ext.{FROM_NUMPY[d.dtype]._legacy}{{{list(d.shape)}}}, "
                           f"size={list(sizes)}): the number of sizes provided ({len(sizes)}) "
                           f"must be greater or equal to the number of dimensions in the tensor "
                           f"({d.ndim})")
    for i, s in enumerate(sizes[:lead]):
        if s < 0:
            raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a "
                               f"leading, non-existing dimension {i}")
    target = tuple(d.shape[i - lead] if s == -1 and i >= lead else s
                   for i, s in enumerate(sizes))
    if target == d.shape:
        return dispatch(Expand, d.view(), (x, target))
    try:
        data = np.broadcast_to(d, target)
    except ValueError:
        # torch reports the last mismatching dim.
        for i in reversed(range(d.ndim)):
            if d.shape[i] != 1 and d.shape[i] != target[i + lead]:
                raise RuntimeError(
                    f"The expanded size of the tensor ({target[i + lead]}) must match the "
                    f"existing size ({d.shape[i]}) at non-singleton dimension {i + lead}.  "
                    f"Target sizes: {list(sizes)}.  Tensor sizes: {list(d.shape)}") from None
        raise
    if d.ndim and 1 in target[:lead]:
        # torch gives a new leading dim of size 1 the stride of the dims after it (NumPy gives
        # 0); its overlap checks compare strides, so copy_ of such an expand onto x's unsqueeze
        # is a full overlap, not a partial one.
        strides = list(data.strides)
        for i in reversed(range(lead)):
            if target[i] == 1:
                strides[i] = target[i + 1] * strides[i + 1]
        data = np.lib.stride_tricks.as_strided(data, target, strides, writeable=False)
    return dispatch(Expand, data, (x, target))


expand = declare("expand", Expand, function=expand, functions=())


class Clone(Overload):
    """A copy; the gradient passes through."""

    node_name = "CloneBackward0"
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        return grad


def clone(x: Tensor, *, memory_format=None) -> Tensor:
    """A copy with its own storage, recorded in the graph."""
    return dispatch(Clone, copy_in_format(x._data, memory_format, "clone"), (x,))


clone = declare("clone", Clone, function=clone)


def contiguous(x: Tensor, memory_format=None) -> Tensor:
    """``x`` itself when its values are in row-major order (or the ``memory_format`` asked
    for), else such a copy."""
    d = x._data
    if in_format(d, memory_format, "contiguous"):
        return x
    fmt = memory_format if memory_format is channels_last else contiguous_format
    return dispatch(Clone, copy_in_format(d, fmt, "contiguous"), (x,))


contiguous = declare("contiguous", function=contiguous, functions=())  # (a composite: clone)


class ToCopy(Overload):
    """A copy converted to another dtype; the gradient is converted back."""

    node_name = "ToCopyBackward0"
    args = ("self", "dtype")
    tensor_positions = (0,)
    ctx_attrs = ("self_dtype",)
    jvp = LINEAR

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.self_dtype = inputs[0].dtype

    @staticmethod
    def backward(ctx, grad):
        return grad.to(ctx.self_dtype), None


def _to_error(args: tuple) -> TypeError:
    got = ", ".join(type(a).__name__ for a in args)
    return TypeError(f"to() received an invalid combination of arguments - got ({got})")


def _parse_to(args: tuple, kwargs: dict):
    """torch's forms: ``to(dtype, non_blocking, copy)``, ``to(device, dtype, non_blocking,
    copy)`` and ``to(other, non_blocking, copy)``, each with keywords and ``memory_format``."""
    dtype = kwargs.pop("dtype", None)
    if dtype is not None and not isinstance(dtype, _dtype.dtype):
        raise TypeError(f"to() received an invalid combination of arguments - got (dtype="
                        f"{type(dtype).__name__})")
    device = kwargs.pop("device", None)
    rest = args
    if rest:
        a = rest[0]
        if isinstance(a, _dtype.dtype):
            dtype, rest = a, rest[1:]
        elif isinstance(a, Tensor):
            dtype, rest = a.dtype, rest[1:]
        elif a is None or isinstance(a, str) or type(a).__name__ == "device":
            device, rest = a, rest[1:]
            if rest and (rest[0] is None or isinstance(rest[0], _dtype.dtype)):
                dtype, rest = rest[0] or dtype, rest[1:]
    # (what is left is non_blocking and copy, in that order: bools only)
    if len(rest) > 2 or any(type(a) is not bool for a in rest):
        raise _to_error(args)
    check_device(device, "to")
    kwargs.pop("non_blocking", None)
    copy = kwargs.pop("copy", rest[1] if len(rest) == 2 else False)
    fmt = kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return dtype, copy, fmt


def to(x: Tensor, *args, **kwargs) -> Tensor:
    """``x`` converted to a dtype or layout (``x`` itself when nothing changes, unless
    ``copy``)."""
    dtype, copy, fmt = _parse_to(args, kwargs)
    d = x._data
    target = d.dtype if dtype is None else dtype._np
    relayout = fmt is not None and fmt is not preserve_format and not in_format(d, fmt, "to")
    if target == d.dtype and not copy and not relayout:
        return x
    # (one copy: laid out as asked, then converted without another copy)
    data = copy_in_format(d, fmt, "to").astype(target, copy=False) if relayout else \
        d.astype(target)
    return dispatch(ToCopy, data, (x, dtype or FROM_NUMPY[d.dtype]))


def _to_method(name: str):
    def convert(self, memory_format=preserve_format):
        return to(self, getattr(_dtype, name), memory_format=memory_format)

    convert.__name__ = name
    convert.__doc__ = f"``self.to(ext.{name})``."
    return convert


to = declare("to", ToCopy, function=to, functions=(), methods={
    "to": to, "float": _to_method("float32"), "double": _to_method("float64"),
    "half": _to_method("float16"), "bfloat16": _to_method("bfloat16"),
    "long": _to_method("int64"), "int": _to_method("int32"), "short": _to_method("int16"),
    "char": _to_method("int8"), "byte": _to_method("uint8"), "bool": _to_method("bool")})


def resize_(x: Tensor, *size, memory_format=None) -> Tensor:
    """Give ``x`` the shape ``size`` in place, its elements read from its storage in order
    (elements beyond the old ones are zeros here; torch leaves them uninitialized)."""
    shape = _shape_args(size, "resize_", "size")
    if x._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if any(s < 0 for s in shape):
        raise RuntimeError("numel: integer multiplication overflow")
    d = x._data
    shape = tuple(int(s) for s in shape)
    if shape == d.shape and memory_format is None:
        return x
    n = int(np.prod(shape))
    if d.flags.c_contiguous and n <= d.size:
        new = d.reshape(-1)[:n].reshape(shape)  # (the same storage, as torch keeps it)
    else:
        new = np.zeros(n, d.dtype)
        k = min(n, d.size)
        new[:k] = d.ravel(order="K")[:k]
        new = new.reshape(shape)
    if memory_format is not None and not in_format(new, memory_format, "resize_"):
        new = copy_in_format(new, memory_format, "resize_")
    bump_version(x)
    x._data = new
    return x


def resize_as_(x: Tensor, the_template: Tensor, *, memory_format=None) -> Tensor:
    """``x.resize_(the_template.shape)``."""
    if not isinstance(the_template, Tensor):
        raise TypeError("resize_as_(): argument 'the_template' (position 1) must be Tensor, not "
                        f"{type(the_template).__name__}")
    return resize_(x, the_template._data.shape, memory_format=memory_format)


resize_ = declare("resize_", function=resize_, functions=())
resize_as_ = declare("resize_as_", function=resize_as_)


def expand_as(x: Tensor, other: Tensor) -> Tensor:
    """``x.expand(other.shape)``."""
    return expand(x, _other(other, "expand_as")._data.shape)


expand_as = declare("expand_as", function=expand_as, functions=())  # (a composite: expand)


# ---------------------------------------------------------------------------- joins and splits
def _tensor_list(tensors, name: str):
    """The tensors of a join, with torch's TypeErrors for anything but a list or tuple of them."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {type(tensors).__name__}")
    moved = False
    for i, t in enumerate(tensors):
        if type(t) is not Tensor:
            raise not_a_tensor_element(t, i, name)
        if t._vc and t._vc[0]:
            moved = True
    if moved:
        read_history(*tensors)
    return tensors


def _joined_dtype(arrays: list) -> np.dtype:
    """The dtype of a join: all inputs promoted together, as torch does."""
    dt = arrays[0].dtype
    for a in arrays:
        if a.dtype != dt:
            dt = _dtype.promote_types(FROM_NUMPY[dt], FROM_NUMPY[a.dtype])._np
    return dt


class Unbind(Overload):
    """Split along ``dim`` into its slices; the gradient stacks them back."""

    node_name = "UnbindBackward0"
    args = ("self", "dim")
    saved_attrs = ("dim",)
    tensor_positions = (0,)
    is_view = True
    returns_list = True
    jvp = LINEAR

    @staticmethod
    def backward(ctx, *grads):
        ref = next(g for g in grads if g is not None)
        ns = namespace_of(ref)
        grads = [ns.zeros_like(ref) if g is None else g for g in grads]
        return ns.stack(grads, ctx.dim), None


def unbind(x: Tensor, dim: int = 0) -> tuple:
    """The slices of ``x`` along ``dim``, as a tuple of views."""
    if x._vc and x._vc[0]:
        read_history(x)
    d = x._data
    if d.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    pos = _wrap_dim(dim, d.ndim)
    if not d.shape[pos]:
        return ()
    # The trailing Ellipsis keeps a 0-d piece a NumPy view (a bare integer index copies it).
    return dispatch(Unbind, tuple([d[(slice(None),) * pos + (i, Ellipsis)]
                                   for i in range(d.shape[pos])]), (x, dim))


unbind = declare("unbind", Unbind, function=unbind)


class Stack(Overload):
    """Join same-shaped tensors along a new dim; each gradient is its slice."""

    node_name = "StackBackward0"
    args = ("tensors", "dim")
    saved_attrs = ("dim",)
    variadic = True
    jvp = LINEAR

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.dim = inputs[-1]

    @staticmethod
    def backward(ctx, grad):
        # torch: each input's gradient is grad.select(dim, i)
        return (*(grad.select(ctx.dim, i) for i in range(grad.shape[ctx.dim])), None)


def stack(tensors: list | tuple, dim: int = 0) -> Tensor:
    """Join same-shaped tensors along a new dim ``dim``."""
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    arrays = [t._data for t in tensors]
    shape = arrays[0].shape
    pos = _wrap_dim(dim, len(shape) + 1)
    for i, a in enumerate(arrays):
        if a.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(shape)} at entry 0 and {list(a.shape)} at entry {i}")
    return dispatch(Stack, np.stack(arrays, axis=pos, dtype=_joined_dtype(arrays),
                                    casting="unsafe"), (*tensors, dim))


stack = declare("stack", Stack, function=stack, methods=())


class Cat(Overload):
    """Join tensors along an existing dim; each gradient is its slice of grad."""

    node_name = "CatBackward0"
    args = ("tensors", "dim")
    saved_attrs = ("dim",)
    ctx_attrs = ("pos", "sizes")
    variadic = True
    jvp = LINEAR

    @staticmethod
    def setup_context(ctx, inputs, output):
        out = output[0] if isinstance(output, tuple) else output
        ndim = out.dim()
        ctx.dim = inputs[-1]
        ctx.pos = pos = inputs[-1] % ndim
        # A 1-D empty tensor may join tensors of any rank (torch's legacy rule): it has no
        # slice, and torch gives it fresh zeros even among 1-D tensors.
        ctx.sizes = tuple(None if tuple(t.shape) == (0,) else t.shape[pos] for t in inputs[:-1])

    @staticmethod
    def backward(ctx, grad):
        # torch: each input's gradient is its narrow of grad (an empty 1-D input, zeros of
        # its shape); every input gets one (node post-hooks see them all).
        grads = []
        start = 0
        for size in ctx.sizes:
            if size is None:
                grads.append(grad.new_zeros((0,)))
            else:
                grads.append(grad.narrow(ctx.pos, start, size))
                start += size
        return (*grads, None)


def _legacy_empty(a: np.ndarray) -> bool:
    return a.ndim == 1 and a.shape[0] == 0


def cat(tensors: list | tuple, dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Join tensors along the existing dim ``dim``; all other sizes must match."""
    if axis is not None:
        dim = axis
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("ext.cat(): expected a non-empty list of Tensors")
    arrays = [t._data for t in tensors]
    ref = None
    for i, a in enumerate(arrays):
        if a.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
        if ref is None and not _legacy_empty(a):
            ref = a.shape
    dt = _joined_dtype(arrays)
    if ref is None:
        out = np.zeros(0, dt)
    else:
        pos = _wrap_dim(dim, len(ref))
        parts = []
        for i, a in enumerate(arrays):
            s = a.shape
            if _legacy_empty(a):
                continue
            if len(s) != len(ref):
                raise RuntimeError(f"Tensors must have same number of dimensions: got "
                                   f"{len(ref)} and {len(s)}")
            for k, n in enumerate(s):
                if n != ref[k] and k != pos:
                    raise RuntimeError(
                        f"Sizes of tensors must match except in dimension {pos}. Expected size "
                        f"{ref[k]} but got size {n} for tensor number {i} in the list.")
            parts.append(a)
        out = np.concatenate(parts, axis=pos, dtype=dt, casting="unsafe")
    return dispatch(Cat, out, (*tensors, dim))


cat = declare("cat", Cat, function=cat, methods=(), functions=("cat", "concat", "concatenate"))


def _split_lengths(size: int, split_size: int) -> list:
    """The lengths of the pieces of ``split``: ``split_size`` each, the last one shorter."""
    if split_size == 0:
        return [size]
    count = max(-(-size // split_size), 1)
    return [split_size] * (count - 1) + [size - split_size * (count - 1)]


def _pieces(d: np.ndarray, lengths, pos: int) -> tuple:
    lead = (slice(None),) * pos
    outs = []
    start = 0
    for n in lengths:
        outs.append(d[lead + (slice(start, start + n),)])
        start += n
    return tuple(outs)


def _joined_grad(grads, sizes: tuple, pos: int, lengths) -> Tensor:
    """The gradient of a split: the pieces' gradients joined back, zeros for unused pieces."""
    ref = next(g for g in grads if g is not None)
    parts = [ref.new_zeros(sizes[:pos] + (n,) + sizes[pos + 1:]) if g is None else g
             for g, n in zip(grads, lengths)]
    return namespace_of(ref).cat(parts, pos)


class Split(Overload):
    """Cut into pieces of ``split_size`` along ``dim`` (views); the gradient joins them back."""

    node_name = "SplitBackward0"
    args = ("self", "split_size", "dim")
    saved_attrs = ("dim", "self_sym_sizes", "split_size")
    tensor_positions = (0,)
    is_view = True
    returns_list = True
    jvp = LINEAR

    @staticmethod
    def backward(ctx, *grads):
        sizes = ctx.self_sym_sizes
        pos = ctx.dim % len(sizes)
        lengths = _split_lengths(sizes[pos], ctx.split_size)
        return _joined_grad(grads, sizes, pos, lengths), None, None


class SplitWithSizes(Split):
    """Cut into pieces of the given sizes along ``dim`` (views); the gradient joins them back."""

    node_name = "SplitWithSizesBackward0"
    args = ("self", "split_sizes", "dim")
    saved_attrs = ("dim", "self_sym_sizes", "split_sizes")

    @staticmethod
    def backward(ctx, *grads):
        sizes = ctx.self_sym_sizes
        pos = ctx.dim % len(sizes)
        return _joined_grad(grads, sizes, pos, ctx.split_sizes), None, None


def split(x: Tensor, split_size_or_sections: int | list | tuple, dim: int = 0) -> tuple:
    """Views of ``x`` cut along ``dim``: pieces of one size (the last may be shorter), or of
    the sizes in a list."""
    size = split_size_or_sections
    if isinstance(size, (list, tuple)):
        return split_with_sizes(x, size, dim)
    if not isinstance(size, int):
        raise TypeError("split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of "
                        f"ints, not {type(size).__name__}")
    if x._vc and x._vc[0]:
        read_history(x)
    d = x._data
    if d.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    if size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
    pos = _wrap_dim(dim, d.ndim)
    n = d.shape[pos]
    if size == 0 and n:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                           f"size of {n}")
    return dispatch(Split, _pieces(d, _split_lengths(n, size), pos), (x, size, dim))


def _split_method(self, split_size: int | list | tuple, dim: int = 0) -> tuple:
    """Views of ``self`` cut along ``dim`` into pieces of ``split_size`` or of the listed sizes."""
    return split(self, split_size, dim)


split = declare("split", Split, function=split, methods={"split": _split_method})


def split_with_sizes(x: Tensor, split_sizes: list | tuple, dim: int = 0) -> tuple:
    """Views of ``x`` cut along ``dim`` into pieces of ``split_sizes`` (which sum to its size)."""
    if x._vc and x._vc[0]:
        read_history(x)
    d = x._data
    if d.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    sizes = tuple(map(operator.index, split_sizes))
    pos = _wrap_dim(dim, d.ndim)
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, "
                           f"but got split_sizes={list(sizes)}")
    if sum(sizes) != d.shape[pos]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{d.shape[pos]} (input tensor's size at dimension {dim}), but got "
                           f"split_sizes={list(sizes)}")
    if not sizes:
        return ()
    return dispatch(SplitWithSizes, _pieces(d, sizes, pos), (x, sizes, dim))


split_with_sizes = declare("split_with_sizes", SplitWithSizes, function=split_with_sizes)


def chunk(x: Tensor, chunks: int, dim: int = 0) -> tuple:
    """``chunks`` views of about equal size along ``dim`` (fewer when the dim is short)."""
    d = x._data
    if d.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    n = d.shape[_wrap_dim(dim, d.ndim)]
    size = -(-n // chunks)
    if size == 0:
        # An empty dim still gives `chunks` pieces, which only split_with_sizes can say.
        return split_with_sizes(x, [0] * chunks, dim)
    return split(x, size, dim)


chunk = declare("chunk", function=chunk)  # (a composite: split)


class Flip(Overload):
    """Reverse the order along ``dims`` (a copy); the gradient is flipped back."""

    node_name = "FlipBackward0"
    args = ("self", "dims")
    saved_attrs = ("dims",)
    tensor_positions = (0,)
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        return grad.flip(ctx.dims), None


def flip(x: Tensor, *dims, **kwargs) -> Tensor:
    """A copy of ``x`` with the order of the entries along ``dims`` reversed."""
    if kwargs:
        if dims or set(kwargs) != {"dims"}:
            raise TypeError(f"flip() got an unexpected keyword argument '{next(iter(kwargs))}'")
        dims = (kwargs["dims"],)
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    if x._vc and x._vc[0]:
        read_history(x)
    d = x._data
    axes = wrap_dims(dims, d.ndim) if d.ndim else ()
    return dispatch(Flip, np.flip(d, axes).copy() if axes else d.copy(), (x, tuple(dims)))


flip = declare("flip", Flip, function=flip)
