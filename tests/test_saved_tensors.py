"""Saved tensors: version checks on unpack, saved-tensor hooks and their per-tensor variant.

A node records each saved tensor's ``_version`` at save time and checks it whenever the value is
unpacked (in backward or on a ``grad_fn._saved_*`` read). ``saved_tensors_hooks(pack, unpack)``
packs once per saved tensor at save time and unpacks on every access (reference §1.6).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

MODIFIED = "one of the variables needed for gradient computation has been modified by an inplace"
BACKWARD_TWICE = "Trying to backward through the graph a second time"
DETACHED = "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_()"
UNPACK_NOT_TENSOR = (
    "Output of saved tensor unpack_hook expected to be a Tensor but got result of type int"
)


def recording_hooks(log):
    def pack(t):
        log.append("pack")
        return t

    def unpack(t):
        log.append("unpack")
        return t

    return pack, unpack


def square(T):
    class Square(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    return Square


# -------------------- version checks when a saved tensor is unpacked


def test_saved_non_leaf_modified_in_place_fails_naming_the_op_and_versions(T):  # E2
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    z = y * y
    y.add_(1)

    with pytest.raises(RuntimeError) as info:
        z.sum().backward()
    message = str(info.value)
    assert message.startswith(MODIFIED)
    assert (
        f"[{T.__name__}.FloatTensor [3]], which is output 0 of Add, "
        "is at version 1; expected version 0 instead." in message
    )
    assert "Hint: enable anomaly detection" in message
    assert x.grad is None


def test_saved_output_modified_in_place_fails(T):  # E2a
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()
    y.add_(1)

    with pytest.raises(RuntimeError, match=MODIFIED) as info:
        y.sum().backward()
    assert (
        f"[{T.__name__}.FloatTensor [3]], which is output 0 of Exp, "
        "is at version 1; expected version 0 instead." in str(info.value)
    )


def test_saved_output_modified_through_a_view_fails(T):  # E2a
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.sigmoid()
    y[0:2].mul_(2)

    with pytest.raises(RuntimeError, match=r"is at version 1; expected version 0 instead"):
        y.sum().backward()


def test_saved_leaf_of_a_custom_function_modified_under_no_grad_fails(T):  # E2b
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = square(T).apply(x)
    with T.no_grad():
        x.add_(1)

    with pytest.raises(RuntimeError, match=MODIFIED) as info:
        y.sum().backward()
    message = str(info.value)
    assert f"[{T.__name__}.FloatTensor [3]] is at version 1; expected version 0 instead." in message
    assert "which is output" not in message
    assert x.grad is None


def test_saved_leaf_of_a_builtin_op_modified_under_no_grad_fails(T):  # E2b
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    with T.no_grad():
        x.mul_(2)
        x.mul_(2)

    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    message = str(info.value)
    assert f"[{T.__name__}.FloatTensor [2]] is at version 2; expected version 0 instead." in message
    assert "which is output" not in message


def test_reading_a_modified_saved_tensor_fails_too(T):  # E2
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    z = y * y
    y.add_(1)

    with pytest.raises(RuntimeError, match=r"is at version 1; expected version 0 instead"):
        z.grad_fn._saved_self


def test_modifying_a_detached_alias_is_detected(T):  # E2
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    z = y * y
    y.detach().add_(1)

    with pytest.raises(RuntimeError, match="which is output 0 of Mul, is at version 1"):
        z.sum().backward()


def test_modifying_through_data_is_not_detected_and_gives_the_new_values(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    z = y * y
    y.data.add_(1)

    z.sum().backward()
    # d/dx (2x)^2 = 2 * y * 2, computed from the modified y = 2x + 1
    assert x.grad.tolist() == [12.0, 20.0, 28.0]


def test_in_place_on_a_tensor_that_was_not_saved_is_fine(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x + 2  # add saves nothing
    with T.no_grad():
        x.add_(1)
    y.backward()
    assert x.grad.tolist() == [1.0]


def test_increment_version_bumps_by_hand_and_breaks_a_later_backward(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y * y
    T.autograd.graph.increment_version(y)

    assert y._version == 1
    assert y.tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match=r"is at version 1; expected version 0 instead"):
        z.sum().backward()


def test_increment_version_accepts_an_iterable(T):
    a = T.ones(2)
    b = T.ones(3)
    T.autograd.graph.increment_version([a, b, a])

    assert (a._version, b._version) == (2, 1)


# -------------------- saved tensors detached in place
# A saved input that had a grad_fn when saved and lost it to detach_ is refused by the backward
# formula of a built-in op (torch's generated nodes give it no history to fall back on).


@pytest.mark.parametrize("how", ["backward", "grad", "anomaly"])
def test_a_saved_non_leaf_detached_in_place_is_refused_in_backward(T, how):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    z = (y * y).sum()
    y.detach_()

    with pytest.raises(RuntimeError, match=re.escape(DETACHED)):
        if how == "backward":
            z.backward()
        elif how == "grad":
            T.autograd.grad(z, x)
        else:
            with pytest.warns(UserWarning), T.autograd.detect_anomaly():
                z.backward()
    assert x.grad is None


def test_a_saved_non_leaf_next_to_a_saved_leaf_is_refused_once_detached(T):
    w = T.tensor([1.0, 2.0], requires_grad=True)
    x = T.tensor([3.0, 4.0], requires_grad=True)
    y = x * 1
    z = (w * y).sum()
    z.backward(retain_graph=True)
    assert w.grad.tolist() == [3.0, 4.0]
    assert x.grad.tolist() == [1.0, 2.0]
    y.detach_()

    with pytest.raises(RuntimeError, match=re.escape(DETACHED)):
        z.backward()


def test_the_detached_check_comes_before_the_version_check(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y.sin().sum()
    y.add_(1)
    y.detach_()

    with pytest.raises(RuntimeError, match=re.escape(DETACHED)):
        z.backward()


def test_a_leaf_when_saved_that_gained_and_lost_a_grad_fn_fails_the_version_check(T):
    w = T.tensor([1.0, 2.0], requires_grad=True)
    c = T.ones(2)
    z = (c * w).sum()
    c.mul_(w)
    c.detach_()

    with pytest.raises(RuntimeError, match=MODIFIED):
        z.backward()


def test_a_tensor_detached_in_place_before_it_is_saved_is_an_ordinary_leaf(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.detach_()
    y.requires_grad_()
    y.sin().sum().backward()

    np.testing.assert_allclose(y.grad.numpy(), np.cos([2.0, 4.0]), rtol=1e-6)
    assert x.grad is None


def test_a_saved_output_detached_in_place_is_still_used(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).exp()
    z = y.sum()
    y.detach_()
    z.backward()

    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([2.0, 4.0]), rtol=1e-6)


def test_a_detached_saved_input_retried_after_backward_is_refused(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y.sin().sum()
    z.backward(retain_graph=True)
    y.detach_()

    with pytest.raises(RuntimeError, match=re.escape(DETACHED)):
        z.backward()


def test_a_non_leaf_saved_by_a_create_graph_backward_is_refused_once_detached(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    (g,) = T.autograd.grad(y.sin().sum(), x, create_graph=True)
    y.detach_()

    with pytest.raises(RuntimeError, match=re.escape(DETACHED)):
        g.sum().backward()


def test_a_detached_saved_input_is_still_read_through_saved_fields(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y.sin()
    y.detach_()

    saved = z.grad_fn._saved_self
    assert saved is y
    assert not saved.requires_grad


def test_a_detached_input_read_through_raw_saved_is_refused_in_backward(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y.sin()
    z.grad_fn._raw_saved_self
    y.detach_()

    with pytest.raises(RuntimeError, match=re.escape(DETACHED)):
        z.sum().backward()


def test_a_custom_function_gets_its_detached_saved_input_back(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = square(T).apply(y)
    y.detach_()
    z.sum().backward()

    # backward reads the saved input as it is now: 2 * y * g, through d y / d x = 2
    assert x.grad.tolist() == [8.0, 16.0]


@pytest.mark.parametrize("how", ["context", "register_hooks"])
def test_a_detached_input_saved_through_hooks_keeps_its_history(T, how):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    if how == "context":
        with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            z = y.sin()
    else:
        z = y.sin()
        z.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)
    y.detach_()
    z.sum().backward()

    np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos([2.0, 4.0]), rtol=1e-6)


def test_hooks_entered_only_for_backward_do_not_keep_a_detached_input(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y.sin().sum()
    y.detach_()

    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        with pytest.raises(RuntimeError, match=re.escape(DETACHED)):
            z.backward()


# -------------------- reading saved tensors after backward


def test_reading_saved_tensors_after_backward_fails(T):  # E1
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.sum().backward()

    for name in ("_saved_self", "_saved_other"):
        with pytest.raises(RuntimeError, match=BACKWARD_TWICE):
            getattr(y.grad_fn, name)


def test_reading_a_saved_result_after_backward_with_retain_graph_works(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.sum().backward(retain_graph=True)

    np.testing.assert_allclose(y.grad_fn._saved_result.detach().numpy(), np.exp([1.0, 2.0]))


# -------------------- saved_tensors_hooks


def test_pack_runs_once_per_saved_tensor_at_save_time(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(*recording_hooks(log)):
        y = x * x
        assert log == ["pack", "pack"]
        log.clear()
        x.exp()
        assert log == ["pack"]
    assert type(y.grad_fn).__name__ == "MulBackward0"


def test_unpack_runs_on_every_access_and_in_backward(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(*recording_hooks(log)):
        y = x * x
    log.clear()

    y.grad_fn._saved_self
    y.grad_fn._saved_other
    y.grad_fn._saved_self
    assert log == ["unpack"] * 3

    log.clear()
    y.sum().backward()
    assert log == ["unpack", "unpack"]
    assert x.grad.tolist() == [2.0, 4.0]


def test_pack_receives_the_input_itself(T):
    seen = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: seen.append(t is x) or t, lambda t: t):
        x * x
    assert seen == [True, True]


def test_ops_that_save_nothing_do_not_pack(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(*recording_hooks(log)):
        x + 1
        x * 3  # multiplying by a number saves no tensor
        T.ones(2) * T.ones(2)  # nothing requires grad
        with T.no_grad():
            x * x
    assert log == []


def test_pack_may_return_any_object_that_unpack_turns_back_into_a_tensor(T):
    storage = []

    def pack(t):
        storage.append(t.detach().clone())
        return len(storage) - 1

    def unpack(index):
        return storage[index]

    x = T.tensor([1.0, 2.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x.exp()
    y.sum().backward()

    assert len(storage) == 1
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)


def test_backward_uses_what_unpack_returns(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t * 10):
        y = x * T.tensor([3.0, 4.0])
    y.sum().backward()

    assert x.grad.tolist() == [30.0, 40.0]


def test_a_packed_copy_hides_a_later_in_place_change(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        y = x * 2
        z = y * y
    y.add_(1)
    z.sum().backward()

    # the packed copy of y = [2, 4] is used: d/dx (2x)^2 = 2 * y * 2
    assert x.grad.tolist() == [8.0, 16.0]


def test_an_in_place_op_packs_the_value_from_before_its_write(T):
    a = np.array([0.3, 1.3])
    x = T.tensor(a, requires_grad=True)
    w = T.tensor([3.0, 4.0], dtype=T.float64, requires_grad=True)
    packed = []

    def pack(t):
        packed.append(t.tolist())
        return t

    with T.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = x * 1
        y.cos_()
        z = x * 1
        z *= w
    (y.sum() + z.sum()).backward()

    # y.cos_() saves y before the write; z *= w saves z before the write and w (in torch's order)
    assert sorted(packed) == sorted([a.tolist(), a.tolist(), [3.0, 4.0]])
    np.testing.assert_allclose(x.grad.numpy(), -np.sin(a) + [3.0, 4.0])
    np.testing.assert_allclose(w.grad.numpy(), a)


def test_an_in_place_op_under_identity_hooks_raises_no_version_error(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        a = x * 1
        b = a * a
        a.add_(1)
    b.sum().backward()

    # The hooks keep the tensor itself, not a version to check: backward reads [2, 3].
    assert x.grad.tolist() == [4.0, 6.0]


def test_hooks_are_bound_at_save_time_not_at_backward_time(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    with T.autograd.graph.saved_tensors_hooks(*recording_hooks(log)):
        y.sum().backward()
    assert log == []

    with T.autograd.graph.saved_tensors_hooks(*recording_hooks(log)):
        y2 = x.exp()
    log.clear()
    y2.sum().backward()
    assert log == ["unpack"]


def test_custom_function_save_for_backward_goes_through_the_hooks(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(*recording_hooks(log)):
        y = square(T).apply(x)
    assert log == ["pack"]

    y.sum().backward()
    assert log == ["pack", "unpack"]
    assert x.grad.tolist() == [2.0, 4.0]


def test_unpack_returning_a_non_tensor_is_a_type_error(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 3):
        y = x.exp()
    with pytest.raises(TypeError, match=UNPACK_NOT_TENSOR):
        y.sum().backward()


def test_pack_hook_modifying_its_input_in_place_fails(T):  # E-pack
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with T.autograd.graph.saved_tensors_hooks(lambda t: t.add_(1), lambda t: t):
        with pytest.raises(
            RuntimeError, match="A saved tensor pack hook is modifying its input in place"
        ):
            y.exp()


def test_nested_hooks_the_innermost_pair_applies(T):
    log = []

    def hooks(tag):
        return (
            lambda t: log.append("pack " + tag) or t,
            lambda t: log.append("unpack " + tag) or t,
        )

    x = T.tensor([1.0, 2.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(*hooks("outer")):
        with T.autograd.graph.saved_tensors_hooks(*hooks("inner")):
            inner = x.exp()
        outer = x.sin()
    assert log == ["pack inner", "pack outer"]

    log.clear()
    inner.sum().backward()
    outer.sum().backward()
    assert log == ["unpack inner", "unpack outer"]
    assert x.grad.tolist() == pytest.approx([math.exp(v) + math.cos(v) for v in (1.0, 2.0)])


def test_hooks_stop_applying_after_the_context_exits(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(*recording_hooks(log)):
        pass
    y = x * x
    y.sum().backward()
    assert log == []


# -------------------- disable_saved_tensors_hooks


def test_disable_saved_tensors_hooks_refuses_hooks_with_the_given_message(T):
    message = "saved tensor hooks are off here (custom message 42)"
    with T.autograd.graph.disable_saved_tensors_hooks(message):
        with pytest.raises(RuntimeError) as info:
            with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    assert str(info.value) == message


def test_disabling_while_hooks_are_active_raises_the_message(T):
    message = "no hooks may be active when disabling"
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        with pytest.raises(RuntimeError) as info:
            with T.autograd.graph.disable_saved_tensors_hooks(message):
                pass
    assert str(info.value) == message


def test_ops_still_work_while_hooks_are_disabled_and_hooks_return_afterwards(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with T.autograd.graph.disable_saved_tensors_hooks("disabled"):
        y = x * x
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]

    with T.autograd.graph.saved_tensors_hooks(*recording_hooks(log)):
        x.exp()
    assert log == ["pack"]


# -------------------- per-tensor hooks: grad_fn._raw_saved_<name>.register_hooks


def test_raw_saved_tensor_hooks_pack_at_registration_and_unpack_on_access(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    raw = y.grad_fn._raw_saved_self
    assert type(raw).__name__ == "SavedTensor"

    raw.register_hooks(*recording_hooks(log))
    assert log == ["pack"]

    y.grad_fn._saved_self
    assert log == ["pack", "unpack"]

    y.sum().backward()
    assert log == ["pack", "unpack", "unpack"]  # only self is hooked, not other
    assert x.grad.tolist() == [2.0, 4.0]


def test_raw_saved_tensor_hooks_can_be_set_only_once(T):
    y = T.tensor([1.0, 2.0], requires_grad=True).exp()
    raw = y.grad_fn._raw_saved_result
    raw.register_hooks(lambda t: t, lambda t: t)
    with pytest.raises(RuntimeError, match="whose hooks have already been set"):
        raw.register_hooks(lambda t: t, lambda t: t)


def test_raw_saved_tensor_hooks_after_backward_fail(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Calling register_hooks on a saved tensor after it has"):
        y.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda t: t)


def test_amin_of_a_0d_tensor_reads_its_saved_result_as_torch_does(T):
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        x = T.tensor(-2.0, dtype=T.float64, requires_grad=True)
        y = x.amin(0)
        y[...] = 0.5  # under hooks no version check: backward sees the new value
        y.backward()
    assert x.grad.isnan().item()


def test_a_saved_no_grad_view_still_requires_grad_when_unpacked(T):
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        x = T.tensor([-1.5, -0.75], requires_grad=True)
        with T.no_grad():
            v = x.view(-1)
        w = T.ones(3, 2, requires_grad=True)
        (g,) = T.autograd.grad(w.mv(v).sum(), [w], create_graph=True)
    assert g.requires_grad and type(g.grad_fn).__name__ == "MulBackward0"


def test_inplace_op_packs_the_written_tensor_itself(T):
    # torch saves an in-place op's output after the write: the pack hook gets the tensor itself,
    # so an identity hook lets a later write show in backward (no version check under hooks).
    packed = []
    x = T.tensor([0.25, -1.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        y = x * 1
        y.sigmoid_()
        y.mul_(-1.5)
    assert len(packed) == 1 and packed[0] is y
    y.sum().backward()
    s = y.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), -1.5 * s * (1 - s), rtol=1e-6)


@pytest.mark.parametrize("keep_view,hooks", [(False, None), (True, None), (False, "identity"),
                                             (False, "clone")])
def test_saved_output_of_inplace_on_view_leads_to_base_while_view_lives(T, keep_view, hooks):
    # exp_ on a view saves its result with a weak link to the view's new grad_fn: a double
    # backward reaches the base y through it while the view (or what an identity pack hook kept:
    # the view itself) lives, and goes straight to ExpBackward0 (and on to x only) once it is
    # gone. (A clone made by a pack hook has no history: packing runs under no_grad.)
    pack = {"identity": lambda t: t, "clone": lambda t: t.clone()}.get(hooks)
    ctx = T.autograd.graph.saved_tensors_hooks(pack, lambda t: t) if hooks else None
    with ctx or T.enable_grad():
        x = T.tensor([[-0.75, 0.25, 1.5]], dtype=T.float64, requires_grad=True)
        y = x * 1
        v = y.transpose(0, 1)
        v.exp_()
    if not keep_view:
        del v
    c = T.tensor([[1.0, 2.0, 3.0]], dtype=T.float64)
    (gx,) = T.autograd.grad((y * c).sum(), [x], create_graph=True)
    ggx, ggy = T.autograd.grad(gx.sum(), [x, y], allow_unused=True)
    np.testing.assert_allclose(ggx.numpy(), (c * y).detach().numpy())
    if keep_view or hooks == "identity":
        np.testing.assert_allclose(ggy.numpy(), c.numpy())
    else:
        assert ggy is None


def test_pack_hook_runs_under_no_grad(T):
    seen = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(
            lambda t: seen.append(T.is_grad_enabled()) or t.clone(), lambda t: t):
        y = (x * 1).exp()
    assert seen == [False]
    assert y.grad_fn._saved_result.grad_fn is y.grad_fn
