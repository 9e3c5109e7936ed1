"""Seed 000 (PyTorch source walkthrough, chapter 05: automatic differentiation) as acceptance cases.

Each test ports one snippet of the seed and asserts what it prints, with values derived from the
math in the seed's own comments.
"""

from __future__ import annotations

import math

import numpy as np
import pytest


def node_name(node) -> str:
    return type(node).__name__


# §1.1 What automatic differentiation is


def test_polynomial_gradient_is_2x_plus_3(T):
    x = T.tensor([2.0], requires_grad=True)
    y = x**2 + 3 * x + 1
    y.backward()

    assert y.tolist() == [11.0]
    assert x.grad.tolist() == [2 * 2.0 + 3]


# §4.3 A complete example: loss = (x*y + 1)**2


def squared_affine_product(T):
    x = T.tensor([2.0], requires_grad=True)
    y = T.tensor([3.0], requires_grad=True)
    z = x * y
    w = z + 1
    loss = w**2
    return x, y, z, w, loss


def test_squared_affine_product_grads_are_42_and_28(T):
    x, y, _, _, loss = squared_affine_product(T)
    loss.backward()

    assert loss.tolist() == [49.0]
    # d/dx (xy+1)^2 = 2(xy+1)*y and d/dy = 2(xy+1)*x
    assert x.grad.tolist() == [2 * 7 * 3]
    assert y.grad.tolist() == [2 * 7 * 2]


def test_squared_affine_product_intermediate_grads_follow_the_hand_derivation(T):
    _, _, z, w, loss = squared_affine_product(T)
    w.retain_grad()
    z.retain_grad()
    loss.backward()

    assert w.grad.tolist() == [2 * 7]  # d(w^2)/dw = 2w
    assert z.grad.tolist() == [2 * 7]  # d(z+1)/dz = 1


def test_squared_affine_product_graph_is_pow_add_mul_then_accumulators(T):
    x, y, z, w, loss = squared_affine_product(T)

    pow_node = loss.grad_fn
    assert node_name(pow_node) == "PowBackward0"
    assert pow_node.name() == "PowBackward0"
    ((add_node, add_nr),) = pow_node.next_functions
    assert add_node is w.grad_fn and add_nr == 0
    assert node_name(add_node) == "AddBackward0"

    (mul_node, mul_nr), (constant, constant_nr) = add_node.next_functions
    assert mul_node is z.grad_fn and mul_nr == 0
    assert node_name(mul_node) == "MulBackward0"
    assert constant is None and constant_nr == 0  # the Python number 1 needs no gradient

    (acc_x, nr_x), (acc_y, nr_y) = mul_node.next_functions
    assert [node_name(acc_x), node_name(acc_y)] == ["AccumulateGrad", "AccumulateGrad"]
    assert (nr_x, nr_y) == (0, 0)
    assert acc_x.variable is x
    assert acc_y.variable is y
    assert acc_x.next_functions == ()


# §5.1 Leaf and non-leaf tensors


def test_user_created_tensor_is_a_leaf_and_op_results_are_not(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x + 2
    z = y * 3

    assert x.is_leaf
    assert not y.is_leaf
    assert not z.is_leaf
    assert x.grad_fn is None
    assert node_name(z.grad_fn) == "MulBackward0"


def test_only_the_leaf_keeps_its_grad_by_default(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x + 2
    z = y * 3
    z.backward()

    assert x.grad.tolist() == [3.0]
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert y.grad is None


def test_retain_grad_keeps_a_non_leaf_grad(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x + 2
    y.retain_grad()
    z = y * 3
    z.backward()

    assert y.retains_grad
    assert not x.retains_grad
    assert x.grad.tolist() == [3.0]
    assert y.grad.tolist() == [3.0]


# §5.4 Higher-order derivatives


def test_second_derivative_of_cube_through_autograd_grad(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x**3

    (grad_y,) = T.autograd.grad(y, x, create_graph=True)
    (grad2_y,) = T.autograd.grad(grad_y, x)

    assert grad_y.tolist() == [3 * 1.0**2]
    assert grad2_y.tolist() == [6 * 1.0]


def test_create_graph_makes_the_first_derivative_differentiable(T):
    x = T.tensor([1.0], requires_grad=True)

    (plain,) = T.autograd.grad(x**3, x)
    (graphed,) = T.autograd.grad(x**3, x, create_graph=True)

    assert not plain.requires_grad and plain.grad_fn is None
    assert graphed.requires_grad and graphed.grad_fn is not None


def test_third_derivative_of_cube_at_random_points_is_6(T, rng):
    values = rng.standard_normal(4)
    x = T.tensor(values, requires_grad=True)

    (d1,) = T.autograd.grad((x**3).sum(), x, create_graph=True)
    (d2,) = T.autograd.grad(d1.sum(), x, create_graph=True)
    (d3,) = T.autograd.grad(d2.sum(), x)

    np.testing.assert_allclose(d1.detach().numpy(), 3 * values**2)
    np.testing.assert_allclose(d2.detach().numpy(), 6 * values)
    np.testing.assert_allclose(d3.numpy(), np.full(4, 6.0))


# §7.1 A custom torch.autograd.Function: Exp


def make_exp(T):
    class Exp(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            result = T.exp(x)
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            (result,) = ctx.saved_tensors
            return grad_output * result  # d(e^x)/dx = e^x

    return Exp


def test_custom_exp_gives_grad_e_at_1(T):
    exp = make_exp(T).apply
    x = T.tensor([1.0], requires_grad=True)
    y = exp(x)
    y.backward()

    assert y.tolist() == pytest.approx([math.e])
    assert x.grad.tolist() == pytest.approx([math.e])


def test_custom_exp_node_is_named_after_its_class(T):
    exp = make_exp(T).apply
    x = T.tensor([1.0], requires_grad=True)
    y = exp(x)

    assert not y.is_leaf
    assert node_name(y.grad_fn) == "ExpBackward"
    ((acc, _),) = y.grad_fn.next_functions
    assert acc.variable is x


def test_custom_exp_passes_gradcheck(T, rng):
    x = T.tensor(rng.standard_normal(5), requires_grad=True)
    assert T.autograd.gradcheck(make_exp(T).apply, (x,))


# §7.2 Several inputs: AddMul computes (x + y) * z


def make_add_mul(T):
    class AddMul(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, z):
            ctx.save_for_backward(x, y, z)
            return (x + y) * z

        @staticmethod
        def backward(ctx, grad_output):
            x, y, z = ctx.saved_tensors
            return grad_output * z, grad_output * z, grad_output * (x + y)

    return AddMul


def test_add_mul_sends_one_grad_to_each_input(T):
    add_mul = make_add_mul(T).apply
    x = T.tensor([1.0], requires_grad=True)
    y = T.tensor([2.0], requires_grad=True)
    z = T.tensor([3.0], requires_grad=True)
    w = add_mul(x, y, z)
    w.backward()

    assert w.tolist() == [(1.0 + 2.0) * 3.0]
    assert x.grad.tolist() == [3.0]  # z
    assert y.grad.tolist() == [3.0]  # z
    assert z.grad.tolist() == [3.0]  # x + y


def test_add_mul_node_has_one_edge_per_input(T):
    add_mul = make_add_mul(T).apply
    x, y, z = (T.tensor([v], requires_grad=True) for v in (1.0, 2.0, 3.0))
    w = add_mul(x, y, z)

    assert node_name(w.grad_fn) == "AddMulBackward"
    edges = w.grad_fn.next_functions
    assert [node_name(node) for node, _ in edges] == ["AccumulateGrad"] * 3
    assert all(node.variable is t for (node, _), t in zip(edges, (x, y, z), strict=True))


def test_add_mul_passes_gradcheck(T, rng):
    x, y, z = (T.tensor(row, requires_grad=True) for row in rng.standard_normal((3, 4)))
    assert T.autograd.gradcheck(make_add_mul(T).apply, (x, y, z))


# §9.1 Backward formulas of basic ops, written as Functions


def make_basic_ops(T):
    class AddBackward(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    class MulBackward(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, grad):
            x, y = ctx.saved_tensors
            return grad * y, grad * x

    class PowBackward(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, n):
            ctx.save_for_backward(x)
            ctx.n = n
            return x**n

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * ctx.n * x ** (ctx.n - 1), None

    return AddBackward, MulBackward, PowBackward


def test_basic_op_functions_compose_to_the_chain_rule(T, rng):
    add, mul, pow_ = (fn.apply for fn in make_basic_ops(T))
    a_np, b_np = rng.standard_normal((2, 3))
    a = T.tensor(a_np, requires_grad=True)
    b = T.tensor(b_np, requires_grad=True)

    out = pow_(add(mul(a, b), a), 3)
    out.sum().backward()

    inner = a_np * b_np + a_np
    np.testing.assert_allclose(out.detach().numpy(), inner**3)
    np.testing.assert_allclose(a.grad.numpy(), 3 * inner**2 * (b_np + 1))
    np.testing.assert_allclose(b.grad.numpy(), 3 * inner**2 * a_np)


def test_basic_op_functions_pass_gradcheck(T, rng):
    add_fn, mul_fn, pow_fn = make_basic_ops(T)
    a, b = (T.tensor(row, requires_grad=True) for row in rng.standard_normal((2, 3)))

    assert T.autograd.gradcheck(add_fn.apply, (a, b))
    assert T.autograd.gradcheck(mul_fn.apply, (a, b))
    assert T.autograd.gradcheck(lambda t: pow_fn.apply(t, 3), (a,))


def test_function_node_name_appends_backward_to_the_class_name(T):
    _, mul_fn, _ = make_basic_ops(T)
    a = T.tensor([2.0], requires_grad=True)
    out = mul_fn.apply(a, a)

    assert node_name(out.grad_fn) == "MulBackwardBackward"


# §9.2 Activation functions: Sigmoid and Tanh


def make_sigmoid(T):
    class SigmoidBackward(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            result = 1 / (1 + T.exp(-x))
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad):
            (result,) = ctx.saved_tensors
            return grad * result * (1 - result)

    return SigmoidBackward


def make_tanh(T):
    class TanhBackward(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            result = T.tanh(x)
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad):
            (result,) = ctx.saved_tensors
            return grad * (1 - result**2)

    return TanhBackward


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


ACTIVATIONS = {
    # name: (Function factory, built-in op name, value, derivative)
    "sigmoid": (make_sigmoid, "sigmoid", np_sigmoid, lambda x: np_sigmoid(x) * (1 - np_sigmoid(x))),
    "tanh": (make_tanh, "tanh", np.tanh, lambda x: 1 - np.tanh(x) ** 2),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_function_value_and_grad_follow_the_formula(T, rng, name):
    make, _, value, derivative = ACTIVATIONS[name]
    x_np = rng.standard_normal(6) * 3
    x = T.tensor(x_np, requires_grad=True)

    y = make(T).apply(x)
    y.sum().backward()

    np.testing.assert_allclose(y.detach().numpy(), value(x_np))
    np.testing.assert_allclose(x.grad.numpy(), derivative(x_np))


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_function_matches_the_builtin_op(T, rng, name):
    make, builtin, _, _ = ACTIVATIONS[name]
    x_np = rng.standard_normal(6)
    x_custom = T.tensor(x_np, requires_grad=True)
    x_builtin = T.tensor(x_np, requires_grad=True)

    y_custom = make(T).apply(x_custom)
    y_builtin = getattr(T, builtin)(x_builtin)
    y_custom.sum().backward()
    y_builtin.sum().backward()

    np.testing.assert_allclose(y_custom.detach().numpy(), y_builtin.detach().numpy())
    np.testing.assert_allclose(x_custom.grad.numpy(), x_builtin.grad.numpy())


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_function_passes_gradcheck_and_gradgradcheck(T, rng, name):
    fn = ACTIVATIONS[name][0](T).apply
    x = T.tensor(rng.standard_normal(4), requires_grad=True)

    assert T.autograd.gradcheck(fn, (x,))
    assert T.autograd.gradgradcheck(fn, (x,))


# Exercise 1: manual backprop of f(x, y) = (x² + y²)(x + y), checked against autograd


def manual_f_and_grads(x, y):
    f = (x**2 + y**2) * (x + y)
    df_dx = 2 * x * (x + y) + (x**2 + y**2)
    df_dy = 2 * y * (x + y) + (x**2 + y**2)
    return f, df_dx, df_dy


def test_manual_backprop_at_2_3_gives_65_33_43(T):
    assert manual_f_and_grads(2.0, 3.0) == (65.0, 33.0, 43.0)

    x_t = T.tensor([2.0], requires_grad=True)
    y_t = T.tensor([3.0], requires_grad=True)
    f_t = (x_t**2 + y_t**2) * (x_t + y_t)
    f_t.backward()

    assert f_t.tolist() == [65.0]
    assert x_t.grad.item() == 33.0
    assert y_t.grad.item() == 43.0


def test_manual_backprop_matches_autograd_at_random_points(T, rng):
    x_np, y_np = rng.standard_normal((2, 5))
    x_t = T.tensor(x_np, requires_grad=True)
    y_t = T.tensor(y_np, requires_grad=True)

    f_t = (x_t**2 + y_t**2) * (x_t + y_t)
    f_t.sum().backward()

    f, df_dx, df_dy = manual_f_and_grads(x_np, y_np)
    np.testing.assert_allclose(f_t.detach().numpy(), f)
    np.testing.assert_allclose(x_t.grad.numpy(), df_dx)
    np.testing.assert_allclose(y_t.grad.numpy(), df_dy)
