"""Seed 001 (PyTorch's autograd mechanics notes) as acceptance cases: saved tensors.

Built-in ops save what their backward needs; the saved values are readable as
``grad_fn._saved_<name>``. An input is saved as itself; an output is packed and unpacked into a
different tensor that holds the same values in the same storage (saving the output itself would
make a reference cycle through its own ``grad_fn``).
"""

from __future__ import annotations

import numpy as np
import pytest


def test_pow_saves_its_input_as_saved_self(T, rng):
    x = T.tensor(rng.standard_normal(5), requires_grad=True)
    y = x.pow(2)

    assert x.equal(y.grad_fn._saved_self)
    assert x is y.grad_fn._saved_self


def test_exp_saves_its_output_as_an_equal_but_distinct_saved_result(T, rng):
    x = T.tensor(rng.standard_normal(5), requires_grad=True)
    y = x.exp()

    assert y.equal(y.grad_fn._saved_result)
    assert y is not y.grad_fn._saved_result


def test_saved_result_shares_storage_with_the_output(T, rng):
    x = T.tensor(rng.standard_normal(5), requires_grad=True)
    y = x.exp()

    saved = y.grad_fn._saved_result

    assert np.shares_memory(saved.detach().numpy(), y.detach().numpy())


def test_saved_result_is_unpacked_with_the_output_grad_fn(T, rng):
    x = T.tensor(rng.standard_normal(5), requires_grad=True)
    y = x.exp()

    saved = y.grad_fn._saved_result

    assert saved.grad_fn is y.grad_fn
    assert saved.requires_grad and not saved.is_leaf


# Locally disabling gradients: initialising a parameter in place (what torch.nn.init does)
# needs no-grad mode


def test_in_place_init_of_a_parameter_fails_with_grad_mode_on(T):
    w = T.ones(1, 2, 3, requires_grad=True)
    with pytest.raises(
        RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"
    ):
        w.fill_(0.1)
    assert w._version == 0


def test_in_place_init_of_a_parameter_under_no_grad_stays_an_untracked_leaf(T):
    w = T.ones(1, 2, 3, requires_grad=True)
    with T.no_grad():
        w.fill_(0.5)
        w[0, 0].mul_(4)

    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    assert w._version == 2
    (w * w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [[[4.0, 4.0, 4.0], [1.0, 1.0, 1.0]]])


# Inference mode: its tensors cannot be updated in place once the mode is left


def test_inference_mode_output_refuses_in_place_outside_the_mode(T):
    x = T.ones(1, 2, 3, requires_grad=True)
    with T.inference_mode():
        y = x * x
    assert not y.requires_grad

    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside Inference"):
        y.mul_(2)


def test_inference_mode_output_can_be_updated_in_place_inside_the_mode(T):
    x = T.ones(1, 2, 3, requires_grad=True)
    with T.inference_mode():
        y = x * x
        y.mul_(2)
    np.testing.assert_allclose(y.numpy(), np.full((1, 2, 3), 2.0))


# In-place operations with autograd: saved tensors are checked against in-place changes


def test_in_place_change_of_the_exp_output_is_caught_through_saved_result(T, rng):
    x = T.tensor(rng.standard_normal(5), requires_grad=True)
    y = x.exp()
    exp_node = y.grad_fn
    y.add_(1)

    assert type(y.grad_fn).__name__ == "AddBackward0"
    assert y.grad_fn.next_functions[0][0] is exp_node
    with pytest.raises(RuntimeError, match="which is output 0 of Exp, is at version 1"):
        exp_node._saved_result
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_in_place_change_of_x_under_no_grad_is_caught_through_saved_self(T, rng):
    x = T.tensor(rng.standard_normal(5), requires_grad=True)
    y = x.pow(2)
    with T.no_grad():
        x.mul_(2)

    with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
        y.grad_fn._saved_self
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    assert x.grad is None


def test_in_place_op_on_a_non_leaf_becomes_the_new_entry_of_its_graph(T, rng):
    x_np = rng.standard_normal(5)
    x = T.tensor(x_np, requires_grad=True)
    y = x.pow(2)
    pow_node = y.grad_fn
    y.exp_()

    assert type(y.grad_fn).__name__ == "ExpBackward0"
    assert y.grad_fn.next_functions[0][0] is pow_node
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x_np**2) * 2 * x_np, rtol=1e-6)
