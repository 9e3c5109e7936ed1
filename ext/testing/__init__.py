"""``ext.testing``: the parity harness users run on their own Functions.

``check(fn, *inputs, reference=None, **options)`` runs ``fn`` through the checklist of
``ext.testing._harness`` and returns a ``ParityReport``: the likely cause first, each failure once
at its worst element, the warnings raised while checking collected (none printed).
``assert_parity`` raises AssertionError naming what differs; ``saved_bytes`` is the meter the
saved-tensor check uses. ``op_cases()`` lists the parity case of every op of the registry, and
``run_parity`` runs them all (what ``python -m ext parity`` prints). ``assert_close`` compares
ext tensors, NumPy arrays and numbers with torch.testing's tolerances (it uses no torch itself).
Importing this package imports torch.
"""

from ._close import assert_close
from ._harness import CHECKS, ParityReport, assert_parity, check, saved_bytes
from .cases import Case, op_cases
from .parity import run_parity

__all__ = ["assert_close", "check", "assert_parity", "saved_bytes", "ParityReport", "CHECKS",
           "Case", "op_cases", "run_parity"]
