"""ext.optim: SGD, Adam and AdamW update rules, parameter groups, state and errors as torch's.

Every test but the last runs on ``ext`` and on ``torch``. Parameters and gradients are NumPy
arrays; the expected parameters come from NumPy references of torch's update rules, so both
backends are held to the same numbers. The last test trains the same MLP on both engines.
"""

from __future__ import annotations

import copy
import itertools
import re

import numpy as np
import pytest
from helpers import to_np

RTOL = 1e-12
SHAPES = [(3, 4), (5,)]
# Gradient scales per step: the small third step lets amsgrad's running max differ from v.
SCALES = [1.0, 3.0, 0.1, 0.5]


def make_problem(rng):
    """Initial parameters and, per step, one gradient per parameter (NumPy float64)."""
    params = [rng.normal(size=s) for s in SHAPES]
    grads = [[scale * rng.normal(size=s) for s in SHAPES] for scale in SCALES]
    return params, grads


def leaves(T, arrays):
    return [T.tensor(a, requires_grad=True) for a in arrays]


def run(T, optimizer, params, grads):
    """Set each step's NumPy gradients on ``params`` and step ``optimizer`` once per step."""
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = T.tensor(g)
        optimizer.step()


def assert_close(actual, expected):
    np.testing.assert_allclose(to_np(actual), expected, rtol=RTOL, atol=0)


# ---------------------------------------------------------------------------------- references
def sgd_reference(p, grads, lr, momentum, dampening, weight_decay, nesterov, maximize):
    """torch's SGD rule on one parameter: the final parameter and momentum buffer."""
    buf = None
    for g in grads:
        g = -g if maximize else g
        if weight_decay != 0:
            g = g + weight_decay * p
        if momentum != 0:
            buf = g.copy() if buf is None else buf * momentum + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
    return p, buf


def adam_reference(p, grads, lr, betas, eps, weight_decay, amsgrad, maximize, decoupled):
    """torch's Adam/AdamW rule on one parameter: the final parameter and moment buffers."""
    beta1, beta2 = betas
    m, v, v_max = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        g = -g if maximize else g
        if weight_decay != 0:
            if decoupled:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
        m = m + (1 - beta1) * (g - m)
        v = v * beta2 + (1 - beta2) * g * g
        v_max = np.maximum(v_max, v)
        denom = np.sqrt(v_max if amsgrad else v) / np.sqrt(1 - beta2**t) + eps
        p = p - lr / (1 - beta1**t) * m / denom
    return p, m, v, v_max


# ---------------------------------------------------------------------------------- SGD
SGD_OPTIONS = [
    dict(momentum=m, dampening=d, nesterov=n, weight_decay=w, maximize=x)
    for m, d, n, w, x in itertools.product([0, 0.9], [0, 0.5], [False, True], [0, 0.1],
                                           [False, True])
    if not n or (m > 0 and d == 0)
]


@pytest.mark.parametrize("options", SGD_OPTIONS, ids=lambda o: "-".join(
    f"{k}={v}" for k, v in o.items()))
def test_sgd_follows_the_reference_rule(T, rng, options):
    arrays, grads = make_problem(rng)
    params = leaves(T, arrays)
    opt = T.optim.SGD(params, lr=0.1, **options)
    run(T, opt, params, grads)
    for i, p in enumerate(params):
        expected, buf = sgd_reference(arrays[i], [g[i] for g in grads], lr=0.1, **options)
        assert_close(p, expected)
        if options["momentum"]:
            assert_close(opt.state[p]["momentum_buffer"], buf)
        else:
            assert p not in opt.state


def test_sgd_first_momentum_buffer_is_a_copy_of_the_gradient(T):
    p = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    p.grad = T.tensor([0.5, -1.0], dtype=T.float64)
    opt = T.optim.SGD([p], lr=0.1, momentum=0.9, dampening=0.5)
    opt.step()
    buf = opt.state[p]["momentum_buffer"]
    assert buf is not p.grad and buf.tolist() == [0.5, -1.0]
    assert p.tolist() == pytest.approx([0.95, 2.1], rel=1e-15)


# ---------------------------------------------------------------------------------- Adam, AdamW
ADAM_OPTIONS = [
    dict(weight_decay=w, amsgrad=a, maximize=x)
    for w, a, x in itertools.product([0, 0.1], [False, True], [False, True])
]


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
@pytest.mark.parametrize("options", ADAM_OPTIONS, ids=lambda o: "-".join(
    f"{k}={v}" for k, v in o.items()))
def test_adam_follows_the_reference_rule(T, rng, name, options):
    arrays, grads = make_problem(rng)
    params = leaves(T, arrays)
    lr, betas, eps = 0.05, (0.8, 0.95), 1e-3
    opt = getattr(T.optim, name)(params, lr=lr, betas=betas, eps=eps, **options)
    run(T, opt, params, grads)
    for i, p in enumerate(params):
        expected, m, v, v_max = adam_reference(arrays[i], [g[i] for g in grads], lr, betas, eps,
                                               decoupled=name == "AdamW", **options)
        assert_close(p, expected)
        state = opt.state[p]
        assert_close(state["exp_avg"], m)
        assert_close(state["exp_avg_sq"], v)
        if options["amsgrad"]:
            assert_close(state["max_exp_avg_sq"], v_max)
        else:
            assert "max_exp_avg_sq" not in state


def test_adam_step_is_a_float32_scalar_tensor(T):
    p = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    opt = T.optim.Adam([p])
    for _ in range(3):
        p.grad = T.ones(2, dtype=T.float64)
        opt.step()
    step = opt.state[p]["step"]
    assert T.is_tensor(step) and step.dim() == 0 and step.dtype == T.float32
    assert step.item() == 3.0
    assert list(opt.state[p]) == ["step", "exp_avg", "exp_avg_sq"]


def test_adamw_decays_weights_by_default(T):
    p = T.tensor([2.0], dtype=T.float64, requires_grad=True)
    p.grad = T.zeros(1, dtype=T.float64)
    opt = T.optim.AdamW([p], lr=0.1)
    assert opt.defaults["weight_decay"] == 0.01 and opt.defaults["decoupled_weight_decay"]
    opt.step()
    assert p.item() == pytest.approx(2.0 * (1 - 0.1 * 0.01), rel=1e-15)


# ---------------------------------------------------------------------------------- step mechanics
@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_step_updates_the_same_leaf_in_place_and_skips_params_without_grad(T, name):
    p = T.tensor([1.0, -1.0], dtype=T.float64, requires_grad=True)
    q = T.tensor([3.0], dtype=T.float64, requires_grad=True)
    opt = getattr(T.optim, name)([p, q], lr=0.1)
    p.grad = T.tensor([1.0, 1.0], dtype=T.float64)
    before = p._version
    opt.step()
    assert opt.param_groups[0]["params"][0] is p
    assert p.is_leaf and p.requires_grad and p.grad_fn is None and p._version > before
    assert p.tolist() != [1.0, -1.0]
    assert q.tolist() == [3.0] and q not in opt.state


def test_step_returns_the_closure_loss_computed_with_grad_enabled(T):
    p = T.tensor([1.0, -2.0], dtype=T.float64, requires_grad=True)
    opt = T.optim.SGD([p], lr=0.25)
    seen = []

    def closure():
        seen.append(T.is_grad_enabled())
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with T.no_grad():
        loss = opt.step(closure)
    assert seen == [True] and loss.item() == 5.0
    assert p.tolist() == [0.5, -1.0]  # p - 0.25 * 2p
    assert opt.step() is None


def test_zero_grad_sets_none_by_default(T):
    p = T.tensor([1.0], dtype=T.float64, requires_grad=True)
    p.grad = T.tensor([4.0], dtype=T.float64)
    opt = T.optim.SGD([p])
    opt.zero_grad()
    assert p.grad is None


def test_zero_grad_without_set_to_none_zeroes_the_same_grad_in_place(T):
    p = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    q = T.tensor([1.0], dtype=T.float64, requires_grad=True)
    (grad,) = T.autograd.grad((p * p).sum(), p, create_graph=True)
    p.grad = grad
    assert grad.grad_fn is not None
    opt = T.optim.Adam([p, q])
    opt.zero_grad(set_to_none=False)
    assert p.grad is grad and p.grad.tolist() == [0.0, 0.0]
    assert p.grad.grad_fn is None and not p.grad.requires_grad
    assert q.grad is None


# ---------------------------------------------------------------------------------- groups
def test_param_groups_take_their_own_lr_and_defaults_fill_the_rest(T):
    a = T.tensor([1.0], dtype=T.float64, requires_grad=True)
    b = T.tensor([1.0], dtype=T.float64, requires_grad=True)
    c = T.tensor([1.0], dtype=T.float64, requires_grad=True)
    opt = T.optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.5)
    opt.add_param_group({"params": [c], "lr": 0.25, "momentum": 0})
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5, 0.25]
    assert [g["momentum"] for g in opt.param_groups] == [0.5, 0.5, 0]
    assert opt.param_groups[1]["params"] == [b]
    for p in (a, b, c):
        p.grad = T.tensor([2.0], dtype=T.float64)
    opt.step()
    assert [a.item(), b.item(), c.item()] == pytest.approx([0.8, 0.0, 0.5], rel=1e-15)


def test_named_parameters_are_kept_as_param_names(T):
    a = T.tensor([1.0], dtype=T.float64, requires_grad=True)
    opt = T.optim.SGD([("weight", a)])
    assert opt.param_groups[0]["params"] == [a]
    assert opt.param_groups[0]["param_names"] == ["weight"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight"]


def test_repr_lists_each_group_sorted(T):
    opt = T.optim.SGD([T.tensor([1.0], dtype=T.float64, requires_grad=True)], lr=0.1, momentum=0.9)
    assert repr(opt) == ("SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n"
                         "    foreach: None\n    fused: None\n    lr: 0.1\n    maximize: False\n"
                         "    momentum: 0.9\n    nesterov: False\n    weight_decay: 0\n)")
    a, b = leaves(T, [np.ones(1), np.ones(1)])
    adam = T.optim.AdamW([{"params": [a]}, {"params": [b], "lr": 0.5}])
    text = repr(adam)
    assert text.startswith("AdamW (\nParameter Group 0\n    amsgrad: False\n"
                           "    betas: (0.9, 0.999)\n    capturable: False\n"
                           "    decoupled_weight_decay: True\n")
    assert "\n\nParameter Group 1\n" in text and "    lr: 0.5\n" in text
    assert text.endswith("    weight_decay: 0.01\n)")


# ---------------------------------------------------------------------------------- state_dict
@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_state_dict_round_trip_continues_the_same_trajectory(T, rng, name):
    arrays, grads = make_problem(rng)
    options = {"momentum": 0.9} if name == "SGD" else {"amsgrad": True}
    first = leaves(T, arrays)
    opt = getattr(T.optim, name)([{"params": first[:1]}, {"params": first[1:], "lr": 0.05}],
                                 lr=0.1, **options)
    run(T, opt, first, grads[:2])

    saved = opt.state_dict()
    assert sorted(saved) == ["param_groups", "state"]
    assert [g["params"] for g in saved["param_groups"]] == [[0], [1]]
    assert [g["lr"] for g in saved["param_groups"]] == [0.1, 0.05]
    assert sorted(saved["state"]) == [0, 1]
    expected_keys = (["momentum_buffer"] if name == "SGD"
                     else ["step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"])
    assert list(saved["state"][0]) == expected_keys

    second = leaves(T, [to_np(p) for p in first])
    restored = getattr(T.optim, name)([{"params": second[:1]}, {"params": second[1:]}],
                                      lr=1.0)
    # state_dict() hands out the live buffers: copy them, as saving to disk would.
    assert saved["state"][0][expected_keys[-1]] is opt.state[first[0]][expected_keys[-1]]
    restored.load_state_dict(copy.deepcopy(saved))
    assert [g["lr"] for g in restored.param_groups] == [0.1, 0.05]
    assert restored.param_groups[1]["params"][0] is second[1]
    assert sorted(restored.state, key=id) == sorted(second, key=id)

    run(T, opt, first, grads[2:])
    run(T, restored, second, grads[2:])
    for p, q in zip(first, second):
        assert np.array_equal(to_np(p), to_np(q))


def test_load_state_dict_rejects_a_different_layout(T):
    a = T.tensor([1.0], dtype=T.float64, requires_grad=True)
    b = T.tensor([1.0], dtype=T.float64, requires_grad=True)
    saved = T.optim.SGD([a, b]).state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        T.optim.SGD([{"params": [a]}, {"params": [b]}]).load_state_dict(saved)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        T.optim.SGD([a]).load_state_dict(saved)


# ---------------------------------------------------------------------------------- errors
def test_a_non_leaf_parameter_is_refused(T):
    p = T.tensor([1.0], dtype=T.float64, requires_grad=True)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        T.optim.SGD([p * 2])


def test_an_empty_parameter_list_is_refused(T):
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        T.optim.Adam([])


def test_params_must_be_an_iterable_of_tensors(T):
    p = T.tensor([1.0], dtype=T.float64, requires_grad=True)
    with pytest.raises(TypeError, match=f"iterable of Tensors or dicts, but got "
                                        f"{T.__name__}.DoubleTensor"):
        T.optim.SGD(p)
    with pytest.raises(TypeError, match="can only optimize Tensors, but one of the params is int"):
        T.optim.SGD([1])
    with pytest.raises(TypeError, match="ordered collections"):
        T.optim.SGD([{"params": {p}}])


def test_a_parameter_given_twice(T):
    p = T.tensor([1.0], dtype=T.float64, requires_grad=True)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter"):
        T.optim.SGD([{"params": [p]}, {"params": [p], "lr": 0.5}])
    with pytest.warns(UserWarning, match="duplicate parameters"):
        T.optim.SGD([p, p])


INVALID = [
    ("SGD", {"lr": -0.1}, "Invalid learning rate: -0.1"),
    ("SGD", {"momentum": -1}, "Invalid momentum value: -1"),
    ("SGD", {"weight_decay": -0.5}, "Invalid weight_decay value: -0.5"),
    ("SGD", {"nesterov": True}, "Nesterov momentum requires a momentum and zero dampening"),
    ("SGD", {"nesterov": True, "momentum": 0.9, "dampening": 0.1},
     "Nesterov momentum requires a momentum and zero dampening"),
    ("Adam", {"lr": -0.1}, "Invalid learning rate: -0.1"),
    ("Adam", {"eps": -1.0}, "Invalid epsilon value: -1.0"),
    ("Adam", {"betas": (1.0, 0.999)}, "Invalid beta parameter at index 0: 1.0"),
    ("Adam", {"betas": (0.9, -0.1)}, "Invalid beta parameter at index 1: -0.1"),
    ("Adam", {"betas": (0, 0.5)}, "betas must be either both floats or both Tensors"),
    ("Adam", {"weight_decay": -1.0}, "Invalid weight_decay value: -1.0"),
    ("AdamW", {"lr": -1e-3}, "Invalid learning rate: -0.001"),
]


@pytest.mark.parametrize("name, options, message", INVALID,
                         ids=[f"{n}-{'-'.join(o)}" for n, o, _ in INVALID])
def test_invalid_hyperparameters_raise_value_error(T, name, options, message):
    p = T.tensor([1.0], dtype=T.float64, requires_grad=True)
    with pytest.raises(ValueError, match=re.escape(message)):
        getattr(T.optim, name)([p], **options)


# ---------------------------------------------------------------------------------- MLP parity
SIZES = [8, 16, 16, 3]


def train_mlp(T, weights, x, y, steps):
    """Train a tanh MLP with Adam on one batch; return the loss before each step."""
    import importlib

    F = importlib.import_module(f"{T.__name__}.nn.functional")
    params = [T.tensor(w, requires_grad=True) for w in weights]
    inputs, targets = T.tensor(x), T.tensor(y)
    opt = T.optim.Adam(params, lr=1e-2)
    losses = []
    for _ in range(steps):
        h = inputs
        for layer in range(len(params) // 2):
            h = F.linear(h, params[2 * layer], params[2 * layer + 1])
            if layer < len(params) // 2 - 1:
                h = F.tanh(h)
        loss = F.cross_entropy(h, targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


def test_mlp_trained_with_adam_follows_torch_loss_curve():
    # Cross-backend: the same model and data on both engines, compared with each other.
    import torch

    import ext

    rng = np.random.default_rng(0)
    weights = []
    for fan_in, fan_out in zip(SIZES, SIZES[1:]):
        bound = 1 / np.sqrt(fan_in)
        weights += [rng.uniform(-bound, bound, (fan_out, fan_in)),
                    rng.uniform(-bound, bound, fan_out)]
    x = rng.normal(size=(32, SIZES[0]))
    y = rng.integers(0, SIZES[-1], size=32)

    ext_losses = train_mlp(ext, weights, x, y, steps=50)
    torch_losses = train_mlp(torch, weights, x, y, steps=50)
    assert ext_losses[-1] < 0.5 * ext_losses[0]
    np.testing.assert_allclose(ext_losses, torch_losses, rtol=1e-9, atol=0)
