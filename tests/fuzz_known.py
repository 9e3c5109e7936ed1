"""The deep fuzzer's documented differences: torch's own bugs and limits that ext does not copy.

Each entry names a section of ``docs/differences.md`` and states, as narrowly as it can, the
mismatch it explains: the mode, the category, torch's exception type and message (a regular
expression over its first line) and what ext did. ``fuzz_deep`` counts a mismatch an entry
explains apart from the real ones, deletes the statement it showed at and checks the rest of the
program as usual, so that a documented difference hides nothing after it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Known:
    """One documented difference, as a predicate over a fuzzer finding."""

    name: str
    section: str  # the heading of its entry in docs/differences.md
    torch_raises: str  # the builtin exception type torch raises ("" when torch does not raise)
    message: str  # a regular expression torch's message must match from its start
    modes: frozenset = frozenset()  # the modes it happens in (empty: every mode)
    ops: tuple = ()  # one of these op names must occur in the program (empty: any)

    def explains(self, f) -> bool:
        """Whether finding ``f`` (a ``fuzz_deep.Finding``) is this difference: torch raises as
        stated, ext runs."""
        if self.modes and f.mode not in self.modes:
            return False
        if self.ops and not any(any(o in st.op for o in self.ops) for st in f.prog.stmts):
            return False
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


def explain(f) -> str | None:
    """The name of the documented difference that explains finding ``f``, or None."""
    for k in KNOWN:
        if k.explains(f):
            return k.name
    return None
