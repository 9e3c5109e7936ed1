"""Bad inputs: the exception type, a stable part of its message, and what state is left behind."""

from __future__ import annotations

import numpy as np
import pytest

FLOATING_ONLY = "(?i)only Tensors of floating point"
NOT_SCALAR = "grad can be implicitly created only for scalar outputs"
BACKWARD_TWICE = "Trying to backward through the graph a second time"


def arr(t):
    return t.detach().numpy()


def assert_close(t, expected):
    np.testing.assert_allclose(arr(t), np.asarray(expected), rtol=1e-6)


def leaf(T, values=(1.0, 2.0)):
    return T.tensor(list(values), requires_grad=True)


# -------------------- requires_grad on ints


def test_integer_tensor_factory_cannot_require_grad(T):
    with pytest.raises(RuntimeError, match=FLOATING_ONLY):
        T.tensor([1, 2], requires_grad=True)


def test_integer_numpy_tensor_cannot_require_grad(T):
    with pytest.raises(RuntimeError, match=FLOATING_ONLY):
        T.tensor(np.array([1, 2]), requires_grad=True)


def test_integer_zeros_cannot_require_grad(T):
    with pytest.raises(RuntimeError, match=FLOATING_ONLY):
        T.zeros(2, dtype=T.int64, requires_grad=True)


def test_integer_requires_grad_method_leaves_tensor_unchanged(T):
    t = T.tensor([1, 2])
    with pytest.raises(RuntimeError, match=FLOATING_ONLY):
        t.requires_grad_()
    assert not t.requires_grad
    assert t.is_leaf
    assert t.grad_fn is None


def test_integer_requires_grad_setter_leaves_tensor_unchanged(T):
    t = T.tensor([1, 2])
    with pytest.raises(RuntimeError, match=FLOATING_ONLY):
        t.requires_grad = True
    assert not t.requires_grad


def test_integer_requires_grad_false_is_fine(T):
    t = T.tensor([1, 2])
    assert t.requires_grad_(False) is t
    assert not t.requires_grad


# -------------------- implicit gradient


def test_non_scalar_backward_error_leaves_graph_usable(T):
    x = leaf(T)
    y = x * x
    with pytest.raises(RuntimeError, match=NOT_SCALAR):
        y.backward()
    assert x.grad is None
    y.backward(T.ones(2))
    assert_close(x.grad, [2.0, 4.0])


def test_grad_of_non_scalar_without_grad_outputs(T):
    x = leaf(T)
    with pytest.raises(RuntimeError, match=NOT_SCALAR):
        T.autograd.grad(x * 2, x)


def test_gradient_shape_error_leaves_graph_usable(T):
    x = leaf(T)
    y = x * x
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        y.backward(T.ones(3))
    assert x.grad is None
    y.backward(T.ones(2))
    assert_close(x.grad, [2.0, 4.0])


def test_backward_of_a_tensor_without_graph(T):
    c = T.tensor([1.0, 2.0])
    with pytest.raises(
        RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"
    ):
        c.sum().backward()
    assert c.grad is None
    assert not c.requires_grad


def test_backward_of_a_graph_built_under_no_grad(T):
    x = leaf(T)
    with T.no_grad():
        y = (x * x).sum()
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        y.backward()
    assert x.grad is None


# -------------------- backward twice


def test_second_backward_error_keeps_the_first_gradient(T):
    x = leaf(T)
    y = (x * x).sum()
    y.backward()
    g = x.grad
    with pytest.raises(RuntimeError, match=BACKWARD_TWICE):
        y.backward()
    assert g is x.grad
    assert_close(x.grad, [2.0, 4.0])


def test_second_backward_error_after_a_branch_already_accumulated(T):
    # The (w + 1) branch is created last, so it runs first and reaches w's accumulator
    # before the exp node finds its saved result freed.
    x = leaf(T)
    w = leaf(T, (3.0, 4.0))
    loss = x.exp().sum() + (w + 1).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match=BACKWARD_TWICE):
        loss.backward()
    assert_close(x.grad, np.exp([1.0, 2.0]))
    assert_close(w.grad, [2.0, 2.0])


def test_second_backward_error_before_any_branch_accumulated(T):
    x = leaf(T)
    w = leaf(T, (3.0, 4.0))
    loss = (w + 1).sum() + x.exp().sum()
    loss.backward()
    with pytest.raises(RuntimeError, match=BACKWARD_TWICE):
        loss.backward()
    assert_close(x.grad, np.exp([1.0, 2.0]))
    assert_close(w.grad, [1.0, 1.0])


# -------------------- bad Function gradients


def function_returning(T, name, make_grads):
    def forward(ctx, *args):
        return args[0] * 1

    def backward(ctx, g):
        return make_grads(g)

    return type(
        name,
        (T.autograd.Function,),
        {"forward": staticmethod(forward), "backward": staticmethod(backward)},
    )


def test_function_with_wrong_gradient_count_accumulates_nothing(T):
    x = leaf(T)
    w = leaf(T, (3.0, 4.0))
    Fn = function_returning(T, "WrongNum", lambda g: g)
    y = Fn.apply(x, w).sum()
    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        y.backward()
    assert x.grad is None
    assert w.grad is None


def test_function_with_wrong_gradient_shape_accumulates_nothing(T):
    x = leaf(T)
    Fn = function_returning(T, "WrongShape", lambda g: T.ones(3))
    y = Fn.apply(x).sum()
    with pytest.raises(RuntimeError, match="returned an invalid gradient at index 0"):
        y.backward()
    assert x.grad is None


# -------------------- non-tensors


def test_exp_of_a_python_float(T):
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        T.exp(3.0)


def test_exp_of_a_list(T):
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        T.exp([1.0, 2.0])


@pytest.mark.parametrize(
    "combine",
    [lambda t: t + "a", lambda t: t * None, lambda t: t - "a", lambda t: t @ 3.0],
    ids=["add-str", "mul-none", "sub-str", "matmul-float"],
)
def test_tensor_with_an_unsupported_operand(T, combine):
    x = leaf(T)
    with pytest.raises(TypeError, match="unsupported operand type"):
        combine(x)
    assert x.grad is None


def test_grad_of_a_python_float_output(T):
    x = leaf(T)
    with pytest.raises(TypeError):
        T.autograd.grad(3.0, x)
    assert x.grad is None


def test_backward_of_a_python_float(T):
    with pytest.raises(TypeError):
        T.autograd.backward(3.0)


def test_grad_with_a_python_float_input(T):
    x = leaf(T)
    with pytest.raises(TypeError):
        T.autograd.grad((x * 2).sum(), 3.0)
    assert x.grad is None


# -------------------- unknown dtypes


@pytest.mark.parametrize(
    "make",
    [
        lambda T: T.zeros(2, dtype="float32"),
        lambda T: T.ones(2, dtype="int64"),
        lambda T: T.full((2,), 1.0, dtype="float64"),
        lambda T: T.tensor([1.0], dtype="float32"),
        lambda T: T.zeros(2, dtype=np.float32),
        lambda T: T.zeros(2, dtype=5),
    ],
    ids=["zeros-str", "ones-str", "full-str", "tensor-str", "zeros-numpy-type", "zeros-int"],
)
def test_factory_with_an_unknown_dtype(T, make):
    with pytest.raises(TypeError, match="dtype"):
        make(T)


def test_to_with_an_unknown_dtype_leaves_tensor_unchanged(T):
    x = leaf(T)
    with pytest.raises(TypeError, match="dtype"):
        x.to(dtype="float64")
    assert x.dtype == T.float32


@pytest.mark.parametrize(
    "data",
    [np.array(["a", "b"]), np.array([object(), object()], dtype=object)],
    ids=["str", "object"],
)
def test_tensor_from_a_numpy_array_of_unsupported_dtype(T, data):
    with pytest.raises(TypeError, match="can't convert np.ndarray of type"):
        T.tensor(data)
