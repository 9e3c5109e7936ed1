"""Tensor factories (tensor, zeros, arange, randn, ...) and ext's random number generator."""

from __future__ import annotations

import builtins
import math
import warnings
from collections.abc import Sequence

import numpy as np

from . import _dtype
from ._dtype import FROM_NUMPY
from ._tensor import Tensor, wrap

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "arange",
           "linspace", "eye", "rand", "randn", "randint", "zeros_like", "ones_like", "full_like",
           "empty_like", "rand_like", "randn_like", "manual_seed", "is_tensor", "is_inference",
           "Generator"]

_PY_TYPES = {builtins.float: "float64", builtins.int: "int64", builtins.bool: "bool"}


def _resolve_dtype(dtype, fn: str):
    if dtype is None or isinstance(dtype, _dtype.dtype):
        return dtype
    if dtype in _PY_TYPES:
        return getattr(_dtype, _PY_TYPES[dtype])
    raise TypeError(f"{fn}(): argument 'dtype' must be ext.dtype, not {type(dtype).__name__}")


def _finish(data: np.ndarray, requires_grad: bool, fn: str = "") -> Tensor:
    t = wrap(data)
    if requires_grad:
        if data.dtype.kind != "f":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t._requires_grad = True
    return t


def _infer_array(data) -> np.ndarray:
    """A NumPy array of Python data, with torch's dtype inference."""
    if isinstance(data, Tensor):
        return data._data.copy()
    if isinstance(data, np.ndarray):
        return np.array(data, copy=True)
    if isinstance(data, np.generic):
        return np.array(data)
    arr = np.array(data)
    if arr.dtype == object:
        raise TypeError(f"Could not infer dtype of {type(data).__name__}")
    kind = arr.dtype.kind
    if kind == "f" and not _has_tensor(data):
        arr = arr.astype(_dtype.get_default_dtype()._np)
    elif kind in "iu" and not _has_tensor(data):
        arr = arr.astype(np.int64)
    elif kind not in "fiub":
        raise TypeError(f"Could not infer dtype of {type(data).__name__}")
    return arr


def _has_tensor(data) -> builtins.bool:
    if isinstance(data, Tensor):
        return True
    if isinstance(data, (list, tuple)) and data:
        return _has_tensor(data[0])
    return False


def tensor(data, *, dtype=None, device=None, requires_grad: builtins.bool = False,
           pin_memory: builtins.bool = False) -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (numbers, nested lists, NumPy arrays)."""
    dtype = _resolve_dtype(dtype, "tensor")
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()"
                      ".requires_grad_(True), rather than ext.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    arr = _infer_array(data)
    if arr.dtype not in FROM_NUMPY:
        arr = arr.astype(_dtype.from_numpy_dtype(arr.dtype)._np)
    if dtype is not None:
        arr = arr.astype(dtype._np, copy=False)
    return _finish(arr, requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, sharing memory with it when it already is one of the right dtype."""
    dtype = _resolve_dtype(dtype, "as_tensor")
    if isinstance(data, Tensor):
        return data if dtype is None or dtype._np == data._data.dtype else data.to(dtype)
    if isinstance(data, np.ndarray):
        _dtype.from_numpy_dtype(data.dtype)
        return wrap(data if dtype is None else data.astype(dtype._np, copy=False))
    return tensor(data, dtype=dtype)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with a NumPy array."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    _dtype.from_numpy_dtype(array.dtype)
    return wrap(array)


def _size(size: tuple, fn: str) -> tuple:
    if len(size) == 1 and isinstance(size[0], (Sequence, np.ndarray)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, (builtins.int, np.integer)) or isinstance(s, builtins.bool):
            raise TypeError(f"{fn}(): argument 'size' must be tuple of ints, but found element "
                            f"of type {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
    return tuple(builtins.int(s) for s in size)


def _np_dtype(dtype, fn: str):
    dtype = _resolve_dtype(dtype, fn)
    return (dtype or _dtype.get_default_dtype())._np


def zeros(*size, dtype=None, device=None, requires_grad: builtins.bool = False) -> Tensor:
    """A tensor of zeros."""
    return _finish(np.zeros(_size(size, "zeros"), _np_dtype(dtype, "zeros")), requires_grad)


def ones(*size, dtype=None, device=None, requires_grad: builtins.bool = False) -> Tensor:
    """A tensor of ones."""
    return _finish(np.ones(_size(size, "ones"), _np_dtype(dtype, "ones")), requires_grad)


def empty(*size, dtype=None, device=None, requires_grad: builtins.bool = False) -> Tensor:
    """A tensor with unspecified values (zeros here)."""
    return _finish(np.zeros(_size(size, "empty"), _np_dtype(dtype, "empty")), requires_grad)


def _fill_dtype(value):
    return _dtype.scalar_dtype(value.item() if isinstance(value, Tensor) else value)


def full(size, fill_value, *, dtype=None, device=None,
         requires_grad: builtins.bool = False) -> Tensor:
    """A tensor filled with ``fill_value``; the dtype follows the value when not given."""
    if not isinstance(size, (Sequence, np.ndarray)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}")
    dtype = _resolve_dtype(dtype, "full") or _fill_dtype(fill_value)
    return _finish(_fill(_size(tuple(size), "full"), fill_value, dtype._np), requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None,
           requires_grad: builtins.bool = False) -> Tensor:
    """Values from ``start`` up to (not including) ``end`` by ``step``."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    values = (start, end, step)
    dtype = _resolve_dtype(dtype, "arange")
    if dtype is None:
        is_int = all(isinstance(v, (builtins.int, np.integer)) for v in values)
        dtype = _dtype.int64 if is_int else _dtype.get_default_dtype()
    n = max(0, math.ceil((end - start) / step))
    data = (start + np.arange(n, dtype=np.float64) * step) if dtype.is_floating_point \
        else np.arange(start, end, step)
    return _finish(data.astype(dtype._np), requires_grad)


def linspace(start, end, steps: builtins.int, *, dtype=None, device=None,
             requires_grad: builtins.bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    dtype = _resolve_dtype(dtype, "linspace") or _dtype.get_default_dtype()
    return _finish(np.linspace(start, end, steps).astype(dtype._np), requires_grad)


def eye(n: builtins.int, m: builtins.int | None = None, *, dtype=None, device=None,
        requires_grad: builtins.bool = False) -> Tensor:
    """The identity matrix (``n`` x ``m``)."""
    return _finish(np.eye(n, m, dtype=_np_dtype(dtype, "eye")), requires_grad)


class Generator:
    """ext's random number generator (its own stream: values differ from torch's)."""

    def __init__(self, device: str = "cpu") -> None:
        self._rng = np.random.default_rng(0)
        self._seed = 0

    def manual_seed(self, seed: builtins.int) -> Generator:
        """Restart the stream from ``seed``."""
        self._seed = builtins.int(seed)
        self._rng = np.random.default_rng(self._seed)
        return self

    def initial_seed(self) -> builtins.int:
        """The seed the stream was last started from."""
        return self._seed


default_generator = Generator()


def manual_seed(seed: builtins.int) -> Generator:
    """Seed ext's default generator (rand, randn, randint)."""
    return default_generator.manual_seed(seed)


def _rng(generator):
    return (generator or default_generator)._rng


def _float_only(np_dtype, kernel: str):
    if np.dtype(np_dtype).kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{FROM_NUMPY[np.dtype(np_dtype)]._short}'")


def _fill(shape: tuple, value, np_dtype) -> np.ndarray:
    """np.full, with torch's error when an integer dtype cannot hold ``value``."""
    np_dtype = np.dtype(np_dtype)
    if np_dtype.kind in "iu" and not isinstance(value, builtins.bool):
        info = np.iinfo(np_dtype)
        v = value.item() if isinstance(value, (Tensor, np.generic)) else value
        # Unsigned types take small negatives by wrapping (-1 is 255 for uint8), as torch does.
        low = -(info.max + 1) if np_dtype.kind == "u" else info.min
        if not low <= builtins.int(v) <= info.max:
            raise RuntimeError(f"value cannot be converted to type {np_dtype.name}_t without "
                               "overflow")
    value = value.item() if isinstance(value, Tensor) else value
    if np_dtype.kind == "u" and isinstance(value, builtins.int) and value < 0:
        value += info.max + 1
    return np.full(shape, value).astype(np_dtype)


def rand(*size, dtype=None, generator=None, device=None,
         requires_grad: builtins.bool = False) -> Tensor:
    """Uniform samples in [0, 1)."""
    np_dtype = _np_dtype(dtype, "rand")
    _float_only(np_dtype, "check_uniform_bounds")
    return _finish(_rng(generator).random(_size(size, "rand")).astype(np_dtype), requires_grad)


def randn(*size, dtype=None, generator=None, device=None,
          requires_grad: builtins.bool = False) -> Tensor:
    """Standard normal samples."""
    np_dtype = _np_dtype(dtype, "randn")
    _float_only(np_dtype, "normal_kernel_cpu")
    data = _rng(generator).standard_normal(_size(size, "randn")).astype(np_dtype)
    return _finish(data, requires_grad)


def randint(low, high=None, size=None, *, dtype=None, generator=None, device=None,
            requires_grad: builtins.bool = False) -> Tensor:
    """Uniform integers in [low, high); ``randint(high, size)`` starts at 0."""
    if size is None:
        low, high, size = 0, low, high
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    dtype = _resolve_dtype(dtype, "randint") or _dtype.int64
    data = _rng(generator).integers(low, high, _size(tuple(size), "randint"))
    return _finish(data.astype(dtype._np), requires_grad)


def _like(t: Tensor, dtype, fn: str):
    if not isinstance(t, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(t).__name__}")
    dtype = _resolve_dtype(dtype, fn)
    return t._data.shape, (dtype._np if dtype is not None else t._data.dtype)


def zeros_like(t: Tensor, *, dtype=None, device=None,
               requires_grad: builtins.bool = False) -> Tensor:
    """Zeros with the shape (and dtype) of ``t``."""
    shape, np_dtype = _like(t, dtype, "zeros_like")
    return _finish(np.zeros(shape, np_dtype), requires_grad)


def ones_like(t: Tensor, *, dtype=None, device=None,
              requires_grad: builtins.bool = False) -> Tensor:
    """Ones with the shape (and dtype) of ``t``."""
    shape, np_dtype = _like(t, dtype, "ones_like")
    return _finish(np.ones(shape, np_dtype), requires_grad)


def empty_like(t: Tensor, *, dtype=None, device=None,
               requires_grad: builtins.bool = False) -> Tensor:
    """An uninitialised tensor (zeros here) shaped like ``t``."""
    shape, np_dtype = _like(t, dtype, "empty_like")
    return _finish(np.zeros(shape, np_dtype), requires_grad)


def full_like(t: Tensor, fill_value, *, dtype=None, device=None,
              requires_grad: builtins.bool = False) -> Tensor:
    """``fill_value`` everywhere, with the shape (and dtype) of ``t``."""
    shape, np_dtype = _like(t, dtype, "full_like")
    return _finish(_fill(shape, fill_value, np_dtype), requires_grad)


def rand_like(t: Tensor, *, dtype=None, device=None,
              requires_grad: builtins.bool = False) -> Tensor:
    """Uniform samples shaped like ``t``."""
    shape, np_dtype = _like(t, dtype, "rand_like")
    _float_only(np_dtype, "check_uniform_bounds")
    return _finish(_rng(None).random(shape).astype(np_dtype), requires_grad)


def randn_like(t: Tensor, *, dtype=None, device=None,
               requires_grad: builtins.bool = False) -> Tensor:
    """Standard normal samples shaped like ``t``."""
    shape, np_dtype = _like(t, dtype, "randn_like")
    _float_only(np_dtype, "normal_kernel_cpu")
    return _finish(_rng(None).standard_normal(shape).astype(np_dtype), requires_grad)


def is_tensor(obj) -> builtins.bool:
    """Whether ``obj`` is an ext tensor."""
    return isinstance(obj, Tensor)


def is_inference(t: Tensor) -> builtins.bool:
    """Whether ``t`` is an inference tensor."""
    return t.is_inference()
