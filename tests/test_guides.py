"""The guides (docs/guides/*.md): the code on each page runs, top to bottom, as one script in a
fresh process, and the README's first screen links every guide.

A page's ```python blocks are its code; a block preceded by ``<!-- needs: PACKAGE -->`` runs only
where PACKAGE is installed (its test skips otherwise), in a script of its own after the page's
plain blocks."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUIDES = sorted((ROOT / "docs" / "guides").glob("*.md"))
BLOCK = re.compile(r"(?:<!-- needs: (?P<needs>[\w.-]+) -->\n)?```python\n(?P<code>.*?)```", re.S)


def _blocks(path: Path) -> list[tuple[str | None, str]]:
    """(the package a block needs or None, its code), in page order."""
    return [(m["needs"], m["code"]) for m in BLOCK.finditer(path.read_text())]


def _run(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    script = tmp_path / "guide.py"
    script.write_text(code)
    return subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)


def test_there_are_two_guides_each_with_code():
    names = [p.stem for p in GUIDES]
    assert names == ["check_your_function", "torch_models"]
    for path in GUIDES:
        assert sum(needs is None for needs, _ in _blocks(path)) >= 3, path.name


@pytest.mark.slow
@pytest.mark.parametrize("path", GUIDES, ids=[p.stem for p in GUIDES])
def test_guide_code_runs(path, tmp_path):
    plain = "\n".join(code for needs, code in _blocks(path) if needs is None)
    done = _run(plain, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    # (a guide shows no stray warnings: what it prints is what the page says it prints)
    assert "Warning" not in done.stderr, done.stderr


WITH_OPTIONAL = [p for p in GUIDES if any(needs for needs, _ in _blocks(p))]


@pytest.mark.slow
@pytest.mark.parametrize("path", WITH_OPTIONAL, ids=[p.stem for p in WITH_OPTIONAL])
def test_guide_code_needing_an_optional_package_runs_where_it_is_installed(path, tmp_path):
    optional = [(needs, code) for needs, code in _blocks(path) if needs is not None]
    missing = sorted({n for n, _ in optional if importlib.util.find_spec(n) is None})
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    done = _run("\n".join(code for _, code in optional), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_readme_first_screen_links_every_guide():
    first_screen = "\n".join((ROOT / "README.md").read_text().splitlines()[:30])
    for path in GUIDES:
        assert f"docs/guides/{path.name}" in first_screen, path.name
