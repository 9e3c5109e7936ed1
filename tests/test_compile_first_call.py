"""An ext Function called for the first time inside ``torch.compile(fullgraph=True)`` compiles
with no graph break: each pack op and a user's Function in a fresh process of its own, the
built-ins together in one (``compile_first_call.py`` runs them; half the processes import ext
before torch, half after)."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ext.testing import cases

HERE = Path(__file__).resolve().parent
PACK = [c.name for c in cases.op_cases("pack")]
BUILTIN = [c.name for c in cases.op_cases("builtin")]


def _run(args: list[str]) -> dict:
    done = subprocess.run([sys.executable, "compile_first_call.py", *args], cwd=HERE,
                          capture_output=True, text=True, timeout=900)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise AssertionError(f"compile_first_call.py {' '.join(args)} reported nothing:\n"
                             + done.stderr[-3000:])
    return {r["name"]: r for r in lines}


@pytest.fixture(scope="module")
def results() -> dict:
    """Every process's report, run two at a time."""
    jobs = [[name] + (["--ext-first"] if i % 2 else []) for i, name in enumerate(PACK)]
    jobs += [["--user"], ["--user", "--ext-first"], BUILTIN]
    with ThreadPoolExecutor(2) as pool:
        reports = list(pool.map(_run, jobs))
    merged: dict = {}
    for args, report in zip(jobs, reports):
        for name, result in report.items():
            merged[(name, "--ext-first" in args)] = result
    return merged


@pytest.mark.slow
@pytest.mark.parametrize("name", PACK)
def test_pack_op_compiles_with_fullgraph_on_its_first_call(results, name):
    (result,) = [r for (n, _), r in results.items() if n == name]
    assert result["status"] == "ok", result["detail"]


@pytest.mark.slow
@pytest.mark.parametrize("ext_first", [False, True], ids=["torch-first", "ext-first"])
def test_a_users_function_compiles_with_fullgraph_on_its_first_call(results, ext_first):
    # with --ext-first the class is defined before torch is imported
    result = results[("user.UserExp", ext_first)]
    assert result["status"] == "ok", result["detail"]


@pytest.mark.slow
def test_builtins_compile_with_fullgraph_on_their_first_call_in_one_process(results):
    got = {n: r for (n, _), r in results.items() if n in set(BUILTIN)}
    assert set(got) == set(BUILTIN)
    failed = {n: r["detail"] for n, r in got.items() if r["status"] == "fail"}
    assert not failed, failed
    compiled = [n for n, r in got.items() if r["status"] == "ok"]
    assert len(compiled) > 100  # (the skips: composites, and backwards that branch on values)


def test_import_ext_prepares_the_bridge_only_once_torch_is_imported():
    code = ("import importlib.util, sys, ext\n"
            "assert 'torch' not in sys.modules and 'ext.compat' not in sys.modules\n"
            "assert importlib.util.find_spec('torch') is not None  # (asking imports nothing)\n"
            "assert 'torch' not in sys.modules and 'ext.compat' not in sys.modules\n"
            "class Late(ext.autograd.Function):\n"
            "    @staticmethod\n"
            "    def forward(ctx, x):\n"
            "        return x * 2\n"
            "import torch, ext.compat as C\n"
            "assert Late in C._DEFAULT and ext.functions.dropin.Exp in C._DEFAULT\n"
            "assert not any(type(f).__name__ == '_Watcher' for f in sys.meta_path)\n"
            "assert torch.__loader__ is torch.__spec__.loader\n"
            "assert type(torch.__loader__).__name__ == 'SourceFileLoader'\n"
            "class Later(ext.autograd.Function):\n"
            "    @staticmethod\n"
            "    def forward(x):\n"
            "        return x * 3\n"
            "    @staticmethod\n"
            "    def setup_context(ctx, inputs, output):\n"
            "        ctx.k = 3\n"
            "    @staticmethod\n"
            "    def backward(ctx, g):\n"
            "        return g * ctx.k\n"
            "assert Later in C._DEFAULT\n"
            "x = torch.ones(2, requires_grad=True)\n"
            "Later.apply(x).sum().backward()\n"
            "assert x.grad.tolist() == [3.0, 3.0]\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"
