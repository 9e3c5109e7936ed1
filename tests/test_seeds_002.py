"""Seed 002's worked example: f(x) = sin(x² + 3x) at x = 2, by reverse-mode autograd.

The seed traces the tape v1 = x², v2 = 3x, v3 = v1 + v2, v4 = sin(v3) by hand and gets
f(2) ≈ -0.544 and f'(2) = cos(10) · (2·2 + 3) ≈ -5.873.
"""

from __future__ import annotations

import math

import numpy as np
import pytest


def f_closed_form(x):
    return np.sin(x**2 + 3 * x)


def df_closed_form(x):
    return np.cos(x**2 + 3 * x) * (2 * x + 3)


def traced(T, x):
    v1 = x**2
    v2 = 3 * x
    v3 = v1 + v2
    v4 = T.sin(v3)
    return v1, v2, v3, v4


def test_forward_pass_records_the_seeds_tape_values(T):
    x = T.tensor(2.0, dtype=T.float64, requires_grad=True)
    v1, v2, v3, v4 = traced(T, x)

    assert (v1.item(), v2.item(), v3.item()) == (4.0, 6.0, 10.0)
    assert v4.item() == pytest.approx(math.sin(10.0))
    assert v4.item() == pytest.approx(-0.544, abs=1e-3)
    assert type(v4.grad_fn).__name__ == "SinBackward0"


def test_derivative_at_2_matches_the_closed_form(T):
    x = T.tensor(2.0, dtype=T.float64, requires_grad=True)
    f = T.sin(x**2 + 3 * x)
    f.backward()

    assert x.grad.item() == pytest.approx(math.cos(10.0) * 7)
    assert x.grad.item() == pytest.approx(-5.873, abs=1e-3)


def test_reverse_pass_sums_the_two_paths_into_x(T):
    x = T.tensor(2.0, dtype=T.float64, requires_grad=True)
    v1, v2, v3, v4 = traced(T, x)
    for v in (v1, v2, v3):
        v.retain_grad()
    v4.backward()

    cos10 = math.cos(10.0)
    assert v3.grad.item() == pytest.approx(cos10)  # through sin
    assert v1.grad.item() == pytest.approx(cos10)  # the sum passes it on unchanged
    assert v2.grad.item() == pytest.approx(cos10)
    via_square = v1.grad.item() * 2 * 2.0
    via_triple = v2.grad.item() * 3
    assert via_square == pytest.approx(-3.356, abs=1e-3)
    assert via_triple == pytest.approx(-2.517, abs=1e-3)
    assert x.grad.item() == pytest.approx(via_square + via_triple)


def test_autograd_grad_agrees_with_backward_and_leaves_grad_alone(T):
    x = T.tensor(2.0, dtype=T.float64, requires_grad=True)
    (dfdx,) = T.autograd.grad(T.sin(x**2 + 3 * x), x)

    assert dfdx.item() == pytest.approx(df_closed_form(2.0))
    assert x.grad is None


def test_derivative_at_random_points_matches_the_closed_form(T, rng):
    x_np = rng.uniform(-3, 3, size=7)
    x = T.tensor(x_np, requires_grad=True)
    f = T.sin(x**2 + 3 * x)
    f.sum().backward()

    np.testing.assert_allclose(f.detach().numpy(), f_closed_form(x_np))
    np.testing.assert_allclose(x.grad.numpy(), df_closed_form(x_np))


def test_function_passes_gradcheck(T, rng):
    x = T.tensor(rng.uniform(-3, 3, size=4), requires_grad=True)
    assert T.autograd.gradcheck(lambda t: T.sin(t**2 + 3 * t), (x,))
