"""How views are made and when they may be written: a view's record of its base (``ViewInfo``),
how it was made (torch's CreationMeta), and torch's refusals of in-place writes through views.

The nodes a write through a view builds (CopySlices, AsStridedBackward0) are ops and live in
``ext.functions.inplace``.
"""

from __future__ import annotations

import weakref

import numpy as np

from .._state import STATE
from .._tensor import Tensor, version_counter, wrap

# How a view was made, which decides whether it may be modified in place (torch's CreationMeta).
DEFAULT, NO_GRAD_MODE, MULTI_OUTPUT, IN_CUSTOM_FUNCTION = range(4)


class ViewInfo:
    """What a view knows of its base: the base itself, how it was made, the version of the
    shared counter when its grad_fn was last correct, and whether it was asked to require grad
    itself (a view without history otherwise requires grad exactly when its base does)."""

    __slots__ = ("base", "creation", "version", "op", "own_requires_grad")

    def __init__(self, base: Tensor, creation: int, version: int, op: str) -> None:
        self.base = base
        self.creation = creation
        self.version = version
        self.op = op
        self.own_requires_grad = False


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
        vc = version_counter(base)
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
    out._view = ViewInfo(base, creation, vc[0], op)
    if STATE.inference and STATE.fw_level is not None:
        _inherit_tangent(out, x)
    if base._requires_grad:
        if grad_mode and not STATE.inference:
            return out  # its op records a node for it
        out._requires_grad = True
    follow_base_requires_grad(out, vc)
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


def follow_base_requires_grad(view: Tensor, vc: list) -> None:
    """Let ``view``, which has no history of its own, learn when its base starts (or stops)
    requiring grad: the shared version counter keeps a weak reference to it."""
    if len(vc) > 64 and len(vc) & (len(vc) - 1) == 0:
        # Now and then drop the views that are gone.
        vc[1:] = [r for r in vc[1:] if r() is not None]
    vc.append(weakref.ref(view))


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
