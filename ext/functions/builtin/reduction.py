"""Reductions over all elements or over some dims: sum, mean, max/min, amax/amin, prod, var/std,
argmax/argmin, any/all, and the ops that keep the dims but order or accumulate along one (sort,
cumsum, cumprod, and cumprod's gradient, cumprod_backward), and scatter. Each is declared once
(``_op.declare``)."""

from __future__ import annotations

import builtins
import math
import warnings
from typing import NamedTuple

import numpy as np

from ... import _dtype
from ..._args import as_number, not_a_tensor
from ..._dtype import FROM_NUMPY
from ..._state import STATE
from ..._tensor import Tensor, _wrap_dim, wrap
from .._op import LINEAR, Overload, declare, dispatch, is_half
from ._builtin import C_TYPES, as_array, namespace_of
from .indexing import _INTEGERS, _along
from .shape import wrap_dims

__all__ = ["sum", "mean", "max", "min", "amax", "amin", "prod", "var", "std", "cumsum",
           "cumprod", "argmax", "argmin", "sort", "scatter", "normalize_dims", "return_types"]


def check_keepdim(keepdim, name: str) -> None:
    """torch's TypeError for a keepdim that is not a bool (``keepdim="yes"``)."""
    if keepdim is not False and keepdim is not True:
        raise TypeError(f"{name}(): argument 'keepdim' must be bool, not "
                        f"{type(keepdim).__name__}")


def normalize_dims(dim, ndim: int) -> tuple:
    """Dims as a sorted tuple of non-negative ints, with torch's IndexError when out of range."""
    if type(dim) is int:
        return (_wrap_dim(dim, ndim),)
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if not builtins.all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise TypeError(f"received an invalid combination of arguments - got "
                        f"(dim={type(dim).__name__}, )")
    return tuple(sorted(wrap_dims(dims, ndim)))


def _axes(dim, ndim: int):
    """NumPy axes for a reduction over ``dim``: None (all) for () as torch reads it, and () for
    any dim of a 0-d tensor (nothing to reduce)."""
    axes = normalize_dims(dim, ndim)
    if not axes and not ndim:
        return ()
    if isinstance(dim, (tuple, list)) and not dim:
        return None
    return () if ndim == 0 else axes


def _as_dim_tuple(dim) -> tuple:
    return (dim,) if isinstance(dim, int) else tuple(dim)


def _expand_back(grad: Tensor, dims: tuple, keepdim: bool, sizes: tuple) -> Tensor:
    """Undo a reduction's shape: put the reduced dims back (size 1) and expand to ``sizes``."""
    if not keepdim and sizes:
        if not dims:
            dims = tuple(range(len(sizes)))
        for d in sorted(_wrap_dim(d, len(sizes)) for d in dims):
            grad = grad.unsqueeze(d)
    return grad.expand(sizes)


class SumAll(Overload):
    """Sum of all elements: the gradient is grad expanded to the input's shape."""

    node_name = "SumBackward0"
    saved_attrs = ("self_sym_sizes",)
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        return grad.expand(ctx.self_sym_sizes)


class SumDim(Overload):
    """Sum over ``dim``: the gradient is grad with the dims put back, expanded."""

    node_name = "SumBackward1"
    args = ("self", "dim", "keepdim")
    saved_attrs = ("dim", "keepdim", "self_sym_sizes")
    tensor_positions = (0,)
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        return _expand_back(grad, ctx.dim, ctx.keepdim, ctx.self_sym_sizes), None, None


def _dtype_arg(dtype, fn: str, dim) -> np.dtype:
    """The NumPy type of a reduction's ``dtype=`` argument, with torch's TypeError for anything
    but an ext dtype."""
    if type(dtype) is _dtype.dtype:
        return dtype._np
    if dim is None:
        raise TypeError(f"{fn}() received an invalid combination of arguments - got (dtype="
                        f"{type(dtype).__name__}, )")
    raise TypeError(f"{fn}(): argument 'dtype' must be ext.dtype, not {type(dtype).__name__}")


def np_mean(d: np.ndarray, axis=None, keepdims: bool = False) -> np.ndarray:
    """NumPy's mean, computed as it does (float16 accumulates in float32), with the ufunc called
    from here: a NaN it meets warns as ext's own warnings do (silenced), not from NumPy's module
    as ``ndarray.mean`` would (torch computes it silently)."""
    n = d.size if axis is None else int(np.prod([d.shape[a] for a in axis]))
    # (bfloat16, NumPy kind "V", accumulates in float32 too, as torch's kernel does)
    acc = np.float32 if d.dtype == np.float16 or d.dtype.kind == "V" else None
    return (np.add.reduce(d, axis=axis, dtype=acc, keepdims=keepdims) / n).astype(d.dtype,
                                                                                  copy=False)


def _sum_dtype(d: np.ndarray, dtype, fn: str = "sum", dim=None):
    if dtype is not None:
        return _dtype_arg(dtype, fn, dim)
    # Integer and bool sums accumulate in int64, as in torch.
    return np.int64 if d.dtype.kind in "biu" else None


def _sum(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Sum of all elements, or over ``dim`` (an int or a tuple of ints)."""
    check_keepdim(keepdim, "sum")
    if type(x) is not Tensor:
        raise not_a_tensor(x, "sum")
    d = x._data
    if d.dtype.char in "eE" and dtype is None or dtype is _dtype.bfloat16:  # (is_half)
        return _half_sum(x, dim, keepdim)
    if dim is None:
        return dispatch(SumAll, np.add.reduce(d, axis=None, dtype=_sum_dtype(d, dtype)), (x,))
    data = np.add.reduce(d, axis=_axes(dim, d.ndim), keepdims=keepdim,
                         dtype=_sum_dtype(d, dtype, "sum", dim))
    return dispatch(SumDim, data, (x, (dim,) if type(dim) is int else _as_dim_tuple(dim),
                                   keepdim))


def _half_sum(x: Tensor, dim, keepdim: bool) -> Tensor:
    """A sum into float16 or bfloat16 as torch's kernel computes it: accumulated in float32 and
    rounded once (NumPy's and ml_dtypes' own loops round partial sums)."""
    d = x._data
    bf16 = d.dtype if is_half(d) else _dtype.bfloat16._np
    if d.dtype != bf16:
        d = d.astype(bf16)
    if dim is None:
        data = np.add.reduce(d, axis=None, dtype=np.float32)
        return dispatch(SumAll, np.asarray(data).astype(bf16), (x,))
    data = np.add.reduce(d, axis=_axes(dim, d.ndim), keepdims=keepdim, dtype=np.float32)
    return dispatch(SumDim, np.asarray(data).astype(bf16),
                    (x, (dim,) if type(dim) is int else _as_dim_tuple(dim), keepdim))


sum = declare("sum", SumAll, SumDim, function=_sum)  # noqa: A001 - torch's name


class MeanAll(Overload):
    """Mean of all elements: grad / numel, expanded."""

    node_name = "MeanBackward0"
    saved_attrs = ("self_sym_numel", "self_sym_sizes")
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        # torch: sum_backward(grad, ...) / numel, a division by a number (DivBackward1)
        return namespace_of(grad).ops.aten.div.Scalar(grad.expand(ctx.self_sym_sizes),
                                                      ctx.self_sym_numel)


class MeanDim(Overload):
    """Mean over ``dim``: grad divided by the number of reduced elements, expanded."""

    node_name = "MeanBackward1"
    args = ("self", "dim", "keepdim")
    saved_attrs = ("dim", "keepdim", "self_sym_numel", "self_sym_sizes")
    tensor_positions = (0,)
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        sizes = ctx.self_sym_sizes
        count = 1
        for d in ctx.dim or range(len(sizes)):
            count *= sizes[_wrap_dim(d, len(sizes))] if sizes else 1
        return namespace_of(grad).ops.aten.div.Scalar(
            _expand_back(grad, ctx.dim, ctx.keepdim, sizes), count), None, None


def _mean(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Mean of all elements, or over ``dim``."""
    check_keepdim(keepdim, "mean")
    if type(x) is not Tensor:
        raise not_a_tensor(x, "mean")
    d = x._data
    if dtype is not None:
        d = d.astype(_dtype_arg(dtype, "mean", dim))
    if not _dtype.is_floating_np(d.dtype):
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           "floating point or complex dtype. Got: "
                           f"{FROM_NUMPY[d.dtype]._short}")
    if dim is None:
        return dispatch(MeanAll, np_mean(d), (x,))
    data = np_mean(d, _axes(dim, d.ndim), keepdim)
    return dispatch(MeanDim, data, (x, _as_dim_tuple(dim), keepdim))


mean = declare("mean", MeanAll, MeanDim, function=_mean)


# ---------------------------------------------------------------------------------- named tuples
def _named_tuple(name: str):
    class Result(NamedTuple):
        values: Tensor
        indices: Tensor

        def __repr__(self) -> str:
            return f"ext.return_types.{name}(\nvalues={self.values!r},\nindices={self.indices!r})"

    Result.__name__ = Result.__qualname__ = name
    return Result


class return_types:  # noqa: N801 - torch's name
    """The named tuples that reductions with indices return (``values``, ``indices``)."""

    max = _named_tuple("max")
    min = _named_tuple("min")
    sort = _named_tuple("sort")


# ---------------------------------------------------------------------------------- scatter
class Scatter(Overload):
    """``self`` with ``src`` written at ``index`` along ``dim``: src's gradient is gathered back,
    self's is grad with the written places zeroed."""

    node_name = "ScatterBackward0"
    args = ("self", "dim", "index", "src")
    saved_fields = ("index",)
    saved_attrs = ("dim",)
    tensor_positions = (0, 3)
    jvp_zeros = True

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        gx = gsrc = None
        if ctx.needs_input_grad[0]:
            gx = grad.scatter(ctx.dim, index, 0.0)
        if ctx.needs_input_grad[3]:
            gsrc = grad.gather(ctx.dim, index)
        return gx, None, None, gsrc

    @staticmethod
    def jvp(ctx, tangent, _dim, _index, tangent_src):
        # linear in self and src together: the op on their tangents (zeros for none)
        (index,) = ctx.saved_tensors
        return tangent.scatter(ctx.dim, index, tangent_src)


class ScatterValue(Overload):
    """``x.scatter(dim, index, value)`` with a number: only x has a gradient."""

    node_name = "ScatterBackward1"
    args = ("self", "dim", "index", "value")
    saved_fields = ("index",)
    saved_attrs = ("dim",)
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return grad.scatter(ctx.dim, index, 0.0), None, None, None

    @staticmethod
    def jvp(ctx, tangent, *_):
        (index,) = ctx.saved_tensors
        return tangent.scatter(ctx.dim, index, 0.0)


def _scatter(x: Tensor, dim: int, index: Tensor, src=None, *, value=None) -> Tensor:
    """A copy of ``x`` with ``src`` (a tensor or a number, or ``value``) written at ``index``
    along ``dim``: ``out[index[i][j]][j] = src[i][j]`` for dim 0."""
    if src is None:
        src = value
    d = x._data
    pos = _wrap_dim(dim, d.ndim)
    idx = index._data
    _check_scatter(d, pos, idx, src)
    d = d.copy()
    if idx.size:
        # A 0-d tensor takes part as a 1-d tensor of one element, as in torch.
        flat = d.reshape(-1) if not d.ndim else d
        ix = idx.reshape(-1) if not idx.ndim else idx
        if type(src) is Tensor:
            sd = src._data.reshape(-1) if not src._data.ndim else src._data
            values = sd[tuple(slice(0, n) for n in ix.shape)]
        else:
            values = np.asarray(src).astype(d.dtype)
        flat[_along(ix, pos)] = values
    return dispatch(Scatter if type(src) is Tensor else ScatterValue, d, (x, dim, index, src))


scatter = declare("scatter", Scatter, ScatterValue, function=_scatter, inplace="scatter_")


def _check_scatter(d: np.ndarray, dim: int, idx: np.ndarray, src) -> None:
    """torch's checks of scatter's arguments, in torch's order (an empty index writes nothing
    and skips the checks of shapes)."""
    if idx.size and idx.dtype not in _INTEGERS:
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    sd = src._data if type(src) is Tensor else None
    if sd is not None and sd.dtype != d.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if not idx.size:
        return
    ndim = builtins.max(idx.ndim, 1)
    if builtins.max(d.ndim, 1) != ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if sd is not None and builtins.max(sd.ndim, 1) != ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    ishape, xshape = idx.shape or (1,), d.shape or (1,)
    wrong = builtins.any(k != dim and ishape[k] > xshape[k] for k in range(ndim))
    if sd is not None:
        sshape = sd.shape or (1,)
        wrong = wrong or builtins.any(ishape[k] > sshape[k] for k in range(ndim))
    if wrong:
        msg = (f"Expected index {list(idx.shape)} to be no larger than self {list(d.shape)} "
               f"apart from dimension {dim}")
        if sd is not None:
            msg += f" and to be no larger size than src {list(sd.shape)}"
        raise RuntimeError(msg)
    size = xshape[dim]
    bad = (idx < 0) | (idx >= size)
    if bad.any():
        raise RuntimeError(f"index {idx[bad].flat[0]} is out of bounds for dimension {dim} with "
                           f"size {size}")


def _scatter_back(grad: Tensor, dim: int, indices: Tensor, sizes: tuple,
                  keepdim: bool) -> Tensor:
    """The gradient of a reduction that picked one element per slice: grad at the picked places,
    zero elsewhere."""
    if not sizes:
        return grad
    if not keepdim:
        grad = grad.unsqueeze(dim)
        indices = indices.unsqueeze(dim)
    return namespace_of(grad).zeros(sizes, dtype=grad.dtype).scatter(dim, indices, grad)


# ---------------------------------------------------------------------------------- max / min
class MaxAll(Overload):
    """The largest element: the gradient is split evenly among the elements equal to it."""

    node_name = "MaxBackward1"
    saved_fields = ("self", "result")

    @staticmethod
    def backward(ctx, grad):
        x, result = ctx.saved_tensors
        # torch's evenly_distribute_backward: zeros with grad / count written where x equals
        # the result (where x is nan, when the result is nan); no value read on the host, so
        # that torch.compile traces it
        mask = (x == result) | (x.isnan() & result.isnan())
        return grad.new_zeros(x.shape, dtype=x.dtype).masked_fill_(mask, grad / mask.sum())

    @staticmethod
    def jvp(ctx, tangent):
        # torch's evenly_read_jvp: the tangent shared among the elements equal to the result
        x, result = ctx.saved_tensors
        mask = x == result
        return (mask * (tangent / mask.sum())).sum()


class MinAll(MaxAll):
    """The smallest element: the gradient is split evenly among the elements equal to it."""

    node_name = "MinBackward1"


class MaxDim(Overload):
    """The largest element along ``dim``: the gradient goes to the returned index."""

    node_name = "MaxBackward0"
    args = ("self", "dim", "keepdim")
    outputs = ("values", "indices")
    non_differentiable = ("indices",)
    returns = return_types.max
    saved_fields = ("indices",)
    saved_attrs = ("dim", "keepdim", "self_sym_sizes")
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad, grad_indices=None):
        (indices,) = ctx.saved_tensors
        return _scatter_back(grad, ctx.dim, indices, ctx.self_sym_sizes, ctx.keepdim), None, None

    @staticmethod
    def jvp(ctx, tangent, *_):
        # the tangent at the returned index
        (indices,) = ctx.saved_tensors
        if not ctx.self_sym_sizes:
            return tangent, None
        if ctx.keepdim:
            return tangent.gather(ctx.dim, indices), None
        return tangent.gather(ctx.dim, indices.unsqueeze(ctx.dim)).squeeze(ctx.dim), None


class MinDim(MaxDim):
    """The smallest element along ``dim``: the gradient goes to the returned index."""

    node_name = "MinBackward0"
    returns = return_types.min


def _extreme(x: Tensor, dim, keepdim: bool, largest: bool):
    name = "max" if largest else "min"
    d = x._data
    if dim is None:
        if d.size == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        return dispatch(MaxAll if largest else MinAll, d.max() if largest else d.min(), (x,))
    pos = _wrap_dim(dim, d.ndim)
    if d.ndim and d.shape[pos] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {pos} to have non-zero size.")
    if d.ndim == 0:
        values, indices = d.copy(), np.zeros((), np.int64)
    else:
        idx = np.argmax(d, axis=pos) if largest else np.argmin(d, axis=pos)
        idx_keep = np.expand_dims(idx, pos)
        vals = np.take_along_axis(d, idx_keep, axis=pos)
        values = vals if keepdim else np.squeeze(vals, pos)
        indices = (idx_keep if keepdim else idx).astype(np.int64)
    return dispatch(MaxDim if largest else MinDim, (values, indices), (x, dim, keepdim))


# max() and min() take no dim, or an int one: an explicit None is refused, as in torch.
_NO_DIM = object()


def _max(x: Tensor, dim=_NO_DIM, keepdim: bool = False):
    """The largest element; with ``dim``, (values, indices) along it; with a tensor, the
    elementwise maximum."""
    check_keepdim(keepdim, "max")
    if type(dim) is Tensor:
        return namespace_of(x).maximum(x, dim)
    if dim is None:
        raise TypeError("max() received an invalid combination of arguments - got "
                        "(dim=NoneType, )")
    return _extreme(x, None if dim is _NO_DIM else dim, keepdim, True)


def _min(x: Tensor, dim=_NO_DIM, keepdim: bool = False):
    """The smallest element; with ``dim``, (values, indices) along it; with a tensor, the
    elementwise minimum."""
    check_keepdim(keepdim, "min")
    if type(dim) is Tensor:
        return namespace_of(x).minimum(x, dim)
    if dim is None:
        raise TypeError("min() received an invalid combination of arguments - got "
                        "(dim=NoneType, )")
    return _extreme(x, None if dim is _NO_DIM else dim, keepdim, False)


max = declare("max", MaxAll, MaxDim, function=_max)  # noqa: A001 - torch's name
min = declare("min", MinAll, MinDim, function=_min)  # noqa: A001 - torch's name


class Amax(Overload):
    """The largest values along dims: the gradient is split evenly among ties in each slice."""

    node_name = "AmaxBackward0"
    args = ("self", "dim", "keepdim")
    saved_fields = ("self", "result")
    saved_attrs = ("dim", "keepdim")
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad):
        x, result = ctx.saved_tensors
        dims = ctx.dim if ctx.dim else tuple(range(x.ndim))
        sizes = tuple(x.shape)
        if not sizes:
            # torch's formula for a 0-d input too: nan when the saved result no longer matches.
            mask = x == result
            return mask * (grad / mask.sum()), None, None
        result = _expand_back(result, dims, ctx.keepdim, sizes)
        mask = x == result
        count = _expand_back(mask.sum(dims, keepdim=True), dims, True, sizes)
        return mask * (_expand_back(grad, dims, ctx.keepdim, sizes) / count), None, None

    @staticmethod
    def jvp(ctx, tangent, *_):
        # torch's amaxamin_jvp: the mean of the tangents where x equals the result (nan where
        # none does, as at a nan)
        x, result = ctx.saved_tensors
        dims, keepdim = ctx.dim if ctx.dim else tuple(range(x.ndim)), ctx.keepdim
        mask = x == _expand_back(result, dims, keepdim, tuple(x.shape))
        picked = namespace_of(x).where(mask, tangent, 0.0)
        return picked.sum(dims, keepdim=keepdim) / mask.sum(dims, keepdim=keepdim)


class Amin(Amax):
    """The smallest values along dims: the gradient is split evenly among ties in each slice."""

    node_name = "AminBackward0"


def _amax_amin(op: type, kernel, x: Tensor, dim, keepdim: bool) -> Tensor:
    # kernel is np.amax or np.amin, whose names are torch's op names.
    d = x._data
    dim = () if dim is None else dim  # (torch's default: all dims)
    if d.size == 0 and d.ndim:
        # torch checks the size of each dim, in the order given, before it looks for a repeat
        for given in _as_dim_tuple(dim):
            if d.shape[_wrap_dim(given, d.ndim)] == 0:
                raise IndexError(f"{kernel.__name__}(): Expected reduction dim {given} to have "
                                 "non-zero size.")
    axes = _axes(dim, d.ndim) if dim != () else None
    if axes is None and d.size == 0:
        raise RuntimeError(f"{kernel.__name__}(): Expected reduction dim to be specified for "
                           "input.numel() == 0. Specify the reduction dim with the 'dim' argument.")
    return dispatch(op, kernel(d, axis=axes, keepdims=keepdim), (x, _as_dim_tuple(dim), keepdim))


def _amax(x: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """The largest values over ``dim`` (all dims when empty)."""
    check_keepdim(keepdim, "amax")
    return _amax_amin(Amax, np.amax, x, dim, keepdim)


def _amin(x: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """The smallest values over ``dim`` (all dims when empty)."""
    check_keepdim(keepdim, "amin")
    return _amax_amin(Amin, np.amin, x, dim, keepdim)


amax = declare("amax", Amax, function=_amax)
amin = declare("amin", Amin, function=_amin)


# ---------------------------------------------------------------------------------- prod
class ProdAll(Overload):
    """The product of all elements: d/dx_i = product of the others (zeros handled)."""

    node_name = "ProdBackward0"
    saved_fields = ("self", "result")

    @staticmethod
    def backward(ctx, grad):
        x, result = ctx.saved_tensors
        return prod_backward(grad, x.to(grad.dtype), result)

    @staticmethod
    def jvp(ctx, tangent):
        # torch's: prod_backward(ones, x, result) * t, summed
        x, result = ctx.saved_tensors
        return (prod_backward(result.new_ones(()), x.to(result.dtype), result) * tangent).sum()


class ProdDim(Overload):
    """The product along ``dim``."""

    node_name = "ProdBackward1"
    args = ("self", "dim", "keepdim")
    saved_fields = ("self", "result")
    saved_attrs = ("dim", "keepdim")
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad):
        x, result = ctx.saved_tensors
        return prod_backward(grad, x.to(grad.dtype), result, ctx.dim, ctx.keepdim), None, None

    @staticmethod
    def jvp(ctx, tangent, *_):
        # torch's: prod_backward(ones, x, result, dim, keepdim) * t, summed over dim
        x, result = ctx.saved_tensors
        dim, keepdim = ctx.dim, ctx.keepdim
        terms = prod_backward(result.new_ones(result.shape), x.to(result.dtype), result, dim,
                              keepdim)
        return (terms * tangent).sum(dim, keepdim)


def prod_backward(grad: Tensor, x: Tensor, result: Tensor, dim=None,
                  keepdim: bool = False) -> Tensor:
    """torch's ``prod_backward``: d prod / d x_i = the product of the other elements of x_i's
    slice, as ``grad * result / x`` when x has no zero, else through exclusive running products
    (``prod_safe_zeros_backward``). Written in tensor ops, so that its own derivative is the one
    torch records through the same formula (nan beside a zero and an inf included)."""
    if x.ndim == 0:
        return grad
    if dim is not None:
        dim = _wrap_dim(dim, x.ndim)
        if not keepdim:
            grad, result = grad.unsqueeze(dim), result.unsqueeze(dim)
    if x.all().item():  # (no zero)
        return grad * (result / x)
    if dim is not None:
        return _prod_safe_zeros_backward(grad, x, dim)
    ns = namespace_of(x)
    if not ns.is_grad_enabled() and (x == 0).sum().item() > 1:
        # with two zeros every product of the others is 0 (even beside a nan or an inf),
        # unless the gradient is to be differentiated again (torch's own test)
        return ns.zeros_like(x)
    return _prod_safe_zeros_backward(grad, x.contiguous().view(-1), 0).view_as(x)


def _prod_safe_zeros_backward(grad: Tensor, x: Tensor, dim: int) -> Tensor:
    # [a, b, c]: the running products before each element, [1, a, ab], times those after it,
    # [bc, c, 1], exact with zeros.
    if x.numel() == 0:
        return grad.expand_as(x)
    n = x.shape[dim]
    if n == 1:
        return grad
    ns = namespace_of(x)
    sizes = list(x.shape)
    sizes[dim] = 1
    ones = ns.ones(sizes, dtype=grad.dtype)
    before = ns.cat([ones, x.narrow(dim, 0, n - 1)], dim).cumprod(dim)
    after = ns.cat([ones, x.narrow(dim, 1, n - 1).flip(dim)], dim).cumprod(dim).flip(dim)
    return grad * (before * after)


def _prod(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The product of all elements, or along ``dim``."""
    check_keepdim(keepdim, "prod")
    d = x._data
    acc = _sum_dtype(d, dtype, "prod", dim)
    if dim is None:
        return dispatch(ProdAll, d.prod(dtype=acc), (x,))
    pos = _wrap_dim(dim, d.ndim)
    data = d.prod(axis=pos, keepdims=keepdim, dtype=acc) if d.ndim else d.astype(acc or d.dtype)
    return dispatch(ProdDim, data, (x, dim, keepdim))


prod = declare("prod", ProdAll, ProdDim, function=_prod)


# ---------------------------------------------------------------------------------- var / std
class Var(Overload):
    """Variance: d/dx = 2 (x - mean) / (N - correction)."""

    node_name = "VarBackward0"
    args = ("self", "dim", "correction", "keepdim")
    saved_fields = ("self",)
    saved_attrs = ("correction", "dim", "keepdim")
    tensor_positions = (0,)

    @staticmethod
    def forward(x, dim=None, correction=None, keepdim=False):
        return x.var(dim, correction=correction, keepdim=keepdim)

    @staticmethod
    def backward(ctx, grad):
        x = ctx.saved_tensors[0]
        return var_backward(grad, x, ctx.dim, ctx.correction, ctx.keepdim), None, None, None

    @staticmethod
    def jvp(ctx, tangent, *_):
        # torch's: var_backward(t, x, keepdim=True) summed over the reduced dims; for std, over
        # 2 std (0 where std is 0)
        x = ctx.saved_tensors[0]
        dims = None if ctx.dim is None else ctx.dim or tuple(range(x.ndim))
        terms = var_backward(tangent, x, dims, ctx.correction, True)
        return terms.sum(tuple(range(x.ndim)) if dims is None else dims, keepdim=ctx.keepdim)


class Std(Var):
    """Standard deviation: d/dx = (x - mean) / ((N - correction) std)."""

    node_name = "StdBackward0"
    saved_fields = ("self", "result")

    @staticmethod
    def forward(x, dim=None, correction=None, keepdim=False):
        return x.std(dim, correction=correction, keepdim=keepdim)

    @staticmethod
    def backward(ctx, grad):
        x, result = ctx.saved_tensors
        # torch: the variance's gradient for grad / (2 std), 0 where the std is 0
        grad_var = (grad / (result * 2)).masked_fill(result == 0, 0)
        return var_backward(grad_var, x, ctx.dim, ctx.correction, ctx.keepdim), None, None, None

    @staticmethod
    def jvp(ctx, tangent, *_):
        result = ctx.saved_tensors[1]
        dvar = Var.jvp(ctx, tangent)
        return namespace_of(result).where(result == 0, 0.0, dvar / (2 * result))


def var_backward(grad: Tensor, x: Tensor, dim: tuple | None, correction, keepdim: bool) -> Tensor:
    """torch's var_backward: 2 / (N - correction) grad (x - mean); a full variance without
    degrees of freedom (N <= correction) has grad * (nan where x is its mean, else inf)."""
    dims, n = _var_dims(x, dim)
    c = 1 if correction is None else correction
    if n - c <= 0 and (dim is None or x.ndim == 0):
        # 2 / 0 times x - mean: grad times nan where x is its mean, inf elsewhere (torch's where
        # of two numbers, in the default dtype, then converted to x's dtype).
        out = grad * namespace_of(x).where(x == x.mean(), math.nan, math.inf)
        return out if out.dtype == x.dtype else out.to(x.dtype)
    centred = x - x.mean(dims, keepdim=True)
    return (_expand_back(grad, dims, keepdim, tuple(x.shape)) * centred *
            (2.0 / (n - c) if n != c else math.inf))


def _var_dims(x: Tensor, dim) -> tuple:
    if x.ndim == 0:
        # Any dim of a 0-d tensor is the one element.
        return (), 1
    dims = tuple(range(x.ndim)) if dim is None else dim
    n = 1
    for d in dims:
        n *= x.shape[d]
    return dims, n


# var's and std's ``unbiased`` left out (an explicit None is refused), and sort's ``stable``
# (torch's sort overload, not sort.stable)
_NOT_GIVEN = object()


def _variance(op: type, x: Tensor, dim, unbiased, keepdim: bool, correction, name: str,
              with_mean: bool = False):
    d = x._data
    if isinstance(dim, builtins.bool):
        dim, unbiased = None, dim
    if unbiased is not _NOT_GIVEN and correction is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        "(correction=int, unbiased=bool, ): give correction or unbiased, not both")
    if unbiased is _NOT_GIVEN:
        unbiased = None
    elif type(unbiased) is not builtins.bool:  # None too: torch has no "unbiased=None"
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"(unbiased={type(unbiased).__name__}, ), but expected a bool")
    if correction is not None:
        number = as_number(correction)
        if number is None:
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            f"(correction={type(correction).__name__}, ), but expected a Number")
        correction = number
    if not _dtype.is_floating_np(d.dtype):
        raise RuntimeError("std and var only support floating point and complex dtypes")
    if unbiased is not None:
        correction = 1 if unbiased else 0
    saved_correction = correction if correction is not None or dim is not None else None
    if dim is not None and correction is None:
        saved_correction = 1
    c = 1 if correction is None else correction
    axes = None if dim is None else _axes(dim, d.ndim)
    reduced = d.size if axes is None else int(np.prod([d.shape[a] for a in axes]))
    if reduced - c <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=3)
    # (bfloat16, NumPy kind "V", computes in float32 and rounds once, as torch's kernel)
    wide = d.astype(np.float32) if is_half(d) else d
    with np.errstate(divide="ignore", invalid="ignore"):
        v = wide.var(axis=axes, ddof=c, keepdims=keepdim)
        data = (np.sqrt(v) if op is Std or name == "std_mean" else v).astype(d.dtype,
                                                                             copy=False)
    if with_mean:  # (var_mean, std_mean: the mean too, a second output)
        data = (data, np_mean(wide, axes, keepdim).astype(d.dtype, copy=False))
    return dispatch(op, data, (x, None if dim is None else _as_dim_tuple(dim), saved_correction,
                               keepdim))


def _var(x: Tensor, dim=None, unbiased=_NOT_GIVEN, keepdim: bool = False, *,
        correction=None) -> Tensor:
    """The variance (Bessel-corrected unless ``correction``/``unbiased`` say otherwise)."""
    check_keepdim(keepdim, "var")
    return _variance(Var, x, dim, unbiased, keepdim, correction, "var")


def _std(x: Tensor, dim=None, unbiased=_NOT_GIVEN, keepdim: bool = False, *,
        correction=None) -> Tensor:
    """The standard deviation (Bessel-corrected unless told otherwise)."""
    check_keepdim(keepdim, "std")
    return _variance(Std, x, dim, unbiased, keepdim, correction, "std")


var = declare("var", Var, function=_var)
std = declare("std", Std, function=_std)


# ---------------------------------------------------------------------------------- cumsum
class Cumsum(Overload):
    """Running sums along ``dim``: the gradient is the reversed running sum of grad."""

    node_name = "CumsumBackward0"
    args = ("self", "dim")
    saved_attrs = ("dim",)
    tensor_positions = (0,)
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        # sum_{j >= i} g_j: the running sum of the reversed gradient, reversed back.
        dim = ctx.dim
        # torch's cumsum_backward passes the gradient itself on where the sum runs over at
        # most one element (a node of its own under create_graph)
        if grad.numel() <= 1 or grad.shape[dim] == 1:
            return grad, None
        return grad.flip(dim).cumsum(dim).flip(dim), None


def _cumsum(x: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Running sums along ``dim``."""
    d = x._data
    acc = _sum_dtype(d, dtype, "cumsum", dim)
    pos = _wrap_dim(dim, d.ndim)
    # torch's result is contiguous whatever the input's layout (a reshape of it is a view);
    # inf - inf gives its nan silently (np.add.accumulate is np.cumsum without its wrapper)
    with np.errstate(invalid="ignore", over="ignore"):
        if acc is None and is_half(d):  # (float16 and bfloat16 run in float32, as in torch)
            data = np.add.accumulate(np.asarray(d, order="C"), axis=pos, dtype=np.float32
                                     ).astype(d.dtype) if d.ndim else d.copy()
        else:
            data = (np.add.accumulate(np.asarray(d, order="C"), axis=pos, dtype=acc) if d.ndim
                    else d.astype(acc or d.dtype))
    return dispatch(Cumsum, data, (x, dim))


cumsum = declare("cumsum", Cumsum, function=_cumsum, inplace="cumsum_")


# ---------------------------------------------------------------------------------- cumprod
class Cumprod(Overload):
    """Running products along ``dim``: torch's ``cumprod_backward``."""

    node_name = "CumprodBackward0"
    args = ("self", "dim")
    saved_fields = ("self", "result")
    saved_attrs = ("dim",)
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad):
        x, result = ctx.saved_tensors
        return namespace_of(grad).ops.aten.cumprod_backward(grad.to(x.dtype), x, ctx.dim,
                                                            result), None

    @staticmethod
    def jvp(ctx, tangent, *_):
        # torch's cumprod_jvp: (t / x).cumsum * result where no zero came before; from a slice's
        # first zero on, the running product of x with t put in place of that zero
        x, result = ctx.saved_tensors
        dim, where = ctx.dim, namespace_of(x).where
        gradient = (tangent / x).cumsum(dim) * result
        zero = x == 0
        if x.ndim == 0:
            return where(zero, tangent, gradient)
        first = zero.logical_and(zero.cumsum(dim) == 1)
        after_first = first.cumsum(dim) != 0
        return where(after_first, where(first, tangent, x).cumprod(dim),
                     gradient).to(result.dtype)


# The running type of torch's CPU kernels: float32 runs in float64 (each step rounded back),
# float16 in float32.
_RUNNING = {np.dtype(np.float32): np.float64, np.dtype(np.float16): np.float32}


def _running(kernel, d: np.ndarray, axis: int) -> np.ndarray:
    """``np.multiply.accumulate``/``np.add.accumulate`` (cumprod and cumsum without their
    wrappers) along ``axis`` as torch's CPU kernel computes it."""
    # (bfloat16, NumPy kind "V", runs in float32 as float16 does)
    acc = _RUNNING.get(d.dtype) or (np.float32 if d.dtype.kind == "V" else None)
    with np.errstate(over="ignore", invalid="ignore"):  # (torch's inf and nan come silently)
        if acc is None:
            return kernel(d, axis=axis)
        return kernel(d, axis=axis, dtype=acc).astype(d.dtype)


def _cumprod_backward(grad: Tensor, x: Tensor, dim: int, result: Tensor) -> Tensor:
    """torch's ``cumprod_backward``: d out_j / d x_k = the product of x_i for i <= j, i != k.

    Without zeros it is ``reversed_cumsum(grad * result) / x``. With zeros, and no graph to
    build, torch's O(n) form (on arrays, nothing being recorded): elements after a slice's first
    zero get 0, those before it the formula above over the elements before it, the first zero
    the running products up to the second one; under grad mode, the O(n^2) form whose
    derivative is cumprod's second one. A composite op, as in torch: the ops it runs record."""
    if x.numel() <= 1:
        return grad
    dim = _wrap_dim(dim, x.ndim)
    n = x.shape[dim]
    if n == 1:
        return grad
    w = result * grad
    if not np.any(x._data == 0):
        return w.flip(dim).cumsum(dim).flip(dim).div(x)
    if not STATE.grad_enabled:
        return wrap(_cumprod_backward_zeros(grad._data, x._data, dim, w._data, result._data))
    ns = namespace_of(x)
    grad_input = ns.zeros(x.shape, dtype=grad.dtype)
    sizes = list(x.shape)
    sizes[dim] = 1
    ones = ns.ones(1, dtype=grad.dtype).expand(sizes)
    for k in range(n):
        if k == 0:
            omitted = ns.cat([ones, x.narrow(dim, 1, n - 1).cumprod(dim)], dim)
        elif k == n - 1:
            omitted = x.narrow(dim, 0, k).prod(dim, True)
        else:
            until = x.narrow(dim, 0, k).prod(dim, True)
            after = x.narrow(dim, k + 1, n - k - 1).cumprod(dim)
            omitted = ns.cat([until, until.expand_as(after) * after], dim)
        grad_input.select(dim, k).copy_((grad.narrow(dim, k, n - k) * omitted).sum(dim))
    return grad_input


cumprod_backward = declare("cumprod_backward", function=_cumprod_backward, methods=(),
                           functions=())


def _cumprod_backward_zeros(g: np.ndarray, x: np.ndarray, dim: int, w: np.ndarray,
                            out: np.ndarray) -> np.ndarray:
    # torch's masked O(n) form, on arrays (nothing is recorded): z1 is a slice's first zero,
    # z2 its second (or the end).
    grad_input = np.zeros(x.shape, g.dtype)
    count = np.cumsum(x == 0, axis=dim)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # k < z1: the reversed running sum of grad * result over [k, z1), divided by x_k
        before = count == 0
        rsum = np.flip(_running(np.add.accumulate, np.flip(np.where(before, w, 0), dim), dim),
                       dim)
        grad_input[before] = (rsum / x)[before]
        # k = z1: (prod x[:z1]) * sum_{z1 <= j < z2} grad_j * prod x(z1, j]
        between = count == 1
        first = np.argmax(between, axis=dim).reshape(
            x.shape[:dim] + (1,) + x.shape[dim + 1:])
        first_mask = np.zeros(x.shape, bool)
        np.put_along_axis(first_mask, first, True, axis=dim)
        first_mask &= between
        between &= ~first_mask
        runs = _running(np.multiply.accumulate,
                        np.where(between, x, 1).astype(g.dtype, copy=False), dim)
        total = np.add.reduce(runs * np.where(count != 1, 0, g), axis=dim, keepdims=True)
        prefix = np.take_along_axis(out, np.maximum(first - 1, 0), axis=dim)
        total = total * np.where(first == 0, 1, prefix)
        grad_input[first_mask] = np.broadcast_to(total, x.shape)[first_mask]
    return grad_input


def _cumprod(x: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Running products along ``dim``."""
    d = x._data
    if dtype is not None:
        d = d.astype(_dtype_arg(dtype, "cumprod", dim), copy=False)
    elif d.dtype.kind in "biu":
        d = d.astype(np.int64)  # integer and bool products run in int64, as in torch
    pos = _wrap_dim(dim, d.ndim)
    # torch's result is contiguous whatever the input's layout
    data = (_running(np.multiply.accumulate, np.asarray(d, order="C"), pos) if d.ndim
            else d.copy())
    return dispatch(Cumprod, data, (x, dim))


def _cumprod_(x: Tensor, dim: int, *, dtype=None) -> Tensor:
    # torch's kernel writes in x's own dtype: a different dtype= is refused, and bool has no
    # in-place product
    if dtype is not None and _dtype_arg(dtype, "cumprod_", dim) != x._data.dtype:
        raise RuntimeError(f"Bad in-place call: input tensor dtype {C_TYPES[x.dtype._np]} "
                           f"and output tensor dtype {C_TYPES[dtype._np]} should match")
    if x._data.dtype == np.bool_:
        raise NotImplementedError("\"cumprod_out_cpu\" not implemented for 'Bool'")
    return _cumprod(x, dim)


cumprod = declare("cumprod", Cumprod, function=_cumprod, inplace=(("cumprod_", _cumprod_),))


# ---------------------------------------------------------------------------------- arg*, sort
def _arg(x: Tensor, dim, keepdim: bool, largest: bool) -> Tensor:
    name = "argmax" if largest else "argmin"
    d = x._data
    if d.dtype == np.bool_:
        raise RuntimeError(f"{name}(): does not support bool input")
    kernel = np.argmax if largest else np.argmin
    if dim is None:
        if d.size == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
        idx = np.asarray(kernel(d), np.int64)
        return wrap(idx.reshape((1,) * d.ndim) if keepdim else idx)
    pos = _wrap_dim(dim, d.ndim)
    if d.ndim and d.shape[pos] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
    if d.ndim == 0:
        return wrap(np.zeros((), np.int64))
    return wrap(kernel(d, axis=pos, keepdims=keepdim).astype(np.int64))


def _argmax(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """The index of the largest element (of the flattened tensor, or along ``dim``)."""
    check_keepdim(keepdim, "argmax")
    return _arg(x, dim, keepdim, True)


def _argmin(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """The index of the smallest element (of the flattened tensor, or along ``dim``)."""
    check_keepdim(keepdim, "argmin")
    return _arg(x, dim, keepdim, False)


argmax = declare("argmax", function=_argmax)
argmin = declare("argmin", function=_argmin)


class Sort(Overload):
    """Sorted values along ``dim``: the gradient goes back to where each value came from."""

    node_name = "SortBackward0"
    args = ("self", "dim", "descending")
    outputs = ("values", "indices")
    non_differentiable = ("indices",)
    returns = return_types.sort
    saved_fields = ("indices",)
    saved_attrs = ("dim", "self_sym_sizes")
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad, grad_indices=None):
        (indices,) = ctx.saved_tensors
        return _scatter_back(grad, ctx.dim, indices, ctx.self_sym_sizes, True), None, None

    @staticmethod
    def jvp(ctx, tangent, *_):
        # the tangent of the element each value came from
        (indices,) = ctx.saved_tensors
        if not ctx.self_sym_sizes:
            return tangent, None
        return tangent.gather(ctx.dim, indices), None


class SortStable(Sort):
    """Sorted values along ``dim`` with ``stable=True`` (its own overload in torch)."""

    node_name = "SortBackward1"

    @staticmethod
    def forward(x, dim=-1, descending=False):
        return x.sort(dim=dim, descending=descending, stable=True)


def _sort(x: Tensor, dim: int = -1, descending: bool = False, *, stable=_NOT_GIVEN):
    """(values, indices) of ``x`` sorted along ``dim``; equal values keep their order (torch
    records its ``sort.stable`` overload whenever ``stable`` is given, even False)."""
    d = x._data
    pos = _wrap_dim(dim, d.ndim)
    if d.ndim == 0:
        values, indices = d.copy(), np.zeros((), np.int64)
    else:
        # A stable descending sort sorts a reversed order, which keeps ties in place: ~d for
        # integers and bools (-d would overflow), -d for floats with nan first (torch's nan is
        # the largest value; NumPy puts it last in any order).
        if not descending:
            idx = np.argsort(d, axis=pos, kind="stable")
        elif d.dtype.kind != "f":
            idx = np.argsort(~d, axis=pos, kind="stable")
        else:
            idx = np.lexsort((-d, ~np.isnan(d)), axis=pos)
        values, indices = np.take_along_axis(d, idx, axis=pos), idx.astype(np.int64)
    return dispatch(Sort if stable is _NOT_GIVEN else SortStable, (values, indices),
                    (x, dim, descending))


sort = declare("sort", Sort, SortStable, function=_sort)


def _truth(x: Tensor, dim, keepdim: bool, kernel) -> Tensor:
    # (kernel is ndarray.any or ndarray.all: half the cost of np.any / np.all per call, and
    # prod's gradient asks x.all() each time)
    d = x._data
    axes = None if dim is None else _axes(dim, d.ndim)
    out = as_array(kernel(d, axis=axes, keepdims=keepdim))
    # torch keeps uint8 for uint8 inputs and gives bool otherwise.
    return wrap(out.astype(np.uint8) if d.dtype == np.uint8 else out)


def _any(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Whether any element (along ``dim``) is non-zero."""
    check_keepdim(keepdim, "any")
    return _truth(x, dim, keepdim, np.ndarray.any)


def _all(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Whether every element (along ``dim``) is non-zero."""
    check_keepdim(keepdim, "all")
    return _truth(x, dim, keepdim, np.ndarray.all)


any = declare("any", function=_any)  # noqa: A001 - torch's name
all = declare("all", function=_all)  # noqa: A001 - torch's name
