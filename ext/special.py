"""``ext.special``: torch.special's functions, gathered from the op families that declare them."""

from __future__ import annotations

from .functions.builtin import special as _special

globals().update(_special.SPECIAL)
