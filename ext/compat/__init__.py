"""``ext.compat``: the bridge that runs an ``ext.autograd.Function`` on torch tensors.

``MyFn.apply(...)`` with torch tensors runs ``MyFn`` as a ``torch.autograd.Function`` made once
per class and cached (``to_torch(MyFn)`` returns it). The body runs unchanged: it uses the
common tensor API, and the ctx it gets is torch's own, so ``save_for_backward``,
``needs_input_grad``, ``mark_dirty``, ``mark_non_differentiable``, ``set_materialize_grads``,
the saved-tensor version checks and ``saved_tensors_hooks`` are torch's.

Three flavours of the torch class, chosen per call:

- the default, for ``torch.compile`` and the least cost per call: the Function as it is written
  (``forward(ctx, ...)``, or ``forward`` + ``setup_context``), without ``jvp``;
- under forward-mode AD (a ``dual_level`` is open), the same with the Function's ``jvp``
  (a ``jvp`` breaks ``torch.compile``'s graph, so it is left out when it is not needed);
- under torch.func transforms (vmap, grad, jacrev, jvp), the flavour torch.func requires:
  ``forward(*args)`` + ``setup_context`` + a generated vmap rule. A Function written as
  ``forward(ctx, ...)`` gets it derived: forward runs with a recording ctx, returns what was
  saved as extra outputs, and ``setup_context`` saves them again (an input from ``inputs``, an
  output from ``output``, an intermediate from the extra outputs), with the attributes set on
  ctx.

Class attributes of the Function that the bridge reads (no torch decorators on ext classes):

- ``cast_inputs``: a dtype name (``"float32"``): under autocast, floating inputs are cast to it
  and forward runs with autocast off (torch's ``custom_fwd(cast_inputs=...)``); None (default)
  runs forward under the ambient autocast state; backward always runs under forward's state.

Importing ``ext`` never imports this module's torch: it is loaded when torch is imported (with
``ext`` or after it, see ``ext._torch_import``), and then makes the default torch class of every
Function defined so far and of each one defined later (``prepare``), so that a Function's first
call may come inside ``torch.compile(fullgraph=True)``: dynamo cannot trace the making of a class.
"""

from __future__ import annotations

import threading
from typing import Any

import torch

from .._args import wrong_engine_output
from .._tensor import Tensor as ExtTensor
from ..autograd import function as _function
from ..autograd.function import Function, bind_arguments

__all__ = ["to_torch", "apply"]

_CACHE: dict[tuple, type] = {}
_DEFAULT: dict[type, type] = {}  # (the default flavour's entries of _CACHE, by class)
# What the derived torch.func forward recorded, for its setup_context (called right after it)
# and for ``apply`` to strip the extra outputs.
_LAST = threading.local()


def to_torch(fn: type, flavour: str = "default") -> type:
    """The ``torch.autograd.Function`` that runs the ext Function ``fn`` on torch tensors.

    ``flavour`` is ``"default"``, ``"jvp"`` (with the Function's ``jvp``, for forward-mode AD)
    or ``"func"`` (the torch.func flavour); each is made once per class and cached.
    """
    if not (isinstance(fn, type) and issubclass(fn, Function)):
        raise TypeError(f"to_torch() expects an ext.autograd.Function subclass, got {fn!r}")
    key = (fn, flavour)
    made = _CACHE.get(key)
    if made is None:
        made = _CACHE[key] = _make(fn, flavour)
        if flavour == "default":
            _DEFAULT[fn] = made
    return made


def apply(fn: type, args: tuple, kwargs: dict) -> Any:
    """``fn.apply(*args, **kwargs)`` on torch tensors: the flavour the call needs."""
    if kwargs:
        args = _bind(fn, args, kwargs)
    if _functorch_active():
        if getattr(fn, "node_name", None) and hasattr(fn, "tangents"):  # a declared built-in
            return to_torch(fn, "jvp").apply(*args)
        out = to_torch(fn, "func").apply(*args)
        if _separate(fn):
            return out
        n, is_tuple = _LAST.shape  # (what the derived forward returned, without its extras)
        return tuple(out[:n]) if is_tuple else out[0]
    if _forward_ad._current_level >= 0:
        return to_torch(fn, "jvp").apply(*args)
    made = _DEFAULT.get(fn)  # (the common call: one lookup, no key to build)
    out = (made or to_torch(fn)).apply(*args)
    # (torch passes an ext tensor through as a plain value, its graph lost: a type check of
    # the results, here rather than in a wrapper of forward, which would cost a call)
    if type(out) is ExtTensor or type(out) is tuple and ExtTensor in map(type, out):
        _check_engine(fn, out if type(out) is tuple else (out,))
    return out


_functorch_active = torch._C._are_functorch_transforms_active
_forward_ad = torch.autograd.forward_ad


def _bind(fn: type, args: tuple, kwargs: dict) -> tuple:
    return bind_arguments(fn.forward, args, kwargs, skip_ctx=not _separate(fn))


def _separate(fn: type) -> bool:
    """Whether ``fn`` is written as ``forward(*args)`` + ``setup_context``."""
    return fn.setup_context is not Function.setup_context


def _backward_of(fn: type):
    """fn's backward, with torch's ``once_differentiable`` where ext's marks it."""
    backward = fn.backward if "vjp" not in vars(fn) else fn.vjp
    inner = getattr(backward, "_once_differentiable", None)
    if inner is not None:
        return torch.autograd.function.once_differentiable(inner)
    return backward


def _autocast(fn: type, forward, setup, backward) -> tuple:
    """The Function's autocast policy (``cast_inputs``), as torch's ``custom_fwd`` and
    ``custom_bwd`` apply it: under CPU autocast, floating inputs are cast to the dtype and forward
    runs with autocast off; backward then runs with autocast off too (forward's state). A
    Function without the attribute is left as it is."""
    cast = getattr(fn, "cast_inputs", None)
    if cast is None:
        return forward, setup, backward
    dtype = getattr(torch, str(cast).rsplit(".", 1)[-1])

    def casting(*args):
        if not torch.is_autocast_enabled("cpu"):
            return forward(*args)
        # (float64 is left as it is, as torch's custom_fwd leaves it)
        args = tuple(a.to(dtype) if isinstance(a, torch.Tensor) and a.is_floating_point()
                     and a.dtype != torch.float64 else a for a in args)
        with torch.autocast("cpu", enabled=False):
            return forward(*args)

    def setup_context(ctx, inputs, output):
        ctx._ext_cast = torch.is_autocast_enabled("cpu")
        if setup is not None:
            setup(ctx, inputs, output)

    def plain_backward(ctx, *grads):
        if not getattr(ctx, "_ext_cast", False):
            return backward(ctx, *grads)
        with torch.autocast("cpu", enabled=False):
            return backward(ctx, *grads)

    return casting, setup_context, plain_backward


def _make(fn: type, flavour: str) -> type:
    from ..functions._op import Overload

    if issubclass(fn, Overload):
        return _make_builtin(fn, flavour)
    backward = _backward_of(fn)
    if flavour == "func":
        return _make_func(fn, backward)
    namespace: dict = {"__module__": fn.__module__, "__qualname__": fn.__qualname__,
                       "__doc__": fn.__doc__, "_ext_function": fn}
    if _separate(fn):
        forward, setup, backward = _autocast(fn, fn.forward, fn.setup_context, backward)
        namespace["setup_context"] = staticmethod(setup)
        if "vmap" in vars(fn):
            namespace["vmap"] = staticmethod(fn.vmap)
    else:
        forward, setup, backward = _autocast(fn, fn.forward, None, backward)
        if setup is not None:  # (forward(ctx, ...): ctx is the first argument)
            cast_forward = forward

            def forward(ctx, *args):
                setup(ctx, (), None)
                return cast_forward(ctx, *args)

    # (the default flavour's results are checked in ``apply``, at no extra call)
    namespace["forward"] = staticmethod(_same_engine(fn, forward) if flavour == "jvp"
                                        else forward)
    namespace["backward"] = staticmethod(backward)
    if flavour == "jvp":
        namespace["jvp"] = staticmethod(fn.jvp)
    # torch names the node after the class: <Name>Backward, as ext does
    return type(fn.__name__, (torch.autograd.Function,), namespace)


def _same_engine(fn: type, forward):
    """``forward``, refusing an ext tensor among its results: torch would keep it as a plain
    value, and the graph would be lost without a word."""
    def checked(*args):
        out = forward(*args)
        # (a type check of the results only: this runs on every call)
        if type(out) is ExtTensor or type(out) is tuple and ExtTensor in map(type, out):
            _check_engine(fn, out if type(out) is tuple else (out,))
        return out

    return checked


def _check_engine(fn: type, outs: tuple) -> None:
    for k, o in enumerate(outs):
        if type(o) is ExtTensor:
            raise wrong_engine_output(fn.__name__, k, "an ext.Tensor", "torch.Tensor")


def _make_builtin(ov: type, flavour: str) -> type:
    """A declared built-in overload as a torch.autograd.Function: its forward is the op on torch
    tensors (its Tensor method, or the aten op), its saves and backward are the declaration's, its
    non-differentiable outputs are marked, and its forward-mode rule answers ``jvp`` in the
    ``"jvp"`` flavour (which torch.func's transforms use too: the declaration is already written as
    forward + setup_context); the default flavour has no ``jvp``, which torch.compile cannot
    trace."""
    forward, save = ov.forward, ov.setup_context
    multi = len(ov.outputs) > 1 or ov.returns_list
    n_args = len(ov.args)

    def run(*args):
        out = forward(*args)
        if isinstance(out, list):
            out = tuple(out)  # (torch wants a tuple)
        # (an op that may return its input as it is, as ``to`` of the same dtype, returns a view
        # of it here: torch lets a Function save no input that it returns as it is)
        if isinstance(out, tuple):
            return tuple(_not_an_input(o, args) for o in out)
        return _not_an_input(out, args)

    def setup_context(ctx, inputs, output):
        # (through a recording ctx: torch's saves tensors only, and a declaration may save a
        # number, as mul's other)
        rec = _Recorder(ctx.needs_input_grad)
        save(rec, inputs, tuple(output) if multi else output)
        saved = rec._saves.get("save_for_backward", ())
        ctx.save_for_backward(*[v if isinstance(v, torch.Tensor) else None for v in saved])
        ctx._ext_numbers = {i: v for i, v in enumerate(saved)
                            if v is not None and not isinstance(v, torch.Tensor)}
        for name, value in rec._attrs.items():
            setattr(ctx, name, value)
        if ov.non_differentiable:
            ctx.mark_non_differentiable(*output[ov._linked:])
        # (for jvp: the arguments, tensors through save_for_forward, and the outputs)
        where = tuple(i for i, a in enumerate(inputs) if isinstance(a, torch.Tensor))
        ctx.save_for_forward(*[inputs[i] for i in where], *(output if multi else (output,)))
        ctx._ext_where = where
        ctx._ext_plain = tuple(None if i in where else a for i, a in enumerate(inputs))

    def backward(ctx, *grads):
        # (torch's ctx as it is, unless a number was saved: a plain ctx is what torch.compile
        # traces best)
        return ov.backward(_Saved(ctx) if ctx._ext_numbers else ctx, *grads)

    def jvp(ctx, *tangents):
        values = ctx.saved_tensors
        args = list(ctx._ext_plain)
        for k, i in enumerate(ctx._ext_where):
            args[i] = values[k]
        outs = values[len(ctx._ext_where):]
        out = ov.tangents(tuple(args), tuple(outs) if multi else outs[0],
                          tangents if ov.variadic else tangents[:n_args])
        if isinstance(out, list):
            out = tuple(out)  # (torch wants a tuple)
        if multi and not isinstance(out, tuple):  # (the non-differentiable outputs have none)
            out = (out,) + (None,) * (len(outs) - 1)
        return out

    namespace = {"forward": staticmethod(run),
                 "setup_context": staticmethod(setup_context),
                 "backward": staticmethod(backward),
                 "generate_vmap_rule": True, "__module__": ov.__module__,
                 "__qualname__": ov.__qualname__, "__doc__": ov.__doc__, "_ext_function": ov}
    if flavour != "default":
        namespace["jvp"] = staticmethod(jvp)
    made = type(ov.__name__, (torch.autograd.Function,), namespace)
    if ov.autocast == "lower_precision_fp":
        plain_apply = made.apply

        def apply(*args):
            # (as torch's autocast does before the op's node: the node saves the cast inputs)
            if torch.is_autocast_enabled("cpu"):
                dtype = torch.get_autocast_dtype("cpu")
                args = tuple(a.to(dtype) if isinstance(a, torch.Tensor) and a.is_floating_point()
                             and a.dtype != torch.float64 else a for a in args)
            return plain_apply(*args)

        made.apply = staticmethod(apply)
    return made


def _not_an_input(out, args: tuple):
    if isinstance(out, torch.Tensor) and any(out is a for a in args):
        return out.view_as(out)
    return out


class _Saved:
    """torch's ctx as a declaration's backward reads it: the numbers it saved (which torch's
    ctx cannot hold) back in their places among the saved tensors."""

    __slots__ = ("_ctx",)

    def __init__(self, ctx) -> None:
        self._ctx = ctx

    @property
    def saved_tensors(self) -> tuple:
        saved = self._ctx.saved_tensors
        numbers = self._ctx._ext_numbers
        if not numbers:
            return saved
        return tuple(numbers.get(i, v) for i, v in enumerate(saved))

    def __getattr__(self, name: str):
        if name == "_ctx":  # (not yet set: an object made without __init__, as a tracer does)
            raise AttributeError(name)
        return getattr(self._ctx, name)


class _Recorder:
    """The ctx a ``forward(ctx, ...)`` body sees while the torch.func flavour runs it: it
    records what the body saves, marks and sets, for ``setup_context`` to do again on torch's
    ctx."""

    def __init__(self, needs: tuple) -> None:
        vars(self).update(needs_input_grad=needs, _saves={}, _non_differentiable=(),
                          _materialize=None, _attrs={})

    def save_for_backward(self, *tensors) -> None:
        self._saves["save_for_backward"] = tensors

    def save_for_forward(self, *tensors) -> None:
        self._saves["save_for_forward"] = tensors

    def mark_dirty(self, *tensors) -> None:
        raise RuntimeError("an ext Function that marks an input dirty cannot run under "
                           "torch.func transforms (torch.func does not support in-place "
                           "custom Functions)")

    def mark_non_differentiable(self, *tensors) -> None:
        vars(self)["_non_differentiable"] = tensors

    def set_materialize_grads(self, value: bool) -> None:
        vars(self)["_materialize"] = value

    def __setattr__(self, name: str, value) -> None:
        self._attrs[name] = value


def _make_func(fn: type, backward) -> type:
    """The torch.func flavour: ``forward(*args)`` + ``setup_context`` + a generated vmap rule.
    A Function written that way is used as it is; a ``forward(ctx, ...)`` one is derived."""
    if _separate(fn):
        namespace = {"forward": staticmethod(_same_engine(fn, fn.forward)),
                     "setup_context": staticmethod(fn.setup_context),
                     "backward": staticmethod(backward), "_ext_outputs": None}
        if "vmap" in vars(fn):
            namespace["vmap"] = staticmethod(fn.vmap)
        else:
            namespace["generate_vmap_rule"] = True
        if "jvp" in vars(fn):
            namespace["jvp"] = staticmethod(fn.jvp)
        return type(fn.__name__, (torch.autograd.Function,), namespace)
    body = fn.forward

    def forward(*args):
        rec = _Recorder(tuple(isinstance(a, torch.Tensor) and a.requires_grad for a in args))
        out = body(rec, *args)
        outs = out if isinstance(out, tuple) else (out,)
        _check_engine(fn, outs)
        extra: list = []
        places = (("input", args), ("output", outs))

        def place(t):
            for kind, pool in places:
                for i, v in enumerate(pool):
                    if t is v:
                        return kind, i
            if t is None:
                return "none", None
            extra.append(t)
            return "extra", len(extra) - 1

        saves = {name: tuple(place(t) for t in tensors) for name, tensors in rec._saves.items()}
        marked = tuple(place(t) for t in rec._non_differentiable)
        _LAST.plan = (saves, marked, rec._materialize, dict(rec._attrs))
        _LAST.shape = (len(outs), isinstance(out, tuple))
        return (*outs, *extra)

    def setup_context(ctx, inputs, output):
        saves, marked, materialize, attrs = _LAST.plan
        n = _LAST.shape[0]
        pools = {"input": inputs, "output": output[:n], "extra": output[n:]}

        def value(kind, i):
            return None if kind == "none" else pools[kind][i]

        for name, places in saves.items():
            getattr(ctx, name)(*[value(*p) for p in places])
        for name, v in attrs.items():
            setattr(ctx, name, v)
        if materialize is not None:
            ctx.set_materialize_grads(materialize)
        ctx.mark_non_differentiable(*[value(*p) for p in marked], *output[n:])
        ctx._ext_n = n
        ctx._ext_extra = len(output) - n

    def backward_func(ctx, *grads):
        return backward(ctx, *grads[: ctx._ext_n])

    namespace = {"forward": staticmethod(forward), "setup_context": staticmethod(setup_context),
                 "backward": staticmethod(backward_func), "generate_vmap_rule": True,
                 "__module__": fn.__module__, "__qualname__": fn.__qualname__}
    if "jvp" in vars(fn):
        jvp = fn.jvp

        def jvp_func(ctx, *tangents):
            out = jvp(ctx, *tangents)
            outs = out if isinstance(out, tuple) else (out,)
            return (*outs, *[None] * ctx._ext_extra)  # (the extra outputs have none)

        namespace["jvp"] = staticmethod(jvp_func)
    return type(fn.__name__, (torch.autograd.Function,), namespace)


# ---------------------------------------------------------------------------------- prepare
def prepare(fn: type) -> None:
    """Make ``fn``'s default torch class now, outside any compiled region. A Function whose class
    cannot be made is left to its first call, which raises the reason there."""
    try:
        to_torch(fn)
    except Exception:  # (the same error comes back, with its call, at the first apply)
        return


def _prepare_all() -> None:
    """Prepare every Function defined so far, and have each one defined from now on prepared."""
    stack = [Function]
    while stack:
        for sub in stack.pop().__subclasses__():
            prepare(sub)
            stack.append(sub)
    _function.ON_DEFINE.append(prepare)
    if not _function._BRIDGE:
        _function._BRIDGE.append(apply)
    if not _function._TORCH_TENSOR:
        _function._TORCH_TENSOR.append(torch.Tensor)


_prepare_all()

# (the drop-in pack's ops as torch.ops.ext.<name>, registered with the bridge: ext.compat.library)
from .library import register_pack as _register_pack  # noqa: E402

_register_pack()

# (``ext.compat.patch(model, ...)``: the pack put into a built torch model; the function takes
# the name of its module, which stays reachable as ``sys.modules["ext.compat.patch"]``)
from .patch import patch  # noqa: E402
