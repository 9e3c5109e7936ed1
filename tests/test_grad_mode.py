"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode."""

from __future__ import annotations

import threading

import pytest


@pytest.fixture(autouse=True)
def _restore_grad_mode(T):
    """A failing test must not leave grad mode switched off for the next one."""
    yield
    if hasattr(T, "set_grad_enabled"):
        T.set_grad_enabled(True)


def test_grad_enabled_by_default(T):
    assert T.is_grad_enabled() is True
    assert T.is_inference_mode_enabled() is False


# --- no_grad / enable_grad ------------------------------------------------------------------------


def test_no_grad_context(T):
    x = T.ones(2, requires_grad=True)
    with T.no_grad():
        assert T.is_grad_enabled() is False
        y = x * 2
    assert T.is_grad_enabled() is True
    assert y.requires_grad is False
    assert y.grad_fn is None
    assert (x * 2).requires_grad is True


def test_no_grad_restores_mode_after_exception(T):
    with pytest.raises(ValueError), T.no_grad():
        raise ValueError("boom")
    assert T.is_grad_enabled() is True


def test_enable_grad_inside_no_grad(T):
    x = T.ones(2, requires_grad=True)
    with T.no_grad():
        with T.enable_grad():
            assert T.is_grad_enabled() is True
            y = x * 2
        assert T.is_grad_enabled() is False
    assert y.requires_grad is True
    assert type(y.grad_fn).__name__ == "MulBackward0"


def test_nested_no_grad(T):
    with T.no_grad():
        with T.no_grad():
            assert T.is_grad_enabled() is False
        assert T.is_grad_enabled() is False
    assert T.is_grad_enabled() is True


def test_no_grad_decorator_without_parentheses(T):
    @T.no_grad
    def f(x):
        return T.is_grad_enabled(), x * 2

    x = T.ones(2, requires_grad=True)
    enabled, y = f(x)
    assert enabled is False
    assert y.requires_grad is False
    assert T.is_grad_enabled() is True


def test_no_grad_decorator_with_parentheses(T):
    @T.no_grad()
    def f(x):
        return T.is_grad_enabled(), x * 2

    x = T.ones(2, requires_grad=True)
    enabled, y = f(x)
    assert enabled is False
    assert y.requires_grad is False
    assert T.is_grad_enabled() is True


def test_decorator_keeps_function_name(T):
    @T.no_grad()
    def my_function():
        return 1

    assert my_function.__name__ == "my_function"
    assert my_function() == 1


@pytest.mark.parametrize("parens", [False, True])
def test_enable_grad_decorator_inside_no_grad(T, parens):
    def f(x):
        return x * 2

    f = T.enable_grad()(f) if parens else T.enable_grad(f)
    x = T.ones(2, requires_grad=True)
    with T.no_grad():
        y = f(x)
        assert T.is_grad_enabled() is False
    assert y.requires_grad is True


# --- set_grad_enabled -----------------------------------------------------------------------------


def test_set_grad_enabled_as_call_takes_effect(T):
    T.set_grad_enabled(False)
    assert T.is_grad_enabled() is False
    x = T.ones(2, requires_grad=True)
    assert (x * 2).requires_grad is False
    T.set_grad_enabled(True)
    assert T.is_grad_enabled() is True
    assert (x * 2).requires_grad is True


@pytest.mark.parametrize("mode", [False, True])
def test_set_grad_enabled_context_manager(T, mode):
    with T.set_grad_enabled(mode):
        assert T.is_grad_enabled() is mode
    assert T.is_grad_enabled() is True


def test_set_grad_enabled_context_restores_inside_no_grad(T):
    with T.no_grad():
        with T.set_grad_enabled(True):
            assert T.is_grad_enabled() is True
        assert T.is_grad_enabled() is False
    assert T.is_grad_enabled() is True


def test_set_grad_enabled_decorator_restores_mode(T):
    @T.set_grad_enabled(False)
    def f():
        return T.is_grad_enabled()

    assert T.is_grad_enabled() is True
    assert f() is False
    assert T.is_grad_enabled() is True


def test_set_grad_enabled_requires_argument(T):
    with pytest.raises(TypeError):
        T.set_grad_enabled()
    assert T.is_grad_enabled() is True


# --- generators -----------------------------------------------------------------------------------


def test_no_grad_generator_keeps_mode_at_each_yield(T):
    @T.no_grad()
    def gen():
        for _ in range(3):
            yield T.is_grad_enabled()

    it = gen()
    assert next(it) is False
    assert T.is_grad_enabled() is True
    assert next(it) is False
    assert T.is_grad_enabled() is True
    assert next(it) is False
    assert T.is_grad_enabled() is True


def test_enable_grad_generator_inside_no_grad(T):
    @T.enable_grad()
    def gen():
        for _ in range(2):
            yield T.is_grad_enabled()

    with T.no_grad():
        it = gen()
        assert next(it) is True
        assert T.is_grad_enabled() is False
        assert next(it) is True


def test_decorated_generator_yields_untracked_results(T):
    x = T.ones(2, requires_grad=True)

    @T.no_grad
    def gen():
        yield x * 2
        yield x * 3

    assert [y.requires_grad for y in gen()] == [False, False]


# --- threads --------------------------------------------------------------------------------------


def test_grad_mode_is_thread_local(T):
    seen = []
    with T.no_grad():
        th = threading.Thread(target=lambda: seen.append(T.is_grad_enabled()))
        th.start()
        th.join()
        assert T.is_grad_enabled() is False
    assert seen == [True]


def test_no_grad_in_thread_does_not_leak(T):
    def work():
        with T.no_grad():
            barrier.wait()
            barrier.wait()

    barrier = threading.Barrier(2, timeout=10)
    th = threading.Thread(target=work)
    th.start()
    barrier.wait()
    enabled = T.is_grad_enabled()
    barrier.wait()
    th.join()
    assert enabled is True


# --- factories and backward under no_grad ---------------------------------------------------------


def test_factories_with_requires_grad_under_no_grad(T):
    with T.no_grad():
        a = T.ones(2, requires_grad=True)
        b = T.tensor([1.0], requires_grad=True)
        c = T.zeros(2).requires_grad_()
    for t in (a, b, c):
        assert t.requires_grad is True
        assert t.is_leaf is True


def test_ops_under_no_grad_on_fresh_leaf_do_not_track(T):
    with T.no_grad():
        a = T.ones(2, requires_grad=True)
        assert (a * a).requires_grad is False


def test_backward_inside_no_grad(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * 3).sum()
    with T.no_grad():
        loss.backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_backward_of_graph_built_in_enable_grad_inside_no_grad(T):
    with T.no_grad():
        x = T.tensor([1.0, 2.0], requires_grad=True)
        with T.enable_grad():
            loss = (x * x).sum()
        loss.backward()
    assert x.grad.tolist() == [2.0, 4.0]


# --- inference_mode -------------------------------------------------------------------------------


def test_inference_mode_context(T):
    x = T.ones(3, requires_grad=True)
    with T.inference_mode():
        assert T.is_inference_mode_enabled() is True
        assert T.is_grad_enabled() is False
        y = x * 2
    assert T.is_inference_mode_enabled() is False
    assert T.is_grad_enabled() is True
    assert y.requires_grad is False
    assert y.grad_fn is None


def test_inference_tensors(T):
    x = T.ones(3, requires_grad=True)
    with T.inference_mode():
        y = x * 2
        z = T.zeros(2)
    assert y.is_inference() is True
    assert z.is_inference() is True
    assert x.is_inference() is False
    assert (x * 2).is_inference() is False


def test_enable_grad_inside_inference_mode_does_not_track(T):
    x = T.ones(3, requires_grad=True)
    with T.inference_mode():
        with T.enable_grad():
            assert T.is_grad_enabled() is True
            y = x * 2
        assert T.is_inference_mode_enabled() is True
    assert y.requires_grad is False
    assert y.grad_fn is None
    assert y.is_inference() is True


def test_inference_mode_false_is_a_normal_region(T):
    x = T.ones(2, requires_grad=True)
    with T.inference_mode(False):
        assert T.is_inference_mode_enabled() is False
        assert T.is_grad_enabled() is True
        y = x * 2
    assert y.is_inference() is False
    assert y.requires_grad is True


def test_inference_tensor_has_no_version_counter(T):
    with T.inference_mode():
        y = T.ones(2)
    with pytest.raises(RuntimeError, match="Inference tensors do not track version counter"):
        y._version


@pytest.mark.parametrize("how", ["detach", "data"])
def test_detaching_an_inference_tensor_outside_the_mode_gives_it_a_counter_of_its_own(T, how):
    with T.inference_mode():
        x = T.tensor([1.0, 2.0])
    d = x.detach() if how == "detach" else x.data
    assert d.is_inference() and d._version == 0
    d.add_(1)  # allowed: the counter is d's own, not shared with x
    assert d._version == 1 and x.tolist() == [2.0, 3.0]
    assert d.detach()._version == 0
    with pytest.raises(RuntimeError, match="Inference tensors do not track version counter"):
        d.view(-1)._version
    with pytest.raises(RuntimeError, match="Inference tensors do not track version counter"):
        x._version
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor"):
        d.requires_grad_()
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        d * T.ones(2, requires_grad=True)
    with T.inference_mode():
        d.add_(1)  # inference mode does not count writes to inference tensors
        assert d._version == 1
        with pytest.raises(RuntimeError, match="Inference tensors do not track version"):
            d.detach()._version


def test_normal_tensor_version_starts_at_zero(T):
    assert T.ones(2)._version == 0


def test_no_grad_tensors_are_not_inference_tensors(T):
    with T.no_grad():
        y = T.ones(2) * 2
    assert y.is_inference() is False
    assert y._version == 0


@pytest.mark.parametrize("parens", [False, True])
def test_inference_mode_decorator(T, parens):
    def f(x):
        return T.is_inference_mode_enabled(), T.is_grad_enabled(), x * 2

    f = T.inference_mode()(f) if parens else T.inference_mode(f)
    enabled, grad, y = f(T.ones(2, requires_grad=True))
    assert enabled is True
    assert grad is False
    assert y.is_inference() is True
    assert T.is_inference_mode_enabled() is False


def test_inference_mode_restores_after_exception(T):
    with pytest.raises(ValueError), T.inference_mode():
        raise ValueError("boom")
    assert T.is_inference_mode_enabled() is False
    assert T.is_grad_enabled() is True


@pytest.mark.ext_only
def test_the_special_flag_follows_the_rare_modes_on_each_thread():
    import ext
    from ext._state import STATE

    assert not STATE.special
    with ext.inference_mode(), ext.autograd.detect_anomaly(check_nan=False):
        assert STATE.special
        seen = []
        thread = threading.Thread(target=lambda: seen.append((STATE.special, STATE.inference)))
        thread.start()
        thread.join()
        assert seen == [(False, False)]
    assert not STATE.special
    with ext.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        assert STATE.special
    with ext.autograd.forward_ad.dual_level():
        assert STATE.special
    assert not STATE.special
