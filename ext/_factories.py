"""Tensor factories (tensor, zeros, arange, randn, ...) and ext's random number generator."""

from __future__ import annotations

import builtins
import math
import numbers
import os
import warnings
from collections.abc import Sequence

import numpy as np

from . import _args, _dtype, _random
from ._args import not_a_tensor
from ._dtype import FROM_NUMPY
from ._legacy import check_layout, in_memory_format
from ._tensor import Tensor, wrap

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "arange",
           "linspace", "eye", "rand", "randn", "randint", "zeros_like", "ones_like", "full_like",
           "empty_like", "rand_like", "randn_like", "manual_seed", "is_tensor", "is_inference",
           "Generator", "randperm", "seed", "initial_seed", "get_rng_state", "set_rng_state"]

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
        if not _dtype.is_floating_np(data.dtype):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t._requires_grad = True
    return t


_SEQUENCES = (list, tuple, range)
_NUMBERS = frozenset((builtins.float, builtins.int, builtins.bool))


def _leaf_types(seq, types: set) -> set:
    """The types of the leaves of nested lists and tuples (one ``set(map(type, ...))`` per
    innermost list, so a long list of numbers costs one pass in C)."""
    kinds = set(map(type, seq))
    for kind in kinds:
        if kind in _SEQUENCES:
            for x in seq:
                if type(x) in _SEQUENCES:
                    _leaf_types(x, types)
        else:
            types.add(kind)
    return types


def _inferred_dtype(types) -> _dtype.dtype:
    """torch's dtype for Python numbers of these types: a float gives the default dtype, else
    an int gives int64, else bool."""
    if builtins.float in types or not types:
        return _dtype.get_default_dtype()
    return _dtype.int64 if builtins.int in types else _dtype.bool


def _bad_leaf(types: set, dtype: _dtype.dtype | None) -> None:
    """torch's error for leaves that are not numbers: it names the type it could not infer a
    dtype from, or, when the dtype is given, the value it could not convert."""
    if str in types:
        if dtype is not None:
            raise ValueError("too many dimensions 'str'")
        raise TypeError("new(): invalid data type 'str'")
    for kind in types:
        if kind not in _NUMBERS and kind is not Tensor and not issubclass(kind, np.generic) \
                and kind is not np.ndarray:
            if dtype is None:
                raise RuntimeError(f"Could not infer dtype of {kind.__name__}")
            if dtype.is_floating_point or dtype is _dtype.bool:
                raise TypeError(f"must be real number, not {kind.__name__}")
            raise TypeError(f"'{kind.__name__}' object cannot be interpreted as an integer")


def _numbers_array(data, dtype: _dtype.dtype | None) -> np.ndarray:
    """Nested lists of Python numbers as an array of ``dtype`` (inferred when None). Values go
    straight to the requested dtype: a float meant for float64 never passes through float32."""
    types = _leaf_types(data, set()) if type(data) in _SEQUENCES else {type(data)}
    if not types <= _NUMBERS:
        return _mixed_array(data, types, dtype)
    target = dtype or _inferred_dtype(types)
    try:
        arr = np.array(data, dtype=np.float64 if target.is_floating_point else None)
    except ValueError:
        _raise_ragged(data)
        raise
    except OverflowError:
        raise ValueError("Overflow when unpacking long long") from None
    if arr.dtype.kind not in "fib":
        raise ValueError("Overflow when unpacking long long")
    if arr.dtype != target._np:
        if _dtype.number_overflows(arr, target._np, check_float=False):
            raise _dtype.overflow_error(target._np, c_name=False)
        arr = arr.astype(target._np)
    return arr


def _mixed_array(data, types: set, dtype: _dtype.dtype | None) -> np.ndarray:
    """Data holding NumPy scalars or arrays, or tensors: a tensor counts as the one number it
    holds, and the dtype promotes over every leaf's own dtype, as torch infers it."""
    _bad_leaf(types, dtype)
    dtypes: list = []

    def scalars(x):
        kind = type(x)
        if kind in _SEQUENCES:
            return [scalars(v) for v in x]
        if kind is Tensor:
            if x._data.size != 1:
                raise ValueError("only one element tensors can be converted to Python scalars")
            dtypes.append(FROM_NUMPY[x._data.dtype])
            return x._data.reshape(())
        if isinstance(x, (np.generic, np.ndarray)):
            dtypes.append(_dtype.from_numpy_dtype(x.dtype))
        else:
            dtypes.append(_dtype.scalar_dtype(x))
        return x

    values = scalars(data)
    target = dtype
    if target is None:
        target = dtypes[0]
        for d in dtypes[1:]:
            target = _dtype.promote_types(target, d)
    try:
        return np.array(values, dtype=target._np)
    except ValueError:
        _raise_ragged(data)
        raise


def _raise_ragged(data) -> None:
    """torch's error for nested lists whose lengths disagree (sizes follow the first
    elements)."""
    sizes = []
    x = data
    while type(x) in _SEQUENCES:
        sizes.append(len(x))
        if not x:
            break
        x = x[0]

    def check(x, dim):
        if dim == len(sizes):
            if type(x) in _SEQUENCES:
                raise TypeError(f"expected a number at dim {dim}, got {type(x).__name__}")
            return
        if type(x) not in _SEQUENCES:
            raise TypeError("not a sequence")
        if len(x) != sizes[dim]:
            raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} "
                             f"(got {len(x)})")
        for v in x:
            check(v, dim + 1)

    check(data, 0)


def _data_array(data, dtype: _dtype.dtype | None) -> np.ndarray:
    """A new NumPy array of ``data`` (a tensor, an array, numbers, nested lists) with torch's
    dtype inference."""
    if isinstance(data, Tensor):
        return data._data.astype(dtype._np if dtype is not None else data._data.dtype)
    if isinstance(data, (np.ndarray, np.generic)):
        _dtype.from_numpy_dtype(data.dtype)
        return np.array(data, dtype=None if dtype is None else dtype._np)
    return _numbers_array(data, dtype)


def tensor(data, *, dtype=None, device=None, requires_grad: builtins.bool = False,
           pin_memory: builtins.bool = False) -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (numbers, nested lists, NumPy arrays)."""
    dtype = _resolve_dtype(dtype, "tensor")
    _args.check_device(device, "tensor")
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()"
                      ".requires_grad_(True), rather than ext.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    return _finish(_data_array(data, dtype), requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, sharing memory with it when it already is one of the right dtype."""
    dtype = _resolve_dtype(dtype, "as_tensor")
    _args.check_device(device, "as_tensor")
    if isinstance(data, Tensor):
        return data if dtype is None or dtype._np == data._data.dtype else data.to(dtype)
    if isinstance(data, np.ndarray):
        _dtype.from_numpy_dtype(data.dtype)
        return wrap(data if dtype is None else data.astype(dtype._np, copy=False))
    return _finish(_data_array(data, dtype), False)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with a NumPy array."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    _dtype.from_numpy_dtype(array.dtype)
    return wrap(array)


def _size(size: tuple, fn: str, negative: str = "") -> tuple:
    """The ``*size`` of a factory as a tuple of ints, with torch's errors (``negative``: the
    factory's own message for a negative size, where it has one)."""
    if len(size) == 1 and isinstance(size[0], (Sequence, np.ndarray)) and \
            not isinstance(size[0], str):
        size = tuple(size[0])
    elif len(size) == 1 and not isinstance(size[0], (builtins.int, np.integer, Tensor)) or \
            len(size) == 1 and isinstance(size[0], builtins.bool):
        raise TypeError(f"{fn}(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size[0]).__name__}")
    out = []
    for i, s in enumerate(size):
        if isinstance(s, Tensor) and s._data.size == 1 and s._data.dtype.kind in "iu":
            s = s.item()
        if not isinstance(s, (builtins.int, np.integer)) or isinstance(s, builtins.bool):
            raise TypeError(f"{fn}(): argument 'size' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got "
                            f"{type(s).__name__}\"")
        out.append(builtins.int(s))
    for s in out:
        if s < 0:
            raise RuntimeError(negative or f"Trying to create tensor with negative dimension {s}: "
                                           f"{out}")
    return tuple(out)


def _np_dtype(dtype, fn: str):
    dtype = _resolve_dtype(dtype, fn)
    return (dtype or _dtype.get_default_dtype())._np


def _options(fn: str, device, requires_grad) -> None:
    """The keyword options every factory takes: the device, and requires_grad as a bool."""
    _args.check_device(device, fn)
    if type(requires_grad) is not builtins.bool:
        raise TypeError(f"{fn}(): argument 'requires_grad' must be bool, not "
                        f"{type(requires_grad).__name__}")


def constant(kernel, size: tuple, dtype, device, requires_grad, fn: str,
             negative: str = "") -> Tensor:
    """zeros, ones and empty (and the ``new_*`` methods, under their own names in errors)."""
    _options(fn, device, requires_grad)
    return _finish(kernel(_size(size, fn, negative), _np_dtype(dtype, fn)), requires_grad)


def zeros(*size, dtype=None, layout=None, device=None,
          requires_grad: builtins.bool = False) -> Tensor:
    """A tensor of zeros."""
    check_layout(layout, "zeros")
    return constant(np.zeros, size, dtype, device, requires_grad, "zeros",
                    "zeros: Dimension size must be non-negative.")


def ones(*size, dtype=None, layout=None, device=None,
         requires_grad: builtins.bool = False) -> Tensor:
    """A tensor of ones."""
    check_layout(layout, "ones")
    return constant(np.ones, size, dtype, device, requires_grad, "ones")


def empty(*size, dtype=None, layout=None, device=None,
          requires_grad: builtins.bool = False) -> Tensor:
    """A tensor with unspecified values (zeros here)."""
    check_layout(layout, "empty")
    return constant(np.zeros, size, dtype, device, requires_grad, "empty")


def _fill_value(value, fn: str):
    """A fill value as a Python number (a one-element 0-d tensor counts as its number)."""
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise TypeError(f"{fn}(): argument 'fill_value' (position 2) must be Number, not "
                            "Tensor")
        return value.item()
    _args.check_number(value, fn, "fill_value", 2)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, complex):
        raise TypeError("ext has no complex dtypes")
    return value


def full(size, fill_value, *, dtype=None, layout=None, device=None,
         requires_grad: builtins.bool = False) -> Tensor:
    """A tensor filled with ``fill_value``; the dtype follows the value when not given."""
    check_layout(layout, "full")
    return filled(size, fill_value, dtype, device, requires_grad, "full")


def filled(size, fill_value, dtype, device, requires_grad, fn: str) -> Tensor:
    """full (and ``new_full``, under its own name in errors)."""
    _options(fn, device, requires_grad)
    if not isinstance(size, (Sequence, np.ndarray)) or isinstance(size, str):
        raise TypeError(f"{fn}(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}")
    for i, s in enumerate(size):
        if not isinstance(s, (builtins.int, np.integer)) or isinstance(s, builtins.bool):
            raise TypeError(f"{fn}(): argument 'size' (position 1) must be tuple of ints, but "
                            f"found element of type {type(s).__name__} at pos {i}")
    fill_value = _fill_value(fill_value, fn)
    dtype = _resolve_dtype(dtype, fn) or _dtype.scalar_dtype(fill_value)
    return _finish(_fill(_size((size,), fn), fill_value, dtype._np), requires_grad)


def _range_arg(value, fn: str, name: str, position: int):
    if isinstance(value, Tensor) and value._data.size == 1:
        return value.item()
    _args.check_number(value, fn, name, position)
    return value.item() if isinstance(value, (Tensor, np.generic)) else value


def _fma(a: float, i: np.ndarray, c: float) -> np.ndarray:
    """``a * i + c`` rounded once, as the fused multiply-add torch's range kernels compile to
    (the product's rounding error, found exactly by Dekker's splitting, is added back)."""
    p = a * i

    def split(x):
        t = 134217729.0 * x
        hi = t - (t - x)
        return hi, x - hi

    ah, al = split(np.float64(a))
    ih, il = split(i)
    err = ((ah * ih - p) + ah * il + al * ih) + al * il
    s = p + c
    back = s - p
    return s + (((p - (s - back)) + (c - back)) + err)


def arange(start, end=None, step=1, *, dtype=None, device=None,
           requires_grad: builtins.bool = False) -> Tensor:
    """Values from ``start`` up to (not including) ``end`` by ``step``."""
    _options("arange", device, requires_grad)
    if end is None:
        start, end = 0, _range_arg(start, "arange", "end", 1)
    else:
        start = _range_arg(start, "arange", "start", 1)
        end = _range_arg(end, "arange", "end", 2)
    step = _range_arg(step, "arange", "step", 3)
    values = (start, end, step)
    dtype = _resolve_dtype(dtype, "arange")
    if dtype is None:
        is_int = all(isinstance(v, (builtins.int, np.integer)) for v in values)
        dtype = _dtype.int64 if is_int else _dtype.get_default_dtype()
    if dtype is _dtype.bool:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not dtype.is_floating_point:
        # Integer ranges run on the bounds and step truncated to integers.
        if not builtins.int(step):
            raise ValueError("step must be nonzero")
        if math.isfinite(start) and math.isfinite(end):
            size = math.ceil((end - start) / step)
            start, end, step = builtins.int(start), builtins.int(end), builtins.int(step)
            if dtype is _dtype.int64:
                size = -(-(end - start) // step)
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start:g} -> {end:g}")
    if not (step > 0 and end >= start or step < 0 and end <= start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype.is_floating_point:
        size = math.ceil((end - start) / step)
    if size > 2**63 - 1 or size * dtype.itemsize > 2**48:
        raise RuntimeError("invalid size, possible overflow?")
    index = np.arange(max(size, 0), dtype=np.float64)
    if dtype.is_floating_point:
        data = _fma(builtins.float(step), index, builtins.float(start))
    else:
        data = start + index.astype(np.int64) * step
    return _finish(data.astype(dtype._np), requires_grad)


def linspace(start, end, steps: builtins.int, *, dtype=None, device=None,
             requires_grad: builtins.bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    _options("linspace", device, requires_grad)
    if isinstance(steps, Tensor) and steps._data.size == 1:
        steps = steps.item()
    bad = [v for v in (start, end) if not isinstance(v, (numbers.Number, np.generic, Tensor))]
    if bad or not isinstance(steps, (builtins.int, np.integer)) or isinstance(steps, builtins.bool):
        got = ", ".join(type(v).__name__ for v in (start, end, steps))
        raise TypeError(f"linspace() received an invalid combination of arguments - got ({got})")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    _scalar_bounds("linspace", start, end)
    start = _range_arg(start, "linspace", "start", 1)
    end = _range_arg(end, "linspace", "end", 2)
    dtype = _resolve_dtype(dtype, "linspace") or _dtype.get_default_dtype()
    return _finish(_linspace(start, end, builtins.int(steps), dtype._np), requires_grad)


def _scalar_bounds(name: str, start, end) -> None:
    """torch's refusal of a start or end tensor with dimensions."""
    dims = [(which, v._data.ndim) for which, v in (("start", start), ("end", end))
            if isinstance(v, Tensor) and v._data.ndim]
    if dims:
        got = " and ".join(f"{which} with {n} dimension(s)" for which, n in dims)
        raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, but got "
                           f"{got}.")


def _linspace(start, end, steps: builtins.int, np_dtype: np.dtype) -> np.ndarray:
    """torch's linspace kernel: the first half counts up from ``start`` and the second half down
    from ``end`` (so both ends are exact), each value one fused multiply-add; float types
    compute in their own precision, integer types in float64."""
    if steps == 1:
        return np.full(1, start).astype(np_dtype)
    work = np.float32 if np_dtype == np.float32 else np.float64
    if np_dtype.kind == "f" and np_dtype != np.float32 and np_dtype != np.float64:
        work = np.float64
    lo, hi = work(start), work(end)
    step = (hi - lo) / work(max(steps - 1, 1))
    i = np.arange(steps, dtype=np.float64)
    half = steps // 2
    up = _fma(np.float64(step), i[:half], np.float64(lo))
    down = _fma(-np.float64(step), (steps - 1) - i[half:], np.float64(hi))
    return np.concatenate([up, down]).astype(work).astype(np_dtype)


def logspace(start, end, steps: builtins.int, base: builtins.float = 10.0, *, dtype=None,
             layout=None, device=None, requires_grad: builtins.bool = False) -> Tensor:
    """``steps`` values ``base ** e``, the exponents ``e`` evenly spaced from ``start`` to
    ``end`` inclusive."""
    check_layout(layout, "logspace")
    _options("logspace", device, requires_grad)
    if isinstance(steps, Tensor) and steps._data.size == 1:
        steps = steps.item()
    bad = [v for v in (start, end, base) if not isinstance(v, (numbers.Number, np.generic, Tensor))]
    if bad or not isinstance(steps, (builtins.int, np.integer)) or isinstance(steps, builtins.bool):
        got = ", ".join(type(v).__name__ for v in (start, end, steps, base))
        raise TypeError(f"logspace() received an invalid combination of arguments - got ({got})")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    _scalar_bounds("logspace", start, end)
    start = _range_arg(start, "logspace", "start", 1)
    end = _range_arg(end, "logspace", "end", 2)
    base = _range_arg(base, "logspace", "base", 4)
    dtype = _resolve_dtype(dtype, "logspace") or _dtype.get_default_dtype()
    return _finish(_logspace(start, end, builtins.int(steps), builtins.float(base), dtype._np),
                   requires_grad)


def _logspace(start, end, steps: builtins.int, base: builtins.float,
              np_dtype: np.dtype) -> np.ndarray:
    """torch's logspace kernel: the bounds in the result's dtype (an integer dtype truncates
    them), their difference in that dtype, the step between exponents in float64, the first
    half counting up from ``start`` and the second half down from ``end``, each power in
    float64 by the C library's pow, then converted."""
    if steps == 0:
        return np.empty(0, np_dtype)
    with np.errstate(all="ignore"):
        if steps == 1:
            return _libm_pow(base, np.full(1, start, np.float64)).astype(np_dtype)
        if np_dtype.kind in "iub":
            lo, hi = (np.array(v).astype(np_dtype).astype(np.int64) for v in (start, end))
        else:
            lo, hi = (np.array(v, np.float64).astype(np_dtype) for v in (start, end))
        # (the bounds' difference is rounded to the dtype, as the kernel subtracts them there)
        step = np.float64(hi - lo) / np.float64(steps - 1)
        lo, hi = np.float64(lo), np.float64(hi)
        i = np.arange(steps, dtype=np.float64)
        half = steps // 2
        exps = np.concatenate([lo + step * i[:half], hi - step * (steps - 1 - i[half:])])
        out = _libm_pow(builtins.float(base), exps)
        if np_dtype == np.uint8:
            # (through int32, as C converts: a value beyond it wraps, one beyond int32 is 0)
            out = out.astype(np.int32)
        elif np_dtype.kind == "f" and np_dtype.itemsize < 4 or np_dtype.kind == "V":
            out = out.astype(np.float32)  # (half and bfloat16 are made from a float)
        return out.astype(np_dtype)


def _libm_pow(base: builtins.float, exps: np.ndarray) -> np.ndarray:
    """``base ** exps`` by the C library's pow, as torch's scalar kernel computes it (NumPy's
    vectorized power can differ in the last bit)."""
    out = []
    for e in exps.tolist():
        try:
            out.append(math.pow(base, e))
        except (OverflowError, ValueError):  # (C's pow gives inf or nan)
            out.append(builtins.float(np.power(np.float64(base), e)))
    return np.array(out, np.float64)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None,
                  requires_grad: builtins.bool = False, pin_memory: builtins.bool = False
                  ) -> Tensor:
    """An uninitialized tensor (zeros here) of ``size`` laid out with ``stride`` (in
    elements) over a storage just large enough."""
    check_layout(layout, "empty_strided")
    _options("empty_strided", device, requires_grad)
    return _finish(strided_array(size, stride, _np_dtype(dtype, "empty_strided"),
                                 "empty_strided"), requires_grad)


def strided_array(size, stride, np_dtype: np.dtype, fn: str) -> np.ndarray:
    """Zeros of ``size`` with ``stride`` (in elements), over their own storage."""
    for name, pos, v in (("size", 1, size), ("stride", 2, stride)):
        if not isinstance(v, (Sequence, np.ndarray)) or isinstance(v, str):
            raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be tuple of ints, "
                            f"not {type(v).__name__}")
    shape = _size((size,), fn)
    for i, st in enumerate(stride):
        if not isinstance(st, (builtins.int, np.integer)) or isinstance(st, builtins.bool):
            raise TypeError(f"{fn}(): argument 'stride' (position 2) must be tuple of ints, but "
                            f"found element of type {type(st).__name__} at pos {i}")
    strides = tuple(builtins.int(st) for st in stride)
    if len(shape) != len(strides):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality of "
                           f"strides ({len(strides)})")
    if any(st < 0 for st in strides):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)} and "
                           f"strides={list(strides)}")
    extent = 0 if 0 in shape else 1 + sum((n - 1) * st for n, st in zip(shape, strides))
    storage = np.zeros(extent, np_dtype)
    item = storage.itemsize
    return np.lib.stride_tricks.as_strided(storage, shape, tuple(st * item for st in strides))


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad: builtins.bool = False, pin_memory: builtins.bool = False
                   ) -> Tensor:
    """An uninitialized tensor (zeros here) of ``size`` whose dims lie in memory in the order
    ``physical_layout`` (outermost first)."""
    check_layout(layout, "empty_permuted")
    _options("empty_permuted", device, requires_grad)
    shape = _size((size,), "empty_permuted")
    order = tuple(builtins.int(d) for d in physical_layout)
    if len(order) != len(shape):
        raise RuntimeError("Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(shape)} is not equal to "
                           f"len(physical_layout) = {len(order)}")
    for i, d in enumerate(order):
        if not 0 <= d < len(shape):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and "
                               f"{len(shape) - 1}, but got {d} at index {i}).  NB: negative dims "
                               "not currently supported; file an issue if you want it.")
    if len(set(order)) != len(order):
        raise RuntimeError("Duplicate dim not allowed")
    data = np.zeros(tuple(shape[d] for d in order), _np_dtype(dtype, "empty_permuted"))
    return _finish(data.transpose(np.argsort(order)), requires_grad)


def scalar_tensor(s, *, dtype=None, layout=None, device=None,
                  requires_grad: builtins.bool = False, pin_memory: builtins.bool = False
                  ) -> Tensor:
    """A 0-d tensor of the number ``s`` (in the default dtype unless ``dtype`` is given)."""
    check_layout(layout, "scalar_tensor")
    _options("scalar_tensor", device, requires_grad)
    if isinstance(s, Tensor) and s._data.ndim:
        raise TypeError("scalar_tensor(): argument 's' (position 1) must be Number, not Tensor")
    value = _range_arg(s, "scalar_tensor", "s", 1)
    if isinstance(value, complex):
        raise TypeError("ext has no complex dtypes")
    return _finish(np.array(value).astype(_np_dtype(dtype, "scalar_tensor")), requires_grad)


def eye(n: builtins.int, m: builtins.int | None = None, *, dtype=None, device=None,
        requires_grad: builtins.bool = False) -> Tensor:
    """The identity matrix (``n`` x ``m``)."""
    _options("eye", device, requires_grad)
    n = _args.check_int(n, "eye", "n", 1)
    if m is not None:
        if not isinstance(m, (builtins.int, np.integer)) or isinstance(m, builtins.bool):
            raise TypeError(f"eye() received an invalid combination of arguments - got "
                            f"(int, {type(m).__name__})")
        m = builtins.int(m)
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m is not None and m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    return _finish(np.eye(n, m, dtype=_np_dtype(dtype, "eye")), requires_grad)


class Generator:
    """A CPU random number generator that makes torch's stream: the same seed gives the same
    numbers on ext as on torch (mt19937, with torch's sampling algorithms)."""

    def __init__(self, device: object = "cpu") -> None:
        self.device = _generator_device(device)
        self._engine: _random.CPUEngine | None = None  # made on first use: import stays quick

    def __repr__(self) -> str:
        return f"<ext.Generator object at {hex(id(self))}>"

    # ``_rng`` and ``_seed`` are what the samplers and checkpoint's state saving use.
    @property
    def _rng(self) -> _random.CPUEngine:
        if self._engine is None:
            self._engine = _random.CPUEngine()
        return self._engine

    @_rng.setter
    def _rng(self, engine: _random.CPUEngine) -> None:
        self._engine = engine

    @property
    def _seed(self) -> builtins.int:
        return self._rng.initial_seed

    @_seed.setter
    def _seed(self, seed: builtins.int) -> None:
        self._rng.initial_seed = seed

    def manual_seed(self, seed: builtins.int) -> Generator:
        """Restart the stream from ``seed`` (any integer in [-2**63, 2**64))."""
        if not isinstance(seed, builtins.int) or isinstance(seed, builtins.bool):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        self._rng.manual_seed(_seed_value(seed))
        return self

    def seed(self) -> builtins.int:
        """Restart the stream from a fresh nondeterministic seed, and return it."""
        seed = builtins.int.from_bytes(os.urandom(8), "little")
        self._rng.manual_seed(seed)
        return seed

    def initial_seed(self) -> builtins.int:
        """The seed the stream was last started from."""
        return self._rng.initial_seed

    def get_state(self) -> Tensor:
        """The generator's state: a uint8 tensor laid out as torch's CPU generator state."""
        return wrap(self._rng.get_state())

    def set_state(self, new_state: Tensor) -> Generator:
        """Restore a state returned by :meth:`get_state` (ext's or torch's)."""
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state._data.dtype != np.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        data = new_state._data.reshape(-1)
        if data.size != _random.STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_random.STATE_BYTES}"
                               f" but found the input RNG state size to be {data.size}")
        self._rng.set_state(np.ascontiguousarray(data))
        return self


def _generator_device(spec: object) -> object:
    """A Generator's device: the CPU (ext has no other), with torch's errors for the rest."""
    from ._tensor import device

    where = device(spec)
    if where.type != "cpu":
        if where.type == "cuda":
            raise RuntimeError("Cannot get CUDA generator without ATen_cuda library.")
        raise RuntimeError(f"{where.type.upper()} device type not an accelerator.")
    return device("cpu")


def _seed_value(seed) -> builtins.int:
    """``seed`` as torch stores it: ``int(seed)`` as an unsigned 64-bit value (negatives wrap)."""
    seed = builtins.int(seed)
    if not -2**63 <= seed < 2**64:
        raise ValueError("Overflow when unpacking long long")
    return seed % 2**64


default_generator = Generator()


def manual_seed(seed: builtins.int) -> Generator:
    """Seed the default generator (rand, randn, randint, randperm, nn.init, dropout) with
    ``int(seed)``, and return it."""
    return default_generator.manual_seed(builtins.int(seed))


def seed() -> builtins.int:
    """Seed the default generator nondeterministically, and return the seed."""
    return default_generator.seed()


def initial_seed() -> builtins.int:
    """The seed the default generator was last started from."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state (a uint8 tensor, torch's layout)."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Restore the default generator's state from :func:`get_rng_state`."""
    default_generator.set_state(new_state)


def _rng(generator) -> _random.CPUEngine:
    return (generator or default_generator)._rng


def _float_only(np_dtype, kernel: str):
    if np.dtype(np_dtype).kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{FROM_NUMPY[np.dtype(np_dtype)]._short}'")


def fill_number(value, np_dtype: np.dtype):
    """A Python number checked by torch's rule for filling a tensor of ``np_dtype`` with it
    (RuntimeError when it does not fit), made ready for NumPy: a negative integer meant for an
    unsigned type is wrapped (-1 is 255 for uint8), as torch does."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, builtins.bool) or np_dtype.kind == "b":
        return value
    kind = np_dtype.kind
    if isinstance(value, builtins.int):
        if not -2**63 <= value < 2**63:
            if kind in "iu":
                raise _dtype.overflow_error(np_dtype, c_name=True)
            return builtins.float(value)
        values = np.array([value], np.int64)
    else:
        values = np.array([value], np.float64)
    if _dtype.number_overflows(values, np_dtype, check_float=True):
        raise _dtype.overflow_error(np_dtype, c_name=True)
    if kind == "u" and isinstance(value, builtins.int) and value < 0:
        value += np.iinfo(np_dtype).max + 1
    return value


def _fill(shape: tuple, value, np_dtype) -> np.ndarray:
    """np.full, with torch's error when ``np_dtype`` cannot hold ``value``."""
    np_dtype = np.dtype(np_dtype)
    return np.full(shape, fill_number(value, np_dtype), dtype=np_dtype)


def _uniform_array(generator, shape: tuple, np_dtype) -> np.ndarray:
    """Uniforms in [0, 1) drawn as torch draws them for a tensor of ``shape``."""
    return _random.uniform(_rng(generator), math.prod(shape), np_dtype).reshape(shape)


def _normal_array(generator, shape: tuple, np_dtype) -> np.ndarray:
    """Standard normals drawn as torch draws them for a contiguous tensor of ``shape``."""
    return _random.normal(_rng(generator), math.prod(shape), np_dtype).reshape(shape)


def rand(*size, dtype=None, generator=None, device=None,
         requires_grad: builtins.bool = False) -> Tensor:
    """Uniform samples in [0, 1)."""
    _options("rand", device, requires_grad)
    np_dtype = _np_dtype(dtype, "rand")
    _float_only(np_dtype, "check_uniform_bounds")
    shape = _size(size, "rand")
    return _finish(_uniform_array(generator, shape, np_dtype), requires_grad)


def randn(*size, dtype=None, generator=None, device=None,
          requires_grad: builtins.bool = False) -> Tensor:
    """Standard normal samples."""
    _options("randn", device, requires_grad)
    np_dtype = _np_dtype(dtype, "randn")
    _float_only(np_dtype, "normal_kernel_cpu")
    shape = _size(size, "randn")
    return _finish(_normal_array(generator, shape, np_dtype), requires_grad)


def randint(low, high=None, size=None, *, dtype=None, generator=None, device=None,
            requires_grad: builtins.bool = False) -> Tensor:
    """Uniform integers in [low, high); ``randint(high, size)`` starts at 0."""
    _options("randint", device, requires_grad)
    given = tuple(v for v in (low, high, size) if v is not None)
    if size is None:
        low, high, size = 0, low, high
    if size is None or not isinstance(size, (Sequence, np.ndarray)) or len(given) == 3 and \
            not all(isinstance(v, (builtins.int, np.integer)) for v in (low, high)):
        got = ", ".join(type(v).__name__ for v in given)
        raise TypeError(f"randint() received an invalid combination of arguments - got ({got})")
    high = _args.check_int(high, "randint", "high", 1)
    shape = _size((size,), "randint")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    dtype = _resolve_dtype(dtype, "randint") or _dtype.int64
    data = _random.randint(_rng(generator), math.prod(shape), builtins.int(low), high)
    return _finish(data.reshape(shape).astype(dtype._np), requires_grad)


def randperm(n: builtins.int, *, generator=None, dtype=None, device=None,
             requires_grad: builtins.bool = False) -> Tensor:
    """A random permutation of ``0 .. n-1``, the same one torch's CPU generator gives."""
    _options("randperm", device, requires_grad)
    n = _args.check_int(n, "randperm", "n", 1)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    np_dtype = np.dtype((_resolve_dtype(dtype, "randperm") or _dtype.int64)._np)
    _check_randperm_dtype(n, np_dtype)
    return _finish(_random.randperm(_rng(generator), n).astype(np_dtype), requires_grad)


def _check_randperm_dtype(n: builtins.int, np_dtype: np.dtype) -> None:
    """torch's limits: a float type must hold every integer below ``n`` exactly, an integer
    type must hold ``n - 1``."""
    if np_dtype.kind == "b":
        raise NotImplementedError('"randperm" not implemented for \'Bool\'')
    if np_dtype.kind == "f":
        digits = np.finfo(np_dtype).nmant + 1
        if n > 2**digits + 1:
            limit = f"{2**digits + 1}" if np_dtype.itemsize == 2 else f"2^{digits}+1"
            kind = {2: "Half", 4: "Float", 8: "Double"}[np_dtype.itemsize]
            raise RuntimeError(f"n cannot be greater than {limit} for {kind} type.")
    elif n > 0 and n - 1 > np.iinfo(np_dtype).max:
        raise _dtype.overflow_error(np_dtype, c_name=True)


def _like(t: Tensor, dtype, fn: str):
    if not isinstance(t, Tensor):
        raise not_a_tensor(t, fn)
    dtype = _resolve_dtype(dtype, fn)
    return t._data.shape, (dtype._np if dtype is not None else t._data.dtype)


def zeros_like(t: Tensor, *, dtype=None, device=None, memory_format=None,
               requires_grad: builtins.bool = False) -> Tensor:
    """Zeros with the shape (and dtype) of ``t``."""
    _options("zeros_like", device, requires_grad)
    shape, np_dtype = _like(t, dtype, "zeros_like")
    data = in_memory_format(np.zeros(shape, np_dtype), memory_format, "zeros_like")
    return _finish(data, requires_grad)


def ones_like(t: Tensor, *, dtype=None, device=None, memory_format=None,
              requires_grad: builtins.bool = False) -> Tensor:
    """Ones with the shape (and dtype) of ``t``."""
    _options("ones_like", device, requires_grad)
    shape, np_dtype = _like(t, dtype, "ones_like")
    data = in_memory_format(np.ones(shape, np_dtype), memory_format, "ones_like")
    return _finish(data, requires_grad)


def empty_like(t: Tensor, *, dtype=None, device=None, memory_format=None,
               requires_grad: builtins.bool = False) -> Tensor:
    """An uninitialised tensor (zeros here) shaped like ``t``."""
    _options("empty_like", device, requires_grad)
    shape, np_dtype = _like(t, dtype, "empty_like")
    data = in_memory_format(np.zeros(shape, np_dtype), memory_format, "empty_like")
    return _finish(data, requires_grad)


def full_like(t: Tensor, fill_value, *, dtype=None, device=None, memory_format=None,
              requires_grad: builtins.bool = False) -> Tensor:
    """``fill_value`` everywhere, with the shape (and dtype) of ``t``."""
    _options("full_like", device, requires_grad)
    shape, np_dtype = _like(t, dtype, "full_like")
    data = _fill(shape, _fill_value(fill_value, "full_like"), np_dtype)
    return _finish(in_memory_format(data, memory_format, "full_like"), requires_grad)


def rand_like(t: Tensor, *, dtype=None, device=None, generator=None,
              requires_grad: builtins.bool = False) -> Tensor:
    """Uniform samples shaped like ``t``."""
    _options("rand_like", device, requires_grad)
    shape, np_dtype = _like(t, dtype, "rand_like")
    _float_only(np_dtype, "check_uniform_bounds")
    return _finish(_uniform_array(generator, shape, np_dtype), requires_grad)


def randn_like(t: Tensor, *, dtype=None, device=None, generator=None,
               requires_grad: builtins.bool = False) -> Tensor:
    """Standard normal samples shaped like ``t``."""
    _options("randn_like", device, requires_grad)
    shape, np_dtype = _like(t, dtype, "randn_like")
    _float_only(np_dtype, "normal_kernel_cpu")
    return _finish(_normal_array(generator, shape, np_dtype), requires_grad)


def is_tensor(obj) -> builtins.bool:
    """Whether ``obj`` is an ext tensor."""
    return isinstance(obj, Tensor)


def is_inference(t: Tensor) -> builtins.bool:
    """Whether ``t`` is an inference tensor."""
    return t.is_inference()
