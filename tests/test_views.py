"""Views after in-place ops, and the remaining nodes of in-place and composite ops."""

from __future__ import annotations

import numpy as np
import pytest


def node_names(t) -> set:
    names, stack, seen = set(), [t.grad_fn], set()
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        names.add(type(n).__name__)
        stack.extend(f for f, _ in n.next_functions)
    return names


def test_a_view_reads_its_history_from_the_base_after_another_view_changed_it(T):
    x = T.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    z = x * 1
    row = z[0]
    tail = z[0, 1:]
    tail.mul_(2)
    fn = row.grad_fn
    assert type(fn).__name__ == "AsStridedBackward0"
    assert tuple(fn._saved_size) == (3,) and tuple(fn._saved_stride) == (1,)
    assert fn._saved_storage_offset == 0
    row.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1.0, 2.0, 2.0]])


def test_fill_with_a_tensor_value_sends_the_summed_gradient_to_the_value(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = T.tensor(5.0, requires_grad=True)
    y = x * 1
    y.fill_(v)
    assert type(y.grad_fn).__name__ == "FillBackward3"
    (y * T.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert v.grad.item() == 6.0
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_squeeze_without_a_dim(T):
    x = T.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    y = x.squeeze()
    assert type(y.grad_fn).__name__ == "SqueezeBackward0"
    assert tuple(y.grad_fn._saved_self_sym_sizes) == (1, 3)
    (y * T.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.tolist() == [[1.0, 2.0, 3.0]]


def test_label_smoothing_masks_the_ignored_targets_with_masked_fill(T):
    logits = T.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    loss = T.nn.functional.cross_entropy(logits, T.tensor([0, 2]), label_smoothing=0.1)
    names = node_names(loss)
    assert {"MaskedFillBackward0", "LogSoftmaxBackward0", "NllLossBackward0"} <= names


def test_scatter_of_a_tensor_and_of_a_number(T):
    x = T.zeros(3, 3, dtype=T.float64, requires_grad=True)
    src = T.ones(1, 3, dtype=T.float64, requires_grad=True)
    idx = T.tensor([[0, 1, 2]])
    weights = T.arange(9.0, dtype=T.float64).reshape(3, 3)
    y = x.scatter(0, idx, src)
    assert type(y.grad_fn).__name__ == "ScatterBackward0"
    assert len(y.grad_fn.next_functions) == 2
    (y * weights).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 1, 2], [3, 0, 5], [6, 7, 0]])
    np.testing.assert_allclose(src.grad.numpy(), [[0, 4, 8]])
    z = x.scatter(0, idx, 5.0)
    assert type(z.grad_fn).__name__ == "ScatterBackward1"
    assert len(z.grad_fn.next_functions) == 1
    assert T.autograd.gradcheck(lambda a, b: a.scatter(0, idx, b), (x, src))
    assert T.autograd.gradgradcheck(lambda a, b: a.scatter(0, idx, b), (x, src))


@pytest.mark.ext_only
def test_a_builtin_op_class_applies_like_its_method():
    import ext
    from ext.functions.builtin.activation import Softmax
    from ext.functions.builtin.pointwise.arithmetic import Mul

    x = ext.tensor([1.0, 2.0], requires_grad=True)
    y = Mul.apply(x, x)
    assert type(y.grad_fn).__name__ == "MulBackward0"
    s = Softmax.apply(x, 0)
    assert type(s.grad_fn).__name__ == "SoftmaxBackward0"
    np.testing.assert_allclose(s.detach().numpy(), np.exp([1.0, 2.0]) / np.exp([1.0, 2.0]).sum())


def test_mark_dirty_on_a_view_gives_its_base_copy_slices(T):
    class Double(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a.mul_(2)
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    b = x.clone()
    v = b[1:3]
    out = Double.apply(v)
    assert out is v
    assert type(b.grad_fn).__name__ == "CopySlices"
    assert [type(f).__name__ for f, _ in b.grad_fn.next_functions] == ["CloneBackward0"]
    assert type(v.grad_fn).__name__ == "AsStridedBackward0"
    (b * T.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert x.grad.tolist() == [1.0, 4.0, 6.0, 4.0]
    assert b.tolist() == [1.0, 4.0, 6.0, 4.0]


def test_relu_gradient_with_create_graph_is_a_threshold_backward_node(T):
    x = T.tensor([0.5, -1.5], dtype=T.float64, requires_grad=True)
    (g,) = T.autograd.grad(x.relu().sum(), x, create_graph=True)
    assert type(g.grad_fn).__name__ == "ThresholdBackwardBackward0"
    assert g.grad_fn._saved_threshold == 0
    assert [type(f).__name__ if f else None for f, _ in g.grad_fn.next_functions] == [
        None, "ReluBackward0"]
    assert g.requires_grad and g.tolist() == [1.0, 0.0]


def test_nan_gradients_do_not_leak_into_masked_places(T):
    x = T.tensor([-1.0, 2.0], requires_grad=True)
    (x.relu() * float("nan")).sum().backward()
    assert x.grad[0].item() == 0.0
    y = T.tensor([-1.0, 2.0], requires_grad=True)
    (y.max() * float("nan")).backward()
    assert y.grad[0].item() == 0.0


def test_squeeze_with_a_tuple_of_dims(T):
    x = T.ones(1, 3, 1, requires_grad=True)
    y = x.squeeze((0, 2))
    assert type(y.grad_fn).__name__ == "SqueezeBackward2"
    assert tuple(y.grad_fn._saved_dim) == (0, 2)
    assert tuple(y.shape) == (3,)
    y.sum().backward()
    assert tuple(x.grad.shape) == (1, 3, 1)
    assert tuple(T.ones(2, 1).squeeze((0,)).shape) == (2, 1)


# ------------------------------------------------------------------ a view follows its base
def test_unbind_of_a_1d_tensor_gives_views_that_write_into_it(T):
    z = T.tensor([1.0, 2.0, 3.0])
    for v in z:
        v.add_(10)
    np.testing.assert_array_equal(z.numpy(), [11.0, 12.0, 13.0])
    w = T.tensor([1.0, 2.0, 3.0])
    a, b, c = w.unbind(0)
    w.mul_(2)
    assert a.item() == 2.0 and a._base is w


def test_a_view_requires_grad_once_its_base_gains_it_through_another_view(T):
    base = T.zeros(4)
    v = base.view(2, 2)
    w = T.ones(2, requires_grad=True)
    base[2:] = w
    assert v.requires_grad and not v.is_leaf
    loss = (v * T.tensor([[1.0, 1.0], [5.0, 5.0]])).sum() + w.sum()
    loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [6.0, 6.0])


def test_a_view_follows_its_leaf_base_turning_requires_grad_on(T):
    x = T.tensor([1.0, 2.0])
    v = x[:1]
    x.requires_grad_()
    assert v.requires_grad and v.is_leaf and v.grad_fn is None
    (v * 3).sum().backward()
    assert v.grad is None and x.grad is None  # a view without history accumulates nowhere


def test_a_no_grad_view_of_a_tensor_that_requires_grad_requires_grad(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with T.no_grad():
        v = x[:2]
    y = (v * 2).sum()
    assert (v.requires_grad, v.is_leaf, y.requires_grad) == (True, True, True)
    y.backward()
    assert v.grad is None and x.grad is None


def test_a_no_grad_view_stops_requiring_grad_when_its_base_is_detached(T):
    y = T.tensor([1.0, 2.0], requires_grad=True) * 1
    with T.no_grad():
        v = y[:1]
    assert v.requires_grad
    y.detach_()
    assert not v.requires_grad


def test_using_a_no_grad_view_after_its_base_was_modified_in_place_raises(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    with T.no_grad():
        v = y[:1]
    y.mul_(2)
    assert v.requires_grad  # reading requires_grad does not check
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and its base or "
                                           "another view of its base has been modified inplace "
                                           "with grad mode enabled"):
        v.reshape(1)


def test_isclose_of_a_stale_no_grad_view_raises_as_its_differentiable_parts_do(T):
    y = T.tensor([0.75, 1.75], dtype=T.float64, requires_grad=True) * 1
    with T.no_grad():
        v = y.unsqueeze(0)
    y.clamp_max_(1.0)
    assert (v == 1).tolist() == [[False, True]]  # a comparison records nothing, reads nothing
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and its base"):
        T.isclose(v, T.tensor(-0.75, dtype=T.float64))


def test_isclose_compares_shapes_before_it_reads_history_and_reads_other_first(T):
    y = T.tensor([0.75, 1.75], dtype=T.float64, requires_grad=True) * 1
    with T.no_grad():
        v = y.unsqueeze(0)
    w = T.tensor([[0.5, 1.5]], dtype=T.float64, requires_grad=True) * 1
    (u,) = w.unbind()
    y.mul_(2)
    w.mul_(2)
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        T.isclose(v, T.ones(3, dtype=T.float64))  # its first step, ==, records nothing
    with pytest.raises(RuntimeError, match="Output 0 of Unbind is a view"):
        T.isclose(v, u)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        T.isclose(u, v)


def test_an_op_without_derivative_reads_a_stale_views_history_before_its_arguments(T):
    # torch's autograd fallback collects the inputs' history before the kernel refuses floats
    x = T.zeros(4, dtype=T.float64, requires_grad=True)
    with T.no_grad():
        v = x[None]
        v.zero_()
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and its base"):
        T.bitwise_or(T.tensor([3, -1]), v)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and its base"):
        v.bitwise_not()
    with T.no_grad(), pytest.raises(NotImplementedError, match='"bitwise_or_cpu" not implemented'):
        T.bitwise_or(T.tensor([3, -1, 0, 1]), v)


def test_a_no_grad_view_of_a_base_that_later_requires_grad_raises_on_use(T):
    base = T.zeros(4)
    with T.no_grad():
        v = base[1:]
    base.add_(T.ones(1, requires_grad=True).sum())
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and its base"):
        v.grad_fn


def test_retain_grad_survives_writes_through_views(T):
    x = T.tensor([[0.5], [-1.5]], requires_grad=True)
    y = x * 1
    y.retain_grad()
    y.view(-1)[0] = 2.0
    v = (x * 1).view(-1)
    v.retain_grad()
    v.add_(1)
    (y.sum() + v.sum() * 3).backward()
    assert y.retains_grad and v.retains_grad
    np.testing.assert_array_equal(y.grad.numpy(), [[1.0], [1.0]])
    np.testing.assert_array_equal(v.grad.numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(x.grad.numpy(), [[3.0], [4.0]])


def test_retain_grad_survives_mark_dirty(T):
    class Double(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y.retain_grad()
    Double.apply(y)
    (y * 5).sum().backward()
    assert y.retains_grad
    np.testing.assert_array_equal(y.grad.numpy(), [5.0, 5.0])


def test_an_expanded_view_of_a_tensor_modified_in_place_sums_its_copies(T):
    x = T.tensor(0.5, requires_grad=True)
    y = x * 1
    v = y.expand(2, 3)
    y.mul_(2)
    (v * T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    assert x.grad.item() == 42.0


# ------------------------------------------------------------------ how a view was made
def _view_out(T):
    class ViewOut(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.shape = x.shape
            return x[0]

        @staticmethod
        def backward(ctx, g):
            r = T.zeros(ctx.shape, dtype=g.dtype)
            r[0] = g
            return r

    return ViewOut


def test_a_view_of_a_custom_function_view_may_not_be_written(T):
    v = _view_out(T).apply(T.ones(2, 2, requires_grad=True) * 1)
    with pytest.raises(RuntimeError, match="Output 0 of Unsqueeze is a view and is being modified "
                                           "inplace. This view was created inside a custom "
                                           "Function"):
        v[None].add_(1)


def test_a_view_of_a_split_piece_may_not_be_written(T):
    a, b = (T.ones(2, 3, requires_grad=True) * 1).split([1, 2], 1)
    with pytest.raises(RuntimeError, match="Output 0 of Slice is a view and is being modified "
                                           "inplace. This view is the output of a function that "
                                           "returns multiple views"):
        b[:, -2:] = T.zeros(2, 2)


def test_a_view_of_a_no_grad_view_may_not_be_written(T):
    y = T.ones(2, 3, requires_grad=True) * 1
    with T.no_grad():
        row = y[0]
    tail = row[1:]
    assert type(tail.grad_fn).__name__ == "SliceBackward0"
    with pytest.raises(RuntimeError, match="Output 0 of Slice is a view of a view which was "
                                           "created in no_grad mode and is being modified"):
        tail.add_(1)


def test_a_split_piece_of_a_plain_tensor_may_not_take_a_value_that_requires_grad(T):
    a = T.tensor([1.0, 2.0, 3.0, 4.0])
    p, q = a.split(2)
    q.add_(1)  # nothing requires grad: allowed
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being "
                                           "modified inplace with grad mode enabled. This view "
                                           "is the output of a function that returns multiple"):
        q.copy_(T.tensor([5.0, 6.0], requires_grad=True))
    np.testing.assert_array_equal(a.numpy(), [1.0, 2.0, 4.0, 5.0])


def test_a_custom_function_view_output_used_after_its_base_changed_raises(T):
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1
    v = _view_out(T).apply(y)
    y += 1
    with pytest.raises(RuntimeError, match="Output 0 of ViewOut is a view and its base or another "
                                           "view of its base has been modified inplace. This view "
                                           "was created inside a custom Function"):
        (v * 2).sum().backward()


def test_a_custom_function_view_made_under_no_grad_is_still_protected(T):
    y = T.ones(2, 2, requires_grad=True) * 1
    with T.no_grad():
        v = _view_out(T).apply(y)
    y.add_(1)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and its base or "
                                           "another view of its base has been modified inplace "
                                           "with grad mode enabled. This view was created inside "
                                           "a custom Function"):
        v.grad_fn


def test_a_non_differentiable_view_output_requires_grad_through_its_base(T):
    class Tail(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            r = x[1:]
            ctx.mark_non_differentiable(r)
            return r

        @staticmethod
        def backward(ctx, g):
            return None

    o = Tail.apply(T.ones(3, requires_grad=True) * 1)
    assert o.grad_fn is None and o.requires_grad
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being "
                                           "modified inplace with grad mode enabled. This view "
                                           "was created inside a custom Function"):
        o.add_(1)


def test_custom_function_node_repr_names_its_module(T):
    class Ident(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    y = Ident.apply(T.ones(1, requires_grad=True))
    assert repr(y.grad_fn).startswith(f"<{T.__name__}.autograd.function.IdentBackward object at")


@pytest.mark.parametrize("shape,dims,named", [((1, 1), (0, -2), 0), ((1, 1, 1), (2, 1, -1), 2)])
def test_squeeze_refuses_a_dim_named_twice(T, shape, dims, named):
    x = T.ones(shape)
    with pytest.raises(RuntimeError, match=f"dim {named} appears multiple times in the list"):
        x.squeeze(dims)


def test_a_view_of_an_inference_tensor_does_not_require_grad(T):
    with T.inference_mode():
        x = T.ones(2, 2, requires_grad=True)
        v = x.view(4)
        assert not v.requires_grad and v.is_inference()


@pytest.mark.parametrize("shape, dtype, want", [
    ((2, 0), "float32", (2, 0)), ((0, 3), "float32", (0, 6)), ((0, 2), "float32", (0, 4)),
])
def test_view_as_another_dtype_of_an_empty_tensor(T, shape, dtype, want):
    x = T.zeros(shape, dtype=T.float64, requires_grad=True)
    v = x.view(getattr(T, dtype))
    assert tuple(v.shape) == want and v.dtype == getattr(T, dtype)


def test_a_view_of_an_inference_tensor_is_not_a_view_and_sets_requires_grad_alone(T):
    with T.inference_mode():
        x = T.tensor([0.5], dtype=T.float64, requires_grad=True)
        v = x.view(-1)
        assert not v._is_view() and v._base is None
        v.requires_grad_(True)
        v.requires_grad_(False)
        assert not v.requires_grad and x.requires_grad
        v.requires_grad_(True)
        x.requires_grad_(False)
        assert v.requires_grad and not x.requires_grad


def test_a_view_made_in_inference_mode_of_a_normal_tensor_requires_grad(T):
    y = T.ones(3, requires_grad=True) * 1
    with T.inference_mode():
        v = y[:1]
    assert v.requires_grad and not v.is_inference() and v.grad_fn is None


def test_autograd_grad_with_respect_to_a_stale_split_piece_raises(T):
    y = T.ones(2, 4, requires_grad=True) * 1
    a, b = T.chunk(y, 2, dim=1)
    y.mul_(2)
    with pytest.raises(RuntimeError, match="Output 0 of Split is a view and its base or another "
                                           "view of its base has been modified inplace"):
        T.autograd.grad(y.sum(), [y, a], allow_unused=True)


def test_a_view_of_a_view_leaf_whose_base_changed_gets_a_history_that_leads_nowhere(T):
    # v is a view made to require grad, of a base that does not: after the base changes, the
    # views taken of v read from the base, which has no history, so v gets no gradient.
    b = T.tensor([1.0, 2.0])
    v = b[:]
    v.requires_grad_()
    w = v[1:]
    with T.no_grad():
        b.add_(1)
    assert type(w.grad_fn).__name__ == "AsStridedBackward0"
    assert w.requires_grad and w.grad_fn.next_functions == ((None, 0),)
    assert v.is_leaf and v.grad_fn is None
    assert T.autograd.grad(w.sum(), v, allow_unused=True) == (None,)


@pytest.mark.parametrize("op", [
    lambda T, a: T.softmax(a, 0),
    lambda T, a: T.nn.functional.log_softmax(a, 1),
    lambda T, a: a.cumsum(0),
    lambda T, a: T.nn.functional.layer_norm(a, (4,)),
    lambda T, a: a.masked_fill(a > 0, 1.0),
])
def test_ops_with_a_contiguous_result_let_reshape_of_a_transposed_input_view_it(T, op):
    x = T.tensor(np.arange(16.0).reshape(4, 4), requires_grad=True)
    y = op(T, x.t())
    assert y.is_contiguous()
    assert y.reshape(8, -1).grad_fn.name() == "ViewBackward0"


# A call with a bad argument on a view whose base was modified in place in a forbidden way:
# torch reads the inputs' history before the op checks its arguments, so the view's error wins.
def test_unsqueeze_out_of_range_on_a_stale_unbind_output_raises_the_view_error(T):
    y = T.tensor([1.0, 2.0, 3.0], requires_grad=True) * 1
    last = y.unbind()[2]
    y.neg_()
    with pytest.raises(RuntimeError, match="Output 2 of Unbind is a view and its base or another "
                                           "view of its base has been modified inplace"):
        last.unsqueeze(2)
    with T.no_grad():  # (no history is read outside grad mode: the argument's error)
        with pytest.raises(IndexError, match="Dimension out of range"):
            last.unsqueeze(2)


def test_unbind_out_of_range_on_a_stale_custom_function_view_raises_the_view_error(T):
    y = T.tensor([1.0, 2.0, 3.0], requires_grad=True) * 1
    v = _view_out(T).apply(y)
    y.add_(1)
    with pytest.raises(RuntimeError, match="Output 0 of ViewOut is a view and its base or another "
                                           "view of its base has been modified inplace. This view "
                                           "was created inside a custom Function"):
        v.unbind(2)


def test_select_out_of_range_on_a_stale_no_grad_view_raises_the_view_error(T):
    y = T.ones(2, 3, requires_grad=True) * 1
    with T.no_grad():
        row = y[1]
    y.mul_(2)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and its base or "
                                           "another view of its base has been modified inplace"):
        row.select(0, 99)


def test_cat_with_a_stale_split_piece_raises_the_view_error_before_the_bad_dim(T):
    y = T.ones(4, requires_grad=True) * 1
    first, _ = y.split(2)
    y.add_(1)
    other = T.ones(2, requires_grad=True)
    for bad in (lambda: T.cat([other, first], 3), lambda: first.expand(3, 5),
                lambda: first.reshape(5), lambda: T.stack([other[:1], first])):
        with pytest.raises(RuntimeError, match="Output 0 of Split is a view and its base or "
                                               "another view of its base has been modified"):
            bad()
    # (flatten and chunk check their arguments before the ops they are made of, as torch's)
    with pytest.raises(IndexError, match="Dimension out of range"):
        first.flatten(3)
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0"):
        first.chunk(0)


def test_a_detached_alias_made_to_require_grad_leaves_the_bases_views_alone(T):
    # (it shares the base's version counter, not its views: seed 1088 of the deep fuzzer)
    base = T.tensor([[1.0, 2.0], [3.0, 4.0]])
    view = base.permute((1, 0))
    alias = base.detach().requires_grad_()
    assert alias.requires_grad and not view.requires_grad and not base.requires_grad
    base.requires_grad_()
    assert view.requires_grad


def test_a_no_grad_view_of_a_tensor_requiring_grad_has_no_edge_and_gets_no_gradient(T):
    # It reads as requiring grad (through its base), but torch gives it no gradient edge: the
    # op using it computes no gradient for it, and its post hook sees None there.
    v = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = v * 1
    with T.no_grad():
        view = w.view(-1)
    y = view * 2
    assert view.requires_grad and y.grad_fn.next_functions[0][0] is None
    seen = []
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append(grad_inputs))
    y.sum().backward()
    assert seen == [(None, None)] and v.grad is None


def test_a_node_that_computes_no_gradient_still_checks_what_it_saved(T):
    # (its only input has no edge, so torch's formula computes nothing, but it unpacks the
    # saved result first: a write into it fails the version check, fuzz seeds 6330 and 7822)
    v = T.tensor([1.0, 2.0], requires_grad=True)
    w = v * 1
    with T.no_grad():
        view = w.view(-1)
    y = view.exp()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
