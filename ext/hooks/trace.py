"""``trace_backward``: which node ran when during backward, and which hooks fired, with timings.

Entering the context registers a pre-hook and a post-hook on every node of the graph of the given
outputs (found by an iterative walk of ``next_functions``); the hooks of this package, and any
hook wrapped with :meth:`BackwardTrace.wrap`, also report to the traces active on their thread.
Leaving the context removes every hook it added.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["trace_backward", "BackwardTrace", "TraceEvent", "note"]

_active = threading.local()


@dataclass
class TraceEvent:
    """One thing seen during backward: a node's run (``kind="node"``, with its duration) or a
    hook firing (``kind="hook"``). ``start`` is in seconds from the trace's start."""

    kind: str
    name: str
    start: float
    duration: float = 0.0
    detail: str = ""


def note(name: str, detail: str = "") -> None:
    """Record that hook ``name`` fired in every trace active on this thread (cheap when none)."""
    traces = getattr(_active, "traces", None)
    if traces:
        now = time.perf_counter()
        for trace in traces:
            trace.events.append(TraceEvent("hook", name, now - trace.t0, 0.0, detail))


def _walk_nodes(outputs: tuple) -> list:
    """Every node of the graph of ``outputs``, each once (iterative depth-first walk)."""
    seen: dict[int, Any] = {}
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen[id(fn)] = fn
        stack.extend(child for child, _ in fn.next_functions if child is not None)
    return list(seen.values())


class BackwardTrace:
    """The record of one ``trace_backward`` block: ``events`` in the order they happened."""

    def __init__(self, outputs: tuple) -> None:
        self.outputs = outputs
        self.events: list[TraceEvent] = []
        self.t0 = time.perf_counter()
        self._handles: list = []
        self._starts: dict[int, float] = {}

    # The hooks hold the node's id and name, not the node: no cycle through its hook table.
    def _pre(self, key: int) -> Callable:
        def pre(grad_outputs):
            self._starts[key] = time.perf_counter()
        return pre

    def _post(self, key: int, name: str) -> Callable:
        def post(grad_inputs, grad_outputs):
            end = time.perf_counter()
            start = self._starts.pop(key, end)
            self.events.append(TraceEvent("node", name, start - self.t0, end - start))
        return post

    def wrap(self, hook: Callable, name: str | None = None) -> Callable:
        """``hook`` that also records its firing and duration in this trace (for user hooks)."""
        label = name or getattr(hook, "__name__", type(hook).__name__)

        def traced(*args: Any) -> Any:
            start = time.perf_counter()
            result = hook(*args)
            self.events.append(TraceEvent("hook", label, start - self.t0,
                                          time.perf_counter() - start))
            return result
        return traced

    @property
    def nodes(self) -> list[TraceEvent]:
        """The node runs, in the order they finished."""
        return [e for e in self.events if e.kind == "node"]

    @property
    def hooks(self) -> list[TraceEvent]:
        """The hook firings, in order."""
        return [e for e in self.events if e.kind == "hook"]

    def __enter__(self) -> BackwardTrace:
        for fn in _walk_nodes(self.outputs):
            self._handles.append(fn.register_prehook(self._pre(id(fn))))
            self._handles.append(fn.register_hook(self._post(id(fn), fn.name())))
        traces = getattr(_active, "traces", None)
        if traces is None:
            traces = _active.traces = []
        traces.append(self)
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        _active.traces.remove(self)
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def table(self) -> Any:
        """The events by start time as a ``rich.table.Table`` (kind, name, start and duration in
        ms): a hook that fired inside a node's run is listed after that node."""
        from rich.table import Table

        table = Table(title="backward trace")
        for column in ("#", "kind", "name", "start ms", "ms", "detail"):
            table.add_column(column, justify="right" if "ms" in column or column == "#"
                             else "left")
        for i, e in enumerate(sorted(self.events, key=lambda e: e.start)):
            table.add_row(str(i), e.kind, e.name, f"{e.start * 1e3:.3f}",
                          f"{e.duration * 1e3:.3f}" if e.kind == "node" else "", e.detail)
        return table

    def __str__(self) -> str:
        return _render(self.table())


def _render(renderable: Any) -> str:
    """A rich renderable as plain text."""
    from rich.console import Console

    console = Console(width=120, record=True, color_system=None, force_terminal=False)
    with console.capture() as capture:
        console.print(renderable)
    return capture.get()


def trace_backward(*outputs: Any) -> BackwardTrace:
    """A context manager recording the backward passes through the graph of ``outputs``.

    >>> with trace_backward(loss) as trace:
    ...     loss.backward()
    >>> print(trace)            # node order, start and duration; hooks that fired

    Works with ext and torch tensors. Nodes created after entering are not traced.
    """
    if not outputs:
        raise TypeError("trace_backward() needs at least one output tensor")
    for i, t in enumerate(outputs):
        if not hasattr(t, "grad_fn"):
            raise TypeError(f"trace_backward(): argument {i} must be a tensor, "
                            f"not {type(t).__name__}")
    return BackwardTrace(outputs)
