"""Custom autograd.Function: both styles, ctx methods, and the checks on what backward returns."""

from __future__ import annotations

import numpy as np
import pytest


def arr(t):
    return t.detach().numpy()


def assert_close(t, expected):
    np.testing.assert_allclose(arr(t), np.asarray(expected), rtol=1e-6, atol=1e-7)


def leaf(T, values=(1.0, 2.0, 3.0)):
    return T.tensor(list(values), requires_grad=True)


def square_function(T):
    class Square(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    return Square


def returning(T, name, make_grads):
    """A Function ``name`` whose forward is ``args[0] * 1`` and whose backward returns
    ``make_grads(g)``."""

    def forward(ctx, *args):
        return args[0] * 1

    def backward(ctx, g):
        return make_grads(g)

    return type(
        name,
        (T.autograd.Function,),
        {"forward": staticmethod(forward), "backward": staticmethod(backward)},
    )


# -------------------- two styles


def test_combined_style_forward_and_backward(T):
    x = leaf(T)
    y = square_function(T).apply(x)
    assert_close(y, [1.0, 4.0, 9.0])
    y.sum().backward()
    assert_close(x.grad, [2.0, 4.0, 6.0])


def test_separate_style_with_setup_context(T):
    seen = {}

    class Scale(T.autograd.Function):
        @staticmethod
        def forward(x, k):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            seen["inputs"] = inputs
            seen["output"] = output
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x = leaf(T)
    y = Scale.apply(x, 3.0)
    assert isinstance(seen["inputs"], tuple)
    assert seen["inputs"][0] is x
    assert seen["inputs"][1] == 3.0
    assert seen["output"] is y
    y.sum().backward()
    assert_close(x.grad, [3.0, 3.0, 3.0])


def test_separate_style_saves_in_setup_context(T):
    class Square(T.autograd.Function):
        @staticmethod
        def forward(x):
            return x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = leaf(T)
    Square.apply(x).sum().backward()
    assert_close(x.grad, [2.0, 4.0, 6.0])


def test_node_is_named_after_the_class(T):
    y = square_function(T).apply(leaf(T))
    assert y.grad_fn.name() == "SquareBackward"
    assert type(y.grad_fn).__name__ == "SquareBackward"


def test_output_requires_grad_and_is_not_a_leaf(T):
    y = square_function(T).apply(leaf(T))
    assert y.requires_grad
    assert not y.is_leaf


def test_no_input_requiring_grad_gives_a_plain_output(T):
    y = square_function(T).apply(T.tensor([1.0, 2.0]))
    assert not y.requires_grad
    assert y.grad_fn is None


def test_apply_under_no_grad_gives_a_plain_output(T):
    with T.no_grad():
        y = square_function(T).apply(leaf(T))
    assert not y.requires_grad
    assert y.grad_fn is None


# -------------------- saved tensors


def test_saved_input_comes_back_as_the_same_object(T):
    seen = []

    class Keep(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, None, w)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx.saved_tensors)
            return g, None

    x = leaf(T)
    w = T.tensor([1.0])
    Keep.apply(x, w).sum().backward()
    (saved,) = seen
    assert isinstance(saved, tuple)
    assert len(saved) == 3
    assert saved[0] is x
    assert saved[1] is None
    assert saved[2] is w


def test_saved_output_without_history_comes_back_as_the_same_object(T):
    # A saved tensor is an output of the node only if the node is its grad_fn: an output marked
    # non-differentiable is kept as it is, like an input.
    seen = {}

    class Two(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            a, b = x * 2, x * 3
            ctx.mark_non_differentiable(b)
            ctx.save_for_backward(a, b)
            seen["a"], seen["b"] = a, b
            return a, b

        @staticmethod
        def backward(ctx, ga, gb):
            a, b = ctx.saved_tensors
            seen["saved"] = (a is seen["a"], b is seen["b"], a.grad_fn is not None)
            return ga * 2

    Two.apply(leaf(T))[0].sum().backward()
    assert seen["saved"] == (False, True, True)


def test_saved_tensors_can_be_read_twice(T):
    class ReadTwice(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            (b,) = ctx.saved_tensors
            return a * g + b * g

    x = leaf(T)
    ReadTwice.apply(x).sum().backward()
    assert_close(x.grad, [2.0, 4.0, 6.0])


def test_saving_a_non_tensor_is_a_type_error(T):
    class SaveInt(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, 3)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(
        TypeError, match="save_for_backward can only save variables, but argument 1 is of type int"
    ):
        SaveInt.apply(leaf(T))


def test_saved_tensors_after_backward_raise(T):
    y = square_function(T).apply(leaf(T))
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.sum().backward()


# -------------------- needs_input_grad


def test_needs_input_grad_in_forward_and_backward(T):
    seen = []

    class Affine(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, k, c):
            seen.append(ctx.needs_input_grad)
            return x * k + c

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx.needs_input_grad)
            return g * 2, None, None

    x = leaf(T)
    Affine.apply(x, 2.0, T.ones(3)).sum().backward()
    assert seen == [(True, False, False), (True, False, False)]
    assert_close(x.grad, [2.0, 2.0, 2.0])


def test_needs_input_grad_for_two_tensors(T):
    seen = []

    class Mul(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            seen.append(ctx.needs_input_grad)
            return a * b

        @staticmethod
        def backward(ctx, g):
            return None, None

    Mul.apply(T.ones(3), leaf(T))
    assert seen == [(False, True)]


# -------------------- non-tensor arguments


def test_next_functions_has_one_entry_per_tensor_argument(T):
    class Affine(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, k, c):
            return x * k + c

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, None

    x = leaf(T)
    nf = Affine.apply(x, 2.0, T.ones(3)).grad_fn.next_functions
    assert len(nf) == 2
    assert nf[0][0].variable is x
    assert nf[1] == (None, 0)


def test_kwargs_in_apply_bind_to_positional_slots(T):
    class Scale(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale=1.0):
            ctx.scale = scale
            return x * scale

        @staticmethod
        def backward(ctx, g):
            return g * ctx.scale, None

    x = leaf(T)
    y = Scale.apply(x, scale=3.0)
    assert_close(y, [3.0, 6.0, 9.0])
    y.sum().backward()
    assert_close(x.grad, [3.0, 3.0, 3.0])


def test_tensor_passed_as_kwarg_is_an_input(T):
    class Mul(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a

    a = leaf(T)
    b = leaf(T, (4.0, 5.0, 6.0))
    y = Mul.apply(a, b=b)
    assert len(y.grad_fn.next_functions) == 2
    y.sum().backward()
    assert_close(a.grad, [4.0, 5.0, 6.0])
    assert_close(b.grad, [1.0, 2.0, 3.0])


def test_unknown_kwarg_in_apply_is_a_type_error(T):
    class Scale(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale=1.0):
            return x * scale

        @staticmethod
        def backward(ctx, g):
            return g, None

    with pytest.raises(TypeError, match="unexpected keyword argument 'zz'"):
        Scale.apply(leaf(T), zz=1)


# -------------------- several outputs


def two_outputs(T, materialize=True, log=None):
    class Two(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            if log is not None:
                log.append((g1, g2))
            total = None
            if g1 is not None:
                total = g1 * 2
            if g2 is not None:
                total = g2 * 3 if total is None else total + g2 * 3
            return total

    return Two


def test_several_outputs_share_one_node(T):
    a, b = two_outputs(T).apply(leaf(T))
    assert a.grad_fn is b.grad_fn
    assert_close(a, [2.0, 4.0, 6.0])
    assert_close(b, [3.0, 6.0, 9.0])


def test_several_outputs_gradients_combine(T):
    x = leaf(T)
    a, b = two_outputs(T).apply(x)
    (a + b).sum().backward()
    assert_close(x.grad, [5.0, 5.0, 5.0])


def test_unused_output_gradient_is_materialized_as_zeros(T):
    log = []
    x = leaf(T)
    a, _ = two_outputs(T, log=log).apply(x)
    a.sum().backward()
    ((g1, g2),) = log
    assert_close(g1, [1.0, 1.0, 1.0])
    assert_close(g2, [0.0, 0.0, 0.0])
    assert_close(x.grad, [2.0, 2.0, 2.0])


def test_set_materialize_grads_false_gives_none(T):
    log = []
    x = leaf(T)
    a, _ = two_outputs(T, materialize=False, log=log).apply(x)
    a.sum().backward()
    ((g1, g2),) = log
    assert_close(g1, [1.0, 1.0, 1.0])
    assert g2 is None
    assert_close(x.grad, [2.0, 2.0, 2.0])


def test_mark_non_differentiable(T):
    log = []

    class WithIndex(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            index = x * 0 + 7
            ctx.mark_non_differentiable(index)
            return x * 2, index

        @staticmethod
        def backward(ctx, g, g_index):
            log.append(g_index)
            return g * 2

    x = leaf(T)
    y, index = WithIndex.apply(x)
    assert y.requires_grad
    assert not index.requires_grad
    assert index.grad_fn is None
    y.sum().backward()
    (g_index,) = log
    assert_close(g_index, [0.0, 0.0, 0.0])
    assert_close(x.grad, [2.0, 2.0, 2.0])


def test_backward_through_only_a_non_differentiable_output_raises(T):
    class OnlyIndex(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            index = x * 0
            ctx.mark_non_differentiable(index)
            return index

        @staticmethod
        def backward(ctx, g):
            return g

    index = OnlyIndex.apply(leaf(T))
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        index.sum().backward()


def test_non_tensor_extra_outputs_pass_through(T):
    log = []

    class Extra(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, 5, None

        @staticmethod
        def backward(ctx, g, g_five, g_none):
            log.append((g_five, g_none))
            return g * 2

    x = leaf(T)
    out = Extra.apply(x)
    assert isinstance(out, tuple)
    assert out[1] == 5
    assert out[2] is None
    out[0].sum().backward()
    assert log == [(None, None)]
    assert_close(x.grad, [2.0, 2.0, 2.0])


def test_returning_an_input_as_is_gives_a_new_object(T):
    class Ident(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf(T)
    y = Ident.apply(x)
    assert y is not x
    assert y.grad_fn.name() == "IdentBackward"
    assert_close(y, [1.0, 2.0, 3.0])
    y.sum().backward()
    assert_close(x.grad, [2.0, 2.0, 2.0])


# -------------------- what backward returns


def test_too_few_gradients(T):
    x, w = leaf(T), leaf(T)
    Fn = returning(T, "TooFew", lambda g: g)
    y = Fn.apply(x, w).sum()
    with pytest.raises(
        RuntimeError,
        match=r"function TooFewBackward returned an incorrect number of gradients "
        r"\(expected 2, got 1\)",
    ):
        y.backward()


def test_too_many_gradients(T):
    x, w = leaf(T), leaf(T)
    Fn = returning(T, "TooMany", lambda g: (g, g, g))
    with pytest.raises(
        RuntimeError,
        match=r"function TooManyBackward returned an incorrect number of gradients "
        r"\(expected 2, got 3\)",
    ):
        Fn.apply(x, w).sum().backward()


def test_a_list_counts_as_one_gradient(T):
    x, w = leaf(T), leaf(T)
    Fn = returning(T, "AsList", lambda g: [g, g])
    with pytest.raises(RuntimeError, match=r"\(expected 2, got 1\)"):
        Fn.apply(x, w).sum().backward()


def test_extra_trailing_nones_are_allowed(T):
    x, w = leaf(T), leaf(T)
    Fn = returning(T, "TrailingNones", lambda g: (g, g * 2, None, None))
    Fn.apply(x, w).sum().backward()
    assert_close(x.grad, [1.0, 1.0, 1.0])
    assert_close(w.grad, [2.0, 2.0, 2.0])


def test_single_tensor_return_for_one_input(T):
    x = leaf(T)
    Fn = returning(T, "Single", lambda g: g * 4)
    Fn.apply(x).sum().backward()
    assert_close(x.grad, [4.0, 4.0, 4.0])


def test_all_none_gradients_leave_grad_unset(T):
    x = leaf(T)
    Fn = returning(T, "AllNone", lambda g: None)
    Fn.apply(x).sum().backward()
    assert x.grad is None


def test_gradient_for_a_non_tensor_argument(T):
    x = leaf(T)
    Fn = returning(T, "NonTensorArg", lambda g: (g, g))
    with pytest.raises(
        RuntimeError,
        match="function NonTensorArgBackward returned a gradient different than None "
        "at position 2, but the corresponding forward input was not a Variable",
    ):
        Fn.apply(x, 2.0).sum().backward()


def test_gradient_for_an_input_not_requiring_grad_is_dropped(T):
    x = leaf(T)
    c = T.ones(3)
    Fn = returning(T, "Dropped", lambda g: (g, T.ones(5)))
    Fn.apply(x, c).sum().backward()
    assert_close(x.grad, [1.0, 1.0, 1.0])
    assert c.grad is None


def test_sum_reducible_gradient_shape_is_reduced(T):
    x = leaf(T)
    Fn = returning(T, "Reducible", lambda g: g.reshape(1, 3) * T.ones(2, 3))
    Fn.apply(x).sum().backward()
    assert tuple(x.grad.shape) == (3,)
    assert_close(x.grad, [2.0, 2.0, 2.0])


@pytest.mark.parametrize("size", [2, 1])
def test_non_reducible_gradient_shape(T, size):
    x = leaf(T)
    Fn = returning(T, "WrongShape", lambda g: T.ones(size))
    with pytest.raises(
        RuntimeError,
        match=rf"Function WrongShapeBackward returned an invalid gradient at index 0 - "
        rf"got \[{size}\] but expected shape compatible with \[3\]",
    ):
        Fn.apply(x).sum().backward()


def test_float64_gradient_for_float32_input_is_cast(T):
    x = leaf(T)
    Fn = returning(T, "Double", lambda g: g.double() * 2)
    Fn.apply(x).sum().backward()
    assert x.grad.dtype == T.float32
    assert_close(x.grad, [2.0, 2.0, 2.0])


@pytest.mark.parametrize(("value", "type_name"), [(5, "int"), (5.0, "float")])
def test_returning_a_number_is_an_error(T, value, type_name):
    x = leaf(T)
    Fn = returning(T, "Number", lambda g: value)
    with pytest.raises(RuntimeError, match=rf"expected Variable or None \(got {type_name}\)"):
        Fn.apply(x).sum().backward()


# -------------------- grad mode


def test_forward_runs_with_grad_disabled(T):
    modes = []

    class Probe(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            modes.append(T.is_grad_enabled())
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    y = Probe.apply(leaf(T))
    assert modes == [False]
    assert T.is_grad_enabled()
    assert y.requires_grad


def test_setup_context_runs_with_grad_disabled(T):
    modes = []

    class Probe(T.autograd.Function):
        @staticmethod
        def forward(x):
            modes.append(T.is_grad_enabled())
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            modes.append(T.is_grad_enabled())

        @staticmethod
        def backward(ctx, g):
            return g * 2

    Probe.apply(leaf(T))
    assert modes == [False, False]


def test_backward_grad_mode_follows_create_graph(T):
    modes = []

    class Square(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            modes.append(T.is_grad_enabled())
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = leaf(T)
    Square.apply(x).sum().backward()
    T.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    assert modes == [False, True]


def test_double_backward_through_differentiable_ops(T):
    class Cube(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x**2 * g

    x = leaf(T)
    (g,) = T.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    assert g.requires_grad
    (gg,) = T.autograd.grad(g.sum(), x)
    assert_close(g, [3.0, 12.0, 27.0])
    assert_close(gg, [6.0, 12.0, 18.0])


# -------------------- once_differentiable


def once_square(T, modes):
    class OnceSquare(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, g):
            modes.append(T.is_grad_enabled())
            (x,) = ctx.saved_tensors
            return 2 * x * g

    return OnceSquare


def test_once_differentiable_backward_computes_gradients(T):
    x = leaf(T)
    once_square(T, []).apply(x).sum().backward()
    assert_close(x.grad, [2.0, 4.0, 6.0])


def test_once_differentiable_backward_runs_under_no_grad(T):
    modes = []
    x = leaf(T)
    T.autograd.grad(once_square(T, modes).apply(x).sum(), x, create_graph=True)
    assert modes == [False]


def test_once_differentiable_without_graph_gives_plain_gradient(T):
    x = leaf(T)
    (g,) = T.autograd.grad(once_square(T, []).apply(x).sum(), x, create_graph=True)
    assert not g.requires_grad
    assert_close(g, [2.0, 4.0, 6.0])


def test_once_differentiable_refuses_double_backward(T):
    x = leaf(T)
    y = once_square(T, []).apply(x)
    (g,) = T.autograd.grad(y, x, grad_outputs=T.ones(3, requires_grad=True), create_graph=True)
    assert g.requires_grad
    with pytest.raises(
        RuntimeError,
        match="trying to differentiate twice a function that was marked with @once_differentiable",
    ):
        g.sum().backward()


def test_once_differentiable_result_hangs_off_fresh_leaves_not_the_arguments(T):
    x = leaf(T)
    (g,) = T.autograd.grad(once_square(T, []).apply(x).prod(), x, create_graph=True)
    assert g.grad_fn.name() == f"{T.__name__}::autograd::Error"
    (nf, _), = g.grad_fn.next_functions
    assert nf.name() == f"{T.__name__}::autograd::AccumulateGrad"
    assert nf.variable is not x
    assert T.autograd.grad(g.sum(), x, allow_unused=True) == (None,)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        T.autograd.grad(g.sum(), x)
    with pytest.raises(RuntimeError, match="trying to differentiate twice"):
        g.sum().backward()
    assert x.grad is None


# -------------------- misuse


def test_missing_backward_raises_at_backward_time(T):
    class NoBackward(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    y = NoBackward.apply(leaf(T))
    assert y.grad_fn.name() == "NoBackwardBackward"
    with pytest.raises(
        NotImplementedError, match="You must implement either the backward or vjp method"
    ):
        y.sum().backward()


def test_instantiating_a_function_is_deprecated(T):
    Square = square_function(T)
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        Square()


def _dirty_double(T, outputs: int = 1):
    class Dirty(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x if outputs == 1 else (x, x * 1)

        @staticmethod
        def backward(ctx, *grads):
            return grads[0] * 2

    return Dirty


def test_mark_dirty_on_a_view_of_a_leaf_that_requires_grad_raises_after_forward(T):
    x = T.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being "
                                           "used in an in-place operation"):
        _dirty_double(T).apply(x[1:])
    # forward ran and the dirty input's version was bumped, as in torch
    np.testing.assert_array_equal(x.detach().numpy(), [1.0, 2.0, 2.0])
    assert x._version == 2 and x.is_leaf


def test_mark_dirty_on_a_no_grad_view_is_the_leaf_error(T):
    x = T.ones(3, requires_grad=True)
    with T.no_grad():
        v = x[1:]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an "
                                           "in-place operation"):
        _dirty_double(T).apply(v)


def test_mark_dirty_on_a_split_piece_raises_the_multiple_views_error(T):
    a, b = (T.ones(4, requires_grad=True) * 1).split(2)
    with pytest.raises(RuntimeError, match="Output 0 of Split is a view and is being modified "
                                           "inplace"):
        _dirty_double(T).apply(a)


def test_mark_dirty_on_a_view_with_several_outputs_raises(T):
    y = T.ones(3, requires_grad=True) * 1
    with pytest.raises(RuntimeError, match="your Function cannot return more than one Tensor"):
        _dirty_double(T, outputs=2).apply(y[1:])


def test_a_dirty_view_returned_may_be_written_again(T):
    y = T.ones(3, requires_grad=True) * 1
    out = _dirty_double(T).apply(y[1:])
    out.add_(1)
    assert type(y.grad_fn).__name__ == "CopySlices"
    y.sum().backward()


def test_a_function_without_jvp_raises_under_forward_ad_after_its_history_is_set(T):
    fw = T.autograd.forward_ad
    with fw.dual_level():
        y = fw.make_dual(T.tensor([1.5, 1.25]), T.tensor([-1.0, 0.5])).requires_grad_() * 1
        with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
            _dirty_double(T).apply(y)
        assert type(y.grad_fn).__name__ == "DirtyBackward" and y._version == 2


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_outputs_of_an_unrecorded_function_that_require_grad_come_back_detached(T, mode):
    class Same(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    with getattr(T, mode)():
        x = T.zeros(2, requires_grad=True)
        out = _dirty_double(T).apply(x)
        same = Same.apply(x)
    assert out is not x and same is not x
    assert not out.requires_grad and not same.requires_grad and x.requires_grad


@pytest.mark.ext_only
def test_a_builtin_apply_takes_keywords_as_function_apply_does():
    import ext
    from ext.functions.builtin.shape import Transpose

    x = ext.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = Transpose.apply(x, dim1=1, dim0=0)
    assert tuple(y.shape) == (3, 2)
    assert y.grad_fn.name() == "TransposeBackward0"
    with pytest.raises(TypeError, match="unexpected keyword argument 'dims'"):
        Transpose.apply(x, 0, 1, dims=1)
