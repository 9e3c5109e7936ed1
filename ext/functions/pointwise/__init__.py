"""Elementwise ops: arithmetic with tensors and numbers, the one-input math functions, the ops
that pick between values, and comparisons.

Each class is one op overload with torch's node name; the function next to it is the fast path
the Tensor methods call.
"""

from __future__ import annotations

import numpy as np

from .._op import operator_method as _operator
from .._op import reflected_method as _reflected
from .arithmetic import add, div, mul, pow, rdiv, reciprocal, rpow, rsub, sub
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
    invert,
    isinf,
    isnan,
    le,
    LOGICAL_METHODS,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    nan_to_num,
    ne,
)
from . import selection, unary  # noqa: F401 - (declares their ops)

METHODS = {
    "add": add, "sub": sub, "mul": mul, "div": div,
    "multiply": mul, "divide": div, "true_divide": div, "subtract": sub,
    "__add__": _operator(add), "__radd__": _reflected(add),
    "__sub__": _operator(sub), "__rsub__": _reflected(rsub),
    "__mul__": _operator(mul), "__rmul__": _reflected(mul),
    "__truediv__": _operator(div), "__rtruediv__": _reflected(rdiv),
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge,
    "__eq__": eq, "__ne__": ne, "__lt__": lt, "__le__": le, "__gt__": gt, "__ge__": ge,
    "reciprocal": reciprocal,
    **LOGICAL_METHODS,
    "logical_not": logical_not, "bitwise_and": bitwise_and, "bitwise_or": bitwise_or,
    "bitwise_xor": bitwise_xor, "bitwise_not": bitwise_not,
    "__and__": bitwise_and, "__or__": bitwise_or, "__xor__": bitwise_xor,
    "__rand__": bitwise_and, "__ror__": bitwise_or, "__rxor__": bitwise_xor,
    "__invert__": invert,
    "nan_to_num": nan_to_num, "isnan": isnan, "isinf": isinf, "isfinite": isfinite,
    "equal": equal, "allclose": allclose, "isclose": isclose,
}
FUNCTIONS = {
    "add": add, "sub": sub, "mul": mul, "div": div,
    "reciprocal": reciprocal,
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "multiply": mul,
    "divide": div, "subtract": sub, "true_divide": div, "rsub": rsub,
    "logical_and": logical_and, "logical_or": logical_or, "logical_xor": logical_xor,
    "logical_not": logical_not, "bitwise_and": bitwise_and, "bitwise_or": bitwise_or,
    "bitwise_xor": bitwise_xor, "bitwise_not": bitwise_not,
    "nan_to_num": nan_to_num, "isnan": isnan, "isinf": isinf, "isfinite": isfinite,
    "equal": equal, "allclose": allclose, "isclose": isclose,
}

