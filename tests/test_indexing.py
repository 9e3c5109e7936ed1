"""Indexing reads on both engines: ``x[...]``, ``select``, ``index_select`` and ``gather``.

Inputs are built with NumPy. Values and gradients are checked against NumPy's own indexing; node
names and ``_saved_*`` fields against what torch 2.13 shows, pinned here.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import leaf, sample, to_np

I64_MAX = 2**63 - 1
U64 = 2**64  # torch shows a negative saved dim, index, start or end as 2**64 plus the value
MASK = np.array([[False, True, False, True], [True, True, False, False],
                 [False, False, False, True]])
MASK23 = np.array([[True, False, True], [False, True, True]])


def as_index(T, key):
    """A NumPy index with each array made a tensor of backend ``T`` (lists stay lists)."""
    if isinstance(key, tuple):
        return tuple(as_index(T, k) for k in key)
    if isinstance(key, np.ndarray):
        return T.tensor(key)
    return key


def plain(value):
    """A saved field as plain Python: a tensor becomes (dtype name, values)."""
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    if hasattr(value, "detach"):
        return (str(value.dtype).split(".")[-1], to_np(value).tolist())
    return value


def saved(node) -> dict:
    """The ``_saved_*`` fields of a node, by name without the prefix."""
    return {name[len("_saved_"):]: plain(getattr(node, name))
            for name in dir(node) if name.startswith("_saved_")}


def chain(t) -> list:
    """(name, saved fields) of each node from ``t.grad_fn`` down to the leaf."""
    out = []
    fn = t.grad_fn
    while fn is not None and "AccumulateGrad" not in fn.name():
        out.append((fn.name(), saved(fn)))
        fn = fn.next_functions[0][0]
    return out


def values(shape) -> np.ndarray:
    """Distinct values, so that a wrong element shows."""
    return np.arange(1.0, 1.0 + np.prod(shape, dtype=int)).reshape(shape)


# id, shape, index (NumPy arrays become tensors), whether torch gives a view
READS = [
    ("int", (3, 4), 1, True),
    ("negative_int", (3, 4), -1, True),
    ("int_of_vector", (4,), 2, True),
    ("slice", (3, 4), slice(1, 3), True),
    ("slice_step", (5, 2), slice(None, None, 2), True),
    ("slice_start_step", (5, 2), slice(1, None, 3), True),
    ("slice_past_end", (3, 4), slice(1, 10), True),
    ("negative_start", (3, 4), slice(-2, None), True),
    ("negative_stop", (3, 4), slice(None, -1), True),
    ("empty_slice", (3, 4), slice(5, None), True),
    ("full_slice", (3, 4), slice(None), True),
    ("ellipsis", (3, 4), Ellipsis, True),
    ("empty_tuple", (3, 4), (), True),
    ("none", (3, 4), None, True),
    ("int_then_slice", (3, 4), (0, slice(1, 3)), True),
    ("slice_none_int", (3, 4), (slice(None), None, 1), True),
    ("ellipsis_int", (2, 3, 4), (Ellipsis, 0), True),
    ("none_ellipsis_none", (3, 4), (None, Ellipsis, None), True),
    ("two_ints", (3, 4), (2, 1), True),
    ("slice_then_int", (3, 4), (slice(None, 2), 1), True),
    ("full_slices", (3, 4), (slice(None), slice(0, 4)), True),
    ("zero_dim_int_tensor", (3, 4), np.array(1), True),
    ("zero_dim_tensor_and_int", (3, 4), (np.array(-1), 0), True),
    ("index_tensor", (3, 4), np.array([0, 2]), False),
    ("index_list", (3, 4), [2, 0], False),
    ("repeated_indices", (3, 4), [0, 0, 2, 0], False),
    ("negative_indices", (3, 4), [-1, 0], False),
    ("index_matrix", (3, 4), np.array([[0, 1], [2, 2]]), False),
    ("int32_index", (3, 4), np.array([1, 1], dtype=np.int32), False),
    ("empty_list", (3, 4), [], False),
    ("two_lists", (3, 4), ([0, 2], [1, 1]), False),
    ("index_then_slice", (3, 4), (np.array([0, 2]), slice(1, None)), False),
    ("slice_then_index", (3, 4), (slice(1, None), np.array([0, 2])), False),
    ("column_list", (3, 4), (slice(None), [3, 0, 3]), False),
    ("mask", (3, 4), MASK, False),
    ("row_mask", (3, 4), np.array([True, False, True]), False),
    ("bool_list", (3, 4), [True, False, True], False),
    ("true", (3, 4), True, False),
    ("false", (3, 4), False, False),
    ("separated_indices", (2, 3, 4), (np.array([0, 1]), slice(None), np.array([[0], [3]])), False),
    ("mask_then_index", (2, 3, 4), (MASK23, np.array([0, 1, 2, 3])), False),
    ("mask_then_slice", (2, 3, 4), (MASK23, slice(1, None)), False),
    ("index_none_index", (2, 3, 4), (np.array([0, 1]), None, np.array([[0], [2]])), False),
]
READ_PARAMS = [pytest.param(*row[1:], id=row[0]) for row in READS]


@pytest.mark.parametrize("shape,key,is_view", READ_PARAMS)
@pytest.mark.parametrize("dtype", [np.float64, np.int64], ids=["float64", "int64"])
def test_values_match_numpy_indexing(T, shape, key, is_view, dtype):
    base = values(shape).astype(dtype)
    y = T.tensor(base)[as_index(T, key)]
    expected = base[key]
    assert tuple(y.shape) == expected.shape
    assert to_np(y).dtype == dtype
    np.testing.assert_array_equal(to_np(y), expected)


@pytest.mark.parametrize("shape,key,is_view", READ_PARAMS)
def test_basic_indexing_gives_views_and_advanced_indexing_copies(T, shape, key, is_view):
    base = values(shape)
    x = T.tensor(base)
    y = x[as_index(T, key)]
    assert y is not x
    if y.numel():
        assert np.shares_memory(to_np(y), to_np(x)) == is_view
    x.numpy()[...] += 100.0  # write through the base's storage
    np.testing.assert_array_equal(to_np(y), (base + 100.0 if is_view else base)[key])


@pytest.mark.parametrize("shape,key,is_view", READ_PARAMS)
def test_gradient_adds_each_output_gradient_where_it_was_read(T, rng, shape, key, is_view):
    x = leaf(T, sample(rng, shape))
    y = x[as_index(T, key)]
    g = sample(rng, tuple(y.shape))
    y.backward(T.tensor(g))
    # Which input element each output element is: repeated reads add up.
    n = np.prod(shape, dtype=int)
    ids = np.arange(n).reshape(shape)[key]
    expected = np.bincount(np.ravel(ids), weights=g.ravel(), minlength=n).reshape(shape)
    np.testing.assert_allclose(to_np(x.grad), expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("shape,key,is_view", READ_PARAMS)
def test_gradcheck_and_gradgradcheck(T, rng, shape, key, is_view):
    x = leaf(T, sample(rng, shape))
    index = as_index(T, key)
    assert T.autograd.gradcheck(lambda t: t[index], (x,))
    assert T.autograd.gradgradcheck(lambda t: t[index], (x,))


# id, shape, index, the nodes from y.grad_fn down: (name, _saved_* fields)
NODES = [
    ("int", (3, 4), 1,
     [("SelectBackward0", {"dim": 0, "index": 1, "self_sym_sizes": (3, 4)})]),
    ("negative_int", (3, 4), -1,
     [("SelectBackward0", {"dim": 0, "index": U64 - 1, "self_sym_sizes": (3, 4)})]),
    ("slice", (3, 4), slice(1, 3),
     [("SliceBackward0",
       {"dim": 0, "start": 1, "end": 3, "step": 1, "self_sym_sizes": (3, 4)})]),
    ("lone_full_slice", (3, 4), slice(None),
     [("SliceBackward0",
       {"dim": 0, "start": 0, "end": I64_MAX, "step": 1, "self_sym_sizes": (3, 4)})]),
    ("negative_start", (3, 4), slice(-2, None),
     [("SliceBackward0",
       {"dim": 0, "start": U64 - 2, "end": I64_MAX, "step": 1, "self_sym_sizes": (3, 4)})]),
    ("negative_stop_step", (3, 4), slice(None, -1, 2),
     [("SliceBackward0",
       {"dim": 0, "start": 0, "end": U64 - 1, "step": 2, "self_sym_sizes": (3, 4)})]),
    ("stop_past_end", (3, 4), slice(1, 10),
     [("SliceBackward0",
       {"dim": 0, "start": 1, "end": 10, "step": 1, "self_sym_sizes": (3, 4)})]),
    ("ellipsis", (3, 4), Ellipsis, [("AliasBackward0", {})]),
    ("full_slices_in_a_tuple", (3, 4), (slice(None), slice(0, 9)), [("AliasBackward0", {})]),
    ("none", (3, 4), None, [("UnsqueezeBackward0", {"dim": 0})]),
    ("int_then_slice", (3, 4), (0, slice(1, 3)),
     [("SliceBackward0", {"dim": 0, "start": 1, "end": 3, "step": 1, "self_sym_sizes": (4,)}),
      ("SelectBackward0", {"dim": 0, "index": 0, "self_sym_sizes": (3, 4)})]),
    ("slice_none_int", (3, 4), (slice(None), None, 1),
     [("SelectBackward0", {"dim": 2, "index": 1, "self_sym_sizes": (3, 1, 4)}),
      ("UnsqueezeBackward0", {"dim": 1})]),
    ("ellipsis_int", (3, 4), (Ellipsis, 0),
     [("SelectBackward0", {"dim": 1, "index": 0, "self_sym_sizes": (3, 4)})]),
    ("slice_then_int", (3, 4), (slice(None, 2), 1),
     [("SelectBackward0", {"dim": 1, "index": 1, "self_sym_sizes": (2, 4)}),
      ("SliceBackward0", {"dim": 0, "start": 0, "end": 2, "step": 1, "self_sym_sizes": (3, 4)})]),
    ("zero_dim_int_tensor", (3, 4), np.array(1),
     [("SelectBackward0", {"dim": 0, "index": 1, "self_sym_sizes": (3, 4)})]),
    ("index_list", (3, 4), [0, 2],
     [("IndexBackward0", {"indices": (("int64", [0, 2]),), "self_sym_sizes": (3, 4)})]),
    ("repeated_indices", (3, 4), np.array([0, 0]),
     [("IndexBackward0", {"indices": (("int64", [0, 0]),), "self_sym_sizes": (3, 4)})]),
    ("int32_index", (3, 4), np.array([1], dtype=np.int32),
     [("IndexBackward0", {"indices": (("int32", [1]),), "self_sym_sizes": (3, 4)})]),
    ("two_lists", (3, 4), ([0, 2], [1, 1]),
     [("IndexBackward0", {"indices": (("int64", [0, 2]), ("int64", [1, 1])),
                          "self_sym_sizes": (3, 4)})]),
    ("index_then_slice", (3, 4), (np.array([0, 2]), slice(1, None)),
     [("IndexBackward0", {"indices": (("int64", [0, 2]),), "self_sym_sizes": (3, 3)}),
      ("SliceBackward0",
       {"dim": 1, "start": 1, "end": I64_MAX, "step": 1, "self_sym_sizes": (3, 4)})]),
    ("slice_then_index", (3, 4), (slice(1, None), np.array([0, 2])),
     [("IndexBackward0", {"indices": (None, ("int64", [0, 2])), "self_sym_sizes": (2, 4)}),
      ("SliceBackward0",
       {"dim": 0, "start": 1, "end": I64_MAX, "step": 1, "self_sym_sizes": (3, 4)})]),
    ("row_mask", (3, 4), np.array([True, False, True]),
     [("IndexBackward0", {"indices": (("bool", [True, False, True]),),
                          "self_sym_sizes": (3, 4)})]),
    ("bool_list", (3, 4), [True, False, True],
     [("IndexBackward0", {"indices": (("bool", [True, False, True]),),
                          "self_sym_sizes": (3, 4)})]),
    ("true", (3, 4), True,
     [("IndexBackward0", {"indices": (("int64", [0]),), "self_sym_sizes": (1, 3, 4)}),
      ("UnsqueezeBackward0", {"dim": 0})]),
    ("false", (3, 4), False,
     [("IndexBackward0", {"indices": (("int64", []),), "self_sym_sizes": (1, 3, 4)}),
      ("UnsqueezeBackward0", {"dim": 0})]),
    ("mask_none", (2, 3, 4), (MASK23, None),
     [("IndexBackward0", {"indices": (("bool", MASK23.tolist()),),
                          "self_sym_sizes": (2, 3, 1, 4)}),
      ("UnsqueezeBackward0", {"dim": 2})]),
    ("index_none_index", (2, 3, 4), (np.array([0, 1]), None, np.array([2])),
     [("IndexBackward0", {"indices": (("int64", [0, 1]), None, ("int64", [2])),
                          "self_sym_sizes": (2, 1, 3, 4)}),
      ("UnsqueezeBackward0", {"dim": 1})]),
    ("mask_then_index", (2, 3, 4), (MASK23, np.array([0, 1, 2, 3])),
     [("IndexBackward0", {"indices": (("bool", MASK23.tolist()), ("int64", [0, 1, 2, 3])),
                          "self_sym_sizes": (2, 3, 4)})]),
]


@pytest.mark.parametrize("shape,key,expected", [pytest.param(*r[1:], id=r[0]) for r in NODES])
def test_nodes_and_saved_fields_are_torchs(T, rng, shape, key, expected):
    x = leaf(T, sample(rng, shape))
    assert chain(x[as_index(T, key)]) == expected


def test_reads_of_a_tensor_that_needs_no_grad_record_nothing(T):
    x = T.tensor(values((3, 4)))
    assert x[0].grad_fn is None and x[[0, 1]].grad_fn is None
    with T.no_grad():
        y = leaf(T, values((3, 4)))[1:, [0]]
    assert y.grad_fn is None and not y.requires_grad


def test_repeated_indices_accumulate(T):
    x = leaf(T, [1.0, 2.0, 3.0])
    x[[0, 0, 2, 0]].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0]


def test_an_int_after_an_index_tensor_is_a_select_first_unlike_numpy(T):
    base = values((2, 3, 4, 5))
    i = np.array([0, 2])
    y = T.tensor(base)[:, T.tensor(i), :, 0]
    # torch selects dim 3 first, then indexes; NumPy would put the broadcast dim in front.
    np.testing.assert_array_equal(to_np(y), base[:, :, :, 0][:, i])
    assert base[:, i, :, 0].shape == (2, 2, 4) and not np.array_equal(base[:, i, :, 0], to_np(y))


def test_bools_add_a_dim_that_is_kept_or_emptied(T):
    x = T.tensor(values((3, 4)))
    assert tuple(x[True].shape) == (1, 3, 4)
    assert tuple(x[False].shape) == (0, 3, 4)
    assert tuple(x[T.tensor(True), 1].shape) == (1, 4)


def test_views_share_the_version_counter_and_copies_do_not(T):
    x = leaf(T, [1.0, 2.0, 3.0])
    (x * 2).sum().backward()
    grad = x.grad
    view, copy = grad[1:], grad[[0]]
    (x * 2).sum().backward()  # accumulates into x.grad in place
    assert (grad._version, view._version, copy._version) == (1, 1, 0)
    assert view.tolist() == [4.0, 4.0]


def test_a_list_holding_a_list_is_a_tuple_of_indices_with_a_warning(T):
    x = T.tensor(values((3, 4)))
    with pytest.warns(UserWarning, match="Using a non-tuple sequence for multidimensional"):
        y = x[[0, [1, 3]]]
    np.testing.assert_array_equal(to_np(y), values((3, 4))[0, [1, 3]])


def test_uint8_masks_still_work_with_a_deprecation_warning(T):
    x = T.tensor(values((3, 4)))
    mask = T.tensor(np.array([1, 0, 1], dtype=np.uint8))
    with pytest.warns(UserWarning, match=f"indexing with dtype {T.__name__}.uint8 is now "
                                         "deprecated"):
        y = x[mask]
    np.testing.assert_array_equal(to_np(y), values((3, 4))[[0, 2]])


def test_float_lists_are_truncated_to_integer_indices(T):
    x = T.tensor(values((3, 4)))
    np.testing.assert_array_equal(to_np(x[[0.7, 2.2]]), values((3, 4))[[0, 2]])


def test_an_empty_read_checks_no_index(T):
    x = T.tensor(values((3, 0, 2)))
    assert tuple(x[T.tensor([0, 7]), :, 1].shape) == (2, 0)
    assert tuple(x[[], [9]].shape) == (0, 2)


# --------------------------------------------------------------------- gradients of gradients
# id, read, the node of the create_graph gradient, the nodes of the gradient of that gradient
DOUBLE = [
    ("select", lambda T, x: x[-1],
     ("SelectBackwardBackward0", {"dim": 0, "index": U64 - 1}), ["SelectBackward0"]),
    ("slice", lambda T, x: x[:, 1:3],
     ("SliceBackwardBackward0", {"dim": 1, "start": 1, "end": 3, "step": 1}),
     ["SliceBackward0"]),
    ("index", lambda T, x: x[[0, 0]],
     ("IndexPutImplBackward0", {"accumulate": True, "indices": (("int64", [0, 0]),)}),
     ["IndexBackward0"]),
    ("mask", lambda T, x: x[:, T.tensor([True, False, False, True])],
     ("IndexPutImplBackward0",
      {"accumulate": True, "indices": (None, ("bool", [True, False, False, True]))}),
     ["IndexBackward0"]),
    # torch's formula expands the read to the source's shape, even when it already has it.
    ("index_select", lambda T, x: x.index_select(1, T.tensor([2, 2])),
     ("IndexAddBackward0", {"alpha": 1, "dim": 1, "index": ("int64", [2, 2]),
                            "source": ("float64", [[1.0, 1.0]] * 3), "source_dim": 2}),
     ["ExpandBackward0", "IndexSelectBackward0"]),
    ("gather", lambda T, x: x.gather(1, T.tensor([[0], [3], [3]])),
     ("ScatterAddBackward0", {"dim": 1, "index": ("int64", [[0], [3], [3]])}),
     ["GatherBackward0"]),
]


@pytest.mark.parametrize("read,node,next_names",
                         [pytest.param(*r[1:], id=r[0]) for r in DOUBLE])
def test_a_gradient_of_a_gradient_is_the_read_again(T, rng, read, node, next_names):
    x = leaf(T, sample(rng, (3, 4)))
    y = read(T, x)
    g = leaf(T, np.ones(tuple(y.shape)))
    (gx,) = T.autograd.grad(y, x, g, create_graph=True)
    assert (gx.grad_fn.name(), saved(gx.grad_fn)) == node
    w = leaf(T, sample(rng, (3, 4)))
    (gg,) = T.autograd.grad(gx, g, w, create_graph=True)
    assert [name for name, _ in chain(gg)] == next_names
    np.testing.assert_allclose(to_np(gg), to_np(read(T, w)))


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_gradients_are_a_put_and_a_read_that_add_up_repeats(T, accumulate):
    # torch: x gets grad.index_put(indices, 0) (or grad), values get grad.index(indices),
    # whose own backward adds up the repeated index 2.
    x = leaf(T, values((3, 2)))
    v = leaf(T, np.array([[1.5, 2.5]]))
    y = x.index_put((T.tensor([2, 0, 2]),), v, accumulate=accumulate)
    gx, gv = T.autograd.grad((y * y).sum(), [x, v], create_graph=True)
    assert gx.grad_fn.name() == ("AddBackward0" if accumulate else "IndexPutBackward0")
    assert gv.grad_fn.next_functions[0][0].name() == "IndexBackward0"
    (ggv,) = T.autograd.grad((gv * gv).sum(), [v])
    # gv = 2 (2 y[2] + y[0]); its gradient in y, 2 gv (4 at row 2, 2 at row 0), is read back
    # at 2, 0, 2 for v: 2 gv (4 + 2 + 4).
    np.testing.assert_allclose(to_np(ggv), 20 * to_np(gv.detach()))


def test_the_gradient_of_a_new_axis_is_a_squeeze(T, rng):
    x = leaf(T, sample(rng, (3, 4)))
    g = leaf(T, np.ones((1, 3, 4)))
    (gx,) = T.autograd.grad(x[None], x, g, create_graph=True)
    assert chain(gx) == [("SqueezeBackward1", {"dim": 0, "self_sym_sizes": (1, 3, 4)})]


def test_the_scatter_into_zeros_has_no_edge_to_the_zeros(T):
    x = leaf(T, values((3, 4)))
    g = leaf(T, np.ones(2))
    (gx,) = T.autograd.grad(x[[0, 1], [2, 2]], x, g, create_graph=True)
    (zeros_edge, _), (grad_edge, _) = gx.grad_fn.next_functions
    assert zeros_edge is None
    assert "AccumulateGrad" in grad_edge.name()


def test_an_alias_passes_the_gradient_through(T):
    x = leaf(T, values((3, 4)))
    g = leaf(T, np.ones((3, 4)))
    (gx,) = T.autograd.grad(x[...], x, g, create_graph=True)
    assert gx.grad_fn is None
    np.testing.assert_array_equal(to_np(gx), np.ones((3, 4)))


# --------------------------------------------------------------------- errors
# id, shape, index, exception type, message
ERRORS = [
    ("int_out_of_range", (3,), 5, IndexError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    ("negative_int_out_of_range", (3, 4), -4, IndexError,
     "index -4 is out of bounds for dimension 0 with size 3"),
    ("second_int_out_of_range", (3, 4), (1, 5), IndexError,
     "index 5 is out of bounds for dimension 1 with size 4"),
    ("int_after_none_names_its_position", (2, 3, 4), (None, 5), IndexError,
     "index 5 is out of bounds for dimension 1 with size 2"),
    ("zero_dim_tensor_index_out_of_range", (3, 4), np.array(5), IndexError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    ("too_many_indices", (3, 4), (0, 0, 0), IndexError,
     "too many indices for tensor of dimension 2"),
    ("too_many_with_ellipsis", (3, 4), (0, Ellipsis, 0, 0), IndexError,
     "too many indices for tensor of dimension 2"),
    ("mask_with_too_many_dims", (3,), np.ones((3, 1), bool), IndexError,
     "too many indices for tensor of dimension 1"),
    ("float", (3, 4), 1.0, IndexError,
     "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
     "valid indices (got float)"),
    ("float_in_a_tuple", (3, 4), (0, 2.0), IndexError, "valid indices (got float)"),
    ("object", (3, 4), object(), IndexError, "valid indices (got object)"),
    ("float_tensor", (3, 4), np.array([0.0, 1.0]), IndexError,
     "tensors used as indices must be long, int, byte or bool tensors"),
    ("zero_dim_float_tensor", (3, 4), np.array(1.0), IndexError,
     "tensors used as indices must be long, int, byte or bool tensors"),
    ("int16_tensor", (3, 4), np.array([0], dtype=np.int16), IndexError,
     "tensors used as indices must be long, int, byte or bool tensors"),
    ("negative_step", (3, 4), slice(None, None, -1), ValueError,
     "step must be greater than zero"),
    ("zero_step", (3, 4), slice(None, None, 0), ValueError, "slice step cannot be zero"),
    ("float_slice_bound", (3, 4), slice(0.5, None), TypeError,
     "slice indices must be integers or None or have an __index__ method"),
    ("mask_of_wrong_shape", (3, 4), np.array([True, False]), IndexError,
     "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor "
     "[3, 4] at index 0"),
    ("mask_of_wrong_shape_after_a_slice", (2, 3, 4), (slice(None), np.ones((3, 5), bool)),
     IndexError, "The shape of the mask [3, 5] at index 1 does not match the shape of the "
     "indexed tensor [2, 3, 4] at index 2"),
    ("index_tensor_out_of_range", (3, 4), np.array([0, 3]), IndexError,
     "index 3 is out of bounds for dimension 0 with size 3"),
    ("index_list_out_of_range", (3, 4), [0, -4], IndexError,
     "index -4 is out of bounds for dimension 0 with size 3"),
    ("index_out_of_range_names_the_index_tensor", (2, 3, 4), (slice(None), slice(None), [9]),
     IndexError, "index 9 is out of bounds for dimension 0 with size 4"),
    ("first_bad_element_is_reported", (2, 3, 4), ([0, 5], [9, 0]), IndexError,
     "index 9 is out of bounds for dimension 1 with size 3"),
    ("indices_that_do_not_broadcast", (3, 4), ([0, 1], [0, 1, 2]), IndexError,
     "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]"),
    ("int_of_zero_dim", (), 0, IndexError, "invalid index of a 0-dim tensor. Use `tensor.item()`"),
    ("other_int_of_zero_dim", (), 1, IndexError,
     "index 1 is out of bounds for dimension 0 with size 0"),
    ("slice_of_zero_dim", (), slice(None), IndexError,
     "slice() cannot be applied to a 0-dim tensor."),
    ("list_of_zero_dim", (), [0], IndexError, "too many indices for tensor of dimension 0"),
]


@pytest.mark.parametrize("shape,key,exc,message", [pytest.param(*r[1:], id=r[0]) for r in ERRORS])
def test_errors_are_torchs(T, shape, key, exc, message):
    x = leaf(T, values(shape))
    index = as_index(T, key)
    with pytest.raises(exc) as info:
        x[index]
    assert message in str(info.value)


def test_a_string_is_read_as_a_sequence_and_rejected(T):
    x = T.tensor(values((3, 4)))
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        with pytest.raises(TypeError, match="new\\(\\): invalid data type 'str'"):
            x["a"]


# --------------------------------------------------------------------- select
def test_select_is_a_view_of_one_entry(T):
    base = values((3, 4))
    x = leaf(T, base)
    y = x.select(-1, 2)
    np.testing.assert_array_equal(to_np(y), base[:, 2])
    assert chain(y) == [("SelectBackward0",
                         {"dim": U64 - 1, "index": 2, "self_sym_sizes": (3, 4)})]
    assert T.select(x, 0, -1).tolist() == base[-1].tolist()
    y.sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), np.eye(4)[[2, 2, 2]])


def test_select_gradcheck_and_gradgradcheck(T, rng):
    x = leaf(T, sample(rng, (2, 3)))
    assert T.autograd.gradcheck(lambda t: t.select(1, -1), (x,))
    assert T.autograd.gradgradcheck(lambda t: t.select(1, -1), (x,))


@pytest.mark.parametrize("shape,dim,index,exc,message", [
    pytest.param((3, 4), 0, 3, IndexError,
                 "select(): index 3 out of range for tensor of size [3, 4] at dimension 0",
                 id="index"),
    pytest.param((3, 4), -1, 9, IndexError,
                 "select(): index 9 out of range for tensor of size [3, 4] at dimension 1",
                 id="index_negative_dim"),
    pytest.param((3, 4), 2, 0, IndexError,
                 "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
                 id="dim"),
    pytest.param((), 0, 0, IndexError, "select() cannot be applied to a 0-dim tensor.",
                 id="zero_dim"),
])
def test_select_errors(T, shape, dim, index, exc, message):
    with pytest.raises(exc) as info:
        T.tensor(values(shape)).select(dim, index)
    assert message in str(info.value)


# --------------------------------------------------------------------- index_select
INDEX_SELECT = [
    ("rows", (3, 4), 0, np.array([2, 0, 2])),
    ("columns", (3, 4), 1, np.array([3, 3, 1])),
    ("negative_dim_int32", (3, 4), -1, np.array([3, 0], dtype=np.int32)),
    ("zero_dim_index", (3, 4), 1, np.array(2)),
    ("empty_index", (3, 4), 0, np.array([], dtype=np.int64)),
    ("middle_dim", (2, 3, 4), 1, np.array([2, 0])),
]
INDEX_SELECT_PARAMS = [pytest.param(*r[1:], id=r[0]) for r in INDEX_SELECT]


@pytest.mark.parametrize("shape,dim,index", INDEX_SELECT_PARAMS)
def test_index_select_values_and_gradient(T, rng, shape, dim, index):
    base = sample(rng, shape)
    x = leaf(T, base)
    y = x.index_select(dim, T.tensor(index))
    expected = np.take(base, index.reshape(-1), axis=dim)
    np.testing.assert_array_equal(to_np(y), expected)
    np.testing.assert_array_equal(to_np(T.index_select(x, dim, T.tensor(index))), expected)
    g = sample(rng, expected.shape)
    y.backward(T.tensor(g))
    grad = np.zeros(shape)
    np.add.at(grad, (slice(None),) * (dim % len(shape)) + (index.reshape(-1),), g)
    np.testing.assert_allclose(to_np(x.grad), grad, rtol=1e-12)


@pytest.mark.parametrize("shape,dim,index", INDEX_SELECT_PARAMS)
def test_index_select_gradcheck_and_gradgradcheck(T, rng, shape, dim, index):
    x = leaf(T, sample(rng, shape))
    i = T.tensor(index)
    assert T.autograd.gradcheck(lambda t: t.index_select(dim, i), (x,))
    assert T.autograd.gradgradcheck(lambda t: t.index_select(dim, i), (x,))


def test_index_select_node(T, rng):
    x = leaf(T, sample(rng, (3, 4)))
    assert chain(x.index_select(-1, T.tensor([1, 1]))) == [
        ("IndexSelectBackward0",
         {"dim": U64 - 1, "index": ("int64", [1, 1]), "self_sym_sizes": (3, 4)})]


def test_index_select_of_a_zero_dim_tensor(T):
    x = leaf(T, 1.5)
    y = x.index_select(0, T.tensor([0]))
    assert tuple(y.shape) == () and y.item() == 1.5
    y.backward()
    assert x.grad.item() == 1.0


@pytest.mark.parametrize("shape,dim,index,exc,message", [
    pytest.param((3, 4), 0, np.array([0, 3]), IndexError, "index out of range in self",
                 id="rows_out_of_range"),
    pytest.param((3, 4), 0, np.array([-1]), IndexError, "index out of range in self",
                 id="negative"),
    pytest.param((2, 3, 4), 1, np.array([5]), RuntimeError,
                 "INDICES element is out of DATA bounds, id=5 axis_dim=3", id="dim_1"),
    pytest.param((3, 4), 0, np.array([[0]]), IndexError,
                 "index_select(): Index is supposed to be a vector", id="matrix"),
    pytest.param((3, 4), 0, np.array([0.0]), RuntimeError,
                 "index_select(): Expected dtype int32 or int64 for index", id="float"),
    pytest.param((3, 4), 2, np.array([0]), IndexError,
                 "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
                 id="dim"),
    pytest.param((3, 4), 0, [0], TypeError,
                 "index_select(): argument 'index' (position 2) must be Tensor, not list",
                 id="list"),
])
def test_index_select_errors(T, shape, dim, index, exc, message):
    with pytest.raises(exc) as info:
        leaf(T, values(shape)).index_select(dim, as_index(T, index))
    assert message in str(info.value)


# --------------------------------------------------------------------- gather
GATHER = [
    ("columns", (3, 4), 1, np.array([[0, 0], [1, 2], [3, 3]])),
    ("rows", (3, 4), 0, np.array([[0, 0, 2], [1, 2, 2]])),
    ("negative_dim_int32", (3, 4), -1, np.array([[3], [0]], dtype=np.int32)),
    ("longer_than_the_dim", (3, 4), 1, np.array([[0, 0, 1, 1, 3, 3]])),
    ("3d", (2, 3, 4), 1, np.array([[[2, 0, 1]], [[1, 1, 1]]])),
    ("zero_dim", (), 0, np.array(0)),
]
GATHER_PARAMS = [pytest.param(*r[1:], id=r[0]) for r in GATHER]


def _gather_key(index: np.ndarray, dim: int) -> tuple:
    """NumPy's index for gather: ``index`` along ``dim``, each element's own position elsewhere."""
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


@pytest.mark.parametrize("shape,dim,index", GATHER_PARAMS)
def test_gather_values_and_gradient(T, rng, shape, dim, index):
    base = sample(rng, shape)
    x = leaf(T, base)
    y = x.gather(dim, T.tensor(index))
    if shape:
        key = _gather_key(index, dim % len(shape))
        expected = base[key]
    else:
        key, expected = (), base
    np.testing.assert_array_equal(to_np(y), expected)
    np.testing.assert_array_equal(to_np(T.gather(x, dim, T.tensor(index))), expected)
    g = sample(rng, index.shape)
    y.backward(T.tensor(g))
    grad = np.zeros(shape)
    np.add.at(grad, key, g)
    np.testing.assert_allclose(to_np(x.grad), grad, rtol=1e-12)


@pytest.mark.parametrize("shape,dim,index", GATHER_PARAMS)
def test_gather_gradcheck_and_gradgradcheck(T, rng, shape, dim, index):
    x = leaf(T, sample(rng, shape))
    i = T.tensor(index)
    assert T.autograd.gradcheck(lambda t: t.gather(dim, i), (x,))
    assert T.autograd.gradgradcheck(lambda t: t.gather(dim, i), (x,))


def test_gather_node_saves_self_and_index(T, rng):
    base = sample(rng, (2, 2))
    x = leaf(T, base)
    y = T.gather(x, -1, T.tensor([[1], [0]]))
    assert chain(y) == [("GatherBackward0", {"dim": U64 - 1, "index": ("int64", [[1], [0]]),
                                             "self": ("float64", base.tolist()),
                                             "sparse_grad": False})]
    assert y.grad_fn._saved_self is x


@pytest.mark.parametrize("shape,dim,index,exc,message", [
    pytest.param((3, 4), 1, np.array([[0, 5, -1]]), RuntimeError,
                 "index 5 is out of bounds for dimension 1 with size 4", id="out_of_range"),
    pytest.param((3, 4), 1, np.array([[-1]]), RuntimeError,
                 "index -1 is out of bounds for dimension 1 with size 4", id="negative"),
    pytest.param((3, 4), 1, np.array([0]), RuntimeError,
                 "Index tensor must have the same number of dimensions as input tensor",
                 id="ndim"),
    pytest.param((3, 4), 1, np.array([0.5]), RuntimeError,
                 "gather(): Expected dtype int32/int64 for index", id="float"),
    pytest.param((3, 4), -1, np.zeros((4, 1), np.int64), RuntimeError,
                 "Size does not match at dimension 0 expected index [4, 1] to be no larger "
                 "than self [3, 4] apart from dimension 1", id="size"),
    pytest.param((3, 4), 2, np.zeros((3, 1), np.int64), IndexError,
                 "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
                 id="dim"),
    pytest.param((3, 4), 1, [[0]], TypeError,
                 "gather(): argument 'index' (position 2) must be Tensor, not list", id="list"),
])
def test_gather_errors(T, shape, dim, index, exc, message):
    with pytest.raises(exc) as info:
        leaf(T, values(shape)).gather(dim, as_index(T, index))
    assert message in str(info.value)


# --------------------------------------------------------------------- scatter
@pytest.mark.parametrize("shape,dim,index,src,expected", [
    pytest.param((3, 2), 0, [[2]], [[5.0]], [[0, 0], [0, 0], [5, 0]],
                 id="index_smaller_than_self_in_the_other_dim"),
    pytest.param((3, 2), 0, [[2], [0]], [[5.0, 1.0], [6.0, 2.0]], [[6, 0], [0, 0], [5, 0]],
                 id="src_larger_than_index"),
    pytest.param((2, 2), 1, [[0, 1, 0]], [[2.0, 3.0, 4.0]], [[4, 3], [0, 0]],
                 id="index_longer_than_self_in_the_scatter_dim"),
    pytest.param((2, 2), 1, [[0], [1]], 2.0, [[2, 0], [0, 2]], id="number"),
    pytest.param((3,), 0, 1, 2.0, [0, 2, 0], id="0d_index_into_1d"),
    pytest.param((3,), 0, [1], np.float32(2.0), [0, 2, 0], id="0d_src_with_1d_index"),
    pytest.param((), 0, [0], [2.0], 2.0, id="0d_self"),
    pytest.param((5, 2), 1, np.zeros((5, 0), np.int64), np.float32(2.0), np.zeros((5, 2)),
                 id="empty_index_writes_nothing"),
])
def test_scatter_writes_src_where_index_points(T, shape, dim, index, src, expected):
    src = T.tensor(src) if isinstance(src, (list, np.ndarray, np.generic)) else src
    out = T.scatter(T.zeros(shape), dim, T.tensor(index), src)
    np.testing.assert_array_equal(to_np(out), np.asarray(expected, dtype=np.float32))


def test_scatter_in_place_gradients(T):
    x = leaf(T, np.zeros((3, 2)))
    src = leaf(T, np.array([[5.0, 6.0]]))
    y = x * 1
    y.scatter_(0, T.tensor([[2, 0]]), src)
    assert y.grad_fn.name() == "ScatterBackward0"
    y.backward(T.tensor(np.arange(6.0).reshape(3, 2)))
    np.testing.assert_array_equal(to_np(x.grad), [[0, 0], [2, 3], [0, 5]])
    np.testing.assert_array_equal(to_np(src.grad), [[4, 1]])


@pytest.mark.parametrize("shape,dim,index,src,message", [
    pytest.param((2, 2), 1, [[0], [1]], np.float32(2.0),
                 "Index tensor must have the same number of dimensions as src tensor",
                 id="0d_src"),
    pytest.param((2, 2), 1, [0, 1], [[2.0]],
                 "Index tensor must have the same number of dimensions as self tensor",
                 id="index_ndim"),
    pytest.param((2, 2), 1, [[0, 1]], [[2.0]],
                 "Expected index [1, 2] to be no larger than self [2, 2] apart from dimension 1 "
                 "and to be no larger size than src [1, 1]", id="src_too_small"),
    pytest.param((2, 2), 0, [[0, 1, 1]], 1.0,
                 "Expected index [1, 3] to be no larger than self [2, 2] apart from dimension 0",
                 id="self_too_small"),
    pytest.param((2, 2), 1, [[0], [2]], [[2.0], [3.0]],
                 "index 2 is out of bounds for dimension 1 with size 2", id="out_of_range"),
    pytest.param((2, 2), 1, [[0], [-1]], [[2.0], [3.0]],
                 "index -1 is out of bounds for dimension 1 with size 2", id="negative"),
    pytest.param((2, 2), 1, np.array([[0], [1]], np.int16), [[2.0], [3.0]],
                 "scatter(): Expected dtype int32/int64 for index", id="int16_index"),
    pytest.param((2, 2), 1, np.zeros(0, np.int64), np.array([[2.0]], np.float64),
                 "scatter(): Expected self.dtype to be equal to src.dtype", id="src_dtype"),
])
def test_scatter_errors(T, shape, dim, index, src, message):
    src = T.tensor(src) if isinstance(src, (list, np.ndarray, np.generic)) else src
    x = T.zeros(shape)
    with pytest.raises(RuntimeError) as info:
        T.scatter(x, dim, T.tensor(index), src)
    assert message in str(info.value)



def test_an_advanced_index_result_is_row_major_so_flatten_is_a_view(T):
    x = T.arange(8.0).reshape(2, 2, 2).requires_grad_()
    y = x[:, :, T.tensor([1, 0])]
    assert y.stride() == (4, 2, 1)
    assert type(y.flatten().grad_fn).__name__ == "ViewBackward0"


def test_index_put_saves_its_indices_which_backward_frees(T):
    x = leaf(T, values((3,)))
    y = x.index_put((T.tensor([0]),), T.tensor(5.0, dtype=T.float64))
    assert to_np(y.grad_fn._saved_indices[0]).tolist() == [0]
    y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.grad_fn._saved_indices
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()


# An index saved through identity hooks is not version-checked: if it changes before backward,
# the backward puts the gradient where the index points then, with index_put_'s checks.
SHAPE_0_TO_1 = "value tensor of shape [0] cannot be broadcast to indexing result of shape [1]"
SHAPE_2_TO_1 = "value tensor of shape [2] cannot be broadcast to indexing result of shape [1]"


@pytest.mark.parametrize(("before", "after", "outcome"), [
    ([False, False, False], [False, True, False], (RuntimeError, SHAPE_0_TO_1)),
    ([True, True, False], [False, True, False], (RuntimeError, SHAPE_2_TO_1)),
    ([True, False, False], [True, True, True], [1.0, 1.0, 1.0]),
    ([0, 2], [0, 5], (IndexError, "index 5 is out of bounds for dimension 0 with size 3")),
    ([0, 2], [1, 1], [0.0, 2.0, 0.0]),
])
def test_an_index_changed_under_saved_tensor_hooks_is_checked_by_backward(
        T, before, after, outcome):
    index = T.tensor(before)
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = x[index]
    index.copy_(T.tensor(after))

    if isinstance(outcome, list):
        y.sum().backward()
        assert x.grad.tolist() == outcome
    else:
        error, message = outcome
        with pytest.raises(error, match=re.escape(message)):
            y.sum().backward()


def test_index_put_of_one_value_at_one_mask_is_a_masked_fill(T):
    # torch reads the value as a number first: its dtype need not match and it may be one of
    # the tensor's own elements; the mask may be the tensor itself, not a part of it.
    mask = T.tensor([True, False, True])
    assert T.zeros(3).index_put((mask,), T.tensor(7)).tolist() == [7.0, 0.0, 7.0]
    assert T.zeros(3).index_put((mask,), T.tensor([True])).tolist() == [1.0, 0.0, 1.0]
    v = T.tensor([[True, False], [True, False], [False, True]])
    assert v.index_put_((v,), T.tensor(-4)).tolist() == [[True, False], [True, False],
                                                         [False, True]]
    assert v.index_put_((v,), T.tensor(False)).tolist() == [[False, False]] * 3
    i = T.tensor([1, 0, 2])
    assert i.index_put_((i > 0,), i[0]).tolist() == [1, 0, 1]
    i[i > 0] = i[2]
    assert i.tolist() == [1, 0, 1]
    b = T.tensor([True, False, True])
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the "
                                           "written-to tensor refer to a single memory"):
        b[1:].index_put_((b[:2],), T.tensor(True))
    with pytest.raises(IndexError, match=r"The shape of the mask \[2\] at index 0 does not match"):
        T.zeros(3).index_put((T.tensor([True, False]),), T.tensor(7))
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks, but got "
                                           "mask with dtype unsigned char"):
        T.zeros(3).index_put((T.tensor([1, 0, 1], dtype=T.uint8),), T.tensor(7.0))
    # accumulating, or more than one value, is an index_put with its dtype check
    for values, accumulate in ((T.tensor(7), True), (T.tensor([7, 8]), False)):
        with pytest.raises(RuntimeError, match="Index put requires the source and destination "
                                               "dtypes match"):
            T.zeros(3).index_put((mask,), values, accumulate=accumulate)
    x = T.zeros(3, requires_grad=True)
    value = T.tensor(2.0, dtype=T.float64, requires_grad=True)
    y = x.index_put((mask,), value)
    assert type(y.grad_fn).__name__ == "IndexPutBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0]
    assert value.grad.item() == 2.0 and value.grad.dtype == T.float64


def test_index_put_checks_the_indices_then_the_values_shape_and_dtype_then_the_range(T):
    at0, at5 = (T.tensor([0]),), (T.tensor([5]),)
    with pytest.raises(IndexError, match="index is out of bounds for dimension with size 0"):
        T.zeros(0).index_put(at0, T.tensor(True))
    with pytest.raises(IndexError, match="index is out of bounds for dimension with size 0"):
        T.zeros(0).index_put(at0, T.ones(2))
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[2\] cannot "
                                           r"be broadcast to indexing result of shape \[1\]"):
        T.zeros(3).index_put(at5, T.ones(2, dtype=T.float64))
    with pytest.raises(RuntimeError, match="Index put requires the source and destination "
                                           "dtypes match, got Float for the destination and "
                                           "Bool for the source"):
        T.zeros(3).index_put(at5, T.tensor([True]))
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        T.zeros(3).index_put(at5, T.ones(1))
