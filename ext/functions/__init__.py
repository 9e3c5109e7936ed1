"""``ext.functions``: the op library. Every differentiable op is a Function here.

``METHODS`` is the one table through which ``ext.Tensor`` reaches the ops: it is installed on the
class when ``ext`` is imported (``install_methods``), the only place where a lower layer is given
code from a higher one.
"""

from __future__ import annotations

from .._tensor import Tensor
from . import linalg, pointwise, reduction, shape
from ._builtin import BuiltinFunction, namespace_of
from .linalg import dot, matmul, mm, mv
from .pointwise import (
    abs,
    add,
    cos,
    div,
    eq,
    exp,
    ge,
    gt,
    le,
    log,
    lt,
    mul,
    ne,
    neg,
    pow,
    reciprocal,
    relu,
    rsub,
    sigmoid,
    sign,
    sin,
    sqrt,
    sub,
    tanh,
    where,
)
from .reduction import mean, sum
from .shape import clone, expand, reshape, squeeze, stack, t, to, transpose, unbind, unsqueeze, view

__all__ = ["BuiltinFunction", "namespace_of", "METHODS", "install_methods", "linalg",
           "pointwise", "reduction", "shape"]


def _binary(fn):
    # Operators return NotImplemented for operands they do not know, so Python can try the
    # reflected operator or raise its own TypeError.
    def op(self, other):
        if not isinstance(other, (Tensor, int, float, bool)) and \
                type(other).__module__ != "numpy":
            return NotImplemented
        return fn(self, other)

    op.__name__ = fn.__name__
    op.__doc__ = fn.__doc__
    return op


def _reflected(fn):
    def op(self, other):
        if not isinstance(other, (int, float, bool)) and type(other).__module__ != "numpy":
            return NotImplemented
        return fn(self, other)

    op.__name__ = fn.__name__
    return op


def _to_method(dtype_name: str):
    def convert(self):
        import ext

        return to(self, getattr(ext, dtype_name))

    convert.__name__ = dtype_name
    convert.__doc__ = f"``self.to(ext.{dtype_name})``."
    return convert


def _size_method(fn):
    def method(self, *sizes):
        return fn(self, *sizes)

    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


METHODS = {
    # arithmetic
    "add": add, "sub": sub, "mul": mul, "div": div, "pow": pow, "neg": neg,
    "__add__": _binary(add), "__radd__": _reflected(add),
    "__sub__": _binary(sub), "__rsub__": _reflected(rsub),
    "__mul__": _binary(mul), "__rmul__": _reflected(mul),
    "__truediv__": _binary(div), "__rtruediv__": _reflected(pointwise.rdiv),
    "__pow__": _binary(pow), "__rpow__": _reflected(pointwise.rpow),
    "__neg__": neg, "__abs__": abs,
    "__matmul__": lambda self, other: matmul(self, other) if isinstance(other, Tensor)
    else NotImplemented,
    "__rmatmul__": lambda self, other: NotImplemented,
    "multiply": mul, "divide": div, "true_divide": div, "subtract": sub, "negative": neg,
    # comparisons
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge,
    "__eq__": eq, "__ne__": ne, "__lt__": lt, "__le__": le, "__gt__": gt, "__ge__": ge,
    # unary math
    "abs": abs, "exp": exp, "log": log, "sin": sin, "cos": cos, "tanh": tanh,
    "sigmoid": sigmoid, "relu": relu, "sqrt": sqrt, "sign": sign, "reciprocal": reciprocal,
    # reductions
    "sum": sum, "mean": mean,
    # matrix products
    "matmul": matmul, "mm": mm, "mv": mv, "dot": dot,
    # shapes and copies
    "t": t, "transpose": transpose, "view": _size_method(view),
    "reshape": _size_method(reshape), "expand": _size_method(expand), "unsqueeze": unsqueeze,
    "squeeze": squeeze, "unbind": unbind, "clone": clone, "to": to,
    "float": _to_method("float32"), "double": _to_method("float64"),
    "half": _to_method("float16"), "long": _to_method("int64"), "int": _to_method("int32"),
    "bool": _to_method("bool"),
}


def install_methods() -> None:
    """Attach the op library's methods to ``ext.Tensor``."""
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)


FUNCTIONS = {
    "add": add, "sub": sub, "mul": mul, "div": div, "pow": pow, "neg": neg, "abs": abs,
    "exp": exp, "log": log, "sin": sin, "cos": cos, "tanh": tanh, "sigmoid": sigmoid,
    "relu": relu, "sqrt": sqrt, "sign": sign, "reciprocal": reciprocal, "sum": sum,
    "mean": mean, "matmul": matmul, "mm": mm, "mv": mv, "dot": dot, "t": t,
    "transpose": transpose, "reshape": reshape, "unsqueeze": unsqueeze, "squeeze": squeeze,
    "unbind": unbind, "stack": stack, "clone": clone, "where": where, "eq": eq, "ne": ne,
    "lt": lt, "le": le, "gt": gt, "ge": ge, "multiply": mul, "divide": div,
    "subtract": sub, "negative": neg, "true_divide": div, "rsub": rsub,
}
"""The ``ext.*`` free functions of the op library."""
