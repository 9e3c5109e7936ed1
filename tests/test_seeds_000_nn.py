"""Seed 000's model snippets as acceptance cases: §8.2 (module hooks), §10.2 (gradient
checkpointing), §10.3 (gradient accumulation) and exercise 3 (vanishing gradients in a 20-layer
sigmoid network, and the ReLU, residual and LayerNorm fixes).

Weights are drawn in NumPy and copied into the models, so both backends compute the same
numbers; the last test runs both backends side by side and compares every gradient.
"""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest
from helpers import to_np


def copy_weights(T, model, rng, bound):
    """Torch's default Linear init (uniform on ±1/√fan_in), drawn in NumPy for every Linear;
    LayerNorms keep their weight 1 and bias 0."""
    with T.no_grad():
        for m in model.modules():
            if isinstance(m, T.nn.Linear):
                for p in (m.weight, m.bias):
                    p.copy_(T.tensor(rng.uniform(-bound, bound, tuple(p.shape))))


# §8.2 Module hooks: a forward hook and the (deprecated) backward hook on nn.Linear(10, 5)


def test_seed_module_hooks_see_the_output_and_grad_output_shapes(T, rng):
    nn = T.nn
    printed = []
    model = nn.Linear(10, 5)

    def forward_hook(module, input, output):
        printed.append(f"Forward: {output.shape}")

    def backward_hook(module, grad_input, grad_output):
        printed.append(f"Backward: {grad_output[0].shape}")

    handle1 = model.register_forward_hook(forward_hook)
    handle2 = model.register_backward_hook(backward_hook)

    x = T.tensor(rng.normal(size=(3, 10)), dtype=T.float32, requires_grad=True)
    with pytest.warns(FutureWarning, match="non-full backward hook"):
        y = model(x)
    y.sum().backward()
    size = f"{T.__name__}.Size([3, 5])"
    assert printed == [f"Forward: {size}", f"Backward: {size}"]

    handle1.remove()
    handle2.remove()
    model(x).sum().backward()
    assert len(printed) == 2


def test_seed_backward_hook_grad_input_is_the_output_nodes(T, rng):
    # The legacy hook sits on the output's node (addmm): its grad_input is (bias, x, weightᵀ).
    model = T.nn.Linear(10, 5)
    seen = []
    model.register_backward_hook(lambda m, gin, gout: seen.append([tuple(g.shape) for g in gin]))
    x = T.tensor(rng.normal(size=(3, 10)), dtype=T.float32, requires_grad=True)
    with pytest.warns(FutureWarning):
        model(x).sum().backward()
    assert seen == [[(5,), (3, 10), (10, 5)]]


# §10.2 Gradient checkpointing: layer1 and layer2 are recomputed in backward


def checkpointed_model(T, **checkpoint_kwargs):
    nn = T.nn
    checkpoint = importlib.import_module(f"{T.__name__}.utils.checkpoint").checkpoint

    class MyModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer1 = nn.Linear(1000, 1000)
            self.layer2 = nn.Linear(1000, 1000)
            self.layer3 = nn.Linear(1000, 1000)

        def forward(self, x, use_checkpoint=True):
            if use_checkpoint:
                x = checkpoint(self.layer1, x, **checkpoint_kwargs)
                x = checkpoint(self.layer2, x, **checkpoint_kwargs)
            else:
                x = self.layer2(self.layer1(x))
            x = self.layer3(x)
            return x

    return MyModel()


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_seed_checkpointed_layers_give_the_plain_models_gradients(T, rng, use_reentrant):
    model = checkpointed_model(T, use_reentrant=use_reentrant)
    copy_weights(T, model, rng, 1 / np.sqrt(1000))
    x = T.tensor(rng.normal(size=(4, 1000)), dtype=T.float32, requires_grad=True)

    (model(x) ** 2).sum().backward()
    checkpointed = [to_np(p.grad).copy() for p in model.parameters()] + [to_np(x.grad).copy()]
    model.zero_grad()
    x.grad = None
    (model(x, use_checkpoint=False) ** 2).sum().backward()
    plain = [to_np(p.grad) for p in model.parameters()] + [to_np(x.grad)]
    for a, b in zip(checkpointed, plain):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_seed_checkpoint_without_use_reentrant_warns(T, rng):
    model = checkpointed_model(T)
    x = T.ones(2, 1000, requires_grad=True)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed "
                                         "explicitly"):
        y = model(x)
    y.sum().backward()
    assert model.layer1.weight.grad is not None


# §10.3 Gradient accumulation: four micro-batches, each loss divided by 4, then one step


def test_seed_accumulated_micro_batches_step_like_the_full_batch(T, rng):
    nn = T.nn
    model = nn.Linear(3, 2).double()
    copy_weights(T, model, rng, 0.5)
    w0, b0 = to_np(model.weight).copy(), to_np(model.bias).copy()
    criterion = nn.MSELoss()
    optimizer = T.optim.SGD(model.parameters(), lr=0.1)
    xs, ys = rng.normal(size=(8, 5, 3)), rng.normal(size=(8, 5, 2))
    dataloader = [(T.tensor(x), T.tensor(y)) for x, y in zip(xs, ys)]

    accumulation_steps = 4
    optimizer.zero_grad()
    steps = []
    for i, (x, y) in enumerate(dataloader):
        output = model(x)
        loss = criterion(output, y) / accumulation_steps
        loss.backward()
        if (i + 1) % accumulation_steps == 0:
            steps.append((to_np(model.weight.grad).copy(), to_np(model.bias.grad).copy()))
            optimizer.step()
            optimizer.zero_grad()

    # The accumulated gradient is the gradient of the mean loss over the 4 batches (20 rows).
    w, b = w0, b0
    for k, (gw, gb) in enumerate(steps):
        x, y = xs[4 * k:4 * k + 4].reshape(-1, 3), ys[4 * k:4 * k + 4].reshape(-1, 2)
        diff = x @ w.T + b - y
        expected_gw = 2 * diff.T @ x / diff.size
        expected_gb = 2 * diff.sum(0) / diff.size
        np.testing.assert_allclose(gw, expected_gw, rtol=1e-12)
        np.testing.assert_allclose(gb, expected_gb, rtol=1e-12)
        w, b = w - 0.1 * expected_gw, b - 0.1 * expected_gb
    np.testing.assert_allclose(to_np(model.weight), w, rtol=1e-12)
    np.testing.assert_allclose(to_np(model.bias), b, rtol=1e-12)
    assert model.weight.grad is None


# Exercise 3: vanishing gradients in a 20-layer network, and three fixes


def deep_network(T, fix):
    """The exercise's DeepNetwork: sigmoid (the problem), or one of the answer's fixes."""
    nn = T.nn

    class DeepNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            if fix == "layernorm":
                self.layers = nn.ModuleList([
                    nn.Sequential(nn.Linear(100, 100), nn.LayerNorm(100), nn.ReLU())
                    for _ in range(20)])
            else:
                self.layers = nn.ModuleList([nn.Linear(100, 100) for _ in range(20)])

        def forward(self, x):
            for layer in self.layers:
                if fix == "sigmoid":
                    x = T.sigmoid(layer(x))
                elif fix == "relu":
                    x = T.relu(layer(x))
                elif fix == "residual":
                    x = x + T.sigmoid(layer(x))
                else:
                    x = layer(x)
            return x

    return DeepNetwork().double()


FIXES = ["sigmoid", "relu", "residual", "layernorm"]


def gradients(T, model, x_shape, seed=0):
    """Every parameter's gradient (by name) and the input's, after backward of the output's sum
    of squares, with float64 weights and input drawn in NumPy."""
    rng = np.random.default_rng(seed)
    model = model.double()
    copy_weights(T, model, rng, 1 / np.sqrt(x_shape[-1]))
    x = T.tensor(rng.normal(size=x_shape), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecated backward hook of §8.2
        (model(x) ** 2).sum().backward()
    grads = {name: to_np(p.grad) for name, p in model.named_parameters()}
    grads["input"] = to_np(x.grad)
    return grads


def first_to_last_ratio(T, fix) -> float:
    grads = gradients(T, deep_network(T, fix), (8, 100))
    weights = [g for name, g in grads.items() if g.ndim == 2 and name != "input"]
    return np.linalg.norm(weights[0]) / np.linalg.norm(weights[-1])


def test_exercise3_sigmoid_network_gradients_vanish(T):
    # σ' ≤ 1/4 and weights of scale 0.1: each layer shrinks the gradient by ~7.
    assert first_to_last_ratio(T, "sigmoid") < 1e-14


@pytest.mark.parametrize("fix,at_least", [("relu", 1e-8), ("residual", 1e-2),
                                          ("layernorm", 1e-2)])
def test_exercise3_fixes_keep_the_first_layers_gradient(T, fix, at_least):
    ratio = first_to_last_ratio(T, fix)
    assert ratio > at_least and ratio > 1e6 * first_to_last_ratio(T, "sigmoid")


def hooked_linear(T):
    """§8.2's model with its forward hook and deprecated backward hook registered."""
    model = T.nn.Linear(10, 5)
    model.register_forward_hook(lambda module, input, output: None)
    model.register_backward_hook(lambda module, grad_input, grad_output: None)
    return model


SEED_MODELS = {
    "8.2 hooked Linear": (hooked_linear, (3, 10)),
    "10.2 checkpoint, reentrant": (lambda T: checkpointed_model(T, use_reentrant=True),
                                   (2, 1000)),
    "10.2 checkpoint, non-reentrant": (lambda T: checkpointed_model(T, use_reentrant=False),
                                       (2, 1000)),
    **{f"exercise 3 {fix}": (lambda T, fix=fix: deep_network(T, fix), (8, 100))
       for fix in FIXES},
}


def test_seed_model_gradients_match_torch_to_1e_10():
    """Cross-backend check: each seed model with the same float64 weights on ext and on torch,
    in one test, and every parameter's gradient (and the input's) compared as a whole tensor."""
    # This one test imports torch itself: it compares the two backends directly.
    import torch

    import ext

    for label, (build, x_shape) in SEED_MODELS.items():
        ours = gradients(ext, build(ext), x_shape)
        theirs = gradients(torch, build(torch), x_shape)
        assert list(ours) == list(theirs)
        for name in ours:
            a, b = ours[name], theirs[name]
            assert np.linalg.norm(a - b) <= 1e-10 * np.linalg.norm(b), (label, name)
