"""Shared pieces of the benchmarks: one-thread setup, interleaved timing, RESULTS.md sections."""

from __future__ import annotations

import os

# One thread for torch and for NumPy's BLAS, set before either is imported.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import platform  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

RESULTS = Path(__file__).with_name("RESULTS.md")


def interleaved(runs: dict[str, Callable[[], None]], repeats: int) -> dict[str, float]:
    """Median wall time of each run, alternating the runs so that drift hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}


def machine() -> str:
    """A one-line description of where the numbers were taken."""
    import numpy
    import torch

    return (f"{platform.python_implementation()} {platform.python_version()}, numpy "
            f"{numpy.__version__}, torch {torch.__version__}, {os.cpu_count()} cores, "
            "one thread")


def write_section(name: str, body: str) -> None:
    """Replace (or add) the section ``name`` of benchmarks/RESULTS.md."""
    text = RESULTS.read_text() if RESULTS.exists() else (
        "# Benchmark results\n\nRatios are ext's time over torch's, measured in the same process "
        "(lower is better). Regenerate with `make bench`.\n")
    begin, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    section = f"{begin}\n{body.rstrip()}\n{end}"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else \
        text.rstrip() + "\n\n" + section + "\n"
    RESULTS.write_text(text)
