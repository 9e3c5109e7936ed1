"""The ``python -m ext`` command line.

    python -m ext [-v]             the side-by-side example, then ``parity --quick``
    python -m ext example          one program run on ext and on torch, side by side
    python -m ext parity [-v]      ext.testing's checklist on every op of the registry: counts
                                   and failures (-v/--verbose: the table of every case)
    python -m ext graph NAME       the backward graph of an example (or ``-e EXPR``) to a file
    python -m ext bench            the benchmarks of a checkout, with their ext/torch ratios
    python -m ext tutorials [N]    the walkthroughs: list them, or run walkthrough N

Exit status: 0 when everything agrees, 1 when something differs (a parity mismatch, the example
disagreeing), 2 for bad usage (an unknown command, example or option, a missing output folder),
3 when a system tool is missing (Graphviz's ``dot``, to draw a graph as a picture).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

# loss = (x*y + 1)**2 at x=2, y=3: the chain rule gives dloss/dx = 2(xy + 1)y = 42 and 28 for y.
EXAMPLE = '''\
x = T.tensor([2.0], requires_grad=True)
y = T.tensor([3.0], requires_grad=True)
z = x * y
w = z + 1
loss = w ** 2
loss.backward()
'''


def _graph_lines(node, names: dict, depth: int = 0) -> list[str]:
    """The backward graph under ``node``, one line per node, with the names the engine gives."""
    if node is None:
        return ["  " * depth + "None (a constant)"]
    label = node.name()
    variable = getattr(node, "variable", None)
    if variable is not None:
        label += f" ({names.get(id(variable), '?')})"
    lines = ["  " * depth + label]
    for child, _ in node.next_functions:
        lines += _graph_lines(child, names, depth + 1)
    return lines


def run_example(T) -> list[tuple[str, str]]:
    """Run ``EXAMPLE`` on backend ``T`` and return (what, printed text) rows."""
    scope: dict = {"T": T}
    exec(EXAMPLE, scope)  # noqa: S102 - our own fixed program
    rows = [(name, repr(scope[name])) for name in ("x", "y", "z", "w", "loss")]
    rows.append(("loss.grad_fn.name()", scope["loss"].grad_fn.name()))
    names = {id(scope[n]): n for n in ("x", "y")}
    rows.append(("graph", "\n".join(_graph_lines(scope["loss"].grad_fn, names))))
    rows.append(("x.grad", repr(scope["x"].grad)))
    rows.append(("y.grad", repr(scope["y"].grad)))
    return rows


def _normalise(text: str, name: str) -> str:
    # Node names are printed by both as "<ns>::autograd::AccumulateGrad"; tensors print alike.
    return re.sub(rf"\b{name}\b", "<ns>", text)


def side_by_side(print_fn: Callable[..., None] | None = None) -> bool:
    """Print the example's results on ext and on torch next to each other; True if they agree."""
    from rich.console import Console
    from rich.table import Table

    import ext

    console = Console(width=max(Console().width, 120))
    out = print_fn or console.print
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        torch = None
    ext_rows = run_example(ext)
    torch_rows = run_example(torch) if torch is not None else [(n, "(torch not installed)")
                                                               for n, _ in ext_rows]
    table = Table(title="loss = (x*y + 1)**2 at x = 2, y = 3")
    table.add_column("", no_wrap=True)
    table.add_column("ext", style="cyan", no_wrap=True)
    table.add_column("torch", style="magenta", no_wrap=True)
    table.add_column("same")
    agree = True
    for (name, e), (_, t) in zip(ext_rows, torch_rows):
        same = torch is not None and _normalise(e, "ext") == _normalise(t, "torch")
        agree &= same
        # (rules around the multi-line graph row only: the table stays short)
        table.add_row(name, e, t, "yes" if same else "no",
                      end_section=name in ("loss.grad_fn.name()", "graph"))
    out("[bold]The program[/bold], written once against the torch API (T is ext or torch):")
    out(EXAMPLE)
    out(table)
    out("Both engines agree." if agree else "The engines differ where marked 'no'.")
    out("How this graph is built and run backward, step by step on both engines: "
        "`python -m ext tutorials`.")
    return agree


# ---------------------------------------------------------------------------------- parity
def _checked_nothing(report) -> bool:
    return not any(status in ("pass", "fail") for status, _ in report.results.values())


def _wide_table(table):
    """A parity table that fits 120 columns with every head whole: no vertical rules, and each
    column at least as wide as its head (rich otherwise cuts heads to one letter and "…")."""
    from rich import box

    table.box, table.padding, table.show_edge = box.SIMPLE_HEAD, (0, 0), False
    for column in table.columns:
        column.min_width = len(str(column.header))
    return table


def parity(quick: bool = False, json_path: str | None = None, kind: str = "all",
           keyword: str | None = None, backend: str = "aot_eager",
           verbose: bool = False) -> int:
    """Run ext.testing over the registry's cases with a progress bar and print a summary: the
    counts, each failure, the cases that checked nothing and the warnings the checks raised
    (``verbose``: the table of every case and check, and each warning's text); 0 when no case
    fails, 1 otherwise."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .testing import cases as case_list
    from .testing.parity import report_json, report_table, run_parity

    console = Console(width=max(Console().width, 120))
    selected = [c for c in case_list.op_cases(kind)
                if keyword is None or keyword in c.name or keyword in c.op]
    if not selected:
        console.print(f"[red]no parity case matches {keyword!r}[/red]")
        return 2
    started = time.perf_counter()
    raised: dict[str, list[str]] = {}  # each distinct warning's text -> the cases that raised it
    with Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), console=console, transient=True,
            disable=not console.is_terminal) as bar:
        task = bar.add_task("parity", total=len(selected))

        def advance(case, report) -> None:
            # (ext.testing collects what the checks warn into each report: none of it prints)
            for text in report.warnings:
                raised.setdefault(text, []).append(case.name)
            bar.update(task, advance=1, description=f"parity {case.name}")

        reports = run_parity(selected, quick=quick, compile_backend=backend, on_case=advance)
    seconds = time.perf_counter() - started
    failed = [r for r in reports if not r.ok]
    empty = [r.name for r in reports if r.ok and _checked_nothing(r)]
    what = "quick: compile skipped" if quick else f"compile with {backend}"
    title = f"parity with torch ({what})"
    if verbose:
        console.print(_wide_table(report_table(reports, title=title)))
    else:
        console.print(title)
    for report in failed:
        console.print(f"[bold red]{report.name}[/bold red] ({report.op}):")
        console.print(f"  {report.cause_line()}", markup=False, highlight=False)
        for check, detail in report.failures().items():
            console.print(f"  {check}: {detail}", markup=False, highlight=False)
    counts = (f"{len(reports)} cases over {len({r.op for r in reports})} ops: "
              f"{len(reports) - len(failed) - len(empty)} passed, {len(failed)} failed")
    if empty:
        counts += f", {len(empty)} checked nothing ({', '.join(empty)})"
    console.print(f"{counts}, in {seconds:.1f} s", markup=False, highlight=False)
    if raised and verbose:
        console.print(f"{len(raised)} distinct warning(s) raised while checking:")
        for text, names in raised.items():
            console.print(f"  {', '.join(dict.fromkeys(names))}: {text}", markup=False,
                          highlight=False)
    elif raised:
        names = ", ".join(dict.fromkeys(n for ns in raised.values() for n in ns))
        console.print(f"{len(raised)} warning(s) raised while checking {names} "
                      "(--verbose shows them)", markup=False, highlight=False)
    if not verbose:
        console.print("Every case and check in a table: `python -m ext parity --verbose`.",
                      markup=False, highlight=False)
    if json_path:
        data = report_json(reports, quick)
        data["seconds"] = round(seconds, 1)
        data["checked_nothing"] = empty
        data["warnings"] = [{"warning": text, "cases": list(dict.fromkeys(names))}
                            for text, names in raised.items()]
        Path(json_path).write_text(json.dumps(data, indent=1, default=str))
        console.print(f"report written to {json_path}", markup=False)
    return 1 if failed else 0


# ---------------------------------------------------------------------------------- graph
def _example_graphs() -> dict[str, tuple[str, str]]:
    """Named programs for ``graph``: (what it shows, code that leaves the tensor in ``out``)."""
    return {
        "example": ("the side-by-side example, loss = (x*y + 1)**2", EXAMPLE + "out = loss\n"),
        "mlp": ("a two-layer perceptron's loss",
                "net = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Linear(4, 1))\n"
                "out = net(T.ones(2, 3)).pow(2).mean()\n"),
        "custom": ("a custom Function (the pack's silu) inside a graph, after backward",
                   "x = T.tensor([[-1.0, 0.5], [2.0, 3.0]], requires_grad=True)\n"
                   "out = (F.silu(x) * 2).sum()\nout.backward()\n"),
        "views": ("an in-place write through a view (CopySlices)",
                  "x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
                  "y = x * 2\ny[1:].mul_(3)\nout = y.sum()\n"),
    }


# The commands that install Graphviz, named when `dot` is missing (exit status 3).
INSTALL_GRAPHVIZ = ("apt-get install graphviz (Debian, Ubuntu), brew install graphviz (macOS) or "
                    "conda install graphviz")


def _leaf_names(scope: dict, T) -> dict:
    """Names for the leaves of a program's graph on engine ``T``: its tensors that require grad,
    by variable name, and its modules' parameters as ``name.parameter`` (first name wins)."""
    names: dict = {}
    seen: set[int] = set()

    def add(name: str, t) -> None:
        if t.requires_grad and t.grad_fn is None and id(t) not in seen:
            seen.add(id(t))
            names[name] = t

    for key, value in scope.items():
        if isinstance(value, T.Tensor):
            add(key, value)
        elif isinstance(value, T.nn.Module):
            for pname, param in value.named_parameters():
                add(f"{key}.{pname}", param)
    return names


def _output_path(output: str, console) -> tuple[Path, str] | None:
    """The file ``graph`` writes and its format, from ``-o``; None (after saying why) when the
    folder is missing or the suffix names no format. No suffix means SVG, and it says so."""
    import graphviz

    path = Path(output)
    if path.is_dir():
        console.print(f"graph: -o {output} is a folder; give a file name such as "
                      f"{path / 'graph.svg'}", markup=False)
        return None
    folder = path.parent
    if not folder.is_dir():
        console.print(f"graph: the folder {folder} does not exist; create it first or choose "
                      "another -o", markup=False)
        return None
    fmt = path.suffix.lstrip(".").lower()
    if not fmt:
        path = path.with_name(path.name + ".svg")
        console.print(f"graph: -o {output} has no suffix: writing SVG to {path}", markup=False)
        return path, "svg"
    if fmt != "gv" and fmt not in graphviz.FORMATS:
        console.print(f"graph: cannot tell a format from the suffix {path.suffix!r}; use .svg, "
                      ".png, .pdf or .dot (the DOT text)", markup=False)
        return None
    return path, fmt


def graph(name: str | None, expression: str | None, output: str, engine: str,
          show_saved: bool, max_nodes: int | None) -> int:
    """Draw the graph of a named example or an expression (``T`` is the engine, ``F`` the
    pack's functions) to ``output`` (.svg, .png, .pdf or .dot, by its suffix; none means .svg).
    The leaves are named after the program's variables and its modules' parameters. Exit
    status 2 for bad usage, 3 when rendering needs Graphviz's ``dot`` and it is not on PATH."""
    from rich.console import Console

    from .viz import GraphvizNotFound, make_dot

    console = Console(soft_wrap=True)  # (paths and commands stay whole, for copying)
    examples = _example_graphs()
    if (name is None) == (expression is None):
        console.print("graph: give an example name or -e EXPRESSION (examples: "
                      + ", ".join(examples) + ")")
        return 2
    if name is not None and name not in examples:
        console.print(f"graph: unknown example {name!r}; the examples are: "
                      + ", ".join(f"{n} ({what})" for n, (what, _) in examples.items()))
        return 2
    if max_nodes is not None and max_nodes < 1:
        console.print(f"graph: --max-nodes must be at least 1, got {max_nodes}")
        return 2
    target = _output_path(output, console)
    if target is None:
        return 2
    path, fmt = target
    T = importlib.import_module("ext" if engine == "ext" else "torch")
    from . import functions

    scope: dict = {"T": T, "F": functions, engine: T}
    try:
        if name is not None:
            exec(examples[name][1], scope)  # noqa: S102 - our own fixed programs
            out = scope["out"]
        else:
            out = eval(expression, scope)  # noqa: S307 - the user's own expression
    except Exception as e:
        console.print(f"graph: the expression failed: {type(e).__name__}: {e}", markup=False)
        return 2
    try:
        dot = make_dot(out, params=_leaf_names(scope, T), show_saved=show_saved,
                       max_nodes=max_nodes)
    except TypeError as e:
        console.print(f"graph: {e}", markup=False)
        return 2
    if fmt in ("dot", "gv"):
        path.write_text(dot.source)
    else:
        try:
            path = Path(dot.render(outfile=str(path), format=fmt, cleanup=True))
        except GraphvizNotFound:
            console.print(f"graph: drawing {path.name} needs Graphviz's `dot` program, which is "
                          f"not on PATH. Install it: {INSTALL_GRAPHVIZ}. (Without it, "
                          "-o NAME.dot writes the graph as DOT text.)", markup=False)
            return 3
    console.print(f"graph of {name or expression!r} on {engine} written to {path}",
                  markup=False)
    return 0


# ---------------------------------------------------------------------------------- bench
BENCHMARKS = ("chain.py", "mlp.py", "pack.py", "llama.py")


def benchmarks_folder() -> Path:
    """Where a checkout keeps its benchmarks: beside the package."""
    return Path(__file__).resolve().parents[1] / "benchmarks"


def bench(ops: bool) -> int:
    """Run the benchmarks of a checkout (benchmarks/ beside the package), each in its own
    process, and print their ext/torch figures; ``ops`` adds the per-op table (about 70 s)."""
    folder = benchmarks_folder()
    if not folder.is_dir():
        print(f"bench: no benchmarks/ folder beside the package ({folder}): run it from a "
              "checkout of the project")
        return 2
    names = BENCHMARKS + (("ops.py",) if ops else ())
    status = 0
    for name in names:
        print(f"== benchmarks/{name}", flush=True)
        status |= subprocess.run([sys.executable, str(folder / name)], check=False).returncode
    return 1 if status else 0


# ---------------------------------------------------------------------------------- tutorials
def tutorials_folder() -> Path:
    """Where the walkthroughs are: the package ``ext.tutorials`` (a checkout's ``tutorials/``,
    mapped there by setup.py; installed beside the package by ``pip install .``)."""
    from . import tutorials as package

    return Path(package.__file__).resolve().parent


def walkthroughs() -> list[tuple[int, str, Path]]:
    """(number, title, path) of every walkthrough, in order; the title is its first heading."""
    found = []
    for path in sorted(tutorials_folder().glob("[0-9][0-9]_*.py")):
        title = next((line[4:].strip() for line in path.read_text().splitlines()
                      if line.startswith("# # ")), path.stem)
        found.append((int(path.name[:2]), title, path))
    return found


def tutorials(number: int | None) -> int:
    """List the walkthroughs, or run walkthrough ``number`` as a script (its exit status)."""
    found = walkthroughs()
    if number is None:
        print(f"The walkthroughs ({tutorials_folder()}):")
        for n, title, path in found:
            print(f"  {n:2d}  {title}  ({path.name})")
        print("Run one with `python -m ext tutorials N`; open one as a notebook with "
              "`jupytext --to ipynb FILE`.")
        return 0
    chosen = [path for n, _, path in found if n == number]
    if not chosen:
        print(f"tutorials: no walkthrough {number}; there are {len(found)}, numbered 1 to "
              f"{len(found)}", file=sys.stderr)
        return 2
    env = dict(os.environ, MPLBACKEND=os.environ.get("MPLBACKEND", "Agg"))
    return subprocess.run([sys.executable, chosen[0].name], cwd=chosen[0].parent, env=env,
                          check=False).returncode


# ---------------------------------------------------------------------------------- main
class _Parser(argparse.ArgumentParser):
    """argparse, with an unknown command named in the error (exit status 2)."""

    def error(self, message: str):  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m ext", description=__doc__,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="with no command: the parity run's full table")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    sub.add_parser("example", help="one program on ext and on torch, side by side")
    p = sub.add_parser("parity", help="ext.testing's checklist on every op of the registry")
    p.add_argument("--quick", action="store_true", help="skip the torch.compile check")
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    p.add_argument("--only", choices=("all", "pack", "builtin"), default="all",
                   help="the pack's ops, the built-ins, or both (default)")
    p.add_argument("-k", metavar="TEXT", help="only the cases whose name or op contains TEXT")
    p.add_argument("--backend", default="aot_eager",
                   help="torch.compile's backend for the compile check (default aot_eager)")
    p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                   help="print the table of every case and check, and each warning")
    g = sub.add_parser("graph", help="draw a backward graph to a file")
    g.add_argument("name", nargs="?", help="a named example: " + ", ".join(_example_graphs()))
    g.add_argument("-e", "--expression", help="a Python expression giving a tensor (T is the "
                                              "engine, F the pack's functions)")
    g.add_argument("-o", "--output", default="graph.svg",
                   help="the file; its suffix picks the format (svg, png, pdf, dot)")
    g.add_argument("--engine", choices=("ext", "torch"), default="ext")
    g.add_argument("--show-saved", action="store_true", help="draw the saved tensors too")
    g.add_argument("--max-nodes", type=int, help="cut the graph after this many nodes")
    b = sub.add_parser("bench", help="run the benchmarks and print the ext/torch ratios")
    b.add_argument("--ops", action="store_true", help="add the per-op table (about 70 s)")
    t = sub.add_parser("tutorials", help="list the walkthroughs, or run one")
    t.add_argument("number", nargs="?", type=int, help="the walkthrough to run")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m ext``."""
    args = _parser().parse_args(argv)
    if args.command == "example":
        return 0 if side_by_side() else 1
    if args.command == "parity":
        return parity(args.quick, args.json, args.only, args.k, args.backend, args.verbose)
    if args.command == "graph":
        return graph(args.name, args.expression, args.output, args.engine, args.show_saved,
                     args.max_nodes)
    if args.command == "bench":
        return bench(args.ops)
    if args.command == "tutorials":
        return tutorials(args.number)
    agree = side_by_side()
    print()
    return max(0 if agree else 1, parity(quick=True, verbose=args.verbose))
