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
        if f.category in ("outcome", "error"):
            t, e = f.torch, f.ext
        else:
            # Torch's error cut its statement short: what the statement showed after its
            # outcome (gradients, hook calls) stops where torch stopped.
            t, e = f.outcomes
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


def _array_pairs(t, e, pairs: list) -> bool:
    # torch's and ext's arrays side by side in two observations otherwise equal (False if not)
    if hasattr(t, "data") and hasattr(e, "data"):
        pairs.append((t, e))
        return True
    if isinstance(t, tuple) and isinstance(e, tuple) and type(t) is type(e):
        return len(t) == len(e) and all(_array_pairs(x, y, pairs) for x, y in zip(t, e))
    return type(t) is type(e) and t == e


# ``x.abs()``, ``T.abs(x)``, ``x.abs_()``: torch's backward of abs is ``grad * self.sgn()``
_ABS = re.compile(r"\babs_?\(")


def _zero_tensor_absorbs_nan(f, st) -> bool:
    # torch's gradient of sgn (of a real tensor) is an efficient zero tensor, which later
    # backward formulas multiply and divide as an exact zero (0 * nan, 0 * inf, 0 / 0 give
    # 0); ext's explicit zeros give nan there. Elsewhere the gradients agree.
    if f.category != "grad" or not any(_ABS.search(s.code) for s in f.prog.stmts):
        return False
    pairs: list = []
    if not _array_pairs(f.torch, f.ext, pairs):
        return False
    absorbed = False
    for t, e in pairs:
        if t.dtype != e.dtype or t.data.shape != e.data.shape or t.dtype not in TOLERANCE:
            return False
        zero = (t.data == 0) & np.isnan(e.data)
        absorbed = absorbed or bool(zero.any())
        if not close(np.where(zero, np.nan, t.data), e.data, *TOLERANCE[t.dtype]):
            return False
    return absorbed


# an in-place multiply: ``v3.mul_(...)``, ``v3[0] *= ...``
_INPLACE_MUL = re.compile(r"\.mul_\(| \*= ")


def _self_mul_tangent(f, st) -> bool:
    # torch's tangent of ``x.mul_(y)`` where y is x's memory (x itself, a view of the same
    # elements, its base) is t*x + t*x_new where the derivative, ext's, is 2*t*x: read from
    # torch's own observations of the variable before (x, t) and after (x_new), each element
    # of the two tangents agrees or is that pair
    if f.category != "tangent" or not any(
            _INPLACE_MUL.search(line) for line in st.code.splitlines()):
        return False
    name = f.label.removeprefix("tangent of ")
    seen: dict = {}
    for i, label, _, obs in f.torch_trace[:-1]:
        if label in (name, f.label):
            seen[label, i == f.stmt] = obs
    x, t, x_new = seen.get((name, False)), seen.get((f.label, False)), seen.get((name, True))
    arrays = (x, t, x_new, f.torch, f.ext)
    if not all(hasattr(a, "data") and a.data.dtype.kind == "f" for a in arrays):
        return False
    if len({a.data.shape for a in arrays}) != 1:
        return False
    x, t, x_new, got, ext = (a.data.astype(np.float64) for a in arrays)
    tol = dict(rtol=1e-4, atol=1e-5) if f.torch.dtype == "float32" else dict(rtol=1e-7,
                                                                              atol=1e-9)
    with np.errstate(all="ignore"):
        same = np.isclose(got, ext, equal_nan=True, **tol)
        pair = (np.isclose(got, t * x + t * x_new, equal_nan=True, **tol)
                & np.isclose(ext, 2 * t * x, equal_nan=True, **tol))
    return bool((same | pair).all())


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
          ops=BACKWARD, needs=("clamp",), ext_may_raise=True),
    Known("bool base of pow", "`False ** x` (a bool base) backward", "RuntimeError",
          r"false INTERNAL ASSERT FAILED at .*Scalar\.cpp", needs=("pow",), ext_may_raise=True),
    Known("zero tangent written in backward", "Backward while a forward-AD level is active",
          "RuntimeError", r"ZeroTensors are immutable", modes=frozenset({"fwd"}), ops=BACKWARD,
          ext_may_raise=True),
    Known("gradient and tangent of different dtypes",
          "Backward while a forward-AD level is active", "RuntimeError",
          r"\w+\(\): self \(\w+\) and source \(\w+\) must have the same scalar type",
          modes=frozenset({"fwd"}), ops=BACKWARD),
    # After a mark_dirty Function's apply failed for want of a jvp, torch's half-built node
    # passes None gradients, and its memory is often corrupted from then on: garbage sizes,
    # devices and types in backward's errors, or a crash (docs/differences.md).
    Known("backward of a Function whose jvp was missing",
          "Backward while a forward-AD level is active", ("TypeError", "RuntimeError"), r"",
          modes=frozenset({"fwd"}), ops=BACKWARD, needs=("Function.Dirty",),
          ext_may_raise=True),
    Known("zero tensor absorbs nan", "torch's zero tensors absorb `nan`",
          ops=("tail.double_backward",), check=_zero_tensor_absorbs_nan),
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
