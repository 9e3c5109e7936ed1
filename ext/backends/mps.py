"""``ext.backends.mps``: Apple's Metal backend, never available in ext."""

from __future__ import annotations


def is_available() -> bool:
    """Always False."""
    return False


def is_built() -> bool:
    """Always False."""
    return False
