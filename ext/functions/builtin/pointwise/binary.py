"""Two- and three-input elementwise math: atan2, hypot, copysign, fmod, fmax/fmin, logaddexp, lerp,
addcmul/addcdiv, gcd/lcm, ldexp, float_power, nextafter, heaviside."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .... import _dtype
from ...._args import as_number, not_a_tensor
from ...._tensor import Tensor, wrap
from ..._op import ELEMENTWISE, Overload, declare, dispatch, read_history
from .._builtin import binary_operands, namespace_of
from ._common import apply, broadcast_error, operands
from .arithmetic import pow as _pow
from .division import _divide, _NoDerivative

_LN2 = math.log(2.0)


def _short(d: np.ndarray) -> str:
    return _dtype.FROM_NUMPY[d.dtype]._short


def _no_kernel(kernel: str, d: np.ndarray) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}_cpu" not implemented for \'{_short(d)}\'')


def _tensors(a, b, name: str, arg: str = "other") -> tuple:
    """The promoted NumPy operands of an op that takes two tensors (torch refuses a number)."""
    if type(a) is not Tensor:
        raise not_a_tensor(a, name)
    if type(b) is not Tensor:
        raise not_a_tensor(b, name, arg, 2)
    if (a._vc and a._vc[0]) or (b._vc and b._vc[0]):
        read_history(a, b)
    return binary_operands(a, b)


def _to_float(ad: np.ndarray, bd) -> tuple:
    """Integer or bool operands computed in the default float dtype (torch's float ops)."""
    if ad.dtype.kind not in "fV":
        ad = ad.astype(_dtype.get_default_dtype()._np)
        if type(bd) is np.ndarray:
            bd = bd.astype(ad.dtype)
    return ad, bd


def _float_only(ad: np.ndarray, name: str) -> None:
    """torch has only floating kernels for ``name``."""
    if ad.dtype.kind not in "fV":
        raise _no_kernel(name, ad)


# ---------------------------------------------------------------------------------- atan2
class Atan2(Overload):
    """atan2(y, x), the angle of the point (x, y): d/dy = x / (x² + y²), d/dx = -y / (x² + y²)
    (both 0 where x² + y² is 0)."""

    node_name = "Atan2Backward0"
    args = ("self", "other")
    saved_fields = ("self", "other")
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        y, x = ctx.saved_tensors
        # (0 where x² + y² is 0: torch's gradient at the origin, where the angle jumps)
        den = y * y + x * x
        recip = den.reciprocal().masked_fill(den == 0, 0)
        return (grad * x * recip if ctx.needs_input_grad[0] else None,
                grad * -y * recip if ctx.needs_input_grad[1] else None)


def _atan2(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002 - torch's names
    """The angle of the point (other, input), in (-π, π]."""
    ad, bd = _to_float(*_tensors(input, other, "atan2"))
    return dispatch(Atan2, apply(np.arctan2, ad, bd), (input, other))


atan2 = declare("atan2", Atan2, function=_atan2, methods=("atan2", "arctan2"),
                functions=("atan2", "arctan2"), inplace=("atan2_", "arctan2_"))


# ---------------------------------------------------------------------------------- hypot
class Hypot(Overload):
    """√(a² + b²): d/da = a / result, d/db = b / result."""

    node_name = "HypotBackward0"
    args = ("self", "other")
    saved_fields = ("self", "other", "result")
    saved_for = {"self": "self", "other": "other"}  # (each for its own gradient)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        a, b, result = ctx.saved_tensors
        return (grad * a / result if ctx.needs_input_grad[0] else None,
                grad * b / result if ctx.needs_input_grad[1] else None)


def _hypot(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002 - torch's names
    """The length of the hypotenuse, √(input² + other²)."""
    ad, bd = _tensors(input, other, "hypot")
    _float_only(ad, "hypot")
    return dispatch(Hypot, apply(np.hypot, ad, bd), (input, other))


hypot = declare("hypot", Hypot, function=_hypot, inplace="hypot_")


# ---------------------------------------------------------------------------------- copysign
def _copysign_grad(grad, x, result):  # (tensors of either engine)
    """torch's gradient of copysign in its first argument: result / x, 0 where x is 0."""
    return grad * (result / x).masked_fill(x == 0, 0)


class CopysignTensor(Overload):
    """|a| with the sign of the tensor b: b's gradient is zero."""

    node_name = "CopysignBackward0"
    args = ("self", "other")
    saved_fields = ("self", "result")
    saved_for = {"self": "self"}
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        x, result = ctx.saved_tensors
        return (_copysign_grad(grad, x, result) if ctx.needs_input_grad[0] else None,
                namespace_of(grad).zeros_like(grad) if ctx.needs_input_grad[1] else None)


class CopysignScalar(Overload):
    """|a| with the sign of a number."""

    node_name = "CopysignBackward1"
    args = ("self", "other")
    tensor_positions = (0,)
    saved_fields = ("self", "result")
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        x, result = ctx.saved_tensors
        return _copysign_grad(grad, x, result), None


def _copysign(input: Tensor, other) -> Tensor:  # noqa: A002 - torch's names
    """The magnitude of ``input`` with the sign of ``other`` (a tensor or a number)."""
    ad, bd = operands(input, other, "copysign")
    if input._vc and input._vc[0]:
        read_history(input, other)
    ad, bd = _to_float(ad, bd)
    if type(other) is Tensor:
        return dispatch(CopysignTensor, apply(np.copysign, ad, bd), (input, other))
    return dispatch(CopysignScalar, np.copysign(ad, ad.dtype.type(bd)), (input, other))


copysign = declare("copysign", CopysignTensor, CopysignScalar, function=_copysign,
                   inplace="copysign_")


# ---------------------------------------------------------------------------------- fmod
class FmodScalar(Overload):
    """C's fmod by a number: the gradient passes through to x."""

    node_name = "FmodBackward0"
    args = ("self", "other")
    tensor_positions = (0,)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class FmodTensor(Overload):
    """x - y * trunc(x / y): d/dx = 1, d/dy = -trunc(x / y)."""

    node_name = "FmodBackward1"
    args = ("self", "other")
    saved_fields = ("self", "other")
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return (grad if ctx.needs_input_grad[0] else None,
                -grad * (x / y).trunc() if ctx.needs_input_grad[1] else None)


def _fmod(input: Tensor, other) -> Tensor:  # noqa: A002 - torch's names
    """C's remainder: the result has the sign of the dividend (integers stay integers)."""
    ad, bd = operands(input, other, "fmod")
    if input._vc and input._vc[0]:
        read_history(input, other)
    data = _divide(np.fmod, ad, bd, "fmod")
    return dispatch(FmodTensor if type(other) is Tensor else FmodScalar, data, (input, other))


fmod = declare("fmod", FmodScalar, FmodTensor, function=_fmod, inplace="fmod_")


# ---------------------------------------------------------------------------------- fmax / fmin
class Fmax(Overload):
    """The larger of a and b, nan ignored: the gradient goes to the one picked (a on ties)."""

    node_name = "FmaxBackward0"
    args = ("self", "other")
    saved_fields = ("self", "other")
    jvp_zeros = True

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        pick = (a >= b).logical_or(b.isnan())
        return (grad.masked_fill(pick.logical_not(), 0) if ctx.needs_input_grad[0] else None,
                grad.masked_fill(pick, 0) if ctx.needs_input_grad[1] else None)

    @staticmethod
    def jvp(ctx, ta, tb):
        a, b = ctx.saved_tensors
        return tb + (a > b).logical_or(b.isnan()) * (ta - tb)


class Fmin(Overload):
    """The smaller of a and b, nan ignored: the gradient goes to the one picked (a on ties)."""

    node_name = "FminBackward0"
    args = ("self", "other")
    saved_fields = ("self", "other")
    jvp_zeros = True

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        pick = (a <= b).logical_or(b.isnan())
        return (grad.masked_fill(pick.logical_not(), 0) if ctx.needs_input_grad[0] else None,
                grad.masked_fill(pick, 0) if ctx.needs_input_grad[1] else None)

    @staticmethod
    def jvp(ctx, ta, tb):
        a, b = ctx.saved_tensors
        return tb + (a <= b).logical_or(b.isnan()) * (ta - tb)


def _fmax(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002 - torch's names
    """The elementwise maximum; where one is nan, the other."""
    return dispatch(Fmax, apply(np.fmax, *_tensors(input, other, "fmax")), (input, other))


def _fmin(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002 - torch's names
    """The elementwise minimum; where one is nan, the other."""
    return dispatch(Fmin, apply(np.fmin, *_tensors(input, other, "fmin")), (input, other))


fmax = declare("fmax", Fmax, function=_fmax)
fmin = declare("fmin", Fmin, function=_fmin)


# ---------------------------------------------------------------------------------- logaddexp
class Logaddexp(Overload):
    """log(e^a + e^b): d/da = 1 / (1 + e^(b - a)), and alike for b."""

    node_name = "LogaddexpBackward0"
    args = ("self", "other")
    saved_fields = ("self", "other")
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return (grad / (1 + (b - a).exp()) if ctx.needs_input_grad[0] else None,
                grad / (1 + (a - b).exp()) if ctx.needs_input_grad[1] else None)


class Logaddexp2(Overload):
    """log₂(2^a + 2^b): d/da = 1 / (1 + 2^(b - a)), and alike for b."""

    node_name = "Logaddexp2Backward0"
    args = ("self", "other")
    saved_fields = ("self", "other")
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return (grad / (1 + 2 ** (b - a)) if ctx.needs_input_grad[0] else None,
                grad / (1 + 2 ** (a - b)) if ctx.needs_input_grad[1] else None)


def _logaddexp(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002 - torch's names
    """log(e^input + e^other), without overflow."""
    ad, bd = _tensors(input, other, "logaddexp")
    _float_only(ad, "logaddexp")
    return dispatch(Logaddexp, apply(np.logaddexp, ad, bd), (input, other))


def _logaddexp2(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002 - torch's names
    """log₂(2^input + 2^other), without overflow."""
    ad, bd = _tensors(input, other, "logaddexp2")
    _float_only(ad, "logaddexp2")
    return dispatch(Logaddexp2, apply(np.logaddexp2, ad, bd), (input, other))


logaddexp = declare("logaddexp", Logaddexp, function=_logaddexp)
logaddexp2 = declare("logaddexp2", Logaddexp2, function=_logaddexp2)


# ---------------------------------------------------------------------------------- ldexp
class Ldexp(Overload):
    """x * 2^e: d/dx = 2^e, d/de = result * ln 2."""

    node_name = "LdexpBackward0"
    args = ("self", "other")
    saved_fields = ("other", "result")
    saved_for = {"other": "self"}
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        e, result = ctx.saved_tensors
        return (grad * 2 ** e if ctx.needs_input_grad[0] else None,
                grad * result * _LN2 if ctx.needs_input_grad[1] else None)


def _ldexp(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002 - torch's names
    """input * 2**other; integer exponents make 2**other in the default float dtype."""
    if type(input) is not Tensor:
        raise not_a_tensor(input, "ldexp")
    if type(other) is not Tensor:
        raise not_a_tensor(other, "ldexp", "other", 2)
    if (input._vc and input._vc[0]) or (other._vc and other._vc[0]):
        read_history(input, other)
    ed = other._data
    if ed.dtype.kind not in "fV":
        ed = ed.astype(_dtype.get_default_dtype()._np)
    scale = wrap(np.power(ed.dtype.type(2), ed))
    ad, sd = binary_operands(input, scale)
    ad, sd = _to_float(ad, sd)
    with np.errstate(over="ignore", invalid="ignore"):
        return dispatch(Ldexp, apply(np.multiply, ad, sd), (input, other))


ldexp = declare("ldexp", Ldexp, function=_ldexp, inplace="ldexp_")


# ---------------------------------------------------------------------------------- float_power
def _float_power(input, exponent) -> Tensor:  # noqa: A002 - torch's names
    """input ** exponent computed in float64 (torch's pow nodes, on double operands)."""
    if type(input) is not Tensor:
        if type(exponent) is not Tensor:
            raise TypeError("float_power() received an invalid combination of arguments - got "
                            f"({type(input).__name__}, {type(exponent).__name__}), but expected "
                            "one of:\n * (Tensor input, Tensor exponent)\n * (Number self, "
                            "Tensor exponent)\n * (Tensor input, Number exponent)")
        number = as_number(input)
        if number is None:
            raise not_a_tensor(input, "float_power")
        return _pow(float(number), exponent.double())
    if type(exponent) is Tensor:
        return _pow(input.double(), exponent.double())
    number = as_number(exponent)
    if number is None:
        raise not_a_tensor(exponent, "float_power", "exponent", 2)
    return _pow(input.double(), float(number))


def _float_power_into(self: Tensor, exponent) -> Tensor:
    """``float_power_``: only a float64 tensor can hold the result."""
    if self._data.dtype != np.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {_dtype_name(self)} but the "
                           "operation's result requires dtype Double")
    return _float_power(self, exponent)


def _dtype_name(t: Tensor) -> str:
    return _short(t._data)


float_power = declare("float_power", function=_float_power,
                      inplace=(("float_power_", _float_power_into),))


# ---------------------------------------------------------------------------------- nextafter
class Nextafter(Overload):
    """The next representable value after a toward b: the gradient passes to a where a != b."""

    node_name = "NextafterBackward0"
    args = ("self", "other")
    saved_fields = ("self", "other")
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ns = namespace_of(grad)
        return (ns.where(a != b, grad, 0) if ctx.needs_input_grad[0] else None,
                ns.zeros_like(b) if ctx.needs_input_grad[1] else None)


def _nextafter(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002 - torch's names
    """The next floating value after ``input`` in the direction of ``other``."""
    ad, bd = _tensors(input, other, "nextafter")
    _float_only(ad, "nextafter")
    return dispatch(Nextafter, apply(np.nextafter, ad, bd), (input, other))


nextafter = declare("nextafter", Nextafter, function=_nextafter, inplace="nextafter_")


# ---------------------------------------------------------------------------------- integer ops
def _integer_op(name: str, kernel: Callable, doc: str) -> Callable:
    """gcd or lcm: integer tensors only, no derivative."""
    def function(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002 - torch's names
        ad, bd = _tensors(input, other, name)
        if ad.dtype.kind not in "iu":
            raise _no_kernel(name, ad)
        return wrap(apply(kernel, ad, bd))

    function.__doc__ = doc
    return function


gcd = declare("gcd", function=_integer_op("gcd", np.gcd, "The greatest common divisor (>= 0)."),
              inplace="gcd_")
lcm = declare("lcm", function=_integer_op("lcm", np.lcm, "The least common multiple (>= 0)."),
              inplace="lcm_")


class Heaviside(_NoDerivative):
    """The step function: torch gives it no derivative (its node refuses backward)."""

    node_name = "NotImplemented"  # (each overload names its node)
    qualified_name = "ext::autograd::NotImplemented"
    aten = "heaviside"
    args = ("self", "values")

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::heaviside is not implemented")


def _heaviside_kernel(x: np.ndarray, values: np.ndarray) -> np.ndarray:
    # values where x is 0, else whether x is positive (0 for nan, as torch's kernel gives)
    return np.where(x == 0, values, x > 0).astype(x.dtype, copy=False)


def _heaviside(input: Tensor, values: Tensor) -> Tensor:  # noqa: A002 - torch's names
    """The step function: 0 below zero, 1 above, ``values`` at zero; no derivative."""
    if type(input) is not Tensor:
        raise not_a_tensor(input, "heaviside")
    if type(values) is not Tensor:
        raise not_a_tensor(values, "heaviside", "values", 2)
    if input._data.dtype != values._data.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    if (input._vc and input._vc[0]) or (values._vc and values._vc[0]):
        read_history(input, values)
    return dispatch(Heaviside, apply(_heaviside_kernel, input._data, values._data),
                    (input, values))


heaviside = declare("heaviside", function=_heaviside, inplace="heaviside_")


# ---------------------------------------------------------------------------------- lerp
class LerpScalar(Overload):
    """a + w (b - a) for a number w: d/da = 1 - w, d/db = w."""

    node_name = "LerpBackward0"
    args = ("self", "end", "weight")
    tensor_positions = (0, 1)
    saved_attrs = ("weight",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        w = ctx.weight
        return (grad * (1 - float(w)) if ctx.needs_input_grad[0] else None,
                grad * w if ctx.needs_input_grad[1] else None, None)


class LerpTensor(Overload):
    """a + w (b - a) for a tensor w: d/da = 1 - w, d/db = w, d/dw = b - a."""

    node_name = "LerpBackward1"
    args = ("self", "end", "weight")
    saved_fields = ("self", "end", "weight")
    saved_for = {"self": "weight", "end": "weight"}
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        a, b, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (grad * (1 - w) if need[0] else None, grad * w if need[1] else None,
                grad * (b - a) if need[2] else None)


def _lerp_kernel(a: np.ndarray, b: np.ndarray, w) -> np.ndarray:
    """torch's two-sided form: from a for small weights, from b for large ones (exact at
    w = 1); operands that do not broadcast raise torch's error."""
    try:
        diff = b - a
        if type(w) is not np.ndarray:  # (a number: one side for all)
            return a + w * diff if abs(w) < 0.5 else b - diff * (1 - w)
        return np.where(np.abs(w) < 0.5, a + w * diff, b - diff * (1 - w))
    except ValueError:
        raise _shape_error(a, b, w) from None


def _lerp_dtype(name: str, expected: np.ndarray, t: Tensor) -> None:
    if t._data.dtype != expected.dtype:
        raise RuntimeError(f"expected dtype {_C_NAME.get(expected.dtype, _short(expected))} for "
                           f"`{name}` but got dtype {_C_NAME.get(t._data.dtype, _short(t._data))}")


_C_NAME = {np.dtype(np.float64): "double", np.dtype(np.float32): "float",
           np.dtype(np.float16): "c10::Half", np.dtype(np.int64): "long int"}


def _lerp(input: Tensor, end: Tensor, weight) -> Tensor:  # noqa: A002 - torch's names
    """input + weight * (end - input), weight a number or a tensor."""
    if type(input) is not Tensor:
        raise not_a_tensor(input, "lerp")
    if type(end) is not Tensor:
        raise not_a_tensor(end, "lerp", "end", 2)
    if (input._vc and input._vc[0]) or (end._vc and end._vc[0]) or \
            type(weight) is Tensor and weight._vc and weight._vc[0]:
        read_history(input, end, weight)
    ad = input._data
    _lerp_dtype("end", ad, end)
    if type(weight) is Tensor:
        _lerp_dtype("weight", ad, weight)
        if ad.dtype.kind not in "fV":
            raise NotImplementedError(
                f'"lerp_kernel_tensor" not implemented for \'{_short(ad)}\'')
        data = _lerp_kernel(ad, end._data, weight._data)
        return dispatch(LerpTensor, data, (input, end, weight))
    number = weight if type(weight) is float else as_number(weight)
    if number is None:
        raise not_a_tensor(weight, "lerp", "weight", 3)
    if ad.dtype.kind not in "fV":
        raise NotImplementedError(f'"lerp_kernel_scalar" not implemented for \'{_short(ad)}\'')
    return dispatch(LerpScalar, _lerp_kernel(ad, end._data, number), (input, end, weight))


lerp = declare("lerp", LerpScalar, LerpTensor, function=_lerp, inplace="lerp_")


# ------------------------------------------------------------------------------ addcmul / addcdiv
class Addcmul(Overload):
    """self + value * t1 * t2: d/dself = 1, d/dt1 = value * t2, d/dt2 = value * t1."""

    node_name = "AddcmulBackward0"
    args = ("self", "tensor1", "tensor2", "value")
    tensor_positions = (0, 1, 2)
    saved_fields = ("tensor1", "tensor2")
    saved_for = {"tensor1": "tensor2", "tensor2": "tensor1"}
    saved_attrs = ("value",)
    jvp = ELEMENTWISE

    @staticmethod
    def forward(x, tensor1, tensor2, value=1):
        return x.addcmul(tensor1, tensor2, value=value)

    @staticmethod
    def backward(ctx, grad):
        t1, t2 = ctx.saved_tensors
        need, value = ctx.needs_input_grad, ctx.value
        return (grad if need[0] else None, grad * (t2 * value) if need[1] else None,
                grad * (t1 * value) if need[2] else None, None)


class Addcdiv(Overload):
    """self + value * t1 / t2: d/dt1 = value / t2, d/dt2 = -value * t1 / t2²."""

    node_name = "AddcdivBackward0"
    args = ("self", "tensor1", "tensor2", "value")
    tensor_positions = (0, 1, 2)
    saved_fields = ("tensor1", "tensor2")
    saved_for = {"tensor1": "tensor2"}
    saved_attrs = ("value",)
    jvp = ELEMENTWISE

    @staticmethod
    def forward(x, tensor1, tensor2, value=1):
        return x.addcdiv(tensor1, tensor2, value=value)

    @staticmethod
    def backward(ctx, grad):
        t1, t2 = ctx.saved_tensors
        need, value = ctx.needs_input_grad, ctx.value
        return (grad if need[0] else None, grad * (value / t2) if need[1] else None,
                -grad * (value * t1 / (t2 * t2)) if need[2] else None, None)


def _three(name: str, input, tensor1, tensor2, value) -> tuple:
    """The three operands promoted together, and value checked, as torch's addcmul/addcdiv."""
    if type(input) is not Tensor or type(tensor1) is not Tensor or type(tensor2) is not Tensor:
        for arg, t, pos in (("input", input, 1), ("tensor1", tensor1, 2),
                            ("tensor2", tensor2, 3)):
            if type(t) is not Tensor:
                raise not_a_tensor(t, name, arg, pos)
    if input._vc and input._vc[0] or tensor1._vc and tensor1._vc[0] or \
            tensor2._vc and tensor2._vc[0]:
        read_history(input, tensor1, tensor2)
    number = value if type(value) is int or type(value) is float else as_number(value)
    if number is None:
        raise TypeError(f"{name}(): argument 'value' must be Number, not {type(value).__name__}")
    if type(number) is complex:
        raise RuntimeError("value cannot be converted to type float without overflow")
    ad, d1, d2 = input._data, tensor1._data, tensor2._data
    if ad.dtype == d1.dtype == d2.dtype:
        return ad, d1, d2, number
    f = _dtype.FROM_NUMPY
    rt = _dtype.result_type(f[ad.dtype], ad.ndim, f[d1.dtype], d1.ndim)
    rt = _dtype.result_type(rt, max(ad.ndim, d1.ndim), f[d2.dtype], d2.ndim)._np
    return (ad.astype(rt, copy=False), d1.astype(rt, copy=False), d2.astype(rt, copy=False),
            number)


def _addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:  # noqa: A002
    """input + value * tensor1 * tensor2."""
    ad, t1, t2, number = _three("addcmul", input, tensor1, tensor2, value)
    if ad.dtype == np.bool_:
        raise NotImplementedError("\"addcmul_cpu_out\" not implemented for 'Bool'")
    if ad.dtype.kind in "iu":
        number = int(number)  # (torch casts value to the integer dtype)
    try:
        data = ad + number * t1 * t2 if number != 1 else ad + t1 * t2
    except ValueError:
        raise _shape_error(ad, t1, t2) from None
    return dispatch(Addcmul, data.astype(ad.dtype, copy=False),
                    (input, tensor1, tensor2, value))


def _addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:  # noqa: A002
    """input + value * tensor1 / tensor2 (floating tensors only)."""
    if type(tensor1) is Tensor and type(tensor2) is Tensor and \
            tensor1._data.dtype.kind in "biu" and tensor2._data.dtype.kind in "biu":
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))."
            "to(input.dtype) using PyTorch 0.4.1 or newer, and the new behavior can be "
            "implemented as (input + value * torch.true_divide(tensor1, tensor2)).to(input.dtype)"
            " using PyTorch 1.5 or newer.")
    ad, t1, t2, number = _three("addcdiv", input, tensor1, tensor2, value)
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            data = ad + number * (t1 / t2) if number != 1 else ad + t1 / t2
    except ValueError:
        raise _shape_error(ad, t1, t2) from None
    return dispatch(Addcdiv, data.astype(ad.dtype, copy=False),
                    (input, tensor1, tensor2, value))


def _shape_error(*arrays) -> RuntimeError:
    """torch's message for the first pair of operands that do not broadcast."""
    a = arrays[0]
    for b in arrays[1:]:
        if type(b) is not np.ndarray:
            continue
        try:
            a = np.broadcast_to(a, np.broadcast_shapes(a.shape, b.shape))
        except ValueError:
            return broadcast_error(a, b)
    return RuntimeError("operands could not be broadcast together")



addcmul = declare("addcmul", Addcmul, function=_addcmul, inplace="addcmul_")
addcdiv = declare("addcdiv", Addcdiv, function=_addcdiv, inplace="addcdiv_")
