"""gradcheck and gradgradcheck catch wrong derivatives, on both engines."""

from __future__ import annotations

import importlib

import numpy as np
import pytest


def gradcheck_error(T):
    return importlib.import_module(f"{T.__name__}.autograd.gradcheck").GradcheckError


_FUNCTIONS: dict = {}


def functions(T):
    """Custom Functions with right and wrong derivatives, made once per backend."""
    if T in _FUNCTIONS:
        return _FUNCTIONS[T]

    class Square(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    class WrongSquare(Square):
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * g  # should be 2x

    class AlmostSquare(Square):
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return (2 * x + 1e-4) * g

    class NoisySquare(Square):
        calls = [0]

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            NoisySquare.calls[0] += 1
            return (2 * x + 1e-9 * NoisySquare.calls[0]) * g

    class DetachedCube(T.autograd.Function):
        # Saves an intermediate made inside forward: its backward is right but not
        # differentiable w.r.t. x, which only gradgradcheck notices.
        @staticmethod
        def forward(ctx, x):
            sq = x * x
            ctx.save_for_backward(sq)
            return sq * x

        @staticmethod
        def backward(ctx, g):
            (sq,) = ctx.saved_tensors
            return 3 * sq * g

    class OnceCube(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    _FUNCTIONS[T] = dict(square=Square, wrong=WrongSquare, almost=AlmostSquare,
                         noisy=NoisySquare, detached=DetachedCube, once=OnceCube)
    return _FUNCTIONS[T]


def leaf(T, values):
    return T.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def test_a_right_backward_passes(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    assert T.autograd.gradcheck(functions(T)["square"].apply, (x,))
    assert T.autograd.gradgradcheck(functions(T)["square"].apply, (x,))


def test_a_wrong_backward_raises_a_jacobian_mismatch_showing_both(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    with pytest.raises(gradcheck_error(T)) as info:
        T.autograd.gradcheck(functions(T)["wrong"].apply, (x,))
    message = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "Jacobian mismatch for output 0 with respect to input 0" in message
    assert "numerical:tensor([[ 1.0000" in message
    assert "analytical:tensor([[ 1.5000" in message


def test_raise_exception_false_returns_false(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    assert T.autograd.gradcheck(functions(T)["wrong"].apply, (x,), raise_exception=False) is False


def test_the_tolerances_decide_a_small_error(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    almost = functions(T)["almost"].apply
    assert T.autograd.gradcheck(almost, (x,), atol=1e-3)
    assert not T.autograd.gradcheck(almost, (x,), atol=1e-6, rtol=1e-6, raise_exception=False)


def test_the_input_that_differs_is_named(T):
    x = leaf(T, [0.5, -1.0])
    y = leaf(T, [1.5, 2.0])
    wrong = functions(T)["wrong"].apply
    with pytest.raises(gradcheck_error(T), match="output 0 with respect to input 1"):
        T.autograd.gradcheck(lambda a, b: a * 2 + wrong(b), (x, y))


def test_no_input_requiring_grad_is_a_value_error(T):
    x = T.tensor(np.ones(2))
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        T.autograd.gradcheck(lambda a: a * 2, (x,))


def test_a_float32_input_gives_a_warning(T):
    x = T.tensor(np.ones(2, np.float32), requires_grad=True)
    with pytest.warns(UserWarning, match="is not a double precision floating point"):
        T.autograd.gradcheck(lambda a: a * 2, (x,), raise_exception=False)


def test_a_nondeterministic_backward_is_not_reentrant(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    noisy = functions(T)["noisy"].apply
    with pytest.raises(gradcheck_error(T), match="Backward is not reentrant"):
        T.autograd.gradcheck(noisy, (x,))
    assert T.autograd.gradcheck(noisy, (x,), nondet_tol=1e-6)


def test_gradgradcheck_catches_a_backward_that_is_not_differentiable(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    detached = functions(T)["detached"].apply
    assert T.autograd.gradcheck(detached, (x,))
    assert not T.autograd.gradgradcheck(detached, (x,), raise_exception=False)


def test_gradgradcheck_fails_a_once_differentiable_backward(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    once = functions(T)["once"].apply
    assert T.autograd.gradcheck(once, (x,))
    with pytest.raises(RuntimeError):
        T.autograd.gradgradcheck(once, (x,))


def test_several_outputs_and_non_tensor_arguments(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    assert T.autograd.gradcheck(lambda a, k: (a.sin() * k, a.exp().sum()), (x, 3.0))
    assert T.autograd.gradgradcheck(lambda a, k: (a.sin() * k, a.exp().sum()), (x, 3.0))


def test_an_expanded_input_that_requires_grad_is_rejected(T):
    expanded = T.ones(1, dtype=T.float64).expand(3)
    assert T.autograd.gradcheck(lambda a, b: a * b, (leaf(T, [0.5, -1.0, 2.0]), expanded))
    with pytest.raises(RuntimeError, match="The 0th input has a dimension with stride 0"):
        T.autograd.gradcheck(lambda a: a * 2, (expanded.requires_grad_(),))


def test_inputs_and_outputs_are_counted_among_the_differentiable_ones(T):
    x = leaf(T, [0.5, -1.0])
    constant = T.tensor(np.array([1.5, 2.0]))
    wrong = functions(T)["wrong"].apply
    with pytest.raises(gradcheck_error(T), match="output 0 with respect to input 0,"):
        T.autograd.gradcheck(lambda c, a: (c * 2, wrong(a)), (constant, x))


def test_outputs_that_do_not_require_grad_must_not_depend_on_the_inputs(T):
    x = leaf(T, [0.5, -1.0])
    assert T.autograd.gradcheck(lambda a: (a > 0).double(), (x,))
    with pytest.raises(gradcheck_error(T), match="Numerical gradient for function expected to"):
        T.autograd.gradcheck(lambda a: a.detach() * 2, (x,))


def test_an_output_whose_shape_changes_when_perturbed_is_an_assertion_error(T):
    x = leaf(T, [1e-7, 1.0])  # moving x[0] by eps crosses 0
    with pytest.raises(AssertionError, match=r"same shape when inputs are perturbed on index "
                                             r"\(0,\) by 1e-06, but got: shapes "):
        T.autograd.gradcheck(lambda a: a[a > 0], (x,))


@pytest.mark.ext_only
def test_gradients_of_the_wrong_dtype_or_size_fail_with_torchs_messages(monkeypatch):
    # Both engines cast and shape-check gradients before autograd.grad returns them, so these
    # checks only fire if that ever breaks: pretend it did.
    import ext

    module = importlib.import_module("ext.autograd.gradcheck")
    real = module.vjp_matrices
    x = leaf(ext, [0.5, -1.0])
    error = module.GradcheckError
    monkeypatch.setattr(module, "vjp_matrices", lambda *a: (real(*a)[0], False, True))
    assert ext.autograd.gradcheck(lambda a: a * 2, (x,))
    with pytest.raises(error, match="^Gradient has dtype mismatch$"):
        ext.autograd.gradcheck(lambda a: a * 2, (x,), check_grad_dtypes=True)
    monkeypatch.setattr(module, "vjp_matrices", lambda *a: (real(*a)[0], True, False))
    with pytest.raises(error, match="^Analytical gradient has incorrect size$"):
        ext.autograd.gradcheck(lambda a: a * 2, (x,))
