"""``autograd.functional``: jacobian, hessian, vjp, jvp, hvp and vhp (reference §1.8).

Every value is checked against a closed form computed in NumPy; structures (a tensor for one
input and output, tuples ``J[i][j]`` otherwise), the ``v=None`` rules, strict mode, detached
results without ``create_graph`` and torch's error messages are pinned on both backends.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import to_np

STRICT_OUTPUT = (
    "Output 0 of the user-provided function does not require gradients. The outputs must be "
    "computed in a differentiable manner from the input when running in strict mode."
)
V_NONE_OUTPUT = (
    "The vector v can only be None if the user-provided function returns a single Tensor with "
    "a single element."
)
V_NONE_INPUT = (
    "The vector v can only be None if the input to the user-provided function is a single "
    "Tensor with a single element."
)
ISONLY = (
    "Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly implemented for "
    "`vectorize=True`."
)


@pytest.fixture
def F(T):
    """The functional module of the backend under test."""
    return T.autograd.functional


def arr(*values):
    return np.array(values, dtype=np.float64)


def close(t, expected):
    np.testing.assert_allclose(to_np(t), expected, rtol=1e-10, atol=1e-12)


# -------------------- jacobian


def test_jacobian_of_one_input_and_output_is_one_tensor(T, F):
    x = arr(0.5, -1.0, 2.0)

    J = F.jacobian(lambda a: a.exp() * a, T.tensor(x))

    close(J, np.diag((1 + x) * np.exp(x)))


def test_jacobian_shape_is_output_shape_then_input_shape(T, F, rng):
    a = rng.normal(size=(2, 3))
    b = rng.normal(size=(3, 4))

    J = F.jacobian(lambda m: m @ T.tensor(b), T.tensor(a))

    assert tuple(J.shape) == (2, 4, 2, 3)
    # d (a @ b)[i, j] / d a[k, l] = delta_ik * b[l, j]
    close(J, np.einsum("ik,lj->ijkl", np.eye(2), b))


def test_jacobian_with_tuples_is_nested_output_then_input(T, F):
    a, b = arr(1.0, 2.0, -3.0), arr(0.5, -1.5, 2.0)
    unused = arr(4.0, 5.0)

    J = F.jacobian(lambda p, q, r: (p * q, (p ** 2).sum()),
                   (T.tensor(a), T.tensor(b), T.tensor(unused)))

    assert isinstance(J, tuple) and len(J) == 2 and all(len(row) == 3 for row in J)
    close(J[0][0], np.diag(b))
    close(J[0][1], np.diag(a))
    close(J[0][2], np.zeros((3, 2)))  # not strict: zeros for an input the output ignores
    close(J[1][0], 2 * a)
    close(J[1][1], np.zeros(3))


def test_jacobian_unpacks_only_the_level_that_was_not_a_tuple(T, F):
    a, b = arr(1.0, 2.0), arr(3.0, -1.0)

    per_input = F.jacobian(lambda p, q: p * q, (T.tensor(a), T.tensor(b)))
    per_output = F.jacobian(lambda p: (p.sin(), p.sum()), T.tensor(a))

    assert isinstance(per_input, tuple) and len(per_input) == 2
    close(per_input[0], np.diag(b))
    close(per_input[1], np.diag(a))
    assert isinstance(per_output, tuple) and len(per_output) == 2
    close(per_output[0], np.diag(np.cos(a)))
    close(per_output[1], np.ones(2))


def test_vectorized_jacobian_gives_the_same_values(T, F):
    a, b = arr(0.3, -0.7), arr(1.5, 2.0, -1.0)
    f = lambda p, q: ((p.exp() * q[:2]).sum(), q * p.sum())

    loop = F.jacobian(f, (T.tensor(a), T.tensor(b)))
    vectorized = F.jacobian(f, (T.tensor(a), T.tensor(b)), vectorize=True)

    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(to_np(vectorized[i][j]), to_np(loop[i][j]), rtol=1e-12)
    close(loop[0][0], np.exp(a) * b[:2])
    close(loop[1][0], np.outer(b, np.ones(2)))


def test_forward_mode_jacobian_needs_vectorize_and_says_isonly(T, F):
    x = T.tensor(arr(1.0, 2.0))

    with pytest.raises(NotImplementedError) as info:
        F.jacobian(lambda a: a ** 2, x, strategy="forward-mode")

    assert str(info.value) == ISONLY


def test_forward_mode_jacobian_nests_lists_with_the_same_values(T, F):
    a, b = arr(1.0, 2.0), arr(-1.0, 0.5)

    J = F.jacobian(lambda p, q: (p * q).sum(), (T.tensor(a), T.tensor(b)),
                   vectorize=True, strategy="forward-mode")

    assert isinstance(J, list)
    close(J[0], b)
    close(J[1], a)


def test_forward_mode_refuses_create_graph_and_strict(T, F):
    x = T.tensor(arr(1.0, 2.0))

    with pytest.raises(NotImplementedError, match="`create_graph=True` and "
                                                  '`strategy="forward-mode"` are not supported'):
        F.jacobian(lambda a: a ** 2, x, create_graph=True, vectorize=True,
                   strategy="forward-mode")
    with pytest.raises(RuntimeError, match='`strict=True` and `strategy="forward-mode"` are not'):
        F.jacobian(lambda a: a ** 2, x, strict=True, vectorize=True, strategy="forward-mode")
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not"):
        F.jacobian(lambda a: a ** 2, x, strict=True, vectorize=True)
    with pytest.raises(AssertionError, match='Expected strategy to be either "forward-mode"'):
        F.jacobian(lambda a: a ** 2, x, strategy="sideways")


def test_jacobian_differentiates_the_argument_not_a_captured_alias(T, F):
    x = T.tensor(arr(2.0, 3.0), requires_grad=True)

    # The function multiplies its argument by the very tensor passed in: only the argument
    # counts as the input (torch runs func on a fresh copy of it).
    J = F.jacobian(lambda a: a * x, x)
    J_graph = F.jacobian(lambda a: a * x, x, create_graph=True)

    close(J, np.diag([2.0, 3.0]))
    close(J_graph, np.diag([2.0, 3.0]))


# -------------------- hessian


def test_hessian_of_a_cubic_with_a_cross_term(T, F):
    x = arr(1.0, -2.0, 0.5)

    H = F.hessian(lambda a: (a ** 3).sum() + a[0] * a[1], T.tensor(x))

    expected = np.diag(6 * x)
    expected[0, 1] = expected[1, 0] = 1.0
    close(H, expected)


def test_hessian_of_a_quadratic_form_is_the_symmetrised_matrix(T, F, rng):
    A = rng.normal(size=(3, 3))
    x = rng.normal(size=3)

    H = F.hessian(lambda a: a @ (T.tensor(A) @ a), T.tensor(x))

    close(H, A + A.T)


def test_hessian_with_tuple_inputs_is_nested_per_pair(T, F):
    a, b = arr(1.0, 2.0), arr(3.0, -1.0)

    H = F.hessian(lambda p, q: (p ** 2 * q).sum(), (T.tensor(a), T.tensor(b)))

    close(H[0][0], np.diag(2 * b))
    close(H[0][1], np.diag(2 * a))
    close(H[1][0], np.diag(2 * a))
    close(H[1][1], np.zeros((2, 2)))


def test_hessian_with_a_forward_mode_outer_jacobian_gives_the_same_values(T, F):
    x = arr(0.5, 1.5)

    H = F.hessian(lambda a: (a ** 3).sum(), T.tensor(x), vectorize=True,
                  outer_jacobian_strategy="forward-mode")

    close(H, np.diag(6 * x))


def test_hessian_needs_one_single_element_output(T, F):
    x = T.tensor(arr(1.0, 2.0))

    with pytest.raises(RuntimeError, match="The Tensor returned by the function given to hessian "
                                           "should contain a single element"):
        F.hessian(lambda a: a ** 2, x)
    with pytest.raises(RuntimeError, match="The function given to hessian should return a single "
                                           "Tensor"):
        F.hessian(lambda a: ((a ** 2).sum(), a.sum()), x)


def test_strict_hessian_of_a_linear_function_fails(T, F):
    with pytest.raises(RuntimeError, match="While computing the hessian, found that the jacobian "
                                           "of the user-provided function with respect to "
                                           "input 0 is independent of the input"):
        F.hessian(lambda a: (2 * a).sum(), T.tensor(arr(1.0, 2.0)), strict=True)


# -------------------- vjp and jvp


def test_vjp_of_a_matrix_times_tanh(T, F, rng):
    A = rng.normal(size=(2, 3))
    x = rng.normal(size=3)
    v = arr(1.0, -2.0)

    out, vjp = F.vjp(lambda a: T.tensor(A) @ a.tanh(), T.tensor(x), T.tensor(v))

    close(out, A @ np.tanh(x))
    close(vjp, (1 - np.tanh(x) ** 2) * (A.T @ v))


def test_vjp_with_tuple_outputs_takes_one_vector_per_output(T, F):
    a, b = arr(1.0, 2.0), arr(0.5, -1.0)
    v0, v1 = arr(1.0, 3.0), arr(2.0)

    out, (ga, gb) = F.vjp(lambda p, q: (p * q, (p + q).sum().reshape(1)),
                          (T.tensor(a), T.tensor(b)), (T.tensor(v0), T.tensor(v1)))

    close(out[0], a * b)
    close(ga, v0 * b + v1)
    close(gb, v0 * a + v1)


def test_vjp_without_v_needs_a_single_element_output(T, F):
    x = arr(1.0, 2.0)

    out, vjp = F.vjp(lambda a: (a ** 2).sum(), T.tensor(x))

    close(out, 5.0)
    close(vjp, 2 * x)
    with pytest.raises(RuntimeError) as info:
        F.vjp(lambda a: a ** 2, T.tensor(x))
    assert str(info.value) == V_NONE_OUTPUT


def test_jvp_of_a_product_with_tuple_inputs(T, F):
    a, b = arr(1.0, 2.0, 3.0), arr(-1.0, 0.5, 2.0)
    va, vb = arr(0.1, 0.2, 0.3), arr(1.0, 1.0, -1.0)

    out, jvp = F.jvp(lambda p, q: p * q, (T.tensor(a), T.tensor(b)), (T.tensor(va), T.tensor(vb)))

    close(out, a * b)
    close(jvp, va * b + a * vb)


def test_jvp_has_the_structure_of_the_outputs(T, F):
    x, v = arr(0.5, -1.0), arr(2.0, 3.0)

    out, (j_exp, j_sum) = F.jvp(lambda a: (a.exp(), a.sum()), T.tensor(x), T.tensor(v))

    close(out[0], np.exp(x))
    close(j_exp, np.exp(x) * v)
    close(j_sum, v.sum())


def test_jvp_without_v_needs_a_single_element_input(T, F):
    out, jvp = F.jvp(lambda a: a.sin() * 2, T.tensor(arr(1.0)))

    close(jvp, 2 * np.cos([1.0]))
    with pytest.raises(RuntimeError) as info:
        F.jvp(lambda a: a.sin(), T.tensor(arr(1.0, 2.0)))
    assert str(info.value) == V_NONE_INPUT


def test_jvp_of_an_ignored_input_is_zero_unless_strict(T, F):
    a, b = arr(1.0, 2.0), arr(3.0, 4.0)
    args = (T.tensor(a), T.tensor(b))
    v = (T.tensor(arr(1.0, 1.0)), T.tensor(arr(1.0, 1.0)))

    _, jvp = F.jvp(lambda p, q: p * 2, args, v)

    close(jvp, [2.0, 2.0])
    with pytest.raises(RuntimeError, match="The output of the user-provided function is "
                                           "independent of input 1. This is not allowed in "
                                           "strict mode."):
        F.jvp(lambda p, q: p * 2, args, v, strict=True)


# -------------------- hvp and vhp


def test_hvp_and_vhp_of_a_cubic(T, F):
    x, v = arr(1.0, -2.0, 0.5), arr(0.5, 1.0, -1.0)

    out, hvp = F.hvp(lambda a: (a ** 3).sum(), T.tensor(x), T.tensor(v))
    out2, vhp = F.vhp(lambda a: (a ** 3).sum(), T.tensor(x), T.tensor(v))

    close(out, (x ** 3).sum())
    close(out2, (x ** 3).sum())
    close(hvp, 6 * x * v)
    close(vhp, 6 * x * v)


def test_hvp_and_vhp_of_a_quadratic_form(T, F, rng):
    A = rng.normal(size=(3, 3))
    x, v = rng.normal(size=3), rng.normal(size=3)
    f = lambda a: a @ (T.tensor(A) @ a)

    _, hvp = F.hvp(f, T.tensor(x), T.tensor(v))
    _, vhp = F.vhp(f, T.tensor(x), T.tensor(v))

    close(hvp, (A + A.T) @ v)
    close(vhp, v @ (A + A.T))


def test_hvp_with_tuple_inputs_and_mixed_terms(T, F):
    a, b = arr(1.0, 2.0), arr(3.0, -1.0)
    va, vb = arr(1.0, 0.0), arr(0.5, 2.0)

    _, (ha, hb) = F.hvp(lambda p, q: (p ** 2 * q).sum(), (T.tensor(a), T.tensor(b)),
                        (T.tensor(va), T.tensor(vb)))

    # H = [[diag(2q), diag(2p)], [diag(2p), 0]]
    close(ha, 2 * b * va + 2 * a * vb)
    close(hb, 2 * a * va)


def test_hvp_without_v_for_one_element(T, F):
    _, hvp = F.hvp(lambda a: a.sin().sum(), T.tensor(arr(1.0)))

    close(hvp, -np.sin([1.0]))


@pytest.mark.parametrize("name", ["hvp", "vhp"])
def test_hvp_and_vhp_need_a_scalar_function(T, F, name):
    fn = getattr(F, name)
    x, v = T.tensor(arr(1.0, 2.0)), T.tensor(arr(1.0, 1.0))

    with pytest.raises(RuntimeError) as info:
        fn(lambda a: a ** 2, x, v)
    assert str(info.value) == (f"The Tensor returned by the function given to {name} should "
                               "contain a single element")
    with pytest.raises(RuntimeError, match=f"The function given to {name} should return a single "
                                           "Tensor"):
        fn(lambda a: ((a ** 2).sum(),), x, v)


# -------------------- create_graph and detached results


def test_results_are_detached_without_create_graph(T, F):
    x = T.tensor(arr(1.0, 2.0), requires_grad=True)
    f = lambda a: (a ** 3).sum()
    v = T.tensor(arr(1.0, 1.0))

    results = [F.jacobian(f, x), F.hessian(f, x), *F.vjp(f, x), *F.jvp(f, x, v), *F.hvp(f, x, v),
               *F.vhp(f, x, v)]

    assert [r.requires_grad for r in results] == [False] * 10
    assert x.grad is None


def test_create_graph_results_require_grad_and_differentiate_to_the_input(T, F):
    x = T.tensor(arr(1.0, 2.0), requires_grad=True)
    v = T.tensor(arr(1.0, -1.0))
    f = lambda a: (a ** 3).sum()

    J = F.jacobian(f, x, create_graph=True)
    out, hvp = F.hvp(f, x, v, create_graph=True)
    _, jvp = F.jvp(lambda a: a ** 3, x, v, create_graph=True)

    assert J.requires_grad and out.requires_grad and hvp.requires_grad and jvp.requires_grad
    (g,) = T.autograd.grad(J.sum(), x)  # d/dx sum(3 x^2) = 6 x
    close(g, [6.0, 12.0])
    (g,) = T.autograd.grad((hvp * hvp).sum(), x)  # hvp = 6 x v: d/dx sum(36 x^2 v^2) = 72 x v^2
    close(g, [72.0, 144.0])
    (g,) = T.autograd.grad(jvp.sum(), x)  # jvp = 3 x^2 v: derivative 6 x v
    close(g, [6.0, -12.0])


def test_create_graph_with_an_input_that_needs_no_grad_still_gives_a_graph(T, F):
    x = T.tensor(arr(1.0, 2.0))

    _, vjp = F.vjp(lambda a: a ** 2, x, T.tensor(arr(1.0, 1.0)), create_graph=True)

    assert vjp.requires_grad
    assert not x.requires_grad


def test_functional_works_under_no_grad(T, F):
    with T.no_grad():
        J = F.jacobian(lambda a: a ** 2, T.tensor(arr(1.0, 3.0)))

    close(J, np.diag([2.0, 6.0]))


# -------------------- strict mode and errors


def test_strict_mode_refuses_an_output_that_ignores_the_input(T, F):
    x = T.tensor(arr(1.0, 2.0))
    const = lambda a: T.tensor(arr(5.0, 6.0))

    close(F.jacobian(const, x), np.zeros((2, 2)))
    for call in (lambda: F.jacobian(const, x, strict=True),
                 lambda: F.vjp(const, x, T.tensor(arr(1.0, 1.0)), strict=True)):
        with pytest.raises(RuntimeError) as info:
            call()
        assert str(info.value) == STRICT_OUTPUT


def test_strict_jacobian_names_the_output_and_the_ignored_input(T, F):
    args = (T.tensor(arr(1.0)), T.tensor(arr(2.0)))

    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent "
                                           "of input 1. This is not allowed in strict mode."):
        F.jacobian(lambda p, q: p * 2, args, strict=True)


def test_strict_create_graph_refuses_a_constant_jacobian(T, F):
    with pytest.raises(RuntimeError, match="The jacobian of the user-provided function is "
                                           "independent of input 0. This is not allowed in "
                                           "strict mode when create_graph=True."):
        F.vjp(lambda a: a * 2, T.tensor(arr(1.0, 2.0)), T.tensor(arr(1.0, 1.0)),
              create_graph=True, strict=True)


def test_non_tensor_outputs_and_inputs_raise_type_errors(T, F):
    x = T.tensor(arr(1.0, 2.0))

    with pytest.raises(TypeError) as info:
        F.jacobian(lambda a: 3, x)
    assert str(info.value) == (
        "The outputs of the user-provided function given to jacobian must be either a Tensor or a "
        "tuple of Tensors but the given outputs of the user-provided function has type "
        "<class 'int'>.")
    with pytest.raises(TypeError, match="but the value at index 1 has type <class 'int'>"):
        F.jacobian(lambda a: (a, 3), x)
    with pytest.raises(TypeError, match="The inputs given to vjp must be either a Tensor or a "
                                        "tuple of Tensors but the given inputs has type "
                                        "<class 'list'>."):
        F.vjp(lambda a: a, [x], x)


def test_v_of_the_wrong_size_or_length_is_refused(T, F):
    x = T.tensor(arr(1.0, 2.0))
    name = T.__name__

    with pytest.raises(RuntimeError) as info:
        F.vjp(lambda a: a ** 2, x, T.tensor(arr(1.0, 2.0, 3.0)))
    assert str(info.value) == (f"v has invalid size: should be {name}.Size([2]) but got "
                               f"{name}.Size([3]).")
    with pytest.raises(RuntimeError, match=rf"Entry 1 in v has invalid size: should be "
                                           rf"{name}.Size\(\[2\]\) but got {name}.Size\(\[1\]\)."):
        F.jvp(lambda a, b: a * b, (x, x), (x, T.tensor(arr(1.0))))
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length: should be 2 but "
                                           "got 1."):
        F.jvp(lambda a, b: a * b, (x, x), (x,))
    with pytest.raises(RuntimeError, match="The given v should contain a single Tensor."):
        F.vjp(lambda a: a * 2, x, (x, x))


def test_jacobian_with_create_graph_stacks_its_rows(T):
    # torch's jacobian stacks the rows of each block: its graph reads View(Stack(...))
    x = T.tensor([0.5, -1.0, 2.0], dtype=T.float64, requires_grad=True)
    (j,) = T.autograd.functional.jacobian(lambda x: (x * x,), (x,), create_graph=True)[0]
    assert type(j.grad_fn).__name__ == "ViewBackward0"
    assert type(j.grad_fn.next_functions[0][0]).__name__ == "StackBackward0"
    (gx,) = T.autograd.grad(j.sum(), [x])
    assert gx.tolist() == [2.0, 2.0, 2.0]
