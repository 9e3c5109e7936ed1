"""``ext.autograd.Function``: user-defined ops with a forward and a backward, and their ctx.

The ctx object a Function's ``forward`` and ``backward`` receive *is* the node of the graph, as in
torch: ``y.grad_fn`` of ``y = MyFn.apply(x)`` is an instance of the generated class
``MyFnBackward``, and ``y.grad_fn.saved_tensors`` reads what forward saved.
"""

from __future__ import annotations

import functools
import inspect
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .._args import is_torch_tensor, wrong_engine_output
from .._state import STATE
from .._tensor import Tensor, wrap
from .graph import (
    ERR_BACKWARD_TWICE,
    Node,
    SavedTensor,
    check_saved_input,
    link,
    save,
    saved_version,
)

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable"]

FREED = object()  # a node's saved values once backward released them


class FunctionCtx:
    """What ``forward``/``setup_context`` use to leave information for ``backward``.

    Both kinds of node (a custom Function's, a built-in's) save the same way, in ``_saved``: an
    input as itself, its version in ``_versions`` (None when all were 0) and whether it had a
    grad_fn in bit i of ``_nonleaf``; an output of the node, or any tensor under
    ``saved_tensors_hooks``, as a ``SavedTensor``; anything else as it is.
    """

    __slots__ = ()
    # Whether the saved values are read by a built-in's formula, which refuses a non-leaf input
    # detached in place since (torch hands a custom Function the node itself as the history).
    _formula = False

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Save tensors (inputs, outputs or None) for ``backward``, checked for in-place
        modification when unpacked."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{i} is of type {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors: Tensor | None) -> None:
        """Save tensors for ``jvp`` (forward-mode AD), where ``saved_tensors`` returns them."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise AssertionError("save_for_forward expects all arguments to be tensors; you "
                                     "should save non-tensors as attributes on ctx.")
        self._saved_forward = tensors

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Declare inputs that forward modified in place; they must be returned, and come back
        as the same objects with this Function as their grad_fn."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Declare outputs that have no gradient: they will not require grad."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """Whether ``backward`` receives zeros (True, the default) or None for unused outputs."""
        self._materialize_grads = value

    def _store(self, *values) -> None:
        """Keep ``values`` for backward (see the class); the node is already linked, so its
        outputs are the tensors whose grad_fn it is."""
        if STATE.special and STATE.saved_hooks is not None:
            self._saved = tuple(save(v, v._grad_fn is self) if type(v) is Tensor else v
                                for v in values)
            self._versions = None
            self._nonleaf = 0
            return
        saved = values
        versions = None
        nonleaf = 0
        for i, v in enumerate(values):
            if type(v) is not Tensor:
                continue
            fn = v._grad_fn
            if fn is self:
                if saved is values:
                    saved = list(values)
                saved[i] = SavedTensor(v, True)
                continue
            if fn is not None:
                nonleaf |= 1 << i
            if v._vc is not None:
                version = saved_version(v)
                if version:
                    if versions is None:
                        versions = [0] * len(values)
                    versions[i] = version
        self._saved = values if saved is values else tuple(saved)
        self._versions = versions
        self._nonleaf = nonleaf

    def _unpack_saved(self) -> tuple:
        """The saved values, refused if a saved tensor was modified in place since it was saved
        (or, for a formula, detached in place since it was saved as a non-leaf)."""
        saved = self._saved
        if saved is FREED:
            raise RuntimeError(ERR_BACKWARD_TWICE)
        versions = self._versions
        if versions is None:
            # The common case: nothing was at a non-zero version when saved, so a saved tensor
            # is intact exactly when its counter is still 0 (or was never made) and it has the
            # grad_fn it had (a leaf now was a leaf then, or was detached in place since).
            for v in saved:
                if type(v) is Tensor:
                    vc = v._vc
                    if vc is not None and vc[0]:
                        break
                    if v._grad_fn is None and self._nonleaf:
                        break
                elif v is not None and isinstance(v, SavedTensor):
                    break
            else:
                return saved
        out = []
        nonleaf = self._nonleaf if self._formula else 0
        for i, v in enumerate(saved):
            if type(v) is Tensor:
                check_saved_input(v, 0 if versions is None else versions[i], nonleaf >> i & 1)
            elif isinstance(v, SavedTensor):
                v = v.unpack(self, self._formula)
            out.append(v)
        return tuple(out)

    def _release(self) -> None:
        """Drop the saved values (backward without retain_graph)."""
        if self._saved:
            self._saved = FREED


class BackwardCFunction(FunctionCtx, Node):
    """The node of a custom Function; ``<ClassName>Backward`` classes derive from it."""

    _forward_cls: type
    _skip_undefined = False
    _fresh_results = False
    _materialize_grads = True
    _non_differentiable: tuple = ()
    _dirty: tuple = ()
    _saved: tuple | object = ()
    _to_save = _saved_forward = _versions = None
    _nonleaf = 0
    _in_jvp = False

    def __init__(self) -> None:
        # Made through Function.apply (or the built-ins' fast path), not by users.
        self._hooks = None

    def _apply(self, grads: list) -> tuple:
        cls = self._forward_cls
        if self._materialize_grads:
            grads = [_zeros_for(m) if g is None and m is not None else g
                     for g, m in zip(grads, self._out_meta)]
        backward = cls.backward
        if backward is Function.backward and cls.vjp is not Function.vjp:
            backward = cls.vjp
        result = backward(self, *grads)
        return self._check_gradients(result)

    def _check_gradients(self, result: Any) -> tuple:
        if not isinstance(result, tuple):
            result = (result,)
        n = len(self.needs_input_grad)
        if len(result) > n and all(r is None for r in result[n:]):
            result = result[:n]
        if len(result) != n:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                               f"gradients (expected {n}, got {len(result)})")
        grads = []
        positions = self._tensor_pos
        for i, r in enumerate(result):
            if r is not None and not isinstance(r, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(r).__name__})")
            if r is not None and i not in positions:
                raise RuntimeError(
                    f"function {self.name()} returned a gradient different than None at "
                    f"position {i + 1}, but the corresponding forward input was not a Variable")
        for p in positions:
            # A gradient for an input that does not require grad has no edge to go to: the
            # engine drops it without a check (node post-hooks still see it, as in torch).
            grads.append(result[p])
        return tuple(grads)

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward`` (in ``jvp``: to ``save_for_forward``);
        inputs come back as the same objects."""
        if self._in_jvp and self._saved_forward is not None:
            return self._saved_forward
        return self._unpack_saved()


def _zeros_for(meta: tuple) -> Tensor:
    shape, dt = meta
    return wrap(np.zeros(shape, dt))


def _custom_node_repr(node) -> str:
    return f"<ext.autograd.function.{type(node).__name__} object at {hex(id(node))}>"


# Called with each Function subclass as it is defined. The bridge, once loaded, makes the class's
# torch twin here: a first call inside torch.compile must find it made, since dynamo cannot trace
# the making of a class.
ON_DEFINE: list[Callable[[type], None]] = []


class FunctionMeta(type):
    """Creates each custom Function's node class (``<ClassName>Backward``) when the Function is
    made. A class that made its own node class as it was created (the built-ins do, in
    ``__init_subclass__``) keeps it."""

    def __init__(cls, name: str, bases: tuple, attrs: dict) -> None:
        super().__init__(name, bases, attrs)
        if "_backward_cls" not in cls.__dict__:
            # (torch makes a custom Function's node class in torch.autograd.function)
            cls._backward_cls = type(f"{name}Backward", (BackwardCFunction,), {
                "_forward_cls": cls, "__module__": cls.__module__, "__repr__": _custom_node_repr})
        # (last: a built-in's __init_subclass__ has planned its saves and setup_context by now)
        for hook in ON_DEFINE:
            hook(cls)


def bind_arguments(fn, args: tuple, kwargs: dict, skip_ctx: bool) -> tuple:
    """Bind keyword arguments of ``apply`` to forward's positional slots, with defaults."""
    sig = inspect.signature(fn)
    if skip_ctx:
        params = list(sig.parameters.values())[1:]
        sig = sig.replace(parameters=params)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"forward() {str(e)}") from None
    bound.apply_defaults()
    return tuple(bound.arguments.values())


class Function(metaclass=FunctionMeta):
    """Base class of ops with a custom backward; call them with ``MyFn.apply(*args)``.

    Define ``forward(ctx, *args)`` (or ``forward(*args)`` plus ``setup_context(ctx, inputs,
    output)``) and ``backward(ctx, *grad_outputs)`` returning one gradient per forward argument.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd functions "
                      "are all static, so you should invoke them on the class itself. "
                      "Instantiating an autograd function will raise an error in a future "
                      "version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        """Compute the outputs (runs with grad disabled)."""
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> Any:
        """Save what backward needs, when forward does not take ``ctx``."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        """Gradients w.r.t. each forward argument from gradients w.r.t. each output."""
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    @staticmethod
    def vjp(ctx: Any, *grad_outputs: Any) -> Any:
        """An alias of ``backward``."""
        return Function.backward(ctx, *grad_outputs)

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        """The outputs' tangents from the inputs' tangents (forward-mode AD)."""
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "backward" in cls.__dict__ and "vjp" in cls.__dict__:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is "
                               "not allowed. You should only implement one of them.")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` and, if any tensor input requires grad, record a node for it; on torch
        tensors, run the Function inside torch (the bridge, ``ext.compat``)."""
        if args and type(args[0]) is not Tensor and _has_torch_tensor(args):
            return (_BRIDGE[0] if _BRIDGE else _bridge())(cls, args, kwargs)
        separate = cls.setup_context is not Function.setup_context
        if kwargs:
            args = bind_arguments(cls.forward, args, kwargs, skip_ctx=not separate)
        positions = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
        needs = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        record = STATE.grad_enabled and not STATE.inference and any(needs)
        ctx = cls._backward_cls()
        ctx.needs_input_grad = needs
        ctx._tensor_pos = positions

        state = STATE
        tangents = _input_tangents(args) if state.fw_level is not None and not state.inference \
            else None
        prev = state.grad_enabled
        prev_level = state.fw_level
        state.grad_enabled = False
        if tangents is not None:
            # forward sees primal values: its own ops do not carry tangents.
            state.fw_level = None
        try:
            if separate:
                output = cls.forward(*args)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args)
        finally:
            state.grad_enabled = prev
            if tangents is not None:
                state.fw_level = prev_level

        is_tuple = isinstance(output, tuple)
        outputs = output if is_tuple else (output,)
        dirty = ctx._dirty
        if dirty:
            _check_dirty(dirty, args, outputs, record)
        # An input returned as-is (and not marked dirty) comes back as a new view of it; one
        # marked non-differentiable stays so under its new name.
        non_diff = ctx._non_differentiable
        returned = []
        for o in outputs:
            if isinstance(o, Tensor) and not record and o._requires_grad and (
                    any(o is a for a in args) or getattr(o, "_view", None) is None):
                # Nothing was recorded: an input that requires grad comes back as a detached
                # alias (it keeps its own flag), another result is detached, as in torch.
                o = o.detach() if any(o is a for a in args) else o.detach_()
            elif isinstance(o, Tensor) and not any(o is d for d in dirty):
                if any(o is a for a in args):
                    view = _returned_input(o, cls.__name__)
                    if any(o is n for n in non_diff):
                        non_diff = non_diff + (view,)
                    o = view
                elif getattr(o, "_view", None) is not None:
                    from .views import IN_CUSTOM_FUNCTION

                    # Writing into it in place would bypass this Function's backward.
                    o._view.creation = IN_CUSTOM_FUNCTION
            elif not isinstance(o, Tensor) and is_torch_tensor(o):
                raise wrong_engine_output(cls.__name__, len(returned), "a torch.Tensor",
                                          "ext.Tensor")
            returned.append(o)
        outputs = tuple(returned)
        ctx._non_differentiable = non_diff
        if record:
            non_diff = ctx._non_differentiable
            linked = tuple(
                o if isinstance(o, Tensor) and o.is_floating_point()
                and not any(o is n for n in non_diff) else None
                for o in outputs)
            view_inputs = [(k, args[p]) for k, p in enumerate(positions)
                           if any(args[p] is d for d in dirty) and
                           getattr(args[p], "_view", None) is not None]
            link(linked, ctx, tuple(args[p] for p in positions))
            ctx._out_meta = tuple((o._data.shape, o._data.dtype) if isinstance(o, Tensor)
                                  else None for o in outputs)
            if view_inputs and len(outputs) == 1:
                _rebase_dirty_views(ctx, view_inputs)
            if tangents is not None:
                # After the history is set and before the tensors are saved, as in torch: a
                # missing jvp raises with the graph built, and jvp sees no saved tensors.
                _forward_tangents(cls, ctx, args, outputs, tangents)
            to_save = ctx._to_save
            if to_save is not None:
                ctx._to_save = None
                ctx._store(*to_save)
        else:
            ctx._to_save = None
            if tangents is not None:
                _forward_tangents(cls, ctx, args, outputs, tangents)
        return outputs if is_tuple else outputs[0]


def _input_tangents(args: tuple) -> list | None:
    """The tangents of the tensor arguments at the current forward-AD level (None if none)."""
    from .forward_ad import tangent_of

    tangents = [tangent_of(a) if isinstance(a, Tensor) else None for a in args]
    return tangents if any(t is not None for t in tangents) else None


def _forward_tangents(cls, ctx, args: tuple, outputs: tuple, tangents: list) -> None:
    """Run the Function's ``jvp`` and attach the tangents it returns to the outputs."""
    from .forward_ad import set_tangent

    if ctx._materialize_grads:
        tangents = [_zeros_for((a._data.shape, a._data.dtype)) if t is None and
                    isinstance(a, Tensor) else t for a, t in zip(args, tangents)]
    level = STATE.fw_level
    STATE.fw_level = None
    ctx._in_jvp = True
    try:
        result = cls.jvp(ctx, *tangents)
    finally:
        ctx._in_jvp = False
        STATE.fw_level = level
    result = result if isinstance(result, tuple) else (result,)
    for o, t in zip(outputs, result):
        if isinstance(o, Tensor) and isinstance(t, Tensor) and o.is_floating_point():
            set_tangent(o, t)


def _check_dirty(dirty: tuple, args: tuple, outputs: tuple, record: bool) -> None:
    """torch's rules for ``mark_dirty``; a dirty input has its version bumped."""
    from .._tensor import bump_version
    from .views import check_inplace

    for d in dirty:
        if not any(d is a for a in args):
            warnings.warn("ctx.mark_dirty() received a tensor that was not an input. Only input "
                          "Tensors that have been mutated should be passed to "
                          "ctx.mark_dirty().", UserWarning, stacklevel=4)
            continue
        if not any(d is o for o in outputs):
            raise RuntimeError("Some elements marked as dirty during the forward method were not "
                               "returned as output. The inputs that are modified inplace must "
                               "all be outputs of the Function.")
        bump_version(d)
        if record:
            if d._grad_fn is None and d._requires_grad:
                raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                   "in-place operation.")
            if getattr(d, "_view", None) is not None:
                check_inplace(d, True)
                if len(outputs) > 1:
                    raise RuntimeError(_DIRTY_VIEW_OUTPUTS)


_DIRTY_VIEW_OUTPUTS = (
    "If your Function modifies inplace an input that is a view of another Tensor, your Function "
    "cannot return more than one Tensor. This is not supported by the current autograd engine. "
    "You should either make sure the input is not a view (using .clone() for example) or make "
    "your Function only return one Tensor (potentially splitting it into two Functions: one "
    "doing the inplace that returns a single Tensor and a second one that does the other "
    "operations). You can ask on the forum https://discuss.pytorch.org/ if you need help to do "
    "this change.")


def _rebase_dirty_views(ctx, view_inputs: list) -> None:
    """A view modified in place by a Function: its base takes the new history (CopySlices)."""
    from .views import copy_slices

    for edge, view in view_inputs:
        copy_slices(view, view._view, ctx, edge)


def _returned_input(t: Tensor, name: str) -> Tensor:
    from .views import IN_CUSTOM_FUNCTION, make_view

    return make_view(wrap(t._data), t, IN_CUSTOM_FUNCTION, name)


_BRIDGE: list = []


def _bridge():
    """The bridge's apply (``ext.compat.apply``), imported on the first call on torch tensors
    (``import ext`` never imports torch)."""
    if not _BRIDGE:
        from ..compat import apply

        _BRIDGE.append(apply)
    return _BRIDGE[0]


def _has_torch_tensor(args: tuple) -> bool:
    """Whether a Function's arguments hold a torch tensor and none of ext's (the bridge's
    case)."""
    torch_tensor = _TORCH_TENSOR[0] if _TORCH_TENSOR else _torch_tensor_type()
    if torch_tensor is None:
        return False
    found = False
    for a in args:
        if isinstance(a, Tensor):
            return False
        if isinstance(a, torch_tensor):
            found = True
    return found


_TORCH_TENSOR: list = []


def _torch_tensor_type():
    """torch.Tensor once torch is imported (kept from then on), else None."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    _TORCH_TENSOR.append(torch.Tensor)
    return torch.Tensor


def once_differentiable(fn):
    """Mark a backward as not differentiable: it runs under no_grad, and differentiating its
    results raises."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        state = STATE
        prev = state.grad_enabled
        state.grad_enabled = False
        try:
            outputs = fn(ctx, *args)
        finally:
            state.grad_enabled = prev
        if not prev:
            return outputs
        if not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            return outputs
        is_tuple = isinstance(outputs, tuple)
        outs = outputs if is_tuple else (outputs,)
        # As in torch, the Error node hangs off fresh leaves (detached copies of the outputs that
        # require grad), not off the arguments: it only makes the results require grad, and is
        # reached (and raises) only by a backward that runs every node, not by one restricted to
        # inputs that the results do not depend on.
        err = Error("trying to differentiate twice a function that was marked with "
                    "@once_differentiable")
        wrapped = tuple(o.detach() if isinstance(o, Tensor) else o for o in outs)
        diff = tuple(w if isinstance(w, Tensor) and w.is_floating_point() else None
                     for w in wrapped)
        link(diff, err, tuple(None if w is None else _fake_leaf(w) for w in diff))
        return wrapped if is_tuple else wrapped[0]

    wrapper._once_differentiable = fn  # (the bridge gives torch's decorator the body)
    return wrapper


def _fake_leaf(t: Tensor) -> Tensor:
    leaf = t.detach()
    leaf._requires_grad = True
    return leaf


class Error(Node):
    """A node that raises when backward reaches it (results of once-differentiable backwards)."""

    __slots__ = ("_message",)
    _qualified_name = "ext::autograd::Error"

    def __init__(self, message: str) -> None:
        self._message = message

    def _apply(self, grads: list) -> tuple:
        raise RuntimeError(self._message)
