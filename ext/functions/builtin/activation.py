"""Softmax-family ops and the building blocks of ``ext.nn.functional``: addmm and the losses.

softmax, log_softmax and logsumexp subtract the maximum before exponentiating, so that large
inputs never overflow. The losses are torch's ATen ops: ``nll_loss`` (whose node keeps the
summed class weights, ``total_weight``) and ``mse_loss``; ``cross_entropy`` is built from them in
``ext.nn.functional``, as in torch.
"""

from __future__ import annotations

import numpy as np

from ... import _dtype
from ..._args import not_a_tensor
from ..._dtype import FROM_NUMPY
from ..._state import STATE
from ..._tensor import Tensor, _wrap_dim, wrap
from .._op import LINEAR, Overload, declare, dispatch, in_float32, is_half
from ._builtin import binary_operands, namespace_of
from .linalg import column_major
from .pointwise.arithmetic import scaled
from .shape import wrap_dims

__all__ = ["softmax", "log_softmax", "logsumexp", "addmm", "nll_loss", "mse_loss",
           "target_hits", "REDUCTIONS"]

# torch's enum of reduction modes, which the loss nodes show as ``_saved_reduction``.
REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _check_tensor(x, fn: str, arg: str = "input", position: int = 1) -> None:
    if type(x) is not Tensor:
        raise not_a_tensor(x, fn, arg, position)


def _not_implemented(kernel: str, d: np.ndarray) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}" not implemented for '
                               f"'{FROM_NUMPY[d.dtype]._short}'")


def _sum_back(t: Tensor, dims, ndim: int) -> Tensor:
    """Put back, as size-1 dims, the ``dims`` (an int or a tuple) that a reduction without
    keepdim removed."""
    for d in sorted(_wrap_dim(d, ndim) for d in ((dims,) if isinstance(dims, int) else dims)):
        t = t.unsqueeze(d)
    return t


# ---------------------------------------------------------------------------------- softmax
def _total(t, dim: int):
    # The sum over the softmax dim, kept (a 0-d tensor is its own sum).
    return t.sum(dim, keepdim=True) if t.dim() else t


class Softmax(Overload):
    """softmax(x) along ``dim``: dx = y * (grad - sum(grad * y)), with y the result."""

    node_name = "SoftmaxBackward0"
    args = ("self", "dim")
    saved_fields = ("result",)
    saved_attrs = ("dim",)
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return namespace_of(grad).ops.aten._softmax_backward_data(grad, y, ctx.dim, y.dtype), None

    @staticmethod
    def jvp(ctx, t, _):
        (y,) = ctx.saved_tensors
        return y * (t - _total(y * t, ctx.dim))


class LogSoftmax(Overload):
    """log_softmax(x) along ``dim``: dx = grad - exp(y) * sum(grad), with y the result."""

    node_name = "LogSoftmaxBackward0"
    args = ("self", "dim")
    saved_fields = ("result",)
    saved_attrs = ("dim",)
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return (namespace_of(grad).ops.aten._log_softmax_backward_data(grad, y, ctx.dim, y.dtype),
                None)

    @staticmethod
    def jvp(ctx, t, _):
        (y,) = ctx.saved_tensors
        return t - _total(y.exp() * t, ctx.dim)


class SoftmaxBackwardData(Overload):
    """softmax's gradient as one op (torch's ``_softmax_backward_data``), f(g, y) = y * g -
    y * sum(y * g) with y softmax's result. Its own gradients: d/dg = f(gg, y),
    d/dy = gg * g - gg * sum(y * g) - g * sum(gg * y)."""

    node_name = "SoftmaxBackwardDataBackward0"
    args = ("grad_output", "output", "dim", "input_dtype")
    saved_fields = ("grad_output", "output")
    saved_attrs = ("dim",)
    tensor_positions = (0, 1)

    @staticmethod
    def backward(ctx, gg):
        grad, y = ctx.saved_tensors
        dim = ctx.dim
        dgrad = dy = None
        if ctx.needs_input_grad[0]:
            dgrad = namespace_of(gg).ops.aten._softmax_backward_data(gg, y, dim, y.dtype)
        if ctx.needs_input_grad[1]:
            dy = gg * grad - gg * _total(y * grad, dim) - grad * _total(gg * y, dim)
        return dgrad, dy, None, None

    @staticmethod
    def jvp(ctx, tg, ty, _, __):
        grad, y = ctx.saved_tensors
        dim = ctx.dim
        result = None
        if tg is not None:
            result = namespace_of(tg).ops.aten._softmax_backward_data(tg, y, dim, y.dtype)
        if ty is not None:
            term = ty * grad - ty * _total(y * grad, dim) - y * _total(ty * grad, dim)
            result = term if result is None else result + term
        return result


class LogSoftmaxBackwardData(Overload):
    """log_softmax's gradient as one op (torch's ``_log_softmax_backward_data``), f(g, y) =
    g - exp(y) * sum(g) with y log_softmax's result. Its own gradients:
    d/dg = gg - sum(gg * exp(y)), d/dy = -gg * exp(y) * sum(g)."""

    node_name = "LogSoftmaxBackwardDataBackward0"
    args = ("grad_output", "output", "dim", "input_dtype")
    saved_fields = ("grad_output", "output")
    saved_attrs = ("dim",)
    tensor_positions = (0, 1)

    @staticmethod
    def backward(ctx, gg):
        grad, y = ctx.saved_tensors
        dgrad = dy = None
        if ctx.needs_input_grad[0]:
            dgrad = gg - _total(gg * y.exp(), ctx.dim)
        if ctx.needs_input_grad[1]:
            dy = -gg * y.exp() * _total(grad, ctx.dim)
        return dgrad, dy, None, None

    @staticmethod
    def jvp(ctx, tg, ty, _, __):
        grad, y = ctx.saved_tensors
        e = y.exp()
        result = None if tg is None else tg - e * _total(tg, ctx.dim)
        if ty is not None:
            term = -e * ty * _total(grad, ctx.dim)
            result = term if result is None else result + term
        return result


def _softmax_backward_data(grad: Tensor, y: Tensor, dim: int, input_dtype) -> Tensor:
    gy = grad._data * y._data
    d = _contiguous(gy - y._data * _sum_along(gy, dim))
    return dispatch(SoftmaxBackwardData, d, (grad, y, dim, input_dtype))


def _log_softmax_backward_data(grad: Tensor, y: Tensor, dim: int, input_dtype) -> Tensor:
    g = grad._data
    d = _contiguous(g - np.exp(y._data) * _sum_along(g, dim))
    return dispatch(LogSoftmaxBackwardData, d, (grad, y, dim, input_dtype))


def _sum_along(d: np.ndarray, dim: int) -> np.ndarray:
    # The backward kernels' sum over the softmax dim (a 0-d tensor is its own sum).
    return np.add.reduce(d, axis=dim, keepdims=True) if d.ndim else d


def _softmax_input(x, dim, dtype, fn: str) -> tuple:
    """The input converted to ``dtype`` (recorded, as torch's ToCopy), its data in C order
    (torch's result is contiguous whatever the input's layout) and the dim as an axis."""
    _check_tensor(x, fn)
    if dtype is not None and dtype._np != x._data.dtype:
        x = x.to(dtype)
    d = np.asarray(x._data, order="C")
    axis = _wrap_dim(dim, d.ndim)
    if d.dtype.kind not in "fV" and d.size:  # ("V": bfloat16)
        last = "lastdim_" if axis == d.ndim - 1 or d.ndim == 0 else ""
        raise _not_implemented(f"{fn}_{last}kernel_impl", d)
    return x, d, axis


def _shifted(d: np.ndarray, axis: int) -> np.ndarray:
    """``d`` minus its maximum along ``axis``, computed at least in float32."""
    if d.dtype == np.float16 or d.dtype.kind == "V":  # (float16 and bfloat16)
        d = d.astype(np.float32)
    with np.errstate(invalid="ignore"):
        # inf - inf is NaN, silently, as in torch.
        return d - d if d.ndim == 0 else d - d.max(axis=axis, keepdims=True)


def _contiguous(d: np.ndarray, dtype: np.dtype | None = None) -> np.ndarray:
    # torch's softmax kernels (and their backward) write a contiguous result whatever the
    # layout of the input.
    return d.astype(d.dtype if dtype is None else dtype, order="C", copy=False)


def _softmax(x: Tensor, dim: int, dtype: _dtype.dtype | None = None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim``; ``dtype`` converts the input first."""
    x, d, axis = _softmax_input(x, dim, dtype, "softmax")
    if d.size == 0:
        return dispatch(Softmax, d.copy(), (x, dim))
    e = np.exp(_shifted(d, axis))
    e /= e.sum(axis=axis, keepdims=True) if e.ndim else e
    return dispatch(Softmax, _contiguous(e, d.dtype), (x, dim))


def _log_softmax(x: Tensor, dim: int, dtype: _dtype.dtype | None = None) -> Tensor:
    """log(softmax(x)) along ``dim``, computed without forming softmax (no log of 0)."""
    x, d, axis = _softmax_input(x, dim, dtype, "log_softmax")
    if d.size == 0:
        return dispatch(LogSoftmax, d.copy(), (x, dim))
    z = _shifted(d, axis)
    z -= np.log(np.exp(z).sum(axis=axis, keepdims=True) if z.ndim else np.exp(z))
    return dispatch(LogSoftmax, _contiguous(z, d.dtype), (x, dim))


softmax = declare("softmax", Softmax, function=_softmax)
log_softmax = declare("log_softmax", LogSoftmax, function=_log_softmax)
softmax_backward_data = declare("_softmax_backward_data", SoftmaxBackwardData,
                                function=_softmax_backward_data, methods=(), functions=())
log_softmax_backward_data = declare("_log_softmax_backward_data", LogSoftmaxBackwardData,
                                    function=_log_softmax_backward_data, methods=(),
                                    functions=())


# ---------------------------------------------------------------------------------- logsumexp
class Logsumexp(Overload):
    """log(sum(exp(x))) over ``dim``: dx = grad * exp(x - result)."""

    node_name = "LogsumexpBackward0"
    args = ("self", "dim", "keepdim")
    saved_fields = ("self", "result")
    saved_attrs = ("dim", "keepdim")
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad):
        x, result = ctx.saved_tensors
        if not ctx.keepdim and x.dim():
            grad = _sum_back(grad, ctx.dim, x.dim())
            result = _sum_back(result, ctx.dim, x.dim())
        return grad * (x - result).exp(), None, None

    @staticmethod
    def jvp(ctx, t, _, __):
        # torch's logsumexp_jvp: sum(e * t) / sum(e) with e = exp(x - amax(x)), so that an
        # empty reduction gives 0 / 0 = nan.
        x, _ = ctx.saved_tensors
        dims = tuple(range(x.dim())) if ctx.dim == () else ctx.dim
        e = (x - x.amax(dims, keepdim=True)).exp() if x.numel() else x.exp()
        return (e * t).sum(dims, keepdim=ctx.keepdim) / e.sum(dims, keepdim=ctx.keepdim)


def _logsumexp(x: Tensor, dim, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) over ``dim`` (an int or a tuple of ints), without overflow."""
    _check_tensor(x, "logsumexp")
    d = x._data
    if d.dtype.kind not in "fV":  # ("V": bfloat16)
        d = d.astype(_dtype.get_default_dtype()._np)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims and d.ndim:
        # torch reduces nothing for dim=() and then fails to write the reduced shape back.
        raise RuntimeError(f"output with shape [] doesn't match the broadcast shape "
                           f"{[1] * d.ndim}")
    axes = tuple(sorted(wrap_dims(dims, d.ndim)))
    return dispatch(Logsumexp, _logsumexp_kernel(d, axes, keepdim), (x, dims, keepdim))


logsumexp = declare("logsumexp", Logsumexp, function=_logsumexp)


def _logsumexp_kernel(d: np.ndarray, axes, keepdim: bool) -> np.ndarray:
    if d.ndim == 0:
        # The log-sum-exp of one element is that element (infinities included).
        return d.copy()
    work = d.astype(np.float32) if d.dtype == np.float16 else d
    if work.size == 0:
        with np.errstate(divide="ignore"):
            out = np.log(np.exp(work).sum(axis=axes, keepdims=keepdim))
        return out.astype(d.dtype, copy=False)
    m = work.max(axis=axes, keepdims=True)
    # An infinite maximum would make x - m NaN; torch shifts by 0 there and keeps the infinity.
    m[np.isinf(m)] = 0
    with np.errstate(divide="ignore"):
        out = np.log(np.exp(work - m).sum(axis=axes, keepdims=True)) + m
    if not keepdim:
        out = out.squeeze(axes)
    return out.astype(d.dtype, copy=False)


# ---------------------------------------------------------------------------------- addmm
class Addmm(Overload):
    """beta * bias + alpha * (mat1 @ mat2): the matrices' gradients are those of mm."""

    node_name = "AddmmBackward0"
    autocast = "lower_precision_fp"  # (torch casts its inputs under CPU autocast)
    args = ("self", "mat1", "mat2", "beta", "alpha")
    saved_fields = ("mat1", "mat2")
    saved_attrs = ("alpha", "beta", "mat1_sym_sizes", "mat1_sym_strides", "mat2_sym_sizes",
                   "mat2_sym_strides")
    ctx_attrs = ("self_sym_sizes",)
    tensor_positions = (0, 1, 2)

    @staticmethod
    def forward(bias, mat1, mat2, beta=1, alpha=1):
        return bias.addmm(mat1, mat2, beta=beta, alpha=alpha)

    @staticmethod
    def setup_context(ctx, inputs, output):
        bias, m1, m2, ctx.beta, ctx.alpha = inputs
        ctx.self_sym_sizes = tuple(bias.shape)
        needs = ctx.needs_input_grad
        # Each matrix is needed only for the other's gradient; a matrix's strides only for its
        # own (torch leaves the unused ones empty): saves that depend on the call.
        ctx.save_for_backward(m1 if needs[2] else None, m2 if needs[1] else None)
        ctx.mat1_sym_sizes = tuple(m1.shape)
        ctx.mat1_sym_strides = tuple(m1.stride()) if needs[1] else ()
        ctx.mat2_sym_sizes = tuple(m2.shape)
        ctx.mat2_sym_strides = tuple(m2.stride()) if needs[2] else ()

    @staticmethod
    def backward(ctx, grad):
        m1, m2 = ctx.saved_tensors
        needs = ctx.needs_input_grad
        alpha = ctx.alpha
        gb = None
        if needs[0]:
            gb = scaled(grad, ctx.beta)
            bias = ctx.self_sym_sizes
            if len(bias) == 1 and grad.shape[0] != 1 and bias[0] == grad.shape[1]:
                # A 1-D bias added to every row: its gradient is the column sums, taken here as
                # torch's sum_to takes them (benchmarks/ops.py: F.linear; the engine's generic
                # reduction of a broadcast gradient cost a third of the backward); the view
                # that gives a graph torch's shape is left out when no graph is built
                gb = gb.sum(0, keepdim=True).view(bias) if namespace_of(grad).is_grad_enabled() \
                    else gb.sum(0)
        g1 = g2 = None
        # A matrix's gradient is made in the matrix's own layout, as torch does: the gradient
        # of a transposed (column-major) weight then reaches the weight row-major, with no
        # transposing copy on the way.
        if needs[1]:
            if column_major(ctx.mat1_sym_sizes, ctx.mat1_sym_strides):
                g1 = scaled(m2.mm(grad.t()).t(), alpha)
            else:
                g1 = scaled(grad.mm(m2.t()), alpha)
        if needs[2]:
            if column_major(ctx.mat2_sym_sizes, ctx.mat2_sym_strides):
                g2 = scaled(grad.t().mm(m1).t(), alpha)
            else:
                g2 = scaled(m1.t().mm(grad), alpha)
        return gb, g1, g2, None, None

    @staticmethod
    def jvp(ctx, tb, t1, t2, _, __):
        m1, m2 = ctx.saved_tensors
        # (the products with a missing tangent count as with zeros, as in torch: nan where the
        # other factor has a nan or inf)
        prod = (m1.new_zeros(m1.shape) if t1 is None else t1).mm(m2) \
            + m1.mm(m2.new_zeros(m2.shape) if t2 is None else t2)
        result = scaled(prod, ctx.alpha)
        if tb is not None:
            result = scaled(tb, ctx.beta) + result
        return result.expand(ctx.mat1_sym_sizes[0], ctx.mat2_sym_sizes[1])


def _check_addmm(bias, mat1, mat2) -> None:
    _check_tensor(bias, "addmm")
    _check_tensor(mat1, "addmm", "mat1", 2)
    _check_tensor(mat2, "addmm", "mat2", 3)
    b, m1, m2 = bias._data, mat1._data, mat2._data
    if m1.dtype != m2.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{FROM_NUMPY[m1.dtype]._short} and {FROM_NUMPY[m2.dtype]._short}")
    if b.dtype != m2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{FROM_NUMPY[b.dtype]._short} and {FROM_NUMPY[m2.dtype]._short}")
    for name, m in (("mat1", m1), ("mat2", m2)):
        if m.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m.ndim}-D tensor")
    if m1.shape[1] != m2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({m1.shape[0]}x"
                           f"{m1.shape[1]} and {m2.shape[0]}x{m2.shape[1]})")
    target = (m1.shape[0], m2.shape[1])
    if b.ndim > 2:
        raise RuntimeError(f"expand(ext.{FROM_NUMPY[b.dtype]._legacy}{{{list(b.shape)}}}, size="
                           f"{list(target)}): the number of sizes provided (2) must be greater "
                           f"or equal to the number of dimensions in the tensor ({b.ndim})")
    for i in range(1, b.ndim + 1):
        if b.shape[-i] != 1 and b.shape[-i] != target[-i]:
            raise RuntimeError(
                f"The expanded size of the tensor ({target[-i]}) must match the existing size "
                f"({b.shape[-i]}) at non-singleton dimension {2 - i}.  Target sizes: "
                f"{list(target)}.  Tensor sizes: {list(b.shape)}")


def _addmm(bias: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """beta * bias + alpha * (mat1 @ mat2), with ``bias`` broadcast to the product's shape."""
    _check_addmm(bias, mat1, mat2)
    if is_half(mat1._data):  # (float16 and bfloat16: in float32, rounded once)
        return in_float32(Addmm, lambda b, m1, m2, be, al: _addmm(b, m1, m2, beta=be, alpha=al),
                          (bias, mat1, mat2, beta, alpha))
    out = mat1._data @ mat2._data
    if out.dtype.kind in "iub":
        # torch converts the scalars to an integer result's type (0.5 becomes 0).
        alpha, beta = int(alpha), int(beta)
    if alpha != 1:
        out *= alpha
    # beta = 0 ignores the bias entirely (NaN in it does not propagate), as in torch.
    if beta == 1:
        out += bias._data
    elif beta != 0:
        out += bias._data * beta
    return dispatch(Addmm, out, (bias, mat1, mat2, beta, alpha))


addmm = declare("addmm", Addmm, function=_addmm, inplace="addmm_")


# ---------------------------------------------------------------------------------- nll_loss
def target_hits(target: Tensor, n_classes: int, ignore_index: int) -> Tensor:
    """A bool tensor, True at each sample's target class (rows of ignored samples all False):
    (N, C) for targets (N,), (C,) for a 0-d target. Not differentiable."""
    t = target._data
    hits = np.arange(n_classes) == t[..., None]
    if 0 <= ignore_index < n_classes:
        # An ignore_index outside the classes matches no column; one inside must be masked.
        hits &= (t != ignore_index)[..., None]
    return wrap(hits)


def _sample_weights(t: np.ndarray, weight: Tensor | None, ignore_index: int, dtype) -> tuple:
    """Each sample's target as a safe index and its class weight (None when every weight is
    1), both 0 for an ignored sample, and the mask of kept samples (None when none is ignored).
    """
    keep = t != ignore_index
    if keep.all():
        return t, (None if weight is None else weight._data[t]), None
    safe = np.where(keep, t, 0)
    w = keep.astype(dtype) if weight is None else np.where(keep, weight._data[safe], 0)
    return safe, w.astype(dtype, copy=False), keep


class NllLoss(Overload):
    """-x[i, target[i]] * weight[target[i]], reduced: dx is that weight, negated, at each
    sample's target (divided by the total weight for the mean). torch's ``nll_loss_forward``,
    whose second output is the summed class weights of the samples that count."""

    node_name = "NllLossBackward0"
    args = ("self", "target", "weight", "reduction", "ignore_index")
    outputs = ("output", "total_weight")
    non_differentiable = ("total_weight",)
    saved_fields = ("self", "target", "weight", "total_weight")
    saved_attrs = ("reduction", "ignore_index")
    tensor_positions = (0,)
    unsigned_attrs = ("ignore_index",)  # (-100 shows as 2**64 - 100)

    @staticmethod
    def backward(ctx, grad, _=None):
        x, target, weight, total_weight = ctx.saved_tensors
        return (namespace_of(grad).ops.aten.nll_loss_backward(
            grad, x, target, weight, ctx.reduction, ctx.ignore_index, total_weight),
            None, None, None, None)

    @staticmethod
    def jvp(ctx, t, *_):
        _, target, weight, _ = ctx.saved_tensors
        return namespace_of(t).ops.aten.nll_loss(t, target, weight, ctx.reduction,
                                                 ctx.ignore_index)


class NllLossBackward(Overload):
    """nll_loss's gradient as one op (torch's ``nll_loss_backward``): minus the weight at each
    sample's target, times grad (over the total weight for the mean). Its gradients: nll_loss
    of gg for grad, zeros for the input (the gradient does not depend on it)."""

    node_name = "NllLossBackwardBackward0"
    args = ("grad_output", "self", "target", "weight", "reduction", "ignore_index",
            "total_weight")
    saved_fields = ("target", "weight")
    saved_attrs = ("reduction", "ignore_index")
    tensor_positions = (0, 1)
    jvp = LINEAR  # nll_loss_backward(grad_output's tangent, ...): flat in self
    unsigned_attrs = ("ignore_index",)

    @staticmethod
    def backward(ctx, gg):
        target, weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        ns = namespace_of(gg)
        dgrad = ns.ops.aten.nll_loss(gg, target, weight, ctx.reduction, ctx.ignore_index) \
            if needs[0] else None
        dx = ns.zeros_like(gg) if needs[1] else None
        return dgrad, dx, None, None, None, None, None


def _nll_loss_backward(grad: Tensor, x: Tensor, target: Tensor, weight, reduction: int,
                       ignore_index: int, total_weight: Tensor) -> Tensor:
    t = target._data
    if x._data.ndim == 1 and t.ndim == 1:
        t = t.reshape(())  # (a 1-D input is one sample: its target may be 0-d or of size 1)
    hits = target_hits(wrap(t), x.shape[-1], ignore_index)._data
    g = grad._data
    value = -g if g.ndim == 0 else -g[:, None]
    if weight is not None:
        value = value * weight._data
    if reduction == 1:
        with np.errstate(divide="ignore", invalid="ignore"):
            value = value / total_weight._data
    if STATE.fw_level is not None and _any_tangent(grad, x, weight, total_weight):
        # Under forward AD torch computes this gradient by its decomposition: the one-hot
        # of the targets (-1 there) times the scaled grad (0 for an ignored sample), so an
        # infinite grad gives nan off the targets.
        with np.errstate(invalid="ignore"):
            d = np.where(hits, -1.0, 0.0) * np.where(hits.any(-1, keepdims=True), -value, 0)
    else:
        # where, not a product with the 0/1 mask: with every sample ignored the mean's total
        # weight is 0 and value is infinite, but the gradient is exactly 0.
        d = np.where(hits, value, 0)
    return dispatch(NllLossBackward, d.astype(g.dtype, copy=False),
                    (grad, x, target, weight, reduction, ignore_index, total_weight))


def _any_tangent(*tensors) -> bool:
    from ...autograd.forward_ad import tangent_of

    return any(t is not None and tangent_of(t) is not None for t in tensors)


def _check_nll(x, target, weight, ignore_index: int) -> None:
    """torch's checks, in torch's order: shapes, then weight, then dtypes."""
    d, t = x._data, target._data
    if d.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {d.ndim})")
    if d.ndim > 2:
        raise NotImplementedError(f"nll_loss: ext supports (C,) and (N, C) inputs, got a "
                                  f"{d.ndim}-D input")
    if d.ndim != 1 and d.shape[0] != (t.shape[0] if t.ndim else 0):
        raise ValueError(f"Expected input batch_size ({d.shape[0]}) to match target batch_size "
                         f"({t.shape[0] if t.ndim else 0}).")
    if weight is not None and STATE.grad_enabled and weight._requires_grad:
        raise RuntimeError("The function 'nll_loss_forward' is not differentiable with respect "
                           "to argument 'weight'. This input cannot have requires_grad True.")
    if t.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if d.ndim == 1 and t.ndim == 1 and t.shape[0] != 1:
        raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: "
                         f"{t.shape[0]}")
    n_classes = d.shape[-1]
    if weight is not None:
        w = weight._data
        if w.ndim != 1 or w.shape[0] != n_classes:
            raise RuntimeError(f"weight tensor should be defined either for all {n_classes} "
                               f"classes or no classes but got weight tensor of shape: "
                               f"{list(w.shape)}")
    if t.dtype != np.int64 and t.dtype != np.uint8:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{FROM_NUMPY[t.dtype]._short}")
    if weight is not None and weight._data.dtype != d.dtype:
        raise RuntimeError(f"expected scalar type {FROM_NUMPY[d.dtype]._short} but found "
                           f"{FROM_NUMPY[weight._data.dtype]._short}")
    if d.dtype.kind not in "fV":  # ("V": bfloat16)
        raise _not_implemented("nll_loss_out_frame", d)
    if t.size:
        bad = (t < 0) | (t >= n_classes)
        if bad.any():
            bad &= t != ignore_index
            if bad.any():
                raise IndexError(f"Target {t[bad].flat[0]} is out of bounds.")


def _nll_loss_forward(x: Tensor, target: Tensor, weight: Tensor | None = None,
                      reduction=1, ignore_index: int = -100) -> tuple:
    """The negative log likelihood of the ``target`` classes under log-probabilities ``x``
    ((N, C) with targets (N,), or (C,) with a 0-d target), and the summed class weights of the
    samples that count (0 for an unreduced batch). ``reduction``: torch's enum, or its name."""
    _check_tensor(x, "nll_loss_nd")
    _check_tensor(target, "nll_loss_nd", "target", 2)
    mode = reduction if type(reduction) is int else _reduction_enum(reduction)
    _check_nll(x, target, weight, ignore_index)
    d = x._data
    t = target._data
    if d.ndim == 1:
        t = t.reshape(())
    safe, w, keep = _sample_weights(t, weight, ignore_index, d.dtype)
    picked = d[safe] if d.ndim == 1 else d[np.arange(d.shape[0]), safe]
    picked = picked if w is None else picked * w
    # torch negates each sample's loss of an (N, C) input; a (C,) input's loss it accumulates
    # from 0 whatever the reduction, which makes a zero loss +0, never -0.
    losses = -picked if d.ndim == 2 else 0 - picked
    if keep is not None:
        # An ignored sample's loss is exactly 0 (not the -0.0 that -x * 0 can give).
        losses = np.where(keep, losses, 0).astype(d.dtype, copy=False)
    total = t.size if w is None else w.sum()
    if mode == 0:
        out = losses
        if d.ndim == 2:
            total = 0
    elif mode == 2:
        out = losses.sum()
    elif total:
        out = losses.sum() / total
    else:
        # Nothing counts (every sample ignored, or weighted 0): the mean is NaN.
        with np.errstate(invalid="ignore", divide="ignore"):
            out = losses.sum() / total
    return dispatch(NllLoss, (out.astype(d.dtype, copy=False), np.asarray(total, d.dtype)),
                    (x, target, weight, mode, ignore_index))


def _nll_loss(x: Tensor, target: Tensor, weight: Tensor | None = None, reduction=1,
              ignore_index: int = -100) -> Tensor:
    """nll_loss_forward's loss."""
    return _nll_loss_forward(x, target, weight, reduction, ignore_index)[0]


def _reduction_enum(reduction: str) -> int:
    mode = REDUCTIONS.get(reduction)
    if mode is None:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return mode


nll_loss_forward = declare("nll_loss_forward", NllLoss, function=_nll_loss_forward,
                           methods=(), functions=())
nll_loss = declare("nll_loss", function=_nll_loss, methods=(), functions=())
nll_loss_backward = declare("nll_loss_backward", NllLossBackward, function=_nll_loss_backward,
                            methods=(), functions=())


# ---------------------------------------------------------------------------------- mse_loss
class MseLoss(Overload):
    """(x - target)², reduced: dx = 2 (x - target) grad (over numel for the mean), and
    dtarget = -dx."""

    node_name = "MseLossBackward0"
    args = ("self", "target", "reduction")
    saved_fields = ("self", "target")
    saved_attrs = ("reduction",)
    tensor_positions = (0, 1)

    @staticmethod
    def backward(ctx, grad):
        x, target = ctx.saved_tensors
        needs = ctx.needs_input_grad
        backward = namespace_of(grad).ops.aten.mse_loss_backward
        # torch: each side's gradient is mse_loss_backward with the two operands in its order
        return (backward(grad, x, target, ctx.reduction) if needs[0] else None,
                backward(grad, target, x, ctx.reduction) if needs[1] else None, None)

    @staticmethod
    def jvp(ctx, tx, tt, _):
        x, target = ctx.saved_tensors
        diff = x - target
        for v in (x, target):
            if not v.is_floating_point():
                # torch computes each side's term of the tangent into a tensor of that side's
                # dtype
                raise RuntimeError(f"result type {diff.dtype._short} can't be cast to the "
                                   f"desired output type {v.dtype._short}")
        # One term per side, as torch's, a missing tangent being zeros (inf * 0 is nan there):
        # (x - y) * 2 * tx + (y - x) * 2 * ty
        ns = namespace_of(diff)
        terms = (diff * 2 * (ns.zeros_like(x) if tx is None else tx)
                 + (target - x) * 2 * (ns.zeros_like(target) if tt is None else tt))
        return terms.mean() if ctx.reduction == 1 else terms.sum() if ctx.reduction == 2 \
            else terms


class MseLossBackward(Overload):
    """mse_loss's gradient as one op (torch's ``mse_loss_backward``), f(g, x, t) = 2 (x - t) g
    (over numel for the mean). Its own gradients: d/dg = f(gg, x, t) (its sum with ones for g
    when reduced), d/dx = 2 gg g (over numel for the mean), d/dt = -d/dx."""

    node_name = "MseLossBackwardBackward0"
    args = ("grad_output", "self", "target", "reduction")
    saved_fields = ("grad_output", "self", "target")
    saved_attrs = ("reduction",)
    tensor_positions = (0, 1, 2)

    @staticmethod
    def backward(ctx, gg):
        grad, x, target = ctx.saved_tensors
        needs = ctx.needs_input_grad
        ns = namespace_of(gg)
        dgrad = dx = dt = None
        if needs[0]:
            if ctx.reduction == 0:
                dgrad = ns.ops.aten.mse_loss_backward(gg, x, target, 0)
            else:
                ones = ns.ones_like(grad)
                dgrad = (ns.ops.aten.mse_loss_backward(ones, x, target, ctx.reduction)
                         * gg).sum()
        if needs[1] or needs[2]:
            gi = 2 * (gg * grad)
            if ctx.reduction == 1:
                gi = gi / x.numel()
            dx = gi if needs[1] else None
            dt = -gi if needs[2] else None
        return dgrad, dx, dt, None

    @staticmethod
    def jvp(ctx, tg, tx, tt, _):
        grad, x, target = ctx.saved_tensors
        n = x.numel()
        scale = 2 / n if ctx.reduction == 1 and n else 2
        # torch's rule takes the gradient's part from zeros when it has no tangent: nan
        # where x - target is nan or infinite
        result = namespace_of(grad).ops.aten.mse_loss_backward(
            grad.new_zeros(grad.shape) if tg is None else tg, x, target, ctx.reduction)
        if tx is not None:
            result = result + tx * grad * scale
        if tt is not None:
            result = result + tt * grad * -scale
        return result


def _mse_loss_backward(grad: Tensor, x: Tensor, target: Tensor, reduction: int) -> Tensor:
    # The mean of an empty input has an empty gradient: any scale does.
    n = x._data.size
    scale = 2 / n if reduction == 1 and n else 2
    g = grad._data
    # (a bool or integer operand takes part in the loss's floating dtype)
    d = (x._data.astype(g.dtype) - target._data.astype(g.dtype)) * (g * g.dtype.type(scale))
    return dispatch(MseLossBackward, np.asarray(d, g.dtype), (grad, x, target, reduction))


def _mse_loss(x: Tensor, target: Tensor, reduction=1) -> Tensor:
    """The squared differences of same-shaped ``x`` and ``target``, reduced (``reduction``:
    torch's enum, or its name)."""
    _check_tensor(x, "mse_loss")
    _check_tensor(target, "mse_loss", "target", 2)
    mode = reduction if type(reduction) is int else _reduction_enum(reduction)
    a, b = binary_operands(x, target)
    if a.dtype.kind not in "fV":  # ("V": bfloat16)
        raise _not_implemented("mse_cpu", a)
    if a.shape != b.shape:
        raise RuntimeError(f"mse_loss expects same-shaped input and target (broadcast them "
                           f"first), got {list(a.shape)} and {list(b.shape)}")
    diff = a - b
    diff *= diff
    if mode == 1 and not diff.size:
        # The mean of nothing is nan, without NumPy's warning.
        return dispatch(MseLoss, np.array(np.nan, diff.dtype), (x, target, mode))
    return dispatch(MseLoss, diff if mode == 0 else diff.sum() if mode == 2 else diff.mean(),
                    (x, target, mode))


mse_loss = declare("mse_loss", MseLoss, function=_mse_loss, methods=(), functions=())
mse_loss_backward = declare("mse_loss_backward", MseLossBackward, function=_mse_loss_backward,
                            methods=(), functions=())
