"""What every built-in op shares: its Function base class, its node class, and the fast path.

A built-in op is an ``ext.autograd.Function`` in the ``forward`` + ``setup_context`` style with
one more piece, its NumPy kernel. On ext tensors the fast path runs the kernel directly and, only
when grad mode is on and an input requires grad, builds the node through the same ``link`` and
``setup_context`` that ``Function.apply`` uses, so the node reads exactly as torch's.
"""

from __future__ import annotations

import builtins

import numpy as np

from ... import _dtype
from ..._dtype import FROM_NUMPY
from ..._state import STATE
from ..._tensor import Tensor, wrap
from ...autograd.function import FREED, Function, FunctionCtx, bind_arguments
from ...autograd.graph import ERR_BACKWARD_TWICE, Node, SavedTensor, check_saved_input

__all__ = ["BuiltinFunction", "BuiltinNode", "as_array", "binary_operands",
           "namespace_of", "not_differentiable_checks"]

_new = object.__new__
NEEDS_ONE = (True,)
# needs_input_grad tuples are shared between nodes (they are immutable).
_NEEDS: dict = {}
NEEDS_TWO = (((False, False), (False, True)), ((True, False), (True, True)))
# (and with a third argument that is not a tensor, as add's alpha)
NEEDS_TWO_MORE = tuple(tuple(n + (False,) for n in pair) for pair in NEEDS_TWO)
_SCALARS = (builtins.int, builtins.float, builtins.bool)


class BuiltinNode(FunctionCtx, Node):
    """The node of a built-in op, which is also the ctx its ``backward`` reads.

    Backward is trusted, so the custom-Function checks are skipped, and a node that received no
    gradient is not run at all. It saves as every ctx does (``FunctionCtx``); a saved Python
    number stays a number until ``_saved_*`` shows it as torch's 0-d tensor.
    """

    __slots__ = ("needs_input_grad", "_saved", "_versions", "_nonleaf")
    _tensor_pos: tuple | None = None
    _formula = True
    # setup_context saves after link, straight into the shared store
    save_for_backward = FunctionCtx._store
    saved_tensors = property(FunctionCtx._unpack_saved, doc="What forward saved, checked.")

    @property
    def _edge_needs(self):
        """How edges map to forward arguments, for ``graph._no_edge``: 0 when edge i is
        argument i, else the arguments' positions."""
        pos = self._tensor_pos
        return 0 if pos is None or type(pos) is int else pos

    def _apply(self, grads: list) -> tuple:
        needs = self.needs_input_grad
        if not needs[0] and True not in needs:
            # (every input lost its edge: torch's formula computes nothing, graph._no_edge; it
            # still unpacks what was saved, which checks the versions)
            self.saved_tensors  # noqa: B018
            return (None,) * len(self._next)
        result = self._backward(self, *grads)
        if type(result) is not tuple:
            return (result,)
        pos = self._tensor_pos
        if pos is None:
            return result
        if type(pos) is int:
            return result[:pos]
        return tuple([result[p] for p in pos])

    def _raw_saved(self, index: int):
        """The SavedTensor object behind ``_saved_<name>`` (made on demand for inputs, which
        the node otherwise keeps as they are)."""
        saved = self._saved
        if saved is FREED:
            placeholder = object.__new__(SavedTensor)
            placeholder._tensor = placeholder._unpack = None
            return placeholder
        v = saved[index]
        if type(v) is Tensor:
            version = 0 if self._versions is None else self._versions[index]
            v = SavedTensor(v, False, version=version, nonleaf=bool(self._nonleaf >> index & 1))
            self._saved = saved[:index] + (v,) + saved[index + 1:]
        return v if isinstance(v, SavedTensor) else None


def _saved_tensor_property(index: int) -> property:
    def get(node):
        saved = node._saved
        if saved is FREED:
            raise RuntimeError(ERR_BACKWARD_TWICE)
        v = saved[index]
        if isinstance(v, SavedTensor):
            return v.unpack(node)
        if type(v) is Tensor:
            # (a reader of ``_saved_*`` is given the tensor even if it was detached in place)
            check_saved_input(v, 0 if node._versions is None else node._versions[index], False)
        return v if v is None or type(v) is Tensor else wrapped_number(v)

    return property(get)


def _saved_attr_property(name: str) -> property:
    if name.startswith("dim"):
        # torch reads dims back as unsigned 64-bit integers: -1 shows as 2**64 - 1.
        return property(lambda node: _unsigned(getattr(node, name)))
    return property(lambda node: getattr(node, name))


def _unsigned(value):
    if value is None:
        return None
    if isinstance(value, tuple):
        return tuple(_unsigned(v) for v in value)
    return value + 2**64 if value < 0 else value


class BuiltinFunction(Function):
    """Base of the built-in ops of ``ext.functions``.

    Subclasses declare ``node_name`` (torch's name for this overload), ``saved_fields`` (the
    names, in ``save_for_backward`` order, under which torch exposes saved tensors as
    ``_saved_<name>``), ``saved_attrs`` (non-tensor fields set on ctx), ``kernel`` (NumPy),
    ``forward`` and ``setup_context`` in tensor-API code, and ``backward``.
    """

    # What the node's name() says when it is not node_name (Node._qualified_name).
    qualified_name: str | None = None
    saved_fields: tuple = ()
    saved_attrs: tuple = ()
    # Other attributes that setup_context puts on ctx (the node has no __dict__).
    ctx_attrs: tuple = ()
    # Positions of the forward arguments that are tensor inputs (edges); None: all of them.
    tensor_positions: tuple | None = None
    # Whether the output's tangent is cast to the output's dtype; False where the forward rule
    # gives torch's own tangent dtype, which can be wider (as add's, pointwise/arithmetic.py).
    tangent_in_output_dtype: bool = True

    def __init_subclass__(cls, **kwargs) -> None:
        """Make the op's node class: a ``BuiltinNode`` named ``node_name``, with a slot per
        attribute that ``setup_context`` sets."""
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(
            cls.__dict__.get("node_name") or f"{cls.__name__}Backward", (BuiltinNode,),
            {"_forward_cls": cls, "__module__": cls.__module__,
             "__slots__": cls._node_slots(),
             "_qualified_name": cls.qualified_name})
        cls._decorate_node()

    @classmethod
    def _node_slots(cls) -> tuple:
        """The node's attribute slots: one per value ``setup_context`` sets."""
        return tuple(cls.saved_attrs) + tuple(cls.ctx_attrs)

    @classmethod
    def _decorate_node(cls) -> None:
        """Give the node class its backward and its ``_saved_*`` readers."""
        node = cls._backward_cls
        node._backward = staticmethod(cls.backward)
        pos = cls.tensor_positions
        # Tensor inputs that come first are picked out with a slice.
        node._tensor_pos = len(pos) if pos is not None and pos == tuple(range(len(pos))) else pos
        for i, name in enumerate(cls.saved_fields):
            setattr(node, f"_saved_{name}", _saved_tensor_property(i))
            setattr(node, f"_raw_saved_{name}", property(
                lambda n, i=i: n._raw_saved(i)))
        for name in cls.saved_attrs:
            setattr(node, f"_saved_{name}", _saved_attr_property(name))

    @staticmethod
    def setup_context(ctx, inputs: tuple, output) -> None:
        """Save nothing (ops whose gradient needs no saved values)."""

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run the op on ext tensors: its tensor-API ``forward`` calls the op's fast path, which
        records the same node that ``Function.apply`` would."""
        if kwargs:
            args = bind_arguments(cls.forward, args, kwargs, skip_ctx=False)
        return cls.forward(*args)


def needs_of(args: tuple) -> tuple:
    """Which of ``args`` need a gradient (the tensors that require grad), as a shared tuple."""
    needs = tuple([type(a) is Tensor and a._requires_grad for a in args])
    return _NEEDS.setdefault(needs, needs)


def not_differentiable_checks(name: str, *inputs) -> None:
    """What torch's autograd layer does for an op it has no derivative for (its "not
    implemented" fallback), before the kernel checks the arguments: under grad mode, when an
    input requires grad, it reads every input's history (a view whose base was modified in a
    forbidden way raises there); then it refuses inputs that carry a forward-AD tangent.
    Inference mode skips that layer."""
    if STATE.inference:
        return
    tensors = [t for t in inputs if type(t) is Tensor]
    if STATE.grad_enabled and any(t.requires_grad for t in tensors):
        for t in tensors:
            t.grad_fn  # noqa: B018 - reading a stale view's history is the check
    if STATE.fw_level is not None:
        from ...autograd.forward_ad import tangent_of

        if any(tangent_of(t) is not None for t in tensors):
            raise NotImplementedError(f"Trying to use forward AD with aten::{name} that does "
                                      "not support it.")


def as_array(result) -> np.ndarray:
    """NumPy returns scalars from 0-d operations; a tensor always holds an ndarray."""
    return result if type(result) is np.ndarray else np.asarray(result)


def binary_operands(a: Tensor, b) -> tuple:
    """The NumPy operands of a binary op under torch's promotion rules, or None when ``b`` is not
    a tensor or a number. A Python number stays a Python number (NumPy treats it as weak)."""
    ad = a._data
    tb = type(b)
    if tb is builtins.float:
        # A Python float keeps a floating tensor's dtype (NumPy treats it as weak, like torch);
        # the two-byte floats take it as a HalfNumber, below.
        if ad.dtype.char in "fd":  # (float32 or float64)
            return ad, b
    elif tb is Tensor:
        bd = b._data
        if ad.dtype == bd.dtype:
            return ad, bd
        rt = _dtype.result_type(FROM_NUMPY[ad.dtype], ad.ndim, FROM_NUMPY[bd.dtype], bd.ndim)._np
        return ad.astype(rt, copy=False), bd.astype(rt, copy=False)
    if isinstance(b, np.generic):
        b = b.item()
    if isinstance(b, _SCALARS):
        rt = _dtype.scalar_result_type(FROM_NUMPY[ad.dtype], b)._np
        if rt != ad.dtype:
            ad = ad.astype(rt)
        if rt.itemsize == 2 and rt.kind in "fV" and type(b) is not builtins.bool:
            return ad, HalfNumber.of(b, rt)
        return ad, b
    if isinstance(b, np.ndarray):
        return binary_operands(a, wrap(b))
    return None


class HalfNumber(np.ndarray):
    """A number beside a float16 or bfloat16 tensor, as torch's CPU kernels read it:
    multiplication and division take it in float32, the other ops round it to the tensor's type
    first; either way the kernel computes in float32 and rounds its result once (as the ufuncs
    of NumPy's float16 and ml_dtypes' bfloat16 do)."""

    _IN_FLOAT32 = frozenset({np.multiply, np.true_divide, np.floor_divide})
    wide: np.float32

    @classmethod
    def of(cls, value: builtins.int | builtins.float, np_dtype: np.dtype) -> HalfNumber:
        """``value`` as a 0-d operand of ``np_dtype`` that keeps its float32 rounding too."""
        number = np.asarray(value, np_dtype).view(cls)
        number.wide = np.float32(value)
        return number

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        wide = ufunc in self._IN_FLOAT32 and method == "__call__"
        args = [(self.wide if wide else x.view(np.ndarray)) if x is self else x for x in inputs]
        out = getattr(ufunc, method)(*args, **kwargs)
        if wide and out.dtype == np.float32:
            out = out.astype(self.dtype)
        return out


def wrapped_number(value) -> Tensor:
    """A Python number as torch's "wrapped number" 0-d tensor (int64 or float64)."""
    if isinstance(value, builtins.bool):
        return wrap(np.array(value))
    if isinstance(value, builtins.int):
        return wrap(np.array(value, np.int64))
    return wrap(np.array(value, np.float64))


# The ext package, imported on the first call of namespace_of (it imports this module).
_EXT: list = []


def namespace_of(x) -> object:
    """The module (``ext`` or ``torch``) of the tensor at hand, for Function bodies that need a
    free function such as ``zeros_like``."""
    if isinstance(x, Tensor):
        if not _EXT:  # (imported once: an import statement costs a backward formula 0.1 us)
            import ext

            _EXT.append(ext)
        return _EXT[0]
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return torch
    raise TypeError(f"expected an ext or torch tensor, got {type(x).__name__}")


# C++'s names of the dtypes, as torch's messages print them
C_TYPES = {np.dtype(k): v for k, v in (
    ("float64", "double"), ("float32", "float"), ("float16", "c10::Half"), ("int64", "long int"),
    ("int32", "int"), ("int16", "short int"), ("int8", "signed char"), ("uint8", "unsigned char"),
    ("bool", "bool"))}
