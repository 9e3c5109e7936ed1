"""The deep fuzzer's documented differences: torch's own bugs and limits that ext does not copy.

Each entry names a section of ``docs/differences.md`` and states, as narrowly as it can, the
mismatch it explains: the mode, the statements it shows at, and either torch's exception type
and message (a regular expression over its first line, ext running) or a test of the two
observations. ``fuzz_deep`` counts a mismatch an entry explains apart from the real ones,
deletes the statement it showed at and checks the rest of the program as usual, so that a
documented difference hides nothing after it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from fuzz_compare import TOLERANCE, close


@dataclass(frozen=True)
class Known:
    """One documented difference, as a predicate over a fuzzer finding."""

    name: str
    section: str  # the heading of its entry in docs/differences.md
    torch_raises: str | tuple = ""  # the builtin exception type(s) torch raises, ext running
    message: str = ""  # a regular expression torch's message must match from its start
    modes: frozenset = frozenset()  # the modes it happens in (empty: every mode)
    ops: tuple = ()  # op names (prefixes) of the statement it shows at (empty: any)
    needs: tuple = ()  # op names (prefixes) one of which must occur in the program
    check: Callable | None = None  # otherwise: (finding, statement) -> bool
    # ext may raise instead of running: torch's error stops a backward early, and ext, going
    # on, can meet another (a node freed by an earlier backward)
    ext_may_raise: bool = False

    def explains(self, f) -> bool:
        """Whether finding ``f`` (a ``fuzz_deep.Finding``) is this difference."""
        if self.modes and f.mode not in self.modes:
            return False
        st = f.prog.stmts[f.stmt] if f.stmt < len(f.prog.stmts) else None
        if self.ops and (st is None or not st.op.startswith(self.ops)):
            return False
        if self.needs and not any(s.op.startswith(self.needs) for s in f.prog.stmts):
            return False
        if self.check is not None:
            return st is not None and self.check(f, st)
        t = f.torch
        if f.category not in ("outcome", "error"):
            return False
        e = f.ext
        ext_ok = e == "ok" or self.ext_may_raise and isinstance(e, tuple) and e[:1] == ("raises",)
        return (ext_ok
                and isinstance(t, tuple) and t[:1] == ("raises",)
                and t[1] in ((self.torch_raises,) if isinstance(self.torch_raises, str)
                             else self.torch_raises)
                and re.match(self.message, getattr(t, "message", "")) is not None)


def _gelu_inf(f, st) -> bool:
    # torch's float32 kernel gives nan for +inf (in vectorized blocks); ext gives inf
    t, e = f.torch, f.ext
    if f.category != "value" or not (hasattr(t, "data") and hasattr(e, "data")):
        return False
    if t.dtype != "float32" or e.dtype != "float32" or t.data.shape != e.data.shape:
        return False
    # (the other entries are compared as the fuzzer compares them: the vectorized kernel may
    # differ from ext in the last bit there)
    inf = np.isnan(t.data) & np.isposinf(e.data)
    return bool(inf.any() and close(t.data, np.where(inf, np.nan, e.data), *TOLERANCE["float32"]))


# ``v3.mul_(v3)``, ``v3[0].mul_(v3[0])``, ``v3 *= v3``: the operand is the target itself
_SELF_MUL = re.compile(r"^(\w+)(\S*)(?:\.mul_\(| \*= )\1\2\)?$")


def _self_mul_tangent(f, st) -> bool:
    return f.category == "tangent" and any(
        _SELF_MUL.match(line.strip()) for line in st.code.splitlines())


# ``x.mul_(x[0])``, ``x.add_(x.t())``, ``x[0:2].add_(x[1:3])``, ``x[0:2] = x[1:3]``: the operand
# is a part (or another layout) of the target; ``x.add_(x)`` reads each element it writes only
_PART_OF_TARGET = (re.compile(r"^(.+)\.(?:mul_|add_|copy_)\(\1(?:\[0\]|\.t\(\)|\.mT)\)$"),
                   re.compile(r"^(.+)\[\d+:\d+\](?:\.add_\(| = )\1\[\d+:\d+\]\)?$"))


def _unseen_overlap(f, st) -> bool:
    return f.category == "value" and any(
        r.match(line.strip()) for r in _PART_OF_TARGET for line in st.code.splitlines())


BACKWARD = ("tail.", "backward", "autograd.grad")

KNOWN = (
    Known("backward under forward AD", "Backward while a forward-AD level is active",
          "NotImplementedError", r"Trying to use forward AD with \S+ that does not support it",
          modes=frozenset({"fwd"}), ops=BACKWARD, ext_may_raise=True),
    Known("clamp backward, broadcast result",
          "`clamp` backward with tensor bounds of different shapes",
          "RuntimeError", r"output with shape \[[\d, ]*\] doesn't match the broadcast shape",
          ops=BACKWARD, needs=("clamp",)),
    Known("bool base of pow", "`False ** x` (a bool base) backward", "RuntimeError",
          r"false INTERNAL ASSERT FAILED at .*Scalar\.cpp", needs=("pow",)),
    Known("zero tangent written in backward", "Backward while a forward-AD level is active",
          "RuntimeError", r"ZeroTensors are immutable", modes=frozenset({"fwd"}), ops=BACKWARD),
    # After a mark_dirty Function's apply failed for want of a jvp, torch's half-built node
    # passes None gradients, and its memory is often corrupted from then on: garbage sizes,
    # devices and types in backward's errors, or a crash (docs/differences.md).
    Known("backward of a Function whose jvp was missing",
          "Backward while a forward-AD level is active", ("TypeError", "RuntimeError"), r"",
          modes=frozenset({"fwd"}), ops=BACKWARD, needs=("Function.Dirty",),
          ext_may_raise=True),
    Known("gelu of +inf in float32", "`gelu` of `+inf` in float32", ops=("gelu",),
          check=_gelu_inf),
    Known("tangent of x.mul_(x)", "Tangent of `x.mul_(x)`", modes=frozenset({"fwd"}),
          ops=("inplace.",), check=_self_mul_tangent),
    Known("in-place op with an unseen overlap",
          "An in-place op whose operand is a part of the written tensor that torch cannot see",
          ops=("inplace.overlap",), check=_unseen_overlap),
)


def explain(f) -> str | None:
    """The name of the documented difference that explains finding ``f``, or None."""
    for k in KNOWN:
        if k.explains(f):
            return k.name
    return None
