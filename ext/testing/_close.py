"""``assert_close``: torch.testing's comparison of tensors, arrays and numbers, over ext
tensors and NumPy (no torch needed, though its package ``ext.testing`` loads torch)."""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from .. import _dtype
from .._tensor import FROM_NUMPY, Size, Tensor

__all__ = ["assert_close"]

# Default (rtol, atol) by dtype, as torch.testing.assert_close picks them; exact otherwise.
_TOLERANCES = {"bfloat16": (1.6e-2, 1e-5), "float16": (1e-3, 1e-5), "float32": (1.3e-6, 1e-5),
               "float64": (1e-7, 1e-7)}
_SCALARS = (builtins.bool, builtins.int, builtins.float)


def _tensor_like(obj: Any) -> builtins.bool:
    return isinstance(obj, (Tensor, np.ndarray))


def _tolerances(dtypes: tuple, rtol: Any, atol: Any) -> tuple:
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {missing}.")
    if rtol is not None:
        return rtol, atol
    pairs = [_TOLERANCES.get(str(np.dtype(d)), (0.0, 0.0)) for d in dtypes]
    return builtins.max(p[0] for p in pairs), builtins.max(p[1] for p in pairs)


def _fail(message: str, msg: Any) -> AssertionError:
    if callable(msg):
        message = msg(message)
    elif msg is not None:
        message = msg
    return AssertionError(message)


def _close_mask(a: np.ndarray, b: np.ndarray, rtol: float, atol: float,
                equal_nan: builtins.bool) -> np.ndarray:
    if a.dtype.kind in "biu" and b.dtype.kind in "biu":
        return np.abs(a.astype(np.int64) - b.astype(np.int64)) <= atol + rtol * np.abs(b)
    return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _compare_tensors(actual: Any, expected: Any, rtol: Any, atol: Any, equal_nan: builtins.bool,
                     check_dtype: builtins.bool, msg: Any) -> None:
    a = actual._data if isinstance(actual, Tensor) else np.asarray(actual)
    b = expected._data if isinstance(expected, Tensor) else np.asarray(expected)
    if a.shape != b.shape:
        raise _fail(f"The values for attribute 'shape' do not match: {Size(a.shape)!r} != "
                    f"{Size(b.shape)!r}.", msg)
    if check_dtype and a.dtype != b.dtype:
        raise _fail(f"The values for attribute 'dtype' do not match: {FROM_NUMPY[a.dtype]!r} "
                    f"!= {FROM_NUMPY[b.dtype]!r}.", msg)
    rtol, atol = _tolerances((a.dtype, b.dtype), rtol, atol)
    # (bfloat16, NumPy kind "V", is compared through float32, which holds it exactly)
    a, b = (x.astype(np.float32) if x.dtype.kind == "V" else x for x in (a, b))
    common = np.result_type(a, b)
    a, b = a.astype(common), b.astype(common)
    close = _close_mask(a, b, rtol, atol, equal_nan)
    if close.all():
        return
    raise _fail(_mismatch_message(a, b, close, rtol, atol), msg)


def _mismatch_message(a: np.ndarray, b: np.ndarray, close: np.ndarray, rtol: float,
                      atol: float) -> str:
    exact = rtol == 0 and atol == 0
    if a.dtype == np.bool_:
        a, b = a.astype(np.int64), b.astype(np.int64)
    with np.errstate(all="ignore"):
        diff = np.abs(a - b) if a.dtype.kind == "f" else np.abs(a.astype(np.int64) - b)
        ratio_dtype = a.dtype if a.dtype.kind == "f" else _dtype.get_default_dtype()._np
        rel = diff.astype(ratio_dtype) / np.abs(b).astype(ratio_dtype)
    wrong = builtins.int((~close).sum())
    lines = [f"Tensor-likes are not {'equal' if exact else 'close'}!", "",
             f"Mismatched elements: {wrong} / {close.size} ({wrong / close.size:.1%})"]
    for label, values, tol in (("absolute", diff, atol), ("relative", rel, rtol)):
        flat = builtins.int(np.argmax(values))  # (the first NaN, where there is one)
        where = tuple(builtins.int(i) for i in np.unravel_index(flat, values.shape))
        allowed = "" if exact else f" (up to {tol} allowed)"
        lines.append(f"Greatest {label} difference: {values.reshape(-1)[flat].item()} at index "
                     f"{where}{allowed}")
    return "\n".join(lines)


def _compare_scalars(actual: Any, expected: Any, rtol: Any, atol: Any,
                     equal_nan: builtins.bool, msg: Any) -> None:
    floating = isinstance(actual, builtins.float) or isinstance(expected, builtins.float)
    rtol, atol = _tolerances((np.float64 if floating else np.int64,), rtol, atol)
    if math.isnan(actual) or math.isnan(expected):
        if equal_nan and math.isnan(actual) and math.isnan(expected):
            return
    elif actual == expected or abs(actual - expected) <= atol + rtol * abs(expected):
        return
    exact = rtol == 0 and atol == 0
    diff = abs(actual - expected)
    rel = diff / abs(expected) if expected else math.inf
    allowed = ("", "") if exact else (f" (up to {atol} allowed)", f" (up to {rtol} allowed)")
    raise _fail(f"Scalars are not {'equal' if exact else 'close'}!\n\nExpected {expected} but "
                f"got {actual}.\nAbsolute difference: {diff}{allowed[0]}\n"
                f"Relative difference: {rel}{allowed[1]}", msg)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: builtins.bool = True,
                 rtol: float | None = None, atol: float | None = None,
                 equal_nan: builtins.bool = False, check_device: builtins.bool = True,
                 check_dtype: builtins.bool = True, check_layout: builtins.bool = True,
                 check_stride: builtins.bool = False, msg: Any = None) -> None:
    """Raise AssertionError unless ``actual`` and ``expected`` (tensors, NumPy arrays, numbers,
    or sequences and mappings of them) match in shape and dtype and are elementwise close:
    ``|actual - expected| <= atol + rtol * |expected|``, with defaults by dtype."""
    options = (rtol, atol, equal_nan)
    if _tensor_like(actual) and _tensor_like(expected):
        _compare_tensors(actual, expected, *options, check_dtype, msg)
    elif isinstance(actual, _SCALARS) and isinstance(expected, _SCALARS):
        _compare_scalars(actual, expected, *options, msg)
    elif isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            raise _fail(f"The length of the sequences mismatch: {len(actual)} != "
                        f"{len(expected)}", msg)
        for a, b in zip(actual, expected):
            assert_close(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan,
                         check_dtype=check_dtype, msg=msg)
    elif isinstance(actual, dict) and isinstance(expected, dict):
        if actual.keys() != expected.keys():
            raise _fail(f"The keys of the mappings do not match: {sorted(actual)} != "
                        f"{sorted(expected)}", msg)
        for key in actual:
            assert_close(actual[key], expected[key], rtol=rtol, atol=atol,
                         equal_nan=equal_nan, check_dtype=check_dtype, msg=msg)
    else:
        raise TypeError(f"No comparison pair was able to handle inputs of type "
                        f"{type(actual)} and {type(expected)}.")
