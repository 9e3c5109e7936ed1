"""The op declaration, its one dispatch, and the registry of declared ops.

A built-in op is declared once: each overload is a class (torch's node name, its argument and
output names, what it saves, its ``backward`` and its forward-mode rule), and ``declare`` names
the op, gives its kernel and dtype policy, its Tensor methods and ``ext.*`` functions and its
in-place variant, and enters it in the registry. Every overload's function ends in
``dispatch``, the one place that wraps the kernel's result and decides whether to record a node.
``docs/adding_an_op.md`` walks through a declaration.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Number

import numpy as np

from .. import _dtype
from .._args import is_torch_tensor, mixed_operands, not_a_tensor
from .._state import STATE
from .._tensor import Tensor, wrap
from ..autograd.graph import link
from ..autograd.views import MULTI_OUTPUT, make_view
from .builtin._builtin import (
    NEEDS_ONE,
    NEEDS_TWO,
    NEEDS_TWO_MORE,
    BuiltinFunction,
    namespace_of,
    needs_of,
)

__all__ = ["Overload", "Op", "declare", "dispatch", "read_history", "ELEMENTWISE", "LINEAR",
           "JOINTLY_LINEAR",
           "FLOAT", "registry", "lookup", "operator_method", "reflected_method", "ops"]

_new = object.__new__
_MISSING = object()


class _Rule(str):
    """A forward-mode rule derived from the declaration instead of written out."""


# The Jacobian is diagonal: an input's tangent goes through backward's own formula, in place of
# the gradient (tangent times the local derivative), and the inputs' terms add up.
ELEMENTWISE = _Rule("elementwise")
# The op is linear in its first argument: its forward applied to the tangent.
LINEAR = _Rule("linear")
# The op is linear in its tensor inputs together (index_add, copy): its forward applied to their
# tangents, zeros standing in for a missing one (and 0 for a number in a tensor input's place).
JOINTLY_LINEAR = _Rule("jointly linear")
# Dtype policy of an elementwise kernel: an integer or bool input computes in the default dtype.
FLOAT = "float"

_FIRST = (0,)
# The saved attributes read from an argument's layout, as code on the argument: its sizes,
# strides, and the size of one dim (``<arg>_sym_argsize_<dim>``).
_LAYOUT = {"_sym_sizes": "tuple({}.shape)", "_sym_strides": "tuple({}.stride())",
           "_sym_numel": "{}.numel()"}


def _attr_source(name: str, names: dict) -> tuple:
    """The argument a saved attribute ``name`` is read from (one of ``names``), and the code
    that reads it."""
    for suffix, code in _LAYOUT.items():
        if name.endswith(suffix):
            return name[: -len(suffix)], code
    arg, sep, dim = name.rpartition("_sym_argsize_")
    if sep:
        # (torch spells a negative dim ``minus_1``)
        return arg, "{}.shape[" + str(-int(dim[6:]) if dim.startswith("minus_") else int(dim)) + "]"
    if name not in names and name.endswith("_dim") and name[: -len("_dim")] in names:
        return name[: -len("_dim")], "{}.dim()"
    return name, "{}"
_PAIR = (0, 1)


class Overload(BuiltinFunction):
    """One overload of a declared op: one node name, one backward, one forward-mode rule.

    Declared by class attributes, read once when the class is made:

    - ``node_name``: torch's name of the node (``PowBackward1``);
    - ``args`` / ``outputs``: torch's names of the forward's arguments and results, by position
      (``("self", "exponent")``, ``("result",)``): what ``saved_fields`` and ``saved_attrs`` refer
      to;
    - ``saved_fields``: the tensors backward reads, by name (an argument or an output), each shown
      as ``_saved_<name>``; ``saved_attrs``: the non-tensor values, by argument name, and
      ``<arg>_sym_sizes`` / ``<arg>_sym_strides`` / ``<arg>_sym_numel`` /
      ``<arg>_sym_argsize_<dim>`` / ``<arg>_dim`` for the shape / strides / number of elements /
      one size / number of dims of an argument; ``ctx_attrs`` that name an argument are values
      backward reads that torch does not show; ``saved_list``: an argument that is a list of
      tensors (index's ``indices``), saved tensor by tensor after ``saved_fields`` and shown
      whole; no ``setup_context`` needs writing; ``saved_for``: a saved value only one input's
      gradient reads, by name (``{"self": "other"}``): saved only when that input needs a
      gradient;
    - ``non_differentiable``: outputs that get no grad_fn (max's indices);
    - ``is_view``: the result is a view of the first argument (shares its storage and version);
      each of several results is one that may not be modified in place, as torch's;
    - ``returns``: the named tuple that a multi-output forward returns;
    - ``returns_list``: the result is a list of any length (unbind's, split's), every tensor of
      it an output;
    - ``variadic``: the first argument is a list of tensors of any length (cat's and stack's
      ``tensors``), given to ``dispatch`` spread out before the other arguments; every tensor
      is an input, and ``setup_context`` is written by hand (what it saves has no fixed
      position);
    - ``jvp``: ``ELEMENTWISE``, ``LINEAR``, ``JOINTLY_LINEAR`` or ``jvp(ctx, *tangents)`` beside
      ``backward``,
      returning the outputs' tangents (torch's signature: one tangent per forward argument);
    - ``jvp_zeros``: an explicit ``jvp`` is given zeros like the input, not None, for a tensor
      input without a tangent (as torch's formulas that read every input's tangent are);
    - ``forward_attrs``: what an explicit ``jvp`` reads besides the saves, by name as
      ``saved_attrs`` (torch's ``ctx.save_for_forward``), set on the forward rule's ctx only;
    - ``unsigned_attrs``: saved attributes that torch shows as unsigned 64-bit integers (a
      saved index or ``ignore_index`` of -1 shows as 2**64 - 1);
    - ``double_backward``: whether backward is itself differentiable (the contract the bridge
      and ext.testing read);
    - ``keywords``: the last arguments, which torch's method or aten op takes only by name
      (``rounding_mode``, ``beta`` and ``alpha``): ``forward`` passes them so;
    - ``autocast``: torch's CPU autocast policy for the op: ``"lower_precision_fp"`` (mm's: under
      autocast its floating inputs are cast to the autocast dtype before the node sees them, so
      that it saves the cast ones) or ``""`` (none: it runs in its inputs' dtype).
    """

    args: tuple = ("self",)
    outputs: tuple = ("result",)
    non_differentiable: tuple = ()
    saved_list: str | None = None
    is_view = False
    returns: type | None = None
    returns_list = False
    variadic = False
    jvp = None
    jvp_zeros = False
    forward_attrs: tuple = ()
    saved_for: dict = {}
    double_backward = True
    autocast = ""
    unsigned_attrs: tuple = ()
    keywords: tuple = ()
    # Filled in when the class is made: where each saved value comes from.
    _save_from: tuple = ()
    _attr_from: tuple = ()
    _list_from: int | None = None
    _forward_from: tuple = ()
    _edge_pos: tuple = _FIRST
    _linked: int | None = 1
    _derived = True  # (setup_context made from the declared saves)
    _method = ""  # (set by declare: the Tensor method that runs the op, if it has one)
    _aten = ""  # (set by declare: the op's aten name)

    @classmethod
    def _node_slots(cls) -> tuple:
        return super()._node_slots() + tuple(cls.forward_attrs)

    @classmethod
    def _decorate_node(cls) -> None:
        if "node_name" in cls.__dict__:
            cls._plan()
        super()._decorate_node()
        if cls.saved_list is not None:
            after = len(cls.saved_fields)
            setattr(cls._backward_cls, f"_saved_{cls.saved_list}",
                    property(lambda node: node.saved_tensors[after:]))
        for name in cls.unsigned_attrs:
            if name in cls.saved_attrs:
                setattr(cls._backward_cls, f"_saved_{name}", _unsigned_property(name))
        cls._backward_cls._view_backward = cls.is_view

    @classmethod
    def _plan(cls) -> None:
        """Resolve the declared names to positions, and derive ``setup_context``."""
        names = {n: i for i, n in enumerate(cls.args)}
        names.update({n: ~i for i, n in enumerate(cls.outputs)})
        cls._save_from = tuple(names[n] for n in cls.saved_fields)
        if cls.saved_list is not None:
            cls._list_from = names[cls.saved_list]

        def sources(attrs) -> tuple:
            out = []
            for name in attrs:
                arg, code = _attr_source(name, names)
                read = None if code == "{}" else eval("lambda v: " + code.format("v"))  # noqa: S307
                out.append((name, names[arg], code, read))
            return tuple(out)

        # (the other ctx attributes that name an argument are read from it too)
        cls._attr_from = sources((*cls.saved_attrs, *(
            n for n in cls.ctx_attrs if _attr_source(n, names)[0] in names)))
        cls._forward_from = sources(cls.forward_attrs)
        pos = cls.tensor_positions
        pos = tuple(range(len(cls.args))) if pos is None else tuple(pos)
        # (one tensor input, the first: the common case, told by identity in dispatch; two, a
        # binary op's; None: every tensor argument, however many)
        cls._edge_pos = None if cls.variadic else _FIRST if pos == _FIRST else \
            _PAIR if pos == _PAIR else pos
        if cls.keywords and cls.args[len(cls.args) - len(cls.keywords):] != cls.keywords:
            raise TypeError(f"{cls.__name__}: keyword arguments come last")
        cls._linked = len(cls.outputs) - len(cls.non_differentiable)
        if cls.outputs[cls._linked:] != cls.non_differentiable:
            raise TypeError(f"{cls.__name__}: non-differentiable outputs come last")
        if cls.returns_list:
            cls._linked = None  # (all of them)
        if "setup_context" in cls.__dict__:
            cls._derived = False
        elif cls.variadic:
            raise TypeError(f"{cls.__name__}: a variadic overload writes its setup_context")
        else:
            cls.setup_context = staticmethod(_setup_for(cls))

    @classmethod
    def saved_values(cls, args: tuple, outputs: tuple) -> tuple:
        """The values ``setup_context`` saves, in ``saved_fields`` order (on any engine)."""
        saved = tuple([args[p] if p >= 0 else outputs[~p] for p in cls._save_from])
        return saved if cls._list_from is None else saved + tuple(args[cls._list_from])

    @classmethod
    def ctx_for(cls, args: tuple, outputs: tuple, needs: tuple):
        """A ctx that holds what this overload saves, without joining the graph: the one that
        forward-mode rules read, and the one that runs backward on torch tensors in tests."""
        ctx = _new(cls._backward_cls)
        ctx.needs_input_grad = needs
        ctx._saved = saved = cls.saved_values(args, outputs)
        # read at once: the versions the values have now (an input written in place before
        # this op is at a version above 0 and intact)
        # (a forward rule saves nothing for backward: an inference tensor may be read)
        ctx._versions = [v._vc[0] if type(v) is Tensor and type(v._vc) is list else 0
                         for v in saved]
        ctx._nonleaf = 0
        if not cls._derived:  # (a hand-written one: its saves are not stated by name)
            # (everything saved, as if every input needed a gradient: a forward rule reads all;
            # recorded, not saved, so that an inference tensor may be read)
            rec = _Recording((True,) * len(needs))
            cls.setup_context(rec, args, outputs if len(outputs) > 1 else outputs[0])
            ctx._saved = saved = rec.saved
            ctx._versions = [v._vc[0] if type(v) is Tensor and type(v._vc) is list else 0
                             for v in saved]
            for name, value in vars(rec).items():
                if name not in ("saved", "needs_input_grad"):
                    setattr(ctx, name, value)
            return ctx
        for name, p, _, read in cls._attr_from + cls._forward_from:
            v = args[p] if p >= 0 else outputs[~p]
            setattr(ctx, name, v if read is None else read(v))
        return ctx

    @classmethod
    def tangents(cls, args: tuple, out, tangents: tuple):
        """The outputs' tangents for the arguments' ``tangents`` (None where an argument has
        none), by the declared forward-mode rule."""
        rule = cls.jvp
        if rule is None:
            name = cls.node_name[: cls.node_name.rfind("Backward")]
            raise NotImplementedError(f"Trying to use forward AD with {name} that does not "
                                      "support it because it has not been implemented yet.")
        if rule is LINEAR:
            if cls.variadic:  # (linear in every tensor of the list: zeros for a missing tangent)
                n = len(args) - len(cls.args) + 1
                return cls.forward(*[namespace_of(a).zeros_like(a) if t is None else t
                                     for a, t in zip(args[:n], tangents)], *args[n:])
            if tangents[0] is None:  # (only a non-linear argument has one: the op is flat)
                return namespace_of(out).zeros_like(out)
            return cls.forward(tangents[0], *args[1:])
        if rule is JOINTLY_LINEAR:
            full = list(args)
            for p in cls._edge_pos:
                t, a = tangents[p], args[p]
                full[p] = t if t is not None else 0 if isinstance(a, Number) else \
                    namespace_of(a).zeros_like(a)
            return cls.forward(*full)
        outputs = out if type(out) is tuple else (out,)
        needs = tuple([t is not None for t in tangents])
        if rule is not ELEMENTWISE:
            if cls.jvp_zeros:
                edges = cls._edge_pos
                tangents = tuple([namespace_of(a).zeros_like(a) if t is None and p in edges
                                  else t for p, (a, t) in enumerate(zip(args, tangents))])
            return rule(cls.ctx_for(args, outputs, needs), *tangents)
        total = None
        for i, t in enumerate(tangents):
            if t is None:
                continue
            only = tuple([j == i for j in range(len(args))])
            term = cls.backward(cls.ctx_for(args, outputs, only), t)
            if type(term) is tuple:
                term = term[i]
            total = term if total is None else total + term
        # (a gradient that passes through keeps its input's shape, a tangent takes the output's)
        shape = outputs[0].shape
        return total if total.shape == shape else total.expand(shape)

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run the op, keywords bound to the declared argument names (torch's ``apply``)."""
        if kwargs:
            given, args = len(args), list(args)
            for name, value in kwargs.items():
                if name not in cls.args:
                    raise TypeError(f"forward() got an unexpected keyword argument '{name}'")
                i = cls.args.index(name)
                if i < given:
                    raise TypeError(f"forward() got multiple values for argument '{name}'")
                args.extend([_MISSING] * (i + 1 - len(args)))
                args[i] = value
            if _MISSING in args:
                missing = cls.args[args.index(_MISSING)]
                raise TypeError(f"forward() missing a required argument: '{missing}'")
        return cls.forward(*args)

    @classmethod
    def forward(cls, *args):
        """The op on the tensors at hand (ext or torch): its Tensor method, or for an op that
        has none, the op of the same aten name (``ext.ops.aten`` or ``torch.ops.aten``); the
        ``keywords`` arguments passed by name."""
        named = {}
        if cls.keywords:
            n = len(cls.args) - len(cls.keywords)
            named = dict(zip(cls.keywords, args[n:]))
            args = args[:n]
        if cls._method:
            return getattr(args[0], cls._method)(*args[1:], **named)
        fn = namespace_of(args[0]).ops.aten
        for name in cls._aten.split("."):  # (an overload's own name: ``mul.Scalar``)
            fn = getattr(fn, name)
        if cls.variadic:
            n = len(args) - len(cls.args) + 1
            return fn(args[:n], *args[n:], **named)
        return fn(*args, **named)




class _Recording:
    """The ctx a hand-written ``setup_context`` fills for a forward rule: what it saves and
    sets, kept as they are."""

    def __init__(self, needs: tuple) -> None:
        self.needs_input_grad = needs
        self.saved = ()

    def save_for_backward(self, *values) -> None:
        self.saved = values


def _setup_for(cls: type) -> Callable:
    """``setup_context`` made from the declared saves, written out as code (as ``dataclasses``
    writes ``__init__``): a loop over the plan costs a measurable share of a small op's
    dispatch (``benchmarks/ops.py``), the written-out body what a hand-written one costs."""
    multi = len(cls.outputs) > 1
    args = {n: i for i, n in enumerate(cls.args)}

    def source(p: int) -> str:
        if p >= 0:
            return f"inputs[{p}]"
        return f"output[{~p}]" if multi else "output"

    def only(name: str, value: str, empty: str = "None") -> str:
        needer = cls.saved_for.get(name)
        return value if needer is None else \
            f"({value} if ctx.needs_input_grad[{args[needer]}] else {empty})"

    lines = []
    saved = [only(n, source(p)) for n, p in zip(cls.saved_fields, cls._save_from)]
    if cls._list_from is not None:
        saved.append(f"*{source(cls._list_from)}")
    if saved:
        lines.append(f"ctx.save_for_backward({', '.join(saved)})")
    for name, p, code, _ in cls._attr_from:
        lines.append(f"ctx.{name} = " + only(name, code.format(source(p)),
                                             "None" if code == "{}" else "()"))
    body = "\n    ".join(lines or ["pass"])
    namespace: dict = {}
    exec(f"def setup_context(ctx, inputs, output):\n    {body}\n", namespace)  # noqa: S102
    return namespace["setup_context"]


def dispatch(ov: type, data, args: tuple):
    """The result of overload ``ov`` on ``args`` whose kernel gave ``data`` (an array, or a tuple
    of arrays or None for several outputs): wrapped, and recorded only when grad mode is on, an
    input requires grad and the result is floating (the rare modes, forward AD and inference,
    look at every op)."""
    # (a floating result: NumPy kind "f", or "V", that of ml_dtypes' bfloat16)
    if type(data) is not tuple:
        # (one output, the common case: written out, wrap's body too, as each call and check
        # costs a small op about 1% of its time, benchmarks/ops.py)
        if type(data) is not np.ndarray:
            data = np.asarray(data)
        out = _new(Tensor)
        out._data = data
        out._requires_grad = False
        out._grad_fn = None
        out._output_nr = 0
        out._grad = None
        if STATE.special:
            out._vc = False if STATE.inference else None
            if _special(ov, out, None, args):
                _record(ov, out, None, args)
        else:
            out._vc = None
            if STATE.grad_enabled:
                pos = ov._edge_pos
                # (the node made here in the two hottest layouts, as _record makes it)
                if pos is _FIRST:
                    x = args[0]
                    if x._requires_grad and data.dtype.kind in "fV":
                        node = _new(ov._backward_cls)
                        node.needs_input_grad = NEEDS_ONE if len(args) == 1 else needs_of(args)
                        node._saved = ()
                        node._versions = None
                        link((out,), node, (x,))
                        ov.setup_context(node, args, out)
                elif pos is _PAIR:  # (a binary op: told without a loop, among the hottest)
                    a, b = args[0], args[1]
                    ra = type(a) is Tensor and a._requires_grad
                    rb = type(b) is Tensor and b._requires_grad
                    if (ra or rb) and data.dtype.kind in "fV":
                        node = _new(ov._backward_cls)
                        n = len(args)
                        node.needs_input_grad = NEEDS_TWO[ra][rb] if n == 2 else \
                            NEEDS_TWO_MORE[ra][rb] if n == 3 and type(args[2]) is not Tensor \
                            else needs_of(args)
                        node._saved = ()
                        node._versions = None
                        # (an operand that does not require grad has no edge, nor a history
                        # to refresh)
                        link((out,), node, (a if ra else None, b if rb else None))
                        ov.setup_context(node, args, out)
                else:
                    for p in range(len(args)) if pos is None else pos:
                        a = args[p]
                        if type(a) is Tensor and a._requires_grad:
                            if data.dtype.kind in "fV":
                                _record(ov, out, None, args)
                            break
        if ov.is_view:
            make_view(out, args[0])
        return out
    # (None for an output not computed, as a backward op's unneeded gradient)
    outputs = tuple([None if d is None else wrap(d) for d in data])
    out = outputs[0]
    if out is None:
        out = next((o for o in outputs if o is not None), None)
        if out is None:
            return outputs
    if STATE.special:
        if _special(ov, out, outputs, args):
            _record(ov, out, outputs, args)
    elif STATE.grad_enabled and _needs_grad(ov, args) and out._data.dtype.kind in "fV":
        _record(ov, out, outputs, args)
    if ov.is_view:
        for o in outputs:
            make_view(o, args[0], MULTI_OUTPUT)
    return outputs if ov.returns is None else ov.returns(*outputs)


def in_float32(ov: type, function, args: tuple) -> Tensor:
    """``function`` (an op's) over ``args`` that hold float16 or bfloat16 tensors, computed as
    torch's CPU kernels compute those types: in float32, with the result rounded once (NumPy's
    and ml_dtypes' ufuncs would round every step of a kernel made of several). ``ov`` records
    the node on ``args``."""
    low = None
    wide = []
    for a in args:
        if type(a) is Tensor and is_half(a._data):
            low = a._data.dtype
            a = wrap(a._data.astype(np.float32))
        wide.append(a)
    out = function(*wide)._data
    return dispatch(ov, np.asarray(out).astype(low), args)


def is_half(d: np.ndarray) -> bool:
    """Whether ``d`` holds float16 or bfloat16 (NumPy's type codes "e" and "E"), the types
    torch computes in float32."""
    return d.dtype.char in "eE"


def _needs_grad(ov: type, args: tuple) -> bool:
    """Whether a tensor input of ``ov`` among ``args`` requires grad."""
    pos = ov._edge_pos
    for p in range(len(args)) if pos is None else pos:
        a = args[p]
        if type(a) is Tensor and a._requires_grad:
            return True
    return False


def _record(ov: type, out: Tensor, outputs: tuple | None, args: tuple) -> None:
    node = _new(ov._backward_cls)
    node.needs_input_grad = needs_of(args)
    node._saved = ()
    node._versions = None
    pos = ov._edge_pos
    if pos is None:
        edges = args[: len(args) - len(ov.args) + 1]  # (the list's tensors)
    elif len(pos) == 1:
        edges = (args[pos[0]],)
    elif pos is _PAIR:
        a, b = args[0], args[1]
        edges = (a if type(a) is Tensor else None, b if type(b) is Tensor else None)
    elif ov.tensor_positions is None:
        edges = args  # (every argument is a tensor input)
    elif type(ov._backward_cls._tensor_pos) is int:
        # (the first arguments, three or more: link's loop passes over what is not a tensor)
        edges = args[: ov._backward_cls._tensor_pos]
    else:
        edges = tuple([args[p] if type(args[p]) is Tensor else None for p in pos])
    if outputs is None:
        link((out,), node, edges)
        ov.setup_context(node, args, out)
    else:
        link(outputs[: ov._linked], node, edges)
        ov.setup_context(node, args, outputs)


def _special(ov: type, out: Tensor, outputs: tuple | None, args: tuple) -> bool:
    """The rare modes' part of dispatch: forward-AD tangents, then whether to record (never in
    inference mode)."""
    if STATE.fw_level is not None and not STATE.inference:
        # (inference mode turns forward AD off, as in torch)
        from ..autograd.forward_ad import propagate

        propagate(ov, (out,) if outputs is None else outputs, args)
    if STATE.inference or not STATE.grad_enabled or out._data.dtype.kind not in "fV":
        return False
    return _needs_grad(ov, args)


def read_history(*tensors) -> None:
    """What torch's autograd layer does before a differentiable op's kernel checks its
    arguments: under grad mode, when an input requires grad, it reads every input's history,
    where a view whose base was modified in place in a forbidden way (made in no_grad, one of
    several outputs, returned by a custom Function) raises its error. A declared op's function
    calls it first thing, and only when an input's version counter has moved (``x._vc and
    x._vc[0]``: the one read the usual call pays), as a view's history is stale only then."""
    if not STATE.grad_enabled or STATE.special and STATE.inference:
        return
    for t in tensors:
        if type(t) is Tensor and t._requires_grad:
            for u in tensors:
                if type(u) is Tensor:
                    u.grad_fn  # noqa: B018 - reading a stale view's history is the check
            return


# ---------------------------------------------------------------------------------- declaration
@dataclass(eq=False)
class Op:
    """A declared op, as the registry lists it: its names, overloads and contract."""

    name: str
    overloads: tuple
    function: Callable
    methods: dict
    functions: dict
    inplace: str | tuple | None = None
    augmented: str | None = None
    torch_op: str = ""
    pack: bool = False  # (an op of the drop-in pack: a user Function with its own contract)
    module: str = ""  # (the module whose body declared it: its family)

    @property
    def node_names(self) -> tuple:
        """torch's node name of each overload."""
        return tuple(ov._backward_cls.__name__ if self.pack else ov.node_name
                     for ov in self.overloads)

    def contract(self) -> dict:
        """What each overload promises, by node name: its saved fields, forward-mode rule kind
        and double-backward support (the fields the bridge and ext.testing read); a pack op's
        own contract fields."""
        if self.pack:
            return {name: ov.contract() for name, ov in zip(self.node_names, self.overloads)}
        return {ov.node_name: {
            "saved_fields": tuple(ov.saved_fields),
            "saved_attrs": tuple(ov.saved_attrs),
            "forward_rule": _rule_kind(ov.jvp),
            "double_backward": ov.double_backward,
            "outputs": tuple(ov.outputs),
            "autocast": ov.autocast or "none",
        } for ov in self.overloads}


def _rule_kind(rule) -> str:
    if rule is None:
        return "none"
    return str(rule) if isinstance(rule, _Rule) else "jvp"


def _unsigned_property(name: str) -> property:
    def get(node):
        value = getattr(node, name)
        return value + 2**64 if value < 0 else value

    return property(get)


_REGISTRY: dict[str, Op] = {}


def declare(name: str, *overloads: type, function: Callable | None = None,
            kernel: Callable | None = None, dtype: str | None = None,
            methods: tuple | dict | None = None, functions: tuple | dict | None = None,
            operator: str | None = None, reflected: tuple | None = None,
            inplace: str | tuple | None = None,
            augmented: str | None = None, torch_op: str = "") -> Callable:
    """Enter the op ``name`` in the registry and return its function.

    ``function`` parses the arguments, runs the kernel and ends in ``dispatch`` with the overload
    it chose; a one-input elementwise op gives ``kernel`` (NumPy, array to array) and ``dtype``
    instead, and its function is made here. ``methods`` and ``functions`` (Tensor methods and
    ``ext.*`` names) default to ``(name,)``; either may map names to functions of their own
    instead (a method that checks its arguments as torch's does, then calls ``function``, the
    aten op, which ``ext.ops.aten`` gives); ``operator`` is a Python operator method (``__pow__``)
    and ``reflected`` a ``(name, function)`` pair (``__rpow__``); ``inplace`` and ``augmented``
    name the in-place method (``pow_``) and operator (``__ipow__``): the same op, written into
    its first argument. ``inplace`` may be several names (``("clamp_", "clip_")``), and an entry
    of ``methods`` or ``inplace`` a ``(name, function)`` pair, for a method that is not the
    function itself (``Tensor.where`` takes ``self`` second; ``masked_fill_`` warns first).
    An op's aten overload (``mul.Scalar``) is declared under that name, and
    ``ext.ops.aten.mul.Scalar`` reaches it as in torch.
    """
    if function is None:
        function = _elementwise(name, overloads[0], kernel, dtype)
    function.__name__ = function.__qualname__ = name
    if isinstance(methods, dict):
        table = dict(methods)
    else:
        table = dict(m if type(m) is tuple else (m, function)
                     for m in ((name,) if methods is None else methods))
    torch_op = torch_op or f"aten::{name}"
    for ov in overloads:
        ov._method = name if table.get(name) is function else ""
        ov._aten = torch_op[len("aten::"):]
    if operator:
        table[operator] = operator_method(function)
    if reflected:
        table[reflected[0]] = reflected_method(reflected[1])
    free = dict(functions) if isinstance(functions, dict) else {
        f: function for f in ((name,) if functions is None else functions)}
    _REGISTRY[name] = Op(name, overloads, function, table, free, inplace, augmented, torch_op,
                         module=_declaring_module())
    return function


def _declaring_module() -> str:
    """The module whose body is running the declaration (through any helper that calls
    ``declare``): the op's family."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != "<module>":
        frame = frame.f_back
    return frame.f_globals.get("__name__", "") if frame is not None else ""


def _elementwise(name: str, ov: type, kernel: Callable, dtype: str | None) -> Callable:
    to_float = dtype == FLOAT

    def function(x: Tensor) -> Tensor:
        if type(x) is not Tensor:
            raise not_a_tensor(x, name)
        if x._vc and x._vc[0]:
            read_history(x)
        d = x._data
        if to_float and d.dtype.char not in "fd":  # (not float32 or float64)
            if is_half(d):
                # float16 and bfloat16: torch's kernels compute in float32 and round the result
                # once; a float64 kernel rounded to float32 gives the nearly exact float32
                # values of torch's vectorized kernels (NumPy's float32 ones are rougher)
                wide = np.asarray(kernel(d.astype(np.float64)))
                return dispatch(ov, wide.astype(np.float32).astype(d.dtype), (x,))
            d = d.astype(_dtype.get_default_dtype()._np)
        return dispatch(ov, kernel(d), (x,))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = ov.__doc__
    return function


def _inplace_method(name: str, fn: Callable) -> Callable:
    from .builtin.inplace import apply_inplace

    def method(self, *args, **kwargs):
        return apply_inplace(self, fn, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"In-place ``{name[:-1]}``: modifies this tensor and returns it."
    return method


def _augmented_method(fn: Callable) -> Callable:
    from .builtin.inplace import apply_inplace

    def method(self, other):
        if not isinstance(other, (Tensor, int, float, bool, np.generic)):
            return NotImplemented
        return apply_inplace(self, fn, other)

    method.__name__ = fn.__name__
    return method


_OPERANDS = frozenset({Tensor, builtins.float, builtins.int, builtins.bool})


def operator_method(fn: Callable) -> Callable:
    """A binary operator method: NotImplemented for operands it does not know, so that Python
    tries the reflected operator or raises its own TypeError."""
    def op(self, other):
        if type(other) in _OPERANDS or isinstance(other, (Tensor, int, float, np.generic)):
            return fn(self, other)
        if is_torch_tensor(other):  # (NotImplemented would end in "'Tensor' and 'Tensor'")
            raise mixed_operands(fn.__name__)
        return NotImplemented

    op.__name__ = fn.__name__
    op.__doc__ = fn.__doc__
    return op


def reflected_method(fn: Callable) -> Callable:
    """A reflected operator method (``__radd__``): numbers only, else NotImplemented."""
    def op(self, other):
        if type(other) in _OPERANDS or isinstance(other, (int, float, np.generic)):
            return fn(self, other)
        if is_torch_tensor(other):  # (torch's own operator gave up first: it says nothing)
            raise mixed_operands(fn.__name__)
        return NotImplemented

    op.__name__ = fn.__name__
    op.__doc__ = fn.__doc__
    return op


class _Namespace:
    """``ext.ops.aten``: the declared ops by their aten name, as ``torch.ops.aten`` lists
    torch's. A backward formula that needs a backward op (``threshold_backward``) calls
    ``namespace_of(grad).ops.aten.threshold_backward(...)`` and gets the same op on either
    engine."""

    def __init__(self, name: str) -> None:
        self._prefix = f"{name}::"

    def __getattr__(self, name: str) -> Callable:
        full = self._prefix + name
        if not any(op.torch_op == full for op in _REGISTRY.values()):
            from ._lazy import load_all

            load_all()
        for op in _REGISTRY.values():
            if op.torch_op == full:
                for other in _REGISTRY.values():
                    head, _, overload = other.torch_op.partition(".")
                    if overload and head == full:  # (``mul.Scalar``, as torch names it)
                        setattr(op.function, overload, other.function)
                self.__dict__[name] = op.function  # (found once)
                return op.function
        raise AttributeError(f"'_OpNamespace' '{self._prefix[:-2]}' object has no attribute "
                             f"'{name}'")


class _Ops:
    """``ext.ops``: the op namespaces (``ext.ops.aten``)."""

    def __init__(self) -> None:
        self.aten = _Namespace("aten")


ops = _Ops()


def register_pack(name: str, function: Callable, cls: type) -> None:
    """Enter an op of the drop-in pack (``function``, backed by the Function ``cls``) in the
    registry, beside the built-ins."""
    # (under a key of its own: a pack op may share its name with a built-in, as silu does)
    _REGISTRY[f"pack.{name}"] = Op(name, (cls,), function, {}, {name: function}, torch_op="",
                                   pack=True)


def registry() -> tuple:
    """Every declared op, in declaration order (the families loaded on first use are loaded
    first, so that the list is whole)."""
    from ._lazy import load_all

    load_all()
    return tuple(_REGISTRY.values())


def lookup(name: str) -> Op:
    """The declared op called ``name`` (KeyError if there is none)."""
    if name not in _REGISTRY:
        from ._lazy import load_all

        load_all()
    return _REGISTRY[name]


def loaded() -> tuple:
    """The ops declared so far, without loading the families that wait for first use."""
    return tuple(_REGISTRY.values())


def methods(ops=None) -> dict:
    """The Tensor methods of the declared ops (``ops``, or every one loaded), for the method
    table (made when it is installed: the in-place variants run through ``inplace``, which
    needs the ops loaded)."""
    out = {}
    for op in _REGISTRY.values() if ops is None else ops:
        out.update(op.methods)
        for entry in (op.inplace,) if type(op.inplace) is str else op.inplace or ():
            inplace, fn = entry if type(entry) is tuple else (entry, op.function)
            out[inplace] = _inplace_method(inplace, fn)
        if op.augmented:
            out[op.augmented] = _augmented_method(op.function)
    return out


def functions(ops=None) -> dict:
    """The ``ext.*`` functions of the declared built-ins (``ops``, or every one loaded; the
    pack's live in ``ext.functions``)."""
    from ._keywords import free

    out = {}
    for op in _REGISTRY.values() if ops is None else ops:
        if not op.pack:
            out.update({name: free(fn, name) for name, fn in op.functions.items()})
    return out
