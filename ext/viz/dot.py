"""``make_dot``: the backward graph of a tensor as a Graphviz picture, in torchviz's look.

The walk is iterative (an explicit stack of ``next_functions`` iterators), so a 100,000-node chain
builds as readily as a small graph, and it emits nodes and edges in the order a recursive
depth-first walk would, so the layout matches torchviz's. Unlike torchviz it tolerates graphs
whose saved tensors were freed by backward (they are drawn as freed), gives each saved tensor a
node of its own (a saved input no longer repaints its leaf), and can cut a large graph at
``max_nodes`` with a note in the picture.
"""

from __future__ import annotations

import shutil
import sys
from typing import Any

import graphviz

from .._tensor import Tensor

__all__ = ["make_dot", "resize_graph", "Digraph", "GraphvizNotFound"]

_SAVED = "_saved_"
# torchviz's colours: outputs, the base of a view output, leaves, saved tensors; backward nodes
# keep Graphviz's default fill (light grey).
_OUTPUT, _BASE, _LEAF, _SAVED_COLOR = "darkolivegreen1", "darkolivegreen3", "lightblue", "orange"
_NOTE_COLOR = "lightyellow"
_INSTALL_HINT = ("install Graphviz, which provides it (apt-get install graphviz; "
                 "brew install graphviz; conda install graphviz)")


class GraphvizNotFound(RuntimeError):
    """Raised when a picture is rendered but Graphviz's ``dot`` executable is not on PATH."""


class Digraph(graphviz.Digraph):
    """A ``graphviz.Digraph`` that checks for the ``dot`` executable before rendering, so a
    missing Graphviz gives an error that names the fix."""

    def render(self, *args: Any, **kwargs: Any) -> str:
        """Render to a file (SVG, PNG, ...) with ``dot``; see ``graphviz.Digraph.render``."""
        require_dot()
        return super().render(*args, **kwargs)

    def pipe(self, *args: Any, **kwargs: Any) -> Any:
        """Render to bytes with ``dot``; see ``graphviz.Digraph.pipe``."""
        require_dot()
        return super().pipe(*args, **kwargs)


def require_dot() -> None:
    """Raise :class:`GraphvizNotFound` unless Graphviz's ``dot`` executable is on PATH."""
    if shutil.which("dot") is None:
        raise GraphvizNotFound(
            "make_dot built the graph, but rendering it needs Graphviz's `dot` executable, "
            f"which is not on PATH: {_INSTALL_HINT}. The DOT text is in `.source` without it.")


def _is_tensor(obj: Any) -> bool:
    if isinstance(obj, Tensor):
        return True
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def custom_node_types() -> tuple:
    """The node classes of user ``autograd.Function``s (whose ``saved_tensors`` are always
    drawn): ext's, and torch's when torch is loaded."""
    from ..autograd.function import BackwardCFunction
    torch = sys.modules.get("torch")
    if torch is None:
        return (BackwardCFunction,)
    return (BackwardCFunction, torch.autograd.function.BackwardCFunction)


def _size(t: Any) -> str:
    return "(" + ", ".join(str(int(n)) for n in t.size()) + ")"


def _saved_attrs(fn: Any) -> list[tuple[str, Any]]:
    """The ``_saved_<name>`` fields of a built-in node as ``(name, value)``; a value read after
    backward freed it is the exception raised."""
    found = []
    for attr in dir(fn):
        if attr.startswith(_SAVED) and len(attr) > len(_SAVED):
            try:
                value = getattr(fn, attr)
            except RuntimeError as err:
                value = err
            found.append((attr[len(_SAVED):], value))
    return found


def _attr_text(value: Any) -> str:
    if isinstance(value, RuntimeError):
        return "[freed]"
    if _is_tensor(value):
        return "[saved tensor]"
    if isinstance(value, tuple) and any(_is_tensor(v) for v in value):
        return "[saved tensors]"
    return str(value)


def _fn_label(fn: Any, show_attrs: bool, max_attr_chars: int) -> str:
    name = type(fn).__name__
    if not show_attrs:
        return name
    attrs = {k: _attr_text(v) for k, v in _saved_attrs(fn)}
    if not attrs:
        return name
    width = max(max_attr_chars, 3)
    key_width = max(len(k) for k in attrs)
    value_width = min(max(len(v) for v in attrs.values()), width)
    rule = "-" * max(key_width + value_width + 2, len(name))
    lines = []
    for key, value in attrs.items():
        if len(value) > value_width:
            value = value[:value_width - 3] + "..."
        lines.append(f"{key:<{key_width}}: {value:>{value_width}}")
    return name + "\n" + rule + "\n" + "\n".join(lines)


class _Builder:
    """One make_dot call: the Digraph under construction and what has been drawn."""

    def __init__(self, params: dict, show_attrs: bool, show_saved: bool, max_attr_chars: int,
                 max_nodes: int | None) -> None:
        node_attr = dict(style="filled", shape="box", align="left", fontsize="10",
                         ranksep="0.1", height="0.2", fontname="monospace")
        self.dot = Digraph(node_attr=node_attr, graph_attr=dict(size="12,12"))
        self.names = {id(v): k for k, v in params.items()}
        self.show_attrs, self.show_saved = show_attrs, show_saved
        self.max_attr_chars, self.max_nodes = max_attr_chars, max_nodes
        # Everything drawn is kept alive until the end, so that no id is reused meanwhile.
        self.seen: dict[int, Any] = {}
        self.custom = custom_node_types()
        self.count = 0
        # The nodes max_nodes kept out, by id: drawn as named stubs, not as bare ids.
        self.cut: dict[str, Any] = {}
        self.cut_edges = 0

    def var_label(self, t: Any, name: str | None = None) -> str:
        if name is None:
            name = self.names.get(id(t), "")
        return f"{name}\n {_size(t)}"

    def saved_node(self, fn: Any, key: str, label: str) -> None:
        # One node per (parent, saved slot): a saved input keeps its leaf's node and colour.
        sid = f"{id(fn)}_{key}"
        self.dot.edge(str(id(fn)), sid, dir="none")
        self.dot.node(sid, label, fillcolor=_SAVED_COLOR)

    def draw_saved_fields(self, fn: Any) -> None:
        for name, value in _saved_attrs(fn):
            if isinstance(value, RuntimeError):
                self.saved_node(fn, name, f"{name}\n (freed)")
            elif _is_tensor(value):
                self.saved_node(fn, name, self.var_label(value, name))
            elif isinstance(value, tuple):
                for i, t in enumerate(value):
                    if _is_tensor(t):
                        self.saved_node(fn, f"{name}_{i}", self.var_label(t, name))

    def draw_custom_saved(self, fn: Any) -> None:
        try:
            saved = fn.saved_tensors
        except RuntimeError:
            self.saved_node(fn, "saved", "saved tensors\n (freed)")
            return
        for i, t in enumerate(saved):
            if _is_tensor(t):
                self.saved_node(fn, f"saved_{i}", self.var_label(t))

    def enter(self, fn: Any) -> bool:
        """Draw ``fn`` itself (not its inputs); False when ``max_nodes`` forbids it."""
        if self.max_nodes is not None and self.count >= self.max_nodes:
            return False
        self.count += 1
        self.seen[id(fn)] = fn
        if self.show_saved:
            self.draw_saved_fields(fn)
        var = getattr(fn, "variable", None)
        if var is not None and _is_tensor(var):
            self.seen[id(var)] = var
            self.dot.node(str(id(var)), self.var_label(var), fillcolor=_LEAF)
            self.dot.edge(str(id(var)), str(id(fn)))
        self.dot.node(str(id(fn)), _fn_label(fn, self.show_attrs, self.max_attr_chars))
        return True

    def walk(self, root: Any) -> None:
        """Depth-first from ``root`` with an explicit stack, in the recursive walk's order."""
        if id(root) in self.seen:
            return
        if not self.enter(root):
            self.mark_cut(root)
            return
        body = self.dot.body
        stack = [(root, iter(root.next_functions))]
        while stack:
            fn, inputs = stack[-1]
            for child, _ in inputs:
                if child is None:
                    continue
                # Plain edges between numeric ids need no quoting: append the statement
                # itself (graphviz's quoting is most of the time on a large graph).
                body.append(f"\t{id(child)} -> {id(fn)}\n")
                if id(child) in self.seen:
                    continue
                if self.enter(child):
                    stack.append((child, iter(child.next_functions)))
                    break
                self.mark_cut(child)
            else:
                stack.pop()
                if isinstance(fn, self.custom):
                    self.draw_custom_saved(fn)

    def add_output(self, var: Any) -> None:
        color = _OUTPUT
        dotted = []
        # A view output is followed by its base without recursion; the dotted base -> view
        # edges come last, innermost first, as the recursive walk emits them.
        while var is not None and id(var) not in self.seen:
            self.seen[id(var)] = var
            self.dot.node(str(id(var)), self.var_label(var), fillcolor=color)
            if var.grad_fn is not None:
                self.walk(var.grad_fn)
                self.dot.edge(str(id(var.grad_fn)), str(id(var)))
            base = var._base if var._is_view() else None
            if base is not None:
                dotted.append((str(id(base)), str(id(var))))
            color, var = _BASE, base
        for base_id, view_id in reversed(dotted):
            self.dot.edge(base_id, view_id, style="dotted")

    def mark_cut(self, fn: Any) -> None:
        self.cut[str(id(fn))] = fn
        self.cut_edges += 1

    def add_note(self) -> None:
        if not self.cut:
            return
        note = "max_nodes_note"
        self.dot.node(note, f"graph cut at max_nodes={self.max_nodes}:\n"
                            f"{self.cut_edges} input edge(s) lead to nodes not drawn",
                      fillcolor=_NOTE_COLOR, shape="note")
        for nid, fn in self.cut.items():
            self.dot.node(nid, f"{type(fn).__name__}\n(not drawn)", style="dashed")
            self.dot.edge(note, nid, style="dashed")


def make_dot(var: Any, params: dict | None = None, show_attrs: bool = False,
             show_saved: bool = False, max_attr_chars: int = 50,
             max_nodes: int | None = None) -> Digraph:
    """The backward graph of ``var`` (a tensor or a tuple of tensors) as a Graphviz Digraph.

    Grey boxes are backward nodes, light blue the leaves that require grad (named from
    ``params``, a dict name -> tensor), orange the saved tensors (always for custom Functions,
    for built-ins with ``show_saved``), green the outputs and dark green the base of a view
    output. ``show_attrs`` lists each node's non-tensor saved fields, cut to ``max_attr_chars``.
    ``max_nodes`` bounds the backward nodes drawn; the cut is marked by a note node pointing at
    the nodes left out (dashed boxes that give their type, not their contents). Works on
    ext and torch graphs, before or after backward (freed saved tensors are drawn as freed).
    """
    outputs = var if isinstance(var, tuple) else (var,)
    if not outputs or not all(_is_tensor(v) for v in outputs):
        raise TypeError("make_dot(): argument 'var' must be a tensor or a tuple of tensors, "
                        f"not {type(var).__name__}")
    if params is None:
        params = {}
    if not isinstance(params, dict) or not all(_is_tensor(p) for p in params.values()):
        raise TypeError("make_dot(): argument 'params' must be a dict mapping names to tensors")
    if max_nodes is not None and (not isinstance(max_nodes, int) or max_nodes < 1):
        raise ValueError(f"make_dot(): max_nodes must be a positive int or None, got {max_nodes!r}")
    builder = _Builder(params, show_attrs, show_saved, max_attr_chars, max_nodes)
    for v in outputs:
        builder.add_output(v)
    builder.add_note()
    resize_graph(builder.dot)
    return builder.dot


def resize_graph(dot: graphviz.Digraph, size_per_element: float = 0.15,
                 min_size: float = 12) -> None:
    """Size the picture by the number of statements in it (torchviz's rule)."""
    size = max(min_size, len(dot.body) * size_per_element)
    dot.graph_attr.update(size=f"{size},{size}")
