"""The documentation site (`make docs`): every page builds without a warning, with the walkthroughs
executed, every link and picture on it leads somewhere, and every page under docs/ is in the
index's table of contents."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
LINKED = ("tutorials", "benchmarks")  # folders docs/conf.py links into the site
BUILD_TIMEOUT = 1800
# what a plot cell shows when it ends with an artist instead of the figure
STRAY_REPR = re.compile(r"<(?:matplotlib\.[\w.]+ at 0x\w+|Figure size [^>]*)>")


def _docs_pages() -> list[str]:
    """The docnames of the Markdown pages that live in docs/ (not the linked folders)."""
    pages = []
    for path in sorted(DOCS.rglob("*.md")):
        relative = path.relative_to(DOCS)
        if relative.parts[0] in ("_build", *LINKED):
            continue
        pages.append(relative.with_suffix("").as_posix())
    return pages


def _sources() -> list[str]:
    """The docname of every page the site must have."""
    walkthroughs = sorted(ROOT.glob("tutorials/[0-9][0-9]_*.py"))
    return [*_docs_pages(), "tutorials/README", "benchmarks/RESULTS",
            *(f"tutorials/{p.stem}" for p in walkthroughs)]


# --------------------------------------------------------------------------- the index (fast)

def _toctree_entries() -> list[str]:
    """The entries of the toctrees of docs/index.md."""
    text = (DOCS / "index.md").read_text()
    entries = []
    for body in re.findall(r"```\{toctree\}\n(.*?)```", text, re.S):
        entries += [line.strip() for line in body.splitlines()
                    if line.strip() and not line.startswith(":")]
    return entries


def test_every_page_is_in_the_index():
    matching = pytest.importorskip("sphinx.util.matching", reason="sphinx reads the globs")
    entries = _toctree_entries()
    assert {"contracts", "differences", "benchmarks/RESULTS"} <= set(entries)
    unlisted = [docname for docname in _sources() if docname != "index"
                and not any(list(matching.patfilter([docname], entry)) for entry in entries)]
    assert not unlisted, f"in no toctree of docs/index.md: {unlisted} (the glob * takes the " \
        "pages of docs/ itself; a page in a subfolder needs an entry)"


# --------------------------------------------------------------------------- the built site (slow)

class _Page(HTMLParser):
    """The ids, the links (href and src) and the solution cells of one HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.solutions: list[bool] = []  # per solution cell: whether its input is collapsed
        self._open: list[tuple[str, str]] = []  # (tag, class) of the open <div>s and <details>

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if a.get(key):
                self.ids.add(a[key])
        for key in ("href", "src"):
            if a.get(key) is not None and tag in ("a", "link", "img", "script", "source"):
                self.links.append(a[key])
        classes = (a.get("class") or "").split()
        if tag == "div" and "cell_input" in classes and "tag_solution" in self._classes():
            self.solutions.append(any(t == "details" and "hide" in c and "open" not in c
                                      for t, c in self._open))
        if tag == "details":
            self._open.append((tag, " ".join(classes + (["open"] if "open" in a else []))))
        elif tag == "div":
            self._open.append((tag, " ".join(classes)))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("div", "details"):
            while self._open and self._open.pop()[0] != tag:
                pass

    def _classes(self) -> set[str]:
        return {c for _, classes in self._open for c in classes.split()}


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built as `make docs` builds it, in a fresh process, into a temporary folder."""
    for module in ("sphinx", "myst_nb", "jupytext", "nbclient", "ipykernel"):
        pytest.importorskip(module, reason=f"the docs build needs {module} (the dev extras)")
    out = tmp_path_factory.mktemp("docs") / "html"
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-j", "auto", "-W", "--keep-going", "-b", "html", "docs",
         str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    if done.returncode:
        pytest.fail(f"sphinx-build failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}",
                    pytrace=False)
    return out


@pytest.mark.slow
def test_every_source_has_a_page(site):
    missing = [d for d in _sources() if not (site / f"{d}.html").is_file()]
    assert not missing
    assert (site / "index.html").is_file()


@pytest.mark.slow
def test_every_link_and_picture_on_the_site_resolves(site):
    pages = {path: _parse(path) for path in sorted(site.rglob("*.html"))}
    broken = []
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith("mailto:"):
                continue  # external: not checked
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            where = f"{path.relative_to(site)}: {link}"
            if not target.is_relative_to(site.resolve()) or not target.is_file():
                broken.append(f"{where} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{where} (no id {parts.fragment!r} there)")
    assert not broken, "\n".join(broken)


@pytest.mark.slow
def test_walkthroughs_show_their_outputs_and_hide_their_solutions(site):
    for path in sorted(ROOT.glob("tutorials/[0-9][0-9]_*.py")):
        text = (site / "tutorials" / f"{path.stem}.html").read_text(encoding="utf-8")
        page = _parse(site / "tutorials" / f"{path.stem}.html")
        assert "✓" in text, f"{path.name}: no executed output on its page"
        assert page.solutions, f"{path.name}: no solution cell on its page"
        assert all(page.solutions), \
            f"{path.name}: a solution's code is not collapsed (tag the cell hide-input)"
        stray = STRAY_REPR.findall(html.unescape(text))
        assert not stray, f"{path.name} shows {stray}: a plot cell ends with an artist or a " \
            "closed figure (end it with `fig` or `_ = ...`)"
