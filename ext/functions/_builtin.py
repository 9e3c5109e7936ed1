"""What every built-in op shares: its Function base class, its node class, and the fast path.

A built-in op is an ``ext.autograd.Function`` in the ``forward`` + ``setup_context`` style with
one more piece, its NumPy kernel. On ext tensors the fast path runs the kernel directly and, only
when grad mode is on and an input requires grad, builds the node through the same ``link`` and
``setup_context`` that ``Function.apply`` uses, so the node reads exactly as torch's.
"""

from __future__ import annotations

import builtins

import numpy as np

from .. import _dtype
from .._dtype import FROM_NUMPY
from .._state import STATE
from .._tensor import Tensor, wrap
from ..autograd.function import BackwardCFunction, Function
from ..autograd.graph import link, unpack_all

__all__ = ["BuiltinFunction", "BuiltinNode", "record", "as_array", "binary_operands",
           "namespace_of"]

_new = object.__new__
_SCALARS = (builtins.int, builtins.float, builtins.bool)


class BuiltinNode(BackwardCFunction):
    """The node of a built-in op: backward is trusted, so the custom-Function checks are
    skipped, and a node that received no gradient is not run at all."""

    _skip_undefined = True

    def _apply(self, grads: list) -> tuple:
        result = self._forward_cls.backward(self, *grads)
        if type(result) is not tuple:
            return (result,)
        pos = self._tensor_pos
        if pos is None:
            return result
        return tuple(result[p] for p in pos)


def _saved_tensor_property(index: int) -> property:
    def get(node):
        return unpack_all(node._saved, node)[index]

    return property(get)


def _saved_attr_property(name: str) -> property:
    if name.startswith("dim"):
        # torch reads dims back as unsigned 64-bit integers: -1 shows as 2**64 - 1.
        return property(lambda node: _unsigned(getattr(node, name)))
    return property(lambda node: getattr(node, name))


def _unsigned(value):
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

    _node_base = BuiltinNode
    saved_fields: tuple = ()
    saved_attrs: tuple = ()
    # Positions of the forward arguments that are tensor inputs (edges); None: all of them.
    tensor_positions: tuple | None = None

    @classmethod
    def _decorate_node(cls) -> None:
        node = cls._backward_cls
        node._tensor_pos = cls.tensor_positions
        for i, name in enumerate(cls.saved_fields):
            setattr(node, f"_saved_{name}", _saved_tensor_property(i))
        for name in cls.saved_attrs:
            setattr(node, f"_saved_{name}", _saved_attr_property(name))

    @staticmethod
    def setup_context(ctx, inputs: tuple, output) -> None:
        """Save nothing (ops whose gradient needs no saved values)."""


def record(op: type, out: Tensor, inputs: tuple, args: tuple) -> None:
    """Attach a node of ``op`` to ``out``: link it to the edges of ``inputs`` (one Tensor or
    None per edge) and let ``op.setup_context`` save what backward needs."""
    if STATE.inference:
        # enable_grad inside inference_mode turns grad mode on but records nothing.
        return
    node = _new(op._backward_cls)
    node.needs_input_grad = tuple(type(a) is Tensor and a._requires_grad for a in args)
    link((out,), node, inputs)
    op.setup_context(node, args, out)
    node._finish_saving((out,))


def as_array(result) -> np.ndarray:
    """NumPy returns scalars from 0-d operations; a tensor always holds an ndarray."""
    return result if type(result) is np.ndarray else np.asarray(result)


def binary_operands(a: Tensor, b) -> tuple:
    """The NumPy operands of a binary op under torch's promotion rules, or None when ``b`` is not
    a tensor or a number. A Python number stays a Python number (NumPy treats it as weak)."""
    ad = a._data
    if type(b) is Tensor:
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
        return ad, b
    if isinstance(b, np.ndarray):
        return binary_operands(a, wrap(b))
    return None


def wrapped_number(value, like: Tensor) -> Tensor:
    """A Python number as torch's "wrapped number" 0-d tensor (int64 or float64)."""
    if isinstance(value, builtins.bool):
        return wrap(np.array(value))
    if isinstance(value, builtins.int):
        return wrap(np.array(value, np.int64))
    return wrap(np.array(value, np.float64))


def requires_grad(*tensors) -> bool:
    """Whether an op on these operands must be recorded (grad mode on, an input requires grad)."""
    if not STATE.grad_enabled:
        return False
    for t in tensors:
        if type(t) is Tensor and t._requires_grad:
            return True
    return False


def namespace_of(x) -> object:
    """The module (``ext`` or ``torch``) of the tensor at hand, for Function bodies that need a
    free function such as ``zeros_like``."""
    if isinstance(x, Tensor):
        import ext

        return ext
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return torch
    raise TypeError(f"expected an ext or torch tensor, got {type(x).__name__}")
