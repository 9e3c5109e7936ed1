"""The ``python -m ext`` command: the same program run on ext and on torch, side by side."""

from __future__ import annotations

import argparse
import importlib
import re
from collections.abc import Callable

# Seed 000 §4.3: loss = (x*y + 1)**2 at x=2, y=3, whose gradients are 42 and 28.
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

    console = Console(width=max(Console().width, 110))
    out = print_fn or console.print
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        torch = None
    ext_rows = run_example(ext)
    torch_rows = run_example(torch) if torch is not None else [(n, "(torch not installed)")
                                                               for n, _ in ext_rows]
    table = Table(title="loss = (x*y + 1)**2 at x = 2, y = 3 (seed 000 §4.3)", show_lines=True)
    table.add_column("")
    table.add_column("ext", style="cyan", no_wrap=True)
    table.add_column("torch", style="magenta", no_wrap=True)
    table.add_column("same")
    agree = True
    for (name, e), (_, t) in zip(ext_rows, torch_rows):
        same = torch is not None and _normalise(e, "ext") == _normalise(t, "torch")
        agree &= same
        table.add_row(name, e, t, "yes" if same else "no")
    out("[bold]The program[/bold], written once against the torch API (T is ext or torch):")
    out(EXAMPLE)
    out(table)
    out("Both engines agree." if agree else "The engines differ where marked 'no'.")
    return agree


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m ext``."""
    parser = argparse.ArgumentParser(prog="python -m ext", description=__doc__)
    parser.parse_args(argv)
    return 0 if side_by_side() else 1
