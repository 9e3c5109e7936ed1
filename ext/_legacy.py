"""Legacy spellings old tutorials use: ``ext.Tensor(data)``, ``ext.FloatTensor(2, 3)``,
``x.type(ext.LongTensor)``, ``ext.autograd.Variable``, and the small environment names scripts
set or read (threads, default device, ``finfo``/``iinfo``, layouts and memory formats)."""

from __future__ import annotations

import builtins
import math
import os
from typing import Any

import numpy as np

from . import _args, _dtype
from ._tensor import Size, Tensor

inf = math.inf
nan = math.nan
pi = math.pi
e = math.e


class tensortype(type):  # noqa: N801 - torch's name
    """The metaclass of the legacy types: an instance is any tensor of the type's dtype."""

    dtype: _dtype.dtype

    def __instancecheck__(cls, obj: object) -> builtins.bool:
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype

    def __call__(cls, *args: Any, **kwargs: Any) -> Tensor:
        return construct(cls.dtype, args, kwargs)


def _legacy_type(dt: _dtype.dtype) -> tensortype:
    name = dt._legacy
    doc = f"The legacy type of {dt} tensors: ``{name}(data)`` or ``{name}(*size)``."
    return tensortype(name, (), {"dtype": dt, "is_cuda": False, "__module__": "ext",
                                 "__doc__": doc})


LEGACY_TYPES = {dt._legacy: _legacy_type(dt) for dt in _dtype.ALL if dt._legacy}
BFloat16Tensor = LEGACY_TYPES["BFloat16Tensor"]
HalfTensor = LEGACY_TYPES["HalfTensor"]
FloatTensor = LEGACY_TYPES["FloatTensor"]
DoubleTensor = LEGACY_TYPES["DoubleTensor"]
ByteTensor = LEGACY_TYPES["ByteTensor"]
CharTensor = LEGACY_TYPES["CharTensor"]
ShortTensor = LEGACY_TYPES["ShortTensor"]
IntTensor = LEGACY_TYPES["IntTensor"]
LongTensor = LEGACY_TYPES["LongTensor"]
BoolTensor = LEGACY_TYPES["BoolTensor"]


def _is_size(args: tuple) -> builtins.bool:
    return builtins.all(isinstance(a, builtins.int) and not isinstance(a, builtins.bool)
                        for a in args)


def _bad_arguments(args: tuple, kwargs: dict) -> TypeError:
    got = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
    return TypeError(f"new() received an invalid combination of arguments - got "
                     f"({', '.join(got)}), but expected one of: (*, device), (Tensor other), "
                     "(tuple of ints size, *, device), (object data, *, device)")


def construct(dt: _dtype.dtype | None, args: tuple, kwargs: dict) -> Tensor:
    """``ext.Tensor(...)`` (``dt`` None: the default dtype) and ``ext.FloatTensor(...)``: a
    shaped uninitialized tensor from ints, a copy of a sequence, or an alias of a tensor."""
    from . import _factories

    device = kwargs.pop("device", None)
    if kwargs:
        raise _bad_arguments(args, kwargs)
    if device is not None and str(getattr(device, "type", device)).split(":")[0] != "cpu":
        raise RuntimeError("legacy constructor expects device type: cpu but device type: "
                           f"{str(getattr(device, 'type', device)).split(':')[0]} was passed")
    _args.check_device(device, "new")
    dtype = dt or _dtype.get_default_dtype()
    if len(args) == 1 and isinstance(args[0], Size):
        args = tuple(args[0])
    if not args:
        return _factories.empty(0, dtype=dtype)
    if _is_size(args):
        return _factories.empty(*args, dtype=dtype)
    if len(args) != 1:
        raise _bad_arguments(args, {})
    data = args[0]
    if isinstance(data, Tensor):
        if dt is not None and data.dtype != dt:
            raise TypeError(f"expected {dt} tensor (got {data.dtype} tensor)")
        return data.detach()
    if isinstance(data, str) or not isinstance(data, (list, tuple, range, np.ndarray)):
        if isinstance(data, str):
            raise TypeError("new(): invalid data type 'str'")
        raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
    return _factories.tensor(np.asarray(data).tolist() if isinstance(data, np.ndarray) else data,
                             dtype=dtype)


def legacy_dtype(spec: Any) -> _dtype.dtype:
    """The dtype that ``Tensor.type``'s argument names: a dtype, a legacy type or its name
    (``'ext.FloatTensor'``, or torch's spelling of it), or ``Tensor`` for the default dtype;
    torch's errors for anything else."""
    if isinstance(spec, _dtype.dtype):
        return spec
    if isinstance(spec, tensortype):
        return spec.dtype
    if spec is Tensor:
        return _dtype.get_default_dtype()
    if isinstance(spec, type):
        raise ValueError(f"invalid type: '{spec.__name__}'")
    if not isinstance(spec, str):
        raise TypeError("dtype must be a type, str, or dtype object")
    module, _, name = spec.rpartition(".")
    if module in ("ext", "torch"):
        if name == "Tensor":
            return _dtype.get_default_dtype()
        if name in LEGACY_TYPES:
            return LEGACY_TYPES[name].dtype
    if module in ("ext.cuda", "torch.cuda"):
        raise RuntimeError("Cannot initialize CUDA without ATen_cuda library.")
    raise ValueError(f"invalid type: '{spec}'")


class _VariableMeta(type):
    def __instancecheck__(cls, obj: object) -> builtins.bool:
        return isinstance(obj, Tensor)

    def __call__(cls, data: Tensor | None = None, requires_grad: builtins.bool = False,
                 volatile: builtins.bool = False) -> Tensor:
        from . import _factories

        if data is None:
            return _factories.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if requires_grad and not data.dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        return data.detach().requires_grad_(builtins.bool(requires_grad))


class Variable(metaclass=_VariableMeta):
    """The old wrapper of a tensor: ``Variable(t, requires_grad=True)`` is a new leaf tensor
    over ``t``'s values (shared, not copied), and every tensor is a Variable."""


# ---------------------------------------------------------------------------- environment
class layout:  # noqa: N801 - torch's name
    """How a tensor's values are stored; ext tensors are ``ext.strided``."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"ext.{self._name}"


class memory_format:  # noqa: N801 - torch's name
    """An order of a tensor's dimensions in memory, as ``contiguous`` and the ``*_like``
    factories take it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"ext.{self._name}"


strided = layout("strided")
# (the sparse layouts are named, as scripts compare with them; no ext tensor has one)
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")

_THREADS = [os.cpu_count() or 1]


def set_num_threads(num: builtins.int) -> None:
    """Set the number of threads ops may use (kept and reported; NumPy picks its own)."""
    if not isinstance(num, builtins.int) or isinstance(num, builtins.bool):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(num).__name__}")
    if num <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _THREADS[0] = num


def get_num_threads() -> builtins.int:
    """The number of threads set by ``set_num_threads`` (the CPU count by default)."""
    return _THREADS[0]


def set_default_device(device: Any) -> None:
    """Accept the CPU (or None) as the default device; ext has no other device."""
    _args.check_device(device, "set_default_device")


def get_default_device() -> Any:
    """The default device: always the CPU."""
    from ._tensor import CPU

    return CPU


def _tensor_arg(obj: Any, fn: str) -> Tensor:
    if not isinstance(obj, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(obj).__name__}")
    return obj


def numel(input: Tensor) -> builtins.int:  # noqa: A002 - torch's name
    """The number of elements of ``input``."""
    return _tensor_arg(input, "numel").numel()


def is_floating_point(input: Tensor) -> builtins.bool:  # noqa: A002 - torch's name
    """Whether ``input``'s dtype is a floating-point type."""
    return _tensor_arg(input, "is_floating_point").is_floating_point()


def _float_info(np_dtype: np.dtype) -> Any:
    """NumPy's limits of a floating type; ml_dtypes' for bfloat16, which NumPy does not know."""
    if np_dtype.kind != "f":
        import ml_dtypes

        return ml_dtypes.finfo(np_dtype)
    return np.finfo(np_dtype)


class finfo:  # noqa: N801 - torch's name
    """The limits of a floating-point dtype: ``bits``, ``eps``, ``max``, ``min``, ``tiny``,
    ``smallest_normal``, ``resolution``, ``dtype``."""

    def __init__(self, type: _dtype.dtype | None = None) -> None:  # noqa: A002 - torch's name
        dt = _dtype.get_default_dtype() if type is None else type
        if not isinstance(dt, _dtype.dtype) or not dt.is_floating_point:
            raise TypeError("ext.finfo() requires a floating point input type. Use ext.iinfo "
                            "to handle 'ext.finfo'")
        info = _float_info(dt._np)
        self.bits = info.bits
        self.eps = builtins.float(info.eps)
        self.max = builtins.float(info.max)
        self.min = builtins.float(info.min)
        self.tiny = self.smallest_normal = builtins.float(info.smallest_normal)
        self.resolution = 10.0 ** -builtins.int(info.precision)
        self.dtype = dt._name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:  # noqa: N801 - torch's name
    """The limits of an integer dtype: ``bits``, ``max``, ``min``, ``dtype``."""

    def __init__(self, type: _dtype.dtype) -> None:  # noqa: A002 - torch's name
        if type == _dtype.bool:
            raise TypeError("ext.bool is not supported by ext.iinfo")
        if not isinstance(type, _dtype.dtype) or type.is_floating_point:
            raise TypeError("ext.iinfo() requires an integer input type. Use ext.finfo to "
                            "handle 'ext.iinfo'")
        info = np.iinfo(type._np)
        self.bits = info.bits
        self.max = builtins.int(info.max)
        self.min = builtins.int(info.min)
        self.dtype = type._name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


# ---------------------------------------------------------------------------- factory options
def check_layout(value: Any, fn: str) -> None:
    """A factory's ``layout``: None or ``ext.strided`` (ext has no sparse layouts)."""
    if value is None or value is strided:
        return
    if not isinstance(value, layout):
        raise TypeError(f"{fn}(): argument 'layout' must be ext.layout, not "
                        f"{type(value).__name__}")
    raise RuntimeError(f"{fn}(): ext tensors are strided only, got layout {value!r}")


def in_memory_format(data: np.ndarray, value: Any, fn: str) -> np.ndarray:
    """``data`` laid out as a ``memory_format`` asks (a ``*_like`` factory's argument):
    ``ext.channels_last`` keeps the channels of a 4-d tensor innermost in memory."""
    if value is None or value is contiguous_format or value is preserve_format:
        return data
    if not isinstance(value, memory_format):
        raise TypeError(f"{fn}(): argument 'memory_format' must be ext.memory_format, not "
                        f"{type(value).__name__}")
    if data.ndim != 4:
        raise RuntimeError("required rank 4 tensor to use channels_last format")
    return np.ascontiguousarray(data.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def _check_format(value: Any, fn: str) -> None:
    if value is not None and not isinstance(value, memory_format):
        raise TypeError(f"{fn}(): argument 'memory_format' must be ext.memory_format, not "
                        f"{type(value).__name__}")


def _channels_last(data: np.ndarray) -> np.ndarray:
    if data.ndim != 4:
        raise RuntimeError("required rank 4 tensor to use channels_last format")
    return data.transpose(0, 2, 3, 1)


def copy_in_format(data: np.ndarray, value: Any, fn: str) -> np.ndarray:
    """A copy of ``data`` laid out as ``memory_format`` asks (None: as ``preserve_format``,
    the layout ``data`` has)."""
    _check_format(value, fn)
    if value is None or value is preserve_format:
        return np.array(data, copy=True)  # (order "K": the strides' order is kept)
    if value is contiguous_format:
        return np.array(data, order="C", copy=True)
    return np.ascontiguousarray(_channels_last(data)).transpose(0, 3, 1, 2)


def in_format(data: np.ndarray, value: Any, fn: str) -> builtins.bool:
    """Whether ``data`` is laid out as ``memory_format`` asks (None: row-major)."""
    _check_format(value, fn)
    if value is channels_last:
        return _channels_last(data).flags.c_contiguous
    return data.flags.c_contiguous
