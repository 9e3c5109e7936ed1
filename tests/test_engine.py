"""The backward engine: Tensor.backward, autograd.backward, autograd.grad and scheduling."""

from __future__ import annotations

import numpy as np
import pytest

NOT_SCALAR = "grad can be implicitly created only for scalar outputs"


def arr(t):
    return t.detach().numpy()


def assert_close(t, expected, rtol=1e-6):
    np.testing.assert_allclose(arr(t), np.asarray(expected), rtol=rtol, atol=1e-7)


def leaf(T, values=(1.0, 2.0)):
    return T.tensor(list(values), requires_grad=True)


def tag_function(T, log):
    """An identity Function that appends its tag to ``log`` when its backward runs."""

    class Tag(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, tag):
            ctx.tag = tag
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            log.append(ctx.tag)
            return g, None

    return Tag


# -------------------- implicit gradient


def test_backward_of_a_scalar_uses_an_implicit_one(T):
    x = leaf(T)
    (x * 3).sum().backward()
    assert_close(x.grad, [3.0, 3.0])


def test_backward_of_a_one_element_vector_is_allowed(T):
    x = leaf(T)
    y = (x * 3).sum().reshape(1)
    assert tuple(y.shape) == (1,)
    y.backward()
    assert_close(x.grad, [3.0, 3.0])


def test_backward_of_a_non_scalar_needs_a_gradient(T):
    x = leaf(T)
    with pytest.raises(RuntimeError, match=NOT_SCALAR):
        (x * 3).backward()
    assert x.grad is None


def test_explicit_gradient_weights_the_output(T):
    x = leaf(T)
    (x * 3).backward(T.tensor([1.0, 10.0]))
    assert_close(x.grad, [3.0, 30.0])


def test_zero_dim_gradient_for_a_scalar_output(T):
    x = leaf(T)
    (x * 3).sum().backward(T.tensor(2.0))
    assert_close(x.grad, [6.0, 6.0])


def test_explicit_gradient_shape_mismatch(T):
    x = leaf(T)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 3).backward(T.ones(3))
    assert x.grad is None


def test_explicit_gradient_is_not_broadcast(T):
    x = leaf(T)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 3).backward(T.ones(1))


def test_float64_gradient_for_float32_output_is_accepted(T):
    x = leaf(T)
    assert x.dtype == T.float32
    (x * 3).backward(T.ones(2, dtype=T.float64))
    assert x.grad.dtype == T.float32
    assert_close(x.grad, [3.0, 3.0])


def test_python_float_gradient_is_a_type_error(T):
    x = leaf(T)
    with pytest.raises(TypeError):
        (x * 3).sum().backward(2.0)
    assert x.grad is None


# -------------------- retain_graph, accumulation


def test_graph_without_saved_tensors_can_be_backwarded_twice(T):
    x = leaf(T)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    assert_close(x.grad, [2.0, 2.0])


def test_second_backward_through_saved_tensors_raises(T):
    x = leaf(T)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_retain_graph_allows_a_second_backward(T):
    x = leaf(T)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert_close(x.grad, [4.0, 8.0])


def test_gradients_accumulate_across_graphs(T):
    x = leaf(T)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    assert_close(x.grad, [5.0, 7.0])


def test_accumulation_updates_grad_in_place(T):
    x = leaf(T)
    (x * 3).sum().backward()
    g = x.grad
    (x * 2).sum().backward()
    assert g is x.grad
    assert_close(g, [5.0, 5.0])


def test_backward_inside_no_grad_still_accumulates(T):
    x = leaf(T)
    y = (x * x).sum()
    with T.no_grad():
        y.backward()
    assert_close(x.grad, [2.0, 4.0])
    assert not x.grad.requires_grad


def test_non_leaf_grad_is_filled_after_retain_grad(T):
    x = leaf(T)
    h = x * 2
    h.retain_grad()
    (h * h).sum().backward()
    assert h.retains_grad
    assert_close(h.grad, [4.0, 8.0])
    assert_close(x.grad, [8.0, 16.0])


# -------------------- create_graph


def test_backward_with_create_graph_warns_about_a_reference_cycle(T):
    x = leaf(T)
    previous = T.is_warn_always_enabled()
    T.set_warn_always(True)  # by default this warning is given once per process only
    try:
        with pytest.warns(UserWarning, match="reference cycle"):
            (x**3).sum().backward(create_graph=True)
    finally:
        T.set_warn_always(previous)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_create_graph_gives_gradients_with_grad_fn(T):
    x = leaf(T)
    (x**3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    assert x.grad.grad_fn is not None
    assert_close(x.grad, [3.0, 12.0])


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_create_graph_allows_second_derivative_by_backward(T):
    x = leaf(T)
    (x**3).sum().backward(create_graph=True)
    (gg,) = T.autograd.grad(x.grad.sum(), x)
    assert_close(gg, [6.0, 12.0])


def test_create_graph_allows_second_derivative_by_grad(T):
    x = leaf(T)
    (g,) = T.autograd.grad((x**3).sum(), x, create_graph=True)
    (gg,) = T.autograd.grad(g.sum(), x)
    assert_close(g, [3.0, 12.0])
    assert_close(gg, [6.0, 12.0])


def test_create_graph_third_derivative(T):
    x = leaf(T)
    (g,) = T.autograd.grad((x**4).sum(), x, create_graph=True)
    (gg,) = T.autograd.grad(g.sum(), x, create_graph=True)
    (ggg,) = T.autograd.grad(gg.sum(), x)
    assert_close(ggg, [24.0, 48.0])


def test_create_graph_of_a_constant_gradient_does_not_require_grad(T):
    x = leaf(T)
    (g,) = T.autograd.grad((x * 3).sum(), x, create_graph=True)
    assert not g.requires_grad
    assert_close(g, [3.0, 3.0])


def test_create_graph_inside_no_grad_still_builds_the_graph(T):
    x = leaf(T)
    y = (x * x).sum()
    with T.no_grad():
        (g,) = T.autograd.grad(y, x, create_graph=True)
    assert g.requires_grad
    (gg,) = T.autograd.grad(g.sum(), x)
    assert_close(gg, [2.0, 2.0])


def test_without_create_graph_gradients_are_plain(T):
    x = leaf(T)
    (x**3).sum().backward()
    assert not x.grad.requires_grad
    assert x.grad.grad_fn is None


# -------------------- inputs=


def test_backward_inputs_only_fills_listed_tensors(T):
    x = leaf(T)
    w = leaf(T, (3.0, 4.0))
    (x * w).sum().backward(inputs=[x])
    assert_close(x.grad, [3.0, 4.0])
    assert w.grad is None


def test_backward_inputs_accepts_a_single_tensor(T):
    x = leaf(T)
    w = leaf(T, (3.0, 4.0))
    (x * w).sum().backward(inputs=w)
    assert_close(w.grad, [1.0, 2.0])
    assert x.grad is None


def test_backward_inputs_fills_a_non_leaf(T):
    x = leaf(T)
    w = leaf(T, (3.0, 4.0))
    h = x * w
    (h * 2).sum().backward(inputs=[h])
    assert_close(h.grad, [2.0, 2.0])
    assert x.grad is None
    assert w.grad is None


def test_backward_inputs_with_an_unused_leaf_is_fine(T):
    x = leaf(T)
    unused = leaf(T, (5.0, 6.0))
    (x * 2).sum().backward(inputs=[x, unused])
    assert_close(x.grad, [2.0, 2.0])
    assert unused.grad is None


def test_backward_inputs_make_a_non_leaf_retain_its_grad_for_later_backwards(T):
    x = leaf(T)
    y = x * 2
    (y * y).sum().backward(inputs=[y], retain_graph=True)
    assert y.retains_grad
    assert_close(y.grad, [4.0, 8.0])
    (y * 3).sum().backward()
    assert_close(y.grad, [7.0, 11.0])
    assert_close(x.grad, [6.0, 6.0])


def test_backward_inputs_refuse_a_tensor_that_does_not_require_grad(T):
    x = leaf(T)
    c = T.tensor([1.0, 2.0])
    y = x * 1
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad"):
        (y * c).sum().backward(inputs=[y, c])
    assert x.grad is None
    assert c.grad is None


def test_backward_inputs_cannot_be_empty(T):
    x = leaf(T)
    with pytest.raises(RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot be empty"):
        (x * 2).sum().backward(inputs=[])
    assert x.grad is None


# -------------------- leaves changed after the graph was built


@pytest.mark.parametrize("drop", ["detach_", "requires_grad_"])
def test_a_leaf_that_stopped_requiring_grad_gets_no_grad_but_its_hooks_run(T, drop):
    x = leaf(T)
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()))
    x.register_post_accumulate_grad_hook(lambda t: seen.append("post"))
    y = (x * 3).sum()
    x.detach_() if drop == "detach_" else x.requires_grad_(False)
    y.backward()
    assert x.grad is None
    assert seen == [[3.0, 3.0], "post"]


def test_a_leaf_that_requires_grad_again_gets_grad_from_the_old_graph_too(T):
    x = leaf(T)
    y = x * 3
    x.requires_grad_(False)
    x.requires_grad_(True)
    (y.sum() + (x * 2).sum()).backward()
    assert_close(x.grad, [5.0, 5.0])


def test_a_leaf_moved_into_the_graph_interior_refuses_accumulation(T):
    x = leaf(T)
    y = (x * 2).sum()
    x.detach_()
    x.mul_(T.tensor([3.0, 3.0], requires_grad=True))
    with pytest.raises(RuntimeError, match="leaf variable has been moved into the graph interior"):
        y.backward()


# -------------------- autograd.backward


def test_autograd_backward_sums_several_scalars(T):
    x = leaf(T)
    T.autograd.backward([(x * 2).sum(), (x * 3).sum()])
    assert_close(x.grad, [5.0, 5.0])


def test_autograd_backward_accepts_a_single_tensor(T):
    x = leaf(T)
    T.autograd.backward((x * 2).sum())
    assert_close(x.grad, [2.0, 2.0])


def test_autograd_backward_grad_tensors_with_none_for_scalars(T):
    x = leaf(T)
    T.autograd.backward([(x * 2).sum(), x * 3], [None, T.tensor([1.0, 10.0])])
    assert_close(x.grad, [5.0, 32.0])


def test_autograd_backward_length_mismatch(T):
    x = leaf(T)
    with pytest.raises(RuntimeError, match="got 2 tensors and 1 gradients"):
        T.autograd.backward([(x * 2).sum(), (x * 3).sum()], [T.tensor(1.0)])
    assert x.grad is None


# -------------------- autograd.grad


def test_grad_returns_a_tuple(T):
    x = leaf(T)
    result = T.autograd.grad((x * 2).sum(), x)
    assert isinstance(result, tuple)
    assert len(result) == 1
    assert_close(result[0], [2.0, 2.0])


def test_grad_never_touches_dot_grad(T):
    x = leaf(T)
    w = leaf(T, (3.0, 4.0))
    T.autograd.grad((x * w).sum(), [x, w])
    assert x.grad is None
    assert w.grad is None


def test_grad_leaves_an_existing_dot_grad_alone(T):
    x = leaf(T)
    (x * 3).sum().backward()
    T.autograd.grad((x * 5).sum(), x)
    assert_close(x.grad, [3.0, 3.0])


def test_grad_with_the_same_input_twice(T):
    x = leaf(T)
    w = leaf(T, (3.0, 4.0))
    gx1, gx2 = T.autograd.grad((x * w).sum(), [x, x])
    assert_close(gx1, [3.0, 4.0])
    assert_close(gx2, [3.0, 4.0])


def test_grad_sums_an_output_listed_twice(T):
    x = leaf(T)
    w = leaf(T, (3.0, 4.0))
    y = (x * w).sum()
    (g,) = T.autograd.grad([y, y], x)
    assert_close(g, [6.0, 8.0])


def test_grad_with_grad_outputs(T):
    x = leaf(T)
    (g,) = T.autograd.grad(x * 3, x, grad_outputs=T.tensor([1.0, 10.0]))
    assert_close(g, [3.0, 30.0])


def test_grad_of_a_non_leaf_input(T):
    x = leaf(T)
    h = x * 2
    (g,) = T.autograd.grad((h * h).sum(), h)
    assert_close(g, [4.0, 8.0])


def test_grad_of_an_unused_input_raises(T):
    x = leaf(T)
    unused = leaf(T, (5.0, 6.0))
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        T.autograd.grad((x * 2).sum(), [x, unused])


def test_grad_allow_unused_gives_none(T):
    x = leaf(T)
    unused = leaf(T, (5.0, 6.0))
    gx, gu = T.autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)
    assert_close(gx, [2.0, 2.0])
    assert gu is None


def test_grad_materialize_grads_gives_zeros(T):
    x = leaf(T)
    unused = leaf(T, (5.0, 6.0))
    gx, gu = T.autograd.grad((x * 2).sum(), [x, unused], materialize_grads=True)
    assert_close(gx, [2.0, 2.0])
    assert_close(gu, [0.0, 0.0])
    assert tuple(gu.shape) == (2,)


def test_grad_materialize_grads_with_allow_unused_false(T):
    x = leaf(T)
    unused = leaf(T, (5.0, 6.0))
    with pytest.raises(ValueError, match="allow_unused"):
        T.autograd.grad((x * 2).sum(), [x, unused], materialize_grads=True, allow_unused=False)


def test_grad_input_must_require_grad(T):
    x = leaf(T)
    c = T.tensor([1.0, 2.0])
    with pytest.raises(
        RuntimeError, match="One of the differentiated Tensors does not require grad"
    ):
        T.autograd.grad((x * 2).sum(), [x, c])


def test_grad_output_must_require_grad(T):
    x = leaf(T)
    c = T.tensor([1.0, 2.0])
    with pytest.raises(
        RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"
    ):
        T.autograd.grad(c.sum(), x)


def test_grad_inputs_cannot_be_empty(T):
    x = leaf(T)
    with pytest.raises(RuntimeError, match="`inputs` argument to `grad\\(\\)` cannot be empty"):
        T.autograd.grad((x * 2).sum(), [])


def test_grad_twice_without_retain_graph(T):
    x = leaf(T)
    y = (x * x).sum()
    T.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        T.autograd.grad(y, x)


# -------------------- broadcasting


def test_broadcast_operand_gradient_is_reduced_to_its_shape(T, rng):
    x = T.tensor(rng.standard_normal(3), requires_grad=True)
    y = T.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    weights = rng.standard_normal((2, 3))
    ((x + y) * T.tensor(weights)).sum().backward()
    assert tuple(x.grad.shape) == (3,)
    assert tuple(y.grad.shape) == (2, 3)
    assert_close(x.grad, weights.sum(axis=0))
    assert_close(y.grad, weights)


def test_broadcast_of_a_column_against_a_row(T, rng):
    col_np = rng.standard_normal((2, 1))
    row_np = rng.standard_normal(3)
    col = T.tensor(col_np, requires_grad=True)
    row = T.tensor(row_np, requires_grad=True)
    (col * row).sum().backward()
    assert tuple(col.grad.shape) == (2, 1)
    assert tuple(row.grad.shape) == (3,)
    assert_close(col.grad, np.full((2, 1), row_np.sum()))
    assert_close(row.grad, np.full(3, col_np.sum()))


def test_broadcast_of_a_zero_dim_tensor(T):
    s = T.tensor(2.0, requires_grad=True)
    (s * T.ones(2, 3)).sum().backward()
    assert tuple(s.grad.shape) == ()
    assert_close(s.grad, 6.0)


# -------------------- graphs and order


def test_diamond_graph_sums_both_paths(T, rng):
    x_np = rng.standard_normal(4)
    x = T.tensor(x_np, requires_grad=True)
    h = x * x
    (h.exp() + h.sin()).sum().backward()
    h_np = x_np * x_np
    assert_close(x.grad, (np.exp(h_np) + np.cos(h_np)) * 2 * x_np)


def test_leaf_used_on_many_paths(T):
    x = leaf(T)
    (x * 2 + x * 3 + x).sum().backward()
    assert_close(x.grad, [6.0, 6.0])


def test_deep_chain_backpropagates(T):
    x = T.tensor(np.ones(2), requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.0001
    y.sum().backward()
    assert_close(x.grad, np.full(2, 1.0001**5000), rtol=1e-9)


def test_ready_nodes_run_most_recent_first(T):
    log = []
    Tag = tag_function(T, log)
    x = leaf(T)
    a = Tag.apply(x.exp(), "exp")
    b = Tag.apply(x.sin(), "sin")
    (a + b).sum().backward()
    assert log == ["sin", "exp"]


def test_ready_nodes_order_follows_creation_not_operands(T):
    log = []
    Tag = tag_function(T, log)
    x = leaf(T)
    b = Tag.apply(x.sin(), "sin")
    a = Tag.apply(x.exp(), "exp")
    (a + b).sum().backward()
    assert log == ["exp", "sin"]


@pytest.mark.parametrize("order", ["a*b", "b*a"])
def test_operand_order_does_not_change_execution_order(T, order):
    log = []
    Tag = tag_function(T, log)
    x = leaf(T)
    a = Tag.apply(x, "a")
    b = Tag.apply(x, "b")
    y = a * b if order == "a*b" else b * a
    y.sum().backward()
    assert log == ["b", "a"]
    assert_close(x.grad, [2.0, 4.0])


def test_a_node_waits_for_all_its_gradients(T):
    log = []
    Tag = tag_function(T, log)
    x = leaf(T)
    p = Tag.apply(x, "p")
    q = Tag.apply(Tag.apply(Tag.apply(p, "q1"), "q2"), "q3")
    r = Tag.apply(p, "r")
    (q + r).sum().backward()
    assert log == ["r", "q3", "q2", "q1", "p"]
    assert_close(x.grad, [2.0, 2.0])


def probe_function(T, w, seen):
    """An identity Function whose backward records ``w.grad`` at the time it runs."""

    class Probe(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            seen.append(None if w.grad is None else arr(w.grad).copy())
            return g

    return Probe


def test_leaf_accumulates_as_soon_as_it_is_ready(T):
    seen = []
    w = leaf(T)
    Probe = probe_function(T, w, seen)
    p = Probe.apply(leaf(T))
    a = w * 3
    (p + a).sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], [3.0, 3.0])


def test_leaf_accumulation_waits_for_its_branch(T):
    seen = []
    w = leaf(T)
    Probe = probe_function(T, w, seen)
    a = w * 3
    p = Probe.apply(leaf(T))
    (p + a).sum().backward()
    assert seen == [None]
    assert_close(w.grad, [3.0, 3.0])


def test_grad_with_batched_grad_outputs_gives_jacobian_rows(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    w = T.tensor([3.0, 4.0])
    (rows,) = T.autograd.grad(x * w, x, T.eye(2), is_grads_batched=True)
    assert rows.tolist() == [[3.0, 0.0], [0.0, 4.0]]
    y = (x * x).sum()
    (batch,) = T.autograd.grad(y, x, T.tensor([1.0, 2.0, 3.0]), is_grads_batched=True)
    assert batch.tolist() == [[2.0, 4.0], [4.0, 8.0], [6.0, 12.0]]


def test_a_gradient_reduced_to_a_0d_input_is_a_plain_sum(T):
    a = T.tensor(-0.5, requires_grad=True)
    y = a.maximum(T.zeros((1, 0), dtype=T.bool))
    (g,) = T.autograd.grad(T.tan(y).sum(), [a], create_graph=True)
    assert type(g.grad_fn).__name__ == "SumBackward0" and g.item() == 0.0


def test_a_root_gradient_of_another_float_dtype_is_cast_to_the_outputs(T):
    # torch validates the roots' gradients as every node's: a float64 gradient for a float32
    # output arrives in float32 (its hooks see float32; the precision beyond is lost)
    x = T.tensor([0.1234567890123], dtype=T.float64, requires_grad=True)
    y = x.to(T.float32)
    seen = []
    y.register_hook(lambda g: seen.append(g.dtype))
    (g,) = T.autograd.grad(y, x, T.tensor([1.1234567890123], dtype=T.float64))
    assert seen == [T.float32] and g.dtype == T.float64
    assert g.tolist() == [float(np.float32(1.1234567890123))]
    w = T.tensor([1.0], dtype=T.float32, requires_grad=True)
    w.backward(T.tensor([1.1234567890123], dtype=T.float64))
    assert w.grad.dtype == T.float32
