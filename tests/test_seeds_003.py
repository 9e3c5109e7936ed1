"""Seed 003: grad_fn, next_functions, AccumulateGrad and its .variable, explored from Python.

The seed's two examples: c = a + b, and e = (a + b) * d with a = 2, b = 3, d = 4.
"""

from __future__ import annotations

import pytest


def node_name(node) -> str:
    return type(node).__name__


def leaves(T):
    a = T.tensor(2.0, requires_grad=True)
    b = T.tensor(3.0, requires_grad=True)
    d = T.tensor(4.0, requires_grad=True)
    return a, b, d


def test_backward_of_a_sum_fills_grad_of_both_inputs(T):
    a, b, _ = leaves(T)
    c = a + b
    c.backward()

    assert a.grad.item() == 1.0
    assert b.grad.item() == 1.0


def test_result_prints_its_grad_fn(T):
    a, b, _ = leaves(T)
    c = a + b

    assert repr(c) == "tensor(5., grad_fn=<AddBackward0>)"
    assert node_name(c.grad_fn) == "AddBackward0"
    assert c.grad_fn.name() == "AddBackward0"
    assert repr(c.grad_fn).startswith("<AddBackward0 object at ")


def test_grad_fn_exposes_name_next_functions_and_metadata(T):
    a, b, _ = leaves(T)
    c = a + b

    assert {"metadata", "name", "next_functions"} <= set(dir(c.grad_fn))
    assert c.grad_fn.metadata == {}


def test_next_functions_of_a_sum_of_leaves_are_two_accumulate_grads(T):
    a, b, _ = leaves(T)
    c = a + b

    edges = c.grad_fn.next_functions
    assert isinstance(edges, tuple) and len(edges) == 2
    (ag_a, nr_a), (ag_b, nr_b) = edges
    assert (node_name(ag_a), nr_a) == ("AccumulateGrad", 0)
    assert (node_name(ag_b), nr_b) == ("AccumulateGrad", 0)
    assert ag_a.name().endswith("AccumulateGrad")


def test_accumulate_grad_is_a_dead_end_holding_the_leaf_itself(T):
    a, b, _ = leaves(T)
    c = a + b

    (ag, _), (ag_b, _) = c.grad_fn.next_functions
    assert ag.next_functions == ()
    assert "variable" in dir(ag)
    assert ag.variable is a
    assert id(ag.variable) == id(a)
    assert ag_b.variable is b
    assert repr(ag.variable) == "tensor(2., requires_grad=True)"


def test_each_leaf_has_one_accumulator_shared_by_the_graphs_that_use_it(T):
    a, b, d = leaves(T)
    c = a + b
    e = a * d

    (from_c, _), _ = c.grad_fn.next_functions
    (from_e, _), _ = e.grad_fn.next_functions
    assert from_c is from_e
    assert from_c.variable is a


def test_product_node_links_to_the_node_that_made_its_input(T):
    a, b, d = leaves(T)
    c = a + b
    e = c * d

    assert repr(e) == "tensor(20., grad_fn=<MulBackward0>)"
    (f1, nr1), (f2, nr2) = e.grad_fn.next_functions
    assert (nr1, nr2) == (0, 0)
    assert f1 is c.grad_fn
    assert node_name(f1) == "AddBackward0"
    assert not hasattr(f1, "variable")
    with pytest.raises(AttributeError):
        f1.variable
    assert node_name(f2) == "AccumulateGrad"
    assert f2.variable is d


def test_created_tensors_are_leaves_and_computed_ones_are_not(T):
    a, b, d = leaves(T)
    c = a + b
    e = c * d

    assert [t.is_leaf for t in (a, b, d)] == [True, True, True]
    assert [t.grad_fn for t in (a, b, d)] == [None, None, None]
    assert [t.is_leaf for t in (c, e)] == [False, False]


def test_backward_of_product_reaches_every_leaf_but_keeps_no_interior_grad(T):
    a, b, d = leaves(T)
    c = a + b
    e = c * d
    e.backward()

    assert a.grad.item() == 4.0  # d
    assert b.grad.item() == 4.0  # d
    assert d.grad.item() == 5.0  # a + b
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert c.grad is None


def test_walking_next_functions_from_the_output_finds_every_leaf(T):
    a, b, d = leaves(T)
    e = (a + b) * d

    reached, interior = [], []
    pending = [e.grad_fn]
    while pending:
        node = pending.pop()
        if node_name(node) == "AccumulateGrad":
            reached.append(node.variable)
        else:
            interior.append(node_name(node))
            pending.extend(fn for fn, _ in node.next_functions if fn is not None)

    assert sorted(interior) == ["AddBackward0", "MulBackward0"]
    assert sorted(id(t) for t in reached) == sorted(id(t) for t in (a, b, d))


def test_autograd_backward_is_what_tensor_backward_does(T):
    a, b, d = leaves(T)
    T.autograd.backward((a + b) * d)

    assert (a.grad.item(), b.grad.item(), d.grad.item()) == (4.0, 4.0, 5.0)


def test_autograd_backward_scales_by_an_explicit_grad_tensor(T):
    a, b, d = leaves(T)
    T.autograd.backward([(a + b) * d], [T.tensor(2.0)])

    assert (a.grad.item(), b.grad.item(), d.grad.item()) == (8.0, 8.0, 10.0)
