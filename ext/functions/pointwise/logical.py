"""Comparisons, logical and bitwise ops, and checks of values (isnan, allclose, ...)."""

from __future__ import annotations

import numpy as np

from ... import _dtype
from ..._state import STATE
from ..._tensor import Tensor, wrap
from ...autograd.graph import gradient_edge
from .._builtin import BuiltinFunction, binary_operands, not_differentiable_checks, record
from ._common import apply, recording


# ---------------------------------------------------------------------------------- comparisons
def _compare(kernel, name: str):
    def compare(a, b) -> Tensor:
        ops = binary_operands(a, b) if type(a) is Tensor else None
        if ops is None:
            return NotImplemented
        return wrap(apply(kernel, *ops))

    compare.__name__ = name
    compare.__doc__ = f"Elementwise ``{name}`` comparison, a bool tensor (not differentiable)."
    return compare


def _logical(kernel, name: str, position: int = 2):
    # ``position``: where torch's message counts ``other`` (1 for the method, 2 for ext.<name>).
    def logical(a, b) -> Tensor:
        if not isinstance(b, Tensor):
            raise TypeError(f"{name}(): argument 'other' (position {position}) must be Tensor, "
                            f"not {type(b).__name__}")
        return wrap(apply(kernel, a._data, b._data))

    logical.__name__ = name
    logical.__doc__ = f"Elementwise ``{name}`` of the truth values, a bool tensor."
    return logical


logical_and = _logical(np.logical_and, "logical_and")
logical_or = _logical(np.logical_or, "logical_or")
logical_xor = _logical(np.logical_xor, "logical_xor")
LOGICAL_METHODS = {name: _logical(kernel, name, 1) for name, kernel in (
    ("logical_and", np.logical_and), ("logical_or", np.logical_or),
    ("logical_xor", np.logical_xor))}


def logical_not(x: Tensor) -> Tensor:
    """Elementwise ``not`` of the truth values, a bool tensor."""
    return wrap(np.logical_not(x._data))


def _bitwise(kernel, name: str, symbol: str):
    def bitwise(a, b) -> Tensor:
        if type(a) is not Tensor:
            return NotImplemented
        if type(b) is not Tensor:
            if not isinstance(b, (bool, int, float)):
                return NotImplemented
            if not isinstance(b, float):
                b = wrap(np.asarray(b))
        ad, bd = binary_operands(a, b)
        if ad.dtype.kind == "f":
            # (only a floating input can require grad or carry a tangent)
            not_differentiable_checks(name, a, b)
            # torch checks the shapes before the dtype.
            apply(np.broadcast_arrays, ad, bd)
            raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                      f"'{_dtype.FROM_NUMPY[ad.dtype]._short}'")
        return wrap(apply(kernel, ad, bd))

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
        not_differentiable_checks("bitwise_not", x)
        raise NotImplementedError('"bitwise_not_cpu" not implemented for '
                                  f"'{_dtype.FROM_NUMPY[d.dtype]._short}'")
    return wrap(np.invert(d))


def invert(x: Tensor) -> Tensor:
    """``~x``: ``bitwise_not``, which the operator refuses for floating tensors with a
    TypeError."""
    if x._data.dtype.kind == "f":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return wrap(np.invert(x._data))


eq = _compare(np.equal, "eq")
ne = _compare(np.not_equal, "ne")
lt = _compare(np.less, "lt")
le = _compare(np.less_equal, "le")
gt = _compare(np.greater, "gt")
ge = _compare(np.greater_equal, "ge")



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
        # torch's grad * isfinite(x): a nan or inf gradient at a non-finite x gives nan
        (x,) = ctx.saved_tensors
        return grad * isfinite(x), None, None, None


def nan_to_num(x: Tensor, nan: float = 0.0, posinf=None, neginf=None) -> Tensor:
    """x with nan, +inf, -inf replaced (by 0 and the dtype's largest and smallest values)."""
    d = x._data
    out = wrap(np.nan_to_num(d, nan=nan, posinf=posinf, neginf=neginf))
    if recording(x, None) and d.dtype.kind == "f" or STATE.special:
        record(NanToNum, out, (x,), (x, nan, posinf, neginf))
    return out


def isnan(x: Tensor) -> Tensor:
    """Where x is nan (a bool tensor)."""
    return wrap(np.isnan(x._data))


def isinf(x: Tensor) -> Tensor:
    """Where x is +inf or -inf (a bool tensor)."""
    return wrap(np.isinf(x._data))


def isfinite(x: Tensor) -> Tensor:
    """Where x is neither nan nor infinite (a bool tensor)."""
    return wrap(np.isfinite(x._data))


def equal(a: Tensor, b: Tensor) -> bool:
    """True if both have the same shape and the same values (nan is never equal)."""
    return a._data.shape == b._data.shape and bool(np.array_equal(a._data, b._data))


def allclose(a: Tensor, b: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """True if |a - b| <= atol + rtol * |b| everywhere (broadcasting)."""
    return bool(isclose(a, b, rtol, atol, equal_nan)._data.all())


def isclose(a: Tensor, b: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """Where |a - b| <= atol + rtol * |b| (a bool tensor); both must have the same dtype."""
    for i, (name, t) in enumerate((("input", a), ("other", b))):
        if not isinstance(t, Tensor):
            raise TypeError(f"isclose(): argument '{name}' (position {i + 1}) must be Tensor, "
                            f"not {type(t).__name__}")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"{_dtype.FROM_NUMPY[a._data.dtype]._short} did not match "
                           f"{_dtype.FROM_NUMPY[b._data.dtype]._short}")
    # torch compares with ``a == b`` first (which checks the shapes), then computes the error
    # with differentiable ops (``rtol * b``, then ``a - b``), which read the history of an input
    # that requires grad: a stale view raises there as in any op.
    out = wrap(apply(lambda u, v: np.isclose(u, v, rtol=rtol, atol=atol, equal_nan=equal_nan),
                     a._data, b._data))
    if (rtol or atol) and STATE.grad_enabled and not STATE.inference:
        for t in (b, a):
            if t._requires_grad:
                gradient_edge(t)
    return out


