"""layer_norm: torch's ``native_layer_norm`` and its node, which saves the per-row mean and
reciprocal standard deviation (``result1``, ``result2``)."""

from __future__ import annotations

import numpy as np

from ...._tensor import Tensor
from ..._op import Overload, declare, dispatch
from .._builtin import namespace_of
from ..reduction import np_mean
from ._common import check_tensor, float_kernel

__all__ = ["layer_norm", "native_layer_norm", "native_layer_norm_backward"]


def _norm_dims(ndim: int, normalized_shape: tuple) -> tuple:
    return tuple(range(ndim - len(normalized_shape), ndim))


def _normalized(x, dims: tuple, eps):
    """xhat = (x - mean) * rstd over ``dims``, and rstd, in tensor ops: a backward that builds
    a graph recomputes them from x rather than reading the saved (constant) statistics."""
    centered = x - x.mean(dims, keepdim=True)
    rstd = ((centered * centered).mean(dims, keepdim=True) + eps).rsqrt()
    return centered * rstd, rstd


def _eps_of(x, rstd, dims: tuple):
    """What, added to the variance of ``x`` over ``dims``, gives the saved ``rstd`` (eps, up to
    rounding): the statistics recomputed with it are the saved ones, as functions of x."""
    centered = x - x.mean(dims, keepdim=True)
    return rstd.pow(-2) - (centered * centered).mean(dims, keepdim=True)


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


def _composite_backward(grad, x, weight, bias, dims: tuple, eps, needs: tuple) -> tuple:
    """layer_norm's gradients (x, None, weight, bias) in tensor ops, recomputing the statistics
    from x so that they can be differentiated again."""
    batch = tuple(range(dims[0]))
    xhat, rstd = _normalized(x, dims, eps)
    gx = gw = gb = None
    if needs[0]:
        g = grad if weight is None else grad * weight
        gx = (g - g.mean(dims, keepdim=True)
              - xhat * (g * xhat).mean(dims, keepdim=True)) * rstd
    if weight is not None and needs[2]:
        gw = _sum_to_param(grad * xhat, batch)
    if bias is not None and needs[3]:
        gb = _sum_to_param(grad, batch)
    return gx, None, gw, gb


class NativeLayerNormBackward(Overload):
    """layer_norm's backward as one op (torch's ``native_layer_norm_backward``): (grad, x,
    weight) to the gradients of x, weight and bias. Its own backward differentiates the
    composite formula, recomputed from its inputs at the saved statistics.

    As torch's, its six edges are (grad, x, mean, rstd, weight, bias): the statistics are not
    differentiable and bias, which the gradients do not depend on, gets no gradient, yet a bias
    that requires grad makes the three gradients require grad."""

    node_name = "NativeLayerNormBackwardBackward0"
    args = ("grad_out", "input", "normalized_shape", "mean", "rstd", "weight", "bias",
            "output_mask")
    outputs = ("result0", "result1", "result2")
    saved_fields = ("grad_out", "input", "mean", "rstd", "weight")
    saved_attrs = ("normalized_shape",)
    tensor_positions = (0, 1, 3, 4, 5, 6)

    @staticmethod
    def backward(ctx, ggx, ggw=None, ggb=None):
        grad, x, _, rstd, weight = ctx.saved_tensors
        ns = namespace_of(grad)
        dims = _norm_dims(x.dim(), ctx.normalized_shape)
        with ns.no_grad():
            eps = _eps_of(x, rstd, dims)
        with ns.enable_grad():
            # Each input is recomputed through a view of its own, so that an input given twice
            # (x as its own weight) gets the partial derivative of each role, not their sum (a
            # saved input that does not require grad, as on a bridge's ctx, through a leaf).
            grad, x, weight = (None if t is None else t.view_as(t) if t.requires_grad
                               else t.detach().requires_grad_() for t in (grad, x, weight))
            roles = (grad, x, weight)
            gx, _, gw, gb = _composite_backward(grad, x, weight, True, dims, eps,
                                                (True, None, weight is not None, True))
        needs = ctx.needs_input_grad
        leaves = [t for t, need in zip(roles, (needs[0], needs[1], needs[5])) if need]
        pairs = [(o, g) for o, g in zip((gx, gw, gb), (ggx, ggw, ggb))
                 if o is not None and g is not None and o.requires_grad]
        # torch's node computes these in one formula: anomaly mode checks its outputs for nan
        # (the engine does, under this node's name), not the steps of the formula, which may
        # be nan where nothing of them reaches an output (the statistics of an empty input).
        with ns.autograd.set_detect_anomaly(ns.is_anomaly_enabled(), check_nan=False):
            found = iter(ns.autograd.grad([o for o, _ in pairs], leaves, [g for _, g in pairs],
                                          create_graph=ns.is_grad_enabled(), allow_unused=True)
                         if pairs and leaves else [None] * len(leaves))
        dgrad = next(found) if needs[0] else None
        dx = next(found) if needs[1] else None
        dw = next(found) if needs[5] else None
        return dgrad, dx, None, None, None, dw, None, None

    @staticmethod
    def jvp(ctx, tg, tx, _, __, ___, tw, *____):
        # The composite formula, run on duals at a level of its own.
        grad, x, _, rstd, weight = ctx.saved_tensors
        if x.numel() == 0:
            # torch's rule (a decomposition) gives plain zeros when there are no rows or no
            # normalized elements: no tangents
            return None, None, None
        fw = namespace_of(x).autograd.forward_ad
        dims = _norm_dims(x.dim(), ctx.normalized_shape)
        eps = _eps_of(x, rstd, dims)
        with fw.dual_level():
            duals = [a if a is None or t is None else fw.make_dual(a, t)
                     for a, t in ((grad, tg), (x, tx), (weight, tw))]
            outs = _composite_backward(duals[0], duals[1], duals[2], True, dims, eps,
                                       (True, None, weight is not None, True))
            return tuple(None if o is None else fw.unpack_dual(o).tangent
                         for o in (outs[0], outs[2], outs[3]))


def _native_layer_norm_backward(grad_out: Tensor, input: Tensor, normalized_shape,  # noqa: A002
                                mean: Tensor, rstd: Tensor, weight, bias,
                                output_mask) -> tuple:
    """The gradients of x, weight and bias of layer_norm for ``grad_out`` (None where
    ``output_mask`` does not ask for one)."""
    normalized_shape = tuple(normalized_shape)
    output_mask = tuple(output_mask)
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
    dims = _norm_dims(d.ndim, shape)
    mean = np_mean(d, dims, True)
    centered = d - mean
    rstd = 1 / np.sqrt(np_mean(centered * centered, dims, True) + eps)
    out = centered * rstd
    if weight is not None:
        out *= weight._data
    # torch's kernel adds a bias of 0 when none is given, which turns a -0 result into +0
    out += 0 if bias is None else bias._data
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
