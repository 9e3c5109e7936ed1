"""Ops that pick between values: clamp and its variants, maximum/minimum, masked_fill, where."""

from __future__ import annotations

import numpy as np

from .... import _dtype
from ...._args import not_a_tensor
from ...._tensor import Tensor
from ..._op import ELEMENTWISE, Overload, declare, dispatch
from .. import inplace  # (bound before it is loaded whole when it is imported first)
from .._builtin import binary_operands, namespace_of
from ._common import apply, broadcast_error


# ---------------------------------------------------------------------------------- clamp
def _inside(x, lo, hi):
    """The bool mask where lo <= x <= hi (a missing bound does not limit)."""
    mask = None
    if lo is not None:
        mask = x >= lo
    if hi is not None:
        upper = x <= hi
        mask = upper if mask is None else mask.logical_and(upper)
    return mask


def _clamp_jvp(x, lo, hi, tx, tlo, thi):
    # torch's clamp_jvp: a comparison with nan is False, so a nan input takes the tangent of
    # whichever branch its comparisons fall through to; a missing tangent is zero.
    where = namespace_of(x).where
    tx, tlo, thi = (0.0 if t is None else t for t in (tx, tlo, thi))
    if lo is not None and hi is not None:
        return where(lo > hi, thi, where(x < lo, tlo, where(x > hi, thi, tx)))
    if lo is not None:
        return where(x > lo, tx, tlo)
    return where(x < hi, tx, thi)


def _zero_if_none(tangent):
    return 0.0 if tangent is None else tangent


def _refuse_none(name: str, bound, arg: str) -> None:
    # torch's parser matches neither the Tensor nor the Number overload for None, whatever the
    # tensor's dtype
    if bound is None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"(NoneType), but expected one of:\n * (Tensor {arg})\n * (Number {arg})")


class ClampScalar(Overload):
    """clamp(x, min, max) with number bounds: the gradient passes where min <= x <= max."""

    node_name = "ClampBackward1"
    args = ("self", "min", "max")
    tensor_positions = (0,)
    saved_fields = ("self",)
    saved_attrs = ("min", "max")
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return namespace_of(grad).where(_inside(x, ctx.min, ctx.max), grad, 0.0), None, None


class ClampTensor(Overload):
    """clamp(x, min, max) with tensor bounds: the gradient goes to x inside the bounds and to
    the bound that is active outside them."""

    node_name = "ClampBackward0"
    args = ("self", "min", "max")
    saved_fields = ("self", "min", "max")

    @staticmethod
    def backward(ctx, grad):
        x, lo, hi = ctx.saved_tensors
        where = namespace_of(grad).where
        gx = glo = ghi = None
        if ctx.needs_input_grad[0]:
            gx = where(_inside(x, lo, hi), grad, 0.0)
        if ctx.needs_input_grad[1]:
            low = x < lo
            if hi is not None:
                # min gets the gradient only where it is strictly below max (torch's rule).
                low = low.logical_and(lo < hi)
            glo = where(low, grad, 0.0)
        if ctx.needs_input_grad[2]:
            above = x > hi
            if lo is not None:
                # Where min > max the result is max, whatever x is.
                above = above.logical_or(hi < lo)
            ghi = where(above, grad, 0.0)
        return gx, glo, ghi

    @staticmethod
    def jvp(ctx, tx, tlo, thi):
        x, lo, hi = ctx.saved_tensors
        return _clamp_jvp(x, lo, hi, tx, tlo, thi)


def _refuse_bool(d: np.ndarray, lo, hi) -> None:
    # torch has no kernel clamping a bool tensor by bool numbers (an int bound promotes).
    if d.dtype == np.bool_ and all(b is None or isinstance(b, (bool, np.bool_)) for b in (lo, hi)):
        kernel = "clamp" if lo is not None and hi is not None else \
            "clamp_min" if lo is not None else "clamp_max"
        raise NotImplementedError(f"\"{kernel}_scalar_cpu\" not implemented for 'Bool'")


def _clamp_data(d: np.ndarray, lo, hi) -> np.ndarray:
    if d.dtype.kind == "V":  # (bfloat16: torch rounds the bounds to it)
        lo = None if lo is None else np.asarray(lo, d.dtype)
        hi = None if hi is None else np.asarray(hi, d.dtype)
    out = d
    if lo is not None:
        out = np.maximum(out, lo)
    if hi is not None:
        out = np.minimum(out, hi)
    return out if out is not d else d.copy()


def _as_number(bound):
    if type(bound) is not Tensor:
        return bound
    if bound._data.ndim or bound._requires_grad:
        raise TypeError("clamp() received an invalid combination of arguments - got (Tensor, "
                        "number, Tensor): bounds are both numbers or both tensors (a 0-d tensor "
                        "that does not require grad passes as a number)")
    return bound._data.item()


def _clamp(x: Tensor, min=None, max=None) -> Tensor:  # noqa: A002 - torch's names
    """x limited to [min, max] (either bound may be None; numbers or tensors)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if type(min) is Tensor or type(max) is Tensor:
        if (min is not None and type(min) is not Tensor) or \
                (max is not None and type(max) is not Tensor):
            # torch then takes the (Number min, Number max) overload, where a 0-d tensor that
            # does not require grad passes as its number.
            min, max = _as_number(min), _as_number(max)
    if type(min) is Tensor or type(max) is Tensor:
        d = x._data
        dt = _dtype.FROM_NUMPY[d.dtype]
        # Paired by position, not identity: min and max may be the same tensor object.
        for b, kernel in ((min, np.maximum), (max, np.minimum)):
            if b is not None:
                dt = _dtype.result_type(dt, d.ndim, b.dtype, b._data.ndim)
                d = apply(kernel, d, b._data)
        if min is not None and max is not None and dt._np == np.bool_:
            raise NotImplementedError("\"clamp_cpu\" not implemented for 'Bool'")
        return dispatch(ClampTensor, np.asarray(d, dt._np), (x, min, max))
    d = x._data
    _refuse_bool(d, min, max)
    if d.dtype.kind not in "fV" and any(isinstance(b, float) for b in (min, max)):
        d = d.astype(_dtype.get_default_dtype()._np)
    return dispatch(ClampScalar, _clamp_data(d, min, max), (x, min, max))


clamp = declare("clamp", ClampScalar, ClampTensor, function=_clamp, methods=("clamp", "clip"),
                functions=("clamp", "clip"), inplace=("clamp_", "clip_"))


class ClampMinScalar(Overload):
    """clamp_min(x, min) with a number."""

    node_name = "ClampMinBackward0"
    args = ("self", "min")
    tensor_positions = (0,)
    saved_fields = ("self",)
    saved_attrs = ("min",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return namespace_of(grad).where(x >= ctx.min, grad, 0.0), None


class ClampMinTensor(Overload):
    """clamp_min(x, min) with a tensor bound."""

    node_name = "ClampMinBackward1"
    args = ("self", "min")
    saved_fields = ("self", "min")

    @staticmethod
    def backward(ctx, grad):
        x, lo = ctx.saved_tensors
        where = namespace_of(grad).where
        return (where(x >= lo, grad, 0.0) if ctx.needs_input_grad[0] else None,
                where(x < lo, grad, 0.0) if ctx.needs_input_grad[1] else None)

    @staticmethod
    def jvp(ctx, tx, tlo):
        # torch's rule for clamp_min (unlike clamp's): x's tangent where x >= min, ties
        # included; a nan x takes min's
        x, lo = ctx.saved_tensors
        return namespace_of(x).where(x >= lo, _zero_if_none(tx), _zero_if_none(tlo))


def _clamp_min(x: Tensor, min) -> Tensor:  # noqa: A002
    """max(x, min) elementwise."""
    _refuse_none("clamp_min", min, "min")
    if type(min) is Tensor:
        xd, md = binary_operands(x, min)
        return dispatch(ClampMinTensor, apply(np.maximum, xd, md), (x, min))
    _refuse_bool(x._data, min, None)
    xd, _ = binary_operands(x, min)
    return dispatch(ClampMinScalar, _clamp_data(xd, min, None), (x, min))


clamp_min = declare("clamp_min", ClampMinScalar, ClampMinTensor, function=_clamp_min,
                    inplace="clamp_min_")


class ClampMaxScalar(Overload):
    """clamp_max(x, max) with a number."""

    node_name = "ClampMaxBackward0"
    args = ("self", "max")
    tensor_positions = (0,)
    saved_fields = ("self",)
    saved_attrs = ("max",)
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return namespace_of(grad).where(x <= ctx.max, grad, 0.0), None


class ClampMaxTensor(Overload):
    """clamp_max(x, max) with a tensor bound."""

    node_name = "ClampMaxBackward1"
    args = ("self", "max")
    saved_fields = ("self", "max")

    @staticmethod
    def backward(ctx, grad):
        x, hi = ctx.saved_tensors
        where = namespace_of(grad).where
        return (where(x <= hi, grad, 0.0) if ctx.needs_input_grad[0] else None,
                where(x > hi, grad, 0.0) if ctx.needs_input_grad[1] else None)

    @staticmethod
    def jvp(ctx, tx, thi):
        # x's tangent where x <= max, ties included (as clamp_min's)
        x, hi = ctx.saved_tensors
        return namespace_of(x).where(x <= hi, _zero_if_none(tx), _zero_if_none(thi))


def _clamp_max(x: Tensor, max) -> Tensor:  # noqa: A002
    """min(x, max) elementwise."""
    _refuse_none("clamp_max", max, "max")
    if type(max) is Tensor:
        xd, md = binary_operands(x, max)
        return dispatch(ClampMaxTensor, apply(np.minimum, xd, md), (x, max))
    _refuse_bool(x._data, None, max)
    xd, _ = binary_operands(x, max)
    return dispatch(ClampMaxScalar, _clamp_data(xd, None, max), (x, max))


clamp_max = declare("clamp_max", ClampMaxScalar, ClampMaxTensor, function=_clamp_max,
                    inplace="clamp_max_")


# ---------------------------------------------------------------------------------- max / min
class Maximum(Overload):
    """max(a, b) elementwise: the gradient goes to the larger, split evenly at ties."""

    node_name = "MaximumBackward0"
    args = ("self", "other")
    saved_fields = ("self", "other")

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return _tie_split(grad, a, b, a < b), _tie_split(grad, a, b, a > b)

    @staticmethod
    def jvp(ctx, ta, tb):
        a, b = ctx.saved_tensors
        return _extremum_jvp(a, b, ta, tb, a > b)


class Minimum(Maximum):
    """min(a, b) elementwise: the gradient goes to the smaller, split evenly at ties."""

    node_name = "MinimumBackward0"

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return _tie_split(grad, a, b, a > b), _tie_split(grad, a, b, a < b)

    @staticmethod
    def jvp(ctx, ta, tb):
        a, b = ctx.saved_tensors
        return _extremum_jvp(a, b, ta, tb, a < b)


def _tie_split(grad, a, b, loses):
    # torch's formula: half at ties, zero only where the operand loses (at a nan, which neither
    # wins nor loses, both operands get the gradient).
    return namespace_of(grad).where(a == b, grad / 2, grad).masked_fill(loses, 0)


def _extremum_jvp(a, b, ta, tb, wins):
    # torch's: tb + w * (ta - tb), w = 1 where a wins, 1/2 at a tie, else 0 (a nan tangent on
    # either side spreads, as 0 * nan); a missing tangent drops out of the sums, as torch's
    # zero tensors do. (w is exact in any floating dtype.)
    w = namespace_of(a).where(a == b, 0.5, wins.to((tb if ta is None else ta).dtype))
    if tb is None:
        return w * ta
    return tb + w * (-tb if ta is None else ta - tb)


def _extremum(name: str, ov: type, kernel, a, b) -> Tensor:
    if type(a) is not Tensor or type(b) is not Tensor:
        bad = b if type(a) is Tensor else a
        raise not_a_tensor(bad, name, "other", 2)
    ad, bd = binary_operands(a, b)
    return dispatch(ov, apply(kernel, ad, bd), (a, b))


def _maximum(a: Tensor, b: Tensor) -> Tensor:
    """The larger of ``a`` and ``b`` elementwise (NaN propagates)."""
    return _extremum("maximum", Maximum, np.maximum, a, b)


def _minimum(a: Tensor, b: Tensor) -> Tensor:
    """The smaller of ``a`` and ``b`` elementwise (NaN propagates)."""
    return _extremum("minimum", Minimum, np.minimum, a, b)


maximum = declare("maximum", Maximum, function=_maximum)
minimum = declare("minimum", Minimum, function=_minimum)


# ---------------------------------------------------------------------------------- masked_fill
class MaskedFillScalar(Overload):
    """masked_fill(mask, number): the gradient passes where the mask is False."""

    node_name = "MaskedFillBackward0"
    args = ("self", "mask", "value")
    tensor_positions = (0,)
    saved_fields = ("mask",)
    jvp = ELEMENTWISE  # the tangent, 0 where the mask holds

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return grad.masked_fill(mask, 0), None, None


class MaskedFillTensor(MaskedFillScalar):
    """masked_fill(mask, 0-d tensor): the value gets the sum of the gradient where the mask
    holds."""

    node_name = "MaskedFillBackward1"
    tensor_positions = (0, 2)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        gx = grad.masked_fill(mask, 0) if ctx.needs_input_grad[0] else None
        gv = namespace_of(grad).where(mask, grad, 0.0).sum() if ctx.needs_input_grad[2] else None
        return gx, None, gv

    @staticmethod
    def jvp(ctx, tx, _, tv):
        # (the value's term is expanded to the output's shape by forward AD)
        (mask,) = ctx.saved_tensors
        result = None if tx is None else tx.masked_fill(mask, 0)
        if tv is not None:
            term = namespace_of(tv).where(mask, tv, 0.0)
            result = term if result is None else result + term
        return result


_MASK_TYPES = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
               "uint8": "unsigned char", "float32": "float", "float64": "double"}


def _masked_fill(x: Tensor, mask: Tensor, value) -> Tensor:
    """``x`` with ``value`` (a number or a 0-d tensor) where ``mask`` holds."""
    md = mask._data
    if md.dtype != np.bool_:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{_MASK_TYPES.get(str(md.dtype), str(md.dtype))}")
    d = x._data
    if type(value) is Tensor:
        if value._data.ndim:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value._data.ndim} dimension(s).")
        fill = value._data.astype(d.dtype)
    else:
        fill = np.asarray(value).astype(d.dtype)
    try:
        # torch fills a contiguous clone, whatever the input's layout
        out = np.asarray(np.where(md, fill, d), order="C")
    except ValueError:
        raise broadcast_error(d, md) from None
    return dispatch(MaskedFillTensor if type(value) is Tensor else MaskedFillScalar, out,
                    (x, mask, value))


def _masked_fill_(x: Tensor, mask: Tensor, value) -> Tensor:
    inplace.warn_expanded(x, "masked_fill_", "tensor[mask] = scalar", 5)
    return _masked_fill(x, mask, value)


# (writing into an expanded tensor is deprecated but allowed, as in torch)
_masked_fill_.writes_through_aliases = True
masked_fill = declare("masked_fill", MaskedFillScalar, MaskedFillTensor, function=_masked_fill,
                      inplace=(("masked_fill_", _masked_fill_),))


# ---------------------------------------------------------------------------------- where
class Where(Overload):
    """where(cond, a, b): the gradient goes to a where cond holds and to b elsewhere."""

    node_name = "WhereBackward0"
    args = ("condition", "self", "other")
    tensor_positions = (1, 2)
    saved_fields = ("condition",)

    @staticmethod
    def backward(ctx, grad):
        (cond,) = ctx.saved_tensors
        where = namespace_of(grad).where
        # A plain 0, not grad * 0: a nan in grad must not reach the branch not taken.
        return (None,
                where(cond, grad, 0.0) if ctx.needs_input_grad[1] else None,
                where(cond, 0.0, grad) if ctx.needs_input_grad[2] else None)

    @staticmethod
    def jvp(ctx, _, ta, tb):
        (cond,) = ctx.saved_tensors
        return namespace_of(cond).where(cond, 0.0 if ta is None else ta,
                                        0.0 if tb is None else tb)


def _whereoperands(a, b):
    """where's value operands with torch's promotion (two numbers give the default dtype)."""
    if type(a) is Tensor:
        return binary_operands(a, b)
    if type(b) is Tensor:
        bd, ad = binary_operands(b, a)
        return ad, bd
    dt = _dtype.result_type(_dtype.scalar_dtype(a), 0, _dtype.scalar_dtype(b), 0)
    return np.asarray(a, dt._np), np.asarray(b, dt._np)


def _where(condition: Tensor, a, b) -> Tensor:
    """Elements of ``a`` where ``condition`` holds, else of ``b``."""
    cd = condition._data
    if cd.dtype != np.bool_:
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {_dtype.FROM_NUMPY[cd.dtype]._short}")
    ad, bd = _whereoperands(a, b)
    if type(ad) is not np.ndarray:
        ad = np.asarray(ad, bd.dtype)
    if type(bd) is not np.ndarray:
        bd = np.asarray(bd, ad.dtype)
    try:
        values = np.broadcast_shapes(ad.shape, bd.shape)
    except ValueError:
        raise broadcast_error(ad, bd) from None
    try:
        np.broadcast_shapes(cd.shape, values)
    except ValueError:
        raise broadcast_error(cd, np.empty(values)) from None
    return dispatch(Where, np.where(cd, ad, bd), (condition, a, b))


def _where_method(self: Tensor, condition: Tensor, other) -> Tensor:
    """``where(condition, self, other)``."""
    return _where(condition, self, other)


where = declare("where", Where, function=_where, methods=(("where", _where_method),))
