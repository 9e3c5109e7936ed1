"""Ops that pick between values: clamp and its variants, maximum/minimum, where."""

from __future__ import annotations

import numpy as np

from ... import _dtype
from ..._state import STATE
from ..._tensor import Tensor, wrap
from .._builtin import BuiltinFunction, binary_operands, namespace_of, record
from ._common import apply, broadcast_error, edge, recording
from .logical import logical_and, logical_or


# ---------------------------------------------------------------------------------- clamp
def _inside(x: Tensor, lo, hi) -> Tensor:
    """The bool mask where lo <= x <= hi (a missing bound does not limit)."""
    mask = None
    if lo is not None:
        mask = x >= lo
    if hi is not None:
        upper = x <= hi
        mask = upper if mask is None else logical_and(mask, upper)
    return mask


class ClampScalar(BuiltinFunction):
    """clamp(x, min, max) with number bounds: the gradient passes where min <= x <= max."""

    node_name = "ClampBackward1"
    saved_fields = ("self",)
    saved_attrs = ("min", "max")
    tensor_positions = (0,)

    @staticmethod
    def forward(x, min, max):  # noqa: A002 - torch's names
        return x.clamp(min, max)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.min, ctx.max = inputs[1], inputs[2]

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return where(_inside(x, ctx.min, ctx.max), grad, 0.0), None, None


class ClampTensor(BuiltinFunction):
    """clamp(x, min, max) with tensor bounds: the gradient goes to x inside the bounds and to
    the bound that is active outside them."""

    node_name = "ClampBackward0"
    saved_fields = ("self", "min", "max")

    @staticmethod
    def forward(x, min, max):  # noqa: A002 - torch's names
        return x.clamp(min, max)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad):
        x, lo, hi = ctx.saved_tensors
        gx = glo = ghi = None
        if ctx.needs_input_grad[0]:
            gx = where(_inside(x, lo, hi), grad, 0.0)
        if ctx.needs_input_grad[1]:
            low = x < lo
            if hi is not None:
                # min gets the gradient only where it is strictly below max (torch's rule).
                low = logical_and(low, lo < hi)
            glo = where(low, grad, 0.0)
        if ctx.needs_input_grad[2]:
            above = x > hi
            if lo is not None:
                # Where min > max the result is max, whatever x is.
                above = logical_or(above, hi < lo)
            ghi = where(above, grad, 0.0)
        return gx, glo, ghi


class ClampMinScalar(BuiltinFunction):
    """clamp_min(x, min) with a number."""

    node_name = "ClampMinBackward0"
    saved_fields = ("self",)
    saved_attrs = ("min",)
    tensor_positions = (0,)

    @staticmethod
    def forward(x, min):  # noqa: A002
        return x.clamp_min(min)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.min = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return where(x >= ctx.min, grad, 0.0), None


class ClampMaxScalar(BuiltinFunction):
    """clamp_max(x, max) with a number."""

    node_name = "ClampMaxBackward0"
    saved_fields = ("self",)
    saved_attrs = ("max",)
    tensor_positions = (0,)

    @staticmethod
    def forward(x, max):  # noqa: A002
        return x.clamp_max(max)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.max = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return where(x <= ctx.max, grad, 0.0), None


class ClampMinTensor(BuiltinFunction):
    """clamp_min(x, min) with a tensor bound."""

    node_name = "ClampMinBackward1"
    saved_fields = ("self", "min")

    @staticmethod
    def forward(x, min):  # noqa: A002
        return x.clamp_min(min)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad):
        x, lo = ctx.saved_tensors
        return (where(x >= lo, grad, 0.0) if ctx.needs_input_grad[0] else None,
                where(x < lo, grad, 0.0) if ctx.needs_input_grad[1] else None)


class ClampMaxTensor(BuiltinFunction):
    """clamp_max(x, max) with a tensor bound."""

    node_name = "ClampMaxBackward1"
    saved_fields = ("self", "max")

    @staticmethod
    def forward(x, max):  # noqa: A002
        return x.clamp_max(max)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad):
        x, hi = ctx.saved_tensors
        return (where(x <= hi, grad, 0.0) if ctx.needs_input_grad[0] else None,
                where(x > hi, grad, 0.0) if ctx.needs_input_grad[1] else None)


def _clamp_data(d: np.ndarray, lo, hi) -> np.ndarray:
    out = d
    if lo is not None:
        out = np.maximum(out, lo)
    if hi is not None:
        out = np.minimum(out, hi)
    return out if out is not d else d.copy()


def _bound(value, x: Tensor) -> Tensor | None:
    # A number bound next to a tensor bound acts as a 0-d tensor of x's dtype.
    if value is None or type(value) is Tensor:
        return value
    return wrap(np.asarray(value, x._data.dtype))


def _refuse_bool(d: np.ndarray, lo, hi) -> None:
    # torch has no kernel clamping a bool tensor by bool numbers (an int bound promotes).
    if d.dtype == np.bool_ and all(b is None or isinstance(b, (bool, np.bool_)) for b in (lo, hi)):
        kernel = "clamp" if lo is not None and hi is not None else \
            "clamp_min" if lo is not None else "clamp_max"
        raise NotImplementedError(f"\"{kernel}_scalar_cpu\" not implemented for 'Bool'")


def _as_number(bound):
    if type(bound) is not Tensor:
        return bound
    if bound._data.ndim or bound._requires_grad:
        raise TypeError("clamp() received an invalid combination of arguments - got (Tensor, "
                        "number, Tensor): bounds are both numbers or both tensors (a 0-d tensor "
                        "that does not require grad passes as a number)")
    return bound._data.item()


def clamp(x: Tensor, min=None, max=None) -> Tensor:  # noqa: A002 - torch's names
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
        lo, hi = _bound(min, x), _bound(max, x)
        d = x._data
        dt = _dtype.FROM_NUMPY[d.dtype]
        # Paired by position, not identity: min and max may be the same tensor object.
        for b, kernel in ((lo, np.maximum), (hi, np.minimum)):
            if b is not None:
                dt = _dtype.result_type(dt, d.ndim, b.dtype, b._data.ndim)
                d = apply(kernel, d, b._data)
        if lo is not None and hi is not None and dt._np == np.bool_:
            raise NotImplementedError("\"clamp_cpu\" not implemented for 'Bool'")
        out = wrap(np.asarray(d, dt._np))
        if STATE.grad_enabled and out._data.dtype.kind == "f" and any(
                type(t) is Tensor and t._requires_grad for t in (x, lo, hi)) or STATE.special:
            record(ClampTensor, out, (x, lo, hi), (x, lo, hi))
        return out
    d = x._data
    _refuse_bool(d, min, max)
    if d.dtype.kind != "f" and any(isinstance(b, float) for b in (min, max)):
        d = d.astype(_dtype.get_default_dtype()._np)
    out = wrap(_clamp_data(d, min, max))
    if recording(x, None) and out._data.dtype.kind == "f" or STATE.special:
        record(ClampScalar, out, (x,), (x, min, max))
    return out


def clamp_min(x: Tensor, min) -> Tensor:  # noqa: A002
    """max(x, min) elementwise."""
    if type(min) is Tensor:
        xd, md = binary_operands(x, min)
        out = wrap(apply(np.maximum, xd, md))
        if recording(x, min) and out._data.dtype.kind == "f" or STATE.special:
            record(ClampMinTensor, out, (x, min), (x, min))
        return out
    _refuse_bool(x._data, min, None)
    xd, _ = binary_operands(x, min)
    out = wrap(_clamp_data(xd, min, None))
    if recording(x, None) and out._data.dtype.kind == "f" or STATE.special:
        record(ClampMinScalar, out, (x,), (x, min))
    return out


def clamp_max(x: Tensor, max) -> Tensor:  # noqa: A002
    """min(x, max) elementwise."""
    if type(max) is Tensor:
        xd, md = binary_operands(x, max)
        out = wrap(apply(np.minimum, xd, md))
        if recording(x, max) and out._data.dtype.kind == "f" or STATE.special:
            record(ClampMaxTensor, out, (x, max), (x, max))
        return out
    _refuse_bool(x._data, None, max)
    xd, _ = binary_operands(x, max)
    out = wrap(_clamp_data(xd, None, max))
    if recording(x, None) and out._data.dtype.kind == "f" or STATE.special:
        record(ClampMaxScalar, out, (x,), (x, max))
    return out


# ---------------------------------------------------------------------------------- max / min
class Maximum(BuiltinFunction):
    """max(a, b) elementwise: the gradient goes to the larger, split evenly at ties."""

    node_name = "MaximumBackward0"
    saved_fields = ("self", "other")

    @staticmethod
    def forward(a, b):
        return namespace_of(a).maximum(a, b)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return _tie_split(grad, a, b, a < b), _tie_split(grad, a, b, a > b)


class Minimum(Maximum):
    """min(a, b) elementwise: the gradient goes to the smaller, split evenly at ties."""

    node_name = "MinimumBackward0"

    @staticmethod
    def forward(a, b):
        return namespace_of(a).minimum(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return _tie_split(grad, a, b, a > b), _tie_split(grad, a, b, a < b)


def _tie_split(grad: Tensor, a: Tensor, b: Tensor, loses: Tensor) -> Tensor:
    # torch's formula: half at ties, zero only where the operand loses (at a nan, which neither
    # wins nor loses, both operands get the gradient).
    return namespace_of(grad).where(a == b, grad / 2, grad).masked_fill(loses, 0)


class MaskedFillScalar(BuiltinFunction):
    """masked_fill(mask, number): the gradient passes where the mask is False."""

    node_name = "MaskedFillBackward0"
    saved_fields = ("mask",)
    tensor_positions = (0,)

    @staticmethod
    def forward(x, mask, value):
        return x.masked_fill(mask, value)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[1])

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return grad.masked_fill(mask, 0), None, None

    @staticmethod
    def jvp(args, out, tangents):
        return tangents[0].masked_fill(args[1], 0)


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
    def jvp(args, out, tangents):
        x, mask, _ = args
        tx, _, tv = tangents
        result = None if tx is None else tx.masked_fill(mask, 0)
        if tv is not None:
            term = namespace_of(tv).where(mask, tv, 0.0).expand(out.shape)
            result = term if result is None else result + term
        return result


_MASK_TYPES = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
               "uint8": "unsigned char", "float32": "float", "float64": "double"}


def masked_fill(x: Tensor, mask: Tensor, value) -> Tensor:
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
        out = wrap(np.asarray(np.where(md, fill, d), order="C"))
    except ValueError:
        raise broadcast_error(d, md) from None
    if type(value) is Tensor:
        if STATE.grad_enabled and out._data.dtype.kind == "f" and (
                x._requires_grad or value._requires_grad) or STATE.special:
            record(MaskedFillTensor, out, (x, value), (x, mask, value))
    elif x._requires_grad and STATE.grad_enabled and out._data.dtype.kind == "f" or \
            STATE.special:
        record(MaskedFillScalar, out, (x,), (x, mask, value))
    return out


def _extremum(op: type, kernel, a, b) -> Tensor:
    if type(a) is not Tensor or type(b) is not Tensor:
        bad = b if type(a) is Tensor else a
        raise TypeError(f"{op.node_name[:7].lower()}(): argument 'other' (position 2) must be "
                        f"Tensor, not {type(bad).__name__}")
    ad, bd = binary_operands(a, b)
    out = wrap(apply(kernel, ad, bd))
    if recording(a, b) and out._data.dtype.kind == "f" or STATE.special:
        record(op, out, (a, b), (a, b))
    return out


def maximum(a: Tensor, b: Tensor) -> Tensor:
    """The larger of ``a`` and ``b`` elementwise (NaN propagates)."""
    return _extremum(Maximum, np.maximum, a, b)


def minimum(a: Tensor, b: Tensor) -> Tensor:
    """The smaller of ``a`` and ``b`` elementwise (NaN propagates)."""
    return _extremum(Minimum, np.minimum, a, b)



# ---------------------------------------------------------------------------------- where
class Where(BuiltinFunction):
    """where(cond, a, b): the gradient goes to a where cond holds and to b elsewhere."""

    node_name = "WhereBackward0"
    saved_fields = ("condition",)
    tensor_positions = (1, 2)

    @staticmethod
    def forward(condition, a, b):
        return namespace_of(a).where(condition, a, b)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (cond,) = ctx.saved_tensors
        # A plain 0, not grad * 0: a nan in grad must not reach the branch not taken.
        return (None,
                where(cond, grad, 0.0) if ctx.needs_input_grad[1] else None,
                where(cond, 0.0, grad) if ctx.needs_input_grad[2] else None)


def _whereoperands(a, b):
    """where's value operands with torch's promotion (two numbers give the default dtype)."""
    if type(a) is Tensor:
        return binary_operands(a, b)
    if type(b) is Tensor:
        bd, ad = binary_operands(b, a)
        return ad, bd
    dt = _dtype.result_type(_dtype.scalar_dtype(a), 0, _dtype.scalar_dtype(b), 0)
    return np.asarray(a, dt._np), np.asarray(b, dt._np)


def where(condition: Tensor, a, b) -> Tensor:
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
    out = wrap(np.where(cd, ad, bd))
    if STATE.grad_enabled and out._data.dtype.kind == "f" and (
            (type(a) is Tensor and a._requires_grad) or (type(b) is Tensor and b._requires_grad)) \
            or STATE.special:
        record(Where, out, (edge(a), edge(b)), (condition, a, b))
    return out


def _where_method(self: Tensor, condition: Tensor, other) -> Tensor:
    """``where(condition, self, other)``."""
    return where(condition, self, other)


