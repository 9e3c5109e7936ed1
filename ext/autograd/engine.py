"""The engine: runs the backward graph from its roots to the leaves.

Iterative, with dependency counting: a node runs once every node that feeds it gradient has run.
Among the nodes that are ready, the one with the highest sequence number (the most recently
created) runs first, as in torch; a leaf's AccumulateGrad runs as soon as it is ready.
"""

from __future__ import annotations

import heapq
import itertools
from operator import attrgetter

from .._state import STATE
from .._tensor import Tensor
from .anomaly_mode import apply_checked, check_nan
from .graph import AccumulateGrad, Node, run_tensor_hooks

__all__ = ["run_backward", "GraphTask"]

_SEQ = attrgetter("_seq")


def run_backward(roots: list[tuple[Node, int]], root_grads: list[Tensor], keep_graph: bool,
                 create_graph: bool, inputs: list[tuple[Node, int]] | None = None,
                 accumulate: bool = True) -> list | None:
    """Propagate ``root_grads`` from the ``roots`` edges through the graph.

    With ``accumulate`` (``backward``) leaves get their ``.grad``; ``inputs`` then restricts which
    ones. Without it (``autograd.grad``) the gradients reaching the ``inputs`` edges are captured
    and returned, and ``.grad`` is never touched.
    """
    return GraphTask(roots, root_grads, keep_graph, create_graph, inputs, accumulate).run()


class GraphTask:
    """The state of one backward pass (torch's GraphTask): per node, the edges still to deliver
    to it (``dependencies``) and its gradients so far (``buffers``, the not-ready buffer); the
    nodes to run when restricted to ``inputs`` (``needed``, None: all) and those inputs' nodes
    (``targets``); where each input edge of ``autograd.grad`` is ``captured``; the accumulators
    whose gradient the engine ``owned``. While it runs, ready nodes wait in a heap of
    (-sequence_nr, tick, node), the tick breaking ties first in first out; ready accumulators
    run first."""

    __slots__ = ("keep_graph", "create_graph", "dependencies", "needed", "targets", "captures",
                 "captured", "buffers", "owned", "exclusive")

    def __init__(self, roots: list[tuple[Node, int]], root_grads: list[Tensor], keep_graph: bool,
                 create_graph: bool, inputs: list[tuple[Node, int]] | None,
                 accumulate: bool) -> None:
        self.keep_graph = keep_graph
        self.create_graph = create_graph
        self.dependencies = _count_dependencies(roots)
        self.needed = self.captures = self.captured = None
        self.targets: set | tuple = ()
        if inputs is not None:
            self.needed = _needed_nodes(self.dependencies, roots, inputs, run_targets=accumulate)
            self.targets = {fn for fn, _ in inputs}
            if not accumulate:
                self.captures = {}
                for i, edge in enumerate(inputs):
                    self.captures.setdefault(edge, []).append(i)
                self.captured = [None] * len(inputs)
        self.owned: set = set()
        # View ops' nodes whose one incoming gradient the engine owns: made for them alone by
        # a trusted backward (or summed by the engine), so the view of it they return may be
        # owned in turn (a weight's gradient through TBackward0, a view of the one mm made).
        self.exclusive: set = set()
        # The root gradients are buffered.
        buffers = self.buffers = {}
        for (fn, nr), g in zip(roots, root_grads):
            buf = buffers.get(fn)
            if buf is None:
                buf = buffers[fn] = [None] * len(fn._out_meta)
            buf[nr] = g if buf[nr] is None else buf[nr] + g

    def run(self) -> list | None:
        """Run the graph with grad mode set to ``create_graph``; the captured gradients of
        ``autograd.grad`` (None for ``backward``). The hot loop: a node, then the gradients it
        returns passed on to the nodes behind it; the rare paths are methods."""
        state = STATE
        prev_mode = state.grad_enabled
        state.grad_enabled = create_graph = self.create_graph
        prev_tasks = state.backward_inputs
        state.backward_inputs = prev_tasks + (self.needed is not None,)
        buffers, dependencies, keep_graph, owned = self.buffers, self.dependencies, \
            self.keep_graph, self.owned
        exclusive = self.exclusive
        # The roots that nothing else feeds are ready.
        ready: list = []
        accumulators: list = []
        tick = itertools.count().__next__
        for fn in buffers:
            if dependencies.get(fn, 0) == 0:
                if type(fn) is AccumulateGrad:
                    accumulators.append(fn)
                else:
                    ready.append((-fn._seq, tick(), fn))
        heapq.heapify(ready)
        restricted = self.needed is not None
        # (autograd.grad fills no .grad: whether the engine owns a leaf's gradient is moot)
        accumulate = self.captured is None
        anomaly = state.special and state.anomaly
        # The next node to run when it is the only one ready: a chain then never touches the heap.
        fn = None
        try:
            while True:
                if accumulators:
                    if fn is not None:
                        heapq.heappush(ready, (-fn._seq, tick(), fn))
                        fn = None
                    acc = accumulators.pop(0)
                    grads = buffers.pop(acc)
                    var = acc.variable
                    if acc._hooks is None and not restricted and \
                            not getattr(var, "_backward_hooks", None) and \
                            not getattr(var, "_post_acc_hooks", None):
                        if grads[0] is not None:
                            acc._accumulate(grads[0], create_graph, acc in owned)
                    else:
                        self._run_leaf(acc, grads)
                    continue
                if fn is None:
                    if not ready:
                        break
                    fn = heapq.heappop(ready)[2]
                grads = buffers.pop(fn)
                hooks = fn._hooks
                # (a hook or autograd.grad sees the incoming gradient: it is no longer the
                # engine's alone)
                received = fn in exclusive and hooks is None and not restricted
                if restricted or hooks is not None:
                    grads = self._prepare(fn, grads, hooks)
                    if grads is None:
                        fn = None
                        continue

                if not fn._skip_undefined or (grads[0] is not None if len(grads) == 1 else
                                               any(g is not None for g in grads)):
                    if anomaly:
                        outputs = apply_checked(fn, grads, _validate_outputs)
                    else:
                        outputs = _validate_outputs(fn, fn._apply(grads))
                else:
                    outputs = (None,) * len(fn._next)
                if restricted and fn._skip_undefined:
                    outputs = self._only_needed(fn, outputs)
                if not keep_graph:
                    fn._release()
                if hooks is not None and hooks.post:
                    outputs = hooks.run_post(outputs, grads)
                if anomaly and state.anomaly_check_nan:
                    check_nan(fn, outputs)

                following = None
                for nf, nr, g in zip(fn._next, fn._nrs, outputs):
                    if nf is None:
                        continue
                    if g is not None:
                        buf = buffers.get(nf)
                        if buf is None:
                            if len(nf._out_meta) == 1:
                                buffers[nf] = [g]
                                if type(nf) is AccumulateGrad:
                                    if accumulate and nf.variable._grad is None and \
                                            self._exclusive(g, fn, grads, outputs, received):
                                        owned.add(nf)  # (the leaf's first gradient)
                                elif nf._view_backward and accumulate and \
                                        self._exclusive(g, fn, grads, outputs, received):
                                    exclusive.add(nf)
                            else:
                                buf = buffers[nf] = [None] * len(nf._out_meta)
                                buf[nr] = g
                        else:
                            old = buf[nr]
                            if old is None:
                                buf[nr] = g
                                if type(nf) is AccumulateGrad and accumulate and \
                                        nf.variable._grad is None and \
                                        self._exclusive(g, fn, grads, outputs, received):
                                    owned.add(nf)
                            else:
                                buf[nr] = old + g
                                if type(nf) is AccumulateGrad:
                                    owned.add(nf)  # (the engine made the sum)
                                elif nf._view_backward and len(buf) == 1:
                                    exclusive.add(nf)
                    elif nf not in buffers:
                        buffers[nf] = [None] * len(nf._out_meta)
                    left = dependencies[nf] - 1
                    dependencies[nf] = left
                    if left == 0:
                        if type(nf) is AccumulateGrad:
                            accumulators.append(nf)
                        elif following is None and not ready:
                            following = nf
                        else:
                            if following is not None:
                                heapq.heappush(ready, (-following._seq, tick(), following))
                                following = None
                            heapq.heappush(ready, (-nf._seq, tick(), nf))
                fn = following
        finally:
            state.grad_enabled = prev_mode
            state.backward_inputs = prev_tasks
        return self.captured

    def _prepare(self, fn: Node, grads: list, hooks) -> list | None:
        """Before a node runs: the captures of ``autograd.grad``, its tensor hooks (with
        retain_grad) and its pre-hooks, in torch's order. None when the node is not to run."""
        runs = self.needed is None or fn in self.needed
        if not runs and fn not in self.targets:
            return None
        # autograd.grad captures a gradient at the node its input flows into, as torch does:
        # after that tensor's hooks when the node is only captured from, before them when it
        # also runs (its hooks then change what flows further back, not the captured gradient).
        if self.captures is not None and runs:
            self._capture(fn, grads)
        if type(fn) is AccumulateGrad:
            table = getattr(fn.variable, "_backward_hooks", None)
            if table:
                grads = run_tensor_hooks(table, grads, 0)
        elif hooks is not None:
            grads = hooks.run_tensor_pre(grads)
        if not runs:
            if self.captures is not None:
                self._capture(fn, grads)
            return None
        if hooks is not None and hooks.pre:
            grads = hooks.run_pre(grads)
        return grads

    def _run_leaf(self, acc: AccumulateGrad, grads: list) -> None:
        """A leaf's accumulator: its hooks, the gradient added into ``.grad`` (not copied when
        the engine owns it and no hook saw it), then its post-accumulate and post hooks."""
        hooks = acc._hooks
        tensor_hooks = getattr(acc.variable, "_backward_hooks", None)
        if hooks is not None or tensor_hooks or self.needed is not None:
            grads = self._prepare(acc, grads, hooks)
            if grads is None:
                return
        g = grads[0]
        if g is not None:
            acc._accumulate(g, self.create_graph, hooks is None and not tensor_hooks and
                            acc in self.owned)
        if getattr(acc.variable, "_post_acc_hooks", None):
            acc.run_post_accumulate_hooks()
        if hooks is not None and hooks.post:
            hooks.run_post((), grads)

    @staticmethod
    def _exclusive(g: Tensor, fn: Node, grads: list, outputs: tuple, received: bool) -> bool:
        """Whether the engine alone holds the memory of ``g``, returned by ``fn``: ``g`` is a
        result of a trusted backward (``Node._fresh_results``), not seen by its post hooks, not
        handed to another edge as well, and either new memory or that of a gradient ``fn``
        ``received`` that the engine alone held. (A view of an array the backward made, as mm's
        transposed result, counts too.)"""
        if not fn._fresh_results or (fn._hooks is not None and fn._hooks.post):
            return False
        memory = _memory(g)
        if not received and any(x is not None and _memory(x) is memory for x in grads):
            return False
        return [x is not None and _memory(x) is memory for x in outputs].count(True) == 1

    def _capture(self, fn: Node, grads: list) -> None:
        """Keep the gradients reaching the input edges of ``autograd.grad`` at ``fn``."""
        for nr, g in enumerate(grads):
            slots = self.captures.get((fn, nr))
            if slots is not None:
                for i in slots:
                    self.captured[i] = g

    def _only_needed(self, fn: Node, outputs: tuple) -> tuple:
        """A built-in's outputs with None where its edge leads to no node this pass runs or
        captures from: torch's ops do not compute those gradients
        (``task_should_compute_output``), so post hooks see None there and anomaly mode checks
        nothing. (A custom Function's ``backward`` is not asked, and its outputs all stay.)"""
        needed, targets = self.needed, self.targets
        return tuple([g if g is None or nf is None or nf in needed or nf in targets else None
                      for g, nf in zip(outputs, fn._next)])


def _memory(t: Tensor):
    """The object that owns the memory of ``t``'s array (the end of its chain of bases)."""
    a = t._data
    while True:
        base = getattr(a, "base", None)
        if base is None:
            return a
        a = base


def _count_dependencies(roots: list[tuple[Node, int]]) -> dict[Node, int]:
    """How many edges point at each node reachable from the roots."""
    dependencies: dict[Node, int] = {}
    seen = set()
    stack = []
    for fn, _ in roots:
        if fn not in seen:
            seen.add(fn)
            stack.append(fn)
    while stack:
        fn = stack.pop()
        for nf in fn._next:
            if nf is None:
                continue
            dependencies[nf] = dependencies.get(nf, 0) + 1
            if nf not in seen:
                seen.add(nf)
                stack.append(nf)
    return dependencies


def _needed_nodes(dependencies: dict, roots: list, inputs: list, run_targets: bool) -> set:
    """The nodes that lie on a path from the roots to one of the ``inputs`` edges.

    ``backward(inputs=...)`` also runs the node of a non-leaf input (``run_targets``);
    ``autograd.grad`` only captures the gradient that reaches it.
    """
    nodes = set(dependencies)
    for fn, _ in roots:
        nodes.add(fn)
    reach = nodes.intersection([fn for fn, _ in inputs])
    # Inputs of a node were created before it, so ascending sequence order sees them first
    # (accumulators, which have no edges, come last).
    for fn in sorted(nodes, key=_SEQ):
        if fn not in reach:
            for nf in fn._next:
                if nf in reach:
                    reach.add(fn)
                    break
    if run_targets:
        return reach
    needed = set()
    for fn in reach:
        for nf in fn._next:
            if nf in reach:
                needed.add(fn)
                break
    return needed


def _validate_outputs(fn: Node, outputs: tuple) -> tuple:
    """A node's gradients made to fit the inputs they flow into, before its post hooks see them
    (torch's validate_outputs): one per edge, each broadcast shape summed down to its input's
    shape and each dtype cast to its input's. A gradient for an input that needs none (no edge)
    is left as it is."""
    nexts = fn._next
    if len(outputs) != len(nexts):
        # Built-ins may return a None for each trailing non-tensor argument.
        if len(outputs) < len(nexts) or any(g is not None for g in outputs[len(nexts):]):
            raise RuntimeError(f"Function {fn.name()} returned an invalid number of gradients - "
                               f"expected {len(nexts)}, but got {len(outputs)}")
        outputs = outputs[:len(nexts)]
    fixed = None
    for i, (nf, nr, g) in enumerate(zip(nexts, fn._nrs, outputs)):
        if g is None or nf is None:
            continue
        shape, dt = nf._out_meta[nr]
        data = g._data
        if data.shape != shape or data.dtype != dt:
            if fixed is None:
                fixed = list(outputs)
            fixed[i] = _validate(fn, shape, dt, g, i)
    return outputs if fixed is None else tuple(fixed)


def _validate(fn: Node, shape: tuple, dt, g: Tensor, index: int) -> Tensor:
    """Make a gradient fit the input it flows into: sum a broadcast shape down, cast the dtype."""
    data = g._data
    if data.shape != shape:
        if not _expandable(shape, data.shape):
            raise RuntimeError(
                f"Function {fn.name()} returned an invalid gradient at index {index} - got "
                f"{list(data.shape)} but expected shape compatible with {list(shape)}")
        g = sum_to(g, shape)
        data = g._data
    if data.dtype != dt:
        g = g.to(_dtype_of(dt))
    return g


def _expandable(shape: tuple, target: tuple) -> bool:
    """Whether a tensor of ``shape`` broadcasts to ``target``."""
    if len(shape) > len(target):
        return False
    for s, t in zip(reversed(shape), reversed(target)):
        if s != t and s != 1:
            return False
    return True


def sum_to(g: Tensor, shape: tuple) -> Tensor:
    """Sum a broadcast gradient down to ``shape`` (differentiable, for create_graph)."""
    if not shape:
        return g.sum()  # torch's sum_to: a 0-d target is the plain sum (no view)
    lead = g.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1)
    if dims:
        g = g.sum(dims, keepdim=True)
    if lead or g.shape != shape:
        g = g.reshape(shape)
    return g


def _dtype_of(np_dtype):
    from .._dtype import FROM_NUMPY

    return FROM_NUMPY[np_dtype]
