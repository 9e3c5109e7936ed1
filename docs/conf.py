"""Sphinx configuration of the documentation site (`make docs` builds it into docs/_build/html).

The site shows pages that live beside what they describe: the walkthroughs (tutorials/) and the
benchmark results (benchmarks/RESULTS.md). Sphinx reads sources only from docs/, so the folders
are linked in as docs/tutorials and docs/benchmarks (symlinks made below, gitignored): nothing is
copied by hand, a page's address mirrors its path in the repository, and the walkthroughs execute
with their own folder as the working directory, where they import ``sidebyside`` as they do in
Jupyter and in tests/test_tutorials.py.
"""

from __future__ import annotations

import os
import shutil
from importlib import metadata
from pathlib import Path

from sphinx import addnodes

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
LINKED = {"tutorials": ROOT / "tutorials", "benchmarks": ROOT / "benchmarks"}


def _link_folders() -> None:
    """Make docs/<name> a symlink to the repository's folder of that name (idempotent)."""
    for name, target in LINKED.items():
        link = DOCS / name
        relative = Path(os.path.relpath(target, DOCS))
        if link.is_symlink() and Path(os.readlink(link)) == relative:
            continue
        if link.is_symlink():
            link.unlink()
        elif link.exists():
            raise RuntimeError(f"{link} should be a symlink to {target}; move it away")
        try:
            link.symlink_to(relative, target_is_directory=True)
        except FileExistsError:  # another build made it just now
            pass


_link_folders()

# The walkthroughs' kernels inherit this environment. ipykernel draws plots inline only when
# MPLBACKEND is unset (the tests set Agg, which would print "<Figure size ...>" instead), and
# hashing is seeded as in tests/test_tutorials.py.
os.environ.pop("MPLBACKEND", None)
os.environ["PYTHONHASHSEED"] = "0"

project = "ext"
author = "the ext maintainers"
copyright = "the ext maintainers"
try:
    release = version = metadata.version("ext")
except metadata.PackageNotFoundError:
    release = version = ""

extensions = ["myst_nb"]

# Pages: every Markdown file (docs/*.md, tutorials/README.md, benchmarks/RESULTS.md) and the
# walkthroughs tutorials/NN_*.py. With .py as a source suffix (nb_custom_formats below) only those
# may be read: not conf.py, sidebyside.py or the benchmark scripts.
include_patterns = ["**.md", "tutorials/[0-9][0-9]_*.py"]
exclude_patterns = ["_build", "**/.ipynb_checkpoints"]

# The walkthroughs are jupytext percent files, read as notebooks without a converted copy.
nb_custom_formats = {".py": ["jupytext.reads", {"fmt": "py:percent"}]}

# Executed on every read, so that the site shows what the code does now (as the tests check it);
# an unchanged page is not read again (see _depend_on_the_engine). A walkthrough that raises
# fails the build: -W turns myst-nb's execution warning into an error.
nb_execution_mode = "force"
nb_execution_timeout = 120  # seconds per cell, as tests/test_tutorials.py
nb_execution_show_tb = True
nb_merge_streams = True  # a cell's printed lines in one block, not one block per flush

myst_enable_extensions = ["dollarmath"]  # the walkthroughs' $math$, as Jupyter shows it
myst_heading_anchors = 3  # `[text](page.md#a-heading)` links, and ids to check them against

html_theme = "alabaster"
html_title = f"ext {release}".strip()
html_theme_options = {
    "description": "PyTorch's autograd rebuilt over NumPy, and a pack of custom Functions "
                   "that run on both engines",
    "page_width": "1340px",  # two graph pictures side by side; 100-column code
    "sidebar_width": "240px",
    "body_max_width": "none",
}
html_show_sourcelink = False
html_static_path = ["_static"]
html_css_files = ["custom.css"]

# MathJax from the build itself, not a CDN: the site is read offline as often as not. One file
# of MathJax 3 (its SVG output, fonts included) comes from the sphinx-mathjax-offline package,
# which ships MathJax's files; its own extension would copy all 24 MB of them.
MATHJAX = "mathjax/tex-svg.js"
mathjax_path = MATHJAX


def _copy_mathjax(app, exception) -> None:
    """Put MathJax's one file where ``mathjax_path`` points, once the pages are written."""
    if exception is not None:
        return
    source = metadata.distribution("sphinx-mathjax-offline").locate_file(
        f"sphinx-mathjax-offline/static/{MATHJAX}")
    target = Path(app.outdir) / "_static" / MATHJAX
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def _depend_on_the_engine(app, docname: str, source: list[str]) -> None:
    """Record that a walkthrough's output depends on ext/ and sidebyside.py, so that an
    incremental `make docs` executes it again when the engine changes, not only its text."""
    if not docname.startswith("tutorials/") or docname == "tutorials/README":
        return
    for path in [ROOT / "tutorials" / "sidebyside.py", *sorted((ROOT / "ext").rglob("*.py"))]:
        app.env.note_dependency(str(path))


def _links_through_the_symlinks(app, doctree) -> None:
    """Repair the links that myst resolved through the symlinks, as GitHub shows them.

    myst follows a relative link to the real file, so ``[next](02_x.py)`` in a walkthrough lands
    in tutorials/, outside docs/: point it at the page docs/tutorials/02_x again. A link to a
    file that is no page (``sidebyside.py``, ``../ext/autograd/engine.py``, ``../README.md``)
    becomes a download, as myst makes one of a file of any other suffix.
    """
    srcdir = Path(app.srcdir)
    for node in list(doctree.findall(addnodes.pending_xref)):
        target = node.get("reftarget", "")
        if node.get("refdomain") != "doc" or not os.path.isabs(target):
            continue
        page = _page_in_linked_folder(Path(target))
        if page in app.env.found_docs:
            node["reftarget"] = page
            continue
        files = [Path(target + suffix) for suffix in app.config.source_suffix]
        existing = [f for f in files if f.is_file()]
        if not existing:
            continue  # myst warns that the document is unknown
        here = (srcdir / app.env.doc2path(app.env.docname, False)).parent.resolve()
        download = addnodes.download_reference(
            refdomain=None, reftarget=os.path.relpath(existing[0], here),
            refdoc=node["refdoc"], reftype="myst", refexplicit=node.get("refexplicit"))
        download += node.children
        node.replace_self(download)


def _page_in_linked_folder(path: Path) -> str | None:
    """The docname of ``path`` (a resolved path, without suffix) seen through a symlink."""
    for name, folder in LINKED.items():
        if path.is_relative_to(folder.resolve()):
            return f"{name}/{path.relative_to(folder.resolve()).as_posix()}"
    return None


def setup(app):
    app.connect("source-read", _depend_on_the_engine)
    app.connect("build-finished", _copy_mathjax)
    # before Sphinx's collectors (priority 500) gather the downloads of the page
    app.connect("doctree-read", _links_through_the_symlinks, priority=400)
