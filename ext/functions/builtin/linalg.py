"""Matrix products: mm, mv, dot, bmm, and matmul, which picks among them by the operands' ranks.

matmul of tensors with more than two dims is composed of the other ops exactly as torch composes
it (fold the batch into mm/mv, or broadcast, flatten and bmm), so its graph holds torch's nodes.
"""

from __future__ import annotations

import numpy as np

from ..._args import is_torch_tensor, mixed_operands, not_a_tensor
from ..._dtype import FROM_NUMPY
from ..._state import STATE
from ..._tensor import Tensor, wrap
from .._op import Overload, declare, dispatch, is_half
from .shape import (
    SqueezeMatmul,
    contiguous,
    expand,
    matrix_transpose,
    reshape,
    squeeze,
    t,
    unsafe_view,
    unsqueeze,
)

__all__ = ["mm", "mv", "dot", "bmm", "matmul"]

# The C++ type names torch's mm names dtypes by in its messages.
_C_TYPE = {"float64": "double", "float32": "float", "float16": "c10::Half", "int64": "long int",
           "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
           "bool": "bool"}


def _scalar_type(d: np.ndarray) -> str:
    """torch's ScalarType name of an array's dtype (``Float``, ``Double``, ``Long`` ...)."""
    return FROM_NUMPY[d.dtype]._short


class Mm(Overload):
    """A @ B for matrices: dA = grad @ Bᵀ, dB = Aᵀ @ grad."""

    node_name = "MmBackward0"
    autocast = "lower_precision_fp"  # (torch casts its inputs under CPU autocast)
    args = ("self", "mat2")
    saved_fields = ("self", "mat2")
    saved_attrs = ("self_sym_sizes", "self_sym_strides", "mat2_sym_sizes", "mat2_sym_strides")
    # each operand for the other's gradient, each one's strides for its own, as torch saves them
    saved_for = {"self": "mat2", "mat2": "self", "self_sym_strides": "self",
                 "mat2_sym_strides": "mat2"}

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga = gb = None
        # As torch's mm_mat1/mat2_backward: a column-major input gets its gradient computed
        # transposed (so the gradient's node is TBackward0).
        if ctx.needs_input_grad[0]:
            ga = (b.mm(grad.t()).t() if column_major(ctx.self_sym_sizes, ctx.self_sym_strides)
                  else grad.mm(b.t()))
        if ctx.needs_input_grad[1]:
            gb = (grad.t().mm(a).t() if column_major(ctx.mat2_sym_sizes, ctx.mat2_sym_strides)
                  else a.t().mm(grad))
        return ga, gb

    @staticmethod
    def jvp(ctx, ta, tb):
        return _product_jvp(ctx, ta, tb, lambda a, b: a.mm(b))


def column_major(sizes: tuple, strides: tuple) -> bool:
    """Whether a matrix of ``sizes`` and ``strides`` is laid out column by column (torch's test
    in mm's backward, which then computes its gradient transposed)."""
    return strides[0] == 1 and strides[1] == sizes[0]


def _product_jvp(ctx, ta, tb, mul, zeros: bool = True):
    """The tangent of a product ``mul(a, b)``: ``mul(ta, b) + mul(a, tb)``. As in torch, a
    missing tangent takes part as zeros (so a nan or inf in the other factor gives nan), except
    in ``dot``, which skips it."""
    a, b = ctx.saved_tensors
    if zeros:
        ta = a.new_zeros(a.shape) if ta is None else ta
        tb = b.new_zeros(b.shape) if tb is None else tb
    if tb is None:
        return mul(ta, b)
    return mul(a, tb) if ta is None else mul(ta, b) + mul(a, tb)


class Mv(Overload):
    """A @ v: dA = outer(grad, v), dv = Aᵀ @ grad."""

    node_name = "MvBackward0"
    args = ("self", "vec")
    saved_fields = ("self", "vec")
    saved_for = {"self": "vec", "vec": "self"}

    @staticmethod
    def backward(ctx, grad):
        a, v = ctx.saved_tensors
        return (grad.unsqueeze(1) * v if ctx.needs_input_grad[0] else None,
                a.t().mv(grad) if ctx.needs_input_grad[1] else None)

    @staticmethod
    def jvp(ctx, ta, tv):
        return _product_jvp(ctx, ta, tv, lambda a, v: a.mv(v))


class Dot(Overload):
    """u · v: du = grad * v, dv = grad * u."""

    node_name = "DotBackward0"
    args = ("self", "tensor")
    saved_fields = ("self", "tensor")
    saved_for = {"self": "tensor", "tensor": "self"}

    @staticmethod
    def backward(ctx, grad):
        u, v = ctx.saved_tensors
        return (grad * v if ctx.needs_input_grad[0] else None,
                grad * u if ctx.needs_input_grad[1] else None)

    @staticmethod
    def jvp(ctx, tu, tv):
        return _product_jvp(ctx, tu, tv, lambda u, v: u.dot(v), zeros=False)


class Bmm(Overload):
    """A @ B for batches of matrices: dA = grad @ Bᵀ, dB = Aᵀ @ grad, batch by batch."""

    node_name = "BmmBackward0"
    autocast = "lower_precision_fp"  # (torch casts its inputs under CPU autocast)
    args = ("self", "mat2")
    saved_fields = ("self", "mat2")
    saved_for = {"self": "mat2", "mat2": "self"}

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return (grad.bmm(b.transpose(1, 2)) if ctx.needs_input_grad[0] else None,
                a.transpose(1, 2).bmm(grad) if ctx.needs_input_grad[1] else None)

    @staticmethod
    def jvp(ctx, ta, tb):
        return _product_jvp(ctx, ta, tb, lambda a, b: a.bmm(b))


def _check_tensors(a, b, name: str, second: str = "other") -> None:
    if type(a) is not Tensor or type(b) is not Tensor:
        bad, arg, pos = (a, "input", 1) if type(a) is not Tensor else (b, second, 2)
        raise not_a_tensor(bad, name, arg, pos)


def _product(ad: np.ndarray, bd: np.ndarray) -> np.ndarray:
    """``np.matmul``; float16 and bfloat16 multiply in float32 and round the product once, as
    torch's kernel accumulates."""
    if is_half(ad):
        return np.asarray(np.matmul(ad.astype(np.float32), bd.astype(np.float32))
                          ).astype(ad.dtype)
    return np.matmul(ad, bd)


def _mm(a: Tensor, b: Tensor) -> Tensor:
    """The product of two matrices."""
    _check_tensors(a, b, "mm", "mat2")
    ad, bd = a._data, b._data
    if ad.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if bd.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if ad.shape[1] != bd.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({ad.shape[0]}x"
                           f"{ad.shape[1]} and {bd.shape[0]}x{bd.shape[1]})")
    if ad.dtype != bd.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_C_TYPE[ad.dtype.name]} != {_C_TYPE[bd.dtype.name]}")
    # (float16 and bfloat16 take the slower _product)
    return dispatch(Mm, ad @ bd if ad.dtype.char not in "eE" else _product(ad, bd), (a, b))


def _mv(a: Tensor, v: Tensor) -> Tensor:
    """The product of a matrix and a vector."""
    _check_tensors(a, v, "mv", "vec")
    ad, vd = a._data, v._data
    if ad.ndim != 2 or vd.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {vd.ndim}, {ad.ndim}, "
                           f"{vd.ndim}")
    if ad.shape[1] != vd.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({ad.shape[0]}), mat ({ad.shape[0]}x"
                           f"{ad.shape[1]}), vec ({vd.shape[0]})")
    if ad.dtype != vd.dtype:
        vec = _scalar_type(vd)
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {vec}, "
                           f"{_scalar_type(ad)}, and {vec}")
    return dispatch(Mv, _product(ad, vd), (a, v))


def _dot(u: Tensor, v: Tensor) -> Tensor:
    """The inner product of two vectors."""
    _check_tensors(u, v, "dot", "tensor")
    ud, vd = u._data, v._data
    if ud.ndim != 1 or vd.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {ud.ndim}D and {vd.ndim}D tensors")
    if ud.dtype != vd.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{_scalar_type(ud)} and {_scalar_type(vd)}")
    if ud.shape[0] != vd.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{ud.shape[0]}] and src "
                           f"[{vd.shape[0]}] to have the same number of elements, but got "
                           f"{ud.shape[0]} and {vd.shape[0]} elements respectively")
    return dispatch(Dot, _product(ud, vd), (u, v))


def _bmm(a: Tensor, b: Tensor) -> Tensor:
    """The products of two batches of matrices, matrix by matrix (no broadcasting)."""
    _check_tensors(a, b, "bmm", "mat2")
    ad, bd = a._data, b._data
    if ad.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if bd.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if bd.shape[0] != ad.shape[0] or bd.shape[1] != ad.shape[2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{ad.shape[0]}, {ad.shape[2]}] but got: [{bd.shape[0]}, "
                           f"{bd.shape[1]}].")
    if ad.dtype == np.bool_:
        raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
    if ad.dtype != bd.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_type(ad)} but found "
                           f"{_scalar_type(bd)}")
    return dispatch(Bmm, _product(ad, bd), (a, b))


mm = declare("mm", Mm, function=_mm)
mv = declare("mv", Mv, function=_mv)
dot = declare("dot", Dot, function=_dot)
bmm = declare("bmm", Bmm, function=_bmm)


def _matmul(a: Tensor, b: Tensor) -> Tensor:
    """The matrix product, dispatched by rank as torch does: dot, mv, mm, and for more than two
    dims a batched product with broadcast batch dims."""
    _check_tensors(a, b, "matmul")
    ad, bd = a._data, b._data
    da, db = ad.ndim, bd.ndim
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{da}D and {db}D")
    if da <= 2 and db <= 2:
        if da == 1:
            return dot(a, b) if db == 1 else squeeze(mm(unsqueeze(a, 0), b), 0, _op=SqueezeMatmul)
        return mv(a, b) if db == 1 else mm(a, b)
    if STATE.grad_enabled and (a._requires_grad or b._requires_grad) or STATE.special:
        return _batched(a, b)
    # Without a graph to build, NumPy's matmul computes the same values in one call (a
    # hand-tuned path: several times faster than the composition of views, bmm and copies).
    # Anything it might get wrong (dtypes, sizes) goes through torch's composition, which raises
    # torch's error for the way torch takes.
    if ad.dtype == bd.dtype and ad.dtype != np.bool_ and \
            ad.shape[-1] == bd.shape[-2 if db > 1 else 0]:
        try:
            return wrap(_product(ad, bd))
        except ValueError:
            pass
    return _batched(a, b)


def _should_fold(a: Tensor, b: Tensor) -> bool:
    """Whether torch computes this product as one mm/mv on the larger operand with its batch
    dims folded into the rows (else: bmm on broadcast batches)."""
    ad, bd = a._data, b._data
    larger = ad.ndim >= bd.ndim
    big = ad if larger else bd
    small_ndim = bd.ndim if larger else ad.ndim
    if big.ndim < 3 or small_ndim > 2:
        return False
    # Folding keeps the gradient of the small operand a matrix, not a batch of them.
    if (b if larger else a)._requires_grad:
        return True
    if ad.ndim == 2:
        return False
    if big.size == 0:
        return True
    shape, strides = list(big.shape), list(big.strides)
    if not larger:
        # The larger operand enters transposed (its mT).
        shape[-2:], strides[-2:] = shape[:-3:-1], strides[:-3:-1]
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(len(shape) - 2))


def _broadcast_batch(s1: tuple, s2: tuple) -> tuple:
    """The broadcast of two batch shapes, with torch's message when they do not broadcast."""
    n = max(len(s1), len(s2))
    out = [0] * n
    for i in range(n - 1, -1, -1):
        k = n - 1 - i
        x = s1[len(s1) - 1 - k] if k < len(s1) else 1
        y = s2[len(s2) - 1 - k] if k < len(s2) else 1
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                               f"at non-singleton dimension {i}")
        out[i] = y if x == 1 else x
    return tuple(out)


def _batched(a: Tensor, b: Tensor) -> Tensor:
    """matmul with an operand of more than two dims, composed of views, mm/mv and bmm as in
    torch's ``_matmul_impl`` (which the graph then mirrors node for node)."""
    sa, sb = a._data.shape, b._data.shape
    da, db = len(sa), len(sb)
    if _should_fold(a, b):
        transpose = db > da
        t1 = matrix_transpose(b) if transpose else a
        t2 = (t(a) if da == 2 else a) if transpose else b
        s1 = t1._data.shape
        rows = 1
        for s in s1[:-1]:
            rows *= s
        folded = reshape(t1, (rows, s1[-1]))
        if t2._data.ndim == 1:
            return unsafe_view(mv(folded, t2), s1[:-1])
        out = unsafe_view(mm(folded, t2), s1[:-1] + (t2._data.shape[1],))
        return contiguous(matrix_transpose(out)) if transpose else out
    n = sa[-2] if da > 1 else 1
    m2 = sb[-2] if db > 1 else sb[0]
    p = sb[-1] if db > 1 else 1
    batch1, batch2 = sa[:-2], sb[:-2]
    if da == 3 and db == 3 and batch1[0] != batch2[0]:
        # A batch of one that needs a gradient is squeezed away so that the product folds.
        if batch1[0] == 1 and a._requires_grad:
            return _matmul(squeeze(a, 0), b)
        if batch2[0] == 1 and b._requires_grad:
            return _matmul(a, squeeze(b, 0))
    batch = _broadcast_batch(batch1, batch2)
    count = 1
    for s in batch:
        count *= s
    a3 = reshape(expand(a, batch + (n, sa[-1])), (count, n, sa[-1]))
    if db == 1:
        b3 = unsqueeze(reshape(expand(b, batch + (m2,)), (count, m2)), 2)
        return unsafe_view(squeeze(bmm(a3, b3), -1), batch + (n,))
    b3 = reshape(expand(b, batch + (m2, p)), (count, m2, p))
    return unsafe_view(bmm(a3, b3), batch + ((n,) if da > 1 else ()) + (p,))


def _matmul_operator(self, other):
    if isinstance(other, Tensor):
        return _matmul(self, other)
    if is_torch_tensor(other):
        raise mixed_operands("matmul")
    return NotImplemented


def _rmatmul(self, other):
    # Python reaches it only when other is not a tensor; called directly with a tensor, it is
    # other @ self, as torch's
    if isinstance(other, Tensor):
        return _matmul(other, self)
    if is_torch_tensor(other):  # (torch's own @ gave up first: it says nothing)
        raise mixed_operands("matmul")
    return NotImplemented


# (a composite, as torch's: its graph holds the nodes of the ops it calls, none of its own)
matmul = declare("matmul", function=_matmul, methods={
    "matmul": _matmul, "__matmul__": _matmul_operator, "__rmatmul__": _rmatmul})
