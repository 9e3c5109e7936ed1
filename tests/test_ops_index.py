"""The index ops beyond reading and writing by subscript: their node names and saved fields as
torch's, on both engines (values and gradients are compared sample by sample in
tests/test_opdb.py)."""

from __future__ import annotations

import numpy as np
import pytest


def _x(T, rng, shape=(3, 4)):
    return T.tensor(rng.standard_normal(shape), requires_grad=True)


def _saved(node) -> set:
    return {a for a in dir(node) if a.startswith("_saved_")}


@pytest.mark.parametrize("name, saved", [
    ("index_copy", {"_saved_dim", "_saved_index", "_saved_source", "_saved_source_dim"}),
    ("index_add", {"_saved_alpha", "_saved_dim", "_saved_index", "_saved_source",
                   "_saved_source_dim"}),
])
def test_index_copy_and_add(T, rng, name, saved):
    x, s = _x(T, rng), _x(T, rng, (2, 4))
    out = getattr(x, name)(0, T.tensor([2, 0]), s)
    node = out.grad_fn
    assert type(node).__name__ == {"index_copy": "IndexCopyBackward0",
                                   "index_add": "IndexAddBackward0"}[name]
    assert _saved(node) == saved
    out.backward(T.ones(3, 4))
    assert s.grad.tolist() == [[1.0] * 4] * 2


def test_index_fill_with_a_number_and_a_tensor(T, rng):
    x = _x(T, rng)
    assert type(x.index_fill(1, T.tensor([0, 0, 3]), 2.0).grad_fn).__name__ == \
        "IndexFillBackward0"
    v = T.tensor(2.0, requires_grad=True)
    out = x.index_fill(1, T.tensor([0, 0, 3]), v)
    assert type(out.grad_fn).__name__ == "IndexFillBackward1"
    assert _saved(out.grad_fn) == {"_saved_dim", "_saved_index"}
    out.sum().backward()
    assert v.grad.item() == 6.0  # (each filled place once: 3 rows by 2 columns)


def test_take_and_put(T, rng):
    x = _x(T, rng)
    y = x.take(T.tensor([0, 5, 5]))
    assert type(y.grad_fn).__name__ == "TakeBackward0"
    assert _saved(y.grad_fn) == {"_saved_self", "_saved_index"}
    y.sum().backward()
    assert x.grad.reshape(-1).tolist()[5] == 2.0
    src = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    z = x.put(T.tensor([1, 7]), src, accumulate=True)
    assert type(z.grad_fn).__name__ == "PutBackward0"
    assert z.grad_fn._saved_accumulate is True


def test_masked_select_and_scatter(T, rng):
    x = _x(T, rng)
    mask = T.tensor(rng.random((3, 4)) < 0.5)
    y = x.masked_select(mask)
    assert type(y.grad_fn).__name__ == "MaskedSelectBackward0"
    assert _saved(y.grad_fn) == {"_saved_mask", "_saved_self"}
    src = T.tensor(rng.standard_normal(12), requires_grad=True)
    z = x.masked_scatter(mask, src)
    assert type(z.grad_fn).__name__ == "MaskedScatterBackward0"
    assert z.grad_fn._saved_source_sym_sizes == (12,)
    z.backward(T.ones(3, 4))
    kept = int(mask.sum().item())
    assert src.grad.tolist() == [1.0] * kept + [0.0] * (12 - kept)


def test_fill_out_of_place(T, rng):
    x = _x(T, rng)
    assert type(T.fill(x, 2.0).grad_fn).__name__ == "FillBackward0"
    v = T.tensor(3.0, requires_grad=True)
    out = T.fill(x, v)
    assert type(out.grad_fn).__name__ == "FillBackward1" and out.tolist() == [[3.0] * 4] * 3
    out.sum().backward()
    assert v.grad.item() == 12.0


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_node(T, rng, reduce):
    x, src = _x(T, rng), _x(T, rng, (2, 4))
    index = T.tensor([[0, 1, 2, 0], [2, 0, 1, 1]])
    out = x.scatter_reduce(0, index, src, reduce, include_self=False)
    node = out.grad_fn
    assert type(node).__name__ == "ScatterReduceBackward0"
    assert node._saved_reduce == reduce and node._saved_include_self is False
    assert _saved(node) == {"_saved_dim", "_saved_include_self", "_saved_index",
                            "_saved_reduce", "_saved_result", "_saved_self", "_saved_src"}


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_node(T, rng, reduce):
    x, src = _x(T, rng), _x(T, rng, (2, 4))
    out = x.index_reduce(0, T.tensor([2, 2]), src, reduce)
    node = out.grad_fn
    assert type(node).__name__ == "IndexReduceBackward0"
    assert node._saved_reduce == reduce and node._saved_include_self is True


def test_scatter_reduce_amax_shares_a_tie_evenly(T):
    x = T.tensor([1.0, 5.0], requires_grad=True)
    src = T.tensor([1.0, 1.0, 3.0], requires_grad=True)
    out = x.scatter_reduce(0, T.tensor([0, 0, 1]), src, "amax")
    out.backward(T.tensor([3.0, 1.0]))
    assert x.grad.tolist() == [1.0, 1.0] and src.grad.tolist() == [1.0, 1.0, 0.0]


def test_take_along_dim_counts_negative_indices_from_the_end(T):
    x = T.arange(10.0).reshape(2, 5)
    assert T.take_along_dim(x, T.tensor([[-1], [0]]), 1).tolist() == [[4.0], [5.0]]
    assert T.take_along_dim(x, T.tensor([7])).tolist() == [7.0]


def test_nonzero_family(T):
    x = T.tensor([[0.0, 1.5], [2.0, 0.0]])
    assert T.nonzero(x).tolist() == [[0, 1], [1, 0]]
    assert [t.tolist() for t in T.nonzero(x, as_tuple=True)] == [[0, 1], [1, 0]]
    assert T.argwhere(x).tolist() == [[0, 1], [1, 0]]
    assert T.nonzero_static(x, size=3).tolist() == [[0, 1], [1, 0], [-1, -1]]


def test_index_copy_refuses_a_count_mismatch_before_writing(T):
    x = T.zeros(3, 2)
    with pytest.raises(IndexError, match=r"Number of indices \(1\) should be equal to "
                                         r"source.size\(dim\) \(2\)"):
        x.index_copy_(0, T.tensor([0]), T.ones(2, 2))
    assert np.all(x.numpy() == 0)
