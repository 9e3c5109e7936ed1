"""Warnings that torch gives once per process unless ``set_warn_always(True)``."""

from __future__ import annotations

import warnings

_state = {"always": False, "given": set()}


def set_warn_always(value: bool) -> None:
    """Give once-per-process warnings every time (True) or only the first time (False)."""
    _state["always"] = bool(value)


def is_warn_always_enabled() -> bool:
    """Whether once-per-process warnings are given every time."""
    return _state["always"]


def warn_once(message: str, category: type = UserWarning, stacklevel: int = 2) -> None:
    """Warn the first time in this process (every time under ``set_warn_always(True)``)."""
    if _state["always"] or message not in _state["given"]:
        _state["given"].add(message)
        warnings.warn(message, category, stacklevel=stacklevel + 1)
