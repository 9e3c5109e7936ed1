"""``ext.special``: torch.special's functions, gathered from the op family that declares them
(loaded here, on first use of ``ext.special``)."""

from __future__ import annotations

from .functions import load as _load

_load("special")

from .functions.builtin import special as _special  # noqa: E402

globals().update(_special.SPECIAL)
