"""Seed 004 (TinyPytorch stage 2, a DeZero-style engine) ported to the torch-named API.

`Variable(np.array(1.0))` becomes `T.tensor(1.0, requires_grad=True)`, `cleargrad()` becomes
`x.grad = None`, `backward(retain_grad=True)` becomes `t.retain_grad()` on the tensors to keep, and
the seed's Function classes become `T.autograd.Function` subclasses.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest


@pytest.fixture
def tiny(T):
    """The seed's Add, Mul, Neg, Sub, Div, Pow and square as T.autograd.Function subclasses."""

    class Add(T.autograd.Function):
        @staticmethod
        def forward(ctx, x0, x1):
            return x0 + x1

        @staticmethod
        def backward(ctx, gy):
            return gy, gy

    class Mul(T.autograd.Function):
        @staticmethod
        def forward(ctx, x0, x1):
            ctx.save_for_backward(x0, x1)
            return x0 * x1

        @staticmethod
        def backward(ctx, gy):
            x0, x1 = ctx.saved_tensors
            return gy * x1, gy * x0

    class Neg(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return -x

        @staticmethod
        def backward(ctx, gy):
            return -gy

    class Sub(T.autograd.Function):
        @staticmethod
        def forward(ctx, x0, x1):
            return x0 - x1

        @staticmethod
        def backward(ctx, gy):
            return gy, -gy

    class Div(T.autograd.Function):
        @staticmethod
        def forward(ctx, x0, x1):
            ctx.save_for_backward(x0, x1)
            return x0 / x1

        @staticmethod
        def backward(ctx, gy):
            x0, x1 = ctx.saved_tensors
            return gy / x1, -gy * x0 / (x1**2)

    # The exponent is a forward argument (with no gradient) instead of a constructor argument.
    class Pow(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, c):
            ctx.save_for_backward(x)
            ctx.c = c
            return x**c

        @staticmethod
        def backward(ctx, gy):
            (x,) = ctx.saved_tensors
            c = ctx.c
            return c * (x ** (c - 1)) * gy, None

    class Square(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**2

        @staticmethod
        def backward(ctx, gy):
            (x,) = ctx.saved_tensors
            return 2 * x * gy

    return SimpleNamespace(
        add=Add.apply,
        mul=Mul.apply,
        neg=Neg.apply,
        sub=Sub.apply,
        div=Div.apply,
        pow=Pow.apply,
        square=Square.apply,
    )


def scalar(T, value):
    return T.tensor(value, requires_grad=True)


# Step 14: a variable used twice receives the sum of both paths' gradients


def test_x_plus_x_gives_grad_2(T):
    x = scalar(T, 3.0)
    y = x + x
    y.backward()

    assert y.item() == 6.0
    assert x.grad.item() == 2.0


def test_ported_add_of_x_with_itself_gives_grad_2(T, tiny):
    x = scalar(T, 3.0)
    y = tiny.add(x, x)
    y.backward()

    assert x.grad.item() == 2.0
    assert type(y.grad_fn).__name__ == "AddBackward"


# Step 13: reset the gradient between computations


def test_grads_accumulate_until_cleared(T):
    x = scalar(T, 3.0)
    (x + x).backward()
    assert x.grad.item() == 2.0

    (x + x + x).backward()
    assert x.grad.item() == 2.0 + 3.0

    x.grad = None
    (x + x + x).backward()
    assert x.grad.item() == 3.0


# Steps 15-16: a diamond, a = x², y = a² + a², must reach x only after both branches


def test_diamond_graph_gives_grad_64_at_2(T):
    x = scalar(T, 2.0)
    a = x**2
    b = a**2
    c = a**2
    y = b + c
    y.backward()

    assert y.item() == 2 * 2.0**4
    assert x.grad.item() == 8 * 2.0**3  # d(2x⁴)/dx


def test_ported_diamond_gives_grad_64_at_2(T, tiny):
    x = scalar(T, 2.0)
    a = tiny.square(x)
    y = tiny.add(tiny.square(a), tiny.square(a))
    y.backward()

    assert y.item() == 32.0
    assert x.grad.item() == 64.0


def test_diamond_runs_the_shared_node_once_after_both_of_its_consumers(T):
    calls = []

    class Square(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, label):
            ctx.save_for_backward(x)
            ctx.label = label
            return x**2

        @staticmethod
        def backward(ctx, gy):
            calls.append(ctx.label)
            (x,) = ctx.saved_tensors
            return 2 * x * gy, None

    x = scalar(T, 2.0)
    a = Square.apply(x, "a")
    y = Square.apply(a, "b") + Square.apply(a, "c")
    y.backward()

    assert sorted(calls[:2]) == ["b", "c"]
    assert calls[2:] == ["a"]
    assert x.grad.item() == 64.0


# Step 18: gradients of intermediate variables are not kept


def intermediate_graph(T):
    x0 = scalar(T, 1.0)
    x1 = scalar(T, 1.0)
    t = x0 + x1
    y = x0 + t
    return x0, x1, t, y


def test_intermediate_grads_are_not_kept(T):
    x0, x1, t, y = intermediate_graph(T)
    y.backward()

    assert (x0.grad.item(), x1.grad.item()) == (2.0, 1.0)
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert y.grad is None
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert t.grad is None


def test_retain_grad_keeps_intermediate_grads(T):
    x0, x1, t, y = intermediate_graph(T)
    y.retain_grad()
    t.retain_grad()
    y.backward()

    assert (y.grad.item(), t.grad.item()) == (1.0, 1.0)
    assert (x0.grad.item(), x1.grad.item()) == (2.0, 1.0)


def test_no_grad_builds_no_graph(T):
    x = T.ones(100, 100, 100, requires_grad=True)
    with T.no_grad():
        y = ((x**2) ** 2) ** 2
    z = ((x**2) ** 2) ** 2

    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    assert z.requires_grad and type(z.grad_fn).__name__ == "PowBackward0"
    assert T.is_grad_enabled()


# Step 19: Variable niceties, as Tensor attributes


def test_tensor_reports_shape_ndim_size_dtype_and_len(T):
    x = T.tensor(np.array([[1, 2, 3], [4, 5, 6]]))

    assert tuple(x.shape) == (2, 3)
    assert x.ndim == 2
    assert x.numel() == 6  # the seed's `x.size`
    assert x.dtype == T.int64
    assert len(x) == 2
    assert len(T.tensor(np.array([1, 2, 3, 4]))) == 4


def test_tensor_repr_aligns_rows(T):
    assert repr(T.tensor(np.array([1, 2, 3]))) == "tensor([1, 2, 3])"
    assert repr(T.tensor(np.array([[1, 2], [3, 4]]))) == "tensor([[1, 2],\n        [3, 4]])"


# Steps 20-22: operator overloading


def test_a_times_b_plus_c(T):
    a, b, c = scalar(T, 3.0), scalar(T, 2.0), scalar(T, 1.0)
    y = a * b + c
    y.backward()

    assert y.item() == 7.0
    assert (a.grad.item(), b.grad.item(), c.grad.item()) == (2.0, 3.0, 1.0)


def test_ported_mul_and_add_give_the_same_as_operators(T, tiny):
    a, b, c = scalar(T, 3.0), scalar(T, 2.0), scalar(T, 1.0)
    y = tiny.add(tiny.mul(a, b), c)
    y.backward()

    assert y.item() == 7.0
    assert (a.grad.item(), b.grad.item(), c.grad.item()) == (2.0, 3.0, 1.0)


def test_numbers_on_either_side_of_an_operator(T):
    x = scalar(T, 2.0)
    y = 3.0 * x + (2.0 - x) + x / 4 + 1 / x + (-x)
    y.backward()

    assert y.item() == pytest.approx(3 * 2 + 0 + 0.5 + 0.5 - 2)
    assert x.grad.item() == pytest.approx(3 - 1 + 1 / 4 - 1 / 2.0**2 - 1)


def test_ported_functions_pass_gradcheck(T, tiny, rng):
    x0, x1 = (T.tensor(row, requires_grad=True) for row in rng.uniform(0.5, 2.0, size=(2, 3)))

    for binary in (tiny.add, tiny.mul, tiny.sub, tiny.div):
        assert T.autograd.gradcheck(binary, (x0, x1))
    assert T.autograd.gradcheck(tiny.neg, (x0,))
    assert T.autograd.gradcheck(tiny.square, (x0,))
    assert T.autograd.gradcheck(lambda t: tiny.pow(t, 3), (x0,))


# Step 24: test functions of optimization


def sphere(x, y):
    return x**2 + y**2


def matyas(x, y):
    return 0.26 * (x**2 + y**2) - 0.48 * x * y


def goldstein(x, y):
    p = 1 + (x + y + 1) ** 2 * (19 - 14 * x + 3 * x**2 - 14 * y + 6 * x * y + 3 * y**2)
    q = 30 + (2 * x - 3 * y) ** 2 * (18 - 32 * x + 12 * x**2 + 48 * y - 36 * x * y + 27 * y**2)
    return p * q


def goldstein_grad(x, y):
    """Goldstein-Price's gradient by the product rule, written out by hand."""
    a = x + y + 1
    b = 19 - 14 * x + 3 * x**2 - 14 * y + 6 * x * y + 3 * y**2
    c = 2 * x - 3 * y
    d = 18 - 32 * x + 12 * x**2 + 48 * y - 36 * x * y + 27 * y**2
    p = 1 + a**2 * b
    q = 30 + c**2 * d
    dp_dx = 2 * a * b + a**2 * (-14 + 6 * x + 6 * y)
    dp_dy = 2 * a * b + a**2 * (-14 + 6 * x + 6 * y)
    dq_dx = 4 * c * d + c**2 * (-32 + 24 * x - 36 * y)
    dq_dy = -6 * c * d + c**2 * (48 - 36 * x + 54 * y)
    return dp_dx * q + p * dq_dx, dp_dy * q + p * dq_dy


def test_sphere_grads_at_1_1_are_2_2(T):
    x, y = scalar(T, 1.0), scalar(T, 1.0)
    z = sphere(x, y)
    z.backward()

    assert z.item() == 2.0
    assert (x.grad.item(), y.grad.item()) == (2.0, 2.0)


def test_matyas_grads_at_1_1_are_0_04(T):
    x, y = scalar(T, 1.0), scalar(T, 1.0)
    z = matyas(x, y)
    z.backward()

    # dz/dx = 0.52x - 0.48y and dz/dy = 0.52y - 0.48x
    assert z.item() == pytest.approx(0.52 - 0.48)
    assert x.grad.item() == pytest.approx(0.04, rel=1e-5)
    assert y.grad.item() == pytest.approx(0.04, rel=1e-5)


def test_matyas_written_with_ported_functions_gives_the_same_grads(T, tiny):
    x, y = scalar(T, 1.0), scalar(T, 1.0)

    def const(value):  # the seed's as_variable: a constant operand becomes a tensor
        return T.tensor(value)

    z = tiny.sub(
        tiny.mul(const(0.26), tiny.add(tiny.pow(x, 2), tiny.pow(y, 2))),
        tiny.mul(const(0.48), tiny.mul(x, y)),
    )
    z.backward()

    assert x.grad.item() == pytest.approx(0.04, rel=1e-5)
    assert y.grad.item() == pytest.approx(0.04, rel=1e-5)


def test_goldstein_price_grads_at_1_1_are_minus_5376_and_8064(T):
    assert goldstein_grad(1.0, 1.0) == (-5376.0, 8064.0)

    x, y = scalar(T, 1.0), scalar(T, 1.0)
    z = goldstein(x, y)
    z.backward()

    assert z.item() == goldstein(1.0, 1.0)
    assert (x.grad.item(), y.grad.item()) == (-5376.0, 8064.0)


def test_goldstein_price_grads_match_the_hand_derivative_at_random_points(T, rng):
    x_np, y_np = rng.uniform(-2, 2, size=(2, 5))
    x = T.tensor(x_np, requires_grad=True)
    y = T.tensor(y_np, requires_grad=True)
    z = goldstein(x, y)
    z.sum().backward()

    dz_dx, dz_dy = goldstein_grad(x_np, y_np)
    np.testing.assert_allclose(z.detach().numpy(), goldstein(x_np, y_np))
    np.testing.assert_allclose(x.grad.numpy(), dz_dx)
    np.testing.assert_allclose(y.grad.numpy(), dz_dy)


# Step 19, continued: the seed's `size` is torch's `numel()`; `size()` is the shape


def test_size_is_the_shape_and_numel_counts_the_elements(T):
    x = T.tensor(np.array([[1, 2, 3], [4, 5, 6]]))

    assert x.size() == (2, 3) and x.shape == (2, 3)
    assert x.size() == x.shape
    assert (x.size(0), x.size(1), x.size(-1)) == (2, 3, 3)
    assert x.numel() == 6 and x.dim() == 2
    assert repr(x.shape) == f"{T.__name__}.Size([2, 3])"


def test_zero_dim_tensor_has_an_empty_shape_and_no_len(T):
    x = T.tensor(np.array(1.0), requires_grad=True)

    assert x.shape == () and x.ndim == 0 and x.numel() == 1
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(x)


@pytest.mark.parametrize(
    "np_dtype, name",
    [(np.int64, "int64"), (np.int32, "int32"), (np.float64, "float64"), (np.float32, "float32")],
)
def test_tensor_dtype_follows_the_numpy_array(T, np_dtype, name):
    x = T.tensor(np.array([1, 2, 3], dtype=np_dtype))

    assert x.dtype == getattr(T, name)
    assert str(x.dtype) == f"{T.__name__}.{name}"


def test_print_shows_the_values_aligned_under_the_tensor_prefix(T, capsys):
    print(T.tensor(np.array([1, 2, 3])))
    print(T.tensor(np.array([[1, 2], [3, 4]])))

    assert capsys.readouterr().out == "tensor([1, 2, 3])\ntensor([[1, 2],\n        [3, 4]])\n"


def test_repr_names_a_non_default_dtype_requires_grad_and_grad_fn(T):
    name = T.__name__
    x = T.tensor(np.array(1.0), requires_grad=True)  # the seed's Variable(np.array(1.0))

    assert repr(T.tensor(np.array([1.0, 2.0]))) == f"tensor([1., 2.], dtype={name}.float64)"
    assert repr(x) == f"tensor(1., dtype={name}.float64, requires_grad=True)"
    assert repr(T.tensor([2.0], requires_grad=True) * 2) == "tensor([4.], grad_fn=<MulBackward0>)"
    assert str(x) == repr(x)


# Steps 20-22, continued: every operator with a Python number on either side


OPERATORS = {
    # expression: (function of x, derivative)
    "2 * x": (lambda x: 2 * x, lambda x: np.full_like(x, 2.0)),
    "x * 2": (lambda x: x * 2, lambda x: np.full_like(x, 2.0)),
    "x + 1": (lambda x: x + 1, lambda x: np.ones_like(x)),
    "1 + x": (lambda x: 1 + x, lambda x: np.ones_like(x)),
    "x - 1": (lambda x: x - 1, lambda x: np.ones_like(x)),
    "1 - x": (lambda x: 1 - x, lambda x: -np.ones_like(x)),
    "x / 2": (lambda x: x / 2, lambda x: np.full_like(x, 0.5)),
    "2 / x": (lambda x: 2 / x, lambda x: -2 / x**2),
    "x ** 3": (lambda x: x**3, lambda x: 3 * x**2),
    "-x": (lambda x: -x, lambda x: -np.ones_like(x)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("expression", list(OPERATORS))
def test_operator_with_a_number_keeps_the_dtype_and_gets_the_grad(T, expression, dtype):
    fn, derivative = OPERATORS[expression]
    x_np = np.array([0.5, 2.0, -1.5], dtype=dtype)
    x = T.tensor(x_np, requires_grad=True)

    y = fn(x)
    y.sum().backward()

    assert isinstance(y, T.Tensor) and y.requires_grad
    assert y.dtype == x.grad.dtype == getattr(T, dtype)
    np.testing.assert_allclose(y.detach().numpy(), fn(x_np), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), derivative(x_np), rtol=1e-6)


def test_seed_expression_x_plus_3_squared_over_2(T):
    x = scalar(T, 2.0)
    y = (x + 3) ** 2 / 2
    y.backward()

    assert y.item() == 12.5
    assert x.grad.item() == 5.0  # d((x+3)²/2)/dx = x + 3


def test_numpy_scalars_act_like_python_numbers_on_either_side(T):
    x = T.tensor([2.0], requires_grad=True)  # float32
    y = np.float64(3.0) * x + (np.float64(2.0) - x) + x / np.float64(4.0) + np.float64(1.0) / x
    y = y + x ** np.int64(2)
    y.backward()

    assert isinstance(y, T.Tensor)
    assert y.dtype == T.float32  # a NumPy float64 scalar does not promote, like a Python float
    assert y.item() == pytest.approx(6 + 0 + 0.5 + 0.5 + 4)
    assert x.grad.item() == pytest.approx(3 - 1 + 0.25 - 0.25 + 4)


def test_numpy_array_operand_is_wrapped_as_a_tensor_first(T):
    # The seed's as_variable: a NumPy operand becomes a constant tensor (no grad, no edge).
    x = T.tensor([1.0, 1.0], requires_grad=True)
    c = T.tensor(np.array([2.0, 3.0]))
    y = x * c + T.tensor(np.array([1.0, 1.0]))
    y.sum().backward()

    assert not c.requires_grad
    assert y.tolist() == [3.0, 4.0]
    assert x.grad.tolist() == [2.0, 3.0]
    assert y.dtype == T.float64  # the float64 array operand promotes the float32 x
    assert x.grad.dtype == T.float32
    ((_, _), (constant_edge, _)) = (x * c).grad_fn.next_functions
    assert constant_edge is None


def test_bare_numpy_array_operand_with_a_grad_tensor_raises(T):
    # The seed's `x + np.array(3.0)` and `np.array([2.0]) + x`: torch does not take a bare
    # ndarray as an operand of a tensor that requires grad (NumPy would have to read x's data).
    x = T.tensor([2.0], requires_grad=True)

    with pytest.raises(RuntimeError, match="requires grad"):
        x + np.array(3.0)
    with pytest.raises(TypeError):
        np.array([2.0]) + x


INTEGER_OPERATORS = {
    # expression: (function of i, result dtype, values at i = [1, 2, 3])
    "i + 1": (lambda i: i + 1, "int64", [2, 3, 4]),
    "1 - i": (lambda i: 1 - i, "int64", [0, -1, -2]),
    "-i": (lambda i: -i, "int64", [-1, -2, -3]),
    "i ** 2": (lambda i: i**2, "int64", [1, 4, 9]),
    "i * 2.5": (lambda i: i * 2.5, "float32", [2.5, 5.0, 7.5]),
    "i / 2": (lambda i: i / 2, "float32", [0.5, 1.0, 1.5]),
    "2 / i": (lambda i: 2 / i, "float32", [2.0, 1.0, 2 / 3]),
}


@pytest.mark.parametrize("expression", list(INTEGER_OPERATORS))
def test_integer_tensor_with_a_number_follows_type_promotion(T, expression):
    fn, dtype, values = INTEGER_OPERATORS[expression]

    y = fn(T.tensor(np.array([1, 2, 3])))

    assert y.dtype == getattr(T, dtype)
    assert y.tolist() == pytest.approx(values)
