"""``ext.linalg``: torch.linalg's functions, gathered from the op families that declare them
(loaded here, on first use of ``ext.linalg``)."""

from __future__ import annotations

from .functions import load as _load

_load("linalg_decomp")
_load("linalg_solve")

from .functions.builtin import linalg_decomp as _decomp  # noqa: E402
from .functions.builtin import linalg_solve as _solve  # noqa: E402

globals().update(_decomp.LINALG)
globals().update(_solve.LINALG)
