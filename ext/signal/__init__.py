"""``ext.signal``: torch.signal's names (its window functions, ``ext.signal.windows``)."""

from __future__ import annotations

from . import windows

__all__ = ["windows"]
