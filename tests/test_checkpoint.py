"""``utils.checkpoint``: activation checkpointing, reentrant and not (reference §1.11).

A checkpointed region keeps only its inputs and runs again in backward: gradients equal the
plain run's, the function runs twice, and fewer bytes are saved for backward. The reentrant
variant is a custom Function (``CheckpointFunctionBackward``) and refuses ``autograd.grad``; the
non-reentrant one keeps the real graph and checks that the recomputation saves the same tensors.
"""

from __future__ import annotations

import contextlib
import importlib
import warnings

import numpy as np
import pytest
from helpers import to_np

BACKWARD_TWICE = "Trying to backward through the graph a second time"
REENTRANT_GRAD = (
    "When use_reentrant=True, {}.utils.checkpoint is incompatible with .grad() or passing an "
    "`inputs` parameter to .backward(). To resolve this error, you can either set "
    "use_reentrant=False, or call .backward() without passing the `inputs` argument."
)


@pytest.fixture
def cp(T):
    """The checkpoint module of the backend under test."""
    return importlib.import_module(f"{T.__name__}.utils.checkpoint")


def counting(fn):
    """``fn`` with a ``calls`` list that grows by one each time it runs."""
    calls = []

    def run(*args, **kwargs):
        calls.append(1)
        return fn(*args, **kwargs)

    run.calls = calls
    return run


def block(a, w):
    return (a @ w).tanh().sin() * 2


def inputs(T, rng):
    x = T.tensor(rng.normal(size=(2, 3)), requires_grad=True)
    w = T.tensor(rng.normal(size=(3, 3)), requires_grad=True)
    return x, w


def plain_grads(T, rng_seed=0):
    x, w = inputs(T, np.random.default_rng(rng_seed))
    block(x, w).sum().backward()
    return to_np(x.grad), to_np(w.grad)


# -------------------- gradients and recomputation, both variants


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_gradients_equal_the_plain_run(T, cp, use_reentrant):
    expected_x, expected_w = plain_grads(T)
    x, w = inputs(T, np.random.default_rng(0))

    y = cp.checkpoint(block, x, w, use_reentrant=use_reentrant)
    y.sum().backward()

    np.testing.assert_allclose(to_np(x.grad), expected_x, rtol=1e-12)
    np.testing.assert_allclose(to_np(w.grad), expected_w, rtol=1e-12)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_weights_captured_by_the_function_get_their_gradient(T, cp, use_reentrant):
    expected_x, expected_w = plain_grads(T)
    x, w = inputs(T, np.random.default_rng(0))

    y = cp.checkpoint(lambda a: block(a, w), x, use_reentrant=use_reentrant)
    y.sum().backward()

    np.testing.assert_allclose(to_np(x.grad), expected_x, rtol=1e-12)
    np.testing.assert_allclose(to_np(w.grad), expected_w, rtol=1e-12)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_gradient_flows_on_through_a_non_leaf_input(T, cp, use_reentrant):
    leaf = T.tensor([0.5, -1.0, 2.0], requires_grad=True)

    y = cp.checkpoint(lambda a, scale: (a * scale).exp(), leaf * 3, 0.5,
                      use_reentrant=use_reentrant)
    y.sum().backward()

    # d/dl sum(exp(1.5 l)) = 1.5 exp(1.5 l)
    np.testing.assert_allclose(to_np(leaf.grad), 1.5 * np.exp(1.5 * np.array([0.5, -1.0, 2.0])),
                               rtol=1e-6)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_the_function_runs_again_in_backward(T, cp, use_reentrant):
    x, w = inputs(T, np.random.default_rng(0))
    fn = counting(block)

    y = cp.checkpoint(fn, x, w, use_reentrant=use_reentrant)
    assert len(fn.calls) == 1
    y.sum().backward()

    assert len(fn.calls) == 2


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_recomputation_draws_the_same_random_numbers(T, cp, use_reentrant):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    T.manual_seed(0)
    noisy = lambda a: a * T.rand(3)

    y = cp.checkpoint(noisy, x, use_reentrant=use_reentrant)
    T.rand(5)  # the stream moves on before backward
    y.sum().backward()

    # The gradient is the noise drawn in the forward, not fresh noise.
    np.testing.assert_allclose(to_np(x.grad), to_np(y / x), rtol=1e-6)


def test_without_preserve_rng_state_the_recomputation_draws_new_numbers(T, cp):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    T.manual_seed(0)

    y = cp.checkpoint(lambda a: a * T.rand(3), x, use_reentrant=True, preserve_rng_state=False)
    y.sum().backward()

    assert not np.allclose(to_np(x.grad), to_np(y / x))


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_under_no_grad_checkpoint_just_runs_the_function(T, cp, use_reentrant):
    x = T.tensor([1.0, 2.0], requires_grad=True)

    with T.no_grad():
        y = cp.checkpoint(lambda a: a.exp(), x, use_reentrant=use_reentrant)

    assert not y.requires_grad
    np.testing.assert_allclose(to_np(y), np.exp([1.0, 2.0]), rtol=1e-6)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_an_input_modified_in_place_after_the_forward_is_detected(T, cp, use_reentrant):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    y = cp.checkpoint(lambda t: t.exp(), a, use_reentrant=use_reentrant)
    a.add_(1)

    with pytest.raises(RuntimeError, match="modified by an inplace operation: "
                                           rf"\[{T.__name__}.FloatTensor \[2\]\], which is "
                                           "output 0 of Add, is at version 1; expected version 0"):
        y.sum().backward()


# -------------------- the use_reentrant default


def test_omitting_use_reentrant_warns_and_uses_the_reentrant_variant(T, cp):
    x = T.tensor([1.0, 2.0], requires_grad=True)

    with pytest.warns(UserWarning, match="use_reentrant"):
        y = cp.checkpoint(lambda a: a.exp(), x)

    assert y.grad_fn.name() == "CheckpointFunctionBackward"


def test_checkpoint_sequential_without_use_reentrant_warns_once(T, cp):
    x = T.tensor([1.0, 2.0], requires_grad=True)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cp.checkpoint_sequential([lambda a: a * 2, lambda a: a.exp()], 2, x)

    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert len(messages) == 1 and "use_reentrant" in messages[0]
    assert "checkpoint_sequential" in messages[0]


# -------------------- reentrant


def test_reentrant_output_has_the_checkpoint_node(T, cp):
    y = cp.checkpoint(lambda a: a.exp(), T.tensor([1.0], requires_grad=True), use_reentrant=True)

    assert y.grad_fn.name() == "CheckpointFunctionBackward"
    assert type(y.grad_fn).__name__ == "CheckpointFunctionBackward"
    assert issubclass(cp.CheckpointFunction, T.autograd.Function)


def test_reentrant_refuses_autograd_grad_and_backward_inputs(T, cp):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    message = REENTRANT_GRAD.format(T.__name__)

    y = cp.checkpoint(lambda a: a.exp(), x, use_reentrant=True)
    with pytest.raises(RuntimeError) as info:
        T.autograd.grad(y.sum(), x)
    assert str(info.value) == message
    y = cp.checkpoint(lambda a: a.exp(), x, use_reentrant=True)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward(inputs=[x])
    assert str(info.value) == message


def test_reentrant_inside_a_plain_backward_of_a_larger_graph_is_fine(T, cp):
    x = T.tensor([1.0, 2.0], requires_grad=True)

    y = cp.checkpoint(lambda a: a.exp(), x, use_reentrant=True)
    (y * y).sum().backward()

    np.testing.assert_allclose(to_np(x.grad), 2 * np.exp(2 * np.array([1.0, 2.0])), rtol=1e-6)


def test_reentrant_backward_twice_fails(T, cp):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = cp.checkpoint(lambda a: a.exp(), x, use_reentrant=True)
    y.sum().backward()

    with pytest.raises(RuntimeError, match=BACKWARD_TWICE):
        y.sum().backward()


def test_reentrant_warns_when_no_input_requires_grad(T, cp):
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True. Gradients "
                                         "will be None"):
        y = cp.checkpoint(lambda a: a.exp(), T.tensor([1.0]), use_reentrant=True)

    assert not y.requires_grad
    assert y.grad_fn is None


def test_reentrant_refuses_keywords_context_fn_and_debug(T, cp):
    x = T.tensor([1.0], requires_grad=True)
    contexts = lambda: (contextlib.nullcontext(), contextlib.nullcontext())

    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale,shift"):
        cp.checkpoint(lambda a, scale=1, shift=0: a, x, use_reentrant=True, scale=2, shift=1)
    for extra in ({"context_fn": contexts}, {"debug": True}):
        with pytest.raises(ValueError, match="Passing `context_fn` or `debug` is only supported "
                                             "when use_reentrant=False."):
            cp.checkpoint(lambda a: a, x, use_reentrant=True, **extra)


# -------------------- non-reentrant


def test_non_reentrant_output_has_the_real_op_as_grad_fn(T, cp):
    y = cp.checkpoint(lambda a: a.exp().sin(), T.tensor([1.0], requires_grad=True),
                      use_reentrant=False)

    assert y.grad_fn.name() == "SinBackward0"


def test_non_reentrant_supports_grad_and_retain_graph(T, cp):
    x = T.tensor([0.5, 1.0, 1.5], requires_grad=True)
    fn = counting(lambda a: a.exp().sin())
    y = cp.checkpoint(fn, x, use_reentrant=False)

    (g1,) = T.autograd.grad(y.sum(), x, retain_graph=True)
    (g2,) = T.autograd.grad(y.sum(), x)

    expected = np.cos(np.exp([0.5, 1.0, 1.5])) * np.exp([0.5, 1.0, 1.5])
    np.testing.assert_allclose(to_np(g1), expected, rtol=1e-6)
    np.testing.assert_allclose(to_np(g2), expected, rtol=1e-6)
    assert len(fn.calls) == 3  # the forward, then one recomputation per backward
    assert x.grad is None


def test_non_reentrant_supports_double_backward(T, cp):
    x = T.tensor([0.5, -1.0], requires_grad=True)
    y = cp.checkpoint(lambda a: (a ** 3).sin(), x, use_reentrant=False)

    (g,) = T.autograd.grad(y.sum(), x, create_graph=True)
    (gg,) = T.autograd.grad(g.sum(), x)

    a = np.array([0.5, -1.0])
    np.testing.assert_allclose(to_np(g), np.cos(a ** 3) * 3 * a ** 2, rtol=1e-6)
    expected = -np.sin(a ** 3) * 9 * a ** 4 + np.cos(a ** 3) * 6 * a
    np.testing.assert_allclose(to_np(gg), expected, rtol=1e-5)


def test_non_reentrant_passes_keyword_arguments(T, cp):
    x = T.tensor([1.0, 2.0], requires_grad=True)

    y = cp.checkpoint(lambda a, scale=1.0: (a * scale).exp(), x, use_reentrant=False, scale=3.0)
    y.sum().backward()

    np.testing.assert_allclose(to_np(x.grad), 3 * np.exp(3 * np.array([1.0, 2.0])), rtol=1e-5)


def test_nested_non_reentrant_checkpoints_give_the_plain_gradient(T, cp):
    x = T.tensor([0.5, 1.0], requires_grad=True)
    inner = lambda a: a.sin().exp()
    outer = lambda a: cp.checkpoint(inner, a * 2, use_reentrant=False).cos()

    cp.checkpoint(outer, x, use_reentrant=False).sum().backward()

    a = 2 * np.array([0.5, 1.0])
    expected = -np.sin(np.exp(np.sin(a))) * np.exp(np.sin(a)) * np.cos(a) * 2
    np.testing.assert_allclose(to_np(x.grad), expected, rtol=1e-5)


def test_recomputation_with_other_shapes_raises_checkpoint_error(T, cp):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    keep = {"n": 3}
    y = cp.checkpoint(lambda a: a[: keep["n"]].exp(), x, use_reentrant=False)
    keep["n"] = 2

    with pytest.raises(cp.CheckpointError) as info:
        y.sum().backward()

    name = T.__name__
    assert isinstance(info.value, RuntimeError)
    assert str(info.value).startswith(
        f"{name}.utils.checkpoint: Recomputed values for the following tensors have different "
        "metadata than during the forward pass.\ntensor at position 0:\n"
        f"saved metadata: {{'shape': {name}.Size([3]), 'dtype': {name}.float32, "
        "'device': device(type='cpu')}\n"
        f"recomputed metadata: {{'shape': {name}.Size([2]), 'dtype': {name}.float32, "
        "'device': device(type='cpu')}\n")


def test_recomputation_saving_fewer_tensors_raises_checkpoint_error(T, cp):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    twice = {"on": True}
    y = cp.checkpoint(lambda a: a.exp().exp() if twice["on"] else a.exp() * 2, x,
                      use_reentrant=False)
    twice["on"] = False

    with pytest.raises(cp.CheckpointError, match="A different number of tensors was saved during "
                                                 "the original forward and recomputation.\n"
                                                 "Number of tensors saved during forward: 2\n"
                                                 "Number of tensors saved during "
                                                 "recomputation: 1."):
        y.sum().backward()


def test_without_early_stop_saving_more_tensors_raises_checkpoint_error(T, cp):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    twice = {"on": False}
    y = cp.checkpoint(lambda a: a.exp().exp() if twice["on"] else a.exp() * 2, x,
                      use_reentrant=False, early_stop=False)
    twice["on"] = True

    with pytest.raises(cp.CheckpointError, match="trying to save more tensors during "
                                                 "recomputation than during the original "
                                                 "forward pass"):
        y.sum().backward()


@pytest.mark.parametrize("early_stop, expected", [(True, 1), (False, 2)])
def test_early_stop_ends_the_recomputation_after_the_last_saved_tensor(T, cp, early_stop,
                                                                        expected):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    reached_the_end = []

    def fn(a):
        b = a.exp()  # the only tensor saved for backward
        reached_the_end.append(1)
        return b * 2

    cp.checkpoint(fn, x, use_reentrant=False, early_stop=early_stop).sum().backward()

    assert len(reached_the_end) == expected


def test_determinism_check_none_skips_the_metadata_check(T, cp):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    # ``a * scale`` saves ``scale``; swapping it for a broadcast-equivalent tensor of another
    # shape changes the metadata of the recomputation, not the gradient.
    scale = {"t": T.tensor([2.0])}
    fn = lambda a: a * scale["t"]
    strict = cp.checkpoint(fn, x, use_reentrant=False)
    lenient = cp.checkpoint(fn, x, use_reentrant=False, determinism_check="none")
    scale["t"] = T.tensor([2.0, 2.0, 2.0])

    with pytest.raises(cp.CheckpointError, match="different metadata"):
        strict.sum().backward()
    lenient.sum().backward()

    np.testing.assert_allclose(to_np(x.grad), [2.0, 2.0, 2.0])
    with pytest.raises(ValueError, match=r"determinism_check should be one of \['default', "
                                         r"'none'\], but got exact"):
        cp.checkpoint(lambda a: a, x, use_reentrant=False, determinism_check="exact")


def test_debug_explains_the_non_determinism(T, cp):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    keep = {"n": 3}
    y = cp.checkpoint(lambda a: a[: keep["n"]].exp(), x, use_reentrant=False, debug=True)
    keep["n"] = 2

    with pytest.raises(cp.CheckpointError,
                       match="Detected non-determinism while running activation checkpointing"):
        y.sum().backward()


def test_context_fn_wraps_the_forward_and_the_recomputation(T, cp):
    events = []

    @contextlib.contextmanager
    def record(name):
        events.append(name)
        yield

    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = cp.checkpoint(lambda a: a.sin(), x, use_reentrant=False,
                      context_fn=lambda: (record("forward"), record("recompute")))
    events.append("backward")
    y.sum().backward()

    assert events == ["forward", "backward", "recompute"]
    with pytest.raises(ValueError, match="debug=True is incompatible with non-default context_fn"):
        cp.checkpoint(lambda a: a, x, use_reentrant=False, debug=True,
                      context_fn=lambda: (record("f"), record("r")))


# -------------------- checkpoint_sequential


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_sequential_gives_the_plain_gradient(T, cp, use_reentrant):
    layers = [lambda a: a * 2, lambda a: a.sin(), lambda a: a.exp(), lambda a: a.tanh(),
              lambda a: a + 1]
    x = T.tensor([0.1, -0.4, 0.9], requires_grad=True)
    plain = x
    for layer in layers:
        plain = layer(plain)
    (expected,) = T.autograd.grad(plain.sum(), x)

    y = cp.checkpoint_sequential(layers, 2, x, use_reentrant=use_reentrant)
    y.sum().backward()

    np.testing.assert_allclose(to_np(y), to_np(plain), rtol=1e-6)
    np.testing.assert_allclose(to_np(x.grad), to_np(expected), rtol=1e-6)
    assert y.grad_fn.name() == "AddBackward0"  # the last segment runs without checkpoint


def test_checkpoint_sequential_refuses_unknown_keywords(T, cp):
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        cp.checkpoint_sequential([lambda a: a], 1, T.tensor([1.0]), use_reentrant=False, foo=2)


# -------------------- memory: bytes saved for backward


def _storage_key(t):
    """Where the data of ``t`` lives (one key per storage, shared by views)."""
    if hasattr(t, "untyped_storage"):
        return t.untyped_storage().data_ptr()
    a = t.detach().numpy()
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a.__array_interface__["data"][0]


def _saved_activation_bytes(T, run, x0, weights):
    """Bytes of the distinct storages saved for backward while ``run`` builds its graph, not
    counting the weights (they live anyway); also the input's gradient."""
    skip = {_storage_key(w) for w in weights}
    seen = {}

    def pack(t):
        key = _storage_key(t)
        if key not in skip:
            seen.setdefault(key, t.numel() * t.element_size())
        return t

    x = T.tensor(x0, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = run(x)
    y.sum().backward()
    return sum(seen.values()), to_np(x.grad)


def test_checkpointing_a_deep_chain_saves_fewer_bytes(T, cp):
    rng = np.random.default_rng(0)
    depth, width, batch = 20, 256, 16
    weights = [T.tensor(rng.normal(0, width ** -0.5, (width, width)).astype(np.float32),
                        requires_grad=True) for _ in range(depth)]
    layers = [lambda h, w=w: (h @ w).tanh() for w in weights]
    x0 = rng.normal(size=(batch, width)).astype(np.float32)

    def chain(h):
        for layer in layers:
            h = layer(h)
        return h

    plain, g_plain = _saved_activation_bytes(T, chain, x0, weights)
    by_mode = {}
    for name, run in {
        "checkpoint(use_reentrant=False)": lambda x: cp.checkpoint(chain, x, use_reentrant=False),
        "checkpoint(use_reentrant=True)": lambda x: cp.checkpoint(chain, x, use_reentrant=True),
        "checkpoint_sequential(4 segments)": lambda x: cp.checkpoint_sequential(
            layers, 4, x, use_reentrant=False),
    }.items():
        by_mode[name], grad = _saved_activation_bytes(T, run, x0, weights)
        np.testing.assert_allclose(grad, g_plain, rtol=1e-5, atol=1e-7)

    activation = batch * width * 4
    report = f"plain: {plain} bytes; " + "; ".join(f"{k}: {v} bytes" for k, v in by_mode.items())
    # Plain: the chain's input and every tanh output; whole-chain checkpoint: the input only;
    # 4 segments: the inputs of the 3 checkpointed segments and all 6 activations of the last.
    assert plain == (depth + 1) * activation, report
    assert by_mode["checkpoint(use_reentrant=False)"] == activation, report
    assert by_mode["checkpoint(use_reentrant=True)"] == activation, report
    assert by_mode["checkpoint_sequential(4 segments)"] == (3 + 6) * activation, report
    assert by_mode["checkpoint(use_reentrant=False)"] * 20 < plain, report


@pytest.mark.parametrize("name", ["ext", "torch"])
def test_import_alone_reaches_utils_checkpoint(name):
    """``import torch`` is enough for ``torch.utils.checkpoint.checkpoint``; so for ext."""
    import subprocess
    import sys

    code = f"import {name}; print({name}.utils.checkpoint.checkpoint.__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "checkpoint"
