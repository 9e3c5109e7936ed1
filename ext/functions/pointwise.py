"""Elementwise ops: arithmetic with tensors and numbers, and the unary math functions.

Each class is one op overload with torch's node name; the function below it is the fast path the
Tensor methods call.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype
from .._state import STATE
from .._tensor import Tensor, wrap
from ._builtin import (
    BuiltinFunction,
    as_array,
    binary_operands,
    namespace_of,
    record,
)

__all__ = ["add", "sub", "rsub", "mul", "div", "rdiv", "pow", "rpow", "neg", "abs", "exp", "log",
           "sin", "cos", "tanh", "sigmoid", "relu", "sqrt", "sign", "reciprocal", "where", "eq",
           "ne", "lt", "le", "gt", "ge"]


def _operands(a, b, name: str):
    if type(a) is not Tensor:
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(a).__name__}")
    ops = binary_operands(a, b)
    if ops is None:
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(b).__name__}")
    return ops


def _recording(a: Tensor, b) -> bool:
    return STATE.grad_enabled and (a._requires_grad or (type(b) is Tensor and b._requires_grad))


def _edge(b):
    return b if type(b) is Tensor else None


def _broadcast_error(a: np.ndarray, b) -> RuntimeError:
    bs = np.shape(b)
    for i in range(1, max(a.ndim, len(bs)) + 1):
        sa = a.shape[-i] if i <= a.ndim else 1
        sb = bs[-i] if i <= len(bs) else 1
        if sa != sb and sa != 1 and sb != 1:
            dim = max(a.ndim, len(bs)) - i
            return RuntimeError(f"The size of tensor a ({sa}) must match the size of tensor b "
                                f"({sb}) at non-singleton dimension {dim}")
    return RuntimeError("operands could not be broadcast together")


def _apply(kernel, ad, bd) -> np.ndarray:
    try:
        return as_array(kernel(ad, bd))
    except ValueError:
        raise _broadcast_error(ad, bd) from None


# ---------------------------------------------------------------------------------- add / sub
class Add(BuiltinFunction):
    """a + alpha * b: the gradient passes through (scaled by alpha for b)."""

    node_name = "AddBackward0"
    saved_attrs = ("alpha",)
    tensor_positions = (0, 1)

    @staticmethod
    def forward(a, b, alpha=1):
        return a.add(b, alpha=alpha)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.alpha = inputs[2]

    @staticmethod
    def backward(ctx, grad):
        gb = None
        if ctx.needs_input_grad[1]:
            gb = grad if ctx.alpha == 1 else grad * ctx.alpha
        return grad if ctx.needs_input_grad[0] else None, gb, None


def add(a, b, *, alpha=1) -> Tensor:
    """a + alpha * b, with broadcasting and type promotion."""
    ad, bd = _operands(a, b, "add")
    out = wrap(_apply(np.add, ad, bd if alpha == 1 else bd * alpha))
    if _recording(a, b):
        record(Add, out, (a, _edge(b)), (a, b, alpha))
    return out


class Sub(BuiltinFunction):
    """a - alpha * b."""

    node_name = "SubBackward0"
    saved_attrs = ("alpha",)
    tensor_positions = (0, 1)

    @staticmethod
    def forward(a, b, alpha=1):
        return a.sub(b, alpha=alpha)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.alpha = inputs[2]

    @staticmethod
    def backward(ctx, grad):
        gb = None
        if ctx.needs_input_grad[1]:
            gb = -grad if ctx.alpha == 1 else grad * -ctx.alpha
        return grad if ctx.needs_input_grad[0] else None, gb, None


def sub(a, b, *, alpha=1) -> Tensor:
    """a - alpha * b."""
    if type(a) is Tensor and a._data.dtype == np.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    ad, bd = _operands(a, b, "sub")
    out = wrap(_apply(np.subtract, ad, bd if alpha == 1 else bd * alpha))
    if _recording(a, b):
        record(Sub, out, (a, _edge(b)), (a, b, alpha))
    return out


class Rsub(BuiltinFunction):
    """number - alpha * x (``2 - x``): the number is not an input of the node."""

    node_name = "RsubBackward1"
    saved_attrs = ("alpha",)
    tensor_positions = (0,)

    @staticmethod
    def forward(x, other, alpha=1):
        return other - alpha * x

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.alpha = inputs[2]

    @staticmethod
    def backward(ctx, grad):
        return (-grad if ctx.alpha == 1 else grad * -ctx.alpha), None, None


def rsub(x: Tensor, other, alpha=1) -> Tensor:
    """other - alpha * x."""
    if type(other) is Tensor:
        return sub(other, x, alpha=alpha)
    xd, od = _operands(x, other, "rsub")
    out = wrap(as_array(od - (xd if alpha == 1 else xd * alpha)))
    if _recording(x, None):
        record(Rsub, out, (x,), (x, other, alpha))
    return out


# ---------------------------------------------------------------------------------- mul / div
class Mul(BuiltinFunction):
    """a * b: each gradient is the other operand times grad."""

    node_name = "MulBackward0"
    saved_fields = ("self", "other")
    tensor_positions = (0, 1)

    @staticmethod
    def forward(a, b):
        return a * b

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, b = inputs
        # Each operand is needed only for the other's gradient.
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None,
                              b if ctx.needs_input_grad[0] else None)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return (grad * b if ctx.needs_input_grad[0] else None,
                grad * a if ctx.needs_input_grad[1] else None)


def mul(a, b) -> Tensor:
    """a * b, with broadcasting and type promotion."""
    ad, bd = _operands(a, b, "mul")
    out = wrap(_apply(np.multiply, ad, bd))
    if _recording(a, b):
        record(Mul, out, (a, _edge(b)), (a, b))
    return out


class Div(BuiltinFunction):
    """a / b: d/da = 1/b, d/db = -a/b²."""

    node_name = "DivBackward0"
    saved_fields = ("self", "other")
    tensor_positions = (0, 1)

    @staticmethod
    def forward(a, b):
        return a / b

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, b = inputs
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return (grad / b if ctx.needs_input_grad[0] else None,
                -grad * a / (b * b) if ctx.needs_input_grad[1] else None)


def div(a, b) -> Tensor:
    """True division a / b; integers divide into the default float dtype."""
    ad, bd = _operands(a, b, "div")
    if ad.dtype.kind != "f":
        ad = ad.astype(_dtype.get_default_dtype()._np)
        if type(bd) is np.ndarray:
            bd = bd.astype(ad.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = wrap(_apply(np.true_divide, ad, bd))
    if _recording(a, b):
        record(Div, out, (a, _edge(b)), (a, b))
    return out


class Reciprocal(BuiltinFunction):
    """1 / x: d/dx = -1/x² = -result²."""

    node_name = "ReciprocalBackward0"
    saved_fields = ("result",)

    @staticmethod
    def forward(x):
        return x.reciprocal()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return -grad * y * y


def reciprocal(x: Tensor) -> Tensor:
    """1 / x."""
    return _unary(Reciprocal, x, _reciprocal_kernel, to_float=True)


def _reciprocal_kernel(d):
    with np.errstate(divide="ignore"):
        return np.reciprocal(d)


def rdiv(x: Tensor, other) -> Tensor:
    """other / x; for a number, torch computes reciprocal(x) * other."""
    if type(other) is Tensor:
        return div(other, x)
    return mul(reciprocal(x), other)


# ---------------------------------------------------------------------------------- pow
class PowTensorScalar(BuiltinFunction):
    """x ** e for a number e: d/dx = e * x^(e-1)."""

    node_name = "PowBackward0"
    saved_fields = ("self",)
    saved_attrs = ("exponent",)
    tensor_positions = (0,)

    @staticmethod
    def forward(x, exponent):
        return x**exponent

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.exponent = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        e = ctx.exponent
        if e == 0:
            return grad * 0, None
        return grad * (e * x ** (e - 1)), None


class PowTensorTensor(BuiltinFunction):
    """x ** y: d/dx = y * x^(y-1), d/dy = x^y * log(x) (0 where x = 0 and y >= 0)."""

    node_name = "PowBackward1"
    saved_fields = ("self", "exponent", "result")

    @staticmethod
    def forward(x, y):
        return x**y

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], inputs[1], output)

    @staticmethod
    def backward(ctx, grad):
        x, y, result = ctx.saved_tensors
        gx = gy = None
        if ctx.needs_input_grad[0]:
            gx = grad * (y * x ** (y - 1))
        if ctx.needs_input_grad[1]:
            gy = _masked_log_term(grad * result, x, y)
        return gx, gy


class PowScalarTensor(BuiltinFunction):
    """c ** y for a number c: d/dy = c^y * log(c)."""

    node_name = "PowBackward2"
    saved_fields = ("exponent", "result")
    saved_attrs = ("self",)
    tensor_positions = (1,)

    @staticmethod
    def forward(base, y):
        return base**y

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.self = inputs[0]
        ctx.save_for_backward(inputs[1], output)

    @staticmethod
    def backward(ctx, grad):
        y, result = ctx.saved_tensors
        base = ctx.self
        if base == 0:
            return None, where(y >= 0, grad * 0, grad * result * -math.inf)
        return None, grad * result * math.log(base)


def _masked_log_term(scaled: Tensor, x: Tensor, y: Tensor) -> Tensor:
    # x^y * log(x) is 0, not nan, where x = 0 and y >= 0 (the limit torch uses).
    term = scaled * x.log()
    mask = (x == 0) * (y >= 0) if (x._data == 0).any() else None
    return term if mask is None else where(mask, term * 0, term)


def pow(x, exponent) -> Tensor:  # noqa: A001 - torch's name
    """x ** exponent for a tensor or number exponent."""
    if type(x) is not Tensor:
        return rpow(exponent, x)
    if type(exponent) is Tensor:
        xd, ed = _operands(x, exponent, "pow")
        with np.errstate(divide="ignore", invalid="ignore"):
            out = wrap(_apply(np.power, xd, ed))
        if _recording(x, exponent):
            record(PowTensorTensor, out, (x, exponent), (x, exponent))
        return out
    xd, e = _operands(x, exponent, "pow")
    if xd.dtype.kind in "iu" and isinstance(e, int) and e < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    with np.errstate(divide="ignore", invalid="ignore"):
        out = wrap(as_array(np.power(xd, e)))
    if _recording(x, None):
        record(PowTensorScalar, out, (x,), (x, exponent))
    return out


def rpow(x: Tensor, base) -> Tensor:
    """base ** x for a number base."""
    if type(base) is Tensor:
        return pow(base, x)
    xd, b = _operands(x, base, "pow")
    with np.errstate(divide="ignore", invalid="ignore"):
        out = wrap(as_array(np.power(b, xd)))
    if _recording(x, None):
        record(PowScalarTensor, out, (x,), (base, x))
    return out


# ---------------------------------------------------------------------------------- unary
def _unary(op: type, x, kernel, to_float: bool = False) -> Tensor:
    if type(x) is not Tensor:
        name = op.node_name[: op.node_name.rfind("Backward")].lower()
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    d = x._data
    if to_float and d.dtype.kind != "f":
        d = d.astype(_dtype.get_default_dtype()._np)
    out = wrap(as_array(kernel(d)))
    if x._requires_grad and STATE.grad_enabled:
        record(op, out, (x,), (x,))
    return out


class _UnaryFunction(BuiltinFunction):
    """A one-input op whose forward is the tensor method of the same name."""

    method = ""

    @classmethod
    def forward(cls, x):
        return getattr(x, cls.method)()


class _SavesInput(_UnaryFunction):
    saved_fields = ("self",)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])


class _SavesResult(_UnaryFunction):
    saved_fields = ("result",)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)


class Neg(_UnaryFunction):
    """-x."""

    node_name = "NegBackward0"
    method = "neg"

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad):
        return -grad


def neg(x: Tensor) -> Tensor:
    """-x."""
    if type(x) is Tensor and x._data.dtype == np.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return _unary(Neg, x, np.negative)


class Abs(_SavesInput):
    """|x|: d/dx = sign(x)."""

    node_name = "AbsBackward0"
    method = "abs"

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.sign()


def abs(x: Tensor) -> Tensor:  # noqa: A001 - torch's name
    """|x|."""
    return _unary(Abs, x, np.abs)


class Sign(_UnaryFunction):
    """sign(x): piecewise constant, so its gradient is zero."""

    node_name = "SignBackward0"
    method = "sign"

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad):
        return namespace_of(grad).zeros_like(grad)


def sign(x: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element."""
    return _unary(Sign, x, np.sign)


class Exp(_SavesResult):
    """e^x: d/dx = e^x, the result."""

    node_name = "ExpBackward0"
    method = "exp"

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y


def exp(x: Tensor) -> Tensor:
    """e^x."""
    return _unary(Exp, x, np.exp, to_float=True)


class Log(_SavesInput):
    """log x: d/dx = 1/x."""

    node_name = "LogBackward0"
    method = "log"

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / x


def _log_kernel(d):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(d)


def log(x: Tensor) -> Tensor:
    """Natural logarithm."""
    return _unary(Log, x, _log_kernel, to_float=True)


class Sin(_SavesInput):
    """sin x: d/dx = cos x."""

    node_name = "SinBackward0"
    method = "sin"

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()


def sin(x: Tensor) -> Tensor:
    """Sine."""
    return _unary(Sin, x, np.sin, to_float=True)


class Cos(_SavesInput):
    """cos x: d/dx = -sin x."""

    node_name = "CosBackward0"
    method = "cos"

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * -x.sin()


def cos(x: Tensor) -> Tensor:
    """Cosine."""
    return _unary(Cos, x, np.cos, to_float=True)


class Tanh(_SavesResult):
    """tanh x: d/dx = 1 - tanh² x."""

    node_name = "TanhBackward0"
    method = "tanh"

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (1 - y * y)


def tanh(x: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return _unary(Tanh, x, np.tanh, to_float=True)


class Sigmoid(_SavesResult):
    """σ(x) = 1 / (1 + e^-x): d/dx = σ(x)(1 - σ(x))."""

    node_name = "SigmoidBackward0"
    method = "sigmoid"

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * ((1 - y) * y)


def _sigmoid_kernel(d):
    # Split by sign so that exp never overflows.
    out = np.empty_like(d)
    pos = d >= 0
    e = np.exp(-np.abs(d))
    np.divide(1, 1 + e, out=out, where=pos)
    np.divide(e, 1 + e, out=out, where=~pos)
    return out


def sigmoid(x: Tensor) -> Tensor:
    """The logistic function."""
    return _unary(Sigmoid, x, _sigmoid_kernel, to_float=True)


class Relu(_SavesResult):
    """max(x, 0): the gradient passes where the result is positive."""

    node_name = "ReluBackward0"
    method = "relu"

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (y > 0)


def relu(x: Tensor) -> Tensor:
    """max(x, 0)."""
    return _unary(Relu, x, _relu_kernel)


def _relu_kernel(d):
    return np.maximum(d, 0, dtype=d.dtype) if d.dtype != np.bool_ else d.copy()


class Sqrt(_SavesResult):
    """√x: d/dx = 1 / (2√x)."""

    node_name = "SqrtBackward0"
    method = "sqrt"

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad / (2 * y)


def _sqrt_kernel(d):
    with np.errstate(invalid="ignore"):
        return np.sqrt(d)


def sqrt(x: Tensor) -> Tensor:
    """Square root."""
    return _unary(Sqrt, x, _sqrt_kernel, to_float=True)


# ---------------------------------------------------------------------------------- where
class Where(BuiltinFunction):
    """where(cond, a, b): the gradient goes to a where cond holds and to b elsewhere."""

    node_name = "WhereBackward0"
    saved_fields = ("condition",)
    tensor_positions = (1, 2)

    @staticmethod
    def forward(condition, a, b):
        return namespace_of(a).where(condition, a, b)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (cond,) = ctx.saved_tensors
        zero = grad * 0
        return (None,
                where(cond, grad, zero) if ctx.needs_input_grad[1] else None,
                where(cond, zero, grad) if ctx.needs_input_grad[2] else None)


def where(condition: Tensor, a, b) -> Tensor:
    """Elements of ``a`` where ``condition`` holds, else of ``b``."""
    if type(a) is not Tensor:
        a = wrap(np.asarray(a, dtype=b._data.dtype if type(b) is Tensor else None))
    ad, bd = binary_operands(a, b)
    out = wrap(as_array(np.where(condition._data, ad, bd)))
    if _recording(a, b) and out._data.dtype.kind == "f":
        record(Where, out, (a, _edge(b)), (condition, a, b))
    return out


# ---------------------------------------------------------------------------------- comparisons
def _compare(kernel, name: str):
    def compare(a, b) -> Tensor:
        ops = binary_operands(a, b) if type(a) is Tensor else None
        if ops is None:
            return NotImplemented
        return wrap(_apply(kernel, *ops))

    compare.__name__ = name
    compare.__doc__ = f"Elementwise ``{name}`` comparison, a bool tensor (not differentiable)."
    return compare


eq = _compare(np.equal, "eq")
ne = _compare(np.not_equal, "ne")
lt = _compare(np.less, "lt")
le = _compare(np.less_equal, "le")
gt = _compare(np.greater, "gt")
ge = _compare(np.greater_equal, "ge")


def _operator(fn):
    # Operators return NotImplemented for operands they do not know, so that Python tries the
    # reflected operator or raises its own TypeError.
    def op(self, other):
        if type(other) in _OPERANDS or isinstance(other, (Tensor, int, float, np.generic)):
            return fn(self, other)
        return NotImplemented

    op.__name__ = fn.__name__
    op.__doc__ = fn.__doc__
    return op


def _reflected(fn):
    def op(self, other):
        if type(other) in _OPERANDS or isinstance(other, (int, float, np.generic)):
            return fn(self, other)
        return NotImplemented

    op.__name__ = fn.__name__
    op.__doc__ = fn.__doc__
    return op


_OPERANDS = frozenset({Tensor, float, int, bool})

METHODS = {
    "add": add, "sub": sub, "mul": mul, "div": div, "pow": pow, "neg": neg,
    "multiply": mul, "divide": div, "true_divide": div, "subtract": sub, "negative": neg,
    "__add__": _operator(add), "__radd__": _reflected(add),
    "__sub__": _operator(sub), "__rsub__": _reflected(rsub),
    "__mul__": _operator(mul), "__rmul__": _reflected(mul),
    "__truediv__": _operator(div), "__rtruediv__": _reflected(rdiv),
    "__pow__": _operator(pow), "__rpow__": _reflected(rpow),
    "__neg__": neg, "__abs__": abs,
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge,
    "__eq__": eq, "__ne__": ne, "__lt__": lt, "__le__": le, "__gt__": gt, "__ge__": ge,
    "abs": abs, "exp": exp, "log": log, "sin": sin, "cos": cos, "tanh": tanh,
    "sigmoid": sigmoid, "relu": relu, "sqrt": sqrt, "sign": sign, "reciprocal": reciprocal,
}
FUNCTIONS = {
    "add": add, "sub": sub, "mul": mul, "div": div, "pow": pow, "neg": neg, "abs": abs,
    "exp": exp, "log": log, "sin": sin, "cos": cos, "tanh": tanh, "sigmoid": sigmoid,
    "relu": relu, "sqrt": sqrt, "sign": sign, "reciprocal": reciprocal, "where": where,
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "multiply": mul,
    "divide": div, "subtract": sub, "negative": neg, "true_divide": div, "rsub": rsub,
}
