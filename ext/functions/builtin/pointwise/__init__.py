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
from . import division, selection, unary  # noqa: F401 - (declares their ops)

