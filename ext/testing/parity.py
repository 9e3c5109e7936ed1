"""The parity run over the whole registry: every case of ``op_cases()`` through ``check``.

``run_parity`` returns one ``ParityReport`` per case; ``report_table`` prints them as a rich table
(one row per case, one column per check), and ``report_json`` as plain data.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable

from ._harness import CHECKS, ParityReport
from .cases import Case, op_cases

__all__ = ["run_parity", "report_table", "report_json", "QUICK_SKIPS"]

# What ``--quick`` leaves out: compiling costs seconds per case.
QUICK_SKIPS = {"compile": "--quick"}


def run_parity(selected: Iterable[Case] | None = None, quick: bool = False,
               compile_backend: str = "aot_eager",
               on_case: Callable[[Case, ParityReport], None] | None = None) -> list[ParityReport]:
    """Run ``check`` on each case (all of ``op_cases()`` unless given), calling ``on_case`` after
    each; ``quick`` skips the compile check."""
    reports = []
    for case in op_cases() if selected is None else selected:
        started = time.perf_counter()
        with warnings.catch_warnings():
            # (torch.func's slow-path notice for an in-place op under vmap: not a finding)
            warnings.filterwarnings("ignore", "There is a performance drop")
            report = case.check(skip=QUICK_SKIPS if quick else {},
                                compile_backend=compile_backend)
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
