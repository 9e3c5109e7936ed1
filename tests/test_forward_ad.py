"""Forward-mode AD, its API and errors (reference §1.7): dual levels, make_dual / unpack_dual,
and custom Functions with ``jvp``. The tangent of every built-in op is checked against a central
difference in ``test_forward_ad_ops.py``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers import to_np

# torch 2.13 warns "torch.jit.script is deprecated" when forward AD is used: noise.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

X = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]])
V = np.array([[0.25, 1.0, -2.0], [3.0, -0.5, 1.5]])


def assert_close(t, expected):
    np.testing.assert_allclose(to_np(t), np.asarray(expected), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------- levels and duals


def test_make_dual_and_unpack_dual(T):
    fwAD = T.autograd.forward_ad
    with fwAD.dual_level():
        d = fwAD.make_dual(T.tensor(X), T.tensor(V))
        unpacked = fwAD.unpack_dual(d)
        assert isinstance(unpacked, tuple)
        assert type(unpacked).__name__ == "UnpackedDualTensor"
        assert unpacked._fields == ("primal", "tangent")
        primal, tangent = unpacked
        assert unpacked.primal is primal and unpacked.tangent is tangent
        assert_close(primal, X)
        assert_close(tangent, V)
        assert tuple(d.shape) == (2, 3)
        assert_close(d, X)


def test_unpack_dual_of_a_plain_tensor_has_no_tangent(T):
    fwAD = T.autograd.forward_ad
    x = T.tensor(X)
    with fwAD.dual_level():
        primal, tangent = fwAD.unpack_dual(x)
        assert tangent is None
        assert_close(primal, X)
        # a result computed only from plain tensors has no tangent either
        assert fwAD.unpack_dual(x * 2).tangent is None


def test_unpack_dual_outside_any_level_has_no_tangent(T):
    fwAD = T.autograd.forward_ad
    primal, tangent = fwAD.unpack_dual(T.tensor(X))
    assert tangent is None
    assert_close(primal, X)


def test_tangent_is_none_after_the_level_exits(T):
    fwAD = T.autograd.forward_ad
    with fwAD.dual_level():
        d = fwAD.make_dual(T.tensor(X), T.tensor(V))
        y = d * 3
        assert_close(fwAD.unpack_dual(y).tangent, 3 * V)
    for t, values in ((d, X), (y, 3 * X)):
        primal, tangent = fwAD.unpack_dual(t)
        assert tangent is None
        assert_close(primal, values)
    # an op on a former dual gives a plain tensor
    assert fwAD.unpack_dual(d * 2).tangent is None


def test_a_new_level_does_not_see_old_tangents(T):
    fwAD = T.autograd.forward_ad
    with fwAD.dual_level():
        d = fwAD.make_dual(T.tensor(X), T.tensor(V))
    with fwAD.dual_level():
        assert fwAD.unpack_dual(d).tangent is None
        assert fwAD.unpack_dual(d.exp()).tangent is None


def test_enter_and_exit_dual_level(T):
    fwAD = T.autograd.forward_ad
    level = fwAD.enter_dual_level()
    try:
        assert isinstance(level, int)
        d = fwAD.make_dual(T.tensor(X), T.tensor(V), level=level)
        assert_close(fwAD.unpack_dual(d, level=level).tangent, V)
        assert_close(fwAD.unpack_dual(d * d).tangent, 2 * X * V)
    finally:
        fwAD.exit_dual_level(level=level)
    assert fwAD.unpack_dual(d).tangent is None
    # the level is gone: a new one can be entered
    level = fwAD.enter_dual_level()
    fwAD.exit_dual_level()


def test_dual_level_exits_when_its_block_raises(T):
    fwAD = T.autograd.forward_ad
    with pytest.raises(KeyError):
        with fwAD.dual_level():
            d = fwAD.make_dual(T.tensor(X), T.tensor(V))
            raise KeyError("boom")
    assert fwAD.unpack_dual(d).tangent is None
    with fwAD.dual_level():  # not "nested": the failed block's level was exited
        d = fwAD.make_dual(T.tensor(X), T.tensor(V))
        assert_close(fwAD.unpack_dual(d).tangent, V)


def test_duals_and_their_results_do_not_require_grad(T):
    fwAD = T.autograd.forward_ad
    with fwAD.dual_level():
        d = fwAD.make_dual(T.tensor(X), T.tensor(V))
        assert d.requires_grad is False
        assert d.grad_fn is None
        y = (d.exp() * d).sum(1)
        assert y.requires_grad is False
        assert y.grad_fn is None
        primal, tangent = fwAD.unpack_dual(y)
        assert primal.requires_grad is False and primal.grad_fn is None
        assert tangent.requires_grad is False and tangent.grad_fn is None
        assert_close(tangent, ((X + 1) * np.exp(X) * V).sum(1))


def test_dual_of_a_leaf_that_requires_grad_still_backpropagates(T):
    fwAD = T.autograd.forward_ad
    x = T.tensor(X, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, T.tensor(V))
        assert d.requires_grad is True
        y = (d * d).sum()
        assert y.requires_grad is True
        y.backward()
        assert_close(fwAD.unpack_dual(y).tangent, (2 * X * V).sum())
    assert_close(x.grad, 2 * X)


def test_dual_of_a_leaf_that_requires_grad_is_a_view_backward_of_it(T):
    fwAD = T.autograd.forward_ad
    x = T.tensor(X, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, T.tensor(V))
        assert d.grad_fn.name() == "ViewBackward0"
        assert d.grad_fn.next_functions[0][0].variable is x


def test_make_dual_without_a_level_raises(T):
    fwAD = T.autograd.forward_ad
    msg = ("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
           "enter_dual_level() first.")
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        fwAD.make_dual(T.tensor(X), T.tensor(V))


def test_make_dual_after_the_level_exits_raises(T):
    fwAD = T.autograd.forward_ad
    with fwAD.dual_level():
        pass
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(T.tensor(X), T.tensor(V))


@pytest.mark.parametrize(
    "primal, tangent, sizes",
    [((2,), (3,), ("[2]", "[3]")), ((2, 3), (3, 2), ("[2, 3]", "[3, 2]")),
     ((2, 3), (6,), ("[2, 3]", "[6]"))],
)
def test_make_dual_with_a_tangent_of_the_wrong_size_raises(T, primal, tangent, sizes):
    fwAD = T.autograd.forward_ad
    msg = ("Trying to set a forward gradient that has a different size than that of the original "
           "Tensor, this is not supported. Tensor is of size {} while the given forward gradient "
           "is of size {}.").format(*sizes)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            fwAD.make_dual(T.tensor(np.ones(primal)), T.tensor(np.ones(tangent)))


def test_nested_levels_raise(T):
    fwAD = T.autograd.forward_ad
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported at the "
                                               "moment"):
            with fwAD.dual_level():
                pass
        with pytest.raises(RuntimeError, match="Nested forward mode AD"):
            fwAD.enter_dual_level()
        # the outer level is still active
        d = fwAD.make_dual(T.tensor(X), T.tensor(V))
        assert_close(fwAD.unpack_dual(d * 2).tangent, 2 * V)


def test_exit_of_a_level_that_is_not_the_last_raises(T):
    fwAD = T.autograd.forward_ad
    level = fwAD.enter_dual_level()
    try:
        with pytest.raises(RuntimeError, match="Trying to exit a forward AD level that was not "
                                               "the last one that was created"):
            fwAD.exit_dual_level(level=level + 1)
    finally:
        fwAD.exit_dual_level(level=level)


def test_integer_primal_raises_value_error(T):
    fwAD = T.autograd.forward_ad
    msg = f"Expected primal to be floating point or complex, but got: {T.int64}"
    with fwAD.dual_level():
        with pytest.raises(ValueError, match=re.escape(msg)):
            fwAD.make_dual(T.tensor([1, 2]), T.tensor([1.0, 1.0]))


def test_integer_tangent_raises_value_error(T):
    fwAD = T.autograd.forward_ad
    msg = f"Expected tangent to be floating point or complex, but got: {T.int64}"
    with fwAD.dual_level():
        with pytest.raises(ValueError, match=re.escape(msg)):
            fwAD.make_dual(T.tensor([1.0, 2.0]), T.tensor([1, 1]))


def test_primal_of_a_dual_keeps_no_tangent(T):
    fwAD = T.autograd.forward_ad
    with fwAD.dual_level():
        d = fwAD.make_dual(T.tensor(X), T.tensor(V))
        primal = fwAD.unpack_dual(d).primal
        assert fwAD.unpack_dual(primal).tangent is None
        assert fwAD.unpack_dual(primal * 2).tangent is None
        # a dual built from a dual's primal carries only the new tangent
        d2 = fwAD.make_dual(primal, T.tensor(2 * V))
        assert_close(fwAD.unpack_dual(d2 + d).tangent, 3 * V)


def test_tangents_of_two_duals_add_up(T):
    fwAD = T.autograd.forward_ad
    y, w = X[::-1].copy(), V[::-1].copy()
    with fwAD.dual_level():
        a = fwAD.make_dual(T.tensor(X), T.tensor(V))
        b = fwAD.make_dual(T.tensor(y), T.tensor(w))
        out = a * b + a.sin()
        assert_close(fwAD.unpack_dual(out).tangent, V * y + X * w + np.cos(X) * V)


# ---------------------------------------------------------------------------- custom Functions


def exp_times(T, log=None, with_jvp=True, materialize=True):
    """A Function ``exp(x) * y`` with a jvp using ``save_for_forward`` (``log`` records calls)."""

    def forward(ctx, x, y):
        if log is not None:
            log.append("forward")
        if not materialize:
            ctx.set_materialize_grads(False)
        ctx.save_for_forward(x, y)
        ctx.scale = 1.0
        return x.exp() * y

    def jvp(ctx, tx, ty):
        if log is not None:
            log.append(("jvp", tx is None, ty is None))
        x, y = ctx.saved_tensors
        ex = x.exp()
        out = 0
        if tx is not None:
            out = out + tx * ex * y * ctx.scale
        if ty is not None:
            out = out + ty * ex
        return out

    def backward(ctx, g):
        return None, None

    body = {"forward": staticmethod(forward), "backward": staticmethod(backward)}
    if with_jvp:
        body["jvp"] = staticmethod(jvp)
    return type("ExpTimes", (T.autograd.Function,), body)


def test_custom_function_jvp_with_save_for_forward(T):
    fwAD = T.autograd.forward_ad
    y, w = X[::-1].copy(), V[::-1].copy()
    fn = exp_times(T)
    with fwAD.dual_level():
        a = fwAD.make_dual(T.tensor(X), T.tensor(V))
        b = fwAD.make_dual(T.tensor(y), T.tensor(w))
        out = fn.apply(a, b)
        primal, tangent = fwAD.unpack_dual(out)
        assert_close(primal, np.exp(X) * y)
        assert_close(tangent, np.exp(X) * y * V + np.exp(X) * w)
        # the tangent flows on through built-in ops
        assert_close(fwAD.unpack_dual(out.sum(0)).tangent,
                     (np.exp(X) * y * V + np.exp(X) * w).sum(0))


def test_custom_function_jvp_gets_zeros_for_an_input_without_tangent(T):
    fwAD = T.autograd.forward_ad
    log = []
    y = X[::-1].copy()
    fn = exp_times(T, log)
    with fwAD.dual_level():
        a = fwAD.make_dual(T.tensor(X), T.tensor(V))
        out = fn.apply(a, T.tensor(y))
        assert log == ["forward", ("jvp", False, False)]
        assert_close(fwAD.unpack_dual(out).tangent, np.exp(X) * y * V)


def test_custom_function_set_materialize_grads_false_gives_none_tangents(T):
    fwAD = T.autograd.forward_ad
    log = []
    y, w = X[::-1].copy(), V[::-1].copy()
    fn = exp_times(T, log, materialize=False)
    with fwAD.dual_level():
        a = fwAD.make_dual(T.tensor(X), T.tensor(V))
        out = fn.apply(a, T.tensor(y))
        assert_close(fwAD.unpack_dual(out).tangent, np.exp(X) * y * V)
        b = fwAD.make_dual(T.tensor(y), T.tensor(w))
        out = fn.apply(T.tensor(X), b)
        assert_close(fwAD.unpack_dual(out).tangent, np.exp(X) * w)
    assert log == ["forward", ("jvp", False, True), "forward", ("jvp", True, False)]


def test_custom_function_jvp_runs_right_after_forward(T):
    fwAD = T.autograd.forward_ad
    log = []
    fn = exp_times(T, log)
    with fwAD.dual_level():
        a = fwAD.make_dual(T.tensor(X), T.tensor(V))
        out = fn.apply(a, T.tensor(X))
        log.append("apply returned")
        fwAD.unpack_dual(out)
        log.append("unpacked")
    assert log == ["forward", ("jvp", False, False), "apply returned", "unpacked"]


def test_custom_function_jvp_is_not_called_without_dual_inputs(T):
    fwAD = T.autograd.forward_ad
    log = []
    fn = exp_times(T, log)
    with fwAD.dual_level():
        out = fn.apply(T.tensor(X), T.tensor(X))
        assert fwAD.unpack_dual(out).tangent is None
    out = fn.apply(T.tensor(X), T.tensor(X))
    assert log == ["forward", "forward"]


def test_custom_function_without_jvp_raises_not_implemented(T):
    fwAD = T.autograd.forward_ad
    fn = exp_times(T, with_jvp=False)
    msg = ("You must implement the jvp function for custom autograd.Function to use it with "
           "forward mode AD.")
    with fwAD.dual_level():
        a = fwAD.make_dual(T.tensor(X), T.tensor(V))
        with pytest.raises(NotImplementedError, match=re.escape(msg)):
            fn.apply(a, T.tensor(X))
        # without a dual input the missing jvp is never needed
        assert_close(fn.apply(T.tensor(X), T.tensor(X)), np.exp(X) * X)


def test_custom_function_jvp_with_two_outputs(T):
    fwAD = T.autograd.forward_ad

    class SinCos(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            return x.sin(), x.cos()

        @staticmethod
        def jvp(ctx, tx):
            (x,) = ctx.saved_tensors
            return tx * x.cos(), -tx * x.sin()

        @staticmethod
        def backward(ctx, gs, gc):
            return None

    with fwAD.dual_level():
        s, c = SinCos.apply(fwAD.make_dual(T.tensor(X), T.tensor(V)))
        assert_close(fwAD.unpack_dual(s).tangent, np.cos(X) * V)
        assert_close(fwAD.unpack_dual(c).tangent, -np.sin(X) * V)
        assert_close(fwAD.unpack_dual(s * c).tangent, np.cos(2 * X) * V)


def test_custom_function_separate_style_jvp(T):
    fwAD = T.autograd.forward_ad

    class Cube(T.autograd.Function):
        @staticmethod
        def forward(x):
            return x * x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_forward(inputs[0])

        @staticmethod
        def jvp(ctx, tx):
            (x,) = ctx.saved_tensors
            return 3 * x * x * tx

        @staticmethod
        def backward(ctx, g):
            return None

    with fwAD.dual_level():
        out = Cube.apply(fwAD.make_dual(T.tensor(X), T.tensor(V)))
        primal, tangent = fwAD.unpack_dual(out)
        assert_close(primal, X ** 3)
        assert_close(tangent, 3 * X * X * V)


def test_an_in_place_write_into_a_slice_of_a_dual_keeps_the_rest_of_its_tangent(T):
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.tensor([1.0, 2.0, 3.0]), T.tensor([10.0, 20.0, 30.0]))
        x[1:].mul_(2)
        y = fw.make_dual(T.tensor([1.0, 2.0, 3.0]), T.tensor([10.0, 20.0, 30.0]))
        y[0:1] = 0.5
        np.testing.assert_array_equal(fw.unpack_dual(x).tangent.numpy(), [10.0, 40.0, 60.0])
        np.testing.assert_array_equal(fw.unpack_dual(y).tangent.numpy(), [0.0, 20.0, 30.0])


def test_an_in_place_op_on_a_dual_updates_the_tangent_given_to_make_dual(T):
    fw = T.autograd.forward_ad
    with fw.dual_level():
        tangent = T.tensor([10.0, 20.0, 30.0])
        p = T.tensor([1.0, 2.0, 3.0])
        x = fw.make_dual(p, tangent)
        x.mul_(2)
        np.testing.assert_array_equal(tangent.numpy(), [20.0, 40.0, 60.0])
        assert fw.unpack_dual(p).tangent is None


def test_a_view_written_with_a_dual_gives_its_base_a_tangent(T):
    fw = T.autograd.forward_ad
    with fw.dual_level():
        b = T.zeros(3)
        v = b[1:]
        v.copy_(fw.make_dual(T.ones(2), T.tensor([2.0, 3.0])))
        np.testing.assert_array_equal(fw.unpack_dual(b).tangent.numpy(), [0.0, 2.0, 3.0])
        b.mul_(2)
        np.testing.assert_array_equal(fw.unpack_dual(v).tangent.numpy(), [4.0, 6.0])


@pytest.mark.parametrize("split", ["unbind", "split", "chunk"])
def test_a_multi_output_op_giving_one_piece_carries_its_tangent(T, split):
    fw = T.autograd.forward_ad
    with fw.dual_level():
        w = fw.make_dual(T.tensor([[1.0, 2.0]]), T.tensor([[10.0, 20.0]]))
        u, = {"unbind": lambda: w.unbind(0), "split": lambda: w.split(1),
              "chunk": lambda: w.chunk(1)}[split]()
        np.testing.assert_array_equal(fw.unpack_dual(u).tangent.numpy().ravel(), [10.0, 20.0])


def test_an_in_place_write_to_a_result_leaves_the_tangent_it_was_passed_from(T):
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.tensor(0.0), T.tensor(-0.5)).requires_grad_()
        y = x + 0
        y.fill_(1)
        assert fw.unpack_dual(x).tangent.item() == -0.5
        assert fw.unpack_dual(y).tangent.item() == 0.0


def test_inference_mode_turns_forward_ad_off(T):
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.tensor(0.9375, dtype=T.float64), T.tensor(-1.0, dtype=T.float64))
        with T.inference_mode():
            y = x * 2
        assert fw.unpack_dual(y).tangent is None


def test_detach__drops_the_tangent(T):
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.tensor([1.0, 2.0]), T.tensor([-1.0, 0.5])).requires_grad_()
        y = x * 2
        y.detach_()
        assert fw.unpack_dual(y).tangent is None


def test_a_no_grad_view_of_a_dual_that_requires_grad_itself_does_not(T):
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.ones(2, 2), T.ones(2, 2)).requires_grad_()
        with T.no_grad():
            v = x.view(-1)
        assert not v.requires_grad and v.is_leaf


def test_clamp_tangent_follows_torchs_branches_including_at_nan(T):
    fw = T.autograd.forward_ad
    nan = float("nan")
    with fw.dual_level():
        x = fw.make_dual(T.tensor([1.0, 3.0, 5.0, nan]), T.tensor([1.0, 1.0, 1.0, 1.0]))
        lo = fw.make_dual(T.tensor([2.0, 2.0, 2.0, 2.0]), T.tensor([10.0, 10.0, 10.0, 10.0]))
        hi = fw.make_dual(T.tensor([4.0, 4.0, 1.0, 4.0]), T.tensor([100.0] * 4))
        cases = {
            "both": (T.clamp(x, lo, hi), [10.0, 1.0, 100.0, 1.0]),
            "min": (T.clamp(x, lo), [10.0, 1.0, 1.0, 10.0]),
            "max": (T.clamp(x, max=hi), [1.0, 1.0, 100.0, 100.0]),
            "numbers": (T.clamp(x, 2.0, 4.0), [0.0, 1.0, 0.0, 0.0]),
            "clamp_min": (x.clamp_min(lo), [10.0, 1.0, 1.0, 10.0]),
        }
        for name, (y, want) in cases.items():
            assert fw.unpack_dual(y).tangent.tolist() == want, name


def test_a_view_made_in_inference_mode_reads_its_tangent_from_what_it_views(T):
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.tensor([0.5, 1.5, 2.5], dtype=T.float64),
                         T.tensor([1.0, 2.0, 3.0], dtype=T.float64)).requires_grad_()
        with T.inference_mode():
            v = x.view(-1)[1:]
            w = v.unsqueeze(0)
            y = x * 2
        assert fw.unpack_dual(v).tangent.tolist() == [2.0, 3.0]
        assert fw.unpack_dual(w).tangent.tolist() == [[2.0, 3.0]]
        assert fw.unpack_dual(y).tangent is None


def test_a_view_made_in_inference_mode_shares_its_tangent_with_what_it_views(T):
    # torch gives such a view the view of its base's tangent: an in-place write to either
    # shows in the other's tangent.
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.tensor([1.0, 2.0, 3.0]), T.tensor([-1.0, 0.5, 2.0]))
        with T.inference_mode():
            v = x[None]
            w = x.view(-1)[1:]
        x.mul_(2)
        assert fw.unpack_dual(v).tangent.tolist() == [[-2.0, 1.0, 4.0]]
        w.fill_(3.0)
        assert fw.unpack_dual(x).tangent.tolist() == [-2.0, 0.0, 0.0]
        assert fw.unpack_dual(v).tangent.tolist() == [[-2.0, 0.0, 0.0]]


def test_a_view_made_in_inference_mode_of_an_expanded_dual_has_its_tangent(T):
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.tensor(1.75), T.tensor(-0.5))
        e = x[()].expand((3,))
        with T.inference_mode():
            v = e[...]
        assert fw.unpack_dual(v).tangent.tolist() == [-0.5, -0.5, -0.5]


def test_layer_norm_tangent_without_an_input_tangent_still_takes_the_inputs_part(T):
    # torch computes the input's part from zeros: times an infinite or nan weight, or over a
    # row holding inf, it is nan
    fw = T.autograd.forward_ad
    inf, nan = float("inf"), float("nan")
    x = T.tensor([[1.0, 0.0, 1.0, 1.0], [1.0, inf, 3.0, 4.0]], dtype=T.float64)
    with fw.dual_level():
        w = fw.make_dual(T.tensor([1.25, -0.5, inf, nan], dtype=T.float64),
                         T.tensor([1.0, 0.0, -1.0, 0.5], dtype=T.float64))
        b = fw.make_dual(T.zeros(4, dtype=T.float64), T.ones(4, dtype=T.float64))
        by_weight = fw.unpack_dual(T.nn.functional.layer_norm(x, (4,), w)).tangent
        by_bias = fw.unpack_dual(T.nn.functional.layer_norm(x, (4,), None, b)).tangent
    assert np.isnan(to_np(by_weight)).tolist() == [[False, False, True, True], [True] * 4]
    assert np.isnan(to_np(by_bias)).tolist() == [[False] * 4, [True] * 4]
    np.testing.assert_allclose(to_np(by_weight)[0, :2], [3 ** -0.5, 0.0], rtol=1e-4)
    assert to_np(by_bias)[0].tolist() == [1.0] * 4


# ---------------------------------------------------------------------------- forward-over-reverse


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_mse_loss_gradients_tangent_is_nan_where_input_minus_target_is(T, reduction):
    # torch's rule takes the incoming gradient's part from zeros when it has no tangent:
    # 0 * (x - target) is nan where the difference is
    fw = T.autograd.forward_ad
    nan = float("nan")
    with fw.dual_level():
        a = fw.make_dual(T.tensor([2.0, 1.0], dtype=T.float64),
                         T.tensor([-1.0, 2.0], dtype=T.float64)).requires_grad_()
        b = fw.make_dual(T.tensor([nan, 3.0], dtype=T.float64),
                         T.tensor([0.5, 2.0], dtype=T.float64)).requires_grad_()
        loss = T.nn.functional.mse_loss(a, b, reduction=reduction)
        ga, gb = T.autograd.grad(loss, [a, b], create_graph=True)
        for g in (ga, gb):
            tangent = to_np(fw.unpack_dual(g).tangent)
            assert np.isnan(tangent[0]) and tangent[1] == 0.0


@pytest.mark.parametrize("n", [0, 3])
def test_layer_norms_gradient_carries_a_tangent_unless_it_is_empty(T, n):
    # torch's rule of native_layer_norm_backward returns plain zeros when there is nothing to
    # normalize
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.ones(n, dtype=T.float64), T.ones(n, dtype=T.float64))
        w = fw.make_dual(T.ones(n, dtype=T.float64), T.ones(n, dtype=T.float64)).requires_grad_()
        y = T.nn.functional.layer_norm(x, (n,), w)
        (gw,) = T.autograd.grad(y.sum(), [w], create_graph=True)
        tangent = fw.unpack_dual(gw).tangent
        assert (tangent is None) == (n == 0)


@pytest.mark.parametrize("write", ["whole", "view"])
def test_a_gradient_through_an_in_place_op_that_saves_its_result_carries_its_tangent(T, write):
    # d/dx sum(exp(x)**2) = 2 exp(2x), whose tangent along v is 4 exp(2x) v: the saved result
    # of exp_ keeps the tangent it was given.
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.tensor(X), T.tensor(V)).requires_grad_()
        y = x * 1
        (y if write == "whole" else y.transpose(0, 1)).exp_()
        (g,) = T.autograd.grad((y * y).sum(), [x], create_graph=True)
        np.testing.assert_allclose(to_np(fw.unpack_dual(g).tangent), 4 * np.exp(2 * X) * V,
                                   rtol=1e-12)


@pytest.mark.parametrize("when", ["in_level", "after_level", "without_tangent"])
def test_the_base_tangent_keeps_the_view_an_in_place_op_saved_its_result_through(T, when):
    # exp_ on a temporary view saves its result with a weak link to the view's new grad_fn.
    # Under forward AD the op's tangent is made from that result and written into the base's
    # tangent, which keeps the view's grad_fn alive: a double backward inside the level reaches
    # the base y. After the level exits (tangents are dropped), or when nothing had a tangent,
    # the view's grad_fn is gone and it goes to ExpBackward0 and on to x only.
    fw = T.autograd.forward_ad
    c = T.tensor([[1.0, 2.0, 3.0]], dtype=T.float64)

    def grads(x, y):
        (gx,) = T.autograd.grad((y * c).sum(), [x], create_graph=True)
        return T.autograd.grad(gx.sum(), [x, y], allow_unused=True)

    with fw.dual_level():
        x = T.tensor([[-0.75, 0.25, 1.5]], dtype=T.float64)
        if when != "without_tangent":
            x = fw.make_dual(x, T.tensor([[1.0, -0.5, 2.0]], dtype=T.float64))
        x.requires_grad_()
        y = x * 1
        y.transpose(0, 1).exp_()
        if when != "after_level":
            ggx, ggy = grads(x, y)
    if when == "after_level":
        ggx, ggy = grads(x, y)
    np.testing.assert_allclose(to_np(ggx), to_np(c * y))
    if when == "in_level":
        np.testing.assert_allclose(to_np(ggy), to_np(c))
    else:
        assert ggy is None


def test_the_value_an_in_place_op_saves_keeps_the_tangent_from_before_the_write(T):
    # x / (b + 1) saved x's old value: loss = sum(x**2) / (b+1)**2 after x.div_(b + 1), so
    # d loss/db = -2 sum(x**2) / (b+1)**3, whose tangent along x's (1, 0) is -4 x0 / (b+1)**3.
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.tensor([2.0, 4.0]), T.tensor([1.0, 0.0]))
        b = fw.make_dual(T.tensor(1.0), T.tensor(0.0)).requires_grad_()
        x.div_(b + 1)
        (g,) = T.autograd.grad((x * x).sum(), [b], create_graph=True)
        assert g.item() == -5.0
        assert fw.unpack_dual(g).tangent.item() == -1.0


def test_the_gradient_of_relu_has_a_zero_tangent_along_its_input(T):
    # relu's gradient is piecewise constant in x: torch gives it a zero tangent, not none.
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.tensor([0.25, -1.0]), T.tensor([1.0, 1.0])).requires_grad_()
        (g,) = T.autograd.grad((x.relu() * T.tensor([1.0, 2.0])).sum(), [x], create_graph=True)
        assert fw.unpack_dual(g).tangent.tolist() == [0.0, 0.0]


def test_logsumexp_tangent_is_torchs_normalised_sum_nan_when_empty(T):
    # torch's logsumexp_jvp: sum(exp(x - amax) * t) / sum(exp(x - amax)); 0 / 0 when empty.
    fw = T.autograd.forward_ad
    with fw.dual_level():
        e = fw.make_dual(T.zeros(0, 2, dtype=T.float64), T.zeros(0, 2, dtype=T.float64))
        x = fw.make_dual(T.tensor([1.0, 2.0], dtype=T.float64), T.tensor([1.0, 3.0],
                                                                         dtype=T.float64))
        assert np.isnan(to_np(fw.unpack_dual(T.logsumexp(e, 0)).tangent)).all()
        w = np.exp([1.0, 2.0]) / np.exp([1.0, 2.0]).sum()
        assert_close(fw.unpack_dual(T.logsumexp(x, 0)).tangent, w @ [1.0, 3.0])


@pytest.mark.parametrize("order", ["integer_input", "integer_target"])
def test_mse_loss_tangent_with_an_integer_side_raises_torchs_cast_error(T, order):
    # torch's forward derivative of mse_loss writes each side's term into that side's dtype.
    fw = T.autograd.forward_ad
    x = T.tensor([[-1.5], [0.25]], dtype=T.float64)
    with fw.dual_level():
        d = fw.make_dual(x, T.ones(2, 1, dtype=T.float64))
        args = (x.long(), d) if order == "integer_input" else (d, x.long())
        with pytest.raises(RuntimeError, match="result type Double can't be cast to the "
                                               "desired output type Long"):
            T.nn.functional.mse_loss(*args)
        assert T.nn.functional.mse_loss(x.long(), x).item() == 0.15625


def test_a_dual_is_a_view_of_its_primal_so_its_views_lose_it_after_a_write(T):
    # make_dual's result views the primal: a view of the dual, after a write to the dual, reads
    # its history from the primal (which has none), so the dual gets no gradient through it.
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.tensor(0.25), T.tensor(-1.0)).requires_grad_()
        r = x.reshape((1,))
        with T.no_grad():
            x.view((1, 1)).add_(1)
        assert type(r.grad_fn).__name__ == "AsStridedBackward0"
        with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
            T.autograd.grad((r * 2).sum(), [x])


def test_mse_loss_tangent_is_torchs_sum_of_one_term_per_side(T):
    # (x - y) * 2 * tx + (y - x) * 2 * ty, with zeros for a target without tangent: an infinite
    # difference gives nan (inf * 0 or inf - inf), not the infinity of 2 (x - y) (tx - ty).
    fw = T.autograd.forward_ad
    inf = float("inf")
    with fw.dual_level():
        x = fw.make_dual(T.tensor([-inf, 1.0]), T.tensor([0.5, 1.0]))
        y = fw.make_dual(T.tensor([inf, 3.0]), T.tensor([inf, -1.0]))
        both = fw.unpack_dual(T.nn.functional.mse_loss(x, y, reduction="none")).tangent
        one = fw.unpack_dual(T.nn.functional.mse_loss(x, T.tensor([inf, 3.0]),
                                                      reduction="none")).tangent
        np.testing.assert_array_equal(to_np(both), [np.nan, -8.0])
        np.testing.assert_array_equal(to_np(one), [np.nan, -4.0])


def test_the_tangent_a_view_made_in_inference_mode_reads_is_a_normal_tensor(T):
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.tensor([0.0, -0.75, 1.5]), T.tensor([0.5, -0.5, 1.0])).requires_grad_()
        with T.inference_mode():
            v = x.view(-1)
        assert not fw.unpack_dual(v).tangent.is_inference()
        w = fw.make_dual(T.eye(3), T.ones(3, 3)).requires_grad_()
        assert fw.unpack_dual(T.matmul(v, w)).tangent.tolist() == [1.25, 0.25, 1.75]


def test_tangent_dtype_of_add_and_sub_follows_torchs_zero_tangent_times_alpha(T):
    # torch multiplies the zero tangent of an operand that has none by alpha taken as a 0-d
    # tensor of its own (float64 for a float), so the tangent can be wider than the output
    fw = T.autograd.forward_ad
    with fw.dual_level():
        a0 = fw.make_dual(T.tensor(2.0), T.tensor(1.0))
        a1 = fw.make_dual(T.tensor([2.0]), T.tensor([1.0]))
        i0, i1 = T.tensor(3), T.tensor([3])
        cases = {
            "rsub(i0, a0, alpha=0.5)": (T.rsub(i0, a0, alpha=0.5), T.float64),
            "rsub(i1, a1, alpha=0.5)": (T.rsub(i1, a1, alpha=0.5), T.float64),
            "sub(a1, i1, alpha=0.5)": (T.sub(a1, i1, alpha=0.5), T.float64),
            "add(a0, i0, alpha=0.5)": (T.add(a0, i0, alpha=0.5), T.float64),
            "sub(a0, 3, alpha=0.5)": (T.sub(a0, 3, alpha=0.5), T.float64),
            "sub(a0, f32 0-d, alpha=0.5)": (T.sub(a0, T.tensor(3.0), alpha=0.5), T.float64),
            "sub(a1, f32 0-d, alpha=0.5)": (T.sub(a1, T.tensor(3.0), alpha=0.5), T.float32),
            "sub(a1, i0, alpha=0.5)": (T.sub(a1, i0, alpha=0.5), T.float32),
            "sub(a1, i1, alpha=1.0)": (T.sub(a1, i1, alpha=1.0), T.float32),
            "sub(a0, i0, alpha=2)": (T.sub(a0, i0, alpha=2), T.float32),
            "add(i0, a0, alpha=0.5)": (T.add(i0, a0, alpha=0.5), T.float32),
            "rsub(a0, 3.0, alpha=0.5)": (T.rsub(a0, 3.0, alpha=0.5), T.float32),
        }
        for name, (y, want) in cases.items():
            assert y.dtype == T.float32, name
            assert fw.unpack_dual(y).tangent.dtype == want, name
        # later ops keep the wider tangent, as torch's formulas do
        y = T.rsub(i1, a1, alpha=0.5)
        assert fw.unpack_dual((y * T.ones(1)).sum()).tangent.dtype == T.float64
        assert fw.unpack_dual(y.sum()).tangent.item() == 1.0


def test_a_tangent_of_another_dtype_than_its_primal_keeps_it_through_ops(T):
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.tensor([2.0, 3.0]), T.tensor([1.0, -1.0], dtype=T.float64))
        y = (x * 2).exp().sum()
        assert y.dtype == T.float32
        assert fw.unpack_dual(y).tangent.dtype == T.float64


@pytest.mark.parametrize("target", ["whole", "view", "part", "transposed"])
@pytest.mark.parametrize("op", ["copy_", "copy_ broadcast", "mul_", "add_ broadcast"])
def test_an_in_place_op_on_a_tensor_without_tangent_keeps_the_dtype_of_the_new_one(T, op,
                                                                                   target):
    # torch gives a float32 tensor without a tangent, written from a float64 dual, the
    # tangent the op's formula gives (float64), and gives it to the base of a view laid out
    # as its base; a view laid out otherwise, or a part, writes into zeros of the base's dtype,
    # and so does a source's tangent broadcast by copy_
    fw = T.autograd.forward_ad
    with fw.dual_level():
        b = fw.make_dual(T.tensor([[0.25, 2.0], [1.5, -0.5]], dtype=T.float64),
                         T.tensor([[-1.0, 0.5], [2.0, 0.25]], dtype=T.float64))
        base = T.ones(3, 2) if target == "part" else T.ones(2, 2)
        a = {"whole": base, "view": base[...], "part": base[:2], "transposed": base.t()}[target]
        src = b[0] if op.endswith("broadcast") else b
        getattr(a, op.split()[0])(src)
        tangent = fw.unpack_dual(base).tangent
        wide = target in ("whole", "view") and op != "copy_ broadcast"
        assert tangent.dtype == (T.float64 if wide else T.float32)
        assert fw.unpack_dual(a).tangent.dtype == tangent.dtype
        expected = np.broadcast_to(to_np(fw.unpack_dual(src).tangent), (2, 2))
        np.testing.assert_array_equal(to_np(fw.unpack_dual(a).tangent), expected)


def test_a_cast_gradient_written_back_through_copy_slices_keeps_its_wide_tangent(T):
    # the backward of an in-place op on a view (CopySlices) copies the op's gradient, float64
    # with a float64 tangent, into a copy of the incoming gradient, which has no tangent
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.tensor([-1.75]), T.tensor([1.0])).requires_grad_()
        y = fw.make_dual(T.tensor([0.5], dtype=T.float64), T.tensor([2.0], dtype=T.float64))
        z = x * 1
        z[:].mul_(y)
        (g,) = T.autograd.grad(z.sum(), [x], create_graph=True)
        assert g.dtype == T.float32
        assert fw.unpack_dual(g).tangent.dtype == T.float64
        assert fw.unpack_dual(g).tangent.tolist() == [2.0]


def test_tangent_of_x_to_the_power_false_takes_the_formula_as_its_gradient_does(T):
    # torch's exponent == 0 shortcut is never taken for a bool: 0 * x^-1 * t is nan at x = 0
    fw = T.autograd.forward_ad
    x = T.tensor([0.0, 1.0, -1.25, float("inf")], dtype=T.float64)
    with fw.dual_level():
        d = fw.make_dual(x, T.tensor([0.5, 1.0, -1.0, 1.0], dtype=T.float64))
        by_false = fw.unpack_dual(d ** False).tangent
        by_zero = fw.unpack_dual(d ** 0).tangent
    assert np.isnan(to_np(by_false)).tolist() == [True, False, False, False]
    assert to_np(by_false)[1:].tolist() == [0.0, 0.0, 0.0]
    assert to_np(by_zero).tolist() == [0.0] * 4


def test_tangent_of_zero_to_a_negative_power_is_torchs_minus_inf(T):
    # d/dy 0**y = 0**y log(0): torch takes 0 for y >= 0 and 0**y * -inf otherwise.
    fw = T.autograd.forward_ad
    with fw.dual_level():
        y = fw.make_dual(T.tensor([0.5, -1.0, 0.0]), T.ones(3))
        assert fw.unpack_dual(0 ** y).tangent.tolist() == [0.0, -float("inf"), 0.0]


@pytest.mark.parametrize("op", ["mm", "mv", "bmm", "addmm", "matmul", "linear"])
def test_a_matrix_product_tangent_counts_a_missing_tangent_as_zeros(T, op):
    # torch's mm jvp is ta @ b + a @ tb with zeros for a missing ta: nan where b has a nan
    # or an inf (0 * inf), where skipping the term would give a number.
    fw = T.autograd.forward_ad
    nan, inf = float("nan"), float("inf")
    a = T.tensor([[1.0, 1.0], [3.0, 2.0]])
    b_value = T.tensor([[1.0, nan], [inf, 4.0]])
    with fw.dual_level():
        b = fw.make_dual(b_value, T.ones(2, 2))
        out = {"mm": lambda: a.mm(b), "mv": lambda: b.mv(a[0]),
               "bmm": lambda: T.bmm(a[None], b[None]), "addmm": lambda: T.addmm(a, a, b),
               "matmul": lambda: T.matmul(a[0], b),
               "linear": lambda: T.nn.functional.linear(a, b)}[op]()
        assert np.isnan(to_np(fw.unpack_dual(out).tangent)).all()


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_variance_tangent_without_degrees_of_freedom_is_torchs(T):
    # torch: the sum of t * (nan where x is its mean, inf elsewhere) for a full variance, the
    # ordinary formula with 2 / (N - correction) along a dim.
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.tensor([-0.5, 0.0]), T.tensor([-1.0, 0.5]))
        assert np.isnan(fw.unpack_dual(x.var(correction=2)).tangent.item())
        assert fw.unpack_dual(x.var(0, correction=2)).tangent.item() == float("inf")
        assert fw.unpack_dual(x.var(0, correction=3)).tangent.item() == -0.75
        assert np.isnan(fw.unpack_dual(x.std(correction=3)).tangent.item())


def test_extremum_tangents_follow_torchs_formulas_at_nan(T):
    # maximum: tb + w (ta - tb) with w in {0, 1/2, 1}: a nan tangent spreads even from the side
    # that loses; amax and max(): the tangents where x equals the result, shared (0 / 0 at nan).
    fw = T.autograd.forward_ad
    nan = float("nan")
    with fw.dual_level():
        a = fw.make_dual(T.tensor([nan, 1.0]), T.tensor([2.0, nan]))
        b = fw.make_dual(T.tensor([0.0, 3.0]), T.tensor([-0.5, 1.0]))
        m = fw.make_dual(T.tensor([1.0, 2.0, 2.0]), T.tensor([1.0, 2.0, 4.0]))
        np.testing.assert_array_equal(to_np(fw.unpack_dual(T.maximum(b, a)).tangent), [2.0, nan])
        np.testing.assert_array_equal(to_np(fw.unpack_dual(T.minimum(a, b)).tangent), [-0.5, nan])
        assert np.isnan(fw.unpack_dual(a.amax()).tangent.item())
        assert np.isnan(fw.unpack_dual(a[0].amax()).tangent.item())
        assert np.isnan(fw.unpack_dual(a.max()).tangent.item())
        assert fw.unpack_dual(m.amax()).tangent.item() == 3.0
        assert fw.unpack_dual(m.max()).tangent.item() == 3.0


def test_division_tangent_is_torchs_ta_minus_tb_times_result_over_b(T):
    # (ta - tb * a/b) / b: at b = 0 it is inf or nan as torch's, not the nan of ta/b - tb a/b^2
    fw = T.autograd.forward_ad
    with fw.dual_level():
        a = fw.make_dual(T.tensor([0.75, 1.0], dtype=T.float64), T.tensor([-0.5, -1.0],
                                                                           dtype=T.float64))
        b = fw.make_dual(T.tensor([0.0, 3.0], dtype=T.float64), T.tensor([-0.5, 1.0],
                                                                          dtype=T.float64))
        np.testing.assert_allclose(to_np(fw.unpack_dual(a / b).tangent), [np.inf, -4 / 9])


def test_nan_to_num_tangent_and_gradient_are_multiplied_by_isfinite(T):
    # torch: t * isfinite(x) (a nan tangent stays nan where x is finite) and grad * isfinite(x)
    fw = T.autograd.forward_ad
    nan, inf = float("nan"), float("inf")
    with fw.dual_level():
        x = fw.make_dual(T.tensor([1.0, nan, inf]), T.tensor([nan, 1.0, 2.0]))
        np.testing.assert_array_equal(to_np(fw.unpack_dual(T.nan_to_num(x)).tangent),
                                      [nan, 0.0, 0.0])
    y = T.tensor([1.0, nan, inf, 2.0], requires_grad=True)
    T.nan_to_num(y).backward(T.tensor([nan, 1.0, inf, inf]))
    np.testing.assert_array_equal(to_np(y.grad), [nan, 0.0, nan, inf])


def test_custom_function_jvp_runs_before_its_tensors_are_saved(T):
    # torch runs jvp while wrapping the outputs, before saving: jvp sees no saved tensors, and
    # a missing jvp is reported before an inference tensor's refusal to be saved.
    fw = T.autograd.forward_ad
    seen = []

    class Double(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def jvp(ctx, t):
            seen.append(len(ctx.saved_tensors))
            return t * 2

    class NoJvp(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

    with fw.dual_level():
        x = fw.make_dual(T.tensor([1.0]), T.tensor([1.0])).requires_grad_()
        Double.apply(x)
        with T.inference_mode():
            frozen = x * 2
        with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
            NoJvp.apply(frozen, x)
    assert seen == [0]


def test_a_missing_jvp_raises_after_a_dirty_view_input_was_rebased(T):
    # torch sets the history (the base of a view modified in place gets CopySlices) before it
    # asks for the jvp.
    fw = T.autograd.forward_ad

    class Dirty(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with fw.dual_level():
        x = fw.make_dual(T.ones(2, 1, dtype=T.float64), T.ones(2, 1, dtype=T.float64))
        y = x.requires_grad_() * 1
        with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
            Dirty.apply(y[:, :])
        assert type(y.grad_fn).__name__ == "CopySlices"
        y.sum().backward()
        assert x.grad.tolist() == [[2.0], [2.0]]


@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_a_bitwise_op_refuses_a_tangent_before_it_checks_shapes_and_dtypes(T, op):
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.ones(2, 3, dtype=T.float64), T.ones(2, 3, dtype=T.float64))
        for other in (T.ones(6, dtype=T.float64), T.ones(3, dtype=T.float64), 1.5):
            with pytest.raises(NotImplementedError,
                               match=f"Trying to use forward AD with aten::{op} that does not "
                                     "support it."):
                getattr(T, op)(x, other)
        with pytest.raises(NotImplementedError, match="aten::bitwise_not that does not support"):
            x.bitwise_not()
        with pytest.raises(RuntimeError, match="The size of tensor a"):
            getattr(T, op)(x.detach(), T.ones(6, dtype=T.float64))


@pytest.mark.parametrize("op", ["min", "max", "pow", "exp", "sum"])
def test_forward_rule_of_an_input_written_in_place_before_the_op(T, op):
    # The rule reads what the op saves at once: an input at version 1 is intact there.
    fw = T.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(T.tensor([[-0.25, -1.0], [0.75, -2.0]], dtype=T.float64),
                         T.tensor([[1.0, 0.5], [-1.0, 0.25]], dtype=T.float64))
        x.requires_grad_()
        with T.no_grad():
            x.view(4).clamp_(min=-1.5)
        y = {"min": x.min, "max": x.max, "pow": lambda: x ** 3, "exp": x.exp,
             "sum": x.sum}[op]()
        t = fw.unpack_dual(y).tangent
    # clamp_ writes the tangent too (no_grad does not stop forward AD): 0 where it clamped
    tx = np.array([[1.0, 0.5], [-1.0, 0.0]])
    xs = to_np(x.detach())
    expected = {"min": tx[1, 1], "max": tx[1, 0], "sum": tx.sum(), "pow": 3 * xs ** 2 * tx,
                "exp": np.exp(xs) * tx}[op]
    np.testing.assert_allclose(to_np(t), expected)


def test_view_of_a_dual_whose_tangent_is_laid_out_otherwise(T):
    # The primal is contiguous, its tangent a transpose: the view's tangent is reshaped.
    fw = T.autograd.forward_ad
    t = T.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=T.float64).t()
    with fw.dual_level():
        x = fw.make_dual(T.zeros(2, 2, dtype=T.float64), t)
        y = x.view(4)
        assert fw.unpack_dual(y).tangent.tolist() == [1.0, 3.0, 2.0, 4.0]


def test_a_broadcast_sum_tangent_is_fresh_so_an_in_place_write_can_change_it(T):
    # (torch's tangent of a - s, s 0-d with a tangent, is a new tensor of a's shape, not an
    # expanded view: seed 4092 of the deep fuzzer)
    fw = T.autograd.forward_ad
    with fw.dual_level():
        a = T.zeros(2, 3, dtype=T.float64)
        s = fw.make_dual(T.tensor(0.0, dtype=T.float64), T.tensor(1.0, dtype=T.float64))
        y = a - s
        y[0, :1] = 0.25
        assert fw.unpack_dual(y).tangent.tolist() == [[0.0, -1.0, -1.0], [-1.0, -1.0, -1.0]]


def test_backward_under_forward_ad_skips_the_gradient_of_an_input_without_edge(T):
    # silu's backward op has no forward-AD formula: torch never calls it for a saved input
    # that has no gradient edge (a no_grad view of a tensor requiring grad; fuzz seed 2702)
    fw = T.autograd.forward_ad
    with fw.dual_level():
        v = fw.make_dual(T.tensor([1.5, 0.3, 0.25]), T.tensor([0.0, -1.0, 0.5]))
        w = v.requires_grad_() * 1
        with T.no_grad():
            view = w.view(-1)
        y = T.nn.functional.silu(view)
        y.sum().backward()
        assert y.grad_fn is not None and w.grad is None
