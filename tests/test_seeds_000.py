"""Seed 000 (PyTorch source walkthrough, chapter 05: automatic differentiation) as acceptance cases.

Each test ports one snippet of the seed and asserts what it prints, with values derived from the
math in the seed's own comments.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import sample


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


# §2-§3.1 The graph built by z = x * y; w = z + 1; loss = w.sum()


def seed_graph(T):
    x = T.tensor([2.0], requires_grad=True)
    y = T.tensor([3.0], requires_grad=True)
    z = x * y
    w = z + 1
    loss = w.sum()
    return x, y, z, w, loss


def test_seed_graph_is_sum_then_add_then_mul_then_two_accumulators(T):
    x, y, z, w, loss = seed_graph(T)

    sum_node = loss.grad_fn
    assert node_name(sum_node) == "SumBackward0"
    assert sum_node.name() == "SumBackward0"
    assert sum_node.next_functions == ((w.grad_fn, 0),)

    add_node = w.grad_fn
    assert node_name(add_node) == "AddBackward0"
    assert add_node.next_functions == ((z.grad_fn, 0), (None, 0))  # the constant 1 has no edge

    mul_node = z.grad_fn
    assert node_name(mul_node) == "MulBackward0"
    (acc_x, nr_x), (acc_y, nr_y) = mul_node.next_functions
    assert [node_name(acc_x), node_name(acc_y)] == ["AccumulateGrad", "AccumulateGrad"]
    assert (nr_x, nr_y) == (0, 0)  # each Edge is (function, input_nr)
    assert acc_x.variable is x and acc_y.variable is y
    assert acc_x.next_functions == () and acc_y.next_functions == ()


def test_seed_graph_inputs_are_leaves_and_op_results_are_not(T):
    x, y, z, w, loss = seed_graph(T)

    for leaf in (x, y):
        assert leaf.is_leaf and leaf.requires_grad and leaf.grad_fn is None
    for result in (z, w, loss):
        assert not result.is_leaf and result.requires_grad and result.grad_fn is not None
    assert z.output_nr == 0


def test_seed_graph_mul_node_saves_both_operands(T):
    x, y, z, _, _ = seed_graph(T)

    assert z.grad_fn._saved_self is x
    assert z.grad_fn._saved_other is y  # the seed's "保存y": x's gradient needs y


def test_a_leaf_has_one_accumulate_grad_shared_by_every_graph_using_it(T):
    x, y, z, _, _ = seed_graph(T)
    other = x + 5

    ((acc_from_other, _), _) = other.grad_fn.next_functions
    ((acc_from_z, _), _) = z.grad_fn.next_functions
    assert acc_from_other is acc_from_z
    assert acc_from_other.variable is x


def test_seed_graph_backward_gives_x_grad_y_and_y_grad_x(T):
    x, y, _, _, loss = seed_graph(T)
    loss.backward()

    assert loss.item() == 7.0
    assert x.grad.tolist() == [3.0]  # d(xy + 1)/dx = y
    assert y.grad.tolist() == [2.0]  # d(xy + 1)/dy = x


# §7.3 A non-differentiable op: Quantize with the straight-through estimator


def make_quantize(T):
    class Quantize(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, bits=8):
            scale = (2**bits - 1) / (x.max() - x.min())
            quantized = T.round((x - x.min()) * scale)
            ctx.save_for_backward(x)
            return quantized / scale + x.min()

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, None  # straight through: ignore the rounding; bits gets no grad

    return Quantize


def np_quantize(x, bits):
    scale = (2**bits - 1) / (x.max() - x.min())
    return np.round((x - x.min()) * scale) / scale + x.min()


@pytest.mark.parametrize("bits", [2, 8])
def test_quantize_rounds_to_2_pow_bits_levels_within_half_a_step(T, rng, bits):
    x_np = rng.standard_normal(10)
    y = make_quantize(T).apply(T.tensor(x_np, requires_grad=True), bits)

    values = y.detach().numpy()
    step = (x_np.max() - x_np.min()) / (2**bits - 1)
    np.testing.assert_allclose(values, np_quantize(x_np, bits))
    assert len(np.unique(values.round(12))) <= 2**bits
    assert np.all(np.abs(values - x_np) <= step / 2 + 1e-12)
    assert values.min() == pytest.approx(x_np.min()) and values.max() == pytest.approx(x_np.max())


def test_quantize_2_bits_snaps_to_the_four_levels_rounding_half_to_even(T):
    x = T.tensor([0.0, 0.4, 0.6, 1.5, 2.5, 3.0], requires_grad=True)
    y = make_quantize(T).apply(x, 2)  # levels 0, 1, 2, 3 (scale 1)

    assert y.tolist() == [0.0, 0.0, 1.0, 2.0, 2.0, 3.0]


def test_quantize_straight_through_grad_is_all_ones(T, rng):
    x = T.tensor(rng.standard_normal(10), requires_grad=True)
    y = make_quantize(T).apply(x, 8)
    y.sum().backward()

    assert x.grad.tolist() == [1.0] * 10


def test_quantize_passes_the_upstream_grad_through_unchanged(T, rng):
    x_np, weights = rng.standard_normal((2, 10))
    x = T.tensor(x_np, requires_grad=True)
    y = make_quantize(T).apply(x, 4)
    (y * T.tensor(weights)).sum().backward()

    np.testing.assert_array_equal(x.grad.numpy(), weights)


def test_quantize_straight_through_grad_is_not_the_numerical_derivative(T, rng):
    x = T.tensor(rng.standard_normal(6), requires_grad=True)
    quantize = make_quantize(T).apply

    assert not T.autograd.gradcheck(lambda t: quantize(t, 2), (x,), raise_exception=False)


# §9.2 ReLU written with clamp and a comparison


def make_relu(T):
    class ReLUBackward(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clamp(min=0)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * (x > 0).float()  # ∂ReLU/∂x = 1 where x > 0, else 0

    return ReLUBackward


def test_custom_relu_matches_the_builtin_relu(T, rng):
    x_np = sample(rng, 8)
    x_custom = T.tensor(x_np, requires_grad=True)
    x_builtin = T.tensor(x_np, requires_grad=True)

    y_custom = make_relu(T).apply(x_custom)
    y_builtin = T.relu(x_builtin)
    y_custom.sum().backward()
    y_builtin.sum().backward()

    np.testing.assert_array_equal(y_custom.detach().numpy(), np.maximum(x_np, 0))
    np.testing.assert_array_equal(y_custom.detach().numpy(), y_builtin.detach().numpy())
    np.testing.assert_array_equal(x_custom.grad.numpy(), (x_np > 0).astype(np.float64))
    np.testing.assert_array_equal(x_custom.grad.numpy(), x_builtin.grad.numpy())
    assert x_custom.grad.dtype == T.float64  # float64 grad times a float32 mask stays float64


def test_custom_relu_grad_at_zero_is_zero_like_the_builtin(T):
    x_custom = T.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    x_builtin = T.tensor([-1.0, 0.0, 1.0], requires_grad=True)

    make_relu(T).apply(x_custom).sum().backward()
    T.relu(x_builtin).sum().backward()

    assert x_custom.grad.tolist() == [0.0, 0.0, 1.0]
    assert x_builtin.grad.tolist() == [0.0, 0.0, 1.0]


def test_custom_relu_passes_gradcheck_and_gradgradcheck(T, rng):
    x = T.tensor(sample(rng, 6), requires_grad=True)  # away from the kink at 0
    relu = make_relu(T).apply

    assert T.autograd.gradcheck(relu, (x,))
    assert T.autograd.gradgradcheck(relu, (x,))


# §9.3 Matrix ops: matmul and transpose


def make_matmul(T):
    class MatmulBackward(T.autograd.Function):
        @staticmethod
        def forward(ctx, A, B):
            ctx.save_for_backward(A, B)
            return A @ B

        @staticmethod
        def backward(ctx, grad):
            A, B = ctx.saved_tensors
            return grad @ B.t(), A.t() @ grad  # ∂(AB)/∂A = grad·Bᵀ, ∂(AB)/∂B = Aᵀ·grad

    return MatmulBackward


def make_transpose(T):
    class TransposeBackward(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.t()

        @staticmethod
        def backward(ctx, grad):
            return grad.t()

    return TransposeBackward


def test_custom_matmul_matches_the_builtin_in_values_and_grads(T, rng):
    a_np, b_np = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    g_np = rng.standard_normal((3, 2))
    a1, b1 = T.tensor(a_np, requires_grad=True), T.tensor(b_np, requires_grad=True)
    a2, b2 = T.tensor(a_np, requires_grad=True), T.tensor(b_np, requires_grad=True)

    custom = make_matmul(T).apply(a1, b1)
    builtin = a2 @ b2
    (custom * T.tensor(g_np)).sum().backward()
    (builtin * T.tensor(g_np)).sum().backward()

    np.testing.assert_allclose(custom.detach().numpy(), a_np @ b_np)
    np.testing.assert_allclose(custom.detach().numpy(), builtin.detach().numpy())
    np.testing.assert_allclose(a1.grad.numpy(), g_np @ b_np.T)
    np.testing.assert_allclose(b1.grad.numpy(), a_np.T @ g_np)
    np.testing.assert_allclose(a1.grad.numpy(), a2.grad.numpy())
    np.testing.assert_allclose(b1.grad.numpy(), b2.grad.numpy())


def test_custom_matmul_passes_gradcheck(T, rng):
    a = T.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    b = T.tensor(rng.standard_normal((4, 2)), requires_grad=True)

    assert T.autograd.gradcheck(make_matmul(T).apply, (a, b))


def test_custom_transpose_matches_t_and_sends_the_grad_back_transposed(T, rng):
    x_np, g_np = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    x_custom = T.tensor(x_np, requires_grad=True)
    x_builtin = T.tensor(x_np, requires_grad=True)

    custom = make_transpose(T).apply(x_custom)
    builtin = x_builtin.t()
    (custom * T.tensor(g_np)).sum().backward()
    (builtin * T.tensor(g_np)).sum().backward()

    assert tuple(custom.shape) == (3, 2)
    np.testing.assert_array_equal(custom.detach().numpy(), builtin.detach().numpy())
    np.testing.assert_array_equal(x_custom.grad.numpy(), g_np.T)
    np.testing.assert_array_equal(x_custom.grad.numpy(), x_builtin.grad.numpy())


def test_custom_transpose_passes_gradcheck(T, rng):
    x = T.tensor(rng.standard_normal((2, 3)), requires_grad=True)

    assert T.autograd.gradcheck(make_transpose(T).apply, (x,))


# §9.4 Reductions: sum and mean


def make_sum(T):
    class SumBackward(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, dim=None, keepdim=False):
            ctx.shape = x.shape
            ctx.dim = dim
            ctx.keepdim = keepdim
            return x.sum(dim=dim, keepdim=keepdim)

        @staticmethod
        def backward(ctx, grad):
            # ∂(Σx)/∂x = 1: the grad is broadcast back to the input's shape
            if ctx.dim is not None and not ctx.keepdim:
                grad = grad.unsqueeze(ctx.dim)
            return grad.expand(ctx.shape), None, None

    return SumBackward


def make_mean(T):
    class MeanBackward(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, dim=None, keepdim=False):
            ctx.shape = x.shape
            ctx.dim = dim
            ctx.keepdim = keepdim
            ctx.numel = x.numel() if dim is None else x.shape[dim]
            return x.mean(dim=dim, keepdim=keepdim)

        @staticmethod
        def backward(ctx, grad):
            # ∂(mean x)/∂x = 1/n
            if ctx.dim is not None and not ctx.keepdim:
                grad = grad.unsqueeze(ctx.dim)
            return (grad / ctx.numel).expand(ctx.shape), None, None

    return MeanBackward


REDUCTIONS = {"sum": make_sum, "mean": make_mean}
DIMS = [(None, False), (0, False), (1, False), (1, True), (-1, False)]


def builtin_reduction(x, name, dim, keepdim):
    method = getattr(x, name)
    return method() if dim is None else method(dim, keepdim=keepdim)


@pytest.mark.parametrize("dim, keepdim", DIMS)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_custom_reduction_matches_the_builtin_in_values_and_grads(T, rng, name, dim, keepdim):
    x_np = rng.standard_normal((3, 4))
    x_custom = T.tensor(x_np, requires_grad=True)
    x_builtin = T.tensor(x_np, requires_grad=True)

    custom = REDUCTIONS[name](T).apply(x_custom, dim, keepdim)
    builtin = builtin_reduction(x_builtin, name, dim, keepdim)
    upstream = T.tensor(rng.standard_normal(tuple(builtin.shape)))
    (custom * upstream).sum().backward()
    (builtin * upstream).sum().backward()

    assert tuple(custom.shape) == tuple(builtin.shape)
    np.testing.assert_allclose(custom.detach().numpy(), builtin.detach().numpy())
    np.testing.assert_allclose(x_custom.grad.numpy(), x_builtin.grad.numpy())


def test_custom_mean_spreads_the_grad_as_one_over_n(T):
    x = T.tensor(np.ones((2, 4)), requires_grad=True)
    make_mean(T).apply(x, 1).sum().backward()

    assert x.grad.tolist() == [[0.25] * 4] * 2


@pytest.mark.parametrize("dim, keepdim", DIMS)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_custom_reduction_passes_gradcheck(T, rng, name, dim, keepdim):
    x = T.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    reduce = REDUCTIONS[name](T).apply

    assert T.autograd.gradcheck(lambda t: reduce(t, dim, keepdim), (x,))


# Exercise 2: a custom Softmax


def make_softmax(T):
    class Softmax(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            exp_x = T.exp(x - x.max())  # subtract the max for numerical stability
            softmax = exp_x / exp_x.sum()
            ctx.save_for_backward(softmax)
            return softmax

        @staticmethod
        def backward(ctx, grad_output):
            (softmax,) = ctx.saved_tensors
            # ∂s_i/∂x_j = s_i(δ_ij - s_j), so grad_i = s_i·grad_i - s_i·Σ_j s_j·grad_j
            return softmax * (grad_output - (softmax * grad_output).sum())

    return Softmax


def test_custom_softmax_equals_the_builtin_softmax(T, rng):
    x_np = rng.standard_normal(5)
    x = T.tensor(x_np, requires_grad=True)

    y = make_softmax(T).apply(x)

    expected = np.exp(x_np) / np.exp(x_np).sum()
    np.testing.assert_allclose(y.detach().numpy(), expected)
    np.testing.assert_allclose(y.detach().numpy(), T.softmax(x, dim=0).detach().numpy())
    assert y.sum().item() == pytest.approx(1.0)


def test_custom_softmax_of_large_inputs_does_not_overflow(T):
    x = T.tensor([1000.0, 1001.0, 1002.0], requires_grad=True)

    y = make_softmax(T).apply(x)

    expected = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    np.testing.assert_allclose(y.detach().numpy(), expected, rtol=1e-6)


def test_custom_softmax_sum_has_zero_grad_like_the_builtin(T, rng):
    # The seed's own check: the outputs always sum to 1, so this gradient vanishes.
    x_np = rng.standard_normal(5)
    x = T.tensor(x_np, requires_grad=True)
    x2 = T.tensor(x_np, requires_grad=True)

    make_softmax(T).apply(x).sum().backward()
    T.softmax(x2, dim=0).sum().backward()

    np.testing.assert_allclose(x.grad.numpy(), np.zeros(5), atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), atol=1e-12)


def test_custom_softmax_grads_match_the_builtin_for_a_weighted_loss(T, rng):
    x_np, weights = rng.standard_normal((2, 5))
    x = T.tensor(x_np, requires_grad=True)
    x2 = T.tensor(x_np, requires_grad=True)

    (make_softmax(T).apply(x) * T.tensor(weights)).sum().backward()
    (T.softmax(x2, dim=0) * T.tensor(weights)).sum().backward()

    s = np.exp(x_np) / np.exp(x_np).sum()
    np.testing.assert_allclose(x.grad.numpy(), s * (weights - (s * weights).sum()))
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy())


def test_custom_softmax_passes_gradcheck(T, rng):
    x = T.tensor(rng.standard_normal(5), requires_grad=True)

    assert T.autograd.gradcheck(make_softmax(T).apply, (x,))


# §3.3 In-place operations and version tracking (torch raises at x.add_(1) itself, not at backward)


def test_seed_in_place_add_on_a_leaf_that_requires_grad_fails_at_the_add(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x + 2
    with pytest.raises(
        RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"
    ):
        x.add_(1)

    assert x.tolist() == [1.0]
    assert x._version == 0
    y.backward()
    assert x.grad.tolist() == [1.0]


def test_seed_add_saves_nothing_so_changing_x_under_no_grad_keeps_backward_working(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x + 2
    with T.no_grad():
        x.add_(1)

    assert x._version == 1
    y.backward()
    assert x.grad.tolist() == [1.0]


def test_seed_every_in_place_op_bumps_the_version_counter(T):
    t = T.tensor([1.0])
    versions = [t._version]
    for _ in range(3):
        t.add_(1)
        versions.append(t._version)

    assert versions == [0, 1, 2, 3]
    assert t.tolist() == [4.0]


def test_seed_modified_saved_tensor_is_caught_when_backward_unpacks_it(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x * 2
    z = y**2  # saves y at version 0
    y.add_(1)

    with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
        z.backward()
    assert "is at version 1; expected version 0 instead" in str(info.value)
    assert x.grad is None


def test_seed_version_is_recorded_when_the_tensor_is_saved(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x * 2
    y.add_(1)  # version 1, before anything saves y
    z = y**2
    z.backward()

    # z = (2x + 1)^2, dz/dx = 4(2x + 1)
    assert x.grad.tolist() == [12.0]


# §5.2 Backward more than once (the third backward raises: the second one freed the graph)


def test_seed_retain_graph_lets_backward_run_again_and_grads_accumulate(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x**2
    y.backward(retain_graph=True)
    assert x.grad.tolist() == [2.0]

    y.backward()
    assert x.grad.tolist() == [4.0]


def test_seed_third_backward_fails_because_the_second_freed_the_graph(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x**2
    y.backward(retain_graph=True)
    y.backward()
    x.grad.zero_()

    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()
    assert x.grad.tolist() == [0.0]


def test_seed_zeroed_grad_refills_to_2_when_the_graph_is_kept(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x**2
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    grad = x.grad
    x.grad.zero_()
    y.backward()

    assert x.grad is grad
    assert x.grad.tolist() == [2.0]


def test_seed_backward_twice_without_retain_graph_fails(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x**2
    y.backward()
    with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
        y.backward()
    assert x.grad.tolist() == [2.0]


# §5.3 Gradient accumulation: several losses add into the same .grad


def test_seed_two_losses_accumulate_into_the_same_grad_object(T):
    w = T.tensor([1.0, 2.0], requires_grad=True)
    loss1 = (w * 3).sum()
    loss2 = (w * w).sum()

    loss1.backward()
    first = w.grad
    assert first.tolist() == [3.0, 3.0]

    loss2.backward()
    assert w.grad is first  # accumulated in place, not replaced
    assert w.grad.tolist() == [5.0, 7.0]  # 3 + 2w


def test_seed_clearing_grads_between_steps_keeps_them_from_mixing(T):
    w = T.tensor([1.0, 2.0], requires_grad=True)
    (w * 3).sum().backward()
    w.grad = None  # what zero_grad(set_to_none=True) does
    (w * w).sum().backward()
    assert w.grad.tolist() == [2.0, 4.0]

    w.grad.zero_()
    (w * 3).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]


def test_seed_micro_batches_accumulate_to_the_full_batch_gradient(T):
    data = np.array([1.0, 2.0, 3.0, 4.0])
    w_full = T.tensor([0.5], requires_grad=True)
    w_acc = T.tensor([0.5], requires_grad=True)

    ((w_full * T.tensor(data)) ** 2).mean().backward()
    for chunk in np.split(data, 2):
        (((w_acc * T.tensor(chunk)) ** 2).mean() / 2).backward()

    # d/dw mean((w x)^2) = 2 w mean(x^2) = 2 * 0.5 * 7.5
    assert w_full.grad.tolist() == [7.5]
    assert w_acc.grad.tolist() == pytest.approx([7.5])


# §8.1 Tensor hook: it sees the gradient 2 and its return value doubles it


def test_seed_tensor_hook_sees_2_and_its_return_makes_the_grad_4(T):
    seen = []

    def hook_fn(grad):
        seen.append(grad.tolist())
        return grad * 2

    x = T.tensor([1.0], requires_grad=True)
    x.register_hook(hook_fn)
    y = x**2
    y.backward()

    assert seen == [[2.0]]
    assert x.grad.tolist() == [4.0]


# §8.3 Debugging hooks: a NaN check and gradient clipping on every parameter


def debug_hooks(T):
    def check_nan(grad):
        if T.isnan(grad).any():
            raise ValueError("NaN gradient detected!")
        return grad

    def clip_grad(grad):
        return T.clamp(grad, -1, 1)

    return check_nan, clip_grad


def test_seed_debug_hooks_clip_each_parameter_gradient(T):
    check_nan, clip_grad = debug_hooks(T)
    w = T.tensor([0.1, 3.0, -2.0], requires_grad=True)
    b = T.tensor([0.5], requires_grad=True)
    for param in (w, b):
        param.register_hook(check_nan)
        param.register_hook(clip_grad)

    ((w * w).sum() + b * 5).sum().backward()

    assert w.grad.tolist() == pytest.approx([0.2, 1.0, -1.0])
    assert b.grad.tolist() == [1.0]


def test_seed_nan_check_hook_stops_backward_with_its_value_error(T):
    check_nan, clip_grad = debug_hooks(T)
    x = T.tensor([0.0, 1.0], requires_grad=True)
    x.register_hook(check_nan)
    x.register_hook(clip_grad)

    with pytest.raises(ValueError, match="NaN gradient detected!"):
        (x.sqrt() * 0).sum().backward()  # d sqrt(x)/dx at 0 is inf, times 0 is NaN
    assert x.grad is None


def test_seed_clip_registered_first_hides_nothing_from_the_nan_check(T):
    check_nan, clip_grad = debug_hooks(T)
    x = T.tensor([0.0, 1.0], requires_grad=True)
    x.register_hook(clip_grad)  # clamp keeps NaN as NaN
    x.register_hook(check_nan)

    with pytest.raises(ValueError, match="NaN gradient detected!"):
        (x.sqrt() * 0).sum().backward()


# §11.1 Anomaly detection (1 / (y - 1) at y = 1 gives inf, not NaN: no error is raised)


def test_seed_anomaly_example_division_by_zero_gives_inf_and_no_error(T):
    T.autograd.set_detect_anomaly(True)
    try:
        x = T.tensor([1.0], requires_grad=True)
        y = x**2
        z = 1 / (y - 1)
        z.backward()

        assert z.tolist() == [float("inf")]
        assert x.grad.tolist() == [float("-inf")]
        assert "traceback_" in z.grad_fn.metadata
    finally:
        T.autograd.set_detect_anomaly(False)
    assert not T.is_anomaly_enabled()


def test_seed_anomaly_mode_names_the_op_whose_gradient_is_nan(T):
    T.autograd.set_detect_anomaly(True)
    try:
        x = T.tensor([1.0], requires_grad=True)
        y = x**2
        z = (y - 1) / (y - 1)  # 0 / 0
        with pytest.warns(UserWarning) as record:
            with pytest.raises(
                RuntimeError, match=r"Function 'DivBackward0' returned nan values in its 1th"
            ):
                z.backward()
    finally:
        T.autograd.set_detect_anomaly(False)

    messages = [str(w.message) for w in record]
    (detected,) = [m for m in messages if m.startswith("Error detected in DivBackward0")]
    assert "z = (y - 1) / (y - 1)" in detected
    assert x.grad is None
