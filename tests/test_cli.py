"""``python -m ext``: its commands, their exit status (0 agree, 1 differ, 2 bad usage), and the
parity report's JSON."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from ext import cli

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.ext_only


def test_parity_runs_the_chosen_cases_and_writes_json(tmp_path, capsys):
    path = tmp_path / "parity.json"
    assert cli.main(["parity", "--quick", "-k", "silu", "--json", str(path)]) == 0
    data = json.loads(path.read_text())
    names = {r["name"] for r in data["reports"]}
    # the pack's silu, and ext's own silu and silu_backward ops
    assert {"silu", "silu_backward", "SiluBackward0-133"} <= names
    assert data["quick"] and not data["failed"]
    assert data["checks"]["compile"]["pass"] == 0  # (--quick)
    assert all(r["checks"]["compile"]["detail"] == "--quick" for r in data["reports"]
               if r["name"] == "silu")
    out = capsys.readouterr().out
    assert f"{data['cases']} cases over" in out and "0 failed" in out


def test_parity_exits_1_when_a_case_differs(monkeypatch, capsys):
    from ext.testing import cases

    class Doubled(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 3  # (wrong)

    wrong = cases.Case("doubled", "pack.doubled", Doubled.apply,
                       lambda g: (torch.ones(3, dtype=torch.float64, requires_grad=True),),
                       lambda x: x * 2)
    monkeypatch.setattr(cases, "op_cases", lambda kind="all": [wrong])
    assert cli.main(["parity", "--quick"]) == 1
    out = capsys.readouterr().out
    assert "doubled (pack.doubled):" in out and "backward: gradient 0" in out
    assert "1 failed" in out


def test_graph_writes_a_named_example_and_an_expression(tmp_path):
    dot = tmp_path / "custom.dot"
    assert cli.main(["graph", "custom", "-o", str(dot)]) == 0
    assert "SiluBackward" in dot.read_text()  # (the pack's Function, after backward)
    expr = tmp_path / "expr.dot"
    assert cli.main(["graph", "-e", "(T.ones(2, requires_grad=True) * 3).exp().sum()",
                     "--engine", "torch", "-o", str(expr)]) == 0
    text = expr.read_text()
    assert "SumBackward0" in text and "ExpBackward0" in text and "MulBackward0" in text


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_graph_renders_svg_with_dot(tmp_path):
    svg = tmp_path / "mlp.svg"
    assert cli.main(["graph", "mlp", "-o", str(svg)]) == 0
    assert svg.read_text().lstrip().startswith(("<?xml", "<svg"))


@pytest.mark.parametrize(("argv", "message"), [
    (["graph", "nope"], "unknown example 'nope'"),
    (["graph"], "give an example name or -e EXPRESSION"),
    (["graph", "-e", "1 +"], "the expression failed: SyntaxError"),
    (["graph", "-e", "3"], "make_dot"),
    (["parity", "-k", "no-such-op"], "no parity case matches 'no-such-op'"),
])
def test_bad_usage_exits_2_with_a_clear_message(argv, message, capsys):
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().out


def test_an_unknown_command_or_option_exits_2():
    for argv in (["frobnicate"], ["parity", "--fast"]):
        with pytest.raises(SystemExit) as exc:
            cli.main(argv)
        assert exc.value.code == 2


def test_bench_outside_a_checkout_says_so(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cli, "benchmarks_folder", lambda: tmp_path / "benchmarks")
    assert cli.main(["bench"]) == 2
    assert "run it from a checkout" in capsys.readouterr().out


@pytest.mark.slow
def test_python_m_ext_runs_the_example_then_the_quick_parity_run():
    out = subprocess.run([sys.executable, "-m", "ext"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:]
    assert "Both engines agree." in out.stdout
    assert "python -m ext tutorials" in out.stdout  # where a learner goes next
    assert "tensor([42.])" in out.stdout and "tensor([28.])" in out.stdout
    assert "ext::autograd::AccumulateGrad" in out.stdout
    assert "torch::autograd::AccumulateGrad" in out.stdout
    assert "parity with torch (quick: compile skipped)" in out.stdout
    assert " 0 failed, in " in out.stdout
