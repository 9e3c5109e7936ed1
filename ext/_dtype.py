"""Dtypes with torch's names, the default dtype, and torch's type-promotion rules."""

from __future__ import annotations

import builtins
import sys

import numpy as np

__all__ = [
    "dtype", "bfloat16", "float16", "float32", "float64", "int8", "int16", "int32", "int64",
    "uint8", "bool", "half", "float", "double", "short", "int", "long", "get_default_dtype",
    "set_default_dtype",
]

# Promotion categories: a Python scalar or a 0-d tensor only upcasts a dimensioned tensor when it
# belongs to a higher category (bool < integer < floating point).
_BOOL, _INT, _FLOAT = 0, 1, 2


class dtype:  # noqa: N801 - torch's name
    """A tensor element type: ``ext.float32``, ``ext.int64``, ... (NumPy holds the values)."""

    __slots__ = ("_name", "_np", "_category", "_legacy", "_short", "is_floating_point", "itemsize")

    def __init__(self, name: str, np_dtype, category: int, legacy: str, short: str,
                 itemsize: builtins.int | None = None) -> None:
        self._name = name
        if np_dtype is not None:  # (None: a type NumPy learns from ml_dtypes, on first use)
            self._np = np.dtype(np_dtype)
        self._category = category
        self._legacy = legacy
        self._short = short
        self.is_floating_point = category == _FLOAT
        self.itemsize = self._np.itemsize if itemsize is None else itemsize

    def __getattr__(self, name: str):
        # Only an unset ``_np`` slot gets here: bfloat16's NumPy type comes from ml_dtypes,
        # imported on the first bfloat16 tensor so that ``import ext`` does not pay for it.
        if name == "_np" and self._name == "bfloat16":
            return _load_bfloat16()
        raise AttributeError(f"'ext.dtype' object has no attribute '{name}'")

    @property
    def is_signed(self) -> bool:
        """Whether the type holds negative values."""
        return self._np.kind != "u" and self._np.kind != "b"

    @property
    def is_complex(self) -> bool:
        """Always False: ext has no complex dtypes."""
        return False

    def __repr__(self) -> str:
        return "ext." + self._name

    def __reduce__(self):
        return self._name


bfloat16 = dtype("bfloat16", None, _FLOAT, "BFloat16Tensor", "BFloat16", itemsize=2)
float16 = dtype("float16", np.float16, _FLOAT, "HalfTensor", "Half")
float32 = dtype("float32", np.float32, _FLOAT, "FloatTensor", "Float")
float64 = dtype("float64", np.float64, _FLOAT, "DoubleTensor", "Double")
uint8 = dtype("uint8", np.uint8, _INT, "ByteTensor", "Byte")
int8 = dtype("int8", np.int8, _INT, "CharTensor", "Char")
int16 = dtype("int16", np.int16, _INT, "ShortTensor", "Short")
int32 = dtype("int32", np.int32, _INT, "IntTensor", "Int")
int64 = dtype("int64", np.int64, _INT, "LongTensor", "Long")
bool = dtype("bool", np.bool_, _BOOL, "BoolTensor", "Bool")  # noqa: A001 - torch's name
half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001

ALL = (bfloat16, float16, float32, float64, uint8, int8, int16, int32, int64, bool)


class _ByNumpyType(dict):
    """NumPy dtype -> ext dtype; an array of ml_dtypes' bfloat16 made outside ext registers the
    type on its first lookup."""

    def __missing__(self, key):
        if getattr(key, "name", None) == "bfloat16" and "ml_dtypes" in sys.modules:
            _load_bfloat16()
            if key in self:
                return self[key]
        raise KeyError(key)


# The Tensor reads its dtype through this table.
FROM_NUMPY: dict[np.dtype, dtype] = _ByNumpyType({d._np: d for d in ALL if d is not bfloat16})


def _load_bfloat16() -> np.dtype:
    """Import ml_dtypes and register its bfloat16 as ``ext.bfloat16``'s NumPy type."""
    import ml_dtypes

    np_dtype = np.dtype(ml_dtypes.bfloat16)
    bfloat16._np = np_dtype
    FROM_NUMPY[np_dtype] = bfloat16
    return np_dtype


def is_floating_np(np_dtype: np.dtype) -> builtins.bool:
    """Whether a NumPy dtype holds floating-point values (ml_dtypes' bfloat16 included, whose
    NumPy kind is "V")."""
    return np_dtype.kind == "f" or np_dtype.name == "bfloat16"

_default = [float32]


def get_default_dtype() -> dtype:
    """The dtype of floating-point tensors made from Python floats (float32 unless changed)."""
    return _default[0]


def set_default_dtype(d: dtype) -> None:
    """Set the default floating-point dtype (bfloat16, float16, float32 or float64)."""
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default[0] = d


def from_numpy_dtype(np_dtype) -> dtype:
    """The ext dtype of a NumPy dtype; TypeError for types ext has no counterpart for."""
    try:
        found = FROM_NUMPY[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        found = None
    # (an ml_dtypes bfloat16 array is refused too, as torch refuses it)
    if found is None or found is bfloat16:
        kind = np.dtype(np_dtype).type
        raise TypeError(
            f"can't convert np.ndarray of type {kind.__module__}.{kind.__name__}. The "
            "only supported types are: float64, float32, float16, int64, int32, int16, int8, "
            "uint8, and bool."
        )
    return found


def check_dtype(d, fn: str = "tensor") -> dtype:
    """Validate a ``dtype=`` argument as torch does (TypeError naming the function)."""
    if isinstance(d, dtype):
        return d
    raise TypeError(f"{fn}(): argument 'dtype' must be ext.dtype, not {type(d).__name__}")


def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both ``a`` and ``b`` convert to safely (torch.promote_types)."""
    if a is b:
        return a
    if a._category != b._category:
        return a if a._category > b._category else b
    if a is bfloat16 or b is bfloat16:
        # (floating, both: neither half type holds the other, so they meet in float32)
        other = b if a is bfloat16 else a
        return float32 if other is float16 else other
    return FROM_NUMPY[np.promote_types(a._np, b._np)]


def scalar_category(value) -> int:
    """The promotion category of a Python scalar."""
    if isinstance(value, (builtins.bool, np.bool_)):
        return _BOOL
    if isinstance(value, (builtins.int, np.integer)):
        return _INT
    return _FLOAT


def scalar_dtype(value) -> dtype:
    """The dtype a lone Python scalar gets: bool, int64, or the default float dtype."""
    c = scalar_category(value)
    return bool if c == _BOOL else int64 if c == _INT else _default[0]


def result_type(a_dtype: dtype, a_dim: int, b_dtype: dtype, b_dim: int) -> dtype:
    """torch's result type for two tensors: 0-d tensors only count by category."""
    if a_dtype is b_dtype:
        return a_dtype
    if (a_dim == 0) == (b_dim == 0):
        return promote_types(a_dtype, b_dtype)
    dimmed, zero_d = (a_dtype, b_dtype) if b_dim == 0 else (b_dtype, a_dtype)
    return zero_d if zero_d._category > dimmed._category else dimmed


def scalar_result_type(t_dtype: dtype, value) -> dtype:
    """torch's result type for a tensor and a Python scalar."""
    c = scalar_category(value)
    if c <= t_dtype._category:
        return t_dtype
    return int64 if c == _INT else _default[0]


# torch's C++ names of the element types, which its conversion errors print.
_C_NAMES = {"int64": "int64_t", "int32": "int32_t", "int16": "int16_t", "int8": "int8_t",
            "uint8": "uint8_t", "float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "bool": "bool"}


# The largest finite value of each narrow floating type.
_FLOAT_MAX = {"float32": 3.4028234663852886e38, "bfloat16": 3.3895313892515355e38,
              "float16": 65504.0}


def number_overflows(values: np.ndarray, np_dtype: np.dtype, check_float: builtins.bool) -> \
        builtins.bool:
    """Whether storing these Python numbers (held as a float64, int64 or bool array) in
    ``np_dtype`` overflows by torch's rule (c10's ``checked_convert``): NaN or a value out of
    range for an integer type, where unsigned types take integers down to ``-max`` by wrapping;
    with ``check_float``, also a finite value beyond the range of a float32, bfloat16 or
    float16 type (the fill path's check)."""
    kind = np_dtype.kind
    if kind == "b" or values.dtype.kind == "b" or values.size == 0:
        return False
    if is_floating_np(np_dtype):
        if not check_float or np_dtype.itemsize == 8 or values.dtype.kind != "f":
            return False
        big = np.abs(values[np.isfinite(values)])
        return builtins.bool(big.size and big.max() > _FLOAT_MAX[np_dtype.name])
    info = np.iinfo(np_dtype)
    if values.dtype.kind == "f":
        return builtins.bool(np.isnan(values).any() or values.min() < info.min
                             or values.max() > info.max)
    low = -info.max if kind == "u" else info.min
    return builtins.bool(values.min() < low or values.max() > info.max)


def overflow_error(np_dtype: np.dtype, c_name: builtins.bool) -> RuntimeError:
    """torch's error for a number that does not fit a dtype (``int64`` from the tensor factory,
    the C name ``int64_t`` from fill and full)."""
    name = _C_NAMES[np_dtype.name] if c_name else np_dtype.name
    return RuntimeError(f"value cannot be converted to type {name} without overflow")
