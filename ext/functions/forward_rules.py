"""Forward-mode derivatives (jvp rules) of the built-in ops.

Each rule takes the op's recorded arguments (primal values), its primal output and the tangents
of its arguments (None where an argument has none) and returns the output's tangent: the
directional derivative ``J @ t``. Linear ops apply themselves to the tangents; the others are
the derivative formulas their backward uses, read forwards. Rules are attached to the op classes
by ``install`` when ``ext.functions`` loads.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from . import activation, indexing, inplace, reduction, setitem, shape
from .pointwise import selection, unary
from .pointwise.selection import where


def _zeros_like(x: Tensor) -> Tensor:
    return x.new_zeros(x.shape)


def _or_zeros(t: Tensor | None, like: Tensor) -> Tensor:
    return _zeros_like(like) if t is None else t


def _sum(*terms) -> Tensor | None:
    terms = [t for t in terms if t is not None]
    if not terms:
        return None
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


def _linear(fn):
    """The rule of an op that is linear in its first argument: the op applied to the tangent."""
    return lambda args, out, t: fn(t[0], *args[1:])


def _chain(derivative):
    """The rule of a one-input elementwise op: tangent times the derivative."""
    return lambda args, out, t: t[0] * derivative(args[0], out)


def _piecewise_constant(args, out, t):
    return _zeros_like(out)


def _reduce_dims(x: Tensor, dim) -> tuple:
    if dim is None or dim == ():
        return tuple(range(x.ndim))
    return (dim,) if isinstance(dim, int) else tuple(dim)


# ---------------------------------------------------------------------------------- selection
def _clamp_scalar(args, out, t):
    return where(selection._inside(args[0], args[1], args[2]), t[0], 0.0)


def _clamp_tensor(args, out, t):
    # torch's clamp_jvp: a comparison with nan is False, so a nan input takes the tangent of
    # whichever branch its comparisons fall through to.
    x, lo, hi = args
    tx, tlo, thi = (0.0 if v is None else v for v in t)
    if lo is not None and hi is not None:
        return where(lo > hi, thi, where(x < lo, tlo, where(x > hi, thi, tx)))
    if lo is not None:
        return where(x > lo, tx, tlo)
    return where(x < hi, tx, thi)


def _clamp_min_tensor(args, out, t):
    return _clamp_tensor((args[0], args[1], None), out, (t[0], t[1], None))


def _clamp_max_tensor(args, out, t):
    return _clamp_tensor((args[0], None, args[1]), out, (t[0], None, t[1]))


def _extremum(larger: bool):
    # torch's: tb + w * (ta - tb), w = 1 where a wins, 1/2 at a tie, else 0 (a nan tangent on
    # either side spreads, as 0 * nan); a missing tangent drops out of the sums, as torch's
    # zero tensors do
    def rule(args, out, t):
        a, b = args
        ta, tb = t
        w = where(a == b, 0.5, (a > b if larger else a < b).to(out.dtype))
        if tb is None:
            return w * ta
        return tb + w * (-tb if ta is None else ta - tb)

    return rule


def _where(args, out, t):
    cond = args[0]
    return where(cond, 0.0 if t[1] is None else t[1], 0.0 if t[2] is None else t[2])


# ---------------------------------------------------------------------------------- reductions
def _amax(args, out, t):
    # torch's amaxamin_jvp: the mean of the tangents where x equals the result (nan where none
    # does, as at a nan)
    x, dim, keepdim = args
    dims = _reduce_dims(x, dim)
    mask = x == reduction._expand_back(out, dims, keepdim, tuple(x.shape))
    return where(mask, t[0], 0.0).sum(dims, keepdim=keepdim) / mask.sum(dims, keepdim=keepdim)


def _prod(args, out, t):
    # torch's: prod_backward(ones, x, result[, dim, keepdim]) * t, summed over the reduced dims
    x = args[0].to(out.dtype)
    ones = out.new_ones(out.shape)
    if len(args) == 1:
        return (reduction.prod_backward(ones, x, out) * t[0]).sum()
    dim, keepdim = args[1], args[2]
    return (reduction.prod_backward(ones, x, out, dim, keepdim) * t[0]).sum(dim, keepdim)


def _cumprod(args, out, t):
    # torch's cumprod_jvp: (t / x).cumsum * result where no zero came before; from a slice's
    # first zero on, the running product of x with t put in place of that zero
    x, dim = args[0], args[1]
    tx = t[0]
    gradient = (tx / x).cumsum(dim) * out
    zero = x == 0
    if x.ndim == 0:
        return where(zero, tx, gradient)
    first = zero.logical_and(zero.cumsum(dim) == 1)
    after_first = first.cumsum(dim).to(_dtype.bool)
    return where(after_first, where(first, tx, x).cumprod(dim), gradient).to(out.dtype)


def _variance(args, out, t, std: bool):
    # torch's: var_backward(t, x, keepdim=True) summed over the reduced dims; for std, over
    # 2 std (0 where std is 0)
    x, dim, correction, keepdim = args
    dims = None if dim is None else _reduce_dims(x, dim)
    terms = reduction.var_backward(t[0], x, dims, correction, True)
    with np.errstate(invalid="ignore"):  # (inf - inf: torch's nan, without NumPy's warning)
        dvar = terms.sum(tuple(range(x.ndim)) if dims is None else dims, keepdim=keepdim)
    if not std:
        return dvar
    return where(out == 0, 0.0, dvar / (2 * out))


def _sort(args, out, t):
    x, dim, descending = args
    if x.ndim == 0:
        return t[0], None
    idx = reduction.sort(x.detach(), dim, descending, stable=True).indices
    return t[0].gather(dim, idx), None


# ---------------------------------------------------------------------------------- activation
def _softmax(args, out, t):
    dim = args[1]
    return out * (t[0] - (out * t[0]).sum(dim, keepdim=True))


def _log_softmax(args, out, t):
    dim = args[1]
    return t[0] - (out.exp() * t[0]).sum(dim, keepdim=True)


def _logsumexp(args, out, t):
    # torch's logsumexp_jvp: sum(e * t) / sum(e) with e = exp(x - amax(x)), so that an empty
    # reduction gives 0 / 0 = nan.
    x, dim, keepdim = args
    dims = _reduce_dims(x, dim)
    e = (x - x.amax(dims, keepdim=True)).exp() if x.numel() else x.exp()
    return (e * t[0]).sum(dims, keepdim=keepdim) / e.sum(dims, keepdim=keepdim)


def _addmm(args, out, t):
    bias, m1, m2, beta, alpha = args
    terms = []
    if t[0] is not None:
        terms.append(t[0] * beta if beta != 1 else t[0])
    # (the products with a missing tangent count as with zeros, as in torch: nan where the
    # other factor has a nan or inf)
    prod = _or_zeros(t[1], m1).mm(m2) + m1.mm(_or_zeros(t[2], m2))
    terms.append(prod * alpha if alpha != 1 else prod)
    return _sum(*terms).expand(out.shape)


def _nll(args, out, t):
    x, target, weight, mode, ignore_index = args
    name = {0: "none", 1: "mean", 2: "sum"}[mode]
    return activation.nll_loss(t[0], target, weight, ignore_index=ignore_index, reduction=name)


def _mse(args, out, t):
    x, target, mode = args
    for v in (x, target):
        if not v.is_floating_point():
            # torch computes each side's term of the tangent into a tensor of that side's dtype
            raise RuntimeError(f"result type {out.dtype._short} can't be cast to the desired "
                               f"output type {v.dtype._short}")
    # One term per side, as torch's, a missing tangent being zeros (inf * 0 is nan there):
    # (x - y) * 2 * tx + (y - x) * 2 * ty
    terms = ((x - target) * 2 * _or_zeros(t[0], x)) + (target - x) * 2 * _or_zeros(t[1], target)
    return terms.mean() if mode == 1 else terms.sum() if mode == 2 else terms


# ---------------------------------------------------------------------------------- joins
def _joined(fn):
    def rule(args, out, t):
        tensors, dim = args[:-1], args[-1]
        return fn([_or_zeros(tt, x) for tt, x in zip(t[:-1], tensors)], dim)

    return rule


def _fill_tensor(args, out, t):
    # The old value is overwritten: its tangent is gone, the value's spreads everywhere.
    return _zeros_like(out) if t[1] is None else t[1].expand(out.shape) + _zeros_like(out)


def _copy(args, out, t):
    if t[1] is None:
        return _zeros_like(out)
    return t[1].to(out.dtype).expand(out.shape) + _zeros_like(out)


RULES = {
    # one-input math
    unary.Neg: lambda a, o, t: -t[0],
    unary.Log: lambda a, o, t: t[0] / a[0],
    unary.Sin: _chain(lambda x, y: x.cos()), unary.Cos: _chain(lambda x, y: -x.sin()),
    unary.Tanh: _chain(lambda x, y: 1 - y * y), unary.Sigmoid: _chain(lambda x, y: (1 - y) * y),
    unary.Sqrt: lambda a, o, t: t[0] / (2 * o),
    unary.Expm1: _chain(lambda x, y: y + 1), unary.Tan: _chain(lambda x, y: y * y + 1),
    unary.Rsqrt: _chain(lambda x, y: y * y * y * -0.5), unary.Abs: _chain(lambda x, y: x.sign()),
    unary.Log1p: lambda a, o, t: t[0] / (a[0] + 1),
    unary.Sign: _piecewise_constant, unary.Round: _piecewise_constant,
    unary.RoundDecimals: _piecewise_constant, unary.Floor: _piecewise_constant,
    unary.Ceil: _piecewise_constant,
    # selection
    selection.ClampScalar: _clamp_scalar, selection.ClampTensor: _clamp_tensor,
    selection.ClampMinScalar: lambda a, o, t: where(a[0] >= a[1], t[0], 0.0),
    selection.ClampMaxScalar: lambda a, o, t: where(a[0] <= a[1], t[0], 0.0),
    selection.ClampMinTensor: _clamp_min_tensor, selection.ClampMaxTensor: _clamp_max_tensor,
    selection.Maximum: _extremum(True), selection.Minimum: _extremum(False),
    selection.Where: _where,
    # reductions
    reduction.MeanAll: lambda a, o, t: t[0].mean(),
    reduction.MeanDim: _linear(lambda t, dim, keepdim=False: t.mean(dim, keepdim=keepdim)),
    reduction.Cumsum: _linear(lambda t, dim: t.cumsum(dim)),
    reduction.Cumprod: _cumprod,
    reduction.Amax: _amax, reduction.Amin: _amax,
    reduction.ProdAll: _prod, reduction.ProdDim: _prod,
    reduction.Var: lambda a, o, t: _variance(a, o, t, False),
    reduction.Std: lambda a, o, t: _variance(a, o, t, True),
    reduction.Sort: _sort, reduction.SortStable: _sort,
    reduction.Scatter: lambda a, o, t: reduction.scatter(
        _or_zeros(t[0], a[0]), a[1], a[2], _or_zeros(t[3], a[3])),
    reduction.ScatterValue: lambda a, o, t: reduction.scatter(t[0], a[1], a[2], 0.0),
    # shapes
    shape.T: lambda a, o, t: t[0].t(),
    shape.Transpose: _linear(lambda t, d0, d1: t.transpose(d0, d1)),
    shape.Permute: _linear(shape.permute),
    shape.Unsqueeze: _linear(shape.unsqueeze),
    shape.SqueezeDim: _linear(lambda t, dim: shape.squeeze(t, dim)),
    shape.SqueezeMatmul: _linear(lambda t, dim: shape.squeeze(t, dim)),
    shape.SqueezeDims: _linear(lambda t, dim: shape.squeeze(t, dim)),
    shape.SqueezeAll: lambda a, o, t: t[0].reshape(o.shape),
    shape.Expand: _linear(lambda t, sizes: t.expand(sizes)),
    shape.Clone: lambda a, o, t: t[0].clone(),
    shape.ToCopy: _linear(lambda t, dtype: t.to(dtype)),
    shape.Unbind: _linear(lambda t, dim=0: shape.unbind(t, dim)),
    shape.Split: _linear(lambda t, size, dim: shape.split(t, size, dim)),
    shape.SplitWithSizes: _linear(lambda t, sizes, dim: shape.split_with_sizes(t, sizes, dim)),
    shape.Stack: _joined(shape.stack), shape.Cat: _joined(shape.cat),
    # indexing
    indexing.Alias: lambda a, o, t: t[0],
    indexing.Select: _linear(indexing.select),
    indexing.Slice: _linear(indexing._slice),
    indexing.SelectBackward: _linear(indexing.select_backward),
    indexing.SliceBackward: _linear(indexing.slice_backward),
    indexing.Index: lambda a, o, t: indexing._index(t[0], a[1], False),
    indexing.IndexPut: lambda a, o, t: _sum(
        t[0], None if t[2] is None else indexing.index_backward(t[2], tuple(a[0].shape), a[1])),
    indexing.IndexSelect: _linear(indexing.index_select),
    indexing.IndexAdd: lambda a, o, t: _sum(
        t[0], None if t[3] is None else indexing.index_select_backward(
            t[3] * a[4] if a[4] != 1 else t[3], tuple(a[0].shape), a[1], a[2])),
    indexing.Gather: lambda a, o, t: indexing.gather(t[0], a[1], a[2]),
    indexing.ScatterAdd: lambda a, o, t: _sum(
        t[0], None if t[3] is None else indexing.gather_backward(
            t[3], tuple(a[0].shape), a[1], a[2])),
    # in-place writes
    inplace.Zero: _piecewise_constant, inplace.FillScalar: _piecewise_constant,
    inplace.FillTensor: _fill_tensor, inplace.Copy: _copy,
    setitem.IndexPut: lambda a, o, t: setitem.index_put(
        _or_zeros(t[0], a[0]), a[1],
        _or_zeros(t[2], a[2]) if isinstance(a[2], Tensor) else 0.0, a[3]),
    # softmax family and losses
    activation.Softmax: _softmax, activation.LogSoftmax: _log_softmax,
    activation.Logsumexp: _logsumexp, activation.Addmm: _addmm,
    activation.NllLoss: _nll, activation.MseLoss: _mse,
    activation.MaskedFill: lambda a, o, t: activation.masked_fill_zero(t[0], a[1]),
}


def install() -> None:
    """Attach each rule to its op class as its ``jvp``."""
    for op, rule in RULES.items():
        op.jvp = staticmethod(rule)
