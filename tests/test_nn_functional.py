"""ext.nn.functional and the softmax family: values, gradients, graphs and errors as torch's.

Every test runs on ``ext`` and on ``torch``. Inputs are built in NumPy; expected values are NumPy
references or closed forms, and expected graphs and messages are what torch 2.13 shows.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import POS, leaf, sample, to_np

# torch shows a saved negative int as an unsigned 64-bit integer: -1 reads 2**64 - 1.
NEG1 = 2**64 - 1
NEG100 = 2**64 - 100
TARGETS = np.array([0, 2, 1, 2])
CLASS_WEIGHTS = np.array([0.5, 2.0, 1.5])


def functional(T):
    return importlib.import_module(f"{T.__name__}.nn.functional")


# ---------------------------------------------------------------------------------- references
def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_log_softmax(x, axis):
    z = x - x.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def np_logsumexp(x, axis, keepdims=False):
    m = x.max(axis=axis, keepdims=True)
    out = np.log(np.exp(x - m).sum(axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis)


def np_nll(lp, t, weight=None, ignore_index=-100, reduction="mean"):
    """torch's nll_loss for (N, C) log-probabilities, in NumPy."""
    w = np.ones(lp.shape[-1]) if weight is None else weight
    keep = t != ignore_index
    safe = np.where(keep, t, 0)
    rows = np.where(keep, w[safe], 0.0)
    losses = -lp[np.arange(len(t)), safe] * rows
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.sum() / rows.sum()


def onehot(t, n_classes):
    return np.eye(n_classes)[t]


# ---------------------------------------------------------------------------------- values
def test_softmax_values_and_gradient(T, rng):
    a = sample(rng, (3, 4))
    x = leaf(T, a)
    y = x.softmax(1)
    np.testing.assert_allclose(to_np(y), np_softmax(a, 1), rtol=1e-14)
    g = sample(rng, (3, 4))
    y.backward(T.tensor(g))
    s = np_softmax(a, 1)
    np.testing.assert_allclose(to_np(x.grad), s * (g - (g * s).sum(1, keepdims=True)),
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_function_forms_agree(T, rng, dim):
    a = sample(rng, (2, 3, 4))
    x = T.tensor(a)
    expected = np_softmax(a, dim)
    for y in (x.softmax(dim), T.softmax(x, dim), functional(T).softmax(x, dim),
              T.softmax(x, dim=dim), x.softmax(dim=dim)):
        np.testing.assert_allclose(to_np(y), expected, rtol=1e-14)


def test_log_softmax_values_and_gradient(T, rng):
    a = sample(rng, (3, 4))
    x = leaf(T, a)
    y = functional(T).log_softmax(x, 0)
    np.testing.assert_allclose(to_np(y), np_log_softmax(a, 0), rtol=1e-14)
    g = sample(rng, (3, 4))
    y.backward(T.tensor(g))
    np.testing.assert_allclose(to_np(x.grad), g - np_softmax(a, 0) * g.sum(0, keepdims=True),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(to_np(T.log_softmax(x, -1)), np_log_softmax(a, -1), rtol=1e-14)


@pytest.mark.parametrize("dim,keepdim", [(1, False), (-1, True), ((0, 2), False), ([0, 1], True)])
def test_logsumexp_values_and_gradient(T, rng, dim, keepdim):
    a = sample(rng, (2, 3, 4))
    x = leaf(T, a)
    y = x.logsumexp(dim, keepdim=keepdim)
    axis = dim if isinstance(dim, int) else tuple(dim)
    expected = np_logsumexp(a, axis, keepdim)
    np.testing.assert_allclose(to_np(y), expected, rtol=1e-14)
    y.sum().backward()
    full = np_logsumexp(a, axis, True)
    np.testing.assert_allclose(to_np(x.grad), np.exp(a - full), rtol=1e-12)
    np.testing.assert_allclose(to_np(T.logsumexp(x, dim, keepdim)), expected, rtol=1e-14)


def test_large_inputs_do_not_overflow(T):
    x = T.tensor([[1000.0, 0.0], [-1000.0, -1001.0]], dtype=T.float64)
    np.testing.assert_allclose(to_np(x.softmax(1)), [[1, 0], [1 / (1 + math.e**-1),
                                                              1 / (1 + math.e)]], rtol=1e-14)
    np.testing.assert_allclose(to_np(x.log_softmax(1)),
                               [[0, -1000], [-math.log1p(math.e**-1), -1 - math.log1p(math.e**-1)]],
                               rtol=1e-14)
    np.testing.assert_allclose(to_np(x.logsumexp(1)),
                               [1000, -1000 + math.log1p(math.e**-1)], rtol=1e-14)


def test_infinities_follow_torch(T):
    inf = math.inf
    np.testing.assert_array_equal(to_np(T.tensor([-inf, 0.0]).softmax(0)), [0, 1])
    np.testing.assert_array_equal(to_np(T.tensor([-inf, 1.0]).log_softmax(0)), [-inf, 0])
    assert np.isnan(to_np(T.tensor([-inf, -inf]).softmax(0))).all()
    assert np.isnan(to_np(T.tensor([inf, 1.0]).softmax(0))).all()
    # logsumexp keeps an infinite maximum instead of turning it into NaN.
    assert T.tensor([inf, 1.0]).logsumexp(0).item() == inf
    assert T.tensor([-inf, -inf]).logsumexp(0).item() == -inf


def test_zero_dim_and_empty_inputs(T):
    s = T.tensor(2.0, requires_grad=True)
    y = s.softmax(0)
    assert y.item() == 1.0 and y.shape == ()
    y.backward()
    assert s.grad.item() == 0.0
    assert s.logsumexp(-1, keepdim=True).item() == 2.0
    assert s.log_softmax(0).item() == 0.0
    assert tuple(T.ones(0, 3).softmax(0).shape) == (0, 3)
    np.testing.assert_array_equal(to_np(T.ones(0, 3).logsumexp(0)), [-math.inf] * 3)


def test_softmax_dtype_converts_first(T, rng):
    x = leaf(T, sample(rng, (2, 3), dtype=np.float32))
    y = x.softmax(1, dtype=T.float64)
    assert y.dtype == T.float64
    assert type(y.grad_fn.next_functions[0][0]).__name__ == "ToCopyBackward0"
    y.sum().backward()
    assert x.grad.dtype == T.float32
    z = functional(T).log_softmax(x, 1, dtype=T.float64)
    np.testing.assert_allclose(to_np(z), np_log_softmax(to_np(x).astype(np.float64), 1),
                               rtol=1e-14)
    # Converting to the dtype the input already has records nothing.
    w = leaf(T, sample(rng, (2, 3)))
    assert w.softmax(1, dtype=T.float64).grad_fn.next_functions[0][0].variable is w


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_results_and_gradients_are_contiguous_for_a_transposed_input(T, rng, fn):
    x = leaf(T, sample(rng, (3, 4))).mT
    for dim in (0, 1):
        y = getattr(x, fn)(dim)
        assert y.stride() == (3, 1)
        with T.no_grad():
            y.view(-1)  # a view needs the contiguous layout
        (gx,) = T.autograd.grad(y, x, T.ones(3, 4, dtype=T.float64).mT, create_graph=True)
        assert gx.stride() == (3, 1)


def test_float32_and_float16_keep_their_dtype(T, rng):
    a = sample(rng, (3, 4), dtype=np.float32)
    y = T.tensor(a).softmax(1)
    assert y.dtype == T.float32
    np.testing.assert_allclose(to_np(y), np_softmax(a.astype(np.float64), 1), rtol=1e-6)
    h = T.tensor(a.astype(np.float16)).log_softmax(1)
    assert h.dtype == T.float16
    np.testing.assert_allclose(to_np(h), np_log_softmax(a.astype(np.float64), 1), atol=2e-3)


def test_logsumexp_of_integers_is_default_float(T):
    y = T.tensor([1, 2, 3]).logsumexp(0)
    assert y.dtype == T.float32
    assert abs(y.item() - np_logsumexp(np.array([1.0, 2, 3]), 0)) < 1e-6


# ---------------------------------------------------------------------------------- linear
@pytest.mark.parametrize("x_shape", [(4, 3), (2, 4, 3), (3,), (2, 2, 2, 3)])
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "nobias"])
def test_linear_values_and_gradients(T, rng, x_shape, with_bias):
    a, wa, ba = sample(rng, x_shape), sample(rng, (5, 3)), sample(rng, (5,))
    x, w, b = leaf(T, a), leaf(T, wa), leaf(T, ba)
    y = functional(T).linear(x, w, b if with_bias else None)
    expected = a @ wa.T + (ba if with_bias else 0)
    np.testing.assert_allclose(to_np(y), expected, rtol=1e-13)
    g = sample(rng, expected.shape)
    y.backward(T.tensor(g))
    g2, a2 = g.reshape(-1, 5), a.reshape(-1, 3)
    np.testing.assert_allclose(to_np(x.grad), (g2 @ wa).reshape(x_shape), rtol=1e-12)
    np.testing.assert_allclose(to_np(w.grad), g2.T @ a2, rtol=1e-12)
    if with_bias:
        np.testing.assert_allclose(to_np(b.grad), g2.sum(0), rtol=1e-12)
    else:
        assert b.grad is None


def test_addmm_scales_and_broadcasts(T, rng):
    ba, a, ma = sample(rng, (4,)), sample(rng, (2, 3)), sample(rng, (3, 4))
    b, x, m = leaf(T, ba), leaf(T, a), leaf(T, ma)
    y = T.addmm(b, x, m, beta=0.5, alpha=2)
    np.testing.assert_allclose(to_np(y), 0.5 * ba + 2 * a @ ma, rtol=1e-14)
    np.testing.assert_allclose(to_np(b.addmm(x, m)), ba + a @ ma, rtol=1e-14)
    g = sample(rng, (2, 4))
    y.backward(T.tensor(g))
    np.testing.assert_allclose(to_np(b.grad), 0.5 * g.sum(0), rtol=1e-14)
    np.testing.assert_allclose(to_np(x.grad), 2 * g @ ma.T, rtol=1e-14)
    np.testing.assert_allclose(to_np(m.grad), 2 * a.T @ g, rtol=1e-14)


def test_addmm_beta_zero_ignores_the_bias(T):
    y = T.addmm(T.tensor([math.nan, math.nan]), T.ones(2, 3), T.ones(3, 2), beta=0)
    np.testing.assert_array_equal(to_np(y), np.full((2, 2), 3.0))


def test_addmm_of_integers_is_not_recorded(T):
    y = T.addmm(T.ones(2, dtype=T.int64), T.ones(2, 3, dtype=T.int64),
                T.ones(3, 2, dtype=T.int64))
    assert y.dtype == T.int64 and y.grad_fn is None
    np.testing.assert_array_equal(to_np(y), np.full((2, 2), 4))


def test_matrix_gradients_keep_the_matrices_layout(T, rng):
    """addmm makes a transposed matrix's gradient transposed too, as torch does: the
    gradient of linear's ``weight.t()`` then reaches the weight row-major, without a copy."""
    w, b = leaf(T, sample(rng, (5, 3))), leaf(T, sample(rng, (5,)))
    x = leaf(T, sample(rng, (4, 3)))
    wt = w.t()
    gw, gx = T.autograd.grad(T.addmm(b, x, wt).sum(), [wt, x])
    assert gw.stride() == (1, 3) and gx.stride() == (3, 1)
    np.testing.assert_allclose(to_np(gw), to_np(x).T @ np.ones((4, 5)), rtol=1e-14)
    xt = leaf(T, sample(rng, (3, 4))).t()
    gx, = T.autograd.grad(T.addmm(b, xt, wt).sum(), [xt])
    assert gx.stride() == (1, 4)
    np.testing.assert_allclose(to_np(gx), np.ones((4, 5)) @ to_np(w), rtol=1e-14)


# ---------------------------------------------------------------------------------- losses
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("ignore_index", [-100, 2, 1])
def test_nll_loss_matches_numpy(T, rng, reduction, weighted, ignore_index):
    lp = np_log_softmax(sample(rng, (4, 3)), 1)
    x = leaf(T, lp)
    weight = CLASS_WEIGHTS if weighted else None
    loss = functional(T).nll_loss(x, T.tensor(TARGETS), T.tensor(weight) if weighted else None,
                                  ignore_index=ignore_index, reduction=reduction)
    expected = np_nll(lp, TARGETS, weight, ignore_index, reduction)
    np.testing.assert_allclose(to_np(loss), expected, rtol=1e-14)
    loss.sum().backward()
    w = np.ones(3) if weight is None else weight
    keep = TARGETS != ignore_index
    grad = -onehot(TARGETS, 3) * w[TARGETS][:, None] * keep[:, None]
    if reduction == "mean":
        grad = grad / (w[TARGETS] * keep).sum()
    np.testing.assert_allclose(to_np(x.grad), grad, rtol=1e-14)


def test_nll_loss_of_one_sample(T, rng):
    lp = np_log_softmax(sample(rng, (3,)), 0)
    x = leaf(T, lp)
    F = functional(T)
    for target in (T.tensor(1), T.tensor([1])):
        for reduction in ("mean", "sum", "none"):
            loss = F.nll_loss(x, target, reduction=reduction)
            assert loss.shape == ()
            assert loss.item() == -lp[1]
    F.nll_loss(x, T.tensor(1), weight=T.tensor(CLASS_WEIGHTS), reduction="sum").backward()
    np.testing.assert_array_equal(to_np(x.grad), [0, -2.0, 0])


def test_nll_loss_of_one_sample_is_plus_zero_where_a_batch_gives_minus_zero(T):
    F = functional(T)
    zero = T.zeros(1, dtype=T.float64)
    for reduction in ("none", "sum", "mean"):
        for weight in (None, T.ones(1, dtype=T.float64)):
            one = F.nll_loss(zero, T.tensor(0), weight, reduction=reduction)
            assert math.copysign(1, one.item()) == 1
        batch = F.nll_loss(zero[None], T.tensor([0]), reduction=reduction)
        assert math.copysign(1, batch.reshape(-1)[0].item()) == (-1 if reduction == "none" else 1)
    assert T.rsqrt(F.cross_entropy(-zero, T.tensor(0), reduction="none")).item() == math.inf


def test_uint8_targets_and_ignored_out_of_range_targets(T, rng):
    lp = np_log_softmax(sample(rng, (4, 3)), 1)
    F = functional(T)
    loss = F.nll_loss(T.tensor(lp), T.tensor(TARGETS.astype(np.uint8)))
    np.testing.assert_allclose(to_np(loss), np_nll(lp, TARGETS), rtol=1e-14)
    # A target equal to ignore_index needs no class of its own.
    targets = np.array([0, 7, 1, 7])
    loss = F.nll_loss(T.tensor(lp), T.tensor(targets), ignore_index=7)
    np.testing.assert_allclose(to_np(loss), np_nll(lp, targets, ignore_index=7), rtol=1e-14)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_every_target_ignored(T, rng, reduction):
    """torch: the mean of nothing is NaN, the sum 0, and no gradient reaches the input."""
    x = leaf(T, sample(rng, (4, 3)))
    F = functional(T)
    ones = T.tensor([1, 1, 1, 1])
    for loss in (F.nll_loss(x, ones, ignore_index=1, reduction=reduction),
                 F.cross_entropy(x, ones, ignore_index=1, reduction=reduction),
                 F.cross_entropy(x, ones, ignore_index=1, reduction=reduction,
                                 label_smoothing=0.2),
                 F.cross_entropy(x, ones, weight=T.tensor(CLASS_WEIGHTS), ignore_index=1,
                                 reduction=reduction, label_smoothing=0.2)):
        values = to_np(loss)
        if reduction == "mean":
            assert np.isnan(values)
        else:
            np.testing.assert_array_equal(values, np.zeros(values.shape))
        x.grad = None
        loss.sum().backward()
        np.testing.assert_array_equal(to_np(x.grad), np.zeros((4, 3)))
    assert F.nll_loss(x, ones, ignore_index=1).grad_fn._saved_total_weight.item() == 0


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_is_log_softmax_then_nll(T, rng, reduction):
    a = sample(rng, (4, 3))
    x = leaf(T, a)
    loss = functional(T).cross_entropy(x, T.tensor(TARGETS), reduction=reduction)
    np.testing.assert_allclose(to_np(loss), np_nll(np_log_softmax(a, 1), TARGETS,
                                                   reduction=reduction), rtol=1e-14)
    loss.sum().backward()
    grad = np_softmax(a, 1) - onehot(TARGETS, 3)
    np.testing.assert_allclose(to_np(x.grad), grad / 4 if reduction == "mean" else grad,
                               rtol=1e-13, atol=1e-15)


def test_cross_entropy_label_smoothing_closed_form(T, rng):
    """Smoothing ls mixes the one-hot target with the uniform one: the gradient is
    (softmax - q) / N with q = (1 - ls) * onehot + ls / C."""
    a = sample(rng, (4, 3))
    x = leaf(T, a)
    loss = functional(T).cross_entropy(x, T.tensor(TARGETS), label_smoothing=0.3)
    q = 0.7 * onehot(TARGETS, 3) + 0.1
    np.testing.assert_allclose(to_np(loss), -(q * np_log_softmax(a, 1)).sum() / 4, rtol=1e-14)
    loss.backward()
    np.testing.assert_allclose(to_np(x.grad), (np_softmax(a, 1) - q) / 4, rtol=1e-13,
                               atol=1e-15)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_label_smoothing_weighted_and_ignored(T, rng, reduction):
    a = sample(rng, (4, 3))
    lp = np_log_softmax(a, 1)
    loss = functional(T).cross_entropy(T.tensor(a), T.tensor(TARGETS),
                                       weight=T.tensor(CLASS_WEIGHTS), ignore_index=1,
                                       reduction=reduction, label_smoothing=0.2)
    keep = TARGETS != 1
    smooth = -(lp * CLASS_WEIGHTS).sum(1) * keep
    nll = np_nll(lp, TARGETS, CLASS_WEIGHTS, 1, reduction)
    if reduction == "mean":
        smooth = smooth.sum() / (CLASS_WEIGHTS[TARGETS] * keep).sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    np.testing.assert_allclose(to_np(loss), 0.8 * nll + 0.2 / 3 * smooth, rtol=1e-14)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_with_class_probabilities(T, rng, reduction):
    a = sample(rng, (4, 3))
    p = np_softmax(sample(rng, (4, 3)), 1)
    x, target = leaf(T, a), leaf(T, p)
    loss = functional(T).cross_entropy(x, target, weight=T.tensor(CLASS_WEIGHTS),
                                       reduction=reduction, label_smoothing=0.3)
    q = 0.7 * p + 0.1
    terms = -(np_log_softmax(a, 1) * q * CLASS_WEIGHTS)
    expected = {"none": terms.sum(1), "sum": terms.sum(), "mean": terms.sum() / 4}[reduction]
    np.testing.assert_allclose(to_np(loss), expected, rtol=1e-14)
    loss.sum().backward()
    assert target.grad is not None
    scale = 0.25 if reduction == "mean" else 1.0
    np.testing.assert_allclose(to_np(target.grad),
                               -0.7 * np_log_softmax(a, 1) * CLASS_WEIGHTS * scale, rtol=1e-13)


def test_cross_entropy_of_one_sample(T, rng):
    a = sample(rng, (3,))
    F = functional(T)
    loss = F.cross_entropy(T.tensor(a), T.tensor(2))
    np.testing.assert_allclose(to_np(loss), -np_log_softmax(a, 0)[2], rtol=1e-14)
    p = np_softmax(sample(rng, (3,)), 0)
    loss = F.cross_entropy(T.tensor(a), T.tensor(p))
    np.testing.assert_allclose(to_np(loss), -(p * np_log_softmax(a, 0)).sum(), rtol=1e-14)


def test_cross_entropy_of_an_empty_batch_is_nan(T):
    F = functional(T)
    x = T.ones(0, 3, dtype=T.float64)
    assert np.isnan(F.cross_entropy(x, T.ones(0, dtype=T.int64)).item())
    assert F.cross_entropy(x, T.ones(0, dtype=T.int64), reduction="sum").item() == 0
    assert np.isnan(F.cross_entropy(x, T.ones(0, 3, dtype=T.float64)).item())


def test_negative_label_smoothing_means_none(T, rng):
    a = sample(rng, (4, 3))
    loss = functional(T).cross_entropy(leaf(T, a), T.tensor(TARGETS), label_smoothing=-0.1)
    assert type(loss.grad_fn).__name__ == "NllLossBackward0"
    np.testing.assert_allclose(to_np(loss), np_nll(np_log_softmax(a, 1), TARGETS), rtol=1e-14)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_matches_numpy(T, rng, reduction):
    a, b = sample(rng, (3, 4)), sample(rng, (3, 4))
    x, y = leaf(T, a), leaf(T, b)
    loss = functional(T).mse_loss(x, y, reduction=reduction)
    sq = (a - b) ** 2
    np.testing.assert_allclose(to_np(loss), {"none": sq, "sum": sq.sum(), "mean": sq.mean()}[
        reduction], rtol=1e-14)
    loss.sum().backward()
    grad = 2 * (a - b) / (12 if reduction == "mean" else 1)
    np.testing.assert_allclose(to_np(x.grad), grad, rtol=1e-14)
    np.testing.assert_allclose(to_np(y.grad), -grad, rtol=1e-14)


def test_mse_loss_broadcast_warns_like_torch(T, rng):
    a, b = sample(rng, (3,)), sample(rng, (2, 3))
    x = leaf(T, a)
    with pytest.warns(UserWarning, match="Using a target size .* that is different to the input "
                                         "size"):
        loss = functional(T).mse_loss(x, T.tensor(b))
    np.testing.assert_allclose(to_np(loss), ((a - b) ** 2).mean(), rtol=1e-14)
    assert type(loss.grad_fn.next_functions[0][0]).__name__ == "ExpandBackward0"
    loss.backward()
    np.testing.assert_allclose(to_np(x.grad), (2 * (a - b) / 6).sum(0), rtol=1e-14)


def test_mse_loss_promotes_dtypes(T, rng):
    x = leaf(T, sample(rng, (3,), dtype=np.float32))
    loss = functional(T).mse_loss(x, T.tensor(sample(rng, (3,))))
    assert loss.dtype == T.float64
    loss.backward()
    assert x.grad.dtype == T.float32
    assert functional(T).mse_loss(T.ones(3), T.ones(3, dtype=T.int64)).dtype == T.float32


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_mse_loss_of_empty_tensors_has_an_empty_gradient(T, reduction):
    a = T.zeros(0, 2, requires_grad=True)
    functional(T).mse_loss(a, T.zeros(0, 2), reduction=reduction).backward()
    assert tuple(a.grad.shape) == (0, 2)


def test_mse_loss_of_a_bool_input_sends_the_gradient_to_the_float_target(T):
    x = T.tensor([1.75, 2.0], requires_grad=True)
    functional(T).mse_loss(T.tensor([True, False]), x, reduction="sum").backward()
    np.testing.assert_allclose(to_np(x.grad), [1.5, 4.0])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_weighted_mse_loss(T, rng, reduction):
    a, b, w = sample(rng, (3, 4)), sample(rng, (3, 4)), sample(rng, (3, 4), POS)
    loss = functional(T).mse_loss(T.tensor(a), T.tensor(b), reduction=reduction,
                                  weight=T.tensor(w))
    ws = (a - b) ** 2 * w
    expected = {"none": ws, "sum": ws.sum(), "mean": ws.sum() / w.sum()}[reduction]
    np.testing.assert_allclose(to_np(loss), expected, rtol=1e-14)


def test_legacy_size_average_and_reduce(T, rng):
    a, b = sample(rng, (3, 4)), sample(rng, (3, 4))
    F = functional(T)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated, "
                                         "please use reduction='sum' instead"):
        loss = F.mse_loss(T.tensor(a), T.tensor(b), size_average=False)
    np.testing.assert_allclose(to_np(loss), ((a - b) ** 2).sum(), rtol=1e-14)
    with pytest.warns(UserWarning, match="reduction='none'"):
        loss = F.nll_loss(T.tensor(a[:, :3]), T.tensor([0, 1, 2]), reduce=False)
    assert tuple(loss.shape) == (3,)
    with pytest.warns(UserWarning, match="reduction='sum'"):
        loss = F.cross_entropy(T.tensor(a), T.tensor([0, 1, 2]), size_average=False)
    np.testing.assert_allclose(to_np(loss), np_nll(np_log_softmax(a, 1), np.array([0, 1, 2]),
                                                   reduction="sum"), rtol=1e-14)


def test_implicit_softmax_dim_warns_and_guesses(T, rng):
    F = functional(T)
    a2, a3 = sample(rng, (2, 3)), sample(rng, (2, 3, 4))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been "
                                         "deprecated"):
        y = F.softmax(T.tensor(a2))
    np.testing.assert_allclose(to_np(y), np_softmax(a2, 1), rtol=1e-14)
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax"):
        y = F.log_softmax(T.tensor(a3))
    np.testing.assert_allclose(to_np(y), np_log_softmax(a3, 0), rtol=1e-14)


def test_activations(T, rng):
    a = sample(rng, (2, 3))
    F = functional(T)
    x = T.tensor(a)
    np.testing.assert_allclose(to_np(F.relu(x)), np.maximum(a, 0))
    np.testing.assert_allclose(to_np(F.sigmoid(x)), 1 / (1 + np.exp(-a)), rtol=1e-14)
    np.testing.assert_allclose(to_np(F.tanh(x)), np.tanh(a), rtol=1e-14)
    w = leaf(T, a)
    assert type(F.tanh(w).grad_fn).__name__ == "TanhBackward0"
    assert type(F.relu(w).grad_fn).__name__ == "ReluBackward0"


def test_relu_in_place(T, rng):
    a = sample(rng, (2, 3))
    x = leaf(T, a)
    h = x * 1
    r = functional(T).relu(h, inplace=True)
    assert r is h and h._version == 1
    assert type(r.grad_fn).__name__ == "ReluBackward0"
    np.testing.assert_array_equal(to_np(r), np.maximum(a, 0))
    r.sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), (a > 0).astype(np.float64))


def test_no_graph_without_grad_mode(T, rng):
    F = functional(T)
    x = leaf(T, sample(rng, (4, 3)))
    weight = T.tensor(CLASS_WEIGHTS, requires_grad=True)
    with T.no_grad():
        loss = F.cross_entropy(x, T.tensor(TARGETS), weight=weight)
        assert loss.grad_fn is None and not loss.requires_grad
        assert F.linear(x, leaf(T, sample(rng, (2, 3)))).grad_fn is None
        assert x.softmax(1).grad_fn is None
    # The same weight is refused while grad mode is on (see the error table).
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument "
                                           "'weight'"):
        F.cross_entropy(x.detach(), T.tensor(TARGETS), weight=weight)


# ---------------------------------------------------------------------------------- graphs
@dataclass(frozen=True)
class Is:
    """The saved tensor is this very input object."""

    name: str


@dataclass(frozen=True)
class Result:
    """The saved tensor equals the output but is another object."""


@dataclass(frozen=True)
class Scalar:
    """The saved tensor is 0-d, of this dtype, holding this value."""

    value: float
    dtype: str


@dataclass(frozen=True)
class Like:
    """The saved tensor holds these values (a NumPy function of the inputs)."""

    values: object


RESULT = Result()


def graph_inputs(T, rng):
    return SimpleNamespace(
        x=leaf(T, sample(rng, (4, 3))),
        xf=leaf(T, sample(rng, (4, 3), dtype=np.float32)),
        x1=leaf(T, sample(rng, (3,))),
        m=leaf(T, sample(rng, (5, 3))),
        b=leaf(T, sample(rng, (5,))),
        y=leaf(T, sample(rng, (4, 3)), requires_grad=False),
        t=T.tensor(TARGETS),
        t0=T.tensor(1),
        w=T.tensor(CLASS_WEIGHTS),
    )


def node(id_, fn, name, **saved):
    """A table row: ``fn(T, F, inputs)``, the node name and every ``_saved_<key>`` field."""
    return pytest.param(fn, name, {f"_saved_{k}": v for k, v in saved.items()}, id=id_)


def addmm_saved(mat1, mat2, alpha=1, beta=1, strides1=(3, 1), strides2=(1, 3)):
    return dict(alpha=alpha, beta=beta, mat1=mat1, mat1_sym_sizes=(4, 3),
                mat1_sym_strides=strides1, mat2=mat2, mat2_sym_sizes=(3, 5),
                mat2_sym_strides=strides2)


M_T = Like(lambda i: to_np(i.m).T)
X_VALUES = Like(lambda i: to_np(i.x))
LOG_P = Like(lambda i: np_log_softmax(to_np(i.x), 1))


def nll_saved(self=None, target=None, weight=None, total=4.0, dtype="float64", reduction=1,
              ignore_index=NEG100):
    return dict(self=self or Is("x"), target=target or Is("t"), weight=weight,
                total_weight=Scalar(total, dtype), reduction=reduction, ignore_index=ignore_index)


NODE_CASES = [
    node("x.softmax_1", lambda T, F, i: i.x.softmax(1), "SoftmaxBackward0", result=RESULT, dim=1),
    node("T.softmax_-1", lambda T, F, i: T.softmax(i.x, -1), "SoftmaxBackward0", result=RESULT,
         dim=NEG1),
    node("F.softmax_0", lambda T, F, i: F.softmax(i.x, 0), "SoftmaxBackward0", result=RESULT,
         dim=0),
    node("x.log_softmax_1", lambda T, F, i: i.x.log_softmax(1), "LogSoftmaxBackward0",
         result=RESULT, dim=1),
    node("F.log_softmax_-1", lambda T, F, i: F.log_softmax(i.x, -1), "LogSoftmaxBackward0",
         result=RESULT, dim=NEG1),
    node("x.logsumexp_1", lambda T, F, i: i.x.logsumexp(1), "LogsumexpBackward0",
         self=Is("x"), result=RESULT, dim=(1,), keepdim=False),
    node("T.logsumexp_(0,-1)_keepdim", lambda T, F, i: T.logsumexp(i.x, (0, -1), keepdim=True),
         "LogsumexpBackward0", self=Is("x"), result=RESULT, dim=(0, NEG1), keepdim=True),
    node("F.linear_bias", lambda T, F, i: F.linear(i.x, i.m, i.b), "AddmmBackward0",
         **addmm_saved(Is("x"), M_T)),
    node("T.addmm_beta_alpha", lambda T, F, i: T.addmm(i.b, i.x, i.m.t(), beta=0.5, alpha=2),
         "AddmmBackward0", **addmm_saved(Is("x"), M_T, alpha=2, beta=0.5)),
    node("F.linear_input_no_grad", lambda T, F, i: F.linear(i.y, i.m, i.b), "AddmmBackward0",
         **addmm_saved(Is("y"), None, strides1=())),
    node("F.linear_weight_no_grad", lambda T, F, i: F.linear(i.x, i.m.detach(), i.b),
         "AddmmBackward0", **addmm_saved(None, M_T, strides2=())),
    node("F.linear_no_bias", lambda T, F, i: F.linear(i.x, i.m), "MmBackward0", self=Is("x"),
         self_sym_sizes=(4, 3), self_sym_strides=(3, 1), mat2=M_T, mat2_sym_sizes=(3, 5),
         mat2_sym_strides=(1, 3)),
    node("F.nll_loss", lambda T, F, i: F.nll_loss(i.x, i.t), "NllLossBackward0", **nll_saved()),
    node("F.nll_loss_sum", lambda T, F, i: F.nll_loss(i.x, i.t, reduction="sum"),
         "NllLossBackward0", **nll_saved(reduction=2)),
    node("F.nll_loss_none", lambda T, F, i: F.nll_loss(i.x, i.t, reduction="none"),
         "NllLossBackward0", **nll_saved(total=0.0, reduction=0)),
    node("F.nll_loss_weight", lambda T, F, i: F.nll_loss(i.x, i.t, i.w), "NllLossBackward0",
         **nll_saved(weight=Is("w"), total=5.5)),
    node("F.nll_loss_ignore_2", lambda T, F, i: F.nll_loss(i.x, i.t, ignore_index=2),
         "NllLossBackward0", **nll_saved(total=2.0, ignore_index=2)),
    node("F.nll_loss_float32", lambda T, F, i: F.nll_loss(i.xf, i.t), "NllLossBackward0",
         **nll_saved(self=Is("xf"), dtype="float32")),
    node("F.nll_loss_1d_none", lambda T, F, i: F.nll_loss(i.x1, i.t0, i.w, reduction="none"),
         "NllLossBackward0", **nll_saved(self=Is("x1"), target=Is("t0"), weight=Is("w"),
                                         total=2.0, reduction=0)),
    node("F.cross_entropy", lambda T, F, i: F.cross_entropy(i.x, i.t), "NllLossBackward0",
         **nll_saved(self=LOG_P)),
    node("F.mse_loss", lambda T, F, i: F.mse_loss(i.x, i.y), "MseLossBackward0", self=Is("x"),
         target=Is("y"), reduction=1),
    node("F.mse_loss_sum", lambda T, F, i: F.mse_loss(i.x, i.y, reduction="sum"),
         "MseLossBackward0", self=Is("x"), target=Is("y"), reduction=2),
    node("F.mse_loss_none", lambda T, F, i: F.mse_loss(i.y, i.x, reduction="none"),
         "MseLossBackward0", self=Is("y"), target=Is("x"), reduction=0),
]


def check_saved(T, value, expected, inputs, out):
    if expected is None:
        assert value is None
    elif isinstance(expected, Is):
        assert value is getattr(inputs, expected.name)
    elif isinstance(expected, Result):
        assert value is not out
        np.testing.assert_array_equal(to_np(value), to_np(out))
    elif isinstance(expected, Scalar):
        assert value.shape == () and value.dtype == getattr(T, expected.dtype)
        assert value.item() == expected.value
    elif isinstance(expected, Like):
        np.testing.assert_allclose(to_np(value), expected.values(inputs), rtol=1e-14)
    else:
        assert type(value) is type(expected) and value == expected


@pytest.mark.parametrize("fn,name,saved", NODE_CASES)
def test_node_name_and_saved_fields(T, rng, fn, name, saved):
    inputs = graph_inputs(T, rng)
    out = fn(T, functional(T), inputs)
    grad_fn = out.grad_fn
    assert type(grad_fn).__name__ == name
    assert sorted(a for a in dir(grad_fn) if a.startswith("_saved_")) == sorted(saved)
    for attr, expected in saved.items():
        check_saved(T, getattr(grad_fn, attr), expected, inputs, out)


def graph(fn) -> str:
    """The graph below ``fn`` as text: ``Name(child, ...)``, '-' for an edge without a node."""
    if fn is None:
        return "-"
    name = type(fn).__name__.replace("Backward0", "").replace("AccumulateGrad", "Acc")
    children = [graph(f) for f, _ in fn.next_functions]
    return name + (f"({', '.join(children)})" if children else "")


GRAPH_CASES = [
    ("2d_bias", (4, 3), True, "Addmm(Acc, Acc, T(Acc))"),
    ("2d_no_bias", (4, 3), False, "Mm(Acc, T(Acc))"),
    ("3d_bias", (2, 4, 3), True, "View(Addmm(Acc, View(Acc), T(Acc)))"),
    ("3d_no_bias", (2, 4, 3), False, "UnsafeView(Mm(View(Acc), T(Acc)))"),
    ("1d_bias", (3,), True, "View(Addmm(Acc, View(Acc), T(Acc)))"),
    ("1d_no_bias", (3,), False, "SqueezeBackward4(Mm(Unsqueeze(Acc), T(Acc)))"),
    ("4d_bias", (2, 2, 2, 3), True, "View(Addmm(Acc, View(Acc), T(Acc)))"),
]


@pytest.mark.parametrize("x_shape,with_bias,expected",
                         [pytest.param(*c[1:], id=c[0]) for c in GRAPH_CASES])
def test_linear_builds_torchs_graph(T, rng, x_shape, with_bias, expected):
    x, w, b = leaf(T, sample(rng, x_shape)), leaf(T, sample(rng, (5, 3))), leaf(T, sample(rng,
                                                                                         (5,)))
    y = functional(T).linear(x, w, b if with_bias else None)
    assert graph(y.grad_fn) == expected


def test_linear_of_non_contiguous_input_matmuls_then_adds(T, rng):
    x = leaf(T, sample(rng, (4, 2, 3)))
    w, b = leaf(T, sample(rng, (5, 3))), leaf(T, sample(rng, (5,)))
    y = functional(T).linear(x.transpose(0, 1), w, b)
    assert graph(y.grad_fn) == "Add(UnsafeView(Mm(UnsafeView(Clone(Transpose(Acc))), T(Acc))), Acc)"
    # A bias that is not 1-D also takes the matmul path.
    y = functional(T).linear(x, w, leaf(T, sample(rng, (2, 5))))
    assert graph(y.grad_fn) == "Add(UnsafeView(Mm(View(Acc), T(Acc))), Acc)"
    assert y.grad_fn.next_functions[0][0]._saved_self_sym_sizes == (8, 5)


def test_linear_with_a_vector_weight(T, rng):
    a, wa = sample(rng, (2, 4, 3)), sample(rng, (3,))
    x, w = leaf(T, a), leaf(T, wa)
    y = functional(T).linear(x, w)
    np.testing.assert_allclose(to_np(y), a @ wa, rtol=1e-14)
    assert graph(y.grad_fn) == "UnsafeView(Mv(View(Acc), T(Acc)))"


def test_softmax_family_graphs(T, rng):
    x = leaf(T, sample(rng, (4, 3)))
    F = functional(T)
    assert graph(F.cross_entropy(x, T.tensor(TARGETS)).grad_fn) == "NllLoss(LogSoftmax(Acc))"
    p = T.tensor(np_softmax(sample(rng, (4, 3)), 1))
    assert graph(F.cross_entropy(x, p, reduction="sum").grad_fn) == "Neg(Sum(Mul(LogSoftmax(Acc)"\
        ", -)))"
    assert graph(F.cross_entropy(x, p, reduction="none").grad_fn) == "Neg(SumBackward1(Mul(" \
        "LogSoftmax(Acc), -)))"


def test_label_smoothing_graph(T, rng):
    """torch's composite: (1 - ls) * nll + ls / C * smooth, with the ignored samples' smooth
    terms masked. torch records its C++ scalar product as MulBackward1, ext as MulBackward0."""
    x = leaf(T, sample(rng, (4, 3)))
    loss = functional(T).cross_entropy(x, T.tensor(TARGETS), label_smoothing=0.25)
    mul = "MulBackward1" if T.__name__ == "torch" else "MulBackward0"
    root = loss.grad_fn
    assert type(root).__name__ == "AddBackward0"
    nll_side, smooth_side = root.next_functions[0][0], root.next_functions[1][0]
    assert type(nll_side).__name__ == mul
    assert graph(nll_side.next_functions[0][0]) == "NllLoss(LogSoftmax(Acc))"
    assert type(smooth_side).__name__ == mul
    div = smooth_side.next_functions[0][0]
    assert graph(div) == "Div(Sum(MaskedFill(Neg(SumBackward1(LogSoftmax(Acc))))), -)"
    assert div._saved_other.dtype == T.int64 and div._saved_other.item() == 4
    masked = div.next_functions[0][0].next_functions[0][0]
    np.testing.assert_array_equal(to_np(masked._saved_mask), [False] * 4)


# ---------------------------------------------------------------------------------- gradcheck
def _targets(T):
    return T.tensor(TARGETS)


GRADCHECK_CASES = [
    ("softmax_1", lambda T, F, x: x.softmax(1), [(3, 4)]),
    ("softmax_0_3d", lambda T, F, x: T.softmax(x, 0), [(2, 3, 2)]),
    ("softmax_0d", lambda T, F, x: x.softmax(0), [()]),
    ("log_softmax_-1", lambda T, F, x: x.log_softmax(-1), [(3, 4)]),
    ("log_softmax_0", lambda T, F, x: F.log_softmax(x, 0), [(3, 4)]),
    ("logsumexp_1", lambda T, F, x: x.logsumexp(1), [(3, 4)]),
    ("logsumexp_(0,2)_keepdim", lambda T, F, x: x.logsumexp((0, 2), keepdim=True), [(2, 3, 2)]),
    ("logsumexp_0d", lambda T, F, x: x.logsumexp(0), [()]),
    ("addmm", lambda T, F, b, x, m: T.addmm(b, x, m), [(4,), (2, 3), (3, 4)]),
    ("addmm_beta_alpha_2d_bias", lambda T, F, b, x, m: T.addmm(b, x, m, beta=0.5, alpha=-2),
     [(2, 4), (2, 3), (3, 4)]),
    ("addmm_0d_bias", lambda T, F, b, x, m: T.addmm(b, x, m), [(), (2, 3), (3, 4)]),
    ("addmm_transposed", lambda T, F, b, x, m: T.addmm(b, x.t(), m.t()),
     [(4,), (3, 2), (4, 3)]),
    ("linear_2d", lambda T, F, x, w, b: F.linear(x, w, b), [(2, 3), (4, 3), (4,)]),
    ("linear_2d_no_bias", lambda T, F, x, w: F.linear(x, w), [(2, 3), (4, 3)]),
    ("linear_3d", lambda T, F, x, w, b: F.linear(x, w, b), [(2, 2, 3), (4, 3), (4,)]),
    ("linear_3d_no_bias", lambda T, F, x, w: F.linear(x, w), [(2, 2, 3), (4, 3)]),
    ("linear_3d_transposed", lambda T, F, x, w, b: F.linear(x.transpose(0, 1), w, b),
     [(2, 2, 3), (4, 3), (4,)]),
    ("linear_1d", lambda T, F, x, w, b: F.linear(x, w, b), [(3,), (4, 3), (4,)]),
    ("nll_mean", lambda T, F, x: F.nll_loss(x, _targets(T)), [(4, 3)]),
    ("nll_sum_weight", lambda T, F, x: F.nll_loss(x, _targets(T), T.tensor(CLASS_WEIGHTS),
                                                  reduction="sum"), [(4, 3)]),
    ("nll_none_ignore", lambda T, F, x: F.nll_loss(x, _targets(T), ignore_index=2,
                                                   reduction="none"), [(4, 3)]),
    ("nll_mean_weight_ignore", lambda T, F, x: F.nll_loss(x, _targets(T), T.tensor(CLASS_WEIGHTS),
                                                          ignore_index=0), [(4, 3)]),
    ("nll_1d", lambda T, F, x: F.nll_loss(x, T.tensor(2)), [(3,)]),
    ("mse_mean", lambda T, F, x, y: F.mse_loss(x, y), [(3, 4), (3, 4)]),
    ("mse_sum", lambda T, F, x, y: F.mse_loss(x, y, reduction="sum"), [(3, 4), (3, 4)]),
    ("mse_none", lambda T, F, x, y: F.mse_loss(x, y, reduction="none"), [(3, 4), (3, 4)]),
    ("mse_weight", lambda T, F, x, y: F.mse_loss(x, y, weight=T.ones(3, 4, dtype=T.float64) * 2),
     [(3, 4), (3, 4)]),
    ("ce_mean", lambda T, F, x: F.cross_entropy(x, _targets(T)), [(4, 3)]),
    ("ce_sum_weight", lambda T, F, x: F.cross_entropy(x, _targets(T), T.tensor(CLASS_WEIGHTS),
                                                      reduction="sum"), [(4, 3)]),
    ("ce_none_ignore", lambda T, F, x: F.cross_entropy(x, _targets(T), ignore_index=1,
                                                       reduction="none"), [(4, 3)]),
    ("ce_ls_mean", lambda T, F, x: F.cross_entropy(x, _targets(T), label_smoothing=0.2),
     [(4, 3)]),
    ("ce_ls_sum", lambda T, F, x: F.cross_entropy(x, _targets(T), reduction="sum",
                                                  label_smoothing=0.2), [(4, 3)]),
    ("ce_ls_none_ignore", lambda T, F, x: F.cross_entropy(x, _targets(T), ignore_index=2,
                                                          reduction="none", label_smoothing=0.2),
     [(4, 3)]),
    ("ce_ls_weight_ignore", lambda T, F, x: F.cross_entropy(
        x, _targets(T), T.tensor(CLASS_WEIGHTS), ignore_index=0, label_smoothing=0.2), [(4, 3)]),
    ("ce_ls_1d", lambda T, F, x: F.cross_entropy(x, T.tensor(1), label_smoothing=0.3), [(3,)]),
    ("ce_probabilities", lambda T, F, x, p: F.cross_entropy(x, p), [(4, 3), (4, 3)]),
    ("ce_probabilities_none_weight_ls", lambda T, F, x, p: F.cross_entropy(
        x, p, T.tensor(CLASS_WEIGHTS), reduction="none", label_smoothing=0.1), [(4, 3), (4, 3)]),
    ("ce_probabilities_1d_sum", lambda T, F, x, p: F.cross_entropy(x, p, reduction="sum"),
     [(3,), (3,)]),
]


@pytest.mark.parametrize("fn,shapes", [pytest.param(*c[1:], id=c[0]) for c in GRADCHECK_CASES])
def test_gradcheck_and_gradgradcheck(T, rng, fn, shapes):
    F = functional(T)
    inputs = tuple(leaf(T, sample(rng, shape)) for shape in shapes)

    def func(*args):
        return fn(T, F, *args)

    assert T.autograd.gradcheck(func, inputs)
    assert T.autograd.gradgradcheck(func, inputs)


# ---------------------------------------------------------------------------------- errors
def _x(T):
    return T.tensor(np.linspace(-1, 1, 12).reshape(4, 3))


def _float_weight(T, *shape):
    return T.ones(*shape, dtype=T.float64)


ERROR_CASES = [
    ("nll_target_out_of_bounds", lambda T, F: F.nll_loss(_x(T), T.tensor([0, 5, 1, 2])),
     IndexError, "Target 5 is out of bounds."),
    ("nll_first_bad_target_named", lambda T, F: F.nll_loss(_x(T), T.tensor([0, 7, -1, 2])),
     IndexError, "Target 7 is out of bounds."),
    ("nll_negative_target", lambda T, F: F.nll_loss(_x(T), T.tensor([0, -1, 1, 2])),
     IndexError, "Target -1 is out of bounds."),
    ("nll_1d_target_out_of_bounds", lambda T, F: F.nll_loss(T.ones(3), T.tensor(3)),
     IndexError, "Target 3 is out of bounds."),
    ("ce_target_out_of_bounds", lambda T, F: F.cross_entropy(_x(T), T.tensor([0, 3, 1, 2])),
     IndexError, "Target 3 is out of bounds."),
    ("ce_ls_target_out_of_bounds", lambda T, F: F.cross_entropy(
        _x(T), T.tensor([0, 3, 1, 2]), label_smoothing=0.1), IndexError, "Target 3 is out of"),
    ("nll_float_target", lambda T, F: F.nll_loss(_x(T), T.tensor([0.0, 2, 1, 2])),
     RuntimeError, "expected target dtype to be Long or Byte, but got Float"),
    ("nll_int32_target", lambda T, F: F.nll_loss(_x(T), T.tensor([0, 2, 1, 2], dtype=T.int32)),
     RuntimeError, "expected target dtype to be Long or Byte, but got Int"),
    ("nll_batch_mismatch", lambda T, F: F.nll_loss(_x(T), T.tensor([0, 2, 1])),
     ValueError, "Expected input batch_size (4) to match target batch_size (3)."),
    ("nll_0d_target_for_batch", lambda T, F: F.nll_loss(_x(T), T.tensor(2)),
     ValueError, "Expected input batch_size (4) to match target batch_size (0)."),
    ("nll_2d_target", lambda T, F: F.nll_loss(_x(T), T.zeros(4, 1, dtype=T.int64)),
     RuntimeError, "0D or 1D target tensor expected, multi-target not supported"),
    ("nll_0d_input", lambda T, F: F.nll_loss(T.tensor(1.0), T.tensor(0)),
     ValueError, "Expected 1 or more dimensions (got 0)"),
    ("nll_1d_input_long_target", lambda T, F: F.nll_loss(T.ones(3), T.tensor([0, 1])),
     ValueError, "For 1D input, 1D target must have size 1, but got target size: 2"),
    ("nll_weight_size", lambda T, F: F.nll_loss(_x(T), T.tensor(TARGETS),
                                                weight=_float_weight(T, 2)),
     RuntimeError, "weight tensor should be defined either for all 3 classes or no classes but "
                   "got weight tensor of shape: [2]"),
    ("nll_weight_2d", lambda T, F: F.nll_loss(_x(T), T.tensor(TARGETS),
                                              weight=_float_weight(T, 1, 3)),
     RuntimeError, "got weight tensor of shape: [1, 3]"),
    ("nll_weight_dtype", lambda T, F: F.nll_loss(_x(T), T.tensor(TARGETS), weight=T.ones(3)),
     RuntimeError, "expected scalar type Double but found Float"),
    ("nll_weight_requires_grad", lambda T, F: F.nll_loss(
        _x(T), T.tensor(TARGETS), weight=T.ones(3, dtype=T.float64, requires_grad=True)),
     RuntimeError, "The function 'nll_loss_forward' is not differentiable with respect to "
                   "argument 'weight'. This input cannot have requires_grad True."),
    ("nll_integer_input", lambda T, F: F.nll_loss(T.ones(4, 3, dtype=T.int64),
                                                  T.tensor(TARGETS)),
     NotImplementedError, "\"nll_loss_out_frame\" not implemented for 'Long'"),
    ("nll_bad_reduction", lambda T, F: F.nll_loss(_x(T), T.tensor(TARGETS), reduction="avg"),
     ValueError, "avg is not a valid value for reduction"),
    ("nll_input_not_tensor", lambda T, F: F.nll_loss([0.0], T.tensor(TARGETS)),
     TypeError, "nll_loss_nd(): argument 'input' (position 1) must be Tensor, not list"),
    ("ce_bad_reduction", lambda T, F: F.cross_entropy(_x(T), T.tensor(TARGETS), reduction="x"),
     ValueError, "x is not a valid value for reduction"),
    ("ce_target_not_tensor", lambda T, F: F.cross_entropy(_x(T), [0, 1, 1, 2]),
     TypeError, "cross_entropy_loss(): argument 'target' (position 2) must be Tensor, not list"),
    ("ce_label_smoothing_above_1", lambda T, F: F.cross_entropy(
        _x(T), T.tensor(TARGETS), label_smoothing=1.5),
     RuntimeError, "label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
    ("ce_probabilities_label_smoothing_2", lambda T, F: F.cross_entropy(
        _x(T), T.ones(4, 3, dtype=T.float64), label_smoothing=2.0),
     RuntimeError, "label_smoothing must be between 0.0 and 1.0. Got: 2"),
    ("ce_probabilities_integer", lambda T, F: F.cross_entropy(_x(T), T.ones(4, 3, dtype=T.int64)),
     RuntimeError, "Expected floating point type for target with class probabilities, got Long"),
    ("ce_probabilities_ignore_index", lambda T, F: F.cross_entropy(
        _x(T), T.ones(4, 3, dtype=T.float64), ignore_index=1),
     RuntimeError, "ignore_index is not supported for floating point target"),
    ("ce_probabilities_weight_size", lambda T, F: F.cross_entropy(
        _x(T), T.ones(4, 3, dtype=T.float64), weight=_float_weight(T, 2)),
     RuntimeError, "cross_entropy: weight tensor should be defined either for all 3 classes"),
    ("ce_probabilities_wrong_shape", lambda T, F: F.cross_entropy(
        _x(T), T.ones(4, 2, dtype=T.float64)),
     RuntimeError, "0D or 1D target tensor expected, multi-target not supported"),
    ("ce_0d_input", lambda T, F: F.cross_entropy(T.tensor(1.0), T.tensor(0.5)),
     IndexError, "Dimension specified as 1 but tensor has no dimensions"),
    ("ce_integer_input", lambda T, F: F.cross_entropy(T.ones(4, 3, dtype=T.int64),
                                                      T.tensor(TARGETS)),
     NotImplementedError, "\"log_softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    ("mse_bad_reduction", lambda T, F: F.mse_loss(_x(T), _x(T), reduction="avg"),
     ValueError, "avg is not a valid value for reduction"),
    ("mse_weight_bad_reduction", lambda T, F: F.mse_loss(_x(T), _x(T), reduction="avg",
                                                         weight=_x(T)),
     ValueError, "Invalid reduction mode: avg. Expected one of 'none', 'mean', 'sum'."),
    ("mse_weight_shape", lambda T, F: F.mse_loss(_x(T), _x(T), weight=_float_weight(T, 3)),
     ValueError, "Weights and input must have the same size."),
    ("mse_integers", lambda T, F: F.mse_loss(T.ones(3, dtype=T.int64), T.ones(3, dtype=T.int64)),
     NotImplementedError, "\"mse_cpu\" not implemented for 'Long'"),
    ("mse_number_target", lambda T, F: F.mse_loss(_x(T), 1.0),
     AttributeError, "'float' object has no attribute 'size'"),
    ("softmax_integers", lambda T, F: T.ones(3, dtype=T.int64).softmax(0),
     NotImplementedError, "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    ("softmax_integers_dim0", lambda T, F: T.ones(2, 3, dtype=T.int64).softmax(0),
     NotImplementedError, "\"softmax_kernel_impl\" not implemented for 'Long'"),
    ("log_softmax_bool", lambda T, F: T.ones(2, 3, dtype=T.bool).log_softmax(1),
     NotImplementedError, "\"log_softmax_lastdim_kernel_impl\" not implemented for 'Bool'"),
    ("log_softmax_int32_dim0", lambda T, F: T.ones(2, 3, dtype=T.int32).log_softmax(0),
     NotImplementedError, "\"log_softmax_kernel_impl\" not implemented for 'Int'"),
    ("softmax_dtype_integer", lambda T, F: T.ones(3).softmax(0, dtype=T.int64),
     NotImplementedError, "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
    ("softmax_dim_out_of_range", lambda T, F: _x(T).softmax(2),
     IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("softmax_not_tensor", lambda T, F: T.softmax([1.0], 0),
     TypeError, "softmax(): argument 'input' (position 1) must be Tensor, not list"),
    ("logsumexp_no_dims", lambda T, F: _x(T).logsumexp(()),
     RuntimeError, "output with shape [] doesn't match the broadcast shape [1, 1]"),
    ("logsumexp_repeated_dim", lambda T, F: _x(T).logsumexp((1, -1)),
     RuntimeError, "dim 1 appears multiple times in the list of dims"),
    ("logsumexp_dim_out_of_range", lambda T, F: _x(T).logsumexp(2),
     IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("linear_shapes", lambda T, F: F.linear(_x(T), _float_weight(T, 2, 4)),
     RuntimeError, "mat1 and mat2 shapes cannot be multiplied (4x3 and 4x2)"),
    ("linear_shapes_bias", lambda T, F: F.linear(_x(T), _float_weight(T, 2, 4),
                                                 _float_weight(T, 2)),
     RuntimeError, "mat1 and mat2 shapes cannot be multiplied (4x3 and 4x2)"),
    ("linear_1d_shapes", lambda T, F: F.linear(T.ones(4), T.ones(2, 3)),
     RuntimeError, "mat1 and mat2 shapes cannot be multiplied (1x4 and 3x2)"),
    ("linear_bias_size", lambda T, F: F.linear(_x(T), _float_weight(T, 2, 3),
                                               _float_weight(T, 3)),
     RuntimeError, "The expanded size of the tensor (2) must match the existing size (3) at "
                   "non-singleton dimension 1.  Target sizes: [4, 2].  Tensor sizes: [3]"),
    ("linear_dtypes", lambda T, F: F.linear(_x(T), T.ones(2, 3), T.ones(2)),
     RuntimeError, "mat1 and mat2 must have the same dtype, but got Double and Float"),
    ("linear_bias_dtype", lambda T, F: F.linear(_x(T), _float_weight(T, 2, 3), T.ones(2)),
     RuntimeError, "self and mat2 must have the same dtype, but got Float and Double"),
    ("linear_0d_input", lambda T, F: F.linear(T.tensor(1.0), T.ones(2, 3)),
     RuntimeError, "both arguments to linear need to be at least 1D, but they are 0D and 2D"),
    ("linear_3d_weight", lambda T, F: F.linear(_x(T), _float_weight(T, 2, 2, 3)),
     RuntimeError, "t() expects a tensor with <= 2 dimensions, but self is 3D"),
    ("linear_weight_not_tensor", lambda T, F: F.linear(_x(T), 3),
     TypeError, "linear(): argument 'weight' (position 2) must be Tensor, not int"),
    ("addmm_vector", lambda T, F: T.addmm(T.ones(3), T.ones(3), T.ones(3, 3)),
     RuntimeError, "mat1 must be a matrix, got 1-D tensor"),
    ("addmm_vector_mat2", lambda T, F: T.addmm(T.ones(3), T.ones(3, 3), T.ones(3)),
     RuntimeError, "mat2 must be a matrix, got 1-D tensor"),
    ("addmm_bias_rows", lambda T, F: T.addmm(T.ones(3, 2), T.ones(2, 3), T.ones(3, 2)),
     RuntimeError, "The expanded size of the tensor (2) must match the existing size (3) at "
                   "non-singleton dimension 0"),
    ("addmm_bias_3d", lambda T, F: T.addmm(T.ones(1, 2, 2), T.ones(2, 3), T.ones(3, 2)),
     RuntimeError, "FloatTensor{[1, 2, 2]}, size=[2, 2]): the number of sizes provided (2) must "
                   "be greater or equal to the number of dimensions in the tensor (3)"),
    ("addmm_bias_dtype", lambda T, F: T.addmm(_float_weight(T, 3), T.ones(2, 3), T.ones(3, 3)),
     RuntimeError, "self and mat2 must have the same dtype, but got Double and Float"),
    ("addmm_mat2_not_tensor", lambda T, F: T.addmm(T.ones(3), T.ones(2, 3), 1),
     TypeError, "addmm(): argument 'mat2' (position 3) must be Tensor, not int"),
]


@pytest.mark.parametrize("fn,exc,message", [pytest.param(*c[1:], id=c[0]) for c in ERROR_CASES])
def test_errors_match_torch(T, fn, exc, message):
    with pytest.raises(exc) as info:
        fn(T, functional(T))
    assert message in str(info.value)


def test_mse_loss_of_shapes_that_do_not_broadcast(T):
    """torch warns about the sizes first, then fails to broadcast them."""
    with pytest.warns(UserWarning, match="Using a target size"), pytest.raises(
            RuntimeError, match="The size of tensor a \\(3\\) must match the size of tensor b "
                                "\\(2\\) at non-singleton dimension 1"):
        functional(T).mse_loss(_x(T), _float_weight(T, 4, 2))


def test_addmm_error_names_the_backend(T):
    with pytest.raises(RuntimeError, match=rf"expand\({T.__name__}\.FloatTensor"):
        T.addmm(T.ones(1, 2, 2), T.ones(2, 3), T.ones(3, 2))


def test_bad_target_changes_nothing(T, rng):
    """The out-of-bounds check runs before any node is made or gradient accumulated."""
    x = leaf(T, sample(rng, (4, 3)))
    with pytest.raises(IndexError):
        functional(T).cross_entropy(x, T.tensor([0, 1, 9, 2]))
    assert x.grad is None and x.is_leaf


# ---------------------------------------------------------------------------------- Functions
class Ctx:
    """A stand-in for the ctx a bridge hands to ``setup_context`` and ``backward``."""

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors


def _function_cases(T, rng):
    from ext.functions.builtin import activation as ops
    from ext.functions.builtin.pointwise.selection import MaskedFillScalar

    x, y = sample(rng, (4, 3)), sample(rng, (4, 3))
    m, b = sample(rng, (3, 5)), sample(rng, (5,))
    mask = np.array([True, False, True, False])
    return [
        (ops.Softmax, lambda F, a: a[0].softmax(1), [x], (1,)),
        (ops.LogSoftmax, lambda F, a: a[0].log_softmax(0), [x], (0,)),
        (ops.Logsumexp, lambda F, a: a[0].logsumexp(1, keepdim=False), [x], (1, False)),
        (ops.Addmm, lambda F, a: T.addmm(a[0], a[1], a[2], beta=2, alpha=0.5), [b, x, m],
         (2, 0.5)),
        (ops.NllLoss, lambda F, a: F.nll_loss(a[0], T.tensor(TARGETS), T.tensor(CLASS_WEIGHTS),
                                              ignore_index=2),
         [x], (T.tensor(TARGETS), T.tensor(CLASS_WEIGHTS), 1, 2)),
        (ops.MseLoss, lambda F, a: F.mse_loss(a[0], a[1], reduction="sum"), [x, y], (2,)),
        (MaskedFillScalar, lambda F, a: T.where(T.tensor(mask), 0.0, a[0]), [x[:, 0]],
         (T.tensor(mask), 0.0)),
    ]


@pytest.mark.parametrize("index", range(7), ids=["Softmax", "LogSoftmax", "Logsumexp", "Addmm",
                                                 "NllLoss", "MseLoss", "MaskedFill"])
def test_function_pieces_in_tensor_api(T, rng, index):
    """Each op's ``forward``, ``setup_context`` and ``backward`` are tensor-API code: run by
    hand on either backend's tensors, they give the native op's values and gradients."""
    op, native, arrays, rest = _function_cases(T, rng)[index]
    F = functional(T)
    tensors = [leaf(T, a) for a in arrays]
    args = (*tensors, *rest)
    with T.no_grad():
        outputs = op.forward(*args)
    out = outputs[0] if isinstance(outputs, tuple) else outputs  # (nll_loss_forward: 2)
    expected = native(F, tensors)
    np.testing.assert_allclose(to_np(out), to_np(expected), rtol=1e-14)
    ctx = Ctx(tuple(isinstance(a, T.Tensor) and a.requires_grad for a in args))
    op.setup_context(ctx, args, outputs)
    g = T.tensor(sample(rng, tuple(out.shape)))
    grads = op.backward(ctx, g)
    grads = grads if isinstance(grads, tuple) else (grads,)
    assert len(grads) == len(args)
    expected_grads = T.autograd.grad(expected, tensors, g)
    for got, want in zip(grads[: len(tensors)], expected_grads):
        # A broadcast input's gradient is summed to its shape by the engine, not by backward.
        np.testing.assert_allclose(sum_to(to_np(got), tuple(want.shape)), to_np(want),
                                   rtol=1e-13, atol=1e-15)


def sum_to(array, shape):
    lead = array.ndim - len(shape)
    array = array.sum(axis=tuple(range(lead))) if lead else array
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and array.shape[i] != 1)
    return array.sum(axis=dims, keepdims=True) if dims else array


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_gradients_are_mse_loss_backward_nodes(T, reduction):
    # torch: each operand's gradient is one mse_loss_backward (operands in its order)
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=T.float64, requires_grad=True)
    y = T.tensor([[0.5, -2.0], [1.5, 4.0]], dtype=T.float64, requires_grad=True)
    out = T.nn.functional.mse_loss(x, y, reduction=reduction)
    g = T.ones_like(out).requires_grad_()
    gx, gy = T.autograd.grad(out, [x, y], g, create_graph=True)
    assert gx.grad_fn.name() == gy.grad_fn.name() == "MseLossBackwardBackward0"
    assert gx.grad_fn._saved_reduction == {"none": 0, "mean": 1, "sum": 2}[reduction]
    assert T.autograd.gradgradcheck(
        lambda a, b: T.nn.functional.mse_loss(a, b, reduction=reduction), (x, y))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_gradient_is_an_nll_loss_backward_node(T, reduction):
    # torch: its gradient for the incoming gradient is nll_loss of gg; for the input, zeros
    x = T.tensor([[0.75, -1.0], [2.0, 0.5], [0.1, 0.2]], dtype=T.float64, requires_grad=True)
    lp = x.log_softmax(-1)
    out = T.nn.functional.nll_loss(lp, T.tensor([0, 1, -100]), reduction=reduction)
    g = (T.ones_like(out) * 1.5).requires_grad_()
    (glp,) = T.autograd.grad(out, lp, g, create_graph=True)
    assert glp.grad_fn.name() == "NllLossBackwardBackward0"
    (gg,) = T.autograd.grad((glp * glp).sum(), [g], create_graph=True)
    assert gg.grad_fn.name() == "NllLossBackward0"
    expected = {"mean": 1.5, "sum": 6.0, "none": [3.0, 3.0, 0.0]}[reduction]
    np.testing.assert_allclose(gg.detach().numpy(), expected)


@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_gradient_of_a_dual_input_is_the_one_hot_times_grad(T, weighted):
    # Under forward AD torch computes nll_loss's gradient by its decomposition, one-hot * grad:
    # an infinite grad gives nan off the targets (plain backward gives 0 there)
    fw = T.autograd.forward_ad
    weight = T.tensor([0.5, 2.0, 1.0], dtype=T.float64) if weighted else None
    with fw.dual_level():
        x = fw.make_dual(T.zeros(2, 3, dtype=T.float64), T.ones(2, 3, dtype=T.float64))
        x.requires_grad_()
        out = T.nn.functional.nll_loss(x, T.tensor([0, 2]), weight)
        (gx,) = T.autograd.grad(out, x, T.tensor(float("inf"), dtype=T.float64))
        g = to_np(fw.unpack_dual(gx).primal)
    np.testing.assert_array_equal(g, [[-np.inf, np.nan, np.nan], [np.nan, np.nan, -np.inf]])
    x = T.zeros(2, 3, dtype=T.float64, requires_grad=True)
    out = T.nn.functional.nll_loss(x, T.tensor([0, 2]), weight)
    (gx,) = T.autograd.grad(out, x, T.tensor(float("inf"), dtype=T.float64))
    np.testing.assert_array_equal(to_np(gx), [[-np.inf, 0, 0], [0, 0, -np.inf]])
