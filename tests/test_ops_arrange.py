"""Arranging tensors (stacks and splits, tiling, rolling, triangles, diagonals, unfold, padding),
the views' ``*_copy`` ops, as_strided and the scatter forms of views.

Each test runs on ``ext`` and on ``torch`` through the ``T`` fixture, except the op-database
check (torch's OpInfos run on ext, compared with torch), the gradchecks (ext's own) and the
checks that compare the two engines directly.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import ext

sys.path.insert(0, str(Path(__file__).parent))
from opdb import considered, key  # noqa: E402

OPINFOS = (
    "broadcast_to", "broadcast_shapes", "broadcast_tensors", "block_diag", "cartesian_prod",
    "combinations", "unsafe_chunk", "unsafe_split", "tensor_split", "hsplit", "vsplit", "dsplit",
    "hstack", "vstack", "dstack", "column_stack", "atleast_1d", "atleast_2d", "atleast_3d",
    "meshgrid", "ravel", "unflatten", "movedim", "tile", "repeat", "repeat_interleave", "roll",
    "rot90", "flip", "fliplr", "flipud", "tril", "triu", "tril_indices", "triu_indices", "diag",
    "diag_embed", "diagflat", "diagonal", "diagonal_scatter", "select_scatter", "slice_scatter",
    "as_strided", "as_strided_scatter", "as_strided_copy", "slice", "unfold", "unfold_copy",
    "expand_copy", "diagonal_copy", "alias_copy", "narrow_copy", "view_copy", "permute_copy",
    "split_with_sizes_copy", "unbind_copy", "squeeze_copy", "unsqueeze_copy", "t_copy",
    "transpose_copy", "H", "mH", "sum_to_size", "unravel_index", "narrow", "constant_pad_nd")
# as_strided.partial_views reads the storage around a view of a larger tensor; the op database
# hands ext a copy of the view alone (no storage around it), so no engine could agree there.
NOT_COMPARABLE = {"as_strided.partial_views"}


def _opinfos():
    return [op for op in considered() if op.name in OPINFOS and key(op) not in NOT_COMPARABLE]


def test_every_opinfo_is_considered():
    assert {op.name for op in _opinfos()} == set(OPINFOS)


# ------------------------------------------------------------------------------ nodes and saves
X = np.arange(12.0).reshape(3, 4) / 7 - 0.6

# (id, function of (T, x) with x a (3, 4) float64 leaf, node name, saved fields)
NODES = [
    ("block_diag", lambda T, x: T.block_diag(x, x[:2, :1]), "BlockDiagBackward0", []),
    ("unsafe_split", lambda T, x: T.unsafe_split(x, 3, 1)[0], "UnsafeSplitBackward0",
     ["_saved_dim", "_saved_self_sym_sizes", "_saved_split_size"]),
    ("unsafe_chunk", lambda T, x: T.unsafe_chunk(x, 2, 1)[1], "UnsafeSplitBackward0",
     ["_saved_dim", "_saved_self_sym_sizes", "_saved_split_size"]),
    ("repeat", lambda T, x: x.repeat(2, 1, 2), "RepeatBackward0",
     ["_saved_repeats", "_saved_self_sym_sizes"]),
    ("tile", lambda T, x: T.tile(x, (2,)), "RepeatBackward0",
     ["_saved_repeats", "_saved_self_sym_sizes"]),
    ("roll", lambda T, x: T.roll(x, (1, -1), (0, 1)), "RollBackward0",
     ["_saved_dims", "_saved_shifts"]),
    ("roll_flat", lambda T, x: T.roll(x, 5), "RollBackward0", ["_saved_dims", "_saved_shifts"]),
    ("rot90", lambda T, x: T.rot90(x, 3, (1, 0)), "Rot90Backward0", ["_saved_dims", "_saved_k"]),
    ("tril", lambda T, x: T.tril(x, 1), "TrilBackward0", ["_saved_diagonal"]),
    ("triu", lambda T, x: x.triu(-1), "TriuBackward0", ["_saved_diagonal"]),
    ("diagonal", lambda T, x: T.diagonal(x, 1), "DiagonalBackward0",
     ["_saved_dim1", "_saved_dim2", "_saved_offset", "_saved_self_sym_sizes"]),
    ("diagonal_neg", lambda T, x: x.diagonal(-1, -1, 0), "DiagonalBackward0",
     ["_saved_dim1", "_saved_dim2", "_saved_offset", "_saved_self_sym_sizes"]),
    ("diag_embed", lambda T, x: T.diag_embed(x, -1), "DiagEmbedBackward0",
     ["_saved_dim1", "_saved_dim2", "_saved_offset"]),
    ("diag", lambda T, x: T.diag(x[0], 2), "DiagEmbedBackward0",
     ["_saved_dim1", "_saved_dim2", "_saved_offset"]),
    ("diag_of_matrix", lambda T, x: T.diag(x, 1), "DiagonalBackward0_copy",
     ["_saved_dim1", "_saved_dim2", "_saved_offset", "_saved_self_sym_sizes"]),
    ("diagflat", lambda T, x: T.diagflat(x, -2), "DiagEmbedBackward0",
     ["_saved_dim1", "_saved_dim2", "_saved_offset"]),
    ("diagonal_scatter", lambda T, x: T.diagonal_scatter(x, x[0, :3] * 2),
     "DiagonalScatterBackward0", ["_saved_dim1", "_saved_dim2", "_saved_offset"]),
    ("unfold", lambda T, x: x.unfold(1, 2, 1), "UnfoldBackward0",
     ["_saved_dimension", "_saved_self_sym_sizes", "_saved_size", "_saved_step"]),
    ("constant_pad_nd", lambda T, x: T.constant_pad_nd(x, (1, 2, -1, 0), 0.5),
     "ConstantPadNdBackward0", ["_saved_pad"]),
    ("expand_copy", lambda T, x: T.expand_copy(x[:1], (2, 3, 4)), "ExpandBackward0_copy",
     ["_saved_self_sym_sizes"]),
    ("diagonal_copy", lambda T, x: T.diagonal_copy(x, -1), "DiagonalBackward0_copy",
     ["_saved_dim1", "_saved_dim2", "_saved_offset", "_saved_self_sym_sizes"]),
    ("alias_copy", lambda T, x: T.alias_copy(x), "AliasBackward0_copy", []),
    ("view_copy", lambda T, x: T.view_copy(x, (4, -1)), "ViewBackward0_copy",
     ["_saved_self_sym_sizes"]),
    ("permute_copy", lambda T, x: T.permute_copy(x, (1, 0)), "PermuteBackward0_copy",
     ["_saved_dims"]),
    ("split_with_sizes_copy", lambda T, x: T.split_with_sizes_copy(x, [1, 2])[1],
     "SplitWithSizesBackward0_copy",
     ["_saved_dim", "_saved_self_sym_sizes", "_saved_split_sizes"]),
    ("unbind_copy", lambda T, x: T.unbind_copy(x, 1)[0], "UnbindBackward0_copy", ["_saved_dim"]),
    ("squeeze_copy", lambda T, x: T.squeeze_copy(x.unsqueeze(1)), "SqueezeBackward0_copy",
     ["_saved_self_sym_sizes"]),
    ("squeeze_copy_dim", lambda T, x: T.squeeze_copy(x.unsqueeze(1), 1), "SqueezeBackward1_copy",
     ["_saved_dim", "_saved_self_sym_sizes"]),
    ("squeeze_copy_dims", lambda T, x: T.squeeze_copy(x.unsqueeze(1), (1, 0)),
     "SqueezeBackward2_copy", ["_saved_dim", "_saved_self_sym_sizes"]),
    ("unsqueeze_copy", lambda T, x: T.unsqueeze_copy(x, -1), "UnsqueezeBackward0_copy",
     ["_saved_dim"]),
    ("t_copy", lambda T, x: T.t_copy(x), "TBackward0_copy", []),
    ("transpose_copy", lambda T, x: T.transpose_copy(x, 0, -1), "TransposeBackward0_copy",
     ["_saved_dim0", "_saved_dim1"]),
    ("unfold_copy", lambda T, x: T.unfold_copy(x, 0, 2, 1), "UnfoldBackward0_copy",
     ["_saved_dimension", "_saved_self_sym_sizes", "_saved_size", "_saved_step"]),
    ("narrow_copy", lambda T, x: T.narrow_copy(x, 1, -3, 2), "NarrowCopyBackward0",
     ["_saved_dim", "_saved_length", "_saved_self_sym_sizes", "_saved_start"]),
    ("as_strided", lambda T, x: T.as_strided(x, (2, 2), (1, 2), 1), "AsStridedBackward0",
     ["_saved_size", "_saved_storage_offset", "_saved_stride"]),
    ("as_strided_method", lambda T, x: x.as_strided((3,), (4,)), "AsStridedBackward0",
     ["_saved_size", "_saved_storage_offset", "_saved_stride"]),
    ("as_strided_copy", lambda T, x: T.as_strided_copy(x, (2, 3), (3, 1), 2),
     "AsStridedBackward0_copy", ["_saved_size", "_saved_storage_offset", "_saved_stride"]),
    ("as_strided_scatter", lambda T, x: T.as_strided_scatter(x, x[:2, :2] * 2, (2, 2), (1, 2), 1),
     "AsStridedScatterBackward0", ["_saved_size", "_saved_storage_offset", "_saved_stride"]),
    ("select_scatter", lambda T, x: T.select_scatter(x, x[1] * 2, 0, -1),
     "SelectScatterBackward0", ["_saved_dim", "_saved_index"]),
    ("slice_scatter", lambda T, x: T.slice_scatter(x, x[:, :2] * 2, 1, 1, 3),
     "SliceScatterBackward0", ["_saved_dim", "_saved_end", "_saved_start", "_saved_step"]),
    ("slice_scatter_default", lambda T, x: x.slice_scatter(x * 2), "SliceScatterBackward0",
     ["_saved_dim", "_saved_end", "_saved_start", "_saved_step"]),
]


def _saved(node, fields: list) -> dict:
    out = {}
    for f in fields:
        v = getattr(node, f)
        out[f] = tuple(v) if isinstance(v, (list, tuple)) else v
    return out


@pytest.mark.parametrize(("fn", "node", "fields"),
                         [pytest.param(*row[1:], id=row[0]) for row in NODES])
def test_node_name_and_saved_fields(T, fn, node, fields):
    y = fn(T, T.tensor(X, requires_grad=True))
    assert type(y.grad_fn).__name__ == node
    assert [a for a in dir(y.grad_fn) if a.startswith("_saved_")] == fields


@pytest.mark.parametrize(("fn", "fields"),
                         [pytest.param(row[1], row[3], id=row[0]) for row in NODES])
def test_saved_values_are_torch_s(fn, fields):
    ours = fn(ext, ext.tensor(X, requires_grad=True)).grad_fn
    theirs = fn(torch, torch.tensor(X, requires_grad=True)).grad_fn
    assert _saved(ours, fields) == _saved(theirs, fields)


@pytest.mark.parametrize("fn", [pytest.param(row[1], id=row[0]) for row in NODES])
def test_gradient_is_torch_s(fn):
    g = np.random.default_rng(3)
    results = []
    for T in (ext, torch):
        x = T.tensor(X, requires_grad=True)
        y = fn(T, x)
        up = T.tensor(g.uniform(-1, 1, tuple(y.shape)) if not results else results[0][1])
        (grad,) = T.autograd.grad(y, x, up)
        results.append((grad.detach().numpy(), up.detach().numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------- gradcheck (ext)
def _x(shape, seed=0):
    return ext.tensor(np.random.default_rng(seed).uniform(-1, 1, shape), requires_grad=True)


# (id, function, input shapes); every op with a node of its own, and the composites' nodes
GRADCHECK = [
    ("block_diag", lambda a, b: ext.block_diag(a, b, a[0, 0]), [(2, 3), (3,)]),
    ("unsafe_split", lambda a: ext.unsafe_split(a, 2, 1), [(2, 5)]),
    ("repeat", lambda a: a.repeat(2, 1, 3), [(2, 3)]),
    ("tile", lambda a: ext.tile(a, (2,)), [(2, 3)]),
    ("roll", lambda a: ext.roll(a, (1, -2), (0, 1)), [(2, 3)]),
    ("roll_flat", lambda a: ext.roll(a, 4), [(2, 3)]),
    ("rot90", lambda a: ext.rot90(a, -1, (1, 2)), [(2, 3, 4)]),
    ("tril", lambda a: ext.tril(a, -1), [(3, 4)]),
    ("triu", lambda a: ext.triu(a, 1), [(2, 3, 4)]),
    ("diagonal", lambda a: ext.diagonal(a, 1, 0, 2), [(3, 2, 4)]),
    ("diag_embed", lambda a: ext.diag_embed(a, -1, 0, 2), [(2, 3)]),
    ("diag", lambda a: ext.diag(a, 1), [(3, 4)]),
    ("diagflat", lambda a: ext.diagflat(a), [(2, 2)]),
    ("diagonal_scatter", lambda a, b: ext.diagonal_scatter(a, b, 1), [(3, 4), (3,)]),
    ("unfold", lambda a: a.unfold(1, 3, 2), [(2, 7)]),
    ("constant_pad_nd", lambda a: ext.constant_pad_nd(a, (2, -1, 1, 1), 3.0), [(2, 3)]),
    ("expand_copy", lambda a: ext.expand_copy(a, (2, 3, 4)), [(3, 1)]),
    ("diagonal_copy", lambda a: ext.diagonal_copy(a, -1), [(3, 4)]),
    ("alias_copy", lambda a: ext.alias_copy(a), [(3,)]),
    ("view_copy", lambda a: ext.view_copy(a, (3, 2)), [(2, 3)]),
    ("permute_copy", lambda a: ext.permute_copy(a, (2, 0, 1)), [(2, 3, 4)]),
    ("split_with_sizes_copy", lambda a: ext.split_with_sizes_copy(a, [1, 2], 1), [(2, 3)]),
    ("unbind_copy", lambda a: ext.unbind_copy(a, 1), [(2, 3)]),
    ("squeeze_copy", lambda a: ext.squeeze_copy(a), [(2, 1, 3)]),
    ("squeeze_copy_dim", lambda a: ext.squeeze_copy(a, 1), [(2, 1, 3)]),
    ("squeeze_copy_dims", lambda a: ext.squeeze_copy(a, (0, 1)), [(2, 1, 3)]),
    ("unsqueeze_copy", lambda a: ext.unsqueeze_copy(a, 1), [(2, 3)]),
    ("t_copy", lambda a: ext.t_copy(a), [(2, 3)]),
    ("transpose_copy", lambda a: ext.transpose_copy(a, 0, 2), [(2, 3, 4)]),
    ("unfold_copy", lambda a: ext.unfold_copy(a, 0, 2, 1), [(4, 2)]),
    ("narrow_copy", lambda a: ext.narrow_copy(a, 1, 1, 2), [(2, 4)]),
    ("as_strided", lambda a: ext.as_strided(a, (2, 2), (1, 2), 1), [(3, 3)]),
    ("as_strided_overlapping_reads", lambda a: a.as_strided((3, 2), (1, 1)), [(5,)]),
    ("as_strided_copy", lambda a: ext.as_strided_copy(a, (2, 3), (3, 1), 2), [(3, 3)]),
    # (src only: torch's formula for the input's gradient is not the derivative, and ext
    # follows torch's)
    ("as_strided_scatter_src", lambda b: ext.as_strided_scatter(
        ext.ones(3, 3, dtype=ext.float64), b, (2, 2), (1, 2), 1), [(2, 2)]),
    ("select_scatter", lambda a, b: ext.select_scatter(a, b, 1, -1), [(2, 3), (2,)]),
    ("slice_scatter", lambda a, b: ext.slice_scatter(a, b, 1, 0, 4, 2), [(2, 4), (2, 2)]),
    ("repeat_interleave", lambda a: ext.repeat_interleave(a, 2, 0), [(2, 3)]),
    ("combinations", lambda a: ext.combinations(a, 2, True), [(3,)]),
    ("meshgrid", lambda a, b: ext.meshgrid(a, b, indexing="xy"), [(2,), (3,)]),
    ("sum_to_size", lambda a: a.sum_to_size(1, 3), [(2, 3)]),
]


@pytest.mark.parametrize(("fn", "shapes"),
                         [pytest.param(row[1], row[2], id=row[0]) for row in GRADCHECK])
def test_gradcheck_and_gradgradcheck(fn, shapes):
    inputs = [_x(s, i) for i, s in enumerate(shapes)]
    assert ext.autograd.gradcheck(fn, inputs)
    assert ext.autograd.gradgradcheck(fn, inputs)


# ------------------------------------------------------------------------ views and copies
def test_diagonal_unfold_and_as_strided_are_views_of_their_input(T):
    for make in (lambda x: x.diagonal(), lambda x: x.unfold(1, 2, 2),
                 lambda x: x.as_strided((2,), (5,)), lambda x: T.diagonal(x, -1)):
        x = T.zeros(3, 4)
        v = make(x)
        assert v._base is x
        before = x._version
        v.add_(1.0)
        assert x._version == before + 1 == v._version
        assert x.sum().item() == v.numel()


def test_copy_ops_share_nothing_with_their_input(T):
    x = T.zeros(3, 4)
    for y in (T.diagonal_copy(x), T.unfold_copy(x, 1, 2, 2), T.as_strided_copy(x, (2,), (5,)),
              T.t_copy(x), T.expand_copy(x[:1], (2, 4)), T.alias_copy(x),
              T.narrow_copy(x, 0, 1, 1), T.view_copy(x, (12,))):
        assert y._base is None
        y.add_(1.0)
    assert x.abs().sum().item() == 0.0


def test_tril_and_triu_in_place(T):
    x = T.tensor(X)
    assert x.tril_(1) is x
    np.testing.assert_array_equal(x.numpy(), np.tril(X, 1))
    y = T.tensor(X)
    assert y.triu_(-1) is y
    np.testing.assert_array_equal(y.numpy(), np.triu(X, -1))


def test_diagonal_written_through_changes_the_matrix(T):
    x = T.zeros(3, 3)
    x.diagonal(1).fill_(2.0)
    np.testing.assert_array_equal(x.numpy(), np.diag([2.0, 2.0], 1))


def test_flip_takes_dims_by_keyword(T):
    x = T.tensor(X)
    np.testing.assert_array_equal(T.flip(x, dims=(0, 1)).numpy(), X[::-1, ::-1])
    np.testing.assert_array_equal(x.flip(dims=[1]).numpy(), X[:, ::-1])


def test_narrow_takes_a_0_dim_integer_tensor_as_start(T):
    x = T.tensor(X)
    np.testing.assert_array_equal(x.narrow(1, T.tensor(1), 2).numpy(), X[:, 1:3])
    with pytest.raises(RuntimeError, match="start must be an 0-dim integral Tensor"):
        x.narrow(1, T.tensor([1, 2]), 2)


def test_slice_scatter_and_select_scatter_values(T):
    x, src = T.tensor(X), T.tensor(np.ones((3, 2)))
    want = X.copy()
    want[:, 1:4:2] = 1.0
    np.testing.assert_array_equal(T.slice_scatter(x, src, 1, 1, None, 2).numpy(), want)
    want = X.copy()
    want[:, -1] = 5.0
    np.testing.assert_array_equal(
        T.select_scatter(x, T.full((3,), 5.0, dtype=T.float64), 1, -1).numpy(), want)


@pytest.mark.parametrize(("fn", "error", "match"), [
    (lambda T, x: T.tril(x[0]), RuntimeError, "at least 2 dimensions"),
    (lambda T, x: T.rot90(x, 1, (0, 0)), RuntimeError, "rotation dims to be different"),
    (lambda T, x: T.roll(x, (1, 2), 0), RuntimeError, "shifts and dimensions must align"),
    (lambda T, x: T.diagonal(x, 0, 1, 1), RuntimeError, "diagonal dimensions cannot be identical"),
    (lambda T, x: T.diag(x[None]), RuntimeError, "1D or 2D"),
    (lambda T, x: T.movedim(x, (0, 0), (0, 1)), RuntimeError, "repeated dim in `source`"),
    (lambda T, x: T.hsplit(x, 3), RuntimeError, "not divisible by the split_size 3"),
    (lambda T, x: T.vstack([]), RuntimeError, "expects a non-empty TensorList"),
    (lambda T, x: T.meshgrid(x[0], x[0].long(), indexing="ij"), RuntimeError,
     "meshgrid expects all tensors to have the same dtype"),
    (lambda T, x: T.unravel_index(T.tensor([1]), (0, 4)), RuntimeError, "ZeroDivisionError"),
    (lambda T, x: x.sum_to_size(2, 4), RuntimeError, "is not expandable to size"),
    (lambda T, x: T.as_strided(x, (4, 4), (4, 1)), RuntimeError, "out of bounds for storage"),
    (lambda T, x: T.fliplr(x[0]), RuntimeError, "Input must be >= 2-d."),
    (lambda T, x: x.repeat(2), RuntimeError, "can not be smaller than number of dimensions"),
    (lambda T, x: T.unfold_copy(x, 1, 5, 1), RuntimeError, "maximum size for tensor at dimension"),
])
def test_errors_are_torch_s(T, fn, error, match):
    with pytest.raises(error, match=match):
        fn(T, T.tensor(X))


def test_results_are_torch_s():
    x = X
    for fn in (lambda T, t: T.combinations(t[0], 3, with_replacement=True),
               lambda T, t: T.cartesian_prod(t[0, :2], t[1, :3]),
               lambda T, t: T.block_diag(t, t[0], t[0, 0]),
               lambda T, t: T.tensor_split(t, T.tensor([1, 3]), 1)[1],
               lambda T, t: T.column_stack([t[0], t.t()]),
               lambda T, t: T.meshgrid(t[0, :2], t[1], indexing="xy")[1],
               lambda T, t: T.repeat_interleave(t, T.tensor([1, 0, 2]), 0),
               lambda T, t: T.constant_pad_nd(t, (-1, 2), 7.0),
               lambda T, t: T.unravel_index(T.tensor([5, -1, 0, 13, -13]), (3, 4))[0],
               lambda T, t: T.tril_indices(4, 3, -1),
               lambda T, t: T.broadcast_tensors(t, t[:1, :1, None])[0],
               lambda T, t: T.as_strided(t.t(), (3, 2), (2, 1), 1),
               lambda T, t: T.unflatten(t, 1, (2, -1))):
        ours, theirs = fn(ext, ext.tensor(x)), fn(torch, torch.tensor(x))
        assert ours.dtype.__str__().rpartition(".")[2] == str(theirs.dtype).rpartition(".")[2]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ext.broadcast_shapes((3, 1), (4,), 1) == tuple(torch.broadcast_shapes((3, 1), (4,), 1))


def test_as_strided_reads_the_storage_of_a_view_as_torch_does():
    got = []
    for T in (ext, torch):
        x = T.tensor(X, requires_grad=True)
        y = x[1:].t().as_strided((2, 2), (1, 4))
        z = T.as_strided(x[1:], (3,), (2,), 0)
        w = T.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=T.float64)
        (g,) = T.autograd.grad((y * w).sum() + (z * 3).sum(), x)
        got.append((y.detach().numpy(), z.detach().numpy(), g.numpy()))
    for ours, theirs in zip(*got):
        np.testing.assert_array_equal(ours, theirs)


def test_as_strided_in_place_changes_the_geometry_only(T):
    x = T.arange(12.0).reshape(3, 4)
    assert T.as_strided_(x, (2,), (5,), 1) is x
    assert tuple(x.shape) == (2,)
    assert x.tolist() == [1.0, 6.0]
    y = T.arange(6.0)
    assert y.as_strided_((2, 2), (1, 2)) is y
    assert y.tolist() == [[0.0, 2.0], [1.0, 3.0]]


@pytest.mark.parametrize("write", [
    lambda y: y.diagonal(1).mul_(2),
    lambda y: y.t().diagonal().sin_(),
    lambda y: y.unfold(1, 2, 2).mul_(3),
    lambda y: y.as_strided((2, 2), (1, 4), 1).mul_(3),
    lambda y: y[:, 1:].as_strided((2,), (5,)).mul_(5),
], ids=["diagonal", "diagonal_of_t", "unfold", "as_strided", "as_strided_of_a_view"])
def test_in_place_write_through_a_view_differentiates_as_torch(write):
    w = np.random.default_rng(0).uniform(-1, 1, (3, 4))
    got = []
    for T in (ext, torch):
        x = T.tensor(X, requires_grad=True)
        y = x * 1
        write(y)
        (g,) = T.autograd.grad((y * T.tensor(w)).sum(), x)
        got.append((y.detach().numpy(), g.numpy(), type(y.grad_fn).__name__))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-12)
    np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-12)
    assert got[0][2] == got[1][2] == "CopySlices"
