"""The parity report and the run over the whole registry.

``ParityReport`` is what ``check`` returns: per check a status and a detail, the likely cause of
the failures, and the warnings raised while checking (collected by ``collected_warnings``, which
the harness wraps around every check so that none of them prints). How a failure is told is here
too: ``worst_element`` (a value mismatch at its worst element), ``jacobian_mismatch`` (gradcheck's
at its worst Jacobian entry), ``error_text`` (an error, whole) and ``settled`` (each failure once,
nothing that could not be judged counted as passing). ``run_parity`` runs every case of
``op_cases()`` through ``check``; ``report_table`` prints the reports as a rich table (one row per
case, one column per check), and ``report_json`` as plain data.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from .cases import Case

__all__ = ["ParityReport", "CHECKS", "collected_warnings", "add_warnings", "settled",
           "worst_element", "error_text", "jacobian_mismatch", "run_parity", "report_table",
           "report_json", "QUICK_SKIPS"]

# The checks in dependency order: a check leans on those before it that it names in DEPENDS.
CHECKS = ("forward", "backward", "double_backward", "gradcheck", "gradgradcheck", "mini_engine",
          "hooks", "no_mutation", "upstream", "version", "saved_bytes", "compile", "torch_func",
          "autocast")
# (every check runs forward; those after ``backward`` run the Function's backward too)
DEPENDS = {name: {"forward"} | ({"backward"} if k > 1 else set())
           for k, name in enumerate(CHECKS)}
DEPENDS["gradgradcheck"] |= {"double_backward", "gradcheck"}
DEPENDS["saved_bytes"] = {"backward"}  # (saving less counts only with a right gradient)

_SHOWN = {"pass": "pass", "fail": "FAIL", "skip": "skipped:"}


@dataclass
class ParityReport:
    """The outcome of ``check``: per check, ``"pass"``, ``"fail"`` or ``"skip"`` (it did not run,
    or could not be judged) and a detail; ``warnings`` lists what was raised while checking,
    each once."""

    name: str
    results: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether no check failed."""
        return all(status != "fail" for status, _ in self.results.values())

    @property
    def cause(self) -> str | None:
        """The likely cause of the failures: the first failing check in dependency order (the
        checks that lean on it may fail because of it), or None when nothing fails."""
        return next((k for k in CHECKS if self.results.get(k, ("",))[0] == "fail"), None)

    def cause_line(self) -> str:
        """One sentence naming the likely cause and the failures that may follow from it."""
        cause = self.cause
        if cause is None:
            return ""
        others = [k for k in self.failures() if k != cause]
        follow = [k for k in others if cause in DEPENDS.get(k, ())]
        apart = [k for k in others if k not in follow]
        if not others:
            return f"likely cause: {cause} (the only failing check)"
        line = f"likely cause: {cause} (the first failing check in dependency order)"
        if follow:
            line += f"; {', '.join(follow)} run it and may fail because of it: fix {cause} first"
        if apart:
            line += f"; failing apart from it: {', '.join(apart)}"
        return line

    def failures(self) -> dict:
        """The checks that failed, with what differed."""
        return {k: d for k, (s, d) in self.results.items() if s == "fail"}

    def to_dict(self) -> dict:
        """The report as plain data (for JSON)."""
        return {"name": self.name, "ok": self.ok, "cause": self.cause,
                "checks": {k: {"status": s, "detail": d} for k, (s, d) in self.results.items()},
                "warnings": list(self.warnings)}

    def __str__(self) -> str:
        width = max(len(k) for k in self.results) if self.results else 0
        lines = [f"{self.name}: {'ok' if self.ok else 'FAILED'}"]
        if not self.ok:
            lines.append(f"  {self.cause_line()}")
        indent = " " * (width + 13)
        for k, (s, d) in self.results.items():
            shown = _SHOWN.get(s, s)
            text = f"  {k:<{width}}  {shown:<9}  {d}".rstrip() if s != "skip" else \
                f"  {k:<{width}}  {shown} {d}"
            # (a message of several lines keeps its lines, under the detail column)
            lines.append(text.replace("\n", "\n" + indent))
        if self.warnings:
            lines.append(f"  warnings raised while checking ({len(self.warnings)}):")
            lines += [f"    {w}".replace("\n", "\n      ") for w in self.warnings]
        return "\n".join(lines)


# ---------------------------------------------------------------------------------- what differs
def settled(results: dict, has_reference: bool) -> dict:
    """The results as the report shows them: each distinct failure once (a later check that
    fails with the same error says which check it is the same as), and no check that could
    not be judged counted as passing."""
    results = dict(results)
    first: dict = {}
    for name, (status, detail) in results.items():
        if status != "fail":
            continue
        key = _failure_key(detail)
        if key in first:
            results[name] = ("fail", f"same as {first[key]}")
        else:
            first[key] = name
    failed = [k for k in ("forward", "backward", "double_backward")
              if results.get(k, ("",))[0] == "fail"]
    if failed and results.get("saved_bytes", ("",))[0] == "pass":
        # (saving less than the reference is a saving only when the gradient is right)
        results["saved_bytes"] = ("skip", f"{failed[0]} fails, and saving less counts only "
                                          f"with a right result ({results['saved_bytes'][1]})")
    status, detail = results.get("mini_engine", ("", ""))
    if status == "pass" and failed:
        # (both engines run the same Function: agreeing shows the engines consistent, not
        # the Function right)
        results["mini_engine"] = ("pass", f"ext gives what fn gives on torch, so it fails "
                                          f"{failed[0]} the same way{_also(detail)}")
    elif status == "pass" and not has_reference:
        results["mini_engine"] = ("pass", "ext gives what fn gives on torch (no reference: "
                                          f"neither is checked against one){_also(detail)}")
    return results


def _also(detail: str) -> str:
    return f"; {detail}" if detail else ""


def _failure_key(detail: str) -> str:
    """What makes two failures the same: the message, whichever copy of the Function's node
    (the bridge's torch.func flavour, a compiled graph's) raised it."""
    detail = detail.removeprefix("torch.compile's backend raised ")
    return re.sub(r"\b\w*Backward\d*\b", "Backward", detail)


# torch.testing.assert_close's default (rtol, atol) by dtype; exact for the others
_TOLERANCES = {torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5),
               torch.float32: (1.3e-6, 1e-5), torch.float64: (1e-7, 1e-7)}


def worst_element(got: torch.Tensor, want: torch.Tensor, atol: float | None,
                  rtol: float | None) -> str:
    """Where got is furthest outside the tolerance of want: the index, both values, the
    absolute and relative errors, and how many elements differ."""
    if atol is None or rtol is None:
        rtol, atol = _TOLERANCES.get(want.dtype, (0.0, 0.0))
    g, w = got.to(torch.float64), want.to(torch.float64)
    error = (g - w).abs()
    # (nan where nan agrees; nan against a number is as far off as can be)
    error = torch.where(g.isnan() & w.isnan(), 0.0, error.nan_to_num(nan=float("inf")))
    excess = error - (atol + rtol * w.abs().nan_to_num(nan=0.0))
    flat = int(excess.reshape(-1).argmax())
    index = tuple(int(i) for i in np.unravel_index(flat, tuple(got.shape)))
    e, x, y = float(error.reshape(-1)[flat]), float(g.reshape(-1)[flat]), \
        float(w.reshape(-1)[flat])
    relative = e / abs(y) if y else float("inf") if e else 0.0
    return (f"{int((excess > 0).sum())} of {got.numel()} elements differ; worst at index "
            f"{_index(index)}: expected {y:.8g}, got {x:.8g} (abs error {e:.3g}, rel error "
            f"{relative:.3g}; allowed {atol:g} + {rtol:g} * |expected|)")


def _index(index: tuple) -> str:
    return f"({', '.join(map(str, index))})" if len(index) != 1 else f"({index[0]},)"


def error_text(e: BaseException) -> str:
    """An exception as a report's detail: its type and its whole message (a compiler's failure
    as the error its backend raised)."""
    inner = getattr(e, "inner_exception", None)
    if isinstance(inner, BaseException):
        return f"torch.compile's backend raised {error_text(inner)}"
    return f"{type(e).__name__}: {str(e).strip()}"


# gradcheck's default tolerances, which its Jacobians are compared with
GRADCHECK_ATOL, GRADCHECK_RTOL = 1e-5, 1e-3


def jacobian_mismatch(fn, inputs: tuple, label: str) -> str:
    """Where fn's Jacobian from backward differs most from the numerical one (central
    differences, as gradcheck takes them), for the first output and input that differ; ''
    where none does, or where the Jacobians are too large to form here."""
    where = [k for k, a in enumerate(inputs) if isinstance(a, torch.Tensor) and a.requires_grad]
    outs = _float_outputs(fn(*inputs))
    for i, out in enumerate(outs):
        for j, k in enumerate(where):
            if out.numel() * inputs[k].numel() > 250_000:
                return ""
            analytical = _analytical_jacobian(out, inputs[k])
            numerical = _numerical_jacobian(fn, inputs, k, i)
            excess = (analytical - numerical).abs() - (
                GRADCHECK_ATOL + GRADCHECK_RTOL * numerical.abs())
            if bool((excess > 0).any()):
                r, c = divmod(int(excess.reshape(-1).argmax()), inputs[k].numel())
                a, n = float(analytical[r, c]), float(numerical[r, c])
                at = _element(np.unravel_index(r, tuple(out.shape)))
                wrt = _element(np.unravel_index(c, tuple(inputs[k].shape)))
                return (f"Jacobian mismatch for {label} {i} with respect to input {j}: "
                        f"{int((excess > 0).sum())} of {excess.numel()} entries differ; worst "
                        f"d {label} {i}{at} / d input {j}{wrt}: numerical {n:.8g}, analytical "
                        f"{a:.8g} (abs error {abs(a - n):.3g}, rel error "
                        f"{abs(a - n) / abs(n) if n else float('inf'):.3g}; gradcheck allows "
                        f"{GRADCHECK_ATOL:g} + {GRADCHECK_RTOL:g} * |numerical|)")
    return ""


def _float_outputs(out) -> list:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if isinstance(o, torch.Tensor) and o.is_floating_point()]


def _element(index: tuple) -> str:
    return f"[{', '.join(str(int(i)) for i in index)}]" if index else ""


def _analytical_jacobian(out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """d out / d x from backward, a row per element of out."""
    rows = torch.zeros(out.numel(), x.numel(), dtype=torch.float64)
    if not out.requires_grad:
        return rows
    for r in range(out.numel()):
        pick = torch.zeros(out.numel(), dtype=out.dtype)
        pick[r] = 1
        (g,) = torch.autograd.grad(out, x, pick.reshape(out.shape), retain_graph=True,
                                   allow_unused=True)
        if g is not None:
            rows[r] = g.detach().reshape(-1)
    return rows


def _numerical_jacobian(fn, inputs: tuple, k: int, i: int, eps: float = 1e-6) -> torch.Tensor:
    """d output i / d input k by central differences, a column per element of input k."""
    x = inputs[k]
    columns = []
    for c in range(x.numel()):
        ends = []
        for step in (eps, -eps):
            moved = x.detach().clone()
            moved.view(-1)[c] += step
            args = list(inputs)
            args[k] = moved.requires_grad_(True)
            out = _float_outputs(fn(*args))[i]
            ends.append(out.detach().to(torch.float64).reshape(-1))
        columns.append((ends[0] - ends[1]) / (2 * eps))
    return torch.stack(columns, dim=1)


# ---------------------------------------------------------------------------------- warnings
def warning_text(message: warnings.WarningMessage) -> str:
    """A caught warning as one entry of a report: its category and message; anomaly mode's
    report of a failed backward keeps its first sentence, without the forward traceback."""
    text = str(message.message)
    head, mark, _ = text.partition(" Traceback of forward call that caused the error:")
    if mark:
        text = f"{head} (anomaly mode; the traceback of the forward call is left out)"
    return f"{message.category.__name__}: {text}"


@contextlib.contextmanager
def collected_warnings() -> Iterator[list]:
    """Collect the warnings raised inside (a list of ``warnings.WarningMessage``) instead of
    printing them, and mute torch.func's C++ notice that a vmap falls back to a slow loop
    (printed on stderr, out of Python's reach: a note on speed, not a finding)."""
    torch = sys.modules.get("torch")
    functorch = getattr(getattr(torch, "_C", None), "_functorch", None)
    switch = getattr(functorch, "_set_vmap_fallback_warning_enabled", None)
    if switch is not None and not _DEPTH[0]:
        switch(False)
    _DEPTH[0] += 1
    try:
        with warnings.catch_warnings(record=True) as caught:
            # (torch.func's slow-path notice for an in-place op under vmap: not a finding)
            warnings.filterwarnings("ignore", "There is a performance drop")
            yield caught
    finally:
        _DEPTH[0] -= 1
        if switch is not None and not _DEPTH[0]:  # (the outermost collector restores it)
            switch(True)


_DEPTH = [0]  # (how many collectors are open: a check inside a parity run nests in one)


def add_warnings(report: ParityReport, caught: list) -> None:
    """Add the caught warnings to the report, each distinct text once."""
    for message in caught:
        text = warning_text(message)
        if text not in report.warnings:
            report.warnings.append(text)


# ---------------------------------------------------------------------------------- the run
# What ``--quick`` leaves out: compiling costs seconds per case.
QUICK_SKIPS = {"compile": "--quick"}


def run_parity(selected: Iterable[Case] | None = None, quick: bool = False,
               compile_backend: str = "aot_eager",
               on_case: Callable[[Case, ParityReport], None] | None = None) -> list[ParityReport]:
    """Run ``check`` on each case (all of ``op_cases()`` unless given), calling ``on_case`` after
    each; ``quick`` skips the compile check. Each report carries the warnings its case raised."""
    from .cases import op_cases

    reports = []
    for case in op_cases() if selected is None else selected:
        started = time.perf_counter()
        with collected_warnings() as caught:
            report = case.check(skip=QUICK_SKIPS if quick else {},
                                compile_backend=compile_backend)
        add_warnings(report, caught)
        report.seconds = time.perf_counter() - started
        reports.append(report)
        if on_case is not None:
            on_case(case, report)
    return reports


# (short column heads: the table stays readable in 120 columns)
HEADS = {"forward": "fwd", "backward": "bwd", "double_backward": "2nd", "gradcheck": "gc",
         "gradgradcheck": "ggc", "mini_engine": "ext", "hooks": "hooks", "no_mutation": "mut",
         "upstream": "up", "version": "ver", "saved_bytes": "saved", "compile": "comp",
         "torch_func": "func", "autocast": "amp"}
_MARK = {"pass": "[green]ok[/green]", "fail": "[bold red]FAIL[/bold red]", "skip": "[dim]-[/dim]"}


def report_table(reports: list[ParityReport], title: str = "parity with torch"):
    """The reports as a ``rich.table.Table``: a row per case, a column per check."""
    from rich.table import Table

    table = Table(title=title, caption="  ".join(f"{h}: {n}" for n, h in HEADS.items()),
                  caption_justify="left")
    table.add_column("case", no_wrap=True)
    for name in CHECKS:
        table.add_column(HEADS[name], justify="center", no_wrap=True)
    for report in reports:
        table.add_row(report.name,
                      *(_MARK[report.results.get(name, ("skip", ""))[0]] for name in CHECKS))
    return table


def report_json(reports: list[ParityReport], quick: bool) -> dict:
    """The reports as plain data: totals, then each case's checks with their details."""
    failed = [r.name for r in reports if not r.ok]
    return {"quick": quick, "cases": len(reports), "failed": failed,
            "checks": {name: {s: sum(r.results.get(name, ("skip",))[0] == s for r in reports)
                              for s in ("pass", "fail", "skip")} for name in CHECKS},
            "reports": [{**r.to_dict(), "op": getattr(r, "op", ""),
                         "seconds": round(getattr(r, "seconds", 0.0), 3)} for r in reports]}
