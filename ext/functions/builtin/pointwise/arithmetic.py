"""Arithmetic: + - * / ** with tensors and numbers, reflected forms and reciprocal."""

from __future__ import annotations

import math

import numpy as np

from .... import _dtype
from ...._args import as_number
from ...._tensor import Tensor
from ..._op import ELEMENTWISE, FLOAT, Overload, declare, dispatch
from .._builtin import namespace_of
from ._common import apply, operands
from .division import DivRounding, div_rounding


# ---------------------------------------------------------------------------------- add / sub
class Add(Overload):
    """a + alpha * b: the gradient passes through (scaled by alpha for b)."""

    node_name = "AddBackward0"
    args = ("self", "other", "alpha")
    saved_attrs = ("alpha",)
    tensor_positions = (0, 1)
    tangent_in_output_dtype = False  # (the rule gives torch's tangent dtype: _widened)
    forward_attrs = ("self", "other", "result_sym_sizes")

    @staticmethod
    def forward(a, b, alpha=1):
        return a.add(b, alpha=alpha)

    @staticmethod
    def backward(ctx, grad):
        gb = None
        if ctx.needs_input_grad[1]:
            gb = scaled(grad, ctx.alpha)
        return grad if ctx.needs_input_grad[0] else None, gb, None

    @staticmethod
    def jvp(ctx, ta, tb, _):
        return _sum_jvp(ctx, ctx.self, ta, ctx.other, tb, ctx.alpha)


def _add(a, b, *, alpha=1) -> Tensor:
    """a + alpha * b, with broadcasting and type promotion."""
    ad, bd = operands(a, b, "add")
    if type(alpha) is not int or alpha != 1:
        alpha = _alpha(alpha, "add")
        if ad.dtype.kind == "V":
            return dispatch(Add, _bfloat16_alpha(np.add, ad, bd, alpha), (a, b, alpha))
        bd = _times_alpha(ad, bd, alpha)
    return dispatch(Add, apply(np.add, ad, bd), (a, b, alpha))


class Sub(Add):
    """a - alpha * b."""

    node_name = "SubBackward0"

    @staticmethod
    def forward(a, b, alpha=1):
        return a.sub(b, alpha=alpha)

    @staticmethod
    def backward(ctx, grad):
        gb = None
        if ctx.needs_input_grad[1]:
            gb = scaled(-grad, ctx.alpha)
        return grad if ctx.needs_input_grad[0] else None, gb, None

    @staticmethod
    def jvp(ctx, ta, tb, _):
        return _sum_jvp(ctx, ctx.self, ta, ctx.other, tb, -ctx.alpha)


def _sub(a, b, *, alpha=1) -> Tensor:
    """a - alpha * b."""
    ad, bd = operands(a, b, "sub")
    if a._data.dtype == np.bool_ or type(b) is bool or \
            type(b) is Tensor and b._data.dtype == np.bool_:
        _bool_sub_error(a, b)
    if type(alpha) is not int or alpha != 1:
        alpha = _alpha(alpha, "sub")
        if ad.dtype.kind == "V":
            return dispatch(Sub, _bfloat16_alpha(np.subtract, ad, bd, alpha), (a, b, alpha))
        bd = _times_alpha(ad, bd, alpha)
    return dispatch(Sub, apply(np.subtract, ad, bd), (a, b, alpha))


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
    if kind not in "fcV" and isinstance(alpha, float):  # ("V": bfloat16)
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    if kind == "b":
        # A bool result takes alpha as a bool: True + 2 * True is True.
        return np.logical_and(bd, bool(alpha))
    return bd * alpha


def _bfloat16_alpha(kernel, ad, bd, alpha) -> np.ndarray:
    """``ad`` plus or minus (``kernel``) ``alpha * bd`` for bfloat16 operands as torch's
    vectorized kernel computes it: alpha rounded to bfloat16, then one fused multiply-add in
    float32, rounded to bfloat16 once. (torch's scalar loop, which takes the few elements left
    over after its vectors, rounds the product to bfloat16 first.)"""
    if isinstance(alpha, (complex, bool)):
        _times_alpha(ad, bd, alpha)  # (its errors)
    bf16 = np.asarray(ad).dtype
    # (float64 holds the product and the sum exactly: rounded to float32, they give the fused
    # multiply-add)
    scale = np.float64(np.asarray(alpha, bf16))
    wide = kernel(np.asarray(ad).astype(np.float64), np.asarray(bd).astype(np.float64) * scale)
    return np.asarray(wide).astype(np.float32).astype(bf16)


def _sum_jvp(ctx, p, tp, s, ts, factor):
    """torch's tangent of ``p + factor * s`` (add, sub and rsub, ``factor`` being +-alpha): a
    missing tangent is torch's zero tensor of its operand's dtype and shape, which can widen the
    other's dtype (``_widened``) and broadcasts it to the output's shape."""
    alpha = ctx.alpha
    if ts is None:
        t = _widened(tp, s, alpha)
    else:
        t = ts if factor == 1 else -ts if factor == -1 else ts * factor
        t = _widened(t, p, 1) if tp is None else tp + t
    shape = ctx.result_sym_sizes
    # (broadcast by torch's sum with the other's zero: a fresh tensor, which an in-place op on
    # the result may write into, not an expanded view)
    return t if tuple(t.shape) == shape else t.expand(shape).contiguous()


def _widened(t, operand, alpha):
    """``t`` plus torch's zero tangent of ``operand`` (a tensor or a number) times ``alpha``,
    in the dtype that sum takes. torch makes the zero in the operand's dtype, multiplies it by
    alpha taken as a 0-d tensor of its own (float64 for a float) unless alpha is 1, and adds it
    with promotion: an integer or 0-d operand with a float alpha makes the tangent float64,
    whatever the output's dtype. Promotion only reads dtypes and whether a tensor is 0-d, so
    one-element stand-ins compute the dtype, and the values stay ``t``'s, -0.0 included."""
    ns = namespace_of(t)
    if hasattr(operand, "new_zeros"):
        zero = operand.new_zeros((1,) if operand.ndim else ())
    elif alpha == 1:
        return t  # (no zero for a number)
    else:
        zero = ns.zeros((), dtype=_number_dtype(ns, operand))
    if alpha != 1:
        zero = zero * ns.tensor(alpha, dtype=_number_dtype(ns, alpha))
    wide = (zero + t.new_zeros((1,) if t.ndim else ())).dtype
    return t if wide == t.dtype else t.to(wide)


def _number_dtype(ns, value):
    # a Python number taken as a 0-d tensor of its own (not a wrapped number)
    if isinstance(value, (bool, np.bool_)):
        return ns.bool
    return ns.int64 if isinstance(value, (int, np.integer)) else ns.float64


class RsubTensor(Add):
    """other - alpha * x for a tensor ``other`` (``ext.rsub(x, other)``)."""

    node_name = "RsubBackward0"

    @staticmethod
    def forward(x, other, alpha=1):
        return namespace_of(x).rsub(x, other, alpha=alpha)

    @staticmethod
    def backward(ctx, grad):
        gx = None
        if ctx.needs_input_grad[0]:
            gx = scaled(-grad, ctx.alpha)
        return gx, grad if ctx.needs_input_grad[1] else None, None

    @staticmethod
    def jvp(ctx, tx, tother, _):
        return _sum_jvp(ctx, ctx.other, tother, ctx.self, tx, -ctx.alpha)


class Rsub(Overload):
    """number - alpha * x (``2 - x``): the number is not an input of the node."""

    node_name = "RsubBackward1"
    args = ("self", "other", "alpha")
    saved_attrs = ("alpha",)
    tensor_positions = (0,)
    jvp = ELEMENTWISE  # -alpha * tangent

    @staticmethod
    def forward(x, other, alpha=1):
        return namespace_of(x).rsub(x, other, alpha=alpha)

    @staticmethod
    def backward(ctx, grad):
        return scaled(-grad, ctx.alpha), None, None


def _rsub(x: Tensor, other, alpha=1) -> Tensor:
    """other - alpha * x."""
    if type(other) is Tensor:
        od, xd = operands(other, x, "rsub")
        if other._data.dtype == np.bool_ or x._data.dtype == np.bool_:
            _bool_sub_error(other, x)
        if type(alpha) is not int or alpha != 1:
            alpha = _alpha(alpha, "rsub")
            if od.dtype.kind == "V":
                return dispatch(RsubTensor, _bfloat16_alpha(np.subtract, od, xd, alpha),
                                (x, other, alpha))
            xd = _times_alpha(od, xd, alpha)
        return dispatch(RsubTensor, apply(np.subtract, od, xd), (x, other, alpha))
    xd, od = operands(x, other, "rsub")
    if x._data.dtype == np.bool_ or type(other) is bool:
        _bool_sub_error(x, other)
    if type(alpha) is not int or alpha != 1:
        alpha = _alpha(alpha, "rsub")
        if xd.dtype.kind == "V":
            return dispatch(Rsub, _bfloat16_alpha(np.subtract, od, xd, alpha), (x, other, alpha))
        xd = _times_alpha(xd, xd, alpha)
    return dispatch(Rsub, od - xd, (x, other, alpha))


add = declare("add", Add, function=_add, operator="__add__", reflected=("__radd__", _add),
              inplace="add_", augmented="__iadd__")
rsub = declare("rsub", RsubTensor, Rsub, function=_rsub, methods=())
sub = declare("sub", Sub, function=_sub, methods=("sub", "subtract"),
              functions=("sub", "subtract"), operator="__sub__", reflected=("__rsub__", rsub),
              inplace="sub_", augmented="__isub__")


# ---------------------------------------------------------------------------------- mul / div
class Mul(Overload):
    """a * b: each gradient is the other operand times grad."""

    node_name = "MulBackward0"
    args = ("self", "other")
    saved_fields = ("self", "other")
    saved_for = {"self": "other", "other": "self"}  # (each operand for the other's gradient)
    tensor_positions = (0, 1)  # (other may be a number)
    jvp = ELEMENTWISE  # ta * b + a * tb

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return (grad * b if ctx.needs_input_grad[0] else None,
                grad * a if ctx.needs_input_grad[1] else None)


def _mul(a, b) -> Tensor:
    """a * b, with broadcasting and type promotion."""
    ad, bd = operands(a, b, "mul")
    return dispatch(Mul, apply(np.multiply, ad, bd), (a, b))


class MulScalar(Overload):
    """x * a number as torch's backward formulas multiply (its C++ ``mul.Scalar``, a node of
    its own, MulBackward1; Python's ``x * 2`` is MulBackward0)."""

    node_name = "MulBackward1"
    args = ("self", "other")
    saved_attrs = ("other",)
    tensor_positions = (0,)
    jvp = ELEMENTWISE  # tangent * other

    @staticmethod
    def backward(ctx, grad):
        return namespace_of(grad).ops.aten.mul.Scalar(grad, ctx.other), None


def _mul_scalar(x: Tensor, other) -> Tensor:
    return dispatch(MulScalar, apply(np.multiply, *operands(x, other, "mul")), (x, other))


def scaled(x, factor):
    """torch's maybe_multiply: x itself when ``factor`` is 1, else ``mul.Scalar(x, factor)``."""
    return x if factor == 1 else namespace_of(x).ops.aten.mul.Scalar(x, factor)


_ABSENT = object()  # (rounding_mode not given: torch's plain division, DivBackward0)


class Div(Overload):
    """a / b: d/da = 1/b, d/db = -a/b²."""

    node_name = "DivBackward0"
    args = ("self", "other")
    saved_fields = ("self", "other")
    saved_for = {"self": "other"}
    tensor_positions = (0, 1)  # (other may be a number)
    forward_attrs = ("result",)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        # -grad * (a / b) / b, not a / (b * b): its derivative at b = inf is 0, not inf * 0.
        return (grad / b if ctx.needs_input_grad[0] else None,
                -grad * (a / b / b) if ctx.needs_input_grad[1] else None)

    @staticmethod
    def jvp(ctx, ta, tb):
        # torch's (ta - tb * result) / b, a missing tangent dropping out as its zero tensor does
        _, b = ctx.saved_tensors
        if tb is None:
            return ta / b
        prod = tb * ctx.result
        return (-prod if ta is None else ta - prod) / b


def _div(a, b, *, rounding_mode=_ABSENT) -> Tensor:
    """True division a / b; integers divide into the default float dtype. With
    ``rounding_mode`` (even None), torch's rounding division (``DivBackward2``)."""
    if rounding_mode is not _ABSENT:
        return div_rounding(a, b, rounding_mode)
    ad, bd = operands(a, b, "div")
    if ad.dtype.kind not in "fV":  # ("V": bfloat16)
        ad = ad.astype(_dtype.get_default_dtype()._np)
        if type(bd) is np.ndarray:
            bd = bd.astype(ad.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        return dispatch(Div, apply(np.true_divide, ad, bd), (a, b))


class DivScalar(Overload):
    """x / a number as torch's backward formulas divide (``div.Scalar``, DivBackward1)."""

    node_name = "DivBackward1"
    args = ("self", "other")
    saved_attrs = ("other",)
    tensor_positions = (0,)
    jvp = ELEMENTWISE  # tangent / other

    @staticmethod
    def backward(ctx, grad):
        return namespace_of(grad).ops.aten.div.Scalar(grad, ctx.other), None


def _div_scalar(x: Tensor, other) -> Tensor:
    return dispatch(DivScalar, apply(np.true_divide, *operands(x, other, "div")), (x, other))


class Reciprocal(Overload):
    """1 / x: d/dx = -1/x² = -result²."""

    node_name = "ReciprocalBackward0"
    saved_fields = ("result",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return -grad * y * y


def _reciprocal_kernel(d):
    with np.errstate(divide="ignore"):
        return np.reciprocal(d)


reciprocal = declare("reciprocal", Reciprocal, kernel=_reciprocal_kernel, dtype=FLOAT,
                     inplace="reciprocal_")


def rdiv(x: Tensor, other) -> Tensor:
    """other / x; for a number, torch computes reciprocal(x) * other."""
    if type(other) is Tensor:
        return div(other, x)
    return mul(reciprocal(x), other)


mul = declare("mul", Mul, function=_mul, methods=("mul", "multiply"),
              functions=("mul", "multiply"), operator="__mul__", reflected=("__rmul__", _mul),
              inplace="mul_", augmented="__imul__")
mul_scalar = declare("mul.Scalar", MulScalar, function=_mul_scalar, methods=(), functions=())
div = declare("div", Div, DivRounding, function=_div, methods=("div", "divide", "true_divide"),
              functions=("div", "divide", "true_divide"), operator="__truediv__",
              reflected=("__rtruediv__", rdiv), inplace=("div_", "divide_", "true_divide_"),
              augmented="__itruediv__")
div_scalar = declare("div.Scalar", DivScalar, function=_div_scalar, methods=(), functions=())


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
        # torch's e * x.pow(e - 1) is its C++ mul.Scalar (MulBackward1), also for e = 1
        return grad * namespace_of(x).ops.aten.mul.Scalar(x ** (e - 1), e), None


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
