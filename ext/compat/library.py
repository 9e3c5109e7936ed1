"""``ext.compat.library``: an ext Function as a ``torch.library`` custom op.

``custom_op(fn)`` registers ``fn`` (an ``ext.autograd.Function``, or a function that checks its
arguments and calls one, as the drop-in pack's functions do) as ``torch.ops.<namespace>.<name>``:

- its schema comes from ``fn``'s signature (a parameter without a default is a Tensor, one that
  defaults to None an optional Tensor, other defaults give their type), with a table of types
  where the defaults do not say them;
- the op's kernel runs ``fn`` without autograd: its Function's forward gets a recording ctx (the
  bridge's), which keeps what the forward saved and set;
- its fake kernel runs the same body on fake tensors (the pack's bodies make every tensor from
  their inputs, so they run there without data);
- its autograd formula saves what the Function saves (inputs and outputs as the op's own, the
  rest as the forward made them) and calls the Function's backward through the bridge's ctx
  adapter; a Function with a ``vmap`` rule gets it registered.

A custom op is functional: it writes into no input and returns none (nor a view of one), so an
output that is its input, or a view of it (``grad_reverse``), is returned as a copy, and a pack
function's ``inplace`` parameter is not part of its op.

A pack function may hand its tensors to its Function as they are or reshaped (a 1-d input as one
row, by a view): their gradients go back through the same reshapes. An argument whose gradient is
needed and that reaches the Function otherwise (computed from it) is refused, naming it.

Every op of the drop-in pack gets its op, ``torch.ops.ext.<name>``, when the bridge is loaded
(``register_pack``).
"""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Callable
from typing import Any

import torch

from ..autograd import function as _function
from ..autograd.function import Function, bind_arguments
from . import _backward_of, _Recorder, _Saved, _separate

__all__ = ["custom_op", "register_pack", "schema_of"]

# Parameter types that a pack function's defaults do not say (a parameter absent from today's
# signature is ignored, so the table may run ahead of it).
_TYPES: dict[str, dict[str, str]] = {
    "cross_entropy_lse": {"size_average": "bool?", "reduce": "bool?"},
    "clamp_masked": {"min": "float?", "max": "float?"},
    "fake_quant_ste": {"scale": "float", "zero_point": "int", "qmin": "int", "qmax": "int"},
    "grad_scale": {"scale": "float"},
    "safe_logsumexp": {"dim": "int[1]"},
    "rms_norm": {"normalized_shape": "SymInt[]", "eps": "float?"},
}
# Parameters a custom op leaves out: it may not write into its inputs.
_DROPPED = frozenset({"inplace"})
_BY_DEFAULT = ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"))

_TWINS: dict[str, Any] = {}   # the pack's ops, by name, once registered
_STATE = threading.local()    # .open: the captures open on this thread; .last: the kernel's
_LOCK = threading.RLock()     # one thread at a time has the bridge's entry point replaced
_REPLACED: list = []          # the bridge's entry point while it is replaced


# ------------------------------------------------------------------------------------ schema
def schema_of(fn: Callable, types: dict | None = None) -> str:
    """The custom-op schema of ``fn``'s signature (a Function's: its forward's, without ctx),
    ``types`` naming the type of a parameter where its default does not say it. A keyword-only
    tensor parameter (which a custom op cannot have) becomes the last positional one."""
    return "(" + ", ".join(_arguments(fn, types or {})) + ") -> Tensor"


def _arguments(fn: Callable, types: dict) -> list[str]:
    typed = [(p, types.get(p.name) or _type_of(p)) for p in _parameters(fn)]
    first = [(p, t) for p, t in typed if p.kind is not p.KEYWORD_ONLY or t.startswith("Tensor")]
    rest = [(p, t) for p, t in typed if (p, t) not in first]
    parts = [f"{t} {p.name}{_default(p)}" for p, t in first]
    if rest:
        parts += ["*"] + [f"{t} {p.name}{_default(p)}" for p, t in rest]
    return parts


def _default(p: inspect.Parameter) -> str:
    return "" if p.default is p.empty else "=" + _literal(p.default)


def _parameters(fn: Callable) -> list[inspect.Parameter]:
    """fn's parameters as its op takes them: a Function's forward without ctx, no ``inplace``."""
    if isinstance(fn, type):
        params = list(inspect.signature(fn.forward).parameters.values())
        params = params if _separate(fn) else params[1:]
    else:
        params = list(inspect.signature(fn).parameters.values())
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"custom_op(): {_label(fn)} takes *{p.name}: an op's schema needs "
                            f"named parameters; pass schema=")
    return [p for p in params if p.name not in _DROPPED]


def _type_of(p: inspect.Parameter) -> str:
    if p.default is p.empty:
        return "Tensor"
    if p.default is None:
        return "Tensor?"
    for kind, name in _BY_DEFAULT:
        if isinstance(p.default, kind):
            return name
    if isinstance(p.default, (tuple, list)) and all(isinstance(v, int) for v in p.default):
        return "int[]"
    raise TypeError(f"custom_op(): cannot tell the type of parameter '{p.name}' from its "
                    f"default {p.default!r}; name it in types=")


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value + '"'
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return repr(value)


def _label(fn: Callable) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


# ------------------------------------------------------------------------------------ capture
class _Capture:
    """What one call of an op's function did at its Function: the Function, its arguments and
    where each comes from among the op's inputs, what its forward recorded, and its outputs."""

    __slots__ = ("fn", "args", "sources", "rec", "outs", "is_tuple")

    def __init__(self, fn: type, args: tuple, sources: tuple) -> None:
        self.fn, self.args, self.sources = fn, args, sources
        self.rec, self.outs, self.is_tuple = None, (), False


class _TwinRecorder(_Recorder):
    """The bridge's recording ctx, refusing what a custom op cannot do."""

    def mark_dirty(self, *tensors) -> None:
        raise RuntimeError("a custom op may not write into its inputs: call its function "
                           "without inplace=True")


def _capturing(fn: type, args: tuple, kwargs: dict) -> Any:
    """The bridge's entry point while a capture is open on this thread: the Function's forward
    runs with a recording ctx, without autograd; elsewhere the bridge as it is."""
    opened = getattr(_STATE, "open", None)
    if not opened or opened[-1] is None:
        return _REPLACED[0](fn, args, kwargs)
    frame = opened[-1]
    if frame["capture"] is not None:
        raise RuntimeError(f"custom_op(): {frame['label']} calls more than one ext Function "
                           f"({frame['capture'].fn.__name__}, then {fn.__name__}); a custom op "
                           f"wraps one")
    if kwargs:
        args = bind_arguments(fn.forward, args, kwargs, skip_ctx=not _separate(fn))
    inputs = frame["inputs"]
    sources = tuple(_source(a, inputs) for a in args)
    cap = frame["capture"] = _Capture(fn, args, sources)
    needs = tuple(isinstance(a, torch.Tensor) and (
        inputs[j].requires_grad if j is not None else a.requires_grad)
        for a, j in zip(args, sources))
    cap.rec = rec = _TwinRecorder(needs)
    opened.append(None)  # (a Function the body calls runs through the bridge as usual)
    try:
        with torch.no_grad():
            if _separate(fn):
                out = fn.forward(*args)
                fn.setup_context(rec, args, out)
            else:
                out = fn.forward(rec, *args)
    finally:
        opened.pop()
    cap.is_tuple = isinstance(out, tuple)
    cap.outs = out if cap.is_tuple else (out,)
    return out


def _source(t: Any, inputs: tuple) -> int | None:
    """The index of the op's positional input that ``t`` is, or a reshaped view of (its
    gradient goes there, reshaped back); None for a non-tensor or a tensor of its own."""
    if not isinstance(t, torch.Tensor):
        return None
    tensors = [(j, a) for j, a in enumerate(inputs) if isinstance(a, torch.Tensor)]
    for j, a in tensors:
        if t is a:
            return j
    for j, a in tensors:
        if _is_reshape(t, a):
            return j
    return None


def _is_reshape(t: torch.Tensor, a: torch.Tensor) -> bool:
    """Whether t is a view of a with a's elements in a's order (a reshape, not a transpose or a
    slice): the gradient and the saved tensor go between them by reshaping."""
    if t.numel() != a.numel() or not torch._C._is_alias_of(t, a) \
            or t.storage_offset() != a.storage_offset():
        return False
    if tuple(t.shape) == tuple(a.shape):
        return tuple(t.stride()) == tuple(a.stride())
    return t.is_contiguous() and a.is_contiguous()


def _run(front: Callable, label: str, args: tuple, kwargs: dict,
         inputs: tuple) -> tuple[Any, _Capture]:
    """``front(*args, **kwargs)`` without autograd, its Function's call captured (its
    arguments traced back to ``inputs``, the op's positional inputs)."""
    frame = {"capture": None, "inputs": inputs, "label": label}
    with _LOCK:
        opened = vars(_STATE).setdefault("open", [])
        if not opened:
            _REPLACED[:] = [_function._BRIDGE[0]]
            _function._BRIDGE[0] = _capturing
        opened.append(frame)
        try:
            with torch.no_grad():
                result = front(*args, **kwargs)
        finally:
            opened.pop()
            if not opened:
                _function._BRIDGE[0] = _REPLACED[0]
    if frame["capture"] is None:
        raise RuntimeError(f"custom_op(): {label} called no ext Function on torch tensors; a "
                           f"custom op wraps one")
    return result, frame["capture"]


def _fresh(result: Any, inputs: tuple) -> Any:
    """result, with an output that is an input or a view of one copied (a custom op returns
    neither)."""
    def fresh(t):
        if isinstance(t, torch.Tensor) and any(
                isinstance(a, torch.Tensor) and (t is a or torch._C._is_alias_of(t, a))
                for a in inputs):
            return t.clone()
        return t
    return tuple(fresh(t) for t in result) if isinstance(result, tuple) else fresh(result)


# ------------------------------------------------------------------------------------ autograd
def _setup(ctx, inputs: tuple, output: Any, cap: _Capture, result: Any) -> None:
    """Save on torch's ctx what the Function saved, as the op's own inputs and outputs where
    they are those (reshaped back in backward), and set what it set."""
    outputs = output if isinstance(output, tuple) else (output,)
    results = result if isinstance(result, tuple) else (result,)
    rec = cap.rec
    tensors, numbers, shapes = [], {}, []
    for k, t in enumerate(rec._saves.get("save_for_backward", ())):
        saved, shape = _saved_as(t, cap, inputs, outputs, results)
        if isinstance(saved, torch.Tensor) or saved is None:
            tensors.append(saved)
        else:
            tensors.append(None)
            numbers[k] = saved
        shapes.append(shape)
    ctx.save_for_backward(*tensors)
    for name, value in rec._attrs.items():
        setattr(ctx, name, value)
    if rec._materialize is not None:
        ctx.set_materialize_grads(rec._materialize)
    marked = [outputs[i] for i, o in enumerate(cap.outs) for t in rec._non_differentiable
              if o is t and i < len(outputs)]
    if marked:
        ctx.mark_non_differentiable(*marked)
    ctx._ext_numbers = numbers
    ctx._ext_shapes = shapes
    ctx._ext_twin = (cap.fn, cap.sources, tuple(tuple(o.shape) for o in cap.outs), len(inputs))


def _saved_as(t: Any, cap: _Capture, inputs: tuple, outputs: tuple, results: tuple):
    """(what to save for t, the shape to view it as in backward or None)."""
    if not isinstance(t, torch.Tensor):
        return t, None
    for i, a in enumerate(cap.args):
        j = cap.sources[i]
        if t is a and j is not None and inputs[j].dtype == a.dtype:
            return inputs[j], (None if inputs[j].shape == a.shape else tuple(a.shape))
    for i, o in enumerate(cap.outs):
        if t is o and i < len(outputs) and _reshaped(results[i], o) \
                and outputs[i].dtype == o.dtype:
            return outputs[i], (None if outputs[i].shape == o.shape else tuple(o.shape))
    return t, None


def _reshaped(result: Any, out: torch.Tensor) -> bool:
    """Whether the op's output is the Function's, or a view of it."""
    return isinstance(result, torch.Tensor) and (
        result is out or torch._C._is_alias_of(result, out))


def _numel(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


class _TwinSaved(_Saved):
    """torch's ctx as the Function's backward reads it: its saved tensors in the shapes the
    Function saw, and ``needs_input_grad`` over the Function's arguments."""

    __slots__ = ()

    @property
    def saved_tensors(self) -> tuple:
        saved = _Saved.saved_tensors.fget(self)
        return tuple(v if shape is None else v.reshape(shape)
                     for v, shape in zip(saved, self._ctx._ext_shapes))

    @property
    def needs_input_grad(self) -> tuple:
        needs = self._ctx.needs_input_grad
        return tuple(j is not None and bool(needs[j]) for j in self._ctx._ext_twin[1])


def _backward(ctx, *grads):
    """The Function's backward, its gradients routed to the op's inputs."""
    fn, sources, shapes, n_inputs = ctx._ext_twin
    grads = tuple(g if g is None or tuple(g.shape) == s else g.reshape(s)
                  for g, s in zip(grads, shapes))
    out = _backward_of(fn)(_TwinSaved(ctx), *grads)
    out = out if isinstance(out, tuple) else (out,)
    routed: list = [None] * n_inputs
    for g, j in zip(out, sources):
        if g is None or j is None:
            continue
        shape, dtype = ctx._ext_input_meta[j]
        if tuple(g.shape) != shape:
            # (a reshaped argument's gradient goes back; a broadcast one's is summed, as
            # torch's engine does for a Function's)
            g = g.reshape(shape) if g.numel() == _numel(shape) else g.sum_to_size(shape)
        g = g.to(dtype) if g.dtype != dtype else g
        routed[j] = g if routed[j] is None else routed[j] + g
    return tuple(routed[:len(ctx.needs_input_grad)])


# ------------------------------------------------------------------------------------ custom_op
def custom_op(fn: Callable, name: str | None = None, *, namespace: str = "ext",
              types: dict | None = None, schema: str | None = None):
    """Register ``fn`` as the custom op ``torch.ops.<namespace>.<name>`` and return it (a
    ``torch.library.CustomOpDef``).

    ``fn`` is an ``ext.autograd.Function`` subclass (the op takes its forward's arguments), or a
    function that calls one on torch tensors (a pack function: the op takes the function's
    arguments and runs its checks). ``name`` defaults to the pack op's name, else to ``fn``'s
    in snake case; ``types`` maps a parameter to its schema type where its default does not
    say it; ``schema`` replaces the derived one whole. The op's forward, fake kernel, autograd
    formula and (where the Function has one) vmap rule are the Function's.
    """
    is_function = isinstance(fn, type)
    if is_function and not issubclass(fn, Function):
        raise TypeError(f"custom_op() expects an ext.autograd.Function subclass or a function "
                        f"that calls one, got {fn!r}")
    if not callable(fn):
        raise TypeError(f"custom_op() expects an ext.autograd.Function subclass or a function "
                        f"that calls one, got {type(fn).__name__}")
    name = name or _pack_name(fn) or _snake(fn.__name__)
    label = f"{namespace}::{name}"
    front = fn.apply if is_function else fn
    types = {**_TYPES.get(name, {}), **(types or {})}
    schema = schema or schema_of(fn, types)
    arguments = _arguments(fn, types)
    arguments = arguments[:arguments.index("*")] if "*" in arguments else arguments
    positional = [a.split()[1].split("=")[0] for a in arguments]
    n_front = sum(p.kind is not p.KEYWORD_ONLY for p in _parameters(fn))

    def call(*args, **kwargs):
        # (a keyword-only parameter of fn that the op takes by position goes back by name)
        inputs = args
        if len(args) > n_front:
            kwargs = {**dict(zip(positional[n_front:], args[n_front:])), **kwargs}
            args = args[:n_front]
        return _run(front, label, args, kwargs, inputs)

    def kernel(*args, **kwargs):
        result, cap = call(*args, **kwargs)
        result = _fresh(result, args)
        if any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            _STATE.last = (result, cap)  # (for setup_context, which runs right after it)
        return result

    def fake(*args, **kwargs):
        return _fresh(call(*args, **kwargs)[0], args)

    def setup_context(ctx, inputs, output, keyword_only_inputs=None):
        last = getattr(_STATE, "last", None)
        _STATE.last = None
        if last is not None and last[0] is output:
            result, cap = last
        else:  # (traced, or on fake tensors: run it again, where the tracer sees it)
            result, cap = call(*inputs, **(keyword_only_inputs or {}))
        _setup(ctx, inputs, output, cap, result)
        ctx._ext_input_meta = tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor)
                                    else None for a in inputs)
        # (the dispatcher drops trailing arguments equal to their defaults: torch's ctx counts
        # the ones passed)
        for j, needed in enumerate(ctx.needs_input_grad):
            if needed and j not in cap.sources:
                raise RuntimeError(f"{label}: the gradient of argument '{positional[j]}' "
                                   f"cannot reach it: {_label(fn)} passes it to "
                                   f"{cap.fn.__name__} neither as it is nor reshaped")

    op = torch.library.custom_op(label, kernel, mutates_args=(), schema=schema)
    op.register_fake(fake)
    op.register_autograd(_backward, setup_context=setup_context)
    if is_function and "vmap" in vars(fn):
        op.register_vmap(fn.vmap)
    return op


def _pack_name(fn: Callable) -> str | None:
    from ..functions.dropin import OPS

    return next((name for name, front, cls in OPS if fn is front or fn is cls), None)


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def register_pack() -> None:
    """Register every op of the drop-in pack as ``torch.ops.ext.<name>`` (once)."""
    from ..functions.dropin import OPS

    for name, front, _ in OPS:
        if name not in _TWINS:
            _TWINS[name] = custom_op(front, name)
