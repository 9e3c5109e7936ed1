"""Floor division, remainder and bit shifts: the ops behind ``//``, ``%``, ``<<`` and ``>>``.

Integer division by zero raises (torch's ``ZeroDivisionError``); floor_divide, and remainder
with a number first, have no derivative: their node refuses backward, as torch's
``NotImplemented`` node does, and forward AD refuses them when they run.
"""

from __future__ import annotations

import numpy as np

from .... import _dtype
from ...._tensor import Tensor, wrap
from ..._op import ELEMENTWISE, Overload, declare, dispatch
from .._builtin import binary_operands, namespace_of
from ._common import apply, augmented_operator, operands, refuse_uncastable


def _short(d: np.ndarray) -> str:
    return _dtype.FROM_NUMPY[d.dtype]._short


def _not_for(kernel: str, d: np.ndarray) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}_cpu" not implemented for \'{_short(d)}\'')


def _divide(kernel: str, ad: np.ndarray, bd, name: str) -> np.ndarray:
    """``kernel`` over the promoted operands, with torch's refusals: no bool kernel, and no
    integer division by zero."""
    if ad.dtype == np.bool_:
        raise _not_for(name, ad)
    if ad.dtype.kind in "iu" and np.any(np.asarray(bd) == 0):
        raise RuntimeError("ZeroDivisionError")
    with np.errstate(divide="ignore", invalid="ignore"):
        return apply(kernel, ad, bd)


# ---------------------------------------------------------------------------------- remainder
class RemainderScalar(Overload):
    """x % number = x - number * floor(x / number): the gradient passes through to x."""

    node_name = "RemainderBackward0"
    args = ("self", "other")
    tensor_positions = (0,)
    jvp = ELEMENTWISE  # the tangent itself

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class RemainderTensor(Overload):
    """x % y = x - y * floor(x / y): d/dx = 1, d/dy = -floor(x / y)."""

    node_name = "RemainderBackward1"
    args = ("self", "other")
    saved_fields = ("self", "other")

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        gy = -grad * (x / y).floor() if ctx.needs_input_grad[1] else None
        return grad if ctx.needs_input_grad[0] else None, gy

    @staticmethod
    def jvp(ctx, tx, ty):
        x, y = ctx.saved_tensors
        if ty is None:
            return tx
        term = ty * (x / y).floor()
        return -term if tx is None else tx - term


class _NoDerivative(Overload):
    """An op torch gives no derivative: its node refuses backward, forward AD refuses the op."""

    node_name = "NotImplemented"
    qualified_name = "ext::autograd::NotImplemented"
    args = ("self", "other")
    double_backward = False
    aten = ""  # (the aten op, for the messages)

    @classmethod
    def tangents(cls, args: tuple, out, tangents: tuple):
        """torch's refusal: the op has no forward-mode formula."""
        raise NotImplementedError(f"Trying to use forward AD with aten::{cls.aten} that does "
                                  "not support it.")


class RemainderScalarTensor(_NoDerivative):
    """number % x (``remainder.Scalar_Tensor``): no derivative."""

    node_name = "NotImplemented"  # (each overload names its node)
    qualified_name = "ext::autograd::NotImplemented"
    aten = "remainder"
    args = ("other", "self")  # (the tensor is given first)
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::remainder is not implemented")


def _remainder(a, b) -> Tensor:
    """Python's modulo: the result has the sign of the divisor."""
    ad, bd = operands(a, b, "remainder")
    data = _divide(np.remainder, ad, bd, "remainder")
    return dispatch(RemainderTensor if type(b) is Tensor else RemainderScalar, data, (a, b))


def _remainder_function(input, other) -> Tensor:  # noqa: A002 - torch's names
    """``ext.remainder``: either argument may be the number."""
    if type(input) is not Tensor and type(other) is Tensor:
        return _rremainder(other, input)
    return _remainder(input, other)


def _rremainder(x: Tensor, other) -> Tensor:
    """``other % x`` for a number ``other``."""
    xd, number = binary_operands(x, other)
    return dispatch(RemainderScalarTensor,
                    _divide(np.remainder, np.asarray(number, xd.dtype), xd, "remainder"),
                    (x, other))


def _remainder_into(a: Tensor, b) -> Tensor:
    refuse_uncastable(a, b)
    return _remainder(a, b)


# ---------------------------------------------------------------------------------- floor_divide
class FloorDivide(_NoDerivative):
    """a // b, rounded toward minus infinity: no derivative."""

    node_name = "NotImplemented"
    qualified_name = "ext::autograd::NotImplemented"
    aten = "floor_divide"
    tensor_positions = (0, 1)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::floor_divide is not implemented")


class FloorDivideInplace(FloorDivide):
    """a //= b: torch's messages name the in-place op."""

    node_name = "NotImplemented"
    qualified_name = "ext::autograd::NotImplemented"
    aten = "floor_divide_"

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::floor_divide_ is not implemented")


def _floor_divide(a, b, node: type = FloorDivide) -> Tensor:
    """Division rounded toward minus infinity (Python's ``//``)."""
    ad, bd = operands(a, b, "floor_divide")
    return dispatch(node, _divide(np.floor_divide, ad, bd, "div_floor"), (a, b))


def _rfloor_divide(x: Tensor, other) -> Tensor:
    """``other // x`` for a number ``other``."""
    xd, number = binary_operands(x, other)
    return dispatch(FloorDivide, _divide(np.floor_divide, np.asarray(number, xd.dtype), xd,
                                         "div_floor"), (x, other))


def _floor_divide_into(a: Tensor, b) -> Tensor:
    refuse_uncastable(a, b)
    return _floor_divide(a, b, FloorDivideInplace)


# ------------------------------------------------------------------------ div(rounding_mode=)
class DivRounding(Overload):
    """div(a, b, rounding_mode=...): 'trunc' and 'floor' are piecewise constant (zero
    gradient), None is true division; torch records this overload whenever the keyword is
    given."""

    node_name = "DivBackward2"
    args = ("self", "other", "rounding_mode")
    saved_fields = ("self", "other")
    saved_for = {"self": "other"}
    saved_attrs = ("rounding_mode",)
    tensor_positions = (0, 1)
    jvp = ELEMENTWISE
    keywords = ("rounding_mode",)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad[:2]
        if ctx.rounding_mode is not None:
            zeros = namespace_of(grad).zeros_like
            return (zeros(grad) if need_a else None, zeros(b) * grad if need_b else None, None)
        return (grad / b if need_a else None, -grad * (a / b / b) if need_b else None, None)


_ROUNDING = (None, "trunc", "floor")


def _trunc_divide(ad: np.ndarray, bd) -> np.ndarray:
    """Division rounded toward zero; integers exactly, as C's ``/``."""
    if ad.dtype.kind == "f":
        return np.trunc(np.true_divide(ad, bd))
    q = np.floor_divide(ad, bd)
    return q + ((np.remainder(ad, bd) != 0) & ((ad < 0) != (np.asarray(bd) < 0)))


def div_rounding(a, b, rounding_mode) -> Tensor:
    """``div(a, b, rounding_mode=...)``: None divides truly, 'trunc' rounds toward zero and
    'floor' toward minus infinity, integers staying integers."""
    if rounding_mode not in _ROUNDING:
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    ad, bd = operands(a, b, "div")
    if rounding_mode is None:
        if ad.dtype.kind not in "fV":
            ad = ad.astype(_dtype.get_default_dtype()._np)
            bd = bd.astype(ad.dtype) if type(bd) is np.ndarray else bd
        with np.errstate(divide="ignore", invalid="ignore"):
            data = apply(np.true_divide, ad, bd)
    else:
        kernel = np.floor_divide if rounding_mode == "floor" else _trunc_divide
        data = _divide(kernel, ad, bd, f"div_{rounding_mode}")
    if type(b) is not Tensor:  # (torch saves a number operand as a wrapped 0-dim tensor)
        b = wrap(np.asarray(b))
    return dispatch(DivRounding, data, (a, b, rounding_mode))


# ---------------------------------------------------------------------------------- shifts
def _shift(name: str, kernel: str, left: bool):
    def shift_data(ad: np.ndarray, bd) -> np.ndarray:
        if ad.dtype.kind not in "iu":
            raise _not_for(kernel, ad)
        amount = np.asarray(bd)
        # torch's kernel: a shift by a negative amount or by the width or more shifts every bit
        # out (a right shift of a negative value leaves its sign bits, -1)
        outside = (amount < 0) | (amount >= 8 * ad.dtype.itemsize)
        safe = np.where(outside, 0, amount).astype(ad.dtype)
        shifted = apply(np.left_shift if left else np.right_shift, ad, safe)
        filled = 0 if left or ad.dtype.kind == "u" else np.where(ad < 0, -1, 0)
        return np.where(outside, filled, shifted).astype(ad.dtype)

    def shift(a, b) -> Tensor:
        ad, bd = operands(a, b, name)
        return wrap(shift_data(ad, bd))  # (integers only: nothing to record)

    def rshift(x: Tensor, other) -> Tensor:
        xd, number = binary_operands(x, other)
        return wrap(shift_data(np.asarray(number, xd.dtype), xd))

    def shift_into(a: Tensor, b) -> Tensor:
        refuse_uncastable(a, b)
        return shift(a, b)

    shift.__doc__ = f"Elementwise {'left' if left else 'right'} shift of an integer tensor."
    shift_into.__name__ = name
    return shift, rshift, shift_into


def _declare(name: str, *overloads: type, function, symbol: str, operator: str, reflected,
             into, functions: dict | None = None):
    """Declare ``name`` with its operator (``__mod__``), reflected operator, in-place method
    ``<name>_`` (running ``into``) and augmented operator, which writes as the method does."""
    augmented = augmented_operator(symbol, f"{name}_", into)
    return declare(name, *overloads, function=function, functions=functions,
                   methods=(name, (f"__i{operator}__", augmented)),
                   operator=f"__{operator}__", reflected=(f"__r{operator}__", reflected),
                   inplace=((f"{name}_", into),))


# (the nodes without a derivative are not declared overloads: there is no rule to check)
remainder = _declare("remainder", RemainderScalar, RemainderTensor, function=_remainder,
                     symbol="%", operator="mod", reflected=_rremainder, into=_remainder_into,
                     functions={"remainder": _remainder_function})
floor_divide = _declare("floor_divide", function=_floor_divide, symbol="//",
                        operator="floordiv", reflected=_rfloor_divide, into=_floor_divide_into)

_lshift, _rlshift, _lshift_into = _shift("bitwise_left_shift", "lshift", left=True)
_rshift, _rrshift, _rshift_into = _shift("bitwise_right_shift", "rshift", left=False)
bitwise_left_shift = _declare("bitwise_left_shift", function=_lshift, symbol="<<",
                              operator="lshift", reflected=_rlshift, into=_lshift_into)
bitwise_right_shift = _declare("bitwise_right_shift", function=_rshift, symbol=">>",
                               operator="rshift", reflected=_rrshift, into=_rshift_into)
