"""In-place ops and views: values, the version counter, graph rebasing, CopySlices and the errors.

Every in-place op bumps ``_version`` once on the tensor and on every alias sharing its version
counter (views, base, ``detach()`` results, but not ``.data``). On a non-leaf the op replaces
``grad_fn`` with a node whose next edge is the old one; on a view it rebases the base through
``CopySlices`` (reference §1.12).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

LEAF_IN_PLACE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_IN_PLACE = "a view of a leaf Variable that requires grad is being used in an in-place"
DIRTY_LEAF = "a leaf Variable that requires grad has been used in an in-place operation"
INFERENCE_IN_PLACE = "Inplace update to inference tensor outside InferenceMode is not allowed"


def arr(t):
    return t.detach().numpy()


def assert_close(t, expected):
    np.testing.assert_allclose(arr(t), np.asarray(expected), rtol=1e-6, atol=1e-12)


def sigmoid(a):
    return 1 / (1 + np.exp(-a))


BASE = np.array([0.3, -0.7, 1.2])
WEIGHTS = np.array([1.0, 10.0, 100.0])

# name, args, forward on NumPy, derivative on NumPy, grad_fn name after the op on a non-leaf
IN_PLACE_OPS = [
    ("add_", (2.0,), lambda a: a + 2, lambda a: np.ones_like(a), "AddBackward0"),
    ("sub_", (0.5,), lambda a: a - 0.5, lambda a: np.ones_like(a), "SubBackward0"),
    ("mul_", (3.0,), lambda a: a * 3, lambda a: np.full_like(a, 3.0), "MulBackward0"),
    ("div_", (4.0,), lambda a: a / 4, lambda a: np.full_like(a, 0.25), "DivBackward0"),
    ("pow_", (2.0,), lambda a: a**2, lambda a: 2 * a, "PowBackward0"),
    ("neg_", (), lambda a: -a, lambda a: -np.ones_like(a), "NegBackward0"),
    ("exp_", (), np.exp, np.exp, "ExpBackward0"),
    ("zero_", (), np.zeros_like, np.zeros_like, "ZeroBackward0"),
    ("fill_", (7.0,), lambda a: np.full_like(a, 7.0), np.zeros_like, "FillBackward2"),
    (
        "clamp_",
        (-0.5, 0.5),
        lambda a: np.clip(a, -0.5, 0.5),
        lambda a: ((a > -0.5) & (a < 0.5)).astype(a.dtype),
        "ClampBackward1",
    ),
    ("relu_", (), lambda a: np.maximum(a, 0), lambda a: (a > 0).astype(a.dtype), "ReluBackward0"),
    (
        "sigmoid_",
        (),
        sigmoid,
        lambda a: sigmoid(a) * (1 - sigmoid(a)),
        "SigmoidBackward0",
    ),
    ("tanh_", (), np.tanh, lambda a: 1 - np.tanh(a) ** 2, "TanhBackward0"),
]
OP_IDS = [op[0] for op in IN_PLACE_OPS]


# -------------------- values, versions, identity


@pytest.mark.parametrize("name, args, forward, _d, _n", IN_PLACE_OPS, ids=OP_IDS)
def test_in_place_op_computes_the_value_returns_self_and_bumps_the_version_once(
    T, name, args, forward, _d, _n
):
    t = T.tensor(BASE.copy())
    assert t._version == 0

    result = getattr(t, name)(*args)

    assert result is t
    assert t._version == 1
    assert_close(t, forward(BASE))


def test_in_place_ops_with_a_tensor_operand(T):
    t = T.tensor([1.0, 2.0, 3.0])
    t.add_(T.tensor([10.0, 20.0, 30.0]))
    t.mul_(T.tensor([2.0, 0.5, 1.0]))
    t.sub_(T.tensor(1.0))
    t.div_(T.tensor([1.0, 2.0, 4.0]))

    assert t.tolist() == [21.0, 5.0, 8.0]
    assert t._version == 4


def test_copy_overwrites_the_values_and_bumps_the_version(T):
    t = T.tensor([1.0, 2.0, 3.0])
    source = T.tensor([7.0, 8.0, 9.0])

    assert t.copy_(source) is t
    assert t.tolist() == [7.0, 8.0, 9.0]
    assert t._version == 1
    assert source._version == 0


def test_clamp_in_place_with_only_a_minimum(T):
    t = T.tensor([-2.0, 0.0, 2.0])
    t.clamp_(min=-1.0)
    assert t.tolist() == [-1.0, 0.0, 2.0]


def test_cumprod_in_place_saves_the_values_before_the_write(T):
    a = T.tensor([[2.0, 0.0, 4.0], [1.0, 2.0, 3.0]], requires_grad=True)
    x = a.clone()
    x.cumprod_(1)
    assert x.tolist() == [[2.0, 0.0, 0.0], [1.0, 2.0, 6.0]]
    assert type(x.grad_fn).__name__ == "CumprodBackward0"
    assert x.grad_fn._saved_self.tolist() == [[2.0, 0.0, 4.0], [1.0, 2.0, 3.0]]
    (g,) = T.autograd.grad((x * x).sum(), [a])
    assert g.tolist() == [[4.0, 0.0, 0.0], [82.0, 40.0, 24.0]]
    i = T.tensor([1, 2, 3], dtype=T.int32)
    i.cumprod_(0)
    assert i.dtype == T.int32 and i.tolist() == [1, 2, 6]


def test_several_in_place_ops_count_one_version_each(T):
    t = T.tensor([1.0, 2.0])
    t.add_(1).mul_(2).neg_()

    assert t.tolist() == [-4.0, -6.0]
    assert t._version == 3


@pytest.mark.parametrize(
    "op, expected",
    [
        ("iadd", [3.0, 4.0]),
        ("isub", [-1.0, 0.0]),
        ("imul", [2.0, 4.0]),
        ("itruediv", [0.5, 1.0]),
    ],
)
def test_augmented_assignment_is_in_place(T, op, expected):
    t = T.tensor([1.0, 2.0])
    alias = t
    if op == "iadd":
        t += 2
    elif op == "isub":
        t -= 2
    elif op == "imul":
        t *= 2
    else:
        t /= 2

    assert t is alias
    assert t.tolist() == expected
    assert t._version == 1


def test_augmented_assignment_with_a_tensor_operand(T):
    t = T.tensor([1.0, 2.0])
    alias = t
    t += T.tensor([10.0, 20.0])
    t *= T.tensor([2.0, 3.0])

    assert t is alias
    assert t.tolist() == [22.0, 66.0]
    assert t._version == 2


# -------------------- the version counter, views, detach and .data


def test_views_and_base_share_one_version_counter(T):
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]])
    row, flat, transposed = x[0], x.view(4), x.t()

    x.add_(1)
    assert [v._version for v in (x, row, flat, transposed)] == [1, 1, 1, 1]

    row.mul_(2)
    assert [v._version for v in (x, row, flat, transposed)] == [2, 2, 2, 2]
    assert x.tolist() == [[4.0, 6.0], [4.0, 5.0]]
    assert transposed.tolist() == [[4.0, 4.0], [6.0, 5.0]]


def test_detach_shares_the_version_counter_but_data_does_not(T):
    x = T.tensor([1.0, 2.0])
    detached = x.detach()
    data = x.data

    x.add_(1)
    assert (x._version, detached._version, data._version) == (1, 1, 0)

    detached.mul_(2)
    assert (x._version, detached._version) == (2, 2)
    assert x.tolist() == [4.0, 6.0]

    data.add_(1)
    assert (x._version, data._version) == (2, 1)
    assert x.tolist() == [5.0, 7.0]


def test_base_and_is_view(T):
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]])
    row = x[0]

    for view in (row, x.view(4), x.t(), x[:, 1], row[1:]):
        assert view._is_view()
        assert view._base is x
    for alias in (x, x.detach(), x.data, x.clone()):
        assert not alias._is_view()
        assert alias._base is None


def test_view_writes_show_through_the_base_and_back(T):
    x = T.tensor([1.0, 2.0, 3.0, 4.0])
    x.view(2, 2)[1].fill_(0.0)
    x[0] = 9.0

    assert x.tolist() == [9.0, 2.0, 0.0, 0.0]
    assert x._version == 2


# -------------------- leaves that require grad


@pytest.mark.parametrize(
    "modify",
    [
        lambda x: x.add_(1),
        lambda x: x.zero_(),
        lambda x: x.__iadd__(1),
        lambda x: x.copy_(x.detach() * 2),
    ],
    ids=["add_", "zero_", "+=", "copy_"],
)
def test_in_place_on_a_leaf_that_requires_grad_fails(T, modify):  # E3
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=LEAF_IN_PLACE):
        modify(x)
    assert x.tolist() == [1.0, 2.0]
    assert x._version == 0


@pytest.mark.parametrize(
    "modify",
    [
        lambda x: x[0].add_(1),
        lambda x: x.__setitem__(0, 1.0),
        lambda x: x[0:1].mul_(2),
        lambda x: x.view(2, 1).add_(1),
        lambda x: x.__setitem__(slice(0, 1), 5.0),
    ],
    ids=["x[0].add_", "x[0]=", "x[0:1].mul_", "view.add_", "x[0:1]="],
)
def test_in_place_on_a_view_of_a_leaf_that_requires_grad_fails(T, modify):  # E3b
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=VIEW_OF_LEAF_IN_PLACE):
        modify(x)
    assert x.tolist() == [1.0, 2.0]
    assert x._version == 0


def test_in_place_on_a_leaf_is_allowed_under_no_grad(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with T.no_grad():
        x.add_(1)
        x[0] = 5.0
        x.mul_(2)

    assert x.tolist() == [10.0, 6.0]
    assert x._version == 3
    assert x.is_leaf and x.requires_grad and x.grad_fn is None

    (x * x).sum().backward()
    assert x.grad.tolist() == [20.0, 12.0]


def test_in_place_with_a_requires_grad_operand_puts_a_plain_tensor_in_the_graph(T):
    v = T.tensor([5.0, 6.0], requires_grad=True)
    c = T.zeros(2)
    c.add_(v * 2)

    assert c.requires_grad and not c.is_leaf
    assert type(c.grad_fn).__name__ == "AddBackward0"
    c.sum().backward()
    assert v.grad.tolist() == [2.0, 2.0]


def test_in_place_with_a_requires_grad_operand_given_by_keyword_is_recorded(T):
    x = T.tensor([1.0, 2.0])
    w = T.tensor(1.5, requires_grad=True)
    x.clamp_(min=w)

    assert x.requires_grad and type(x.grad_fn).__name__ == "ClampBackward0"
    assert x.tolist() == [1.5, 2.0]
    x.sum().backward()
    assert w.grad.item() == 1.0


# -------------------- non-leaves: grad_fn is rebased


def test_in_place_on_a_non_leaf_replaces_grad_fn_and_keeps_the_old_node_as_next(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    old = y.grad_fn
    result = y.exp_()

    assert result is y
    assert type(y.grad_fn).__name__ == "ExpBackward0"
    assert y.grad_fn.next_functions[0][0] is old
    assert not y.is_leaf

    y.sum().backward()
    assert_close(x.grad, 2 * np.exp([2.0, 4.0]))


@pytest.mark.parametrize("name, args, forward, derivative, node", IN_PLACE_OPS, ids=OP_IDS)
def test_in_place_op_on_a_non_leaf_gives_the_right_gradient(
    T, name, args, forward, derivative, node
):
    x = T.tensor(BASE.copy(), requires_grad=True)
    y = x * 1
    getattr(y, name)(*args)

    assert type(y.grad_fn).__name__ == node
    assert_close(y, forward(BASE))
    (y * T.tensor(WEIGHTS)).sum().backward()
    assert_close(x.grad, WEIGHTS * derivative(BASE))


def test_copy_into_a_non_leaf_sends_the_gradient_to_the_source(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    s = T.tensor([3.0, 4.0], requires_grad=True)
    y = x * 1
    y.copy_(s * 5)

    assert type(y.grad_fn).__name__ == "CopyBackwards"
    (y * T.tensor([1.0, 10.0])).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]
    assert s.grad.tolist() == [5.0, 50.0]


@pytest.mark.parametrize("target, value, node, edge", [
    ((1, 1), (1, 1), "CopyBackwards", "AccumulateGrad"),  # same shape: copy_, no view
    ((3,), (1, 1), "CopyBackwards", "ExpandBackward0"),  # leading 1s dropped, then expanded
    ((3,), (), "FillBackward3", "AccumulateGrad"),  # a 0-d value fills
    ((), (1,), "CopyBackwards", "ViewBackward0"),
    ((2, 3), (1,), "CopyBackwards", "ExpandBackward0"),
])
def test_setitem_of_the_whole_tensor_copies_a_same_shaped_value_and_fills_a_0d_one(
        T, target, value, node, edge):
    y = T.zeros(target) * 1
    v = T.tensor(np.full(value, 2.0), requires_grad=True)
    y[...] = v
    assert type(y.grad_fn).__name__ == node
    assert y.grad_fn.next_functions[1][0].name().endswith(edge)
    y.sum().backward()
    assert v.grad.shape == v.shape and v.grad.sum().item() == max(1, int(np.prod(target)))


def test_setitem_refuses_a_value_that_partially_overlaps_the_target(T):
    x = T.tensor([0.5])
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        x.unsqueeze(0)[...] = x
    y = T.tensor([0.5, 1.5])
    y.unsqueeze(0)[...] = y  # the same elements in the same layout: fine
    assert y.tolist() == [0.5, 1.5]


@pytest.mark.parametrize("write, after", [
    (lambda e: e.fill_(3.0), [3.0, 3.0]),  # filling is idempotent: torch skips the check
    (lambda e: e.zero_(), [0.0, 0.0]),
    (lambda e: e.masked_fill_(e.new_tensor([[False, True], [False, False]]).bool(), 5.0),
     [1.0, 5.0]),
    (lambda e: e.index_put_((e.new_tensor([0]).long(),), e.new_tensor(9.0)), [9.0, 9.0]),
    (lambda e: e.__setitem__(e.new_tensor([[False, True], [False, False]]).bool(), 5.0),
     [1.0, 5.0]),
    (lambda e: e[0, 0].fill_(7.0), [7.0, 2.0]),
], ids=["fill_", "zero_", "masked_fill_", "index_put_", "mask_setitem", "element"])
def test_writes_torch_allows_into_an_expanded_tensor_land_on_its_base(T, write, after):
    x = T.tensor([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch deprecates the indexing writes
        write(x.expand(2, 2))
    assert x.tolist() == after


@pytest.mark.parametrize("write", [
    lambda e: e.add_(1), lambda e: e.copy_(e.new_ones(2, 2)), lambda e: e.exp_(),
    lambda e: e.fill_(e.new_tensor(2.0)),
], ids=["add_", "copy_", "exp_", "fill_tensor"])
def test_other_writes_into_a_tensor_whose_elements_repeat_raise(T, write):
    x = T.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        write(x.expand(2, 2))


def test_in_place_on_an_expand_whose_elements_do_not_repeat_is_fine(T):
    x = T.tensor([1.0, 2.0])
    x.expand(1, 2).add_(1)
    T.tensor(1.0).expand(1).mul_(3)
    w = T.tensor([1.0, 2.0], requires_grad=True)
    y = w * 1
    y.expand(1, 2).mul_(3)
    assert x.tolist() == [2.0, 3.0] and type(y.grad_fn).__name__ == "CopySlices"
    y.sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]


def test_masked_fill__of_an_expanded_tensor_warns_as_torch_does(T):
    with pytest.warns(UserWarning, match="Use of masked_fill_ on expanded tensors is deprecated"):
        T.zeros(2).expand(2, 2).masked_fill_(T.tensor([True, False]), 1.0)


def test_augmented_assignment_on_a_non_leaf_is_tracked(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y += 1
    assert type(y.grad_fn).__name__ == "AddBackward0"
    y *= x
    assert type(y.grad_fn).__name__ == "MulBackward0"
    y -= 1
    y /= 2

    y.sum().backward()
    # y = ((x + 1) * x - 1) / 2, so dy/dx = (2x + 1) / 2
    assert x.grad.tolist() == [1.5, 2.5]


# -------------------- in-place on a view of a non-leaf: CopySlices


def test_in_place_on_a_slice_of_a_clone_doubles_only_the_slice_grads(T):
    a = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    b = a.clone()
    b[1:3].mul_(2)

    assert b.tolist() == [1.0, 4.0, 6.0, 4.0]
    assert b.grad_fn.name() == T.__name__ + "::autograd::CopySlices"
    assert type(b.grad_fn).__name__ == "CopySlices"
    assert type(b.grad_fn.next_functions[0][0]).__name__ == "CloneBackward0"

    b.sum().backward()
    assert a.grad.tolist() == [1.0, 2.0, 2.0, 1.0]


def weighted_backward(T, x, y):
    (y * T.tensor([1.0, 10.0, 100.0, 1000.0])).sum().backward()
    return x.grad.tolist()


def non_leaf(T):
    x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    return x, x * 1


def test_in_place_on_a_selected_element_rebases_the_base_through_copy_slices(T):
    x, y = non_leaf(T)
    mul_node = y.grad_fn
    y[0].mul_(10)

    assert y.tolist() == [10.0, 2.0, 3.0, 4.0]
    assert y._version == 1
    assert type(y.grad_fn).__name__ == "CopySlices"
    assert y.grad_fn.next_functions[0][0] is mul_node
    assert weighted_backward(T, x, y) == [10.0, 10.0, 100.0, 1000.0]


def test_slice_assignment_of_a_number_cuts_the_gradient_of_the_slice(T):
    x, y = non_leaf(T)
    y[1:3] = 0

    assert y.tolist() == [1.0, 0.0, 0.0, 4.0]
    assert type(y.grad_fn).__name__ == "CopySlices"
    assert weighted_backward(T, x, y) == [1.0, 0.0, 0.0, 1000.0]


def test_int_index_assignment_cuts_the_gradient_of_that_element(T):
    x, y = non_leaf(T)
    y[0] = 7.0

    assert y.tolist() == [7.0, 2.0, 3.0, 4.0]
    assert type(y.grad_fn).__name__ == "CopySlices"
    assert weighted_backward(T, x, y) == [0.0, 10.0, 100.0, 1000.0]


def test_slice_assignment_of_a_tensor_sends_the_slice_gradient_to_the_value(T):
    x, y = non_leaf(T)
    v = T.tensor([5.0, 6.0], requires_grad=True)
    y[1:3] = v

    assert y.tolist() == [1.0, 5.0, 6.0, 4.0]
    assert type(y.grad_fn).__name__ == "CopySlices"
    assert [type(n).__name__ for n, _ in y.grad_fn.next_functions] == [
        "MulBackward0",
        "AccumulateGrad",
    ]
    assert weighted_backward(T, x, y) == [1.0, 0.0, 0.0, 1000.0]
    assert v.grad.tolist() == [10.0, 100.0]


def test_mask_assignment_cuts_the_gradient_where_the_mask_is_true(T):
    x, y = non_leaf(T)
    y[T.tensor([True, False, True, False])] = 9.0

    assert y.tolist() == [9.0, 2.0, 9.0, 4.0]
    assert type(y.grad_fn).__name__ == "IndexPutBackward0"
    assert weighted_backward(T, x, y) == [0.0, 10.0, 0.0, 1000.0]


def test_mask_assignment_of_a_tensor_sends_gradients_to_the_values(T):
    x, y = non_leaf(T)
    v = T.tensor([5.0, 6.0], requires_grad=True)
    y[T.tensor([False, True, False, True])] = v * 3

    assert y.tolist() == [1.0, 15.0, 3.0, 18.0]
    assert weighted_backward(T, x, y) == [1.0, 0.0, 100.0, 0.0]
    assert v.grad.tolist() == [30.0, 3000.0]


def test_integer_array_augmented_assignment_keeps_the_gradient(T):
    x, y = non_leaf(T)
    y[T.tensor([0, 3])] += 1

    assert y.tolist() == [2.0, 2.0, 3.0, 5.0]
    assert type(y.grad_fn).__name__ == "IndexPutBackward0"
    assert weighted_backward(T, x, y) == [1.0, 10.0, 100.0, 1000.0]


def test_integer_array_assignment_writes_and_cuts_the_gradient(T):
    x, y = non_leaf(T)
    y[T.tensor([3, 1])] = T.tensor([-1.0, -2.0])

    assert y.tolist() == [1.0, -2.0, 3.0, -1.0]
    assert weighted_backward(T, x, y) == [1.0, 0.0, 100.0, 0.0]


def test_in_place_through_view_and_transpose_of_a_non_leaf(T):
    x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x.view(2, 2) * 1
    y.t()[0].mul_(3)

    assert y.tolist() == [[3.0, 2.0], [9.0, 4.0]]
    assert type(y.grad_fn).__name__ == "CopySlices"
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 1.0, 3.0, 1.0]


def test_double_backward_through_copy_slices(T):
    a = np.array([[1.5, 1.0, -1.5]])
    x = T.tensor(a, requires_grad=True)
    y = x * 1
    y.transpose(0, 1).tanh_()
    (g,) = T.autograd.grad((y**2).sum(), [x], create_graph=True)
    (gg,) = T.autograd.grad(g.sum(), [x])

    t = np.tanh(a)
    assert_close(g, 2 * t * (1 - t**2))
    assert_close(gg, 2 * (1 - t**2) * (1 - 3 * t**2))


def test_copy_slices_with_create_graph_writes_into_a_copy_of_the_gradient(T):
    # torch: result = copy of grad (CopyBackwards); the op's backward runs on a clone of the
    # view's region, written back into it (result's node is CopySlices); the written value's
    # gradient is that clone.
    x = T.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    v = T.tensor([7.0, 8.0], requires_grad=True)
    y = x * 1
    y[1] = v
    g = T.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    gx, gv = T.autograd.grad(y, [x, v], g, create_graph=True)
    assert gv.grad_fn.name() == "CloneBackward0"
    copy_slices = gx.grad_fn.next_functions[0][0]
    assert copy_slices.name().endswith("CopySlices")
    assert copy_slices.next_functions[0][0].name().endswith("CopyBackwards")
    assert gx.tolist() == [[1.0, 2.0], [0.0, 0.0], [5.0, 6.0]]
    assert gv.tolist() == [3.0, 4.0]
    (gg,) = T.autograd.grad((gx * gx).sum() + gv.sum(), g)
    assert gg.tolist() == [[2.0, 4.0], [1.0, 1.0], [10.0, 12.0]]


def test_gradient_through_a_regenerated_view_with_create_graph_is_an_as_strided_read(T):
    # torch's as_strided_backward: grad copied into zeros (CopySlices) and read back with the
    # input's geometry (AsStridedBackward0)
    v = T.tensor([1.75, 1.0], requires_grad=True)
    y = T.tensor([-0.5, -1.25], requires_grad=True) * 1
    view = y.view((2,))
    y[...] = v  # the view's grad_fn is now read from y's new history
    g = T.tensor([2.0, 3.0], requires_grad=True)
    (gv,) = T.autograd.grad(view * 1, [v], g, create_graph=True)
    assert gv.grad_fn.name() == "AsStridedBackward0"
    assert gv.grad_fn.next_functions[0][0].name().endswith("CopySlices")
    assert gv.tolist() == [2.0, 3.0]
    (gg,) = T.autograd.grad((gv * gv).sum(), [g])
    assert gg.tolist() == [4.0, 6.0]


def test_copy_slices_with_create_graph_of_an_empty_view(T):
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 3
    y[1:1].mul_(2)
    g = T.ones(2, 2, requires_grad=True)
    (gx,) = T.autograd.grad(y, [x], g, create_graph=True)
    assert gx.grad_fn.next_functions[0][0].name().endswith("CopySlices")
    (gg,) = T.autograd.grad(gx.sum(), [g])
    assert gg.tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_gradient_through_a_regenerated_empty_view_is_zeros_without_a_graph(T):
    # torch's as_strided_backward returns zeros for a view with a size-0 dim, even when the
    # gradient it receives requires grad (create_graph)
    x = T.ones((0, 3), requires_grad=True)
    w = T.ones((0, 2), requires_grad=True)
    b = x * 1
    view = b[:, 1:]
    view.mul_(2)
    assert view.grad_fn.name() == "AsStridedBackward0"
    (gx,) = T.autograd.grad((view * w).sum(), [x], create_graph=True)
    assert gx.shape == (0, 3)
    assert not gx.requires_grad


def test_copy_slices_refuses_a_second_backward_without_retain_graph(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y[:1].mul_(2)
    s = y.sum()
    s.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        s.backward()
    assert x.grad.tolist() == [2.0, 1.0]


INDEX_PUT_DTYPES = "Index put requires the source and destination dtypes match, got Float for the "


@pytest.mark.parametrize("index", [[0, 2], (0, [0, 2])], ids=["list", "int_and_list"])
def test_index_write_of_another_dtype_fails(T, index):
    y = T.ones(2, 3)
    key = tuple(T.tensor(i) if isinstance(i, list) else i for i in index) \
        if isinstance(index, tuple) else T.tensor(index)
    with pytest.raises(RuntimeError, match=INDEX_PUT_DTYPES + "destination and Double"):
        y[key] = T.tensor([2.0], dtype=T.float64)
    with pytest.raises(RuntimeError, match=INDEX_PUT_DTYPES + "destination and Long"):
        y.index_put_((T.tensor([0]),), T.tensor([2]))
    assert y.tolist() == [[1.0] * 3] * 2


def test_mask_write_of_one_value_of_another_dtype_casts_it(T):
    y = T.ones(3)
    y[T.tensor([True, False, True])] = T.tensor(2.0, dtype=T.float64)
    assert y.tolist() == [2.0, 1.0, 2.0]
    with pytest.raises(RuntimeError, match=INDEX_PUT_DTYPES):
        y[T.tensor([True, False, True])] = T.tensor([2.0, 3.0], dtype=T.float64)


@pytest.mark.parametrize("index,written", [
    (0, [[1.0] * 3, [0.0] * 3]), (slice(None), [[1.0] * 3] * 2), (Ellipsis, [[1.0] * 3] * 2),
    ("tensor", [[0.0] * 3, [1.0] * 3]),
])
def test_index_write_drops_the_values_leading_size_one_dims(T, index, written):
    x = T.zeros(2, 3, requires_grad=True) * 1
    v = T.ones(1, 1, 1, 3, requires_grad=True)
    x[T.tensor([1]) if index == "tensor" else index] = v
    assert x.tolist() == written
    if index in (0, "tensor"):
        assert [n[0].name() for n in x.grad_fn.next_functions][-1] == "ViewBackward0"
    x.sum().backward()
    assert v.grad.tolist() == [[[[len(written) - written.count([0.0] * 3)] * 3]]]


def test_index_write_of_a_value_that_does_not_expand_fails_as_expand(T):
    x = T.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"FloatTensor\{\[2, 1, 3\]\}, size=\[3\]\): the number "
                       "of sizes provided"):
        x[0] = T.ones(2, 1, 3)
    with pytest.raises(RuntimeError, match="The expanded size of the tensor"):
        x[:] = T.ones(3, 3)


def test_slice_write_expands_the_value_in_the_graph(T):
    x = T.zeros(2, 3, requires_grad=True) * 1
    x[:] = T.ones(3, requires_grad=True)
    assert [n[0].name() for n in x.grad_fn.next_functions][-1] == "ExpandBackward0"


@pytest.mark.parametrize("write", [
    lambda T: T.zeros(0, 0).index_put((T.tensor([0, 0]),), T.zeros(1, 0)),
    lambda T: T.zeros(0, 0).index_put_((T.tensor([0, 0]),), T.zeros(1, 0)),
    lambda T: T.zeros(3, 0).index_put((T.tensor([2]), T.tensor([0])), T.zeros(1)),
    lambda T: T.zeros(0, 0).__setitem__(T.tensor([0]), 1.0),
    lambda T: T.zeros(0, 3)[T.tensor([0])],
], ids=["index_put", "index_put_", "second_dim", "setitem", "read"])
def test_an_index_into_an_empty_dim_is_out_of_bounds(T, write):
    with pytest.raises(IndexError, match="index is out of bounds for dimension with size 0"):
        write(T)


def test_an_empty_index_into_an_empty_dim_is_fine(T):
    assert tuple(T.zeros(0).index_put((T.tensor([], dtype=T.int64),), T.zeros(0)).shape) == (0,)
    assert tuple(T.zeros(3, 0).index_put((T.tensor([5]),), T.zeros(1, 0)).shape) == (3, 0)


OVERLAP = "some elements of the input tensor and the written-to tensor refer to a single memory"


@pytest.mark.parametrize("write", [
    lambda T, a: a.reshape(2, 2).add_(a.reshape(2, 2).t()),
    lambda T, a: a.__setitem__(slice(0, 3), a[1:4]),
    lambda T, a: a[0:3].copy_(a[1:4]),
    lambda T, a: a.mul_(a[1]),
    lambda T, a: a[0:3].clamp_(min=a[1:4]),
    lambda T, a: a[0:3].__iadd__(a[1:4]),
    lambda T, a: a.index_put_((T.tensor([0, 1]),), a[1:3]),
], ids=["transpose", "setitem", "copy_", "0d_element", "keyword", "iadd", "index_put_"])
def test_in_place_with_an_input_that_partly_overlaps_the_tensor_fails(T, write):
    a = T.arange(4.0)
    with pytest.raises(RuntimeError, match=OVERLAP):
        write(T, a)
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0] and a._version == 0


@pytest.mark.parametrize("write,expected", [
    (lambda a: a.add_(a), [0.0, 2.0, 4.0, 6.0]),
    (lambda a: a.add_(a.detach()), [0.0, 2.0, 4.0, 6.0]),
    (lambda a: a.view(2, 2).add_(a.view(2, 2)), [0.0, 2.0, 4.0, 6.0]),
    (lambda a: a.__setitem__(slice(0, 3), a[0:3]), [0.0, 1.0, 2.0, 3.0]),
    (lambda a: a[0:2].copy_(a[2:4]), [2.0, 3.0, 2.0, 3.0]),
    (lambda a: a.fill_(a[1]), [1.0, 1.0, 1.0, 1.0]),
    (lambda a: a.add_(a[0:1].expand(4)), [0.0, 1.0, 2.0, 3.0]),
    (lambda a: a[::2].add_(a[1::2]), [1.0, 1.0, 5.0, 3.0]),
], ids=["self", "detach", "same_view", "same_slice", "disjoint", "fill_element", "expanded",
        "interleaved"])
def test_in_place_with_an_input_of_the_same_or_no_elements_is_fine(T, write, expected):
    a = T.arange(4.0)
    write(a)
    assert a.tolist() == expected


def test_indexing_writes_on_a_plain_tensor(T):
    t = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    t[0] = 0.0
    t[1, 1:] = T.tensor([50.0, 60.0])
    t[t > 40] += 1
    t[T.tensor([1]), T.tensor([0])] = -4.0

    assert t.tolist() == [[0.0, 0.0, 0.0], [-4.0, 51.0, 61.0]]
    assert t._version == 4


# -------------------- forbidden view + in-place cases


def test_inference_tensor_refuses_in_place_outside_inference_mode(T):  # E12c
    with T.inference_mode():
        t = T.ones(2)
    with pytest.raises(RuntimeError, match=INFERENCE_IN_PLACE):
        t.add_(1)


@pytest.mark.parametrize(("modify", "written"), [
    (lambda t, T: t.div_(2.0), [0.5, 0.5]),
    (lambda t, T: t.add_(T.ones(2, requires_grad=True)), [2.0, 2.0]),
    (lambda t, T: t.__setitem__(0, 0.5), [0.5, 1.0]),
    (lambda t, T: t[1:].fill_(0.5), [1.0, 0.5]),
])
def test_in_place_on_an_inference_tensor_outside_inference_mode_writes_then_raises(
        T, modify, written):
    # torch refuses when it bumps the version, after the op has written: the write stays.
    with T.inference_mode():
        t = T.ones(2) * 1
    with pytest.raises(RuntimeError, match=INFERENCE_IN_PLACE):
        modify(t, T)
    assert t.tolist() == written
    assert not t.requires_grad and t.grad_fn is None


def test_an_op_that_fails_its_own_checks_leaves_an_inference_tensor_unchanged(T):
    with T.inference_mode():
        t = T.ones(3) * 1
    with pytest.raises(RuntimeError, match="size of tensor a"):
        t.add_(T.ones(2))
    assert t.tolist() == [1.0, 1.0, 1.0]


def test_mark_dirty_on_an_inference_tensor_outside_inference_mode_raises(T):
    class Double(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.data.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with T.inference_mode():
        t = T.ones(2) * 1
    with pytest.raises(RuntimeError, match=INFERENCE_IN_PLACE):
        Double.apply(t)
    assert t.tolist() == [2.0, 2.0]


def test_increment_version_leaves_an_inference_tensor_alone(T):
    with T.inference_mode():
        t = T.ones(2) * 1
    T.autograd.graph.increment_version(t)
    assert t.is_inference()


def test_in_place_on_an_inference_tensor_inside_inference_mode_is_fine(T):
    with T.inference_mode():
        t = T.ones(2)
        t.mul_(3)
    assert t.tolist() == [3.0, 3.0]


def test_view_made_under_no_grad_cannot_be_modified_with_grad_on(T):  # E23
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with T.no_grad():
        view = y[0:1]
    with pytest.raises(
        RuntimeError, match="A view was created in no_grad mode and is being modified inplace"
    ):
        view.mul_(2)


def test_view_made_and_modified_under_no_grad_is_untracked(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with T.no_grad():
        y[0:1].mul_(5)

    assert y.tolist() == [10.0, 4.0]
    assert type(y.grad_fn).__name__ == "MulBackward0"


def test_outputs_of_unbind_refuse_in_place(T):  # E24
    x = T.tensor([1.0, 2.0], requires_grad=True)
    first, _ = (x * 2).unbind()
    with pytest.raises(RuntimeError, match="Output 0 of Unbind is a view and is being modified"):
        first.mul_(2)


def test_detach_in_place_on_a_view_fails(T):  # E22
    y = T.tensor([1.0, 2.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=r"Can't detach views in-place\. Use detach\(\) instead"):
        y[0].detach_()


def test_detach_in_place_turns_a_non_leaf_into_a_leaf(T):
    y = T.tensor([1.0, 2.0], requires_grad=True) * 2
    assert y.detach_() is y
    assert y.is_leaf and not y.requires_grad and y.grad_fn is None


# -------------------- custom Functions: mark_dirty and returned inputs


def doubling_function(T):
    class Double(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a.mul_(2)
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    return Double


def test_mark_dirty_returns_the_input_itself_rebased_on_the_function(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x.clone()
    clone_node = y.grad_fn

    out = doubling_function(T).apply(y)

    assert out is y
    assert y.tolist() == [2.0, 4.0]
    assert y._version == 2  # once for mul_, once for mark_dirty
    assert type(y.grad_fn).__name__ == "DoubleBackward"
    assert y.grad_fn.next_functions[0][0] is clone_node

    out.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_mark_dirty_on_a_leaf_that_requires_grad_fails(T):  # E15c
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=DIRTY_LEAF):
        doubling_function(T).apply(x)


def test_mark_dirty_on_a_tensor_that_is_not_an_input_only_warns(T):  # E15a
    class DirtyNonInput(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            fresh = a.clone()
            ctx.mark_dirty(fresh)
            return fresh

        @staticmethod
        def backward(ctx, g):
            return g

    x = T.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match=r"ctx\.mark_dirty\(\) received a tensor that was not an"):
        out = DirtyNonInput.apply(x * 1)
    out.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_input_marked_dirty_must_be_returned(T):  # E15b
    class DirtyNotReturned(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a.add_(1)
            ctx.mark_dirty(a)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    y = T.tensor([1.0, 2.0], requires_grad=True) * 1
    with pytest.raises(
        RuntimeError, match="Some elements marked as dirty during the forward method were not"
    ):
        DirtyNotReturned.apply(y)


def test_mark_dirty_on_an_untouched_input_still_bumps_the_version(T):  # E15d
    class DirtyUntouched(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, g):
            return 3 * g

    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x.clone()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = DirtyUntouched.apply(y)

    assert out is y
    assert y._version == 1
    assert type(y.grad_fn).__name__ == "DirtyUntouchedBackward"
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_input_modified_without_mark_dirty_and_returned_comes_back_as_a_view(T):
    class Sneaky(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a.mul_(2)
            return a

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x.clone()
    out = Sneaky.apply(y)

    assert out is not y
    assert out._is_view() and out._base is y
    assert out.tolist() == [2.0, 4.0]
    assert y._version == 1
    assert type(out.grad_fn).__name__ == "SneakyBackward"
    assert type(y.grad_fn).__name__ == "CloneBackward0"
    with pytest.raises(RuntimeError, match="Output 0 of Sneaky is a view and is being modified"):
        out.add_(1)


def test_in_place_on_an_input_a_function_returned_as_is_fails(T):  # E27
    class ReturnView(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a

        @staticmethod
        def backward(ctx, g):
            return g

    y = T.tensor([1.0, 2.0], requires_grad=True) * 1
    out = ReturnView.apply(y)
    assert out._is_view()
    with pytest.raises(RuntimeError) as info:
        out.add_(1)
    message = str(info.value)
    assert "Output 0 of ReturnView is a view and is being modified inplace" in message
    assert "This view was created inside a custom Function" in message
    assert "You can fix this by cloning the output of the custom Function." in message

    (out.clone().add_(1) * 2).sum().backward()


def test_copy_into_an_integer_split_piece_ignores_a_source_that_requires_grad(T):
    x = T.tensor([[1, 2], [3, 4], [5, 6]])
    a, b = x.split([1, 2])
    v = T.tensor([1.5, 2.5], requires_grad=True)
    b[0] = v  # copy_: an integer result is not differentiable
    b.copy_(T.tensor([[7.5, 8.5], [9.5, 1.5]], requires_grad=True))
    assert x.tolist() == [[1, 2], [7, 8], [9, 1]]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being "
                                           "modified inplace"):
        b.fill_(v[0])  # fill_ with a tensor checks whatever the dtype, as torch does
    f = T.ones(3, 2)
    c, d = f.split([1, 2])
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        d.copy_(T.ones(2, 2, requires_grad=True))


# --- writing into an expanded tensor --------------------------------------------------------------


def test_in_place_write_into_a_broadcast_expand_is_refused(T):
    x = T.zeros(1, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x.expand(2, 3).add_(1)
    assert x.tolist() == [[0.0, 0.0, 0.0]] and x._version == 0


def test_an_overlap_torch_cannot_see_reads_the_whole_operand_before_the_write():
    """torch's kernel reads such an operand while it writes, in blocks that depend on the CPU's
    vector width (docs/differences.md); ext reads it first."""
    import ext

    x = ext.full((2, 3), 2.0, dtype=ext.float64)
    x.mT.mul_(x.mT[0])  # the operand is x[:, 0], which the write changes
    assert x.tolist() == [[4.0, 4.0, 4.0], [4.0, 4.0, 4.0]]
