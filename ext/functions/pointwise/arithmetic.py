"""Arithmetic: + - * / ** with tensors and numbers, reflected forms and reciprocal."""

from __future__ import annotations

import math

import numpy as np

from ... import _dtype
from ..._args import as_number
from ..._state import STATE
from ..._tensor import Tensor, wrap
from .._builtin import BuiltinFunction, namespace_of, record
from .._op import ELEMENTWISE, Overload, declare, dispatch
from ._common import apply, edge, operands, recording, unary


# ---------------------------------------------------------------------------------- add / sub
class Add(BuiltinFunction):
    """a + alpha * b: the gradient passes through (scaled by alpha for b)."""

    node_name = "AddBackward0"
    tangent_in_output_dtype = False  # (forward_rules._scaled_zero)
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
            gb = scaled(grad, ctx.alpha)
        return grad if ctx.needs_input_grad[0] else None, gb, None


def add(a, b, *, alpha=1) -> Tensor:
    """a + alpha * b, with broadcasting and type promotion."""
    ad, bd = operands(a, b, "add")
    if type(alpha) is not int or alpha != 1:
        alpha = _alpha(alpha, "add")
        bd = _times_alpha(ad, bd, alpha)
    out = wrap(apply(np.add, ad, bd))
    if recording(a, b) or STATE.special:
        record(Add, out, (a, edge(b)), (a, b, alpha))
    return out


class Sub(BuiltinFunction):
    """a - alpha * b."""

    node_name = "SubBackward0"
    tangent_in_output_dtype = False  # (forward_rules._scaled_zero)
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
            gb = scaled(-grad, ctx.alpha)
        return grad if ctx.needs_input_grad[0] else None, gb, None


def sub(a, b, *, alpha=1) -> Tensor:
    """a - alpha * b."""
    ad, bd = operands(a, b, "sub")
    if a._data.dtype == np.bool_ or type(b) is bool or \
            type(b) is Tensor and b._data.dtype == np.bool_:
        _bool_sub_error(a, b)
    if type(alpha) is not int or alpha != 1:
        alpha = _alpha(alpha, "sub")
        bd = _times_alpha(ad, bd, alpha)
    out = wrap(apply(np.subtract, ad, bd))
    if recording(a, b) or STATE.special:
        record(Sub, out, (a, edge(b)), (a, b, alpha))
    return out


def _bool_sub_error(a: Tensor, b) -> None:
    """torch refuses subtraction with bool operands (a Python bool counts as one)."""
    a_bool = a._data.dtype == np.bool_
    b_bool = type(b) is bool or type(b) is Tensor and b._data.dtype == np.bool_
    if a_bool and b_bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if a_bool or b_bool:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def _alpha(alpha, fn: str):
    """alpha as torch's parser reads a Number (a TypeError for anything else)."""
    number = as_number(alpha)
    if number is None:
        raise TypeError(f"{fn}(): argument 'alpha' must be Number, not {type(alpha).__name__}")
    return number


def _times_alpha(ad: np.ndarray, bd, alpha):
    """alpha * bd in the result dtype (that of ``ad``), after torch's checks of alpha."""
    kind = ad.dtype.kind
    if type(alpha) is complex and kind != "c":
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex "
                           "number.")
    if type(alpha) is bool and kind != "b":
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if kind not in "fc" and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    if kind == "b":
        # A bool result takes alpha as a bool: True + 2 * True is True.
        return np.logical_and(bd, bool(alpha))
    return bd * alpha


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
        return scaled(-grad, ctx.alpha), None, None


class RsubTensor(BuiltinFunction):
    """other - alpha * x for a tensor ``other`` (``ext.rsub(x, other)``)."""

    node_name = "RsubBackward0"
    tangent_in_output_dtype = False  # (forward_rules._scaled_zero)
    saved_attrs = ("alpha",)
    tensor_positions = (0, 1)

    @staticmethod
    def forward(x, other, alpha=1):
        return namespace_of(x).rsub(x, other, alpha=alpha)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.alpha = inputs[2]

    @staticmethod
    def backward(ctx, grad):
        gx = None
        if ctx.needs_input_grad[0]:
            gx = scaled(-grad, ctx.alpha)
        return gx, grad if ctx.needs_input_grad[1] else None, None


def rsub(x: Tensor, other, alpha=1) -> Tensor:
    """other - alpha * x."""
    if type(other) is Tensor:
        od, xd = operands(other, x, "rsub")
        if other._data.dtype == np.bool_ or x._data.dtype == np.bool_:
            _bool_sub_error(other, x)
        if type(alpha) is not int or alpha != 1:
            alpha = _alpha(alpha, "rsub")
            xd = _times_alpha(od, xd, alpha)
        out = wrap(apply(np.subtract, od, xd))
        if recording(x, other) or STATE.special:
            record(RsubTensor, out, (x, other), (x, other, alpha))
        return out
    xd, od = operands(x, other, "rsub")
    if x._data.dtype == np.bool_ or type(other) is bool:
        _bool_sub_error(x, other)
    if type(alpha) is not int or alpha != 1:
        alpha = _alpha(alpha, "rsub")
        xd = _times_alpha(xd, xd, alpha)
    out = wrap(od - xd)
    if recording(x, None) or STATE.special:
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
    ad, bd = operands(a, b, "mul")
    out = wrap(apply(np.multiply, ad, bd))
    if recording(a, b) or STATE.special:
        record(Mul, out, (a, edge(b)), (a, b))
    return out


class MulScalar(BuiltinFunction):
    """x * a number as torch's backward formulas multiply (its C++ ``mul.Scalar``, a node of
    its own, MulBackward1; Python's ``x * 2`` is MulBackward0)."""

    node_name = "MulBackward1"
    saved_attrs = ("other",)
    tensor_positions = (0,)

    @staticmethod
    def forward(x, other):
        return x * other

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.other = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        return mul_scalar(grad, ctx.other), None

    @staticmethod
    def jvp(args, out, tangents):
        return mul_scalar(tangents[0], args[1])


def mul_scalar(x, other):
    """x * other (a number), recorded as torch's backward formulas record it (MulBackward1)."""
    if type(x) is not Tensor:
        return x * other
    out = wrap(apply(np.multiply, *operands(x, other, "mul")))
    if recording(x, other) or STATE.special:
        record(MulScalar, out, (x,), (x, other))
    return out


def scaled(x, factor):
    """torch's maybe_multiply: x itself when ``factor`` is 1, else ``mul_scalar(x, factor)``."""
    return x if factor == 1 else mul_scalar(x, factor)


class DivScalar(BuiltinFunction):
    """x / a number as torch's backward formulas divide (``div.Scalar``, DivBackward1)."""

    node_name = "DivBackward1"
    saved_attrs = ("other",)
    tensor_positions = (0,)

    @staticmethod
    def forward(x, other):
        return x / other

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.other = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        return div_scalar(grad, ctx.other), None

    @staticmethod
    def jvp(args, out, tangents):
        return div_scalar(tangents[0], args[1])


def div_scalar(x, other):
    """x / other (a number), recorded as torch's backward formulas record it (DivBackward1)."""
    if type(x) is not Tensor:
        return x / other
    out = wrap(apply(np.true_divide, *operands(x, other, "div")))
    if recording(x, other) or STATE.special:
        record(DivScalar, out, (x,), (x, other))
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
        # -grad * (a / b) / b, not a / (b * b): its derivative at b = inf is 0, not inf * 0.
        return (grad / b if ctx.needs_input_grad[0] else None,
                -grad * (a / b / b) if ctx.needs_input_grad[1] else None)


def div(a, b) -> Tensor:
    """True division a / b; integers divide into the default float dtype."""
    ad, bd = operands(a, b, "div")
    if ad.dtype.kind != "f":
        ad = ad.astype(_dtype.get_default_dtype()._np)
        if type(bd) is np.ndarray:
            bd = bd.astype(ad.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = wrap(apply(np.true_divide, ad, bd))
    if recording(a, b) or STATE.special:
        record(Div, out, (a, edge(b)), (a, b))
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
    return unary(Reciprocal, x, _reciprocal_kernel, to_float=True)


def _reciprocal_kernel(d):
    with np.errstate(divide="ignore"):
        return np.reciprocal(d)


def rdiv(x: Tensor, other) -> Tensor:
    """other / x; for a number, torch computes reciprocal(x) * other."""
    if type(other) is Tensor:
        return div(other, x)
    return mul(reciprocal(x), other)


# ---------------------------------------------------------------------------------- pow
class PowTensorScalar(Overload):
    """x ** e for a number e: d/dx = e * x^(e-1)."""

    node_name = "PowBackward0"
    args = ("self", "exponent")
    saved_fields = ("self",)
    saved_attrs = ("exponent",)
    tensor_positions = (0,)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        e = ctx.exponent
        if type(e) is bool:
            # torch's exponent.equal(0.0) is never true of a bool: False takes the formula.
            e = float(e)
        elif e == 0:
            return namespace_of(x).zeros_like(x), None
        return grad * (e * x ** (e - 1)), None


class PowTensorTensor(Overload):
    """x ** y: d/dx = y * x^(y-1), d/dy = x^y * log(x) (0 where x = 0 and y >= 0)."""

    node_name = "PowBackward1"
    args = ("self", "exponent")
    saved_fields = ("self", "exponent", "result")
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        x, y, result = ctx.saved_tensors
        gx = gy = None
        if ctx.needs_input_grad[0]:
            # A zero exponent has zero gradient, even at x = 0 where y * x^(y-1) is 0 * inf.
            gx = namespace_of(y).where(y == 0, 0.0, grad * (y * x ** (y - 1)))
        if ctx.needs_input_grad[1]:
            # torch's pow_backward_exponent: the limit 0 where x = 0 and y >= 0 rather than
            # nan (and, differentiated again, the nan of 0 * log(0) where the branch is masked)
            xl = x if x.dtype == result.dtype else x.to(result.dtype)
            gy = grad * namespace_of(x).where((x == 0).logical_and(y >= 0), 0.0,
                                              result * xl.log())
        return gx, gy


class PowScalarTensor(Overload):
    """c ** y for a number c: d/dy = c^y * log(c)."""

    node_name = "PowBackward2"
    args = ("self", "exponent")
    saved_fields = ("exponent", "result")
    saved_attrs = ("self",)
    tensor_positions = (1,)
    jvp = ELEMENTWISE

    @staticmethod
    def forward(base, y):
        return base**y

    @staticmethod
    def backward(ctx, grad):
        y, result = ctx.saved_tensors
        base = ctx.self
        if base == 0:
            # 0^y log(0): 0 for y >= 0 (torch's limit), else -inf (or nan where 0^y is 0 * inf)
            return None, namespace_of(y).where(y >= 0, grad * 0, grad * result * -math.inf)
        # (log of a negative base is nan, as torch's c^y * log(c) is)
        return None, grad * result * (math.log(base) if base > 0 else math.nan)


# torch has no pow kernel for bool tensors (only a bool tensor to a bool number's power)
_BOOL_POW = "\"pow\" not implemented for 'Bool'"


def _pow(x, exponent) -> Tensor:
    """x ** exponent for a tensor or number exponent."""
    if type(x) is not Tensor:
        return _rpow(exponent, x)
    if type(exponent) is Tensor:
        xd, ed = operands(x, exponent, "pow")
        if xd.dtype == np.bool_:
            raise NotImplementedError(_BOOL_POW)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = apply(_int_power if xd.dtype.kind in "iu" else _float_power, xd, ed)
        return dispatch(PowTensorTensor, out, (x, exponent))
    xd, e = operands(x, exponent, "pow")
    if xd.dtype.kind in "iu" and isinstance(e, int) and e < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if xd.dtype == np.bool_:
        # (a bool exponent keeps a bool tensor bool: x ** True is x, x ** False is all True)
        out = xd | (not e)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            # torch computes x ** -0.5 as rsqrt: nan at -inf and -inf at -0.0, where pow gives
            # 0 and inf
            out = 1 / np.sqrt(xd) if e == -0.5 and xd.dtype.kind == "f" else np.power(xd, e)
    return dispatch(PowTensorScalar, out, (x, exponent))


def _rpow(x: Tensor, base) -> Tensor:
    """base ** x for a number base."""
    if type(base) is Tensor:
        return _pow(base, x)
    xd, b = operands(x, base, "pow")
    if xd.dtype == np.bool_:
        raise NotImplementedError(_BOOL_POW)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = _int_power(b, xd) if xd.dtype.kind in "iu" else np.power(b, xd)
    return dispatch(PowScalarTensor, out, (base, x))


pow = declare("pow", PowTensorScalar, PowTensorTensor, PowScalarTensor,  # noqa: A001
              function=_pow, operator="__pow__", reflected=("__rpow__", _rpow),
              inplace="pow_", augmented="__ipow__")
rpow = _rpow


def _float_power(base: np.ndarray, exp: np.ndarray) -> np.ndarray:
    """base ** exp elementwise with C's pow, as torch's tensor exponent: NumPy computes an
    exponent of 0.5 that is the same along its loop (broadcast) as sqrt, which gives nan at
    -inf and -0.0 at -0.0 where pow gives inf and 0."""
    if exp.shape != base.shape or 0 in exp.strides:
        exp = np.broadcast_to(exp, np.broadcast_shapes(base.shape, exp.shape)).copy()
    return np.power(base, exp)


def _int_power(base, exp: np.ndarray) -> np.ndarray:
    """Integer base ** integer exponent as torch computes it: a negative exponent gives 0, except
    for base 1 (1) and base -1 (1 or -1 by the exponent's parity). NumPy refuses negative integer
    exponents, so those places are filled in apart."""
    neg = exp < 0
    if not neg.any():
        return np.power(base, exp)
    out = np.power(base, np.where(neg, 0, exp))
    small = np.where(base == -1, 1 - 2 * (exp & 1), base == 1)
    return np.where(neg, small, out).astype(out.dtype, copy=False)
