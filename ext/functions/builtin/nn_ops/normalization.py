"""layer_norm: torch's ``native_layer_norm`` and its node, which saves the per-row mean and
reciprocal standard deviation (``result1``, ``result2``); and ``native_batch_norm``, the same
per channel (or with the running statistics, in evaluation), and ``native_group_norm``, per
group of channels of each sample."""

from __future__ import annotations

import math

import numpy as np

from ...._tensor import Tensor
from ..._op import Overload, declare, dispatch, is_half
from .._builtin import namespace_of
from ..reduction import np_mean
from ._common import check_tensor, float_kernel

__all__ = ["layer_norm", "native_layer_norm", "native_layer_norm_backward", "native_batch_norm",
           "native_group_norm"]


def _norm_dims(ndim: int, normalized_shape: tuple) -> tuple:
    return tuple(range(ndim - len(normalized_shape), ndim))


def _normalized(x, dims: tuple, eps):
    """xhat = (x - mean) * rstd over ``dims``, and rstd, in tensor ops: the statistics
    recomputed from x, so that the tangents of x reach them."""
    centered = x - x.mean(dims, keepdim=True)
    rstd = ((centered * centered).mean(dims, keepdim=True) + eps).rsqrt()
    return centered * rstd, rstd


def _eps_of(x, rstd, dims: tuple):
    """What, added to the variance of ``x`` over ``dims``, gives ``rstd`` (eps, up to
    rounding), as torch's decomposition reads it back."""
    centered = x - x.mean(dims, keepdim=True)
    return (1 / rstd).pow(2) - (centered * centered).mean(dims, keepdim=True)


def _sum_to_param(t, batch: tuple):
    # A parameter's gradient sums over the leading (batch) dims; with none there is no sum.
    return t.sum(batch) if batch else t


class NativeLayerNorm(Overload):
    """(x - mean) * rstd * weight + bias over the trailing ``normalized_shape`` dims; torch's
    ``native_layer_norm``, whose other outputs are the per-row mean and rstd.

    With xhat the normalized input, g = grad * weight and means over the normalized dims:
    dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), dweight = sum(grad * xhat) and
    dbias = sum(grad) over the leading dims, all from ``native_layer_norm_backward``.
    """

    node_name = "NativeLayerNormBackward0"
    args = ("input", "normalized_shape", "weight", "bias", "eps")
    outputs = ("result0", "result1", "result2")
    non_differentiable = ("result1", "result2")
    saved_fields = ("input", "result1", "result2", "weight", "bias")
    saved_attrs = ("normalized_shape",)
    tensor_positions = (0, 2, 3)

    @staticmethod
    def backward(ctx, grad, *_):
        x, mean, rstd, weight, bias = ctx.saved_tensors
        needs = ctx.needs_input_grad
        # (the three gradients from one differentiable op, as torch's: with create_graph each
        # requires grad when any of its inputs does)
        gx, gw, gb = namespace_of(grad).ops.aten.native_layer_norm_backward(
            grad, x, ctx.normalized_shape, mean, rstd, weight, bias,
            [needs[0], needs[2], needs[3]])
        return gx, None, gw, gb, None

    @staticmethod
    def jvp(ctx, tx, _, tw, tb, __):
        x, mean, rstd, weight, _ = ctx.saved_tensors
        dims = _norm_dims(x.dim(), ctx.normalized_shape)
        xhat = (x - mean) * rstd
        if tx is None:
            # As torch's: the input's part is computed from zeros, so an infinite or nan
            # input row, or weight, still makes nan
            tx = x.new_zeros(x.shape)
        dxhat = (tx - tx.mean(dims, keepdim=True)
                 - xhat * (xhat * tx).mean(dims, keepdim=True)) * rstd
        result = dxhat if weight is None else dxhat * weight
        for term in (None if tw is None else xhat * tw, tb):
            if term is not None:
                result = result + term
        return result


def _plus(*terms):
    """The sum of the terms that are given (None for an absent term; None when all are)."""
    total = None
    for t in terms:
        if t is not None:
            total = t if total is None else total + t
    return total


def _layer_norm_double_backward(x_in, weight, ggx, ggw, ggb, grad_in, mean_in, rstd_in,
                                normalized_shape: tuple, needs: tuple) -> tuple:
    """torch's ``layer_norm_double_backward``, in tensor ops: the derivatives of layer_norm's
    input gradient (and of its weight and bias gradients) with respect to the input, the
    weight and the incoming gradient, for the outputs' gradients ``ggx``, ``ggw``, ``ggb``
    (None where absent). It differentiates the first backward's formula as if ``mean`` and
    ``rstd`` were the input's statistics (the variance's derivative taken as 2 (x - mean) / N),
    and treats the given ``mean`` and ``rstd`` as constants: what it builds with create_graph
    does not reach them. ``needs``: whether the gradients of (grad, x, weight) are wanted."""
    if weight is None and ggb is not None and ggx is not None:
        # torch's formula shapes the bias's gradient only beside a weight: without one, that
        # term is missing, which alone gives no gradient and beside the input's term fails
        raise RuntimeError("Expected a proper Tensor but got None (or an undefined Tensor in "
                           "C++) for argument #1 'other'")
    axis = x_in.dim() - len(normalized_shape)
    m = math.prod(x_in.shape[:axis])
    n = math.prod(x_in.shape[axis:])
    x = x_in.reshape(m, n)
    grad = grad_in.reshape(m, n)
    xmu = x - mean_in.reshape(m, 1)
    rstd = rstd_in.reshape(m, 1)
    rstd2 = rstd.pow(2)
    rstd3 = rstd.pow(3)
    gamma = None if weight is None else weight.reshape(1, n)
    if ggx is not None:
        ggx = ggx.reshape(m, n)
    if gamma is None or ggw is None:
        ggw = None
    else:
        ggw = ggw.reshape(1, n)
    xmu_rstd3 = xmu * rstd3

    dx = None
    if needs[1] and ggx is not None:
        gxhat = grad if gamma is None else grad * gamma
        gxhat_mu_sum = (gxhat * xmu).sum(1, True)
        gxhat_sum = gxhat.sum(1, True)
        ggx_sum = ggx.sum(1, True)
        ggx_mu_sum = (ggx * xmu).sum(1, True)
        # (3 / N as a number: an empty row of a float division by zero)
        all_sub = (ggx_sum * gxhat_sum / n - (ggx * gxhat).sum(1, True)
                   + rstd2 * gxhat_mu_sum * ggx_mu_sum * (3.0 / n if n else math.inf))
        dx = (xmu_rstd3 * all_sub / n
              + ggx_mu_sum * rstd3 / n * (gxhat_sum / n - gxhat)
              + gxhat_mu_sum * rstd3 / n * (ggx_sum / n - ggx))
    if needs[1] and ggw is not None:
        g_ggw = grad * ggw
        dx = _plus(dx, g_ggw * rstd + rstd * g_ggw.sum(1, True) / -n
                   + xmu_rstd3 * (g_ggw * xmu).sum(1, True) / -n)

    def first_backward(g, scale):
        # the first backward's input gradient for g (``scale``: the weight, or None for 1)
        h0 = (rstd if scale is None else scale * rstd) / n
        return h0 * (n * g - g.sum(1, True) - xmu * rstd2 * (g * xmu).sum(1, True))

    dw = None
    if needs[2] and gamma is not None and ggx is not None:
        dw = (grad * first_backward(ggx, None)).sum(0).reshape_as(weight)
    dgrad = None
    if needs[0]:
        dgrad = _plus(None if ggx is None else first_backward(ggx, gamma),
                      None if ggw is None else ggw * xmu * rstd)
        if ggb is not None and gamma is not None:
            dgrad = _plus(dgrad, ggb.reshape(1, n))
        if dgrad is not None:
            dgrad = dgrad.expand(m, n).reshape_as(x_in)
    return dgrad, None if dx is None else dx.reshape_as(x_in), dw


def _layer_norm_backward_tangents(grad, x, rstd, weight, bias, output_mask, dims: tuple,
                                  tg, tx, tw) -> tuple:
    """torch's forward-mode rule for ``native_layer_norm_backward`` (a decomposition): the
    statistics recomputed from x, the mean as x's own and rstd with the eps that the given rstd
    implies (constant), and the first backward's formula differentiated through them. An
    output whose formula meets no tangent gets none."""
    batch = tuple(range(dims[0]))
    n = math.prod(x.shape[d] for d in dims)
    ns = namespace_of(x)
    with ns.no_grad():
        eps = _eps_of(x, rstd, dims)
    xhat, r = _normalized(x, dims, eps)
    dr = dxhat = None
    if tx is not None:
        centered = x - x.mean(dims, keepdim=True)
        # (var_mean's tangent, then rsqrt's)
        dr = -0.5 * r.pow(3) * ((centered * tx).sum(dims, keepdim=True) * (2.0 / n))
        dxhat = (tx - tx.mean(dims, keepdim=True)) * r + centered * dr
    gxh = grad if weight is None else grad * weight
    dgxh = _plus(None if tg is None else tg if weight is None else tg * weight,
                 None if tw is None or weight is None else grad * tw)
    tgx = tgw = tgb = None
    if output_mask[0] and (dgxh is not None or dxhat is not None):
        inner = n * gxh - gxh.sum(dims, keepdim=True) \
            - xhat * (gxh * xhat).sum(dims, keepdim=True)
        dinner = _plus(
            None if dgxh is None else n * dgxh - dgxh.sum(dims, keepdim=True),
            None if dxhat is None else -dxhat * (gxh * xhat).sum(dims, keepdim=True),
            -xhat * _plus(None if dgxh is None else dgxh * xhat,
                          None if dxhat is None else gxh * dxhat).sum(dims, keepdim=True))
        tgx = _plus(None if dr is None else dr / n * inner, r / n * dinner)
    if output_mask[1] and weight is not None and (tg is not None or dxhat is not None):
        tgw = _sum_to_param(_plus(None if tg is None else tg * xhat,
                                  None if dxhat is None else grad * dxhat), batch)
    if output_mask[2] and bias is not None and tg is not None:
        tgb = _sum_to_param(tg, batch)
    return tgx, tgw, tgb


class NativeLayerNormBackward(Overload):
    """layer_norm's backward as one op (torch's ``native_layer_norm_backward``): (grad, x,
    weight) to the gradients of x, weight and bias, at the given statistics. Its own backward
    is torch's ``layer_norm_double_backward``, its forward-mode rule torch's decomposition.

    As torch's, its six edges are (grad, x, mean, rstd, weight, bias): the statistics are not
    differentiable and bias, which the gradients do not depend on, gets no gradient, yet a bias
    that requires grad makes the three gradients require grad."""

    node_name = "NativeLayerNormBackwardBackward0"
    args = ("grad_out", "input", "normalized_shape", "mean", "rstd", "weight", "bias",
            "output_mask")
    outputs = ("result0", "result1", "result2")
    saved_fields = ("grad_out", "input", "mean", "rstd", "weight")
    saved_attrs = ("normalized_shape",)
    forward_attrs = ("bias", "output_mask")
    tensor_positions = (0, 1, 3, 4, 5, 6)

    @staticmethod
    def backward(ctx, ggx, ggw=None, ggb=None):
        grad, x, mean, rstd, weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        dgrad, dx, dw = _layer_norm_double_backward(
            x, weight, ggx, ggw, ggb, grad, mean, rstd, ctx.normalized_shape,
            (needs[0], needs[1], needs[5]))
        return dgrad, dx, None, None, None, dw, None, None

    @staticmethod
    def jvp(ctx, tg, tx, _, __, ___, tw, *____):
        grad, x, _, rstd, weight = ctx.saved_tensors
        if x.numel() == 0:
            # torch's rule gives plain zeros when there are no rows or no normalized
            # elements: no tangents
            return None, None, None
        return _layer_norm_backward_tangents(
            grad, x, rstd, weight, ctx.bias, ctx.output_mask,
            _norm_dims(x.dim(), ctx.normalized_shape), tg, tx, tw)


def _native_layer_norm_backward(grad_out: Tensor, input: Tensor, normalized_shape,  # noqa: A002
                                mean: Tensor, rstd: Tensor, weight, bias,
                                output_mask) -> tuple:
    """The gradients of x, weight and bias of layer_norm for ``grad_out`` (None where
    ``output_mask`` does not ask for one)."""
    normalized_shape = tuple(normalized_shape)
    output_mask = tuple(output_mask)
    if (output_mask[1] and weight is None) or (output_mask[2] and bias is None):
        # (torch's kernel makes the asked gradient like the missing parameter)
        raise RuntimeError("tensor does not have a device")
    dims = _norm_dims(input._data.ndim, normalized_shape)
    batch = tuple(range(dims[0]))
    gx, _, gw, gb, _ = _layer_norm_backward_kernel(
        grad_out._data, input._data, mean._data, rstd._data, weight, dims, batch,
        (output_mask[0], None, output_mask[1] and weight is not None, output_mask[2]))
    return dispatch(NativeLayerNormBackward, (gx, gw, gb),
                    (grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask))


def _layer_norm_backward_kernel(g, x, mean, rstd, weight, dims, batch, needs) -> tuple:
    xhat = (x - mean) * rstd
    gx = gw = gb = None
    if needs[0]:
        gs = g if weight is None else g * weight._data
        # torch's kernel: dx = rstd * gs + b * x + c with b and c per row, from the sums of
        # gs * x and gs (so an inf or nan in a row reaches its gradients as in torch)
        ds = np.add.reduce(gs * x, axis=dims, keepdims=True)
        db = np.add.reduce(gs, axis=dims, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            s = 1 / np.prod([x.shape[d] for d in dims], dtype=x.dtype)
            b = (db * mean - ds) * rstd * rstd * rstd * s
            c = -b * mean - db * rstd * s
            # (in torch's order: rstd * grad first, then weight, so float32 rounds as torch's)
            gx = (rstd * g if weight is None else rstd * g * weight._data) + b * x + c
    if needs[2]:
        if x.dtype == np.float32:
            # torch's kernel normalizes by one fused multiply-add, x * rstd - mean * rstd,
            # rounded once (exact in float64 but for the last rounding)
            xhat = (x.astype(np.float64) * rstd - (mean * rstd).astype(np.float64)).astype(
                np.float32)
        gw = np.asarray((g * xhat).sum(axis=batch))
    if needs[3]:
        gb = np.asarray(g.sum(axis=batch))
    return gx, None, gw, gb, None


def _check_layer_norm(x, normalized_shape, weight, bias) -> tuple:
    """torch's checks, in torch's order; returns the normalized shape as a tuple of ints."""
    check_tensor(x, "layer_norm")
    if isinstance(normalized_shape, int) or not all(isinstance(s, int)
                                                    for s in normalized_shape):
        raise TypeError(f"layer_norm(): argument 'normalized_shape' (position 2) must be tuple "
                        f"of ints, not {type(normalized_shape).__name__}")
    shape = tuple(normalized_shape)
    d = x._data
    for p in (weight, bias):
        if p is not None and p._data.dtype != d.dtype:
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and p._data.shape != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but "
                               f"got {name} of shape {list(p._data.shape)} and "
                               f"normalized_shape = {list(shape)}")
    if d.ndim < len(shape) or d.shape[d.ndim - len(shape):] != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(str(s) for s in shape)}], but got input of size"
                           f"{list(d.shape)}")
    float_kernel(d, "LayerNormKernelImpl")
    return shape


def _native_layer_norm(input: Tensor, normalized_shape, weight: Tensor | None,  # noqa: A002
                       bias: Tensor | None, eps: float) -> tuple:
    """layer_norm's result, and the per-row mean and reciprocal standard deviation."""
    shape = _check_layer_norm(input, normalized_shape, weight, bias)
    d = np.asarray(input._data, order="C")  # torch's result is contiguous whatever the layout
    low = d.dtype if is_half(d) else None  # (float16, bfloat16: in float32, rounded at the end)
    if low is not None:
        d = d.astype(np.float32)
    dims = _norm_dims(d.ndim, shape)
    mean = np_mean(d, dims, True)
    centered = d - mean
    rstd = 1 / np.sqrt(np_mean(centered * centered, dims, True) + eps)
    out = centered * rstd
    if weight is not None:
        out *= weight._data
    # torch's kernel adds a bias of 0 when none is given, which turns a -0 result into +0
    out += 0 if bias is None else bias._data
    if low is not None:
        out, mean, rstd = out.astype(low), mean.astype(low), rstd.astype(low)
    return dispatch(NativeLayerNorm, (out, mean, rstd), (input, shape, weight, bias, eps))


def _layer_norm(x: Tensor, normalized_shape, weight: Tensor | None = None,
                bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize the trailing ``normalized_shape`` dims of ``x`` to mean 0 and variance 1, then
    scale by ``weight`` and shift by ``bias`` (elementwise, when given)."""
    return _native_layer_norm(x, normalized_shape, weight, bias, eps)[0]


native_layer_norm = declare("native_layer_norm", NativeLayerNorm, function=_native_layer_norm,
                            methods=())
layer_norm = declare("layer_norm", function=_layer_norm, methods=())
native_layer_norm_backward = declare("native_layer_norm_backward", NativeLayerNormBackward,
                                     function=_native_layer_norm_backward, methods=(),
                                     functions=())


# ---------------------------------------------------------------------------------- batch norm
def _channel_dims(ndim: int) -> tuple:
    """The dims a channel's statistics are over (all but dim 1), and the shape that broadcasts
    a per-channel vector against the input."""
    return (0, *range(2, ndim)), (1, -1) + (1,) * (ndim - 2)


class NativeBatchNorm(Overload):
    """(x - mean) * invstd * weight + bias per channel (dim 1), over the batch's statistics
    when ``training`` (returned as ``result1``, ``result2``) or the running ones.

    Backward recomputes the batch statistics from the input, so that double backward
    differentiates them too: dx = invstd * (g - mean(g) - xhat * mean(g * xhat)) with
    g = grad * weight (in evaluation, invstd * g), dweight = sum(grad * xhat), dbias =
    sum(grad), the sums over every dim but the channel's.
    """

    node_name = "NativeBatchNormBackward0"
    args = ("input", "weight", "bias", "running_mean", "running_var", "training", "momentum",
            "eps")
    outputs = ("result0", "result1", "result2")
    non_differentiable = ("result1", "result2")
    saved_fields = ("input", "weight", "running_mean", "running_var", "result1", "result2")
    saved_attrs = ("training", "eps")
    tensor_positions = (0, 1, 2, 3, 4)

    @staticmethod
    def _normalized(ctx, x, rm, rv):
        dims, shape = _channel_dims(x.dim())
        if ctx.training:
            centered = x - x.mean(dims, keepdim=True)
            var = (centered * centered).mean(dims, keepdim=True)
            invstd = (var + ctx.eps).rsqrt()
        else:
            centered = x - rm.reshape(shape)
            invstd = (rv + ctx.eps).rsqrt().reshape(shape)
        return centered * invstd, invstd, dims, shape

    @staticmethod
    def backward(ctx, grad, *_):
        x, w, rm, rv, _, _ = ctx.saved_tensors
        needs = ctx.needs_input_grad
        xhat, invstd, dims, shape = NativeBatchNorm._normalized(ctx, x, rm, rv)
        gx = gw = gb = None
        if needs[0]:
            g = grad if w is None else grad * w.reshape(shape)
            if ctx.training:
                g = g - g.mean(dims, keepdim=True) - xhat * (g * xhat).mean(dims, keepdim=True)
            gx = g * invstd
        if needs[1]:
            gw = (grad * xhat).sum(dims)
        if needs[2]:
            gb = grad.sum(dims)
        return gx, gw, gb, None, None, None, None, None

    @staticmethod
    def jvp(ctx, tx, tw, tb, *_):
        x, w, rm, rv, _, _ = ctx.saved_tensors
        xhat, invstd, dims, shape = NativeBatchNorm._normalized(ctx, x, rm, rv)
        if tx is None:
            tx = x.new_zeros(x.shape)
        if ctx.training:
            tx = tx - tx.mean(dims, keepdim=True) - xhat * (xhat * tx).mean(dims, keepdim=True)
        result = tx * invstd
        if w is not None:
            result = result * w.reshape(shape)
        if tw is not None:
            result = result + xhat * tw.reshape(shape)
        if tb is not None:
            result = result + tb.reshape(shape)
        return result


def _native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,  # noqa: A002
                       running_mean: Tensor | None, running_var: Tensor | None, training: bool,
                       momentum: float, eps: float) -> tuple:
    """batch_norm's result, and the batch's per-channel mean and 1 / std (empty when not
    ``training``); in training the running statistics, when given, move toward the batch's by
    ``momentum`` (the variance unbiased)."""
    check_tensor(input, "native_batch_norm")
    d = input._data
    if d.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{max(d.ndim, 1)}"
                         f", {max(d.ndim, 1) - 1}], but got 1)")
    float_kernel(d, "batch_norm")
    dims, shape = _channel_dims(d.ndim)
    if training:
        mean = d.mean(axis=dims)
        centered = d - mean.reshape(shape)
        var = (centered * centered).mean(axis=dims)
        invstd = (1 / np.sqrt(var + eps)).astype(d.dtype)
        out = centered * invstd.reshape(shape)
        n = d.size // d.shape[1]
        for stat, new in ((running_mean, mean), (running_var, var * n / max(n - 1, 1))):
            if stat is not None:
                stat._data[...] = (1 - momentum) * stat._data + momentum * new
        saved = (mean.astype(d.dtype), invstd)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("native_batch_norm: running_mean and running_var must be defined "
                               "in evaluation mode")
        inv = 1 / np.sqrt(running_var._data + eps)
        out = (d - running_mean._data.reshape(shape)) * inv.reshape(shape)
        saved = (np.empty(0, d.dtype), np.empty(0, d.dtype))
    if weight is not None:
        out = out * weight._data.reshape(shape)
    if bias is not None:
        out = out + bias._data.reshape(shape)
    return dispatch(NativeBatchNorm, (out.astype(d.dtype, copy=False), *saved),
                    (input, weight, bias, running_mean, running_var, training, momentum, eps))


native_batch_norm = declare("native_batch_norm", NativeBatchNorm, function=_native_batch_norm,
                            methods=())


# ---------------------------------------------------------------------------------- group norm
class NativeGroupNorm(Overload):
    """(x - mean) * rstd per sample and group of channels, then weight and bias per channel;
    the per-(sample, group) mean and rstd are ``result1``, ``result2``, differentiable too (as
    in torch, their gradients count only along with the result's: alone, they reach nothing).

    Backward recomputes the statistics from the input (so that double backward differentiates
    them): per group of M elements, dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g =
    grad * weight, plus gmean / M and -grstd * rstd^2 * xhat / M from the statistics' own
    gradients; dweight = sum(grad * xhat) and dbias = sum(grad) over all dims but the channel's.
    """

    node_name = "NativeGroupNormBackward0"
    args = ("input", "weight", "bias", "N", "C", "HxW", "group", "eps")
    outputs = ("result0", "result1", "result2")
    saved_fields = ("input", "weight", "result1", "result2")
    saved_attrs = ("N", "C", "HxW", "group", "eps")
    tensor_positions = (0, 1, 2)

    @staticmethod
    def _normalized(ctx, x):
        grouped = x.reshape(ctx.N, ctx.group, ctx.C // ctx.group * ctx.HxW)
        centered = grouped - grouped.mean(-1, keepdim=True)
        rstd = ((centered * centered).mean(-1, keepdim=True) + ctx.eps).rsqrt()
        return centered * rstd, rstd, _channel_dims(x.dim())

    @staticmethod
    def _through_groups(ctx, t, xhat, rstd):
        # (the normalization's derivative, per group: t - mean(t) - xhat * mean(xhat * t))
        t = t.reshape(xhat.shape)
        return (t - t.mean(-1, keepdim=True) - xhat * (xhat * t).mean(-1, keepdim=True)) * rstd

    @staticmethod
    def backward(ctx, grad, gmean=None, grstd=None):
        if grad is None:  # (only the statistics' gradients, which torch drops then)
            return (None,) * 8
        x, w = ctx.saved_tensors[:2]
        needs = ctx.needs_input_grad
        xhat, rstd, (dims, shape) = NativeGroupNorm._normalized(ctx, x)
        gx = gw = gb = None
        if needs[0]:
            g = grad if w is None else grad * w.reshape(shape)
            gx = NativeGroupNorm._through_groups(ctx, g, xhat, rstd)
            m = xhat.shape[-1]
            if gmean is not None:
                gx = gx + gmean.unsqueeze(-1) / m
            if grstd is not None:
                gx = gx - grstd.unsqueeze(-1) * rstd * rstd * xhat / m
            gx = gx.reshape(x.shape)
        if needs[1]:
            gw = (grad * xhat.reshape(x.shape)).sum(dims)
        if needs[2]:
            gb = grad.sum(dims)
        return gx, gw, gb, None, None, None, None, None

    @staticmethod
    def jvp(ctx, tx, tw, tb, *_):
        x, w = ctx.saved_tensors[:2]
        xhat, rstd, (dims, shape) = NativeGroupNorm._normalized(ctx, x)
        if tx is None:
            tx = x.new_zeros(x.shape)
        result = NativeGroupNorm._through_groups(ctx, tx, xhat, rstd).reshape(x.shape)
        if w is not None:
            result = result * w.reshape(shape)
        if tw is not None:
            result = result + xhat.reshape(x.shape) * tw.reshape(shape)
        if tb is not None:
            result = result + tb.reshape(shape)
        grouped = tx.reshape(xhat.shape)
        t_mean = grouped.mean(-1)
        t_rstd = -(rstd * rstd).squeeze(-1) * (xhat * grouped).mean(-1)
        return result, t_mean, t_rstd


def _native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,  # noqa: A002
                       N: int, C: int, HxW: int, group: int, eps: float) -> tuple:  # noqa: N803
    """group_norm's result, and the per-(sample, group) mean and 1 / std."""
    check_tensor(input, "native_group_norm")
    d = input._data
    float_kernel(d, "GroupNormKernelImpl")
    if d.size != N * C * HxW or d.ndim < 2 or d.shape[0] != N or d.shape[1] != C:
        raise RuntimeError(f"Expected input of N * C * HxW = {N * C * HxW} elements with N = {N} "
                           f"and C = {C}, but got input of size {list(d.shape)}")
    if group <= 0 or C % group:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(d.shape)} and num_groups={group}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and p._data.shape != (C,):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape "
                               f"{list(p._data.shape)} and input of shape {list(d.shape)}")
    grouped = d.reshape(N, group, C // group * HxW)
    with np.errstate(invalid="ignore", divide="ignore"):  # (an empty group: nan, as torch's)
        mean = np_mean(grouped, (2,), True)
        centered = grouped - mean
        rstd = 1 / np.sqrt(np_mean(centered * centered, (2,), True) + eps)
    out = (centered * rstd).reshape(d.shape)
    _, shape = _channel_dims(d.ndim)
    if weight is not None:
        out = out * weight._data.reshape(shape)
    if bias is not None:
        out = out + bias._data.reshape(shape)
    stats = (mean.reshape(N, group).astype(d.dtype), rstd.reshape(N, group).astype(d.dtype))
    return dispatch(NativeGroupNorm, (out.astype(d.dtype, copy=False), *stats),
                    (input, weight, bias, N, C, HxW, group, eps))


native_group_norm = declare("native_group_norm", NativeGroupNorm, function=_native_group_norm,
                            methods=())
