"""Anomaly mode: forward tracebacks on nodes, the NaN check in backward, and how it is switched.

Under ``detect_anomaly()`` every node records the forward stack in ``metadata['traceback_']``;
when a node fails in backward (or, with ``check_nan``, returns NaN) the engine first warns "Error
detected in <Node>" with that stack, then raises (reference §1.10, §3 E16, E16b, E2c).
"""

from __future__ import annotations

import importlib.util
import os
import warnings

import pytest

ENABLED = (
    "Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
    "enabled for debugging."
)
THIS_FILE = os.path.basename(__file__)
NAN_OUTPUT = r"Function '{}' returned nan values in its {} output\."


def detected(record, node):
    """The "Error detected in <node>" warnings among the recorded ones."""
    messages = [str(w.message) for w in record]
    return [m for m in messages if m.startswith("Error detected in " + node)]


@pytest.fixture(autouse=True)
def anomaly_off_afterwards(T):
    """Leave anomaly mode off even when a test fails half-way."""
    yield
    T.autograd.set_detect_anomaly(False)


def sqrt_nan_at_zero(T):
    """x.sqrt() at 0 times 0: the sqrt node's gradient is 0 / 0 = NaN for the first element."""
    x = T.tensor([0.0, 1.0], requires_grad=True)
    y = x.sqrt()
    return x, (y * 0).sum()


# -------------------- switching it on and off


def test_detect_anomaly_warns_and_enables_checking_inside_the_block(T):
    assert not T.is_anomaly_enabled()
    with pytest.warns(UserWarning, match=ENABLED):
        with T.autograd.detect_anomaly():
            assert T.is_anomaly_enabled()
            assert T.is_anomaly_check_nan_enabled()
    assert not T.is_anomaly_enabled()


def test_detect_anomaly_warns_when_created_and_enables_only_when_entered(T):
    with pytest.warns(UserWarning, match=ENABLED):
        mode = T.autograd.detect_anomaly()
    assert not T.is_anomaly_enabled()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with mode:
            assert T.is_anomaly_enabled()
    assert not T.is_anomaly_enabled()


def test_detect_anomaly_is_not_a_decorator(T):
    # torch 2.13: a plain context manager, unlike no_grad
    with pytest.warns(UserWarning, match=ENABLED):
        mode = T.autograd.detect_anomaly()
    assert not callable(mode)
    with pytest.raises(TypeError, match="object is not callable"):
        mode(lambda: None)


def test_detect_anomaly_without_nan_check(T):
    with pytest.warns(UserWarning, match=ENABLED):
        with T.autograd.detect_anomaly(check_nan=False):
            assert T.is_anomaly_enabled()
            assert not T.is_anomaly_check_nan_enabled()
    assert T.is_anomaly_check_nan_enabled()


def test_nested_detect_anomaly_restores_the_outer_settings(T):
    with pytest.warns(UserWarning, match=ENABLED):
        with T.autograd.detect_anomaly():
            with T.autograd.detect_anomaly(check_nan=False):
                assert not T.is_anomaly_check_nan_enabled()
            assert T.is_anomaly_enabled()
            assert T.is_anomaly_check_nan_enabled()
    assert not T.is_anomaly_enabled()


def test_set_detect_anomaly_as_a_plain_call(T):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        T.autograd.set_detect_anomaly(True)
        assert T.is_anomaly_enabled()
        assert T.is_anomaly_check_nan_enabled()
        T.autograd.set_detect_anomaly(False)
    assert not T.is_anomaly_enabled()


def test_set_detect_anomaly_as_a_context_manager_restores_the_previous_state(T):
    with T.autograd.set_detect_anomaly(True, check_nan=False):
        assert T.is_anomaly_enabled()
        assert not T.is_anomaly_check_nan_enabled()
    assert not T.is_anomaly_enabled()
    assert T.is_anomaly_check_nan_enabled()

    T.autograd.set_detect_anomaly(True)
    with T.autograd.set_detect_anomaly(False):
        assert not T.is_anomaly_enabled()
    assert T.is_anomaly_enabled()


# -------------------- forward tracebacks


def test_forward_records_its_traceback_on_the_node(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match=ENABLED):
        with T.autograd.detect_anomaly():
            y = x.sqrt()

    trace = y.grad_fn.metadata["traceback_"]
    assert isinstance(trace, list)
    assert all(isinstance(line, str) for line in trace)
    text = "".join(trace)
    assert THIS_FILE in text
    assert "y = x.sqrt()" in text


def test_no_traceback_is_recorded_outside_anomaly_mode(T):
    y = T.tensor([1.0, 2.0], requires_grad=True).sqrt()
    assert "traceback_" not in y.grad_fn.metadata


# -------------------- the NaN check


def test_nan_in_backward_raises_after_warning_with_the_forward_stack(T):  # E16
    with pytest.warns(UserWarning) as record:
        with T.autograd.detect_anomaly():
            x, loss = sqrt_nan_at_zero(T)
            with pytest.raises(RuntimeError, match=NAN_OUTPUT.format("SqrtBackward0", "0th")):
                loss.backward()

    assert str(record[0].message) == ENABLED
    (warning,) = detected(record, "SqrtBackward0")
    assert "Traceback of forward call that caused the error" in warning
    assert THIS_FILE in warning
    assert "y = x.sqrt()" in warning
    assert x.grad is None


def test_nan_check_names_the_output_index(T):  # E16
    a = T.tensor([0.0], requires_grad=True)
    b = T.tensor([0.0], requires_grad=True)
    with pytest.warns(UserWarning) as record:
        with T.autograd.detect_anomaly():
            with pytest.raises(RuntimeError, match=NAN_OUTPUT.format("DivBackward0", "1th")):
                (a / b).sum().backward()
    assert len(detected(record, "DivBackward0")) == 1


def test_nan_check_sees_the_gradient_summed_to_the_input_shape(T):
    # b's gradient, -a/b**2, is +inf and -inf before the broadcast sum: nan only after it
    a = T.tensor([[1.5], [-1.0]], requires_grad=True)
    b = T.tensor([0.0], requires_grad=True)
    with pytest.warns(UserWarning):
        with T.autograd.detect_anomaly():
            with pytest.raises(RuntimeError, match=NAN_OUTPUT.format("DivBackward0", "1th")):
                (a / b).sum().backward()
    assert a.grad is None


def test_nan_check_sees_the_gradients_a_post_hook_returned(T):
    a = T.tensor([0.0], requires_grad=True)
    b = T.tensor([0.0], requires_grad=True)  # its gradient -a/b**2 is nan, the hook zeroes it
    with pytest.warns(UserWarning):
        with T.autograd.detect_anomaly():
            y = a / b
            y.grad_fn.register_hook(lambda gi, go: (gi[0], T.zeros(1)))
            y.sum().backward()
    assert b.grad.tolist() == [0.0]


def test_nan_from_a_custom_function_backward_is_reported_under_its_name(T):  # E16
    class NanBack(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a.clone()

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    x = T.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning) as record:
        with T.autograd.detect_anomaly():
            y = NanBack.apply(x)
            with pytest.raises(RuntimeError, match=NAN_OUTPUT.format("NanBackBackward", "0th")):
                y.sum().backward()
    (warning,) = detected(record, "NanBackBackward")
    assert "y = NanBack.apply(x)" in warning


def test_nan_check_comes_after_the_post_hooks_and_the_release(T):
    # torch checks what a node passes on after its post hooks ran (they see the NaN) and after
    # its saved tensors were freed (a second backward finds them gone).
    x, loss = sqrt_nan_at_zero(T)
    seen = []
    node = loss.grad_fn.next_functions[0][0].next_functions[0][0]  # Sum <- Mul <- Sqrt
    assert type(node).__name__ == "SqrtBackward0"
    node.register_hook(lambda gi, go: seen.append(bool(gi[0].isnan().any())))
    with pytest.warns(UserWarning):
        with T.autograd.detect_anomaly():
            with pytest.raises(RuntimeError, match=NAN_OUTPUT.format("SqrtBackward0", "0th")):
                loss.backward()
    assert seen == [True]
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_check_nan_false_lets_nan_through_silently(T):
    with pytest.warns(UserWarning) as record:
        with T.autograd.detect_anomaly(check_nan=False):
            x, loss = sqrt_nan_at_zero(T)
            loss.backward()

    assert [str(w.message) for w in record] == [ENABLED]
    grad = x.grad.tolist()
    assert grad[0] != grad[0]  # NaN
    assert grad[1] == 0.0


def test_nan_passes_silently_outside_anomaly_mode(T):
    x, loss = sqrt_nan_at_zero(T)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss.backward()
    assert x.grad.isnan().tolist() == [True, False]


def test_set_detect_anomaly_call_also_checks_nan(T):
    T.autograd.set_detect_anomaly(True)
    _, loss = sqrt_nan_at_zero(T)
    with pytest.warns(UserWarning, match="Error detected in SqrtBackward0"):
        with pytest.raises(RuntimeError, match="returned nan values in its 0th output"):
            loss.backward()


def test_inf_is_not_an_anomaly(T):
    T.autograd.set_detect_anomaly(True)
    x = T.tensor([1.0], requires_grad=True)
    z = 1 / (x**2 - 1)
    z.backward()
    assert z.tolist() == [float("inf")]
    assert x.grad.tolist() == [float("-inf")]


# -------------------- other errors under anomaly mode


def test_error_in_a_custom_backward_is_preceded_by_the_forward_stack(T):
    class Boom(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a.clone()

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom in backward")

    x = T.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning) as record:
        with T.autograd.detect_anomaly():
            y = Boom.apply(x)
            with pytest.raises(ValueError, match="boom in backward"):
                y.sum().backward()

    (warning,) = detected(record, "BoomBackward")
    assert "y = Boom.apply(x)" in warning


def test_version_mismatch_under_anomaly_mode_gives_the_backtrace_hint(T):  # E2c
    with pytest.warns(UserWarning) as record:
        with T.autograd.detect_anomaly():
            x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
            y = x * 2
            z = y * y
            y.add_(1)
            with pytest.raises(RuntimeError) as info:
                z.sum().backward()

    (warning,) = detected(record, "MulBackward0")
    assert "z = y * y" in warning
    message = str(info.value)
    assert "is at version 1; expected version 0 instead." in message
    assert (
        "Hint: the backtrace further above shows the operation that failed to compute its "
        "gradient. The variable in question was changed in there or anywhere later. Good luck!"
    ) in message
    assert "enable anomaly detection" not in message


def test_forward_stack_keeps_user_frames_in_a_folder_named_ext(T, tmp_path):
    # Only ext's own package directory is dropped from the stack, not any path containing /ext/.
    folder = tmp_path / "ext"
    folder.mkdir()
    user_file = folder / "user_model.py"
    user_file.write_text("def forward(x):\n    return x.sqrt()\n")
    spec = importlib.util.spec_from_file_location("user_model", user_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match=ENABLED):
        with T.autograd.detect_anomaly():
            y = module.forward(x)

    text = "".join(y.grad_fn.metadata["traceback_"])
    assert str(user_file) in text
    assert "return x.sqrt()" in text
    assert THIS_FILE in text


def test_nan_check_skips_a_gradient_with_no_edge(T):
    # a view made under no_grad has no accumulator: torch computes no gradient for it
    x = T.tensor([float("inf"), -1.5], requires_grad=True)
    with T.no_grad():
        v = x.view(-1)
    with pytest.warns(UserWarning):
        with T.autograd.detect_anomaly():
            T.tan(v).sum().backward()
    assert x.grad is None


@pytest.mark.parametrize("how", ["grad", "backward_inputs"])
def test_nan_check_skips_a_gradient_the_graph_task_does_not_need(T, how):
    # torch's ops compute no gradient for an edge that leads nowhere the task goes
    a = T.tensor([[1.0, float("nan")]], requires_grad=True)
    b = T.tensor([3.0, 4.0], requires_grad=True)
    with pytest.warns(UserWarning), T.autograd.detect_anomaly():
        y = T.mv(a, b * 1)
        if how == "grad":
            (g,) = T.autograd.grad(y.sum(), [a], retain_graph=True)
        else:
            y.sum().backward(inputs=[a], retain_graph=True)
            g = a.grad
        assert g.tolist() == [[3.0, 4.0]]
        with pytest.raises(RuntimeError, match="'MvBackward0' returned nan values in its 1th"):
            T.autograd.grad(y.sum(), [b])
