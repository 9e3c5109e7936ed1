"""A long chain of tiny ops, forward and backward: the per-op Python overhead of the engine.

A leaf of 1 or 16 float64 elements goes through 9999 rounds of sin, *1.0001, +0.1; then sum and
backward. Time per op = total / (3 * 9999). ext and torch run interleaved in one process.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

# This checkout's ext first (an editable install elsewhere would be measured instead).
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from _common import interleaved, machine, write_section  # noqa: E402, I001  (sets threads first)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import ext  # noqa: E402

ROUNDS = 9999
OPS = 3 * ROUNDS


def chain(T, start: np.ndarray) -> None:
    """The benchmarked program, written once for both backends."""
    x = T.tensor(start, requires_grad=True)
    y = x
    for _ in range(ROUNDS):
        y = y.sin() * 1.0001 + 0.1
    y.sum().backward()


def main(repeats: int = 7, write: bool = False) -> None:
    torch.set_num_threads(1)
    rows = []
    for size in (1, 16):
        start = np.linspace(0.1, 1.0, size)
        chain(ext, start)
        chain(torch, start)
        med = interleaved({"ext": functools.partial(chain, ext, start),
                           "torch": functools.partial(chain, torch, start)}, repeats)
        us = {k: v / OPS * 1e6 for k, v in med.items()}
        ratio = med["ext"] / med["torch"]
        rows.append(f"| {size} | {us['ext']:.2f} | {us['torch']:.2f} | {ratio:.2f}x |")
        print(f"size {size:2d}: ext {us['ext']:.2f} us/op, torch {us['torch']:.2f} us/op, "
              f"ratio {ratio:.2f}x")
    body = "\n".join([
        "## chain: per-op overhead (benchmarks/chain.py)",
        "",
        f"{ROUNDS} rounds of sin, *1.0001, +0.1 on a float64 leaf, then sum and backward; time "
        f"per op = total / {OPS}; median of {repeats} interleaved runs. {machine()}.",
        "",
        "| elements | ext us/op | torch us/op | ext / torch |",
        "|---:|---:|---:|---:|",
        *rows,
    ])
    if write:  # (--write: record the table in RESULTS.md)
        write_section("chain", body)


if __name__ == "__main__":
    main(write="--write" in sys.argv[1:])
