"""Order statistics, scans and summaries: median, mode, quantile, kthvalue, topk, sorting,
cumulative extremes, histograms, counts, unique values, searching sorted sequences, covariance,
differences and integrals."""

from __future__ import annotations

import builtins
import warnings
from typing import NamedTuple

import numpy as np

from ... import _dtype
from ..._args import not_a_tensor
from ..._cppsort import introsort, top_places
from ..._dtype import FROM_NUMPY
from ..._tensor import Tensor, _wrap_dim, wrap
from .._keywords import write_out
from .._op import Overload, declare, dispatch
from ._builtin import C_TYPES, namespace_of
from .reduction import (
    _NOT_GIVEN,
    _RUNNING,
    MaxAll,
    MaxDim,
    Var,
    _expand_back,
    _named_tuple,
    _scatter_back,
    _sum_dtype,
    _variance,
    check_keepdim,
    normalize_dims,
    return_types,
    var_backward,
)
from .shape import SqueezeMatmul
from .shape import squeeze as shape_squeeze

__all__ = ["median", "nanmedian", "mode", "kthvalue", "topk", "var_mean", "std_mean", "aminmax",
           "cummax", "cummin", "logcumsumexp", "nansum", "nanmean"]

for _name in ("median", "nanmedian", "mode", "kthvalue", "topk", "cummax", "cummin"):
    setattr(return_types, _name, _named_tuple(_name))


class _MinMax(NamedTuple):
    min: Tensor
    max: Tensor

    def __repr__(self) -> str:
        return f"ext.return_types.aminmax(\nmin={self.min!r},\nmax={self.max!r})"


_MinMax.__name__ = _MinMax.__qualname__ = "aminmax"
return_types.aminmax = _MinMax


def _lines(d: np.ndarray, pos: int) -> np.ndarray:
    """``d`` with dim ``pos`` moved last and the others flattened: one row per slice."""
    if pos == d.ndim - 1:  # (no move: np.moveaxis costs more than the rest of a small op)
        return d.reshape(-1, d.shape[pos])
    return np.moveaxis(d, pos, -1).reshape(-1, d.shape[pos])


def _unlines(rows: np.ndarray, shape: tuple, pos: int, keepdim: bool) -> np.ndarray:
    """One value per row of ``_lines`` back in the reduced shape."""
    return rows.reshape(shape[:pos] + ((1,) if keepdim else ()) + shape[pos + 1:])


def _check_dim_size(d: np.ndarray, pos: int, name: str, dim: int) -> None:
    if d.ndim and d.shape[pos] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")


# ------------------------------------------------------------------------ value-selecting ops
class MedianAll(MaxAll):
    """The lower of the two middle values: the gradient is split among the elements equal to it."""

    node_name = "MedianBackward0"


class NanmedianAll(MaxAll):
    """The median of the values that are not nan."""

    node_name = "NanmedianBackward0"


class MedianDim(MaxDim):
    """The median along ``dim``: the gradient goes to the returned index."""

    node_name = "MedianBackward1"
    returns = return_types.median


class NanmedianDim(MaxDim):
    """The median of the non-nan values along ``dim``."""

    node_name = "NanmedianBackward1"
    returns = return_types.nanmedian


class Mode(MaxDim):
    """The most frequent value along ``dim``: the gradient goes to the returned index."""

    node_name = "ModeBackward0"
    returns = return_types.mode


def _order(rows: np.ndarray) -> np.ndarray:
    # ascending and stable, nan last (torch's nan is the largest value)
    return np.argsort(rows, axis=-1, kind="stable")


def _median_rows(rows: np.ndarray, ignore_nan: bool) -> np.ndarray:
    """The index in each row of its median: the lower middle value; with a nan, the first nan
    (median) or the median of the others (nanmedian)."""
    order = _order(rows)
    valid = (~np.isnan(rows)).sum(-1) if rows.dtype.kind == "f" else np.full(len(rows),
                                                                             rows.shape[-1])
    if ignore_nan:
        k = np.maximum(valid - 1, 0) // 2
    else:
        k = np.where(valid < rows.shape[-1], valid, (rows.shape[-1] - 1) // 2)
    return order[np.arange(len(order)), k]


def _median_all(x: Tensor, ignore_nan: bool, name: str) -> Tensor:
    d = x._data.reshape(-1)
    if ignore_nan and d.dtype.kind == "f":
        d = d[~np.isnan(d)]
    if d.size == 0:
        value = np.array(np.nan, x._data.dtype) if x._data.dtype.kind == "f" else \
            np.zeros((), x._data.dtype)
    elif not ignore_nan and d.dtype.kind == "f" and np.isnan(d).any():
        value = np.array(np.nan, d.dtype)
    else:
        value = np.sort(d)[(d.size - 1) // 2]
    return dispatch(NanmedianAll if ignore_nan else MedianAll, np.asarray(value), (x,))


def _median_dim(x: Tensor, dim: int, keepdim: bool, ignore_nan: bool, name: str):
    check_keepdim(keepdim, name)
    d = x._data
    pos = _wrap_dim(dim, d.ndim)
    _check_dim_size(d, pos, name, dim)
    if d.ndim == 0:
        values, indices = d.copy(), np.zeros((), np.int64)
    else:
        rows = _lines(d, pos)
        idx = _median_rows(rows, ignore_nan)
        values = _unlines(rows[np.arange(len(rows)), idx], d.shape, pos, keepdim)
        indices = _unlines(idx.astype(np.int64), d.shape, pos, keepdim)
    return dispatch(NanmedianDim if ignore_nan else MedianDim, (values, indices),
                    (x, dim, keepdim))


def _median(x: Tensor, dim=None, keepdim: bool = False):
    """The median (the lower of the two middle values); with ``dim``, (values, indices)."""
    if type(x) is not Tensor:
        raise not_a_tensor(x, "median")
    if dim is None:
        return _median_all(x, False, "median")
    return _median_dim(x, dim, keepdim, False, "median")


def _nanmedian(x: Tensor, dim=None, keepdim: bool = False):
    """The median of the values that are not nan; with ``dim``, (values, indices)."""
    if type(x) is not Tensor:
        raise not_a_tensor(x, "nanmedian")
    if dim is None:
        return _median_all(x, True, "nanmedian")
    return _median_dim(x, dim, keepdim, True, "nanmedian")


median = declare("median", MedianAll, MedianDim, function=_median)
nanmedian = declare("nanmedian", NanmedianAll, NanmedianDim, function=_nanmedian)


def _mode_rows(rows: np.ndarray) -> np.ndarray:
    """The index in each row of its most frequent value, as torch's CPU kernel finds it: it
    sorts (value, place) pairs by value with the C++ library's sort (not stable beyond 16
    elements, and a nan compares false both ways) and keeps the first longest run of equal
    values, at the place of the run's last pair."""
    out = np.empty(len(rows), np.int64)
    plain = ~_has_ties(rows)
    if rows.dtype.kind == "f":
        plain &= ~np.isnan(rows).any(-1)
    # without ties every value occurs once: the smallest one
    out[plain] = np.argmin(rows[plain], axis=-1) if plain.any() else 0
    for r in np.flatnonzero(~plain):
        pairs = [(v, i) for i, v in enumerate(rows[r].tolist())]
        introsort(pairs, len(pairs), lambda a, b: a[0] < b[0])
        best, run, at = 0, 0, 0
        for i, (v, place) in enumerate(pairs):
            run += 1
            if i == len(pairs) - 1 or v != pairs[i + 1][0]:
                if run > best:
                    best, at = run, place
                run = 0
        out[r] = at
    return out


def _mode(x: Tensor, dim: int = -1, keepdim: bool = False):
    """(values, indices) of the most frequent value along ``dim``."""
    check_keepdim(keepdim, "mode")
    d = x._data
    pos = _wrap_dim(dim, d.ndim)
    if d.ndim == 0:
        values, indices = d.copy(), np.zeros((), np.int64)
    elif d.size == 0:
        shape = d.shape[:pos] + ((1,) if keepdim else ()) + d.shape[pos + 1:]
        if d.shape[pos] == 0:
            raise IndexError(f"mode(): Expected reduction dim {pos} to have non-zero size.")
        values, indices = np.empty(shape, d.dtype), np.empty(shape, np.int64)
    else:
        rows = _lines(d, pos)
        found = _mode_rows(rows)
        values = _unlines(rows[np.arange(len(rows)), found], d.shape, pos, keepdim)
        indices = _unlines(found, d.shape, pos, keepdim)
    return dispatch(Mode, (values, indices), (x, dim, keepdim))


mode = declare("mode", Mode, function=_mode)


class Kthvalue(Overload):
    """The k-th smallest value along ``dim``: the gradient goes to the returned index."""

    node_name = "KthvalueBackward0"
    args = ("self", "k", "dim", "keepdim")
    outputs = ("values", "indices")
    non_differentiable = ("indices",)
    returns = return_types.kthvalue
    saved_fields = ("indices",)
    saved_attrs = ("dim", "keepdim", "self_sym_sizes")
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad, grad_indices=None):
        (indices,) = ctx.saved_tensors
        return (_scatter_back(grad, ctx.dim, indices, ctx.self_sym_sizes, ctx.keepdim), None,
                None, None)

    @staticmethod
    def jvp(ctx, tangent, *_):
        return MaxDim.jvp(ctx, tangent)


def _write_out(name: str, x: Tensor, out, result):
    """``result`` written into the tensors of ``out`` (torch's ``out=``, resized as there),
    after this op's stricter checks: an out tensor that overlaps the input, or of another
    dtype, is refused."""
    for o, r in zip(out, result):
        if np.shares_memory(o._data, x._data):
            raise RuntimeError("unsupported operation: some elements of the input tensor and "
                               "the written-to tensor refer to a single memory location. Please "
                               "clone() the tensor before performing the operation.")
        if o._data.dtype != r._data.dtype:
            raise RuntimeError(f"Expected out tensor to have dtype {C_TYPES[r._data.dtype]}, "
                               f"but got {C_TYPES[o._data.dtype]} instead")
    return write_out(name, out, result)


def _kthvalue(x: Tensor, k: int, dim: int = -1, keepdim: bool = False, *, out=None):
    """(values, indices) of the ``k``-th smallest value along ``dim`` (k counts from 1)."""
    check_keepdim(keepdim, "kthvalue")
    if out is not None:
        return _write_out("kthvalue", x, out, _kthvalue(x.detach(), k, dim, keepdim))
    d = x._data
    pos = _wrap_dim(dim, d.ndim)
    n = d.shape[pos] if d.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    if d.ndim == 0:
        values, indices = d.copy(), np.zeros((), np.int64)
    else:
        rows = _lines(d, pos)
        found = np.argsort(rows, axis=-1, kind="stable")[:, k - 1]
        for r in np.flatnonzero(_has_ties(rows)):
            # among equal values, the one torch's quickselect leaves at place k - 1
            found[r] = _quick_select(list(rows[r]), k - 1)
        values = _unlines(rows[np.arange(len(rows)), found], d.shape, pos, keepdim)
        indices = _unlines(found.astype(np.int64), d.shape, pos, keepdim)
    return dispatch(Kthvalue, (values, indices), (x, k, dim, keepdim))


def _has_ties(rows: np.ndarray) -> np.ndarray:
    """Whether each row holds two equal values (two nans count as equal)."""
    s = np.sort(rows, axis=-1)
    same = s[:, 1:] == s[:, :-1]
    if rows.dtype.kind == "f":
        same |= np.isnan(s[:, 1:]) & np.isnan(s[:, :-1])
    return same.any(-1)


def _quick_select(vals: list, k: int) -> int:
    """The original place of the value that torch's CPU quickselect (median-of-three pivot,
    nan the largest) leaves at place ``k``: which of equal values kthvalue returns."""
    idx = list(range(len(vals)))

    def gt(a, b) -> bool:
        return (a != a and b == b) or a > b  # (x != x: x is nan)

    def swap(i: int, j: int) -> None:
        vals[i], vals[j] = vals[j], vals[i]
        idx[i], idx[j] = idx[j], idx[i]

    lo, hi = 0, len(vals) - 1
    while hi > lo + 1:
        mid = lo + (hi - lo) // 2
        swap(mid, lo + 1)
        if gt(vals[lo + 1], vals[hi]):
            swap(lo + 1, hi)
        if gt(vals[lo], vals[hi]):
            swap(lo, hi)
        if gt(vals[lo + 1], vals[lo]):
            swap(lo + 1, lo)
        i, j, pivot = lo + 1, hi, vals[lo]
        while True:
            i += 1
            while gt(pivot, vals[i]):
                i += 1
            j -= 1
            while gt(vals[j], pivot):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1
    if hi == lo + 1 and gt(vals[lo], vals[hi]):
        swap(lo, hi)
    return idx[k]


kthvalue = declare("kthvalue", Kthvalue, function=_kthvalue)


class Topk(Overload):
    """The ``k`` largest (or smallest) values along ``dim``: the gradient goes back to where
    each came from."""

    node_name = "TopkBackward0"
    args = ("self", "k", "dim", "largest", "sorted")
    outputs = ("values", "indices")
    non_differentiable = ("indices",)
    returns = return_types.topk
    saved_fields = ("indices",)
    saved_attrs = ("dim", "self_sym_sizes")
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad, grad_indices=None):
        (indices,) = ctx.saved_tensors
        return (_scatter_back(grad, ctx.dim, indices, ctx.self_sym_sizes, True), None, None,
                None, None)

    @staticmethod
    def jvp(ctx, tangent, *_):
        (indices,) = ctx.saved_tensors
        if not ctx.self_sym_sizes:
            return tangent, None
        return tangent.gather(ctx.dim, indices), None


def sort_order(d: np.ndarray, pos: int, descending: bool) -> np.ndarray:
    """The stable order of ``d`` along ``pos``: ascending with nan last, or descending with nan
    first (torch's nan is the largest value)."""
    if not descending:
        return np.argsort(d, axis=pos, kind="stable")
    if d.dtype.kind != "f":
        # ~d reverses the order of integers and bools without overflow
        return np.argsort(~d if d.dtype.kind in "biu" else -d, axis=pos, kind="stable")
    return np.lexsort((-d, ~np.isnan(d)), axis=pos)


def _topk(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
    """(values, indices) of the ``k`` largest (``largest=False``: smallest) values along
    ``dim``."""
    d = x._data
    pos = _wrap_dim(dim, d.ndim)
    n = d.shape[pos] if d.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    if d.ndim == 0:
        values, indices = d.copy(), np.zeros((), np.int64)
    else:
        rows = _lines(d, pos)
        found = sort_order(rows, 1, largest)[:, :k]
        if k:
            for r in np.flatnonzero(_has_ties(rows)):
                found[r] = top_places(list(rows[r]), k, largest, sorted)
        lead = d.shape[:pos] + d.shape[pos + 1:]
        indices = found.reshape(lead + (k,)).astype(np.int64)
        if pos != d.ndim - 1:
            indices = np.moveaxis(indices, -1, pos)
        values = np.take_along_axis(d, indices, pos)
    return dispatch(Topk, (values, indices), (x, k, dim, largest, sorted))


topk = declare("topk", Topk, function=_topk)


# ---------------------------------------------------------------------------- var_mean, std_mean
def _mean_backward(grad: Tensor, x: Tensor, dims, keepdim: bool) -> Tensor:
    # grad / (number of reduced elements), expanded back to x's shape
    sizes = tuple(x.shape)
    dims = tuple(range(len(sizes))) if not dims else dims
    count = 1
    for d in dims:
        count *= sizes[d] if sizes else 1
    return _expand_back(grad, dims, keepdim, sizes) / count


class VarMean(Overload):
    """(variance, mean): the gradients of the two add up."""

    node_name = "VarMeanBackward0"
    args = ("self", "dim", "correction", "keepdim")
    outputs = ("result0", "result1")
    saved_fields = ("self",)
    saved_attrs = ("correction", "dim", "keepdim")
    tensor_positions = (0,)

    @staticmethod
    def forward(x, dim=None, correction=None, keepdim=False):
        return namespace_of(x).var_mean(x, dim, correction=correction, keepdim=keepdim)

    @staticmethod
    def backward(ctx, grad_var, grad_mean):
        return _var_mean_grads(ctx, ctx.saved_tensors[0], grad_var, grad_mean)

    @staticmethod
    def jvp(ctx, tangent, *_):
        dims = tuple(range(tangent.ndim)) if not ctx.dim else ctx.dim
        return Var.jvp(ctx, tangent), tangent.mean(dims, keepdim=ctx.keepdim)


class StdMean(VarMean):
    """(standard deviation, mean): the gradients of the two add up."""

    node_name = "StdMeanBackward0"
    saved_fields = ("self", "result0")

    @staticmethod
    def forward(x, dim=None, correction=None, keepdim=False):
        return namespace_of(x).std_mean(x, dim, correction=correction, keepdim=keepdim)

    @staticmethod
    def backward(ctx, grad_std, grad_mean):
        x, std = ctx.saved_tensors
        grad_var = None
        if grad_std is not None:
            # the variance's gradient for grad / (2 std), 0 where the std is 0
            grad_var = (grad_std / (std * 2)).masked_fill(std == 0, 0)
        return _var_mean_grads(ctx, x, grad_var, grad_mean)

    @staticmethod
    def jvp(ctx, tangent, *_):
        std = ctx.saved_tensors[1]
        dvar, dmean = VarMean.jvp(ctx, tangent)
        return namespace_of(std).where(std == 0, 0.0, dvar / (2 * std)), dmean


def _var_mean_grads(ctx, x: Tensor, grad_var, grad_mean) -> tuple:
    gx = None
    if grad_var is not None:
        gx = var_backward(grad_var, x, ctx.dim, ctx.correction, ctx.keepdim)
    if grad_mean is not None:
        gm = _mean_backward(grad_mean, x, ctx.dim, ctx.keepdim)
        gx = gm if gx is None else gx + gm
    return gx, None, None, None


def _var_mean(x: Tensor, dim=None, unbiased=_NOT_GIVEN, keepdim: bool = False, *,
              correction=None) -> tuple:
    """(variance, mean) over ``dim`` (all dims for None)."""
    check_keepdim(keepdim, "var_mean")
    return _variance(VarMean, x, dim, unbiased, keepdim, correction, "var_mean", True)


def _std_mean(x: Tensor, dim=None, unbiased=_NOT_GIVEN, keepdim: bool = False, *,
              correction=None) -> tuple:
    """(standard deviation, mean) over ``dim`` (all dims for None)."""
    check_keepdim(keepdim, "std_mean")
    return _variance(StdMean, x, dim, unbiased, keepdim, correction, "std_mean", True)


var_mean = declare("var_mean", VarMean, function=_var_mean, methods=())
std_mean = declare("std_mean", StdMean, function=_std_mean, methods=())


# ---------------------------------------------------------------------------------- aminmax
class Aminmax(Overload):
    """(min, max) over ``dim`` (all for None): each gradient split among the ties of its
    extreme."""

    node_name = "AminmaxBackward0"
    args = ("self", "dim", "keepdim")
    outputs = ("min", "max")
    returns = return_types.aminmax
    saved_fields = ("self", "min", "max")
    saved_attrs = ("dim", "keepdim")
    tensor_positions = (0,)

    @staticmethod
    def forward(x, dim=None, keepdim=False):
        return namespace_of(x).aminmax(x, dim=dim, keepdim=keepdim)

    @staticmethod
    def backward(ctx, grad_min, grad_max):
        x, lo, hi = ctx.saved_tensors
        gx = None
        for grad, value in ((grad_min, lo), (grad_max, hi)):
            if grad is not None:
                g = _share_among_ties(grad, x, value, ctx.dim, ctx.keepdim)
                gx = g if gx is None else gx + g
        return gx, None, None

    @staticmethod
    def jvp(ctx, tangent, *_):
        x, lo, hi = ctx.saved_tensors
        return (_mean_at_ties(tangent, x, lo, ctx.dim, ctx.keepdim),
                _mean_at_ties(tangent, x, hi, ctx.dim, ctx.keepdim))


def _reduced(x: Tensor, dim) -> tuple:
    return tuple(range(x.ndim)) if dim is None else (_wrap_dim(dim, x.ndim),) if x.ndim else ()


def _share_among_ties(grad: Tensor, x: Tensor, value: Tensor, dim, keepdim: bool) -> Tensor:
    """grad split evenly among the elements of x equal to ``value`` in each reduced slice."""
    dims, sizes = _reduced(x, dim), tuple(x.shape)
    if not dims:
        return grad * (x == value)
    mask = x == _expand_back(value, dims, keepdim, sizes)
    count = _expand_back(mask.sum(dims, keepdim=True), dims, True, sizes)
    return mask * (_expand_back(grad, dims, keepdim, sizes) / count)


def _mean_at_ties(tangent: Tensor, x: Tensor, value: Tensor, dim, keepdim: bool) -> Tensor:
    dims = _reduced(x, dim)
    if not dims:
        return tangent
    mask = x == _expand_back(value, dims, keepdim, tuple(x.shape))
    picked = namespace_of(x).where(mask, tangent, 0.0)
    return picked.sum(dims, keepdim=keepdim) / mask.sum(dims, keepdim=keepdim)


def _aminmax(x: Tensor, *, dim=None, keepdim: bool = False, out=None):
    """(min, max) of all elements, or along ``dim``."""
    check_keepdim(keepdim, "aminmax")
    if out is not None:
        return _write_out("aminmax", x, out, _aminmax(x.detach(), dim=dim, keepdim=keepdim))
    d = x._data
    if dim is None:
        if d.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        axis = None
    else:
        axis = _wrap_dim(dim, d.ndim) if d.ndim else None
        if d.ndim and d.shape[axis] == 0:
            raise IndexError(f"aminmax(): Expected reduction dim {dim} to have non-zero size.")
    keep = keepdim and axis is not None
    lo = np.amin(d, axis=axis, keepdims=keep)
    hi = np.amax(d, axis=axis, keepdims=keep)
    if keepdim and axis is None and d.ndim:
        lo, hi = lo.reshape((1,) * d.ndim), hi.reshape((1,) * d.ndim)
    return dispatch(Aminmax, (np.asarray(lo), np.asarray(hi)), (x, dim, keepdim))


aminmax = declare("aminmax", Aminmax, function=_aminmax)


# ---------------------------------------------------------------------------- cummax, cummin
class Cummax(Overload):
    """Running maxima along ``dim``: each element's gradient is the sum of the gradients of the
    places that took it."""

    node_name = "CummaxBackward0"
    args = ("self", "dim")
    outputs = ("values", "indices")
    non_differentiable = ("indices",)
    returns = return_types.cummax
    saved_fields = ("self", "indices")
    saved_attrs = ("dim",)
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad, grad_indices=None):
        x, indices = ctx.saved_tensors
        if x.numel() == 0 or x.ndim == 0:
            return grad, None
        zeros = namespace_of(grad).zeros_like(x, dtype=grad.dtype)
        return namespace_of(grad).ops.aten.scatter_add(zeros, ctx.dim, indices, grad), None

    @staticmethod
    def jvp(ctx, tangent, *_):
        x, indices = ctx.saved_tensors
        if x.ndim == 0:
            return tangent, None
        return tangent.gather(ctx.dim, indices), None


class Cummin(Cummax):
    """Running minima along ``dim``."""

    node_name = "CumminBackward0"
    returns = return_types.cummin


def _running_extreme(x: Tensor, dim: int, largest: bool):
    d = x._data
    pos = _wrap_dim(dim, d.ndim)
    if d.ndim == 0 or d.size == 0:
        values, indices = d.copy(), np.zeros(d.shape, np.int64)
    else:
        v = np.moveaxis(d, pos, 0)
        vals, idx = np.empty_like(v), np.zeros(v.shape, np.int64)
        cur, at = v[0], np.zeros(v.shape[1:], np.int64)
        vals[0] = cur
        floating = d.dtype.kind == "f"
        for i in range(1, v.shape[0]):
            new = v[i]
            # a later equal value takes the place, and a nan stays once met (the latest nan)
            take = new >= cur if largest else new <= cur
            if floating:
                take = np.isnan(new) | (take & ~np.isnan(cur))
            cur = np.where(take, new, cur)
            at = np.where(take, i, at)
            vals[i], idx[i] = cur, at
        values, indices = np.moveaxis(vals, 0, pos).copy(), np.moveaxis(idx, 0, pos).copy()
    return dispatch(Cummax if largest else Cummin, (values, indices), (x, dim))


def _cummax(x: Tensor, dim: int):
    """(values, indices) of the running maxima along ``dim``."""
    return _running_extreme(x, dim, True)


def _cummin(x: Tensor, dim: int):
    """(values, indices) of the running minima along ``dim``."""
    return _running_extreme(x, dim, False)


cummax = declare("cummax", Cummax, function=_cummax)
cummin = declare("cummin", Cummin, function=_cummin)


# ---------------------------------------------------------------------------- logcumsumexp
class Logcumsumexp(Overload):
    """log of the running sums of exp along ``dim``."""

    node_name = "LogcumsumexpBackward0"
    args = ("self", "dim")
    saved_fields = ("self", "result")
    saved_attrs = ("dim",)
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad):
        x, result = ctx.saved_tensors
        if grad.ndim == 0 or grad.numel() == 0:
            return grad, None
        # d result_j / d x_i = exp(x_i - result_j) for j >= i: the reversed running sum of
        # grad_j exp(-result_j), in log space, split by the gradient's sign
        ns, dim = namespace_of(grad), ctx.dim
        lowest = ns.finfo(grad.dtype).min
        log_abs = grad.abs().log()
        pos = ns.where(grad > 0, log_abs, lowest)
        neg = ns.where(grad < 0, log_abs, lowest)

        def reversed_lcse(t):
            return t.flip(dim).logcumsumexp(dim).flip(dim)

        return ((reversed_lcse(pos - result) + x).exp()
                - (reversed_lcse(neg - result) + x).exp()), None

    @staticmethod
    def jvp(ctx, tangent, *_):
        x, _result = ctx.saved_tensors
        dim = ctx.dim
        if x.ndim == 0:
            return tangent
        # torch's: the tangents weighted by exp-normalized x, over their running sum (plus
        # 1e-13, against a division by zero)
        e = (x - x.max(dim, True)[0]).exp()
        return (tangent * e).cumsum(dim) / (e.cumsum(dim) + 1e-13)


def _logcumsumexp(x: Tensor, dim: int) -> Tensor:
    """log(cumsum(exp(x))) along ``dim``, computed without overflow."""
    d = x._data
    pos = _wrap_dim(dim, d.ndim)
    if d.dtype.kind != "f":
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for "
                                  f"'{FROM_NUMPY[d.dtype]._short}'")
    # torch's CPU kernel runs in double for float32 (and float16 in float32), rounding once
    wide = d.astype(_RUNNING.get(d.dtype, d.dtype), copy=False)
    with np.errstate(invalid="ignore", over="ignore"):
        data = np.logaddexp.accumulate(wide, axis=pos).astype(d.dtype) if d.ndim else d.copy()
    return dispatch(Logcumsumexp, np.asarray(data, order="C"), (x, dim))


logcumsumexp = declare("logcumsumexp", Logcumsumexp, function=_logcumsumexp)


# ---------------------------------------------------------------------------- nansum, nanmean
class Nansum(Overload):
    """Sum of the values that are not nan: the gradient is grad expanded, 0 at the nans."""

    node_name = "NansumBackward0"
    args = ("self", "dim", "keepdim")
    saved_fields = ("self",)
    saved_attrs = ("dim", "keepdim")
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        dims = ctx.dim if ctx.dim else tuple(range(x.ndim))
        return (_expand_back(grad, dims, ctx.keepdim, tuple(x.shape))
                * x.isnan().logical_not(), None, None)

    @staticmethod
    def jvp(ctx, tangent, *_):
        (x,) = ctx.saved_tensors
        picked = namespace_of(x).where(x.isnan(), 0.0, tangent)
        if not ctx.dim:
            return picked.sum(tuple(range(x.ndim)), keepdim=ctx.keepdim) if ctx.keepdim \
                else picked.sum()
        return picked.sum(ctx.dim, keepdim=ctx.keepdim)


def _nan_dims(d: np.ndarray, dim):
    if dim is None or (isinstance(dim, (tuple, list)) and not dim):
        return None, None
    dims = normalize_dims(dim, d.ndim)
    return (dims if d.ndim else ()), ((dim,) if type(dim) is int else tuple(dim))


def _nansum(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Sum of the values that are not nan (all, or over ``dim``)."""
    check_keepdim(keepdim, "nansum")
    d = x._data
    acc = _sum_dtype(d, dtype, "nansum", dim)
    axes, saved = _nan_dims(d, dim)
    if d.dtype.kind == "f":
        d = np.where(np.isnan(d), 0, d)
    data = np.add.reduce(d, axis=axes, keepdims=keepdim, dtype=acc)
    return dispatch(Nansum, np.asarray(data), (x, saved, keepdim))


nansum = declare("nansum", Nansum, function=_nansum)


def _nanmean(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Mean of the values that are not nan (composite: nansum divided by their count)."""
    check_keepdim(keepdim, "nanmean")
    if x._data.dtype.kind != "f" and dtype is None:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {FROM_NUMPY[x._data.dtype]._name}")
    count = x.isnan().logical_not().sum(dim, keepdim) if dim is not None else \
        x.isnan().logical_not().sum()
    total = _nansum(x, dim, keepdim, dtype=dtype)
    return total.div(count)


nanmean = declare("nanmean", function=_nanmean)


# ---------------------------------------------------------------------------- without gradient
def _count_nonzero(x: Tensor, dim=None) -> Tensor:
    """The number of non-zero elements (over ``dim``, an int or a tuple of ints)."""
    d = x._data
    axes = None if dim is None else normalize_dims(dim, d.ndim) if d.ndim else None
    return wrap(np.asarray(np.count_nonzero(d, axis=axes), np.int64))


count_nonzero = declare("count_nonzero", function=_count_nonzero)


def _argsort(x: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The indices that sort ``x`` along ``dim``; equal values keep their order whatever
    ``stable`` says (torch's CPU sort is stable too)."""
    d = x._data
    pos = _wrap_dim(dim, d.ndim)
    if d.ndim == 0:
        return wrap(np.zeros((), np.int64))
    return wrap(sort_order(d, pos, descending).astype(np.int64))


argsort = declare("argsort", function=_argsort)


def _msort(x: Tensor) -> Tensor:
    """``x`` sorted along its first dim (composite: the values of ``sort(x, 0)``)."""
    return x.sort(0)[0]


msort = declare("msort", function=_msort)


def _values(v, like: np.dtype | None = None) -> np.ndarray:
    return v._data if type(v) is Tensor else np.asarray(v, dtype=like)


def _isin(elements, test_elements, *, assume_unique: bool = False,
          invert: bool = False) -> Tensor:
    """Whether each element of ``elements`` is among ``test_elements`` (either may be a
    number)."""
    if type(elements) is not Tensor and type(test_elements) is not Tensor:
        raise TypeError("isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__})")
    a, b = _values(elements), _values(test_elements)
    return wrap(np.asarray(np.isin(a, b, invert=invert)))


isin = declare("isin", function=_isin, methods=())


def _search(seq: np.ndarray, values: np.ndarray, right: bool) -> np.ndarray:
    side = "right" if right else "left"
    if seq.ndim <= 1:
        return np.searchsorted(seq, values, side=side)
    n = int(np.prod(seq.shape[:-1]))
    rows = seq.reshape(n, seq.shape[-1])
    vals = values.reshape(n, values.shape[-1])
    out = np.zeros(vals.shape, np.int64)
    for r in range(n):
        out[r] = np.searchsorted(rows[r], vals[r], side=side)
    return out.reshape(values.shape)


def _searchsorted(sorted_sequence: Tensor, input, *, out_int32: bool = False,  # noqa: A002
                  right: bool = False, side: str | None = None, sorter=None) -> Tensor:
    """Where each value of ``input`` would go in ``sorted_sequence`` (its innermost dim) to keep
    it sorted: the first such place, or the last (``right=True`` or ``side="right"``)."""
    seq = sorted_sequence._data
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    if sorter is not None:
        if sorter._data.shape != seq.shape:
            raise RuntimeError("boundary and sorter must have the same size, but got boundary "
                               f"tensor {list(seq.shape)}and got sorter tensor "
                               f"{list(sorter._data.shape)}")
        seq = np.take_along_axis(seq, sorter._data, -1) if seq.ndim else seq
    values = _values(input, seq.dtype)
    if seq.ndim > 1 and (values.ndim != seq.ndim or values.shape[:-1] != seq.shape[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the "
                           "first N-1 dimensions of boundaries tensor and input value tensor "
                           "must match, but we got boundaries tensor "
                           f"{list(seq.shape)} and input value tensor {list(values.shape)}")
    out = _search(seq, values, right)
    return wrap(np.asarray(out, np.int32 if out_int32 else np.int64))


searchsorted = declare("searchsorted", function=_searchsorted, methods=())


def _bucketize(input, boundaries: Tensor, *, out_int32: bool = False,  # noqa: A002
               right: bool = False) -> Tensor:
    """The bucket of each value of ``input`` among the 1-d ``boundaries``."""
    if boundaries._data.ndim != 1:
        raise RuntimeError("bucketize(): boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries._data.ndim})")
    return _searchsorted(boundaries, input, out_int32=out_int32, right=right)


bucketize = declare("bucketize", function=_bucketize, methods=())


def _bincount(x: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How many times each non-negative integer occurs in the 1-d ``x`` (or the sum of its
    ``weights``)."""
    d = x._data
    if d.ndim != 1 or d.dtype.kind not in "iub" or (d.size and d.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is None:
        return wrap(np.bincount(d, minlength=minlength).astype(np.int64))
    w = weights._data
    if w.ndim != 1 or w.shape[0] != d.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    out = np.bincount(d, weights=w, minlength=minlength)
    return wrap(out.astype(np.float32 if w.dtype == np.float32 else np.float64))


bincount = declare("bincount", function=_bincount)


def _edges(lo: float, hi: float, bins: int, dtype: np.dtype) -> np.ndarray:
    """``bins + 1`` evenly spaced edges from lo to hi in ``dtype``, as torch's linspace: the
    first half from lo upwards, the second from hi downwards."""
    if bins == 0:
        return np.asarray([lo], dtype)
    step = (hi - lo) / bins
    i = np.arange(bins + 1)
    half = (bins + 1) // 2
    return np.where(i < half, lo + step * i, hi - step * (bins - i)).astype(dtype)


def _bin_index(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Each value's bin among ``edges`` (the last bin closed on the right), -1 outside."""
    pos = np.searchsorted(edges, values, side="right") - 1
    pos[(values == edges[-1])] = len(edges) - 2
    pos[(values < edges[0]) | (values > edges[-1]) | np.isnan(values)] = -1
    return pos


def _range_of(d: np.ndarray, lo, hi):
    if lo is None:
        lo, hi = (float(d.min()), float(d.max())) if d.size else (0.0, 1.0)
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def _histc(x: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002
    """A histogram of ``bins`` equal bins from ``min`` to ``max`` (the data's range when both
    are 0); values outside are left out."""
    d = x._data.reshape(-1)
    if bins <= 0:
        raise RuntimeError("torch.histc(): bins must be > 0, but got "
                           f"{bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc(): max must be larger than min")
    if lo == hi and d.size:
        lo, hi = float(d.min()), float(d.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    t = d.dtype.type
    # torch's kernel computes the bin in the input's type: (x - min) * bins / (max - min)
    inside = d[(d >= t(lo)) & (d <= t(hi))]
    pos = ((inside - t(lo)) * t(bins) / (t(hi) - t(lo))).astype(np.int64)
    pos[pos == bins] = bins - 1
    return wrap(np.bincount(pos, minlength=bins).astype(d.dtype))


histc = declare("histc", function=_histc)

class _Histogram(NamedTuple):
    hist: Tensor
    bin_edges: Tensor


class _Histogramdd(NamedTuple):
    hist: Tensor
    bin_edges: list


_Histogram.__name__ = _Histogram.__qualname__ = "histogram"
_Histogramdd.__name__ = _Histogramdd.__qualname__ = "histogramdd"


def _histogramdd_arrays(d: np.ndarray, bins, hist_range, w, density: bool):
    """(hist, [edges per dim]) of the rows of the 2-d ``d`` (one column per dim)."""
    n = d.shape[1]
    if isinstance(bins, int):
        bins = [bins] * n
    edges = []
    for k in range(n):
        b = bins[k]
        if type(b) is Tensor:
            edges.append(b._data.astype(d.dtype))
            continue
        if hist_range is not None:
            lo, hi = float(hist_range[2 * k]), float(hist_range[2 * k + 1])
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
        else:
            lo, hi = _range_of(d[:, k], None, None)
        edges.append(_edges(lo, hi, int(b), d.dtype))
    pos = np.stack([_bin_index(d[:, k], edges[k]) for k in range(n)], 1) if n else \
        np.zeros((len(d), 0), np.int64)
    keep = (pos >= 0).all(1)
    shape = tuple(len(e) - 1 for e in edges)
    hist = np.zeros(shape, d.dtype)
    np.add.at(hist, tuple(pos[keep].T), 1 if w is None else w[keep].astype(d.dtype))
    if density:
        total = hist.sum()
        widths = 1.0
        for k, e in enumerate(edges):
            widths = np.multiply.outer(widths, np.diff(e)) if k else np.diff(e)
        hist = (hist / total / widths).astype(d.dtype)
    return hist, edges


def _histogram(x: Tensor, bins=100, *, range=None, weight=None,  # noqa: A002
               density: bool = False):
    """(hist, bin_edges): a histogram of ``x`` with ``bins`` equal bins (over ``range`` or the
    data's range) or with the edges ``bins`` gives."""
    d = x._data.reshape(-1, 1)
    w = None if weight is None else weight._data.reshape(-1)
    hist, edges = _histogramdd_arrays(d, [bins], None if range is None else list(range), w,
                                      density)
    return _Histogram(wrap(hist), wrap(edges[0]))


histogram = declare("histogram", function=_histogram)


def _histogramdd(x: Tensor, bins=10, *, range=None, weight=None,  # noqa: A002
                 density: bool = False):
    """(hist, bin_edges): a histogram of the points in the rows of ``x`` (its last dim is the
    point's coordinates)."""
    d = x._data
    n = d.shape[-1]
    if not isinstance(bins, int) and len(bins) != n:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    pts = d.reshape(-1, n)
    w = None if weight is None else weight._data.reshape(-1)
    hist, edges = _histogramdd_arrays(pts, bins, None if range is None else list(range), w,
                                      density)
    return _Histogramdd(wrap(hist), [wrap(e) for e in edges])


histogramdd = declare("histogramdd", function=_histogramdd, methods=())


def _unique_result(values: np.ndarray, inverse: np.ndarray, counts: np.ndarray,
                   return_inverse: bool, return_counts: bool):
    out = [wrap(values)]
    if return_inverse:
        out.append(wrap(inverse.astype(np.int64)))
    if return_counts:
        out.append(wrap(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


def _check_unique_dim(d: np.ndarray, pos: int) -> None:
    if any(n == 0 for k, n in enumerate(d.shape) if k != pos):
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")


def _unique(x: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
            return_counts: bool = False, dim: int | None = None):
    """The distinct values (sorted; each nan distinct), with the inverse indices and counts on
    request; with ``dim``, the distinct slices along it."""
    d = x._data
    if dim is None:
        values, inverse, counts = np.unique(d.reshape(-1), return_inverse=True,
                                            return_counts=True, equal_nan=False)
        return _unique_result(values, inverse.reshape(d.shape), counts, return_inverse,
                              return_counts)
    pos = _wrap_dim(dim, d.ndim)
    _check_unique_dim(d, pos)
    if d.shape[pos] == 0:
        empty = np.zeros(0, np.int64)
        return _unique_result(d.copy(), empty, empty, return_inverse, return_counts)
    values, inverse, counts = np.unique(d, return_inverse=True, return_counts=True, axis=pos)
    return _unique_result(values, inverse.reshape(-1), counts, return_inverse, return_counts)


unique = declare("unique", function=_unique)


def _unique_consecutive(x: Tensor, return_inverse: bool = False, return_counts: bool = False,
                        dim: int | None = None):
    """``x`` with each run of equal consecutive values (slices along ``dim``) kept once, with
    the inverse indices and the runs' lengths on request."""
    d = x._data
    if dim is None:
        flat = d.reshape(-1)
        rows, shape = flat.reshape(-1, 1), d.shape
    else:
        pos = _wrap_dim(dim, d.ndim)
        _check_unique_dim(d, pos)
        lead = d.shape[pos] if d.ndim else 1
        rows, shape = np.moveaxis(d, pos, 0).reshape(lead, d.size // lead if lead else 0), None
    n = len(rows)
    new = np.ones(n, bool)
    if n > 1:
        new[1:] = (rows[1:] != rows[:-1]).any(1)
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, n))
    inverse = np.cumsum(new) - 1
    if dim is None:
        return _unique_result(flat[starts], inverse.reshape(shape), counts, return_inverse,
                              return_counts)
    values = np.take(d, starts, axis=pos) if d.ndim else d.copy()
    return _unique_result(values, inverse, counts, return_inverse, return_counts)


unique_consecutive = declare("unique_consecutive", function=_unique_consecutive)


# ---------------------------------------------------------------- composites: differences, sums
def _diff(x: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
          append: Tensor | None = None) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (``prepend``/``append`` joined first)."""
    if x.ndim < 1:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    for extra in (prepend, append):
        if extra is not None and extra.ndim != x.ndim:
            raise RuntimeError("diff expects prepend or append to be the same dimension as "
                               "input")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if n == 0:
        return namespace_of(x).zeros_like(x).copy_(x)
    if prepend is not None or append is not None:
        parts = [t for t in (prepend, x, append) if t is not None]
        x = namespace_of(x).cat(parts, dim)
    pos = _wrap_dim(dim, x.ndim)
    length = x.shape[pos] - 1
    for _ in range(builtins.min(n, x.shape[pos])):
        after, before = x.narrow(pos, 1, length), x.narrow(pos, 0, length)
        x = after.logical_xor(before) if x._data.dtype == np.bool_ else after - before
        length -= 1
    return x


diff = declare("diff", function=_diff)


def _zeros_without(y: Tensor, dim: int) -> Tensor:
    sizes = list(y.shape)
    del sizes[dim]
    return namespace_of(y).zeros(sizes, dtype=y.dtype)


def _trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The integral of ``y`` along ``dim`` by the trapezoid rule, at the points ``x`` or with
    the spacing ``dx`` (1 when neither is given)."""
    pos = _wrap_dim(dim, y.ndim)
    if y.shape[pos] == 0:
        return _zeros_without(y, pos)
    if type(x) is Tensor:
        dxs = _spacing(y, x, pos)
        n = y.shape[pos]
        total = ((y.narrow(pos, 0, n - 1) + y.narrow(pos, 1, n - 1)) * dxs).sum(pos)
        return namespace_of(y).ops.aten.div.Scalar(total, 2.0)
    step = 1.0 if dx is None and x is None else (x if dx is None else dx)
    if y._data.dtype == np.bool_:
        raise RuntimeError("trapezoid: received a bool input for `y`, but bool is not supported")
    mul = namespace_of(y).ops.aten.mul.Scalar
    return mul(y.sum(pos) - mul(y.select(pos, 0) + y.select(pos, -1), 0.5), step)


def _spacing(y: Tensor, x: Tensor, pos: int) -> Tensor:
    """The differences of the sample points ``x``, shaped to broadcast against ``y``'s."""
    if x.ndim == 1:
        if x.shape[0] != y.shape[pos]:
            raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
        sizes = [1] * y.ndim
        sizes[pos] = x.shape[0]
        x = x.view(sizes)
    elif x.ndim < y.ndim:
        x = x.view((1,) * (y.ndim - x.ndim) + tuple(x.shape))
    m = x.shape[pos]
    return x.narrow(pos, 1, m - 1) - x.narrow(pos, 0, m - 1)


trapezoid = declare("trapezoid", function=_trapezoid, methods=())


def _trapz(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """``trapezoid``'s older name."""
    return _trapezoid(y, x, dx=dx, dim=dim)


trapz = declare("trapz", function=_trapz, methods=())


def _cumulative_trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The running integral of ``y`` along ``dim`` by the trapezoid rule."""
    pos = _wrap_dim(dim, y.ndim)
    n = y.shape[pos]
    left, right = y.narrow(pos, 0, builtins.max(n - 1, 0)), y.narrow(pos, builtins.min(n, 1),
                                                                     builtins.max(n - 1, 0))
    if type(x) is Tensor:
        total = ((left + right) * _spacing(y, x, pos)).cumsum(pos)
        return namespace_of(y).ops.aten.div.Scalar(total, 2.0)
    step = 1.0 if dx is None and x is None else (x if dx is None else dx)
    return namespace_of(y).ops.aten.mul.Scalar(left + right, step / 2.0).cumsum(pos)


cumulative_trapezoid = declare("cumulative_trapezoid", function=_cumulative_trapezoid,
                               methods=())


# ----------------------------------------------------------------------- composites: quantiles
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(x: Tensor, q, dim: int | None = None, keepdim: bool = False, *,
              interpolation: str = "linear", _ignore_nan: bool = False) -> Tensor:
    """The ``q``-th quantiles of ``x`` (all elements, or along ``dim``), between the sorted
    values as ``interpolation`` says; composite: a sort and two gathers."""
    name = "nanquantile" if _ignore_nan else "quantile"
    d = x._data
    qa = q._data if type(q) is Tensor else np.asarray(q, d.dtype)
    if d.size == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if qa.ndim > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if d.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if qa.dtype != d.dtype:
        raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest. Got {interpolation}")
    if ((qa < 0) | (qa > 1)).any():
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    ndim = x.ndim
    if dim is None or not ndim:
        out_shape = [1] * ndim if keepdim or dim is not None else []
        ordered = x.reshape(-1).sort()[0]
    else:
        pos = _wrap_dim(dim, ndim)
        out_shape = list(x.shape)
        if ndim:
            if keepdim:
                out_shape[pos] = 1
            else:
                del out_shape[pos]
        ordered = (x.sort()[0] if pos == ndim - 1 or not ndim
                   else x.unsqueeze(-1).transpose(pos, -1).sort()[0])
    if qa.ndim == 0:
        out_shape.insert(0, 1)
    else:
        out_shape.insert(0, qa.size)
    ordered = ordered.reshape([*out_shape[1:], ordered.shape[-1]])
    s = ordered._data
    last = s.shape[-1] - 1
    # the ranks are a function of q (a tensor q has a gradient through the weights)
    qt = q if type(q) is Tensor else wrap(qa)
    if _ignore_nan:
        ranks = qt * wrap((~np.isnan(s)).sum(-1, keepdims=True).astype(d.dtype) - 1)
        ranks = ranks.masked_fill(wrap(ranks._data < 0), 0)
    else:
        nan_rows = wrap(np.isnan(s).any(-1, keepdims=True))
        ranks = namespace_of(x).where(nan_rows, float(last), qt * last)
    r = ranks._data
    if interpolation == "lower":
        r = np.floor(r)
    elif interpolation == "higher":
        r = np.ceil(r)
    elif interpolation == "nearest":
        r = np.round(r)
    below_at = r.astype(np.int64)
    result = ordered.gather(-1, wrap(below_at))
    if interpolation in ("linear", "midpoint"):
        weights = wrap(np.full_like(r, 0.5)) if interpolation == "midpoint" else \
            ranks - wrap(below_at.astype(d.dtype))
        above = ordered.gather(-1, wrap(np.ceil(r).astype(np.int64)))
        result = result.lerp(above, weights)
    if qa.ndim:
        result = result.unsqueeze(0).transpose(0, -1)
    return shape_squeeze(result, -1, _op=SqueezeMatmul)


def _plain_quantile(x: Tensor, q, dim: int | None = None, keepdim: bool = False, *,
                    interpolation: str = "linear") -> Tensor:
    """The ``q``-th quantiles of ``x``; a nan in a slice makes its quantiles nan."""
    return _quantile(x, q, dim, keepdim, interpolation=interpolation)


def _nanquantile(x: Tensor, q, dim: int | None = None, keepdim: bool = False, *,
                 interpolation: str = "linear") -> Tensor:
    """The ``q``-th quantiles of the values of ``x`` that are not nan."""
    return _quantile(x, q, dim, keepdim, interpolation=interpolation, _ignore_nan=True)


quantile = declare("quantile", function=_plain_quantile)
nanquantile = declare("nanquantile", function=_nanquantile)


# ---------------------------------------------------------------- composites: covariance
def _cov(x: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
         aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables in the rows of ``x`` (observations in columns),
    weighted by ``fweights`` (counts) and ``aweights`` (importance)."""
    if x.ndim > 2:
        raise RuntimeError("cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {x.ndim} dimensions")
    if x._data.dtype == np.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    ns = namespace_of(x)
    obs = x.reshape(1, -1) if x.ndim < 2 else x
    n = obs.shape[1]
    w = None
    if fweights is not None:
        fw = fweights._data
        if fw.ndim > 1:
            raise RuntimeError("cov(): expected fweights to have one or fewer dimensions but got "
                               f"fweights with {fw.ndim} dimensions")
        if fw.dtype.kind not in "iu":
            raise RuntimeError("cov(): expected fweights to have integral dtype but got fweights "
                               f"with {FROM_NUMPY[fw.dtype]._short} dtype")
        if fw.size != n:
            raise RuntimeError("cov(): expected fweights to have the same numel as there are "
                               f"observations in the input but got {fw.size} != {n}")
        if n and fw.min() < 0:
            raise RuntimeError("cov(): fweights cannot be negative")
        w = fweights
    if aweights is not None:
        aw = aweights._data
        if aw.ndim > 1:
            raise RuntimeError("cov(): expected aweights to have one or fewer dimensions but got "
                               f"aweights with {aw.ndim} dimensions")
        if aw.dtype.kind != "f":
            raise RuntimeError("cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {FROM_NUMPY[aw.dtype]._short} dtype")
        if aw.size != n:
            raise RuntimeError("cov(): expected aweights to have the same numel as there are "
                               f"observations in the input but got {aw.size} != {n}")
        if n and aw.min() < 0:
            raise RuntimeError("cov(): aweights cannot be negative")
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum = ns.tensor(n, dtype=_dtype.int64)
    else:
        w_sum = w.sum()
        if not w_sum._data.item() != 0:
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (obs if w is None else obs * w).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm = w_sum - correction
    if norm._data.item() <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm = norm * 0
    centred = obs - avg.unsqueeze(1)
    c = centred.mm((centred if w is None else centred * w).t())
    return c.true_divide(norm).squeeze()


cov = declare("cov", function=_cov)


def _corrcoef(x: Tensor) -> Tensor:
    """Pearson's correlation coefficients of the variables in the rows of ``x``, clipped to
    [-1, 1]."""
    if x.ndim > 2:
        raise RuntimeError("corrcoef(): expected input to have two or fewer dimensions but got "
                           f"an input with {x.ndim} dimensions")
    c = _cov(x)
    if c.ndim == 0:
        return c / c
    std = c.diagonal().sqrt()
    c = c / std.view(-1, 1)
    c = c / std.view(1, -1)
    return c.clip(-1, 1)


corrcoef = declare("corrcoef", function=_corrcoef)


# ---------------------------------------------------------------- composites: gradient
def _gradient_checks(x: Tensor, spacing, dims, given_dim: bool, edge_order: int) -> None:
    """torch's checks of gradient's arguments, in its order."""
    if x._data.dtype == np.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    if isinstance(spacing, (list, tuple)):
        if not given_dim and len(spacing) != x.ndim:
            raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar, or "
                               f"a list of length equal to 'self.dim() = {x.ndim}', since dim "
                               "argument was not given, but got a list of length "
                               f"{len(spacing)}")
        if given_dim and len(spacing) != len(dims):
            raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar or "
                               "it's spacing and dim arguments to have the same length, but got "
                               f"a spacing argument of length {len(spacing)} and a dim argument "
                               f"of length {len(dims)}.")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    wrap_all = normalize_dims(list(dims), x.ndim)  # (torch's errors for a bad or repeated dim)
    for d in wrap_all:
        if x.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")


def _gradient_uniform(x: Tensor, step, pos: int, edge_order: int) -> Tensor:
    # central differences inside, one-sided ones (first or second order) at the two ends
    def part(start: int, stop: int | None = None) -> Tensor:
        n = x.shape[pos]
        start = start + n if start < 0 else start
        stop = n if stop is None else stop + n if stop < 0 else builtins.min(stop, n)
        return x.narrow(pos, start, stop - start)

    center = (part(2) - part(0, -2)) / step
    if edge_order == 1:
        first = (part(1, 2) - part(0, 1)) / step
        last = (part(-1) - part(-2, -1)) / step
    else:
        first = (part(0, 1) * -1.5 + part(1, 2) * 2 - part(2, 3) * 0.5) / step
        last = (part(-3, -2) * 0.5 + part(-2, -1) * -2 + part(-1) * 1.5) / step
    return namespace_of(x).cat([first, center / 2, last], pos)


def _gradient_points(x: Tensor, points: Tensor, pos: int, edge_order: int) -> Tensor:
    # the second-order accurate differences of unevenly spaced samples (at ``points``)
    if points.ndim != 1:
        raise RuntimeError("torch.gradient expected each element of spacing to have one "
                           f"dimension, but got an element with {points.ndim} dimensions!")
    n = x.shape[pos]
    shape = [1] * x.ndim
    shape[pos] = -1
    h = points.diff(1, 0)
    h1, h2 = h.narrow(0, 0, h.shape[0] - 1), h.narrow(0, 1, h.shape[0] - 1)
    a = (-h2 / (h1 * (h1 + h2))).reshape(shape)
    b = ((h2 - h1) / (h1 * h2)).reshape(shape)
    c = (h1 / (h2 * (h1 + h2))).reshape(shape)
    center = (a * x.narrow(pos, 0, n - 2) + b * x.narrow(pos, 1, n - 2)
              + c * x.narrow(pos, 2, n - 2))
    if edge_order == 1:
        first = (x.narrow(pos, 1, 1) - x.narrow(pos, 0, 1)) / h[0]
        last = (x.narrow(pos, n - 1, 1) - x.narrow(pos, n - 2, 1)) / h[-1]
    else:
        d0, d1, e1, e2 = h[0], h[1], h[-1], h[-2]
        first = (-(2.0 * d0 + d1) / (d0 * (d0 + d1)) * x.narrow(pos, 0, 1)
                 + (d0 + d1) / (d0 * d1) * x.narrow(pos, 1, 1)
                 + (-d0) / (d1 * (d0 + d1)) * x.narrow(pos, 2, 1))
        last = (e1 / (e2 * (e1 + e2)) * x.narrow(pos, n - 3, 1)
                - (e1 + e2) / (e1 * e2) * x.narrow(pos, n - 2, 1)
                + (2 * e1 + e2) / (e1 * (e1 + e2)) * x.narrow(pos, n - 1, 1))
    return namespace_of(x).cat([first, center, last], pos)


def _gradient(x: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:
    """The derivative of the samples ``x`` along each of ``dim`` (all dims for None) by
    second-order central differences, with samples ``spacing`` apart (a number, one per dim,
    or the sample coordinates as 1-d tensors)."""
    given_dim = dim is not None
    dims = (list(range(x.ndim)) if dim is None else [dim] if isinstance(dim, int)
            else list(dim))
    if spacing is None:
        spacing = 1
    _gradient_checks(x, spacing, dims, given_dim, edge_order)
    steps = spacing if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    out = []
    for step, d in zip(steps, dims):
        pos = _wrap_dim(d, x.ndim)
        if type(step) is Tensor:
            out.append(_gradient_points(x, step, pos, edge_order))
        else:
            out.append(_gradient_uniform(x, step, pos, edge_order))
    return tuple(out)


gradient = declare("gradient", function=_gradient, methods=())
