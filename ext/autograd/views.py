"""Views and writes through them: a view's record of its base (``ViewInfo``), how it was made
(torch's CreationMeta), torch's refusals of in-place writes through views, and the history such
a write gives: the base gets a ``CopySlices`` node, and each view reads its grad_fn back from
the base (``AsStridedBackward0``, over the flat positions of its elements in the base).
"""

from __future__ import annotations

import weakref

import numpy as np

from .._dtype import FROM_NUMPY
from .._state import STATE
from .._tensor import Tensor, views_follow_base, wrap
from .engine import sum_to
from .graph import (
    ERR_BACKWARD_TWICE,
    Node,
    SavedTensor,
    gradient_edge,
    link,
    move_retains_grad,
    next_sequence_nr,
    output_meta,
)

_new = object.__new__

# How a view was made, which decides whether it may be modified in place (torch's CreationMeta).
DEFAULT, NO_GRAD_MODE, MULTI_OUTPUT, IN_CUSTOM_FUNCTION = range(4)


class ViewInfo:
    """What a view knows of its base: the base itself, how it was made, the version of the
    shared counter when its grad_fn was last correct, and whether it was asked to require grad
    itself (a view without history otherwise requires grad exactly when its base does). Made
    by ``make_view`` only, which fills its slots itself (a call less per view op)."""

    __slots__ = ("base", "creation", "version", "op", "own_requires_grad")


def make_view(out: Tensor, x: Tensor, creation: int = DEFAULT, op: str = "") -> Tensor:
    """Mark ``out`` as a view of ``x`` (of x's base if x is a view itself): they share the
    version counter, and ``out._base`` is the base.

    As torch's, a view requires grad when ``x`` does, even when it was made under no_grad and
    has no history of its own; and it inherits a restriction on in-place writes (``creation``)
    from ``x`` when it was made in the ordinary way.
    """
    info = getattr(x, "_view", None)
    base = x if info is None else info.base
    vc = base._vc
    if vc is None:
        vc = base._vc = [0]
    elif type(vc) is not list:
        # As in torch, a view of an inference tensor is an inference tensor with no version
        # counter, and not a view at all (no _base); it never requires grad.
        out._vc = False
        if STATE.inference and STATE.fw_level is not None:
            _inherit_tangent(out, x)
        return out
    out._vc = vc
    grad_mode = STATE.grad_enabled
    if not grad_mode:
        creation = NO_GRAD_MODE
    elif creation == DEFAULT and info is not None:
        creation = info.creation
    out._view = made = _new(ViewInfo)
    made.base = base
    made.creation = creation
    made.version = vc[0]
    made.op = op
    made.own_requires_grad = False
    # (``special`` first: a plain read, where the rare modes are properties)
    inference = STATE.special and STATE.inference
    if inference and STATE.fw_level is not None:
        _inherit_tangent(out, x)
    if base._requires_grad:
        if grad_mode and not inference:
            return out  # its op records a node for it
        out._requires_grad = True
    # It has no history of its own: it learns when its base starts (or stops) requiring grad
    # through the shared version counter, which keeps a weak reference to it (and now and then
    # drops the views that are gone).
    if len(vc) > 64 and len(vc) & (len(vc) - 1) == 0:
        vc[1:] = [r for r in vc[1:] if r() is not None]
    vc.append(weakref.ref(out))
    return out


def _inherit_tangent(view: Tensor, x: Tensor) -> None:
    # Inference mode turns the ops' forward rules off, but as in torch a view still reads its
    # tangent from the tensor it views: the same view of x's tangent, so that a write to either
    # shows in the other.
    from .forward_ad import set_tangent, tangent_of

    tangent = tangent_of(x)
    if tangent is None:
        return
    xd, td, vd = x._data, tangent._data, view._data
    if td.strides == xd.strides and td.dtype == xd.dtype:
        # The tangent is laid out as x is: the view's geometry, applied to it.
        inherited = wrap(_same_geometry(td, vd, xd))
    elif xd.flags.c_contiguous or xd.flags.f_contiguous:
        # (read through x's own layout, which _positions can do when x has no gaps)
        inherited = wrap(np.take(td, _positions(view, x)))
    else:
        return
    # (it is what a view of x's tangent would be: an inference tensor only if that is one)
    inherited._vc = False if tangent._vc is False else None
    set_tangent(view, inherited)


class _Interface:
    # An array described by a NumPy array interface; it keeps the array it reads alive.
    def __init__(self, interface: dict, owner: np.ndarray) -> None:
        self.__array_interface__ = interface
        self.base = owner


def _same_geometry(a: np.ndarray, view: np.ndarray, of: np.ndarray) -> np.ndarray:
    """The view of ``a`` that ``view`` is of ``of`` (``a`` has of's shape and strides)."""
    offset = view.__array_interface__["data"][0] - of.__array_interface__["data"][0]
    interface = dict(a.__array_interface__)
    interface.update(data=(interface["data"][0] + offset, not a.flags.writeable),
                     shape=view.shape, strides=view.strides)
    return np.asarray(_Interface(interface, a))


def _view_name(node) -> str:
    name = type(node).__name__
    cut = name.rfind("Backward")
    return name[:cut] if cut > 0 else name


_VIEW_RULES = {
    MULTI_OUTPUT: " This view is the output of a function that returns multiple views. Such "
                  "functions do not allow the output views to be modified inplace. You should "
                  "replace the inplace operation by an out-of-place one.",
    NO_GRAD_MODE: " Given that this use case is ambiguous and error-prone, it is forbidden. You "
                  "can clarify your code by moving both the view and the inplace either both "
                  "inside the no_grad block (if you don't want the inplace to be tracked) or both "
                  "outside (if you want the inplace to be tracked).",
    IN_CUSTOM_FUNCTION: " This view was created inside a custom Function (or because an input "
                        "was returned as-is) and the autograd logic to handle view+inplace would "
                        "override the custom backward associated with the custom Function, "
                        "leading to incorrect gradients. This behavior is forbidden. You can fix "
                        "this by cloning the output of the custom Function.",
}


def view_rebase_error(t: Tensor, info: ViewInfo, indirect: bool) -> RuntimeError:
    """torch's error for a view that may not be written in place (``indirect``: its base or
    another view of it was written), worded by how the view was made."""
    what = "its base or another view of its base has been" if indirect else "is being"
    fn = t._grad_fn
    if info.creation == NO_GRAD_MODE or fn is None:
        prefix = ("A view was created in" if fn is None else
                  f"Output {t._output_nr} of {_view_name(fn)} is a view of a view which was "
                  "created in")
        msg = f"{prefix} no_grad mode and {what} modified inplace with grad mode enabled."
    else:
        msg = f"Output {t._output_nr} of {_view_name(fn)} is a view and {what} modified inplace."
    return RuntimeError(msg + _VIEW_RULES[info.creation])


# ---------------------------------------------------------------------------------- checks
def check_inplace(t: Tensor, requires_grad: bool) -> None:
    """Raise torch's error when ``t`` may not be modified in place by an op whose inputs
    (``t`` and the others) ``requires_grad`` (before any work)."""
    if not (requires_grad and STATE.grad_enabled):
        return
    info = getattr(t, "_view", None)
    if info is not None:
        if info.creation != DEFAULT:
            raise view_rebase_error(t, info, indirect=False)
        base = info.base
        if t.requires_grad and base._grad_fn is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
    elif t._grad_fn is None and t._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")


def _positions(view: Tensor, base: Tensor) -> np.ndarray:
    """For each element of ``view``, the flat (row-major) index of that element in ``base``."""
    bd, vd = base._data, view._data
    marker = np.empty_like(bd, dtype=np.int64)
    marker[...] = np.arange(bd.size).reshape(bd.shape)
    item = bd.itemsize
    offset = (vd.__array_interface__["data"][0] - bd.__array_interface__["data"][0]) // item
    flat = marker.ravel(order="K")
    return np.lib.stride_tricks.as_strided(
        flat[offset:], shape=vd.shape, strides=tuple(s // item * 8 for s in vd.strides)).copy()


# ---------------------------------------------------------------------------------- regions
class AsStridedBackward0(Node):
    """The grad_fn of a view that reads its region of its base anew (after the base changed in
    place): its gradient is scattered back to the flat ``positions`` of the region."""

    __slots__ = ("positions", "self_sym_sizes", "overlapping", "size", "stride",
                 "storage_offset")
    tangent_in_output_dtype = True
    _saved_size = property(lambda self: self.size)
    _saved_stride = property(lambda self: self.stride)
    _saved_storage_offset = property(lambda self: self.storage_offset)

    @staticmethod
    def tangents(args: tuple, out: Tensor, tangents: tuple) -> Tensor:
        """Linear: the same region of the tangent."""
        return as_strided(tangents[0], args[1])

    def _apply(self, grads: list) -> tuple:
        grad = grads[0]
        sizes = self.self_sym_sizes
        if not self.positions.size:
            # torch's as_strided_backward: an empty view's gradient is zeros, without a graph
            return (grad.new_zeros(sizes),)
        if STATE.grad_enabled and not self.overlapping:
            geometry = strided_geometry(self.positions)
            if geometry is not None:
                return (_as_strided_backward(grad, sizes, geometry),)
        if self.overlapping:
            # Several elements read one place (an expanded view): their gradients add up there.
            flat = grad.new_zeros((int(np.prod(sizes)),))
            whole = flat.index_put((wrap(self.positions.reshape(-1)),), grad.reshape(-1),
                                   accumulate=True)
            return (whole.reshape(sizes),)
        return (as_strided_scatter(grad.new_zeros(sizes), grad, self.positions),)


class AsStridedScatterBackward0(Node):
    """The grad_fn of a copy of ``x`` with ``src`` written at flat ``positions``."""

    __slots__ = ("positions",)
    tangent_in_output_dtype = True

    @staticmethod
    def tangents(args: tuple, out: Tensor, tangents: tuple) -> Tensor:
        """Linear in both tensors (a missing tangent is zeros)."""
        tx, tsrc = (a.new_zeros(a.shape) if t is None else t for a, t in zip(args[:2], tangents))
        return as_strided_scatter(tx, tsrc, args[2])

    def _apply(self, grads: list) -> tuple:
        grad, at = grads[0], self.positions
        x, src = self._next  # (None: that input needs no gradient)
        return (None if x is None else as_strided_scatter(grad, grad.new_zeros(at.shape), at),
                None if src is None else as_strided(grad, at))


def _record(node_cls: type, out: Tensor, inputs: tuple, args: tuple) -> Node | None:
    """The node of a region op on ``out`` (None when none is recorded), and out's tangent."""
    if STATE.special:
        if STATE.fw_level is not None and not STATE.inference:
            from .forward_ad import propagate

            propagate(node_cls, (out,), args)
        if STATE.inference or not STATE.grad_enabled or out._data.dtype.kind not in "fV" or \
                not any(t._requires_grad for t in inputs):
            return None
    node = object.__new__(node_cls)
    link((out,), node, inputs)
    node.positions = args[-1]
    return node


def as_strided(x: Tensor, positions: np.ndarray) -> Tensor:
    """The view-shaped tensor of x's elements at ``positions`` (flat indices)."""
    out = wrap(np.take(x._data, positions))
    if x._requires_grad and STATE.grad_enabled or STATE.special:
        node = _record(AsStridedBackward0, out, (x,), (x, positions))
        if node is not None:
            node.self_sym_sizes = tuple(x._data.shape)
            node.overlapping = False
    return out


def as_strided_scatter(x: Tensor, src: Tensor, positions: np.ndarray) -> Tensor:
    """A copy of ``x`` with ``src`` (shaped like ``positions``) written at ``positions``."""
    d = x._data.copy()
    np.put(d, positions, src._data)
    out = wrap(d)
    if STATE.grad_enabled and (x._requires_grad or src._requires_grad) or STATE.special:
        _record(AsStridedScatterBackward0, out, (x, src), (x, src, positions))
    return out


def _strided_view(base: Tensor, shape: tuple, strides: tuple, offset: int) -> Tensor:
    # A view of the contiguous ``base`` with the given geometry (in elements), whose grad_fn
    # reads it from base (AsStridedBackward0).
    item = base._data.itemsize
    view = make_view(wrap(np.lib.stride_tricks.as_strided(
        base._data.reshape(-1)[offset:], shape, tuple(st * item for st in strides))), base)
    _regenerate(view, view._view)
    return view


def _as_strided_backward(grad: Tensor, sizes: tuple, geometry: tuple) -> Tensor:
    # torch's as_strided_backward under create_graph: grad copied into its place in zeros
    # (CopySlices), read back with the input's geometry (AsStridedBackward0).
    storage = grad.new_zeros((int(np.prod(sizes)),))
    _strided_view(storage, *geometry).copy_(grad)
    strides = tuple(int(np.prod(sizes[k + 1:])) for k in range(len(sizes)))
    return _strided_view(storage, tuple(sizes), strides, 0)


def strided_geometry(positions: np.ndarray) -> tuple | None:
    """(shape, strides, offset) in elements of the strided view of a C-ordered base that reads
    ``positions``, or None when no such view reads them."""
    if not positions.size:
        return positions.shape, (0,) * positions.ndim, 0
    start = int(positions.flat[0])
    strides = []
    for k, n in enumerate(positions.shape):
        step = [0] * positions.ndim
        step[k] = 1
        strides.append(int(positions[tuple(step)]) - start if n > 1 else 0)
    expected = start + sum(np.arange(n).reshape([-1 if i == k else 1
                                                  for i in range(positions.ndim)]) * st
                           for k, (n, st) in enumerate(zip(positions.shape, strides)))
    if not np.array_equal(positions, np.broadcast_to(expected, positions.shape)) or \
            any(st < 0 for st in strides):
        return None
    return positions.shape, tuple(strides), start


# ---------------------------------------------------------------------------------- CopySlices
class CopySlices(Node):
    """The node a base gets when one of its views is modified in place: the base's gradient
    passes through unchanged outside the view's region and through the op's backward inside."""

    __slots__ = ("_fn", "_positions", "_view_meta", "_edge")
    _fresh_results = False  # (the op's backward may be a custom Function's)
    _qualified_name = "ext::autograd::CopySlices"

    def _apply(self, grads: list) -> tuple:
        if self._fn is None:
            raise RuntimeError(ERR_BACKWARD_TWICE)
        grad = grads[0]
        if STATE.grad_enabled:
            geometry = strided_geometry(self._positions)
            if geometry is not None:
                return self._apply_differentiably(grad, geometry)
        region = as_strided(grad, self._positions)
        shape, dt = self._view_meta
        if region._data.dtype != dt:
            region = region.to(FROM_NUMPY[dt])
        res = self._fn._apply([region])
        # The op's gradient for the view's old value goes into the region; its other gradients
        # (its other inputs) pass on as they are.
        k = self._edge
        inside = res[k]
        if inside is None:
            inside = grad.new_zeros(shape)
        elif inside._data.shape != shape:
            inside = sum_to(inside, shape)
        whole = as_strided_scatter(grad, inside.to(grad.dtype), self._positions)
        return (self._for_base(whole), *res[:k], *res[k + 1:])

    def _apply_differentiably(self, grad: Tensor, geometry: tuple) -> tuple:
        # torch's CopySlices under create_graph: a copy of grad (CopyBackwards), the op's
        # backward on a clone of the view's region of it, written back into that region, so
        # the base's gradient is CopySlices and the others' come through the clone.
        result = grad.new_empty(grad.shape)
        result.copy_(grad)
        shape = geometry[0]
        region = _strided_view(result, *geometry)
        dt = self._view_meta[1]
        piece = region.clone()
        res = self._fn._apply([piece if piece._data.dtype == dt else piece.to(FROM_NUMPY[dt])])
        k = self._edge
        inside = res[k]
        if inside is None:
            region.zero_()
        else:
            if inside._data.shape != shape:
                inside = sum_to(inside, shape)
            region.copy_(inside)
        return (self._for_base(result), *res[:k], *res[k + 1:])

    def _for_base(self, whole: Tensor) -> Tensor | None:
        # As torch's CopySlices, no gradient for a base that had no history (its edge leads
        # nowhere): a node post-hook sees None there.
        return None if self._next[0] is None else whole

    def _release(self) -> None:
        # Only drop the op's node, as torch does: a double-backward graph may still reach it
        # directly (through the op's saved output), and it needs its saved tensors there.
        self._fn = None


def copy_slices(t: Tensor, info: ViewInfo, node: Node, edge: int = 0) -> None:
    """Give the base of view ``t`` a CopySlices node around ``node``, the op that modified the
    view, whose input ``edge`` was the view's old value."""
    base = info.base
    positions = _positions(t, base)
    cs = object.__new__(CopySlices)
    cs._fn = node
    cs._positions = positions
    cs._view_meta = (t._data.shape, t._data.dtype)
    cs._edge = edge
    base_edge = gradient_edge(base)
    cs._next = (base_edge[0], *node._next[:edge], *node._next[edge + 1:])
    cs._nrs = (base_edge[1], *node._nrs[:edge], *node._nrs[edge + 1:])
    cs._seq = next_sequence_nr()
    cs._hooks = None
    move_retains_grad(base, cs, 0)
    base._grad_fn = cs
    base._output_nr = 0
    cs._out_meta = output_meta(base._data)
    if not base._requires_grad:
        base._requires_grad = True
        views_follow_base(base)
    point_saved_outputs(node, t)
    _regenerate(t, info)


def point_saved_outputs(node: Node, t: Tensor) -> None:
    """A saved output of ``node``, the op that wrote ``t``, is t itself at its new version."""
    saved = getattr(node, "_saved", None) or ()
    for s in saved:
        if isinstance(s, SavedTensor) and s._is_output and s._tensor is not None:
            # (under forward AD it keeps the tangent the op's output was given)
            fw = getattr(s._tensor, "_fw_grad", None)
            s._tensor = t.detach()
            if fw is not None:
                s._tensor._fw_grad = fw
            s._version = t._vc[0]


def _regenerate(t: Tensor, info: ViewInfo) -> None:
    """Give view ``t`` a grad_fn that reads its region from its base's current history.

    As in torch, a view with a history of its own (a view of a view that was made to require
    grad, whose base does not) gets one too, which leads nowhere.
    """
    base = info.base
    info.version = base._vc[0]
    if not base._requires_grad and t._grad_fn is None:
        return
    node = object.__new__(AsStridedBackward0)
    link((t,), node, (base,))  # retain_grad moves to the new node with the view
    # The region read (flat positions in base), and the geometry torch shows in _saved_*.
    node.positions = _positions(t, base)
    node.self_sym_sizes = tuple(base._data.shape)
    vd, bd = t._data, base._data
    node.overlapping = any(st == 0 and n > 1 for st, n in zip(vd.strides, vd.shape))
    node.size = tuple(vd.shape)
    node.stride = tuple(s // vd.itemsize for s in vd.strides)
    node.storage_offset = (vd.__array_interface__["data"][0]
                           - bd.__array_interface__["data"][0]) // bd.itemsize


def refresh_view(t: Tensor) -> None:
    """Bring a view's grad_fn up to date after its base (or another view) changed in place."""
    info = getattr(t, "_view", None)
    if info is None:
        return
    vc = info.base._vc
    if vc is False or info.version == vc[0]:
        return
    if t._grad_fn is None and not info.base._requires_grad:
        return  # no history to bring up to date (yet)
    if info.creation != DEFAULT:
        raise view_rebase_error(t, info, indirect=True)
    _regenerate(t, info)
