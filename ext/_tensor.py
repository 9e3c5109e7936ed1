"""``ext.Tensor``: a NumPy array plus the autograd attributes torch puts on a tensor.

The class holds only what every tensor needs (values, requires_grad, grad, grad_fn, version
counter). Its differentiable methods (``sin``, ``__mul__``, ``sum``, ...) are Functions of
``ext.functions``; they are attached through the one method table in ``ext/functions/__init__``.
Its autograd methods (``backward``, hooks, a view's ``grad_fn``) call ``ext.autograd`` lazily.
"""

from __future__ import annotations

import builtins
import sys
import warnings
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import _dtype
from ._dtype import FROM_NUMPY
from ._state import STATE

__all__ = ["Tensor", "Size", "device"]

_new = object.__new__

_NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See "
    "github.com/pytorch/pytorch/pull/30531 for more information."
)
_LEAF_ONLY = (
    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
    "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
)


class Size(tuple):
    """A tensor's shape: a tuple of ints that prints as ``ext.Size([2, 3])``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"ext.Size({list(self)})"

    __str__ = __repr__

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds."""
        n = 1
        for s in self:
            n *= s
        return n


class device:  # noqa: N801 - torch's name
    """A place for tensors: a type (``"cpu"``, ``"cuda"``, ...) and an optional index, as
    ``device("cpu")``, ``device("cpu", 0)`` or ``device("cpu:0")``. Any of torch's device
    types can be named; ext tensors live on the CPU (factories refuse the others)."""

    __slots__ = ("_type", "_index")

    def __init__(self, type: str | device, index: int | None = None) -> None:  # noqa: A002
        if isinstance(type, device) and index is None:
            self._type, self._index = type._type, type._index
            return
        if isinstance(type, bytes):
            type = type.decode()  # noqa: A001
        if builtins.type(type) is int:
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if not isinstance(type, str):
            given = builtins.type(type).__name__
            if index is not None:
                raise TypeError(f"device(): argument 'type' (position 1) must be str, not "
                                f"{'ext.device' if given == 'device' else given}")
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({given}), but expected one of:\n * (ext.device device)\n * (str "
                            "type, int index = -1)\n")
        self._type, self._index = _parse_device(type, index)

    @property
    def type(self) -> str:
        """The device type: ``"cpu"``, ``"cuda"``, ..."""
        return self._type

    @property
    def index(self) -> int | None:
        """The device's index among those of its type, or None when not given."""
        return self._index

    def __repr__(self) -> str:
        if self._index is None:
            return f"device(type='{self._type}')"
        return f"device(type='{self._type}', index={self._index})"

    def __str__(self) -> str:
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, device):
            return NotImplemented
        return self._type == other._type and self._index == other._index

    def __hash__(self) -> int:
        return hash((self._type, self._index))

    def __reduce__(self):
        return (device, (self._type,) if self._index is None else (self._type, self._index))

    def __enter__(self) -> device:
        from ._legacy import set_default_device

        set_default_device(self)
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _parse_device(text: str, index) -> tuple:
    """The type and index of a device string (``"cpu"``, ``"cuda:1"``) and an index argument,
    with torch's errors."""
    from ._args import _DEVICE_TYPES

    kind, colon, number = text.partition(":")
    if kind not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of "
                           f"device string: {text}")
    if colon:
        if not (number.isdigit() and number.isascii()) or number[0] == "0" and len(number) > 1:
            raise RuntimeError(f"Invalid device string: '{text}'")
        if index is not None:
            raise RuntimeError("type (string) must not include an index because index was "
                               f"passed explicitly: {text}")
        return kind, int(number)
    if index is not None:
        if builtins.type(index) is not int:
            raise TypeError(f"device(): argument 'index' (position 2) must be int, not "
                            f"{builtins.type(index).__name__}")
        if index < 0:
            raise RuntimeError("Device index must not be negative")
    return kind, index


CPU = device("cpu")


def legacy_type_name(t: Tensor) -> str:
    """torch's legacy name of a tensor's type and shape, as in error messages:
    ``[ext.FloatTensor [3]]``."""
    dims = ", ".join(str(s) for s in t._data.shape)
    return f"[ext.{FROM_NUMPY[t._data.dtype]._legacy} [{dims}]]"


# ext.autograd.backward, which Tensor.backward imports on its first call (autograd builds on
# this module).
_ENGINE: list = []


class Tensor:
    """A multi-dimensional array that records the operations applied to it for autograd."""

    # Slots set for every tensor come first; the others are set only when used (leaves that
    # have hooks or an accumulator) and read with getattr's default.
    __slots__ = ("_data", "_requires_grad", "_grad_fn", "_output_nr", "_grad", "_vc",
                 "_grad_acc", "_backward_hooks", "_post_acc_hooks", "_view", "_fw_grad",
                 "_is_param", "__weakref__")
    # NumPy defers to Tensor's reflected operators: np.float64(2) * t is a Tensor.
    __array_priority__ = 1000

    def __new__(cls, *args: Any, **kwargs: Any) -> Tensor:
        """The legacy constructor: ``ext.Tensor(2, 3)`` (uninitialized, the default dtype),
        ``ext.Tensor([1, 2])`` (a copy in the default dtype), ``ext.Tensor(t)`` (an alias)."""
        from ._legacy import construct

        return construct(None, args, kwargs)

    # ------------------------------------------------------------------ autograd attributes
    @property
    def requires_grad(self) -> bool:
        """Whether gradients will be computed for this tensor."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self._grad_fn is not None:
            raise RuntimeError(_LEAF_ONLY if not value else _LEAF_ONLY[:_LEAF_ONLY.index(" If")])
        self._set_requires_grad(value, "only Tensors of floating point and complex dtype can "
                                       "require gradients")

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` in place and return ``self`` (a no-op on a non-leaf asked to
        require grad, which it already does)."""
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(_LEAF_ONLY)
            return self
        self._set_requires_grad(requires_grad,
                                "only Tensors of floating point dtype can require gradients")
        return self

    def _set_requires_grad(self, value: bool, dtype_message: str) -> None:
        if value:
            if not STATE.inference and self.is_inference():
                raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                                   "InferenceMode is not allowed.")
            if not FROM_NUMPY[self._data.dtype].is_floating_point:
                raise RuntimeError(dtype_message)
        value = builtins.bool(value)
        info = getattr(self, "_view", None)
        if info is not None:
            info.own_requires_grad = value
            value = value or info.base._requires_grad
        if value != self._requires_grad:
            self._requires_grad = value
            views_follow_base(self)

    @property
    def grad(self) -> Tensor | None:
        """The gradient accumulated by backward (leaves, and non-leaves that retain grad)."""
        if self._grad_fn is not None and self._grad is None and not self.retains_grad:
            warnings.warn(_NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError("assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value._data.dtype != self._data.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype "
                    f"'{_c_type_name(value._data.dtype)}' to a tensor with grad_dtype "
                    f"'{FROM_NUMPY[self._data.dtype]._short}'. The gradient must match the "
                    "tensor's grad_dtype (defaults to the tensor's dtype).")
            if value._data.shape != self._data.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value._data.shape)}' to a "
                    f"tensor of size '{list(self._data.shape)}'. Please ensure that the gradient "
                    "and the tensor are the same size")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def grad_fn(self):
        """The Node that created this tensor (None for leaves)."""
        vc = self._vc
        if vc and vc[0] and getattr(self, "_view", None) is not None:
            from .autograd.views import refresh_view

            refresh_view(self)  # a view whose base changed in place reads its history anew
        return self._grad_fn

    @property
    def _base(self) -> Tensor | None:
        info = getattr(self, "_view", None)
        return None if info is None else info.base

    def _is_view(self) -> bool:
        return getattr(self, "_view", None) is not None

    @property
    def is_leaf(self) -> bool:
        """True for tensors not produced by a differentiable op that required grad."""
        return self.grad_fn is None

    @property
    def output_nr(self) -> int:
        """Which output of its ``grad_fn`` this tensor is (0 for leaves)."""
        return self._output_nr

    @property
    def _version(self) -> int:
        vc = self._vc
        if vc is None:
            return 0
        if vc is False:
            raise RuntimeError("Inference tensors do not track version counter.")
        return vc[0]

    @property
    def retains_grad(self) -> bool:
        """Whether backward will fill ``.grad`` on this non-leaf (see ``retain_grad``)."""
        fn = self._grad_fn
        return fn is not None and fn._hooks is not None and \
            self._output_nr in fn._hooks.retains_grad

    def retain_grad(self) -> None:
        """Ask backward to fill ``.grad`` of this non-leaf tensor (a no-op on leaves)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        fn = self._grad_fn
        if fn is None:
            return
        # Held weakly: the node must not keep its own output alive (that would be a cycle).
        fn._node_hooks().retains_grad[self._output_nr] = weakref.ref(self)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when the gradient w.r.t. this tensor is computed; a returned tensor
        replaces the gradient. Returns a handle whose ``remove()`` takes the hook away."""
        from .autograd.graph import add_hook, hook_dict

        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        fn = self.grad_fn
        if fn is not None:
            # The hook belongs to the node that made this version of the tensor.
            hooks = fn._node_hooks().tensor_pre
            table = hooks.get(self._output_nr)
            if table is None:
                table = hooks[self._output_nr] = hook_dict()
            return add_hook(table, hook)
        table = getattr(self, "_backward_hooks", None)
        if table is None:
            table = self._backward_hooks = hook_dict()
        return add_hook(table, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` after backward has accumulated into this leaf's ``.grad``."""
        from .autograd.graph import add_hook, hook_dict

        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        table = getattr(self, "_post_acc_hooks", None)
        if table is None:
            table = self._post_acc_hooks = hook_dict()
        return add_hook(table, hook)

    def is_inference(self) -> bool:
        """Whether this tensor was created in inference mode."""
        vc = self._vc
        return vc is False or type(vc) is InferenceVersion

    def detach(self) -> Tensor:
        """A new leaf that shares storage and version counter and does not require grad."""
        t = _new(Tensor)
        t._data = self._data
        t._requires_grad = False
        t._grad_fn = None
        t._output_nr = 0
        t._grad = None
        vc = self._vc
        if vc is None:
            vc = self._vc = [0]
        elif type(vc) is not list:
            # Detaching an inference tensor makes another; outside inference mode torch gives
            # it a counter of its own.
            vc = False if STATE.inference else InferenceVersion((0,))
        t._vc = vc
        return t

    def detach_(self) -> Tensor:
        """Make this tensor a leaf that does not require grad, in place."""
        if self._vc is False:
            return self  # an inference tensor has no autograd state to drop, as in torch
        if getattr(self, "_view", None) is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                "called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
        self._grad_fn = None
        self._output_nr = 0
        if getattr(self, "_fw_grad", None) is not None:
            self._fw_grad = None  # detach_ drops the tangent too, as torch's
        if self._requires_grad:
            self._requires_grad = False
            views_follow_base(self)
        return self

    @property
    def data(self) -> Tensor:
        """An alias of the values that autograd does not track (not even by version)."""
        t = self.detach()
        if type(t._vc) is list:  # (the data of an inference tensor is one too, made by detach)
            t._vc = None
        return t

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got "
                            f"{builtins.type(value).__name__}")
        self._data = value._data

    def backward(self, gradient: Tensor | None = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs=None) -> None:
        """Accumulate the gradient of this tensor w.r.t. graph leaves into their ``.grad``."""
        if not _ENGINE:  # (imported once: an import statement costs a small backward 3%)
            from .autograd import backward

            _ENGINE.append(backward)
        _ENGINE[0](self, gradient, retain_graph, create_graph, inputs=inputs)

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> Size:
        """The size of each dimension, as an ``ext.Size``."""
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        """The shape, or the size of one dimension."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return self._data.ndim

    def dim(self) -> int:
        """The number of dimensions."""
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        """The number of elements."""
        return self._data.size

    nelement = numel

    @property
    def dtype(self) -> _dtype.dtype:
        """The element type (``ext.float32``, ...)."""
        return FROM_NUMPY[self._data.dtype]

    @property
    def device(self) -> device:
        """Always the CPU."""
        return CPU

    @property
    def layout(self) -> Any:
        """Always ``ext.strided``."""
        from ._legacy import strided

        return strided

    @property
    def is_cuda(self) -> bool:
        """Always False."""
        return False

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating-point type."""
        return FROM_NUMPY[self._data.dtype].is_floating_point

    def element_size(self) -> int:
        """Bytes per element."""
        return self._data.itemsize

    def is_contiguous(self) -> bool:
        """Whether the values are laid out in row-major order without gaps."""
        return self._data.flags.c_contiguous

    def stride(self, dim: int | None = None):
        """Steps in elements between neighbours along each dimension."""
        st = torch_strides(self._data)
        return st if dim is None else st[_wrap_dim(dim, self._data.ndim)]

    def type(self, dtype=None, non_blocking: bool = False):
        """The legacy type name (``'ext.FloatTensor'``), or this tensor converted to ``dtype``
        (a dtype, a legacy type or its name; itself when it has that type already)."""
        if dtype is None:
            return "ext." + FROM_NUMPY[self._data.dtype]._legacy
        from ._legacy import legacy_dtype

        return self.to(legacy_dtype(dtype))

    def cpu(self) -> Tensor:
        """This tensor: it is on the CPU already."""
        return self

    def cuda(self, device=None, non_blocking: bool = False) -> Tensor:
        """Fails as on a build without CUDA: AssertionError."""
        raise AssertionError("ext not compiled with CUDA enabled")

    # ------------------------------------------------------------------ Python conversions
    def item(self) -> builtins.int | builtins.float | builtins.bool:
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar")
        return self._data.reshape(()).item()

    def tolist(self):
        """The values as (nested) Python lists, or a number for a 0-d tensor."""
        return self._data.tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The values as a NumPy array sharing memory with this tensor."""
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self._data.dtype.kind == "V":  # (bfloat16: NumPy has no such type of its own)
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self._data

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """Refuse an ext tensor given to torch, with a TypeError that says how to convert.

        torch calls this when one of its functions, modules or operators gets an ext tensor:
        the engines' tensors do not mix (torch is loaded by then: it is not imported here)."""
        from ._args import torch_function_given_ext

        overrides = getattr(sys.modules.get("torch"), "overrides", None)
        name = overrides.resolve_name(func) if overrides is not None else None
        raise torch_function_given_ext(name or getattr(func, "__name__", repr(func)))

    def __array__(self, dtype=None, copy=None):
        data = self.numpy()
        return data if dtype is None else data.astype(dtype, copy=False)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        # NumPy functions applied to a tensor give a tensor back.
        return wrap(np.asarray(array))

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def _scalar(self, kind: str):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self._data.reshape(()).item()

    def __bool__(self) -> builtins.bool:
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return builtins.bool(self._data.reshape(()).item())

    def __float__(self) -> builtins.float:
        return builtins.float(self._scalar("float"))

    def __int__(self) -> builtins.int:
        return builtins.int(self._scalar("int"))

    def __index__(self) -> builtins.int:
        if FROM_NUMPY[self._data.dtype].is_floating_point or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return builtins.int(self._data.reshape(()).item())

    def __hash__(self) -> builtins.int:
        return id(self)

    def __repr__(self) -> str:
        from ._tensor_str import tensor_repr

        fn = self._grad_fn
        text = tensor_repr(
            self._data, dtype_name=FROM_NUMPY[self._data.dtype]._name,
            default_dtype_name=_dtype.get_default_dtype()._name,
            requires_grad=self._requires_grad and fn is None,
            grad_fn_name=None if fn is None else type(fn).__name__, namespace="ext")
        if getattr(self, "_is_param", False):
            return "Parameter containing:\n" + text
        return text

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        from ._factories import tensor

        if self._data.dtype.kind == "V":  # (bfloat16, which ext.tensor takes from no array)
            return (wrap, (self._data.copy(),), None)
        return (tensor, (self._data.copy(),), None)

    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        t = wrap(self._data.copy())
        t._requires_grad = self._requires_grad
        if self._grad is not None:
            t._grad = wrap(self._grad._data.copy())
        if getattr(self, "_is_param", False):
            t._is_param = True
        memo[id(self)] = t
        return t


def wrap(data: np.ndarray) -> Tensor:
    """A new leaf tensor over ``data`` (no copy); the one constructor the engine uses."""
    t = _new(Tensor)
    # A 0-d NumPy result can come back as a NumPy scalar; a tensor always holds an ndarray.
    t._data = data if type(data) is np.ndarray else np.asarray(data)
    t._requires_grad = False
    t._grad_fn = None
    t._output_nr = 0
    t._grad = None
    # A version counter is made on first need (a view, an alias, an in-place op): None means
    # "version 0, not shared"; False marks an inference tensor, which has none (but see
    # InferenceVersion). (``special`` first: a plain read, where ``inference`` is a property.)
    t._vc = False if STATE.special and STATE.inference else None
    return t


def torch_strides(d: np.ndarray) -> tuple:
    """An array's strides in elements as torch states them for the same tensor. NumPy's differ
    in two places: a contiguous array may have any stride on a size-1 dim (torch: row-major),
    and a new empty array has zero strides (torch: row-major, a size-0 dim counting as 1); an
    empty slice keeps its base's strides in both."""
    if d.flags.c_contiguous and (d.size or not any(d.strides)):
        out, step = [], 1
        for n in reversed(d.shape):
            out.append(step)
            step *= max(n, 1)
        return tuple(reversed(out))
    return tuple(st // d.itemsize for st in d.strides)


class InferenceVersion(list):
    """The version counter of an inference tensor made by ``detach()`` or ``.data`` outside
    inference mode: torch gives such a tensor a counter of its own (not shared with what it
    detaches from), which in-place writes bump; its views still have none."""

    __slots__ = ()


def views_follow_base(base: Tensor) -> None:
    """``base`` started or stopped requiring grad: its views that have no history of their own
    (made under no_grad, or before the base required grad) now read as it does."""
    vc = base._vc
    if not vc or len(vc) == 1 or getattr(base, "_view", None) is not None:
        return
    rg = base._requires_grad
    for ref in vc[1:]:
        v = ref()
        # (a detached alias shares the counter, not the views: only their base drives them)
        if v is not None and v._grad_fn is None and v._view.base is base:
            v._requires_grad = rg or v._view.own_requires_grad


def bump_version(t: Tensor) -> None:
    """Record an in-place modification of ``t`` (and of every alias sharing its counter).

    An inference tensor has no counter. Outside inference mode, bumping it refuses the
    modification, as torch's does: after the op has written, so the write stays.
    """
    vc = t._vc
    if vc is None:
        t._vc = [1]
    elif vc is False:
        if not STATE.inference:
            raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not "
                               "allowed.You can make a clone to get a normal tensor before doing "
                               "inplace update.See https://github.com/pytorch/rfcs/pull/17 for "
                               "more details.")
    elif type(vc) is list or not STATE.inference:
        vc[0] += 1  # (torch leaves an InferenceVersion alone inside inference mode)


def _c_type_name(np_dtype) -> str:
    # The C type names torch uses in some messages ('double', 'float', 'long', ...).
    return {"float64": "double", "float32": "float", "float16": "c10::Half", "int64": "long",
            "int32": "int", "bool": "bool"}.get(str(np_dtype), str(np_dtype))


def _wrap_dim(dim: int, ndim: int) -> int:
    """Map a possibly negative dim into range, with torch's IndexError when it is out of range."""
    lo, hi = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if not lo <= dim <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but "
                         f"got {dim})")
    return dim % ndim if ndim else 0
