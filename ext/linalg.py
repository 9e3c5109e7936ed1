"""``ext.linalg``: torch.linalg's functions, gathered from the op families that declare them."""

from __future__ import annotations

from .functions.builtin import linalg_decomp as _decomp
from .functions.builtin import linalg_solve as _solve

globals().update(_decomp.LINALG)
globals().update(_solve.LINALG)
