"""Elementwise ops: arithmetic with tensors and numbers, the one-input math functions, the ops
that pick between values, and comparisons.

Each class is one op overload with torch's node name; the function next to it is the fast path
the Tensor methods call.
"""

from __future__ import annotations

import numpy as np

from .arithmetic import add, div, mul, pow, reciprocal, rpow, rsub, sub
from .logical import (
    allclose,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    eq,
    equal,
    ge,
    gt,
    isclose,
    isfinite,
    isinf,
    isnan,
    le,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    nan_to_num,
    ne,
)
from .selection import (
    _where_method,
    clamp,
    clamp_max,
    clamp_min,
    masked_fill,
    maximum,
    minimum,
    where,
)
from .unary import (
    abs,
    ceil,
    cos,
    exp,
    expm1,
    floor,
    log,
    log1p,
    neg,
    relu,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sqrt,
    tan,
    tanh,
)

METHODS = {
    "neg": neg, "negative": neg,
    "__neg__": neg, "__abs__": abs,
    "abs": abs, "log": log, "sin": sin, "cos": cos, "tanh": tanh,
    "sigmoid": sigmoid, "sqrt": sqrt, "sign": sign,
    "log1p": log1p, "expm1": expm1, "tan": tan, "rsqrt": rsqrt, "round": round,
    "floor": floor, "ceil": ceil, "clamp": clamp, "clip": clamp, "clamp_min": clamp_min,
    "clamp_max": clamp_max, "maximum": maximum, "minimum": minimum,
    "where": _where_method,
    "masked_fill": masked_fill,
}
FUNCTIONS = {
    "neg": neg, "abs": abs,
    "log": log, "sin": sin, "cos": cos, "tanh": tanh, "sigmoid": sigmoid,
    "sqrt": sqrt, "sign": sign, "where": where,
    "masked_fill": masked_fill,
    "negative": neg,
    "log1p": log1p, "expm1": expm1, "tan": tan, "rsqrt": rsqrt, "round": round,
    "floor": floor, "ceil": ceil, "clamp": clamp, "clip": clamp, "clamp_min": clamp_min,
    "clamp_max": clamp_max, "maximum": maximum, "minimum": minimum,
}

