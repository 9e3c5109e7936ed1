"""In-place ops: writing, overlap checks, and rebasing history.

An in-place op runs its out-of-place op on an alias of the tensor's current value, writes the
result into the tensor's storage, bumps the version counter shared with its views, and gives the
tensor the op's node as its new grad_fn. When the tensor is a view, the *base* gets the new
history instead, through the ``CopySlices`` node of ``ext.autograd.views``.
"""

from __future__ import annotations

import warnings
import weakref

import numpy as np

from ..._args import not_a_tensor
from ..._arrays import _repeats_elements, write_array
from ..._dtype import FROM_NUMPY
from ..._factories import fill_number
from ..._state import STATE
from ..._tensor import Tensor, bump_version, views_follow_base, wrap
from ...autograd.graph import (
    Node,
    OutputsPackedLater,
    SavedTensor,
    move_retains_grad,
    output_meta,
)
from ...autograd.views import (  # noqa: F401 - the view machinery, re-exported for the ops
    MULTI_OUTPUT,
    check_inplace,
    copy_slices,
    make_view,
    point_saved_outputs,
    refresh_view,
)
from .._op import ELEMENTWISE, JOINTLY_LINEAR, Overload, declare, dispatch
from ._builtin import namespace_of
from .pointwise._common import broadcast_error

__all__ = ["apply_inplace", "check_inplace", "make_view", "MULTI_OUTPUT"]

# ---------------------------------------------------------------------------------- writing
def _write(t: Tensor, result: Tensor, through_alias: bool = False) -> None:
    """Copy ``result`` into t's storage, with torch's checks on shape and dtype."""
    rd, td = result._data, t._data
    if rd.shape != td.shape:
        if np.broadcast_shapes(rd.shape, td.shape) != td.shape:
            raise RuntimeError(f"output with shape {list(td.shape)} doesn't match the broadcast "
                               f"shape {list(np.broadcast_shapes(rd.shape, td.shape))}")
    rt, tt = FROM_NUMPY[rd.dtype], FROM_NUMPY[td.dtype]
    if rt._category > tt._category:
        raise RuntimeError(f"result type {rt._short} can't be cast to the desired output type "
                           f"{tt._short}")
    # An expand is read-only in NumPy. torch refuses a write into one whose elements repeat
    # (a stride 0 over a size above 1) unless the op skips that check (fill_, zero_, and
    # indexing writes, which torch deprecates but allows); other expands are written.
    if not td.flags.writeable and _repeats_elements(td) and not through_alias:
        raise RuntimeError(_INTERNAL_OVERLAP)
    if not write_array(td, rd):
        raise RuntimeError(_INTERNAL_OVERLAP)


_INTERNAL_OVERLAP = ("unsupported operation: more than one element of the written-to tensor "
                     "refers to a single memory location. Please clone() the tensor before "
                     "performing the operation.")


def warn_expanded(x: Tensor, op: str, example: str, stacklevel: int = 3) -> None:
    """torch's deprecation warning for an indexing write into a tensor whose elements repeat."""
    if _repeats_elements(x._data):
        warnings.warn(f"Use of {op} on expanded tensors is deprecated. Please clone() the tensor "
                      "before performing this operation. This also applies to advanced indexing "
                      f"e.g. {example}", UserWarning, stacklevel=stacklevel)


def _alias(t: Tensor) -> Tensor:
    """A new tensor object for t's current value, history and tangent, with a counter of its
    own."""
    a = wrap(t._data)
    fw = getattr(t, "_fw_grad", None)
    if fw is not None:
        from ...autograd.forward_ad import tangent_of

        tangent = tangent_of(t)
        if tangent is not None:
            a._fw_grad = (fw[0], tangent, 0)
    a._grad_fn = t._grad_fn
    a._output_nr = t._output_nr
    a._requires_grad = t._requires_grad
    ref = getattr(t, "_grad_acc", None)
    if ref is not None:
        a._grad_acc = ref
    return a


def _keep_value(old: Tensor) -> None:
    """Give ``old`` (an alias of a tensor about to be written) its own copy of the value, and
    of the tangent, which the write would otherwise overwrite in place."""
    old._data = old._data.copy()
    fw = getattr(old, "_fw_grad", None)
    if fw is not None:
        from ...autograd.forward_ad import _untracked

        old._fw_grad = (fw[0], _untracked(fw[1].clone), fw[2])


def _saves(node: Node, t: Tensor) -> bool:
    saved = getattr(node, "_saved", None) or ()
    return any(s is t or (isinstance(s, SavedTensor) and s._tensor is t) for s in saved)


_OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to tensor "
            "refer to a single memory location. Please clone() the tensor before performing the "
            "operation.")


def check_overlap(t: Tensor, op, inputs) -> None:
    """torch's refusal of an in-place write whose input partially overlaps the written tensor
    (the same elements in the same layout, as in ``x.add_(x)``, are fine). An op with rules of
    its own checks them itself (``op.check_overlap``)."""
    own = getattr(op, "check_overlap", None)
    if own is not None:
        own(t, inputs)
        return
    td = t._data
    for a in inputs:
        if type(a) is Tensor and np.may_share_memory(td, a._data) and a._data is not td and \
                _partial_overlap(td, a._data) and not getattr(op, "reads_inputs_first", False):
            raise RuntimeError(_OVERLAP)


def refuse_any_overlap(t: Tensor, inputs) -> None:
    """The stricter rule of some ops (index_put_): no input may share any memory with ``t``."""
    td = t._data
    for a in inputs:
        for b in (a if isinstance(a, tuple) else (a,)):
            if type(b) is Tensor and (b is t or np.shares_memory(td, b._data)):
                raise RuntimeError(_OVERLAP)  # (t itself overlaps even when empty)


def refuse_partial_overlap(t: Tensor, a: Tensor) -> None:
    """The usual rule for one input: it may be ``t``'s very elements, not part of them."""
    if np.may_share_memory(t._data, a._data) and a._data is not t._data and \
            _partial_overlap(t._data, a._data):
        raise RuntimeError(_OVERLAP)


def _partial_overlap(a: np.ndarray, b: np.ndarray) -> bool:
    # torch's get_overlap_status: only tensors whose elements tile a memory range without gaps
    # or repeats are compared (others are "too hard" and allowed).
    if not a.size or not b.size or not _dense(a) or not _dense(b):
        return False
    a0, b0 = a.__array_interface__["data"][0], b.__array_interface__["data"][0]
    a1, b1 = a0 + a.nbytes, b0 + b.nbytes
    if a0 == b0 and a1 == b1:
        return a.shape != b.shape or a.strides != b.strides
    return a0 < b1 and b0 < a1


def _dense(d: np.ndarray) -> bool:
    if d.flags.c_contiguous or d.flags.f_contiguous:
        return True
    expected = d.itemsize
    for size, stride in sorted((p for p in zip(d.shape, d.strides) if p[0] != 1),
                               key=lambda p: p[1]):
        if stride != expected:
            return False
        expected *= size
    return True


def apply_inplace(t: Tensor, op, *args, **kwargs) -> Tensor:
    """Modify ``t`` in place to ``op(t, *args, **kwargs)`` with torch's autograd semantics."""
    requires_grad = t._requires_grad
    if not requires_grad and (op is not _copied or t._data.dtype.kind == "f"):
        # (torch's copy_ into an integer or bool tensor ignores a source that requires grad)
        for a in (*args, *kwargs.values()) if kwargs else args:
            if type(a) is Tensor and a._requires_grad:
                requires_grad = True
                break
    check_inplace(t, requires_grad)
    if args:
        check_overlap(t, op, args)
    if kwargs:
        check_overlap(t, op, kwargs.values())
    recording = requires_grad and STATE.grad_enabled and not (STATE.special and STATE.inference)
    if not recording:
        if not kwargs and len(args) == 1 and not STATE.special and _write_direct(t, op, args[0]):
            return t
        prev = STATE.grad_enabled
        STATE.grad_enabled = False
        try:
            result = op(t, *args, **kwargs)
        finally:
            STATE.grad_enabled = prev
        _write(t, result, getattr(op, "writes_through_aliases", False))
        bump_version(t)
        if STATE.special and STATE.fw_level is not None and not STATE.inference:
            from ...autograd.forward_ad import write_tangent

            write_tangent(t, result)
        return t
    info = getattr(t, "_view", None)
    if info is not None:
        refresh_view(t)
    old = _alias(t)
    hooks = STATE.saved_hooks if STATE.special else None
    if hooks is not None:
        # The op may save its input through saved-tensor hooks, which keep whatever the pack
        # hook returned (often that very tensor): it must hold the value from before the write.
        # Its output is packed below, once written.
        _keep_value(old)
        STATE.saved_hooks = OutputsPackedLater(hooks)
        try:
            result = op(old, *args, **kwargs)
        finally:
            STATE.saved_hooks = hooks
    else:
        result = op(old, *args, **kwargs)
    node = result._grad_fn
    if node is not None and _saves(node, old):
        # The op keeps the value from before the write (torch saves a clone of the original).
        _keep_value(old)
    _write(t, result, getattr(op, "writes_through_aliases", False))
    bump_version(t)
    if STATE.special and STATE.fw_level is not None and not STATE.inference:
        from ...autograd.forward_ad import write_tangent

        write_tangent(t, result)
    if node is None:
        return t
    if info is None:
        _rebase(t, node)
    else:
        copy_slices(t, info, node)
        _saved_outputs_follow_view(node, t)
    if hooks is not None:
        for s in node._saved:
            if isinstance(s, SavedTensor) and s._is_output and s._unpack is None:
                s._set_hooks(t, *hooks)
    return t


def _write_direct(t: Tensor, op, other) -> bool:
    """Untracked ``t op= other`` for + - * / straight into t's storage, when t's dtype holds the
    result (an optimizer's step is this case). False when the general path is needed."""
    ufunc = _DIRECT.get(op.__name__)
    if ufunc is None:
        return False
    d = t._data
    if d.dtype.kind != "f":
        # Integer and bool tensors take the general path, which has torch's dtype checks.
        return False
    od = other._data if type(other) is Tensor else other
    if type(other) is Tensor:
        if od.dtype != d.dtype:
            return False
    elif type(other) is not float:
        return False
    try:
        if ufunc is np.true_divide:
            with np.errstate(divide="ignore", invalid="ignore"):
                ufunc(d, od, out=d)
        else:
            ufunc(d, od, out=d)
    except ValueError:
        return False
    bump_version(t)
    return True


# (by the declared op's name: the functions themselves are made after this module)
_DIRECT = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide}


def _rebase(t: Tensor, node: Node) -> None:
    """Make ``node`` the grad_fn of ``t`` (which the op's output was only standing in for)."""
    move_retains_grad(t, node, 0)
    t._grad_fn = node
    t._output_nr = 0
    node._out_meta = output_meta(t._data)
    point_saved_outputs(node, t)
    if not t._requires_grad:
        t._requires_grad = True
        views_follow_base(t)


def _saved_outputs_follow_view(node: Node, t: Tensor) -> None:
    # As in torch, the op's saved output (view ``t`` at its new version) refers weakly to the
    # view's new grad_fn, which lives as long as the view (or a pack hook's copy of it) does.
    fn = t._grad_fn
    if fn is None:
        return
    follows = False
    for s in getattr(node, "_saved", None) or ():
        if isinstance(s, SavedTensor) and s._is_output:
            s._view_fn = weakref.ref(fn)
            follows = True
    if follows and STATE.fw_level is not None:
        # Under forward AD the op's tangent is made from that result, and the base's tangent
        # keeps it: the view's grad_fn lives as long as the base's tangent does.
        from ...autograd.forward_ad import hold

        hold(t._view.base, fn)


# ---------------------------------------------------------------------------------- fill, copy
class Zero(Overload):
    """zero_(): the old value does not matter, so its gradient is zero."""

    node_name = "ZeroBackward0"
    jvp = ELEMENTWISE  # zeros

    @staticmethod
    def backward(ctx, grad):
        return namespace_of(grad).zeros_like(grad)


class FillScalar(Zero):
    """fill_(number)."""

    node_name = "FillBackward2"
    args = ("self", "value")
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad):
        return namespace_of(grad).zeros_like(grad), None


class FillTensor(Overload):
    """fill_(0-d tensor): the value gets the sum of the gradient."""

    node_name = "FillBackward3"
    args = ("self", "value")
    jvp = JOINTLY_LINEAR  # the value's tangent, everywhere

    @staticmethod
    def backward(ctx, grad):
        return (namespace_of(grad).zeros_like(grad) if ctx.needs_input_grad[0] else None,
                grad.sum() if ctx.needs_input_grad[1] else None)


class Copy(Overload):
    """copy_(src): the gradient goes to src (summed to its shape and cast to its dtype, as the
    engine does for every input)."""

    node_name = "CopyBackwards"
    qualified_name = "ext::autograd::CopyBackwards"
    args = ("self", "src")
    jvp = JOINTLY_LINEAR  # src's tangent, broadcast (its dtype: ``tangents``)
    tangent_in_output_dtype = False  # (``tangents`` gives torch's tangent dtype)

    @classmethod
    def tangents(cls, args: tuple, out, tangents: tuple):
        """The jointly linear rule, in the dtype torch gives: a target without a tangent takes
        the source's, in the source's dtype; one broadcast to the target's shape is laid out
        anew, in the target's dtype."""
        t_self, t_src = tangents
        if t_src is None:
            return namespace_of(out).zeros_like(out)
        if t_self is None:
            return t_src if t_src.shape == out.shape else t_src.to(out.dtype).expand(out.shape)
        return t_src.to(t_self.dtype).expand(out.shape) + namespace_of(t_self).zeros_like(t_self)

    @staticmethod
    def forward(x, src):
        # (torch's functional aten.copy has no derivative: the copy into a clone, of the same
        # value, has)
        return x.clone().copy_(src)

    @staticmethod
    def backward(ctx, grad):
        return (namespace_of(grad).zeros_like(grad) if ctx.needs_input_grad[0] else None,
                grad if ctx.needs_input_grad[1] else None)




def _zeroed(x: Tensor) -> Tensor:
    return dispatch(Zero, np.zeros_like(x._data), (x,))


def _filled(x: Tensor, value) -> Tensor:
    if type(value) is Tensor:
        if value._data.ndim:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions.")
        if _repeats_elements(x._data):  # (only a number fills without this check)
            raise RuntimeError(_INTERNAL_OVERLAP)
        return dispatch(FillTensor, np.full_like(x._data, value._data), (x, value))
    if not isinstance(value, (int, float, bool, np.generic)):
        raise TypeError(f"fill_() received an invalid combination of arguments - got "
                        f"({type(value).__name__})")
    return dispatch(FillScalar, np.full_like(x._data, fill_number(value, x._data.dtype)),
                    (x, value))


# fill_ reads its value before writing, so the value may be an element of the tensor.
_filled.reads_inputs_first = True
# torch's fill_ with a number (and zero_) skips the check that no two written elements share
# memory: filling is idempotent.
_zeroed.writes_through_aliases = _filled.writes_through_aliases = True


def _copied(x: Tensor, src: Tensor) -> Tensor:
    if not isinstance(src, Tensor):
        raise not_a_tensor(src, "copy_", "other", 1)
    xd, sd = x._data, src._data
    if sd.shape != xd.shape:
        try:
            shape = np.broadcast_shapes(xd.shape, sd.shape)
        except ValueError:
            raise broadcast_error(xd, sd) from None
        if shape != xd.shape:
            raise RuntimeError(f"output with shape {list(xd.shape)} doesn't match the broadcast "
                               f"shape {list(shape)}")
    return dispatch(Copy, np.broadcast_to(sd, xd.shape).astype(xd.dtype), (x, src))


def _zero_(x: Tensor) -> Tensor:
    """``ext.zero_(x)``: x's elements set to zero in place (``x.zero_()``)."""
    return apply_inplace(x, _zeroed)


declare("zero", Zero, function=_zeroed, methods=(), functions={"zero_": _zero_},
        inplace="zero_")
declare("fill", FillScalar, FillTensor, function=_filled, methods=(), functions=(),
        inplace="fill_")
declare("copy", Copy, function=_copied, methods=(), functions=(), inplace="copy_")


# ---------------------------------------------------------------------------------- methods
# The C++ names torch's messages give dtypes.
