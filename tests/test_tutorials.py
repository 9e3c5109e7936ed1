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
    # its examples run on both engines through the helper, gradients are checked three ways,
    # and at least one common claim is held against what torch does
    for call in ("both(", "grad3(", "claim("):
        assert re.search(rf"\b{re.escape(call)}", text), f"{path.name} never calls {call})"
    assert not re.search(r"\b(urllib|requests|http\.client|socket)\b", text)
    assert not re.search(r"\bcuda\(\)|device=.cuda", text)


def _ext(*args: str, cwd: Path = TUTORIALS.parent, pythonpath: str | None = None):
    env = _env()
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run([sys.executable, "-m", "ext", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)


def test_cli_lists_the_walkthroughs_by_number_and_title():
    done = _ext("tutorials")
    assert done.returncode == 0, done.stderr
    for path in WALKTHROUGHS:
        title = next(line[4:] for line in path.read_text().splitlines() if line.startswith("# # "))
        assert f"{int(path.name[:2]):2d}  {title}  ({path.name})" in done.stdout


def test_cli_runs_one_walkthrough_and_refuses_an_unknown_number():
    done = _ext("tutorials", "1")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "✓ ext and torch agree" in done.stdout
    wrong = _ext("tutorials", "99")
    assert wrong.returncode == 2
    assert "no walkthrough 99" in wrong.stderr


@pytest.mark.slow
def test_walkthroughs_ship_in_the_wheel_and_run_from_an_install(tmp_path):
    """``pip install .`` carries the walkthroughs: the wheel holds them as ``ext/tutorials``,
    and ``python -m ext tutorials`` lists and runs them from there, away from the checkout."""
    import shutil
    import zipfile

    # built from a copy, so that setuptools' build/ folder stays out of the checkout
    source = tmp_path / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.ipynb")
    for part in ("ext", "tutorials"):
        shutil.copytree(TUTORIALS.parent / part, source / part, ignore=ignore)
    for part in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(TUTORIALS.parent / part, source / part)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "--no-build-isolation", "-q", "-w", str(tmp_path / "dist"),
                            str(source)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("ext-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(tmp_path / "site")
    for path in WALKTHROUGHS + [TUTORIALS / "sidebyside.py", TUTORIALS / "README.md"]:
        assert f"ext/tutorials/{path.name}" in names
    listed = _ext("tutorials", cwd=tmp_path, pythonpath=str(tmp_path / "site"))
    assert listed.returncode == 0, listed.stderr
    assert str(tmp_path / "site" / "ext" / "tutorials") in listed.stdout
    assert len([line for line in listed.stdout.splitlines() if ".py)" in line]) == 14
    ran = _ext("tutorials", "1", cwd=tmp_path, pythonpath=str(tmp_path / "site"))
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]


def test_shipped_text_cites_no_outside_source_documents():
    """What users read (walkthroughs, docs, README, the package, the tools) speaks for itself:
    no section marks, numbered exercises or source documents of somewhere else."""
    root = TUTORIALS.parent
    shipped = [root / "README.md", *root.glob("docs/*.md"), *root.glob("tutorials/*.*"),
               *root.glob("ext/**/*.py"), *root.glob("ext/**/*.pyi"), *root.glob("tools/*.py")]
    citation = re.compile(r"seed 0\d\d|§|\bexercise \d|seed documents?|seed's", re.I)
    found = [f"{p.relative_to(root)}:{n}: {line.strip()}" for p in shipped if p.is_file()
             for n, line in enumerate(p.read_text().splitlines(), 1) if citation.search(line)]
    assert not found, "\n".join(found)
