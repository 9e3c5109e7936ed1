"""Hooks: tensor hooks, retain_grad, post-accumulate-grad hooks, Node pre- and post-hooks, handles.

The firing order follows reference §2.1 (observed in torch 2.13): for each node as it runs, tensor
pre-hooks (registration order), then the retain_grad update, then Node pre-hooks, then the node,
then Node post-hooks. For a leaf the node is its AccumulateGrad, and the post-accumulate-grad hook
runs right after ``.grad`` is updated.
"""

from __future__ import annotations

import gc
import math

import pytest

SIZE_CHANGED = "has changed the size of value"
NO_GRAD_HOOK = "cannot register a hook on a tensor that doesn't require gradient"
WRONG_COUNT = r"has returned an incorrect number of values \(got {}, but expected {}\)"
POST_ACC_RETURN = r"Tensor post accumulate grad hooks should return None\."
NO_RETAIN_GRAD = "can't retain_grad on Tensor that has requires_grad=False"


def values(grads):
    """Lists (or None) for a tensor, or for each entry of a tuple of gradients."""
    if grads is None:
        return None
    if isinstance(grads, tuple):
        return [values(g) for g in grads]
    return grads.tolist()


def leaf(T, data=(1.0, 2.0)):
    return T.tensor(list(data), requires_grad=True)


# -------------------- the hook-order script of reference §2.1


def test_hook_order_script_records_every_hook_in_engine_order(T):
    events = []
    x = leaf(T)
    y = x * 3
    z = (y * y).sum()

    # hooks on the non-leaf y, registration order deliberately scrambled
    y.grad_fn.register_hook(
        lambda gi, go: events.append(("y node post", values(gi), values(go), values(y.grad)))
    )
    y.grad_fn.register_prehook(lambda go: events.append(("y node pre", values(go), values(y.grad))))
    y.register_hook(lambda g: events.append(("y tensor hook 1", values(g), values(y.grad))))
    y.retain_grad()

    def times_ten(g):
        events.append(("y tensor hook 2", values(g), values(y.grad)))
        return g * 10

    y.register_hook(times_ten)

    # hooks on the leaf x and its AccumulateGrad
    acc = y.grad_fn.next_functions[0][0]
    acc.register_hook(
        lambda gi, go: events.append(("x acc post", values(gi), values(go), values(x.grad)))
    )
    acc.register_prehook(lambda go: events.append(("x acc pre", values(go), values(x.grad))))
    x.register_post_accumulate_grad_hook(
        lambda t: events.append(("x post-accumulate", t is x, values(t.grad)))
    )
    x.register_hook(lambda g: events.append(("x tensor hook", values(g), values(x.grad))))

    z.backward()

    assert events == [
        ("y tensor hook 1", [6.0, 12.0], None),
        ("y tensor hook 2", [6.0, 12.0], None),
        ("y node pre", [[60.0, 120.0]], [60.0, 120.0]),
        ("y node post", [[180.0, 360.0], None], [[60.0, 120.0]], [60.0, 120.0]),
        ("x tensor hook", [180.0, 360.0], None),
        ("x acc pre", [[180.0, 360.0]], None),
        ("x post-accumulate", True, [180.0, 360.0]),
        ("x acc post", [], [[180.0, 360.0]], [180.0, 360.0]),
    ]
    assert y.grad.tolist() == [60.0, 120.0]
    assert x.grad.tolist() == [180.0, 360.0]


# -------------------- Tensor.register_hook


def test_leaf_hooks_run_in_registration_order_each_seeing_the_previous_return(T):
    seen = []
    x = leaf(T)

    def plus_one(g):
        seen.append(("first", g.tolist()))
        return g + 1

    def double(g):
        seen.append(("second", g.tolist()))
        return g * 2

    x.register_hook(plus_one)
    x.register_hook(double)
    (x * 3).sum().backward()

    assert seen == [("first", [3.0, 3.0]), ("second", [4.0, 4.0])]
    assert x.grad.tolist() == [8.0, 8.0]


def test_non_leaf_hooks_run_in_registration_order_each_seeing_the_previous_return(T):
    seen = []
    x = leaf(T)
    y = x * 2

    def minus_one(g):
        seen.append(("first", g.tolist()))
        return g - 1

    def observe(g):
        seen.append(("second", g.tolist()))

    y.register_hook(minus_one)
    y.register_hook(observe)
    (y * 5).sum().backward()

    assert seen == [("first", [5.0, 5.0]), ("second", [4.0, 4.0])]
    assert x.grad.tolist() == [8.0, 8.0]  # (5 - 1) * 2


def test_hook_returning_none_keeps_the_gradient(T):
    seen = []
    x = leaf(T)
    x.register_hook(lambda g: seen.append(g.tolist()))
    (x * 3).sum().backward()

    assert seen == [[3.0, 3.0]]
    assert x.grad.tolist() == [3.0, 3.0]


def test_returned_tensor_replaces_the_gradient_sent_further_back(T):
    x = leaf(T)
    y = x * 2
    y.register_hook(lambda g: g * 0 + T.tensor([1.0, -1.0]))
    (y * 7).sum().backward()

    assert x.grad.tolist() == [2.0, -2.0]


def test_non_leaf_used_on_several_paths_gets_one_call_with_the_summed_gradient(T):
    calls = []
    x = leaf(T)
    y = x * 2
    y.register_hook(lambda g: calls.append(g.tolist()))
    (y * 3 + y * y).sum().backward()

    # d/dy (3y + y^2) = 3 + 2y with y = [2, 4]
    assert calls == [[7.0, 11.0]]
    assert x.grad.tolist() == [14.0, 22.0]


def test_leaf_used_on_several_paths_gets_one_call_with_the_summed_gradient(T):
    calls = []
    x = leaf(T)
    x.register_hook(lambda g: calls.append(g.tolist()))
    (x * 2 + x * x + x.exp()).sum().backward()

    expected = [2 + 2 * v + math.exp(v) for v in (1.0, 2.0)]
    assert len(calls) == 1
    assert calls[0] == pytest.approx(expected)


def test_hook_fires_on_every_backward(T):
    calls = []
    x = leaf(T)
    x.register_hook(lambda g: calls.append(g.tolist()))
    y = (x * 3).sum()
    y.backward(retain_graph=True)
    y.backward()

    assert calls == [[3.0, 3.0], [3.0, 3.0]]
    assert x.grad.tolist() == [6.0, 6.0]


def two_outputs(T):
    class Two(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    return Two


def test_hook_on_an_output_that_gets_no_gradient_sees_none(T):
    seen = []
    x = leaf(T)
    a, b = two_outputs(T).apply(x)
    b.register_hook(lambda g: seen.append(g))
    b.retain_grad()
    a.sum().backward()

    assert seen == [None]
    assert b.grad is None
    assert x.grad.tolist() == [2.0, 2.0]


def test_hook_on_an_unused_piece_of_unbind_sees_none_before_the_node_prehook(T):
    seen = []
    x = leaf(T)
    a, b = (x * 1).unbind(0)
    b.register_hook(lambda g: seen.append(g))
    a.grad_fn.register_prehook(lambda go: seen.append(values(go)))
    a.backward()

    assert seen == [None, [1.0, None]]


def test_leaf_that_gets_no_gradient_still_runs_its_hook_and_post_accumulate_hook(T):
    class FirstOnly(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g, None

    seen = []
    x, y = leaf(T), leaf(T)
    y.register_hook(lambda g: seen.append(g))
    y.register_post_accumulate_grad_hook(lambda t: seen.append("post"))
    FirstOnly.apply(x, y).sum().backward()

    assert seen == [None, "post"]
    assert y.grad is None


def test_hook_cannot_replace_a_none_gradient(T):
    x = leaf(T)
    a, b = two_outputs(T).apply(x)
    b.register_hook(lambda g: T.ones(2))
    with pytest.raises(RuntimeError, match="can't replace a None gradient with a non-None value"):
        a.sum().backward()


def test_hook_before_an_in_place_op_stays_with_the_old_grad_fn(T):
    events = []
    a = leaf(T, (0.5, 1.0))
    t = a.sin()
    t.register_hook(lambda g: events.append(("A", g.tolist())))
    t.cos_()
    t.register_hook(lambda g: events.append(("B", g.tolist())))

    assert type(t.grad_fn).__name__ == "CosBackward0"
    assert type(t.grad_fn.next_functions[0][0]).__name__ == "SinBackward0"

    t.sum().backward()

    # hook B sees d(sum)/d(new t); hook A, on SinBackward0, sees d/d(sin a) = -sin(sin a)
    assert [name for name, _ in events] == ["B", "A"]
    assert events[0][1] == [1.0, 1.0]
    assert events[1][1] == pytest.approx([-math.sin(math.sin(v)) for v in (0.5, 1.0)], rel=1e-6)


# -------------------- retain_grad


def test_retain_grad_runs_after_every_tensor_hook_even_later_registered_ones(T):
    seen_inside = []
    x = leaf(T)
    y = x * 2
    y.retain_grad()

    def triple(g):
        seen_inside.append(values(y.grad))
        return g * 3

    y.register_hook(triple)
    y.sum().backward()

    assert seen_inside == [None]
    assert y.grad.tolist() == [3.0, 3.0]
    assert x.grad.tolist() == [6.0, 6.0]


def test_retain_grad_runs_before_node_pre_hooks(T):
    seen = []
    x = leaf(T)
    y = x * 2
    y.grad_fn.register_prehook(lambda go: seen.append(values(y.grad)))
    y.retain_grad()
    (y * 4).sum().backward()

    assert seen == [[4.0, 4.0]]


def test_retain_grad_follows_the_tensor_to_its_new_grad_fn_after_in_place(T):
    a = leaf(T, (0.5, 1.0))
    t = a.sin()
    t.retain_grad()
    t.cos_()
    (t * 2).sum().backward()

    assert t.grad.tolist() == [2.0, 2.0]


def test_retain_grad_on_a_leaf_does_nothing(T):
    x = leaf(T)
    x.retain_grad()

    assert x.retains_grad is False
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


# -------------------- register_post_accumulate_grad_hook


def test_post_accumulate_grad_hook_receives_the_leaf_with_grad_already_updated(T):
    seen = []
    x = leaf(T)
    x.register_post_accumulate_grad_hook(lambda t: seen.append((t is x, values(t.grad))))
    y = (x * 3).sum()
    y.backward(retain_graph=True)
    y.backward()

    assert seen == [(True, [3.0, 3.0]), (True, [6.0, 6.0])]


def test_post_accumulate_grad_hook_may_mutate_grad_in_place_under_no_grad(T):
    x = leaf(T)

    def halve(t):
        with T.no_grad():
            t.grad.mul_(0.5)

    x.register_post_accumulate_grad_hook(halve)
    (x * 4).sum().backward()

    assert x.grad.tolist() == [2.0, 2.0]


def test_post_accumulate_grad_hook_can_step_the_parameter_like_an_optimizer(T):
    x = leaf(T)

    def sgd_step(t):
        with T.no_grad():
            t.sub_(0.5 * t.grad)
        t.grad = None

    x.register_post_accumulate_grad_hook(sgd_step)
    (x * 4).sum().backward()

    assert x.tolist() == [-1.0, 0.0]
    assert x.grad is None
    assert x.is_leaf and x.requires_grad


def test_post_accumulate_grad_hook_is_not_run_by_autograd_grad(T):
    seen = []
    x = leaf(T)
    x.register_post_accumulate_grad_hook(lambda t: seen.append("post"))
    (g,) = T.autograd.grad((x * 3).sum(), x)

    assert seen == []
    assert g.tolist() == [3.0, 3.0]
    assert x.grad is None


# -------------------- Node.register_prehook and Node.register_hook


def test_node_prehook_gets_grad_outputs_and_a_returned_tuple_replaces_them(T):
    seen = []
    x = leaf(T)
    y = x * 2
    y.grad_fn.register_prehook(lambda go: seen.append(("first", values(go))))
    y.grad_fn.register_prehook(lambda go: (go[0] * 5,))
    y.grad_fn.register_prehook(lambda go: seen.append(("third", values(go))))
    y.sum().backward()

    assert seen == [("first", [[1.0, 1.0]]), ("third", [[5.0, 5.0]])]
    assert x.grad.tolist() == [10.0, 10.0]


def test_node_post_hook_gets_grad_inputs_with_none_for_a_number_operand(T):
    seen = []
    x = leaf(T)
    y = x * 2
    y.grad_fn.register_hook(lambda gi, go: seen.append((values(gi), values(go))))
    (y * 3).sum().backward()

    assert seen == [([[6.0, 6.0], None], [[3.0, 3.0]])]


def test_node_post_hook_sees_none_for_a_gradient_the_graph_task_does_not_need(T):
    seen = []
    a = T.tensor([[1.0, 2.0]], requires_grad=True)
    b = T.tensor([3.0, 4.0], requires_grad=True)
    c = b * 1
    y = T.mv(a, c)
    y.grad_fn.register_hook(lambda gi, go: seen.append(values(gi)))
    T.autograd.grad(y.sum(), [a], retain_graph=True)
    T.autograd.grad(y.sum(), [c], retain_graph=True)
    y.sum().backward(inputs=[a], retain_graph=True)
    y.sum().backward()

    assert seen == [[[[3.0, 4.0]], None], [None, [1.0, 2.0]], [[[3.0, 4.0]], None],
                    [[[3.0, 4.0]], [1.0, 2.0]]]


def test_node_post_hook_of_a_custom_function_sees_every_gradient_it_returned(T):
    class Mul(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g * 3, g * 2

    seen = []
    a = T.tensor([1.0, 2.0], requires_grad=True)
    c = T.tensor([3.0, 4.0], requires_grad=True) * 1
    y = Mul.apply(a, c)
    y.grad_fn.register_hook(lambda gi, go: seen.append(values(gi)))
    T.autograd.grad(y.sum(), [c])

    assert seen == [[[3.0, 3.0], [2.0, 2.0]]]


def shapes_and_dtypes(grads):
    return [None if g is None else (tuple(g.shape), str(g.dtype).split(".")[-1]) for g in grads]


def test_node_post_hook_sees_gradients_reduced_to_the_input_shapes(T):
    seen = []
    a = leaf(T, (1.0, 2.0, 3.0))
    c = a + T.ones(2, 3, requires_grad=True)
    c.grad_fn.register_hook(lambda gi, go: seen.append(shapes_and_dtypes(gi)))
    c.sum().backward()

    assert seen == [[((3,), "float32"), ((2, 3), "float32")]]
    assert a.grad.tolist() == [2.0, 2.0, 2.0]


def test_node_post_hook_sees_gradients_cast_to_the_input_dtypes(T):
    class Mixed(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x.double() * y

        @staticmethod
        def backward(ctx, g):
            return g, g

    seen = []
    a = leaf(T, (1.0, 2.0, 3.0))
    c = Mixed.apply(a, T.ones(2, 3, dtype=T.float64))
    c.grad_fn.register_hook(lambda gi, go: seen.append(shapes_and_dtypes(gi)))
    c.sum().backward()

    # The gradient for y, which needs none, has no edge and is left as backward returned it.
    assert seen == [[((3,), "float32"), ((2, 3), "float64")]]
    assert a.grad.dtype == T.float32


def test_node_post_hook_sees_one_gradient_per_input_of_cat_and_stack(T):
    seen = []
    d = T.cat([T.ones(2, 1, requires_grad=True), T.ones(2, 1, dtype=T.int64)], 0)
    d.grad_fn.register_hook(lambda gi, go: seen.append(shapes_and_dtypes(gi)))
    e = T.stack([leaf(T), T.ones(2)])
    e.grad_fn.register_hook(lambda gi, go: seen.append(shapes_and_dtypes(gi)))
    (d.sum() + e.sum()).backward()

    assert sorted(seen) == [[((2,), "float32"), ((2,), "float32")],
                            [((2, 1), "float32"), ((2, 1), "float32")]]


def test_node_post_hook_returned_tuple_replaces_grad_inputs(T):
    x = leaf(T)
    w = leaf(T, (3.0, 4.0))
    y = x * w
    y.grad_fn.register_hook(lambda gi, go: (gi[0] + 100, None))
    y.sum().backward()

    assert x.grad.tolist() == [103.0, 104.0]
    assert w.grad is None


def test_node_post_hook_sees_none_for_an_input_the_backward_does_not_need(T):
    # A built-in node leaves out the gradient of an input on no path to what autograd.grad
    # (or backward(inputs=...)) asks for; a custom Function's backward returns them all.
    class Mul(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g * 2, g * 3

    seen = []
    a, b = leaf(T), leaf(T)
    a1, b1 = a * 1, b * 1
    y = a1 * b1
    z = Mul.apply(a1, b1)
    for node in (y.grad_fn, z.grad_fn):
        node.register_hook(lambda gi, go: seen.append([None if g is None else values(g)
                                                       for g in gi]))
    T.autograd.grad((y + z).sum(), [b1], retain_graph=True)
    (y + z).sum().backward(inputs=[b])

    assert sorted(seen, key=str) == [[None, [1.0, 2.0]]] * 2 + [[[2.0, 2.0], [3.0, 3.0]]] * 2


def test_copy_slices_post_hook_sees_none_for_a_base_without_history(T):
    seen = []
    base = T.zeros(2, 2)
    v = T.ones(1, requires_grad=True)
    base[0, :1].mul_(v)
    base.grad_fn.register_hook(lambda gi, go: seen.append([g is None for g in gi]))
    base.sum().backward()

    assert type(base.grad_fn).__name__ == "CopySlices"
    assert seen == [[True, False]]


def test_accumulate_grad_post_hook_gets_empty_grad_inputs(T):
    seen = []
    x = leaf(T)
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    acc.register_hook(lambda gi, go: seen.append((gi, values(go))))
    y.sum().backward()

    assert seen == [((), [[2.0, 2.0]])]


def test_accumulate_grad_prehook_may_replace_what_is_accumulated(T):
    x = leaf(T)
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    acc.register_prehook(lambda go: (go[0] * -1,))
    y.sum().backward()

    assert x.grad.tolist() == [-2.0, -2.0]


# -------------------- RemovableHandle


def test_register_hook_returns_a_removable_handle(T):
    x = leaf(T)
    handles = [
        x.register_hook(lambda g: None),
        x.register_post_accumulate_grad_hook(lambda t: None),
        (x * 2).grad_fn.register_hook(lambda gi, go: None),
        (x * 2).grad_fn.register_prehook(lambda go: None),
    ]

    assert [type(h).__name__ for h in handles] == ["RemovableHandle"] * 4


def test_removed_tensor_hook_no_longer_fires_and_removing_twice_is_harmless(T):
    calls = []
    x = leaf(T)
    handle = x.register_hook(lambda g: calls.append(1) or g * 100)
    handle.remove()
    handle.remove()
    (x * 2).sum().backward()

    assert calls == []
    assert x.grad.tolist() == [2.0, 2.0]


def test_removing_one_hook_keeps_the_others(T):
    calls = []
    x = leaf(T)
    x.register_hook(lambda g: calls.append("a"))
    handle = x.register_hook(lambda g: calls.append("b"))
    x.register_hook(lambda g: calls.append("c"))
    handle.remove()
    (x * 2).sum().backward()

    assert calls == ["a", "c"]


def test_handle_as_context_manager_removes_the_hook_on_exit(T):
    x = leaf(T)
    with x.register_hook(lambda g: g * 100):
        (x * 2).sum().backward()
    assert x.grad.tolist() == [200.0, 200.0]

    x.grad = None
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_removed_node_hooks_and_post_accumulate_hook_no_longer_fire(T):
    calls = []
    x = leaf(T)
    y = x * 2
    handles = [
        y.grad_fn.register_prehook(lambda go: calls.append("pre")),
        y.grad_fn.register_hook(lambda gi, go: calls.append("post")),
        x.register_post_accumulate_grad_hook(lambda t: calls.append("acc")),
    ]
    for handle in handles:
        handle.remove()
    y.sum().backward()

    assert calls == []


# -------------------- which hooks fire: autograd.grad versus backward(inputs=...)


def hooked_chain(T, events):
    x = leaf(T)
    y = x * 3
    z = (y * y).sum()
    y.register_hook(lambda g: events.append("y tensor"))
    y.grad_fn.register_prehook(lambda go: events.append("y node pre"))
    y.grad_fn.register_hook(lambda gi, go: events.append("y node post"))
    x.register_hook(lambda g: events.append("x tensor"))
    x.register_post_accumulate_grad_hook(lambda t: events.append("x post-accumulate"))
    return x, y, z


def test_autograd_grad_wrt_a_non_leaf_fires_only_its_tensor_hook(T):
    events = []
    x, y, z = hooked_chain(T, events)
    (g,) = T.autograd.grad(z, y)

    assert events == ["y tensor"]
    assert g.tolist() == [6.0, 12.0]
    assert x.grad is None


def test_autograd_grad_applies_the_tensor_hook_return_value(T):
    x = leaf(T)
    y = x * 3
    y.register_hook(lambda g: g * 10)
    z = (y * y).sum()

    assert T.autograd.grad(z, y, retain_graph=True)[0].tolist() == [60.0, 120.0]
    assert T.autograd.grad(z, x)[0].tolist() == [180.0, 360.0]


def test_autograd_grad_captures_a_hooked_input_before_its_hook_when_its_node_must_run(T):
    # y's node runs here (x lies behind it): y's hook doubles what reaches x, not y's gradient.
    x = leaf(T)
    y = x * 1
    y.register_hook(lambda g: g * 2)
    y.retain_grad()
    gy, gx = T.autograd.grad((y * 1).sum(), [y, x])

    assert gy.tolist() == [1.0, 1.0]
    assert gx.tolist() == [2.0, 2.0]
    assert y.grad.tolist() == [2.0, 2.0]


def test_autograd_grad_captures_after_the_hooks_when_the_node_is_only_captured_from(T):
    x = leaf(T)
    y = x * 1
    y.register_hook(lambda g: g * 2)
    z = y.exp()
    z.register_hook(lambda g: g * 10)
    gy, gz = T.autograd.grad(z.sum(), [y, z])

    # z's node must run (y lies behind it): z's gradient is captured before its hook.
    assert gz.tolist() == [1.0, 1.0]
    assert gy.tolist() == pytest.approx([20 * math.e, 20 * math.e**2])


def test_autograd_grad_capture_of_one_output_of_a_multi_output_node(T):
    x = leaf(T)
    a, b = (x * 1).unbind(0)
    a.register_hook(lambda g: g * 5)
    assert [g.tolist() for g in T.autograd.grad(a * 1 + b * 1, [a, b])] == [5.0, 1.0]

    a, b = (x * 1).unbind(0)
    a.register_hook(lambda g: g * 5)
    ga, gx = T.autograd.grad(a * 1 + b * 1, [a, x])
    assert (ga.tolist(), gx.tolist()) == (1.0, [5.0, 1.0])


def test_autograd_grad_wrt_a_leaf_fires_its_tensor_hook_but_not_accumulation_hooks(T):
    events = []
    x, _, z = hooked_chain(T, events)
    (g,) = T.autograd.grad(z, x)

    assert events == ["y tensor", "y node pre", "y node post", "x tensor"]
    assert g.tolist() == [18.0, 36.0]
    assert x.grad is None


def test_backward_with_inputs_runs_the_node_hooks_of_the_input(T):
    events = []
    x, y, z = hooked_chain(T, events)
    z.backward(inputs=[y])

    assert events == ["y tensor", "y node pre", "y node post"]
    assert y.grad.tolist() == [6.0, 12.0]
    assert x.grad is None


def test_backward_with_inputs_on_a_leaf_runs_every_hook(T):
    events = []
    x, _, z = hooked_chain(T, events)
    z.backward(inputs=[x])

    assert events == ["y tensor", "y node pre", "y node post", "x tensor", "x post-accumulate"]
    assert x.grad.tolist() == [18.0, 36.0]


# -------------------- leaf hooks outlive the leaf's AccumulateGrad


def test_leaf_hooks_survive_the_accumulator_being_recreated(T):
    calls = []
    x = leaf(T)
    x.register_hook(lambda g: calls.append(("tensor", g.tolist())))
    x.register_post_accumulate_grad_hook(lambda t: calls.append(("post", t.grad.tolist())))

    y = x * 2
    y.grad_fn.next_functions[0][0].metadata["first graph"] = True
    del y
    gc.collect()

    y = x * 5
    acc = y.grad_fn.next_functions[0][0]
    assert "first graph" not in acc.metadata  # a new AccumulateGrad
    y.sum().backward()

    assert calls == [("tensor", [5.0, 5.0]), ("post", [5.0, 5.0])]


def test_accumulate_grad_is_shared_while_a_graph_keeps_it_alive(T):
    x = leaf(T)
    y = x * 2
    y.grad_fn.next_functions[0][0].metadata["tag"] = 1
    y2 = x * 3

    assert y2.grad_fn.next_functions[0][0].metadata == {"tag": 1}


# -------------------- hook errors (reference §3 E13..E13i, E14)


def test_leaf_hook_changing_the_size_fails_before_accumulating(T):  # E13
    x = leaf(T)
    x.register_hook(lambda g: T.ones(3))
    with pytest.raises(RuntimeError, match=f"hook '<lambda>' {SIZE_CHANGED}"):
        (x * 2).sum().backward()
    assert x.grad is None


def test_non_leaf_hook_changing_the_size_fails_and_nothing_reaches_the_leaf(T):  # E13
    x = leaf(T)
    y = x * 2
    y.register_hook(lambda g: T.ones(3))
    with pytest.raises(RuntimeError, match=SIZE_CHANGED):
        y.sum().backward()
    assert x.grad is None


def test_failing_hook_leaves_an_existing_grad_unchanged(T):  # E13
    x = leaf(T)
    (x * 2).sum().backward()
    x.register_hook(lambda g: T.ones(3))
    with pytest.raises(RuntimeError, match=SIZE_CHANGED):
        (x * 5).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_hook_changing_the_dtype_names_the_hook_and_both_types(T):  # E13b
    def widen(g):
        return g.double()

    x = leaf(T)
    x.register_hook(widen)
    expected = (
        f"hook 'widen' has changed the type of value "
        f"(was {T.__name__}.FloatTensor got {T.__name__}.DoubleTensor)"
    )
    with pytest.raises(RuntimeError) as info:
        (x * 2).sum().backward()
    assert expected in str(info.value)
    assert x.grad is None


def test_tensor_hook_returning_a_non_tensor_is_a_type_error(T):  # E13c
    x = leaf(T)
    y = x * 2
    y.register_hook(lambda g: 5)
    with pytest.raises(TypeError, match="expected Variable, but hook returned 'int'"):
        y.sum().backward()
    assert x.grad is None


def test_node_post_hook_returning_the_wrong_count(T):  # E13d
    x = leaf(T)
    y = x * 2
    y.grad_fn.register_hook(lambda gi, go: (gi[0],))
    with pytest.raises(RuntimeError, match=r"hook '<lambda>' " + WRONG_COUNT.format(1, 2)):
        y.sum().backward()
    assert x.grad is None


def test_node_prehook_returning_the_wrong_count(T):  # E13d
    x = leaf(T)
    y = x * 2
    y.grad_fn.register_prehook(lambda go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match=WRONG_COUNT.format(2, 1)):
        y.sum().backward()


def test_node_post_hook_cannot_replace_a_none_gradient(T):  # E13e
    x = leaf(T)
    y = x * 2
    y.grad_fn.register_hook(lambda gi, go: (gi[0], T.ones(2)))
    with pytest.raises(RuntimeError, match="can't replace a None gradient with a non-None value"):
        y.sum().backward()
    assert x.grad is None


def test_node_post_hook_changing_the_size(T):  # E13
    x = leaf(T)
    y = x * 2
    y.grad_fn.register_hook(lambda gi, go: (T.ones(3), None))
    with pytest.raises(RuntimeError, match=SIZE_CHANGED):
        y.sum().backward()


def test_node_prehook_changing_the_size(T):  # E13
    x = leaf(T)
    y = x * 2
    y.grad_fn.register_prehook(lambda go: (T.ones(3),))
    with pytest.raises(RuntimeError, match=SIZE_CHANGED):
        y.sum().backward()


def test_node_prehook_returning_a_bare_tensor_is_a_type_error(T):  # E13f
    x = leaf(T)
    y = x * 2
    y.grad_fn.register_prehook(lambda go: go[0])
    with pytest.raises(TypeError, match="expected tuple, but hook returned 'Tensor'"):
        y.sum().backward()


def test_register_hook_needs_a_tensor_that_requires_grad(T):  # E13g
    t = T.ones(2)
    with pytest.raises(RuntimeError, match=NO_GRAD_HOOK):
        t.register_hook(lambda g: None)


def test_post_accumulate_grad_hook_needs_a_tensor_that_requires_grad(T):  # E13g
    t = T.ones(2)
    with pytest.raises(RuntimeError, match=NO_GRAD_HOOK):
        t.register_post_accumulate_grad_hook(lambda p: None)


def test_post_accumulate_grad_hook_refuses_a_non_leaf(T):  # E13h
    y = leaf(T) * 2
    with pytest.raises(
        RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"
    ):
        y.register_post_accumulate_grad_hook(lambda p: None)


def test_post_accumulate_grad_hook_returning_a_tensor_fails_after_accumulating(T):  # E13i
    x = leaf(T)
    x.register_post_accumulate_grad_hook(lambda t: t.grad)
    with pytest.raises(RuntimeError, match=POST_ACC_RETURN):
        (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_post_accumulate_grad_hook_returning_an_int_is_a_type_error(T):  # E13c
    x = leaf(T)
    x.register_post_accumulate_grad_hook(lambda t: 3)
    with pytest.raises(TypeError, match="expected Variable, but hook returned 'int'"):
        (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_retain_grad_needs_a_tensor_that_requires_grad(T):  # E14
    t = T.ones(2)
    with pytest.raises(RuntimeError, match=NO_RETAIN_GRAD):
        t.retain_grad()


def test_exception_raised_by_a_hook_propagates_unchanged(T):
    class Stop(Exception):
        pass

    def stop(g):
        raise Stop("from the hook")

    x = leaf(T)
    x.register_hook(stop)
    with pytest.raises(Stop, match="from the hook"):
        (x * 2).sum().backward()
    assert x.grad is None


def test_a_retained_grad_under_create_graph_is_a_recorded_clone(T):
    x = T.tensor([1.5, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    T.autograd.grad((y ** 2).sum(), [x], create_graph=True)
    assert type(y.grad.grad_fn).__name__ == "CloneBackward0"
    assert y.grad.tolist() == [6.0, 8.0]
    z = x * 3
    z.retain_grad()
    (z ** 2).sum().backward()
    assert z.grad.grad_fn is None and not z.grad.requires_grad


@pytest.mark.parametrize("read", [lambda x: x.max(1), lambda x: x.min(1), lambda x: x.sort(1)],
                         ids=["max", "min", "sort"])
def test_node_hooks_of_values_and_indices_see_only_the_values_gradient(T, read):
    # The indices are not differentiable: the node has one output, so one grad_output.
    x = T.tensor([[1.0, 3.0, 2.0], [0.5, 0.2, 0.1]], requires_grad=True)
    values = read(x)[0]
    seen = []
    values.grad_fn.register_prehook(lambda go: seen.append(len(go)))
    values.grad_fn.register_hook(lambda gi, go: seen.append(len(go)))
    values.sum().backward()
    assert seen == [1, 1]
