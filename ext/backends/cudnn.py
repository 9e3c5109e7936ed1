"""``ext.backends.cudnn``: cuDNN's flags, kept for the scripts that set them (no cuDNN here)."""

from __future__ import annotations

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """Always False: ext has no cuDNN."""
    return False


def version() -> None:
    """None: ext has no cuDNN."""
    return None
