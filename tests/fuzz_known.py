"""The deep fuzzer's documented differences: torch's own bugs and limits that ext does not copy.

Each entry names a section of ``docs/differences.md`` and states, as narrowly as it can, the
mismatch it explains: the mode, the category, torch's exception type and message (a regular
expression over its first line) and what ext did. ``fuzz_deep`` counts a mismatch an entry
explains apart from the real ones, deletes the statement it showed at and checks the rest of the
program as usual, so that a documented difference hides nothing after it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Known:
    """One documented difference, as a predicate over a fuzzer finding."""

    name: str
    section: str  # the heading of its entry in docs/differences.md
    torch_raises: str  # the builtin exception type torch raises ("" when torch does not raise)
    message: str  # a regular expression torch's message must match from its start
    modes: frozenset = frozenset()  # the modes it happens in (empty: every mode)
    ops: tuple = ()  # one of these op names must occur in the program (empty: any)
    values: Callable | None = None  # for a difference in values: (torch's, ext's) -> bool

    def explains(self, f) -> bool:
        """Whether finding ``f`` (a ``fuzz_deep.Finding``) is this difference: torch raises as
        stated and ext runs, or (``values``) the statement's values differ as stated."""
        if self.modes and f.mode not in self.modes:
            return False
        if self.ops and not any(any(o in st.op for o in self.ops) for st in f.prog.stmts):
            return False
        if self.values is not None:
            return (f.category == "value" and f.stmt < len(f.prog.stmts)
                    and f.prog.stmts[f.stmt].op in self.ops
                    and hasattr(f.torch, "data") and hasattr(f.ext, "data")
                    and self.values(f.torch, f.ext))
        t = f.torch
        return (f.category in ("outcome", "error") and f.ext == "ok"
                and isinstance(t, tuple) and t[:1] == ("raises",) and t[1] == self.torch_raises
                and re.match(self.message, getattr(t, "message", "")) is not None)


KNOWN = (
    Known("backward under forward AD", "Backward while a forward-AD level is active",
          "NotImplementedError", r"Trying to use forward AD with \S+ that does not support it",
          frozenset({"fwd"})),
    Known("clamp backward, broadcast result",
          "`clamp` backward when the result is broadcast beyond the input",
          "RuntimeError", r"output with shape \[[\d, ]*\] doesn't match the broadcast shape",
          ops=("clamp",)),
    Known("bool base of pow", "`False ** x` (a bool base) backward", "RuntimeError",
          r"false INTERNAL ASSERT FAILED at .*Scalar\.cpp", ops=("pow",)),
)


def _gelu_inf(t, e) -> bool:
    # torch's float32 kernel gives nan for +inf (in vectorized blocks); ext gives inf
    if t.dtype != "float32" or e.dtype != "float32" or t.data.shape != e.data.shape:
        return False
    diff = ~((t.data == e.data) | (np.isnan(t.data) & np.isnan(e.data)))
    return bool(diff.any() and (np.isnan(t.data[diff]).all() and np.isposinf(e.data[diff]).all()))


KNOWN += (
    Known("gelu of +inf in float32", "`gelu` of `+inf` in float32", "", "", ops=("gelu",),
          values=_gelu_inf),
)


def explain(f) -> str | None:
    """The name of the documented difference that explains finding ``f``, or None."""
    for k in KNOWN:
        if k.explains(f):
            return k.name
    return None
