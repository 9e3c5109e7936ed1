"""Ops that rearrange elements: view, reshape, t, transpose, (un)squeeze, expand, unbind, stack,
clone and dtype conversion."""

from __future__ import annotations

import numpy as np

from .. import _dtype
from .._state import STATE
from .._tensor import Tensor, _wrap_dim, wrap
from ._builtin import BuiltinFunction, namespace_of, record, record_node

__all__ = ["view", "reshape", "t", "transpose", "unsqueeze", "squeeze", "expand", "clone", "to",
           "unbind", "stack"]


def _one_input(op: type, x: Tensor, data: np.ndarray, args: tuple) -> Tensor:
    out = wrap(data)
    if x._requires_grad and STATE.grad_enabled and data.dtype.kind == "f":
        record(op, out, (x,), (x, *args))
    return out


def _infer_shape(shape: tuple, numel: int) -> tuple:
    """Resolve a single -1 in ``shape`` and check the element count, with torch's messages."""
    shape = tuple(int(s) for s in shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _shape_args(shape: tuple) -> tuple:
    if len(shape) == 1 and not isinstance(shape[0], int):
        return tuple(shape[0])
    return shape


def _try_view(d: np.ndarray, shape: tuple) -> np.ndarray | None:
    """A view of ``d`` with ``shape`` if the strides allow one (None if a copy is needed)."""
    v = d.view()
    try:
        v.shape = shape
    except AttributeError:
        return None
    return v


class View(BuiltinFunction):
    """A view with another shape: the gradient is reshaped back."""

    node_name = "ViewBackward0"
    saved_attrs = ("self_sym_sizes",)
    tensor_positions = (0,)

    @staticmethod
    def forward(x, shape):
        return x.view(shape)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.self_sym_sizes = tuple(inputs[0].shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.self_sym_sizes), None


class UnsafeView(View):
    """The reshape of a copy (reshape of a tensor whose strides allow no view)."""

    node_name = "UnsafeViewBackward0"


def view(x: Tensor, *shape) -> Tensor:
    """The same values seen with another shape (no copy); -1 infers one size."""
    d = x._data
    shape = _infer_shape(_shape_args(shape), d.size)
    v = _try_view(d, shape)
    if v is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    return _one_input(View, x, v, (shape,))


def reshape(x: Tensor, *shape) -> Tensor:
    """``view`` when the strides allow it, else a reshaped copy."""
    d = x._data
    shape = _infer_shape(_shape_args(shape), d.size)
    v = _try_view(d, shape)
    if v is not None:
        return _one_input(View, x, v, (shape,))
    c = clone(x)
    return _one_input(UnsafeView, c, c._data.reshape(shape), (shape,))


class T(BuiltinFunction):
    """The transpose of a matrix (``x.t()``)."""

    node_name = "TBackward0"

    @staticmethod
    def forward(x):
        return x.t()

    @staticmethod
    def backward(ctx, grad):
        return grad.t()


def t(x: Tensor) -> Tensor:
    """Transpose a tensor of at most 2 dims."""
    d = x._data
    if d.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {d.ndim}D")
    return _one_input(T, x, d.T, ())


class Transpose(BuiltinFunction):
    """Swap two dims; the gradient swaps them back."""

    node_name = "TransposeBackward0"
    saved_attrs = ("dim0", "dim1")
    tensor_positions = (0,)

    @staticmethod
    def forward(x, dim0, dim1):
        return x.transpose(dim0, dim1)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.dim0, ctx.dim1 = inputs[1], inputs[2]

    @staticmethod
    def backward(ctx, grad):
        return grad.transpose(ctx.dim0, ctx.dim1), None, None


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap dims ``dim0`` and ``dim1`` (a view)."""
    d = x._data
    a, b = _wrap_dim(dim0, d.ndim), _wrap_dim(dim1, d.ndim)
    return _one_input(Transpose, x, np.swapaxes(d, a, b) if d.ndim else d.view(), (dim0, dim1))


class Unsqueeze(BuiltinFunction):
    """Insert a dim of size 1."""

    node_name = "UnsqueezeBackward0"
    saved_attrs = ("dim",)
    tensor_positions = (0,)

    @staticmethod
    def forward(x, dim):
        return x.unsqueeze(dim)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.dim = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        return grad.squeeze(ctx.dim), None


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """A view with a new dim of size 1 at ``dim``."""
    d = x._data
    pos = _wrap_dim(dim, d.ndim + 1)
    return _one_input(Unsqueeze, x, np.expand_dims(d, pos), (dim,))


class SqueezeDim(BuiltinFunction):
    """Remove dim ``dim`` if its size is 1."""

    node_name = "SqueezeBackward1"
    saved_attrs = ("dim", "self_sym_sizes")
    tensor_positions = (0,)

    @staticmethod
    def forward(x, dim):
        return x.squeeze(dim)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.dim = inputs[1]
        ctx.self_sym_sizes = tuple(inputs[0].shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.self_sym_sizes), None


class SqueezeMatmul(SqueezeDim):
    """The squeeze that ends a vector-matrix product (torch's in-place ``squeeze_``)."""

    node_name = "SqueezeBackward4"


class SqueezeAll(BuiltinFunction):
    """Remove every dim of size 1."""

    node_name = "SqueezeBackward0"
    saved_attrs = ("self_sym_sizes",)

    @staticmethod
    def forward(x):
        return x.squeeze()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.self_sym_sizes = tuple(inputs[0].shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.self_sym_sizes)


def squeeze(x: Tensor, dim: int | None = None, *, _op: type = SqueezeDim) -> Tensor:
    """A view without dims of size 1 (only ``dim``, if given)."""
    d = x._data
    if dim is None:
        return _one_input(SqueezeAll, x, d.reshape(tuple(s for s in d.shape if s != 1)), ())
    pos = _wrap_dim(dim, d.ndim)
    data = np.squeeze(d, pos) if d.ndim and d.shape[pos] == 1 else d.view()
    return _one_input(_op, x, data, (dim,))


class Expand(BuiltinFunction):
    """Broadcast to a larger shape (a view); the gradient is summed back."""

    node_name = "ExpandBackward0"
    saved_attrs = ("self_sym_sizes",)
    tensor_positions = (0,)

    @staticmethod
    def forward(x, sizes):
        return x.expand(sizes)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.self_sym_sizes = tuple(inputs[0].shape)

    @staticmethod
    def backward(ctx, grad):
        from ..autograd.engine import sum_to

        return sum_to(grad, ctx.self_sym_sizes), None


def expand(x: Tensor, *sizes) -> Tensor:
    """A view broadcast to ``sizes`` (-1 keeps a size)."""
    d = x._data
    sizes = _shape_args(sizes)
    lead = len(sizes) - d.ndim
    if lead < 0:
        raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be greater "
                           f"or equal to the number of dimensions in the tensor ({d.ndim})")
    target = tuple(d.shape[i - lead] if s == -1 and i >= lead else s
                   for i, s in enumerate(sizes))
    if target == d.shape:
        return _one_input(Expand, x, d.view(), (target,))
    try:
        data = np.broadcast_to(d, target)
    except ValueError:
        for i in range(d.ndim):
            if d.shape[i] != 1 and d.shape[i] != target[i + lead]:
                raise RuntimeError(
                    f"The expanded size of the tensor ({target[i + lead]}) must match the "
                    f"existing size ({d.shape[i]}) at non-singleton dimension {i + lead}.  "
                    f"Target sizes: {list(sizes)}.  Tensor sizes: {list(d.shape)}") from None
        raise
    return _one_input(Expand, x, data, (target,))


class Clone(BuiltinFunction):
    """A copy; the gradient passes through."""

    node_name = "CloneBackward0"

    @staticmethod
    def forward(x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad


def clone(x: Tensor) -> Tensor:
    """A copy with its own storage, recorded in the graph."""
    return _one_input(Clone, x, np.array(x._data, copy=True), ())


class ToCopy(BuiltinFunction):
    """A copy converted to another dtype; the gradient is converted back."""

    node_name = "ToCopyBackward0"
    tensor_positions = (0,)
    ctx_attrs = ("self_dtype",)

    @staticmethod
    def forward(x, dtype):
        return x.to(dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.self_dtype = inputs[0].dtype

    @staticmethod
    def backward(ctx, grad):
        return grad.to(ctx.self_dtype), None


def _parse_to(args: tuple, kwargs: dict):
    dtype = kwargs.pop("dtype", None)
    if dtype is not None and not isinstance(dtype, _dtype.dtype):
        raise TypeError(f"to() received an invalid combination of arguments - got (dtype="
                        f"{type(dtype).__name__})")
    for a in args:
        if isinstance(a, _dtype.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype = a.dtype
        elif isinstance(a, str):
            if a.split(":")[0] != "cpu":
                raise RuntimeError(
                    "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, "
                    "fpga, maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device "
                    f"type at start of device string: {a}")
        elif a is not None and type(a).__name__ != "device":
            raise TypeError(f"to() received an invalid combination of arguments - got "
                            f"({type(a).__name__})")
    kwargs.pop("device", None)
    kwargs.pop("non_blocking", None)
    copy = kwargs.pop("copy", False)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return dtype, copy


def to(x: Tensor, *args, **kwargs) -> Tensor:
    """``x`` converted to a dtype (``x`` itself when nothing changes)."""
    dtype, copy = _parse_to(args, kwargs)
    if dtype is None or dtype._np == x._data.dtype:
        return clone(x) if copy else x
    return _one_input(ToCopy, x, x._data.astype(dtype._np), (dtype,))


class Unbind(BuiltinFunction):
    """Split along ``dim`` into its slices; the gradient stacks them back."""

    node_name = "UnbindBackward0"
    saved_attrs = ("dim",)
    tensor_positions = (0,)

    @staticmethod
    def forward(x, dim=0):
        return x.unbind(dim)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.dim = inputs[1]

    @staticmethod
    def backward(ctx, *grads):
        ref = next(g for g in grads if g is not None)
        ns = namespace_of(ref)
        grads = [ns.zeros_like(ref) if g is None else g for g in grads]
        return ns.stack(grads, ctx.dim), None


def unbind(x: Tensor, dim: int = 0) -> tuple:
    """The slices of ``x`` along ``dim``, as a tuple of views."""
    d = x._data
    if d.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    pos = _wrap_dim(dim, d.ndim)
    outs = tuple(wrap(d[(slice(None),) * pos + (i,)])
                 for i in range(d.shape[pos]))
    if x._requires_grad and STATE.grad_enabled and d.dtype.kind == "f":
        record_node(Unbind, outs, (x,), (x, dim))
    return outs


class Stack(BuiltinFunction):
    """Join tensors along a new dim; each gradient is its slice."""

    node_name = "StackBackward0"
    saved_attrs = ("dim",)

    @staticmethod
    def forward(tensors, dim=0):
        return namespace_of(tensors[0]).stack(tensors, dim)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.dim = inputs[-1]

    @staticmethod
    def backward(ctx, grad):
        return grad.unbind(ctx.dim)


def stack(tensors, dim: int = 0) -> Tensor:
    """Join same-shaped tensors along a new dim ``dim``."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0]._data.shape
    for i, ti in enumerate(tensors):
        if ti._data.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(shape)} at entry 0 and {list(ti._data.shape)} at entry {i}")
    pos = _wrap_dim(dim, len(shape) + 1)
    out = wrap(np.stack([ti._data for ti in tensors], axis=pos))
    if STATE.grad_enabled and out._data.dtype.kind == "f" and any(
            ti._requires_grad for ti in tensors):
        record_node(Stack, (out,), tuple(tensors), (*tensors, dim))
    return out


def _sizes_method(fn):
    # x.view(2, 3) and x.view((2, 3)) both work, as in torch.
    def method(self, *sizes):
        return fn(self, *sizes)

    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def _to_method(name: str):
    def convert(self):
        return to(self, getattr(_dtype, name))

    convert.__name__ = name
    convert.__doc__ = f"``self.to(ext.{name})``."
    return convert


METHODS = {
    "t": t, "transpose": transpose, "view": _sizes_method(view),
    "reshape": _sizes_method(reshape), "expand": _sizes_method(expand), "unsqueeze": unsqueeze,
    "squeeze": squeeze, "unbind": unbind, "clone": clone, "to": to,
    "float": _to_method("float32"), "double": _to_method("float64"),
    "half": _to_method("float16"), "long": _to_method("int64"), "int": _to_method("int32"),
    "bool": _to_method("bool"),
}
FUNCTIONS = {
    "t": t, "transpose": transpose, "reshape": reshape, "unsqueeze": unsqueeze,
    "squeeze": squeeze, "unbind": unbind, "stack": stack, "clone": clone,
}
