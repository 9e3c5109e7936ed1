"""The graph is freed by reference counting: no cycles, no recursion, torch stays unimported."""

from __future__ import annotations

import gc
import subprocess
import sys

import numpy as np
import pytest


def _chain_forward_backward(T, n: int) -> None:
    x = T.tensor(np.linspace(0.1, 1.0, 4), requires_grad=True)
    y = x
    for _ in range(n):
        y = y.sin() * 1.0001 + 0.1
    y.sum().backward()
    assert x.grad.shape == (4,)


def assert_no_cycles(scenario) -> None:
    """Run ``scenario`` twice (the first run warms up lazy caches), the second with the cyclic
    collector off, and check that it left nothing for the collector: no object of ext, and no
    torch tensor or autograd node, among what the collector finds unreachable. (torch.compile's
    own objects are not counted: an earlier test's compile leaves garbage that the collector may
    find during any later run.)"""
    scenario()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # (what the collector finds stays in gc.garbage to be read)
    try:
        scenario()
        gc.collect()
        ours = [o for o in gc.garbage if _engine_object(o)]
        assert ours == [], f"{len(ours)} engine objects in reference cycles, e.g. " \
            f"{sorted({type(o).__qualname__ for o in ours})[:8]}"
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def _engine_object(o) -> bool:
    """An object of ext, or a tensor or autograd node of torch (not, say, the shape environment
    of an earlier torch.compile, which torch leaves to the collector)."""
    if type(o).__module__.split(".")[0] == "ext":
        return True
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(o, (torch.Tensor, torch.autograd.graph.Node))


def test_a_1000_node_chain_leaves_no_cycles(T):
    assert_no_cycles(lambda: _chain_forward_backward(T, 1000))


def test_a_graph_not_backwarded_leaves_no_cycles(T):
    def scenario():
        x = T.tensor(np.ones(3), requires_grad=True)
        w = T.tensor(np.full((3, 3), 0.5), requires_grad=True)
        loss = ((w @ x).tanh() * x.exp()).sigmoid().mean()
        loss.retain_grad()
        loss.backward(retain_graph=True)
        assert loss.grad.item() == 1.0

    assert_no_cycles(scenario)


_EXP = {}


def _exp_function(T):
    """A custom Exp that saves its output (defined once per backend: classes are cyclic)."""
    if T not in _EXP:
        class Exp(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return g * y

        _EXP[T] = Exp
    return _EXP[T]


def test_a_custom_function_that_saves_its_output_leaves_no_cycles(T):
    exp = _exp_function(T)

    def scenario():
        x = T.tensor(np.ones(3), requires_grad=True)
        y = exp.apply(x)
        y.sum().backward(retain_graph=True)
        np.testing.assert_allclose(x.grad.numpy(), np.exp(np.ones(3)))

    assert_no_cycles(scenario)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's forward AD warns of jit
def test_an_in_place_op_on_a_view_under_forward_ad_leaves_no_cycles(T):
    # The base's tangent keeps the view's grad_fn alive. When the base is the output of an op
    # that saves it (with its tangent), that grad_fn's graph reaches the base's tangent too.
    fw = T.autograd.forward_ad

    def scenario():
        with fw.dual_level():
            x = fw.make_dual(T.tensor(np.ones(3)), T.tensor(np.ones(3))).requires_grad_()
            y = x.exp()
            y[1:].exp_()
            z = x * 1
            z.transpose(0, 0).sigmoid_()
            (g,) = T.autograd.grad(z.sum(), [x], create_graph=True)
            assert T.autograd.grad(g.sum(), [z])[0].shape == (3,)

    assert_no_cycles(scenario)


def test_a_100000_node_chain_backpropagates_with_the_default_recursion_limit(T):
    assert sys.getrecursionlimit() <= 1000 * 10
    x = T.tensor([0.5], requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward()
    assert x.grad.item() == 1.0
    del y
    # Dropping the head of a 100,000-node chain must not recurse either.


@pytest.mark.ext_only
def test_importing_ext_does_not_import_torch():
    code = "import sys, ext; ext.tensor([1.0]).sin(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
