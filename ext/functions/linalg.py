"""Matrix products: mm, mv, dot, and matmul, which picks among them by the operands' ranks."""

from __future__ import annotations

import numpy as np

from .._state import STATE
from .._tensor import Tensor, wrap
from ._builtin import BuiltinFunction, as_array, binary_operands, record
from .shape import SqueezeMatmul, squeeze, unsqueeze

__all__ = ["mm", "mv", "dot", "matmul"]


def _strides(t: Tensor) -> tuple:
    d = t._data
    return tuple(s // d.itemsize for s in d.strides)


class Mm(BuiltinFunction):
    """A @ B for matrices: dA = grad @ Bᵀ, dB = Aᵀ @ grad."""

    node_name = "MmBackward0"
    saved_fields = ("self", "mat2")
    saved_attrs = ("self_sym_sizes", "self_sym_strides", "mat2_sym_sizes", "mat2_sym_strides")

    @staticmethod
    def forward(a, b):
        return a.mm(b)

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, b = inputs
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None,
                              b if ctx.needs_input_grad[0] else None)
        ctx.self_sym_sizes, ctx.self_sym_strides = tuple(a.shape), tuple(a.stride())
        ctx.mat2_sym_sizes, ctx.mat2_sym_strides = tuple(b.shape), tuple(b.stride())

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return (grad.mm(b.t()) if ctx.needs_input_grad[0] else None,
                a.t().mm(grad) if ctx.needs_input_grad[1] else None)


class Mv(BuiltinFunction):
    """A @ v: dA = outer(grad, v), dv = Aᵀ @ grad."""

    node_name = "MvBackward0"
    saved_fields = ("self", "vec")

    @staticmethod
    def forward(a, v):
        return a.mv(v)

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, v = inputs
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None,
                              v if ctx.needs_input_grad[0] else None)

    @staticmethod
    def backward(ctx, grad):
        a, v = ctx.saved_tensors
        return (grad.unsqueeze(1) * v if ctx.needs_input_grad[0] else None,
                a.t().mv(grad) if ctx.needs_input_grad[1] else None)


class Dot(BuiltinFunction):
    """u · v: du = grad * v, dv = grad * u."""

    node_name = "DotBackward0"
    saved_fields = ("self", "tensor")

    @staticmethod
    def forward(u, v):
        return u.dot(v)

    @staticmethod
    def setup_context(ctx, inputs, output):
        u, v = inputs
        ctx.save_for_backward(u if ctx.needs_input_grad[1] else None,
                              v if ctx.needs_input_grad[0] else None)

    @staticmethod
    def backward(ctx, grad):
        u, v = ctx.saved_tensors
        return (grad * v if ctx.needs_input_grad[0] else None,
                grad * u if ctx.needs_input_grad[1] else None)


def _operands(a, b, name: str):
    if type(a) is not Tensor or type(b) is not Tensor:
        bad = a if type(a) is not Tensor else b
        raise TypeError(f"{name}(): argument '{'input' if bad is a else 'other'}' must be Tensor, "
                        f"not {type(bad).__name__}")
    ad, bd = binary_operands(a, b)
    if ad.dtype != bd.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{a.dtype} != {b.dtype}")
    return ad, bd


def _product(op: type, a: Tensor, b: Tensor, data) -> Tensor:
    out = wrap(as_array(data))
    if STATE.grad_enabled and (a._requires_grad or b._requires_grad) and \
            out._data.dtype.kind == "f":
        record(op, out, (a, b), (a, b))
    return out


def mm(a: Tensor, b: Tensor) -> Tensor:
    """The product of two matrices."""
    ad, bd = _operands(a, b, "mm")
    if ad.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if bd.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if ad.shape[1] != bd.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({ad.shape[0]}x"
                           f"{ad.shape[1]} and {bd.shape[0]}x{bd.shape[1]})")
    return _product(Mm, a, b, ad @ bd)


def mv(a: Tensor, v: Tensor) -> Tensor:
    """The product of a matrix and a vector."""
    ad, vd = _operands(a, v, "mv")
    if ad.ndim != 2 or vd.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {vd.ndim}, {ad.ndim}, "
                           f"{vd.ndim}")
    if ad.shape[1] != vd.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({ad.shape[0]}), mat ({ad.shape[0]}x"
                           f"{ad.shape[1]}), vec ({vd.shape[0]})")
    return _product(Mv, a, v, ad @ vd)


def dot(u: Tensor, v: Tensor) -> Tensor:
    """The inner product of two vectors."""
    ud, vd = _operands(u, v, "dot")
    if ud.ndim != 1 or vd.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {ud.ndim}D and {vd.ndim}D tensors")
    if ud.shape[0] != vd.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{ud.shape[0]}] and src "
                           f"[{vd.shape[0]}] to have the same number of elements, but got "
                           f"{ud.shape[0]} and {vd.shape[0]} elements respectively")
    return _product(Dot, u, v, np.dot(ud, vd))


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """The matrix product, dispatched by rank as torch does (dot, mv, mm)."""
    if type(a) is not Tensor or type(b) is not Tensor:
        return _operands(a, b, "matmul")
    da, db = a._data.ndim, b._data.ndim
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{da}D and {db}D")
    if da == 1 and db == 1:
        return dot(a, b)
    if da == 2 and db == 1:
        return mv(a, b)
    if da == 1 and db == 2:
        return squeeze(mm(unsqueeze(a, 0), b), 0, _op=SqueezeMatmul)
    if da == 2 and db == 2:
        return mm(a, b)
    raise RuntimeError(f"matmul of {da}D and {db}D tensors: batched matmul is not supported yet")


METHODS = {
    "matmul": matmul, "mm": mm, "mv": mv, "dot": dot,
    "__matmul__": lambda self, other: matmul(self, other) if isinstance(other, Tensor)
    else NotImplemented,
    "__rmatmul__": lambda self, other: NotImplemented,
}
FUNCTIONS = {"matmul": matmul, "mm": mm, "mv": mv, "dot": dot}
