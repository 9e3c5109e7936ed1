"""layer_norm: torch's ``native_layer_norm`` and its node, which saves the per-row mean and
reciprocal standard deviation (``result1``, ``result2``)."""

from __future__ import annotations

import math

import numpy as np

from ...._tensor import Tensor
from ..._op import Overload, declare, dispatch, is_half
from .._builtin import namespace_of
from ..reduction import np_mean
from ._common import check_tensor, float_kernel

__all__ = ["layer_norm", "native_layer_norm", "native_layer_norm_backward"]


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
            gx = rstd * gs + b * x + c
    if needs[2]:
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
                            methods=(), functions=())
layer_norm = declare("layer_norm", function=_layer_norm, methods=())
native_layer_norm_backward = declare("native_layer_norm_backward", NativeLayerNormBackward,
                                     function=_native_layer_norm_backward, methods=(),
                                     functions=())
