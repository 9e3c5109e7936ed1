"""Leaf gradients are the leaf's own: never an alias of another tensor's values.

The engine may keep a gradient it computed as ``.grad`` without copying it; these cases check
that this never happens when something else still sees the same values.
"""

from __future__ import annotations

import numpy as np
import pytest

import ext


def test_two_leaves_of_one_add_get_separate_grads(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = T.tensor([3.0, 4.0], requires_grad=True)
    (a + b).sum().backward()
    a.grad.mul_(7)
    assert b.grad.tolist() == [1.0, 1.0]


def test_a_leaf_grad_does_not_alias_a_retained_grad(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x.clone()
    y.retain_grad()
    y.sum().backward()
    x.grad.mul_(5)
    assert y.grad.tolist() == [1.0, 1.0]


def test_a_leaf_grad_does_not_alias_the_gradient_given_to_backward(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    g = T.tensor([0.5, 0.25])
    (x * 1).backward(g)
    x.grad.mul_(2)
    assert g.tolist() == [0.5, 0.25]


def test_a_leaf_grad_does_not_alias_a_gradient_a_hook_kept(T):
    kept = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: kept.append(g))
    (x * 3).sum().backward()
    x.grad.zero_()
    assert kept[0].tolist() == [3.0, 3.0]


def test_grads_of_a_shared_subexpression_stay_separate(T, rng):
    w = T.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    v = T.tensor(rng.standard_normal(3), requires_grad=True)
    h = w @ v
    (h.sum() + (h * 2).sum()).backward()
    expected_v = w.detach().numpy().sum(0) * 3
    w.grad.zero_()
    np.testing.assert_allclose(v.grad.numpy(), expected_v, rtol=1e-12)


def _shares(a, b) -> bool:
    return np.shares_memory(a.detach().numpy(), b.detach().numpy())


def test_a_first_grad_is_a_copy_of_a_gradient_someone_else_holds(T):
    # AccumulateGrad keeps a first gradient without a copy only when nothing else holds it:
    # here each one is held by the caller, a custom Function's ctx, or a built-in that passed
    # the caller's gradient through.
    held = T.tensor([0.5, 0.25])
    x = T.tensor([1.0, 2.0], requires_grad=True)
    x.backward(held)
    assert not _shares(x.grad, held)

    x.grad = None
    x.clone().backward(held)
    assert not _shares(x.grad, held)

    class Keep(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 1

        @staticmethod
        def backward(ctx, g):
            ctx.kept = g * 2
            return ctx.kept

    x.grad = None
    y = Keep.apply(x)
    y.sum().backward()
    assert not _shares(x.grad, y.grad_fn.kept)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_a_first_grad_under_create_graph_is_a_recorded_copy(T):
    # torch copies it into a new tensor with grad mode on: .grad's node is CopyBackwards
    x = T.tensor([2.0], requires_grad=True)
    y = x**3
    y.backward(create_graph=True)
    assert x.grad.grad_fn.name().endswith("CopyBackwards")
    assert x.grad.grad_fn.next_functions[1][0] is not None  # (linked to 3 * x**2's graph)
    (g2,) = T.autograd.grad(x.grad, x)
    assert g2.tolist() == [12.0]


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_a_grad_with_a_graph_accumulates_in_place_when_grad_mode_is_off(T):
    # a later backward without create_graph adds into the same object, which keeps its grad_fn
    x = T.tensor([2.0], requires_grad=True)
    (x**3).backward(create_graph=True)
    first = x.grad
    x.grad.backward()
    assert x.grad is first and x.grad.tolist() == [24.0]
    assert x.grad.grad_fn.name().endswith("CopyBackwards")


def test_leaf_grads_cut_from_one_array_stay_separate(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = T.tensor([3.0, 4.0], requires_grad=True)
    (T.stack([a, b]) * 2).sum().backward()
    assert not _shares(a.grad, b.grad)
    a.grad.mul_(3)
    assert b.grad.tolist() == [2.0, 2.0]


def test_linear_weight_and_bias_grads_are_their_own_and_writable(T, rng):
    # (the weight's gradient is a transposed view of mm's result, the bias's a view of a sum)
    x = T.tensor(rng.standard_normal((5, 3)))
    w = T.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    b = T.tensor(rng.standard_normal(4), requires_grad=True)
    g = T.tensor(rng.standard_normal((5, 4)))
    T.nn.functional.linear(x, w, b).backward(g)
    assert not _shares(w.grad, g) and not _shares(b.grad, g)
    assert w.grad.stride() == (3, 1) and b.grad.stride() == (1,)
    w.grad.mul_(2)
    b.grad.mul_(2)
    np.testing.assert_allclose(w.grad.numpy(), 2 * g.numpy().T @ x.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), 2 * g.numpy().sum(0), rtol=1e-12)


def test_a_gradient_through_view_nodes_stays_the_leafs_own(T, rng):
    # (the weight's gradient reaches it through TBackward0 and ViewBackward0, views of what mm
    # made: kept only where nothing else sees those values)
    x = T.tensor(rng.standard_normal((5, 3)))
    w = T.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    wt = w.t()
    wt.retain_grad()
    (x @ wt).sum().backward()
    assert not _shares(w.grad, wt.grad)
    w.grad.zero_()
    np.testing.assert_allclose(wt.grad.numpy(), np.tile(x.numpy().sum(0)[:, None], (1, 4)))

    w.grad = None
    given = T.tensor(rng.standard_normal((3, 4)))
    w.t().backward(given)  # (the root gradient is the caller's: never kept)
    assert not _shares(w.grad, given)
    w.grad = None
    (x @ w.t().view(3, 4)).sum().backward()  # (two view nodes in a row)
    np.testing.assert_allclose(w.grad.numpy(), np.tile(x.numpy().sum(0), (4, 1)), rtol=1e-12)
    assert w.grad.stride() == (3, 1)


@pytest.mark.ext_only
def test_a_gradient_a_hook_kept_on_the_way_is_not_the_leafs():
    # (torch keeps this one without a copy, so that .grad and the kept tensor share memory;
    # ext's rule is stricter: .grad never aliases a tensor something else holds)
    kept = []
    w = ext.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    flat = w.view(6)
    flat.register_hook(kept.append)
    (flat.view(2, 3).t() * 2).sum().backward()
    assert not _shares(w.grad, kept[0])
    w.grad.zero_()
    assert kept[0].tolist() == [2.0] * 6
