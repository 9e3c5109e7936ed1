"""The engine: runs the backward graph from its roots to the leaves.

Iterative, with dependency counting: a node runs once every node that feeds it gradient has run.
Among the nodes that are ready, the one with the highest sequence number (the most recently
created) runs first, as in torch; a leaf's AccumulateGrad runs as soon as it is ready.
"""

from __future__ import annotations

import heapq
import itertools

from .._state import STATE
from .._tensor import Tensor, legacy_type_name
from .anomaly_mode import apply_checked, check_nan
from .graph import AccumulateGrad, Node

__all__ = ["run_backward"]


def run_backward(roots: list[tuple[Node, int]], root_grads: list[Tensor], keep_graph: bool,
                 create_graph: bool, inputs: list[tuple[Node, int]] | None = None,
                 accumulate: bool = True) -> list | None:
    """Propagate ``root_grads`` from the ``roots`` edges through the graph.

    With ``accumulate`` (``backward``) leaves get their ``.grad``; ``inputs`` then restricts which
    ones. Without it (``autograd.grad``) the gradients reaching the ``inputs`` edges are captured
    and returned, and ``.grad`` is never touched.
    """
    dependencies = _count_dependencies(roots)
    captures = None
    needed = None
    if inputs is not None:
        needed = _needed_nodes(dependencies, roots, inputs, run_targets=accumulate)
        if not accumulate:
            captures = {}
            for i, edge in enumerate(inputs):
                captures.setdefault(edge, []).append(i)
    captured = [None] * len(inputs) if captures is not None else None
    targets = {fn for fn, _ in inputs} if inputs is not None else ()

    buffers: dict[Node, list] = {}
    for (fn, nr), g in zip(roots, root_grads):
        buf = buffers.get(fn)
        if buf is None:
            buf = buffers[fn] = [None] * len(fn._out_meta)
        buf[nr] = g if buf[nr] is None else buf[nr] + g

    # A heap of (-sequence_nr, tick, node): the tick, unique per push, breaks any tie between
    # sequence numbers (first in, first out), so that the heap never compares nodes.
    ready: list = []
    tick = itertools.count().__next__
    accumulators: list = []
    # The accumulators whose buffered gradient the engine owns (see _give_leaf).
    owned: set = set()
    for fn in buffers:
        if dependencies.get(fn, 0) == 0:
            if type(fn) is AccumulateGrad:
                accumulators.append(fn)
            else:
                ready.append((-fn._seq, tick(), fn))
    heapq.heapify(ready)

    # Anything beyond "run every node": restricted inputs, captures.
    special = needed is not None or captures is not None
    state = STATE
    prev_mode = state.grad_enabled
    state.grad_enabled = create_graph
    prev_tasks = state.backward_inputs
    state.backward_inputs = prev_tasks + (inputs is not None,)
    anomaly = state.anomaly
    # The next node to run when it is the only one ready: a chain then never touches the heap.
    fn = None
    outputs = buf = None
    try:
        while True:
            if accumulators:
                if fn is not None:
                    heapq.heappush(ready, (-fn._seq, tick(), fn))
                fn = accumulators.pop(0)
            elif fn is None:
                if not ready:
                    break
                fn = heapq.heappop(ready)[2]
            grads = buffers.pop(fn)
            hooks = fn._hooks
            is_leaf = type(fn) is AccumulateGrad
            if special or is_leaf or hooks is not None:
                grads = _prologue(fn, grads, hooks, is_leaf, needed, targets, captures, captured)
                if grads is None:
                    fn = None
                    continue
                if is_leaf:
                    g = grads[0]
                    post = grads if hooks is not None and hooks.post else None
                    if g is not None:
                        # (a hook may keep the gradient it saw)
                        fn._accumulate(g, create_graph, fn in owned and hooks is None and
                                       not getattr(fn.variable, "_backward_hooks", None))
                    # torch runs these even when no gradient reached the leaf.
                    _post_accumulate_hooks(fn.variable)
                    if post is not None:
                        _call_post_hooks(fn, hooks, (), post)
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
            if needed is not None and fn._skip_undefined:
                outputs = _only_needed(fn, outputs, needed, targets)
            if not keep_graph:
                fn._release()
            if hooks is not None and hooks.post:
                outputs = _call_post_hooks(fn, hooks, outputs, grads)
            if anomaly and state.anomaly_check_nan:
                check_nan(fn, outputs)

            following = None
            for nf, nr, g in zip(fn._next, fn._nrs, outputs):
                if nf is None:
                    continue
                if type(nf) is AccumulateGrad:
                    _give_leaf(nf, g, fn, grads, outputs, buffers, owned)
                elif g is not None:
                    buf = buffers.get(nf)
                    if buf is None:
                        if len(nf._out_meta) == 1:
                            buffers[nf] = [g]
                        else:
                            buf = buffers[nf] = [None] * len(nf._out_meta)
                            buf[nr] = g
                    else:
                        old = buf[nr]
                        buf[nr] = g if old is None else old + g
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
    return captured


def _prologue(fn: Node, grads: list, hooks, is_leaf: bool, needed, targets, captures,
              captured) -> list | None:
    """Before a node runs: its tensor hooks, retain_grad, captures for ``autograd.grad`` and its
    pre-hooks, in torch's order. None when the node is not to run."""
    runs = needed is None or fn in needed
    if not runs and fn not in targets:
        return None
    # autograd.grad captures a gradient at the node its input flows into. As in torch, it does
    # so after that tensor's hooks (and retain_grad) when the node is only captured from, but
    # before them when the node is also to run (another input lies behind it): the hooks then
    # run with the node, and change what flows further back but not the captured gradient.
    if captures is not None and runs:
        _capture(captures, captured, fn, grads)
    if is_leaf:
        leaf_hooks = getattr(fn.variable, "_backward_hooks", None)
        if leaf_hooks:
            grads = _tensor_hooks(leaf_hooks, grads, 0)
    elif hooks is not None:
        grads = _tensor_pre_hooks(hooks, grads)
    if not runs:
        if captures is not None:
            _capture(captures, captured, fn, grads)
        return None
    if hooks is not None and hooks.pre:
        grads = _node_pre_hooks(hooks, grads)
    return grads


def _give_leaf(acc: AccumulateGrad, g, fn: Node, grads: list, outputs: tuple, buffers: dict,
               owned: set) -> None:
    """Buffer ``g``, a gradient from ``fn`` for the leaf of ``acc``, and note whether the engine
    owns it, which lets AccumulateGrad keep it without a copy. It does when it made it: a sum of
    two gradients, or a result of a trusted backward (``Node._fresh_results``) that is not one
    of the gradients it received, not handed to another edge as well, and not seen by its post
    hooks."""
    buf = buffers.get(acc)
    if buf is None:
        buf = buffers[acc] = [None]
    if g is None:
        return
    old = buf[0]
    if old is not None:
        buf[0] = old + g
        owned.add(acc)
        return
    buf[0] = g
    if not fn._fresh_results or (fn._hooks is not None and fn._hooks.post):
        return
    data = g._data
    if any(x is not None and x._data is data for x in grads) or \
            sum(x is not None and x._data is data for x in outputs) > 1:
        return
    owned.add(acc)


def _capture(captures: dict, captured: list, fn: Node, grads: list) -> None:
    for nr, g in enumerate(grads):
        slots = captures.get((fn, nr))
        if slots is not None:
            for i in slots:
                captured[i] = g


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


def _only_needed(fn: Node, outputs: tuple, needed: set, targets) -> tuple:
    """A built-in's outputs with None where its edge leads to no node this graph task runs or
    captures from: torch's ops do not compute those gradients (``task_should_compute_output``),
    so post hooks see None there and anomaly mode checks nothing. (A custom Function's
    ``backward`` is not asked, and its outputs all stay.)"""
    return tuple([g if g is None or nf is None or nf in needed or nf in targets else None
                  for g, nf in zip(outputs, fn._next)])


def _needed_nodes(dependencies: dict, roots: list, inputs: list, run_targets: bool) -> set:
    """The nodes that lie on a path from the roots to one of the ``inputs`` edges.

    ``backward(inputs=...)`` also runs the node of a non-leaf input (``run_targets``);
    ``autograd.grad`` only captures the gradient that reaches it.
    """
    targets = {fn for fn, _ in inputs}
    nodes = set(dependencies) | {fn for fn, _ in roots}
    reach = set()
    # Inputs of a node were created before it, so ascending sequence order sees them first.
    for fn in sorted(nodes, key=lambda n: n._seq if type(n) is not AccumulateGrad else -1):
        if fn in targets or any(nf in reach for nf in fn._next if nf is not None):
            reach.add(fn)
    if run_targets:
        return reach
    return {fn for fn in reach
            if any(nf in reach for nf in fn._next if nf is not None)}


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


def _tensor_hooks(table: dict, grads: list, nr: int) -> list:
    """Run ``Tensor.register_hook`` hooks in registration order, each on the previous result.

    As in torch, a hook runs even when no gradient reached its tensor (it sees None).
    """
    g = grads[nr]
    for hook in list(table.values()):
        new = hook(g)
        if new is not None:
            if g is None:
                raise RuntimeError("can't replace a None gradient with a non-None value")
            g = _check_hook_result(hook, g, new)
    grads[nr] = g
    return grads


def _tensor_pre_hooks(hooks, grads: list) -> list:
    """Tensor hooks on the node's outputs, then the retain_grad updates (torch's order)."""
    for nr, table in hooks.tensor_pre.items():
        if table:
            grads = _tensor_hooks(table, grads, nr)
    for nr, ref in hooks.retains_grad.items():
        g = grads[nr]
        t = ref()
        if g is not None and t is not None:
            # torch's retain_grad hook stores a clone (recorded under create_graph).
            t._grad = g.clone() if t._grad is None else t._grad + g
    return grads


def _node_pre_hooks(hooks, grads: list) -> list:
    for hook in list(hooks.pre.values()):
        new = hook(tuple(grads))
        if new is not None:
            if not isinstance(new, tuple):
                raise TypeError(f"expected tuple, but hook returned '{type(new).__name__}'")
            if len(new) != len(grads):
                raise RuntimeError(
                    f"hook '{_hook_name(hook)}' has returned an incorrect number of values "
                    f"(got {len(new)}, but expected {len(grads)})")
            _check_hook_tuple(hook, grads, new)
            grads = list(new)
    return grads


def _call_post_hooks(fn: Node, hooks, outputs: tuple, grads: list) -> tuple:
    for hook in list(hooks.post.values()):
        new = hook(tuple(outputs), tuple(grads))
        if new is not None:
            if not isinstance(new, tuple):
                raise TypeError(f"expected tuple, but hook returned '{type(new).__name__}'")
            if len(new) != len(outputs):
                raise RuntimeError(
                    f"hook '{_hook_name(hook)}' has returned an incorrect number of values "
                    f"(got {len(new)}, but expected {len(outputs)})")
            _check_hook_tuple(hook, outputs, new)
            outputs = tuple(new)
    return outputs


def _check_hook_tuple(hook, old, new: tuple) -> None:
    for o, n in zip(old, new):
        if n is None:
            continue
        if o is None:
            raise RuntimeError("can't replace a None gradient with a non-None value")
        _check_hook_result(hook, o, n)


def _post_accumulate_hooks(variable: Tensor) -> None:
    table = getattr(variable, "_post_acc_hooks", None)
    if not table:
        return
    for hook in list(table.values()):
        result = hook(variable)
        if result is not None:
            if isinstance(result, Tensor):
                raise RuntimeError("Tensor post accumulate grad hooks should return None.")
            raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")


def _check_hook_result(hook, old: Tensor, new) -> Tensor:
    if not isinstance(new, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
    if new._data.shape != old._data.shape:
        raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")
    if new._data.dtype != old._data.dtype:
        raise RuntimeError(
            f"hook '{_hook_name(hook)}' has changed the type of value (was "
            f"{legacy_type_name(old).split()[0][1:]} got {legacy_type_name(new).split()[0][1:]})")
    return new


def _hook_name(hook) -> str:
    return getattr(hook, "__name__", type(hook).__name__)
