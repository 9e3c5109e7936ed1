"""The backward graph: Node, AccumulateGrad, saved tensors, and the helper that links outputs.

A Node holds edges to the nodes of its *inputs* (``next_functions``), never to its outputs, so the
graph is a chain of strong references from outputs down to leaves and is freed by reference
counting the moment the last output tensor goes away.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any

from .._state import STATE
from .._tensor import Tensor, bump_version, legacy_type_name, views_follow_base

__all__ = ["Node", "AccumulateGrad", "SavedTensor", "saved_tensors_hooks",
           "disable_saved_tensors_hooks", "increment_version", "ERR_BACKWARD_TWICE",
           "RemovableHandle"]

ERR_BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward."
)
ERR_DETACHED = (
    "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_()."
    "This is not supported, please use out-of-place `.detach()` instead"
)
_VERSION_HINT = (
    "Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
    "with torch.autograd.set_detect_anomaly(True, check_nan=False)."
)
_ANOMALY_HINT = (
    "Hint: the backtrace further above shows the operation that failed to compute its gradient. "
    "The variable in question was changed in there or anywhere later. Good luck!"
)
# Every node created on any thread takes the next number; the engine runs the ready node with the
# highest number first, i.e. the most recently created one.
_sequence = itertools.count()
next_sequence_nr = _sequence.__next__
# AccumulateGrad's sequence number in torch (UINT64_MAX): it runs as soon as it is ready.
ACCUMULATE_SEQ = 18446744073709551615

_hook_ids = itertools.count()


class RemovableHandle:
    """Removes a hook from the dict it was registered in (``handle.remove()`` or ``with``)."""

    def __init__(self, hooks_dict: dict) -> None:
        # Weak: a handle kept by the user must not keep the graph's hook table alive.
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(_hook_ids)

    def remove(self) -> None:
        """Remove the hook (a second call does nothing)."""
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None:
            hooks_dict.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"<ext.utils.hooks.RemovableHandle object at {hex(id(self))}>"


class _HookDict(dict):
    """A dict of hooks by handle id (dicts need a subclass to be weakly referenced)."""

    __slots__ = ("__weakref__",)


def add_hook(hooks_dict: dict, hook) -> RemovableHandle:
    """Add ``hook`` to ``hooks_dict`` and return the handle that removes it."""
    handle = RemovableHandle(hooks_dict)
    hooks_dict[handle.id] = hook
    return handle


def hook_dict() -> dict:
    """A new, weakly referenceable dict for hooks."""
    return _HookDict()


class _NodeHooks:
    """The hooks of one node, created on first registration so plain nodes stay small.

    ``tensor_pre`` holds, per output number, the hooks registered with ``Tensor.register_hook``
    on that output; ``retains_grad`` the outputs (held weakly) that fill their ``.grad``;
    ``pre`` and ``post`` the node's own hooks. Each hook dict maps a handle id to the hook.
    """

    __slots__ = ("tensor_pre", "retains_grad", "pre", "post")

    def __init__(self) -> None:
        self.tensor_pre: dict[int, dict] = {}
        self.retains_grad: dict[int, weakref.ref] = {}
        self.pre: dict = hook_dict()
        self.post: dict = hook_dict()

    def run_tensor_pre(self, grads: list) -> list:
        """The hooks of the node's output tensors, then their retain_grad (torch's order)."""
        for nr, table in self.tensor_pre.items():
            if table:
                grads = run_tensor_hooks(table, grads, nr)
        for nr, ref in self.retains_grad.items():
            g = grads[nr]
            t = ref()
            if g is not None and t is not None:
                # torch's retain_grad hook stores a clone (recorded under create_graph).
                t._grad = g.clone() if t._grad is None else t._grad + g
        return grads

    def run_pre(self, grads: list) -> list:
        """The node's pre-hooks, each on the output gradients; a returned tuple replaces them."""
        for hook in list(self.pre.values()):
            new = hook(tuple(grads))
            if new is not None:
                grads = list(_hook_tuple(hook, grads, new))
        return grads

    def run_post(self, outputs: tuple, grads: list) -> tuple:
        """The node's post hooks, on its results and the ``grads`` it was given; a returned tuple
        replaces the results."""
        for hook in list(self.post.values()):
            new = hook(tuple(outputs), tuple(grads))
            if new is not None:
                outputs = _hook_tuple(hook, outputs, new)
        return outputs


def run_tensor_hooks(table: dict, grads: list, nr: int) -> list:
    """Run ``Tensor.register_hook`` hooks on ``grads[nr]`` in registration order, each on the
    previous result. As in torch, a hook runs even when no gradient reached its tensor (it
    sees None)."""
    g = grads[nr]
    for hook in list(table.values()):
        new = hook(g)
        if new is not None:
            if g is None:
                raise RuntimeError("can't replace a None gradient with a non-None value")
            g = _hook_result(hook, g, new)
    grads[nr] = g
    return grads


def _hook_tuple(hook, old, new) -> tuple:
    """A node hook's returned tuple, checked against the values it replaces."""
    if not isinstance(new, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(new).__name__}'")
    if len(new) != len(old):
        raise RuntimeError(f"hook '{_hook_name(hook)}' has returned an incorrect number of values "
                           f"(got {len(new)}, but expected {len(old)})")
    for o, n in zip(old, new):
        if n is None:
            continue
        if o is None:
            raise RuntimeError("can't replace a None gradient with a non-None value")
        _hook_result(hook, o, n)
    return new


def _hook_result(hook, old: Tensor, new) -> Tensor:
    """A hook's replacement of gradient ``old``, which must keep its size and dtype."""
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


class Node:
    """A step of the backward graph: turns gradients w.r.t. its outputs into gradients w.r.t.
    its inputs, which it passes along ``next_functions``."""

    __slots__ = ("_next", "_nrs", "_seq", "_out_meta", "_hooks", "_metadata", "__weakref__")
    # Whether the engine may skip the node when no gradient reached it (built-ins pass "no
    # gradient" through; a custom Function's backward still runs, with zeros or None).
    _skip_undefined = True
    # What name() says when it is not the class's name (torch's nodes written by hand in C++
    # say "torch::autograd::<Name>").
    _qualified_name: str | None = None
    # Whether each gradient the node's backward returns is one it was given, a view of one, or
    # a tensor it made and keeps no reference to (the engine's own nodes and the built-ins; not
    # user code, which may keep what it returns).
    _fresh_results = True
    # Whether the node is a view op's, whose backward returns a view of the gradient it was
    # given (TBackward0's ``grad.t()``): the engine passes its ownership of that gradient on.
    _view_backward = False

    def name(self) -> str:
        """The node's name, e.g. ``'MulBackward0'``."""
        return self._qualified_name or type(self).__name__

    @property
    def next_functions(self) -> tuple:
        """One ``(node, output_nr)`` pair per input: where this node's gradients go next;
        ``(None, 0)`` for an input that needs no gradient."""
        return tuple(zip(self._next, self._nrs))

    @property
    def metadata(self) -> dict:
        """A dict for user data that lives as long as the node."""
        try:
            return self._metadata
        except AttributeError:
            self._metadata = {}
            return self._metadata

    def _sequence_nr(self) -> int:
        return self._seq

    def register_hook(self, fn) -> RemovableHandle:
        """Call ``fn(grad_inputs, grad_outputs)`` after the node runs; a returned tuple replaces
        ``grad_inputs``."""
        return add_hook(self._node_hooks().post, fn)

    def register_prehook(self, fn) -> RemovableHandle:
        """Call ``fn(grad_outputs)`` before the node runs; a returned tuple replaces
        ``grad_outputs``."""
        return add_hook(self._node_hooks().pre, fn)

    def _node_hooks(self) -> _NodeHooks:
        if self._hooks is None:
            self._hooks = _NodeHooks()
        return self._hooks

    def _apply(self, grads: list) -> tuple:
        """Gradients w.r.t. inputs (one per edge) from gradients w.r.t. outputs."""
        raise NotImplementedError

    def _release(self) -> None:
        """Drop what backward no longer needs (saved tensors) unless the graph is retained."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: adds incoming gradients into ``variable.grad``."""

    __slots__ = ("variable",)
    _qualified_name = "ext::autograd::AccumulateGrad"

    def __init__(self, variable: Tensor) -> None:
        self.variable = variable
        self._next = self._nrs = ()
        self._seq = ACCUMULATE_SEQ
        self._out_meta = ((variable._data.shape, variable._data.dtype),)
        self._hooks = None

    def run_post_accumulate_hooks(self) -> None:
        """The leaf's ``register_post_accumulate_grad_hook`` hooks, which return nothing."""
        variable = self.variable
        for hook in list(getattr(variable, "_post_acc_hooks", {}).values()):
            result = hook(variable)
            if result is not None:
                if isinstance(result, Tensor):
                    raise RuntimeError("Tensor post accumulate grad hooks should return None.")
                raise TypeError(f"expected Variable, but hook returned "
                                f"'{type(result).__name__}'")

    def _accumulate(self, grad: Tensor, create_graph: bool, owned: bool) -> None:
        """Add ``grad`` into ``.grad``: a first one is kept without a copy when the engine
        ``owned`` it (no other tensor shares its memory) and, if it is a view, it is laid out
        as the copy would be (torch's AccumulateGrad steals an unshared gradient that obeys
        the leaf's layout), else copied: ``.grad`` never aliases another tensor."""
        var = self.variable
        # The leaf may have changed since the graph was built: torch checks it here, at
        # backward time (detach_() or requires_grad_(False) since: no .grad).
        if var._grad_fn is not None:
            raise RuntimeError("leaf variable has been moved into the graph interior")
        if not var._requires_grad:
            return
        old = var._grad
        if old is None:
            if create_graph:
                # torch's clone_obey_contract: copied into a new tensor, the copy recorded
                # (CopyBackwards), so .grad is differentiable and aliases no other tensor
                var._grad = grad.new_empty(grad.shape).copy_(grad)
            else:
                g = _new(Tensor)
                data = grad._data
                g._data = data if owned and (data.base is None or data.flags.c_contiguous and
                                             data.flags.writeable) else data.copy()
                g._requires_grad = False
                g._grad_fn = None
                g._output_nr = 0
                g._grad = None
                g._vc = None
                var._grad = g
        elif create_graph:
            var._grad = old + grad
        else:
            # Accumulate in place: the same .grad object, as torch does (with grad mode off,
            # even a .grad that has a graph of its own: it keeps its grad_fn).
            old._data += grad._data
            bump_version(old)


_new = object.__new__


def grad_accumulator(t: Tensor) -> AccumulateGrad:
    """The AccumulateGrad node of leaf ``t``, shared by every graph while ``t`` lives."""
    ref = getattr(t, "_grad_acc", None)
    acc = ref() if ref is not None else None
    if acc is None:
        info = getattr(t, "_view", None)
        if info is not None and not info.own_requires_grad:
            # A view with no history requires grad through its base, and has no accumulator.
            return None
        acc = AccumulateGrad(t)
        # The tensor refers to its accumulator weakly: the accumulator holds the tensor.
        t._grad_acc = weakref.ref(acc)
    return acc


def _refresh_view(t: Tensor) -> None:
    if getattr(t, "_view", None) is not None:  # (only a view's history can be stale)
        from .views import refresh_view  # (views.py builds on this module)

        refresh_view(t)


def gradient_edge(t: Tensor) -> tuple:
    """The edge along which the gradient of ``t`` flows: ``(node, output_nr)`` or (None, 0)."""
    vc = t._vc
    if vc and vc[0]:
        _refresh_view(t)  # a view whose base changed reads its history anew (or raises)
    fn = t._grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if t._requires_grad:
        return (grad_accumulator(t), 0)
    return (None, 0)


_INFERENCE_SAVE = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a clone "
    "to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
    "`torch.inference_mode()`."
)


def saved_version(t: Tensor) -> int:
    """The version of ``t`` to record when saving it (inference tensors cannot be saved)."""
    vc = t._vc
    if vc is None:
        return 0
    if type(vc) is not list:  # False, or the InferenceVersion of a detached inference tensor
        raise RuntimeError(_INFERENCE_SAVE)
    return vc[0]


def current_version(t: Tensor) -> int:
    """The version of ``t`` now."""
    vc = t._vc
    return 0 if vc is None else vc[0]


def check_saved_input(t: Tensor, version: int, nonleaf: bool, producer: Node | None = None,
                      output_nr: int = 0) -> None:
    """Refuse a saved tensor that backward cannot use, as torch's ``SavedVariable.unpack`` does:
    modified in place since it was saved at ``version`` (torch's message names ``producer``'s
    output ``output_nr``, by default t's own history), or detached in place since.

    ``nonleaf``: ``t`` had a grad_fn when saved, and the unpacking is for a built-in's
    backward formula. Only ``detach_`` takes a grad_fn away, and the history the formula
    would differentiate through is then gone. (torch's custom Functions and ``_saved_*``
    readers hand the node itself in as the history to use, so they pass False.) This check
    comes before the version check, as in torch.
    """
    if nonleaf and t._grad_fn is None:
        raise RuntimeError(ERR_DETACHED)
    vc = t._vc
    # (an inference tensor has no counter: only a forward rule's ctx, which saves nothing for
    # backward, holds one)
    if type(vc) is list and vc[0] != version:
        raise RuntimeError(version_error(t, version, producer, output_nr))


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved.

    An input is kept as the object itself. An output of the saving node is kept without its
    ``grad_fn`` (which is that node: keeping it would make a cycle) and rebuilt on unpack.
    With hooks (``saved_tensors_hooks``, or ``register_hooks`` on ``grad_fn._raw_saved_*``)
    the graph keeps only what ``pack_hook`` returned, and rebuilds a tensor from
    ``unpack_hook`` on every access.

    The output of an in-place op on a view refers weakly to the view's grad_fn (``_view_fn``),
    as torch's does: while that node lives (the view, or what a pack hook kept of it, holds it;
    under forward AD the base's tangent too) the unpacked tensor's history goes through the
    view; once it is gone, through the op's node.
    """

    __slots__ = ("_tensor", "_version", "_is_output", "_nonleaf", "_output_nr", "_requires_grad",
                 "_grad_fn", "_grad_acc", "_packed", "_unpack", "_view_fn")

    def __init__(self, t: Tensor, is_output: bool, hooks: tuple | None = None,
                 version: int | None = None, nonleaf: bool | None = None) -> None:
        self._version = saved_version(t) if version is None else version
        self._is_output = is_output
        # An input that had a grad_fn when saved (given when the saving was earlier than now).
        self._nonleaf = (not is_output and t._grad_fn is not None) if nonleaf is None \
            else nonleaf
        self._output_nr = t._output_nr
        self._requires_grad = t._requires_grad
        self._unpack = None
        self._view_fn = None
        self._tensor = t.detach() if is_output else t
        if is_output and STATE.special:
            # Under forward AD the saved output keeps its tangent (for forward-over-reverse).
            fw = getattr(t, "_fw_grad", None)
            if fw is not None:
                self._tensor._fw_grad = fw
        if hooks is not None:
            self._set_hooks(t, *hooks)

    def _set_hooks(self, t: Tensor, pack, unpack) -> None:
        # An input keeps its place in the graph: its node, or its leaf's accumulator.
        self._grad_fn = None if self._is_output else t._grad_fn
        self._grad_acc = grad_accumulator(t) if t._requires_grad and t._grad_fn is None \
            and not self._is_output else None
        before = current_version(t)
        prev = STATE.grad_enabled
        STATE.grad_enabled = False  # torch packs under no_grad
        try:
            packed = pack(t)
        finally:
            STATE.grad_enabled = prev
        if current_version(t) != before:
            raise RuntimeError(
                "A saved tensor pack hook is modifying its input in place. Tensors provided as "
                "input to pack hook cannot be modified by in-place operations as this can lead "
                "to unexpected side-effects. Please open an issue if you need to perform "
                "in-place operations on the input to a pack hook.")
        self._packed = packed
        self._unpack = unpack
        self._tensor = None

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        """Replace how this saved tensor is kept: ``pack_hook`` now, ``unpack_hook`` on each
        access."""
        if self._unpack is not None:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have "
                               "already been set. Hint: only one pair of hooks is allowed at a "
                               "time.")
        if self._tensor is None:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor after it has been freed. Saved "
                "intermediate values of the graph are freed when you call .backward() or "
                "autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time or if you need to access saved values after calling "
                "backward.")
        self._set_hooks(self._tensor, pack_hook, unpack_hook)

    def unpack(self, node: Node | None, formula: bool = False) -> Tensor:
        """The saved tensor, after checking it was not modified in place since it was saved.

        ``formula``: unpacked for a built-in's backward formula, which refuses a non-leaf input
        detached in place since (see ``check_saved_input``). With hooks, the input's history
        was kept at save time, and nothing is refused.
        """
        if self._unpack is not None:
            return self._unpack_hooked(node)
        t = self._tensor
        if t is None:
            raise RuntimeError(ERR_BACKWARD_TWICE)
        if not self._is_output:
            check_saved_input(t, self._version, formula and self._nonleaf)
            return t
        check_saved_input(t, self._version, False, node, self._output_nr)
        out = t.detach()
        if self._requires_grad and node is not None:
            out._grad_fn, out._output_nr = self._output_edge(node)
            out._requires_grad = True
        if STATE.special:
            fw = getattr(t, "_fw_grad", None)
            if fw is not None:
                out._fw_grad = fw
        return out

    def _unpack_hooked(self, node: Node | None) -> Tensor:
        data = self._unpack(self._packed)
        if not isinstance(data, Tensor):
            raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor but got "
                            f"result of type {type(data).__name__}")
        out = data.detach()
        if self._is_output:
            fn, nr = (None, 0) if node is None else self._output_edge(node)
        else:
            fn, nr = self._grad_fn, self._output_nr
        if fn is not None and self._requires_grad:
            out._grad_fn = fn
            out._output_nr = nr
            out._requires_grad = True
        elif self._grad_acc is not None:
            out._requires_grad = True
            out._grad_acc = weakref.ref(self._grad_acc)
        elif self._requires_grad:
            # A leaf that requires grad through its base (a no_grad view) has no accumulator.
            out._requires_grad = True
        return out

    def _output_edge(self, node: Node) -> tuple:
        # A saved output hangs from the node that saved it, or from its view's live grad_fn.
        ref = self._view_fn
        if ref is not None:
            fn = ref()
            if fn is not None:
                return fn, 0
        return node, self._output_nr


class OutputsPackedLater(tuple):
    """Saved-tensor hooks (pack, unpack) that leave outputs unpacked for now: an in-place op
    packs its saved output once the tensor is written, so that the pack hook receives the
    modified tensor itself, as in torch."""

    __slots__ = ()


def save(t: Tensor, is_output: bool) -> SavedTensor:
    """A SavedTensor for ``t``, through the active saved-tensor hooks if there are any."""
    hooks = STATE.saved_hooks
    if is_output and type(hooks) is OutputsPackedLater:
        hooks = None
    return SavedTensor(t, is_output, hooks)


class saved_tensors_hooks:  # noqa: N801 - torch's name
    """Within this context, tensors saved for backward go through ``pack_hook`` at save time and
    come back through ``unpack_hook`` when backward (or ``_saved_*``) needs them."""

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        if STATE.saved_hooks_disabled is not None:
            raise RuntimeError(STATE.saved_hooks_disabled)
        self._prev = STATE.saved_hooks
        STATE.saved_hooks = (self.pack_hook, self.unpack_hook)
        return self

    def __exit__(self, *exc) -> None:
        STATE.saved_hooks = self._prev


class disable_saved_tensors_hooks:  # noqa: N801 - torch's name
    """Forbid ``saved_tensors_hooks`` within this context; entering them raises
    ``RuntimeError(error_message)``."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        if STATE.saved_hooks is not None:
            raise RuntimeError(self.error_message)
        self._prev = STATE.saved_hooks_disabled
        STATE.saved_hooks_disabled = self.error_message

    def __exit__(self, *exc) -> None:
        STATE.saved_hooks_disabled = self._prev


def increment_version(tensor) -> None:
    """Bump the version counter of a tensor (or of each tensor of an iterable) by hand; an
    inference tensor, which has none, is left alone."""
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        if t._vc is not False:
            bump_version(t)


def version_error(t: Tensor, expected: int, producer: Node | None = None,
                  output_nr: int = 0) -> str:
    """torch's message for a saved tensor modified in place since it was saved."""
    fn = producer if producer is not None else t._grad_fn
    nr = output_nr if producer is not None else t._output_nr
    where = ""
    if fn is not None:
        op = fn.name()
        op = op[: op.rfind("Backward")] if "Backward" in op else op
        where = f", which is output {nr} of {op},"
    return (f"one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: {legacy_type_name(t)}{where} is at version "
            f"{current_version(t)}; expected version {expected} instead. "
            f"{_ANOMALY_HINT if STATE.anomaly else _VERSION_HINT}")


_META: dict = {}


def output_meta(d) -> tuple:
    """The metadata tuple of a single-output node, ``((shape, dtype),)``, shared by all nodes
    with the same shape and dtype so that the graph holds fewer small objects."""
    key = (d.shape, d.dtype)
    meta = _META.get(key)
    if meta is None:
        if len(_META) > 4096:
            _META.clear()
        meta = _META[key] = (key,)
    return meta


_ZEROS = {n: (0,) * n for n in range(8)}
_ZERO1 = _ZEROS[1]


def link(outputs: tuple, node: Node, inputs: tuple) -> None:
    """Make ``node`` the grad_fn of ``outputs`` and point it at the edges of ``inputs``.

    The one place where a node joins the graph, shared by ``Function.apply`` and the built-ins'
    fast path. ``inputs`` holds a Tensor or None per edge; an output may be None (not
    differentiable).
    """
    if len(inputs) == 1 and inputs[0] is not None:
        # The common case (a one-input op), without the loop.
        t = inputs[0]
        vc = t._vc
        if vc and vc[0]:
            _refresh_view(t)
        fn = t._grad_fn
        if fn is None:
            acc = grad_accumulator(t) if t._requires_grad else None
            node._next = (acc,)
            node._nrs = _ZERO1
            if acc is None and t._requires_grad:
                _no_edge(node, (0,))
        else:
            node._next = (fn,)
            node._nrs = (t._output_nr,) if t._output_nr else _ZERO1
    elif len(inputs) == 2 and not ((inputs[0] is not None and inputs[0]._output_nr) or
                                   (inputs[1] is not None and inputs[1]._output_nr)):
        # Two inputs that are each output 0 of their node (or constants): no output numbers.
        a, b = inputs
        node._next = nexts = (_edge_node(a), _edge_node(b))
        node._nrs = _ZEROS[2]
        if None in nexts and ((nexts[0] is None and a is not None and a._requires_grad) or
                              (nexts[1] is None and b is not None and b._requires_grad)):
            _no_edge(node, [i for i in (0, 1) if nexts[i] is None])
    else:
        nexts = []
        nrs = None
        dead: list = []
        for i, t in enumerate(inputs):
            fn = None
            if type(t) is Tensor:  # (three or more inputs: anything else has no edge)
                vc = t._vc
                if vc and vc[0]:
                    _refresh_view(t)
                fn = t._grad_fn
                if fn is not None:
                    if t._output_nr:
                        if nrs is None:
                            nrs = [0] * len(inputs)
                        nrs[i] = t._output_nr
                elif t._requires_grad:
                    fn = grad_accumulator(t)
                    if fn is None:
                        dead.append(i)
            nexts.append(fn)
        node._next = tuple(nexts)
        if dead:
            _no_edge(node, dead)
        if nrs is None:
            node._nrs = _ZEROS.get(len(inputs)) or (0,) * len(inputs)
        else:
            node._nrs = tuple(nrs)
    node._seq = next(_sequence)
    node._hooks = None
    if STATE.special and STATE.anomaly:
        from .anomaly_mode import record_forward_stack

        record_forward_stack(node)
    if len(outputs) == 1 and outputs[0] is not None:
        out = outputs[0]
        node._out_meta = output_meta(out._data)
        if out._grad_fn is not None or (out._vc and len(out._vc) > 1):
            _new_history(out, node, 0)
            return
        out._grad_fn = node
        out._requires_grad = True
        return
    _link_outputs(outputs, node)


def move_retains_grad(t: Tensor, node: Node, output_nr: int) -> None:
    """``t`` gets a new history (an in-place write): a ``retain_grad`` on it follows it to
    output ``output_nr`` of ``node``; its tensor hooks stay where they were, as in torch."""
    prev = t._grad_fn
    if prev is not None and prev._hooks is not None:
        ref = prev._hooks.retains_grad.pop(t._output_nr, None)
        if ref is not None:
            node._node_hooks().retains_grad[output_nr] = ref


def _new_history(t: Tensor, node: Node, output_nr: int) -> None:
    """Make ``t``, a tensor that may already have a history or views (an input a Function
    modified in place), output ``output_nr`` of ``node``."""
    move_retains_grad(t, node, output_nr)
    t._grad_fn = node
    t._output_nr = output_nr
    if not t._requires_grad:
        t._requires_grad = True
        views_follow_base(t)


def _no_edge(node: Node, edges) -> None:
    """Inputs at ``edges`` that read as requiring grad but have no edge (views made under
    no_grad of a tensor that requires grad): torch computes no gradient for them, so a
    built-in's node does not ask for one (a custom Function's ctx keeps what forward saw)."""
    pos = getattr(node, "_edge_needs", None)
    if pos is None:
        return
    needs = list(node.needs_input_grad)
    for i in edges:
        p = i if type(pos) is int else pos[i]
        if p < len(needs):
            needs[p] = False
    node.needs_input_grad = tuple(needs)


def _edge_node(t: Tensor | None) -> Node | None:
    """The node that an edge to ``t`` points at (None for a constant)."""
    if t is None:
        return None
    vc = t._vc
    if vc and vc[0]:
        _refresh_view(t)
    fn = t._grad_fn
    if fn is not None:
        return fn
    return grad_accumulator(t) if t._requires_grad else None


def _link_outputs(outputs: tuple, node: Node) -> None:
    meta = []
    for i, out in enumerate(outputs):
        if out is None:
            meta.append(None)
            continue
        meta.append((out._data.shape, out._data.dtype))
        if out._grad_fn is not None or (out._vc and len(out._vc) > 1):
            _new_history(out, node, i)
            continue
        out._grad_fn = node
        out._output_nr = i
        out._requires_grad = True
    node._out_meta = tuple(meta)

