"""Reductions: sum and mean, over all elements or over some dims."""

from __future__ import annotations

import numpy as np

from .._dtype import FROM_NUMPY
from .._state import STATE
from .._tensor import Tensor, _wrap_dim, wrap
from ._builtin import BuiltinFunction, as_array, record

__all__ = ["sum", "mean", "normalize_dims"]


def normalize_dims(dim, ndim: int) -> tuple:
    """Dims as a sorted tuple of non-negative ints, with torch's IndexError when out of range."""
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    out = tuple(sorted({_wrap_dim(d, ndim) for d in dims}))
    if len(out) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    return out


def _as_dim_tuple(dim) -> tuple:
    return (dim,) if isinstance(dim, int) else tuple(dim)


def _expand_back(grad: Tensor, dims: tuple, keepdim: bool, sizes: tuple) -> Tensor:
    """Undo a reduction's shape: put the reduced dims back (size 1) and expand to ``sizes``."""
    if not keepdim:
        for d in sorted(_wrap_dim(d, len(sizes)) for d in dims):
            grad = grad.unsqueeze(d)
    return grad.expand(sizes)


class SumAll(BuiltinFunction):
    """Sum of all elements: the gradient is grad expanded to the input's shape."""

    node_name = "SumBackward0"
    saved_attrs = ("self_sym_sizes",)
    tensor_positions = (0,)

    @staticmethod
    def forward(x):
        return x.sum()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.self_sym_sizes = tuple(inputs[0].shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.expand(ctx.self_sym_sizes)


class SumDim(BuiltinFunction):
    """Sum over ``dim``: the gradient is grad with the dims put back, expanded."""

    node_name = "SumBackward1"
    saved_attrs = ("dim", "keepdim", "self_sym_sizes")
    tensor_positions = (0,)

    @staticmethod
    def forward(x, dim, keepdim=False):
        return x.sum(dim, keepdim=keepdim)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.dim = _as_dim_tuple(inputs[1])
        ctx.keepdim = inputs[2]
        ctx.self_sym_sizes = tuple(inputs[0].shape)

    @staticmethod
    def backward(ctx, grad):
        return _expand_back(grad, ctx.dim, ctx.keepdim, ctx.self_sym_sizes), None, None


def _sum_dtype(d: np.ndarray, dtype):
    if dtype is not None:
        return dtype._np
    # Integer and bool sums accumulate in int64, as in torch.
    return np.int64 if d.dtype.kind in "biu" else None


def sum(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A001
    """Sum of all elements, or over ``dim`` (an int or a tuple of ints)."""
    if type(x) is not Tensor:
        raise TypeError(f"sum(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    d = x._data
    if dim is None:
        out = wrap(as_array(d.sum(dtype=_sum_dtype(d, dtype))))
        if x._requires_grad and STATE.grad_enabled and out._data.dtype.kind == "f":
            record(SumAll, out, (x,), (x,))
        return out
    axes = normalize_dims(dim, d.ndim)
    out = wrap(as_array(d.sum(axis=axes, keepdims=keepdim, dtype=_sum_dtype(d, dtype))))
    if x._requires_grad and STATE.grad_enabled and out._data.dtype.kind == "f":
        record(SumDim, out, (x,), (x, dim, keepdim))
    return out


class MeanAll(BuiltinFunction):
    """Mean of all elements: grad / numel, expanded."""

    node_name = "MeanBackward0"
    saved_attrs = ("self_sym_numel", "self_sym_sizes")
    tensor_positions = (0,)

    @staticmethod
    def forward(x):
        return x.mean()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.self_sym_sizes = tuple(inputs[0].shape)
        ctx.self_sym_numel = inputs[0].numel()

    @staticmethod
    def backward(ctx, grad):
        return grad.expand(ctx.self_sym_sizes) / ctx.self_sym_numel


class MeanDim(BuiltinFunction):
    """Mean over ``dim``: grad divided by the number of reduced elements, expanded."""

    node_name = "MeanBackward1"
    saved_attrs = ("dim", "keepdim", "self_sym_numel", "self_sym_sizes")
    tensor_positions = (0,)

    @staticmethod
    def forward(x, dim, keepdim=False):
        return x.mean(dim, keepdim=keepdim)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.dim = _as_dim_tuple(inputs[1])
        ctx.keepdim = inputs[2]
        ctx.self_sym_sizes = tuple(inputs[0].shape)
        ctx.self_sym_numel = inputs[0].numel()

    @staticmethod
    def backward(ctx, grad):
        sizes = ctx.self_sym_sizes
        count = 1
        for d in ctx.dim:
            count *= sizes[_wrap_dim(d, len(sizes))]
        return _expand_back(grad, ctx.dim, ctx.keepdim, sizes) / count, None, None


def mean(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Mean of all elements, or over ``dim``."""
    if type(x) is not Tensor:
        raise TypeError(f"mean(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    d = x._data
    if dtype is not None:
        d = d.astype(dtype._np)
    if d.dtype.kind != "f":
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           "floating point or complex dtype. Got: "
                           f"{FROM_NUMPY[d.dtype]._short}")
    if dim is None:
        out = wrap(as_array(d.mean()))
        if x._requires_grad and STATE.grad_enabled:
            record(MeanAll, out, (x,), (x,))
        return out
    axes = normalize_dims(dim, d.ndim)
    out = wrap(as_array(d.mean(axis=axes, keepdims=keepdim)))
    if x._requires_grad and STATE.grad_enabled:
        record(MeanDim, out, (x,), (x, dim, keepdim))
    return out


METHODS = {"sum": sum, "mean": mean}
FUNCTIONS = {"sum": sum, "mean": mean}
