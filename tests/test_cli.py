"""``python -m ext``: its commands, their exit status (0 agree, 1 differ, 2 bad usage, 3 a missing
system tool), the parity summary and its JSON, and the graph command's files."""

from __future__ import annotations

import json
import os
import re
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
    assert {"silu", "silu_backward"} <= names
    assert any(n.startswith("SiluBackward0-") for n in names)  # (named by its case's place)
    assert data["quick"] and not data["failed"]
    assert data["checks"]["compile"]["pass"] == 0  # (--quick)
    assert all(r["checks"]["compile"]["detail"] == "--quick" for r in data["reports"]
               if r["name"] == "silu")
    assert data["checked_nothing"] == ["silu_backward"]  # (a node with no backward of its own)
    out = capsys.readouterr().out
    assert f"{data['cases']} cases over" in out and "0 failed" in out
    # a short summary: counts, no table (that is --verbose)
    assert "checked nothing (silu_backward)" in out and "parity --verbose" in out
    assert "fwd" not in out and "SiluBackward0-" not in out


class _Scripted:
    """A parity case whose check returns the given results, warning first if asked to."""

    def __init__(self, name, results, warn=None):
        self.name, self.op, self.results, self.warn = name, f"pack.{name}", results, warn

    def check(self, **options):
        from ext.testing._harness import ParityReport

        if self.warn:
            import warnings
            warnings.warn(self.warn, UserWarning, stacklevel=1)
        report = ParityReport(self.name, dict(self.results))
        report.op = self.op
        return report


def test_a_case_that_checked_nothing_is_not_counted_as_passing(monkeypatch, capsys):
    from ext.testing import cases

    monkeypatch.setattr(cases, "op_cases", lambda kind="all": [
        _Scripted("ran", {"forward": ("pass", ""), "compile": ("skip", "--quick")}),
        _Scripted("idle", {"forward": ("skip", "no forward"), "backward": ("skip", "")})])
    assert cli.main(["parity", "--quick"]) == 0  # (nothing differs)
    out = capsys.readouterr().out
    assert "2 cases over 2 ops: 1 passed, 0 failed, 1 checked nothing (idle)" in out


def test_parity_collects_the_warnings_the_checks_raise(monkeypatch, capsys):
    from ext.testing import cases

    monkeypatch.setattr(cases, "op_cases", lambda kind="all": [
        _Scripted("noisy", {"forward": ("pass", "")}, warn="input 2 is not float64"),
        _Scripted("quiet", {"forward": ("pass", "")})])
    assert cli.main(["parity", "--quick"]) == 0
    captured = capsys.readouterr()
    assert "1 warning(s) raised while checking noisy (--verbose shows them)" in captured.out
    assert "not float64" not in captured.out and captured.err == ""
    assert cli.main(["parity", "--quick", "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "noisy: UserWarning: input 2 is not float64" in out


def test_parity_verbose_prints_the_table_with_whole_column_heads(capsys):
    assert cli.main(["parity", "--quick", "-k", "silu", "--verbose"]) == 0
    out = capsys.readouterr().out
    heads = next(line for line in out.splitlines() if line.startswith("case"))
    assert heads.split() == ["case", "fwd", "bwd", "2nd", "gc", "ggc", "ext", "hooks", "mut",
                             "up", "ver", "saved", "comp", "func", "amp"]
    assert "…" not in out and "SiluBackward0-" in out
    assert max(len(line) for line in out.splitlines()) <= 120


def test_parity_leaks_no_cpp_vmap_fallback_notice():
    # A fresh process: torch prints the notice once per process, from C++, on stderr.
    out = subprocess.run([sys.executable, "-m", "ext", "parity", "--quick", "-k", "fill"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:]
    assert "BatchedFallback" not in out.stderr and "Warning" not in out.stderr
    assert out.stderr == ""


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
    # the cause first, then each distinct failure once, expected against actual
    assert "likely cause: backward (the first failing check in dependency order)" in out
    worst = re.search(r"backward: gradient 0: \d of 3 elements differ; worst at index "
                      r"\(\d,\): expected (\S+), got (\S+) \(abs error", out)
    assert worst, out
    assert float(worst[2]) == pytest.approx(1.5 * float(worst[1]), rel=1e-6)  # (3 g for 2 g)
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


@pytest.mark.parametrize("engine", ["ext", "torch"])
def test_graph_names_the_leaves_after_variables_and_parameters(engine, tmp_path):
    example, mlp = tmp_path / "example.dot", tmp_path / "mlp.dot"
    assert cli.main(["graph", "example", "--engine", engine, "-o", str(example)]) == 0
    assert 'label="x\n (1)"' in example.read_text() and 'label="y\n (1)"' in example.read_text()
    assert cli.main(["graph", "mlp", "--engine", engine, "-o", str(mlp)]) == 0
    text = mlp.read_text()
    for name in ("net.0.weight", "net.0.bias", "net.2.weight", "net.2.bias"):
        assert f'label="{name}\n' in text


def test_graph_cut_by_max_nodes_names_the_nodes_it_left_out(tmp_path):
    path = tmp_path / "cut.dot"
    assert cli.main(["graph", "-e", "T.ones(3, requires_grad=True).exp().exp().exp().sum()",
                     "--max-nodes", "2", "-o", str(path)]) == 0
    text = path.read_text()
    assert 'label="ExpBackward0\n(not drawn)"' in text
    # every node an edge reaches is declared with a label, so none is drawn as a bare id
    reached = set(re.findall(r"^\t(\w+) -> (?:\w+)", text, re.M))
    reached |= set(re.findall(r"^\t\w+ -> (\w+)", text, re.M))
    declared = set(re.findall(r"^\t(\w+) \[label=", text, re.M))
    assert reached <= declared


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_graph_renders_svg_with_dot(tmp_path):
    svg = tmp_path / "mlp.svg"
    assert cli.main(["graph", "mlp", "-o", str(svg)]) == 0
    assert svg.read_text().lstrip().startswith(("<?xml", "<svg"))


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_graph_without_a_suffix_writes_svg_and_says_so(tmp_path, capsys, recwarn):
    assert cli.main(["graph", "mlp", "-o", str(tmp_path / "picture")]) == 0
    svg = tmp_path / "picture.svg"
    assert svg.read_text().lstrip().startswith(("<?xml", "<svg"))
    assert "has no suffix: writing SVG to" in capsys.readouterr().out
    assert not recwarn.list  # (graphviz warns about an unknown suffix when handed one)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["picture.svg"]


def test_graph_refuses_a_missing_folder_without_creating_it(tmp_path, capsys):
    missing = tmp_path / "no" / "such"
    assert cli.main(["graph", "mlp", "-o", str(missing / "g.svg")]) == 2
    assert f"the folder {missing} does not exist" in capsys.readouterr().out
    assert not (tmp_path / "no").exists()


def test_graph_without_dot_exits_3_with_the_install_command(tmp_path):
    # A fresh process whose PATH lacks Graphviz: only the DOT text can be written.
    env = dict(os.environ, PATH=str(tmp_path))
    out = subprocess.run([sys.executable, "-m", "ext", "graph", "mlp", "-o",
                          str(tmp_path / "g.svg")], capture_output=True, text=True, env=env)
    assert out.returncode == 3, out.stdout + out.stderr
    message = " ".join(out.stdout.split())
    assert "apt-get install graphviz" in message and "brew install graphviz" in message
    assert ".source" not in message and "Traceback" not in out.stderr
    assert not (tmp_path / "g.svg").exists()
    dot = subprocess.run([sys.executable, "-m", "ext", "graph", "mlp", "-o",
                          str(tmp_path / "g.dot")], capture_output=True, text=True, env=env)
    assert dot.returncode == 0, dot.stdout + dot.stderr
    assert "AddmmBackward0" in (tmp_path / "g.dot").read_text()


@pytest.mark.parametrize(("argv", "message"), [
    (["graph", "nope"], "unknown example 'nope'"),
    (["graph"], "give an example name or -e EXPRESSION"),
    (["graph", "-e", "1 +"], "the expression failed: SyntaxError"),
    (["graph", "-e", "3"], "make_dot"),
    (["graph", "mlp", "--max-nodes", "0"], "--max-nodes must be at least 1, got 0"),
    (["graph", "mlp", "--max-nodes", "-3"], "--max-nodes must be at least 1, got -3"),
    (["graph", "mlp", "-o", "graph.txt"], "cannot tell a format from the suffix '.txt'"),
    (["graph", "mlp", "-o", "."], "is a folder"),
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
def test_python_m_ext_runs_the_example_then_a_short_quick_parity_summary():
    # A fresh process: torch's warnings (C++ and Python) come once per process.
    out = subprocess.run([sys.executable, "-m", "ext"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:]
    assert "Both engines agree." in out.stdout
    assert "python -m ext tutorials" in out.stdout  # where a learner goes next
    assert "tensor([42.])" in out.stdout and "tensor([28.])" in out.stdout
    assert "ext::autograd::AccumulateGrad" in out.stdout
    assert "torch::autograd::AccumulateGrad" in out.stdout
    assert "loss.grad_fn.name()" in out.stdout  # (no column cut to "…")
    assert "parity with torch (quick: compile skipped)" in out.stdout
    assert " 0 failed" in out.stdout and "python -m ext parity --verbose" in out.stdout
    assert len(out.stdout.splitlines()) < 40
    assert out.stderr == ""  # no BatchedFallback notice, no gradcheck UserWarning
