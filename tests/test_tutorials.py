"""The walkthroughs of ``tutorials/`` run top to bottom with their assertions, as scripts and as
notebooks (converted by jupytext, executed by nbclient in an ipykernel), each in a fresh process;
each has an exercise whose solution cell calls a checker."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TUTORIALS = Path(__file__).resolve().parent.parent / "tutorials"
WALKTHROUGHS = sorted(TUTORIALS.glob("[0-9][0-9]_*.py"))
IDS = [p.stem for p in WALKTHROUGHS]
TIMEOUT = 120


def _env() -> dict:
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONHASHSEED="0")
    env.pop("PYTHONPATH", None)
    return env


def test_there_are_fourteen_walkthroughs_numbered_in_order():
    assert [p.name[:2] for p in WALKTHROUGHS] == [f"{i:02d}" for i in range(1, 15)]


@pytest.mark.parametrize("path", WALKTHROUGHS, ids=IDS)
def test_walkthrough_runs_as_a_script(path):
    done = subprocess.run([sys.executable, path.name], cwd=TUTORIALS, env=_env(),
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "✓" in done.stdout  # it compared something and said so


@pytest.mark.parametrize("path", WALKTHROUGHS, ids=IDS)
def test_walkthrough_runs_as_a_notebook(path, tmp_path):
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    notebook = jupytext.read(path)
    client = nbclient.NotebookClient(notebook, timeout=TIMEOUT, kernel_name="python3",
                                     resources={"metadata": {"path": str(TUTORIALS)}})
    old = dict(os.environ)
    os.environ.update(_env())
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    outputs = [o for cell in notebook.cells if cell.cell_type == "code"
               for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("✓" in o.get("text", "") for o in outputs if o.output_type == "stream")


@pytest.mark.parametrize("path", WALKTHROUGHS, ids=IDS)
def test_walkthrough_has_an_exercise_with_a_checked_solution(path):
    jupytext = pytest.importorskip("jupytext")
    cells = jupytext.read(path).cells
    solutions = [c for c in cells if "solution" in c.metadata.get("tags", [])]
    assert solutions, f"{path.name} has no cell tagged 'solution'"
    assert all(c.cell_type == "code" for c in solutions)
    assert any(re.search(r"\bcheck\w*\(", c.source) for c in solutions), \
        "a solution ends in a checker call"
    title = cells[0]
    assert title.cell_type == "markdown" and title.source.startswith("# "), "a title comes first"


@pytest.mark.parametrize("path", WALKTHROUGHS, ids=IDS)
def test_walkthrough_compares_engines_offline(path):
    text = path.read_text()
    assert "sidebyside" in text  # it runs its examples on both engines through the helper
    assert not re.search(r"\b(urllib|requests|http\.client|socket)\b", text)
    assert not re.search(r"\bcuda\(\)|device=.cuda", text)
