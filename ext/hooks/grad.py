"""Gradient hooks for ``tensor.register_hook`` (ext or torch tensors), and ``register_all``.

Each factory returns a hook that computes a new gradient and never writes into the one it is
given (other nodes may still read it).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from ..functions import namespace_of
from .trace import note

__all__ = ["clip", "scale", "nan_guard", "register_all", "HookGroup", "NanGradientWarning"]


class NanGradientWarning(UserWarning):
    """Warned by ``nan_guard("warn")`` (a UserWarning: ext silences its own RuntimeWarnings)."""


def clip(min: float | None = None, max: float | None = None) -> Callable:  # noqa: A002
    """A gradient hook clamping each element of the gradient to ``[min, max]``."""
    if min is None and max is None:
        raise ValueError("clip(): at least one of min and max must be given")
    if min is not None and max is not None and min > max:
        raise ValueError(f"clip(): min ({min}) must not exceed max ({max})")

    def clip_hook(grad):
        note("clip", f"[{min}, {max}]")
        return grad.clamp(min, max)
    return clip_hook


def scale(k: float) -> Callable:
    """A gradient hook multiplying the gradient by ``k``."""
    if not isinstance(k, (int, float)) or isinstance(k, bool) or not math.isfinite(k):
        raise ValueError(f"scale(): k must be a finite number, got {k!r}")

    def scale_hook(grad):
        note("scale", f"x{k}")
        return grad * k
    return scale_hook


_ACTIONS = ("raise", "zero", "warn")


def nan_guard(action: str = "raise") -> Callable:
    """A gradient hook watching for NaN: ``"raise"`` a RuntimeError, replace NaN by ``"zero"``
    (other values unchanged), or ``"warn"`` (:class:`NanGradientWarning`) and pass the gradient
    on."""
    if action not in _ACTIONS:
        raise ValueError(f"nan_guard(): action must be one of {_ACTIONS}, got {action!r}")

    def nan_guard_hook(grad):
        nan = grad.isnan()
        count = int(nan.sum())
        note("nan_guard", f"{count} NaN")
        if not count:
            return None
        message = (f"nan_guard: the gradient of shape {tuple(grad.shape)} has {count} NaN "
                   f"value(s)")
        if action == "raise":
            raise RuntimeError(message)
        if action == "warn":
            warnings.warn(message, NanGradientWarning, stacklevel=2)
            return None
        return namespace_of(grad).where(nan, grad.new_zeros(()), grad)
    return nan_guard_hook


class HookGroup:
    """The handles of one ``register_all`` call: ``remove()`` (or leaving a ``with`` block)
    removes every hook of the group."""

    def __init__(self, handles: list) -> None:
        self.handles = handles

    def remove(self) -> None:
        """Remove every hook of the group (a second call does nothing)."""
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def __len__(self) -> int:
        return len(self.handles)

    def __enter__(self) -> HookGroup:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


def register_all(params: Iterable, hook: Callable) -> HookGroup:
    """``p.register_hook(hook)`` on every tensor of ``params`` (an iterable of tensors, or a
    module, whose parameters are taken); one handle removes them all.

    Nothing is registered if any element is not a tensor that requires grad.
    """
    if hasattr(params, "parameters") and callable(params.parameters):
        params = params.parameters()
    tensors = list(params)
    for i, p in enumerate(tensors):
        if not hasattr(p, "register_hook") or not getattr(p, "requires_grad", False):
            raise RuntimeError(
                f"register_all(): element {i} ({type(p).__name__}) is not a tensor that "
                "requires grad, so it cannot have a gradient hook")
    return HookGroup([p.register_hook(hook) for p in tensors])
