"""One-input math functions: exp, log, the trigonometric and activation functions, rounding."""

from __future__ import annotations

import numpy as np

from .... import _dtype
from ...._args import not_a_tensor
from ...._tensor import Tensor
from ..._op import ELEMENTWISE, FLOAT, LINEAR, Overload, declare, dispatch, in_float32, is_half
from .._builtin import namespace_of
from ._common import quiet


def _not_a_tensor(name: str, x) -> TypeError:
    return not_a_tensor(x, name)


def _no_kernel(kernel: str, d: np.ndarray) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}_cpu" not implemented for '
                               f"'{_dtype.FROM_NUMPY[d.dtype]._short}'")


# (each op's checks are written out: a shared checking function costs a tenth of a small op's
# dispatch, benchmarks/ops.py)
class Neg(Overload):
    """-x."""

    node_name = "NegBackward0"
    jvp = ELEMENTWISE  # -tangent

    @staticmethod
    def backward(ctx, grad):
        return -grad


def _neg(x: Tensor) -> Tensor:
    """-x."""
    if type(x) is not Tensor:
        raise _not_a_tensor("neg", x)
    d = x._data
    if d.dtype.kind == "b":
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return dispatch(Neg, np.negative(d), (x,))


neg = declare("neg", Neg, function=_neg, methods=("neg", "negative", "__neg__"),
              functions=("neg", "negative"), inplace="neg_")


class Abs(Overload):
    """|x|: d/dx = sign(x)."""

    node_name = "AbsBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE  # tangent * sign(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.sign()


def _abs(x: Tensor) -> Tensor:
    """|x|."""
    if type(x) is not Tensor:
        raise _not_a_tensor("abs", x)
    d = x._data
    if d.dtype.kind == "b":
        raise _no_kernel("abs", d)
    return dispatch(Abs, np.abs(d), (x,))


abs = declare("abs", Abs, function=_abs, methods=("abs", "__abs__"),  # noqa: A001 - torch's
              inplace="abs_")


class _PiecewiseConstant(Overload):
    """An op whose gradient is zero wherever it is defined (torch uses zero at the jumps)."""

    jvp = ELEMENTWISE  # zeros like the tangent

    @staticmethod
    def backward(ctx, grad):
        return namespace_of(grad).zeros_like(grad)


class Sign(_PiecewiseConstant):
    """sign(x): piecewise constant, so its gradient is zero."""

    node_name = "SignBackward0"


def _sign(x: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element (0 for nan, as in torch)."""
    if type(x) is not Tensor:
        raise _not_a_tensor("sign", x)
    d = x._data
    kind = d.dtype.kind
    if kind == "f":
        out = np.where(np.isnan(d), np.zeros((), d.dtype), np.sign(d))
    else:
        out = d.copy() if kind == "b" else np.sign(d)
    return dispatch(Sign, out, (x,))


sign = declare("sign", Sign, function=_sign, inplace="sign_")


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


class Log(Overload):
    """log x: d/dx = 1/x."""

    node_name = "LogBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE  # tangent / x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / x


# (out of the domain, the kernels give nan or inf silently, as torch does)
log = declare("log", Log, kernel=quiet(np.log), dtype=FLOAT, inplace="log_")


class Sin(Overload):
    """sin x: d/dx = cos x."""

    node_name = "SinBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE  # tangent * cos x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()


sin = declare("sin", Sin, kernel=np.sin, dtype=FLOAT, inplace="sin_")


class Cos(Overload):
    """cos x: d/dx = -sin x."""

    node_name = "CosBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE  # tangent * -sin x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * -x.sin()


cos = declare("cos", Cos, kernel=np.cos, dtype=FLOAT, inplace="cos_")


class Tan(Overload):
    """tan x: d/dx = 1 + tan² x."""

    node_name = "TanBackward0"
    saved_fields = ("result",)
    jvp = ELEMENTWISE  # tangent * (1 + result²)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (y * y + 1)


tan = declare("tan", Tan, kernel=np.tan, dtype=FLOAT, inplace="tan_")


class Tanh(Overload):
    """tanh x: d/dx = 1 - tanh² x, torch's tanh_backward of the result."""

    node_name = "TanhBackward0"
    saved_fields = ("result",)
    jvp = ELEMENTWISE  # tanh_backward(tangent, result)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return namespace_of(grad).ops.aten.tanh_backward(grad, y)


tanh = declare("tanh", Tanh, kernel=np.tanh, dtype=FLOAT, inplace="tanh_")


class TanhBackward(Overload):
    """tanh's gradient as one op, f(g, y) = g * (1 - y²) with y = tanh x (torch's
    ``aten::tanh_backward``): d/dg = f(gg, y), d/dy = -2 * gg * g * y."""

    node_name = "TanhBackwardBackward0"
    args = ("grad_output", "output")
    saved_fields = ("grad_output", "output")
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, gg):
        grad, y = ctx.saved_tensors
        return (namespace_of(gg).ops.aten.tanh_backward(gg, y) if ctx.needs_input_grad[0]
                else None,
                -2 * gg * grad * y if ctx.needs_input_grad[1] else None)


def _tanh_backward(grad_output: Tensor, output: Tensor) -> Tensor:
    y = output._data
    if is_half(y):
        return in_float32(TanhBackward, _tanh_backward, (grad_output, output))
    return dispatch(TanhBackward, grad_output._data * (1 - y * y), (grad_output, output))


tanh_backward = declare("tanh_backward", TanhBackward, function=_tanh_backward, methods=(),
                        functions=())


class Sigmoid(Overload):
    """σ(x) = 1 / (1 + e^-x): d/dx = σ(x)(1 - σ(x)), torch's sigmoid_backward of the result."""

    node_name = "SigmoidBackward0"
    saved_fields = ("result",)
    jvp = ELEMENTWISE  # sigmoid_backward(tangent, result)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return namespace_of(grad).ops.aten.sigmoid_backward(grad, y)


def _sigmoid_kernel(d):
    # Split by sign so that exp never overflows.
    out = np.empty_like(d)
    pos = d >= 0
    e = np.exp(-np.abs(d))
    np.divide(1, 1 + e, out=out, where=pos)
    np.divide(e, 1 + e, out=out, where=~pos)
    return out


sigmoid = declare("sigmoid", Sigmoid, kernel=_sigmoid_kernel, dtype=FLOAT, inplace="sigmoid_")


class SigmoidBackward(Overload):
    """sigmoid's gradient as one op, f(g, y) = g * (1 - y) * y with y = σ(x) (torch's
    ``aten::sigmoid_backward``): d/dg = f(gg, y), d/dy = gg * g * (1 - 2y)."""

    node_name = "SigmoidBackwardBackward0"
    args = ("grad_output", "output")
    saved_fields = ("grad_output", "output")
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, gg):
        grad, y = ctx.saved_tensors
        return (namespace_of(gg).ops.aten.sigmoid_backward(gg, y) if ctx.needs_input_grad[0]
                else None,
                gg * grad * (1 - 2 * y) if ctx.needs_input_grad[1] else None)


def _sigmoid_backward(grad_output: Tensor, output: Tensor) -> Tensor:
    y = output._data
    if is_half(y):
        return in_float32(SigmoidBackward, _sigmoid_backward, (grad_output, output))
    return dispatch(SigmoidBackward, grad_output._data * ((1 - y) * y), (grad_output, output))


sigmoid_backward = declare("sigmoid_backward", SigmoidBackward, function=_sigmoid_backward,
                           methods=(), functions=())


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
        raise not_a_tensor(x, "relu")
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


class Sqrt(Overload):
    """√x: d/dx = 1 / (2√x)."""

    node_name = "SqrtBackward0"
    saved_fields = ("result",)
    jvp = ELEMENTWISE  # tangent / (2 result)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad / (2 * y)


sqrt = declare("sqrt", Sqrt, kernel=quiet(np.sqrt), dtype=FLOAT, inplace="sqrt_")


class Rsqrt(Overload):
    """1/√x: d/dx = -1/2 x^(-3/2) = -result³ / 2."""

    node_name = "RsqrtBackward0"
    saved_fields = ("result",)
    jvp = ELEMENTWISE  # tangent * result³ * -1/2

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (y * y * y) * -0.5


rsqrt = declare("rsqrt", Rsqrt, kernel=quiet(lambda d: 1 / np.sqrt(d)), dtype=FLOAT,
                inplace="rsqrt_")


class Log1p(Overload):
    """log(1 + x): d/dx = 1 / (1 + x)."""

    node_name = "Log1PBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE  # tangent / (1 + x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / (x + 1)


log1p = declare("log1p", Log1p, kernel=quiet(np.log1p), dtype=FLOAT, inplace="log1p_")


class Expm1(Overload):
    """e^x - 1: d/dx = e^x = result + 1."""

    node_name = "Expm1Backward0"
    saved_fields = ("result",)
    jvp = ELEMENTWISE  # tangent * (result + 1)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (y + 1)


expm1 = declare("expm1", Expm1, kernel=np.expm1, dtype=FLOAT, inplace="expm1_")


class Round(_PiecewiseConstant):
    """Round half to even."""

    node_name = "RoundBackward0"


class RoundDecimals(_PiecewiseConstant):
    """Round to a number of decimals."""

    node_name = "RoundBackward1"
    args = ("self", "decimals")
    tensor_positions = (0,)

    @staticmethod
    def forward(x, decimals):
        return x.round(decimals=decimals)

    @staticmethod
    def backward(ctx, grad):
        return namespace_of(grad).zeros_like(grad), None


def _round(x: Tensor, *, decimals: int | None = None) -> Tensor:
    """Round to the nearest integer (half to even), or to ``decimals`` places."""
    if type(x) is not Tensor:
        raise _not_a_tensor("round", x)
    d = x._data
    if decimals is None:
        if d.dtype.kind == "b":
            raise _no_kernel("round_vml", d)
        return dispatch(Round, np.round(d), (x,))
    if d.dtype.kind in "biu":
        raise _no_kernel("round", d)
    return dispatch(RoundDecimals, np.round(d, decimals), (x, decimals))


round = declare("round", Round, RoundDecimals, function=_round,  # noqa: A001 - torch's name
                inplace="round_")


class Floor(_PiecewiseConstant):
    """The largest integer not above x."""

    node_name = "FloorBackward0"


def _rounding(name: str, ov: type, kernel, doc: str):
    """A rounding op's function: no bool kernel (torch's ``<name>_vml``), else the kernel."""
    def function(x: Tensor) -> Tensor:
        if type(x) is not Tensor:
            raise _not_a_tensor(name, x)
        d = x._data
        if d.dtype.kind == "b":
            raise _no_kernel(f"{name}_vml", d)
        return dispatch(ov, kernel(d), (x,))

    function.__doc__ = doc
    return function


floor = declare("floor", Floor, function=_rounding("floor", Floor, np.floor, "Round down."),
                inplace="floor_")


class Ceil(_PiecewiseConstant):
    """The smallest integer not below x."""

    node_name = "CeilBackward0"


ceil = declare("ceil", Ceil, function=_rounding("ceil", Ceil, np.ceil, "Round up."),
               inplace="ceil_")
