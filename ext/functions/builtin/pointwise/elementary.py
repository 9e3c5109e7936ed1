"""One-input elementary functions beyond unary.py: inverse trigonometric and hyperbolic functions,
logarithms and exponentials in other bases, rounding parts, sign tests, and the complex-number
views that are the identity on a real tensor."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from .... import _dtype
from ...._args import not_a_tensor
from ...._tensor import Tensor, bump_version, wrap
from ..._op import ELEMENTWISE, FLOAT, Overload, declare, dispatch
from .._builtin import namespace_of
from ._common import quiet
from .arithmetic import pow as _pow
from .unary import _no_kernel, _PiecewiseConstant

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


# ---------------------------------------------------------------------------------- trigonometric
class Acos(Overload):
    """arccos x: d/dx = -1 / √(1 - x²)."""

    node_name = "AcosBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * -((-x * x + 1).rsqrt())


class Asin(Overload):
    """arcsin x: d/dx = 1 / √(1 - x²)."""

    node_name = "AsinBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (-x * x + 1).rsqrt()


class Atan(Overload):
    """arctan x: d/dx = 1 / (1 + x²)."""

    node_name = "AtanBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / (x * x + 1)


class Acosh(Overload):
    """arcosh x: d/dx = 1 / √(x² - 1)."""

    node_name = "AcoshBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x * x - 1).rsqrt()


class Asinh(Overload):
    """arsinh x: d/dx = 1 / √(x² + 1)."""

    node_name = "AsinhBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x.pow(2) + 1).rsqrt()


class Atanh(Overload):
    """artanh x: d/dx = 1 / (1 - x²)."""

    node_name = "AtanhBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 1 / (1 - x.pow(2))


class Cosh(Overload):
    """cosh x: d/dx = sinh x."""

    node_name = "CoshBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.sinh()


class Sinh(Overload):
    """sinh x: d/dx = cosh x."""

    node_name = "SinhBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cosh()


def _no_inplace_derivative(name: str, node: str, forward: type) -> type:
    """torch's node for ``<name>_`` (acosh_, asinh_, atanh_): recorded, but its backward and
    forward-mode rule are not implemented."""
    def backward(ctx, grad):
        raise NotImplementedError(f"the derivative for 'inplace version of {name}' is not "
                                  "implemented.")

    def tangents(cls, args: tuple, out, tangents: tuple):
        raise NotImplementedError(f"Trying to use forward AD with {name}_ that does not support "
                                  "it because it has not been implemented yet.")

    return type(f"{forward.__name__}Inplace", (Overload,), {
        "__doc__": f"``{name}_``: no derivative.", "node_name": node,
        "backward": staticmethod(backward), "tangents": classmethod(tangents),
        "double_backward": False, "__module__": __name__})


def _inplace_of(name: str, ov: type, kernel: Callable) -> Callable:
    """The function that ``<name>_`` runs: the op, recorded under ``ov``."""
    def function(x: Tensor) -> Tensor:
        if type(x) is not Tensor:
            raise not_a_tensor(x, name)
        d = x._data
        if d.dtype.kind not in "fV":
            d = d.astype(_dtype.get_default_dtype()._np)
        return dispatch(ov, kernel(d), (x,))

    function.__name__ = f"{name}_"
    return function


AcoshInplace = _no_inplace_derivative("acosh", "AcoshBackward1", Acosh)
AsinhInplace = _no_inplace_derivative("asinh", "AsinhBackward1", Asinh)
AtanhInplace = _no_inplace_derivative("atanh", "AtanhBackward1", Atanh)

# (out of the domain, the kernels give nan or inf silently, as torch does)
acos = declare("acos", Acos, kernel=quiet(np.arccos), dtype=FLOAT,
               methods=("acos", "arccos"), functions=("acos", "arccos"),
               inplace=("acos_", "arccos_"))
asin = declare("asin", Asin, kernel=quiet(np.arcsin), dtype=FLOAT,
               methods=("asin", "arcsin"), functions=("asin", "arcsin"),
               inplace=("asin_", "arcsin_"))
atan = declare("atan", Atan, kernel=np.arctan, dtype=FLOAT, methods=("atan", "arctan"),
               functions=("atan", "arctan"), inplace=("atan_", "arctan_"))
_acosh_ = _inplace_of("acosh", AcoshInplace, quiet(np.arccosh))
acosh = declare("acosh", Acosh, kernel=quiet(np.arccosh), dtype=FLOAT,
                methods=("acosh", "arccosh"), functions=("acosh", "arccosh"),
                inplace=(("acosh_", _acosh_), ("arccosh_", _acosh_)))
_asinh_ = _inplace_of("asinh", AsinhInplace, np.arcsinh)
asinh = declare("asinh", Asinh, kernel=np.arcsinh, dtype=FLOAT, methods=("asinh", "arcsinh"),
                functions=("asinh", "arcsinh"),
                inplace=(("asinh_", _asinh_), ("arcsinh_", _asinh_)))
_atanh_ = _inplace_of("atanh", AtanhInplace, quiet(np.arctanh))
atanh = declare("atanh", Atanh, kernel=quiet(np.arctanh), dtype=FLOAT,
                methods=("atanh", "arctanh"), functions=("atanh", "arctanh"),
                inplace=(("atanh_", _atanh_), ("arctanh_", _atanh_)))
cosh = declare("cosh", Cosh, kernel=quiet(np.cosh), dtype=FLOAT, inplace="cosh_")
sinh = declare("sinh", Sinh, kernel=quiet(np.sinh), dtype=FLOAT, inplace="sinh_")


class Deg2Rad(Overload):
    """x * π/180: the gradient is scaled alike."""

    node_name = "Deg2RadBackward0"
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        return namespace_of(grad).ops.aten.mul.Scalar(grad, math.pi / 180)


class Rad2Deg(Overload):
    """x * 180/π: the gradient is scaled alike."""

    node_name = "Rad2DegBackward0"
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        return namespace_of(grad).ops.aten.mul.Scalar(grad, 180 / math.pi)


def _scale(factor: float) -> Callable:
    def kernel(d: np.ndarray) -> np.ndarray:
        return d * d.dtype.type(factor)

    return kernel


deg2rad = declare("deg2rad", Deg2Rad, kernel=_scale(math.pi / 180), dtype=FLOAT,
                  inplace="deg2rad_")
rad2deg = declare("rad2deg", Rad2Deg, kernel=_scale(180 / math.pi), dtype=FLOAT,
                  inplace="rad2deg_")


# ---------------------------------------------------------------------------------- other bases
class Exp2(Overload):
    """2^x: d/dx = 2^x ln 2, from the result."""

    node_name = "Exp2Backward0"
    saved_fields = ("result",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y * _LN2


class Log2(Overload):
    """log₂ x: d/dx = 1 / (x ln 2)."""

    node_name = "Log2Backward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / (x * _LN2)


class Log10(Overload):
    """log₁₀ x: d/dx = 1 / (x ln 10)."""

    node_name = "Log10Backward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad / (x * _LN10)


exp2 = declare("exp2", Exp2, kernel=quiet(np.exp2), dtype=FLOAT, inplace="exp2_")
log2 = declare("log2", Log2, kernel=quiet(np.log2), dtype=FLOAT, inplace="log2_")
log10 = declare("log10", Log10, kernel=quiet(np.log10), dtype=FLOAT, inplace="log10_")


# ---------------------------------------------------------------------------------- rounding parts
class Trunc(_PiecewiseConstant):
    """x rounded toward zero."""

    node_name = "TruncBackward0"


def _trunc(input: Tensor) -> Tensor:  # noqa: A002 - torch's name
    """Round toward zero; an integer tensor is its own result."""
    if type(input) is not Tensor:
        raise not_a_tensor(input, "trunc")
    d = input._data
    kind = d.dtype.kind
    if kind == "b":
        raise _no_kernel("trunc_vml", d)
    return dispatch(Trunc, d.copy() if kind in "iu" else np.trunc(d), (input,))


trunc = declare("trunc", Trunc, function=_trunc, methods=("trunc", "fix"),
                functions=("trunc", "fix"), inplace=("trunc_", "fix_"))


class Frac(Overload):
    """x - trunc(x): the gradient passes through."""

    node_name = "FracBackward0"
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        return grad


def _frac(input: Tensor) -> Tensor:  # noqa: A002 - torch's name
    """The fractional part, with the sign of x (nan for ±inf)."""
    if type(input) is not Tensor:
        raise not_a_tensor(input, "frac")
    d = input._data
    if d.dtype.kind not in "fV":
        raise _no_kernel("frac", d)
    with np.errstate(invalid="ignore"):
        return dispatch(Frac, d - np.trunc(d), (input,))


frac = declare("frac", Frac, function=_frac, inplace="frac_")


class Frexp(NamedTuple):
    """``frexp``'s results: x = mantissa * 2**exponent."""

    mantissa: Tensor
    exponent: Tensor


class FrexpOverload(Overload):
    """x = mantissa * 2^exponent: the mantissa's gradient is grad / 2^exponent."""

    node_name = "FrexpBackward0"
    outputs = ("mantissa", "exponent")
    non_differentiable = ("exponent",)
    returns = Frexp
    saved_fields = ("exponent",)

    @staticmethod
    def backward(ctx, grad, grad_exponent=None):
        (exponent,) = ctx.saved_tensors
        return grad / exponent.exp2()

    @staticmethod
    def jvp(ctx, tangent):
        (exponent,) = ctx.saved_tensors
        return tangent / exponent.exp2(), None


def _frexp(input: Tensor) -> Frexp:  # noqa: A002 - torch's name
    """The mantissa (in ±[0.5, 1)) and the int32 exponent of each element."""
    if type(input) is not Tensor:
        raise not_a_tensor(input, "frexp")
    d = input._data
    if d.dtype.kind not in "fV":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    mantissa, exponent = np.frexp(d)
    return dispatch(FrexpOverload, (mantissa, exponent.astype(np.int32, copy=False)), (input,))


frexp = declare("frexp", FrexpOverload, function=_frexp)


def _square(input: Tensor) -> Tensor:  # noqa: A002 - torch's name
    """x ** 2 (torch's pow node; a bool tensor squares as int64)."""
    if type(input) is not Tensor:
        raise not_a_tensor(input, "square")
    if input._data.dtype.kind == "b":
        input = input.long()
    return _pow(input, 2)


square = declare("square", function=_square, inplace="square_")


# ---------------------------------------------------------------------------------- sign and angle
class Sgn(Overload):
    """x / |x| (the sign, for a real tensor): its gradient is zero."""

    node_name = "SgnBackward0"
    saved_fields = ("self", "result")
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        # (torch's formula reads its saves, which checks their versions, and gives 0 on reals)
        x, _ = ctx.saved_tensors
        return namespace_of(grad).zeros_like(x)


def _sgn(input: Tensor) -> Tensor:  # noqa: A002 - torch's name
    """The sign of each element (0 for nan; a bool tensor is its own sign)."""
    if type(input) is not Tensor:
        raise not_a_tensor(input, "sgn")
    d = input._data
    kind = d.dtype.kind
    if kind in "fV":
        out = np.where(np.isnan(d), np.zeros((), d.dtype), np.sign(d))
    else:
        out = d.copy() if kind == "b" else np.sign(d)
    return dispatch(Sgn, out, (input,))


sgn = declare("sgn", Sgn, function=_sgn, inplace="sgn_")


class Angle(Overload):
    """The argument of x: π for a negative real, else 0; its gradient is zero on reals."""

    node_name = "AngleBackward0"
    saved_fields = ("self",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return namespace_of(x).zeros_like(x)


def _angle_kernel(d: np.ndarray) -> np.ndarray:
    # (nan stays nan; -0.0 and +inf give 0)
    zero = np.zeros((), d.dtype)
    return np.where(d < 0, d.dtype.type(math.pi), np.where(np.isnan(d), d, zero))


angle = declare("angle", Angle, kernel=_angle_kernel, dtype=FLOAT)


# ---------------------------------------------------------------------------------- tests
def _test(name: str, kernel: Callable) -> Callable:
    """A test with a bool result, hence no derivative: ``kernel`` maps the array to bools."""
    def function(input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        if type(input) is not Tensor:
            raise not_a_tensor(input, name)
        return wrap(kernel(input._data))

    function.__doc__ = kernel.__doc__
    return function


def _signbit_kernel(d: np.ndarray) -> np.ndarray:
    """Whether each element's sign bit is set (-0.0 and -nan included)."""
    if d.dtype.kind == "b":
        return np.zeros(d.shape, np.bool_)
    return np.signbit(d)


def _isposinf_kernel(d: np.ndarray) -> np.ndarray:
    """Whether each element is +inf."""
    return np.isposinf(d) if d.dtype.kind == "f" else np.zeros(d.shape, np.bool_)


def _isneginf_kernel(d: np.ndarray) -> np.ndarray:
    """Whether each element is -inf."""
    return np.isneginf(d) if d.dtype.kind == "f" else np.zeros(d.shape, np.bool_)


def _isreal_kernel(d: np.ndarray) -> np.ndarray:
    """Whether each element has no imaginary part: all of a real tensor's."""
    return np.ones(d.shape, np.bool_)


signbit = declare("signbit", function=_test("signbit", _signbit_kernel))
isposinf = declare("isposinf", function=_test("isposinf", _isposinf_kernel))
isneginf = declare("isneginf", function=_test("isneginf", _isneginf_kernel))
isreal = declare("isreal", function=_test("isreal", _isreal_kernel))


# ---------------------------------------------------------------------------------- identities
def _identity(name: str, doc: str) -> Callable:
    """An op that returns a real tensor itself (torch's complex views and conjugations)."""
    def function(input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        if type(input) is not Tensor:
            raise not_a_tensor(input, name)
        return input

    function.__doc__ = doc
    return function


def _positive(input: Tensor) -> Tensor:  # noqa: A002 - torch's name
    """+x: the tensor itself (refused for bool, as torch's unary plus)."""
    if type(input) is not Tensor:
        raise not_a_tensor(input, "positive")
    if input._data.dtype == np.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def _conj_physical_(self: Tensor) -> Tensor:
    """In-place conjugation: nothing to write on a real tensor, but torch's in-place checks
    (a leaf that requires grad is refused) and version bump still apply."""
    from ..inplace import check_inplace  # (it loads after the ops)

    check_inplace(self, self._requires_grad)
    bump_version(self)
    return self


positive = declare("positive", function=_positive)
conj = declare("conj", function=_identity("conj", "The conjugate: a real tensor itself."))
conj_physical = declare("conj_physical", function=_identity(
    "conj_physical", "The conjugate, materialized: a real tensor itself."),
    methods=("conj_physical", ("conj_physical_", _conj_physical_)))
resolve_conj = declare("resolve_conj", function=_identity(
    "resolve_conj", "The tensor with its conjugate bit resolved: a real tensor itself."))
resolve_neg = declare("resolve_neg", function=_identity(
    "resolve_neg", "The tensor with its negative bit resolved: a real tensor itself."))
real = declare("real", function=_identity("real", "The real part: a real tensor itself."),
               methods=())
