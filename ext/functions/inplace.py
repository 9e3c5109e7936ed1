"""In-place ops and views: version counters, rebasing history, and CopySlices.

An in-place op runs its out-of-place op on an alias of the tensor's current value, writes the
result into the tensor's storage, bumps the version counter shared with its views, and gives the
tensor the op's node as its new grad_fn. When the tensor is a view, the *base* gets the new
history instead, through a ``CopySlices`` node that applies the op's backward to the view's
region of the base's gradient; the view's own grad_fn is then read back from the base
(``AsStridedBackward0``).
"""

from __future__ import annotations

import warnings
import weakref

import numpy as np

from .._dtype import FROM_NUMPY
from .._factories import fill_number
from .._state import STATE
from .._tensor import Tensor, bump_version, views_follow_base, wrap
from ..autograd.graph import (
    ERR_BACKWARD_TWICE,
    Node,
    OutputsPackedLater,
    SavedTensor,
    gradient_edge,
    link,
    move_retains_grad,
    next_sequence_nr,
    output_meta,
)
from ..autograd.views import (  # noqa: F401 - the view machinery, re-exported for the ops
    DEFAULT,
    IN_CUSTOM_FUNCTION,
    MULTI_OUTPUT,
    NO_GRAD_MODE,
    ViewInfo,
    _positions,
    check_inplace,
    make_view,
    view_rebase_error,
)
from ._builtin import BuiltinFunction, namespace_of, record
from .pointwise._common import broadcast_error

__all__ = ["ViewInfo", "make_view", "apply_inplace", "refresh_view", "CopySlices",
           "DEFAULT", "NO_GRAD_MODE", "MULTI_OUTPUT", "IN_CUSTOM_FUNCTION"]

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
    if not td.flags.writeable:
        # An expand is read-only in NumPy. torch refuses a write into one whose elements repeat
        # (a stride 0 over a size above 1) unless the op skips that check (fill_, zero_, and
        # indexing writes, which torch deprecates but allows); other expands are written.
        repeats = _repeats_elements(td)
        if repeats and not through_alias:
            raise RuntimeError(_INTERNAL_OVERLAP)
        td = _writable_alias(td)
        if repeats:
            # Write only what the op changed, as torch's kernel does: an unchanged alias of a
            # changed element must not write the old value back over it.
            new = np.broadcast_to(rd.astype(td.dtype, copy=False), td.shape)
            bits = f"u{td.itemsize}"
            changed = np.ascontiguousarray(new).view(bits) != np.ascontiguousarray(td).view(bits)
            td[changed] = new[changed]
            return
    np.copyto(td, rd, casting="unsafe")


_INTERNAL_OVERLAP = ("unsupported operation: more than one element of the written-to tensor "
                     "refers to a single memory location. Please clone() the tensor before "
                     "performing the operation.")


def _repeats_elements(d: np.ndarray) -> bool:
    # torch's has_internal_overlap: a stride 0 over a size above 1 (an empty tensor has none,
    # whatever NumPy's strides say)
    return d.size > 1 and any(st == 0 and n > 1 for st, n in zip(d.strides, d.shape))


def warn_expanded(x: Tensor, op: str, example: str, stacklevel: int = 3) -> None:
    """torch's deprecation warning for an indexing write into a tensor whose elements repeat."""
    if _repeats_elements(x._data):
        warnings.warn(f"Use of {op} on expanded tensors is deprecated. Please clone() the tensor "
                      "before performing this operation. This also applies to advanced indexing "
                      f"e.g. {example}", UserWarning, stacklevel=stacklevel)


def _writable_alias(d: np.ndarray) -> np.ndarray:
    """A writable array over the same memory as ``d``, a read-only broadcast view (``expand``):
    torch writes through such views, each element landing where its alias points."""
    owner = d
    while not owner.flags.writeable:
        base = owner.base
        if base is not None and not isinstance(base, np.ndarray):
            base = getattr(base, "base", None)  # through as_strided's interface holder
        if base is None:
            break
        owner = base
    if not owner.flags.writeable:
        raise RuntimeError(_INTERNAL_OVERLAP)
    item = d.itemsize
    offset = (d.__array_interface__["data"][0] - owner.__array_interface__["data"][0]) // item
    start = owner.reshape(-1)[offset:] if owner.flags.c_contiguous else owner
    return np.lib.stride_tricks.as_strided(start, shape=d.shape, strides=d.strides)


def _alias(t: Tensor) -> Tensor:
    """A new tensor object for t's current value, history and tangent, with a counter of its
    own."""
    a = wrap(t._data)
    fw = getattr(t, "_fw_grad", None)
    if fw is not None:
        from ..autograd.forward_ad import tangent_of

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
        from ..autograd.forward_ad import _untracked

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
    recording = requires_grad and STATE.grad_enabled and not STATE.inference
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
        if STATE.fw_level is not None and not STATE.inference:
            from ..autograd.forward_ad import write_tangent

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
    if STATE.fw_level is not None and not STATE.inference:
        from ..autograd.forward_ad import write_tangent

        write_tangent(t, result)
    if node is None:
        return t
    if info is None:
        _rebase(t, node)
    else:
        _copy_slices(t, info, node)
        _saved_outputs_follow_view(node, t)
    if hooks is not None:
        for s in node._saved:
            if isinstance(s, SavedTensor) and s._is_output and s._unpack is None:
                s._set_hooks(t, *hooks)
    return t


def _write_direct(t: Tensor, op, other) -> bool:
    """Untracked ``t op= other`` for + - * / straight into t's storage, when t's dtype holds the
    result (an optimizer's step is this case). False when the general path is needed."""
    ufunc = _DIRECT.get(op)
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


_DIRECT: dict = {}


def _rebase(t: Tensor, node: Node) -> None:
    """Make ``node`` the grad_fn of ``t`` (which the op's output was only standing in for)."""
    move_retains_grad(t, node, 0)
    t._grad_fn = node
    t._output_nr = 0
    node._out_meta = output_meta(t._data)
    _point_saved_outputs(node, t)
    if not t._requires_grad:
        t._requires_grad = True
        views_follow_base(t)


def _point_saved_outputs(node: Node, t: Tensor) -> None:
    # A saved output of the op is the modified tensor itself, at its new version.
    saved = getattr(node, "_saved", None) or ()
    for s in saved:
        if isinstance(s, SavedTensor) and s._is_output and s._tensor is not None:
            # (under forward AD it keeps the tangent the op's output was given)
            fw = getattr(s._tensor, "_fw_grad", None)
            s._tensor = t.detach()
            if fw is not None:
                s._tensor._fw_grad = fw
            s._version = t._vc[0]


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
        from ..autograd.forward_ad import hold

        hold(t._view.base, fn)


# ---------------------------------------------------------------------------------- views
class AsStrided(BuiltinFunction):
    """The elements of a tensor at given flat positions (the region of a view in its base)."""

    node_name = "AsStridedBackward0"
    saved_attrs = ("size", "stride", "storage_offset")
    ctx_attrs = ("positions", "self_sym_sizes", "overlapping")
    tensor_positions = (0,)

    @staticmethod
    def forward(x, positions):
        return x.reshape(-1)[positions]

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.positions = inputs[1]
        ctx.self_sym_sizes = tuple(inputs[0].shape)
        ctx.overlapping = False

    @staticmethod
    def backward(ctx, grad):
        ns = namespace_of(grad)
        if not ctx.positions.size:
            # torch's as_strided_backward: an empty view's gradient is zeros, without a graph
            return ns.zeros(ctx.self_sym_sizes, dtype=grad.dtype), None
        if type(grad) is Tensor and STATE.grad_enabled and not ctx.overlapping:
            geometry = _strided_geometry(ctx.positions)
            if geometry is not None:
                return _as_strided_backward(grad, ctx.self_sym_sizes, geometry), None
        if ctx.overlapping:
            # Several elements read one place (an expanded view): their gradients add up there.
            flat = ns.zeros(int(np.prod(ctx.self_sym_sizes)), dtype=grad.dtype)
            index = ns.as_tensor(ctx.positions.reshape(-1))
            whole = flat.index_put((index,), grad.reshape(-1), accumulate=True)
            return whole.reshape(ctx.self_sym_sizes), None
        zeros = ns.zeros(ctx.self_sym_sizes, dtype=grad.dtype)
        return as_strided_scatter(zeros, grad, ctx.positions), None


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


def as_strided(x: Tensor, positions: np.ndarray) -> Tensor:
    """The view-shaped tensor of x's elements at ``positions`` (flat indices)."""
    out = wrap(np.take(x._data, positions))
    if x._requires_grad and STATE.grad_enabled or STATE.special:
        record(AsStrided, out, (x,), (x, positions))
    return out


class AsStridedScatter(BuiltinFunction):
    """A copy of ``x`` with ``src`` written at ``positions``."""

    node_name = "AsStridedScatterBackward0"
    ctx_attrs = ("positions",)
    tensor_positions = (0, 1)

    @staticmethod
    def forward(x, src, positions):
        out = x.clone()
        out.reshape(-1)[positions] = src
        return out

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.positions = inputs[2]

    @staticmethod
    def backward(ctx, grad):
        gx = gsrc = None
        if ctx.needs_input_grad[0]:
            gx = as_strided_scatter(grad, namespace_of(grad).zeros(ctx.positions.shape,
                                                                   dtype=grad.dtype),
                                    ctx.positions)
        if ctx.needs_input_grad[1]:
            gsrc = as_strided(grad, ctx.positions)
        return gx, gsrc, None


def as_strided_scatter(x: Tensor, src: Tensor, positions: np.ndarray) -> Tensor:
    """A copy of ``x`` with ``src`` (shaped like ``positions``) written at ``positions``."""
    d = x._data.copy()
    np.put(d, positions, src._data)
    out = wrap(d)
    if STATE.grad_enabled and (x._requires_grad or src._requires_grad) or STATE.special:
        record(AsStridedScatter, out, (x, src), (x, src, positions))
    return out


class CopySlices(Node):
    """The node a base gets when one of its views is modified in place: the base's gradient
    passes through unchanged outside the view's region and through the op's backward inside."""

    __slots__ = ("_fn", "_positions", "_view_meta", "_edge")

    def name(self) -> str:
        return "ext::autograd::CopySlices"

    def _apply(self, grads: list) -> tuple:
        if self._fn is None:
            raise RuntimeError(ERR_BACKWARD_TWICE)
        grad = grads[0]
        if STATE.grad_enabled:
            geometry = _strided_geometry(self._positions)
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
            inside = namespace_of(grad).zeros(shape, dtype=grad.dtype)
        elif inside._data.shape != shape:
            from ..autograd.engine import sum_to

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
                from ..autograd.engine import sum_to

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


def _strided_geometry(positions: np.ndarray) -> tuple | None:
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


def _copy_slices(t: Tensor, info: ViewInfo, node: Node, edge: int = 0) -> None:
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
    _point_saved_outputs(node, t)
    _regenerate(t, info)


def _regenerate(t: Tensor, info: ViewInfo) -> None:
    """Give view ``t`` a grad_fn that reads its region from its base's current history.

    As in torch, a view with a history of its own (a view of a view that was made to require
    grad, whose base does not) gets one too, which leads nowhere.
    """
    base = info.base
    info.version = base._vc[0]
    if not base._requires_grad and t._grad_fn is None:
        return
    positions = _positions(t, base)
    node = object.__new__(AsStrided._backward_cls)
    node.needs_input_grad = (base._requires_grad, False)
    node._saved = ()
    node._versions = None
    link((t,), node, (base,))  # retain_grad moves to the new node with the view
    node.positions = positions
    node.self_sym_sizes = tuple(base._data.shape)
    node.overlapping = any(st == 0 and n > 1 for st, n in zip(t._data.strides, t._data.shape))
    node.size = tuple(t._data.shape)
    node.stride = tuple(s // t._data.itemsize for s in t._data.strides)
    item = base._data.itemsize
    node.storage_offset = (t._data.__array_interface__["data"][0]
                           - base._data.__array_interface__["data"][0]) // item


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


# ---------------------------------------------------------------------------------- fill, copy
class Zero(BuiltinFunction):
    """zero_(): the old value does not matter, so its gradient is zero."""

    node_name = "ZeroBackward0"

    @staticmethod
    def forward(x):
        return x.zero_()

    @staticmethod
    def backward(ctx, grad):
        return namespace_of(grad).zeros_like(grad)


class FillScalar(Zero):
    """fill_(number)."""

    node_name = "FillBackward2"
    tensor_positions = (0,)

    @staticmethod
    def forward(x, value):
        return x.fill_(value)

    @staticmethod
    def backward(ctx, grad):
        return namespace_of(grad).zeros_like(grad), None


class FillTensor(BuiltinFunction):
    """fill_(0-d tensor): the value gets the sum of the gradient."""

    node_name = "FillBackward3"

    @staticmethod
    def forward(x, value):
        return x.fill_(value)

    @staticmethod
    def backward(ctx, grad):
        return (namespace_of(grad).zeros_like(grad) if ctx.needs_input_grad[0] else None,
                grad.sum() if ctx.needs_input_grad[1] else None)


class Copy(BuiltinFunction):
    """copy_(src): the gradient goes to src (summed to its shape, in its dtype)."""

    node_name = "CopyBackwards"
    ctx_attrs = ("src_dtype",)

    @staticmethod
    def forward(x, src):
        return x.copy_(src)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.src_dtype = inputs[1].dtype

    @staticmethod
    def backward(ctx, grad):
        return (namespace_of(grad).zeros_like(grad) if ctx.needs_input_grad[0] else None,
                grad.to(ctx.src_dtype) if ctx.needs_input_grad[1] else None)


Copy._backward_cls.name = lambda self: "ext::autograd::CopyBackwards"


def _constant(op: type, x: Tensor, data: np.ndarray, edges: tuple, args: tuple) -> Tensor:
    out = wrap(data)
    if STATE.grad_enabled and data.dtype.kind == "f" and any(
            e is not None and e._requires_grad for e in edges) or STATE.special:
        record(op, out, edges, args)
    return out


def _zeroed(x: Tensor) -> Tensor:
    return _constant(Zero, x, np.zeros_like(x._data), (x,), (x,))


def _filled(x: Tensor, value) -> Tensor:
    if type(value) is Tensor:
        if value._data.ndim:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions.")
        if _repeats_elements(x._data):  # (only a number fills without this check)
            raise RuntimeError(_INTERNAL_OVERLAP)
        data = np.full_like(x._data, value._data)
        return _constant(FillTensor, x, data, (x, value), (x, value))
    if not isinstance(value, (int, float, bool, np.generic)):
        raise TypeError(f"fill_() received an invalid combination of arguments - got "
                        f"({type(value).__name__})")
    data = np.full_like(x._data, fill_number(value, x._data.dtype))
    return _constant(FillScalar, x, data, (x,), (x, value))


# fill_ reads its value before writing, so the value may be an element of the tensor.
_filled.reads_inputs_first = True
# torch's fill_ with a number (and zero_) skips the check that no two written elements share
# memory: filling is idempotent.
_zeroed.writes_through_aliases = _filled.writes_through_aliases = True


def _copied(x: Tensor, src: Tensor) -> Tensor:
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(src).__name__}")
    xd, sd = x._data, src._data
    if sd.shape != xd.shape:
        try:
            shape = np.broadcast_shapes(xd.shape, sd.shape)
        except ValueError:
            raise broadcast_error(xd, sd) from None
        if shape != xd.shape:
            raise RuntimeError(f"output with shape {list(xd.shape)} doesn't match the broadcast "
                               f"shape {list(shape)}")
    data = np.broadcast_to(sd, xd.shape).astype(xd.dtype)
    return _constant(Copy, x, data, (x, src), (x, src))


# ---------------------------------------------------------------------------------- methods
def _inplace_method(name: str, op):
    def method(self, *args, **kwargs):
        return apply_inplace(self, op, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"In-place ``{name[:-1]}``: modifies this tensor and returns it."
    return method


def _augmented(op):
    def method(self, other):
        if not isinstance(other, (Tensor, int, float, bool, np.generic)):
            return NotImplemented
        return apply_inplace(self, op, other)

    method.__name__ = op.__name__
    return method


def methods() -> dict:
    """The in-place Tensor methods, made from the out-of-place ops of ``ext.functions``."""
    from . import pointwise as pw
    from .reduction import scatter

    def masked_fill_(x: Tensor, mask, value) -> Tensor:
        warn_expanded(x, "masked_fill_", "tensor[mask] = scalar", 5)
        return pw.masked_fill(x, mask, value)

    masked_fill_.writes_through_aliases = True
    table = {
        "add_": pw.add, "sub_": pw.sub, "mul_": pw.mul, "div_": pw.div,
        "neg_": pw.neg, "abs_": pw.abs, "log_": pw.log, "sin_": pw.sin,
        "cos_": pw.cos, "tan_": pw.tan, "tanh_": pw.tanh, "sigmoid_": pw.sigmoid,
        "relu_": pw.relu, "sqrt_": pw.sqrt, "clamp_": pw.clamp, "clamp_min_": pw.clamp_min,
        "clamp_max_": pw.clamp_max, "clip_": pw.clamp, "floor_": pw.floor, "ceil_": pw.ceil,
        "round_": pw.round, "sign_": pw.sign, "reciprocal_": pw.reciprocal,
        "log1p_": pw.log1p, "expm1_": pw.expm1, "rsqrt_": pw.rsqrt,
        "nan_to_num_": pw.nan_to_num, "masked_fill_": masked_fill_,
        "zero_": _zeroed, "fill_": _filled, "copy_": _copied,
        "scatter_": scatter,
    }
    _DIRECT.update({pw.add: np.add, pw.sub: np.subtract, pw.mul: np.multiply,
                    pw.div: np.true_divide})
    out = {name: _inplace_method(name, op) for name, op in table.items()}
    out.update({
        "__iadd__": _augmented(pw.add), "__isub__": _augmented(pw.sub),
        "__imul__": _augmented(pw.mul), "__itruediv__": _augmented(pw.div),
    })
    return out

