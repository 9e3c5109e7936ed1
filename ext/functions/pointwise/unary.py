"""One-input math functions: exp, log, the trigonometric and activation functions, rounding."""

from __future__ import annotations

import numpy as np

from ..._state import STATE
from ..._tensor import Tensor, wrap
from .._builtin import BuiltinFunction, namespace_of, record
from .._op import ELEMENTWISE, FLOAT, LINEAR, Overload, declare, dispatch
from ._common import (
    SavesInput,
    SavesResult,
    UnaryFunction,
    not_for,
    quiet,
    recording,
    unary,
)


class Neg(UnaryFunction):
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
    return unary(Neg, x, np.negative)


class Abs(SavesInput):
    """|x|: d/dx = sign(x)."""

    node_name = "AbsBackward0"
    method = "abs"

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.sign()


def abs(x: Tensor) -> Tensor:  # noqa: A001 - torch's name
    """|x|."""
    if type(x) is Tensor:
        not_for(x, "b", "abs")
    return unary(Abs, x, np.abs)


class Sign(UnaryFunction):
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
    """-1, 0 or 1 by the sign of each element (0 for nan, as in torch)."""
    kind = x._data.dtype.kind
    return unary(Sign, x, np.copy if kind == "b" else _sign_float if kind == "f" else np.sign)


def _sign_float(d):
    return np.where(np.isnan(d), np.zeros((), d.dtype), np.sign(d))


class Exp(Overload):
    """e^x: d/dx = e^x, the result."""

    node_name = "ExpBackward0"
    saved_fields = ("result",)
    jvp = ELEMENTWISE  # tangent * result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return grad * result


exp = declare("exp", Exp, kernel=np.exp, dtype=FLOAT, inplace="exp_")


class Log(SavesInput):
    """log x: d/dx = 1/x."""

    node_name = "LogBackward0"
    method = "log"

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / x


def log(x: Tensor) -> Tensor:
    """Natural logarithm."""
    return unary(Log, x, _LOG, to_float=True)


class Sin(SavesInput):
    """sin x: d/dx = cos x."""

    node_name = "SinBackward0"
    method = "sin"

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()


def sin(x: Tensor) -> Tensor:
    """Sine."""
    return unary(Sin, x, np.sin, to_float=True)


class Cos(SavesInput):
    """cos x: d/dx = -sin x."""

    node_name = "CosBackward0"
    method = "cos"

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * -x.sin()


def cos(x: Tensor) -> Tensor:
    """Cosine."""
    return unary(Cos, x, np.cos, to_float=True)


class Tanh(SavesResult):
    """tanh x: d/dx = 1 - tanh² x."""

    node_name = "TanhBackward0"
    method = "tanh"

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return tanh_backward(grad, y)


class TanhBackward(BuiltinFunction):
    """tanh's gradient as one op, f(g, y) = g * (1 - y²) with y = tanh x, as torch's
    tanh_backward: d/dg = f(gg, y), d/dy = -2 * gg * g * y."""

    node_name = "TanhBackwardBackward0"
    saved_fields = ("grad_output", "output")

    @staticmethod
    def forward(grad, y):
        return tanh_backward(grad, y)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, gg):
        grad, y = ctx.saved_tensors
        return (tanh_backward(gg, y) if ctx.needs_input_grad[0] else None,
                -2 * gg * grad * y if ctx.needs_input_grad[1] else None)

    @staticmethod
    def jvp(args, out, tangents):
        grad, y = args
        tg, ty = tangents
        result = None if tg is None else tanh_backward(tg, y)
        if ty is not None:
            term = -2 * grad * y * ty
            result = term if result is None else result + term
        return result


def tanh_backward(grad, y):
    """The gradient of tanh's input for ``grad``, given its result ``y`` (one node when
    either requires grad)."""
    if type(grad) is not Tensor:
        return grad * (1 - y * y)
    yd = y._data
    out = wrap(grad._data * (1 - yd * yd))
    if STATE.grad_enabled and (grad._requires_grad or y._requires_grad) or STATE.special:
        record(TanhBackward, out, (grad, y), (grad, y))
    return out


def tanh(x: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return unary(Tanh, x, np.tanh, to_float=True)


class Sigmoid(SavesResult):
    """σ(x) = 1 / (1 + e^-x): d/dx = σ(x)(1 - σ(x))."""

    node_name = "SigmoidBackward0"
    method = "sigmoid"

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return sigmoid_backward(grad, y)


class SigmoidBackward(BuiltinFunction):
    """sigmoid's gradient as one op, f(g, y) = g * (1 - y) * y with y = σ(x), as torch's
    sigmoid_backward: d/dg = f(gg, y), d/dy = gg * g * (1 - 2y)."""

    node_name = "SigmoidBackwardBackward0"
    saved_fields = ("grad_output", "output")

    @staticmethod
    def forward(grad, y):
        return sigmoid_backward(grad, y)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, gg):
        grad, y = ctx.saved_tensors
        return (sigmoid_backward(gg, y) if ctx.needs_input_grad[0] else None,
                gg * grad * (1 - 2 * y) if ctx.needs_input_grad[1] else None)

    @staticmethod
    def jvp(args, out, tangents):
        grad, y = args
        tg, ty = tangents
        result = None if tg is None else sigmoid_backward(tg, y)
        if ty is not None:
            term = grad * (1 - 2 * y) * ty
            result = term if result is None else result + term
        return result


def sigmoid_backward(grad, y):
    """The gradient of sigmoid's input for ``grad``, given its result ``y`` (one node when
    either requires grad)."""
    if type(grad) is not Tensor:
        return grad * ((1 - y) * y)
    yd = y._data
    out = wrap(grad._data * ((1 - yd) * yd))
    if STATE.grad_enabled and (grad._requires_grad or y._requires_grad) or STATE.special:
        record(SigmoidBackward, out, (grad, y), (grad, y))
    return out


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
    return unary(Sigmoid, x, _sigmoid_kernel, to_float=True)


class Relu(Overload):
    """max(x, 0): the gradient passes where the result is positive."""

    node_name = "ReluBackward0"
    saved_fields = ("result",)
    jvp = ELEMENTWISE  # threshold_backward(tangent, result, 0)

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return namespace_of(grad).ops.aten.threshold_backward(grad, result, 0)


def _relu(x: Tensor) -> Tensor:
    if type(x) is not Tensor:
        raise TypeError(f"relu(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    d = x._data
    if d.dtype == np.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    return dispatch(Relu, np.maximum(d, 0, dtype=d.dtype), (x,))


relu = declare("relu", Relu, function=_relu, inplace="relu_")


class ThresholdBackward(Overload):
    """grad_output where ``self`` > threshold, else 0: relu's gradient, as its own op (torch's
    ``aten::threshold_backward``), so that a backward calls it the same way on both engines. The
    gradient flows to grad_output through the same mask; ``self`` only decides the mask."""

    node_name = "ThresholdBackwardBackward0"
    args = ("grad_output", "self", "threshold")
    tensor_positions = (0, 1)
    saved_fields = ("self",)
    saved_attrs = ("threshold",)
    jvp = LINEAR  # threshold_backward(grad_output's tangent, self, threshold)

    @staticmethod
    def backward(ctx, gg):
        (y,) = ctx.saved_tensors
        ns = namespace_of(gg)
        return ns.ops.aten.threshold_backward(gg, y, ctx.threshold), ns.zeros_like(y), None


def _threshold_backward(grad_output: Tensor, self: Tensor, threshold) -> Tensor:
    # 0 where self <= threshold, else grad_output: a nan in self passes the gradient, and a nan
    # in grad_output where self <= threshold does not leak through (as in torch)
    g = grad_output._data
    d = np.where(self._data <= threshold, np.zeros((), g.dtype), g)
    return dispatch(ThresholdBackward, d.astype(g.dtype, copy=False),
                    (grad_output, self, threshold))


threshold_backward = declare("threshold_backward", ThresholdBackward,
                             function=_threshold_backward, methods=(), functions=())


class Sqrt(SavesResult):
    """√x: d/dx = 1 / (2√x)."""

    node_name = "SqrtBackward0"
    method = "sqrt"

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad / (2 * y)


def sqrt(x: Tensor) -> Tensor:
    """Square root."""
    return unary(Sqrt, x, _SQRT, to_float=True)


class Log1p(SavesInput):
    """log(1 + x): d/dx = 1 / (1 + x)."""

    node_name = "Log1PBackward0"
    method = "log1p"

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / (x + 1)


def log1p(x: Tensor) -> Tensor:
    """log(1 + x), accurate for small x."""
    return unary(Log1p, x, _LOG1P, to_float=True)


class Expm1(SavesResult):
    """e^x - 1: d/dx = e^x = result + 1."""

    node_name = "Expm1Backward0"
    method = "expm1"

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (y + 1)


def expm1(x: Tensor) -> Tensor:
    """e^x - 1, accurate for small x."""
    return unary(Expm1, x, np.expm1, to_float=True)


class Tan(SavesResult):
    """tan x: d/dx = 1 + tan² x."""

    node_name = "TanBackward0"
    method = "tan"

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (y * y + 1)


def tan(x: Tensor) -> Tensor:
    """Tangent."""
    return unary(Tan, x, np.tan, to_float=True)


class Rsqrt(SavesResult):
    """1/√x: d/dx = -1/2 x^(-3/2) = -result³ / 2."""

    node_name = "RsqrtBackward0"
    method = "rsqrt"

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (y * y * y) * -0.5


def rsqrt(x: Tensor) -> Tensor:
    """1 / √x."""
    return unary(Rsqrt, x, _RSQRT, to_float=True)


class _PiecewiseConstant(UnaryFunction):
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


def round(x: Tensor, *, decimals: int | None = None) -> Tensor:  # noqa: A001 - torch's name
    """Round to the nearest integer (half to even), or to ``decimals`` places."""
    if decimals is None:
        not_for(x, "b", "round_vml")
        return unary(Round, x, np.round)
    not_for(x, "biu", "round")
    d = x._data
    out = wrap(np.round(d, decimals))
    if recording(x, None) and d.dtype.kind == "f" or STATE.special:
        record(RoundDecimals, out, (x,), (x, decimals))
    return out


class Floor(_PiecewiseConstant):
    """The largest integer not above x."""

    node_name = "FloorBackward0"
    method = "floor"


def floor(x: Tensor) -> Tensor:
    """Round down."""
    not_for(x, "b", "floor_vml")
    return unary(Floor, x, np.floor)


class Ceil(_PiecewiseConstant):
    """The smallest integer not below x."""

    node_name = "CeilBackward0"
    method = "ceil"


def ceil(x: Tensor) -> Tensor:
    """Round up."""
    not_for(x, "b", "ceil_vml")
    return unary(Ceil, x, np.ceil)


# Kernels that return nan/inf for out-of-domain inputs silently, as torch does.
_LOG = quiet(np.log)
_SQRT = quiet(np.sqrt)
_LOG1P = quiet(np.log1p)
_RSQRT = quiet(lambda d: 1 / np.sqrt(d))
