"""The per-op benchmark's recipes stay runnable and complete (no timing: ``ops.py --check``).

``benchmarks/ops.py --check`` runs every recipe on ext and on torch, compares their graphs'
node names, and fails when a built-in op's node is reached by no recipe: a new op without a
recipe would otherwise fall out of the dispatch-cost comparison unnoticed.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.ext_only
def test_every_builtin_op_has_a_benchmark_recipe_that_runs_on_both_engines():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "ops.py"), "--check"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every built-in node name" in done.stdout, done.stdout


def test_the_llama_benchmark_times_the_patched_and_unpatched_step():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "llama.py"), "--repeats",
                           "1", "--steps", "1"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "| unpatched |" in done.stdout and "| patched |" in done.stdout, done.stdout
