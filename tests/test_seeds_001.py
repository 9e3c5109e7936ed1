"""Seed 001 (PyTorch's autograd mechanics notes) as acceptance cases: saved tensors.

Built-in ops save what their backward needs; the saved values are readable as
``grad_fn._saved_<name>``. An input is saved as itself; an output is packed and unpacked into a
different tensor that holds the same values in the same storage (saving the output itself would
make a reference cycle through its own ``grad_fn``).
"""

from __future__ import annotations

import numpy as np


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
