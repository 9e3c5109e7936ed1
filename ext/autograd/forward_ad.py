"""Forward-mode AD: dual tensors carry a tangent, and every op computes its output's tangent.

Inside ``dual_level()``, ``make_dual(x, t)`` gives a tensor whose tangent is ``t``; each op whose
inputs have tangents applies its ``jvp`` rule (the forward derivative, next to its backward in
``ext.functions``) and ``unpack_dual`` reads the result. Forward AD is independent of the backward
graph: duals and their results do not require grad unless their primals do.
"""

from __future__ import annotations

import weakref
from typing import Any, NamedTuple

import numpy as np

from .._arrays import write_array
from .._state import STATE
from .._tensor import Tensor, wrap

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "UnpackedDualTensor"]

_levels = [0]  # the next level's number
# For each level: the tensors (weakly) whose tangent holds nodes alive, let go at its exit.
_holders: dict[int, list] = {}


class UnpackedDualTensor(NamedTuple):
    """``unpack_dual``'s result: the primal value and its tangent (None if it has none)."""

    primal: Tensor
    tangent: Tensor | None


def enter_dual_level() -> int:
    """Start a forward-AD level (only one at a time) and return its number."""
    if STATE.fw_level is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    level = _levels[0]
    _levels[0] += 1
    STATE.fw_level = level
    return level


def exit_dual_level(*, level: int | None = None) -> None:
    """End the current forward-AD level; tangents made in it are no longer visible."""
    if level is None:
        level = STATE.fw_level
    if level != STATE.fw_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    STATE.fw_level = None
    for ref in _holders.pop(level, ()):
        t = ref()
        fw = None if t is None else t._fw_grad
        if fw is not None and fw[0] == level:
            t._fw_grad = fw[:3]


class dual_level:  # noqa: N801 - torch's name
    """A context in which dual tensors can be made and their tangents read."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: Any) -> None:
        exit_dual_level()


def _level(level: int | None) -> int:
    if level is None:
        level = STATE.fw_level
    if level is None or level != STATE.fw_level:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    return level


def _version(t: Tensor) -> int:
    vc = t._vc
    return vc[0] if vc else 0


def tangent_of(t: Tensor) -> Tensor | None:
    """The tangent ``t`` carries at the current level (None if it has none).

    A view's tangent is the matching part of its base's tangent: when the base changed in place
    since the view's tangent was set, it is read again from the base.
    """
    level = STATE.fw_level
    fw = getattr(t, "_fw_grad", None)
    info = getattr(t, "_view", None)
    if info is not None and (fw is None or fw[2] != _version(t)):
        base_fw = getattr(info.base, "_fw_grad", None)
        if base_fw is not None and base_fw[0] == level:
            from .views import _positions, as_strided

            derived = _untracked(as_strided, base_fw[1], _positions(t, info.base))
            t._fw_grad = (level, derived.reshape(t.shape), _version(t))
            return t._fw_grad[1]
    if fw is None or fw[0] != level:
        return None
    return fw[1]


def set_tangent(t: Tensor, tangent: Tensor) -> None:
    """Attach ``tangent`` to ``t`` at the current level (what t's tangent held stays held: in
    torch a tangent is overwritten in place, and keeps its history)."""
    level = STATE.fw_level
    fw = getattr(t, "_fw_grad", None)
    if fw is not None and len(fw) > 3 and fw[0] == level:
        t._fw_grad = (level, tangent, _version(t), fw[3])
    else:
        t._fw_grad = (level, tangent, _version(t))


def hold(t: Tensor, node: Any) -> None:
    """Keep ``node`` alive while ``t`` keeps its tangent at the current level.

    In torch a tangent computed under grad mode has a history of its own, and an in-place op
    writes its tangent into t's with a tracked copy, so t's tangent holds what the op's forward
    rule read. An in-place op on a view that saves its result reads it there too (the view at
    its new version): the base's tangent holds the view's new grad_fn, to which the saved result
    refers weakly. ext writes tangents in place without a history, and keeps that node here.
    """
    level = STATE.fw_level
    fw = getattr(t, "_fw_grad", None)
    if fw is None or fw[0] != level:
        return
    if len(fw) == 3:
        _holders.setdefault(level, []).append(weakref.ref(t))
    # A chain that is never changed, only extended: a copy of the record taken earlier (a saved
    # output's) holds only older nodes, so no node can come to hold itself.
    t._fw_grad = (*fw[:3], (node, fw[3] if len(fw) > 3 else None))


def _untracked(fn, *args):
    """Run ``fn`` with the forward-AD level off (tangent arithmetic is not itself tracked)."""
    level = STATE.fw_level
    STATE.fw_level = None
    try:
        return fn(*args)
    finally:
        STATE.fw_level = level


def write_tangent(t: Tensor, result: Tensor) -> None:
    """After ``t`` was overwritten in place with ``result``: as in torch, t's tangent is
    overwritten in place with result's (zeros if it has none), so that views sharing it (the
    tangents of views of t, a dual's tangent given by the user) see the change; when t is a
    view, its base's tangent gets that part replaced."""
    new = tangent_of(result)
    old = tangent_of(t)
    info = getattr(t, "_view", None)
    base = None if info is None else info.base
    base_t = None if base is None else tangent_of(base)
    if new is None and old is None and base_t is None:
        return
    if new is None:
        new = t.new_zeros(t.shape)
    if base_t is not None or (old is None and base is not None):
        from .views import _positions, as_strided_scatter

        positions = _positions(t, base)
        if base_t is not None and base_t._data.flags.writeable:
            np.put(base_t._data, positions, new._data)
            set_tangent(base, base_t)
        elif base_t is None and new._data.shape == base._data.shape and \
                _laid_out_as_base(t, base):
            # torch's base takes the new tangent itself, in the dtype the op's formula gave
            # it, when the view is laid out as the base is (ext's tangent stands for torch's
            # fresh one, laid out so too); else zeros of its own dtype with the view's part
            set_tangent(base, new)
        else:
            zeros = base.new_zeros(base.shape) if base_t is None else base_t
            set_tangent(base, _untracked(as_strided_scatter, zeros, new.reshape(t.shape),
                                         positions))
        if old is None or not np.shares_memory(old._data, base_t._data if base_t is not None
                                               else old._data[:0]):
            # The view's tangent is read again from its base's.
            t._fw_grad = None
            return
    if old is not None and _write_into(old._data, new._data):
        set_tangent(t, old)
    else:
        set_tangent(t, new)


def _write_into(old: np.ndarray, new: np.ndarray) -> bool:
    # The tangent of an expanded view is an expand of its base's tangent: like torch, write
    # through it, so that the base's tangent sees the change.
    return write_array(old, np.broadcast_to(new, old.shape))


def _laid_out_as_base(t: Tensor, base: Tensor) -> bool:
    # torch's has_same_meta: the same sizes and strides, counted in elements (those of dims of
    # size 1 are arbitrary in NumPy: torch's views of a base laid out so give the base's)
    x, y = t._data, base._data
    return x.shape == y.shape and all(
        n == 1 or sx // x.itemsize == sy // y.itemsize
        for n, sx, sy in zip(x.shape, x.strides, y.strides))


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` that carries ``tangent`` as its forward derivative."""
    level = _level(level)
    if not tensor.is_floating_point():
        raise ValueError("Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not isinstance(tangent, Tensor):
        raise TypeError(f"Expected tangent to be a Tensor, but got {type(tangent).__name__}")
    if not tangent.is_floating_point():
        raise ValueError("Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    if tangent._data.shape != tensor._data.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}.")
    if not tangent._requires_grad and not _laid_out_as_base(tangent, tensor):
        # torch keeps a tangent laid out as its primal; another is copied into that layout
        # (an expanded tangent then gets elements of its own, which writes do not share).
        laid = np.empty_like(tensor._data, dtype=tangent._data.dtype)
        np.copyto(laid, tangent._data)
        tangent = wrap(laid)
    # Like torch's, the dual is a view of the primal: an alias with its own tangent.
    dual = tensor.view_as(tensor) if tensor._requires_grad else _alias(tensor)
    # The dual is a view of a base without a tangent: it keeps its own.
    dual._fw_grad = (level, tangent, _version(dual))
    return dual


def _alias(t: Tensor) -> Tensor:
    from .views import make_view

    return make_view(wrap(t._data), t)


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """The primal (a view without the tangent) and the tangent of ``tensor``."""
    if level is None:
        level = STATE.fw_level
    if level is None or level != STATE.fw_level:
        return UnpackedDualTensor(tensor, None)
    tangent = tangent_of(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    primal = _alias(tensor) if not tensor._requires_grad else tensor.view_as(tensor)
    return UnpackedDualTensor(primal, tangent)


def propagate(op: type, outputs: tuple, args: tuple) -> None:
    """Give the outputs of ``op`` their tangents, if any input has one (called for every op
    while a level is active)."""
    level = STATE.fw_level
    tangents = []
    found = False
    # (whether an input's tangent has a dtype other than its primal's, which torch allows)
    drifted = not op.tangent_in_output_dtype
    for a in args:
        t = None
        if type(a) is Tensor:
            t = tangent_of(a)
            if t is not None:
                found = True
                drifted = drifted or t._data.dtype != a._data.dtype
        tangents.append(t)
    if not found:
        return
    out = outputs[0] if len(outputs) == 1 else outputs
    # The rule runs on primal values: tangents of tangents are not tracked.
    STATE.fw_level = None
    try:
        result = op.tangents(args, out, tuple(tangents))
    finally:
        STATE.fw_level = level
    if type(result) is not tuple:
        result = (result,)
    for o, t in zip(outputs, result):
        if o is not None and t is not None and o._data.dtype.kind == "f":
            if any(t is x for x in tangents):
                # A rule that passes a tangent through: the output gets its own tensor (an
                # alias when the output is a view), so an in-place op on one leaves the other.
                t = wrap(t._data if getattr(o, "_view", None) is not None else t._data.copy())
            if t._data.dtype != o._data.dtype and not drifted:
                # A rule's own arithmetic can miss the dtype its op converts to; a tangent of
                # another dtype than its primal's keeps the dtype torch's formulas give it.
                t = t.to(o.dtype)
            if t._data.shape != o._data.shape:
                t = t.expand(o.shape)
            o._fw_grad = (level, t, _version(o))
