"""Comparisons, logical and bitwise ops, and checks of values (isnan, allclose, ...)."""

from __future__ import annotations

import numpy as np

from .... import _dtype
from ...._args import is_torch_tensor, mixed_operands
from ...._state import STATE
from ...._tensor import Tensor, wrap
from ....autograd.graph import gradient_edge
from ..._op import ELEMENTWISE, Overload, declare, dispatch
from .._builtin import binary_operands, not_differentiable_checks
from ._common import apply, augmented_operator, refuse_uncastable


# ---------------------------------------------------------------------------------- comparisons
def _compare(name: str, kernel):
    def compare(a, b) -> Tensor:
        ops = binary_operands(a, b) if type(a) is Tensor else None
        if ops is None:
            if is_torch_tensor(b):  # (NotImplemented would compare identities: False)
                raise mixed_operands(name)
            return NotImplemented
        return wrap(apply(kernel, *ops))

    def function(a, b) -> Tensor:
        out = compare(a, b)
        if out is NotImplemented:
            got = f"{type(a).__name__}, {type(b).__name__}"
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            f"({got}), but expected one of:\n * (Tensor input, Tensor other, *, "
                            "Tensor out = None)\n * (Tensor input, Number other, *, Tensor out "
                            "= None)\n")
        return out

    compare.__doc__ = f"Elementwise ``{name}`` comparison, a bool tensor (not differentiable)."
    function.__doc__ = compare.__doc__
    # (the operator is the comparison itself: it returns NotImplemented for what it does not
    # take; the function raises torch's TypeError instead)
    return declare(name, function=function, methods=(name, (f"__{name}__", compare)),
                   inplace=f"{name}_")


eq = _compare("eq", np.equal)
ne = _compare("ne", np.not_equal)
lt = _compare("lt", np.less)
le = _compare("le", np.less_equal)
gt = _compare("gt", np.greater)
ge = _compare("ge", np.greater_equal)


def _logical(name: str, kernel):
    def parser(position: int):
        # (where torch's message counts ``other``: 1 for the method, 2 for ext.<name>)
        def logical(a, b) -> Tensor:
            if not isinstance(b, Tensor):
                raise TypeError(f"{name}(): argument 'other' (position {position}) must be "
                                f"Tensor, not {type(b).__name__}")
            return wrap(apply(kernel, a._data, b._data))

        logical.__name__ = name
        logical.__doc__ = f"Elementwise ``{name}`` of the truth values, a bool tensor."
        return logical

    return declare(name, function=parser(2), methods={name: parser(1)}, inplace=f"{name}_")


logical_and = _logical("logical_and", np.logical_and)
logical_or = _logical("logical_or", np.logical_or)
logical_xor = _logical("logical_xor", np.logical_xor)


def _elementwise(name: str, kernel, doc: str):
    def elementwise(x: Tensor) -> Tensor:
        return wrap(kernel(x._data))

    elementwise.__doc__ = doc
    return declare(name, function=elementwise, inplace=f"{name}_")


logical_not = _elementwise("logical_not", np.logical_not,
                           "Elementwise ``not`` of the truth values, a bool tensor.")


def _bitwise(name: str, kernel, symbol: str, operator: str):
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

    def bitwise_into(a: Tensor, b) -> Tensor:
        refuse_uncastable(a, b)
        return bitwise(a, b)

    def function(a, b) -> Tensor:
        # (torch's function takes a number first, as the operation is symmetric)
        out = bitwise(a, b) if type(a) is Tensor or type(b) is not Tensor else bitwise(b, a)
        if out is NotImplemented:
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            f"({type(a).__name__}, {type(b).__name__})")
        return out

    bitwise.__doc__ = f"Elementwise ``{symbol}`` of bool or integer tensors."
    function.__doc__ = bitwise.__doc__
    bitwise_into.__name__ = name
    augmented = augmented_operator(symbol, f"{name}_", bitwise_into)
    # (the operators return NotImplemented for what they do not take; the function raises)
    return declare(name, function=function,
                   methods=((name, function), (f"__{operator}__", bitwise),
                            (f"__r{operator}__", bitwise), (f"__i{operator}__", augmented)),
                   inplace=((f"{name}_", bitwise_into),))


bitwise_and = _bitwise("bitwise_and", np.bitwise_and, "&", "and")
bitwise_or = _bitwise("bitwise_or", np.bitwise_or, "|", "or")
bitwise_xor = _bitwise("bitwise_xor", np.bitwise_xor, "^", "xor")


def _bitwise_not(x: Tensor) -> Tensor:
    """Elementwise ``~``: logical not of bools, bitwise not of integers."""
    d = x._data
    if d.dtype.kind == "f":
        not_differentiable_checks("bitwise_not", x)
        raise NotImplementedError('"bitwise_not_cpu" not implemented for '
                                  f"'{_dtype.FROM_NUMPY[d.dtype]._short}'")
    return wrap(np.invert(d))


def _invert(x: Tensor) -> Tensor:
    """``~x``: ``bitwise_not``, which the operator refuses for floating tensors with a
    TypeError."""
    if x._data.dtype.kind == "f":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return wrap(np.invert(x._data))


bitwise_not = declare("bitwise_not", function=_bitwise_not,
                      methods={"bitwise_not": _bitwise_not, "__invert__": _invert},
                      inplace="bitwise_not_")


class NanToNum(Overload):
    """nan, +inf and -inf replaced by numbers: the gradient passes only where x was finite."""

    node_name = "NanToNumBackward0"
    args = ("self", "nan", "posinf", "neginf")
    saved_fields = ("self",)
    tensor_positions = (0,)
    jvp = ELEMENTWISE  # tangent * isfinite(x)

    @staticmethod
    def backward(ctx, grad):
        # torch's grad * isfinite(x): a nan or inf gradient at a non-finite x gives nan
        (x,) = ctx.saved_tensors
        return grad * x.isfinite(), None, None, None


def _nan_to_num(x: Tensor, nan: float = 0.0, posinf=None, neginf=None) -> Tensor:
    """x with nan, +inf, -inf replaced (by 0 and the dtype's largest and smallest values)."""
    return dispatch(NanToNum, np.nan_to_num(x._data, nan=nan, posinf=posinf, neginf=neginf),
                    (x, nan, posinf, neginf))


nan_to_num = declare("nan_to_num", NanToNum, function=_nan_to_num, inplace="nan_to_num_")


isnan = _elementwise("isnan", np.isnan, "Where x is nan (a bool tensor).")
isinf = _elementwise("isinf", np.isinf, "Where x is +inf or -inf (a bool tensor).")
isfinite = _elementwise("isfinite", np.isfinite,
                        "Where x is neither nan nor infinite (a bool tensor).")


def _equal(a: Tensor, b: Tensor) -> bool:
    """True if both have the same shape and the same values (nan is never equal)."""
    return a._data.shape == b._data.shape and bool(np.array_equal(a._data, b._data))


def _allclose(a: Tensor, b: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
              equal_nan: bool = False) -> bool:
    """True if |a - b| <= atol + rtol * |b| everywhere (broadcasting)."""
    return bool(isclose(a, b, rtol, atol, equal_nan)._data.all())


def _isclose(a: Tensor, b: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> Tensor:
    """Where |a - b| <= atol + rtol * |b| (a bool tensor); both must have the same dtype."""
    for i, (name, t) in enumerate((("input", a), ("other", b))):
        if not isinstance(t, Tensor):
            raise TypeError(f"isclose(): argument '{name}' (position {i + 1}) must be Tensor, "
                            f"not {type(t).__name__}")
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if tol < 0:
            raise RuntimeError(f"{name} must be greater than or equal to zero, but got {tol}")
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


equal = declare("equal", function=_equal)
isclose = declare("isclose", function=_isclose)
allclose = declare("allclose", function=_allclose)
