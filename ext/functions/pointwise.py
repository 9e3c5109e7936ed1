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
            # A zero exponent has zero gradient, even at x = 0 where y * x^(y-1) is 0 * inf.
            gx = where(y == 0, 0.0, grad * (y * x ** (y - 1)))
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
    if not (x == 0).any():
        return term
    return where(logical_and(x == 0, y >= 0), 0.0, term)


def pow(x, exponent) -> Tensor:  # noqa: A001 - torch's name
    """x ** exponent for a tensor or number exponent."""
    if type(x) is not Tensor:
        return rpow(exponent, x)
    if type(exponent) is Tensor:
        xd, ed = _operands(x, exponent, "pow")
        with np.errstate(divide="ignore", invalid="ignore"):
            if xd.dtype.kind in "iu" and (ed < 0).any():
                # Integer powers truncate toward zero: 2 ** -1 is 0, (-1) ** -1 is -1.
                out = wrap(as_array(np.trunc(_apply(np.power, xd.astype(np.float64), ed))
                                    .astype(xd.dtype)))
            else:
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
    return _unary(Sign, x, np.copy if x._data.dtype == np.bool_ else np.sign)


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


class Log1p(_SavesInput):
    """log(1 + x): d/dx = 1 / (1 + x)."""

    node_name = "Log1PBackward0"
    method = "log1p"

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / (x + 1)


def log1p(x: Tensor) -> Tensor:
    """log(1 + x), accurate for small x."""
    return _unary(Log1p, x, _quiet(np.log1p), to_float=True)


class Expm1(_SavesResult):
    """e^x - 1: d/dx = e^x = result + 1."""

    node_name = "Expm1Backward0"
    method = "expm1"

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (y + 1)


def expm1(x: Tensor) -> Tensor:
    """e^x - 1, accurate for small x."""
    return _unary(Expm1, x, np.expm1, to_float=True)


class Tan(_SavesResult):
    """tan x: d/dx = 1 + tan² x."""

    node_name = "TanBackward0"
    method = "tan"

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (y * y + 1)


def tan(x: Tensor) -> Tensor:
    """Tangent."""
    return _unary(Tan, x, np.tan, to_float=True)


class Rsqrt(_SavesResult):
    """1/√x: d/dx = -1/2 x^(-3/2) = -result³ / 2."""

    node_name = "RsqrtBackward0"
    method = "rsqrt"

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (y * y * y) * -0.5


def rsqrt(x: Tensor) -> Tensor:
    """1 / √x."""
    return _unary(Rsqrt, x, _quiet(lambda d: 1 / np.sqrt(d)), to_float=True)


class _PiecewiseConstant(_UnaryFunction):
    """An op whose gradient is zero wherever it is defined (torch uses zero at the jumps)."""

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad):
        return namespace_of(grad).zeros_like(grad)


class Round(_PiecewiseConstant):
    """Round half to even."""

    node_name = "RoundBackward0"
    method = "round"


class RoundDecimals(_PiecewiseConstant):
    """Round to a number of decimals."""

    node_name = "RoundBackward1"
    tensor_positions = (0,)

    @staticmethod
    def forward(x, decimals):
        return x.round(decimals=decimals)

    @staticmethod
    def backward(ctx, grad):
        return namespace_of(grad).zeros_like(grad), None


def _not_for(x: Tensor, kinds: str, name: str) -> None:
    if x._data.dtype.kind in kinds:
        raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                  f"'{_dtype.FROM_NUMPY[x._data.dtype]._short}'")


def round(x: Tensor, *, decimals: int | None = None) -> Tensor:  # noqa: A001 - torch's name
    """Round to the nearest integer (half to even), or to ``decimals`` places."""
    _not_for(x, "b", "round")
    if decimals is None:
        return _unary(Round, x, np.round)
    _not_for(x, "iu", "round")
    d = x._data
    out = wrap(as_array(np.round(d, decimals)))
    if _recording(x, None) and d.dtype.kind == "f":
        record(RoundDecimals, out, (x,), (x, decimals))
    return out


class Floor(_PiecewiseConstant):
    """The largest integer not above x."""

    node_name = "FloorBackward0"
    method = "floor"


def floor(x: Tensor) -> Tensor:
    """Round down."""
    _not_for(x, "b", "floor")
    return _unary(Floor, x, np.floor)


class Ceil(_PiecewiseConstant):
    """The smallest integer not below x."""

    node_name = "CeilBackward0"
    method = "ceil"


def ceil(x: Tensor) -> Tensor:
    """Round up."""
    _not_for(x, "b", "ceil")
    return _unary(Ceil, x, np.ceil)


def _quiet(kernel):
    def run(d):
        with np.errstate(divide="ignore", invalid="ignore"):
            return kernel(d)

    return run


# ---------------------------------------------------------------------------------- clamp
def _inside(x: Tensor, lo, hi) -> Tensor:
    """The bool mask where lo <= x <= hi (a missing bound does not limit)."""
    mask = None
    if lo is not None:
        mask = x >= lo
    if hi is not None:
        upper = x <= hi
        mask = upper if mask is None else logical_and(mask, upper)
    return mask


class ClampScalar(BuiltinFunction):
    """clamp(x, min, max) with number bounds: the gradient passes where min <= x <= max."""

    node_name = "ClampBackward1"
    saved_fields = ("self",)
    saved_attrs = ("min", "max")
    tensor_positions = (0,)

    @staticmethod
    def forward(x, min, max):  # noqa: A002 - torch's names
        return x.clamp(min, max)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.min, ctx.max = inputs[1], inputs[2]

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return where(_inside(x, ctx.min, ctx.max), grad, 0.0), None, None


class ClampTensor(BuiltinFunction):
    """clamp(x, min, max) with tensor bounds: the gradient goes to x inside the bounds and to
    the bound that is active outside them."""

    node_name = "ClampBackward0"
    saved_fields = ("self", "min", "max")

    @staticmethod
    def forward(x, min, max):  # noqa: A002 - torch's names
        return x.clamp(min, max)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad):
        x, lo, hi = ctx.saved_tensors
        gx = glo = ghi = None
        if ctx.needs_input_grad[0]:
            gx = where(_inside(x, lo, hi), grad, 0.0)
        if ctx.needs_input_grad[1]:
            low = x < lo
            if hi is not None:
                low = logical_and(low, lo <= hi)
            glo = where(low, grad, 0.0)
        if ctx.needs_input_grad[2]:
            below = x > hi
            if lo is not None:
                # Where min > max the result is max, whatever x is.
                below = logical_or(below, lo > hi)
            ghi = where(below, grad, 0.0)
        return gx, glo, ghi


class ClampMinScalar(BuiltinFunction):
    """clamp_min(x, min) with a number."""

    node_name = "ClampMinBackward0"
    saved_fields = ("self",)
    saved_attrs = ("min",)
    tensor_positions = (0,)

    @staticmethod
    def forward(x, min):  # noqa: A002
        return x.clamp_min(min)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.min = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return where(x >= ctx.min, grad, 0.0), None


class ClampMaxScalar(BuiltinFunction):
    """clamp_max(x, max) with a number."""

    node_name = "ClampMaxBackward0"
    saved_fields = ("self",)
    saved_attrs = ("max",)
    tensor_positions = (0,)

    @staticmethod
    def forward(x, max):  # noqa: A002
        return x.clamp_max(max)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.max = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return where(x <= ctx.max, grad, 0.0), None


class ClampMinTensor(BuiltinFunction):
    """clamp_min(x, min) with a tensor bound."""

    node_name = "ClampMinBackward1"
    saved_fields = ("self", "min")

    @staticmethod
    def forward(x, min):  # noqa: A002
        return x.clamp_min(min)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad):
        x, lo = ctx.saved_tensors
        return (where(x >= lo, grad, 0.0) if ctx.needs_input_grad[0] else None,
                where(x < lo, grad, 0.0) if ctx.needs_input_grad[1] else None)


class ClampMaxTensor(BuiltinFunction):
    """clamp_max(x, max) with a tensor bound."""

    node_name = "ClampMaxBackward1"
    saved_fields = ("self", "max")

    @staticmethod
    def forward(x, max):  # noqa: A002
        return x.clamp_max(max)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad):
        x, hi = ctx.saved_tensors
        return (where(x <= hi, grad, 0.0) if ctx.needs_input_grad[0] else None,
                where(x > hi, grad, 0.0) if ctx.needs_input_grad[1] else None)


def _clamp_data(d: np.ndarray, lo, hi) -> np.ndarray:
    out = d
    if lo is not None:
        out = np.maximum(out, lo)
    if hi is not None:
        out = np.minimum(out, hi)
    return as_array(out if out is not d else d.copy())


def _bound(value, x: Tensor) -> Tensor | None:
    # A number bound next to a tensor bound acts as a 0-d tensor of x's dtype.
    if value is None or type(value) is Tensor:
        return value
    return wrap(np.asarray(value, x._data.dtype))


def clamp(x: Tensor, min=None, max=None) -> Tensor:  # noqa: A002 - torch's names
    """x limited to [min, max] (either bound may be None; numbers or tensors)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if type(min) is Tensor or type(max) is Tensor:
        if (min is not None and type(min) is not Tensor) or \
                (max is not None and type(max) is not Tensor):
            raise TypeError("clamp() received an invalid combination of arguments - got "
                            "(Tensor, number, Tensor): bounds are both numbers or both tensors")
        lo, hi = _bound(min, x), _bound(max, x)
        d = x._data
        dt = _dtype.FROM_NUMPY[d.dtype]
        for b in (lo, hi):
            if b is not None:
                dt = _dtype.result_type(dt, d.ndim, b.dtype, b._data.ndim)
                d = _apply(np.maximum if b is lo else np.minimum, d, b._data)
        out = wrap(as_array(np.asarray(d, dt._np)))
        if STATE.grad_enabled and out._data.dtype.kind == "f" and any(
                type(t) is Tensor and t._requires_grad for t in (x, lo, hi)):
            record(ClampTensor, out, (x, lo, hi), (x, lo, hi))
        return out
    d = x._data
    if d.dtype.kind != "f" and any(isinstance(b, float) for b in (min, max)):
        d = d.astype(_dtype.get_default_dtype()._np)
    out = wrap(_clamp_data(d, min, max))
    if _recording(x, None) and out._data.dtype.kind == "f":
        record(ClampScalar, out, (x,), (x, min, max))
    return out


def clamp_min(x: Tensor, min) -> Tensor:  # noqa: A002
    """max(x, min) elementwise."""
    if type(min) is Tensor:
        xd, md = binary_operands(x, min)
        out = wrap(_apply(np.maximum, xd, md))
        if _recording(x, min) and out._data.dtype.kind == "f":
            record(ClampMinTensor, out, (x, min), (x, min))
        return out
    xd, _ = binary_operands(x, min)
    out = wrap(_clamp_data(xd, min, None))
    if _recording(x, None) and out._data.dtype.kind == "f":
        record(ClampMinScalar, out, (x,), (x, min))
    return out


def clamp_max(x: Tensor, max) -> Tensor:  # noqa: A002
    """min(x, max) elementwise."""
    if type(max) is Tensor:
        xd, md = binary_operands(x, max)
        out = wrap(_apply(np.minimum, xd, md))
        if _recording(x, max) and out._data.dtype.kind == "f":
            record(ClampMaxTensor, out, (x, max), (x, max))
        return out
    xd, _ = binary_operands(x, max)
    out = wrap(_clamp_data(xd, None, max))
    if _recording(x, None) and out._data.dtype.kind == "f":
        record(ClampMaxScalar, out, (x,), (x, max))
    return out


# ---------------------------------------------------------------------------------- max / min
class Maximum(BuiltinFunction):
    """max(a, b) elementwise: the gradient goes to the larger, split evenly at ties."""

    node_name = "MaximumBackward0"
    saved_fields = ("self", "other")

    @staticmethod
    def forward(a, b):
        return namespace_of(a).maximum(a, b)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return _tie_split(grad, a, b, a > b), _tie_split(grad, a, b, a < b)


class Minimum(Maximum):
    """min(a, b) elementwise: the gradient goes to the smaller, split evenly at ties."""

    node_name = "MinimumBackward0"

    @staticmethod
    def forward(a, b):
        return namespace_of(a).minimum(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return _tie_split(grad, a, b, a < b), _tie_split(grad, a, b, a > b)


def _tie_split(grad: Tensor, a: Tensor, b: Tensor, wins: Tensor) -> Tensor:
    return where(wins, grad, where(a == b, grad / 2, 0.0))


def _extremum(op: type, kernel, a, b) -> Tensor:
    if type(a) is not Tensor or type(b) is not Tensor:
        bad = b if type(a) is Tensor else a
        raise TypeError(f"{op.node_name[:7].lower()}(): argument 'other' (position 2) must be "
                        f"Tensor, not {type(bad).__name__}")
    ad, bd = binary_operands(a, b)
    out = wrap(_apply(kernel, ad, bd))
    if _recording(a, b) and out._data.dtype.kind == "f":
        record(op, out, (a, b), (a, b))
    return out


def maximum(a: Tensor, b: Tensor) -> Tensor:
    """The larger of ``a`` and ``b`` elementwise (NaN propagates)."""
    return _extremum(Maximum, np.maximum, a, b)


def minimum(a: Tensor, b: Tensor) -> Tensor:
    """The smaller of ``a`` and ``b`` elementwise (NaN propagates)."""
    return _extremum(Minimum, np.minimum, a, b)


class NanToNum(BuiltinFunction):
    """nan, +inf and -inf replaced by numbers: the gradient passes only where x was finite."""

    node_name = "NanToNumBackward0"
    saved_fields = ("self",)
    tensor_positions = (0,)

    @staticmethod
    def forward(x, nan=0.0, posinf=None, neginf=None):
        return x.nan_to_num(nan, posinf, neginf)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return where(isfinite(x), grad, 0.0), None, None, None


def nan_to_num(x: Tensor, nan: float = 0.0, posinf=None, neginf=None) -> Tensor:
    """x with nan, +inf, -inf replaced (by 0 and the dtype's largest and smallest values)."""
    d = x._data
    out = wrap(as_array(np.nan_to_num(d, nan=nan, posinf=posinf, neginf=neginf)))
    if _recording(x, None) and d.dtype.kind == "f":
        record(NanToNum, out, (x,), (x, nan, posinf, neginf))
    return out


def isnan(x: Tensor) -> Tensor:
    """Where x is nan (a bool tensor)."""
    return wrap(as_array(np.isnan(x._data)))


def isinf(x: Tensor) -> Tensor:
    """Where x is +inf or -inf (a bool tensor)."""
    return wrap(as_array(np.isinf(x._data)))


def isfinite(x: Tensor) -> Tensor:
    """Where x is neither nan nor infinite (a bool tensor)."""
    return wrap(as_array(np.isfinite(x._data)))


def equal(a: Tensor, b: Tensor) -> bool:
    """True if both have the same shape and the same values (nan is never equal)."""
    return a._data.shape == b._data.shape and bool(np.array_equal(a._data, b._data))


def allclose(a: Tensor, b: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """True if |a - b| <= atol + rtol * |b| everywhere (broadcasting)."""
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"{_dtype.FROM_NUMPY[a._data.dtype]._short} did not match "
                           f"{_dtype.FROM_NUMPY[b._data.dtype]._short}")
    return bool(np.all(_apply(lambda u, v: np.isclose(u, v, rtol=rtol, atol=atol,
                                                      equal_nan=equal_nan), a._data, b._data)))


def isclose(a: Tensor, b: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """Where |a - b| <= atol + rtol * |b| (a bool tensor)."""
    ad, bd = binary_operands(a, b)
    return wrap(as_array(np.isclose(ad, bd, rtol=rtol, atol=atol, equal_nan=equal_nan)))


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


def _where_operands(a, b):
    """where's value operands with torch's promotion (two numbers give the default dtype)."""
    if type(a) is Tensor:
        return binary_operands(a, b)
    if type(b) is Tensor:
        bd, ad = binary_operands(b, a)
        return ad, bd
    dt = _dtype.result_type(_dtype.scalar_dtype(a), 0, _dtype.scalar_dtype(b), 0)
    return np.asarray(a, dt._np), np.asarray(b, dt._np)


def where(condition: Tensor, a, b) -> Tensor:
    """Elements of ``a`` where ``condition`` holds, else of ``b``."""
    cd = condition._data
    if cd.dtype != np.bool_:
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {_dtype.FROM_NUMPY[cd.dtype]._short}")
    ad, bd = _where_operands(a, b)
    if type(ad) is not np.ndarray:
        ad = np.asarray(ad, bd.dtype)
    if type(bd) is not np.ndarray:
        bd = np.asarray(bd, ad.dtype)
    try:
        values = np.broadcast_shapes(ad.shape, bd.shape)
    except ValueError:
        raise _broadcast_error(ad, bd) from None
    try:
        np.broadcast_shapes(cd.shape, values)
    except ValueError:
        raise _broadcast_error(cd, np.empty(values)) from None
    out = wrap(as_array(np.where(cd, ad, bd)))
    if STATE.grad_enabled and out._data.dtype.kind == "f" and (
            (type(a) is Tensor and a._requires_grad) or (type(b) is Tensor and b._requires_grad)):
        record(Where, out, (_edge(a), _edge(b)), (condition, a, b))
    return out


def _where_method(self: Tensor, condition: Tensor, other) -> Tensor:
    """``where(condition, self, other)``."""
    return where(condition, self, other)


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


def _logical(kernel, name: str):
    def logical(a, b) -> Tensor:
        if type(b) is not Tensor:
            b = wrap(np.asarray(b))
        return wrap(_apply(kernel, a._data, b._data))

    logical.__name__ = name
    logical.__doc__ = f"Elementwise ``{name}`` of the truth values, a bool tensor."
    return logical


logical_and = _logical(np.logical_and, "logical_and")
logical_or = _logical(np.logical_or, "logical_or")
logical_xor = _logical(np.logical_xor, "logical_xor")


def logical_not(x: Tensor) -> Tensor:
    """Elementwise ``not`` of the truth values, a bool tensor."""
    return wrap(as_array(np.logical_not(x._data)))


def _bitwise(kernel, name: str, symbol: str):
    def bitwise(a, b) -> Tensor:
        if type(a) is not Tensor:
            return NotImplemented
        if type(b) is not Tensor:
            if not isinstance(b, (bool, int)):
                return NotImplemented
            b = wrap(np.asarray(b))
        ad, bd = binary_operands(a, b)
        if ad.dtype.kind == "f":
            raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                      f"'{_dtype.FROM_NUMPY[ad.dtype]._short}'")
        return wrap(_apply(kernel, ad, bd))

    bitwise.__name__ = name
    bitwise.__doc__ = f"Elementwise ``{symbol}`` of bool or integer tensors."
    return bitwise


bitwise_and = _bitwise(np.bitwise_and, "bitwise_and", "&")
bitwise_or = _bitwise(np.bitwise_or, "bitwise_or", "|")
bitwise_xor = _bitwise(np.bitwise_xor, "bitwise_xor", "^")


def bitwise_not(x: Tensor) -> Tensor:
    """Elementwise ``~``: logical not of bools, bitwise not of integers."""
    d = x._data
    if d.dtype.kind == "f":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return wrap(as_array(np.invert(d)))


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
    "log1p": log1p, "expm1": expm1, "tan": tan, "rsqrt": rsqrt, "round": round,
    "floor": floor, "ceil": ceil, "clamp": clamp, "clip": clamp, "clamp_min": clamp_min,
    "clamp_max": clamp_max, "maximum": maximum, "minimum": minimum,
    "logical_and": logical_and, "logical_or": logical_or, "logical_xor": logical_xor,
    "logical_not": logical_not, "bitwise_and": bitwise_and, "bitwise_or": bitwise_or,
    "bitwise_xor": bitwise_xor, "bitwise_not": bitwise_not,
    "__and__": bitwise_and, "__or__": bitwise_or, "__xor__": bitwise_xor,
    "__rand__": bitwise_and, "__ror__": bitwise_or, "__rxor__": bitwise_xor,
    "__invert__": bitwise_not,
    "nan_to_num": nan_to_num, "isnan": isnan, "isinf": isinf, "isfinite": isfinite,
    "equal": equal, "allclose": allclose, "isclose": isclose, "where": _where_method,
}
FUNCTIONS = {
    "add": add, "sub": sub, "mul": mul, "div": div, "pow": pow, "neg": neg, "abs": abs,
    "exp": exp, "log": log, "sin": sin, "cos": cos, "tanh": tanh, "sigmoid": sigmoid,
    "relu": relu, "sqrt": sqrt, "sign": sign, "reciprocal": reciprocal, "where": where,
    "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "multiply": mul,
    "divide": div, "subtract": sub, "negative": neg, "true_divide": div, "rsub": rsub,
    "log1p": log1p, "expm1": expm1, "tan": tan, "rsqrt": rsqrt, "round": round,
    "floor": floor, "ceil": ceil, "clamp": clamp, "clip": clamp, "clamp_min": clamp_min,
    "clamp_max": clamp_max, "maximum": maximum, "minimum": minimum,
    "logical_and": logical_and, "logical_or": logical_or, "logical_xor": logical_xor,
    "logical_not": logical_not, "bitwise_and": bitwise_and, "bitwise_or": bitwise_or,
    "bitwise_xor": bitwise_xor, "bitwise_not": bitwise_not,
    "nan_to_num": nan_to_num, "isnan": isnan, "isinf": isinf, "isfinite": isfinite,
    "equal": equal, "allclose": allclose, "isclose": isclose,
}
