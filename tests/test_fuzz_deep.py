"""The deep differential fuzzer's slice in the suite: the first 400 seeded programs, every mode.

Cross-backend test: it runs ``python -m fuzz_deep 400`` (the long run's first seeds) in a fresh
interpreter, as ``make fuzz`` does, and passes when no program mismatches and no run fails.
Each program runs on ext and on torch under every mode of ``fuzz_deep.MODES`` and the
observations are compared (``fuzz_deep.py`` says what is observed); documented differences
(``fuzz_known.py``) and programs that crash torch alone are counted apart, as there. The run
happens in worker processes, not in pytest's: torch 2.13 itself can crash on a valid program,
and a crash must not end the suite. A failure shows the report: each mismatch's signature, its
seeds, and a shrunk program to paste.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

COUNT = 400
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.slow
def test_seeded_programs_agree_with_torch():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "fuzz_deep", str(COUNT), "--show", "20"],
                          env=env, capture_output=True, text=True, timeout=900)
    report = done.stdout
    summary = next(line for line in report.splitlines() if "programs x" in line)
    assert f"{COUNT} programs x" in summary, report
    assert " 0 programs mismatched" in summary and " 0 harness errors" in summary, report
    assert done.returncode == 0, report


def test_the_documented_tangent_of_a_multiply_by_the_targets_memory_is_told_by_its_values():
    # torch's tangent of x.view(3).mul_(x) is t*x + t*x_new (docs/differences.md, "Tangent of
    # `x.mul_(x)`"); fuzz_known explains that mismatch from torch's observations around it,
    # and not another value of ext's.
    import dataclasses

    import fuzz_deep
    import fuzz_known
    from fuzz_programs import Program, Stmt

    leaf = Stmt("v0 = T.tensor([-1.75, 0.5, 2.0])", "leaf", "float64", "leaf",
                "v0 = fw.make_dual(T.tensor([-1.75, 0.5, 2.0], dtype=T.float64), "
                "T.tensor([0.5, -1.0, 0.25], dtype=T.float64))")
    prog = Program(0, (leaf, Stmt("v0.view((3,)).mul_(v0)", "inplace.mul_", "float64")))
    found = fuzz_deep.compare_all(prog, "fwd")
    assert [f.category for f in found] == ["tangent"]
    assert fuzz_known.explain(found[0]) == "tangent of x.mul_(x)"
    wrong = found[0].ext.data + 1
    assert fuzz_known.explain(dataclasses.replace(
        found[0], ext=fuzz_deep.Arr(found[0].ext.dtype, wrong))) is None


def test_the_documented_zero_tensor_of_abs_double_backward_is_told_by_its_values():
    # torch's double backward through abs meets sgn's zero tensor, which stays 0 where ext's
    # zeros meet 0 / 0 (an amin whose saved result was written in place, under saved-tensor
    # hooks: docs/differences.md, "torch's zero tensors absorb `nan`"); fuzz_known explains
    # that nan, and not one of another value, nor one in a program without abs.
    import dataclasses

    import fuzz_deep
    import fuzz_known
    from fuzz_programs import Program, Stmt

    stmts = (Stmt("v0 = T.tensor([0.25], requires_grad=True)", "leaf", "float32", "leaf"),
             Stmt("v1 = v0.log() * 1", "mul", "float32"),
             Stmt("v2 = v1.amin()", "amin", "float32"),
             Stmt("v3 = v2.abs_()", "inplace.abs_", "float32"),
             Stmt("gs = T.autograd.grad((v2 * 1.5).sum(), [v0, v1], create_graph=True)",
                  "tail.grad_create_graph", "float32", "backward"),
             Stmt("gsum = sum((x * 1.5).sum() for x in gs)", "tail.gsum", "float32"),
             Stmt("ggs = T.autograd.grad(gsum, [v0, v1])", "tail.double_backward", "float32",
                  "backward"))
    found = fuzz_deep.compare_all(Program(0, stmts), "saved_hooks")
    assert [(f.category, f.label) for f in found] == [("grad", "ggs")]
    assert fuzz_known.explain(found[0]) == "zero tensor absorbs nan"
    # ext's nan where torch has 0, made 1
    other = tuple((*e[:2], fuzz_deep.Arr(e[2].dtype, np.where(
        (t[2].data == 0) & np.isnan(e[2].data), 1, e[2].data).astype(e[2].data.dtype)))
        for t, e in zip(found[0].torch, found[0].ext))
    assert fuzz_known.explain(dataclasses.replace(found[0], ext=other)) is None
    no_abs = Program(0, stmts[:3] + (Stmt("v3 = v2.neg_()", "inplace.neg_", "float32"),)
                     + stmts[4:])
    assert fuzz_known.explain(dataclasses.replace(found[0], prog=no_abs)) is None
