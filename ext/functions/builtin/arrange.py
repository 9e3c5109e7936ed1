"""Arranging tensors: stacking and splitting, tiling, rolling and rotating, triangles, the
atleast_Nd family, meshgrids and products of index sets.

Most of these are composites of the view and join ops of ``shape.py``, as in torch, so that their
nodes are the ones torch shows (``hstack`` is a CatBackward0). The ops with a node of their own
(repeat, roll, rot90, tril, triu, diagonal, diag_embed, block_diag, unfold, unsafe_split,
constant_pad_nd) write their backward with the tensor API both engines share.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from ... import _dtype
from ..._tensor import Tensor, _wrap_dim, wrap
from ..._warnings import warn_once
from .._op import JOINTLY_LINEAR, LINEAR, Overload, declare, dispatch, read_history
from ._builtin import namespace_of
from .indexing import slice_
from .shape import Split, _shape_args

__all__ = ["broadcast_to", "broadcast_shapes", "broadcast_tensors", "block_diag",
           "cartesian_prod", "combinations", "unsafe_split", "unsafe_chunk", "tensor_split",
           "hsplit", "vsplit", "dsplit", "hstack", "vstack", "dstack", "column_stack",
           "atleast_1d", "atleast_2d", "atleast_3d", "meshgrid", "ravel", "unflatten", "movedim",
           "tile", "repeat", "repeat_interleave", "roll", "rot90", "fliplr", "flipud", "tril",
           "triu", "tril_indices", "triu_indices", "diagonal", "diag_embed", "diagflat",
           "diagonal_scatter", "unfold", "sum_to_size", "unravel_index", "constant_pad_nd"]


def _as_unsigned(value):
    if isinstance(value, (tuple, list)):
        return tuple(_as_unsigned(v) for v in value)
    return value + 2**64 if isinstance(value, int) and value < 0 else value


def show_unsigned(cls: type, *names: str) -> None:
    """Show the saved ``names`` of ``cls``'s node as torch does: a negative int (or each one of
    a list) as an unsigned 64-bit integer, None as None."""
    for name in names:
        setattr(cls._backward_cls, f"_saved_{name}",
                property(lambda node, name=name: _as_unsigned(getattr(node, name))))


def _fresh(x: Tensor) -> None:
    if x._vc and x._vc[0]:
        read_history(x)


def _tensors_of(tensors: tuple, name: str) -> tuple:
    """``f(a, b)`` or ``f([a, b])`` as a tuple of tensors."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        if type(t) is not Tensor:
            raise TypeError(f"{name}(): argument 'tensors' must be tuple of Tensors, but found "
                            f"element of type {type(t).__name__} at pos {i}")
    return tensors


# ------------------------------------------------------------------------------- broadcasting
def broadcast_shapes(*shapes) -> tuple:
    """The shape all of ``shapes`` broadcast to (an int stands for a 1-d shape)."""
    dims: list = []
    for shape in shapes:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if len(shape) > len(dims):
            dims = [1] * (len(shape) - len(dims)) + dims
        lead = len(dims) - len(shape)
        for i, s in enumerate(shape):
            if s < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                                   f"{list(shape)}")
            cur = dims[lead + i]
            if s != cur and s != 1 and cur != 1:
                raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single "
                                   f"shape.  Mismatch is at dim {lead + i}")
            if cur == 1:
                dims[lead + i] = s
    return tuple(dims)


def broadcast_to(x: Tensor, size: Sequence[int]) -> Tensor:
    """``x.expand(size)``: a view broadcast to ``size``."""
    return x.expand(tuple(size))


def broadcast_tensors(*tensors) -> tuple:
    """Every tensor expanded to their common shape (views)."""
    tensors = _tensors_of(tensors, "broadcast_tensors")
    shape = broadcast_shapes(*(t._data.shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)


broadcast_shapes = declare("broadcast_shapes", function=broadcast_shapes, methods=())
broadcast_to = declare("broadcast_to", function=broadcast_to)
broadcast_tensors = declare("broadcast_tensors", function=broadcast_tensors, methods=())


# ---------------------------------------------------------------------------------- block_diag
class BlockDiag(Overload):
    """Matrices along the diagonal of a larger one; each gradient is its block."""

    node_name = "BlockDiagBackward0"
    args = ("tensors",)
    variadic = True
    ctx_attrs = ("shapes",)
    jvp = LINEAR

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.shapes = tuple(tuple(t.shape) for t in inputs)

    @staticmethod
    def backward(ctx, grad):
        grads, r, c = [], 0, 0
        for shape in ctx.shapes:
            rows, cols = (1, 1) if len(shape) == 0 else (1, shape[0]) if len(shape) == 1 \
                else shape
            grads.append(grad[r:r + rows, c:c + cols].reshape(shape))
            r, c = r + rows, c + cols
        return tuple(grads)


def block_diag(*tensors) -> Tensor:
    """The tensors (0-, 1- or 2-d) as blocks along the diagonal of a matrix, zeros elsewhere."""
    tensors = _tensors_of(tensors, "block_diag")
    mats = []
    for i, t in enumerate(tensors):
        _fresh(t)
        d = t._data
        if d.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {d.ndim} dimensions")
        mats.append(d.reshape(1, -1) if d.ndim < 2 else d)
    if mats:
        dt = mats[0].dtype
        for m in mats[1:]:
            dt = _dtype.promote_types(_dtype.FROM_NUMPY[dt], _dtype.FROM_NUMPY[m.dtype])._np
    out = np.zeros((sum(m.shape[0] for m in mats), sum(m.shape[1] for m in mats)), dt)
    r = c = 0
    for m in mats:
        out[r:r + m.shape[0], c:c + m.shape[1]] = m
        r, c = r + m.shape[0], c + m.shape[1]
    return dispatch(BlockDiag, out, tensors)


block_diag = declare("block_diag", BlockDiag, function=block_diag, methods=())


# ------------------------------------------------------------------------- products of indices
def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Grids of coordinates: tensor i expanded along dim i (``"xy"``: the first two swapped)."""
    tensors = _tensors_of(tensors, "meshgrid")
    if indexing is None:
        warn_once("torch.meshgrid: in an upcoming release, it will be required to pass the "
                  "indexing argument.")
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    for t in tensors:
        if t._data.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t}")
        if t._data.dtype != tensors[0]._data.dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    swap = indexing == "xy" and len(tensors) >= 2
    order = list(tensors)
    if swap:
        order[0], order[1] = order[1], order[0]
    shape = tuple(t._data.size for t in order)
    n = len(order)
    grids = [t.reshape((1,) * i + (-1,) + (1,) * (n - i - 1)).expand(shape)
             for i, t in enumerate(order)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors) -> Tensor:
    """Every tuple of one entry from each 1-d tensor, as the rows of a matrix."""
    tensors = _tensors_of(tensors, "cartesian_prod")
    for t in tensors:
        if t._data.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t._data.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return namespace_of(tensors[0]).stack([g.flatten() for g in grids], 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-``r`` combinations of the entries of a 1-d tensor, as rows."""
    d = input._data
    if d.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(d.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return wrap(np.empty(0, d.dtype))
    # (as torch: r grids of the entries, read where their indices increase)
    grid = np.indices((d.shape[0],) * r)
    keep = np.ones(grid.shape[1:], bool)
    for a, b in zip(grid, grid[1:]):
        keep &= (a <= b) if with_replacement else (a < b)
    mask = wrap(keep)
    cols = [g.masked_select(mask) for g in meshgrid(*([input] * r), indexing="ij")]
    return namespace_of(input).stack(cols, 1)


meshgrid = declare("meshgrid", function=meshgrid, methods=())
cartesian_prod = declare("cartesian_prod", function=cartesian_prod, methods=())
combinations = declare("combinations", function=combinations, methods=())


# --------------------------------------------------------------------------------- splitting
class UnsafeSplit(Split):
    """``split`` whose pieces are not tracked as views."""

    node_name = "UnsafeSplitBackward0"
    is_view = False


def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple:
    """``split`` into pieces of ``split_size`` (copies, outside view tracking)."""
    pieces = input.detach().split(split_size, dim)
    return dispatch(UnsafeSplit, tuple(p._data.copy() for p in pieces), (input, split_size, dim))


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """``chunk`` whose pieces are not tracked as views."""
    d = input._data
    if d.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    n = d.shape[_wrap_dim(dim, d.ndim)]
    return unsafe_split(input, -(-n // chunks), dim)


unsafe_split = declare("unsafe_split", UnsafeSplit, function=unsafe_split)
unsafe_chunk = declare("unsafe_chunk", function=unsafe_chunk)


def tensor_split(input: Tensor, indices_or_sections: int | Sequence[int] | Tensor,
                 dim: int = 0) -> tuple:
    """Views of ``input`` cut along ``dim``: into ``n`` near-equal sections, or at the given
    indices."""
    d = input._data
    if d.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    pos = _wrap_dim(dim, d.ndim)
    size = d.shape[pos]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if ios._data.dtype.kind not in "iu":
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have "
                               f"integral dtype, but got {ios.dtype}")
        if ios._data.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                               "zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {ios._data.ndim} dims")
        ios = int(ios._data) if ios._data.ndim == 0 else [int(i) for i in ios._data]
    if isinstance(ios, (list, tuple)):
        bounds = [0, *map(operator.index, ios), size]
        return tuple(slice_(input, pos, s, max(s, e), 1) for s, e in zip(bounds, bounds[1:]))
    n = operator.index(ios)
    if n <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {n}")
    base, extra = divmod(size, n)
    out, start = [], 0
    for i in range(n):
        length = base + (i < extra)
        out.append(slice_(input, pos, start, start + length, 1))
        start += length
    return tuple(out)


def _split_dim(name: str, x: Tensor, ios, dim: int, need: int) -> tuple:
    """``hsplit``/``vsplit``/``dsplit``: tensor_split along ``dim`` with numpy's checks."""
    if isinstance(ios, str) or not isinstance(ios, (int, list, tuple)):
        raise TypeError(f"{name}() received an invalid combination of arguments. - got "
                        f"({type(ios).__name__})")
    d = x._data
    if d.ndim < need:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {need} dimension, but "
                           f"got a tensor with {d.ndim} dimensions!")
    if isinstance(ios, int) and (ios == 0 or d.shape[dim] % ios):
        raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the "
                           f"size of the dimension {d.shape[dim]} is not divisible by the split_"
                           f"size {ios}!")
    return tensor_split(x, ios, dim)


def hsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple:
    """Split along dim 1 (dim 0 for a 1-d tensor)."""
    return _split_dim("hsplit", input, indices_or_sections,
                      0 if input._data.ndim == 1 else 1, 1)


def vsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple:
    """Split along dim 0 of a tensor of at least 2 dims."""
    return _split_dim("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple:
    """Split along dim 2 of a tensor of at least 3 dims."""
    return _split_dim("dsplit", input, indices_or_sections, 2, 3)


tensor_split = declare("tensor_split", function=tensor_split)
hsplit = declare("hsplit", function=hsplit)
vsplit = declare("vsplit", function=vsplit)
dsplit = declare("dsplit", function=dsplit)


# ------------------------------------------------------------------------ atleast_Nd, stacks
def _atleast(x: Tensor, n: int) -> Tensor:
    nd = x._data.ndim
    if nd >= n:
        return x
    if nd == 0:
        return x.reshape((1,) * n)
    if n == 2 or nd == 2:  # (1-d to 2-d, 2-d to 3-d)
        return x.unsqueeze(0 if nd == 1 else -1)
    return x.unsqueeze(0).unsqueeze(-1)


def _atleast_fn(n: int):
    def fn(*tensors):
        if len(tensors) == 1 and type(tensors[0]) is Tensor:
            return _atleast(tensors[0], n)
        return tuple(_atleast(t, n) for t in _tensors_of(tensors, f"atleast_{n}d"))

    fn.__doc__ = f"Each tensor viewed with at least {n} dims (size-1 dims added)."
    return fn


atleast_1d = declare("atleast_1d", function=_atleast_fn(1), methods=())
atleast_2d = declare("atleast_2d", function=_atleast_fn(2), methods=())
atleast_3d = declare("atleast_3d", function=_atleast_fn(3), methods=())


def _stack_list(tensors, name: str) -> tuple:
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {type(tensors).__name__}")
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return _tensors_of((tensors,), name)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dim 1 (dim 0 for 1-d tensors)."""
    ts = [_atleast(t, 1) for t in _stack_list(tensors, "hstack")]
    return namespace_of(ts[0]).cat(ts, 0 if ts[0]._data.ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dim 0, 1-d tensors as rows."""
    ts = [_atleast(t, 2) for t in _stack_list(tensors, "vstack")]
    return namespace_of(ts[0]).cat(ts, 0)


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dim 2, each tensor made at least 3-d."""
    ts = [_atleast(t, 3) for t in _stack_list(tensors, "dstack")]
    return namespace_of(ts[0]).cat(ts, 2)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dim 1, 0- and 1-d tensors as columns."""
    ts = [t.reshape(-1, 1) if t._data.ndim <= 1 else t
          for t in _stack_list(tensors, "column_stack")]
    return namespace_of(ts[0]).cat(ts, 1)


hstack = declare("hstack", function=hstack, methods=())
vstack = declare("vstack", function=vstack, methods=(), functions=("vstack", "row_stack"))
dstack = declare("dstack", function=dstack, methods=())
column_stack = declare("column_stack", function=column_stack, methods=())


# ---------------------------------------------------------------------------- reshaping views
def ravel(input: Tensor) -> Tensor:
    """The entries as a 1-d tensor (a view when the layout allows)."""
    return input.contiguous().view(-1)


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Dim ``dim`` split into ``sizes`` (-1 infers one)."""
    d = input._data
    pos = _wrap_dim(dim, d.ndim)
    sizes = tuple(map(operator.index, sizes))
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if sizes.count(-1) == 0:
        total = 1
        for s in sizes:
            total *= s
        if total != d.shape[pos]:
            raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to "
                               f"the size of dim {dim} ({d.shape[pos]}) in the input tensor")
    elif sizes.count(-1) == 1:
        known = 1
        for s in sizes:
            if s != -1:
                known *= s
        if known == 0:
            raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to "
                               f"the size of dim {dim} ({d.shape[pos]}) in the input tensor")
        sizes = tuple(d.shape[pos] // known if s == -1 else s for s in sizes)
    return input.view(d.shape[:pos] + sizes + d.shape[pos + 1:])


def movedim(input: Tensor, source: int | Sequence[int],
            destination: int | Sequence[int]) -> Tensor:
    """A view with dims ``source`` moved to positions ``destination``, the others in order."""
    n = input._data.ndim
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(dst)} dims)")
    s = [_wrap_dim(a, n) for a in src]
    t = [_wrap_dim(a, n) for a in dst]
    if len(set(s)) != len(s):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(t)) != len(t):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
    order = [-1] * n
    for a, b in zip(s, t):
        order[b] = a
    rest = iter(i for i in range(n) if i not in s)
    order = [next(rest) if o == -1 else o for o in order]
    return input.permute(order)


ravel = declare("ravel", function=ravel)
unflatten = declare("unflatten", function=unflatten)
movedim = declare("movedim", function=movedim, methods=("movedim", "moveaxis"),
                  functions=("movedim", "moveaxis"))


# ------------------------------------------------------------------------------ repeat, tile
class Repeat(Overload):
    """The tensor tiled ``repeats`` times; the gradient sums the tiles."""

    node_name = "RepeatBackward0"
    args = ("self", "repeats")
    saved_attrs = ("repeats", "self_sym_sizes")
    tensor_positions = (0,)
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        sizes, reps = ctx.self_sym_sizes, ctx.repeats
        lead = len(reps) - len(sizes)
        shape, summed = list(reps[:lead]), list(range(lead))
        for r, s in zip(reps[lead:], sizes):
            summed.append(len(shape))
            shape += [r, s]
        if not summed:
            return grad.reshape(sizes), None
        return grad.reshape(shape).sum(summed).reshape(sizes), None


def _repeat(x: Tensor, repeats) -> Tensor:
    _fresh(x)
    d = x._data
    repeats = tuple(map(operator.index, repeats))
    if len(repeats) < d.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    if any(r < 0 for r in repeats):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(repeats)}")
    return dispatch(Repeat, np.tile(d, repeats) if repeats else d.copy(), (x, repeats))


def _repeat_method(self, *sizes) -> Tensor:
    """The tensor tiled ``sizes`` times along each dim (leading new dims allowed)."""
    return _repeat(self, _shape_args(sizes, "repeat", "repeats"))


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    """``repeat`` with ``dims`` padded by leading 1s to the tensor's rank."""
    dims = tuple(dims)
    n = input._data.ndim
    if len(dims) < n:
        dims = (1,) * (n - len(dims)) + dims
    return _repeat(input, dims)


repeat = declare("repeat", Repeat, function=_repeat, functions=(),
                 methods={"repeat": _repeat_method})


def _tile_method(self, *dims) -> Tensor:
    """``tile(self, dims)``."""
    return tile(self, _shape_args(dims, "tile", "dims"))


tile = declare("tile", function=tile, methods={"tile": _tile_method})


def repeat_interleave(input: Tensor, repeats: int | Tensor | None = None,
                      dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Each entry repeated ``repeats`` times along ``dim`` (of the flattened tensor when None);
    with only a tensor of counts, the indices repeated by them."""
    if repeats is None:
        counts = input._data
        if counts.ndim != 1 or counts.dtype.kind not in "iu":
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        return wrap(np.repeat(np.arange(counts.shape[0], dtype=counts.dtype), counts))
    if dim is None:
        input = input.flatten()
        dim = 0
    d = input._data
    pos = _wrap_dim(dim, d.ndim)
    if not isinstance(repeats, Tensor) or repeats._data.ndim == 0:
        # (as torch: a count for all entries is an expand of a new dim, copied and merged)
        n = operator.index(repeats.item() if isinstance(repeats, Tensor) else repeats)
        if n < 0:
            raise RuntimeError("repeats can not be negative")
        shape = d.shape[:pos + 1] + (n,) + d.shape[pos + 1:]
        return input.unsqueeze(pos + 1).expand(shape).contiguous().flatten(pos, pos + 1)
    reps = repeats._data
    if isinstance(reps, np.ndarray) and reps.ndim == 1 and reps.shape[0] != d.shape[pos]:
        raise RuntimeError("repeats must have the same size as input along dim")
    index = np.repeat(np.arange(d.shape[pos] if d.ndim else 1, dtype=np.int64), reps)
    return input.index_select(pos, wrap(index))


repeat_interleave = declare("repeat_interleave", function=repeat_interleave)


# ------------------------------------------------------------------- roll, rot90, fliplr/ud
class Roll(Overload):
    """Entries shifted cyclically; the gradient is shifted back."""

    node_name = "RollBackward0"
    args = ("self", "shifts", "dims")
    saved_attrs = ("dims", "shifts")
    tensor_positions = (0,)
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        return grad.roll([-s for s in ctx.shifts], ctx.dims), None, None


def roll(input: Tensor, shifts: int | Sequence[int],
         dims: int | Sequence[int] | None = ()) -> Tensor:
    """Shift the entries by ``shifts`` along ``dims`` cyclically (of the flattened tensor when
    no dims are given)."""
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = () if dims is None else (dims,) if isinstance(dims, int) else tuple(dims)
    _fresh(input)
    d = input._data
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims and len(shifts) != 1:
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
    if dims and len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    if d.ndim == 0 and dims:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    axes = tuple(_wrap_dim(a, d.ndim) for a in dims)
    if not d.size:
        out = d.copy()
    else:
        out = np.roll(d, shifts if axes else shifts[0], axes if axes else None).reshape(d.shape)
    return dispatch(Roll, out if out.flags.c_contiguous else out.copy(), (input, shifts, dims))


roll = declare("roll", Roll, function=roll)
show_unsigned(Roll, "shifts")


class Rot90(Overload):
    """A rotation by k quarter turns in the plane of ``dims``; the gradient turns back."""

    node_name = "Rot90Backward0"
    args = ("self", "k", "dims")
    saved_attrs = ("dims", "k")
    tensor_positions = (0,)
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        return grad.rot90(-ctx.k, ctx.dims), None, None


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotate by ``k`` quarter turns from ``dims[0]`` towards ``dims[1]``."""
    dims = tuple(dims)
    _fresh(input)
    d = input._data
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if d.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {d.ndim}")
    a, b = _wrap_dim(dims[0], d.ndim), _wrap_dim(dims[1], d.ndim)
    if a == b:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {a} and "
                           f"dim1 = {b}")
    return dispatch(Rot90, np.ascontiguousarray(np.rot90(d, k, (a, b))), (input, k, dims))


rot90 = declare("rot90", Rot90, function=rot90)


def fliplr(input: Tensor) -> Tensor:
    """Reverse the order along dim 1."""
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return input.flip((1,))


def flipud(input: Tensor) -> Tensor:
    """Reverse the order along dim 0."""
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return input.flip((0,))


fliplr = declare("fliplr", function=fliplr)
flipud = declare("flipud", function=flipud)


# -------------------------------------------------------------------------------- triangles
class Tril(Overload):
    """The lower triangle (from ``diagonal`` down); the gradient keeps the same triangle."""

    node_name = "TrilBackward0"
    args = ("self", "diagonal")
    saved_attrs = ("diagonal",)
    tensor_positions = (0,)
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        return grad.tril(ctx.diagonal), None


class Triu(Tril):
    """The upper triangle (from ``diagonal`` up); the gradient keeps the same triangle."""

    node_name = "TriuBackward0"

    @staticmethod
    def backward(ctx, grad):
        return grad.triu(ctx.diagonal), None


def _triangle(name: str, ov: type, kernel):
    def fn(input: Tensor, diagonal: int = 0) -> Tensor:
        _fresh(input)
        d = input._data
        if d.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        diagonal = operator.index(diagonal)
        return dispatch(ov, kernel(d, diagonal), (input, diagonal))

    fn.__doc__ = ov.__doc__
    return fn


show_unsigned(Tril, "diagonal")
show_unsigned(Triu, "diagonal")
tril = declare("tril", Tril, function=_triangle("tril", Tril, np.tril), inplace="tril_")
triu = declare("triu", Triu, function=_triangle("triu", Triu, np.triu), inplace="triu_")


def _indices(lower: bool):
    def fn(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None,
           pin_memory=None) -> Tensor:
        if row < 0 or col < 0:
            raise RuntimeError(f"row must be non-negative, got{row}" if row < 0
                               else f"col must be non-negative, got{col}")
        # (the row-major positions of the triangle's mask: torch's order)
        mask = np.tri(row, col, offset if lower else offset - 1, dtype=bool)
        pos = np.array(np.nonzero(mask if lower else ~mask))
        return wrap(pos.astype(np.int64 if dtype is None else dtype._np).reshape(2, -1))

    fn.__doc__ = ("The (2, N) row and column indices of the " + ("lower" if lower else "upper")
                  + " triangle of a row x col matrix, from diagonal ``offset``.")
    return fn


tril_indices = declare("tril_indices", function=_indices(True), methods=())
triu_indices = declare("triu_indices", function=_indices(False), methods=())


# -------------------------------------------------------------------------------- diagonals
def diag_view(d: np.ndarray, offset: int, a: int, b: int) -> np.ndarray:
    """The diagonal ``offset`` of dims ``a`` and ``b`` of ``d`` as a NumPy view, its entries
    along a last dim, writable when ``d`` is (torch's diagonal may be written through)."""
    v = np.diagonal(d, offset, a, b)
    if d.flags.writeable:
        v.flags.writeable = True
    return v


def _diag_dims(ndim: int, dim1: int, dim2: int) -> tuple:
    a, b = _wrap_dim(dim1, ndim), _wrap_dim(dim2, ndim)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return a, b


class Diagonal(Overload):
    """A diagonal of two dims, as a view; the gradient is zeros with that diagonal set."""

    node_name = "DiagonalBackward0"
    args = ("self", "offset", "dim1", "dim2")
    saved_attrs = ("dim1", "dim2", "offset", "self_sym_sizes")
    tensor_positions = (0,)
    is_view = True
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        zeros = grad.new_zeros(ctx.self_sym_sizes)
        return zeros.diagonal_scatter(grad, ctx.offset, ctx.dim1, ctx.dim2), None, None, None


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal ``offset`` of dims ``dim1`` and ``dim2`` (a view, the entries last)."""
    _fresh(input)
    d = input._data
    a, b = _diag_dims(d.ndim, dim1, dim2)
    return dispatch(Diagonal, diag_view(d, offset, a, b), (input, offset, dim1, dim2))


diagonal = declare("diagonal", Diagonal, function=diagonal)
show_unsigned(Diagonal, "offset")


class DiagEmbed(Overload):
    """The last dim written on a diagonal of two new dims; the gradient reads it back."""

    node_name = "DiagEmbedBackward0"
    args = ("self", "offset", "dim1", "dim2")
    saved_attrs = ("dim1", "dim2", "offset")
    tensor_positions = (0,)
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        return grad.diagonal(ctx.offset, ctx.dim1, ctx.dim2), None, None, None


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices (of dims ``dim1``, ``dim2``) with the last dim of ``input`` on their diagonal
    ``offset``."""
    _fresh(input)
    d = input._data
    a, b = _diag_dims(d.ndim + 1, dim1, dim2)
    size = (d.shape[-1] if d.ndim else 1) + abs(offset)
    shape = list(d.shape[:-1])
    lo, hi = min(a, b), max(a, b)
    shape.insert(lo, size)
    shape.insert(hi, size)
    out = np.zeros(shape, d.dtype)
    diag_view(out, offset, a, b)[...] = d
    return dispatch(DiagEmbed, out, (input, offset, dim1, dim2))


diag_embed = declare("diag_embed", DiagEmbed, function=diag_embed)
show_unsigned(DiagEmbed, "offset")


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A matrix with the flattened entries on its diagonal ``offset``."""
    return diag_embed(input.reshape(-1), offset)


diagflat = declare("diagflat", function=diagflat)


class DiagonalScatter(Overload):
    """``input`` with a diagonal replaced by ``src``: the gradients split between them."""

    node_name = "DiagonalScatterBackward0"
    args = ("self", "src", "offset", "dim1", "dim2")
    saved_attrs = ("dim1", "dim2", "offset")
    tensor_positions = (0, 1)
    jvp = JOINTLY_LINEAR
    ctx_attrs = ("src_sizes",)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.offset, ctx.dim1, ctx.dim2 = inputs[2:]
        ctx.src_sizes = tuple(inputs[1].shape)

    @staticmethod
    def backward(ctx, grad):
        o, a, b = ctx.offset, ctx.dim1, ctx.dim2
        zeros = grad.new_zeros(ctx.src_sizes)
        return (grad.diagonal_scatter(zeros, o, a, b), grad.diagonal(o, a, b), None, None,
                None)


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """A copy of ``input`` with its diagonal ``offset`` of ``dim1``, ``dim2`` set to ``src``."""
    _fresh(input)
    d = input._data
    a, b = _diag_dims(d.ndim, dim1, dim2)
    out = d.copy()
    view = diag_view(out, offset, a, b)
    if view.shape != src._data.shape:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src._data.shape)}, slice size = {list(view.shape)}")
    view[...] = src._data
    return dispatch(DiagonalScatter, out, (input, src, offset, dim1, dim2))


diagonal_scatter = declare("diagonal_scatter", DiagonalScatter, function=diagonal_scatter)
show_unsigned(DiagonalScatter, "offset")


# ------------------------------------------------------------------------------------- unfold
class Unfold(Overload):
    """Windows of ``size`` every ``step`` along ``dimension``, as a view; the gradient adds each
    window's back."""

    node_name = "UnfoldBackward0"
    args = ("self", "dimension", "size", "step")
    saved_attrs = ("dimension", "self_sym_sizes", "size", "step")
    tensor_positions = (0,)
    is_view = True
    jvp = LINEAR

    @staticmethod
    def backward(ctx, grad):
        sizes = ctx.self_sym_sizes
        if not sizes:
            return grad.reshape(()), None, None, None
        dim = ctx.dimension % len(sizes)
        windows = grad.shape[dim]
        ns = namespace_of(grad)
        # (each window's start plus each offset in it: the places the windows read)
        index = (ns.arange(windows).mul(ctx.step).unsqueeze(1) + ns.arange(ctx.size)).reshape(-1)
        parts = grad.movedim(-1, dim + 1)
        parts = parts.reshape(sizes[:dim] + (windows * ctx.size,) + tuple(sizes[dim + 1:]))
        zeros = grad.new_zeros(sizes)
        return ns.ops.aten.index_add(zeros, dim, index, parts), None, None, None


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """The windows of ``size`` entries every ``step`` along ``dimension``, in a new last dim."""
    _fresh(input)
    d = input._data
    pos = _wrap_dim(dimension, d.ndim)
    length = d.shape[pos] if d.ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {pos} is {length} but size is "
                           f"{size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if d.ndim == 0:
        return dispatch(Unfold, d.reshape(1), (input, dimension, size, step))
    windows = (length - size) // step + 1
    shape = d.shape[:pos] + (windows,) + d.shape[pos + 1:] + (size,)
    strides = d.strides[:pos] + (d.strides[pos] * step,) + d.strides[pos + 1:] + \
        (d.strides[pos],)
    data = np.lib.stride_tricks.as_strided(d, shape, strides, writeable=d.flags.writeable)
    return dispatch(Unfold, data, (input, dimension, size, step))


unfold = declare("unfold", Unfold, function=unfold, functions=())


# -------------------------------------------------------------------------------- the rest
def sum_to_size(self: Tensor, *size) -> Tensor:
    """The sum over the dims that broadcast ``size`` to this tensor's shape."""
    size = _shape_args(size, "sum_to_size", "size")
    shape = self._data.shape
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != shape[lead + i] for i, s in enumerate(size)):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    if not size:
        return self.sum()
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size)
                                if s == 1 and shape[lead + i] != 1]
    if not dims:
        return self
    out = self.sum(dims, keepdim=True)
    return out.view(size) if lead else out


sum_to_size = declare("sum_to_size", function=sum_to_size, functions=())


def unravel_index(indices: Tensor, shape: int | Sequence[int]) -> tuple:
    """The coordinates in ``shape`` of flat ``indices``, one tensor per dim."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    d = indices._data
    if d.dtype.kind not in "iu":
        raise TypeError("expected 'indices' to be integer dtype, but got "
                        f"{indices.dtype}")
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got "
                         f"{tuple(shape)}")
    # (torch checks no range: each coordinate is the floor remainder, out-of-range indices
    # wrapping as they fall)
    flat = d.astype(np.int64)
    if 0 in shape:
        if d.size:
            raise RuntimeError("ZeroDivisionError")
        shape = (1,) * len(shape)  # (no index to place: empty coordinates)
    out = []
    for s in reversed(shape):
        out.append(flat % s)
        flat = flat // s
    return tuple(wrap(np.asarray(o, np.int64)) for o in reversed(out))


unravel_index = declare("unravel_index", function=unravel_index, methods=())


class ConstantPadNd(Overload):
    """Padding by a constant (negative pads crop); the gradient is cropped back."""

    node_name = "ConstantPadNdBackward0"
    args = ("self", "pad", "value")
    saved_attrs = ("pad",)
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad):
        return namespace_of(grad).constant_pad_nd(grad, [-p for p in ctx.pad]), None, None

    @staticmethod
    def jvp(ctx, t, *_):
        return namespace_of(t).constant_pad_nd(t, ctx.pad)


def constant_pad_nd(input: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:
    """``input`` padded on the last ``len(pad) // 2`` dims by ``value`` (pairs from the last
    dim: before, after)."""
    pad = tuple(map(operator.index, pad))
    _fresh(input)
    d = input._data
    if len(pad) % 2:
        raise RuntimeError("Length of pad must be even but instead it equals "
                           f"{len(pad)}")
    if len(pad) // 2 > d.ndim:
        raise RuntimeError(f"Length of pad should be no more than twice the number of "
                           f"dimensions of the input. Pad length is {len(pad)} while the input "
                           f"has {d.ndim} dimensions.")
    shape = list(d.shape)
    src = [slice(None)] * d.ndim
    dst = [slice(None)] * d.ndim
    for i in range(len(pad) // 2):
        ax = d.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        n = shape[ax] + lo + hi
        if n < 0:
            raise RuntimeError(f"The input size {shape[ax]}, plus negative padding {lo} and "
                               f"{hi} resulted in a negative output size, which is invalid. "
                               f"Check dimension {ax} of your input.")
        src[ax] = slice(max(-lo, 0), shape[ax] - max(-hi, 0))
        dst[ax] = slice(max(lo, 0), n - max(hi, 0))
        shape[ax] = n
    out = np.full(shape, value, d.dtype)
    region = d[tuple(src)]
    if region.size and out[tuple(dst)].shape == region.shape:
        out[tuple(dst)] = region
    return dispatch(ConstantPadNd, out, (input, pad, value))


constant_pad_nd = declare("constant_pad_nd", ConstantPadNd, function=constant_pad_nd,
                          methods=())
show_unsigned(ConstantPadNd, "pad")
