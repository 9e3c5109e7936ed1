"""Each gradcheck/gradgradcheck option, with a function that passes its check and one that fails.

The forward-mode cases (``check_forward_ad``, ``check_batched_forward_grad``,
``check_fwd_over_rev``) use only +, *, sin and exp, and custom Functions with a ``jvp``.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import numpy as np
import pytest


def gradcheck_error(T):
    return importlib.import_module(f"{T.__name__}.autograd.gradcheck").GradcheckError


_FUNCTIONS: dict = {}


def functions(T):
    """Custom Functions that break one check each, made once per backend."""
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
            return 3 * x * g

    class SumOfSquares(T.autograd.Function):
        # Right for the grad_output 1 of its one-element output, but ignores grad_output.
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x * x).sum()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x

    class UndefinedAware(T.autograd.Function):
        # Receives None for an undefined output gradient and says it has no gradient either.
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            if g is None:
                return None
            (x,) = ctx.saved_tensors
            return 2 * x * g

    class RaisesOnUndefined(UndefinedAware):
        @staticmethod
        def backward(ctx, g):
            if g is None:
                raise RuntimeError("no gradient to multiply")
            (x,) = ctx.saved_tensors
            return 2 * x * g

    class OnesOnUndefined(UndefinedAware):
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return x * 0 + 1 if g is None else 2 * x * g

    class MultipliesUndefined(UndefinedAware):
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    class AlmostZero(UndefinedAware):
        # A zero grad_output gives 1e-12, not exactly zero.
        @staticmethod
        def backward(ctx, g):
            if g is None:
                return None
            (x,) = ctx.saved_tensors
            return 2 * x * g + 1e-12

    class NoisySquare(Square):
        # Each backward is off by a different amount below 1e-4.
        rng = np.random.default_rng(0)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return (2 * x + 1e-4 * float(NoisySquare.rng.uniform())) * g

    class Double(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            return t * 2

    class WrongJvpDouble(Double):
        @staticmethod
        def jvp(ctx, t):
            return t * 3

    class NoisyJvpDouble(Double):
        rng = np.random.default_rng(0)

        @staticmethod
        def jvp(ctx, t):
            return t * (2 + 1e-4 * float(NoisyJvpDouble.rng.uniform()))

    class SquareThroughWrongJvp(T.autograd.Function):
        # Backward is right, and differentiable by backward; its forward derivative is not.
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return WrongJvpDouble.apply(x) * g

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return 2 * x * t

    class AddTwice(T.autograd.Function):
        # a + 2b, whose jvp mistakes an undefined tangent of b for a tangent of ones.
        @staticmethod
        def forward(ctx, a, b):
            ctx.set_materialize_grads(False)
            return a + 2 * b

        @staticmethod
        def backward(ctx, g):
            return g, 2 * g

        @staticmethod
        def jvp(ctx, ta, tb):
            if tb is None:
                return ta + 1
            if ta is None:
                return 2 * tb
            return ta + 2 * tb

    _FUNCTIONS[T] = SimpleNamespace(**{c.__name__: c for c in (
        Square, WrongSquare, SumOfSquares, UndefinedAware, RaisesOnUndefined, OnesOnUndefined,
        MultipliesUndefined, AlmostZero, NoisySquare, Double, WrongJvpDouble, NoisyJvpDouble,
        SquareThroughWrongJvp, AddTwice)})
    return _FUNCTIONS[T]


def leaf(T, values):
    return T.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def smooth(a, b):
    """A function of two inputs made of ops that have forward derivatives."""
    return (a * b).sin() + a.exp()


# ---------------------------------------------------------------------------- option combinations
def test_at_least_one_mode_must_be_checked(T):
    x = leaf(T, [0.5, -1.0])
    square = functions(T).Square.apply
    with pytest.raises(AssertionError, match="at least one of check_forward_ad or check_back"):
        T.autograd.gradcheck(square, (x,), check_backward_ad=False)
    with pytest.raises(AssertionError, match="at least one of check_fwd_over_rev or check_rev"):
        T.autograd.gradgradcheck(square, (x,), check_rev_over_rev=False)


def test_batched_checks_need_their_mode(T):
    x = leaf(T, [0.5, -1.0])
    square = functions(T).Square.apply
    with pytest.raises(AssertionError, match="check_batched_grad=True requires check_backward"):
        T.autograd.gradcheck(square, (x,), check_backward_ad=False, check_forward_ad=True,
                             check_batched_grad=True)
    with pytest.raises(AssertionError, match="check_batched_forward_grad=True requires check_fo"):
        T.autograd.gradcheck(square, (x,), check_batched_forward_grad=True)
    with pytest.raises(AssertionError, match="check_undefined_grad=True requires check_rev_ove"):
        T.autograd.gradgradcheck(square, (x,), check_fwd_over_rev=True, check_rev_over_rev=False)
    with pytest.raises(AssertionError, match="check_batched_grad=True requires check_rev_over"):
        T.autograd.gradgradcheck(square, (x,), check_fwd_over_rev=True, check_rev_over_rev=False,
                                 check_undefined_grad=False, check_batched_grad=True)


# ---------------------------------------------------------------------------- backward mode
def test_a_backward_that_ignores_grad_output_is_caught(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    sum_of_squares = functions(T).SumOfSquares.apply
    # The Jacobian itself is right: only a zero grad_output shows the mistake.
    with pytest.raises(gradcheck_error(T), match="backward not multiplied by grad_output"):
        T.autograd.gradcheck(sum_of_squares, (x,))
    assert T.autograd.gradcheck(sum_of_squares, (x,), raise_exception=False) is False
    assert T.autograd.gradcheck(lambda a: (a * a).sum(), (x,))


def test_masked_compares_zero_gradients_with_allclose(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    almost_zero = functions(T).AlmostZero.apply
    with pytest.raises(gradcheck_error(T), match="backward not multiplied by grad_output"):
        T.autograd.gradcheck(almost_zero, (x,))
    assert T.autograd.gradcheck(almost_zero, (x,), masked=False, raise_exception=False) is False
    assert T.autograd.gradcheck(almost_zero, (x,), masked=True)
    assert T.autograd.gradgradcheck(functions(T).Square.apply, (x,), masked=True)


def test_check_grad_dtypes_passes_a_float32_gradient_the_engine_casts(T):
    # Both engines cast a gradient to its input's dtype before autograd.grad returns it.
    class Float32Grad(functions(T).Square):
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return (2 * x * g).float()

    x = leaf(T, [0.5, -1.0, 2.0])
    assert T.autograd.gradcheck(Float32Grad.apply, (x,), check_grad_dtypes=True, atol=1e-4)
    assert T.autograd.gradcheck(functions(T).Square.apply, (x,), check_grad_dtypes=True)


def test_a_backward_nondeterministic_within_nondet_tol_passes(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    noisy = functions(T).NoisySquare.apply
    with pytest.raises(gradcheck_error(T), match="Backward is not reentrant"):
        T.autograd.gradcheck(noisy, (x,), atol=1e-3)
    with pytest.raises(gradcheck_error(T), match="tolerance for nondeterminism was 0.0"):
        T.autograd.gradcheck(noisy, (x,), atol=1e-3, fast_mode=True)
    assert T.autograd.gradcheck(noisy, (x,), nondet_tol=1e-3, atol=1e-3)
    assert T.autograd.gradcheck(noisy, (x,), nondet_tol=1e-3, atol=1e-3, fast_mode=True)


# ---------------------------------------------------------------------------- undefined gradients
def test_a_backward_that_handles_undefined_grads_passes(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    assert T.autograd.gradcheck(functions(T).UndefinedAware.apply, (x,))


def test_a_backward_that_raises_on_an_undefined_grad_fails(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    raises = functions(T).RaisesOnUndefined.apply
    with pytest.warns(UserWarning, match="New undefined gradient support checking"):
        with pytest.raises(gradcheck_error(T),
                           match="Expected backward function to handle undefined output grads"):
            T.autograd.gradcheck(raises, (x,))
    with pytest.warns(UserWarning, match="check_undefined_grad=False"):
        assert T.autograd.gradcheck(raises, (x,), raise_exception=False) is False
    assert T.autograd.gradcheck(raises, (x,), check_undefined_grad=False)


def test_a_backward_that_gives_a_gradient_for_undefined_grads_fails(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    ones = functions(T).OnesOnUndefined.apply
    with pytest.warns(UserWarning, match="New undefined gradient support checking"):
        with pytest.raises(gradcheck_error(T), match="Expected all input grads to be undefined "
                                                     "or zero when all output grads are undefined"):
            T.autograd.gradcheck(ones, (x,))
    assert T.autograd.gradcheck(ones, (x,), check_undefined_grad=False)


def test_a_type_error_on_an_undefined_grad_is_not_a_check_failure(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    with pytest.raises(TypeError):
        T.autograd.gradcheck(functions(T).MultipliesUndefined.apply, (x,),
                             raise_exception=False)


def test_undefined_grads_are_tried_all_at_once_then_one_at_a_time(T):
    calls = []

    class TwoOutputs(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            calls.append((g1 is None, g2 is None))
            grads = [k * g for k, g in ((2, g1), (3, g2)) if g is not None]
            return grads[0] + grads[1] if len(grads) == 2 else (grads or [None])[0]

    assert T.autograd.gradcheck(TwoOutputs.apply, (leaf(T, [1.0]),))
    undefined, defined = True, False
    assert calls == [
        (defined, undefined), (defined, undefined),  # the Jacobian of output 0, twice
        (undefined, defined), (undefined, defined),  # of output 1, twice
        (defined, defined),  # zero grad_outputs
        (undefined, undefined), (undefined, defined), (defined, undefined),
    ]


# ---------------------------------------------------------------------------- fast mode
def test_fast_mode_passes_a_right_backward(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    y = leaf(T, [1.5, 0.3, -0.7])
    assert T.autograd.gradcheck(functions(T).Square.apply, (x,), fast_mode=True)
    assert T.autograd.gradcheck(lambda a, b: (a * b, a.exp().sum()), (x, y), fast_mode=True)
    assert T.autograd.gradgradcheck(lambda a, b: a * b * a, (x, y), fast_mode=True)


def test_fast_mode_catches_a_wrong_backward_and_shows_the_whole_jacobians(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    wrong = functions(T).WrongSquare.apply
    with pytest.raises(gradcheck_error(T)) as info:
        T.autograd.gradcheck(wrong, (x,), fast_mode=True)
    message = str(info.value)
    assert message.startswith("Jacobian mismatch for output 0 with respect to input 0,\n")
    assert "Below, we recompute numerical and analytical jacobians in slow mode" in message
    assert "Numerical:\n tensor([[ 1.0000" in message
    assert "Analytical:\ntensor([[ 1.5000" in message
    assert "The max per-element difference (slow mode) is: 1.99999" in message
    assert T.autograd.gradcheck(wrong, (x,), fast_mode=True, raise_exception=False) is False


def test_fast_mode_checks_outputs_that_do_not_require_grad(T):
    x = leaf(T, [0.5, -1.0])
    assert T.autograd.gradcheck(lambda a: (a > 0).double(), (x,), fast_mode=True)
    with pytest.raises(gradcheck_error(T), match="Numerical gradient for function expected to"):
        T.autograd.gradcheck(lambda a: a.detach() * 2, (x,), fast_mode=True)


# ---------------------------------------------------------------------------- batched gradients
def test_check_batched_grad_passes_a_deterministic_backward(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    y = leaf(T, [1.5, 0.3, -0.7])
    square = functions(T).Square.apply
    assert T.autograd.gradcheck(square, (x,), check_batched_grad=True)
    assert T.autograd.gradcheck(lambda a, b: (a * b, (a + b).sum()), (x, y),
                                check_batched_grad=True)
    assert T.autograd.gradgradcheck(square, (x,), check_batched_grad=True)


def test_check_batched_grad_catches_gradients_that_vary_between_calls(T):
    # nondet_tol lets the reentrancy check pass; the batch of gradients does not match.
    x = leaf(T, [0.5, -1.0, 2.0])
    noisy = functions(T).NoisySquare.apply
    options = dict(nondet_tol=1e-3, atol=1e-3)
    with pytest.raises(gradcheck_error(T), match="(?s)For output 0 and input 0:.*failed while "
                                                 "testing batched gradient computation"):
        T.autograd.gradcheck(noisy, (x,), check_batched_grad=True, **options)
    assert not T.autograd.gradcheck(noisy, (x,), check_batched_grad=True, raise_exception=False,
                                    **options)


# ---------------------------------------------------------------------------- gradgradcheck
def test_gradgradcheck_can_make_non_contiguous_grad_outputs(T):
    contiguous = []

    class Recording(functions(T).Square):
        @staticmethod
        def backward(ctx, g):
            contiguous.append(g.is_contiguous())
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = T.tensor(np.ones((2, 3)), requires_grad=True)
    assert T.autograd.gradgradcheck(Recording.apply, (x,))
    assert all(contiguous)
    contiguous.clear()
    assert T.autograd.gradgradcheck(Recording.apply, (x,), gen_non_contig_grad_outputs=True)
    assert not all(contiguous)


def test_gradgradcheck_takes_given_grad_outputs(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    v = leaf(T, [1.0, 2.0, 3.0])
    assert T.autograd.gradgradcheck(lambda a: a.sin(), (x,), (v,))
    assert T.autograd.gradgradcheck(lambda a: a.sin(), (x,), (v.detach(),))


# ---------------------------------------------------------------------------- forward mode
def test_check_forward_ad_passes_ops_with_forward_derivatives(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    y = leaf(T, [1.5, 0.3, -0.7])
    assert T.autograd.gradcheck(smooth, (x, y), check_forward_ad=True)
    assert T.autograd.gradcheck(smooth, (x, y), check_forward_ad=True, check_backward_ad=False)
    assert T.autograd.gradcheck(smooth, (x, y), check_forward_ad=True, fast_mode=True)
    assert T.autograd.gradcheck(functions(T).Double.apply, (x,), check_forward_ad=True)


def test_check_forward_ad_catches_a_wrong_jvp(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    wrong = functions(T).WrongJvpDouble.apply
    assert T.autograd.gradcheck(wrong, (x,))
    with pytest.raises(gradcheck_error(T)) as info:
        T.autograd.gradcheck(wrong, (x,), check_forward_ad=True)
    message = str(info.value)
    assert message.startswith("Jacobian computed with forward mode mismatch for output 0 with "
                              "respect to input 0,\nnumerical:tensor([[2.0000, 0.0000, 0.0000]")
    assert "analytical:tensor([[3., 0., 0.]" in message
    with pytest.raises(gradcheck_error(T), match="(?s)forward mode mismatch.*in slow mode"):
        T.autograd.gradcheck(wrong, (x,), check_forward_ad=True, fast_mode=True)
    assert T.autograd.gradcheck(wrong, (x,), check_forward_ad=True,
                                raise_exception=False) is False


def test_check_forward_ad_catches_a_jvp_that_mistakes_an_undefined_tangent(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    y = leaf(T, [1.5, 0.3, -0.7])
    add_twice = functions(T).AddTwice.apply
    with pytest.raises(gradcheck_error(T), match="Mismatch in tangent values for output with "
                                                 "index: "):
        T.autograd.gradcheck(add_twice, (x, y), check_forward_ad=True)
    assert T.autograd.gradcheck(add_twice, (x, y), check_forward_ad=True,
                                check_undefined_grad=False)


def test_check_batched_forward_grad(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    y = leaf(T, [1.5, 0.3, -0.7])
    assert T.autograd.gradcheck(smooth, (x, y), check_forward_ad=True,
                                check_batched_forward_grad=True)
    noisy = functions(T).NoisyJvpDouble.apply
    options = dict(check_forward_ad=True, atol=1e-3)
    assert T.autograd.gradcheck(noisy, (x,), **options)
    with pytest.raises(gradcheck_error(T), match="failed while testing batched gradient "
                                                 "computation with forward-mode AD"):
        T.autograd.gradcheck(noisy, (x,), check_batched_forward_grad=True, **options)


def test_check_fwd_over_rev_differentiates_backward_with_forward_mode(T):
    x = leaf(T, [0.5, -1.0, 2.0])
    y = leaf(T, [1.5, 0.3, -0.7])
    assert T.autograd.gradgradcheck(lambda a, b: a * b * a, (x, y), check_fwd_over_rev=True)
    assert T.autograd.gradgradcheck(lambda a, b: a * b * a, (x, y), check_fwd_over_rev=True,
                                    check_rev_over_rev=False, check_undefined_grad=False)
    through_wrong_jvp = functions(T).SquareThroughWrongJvp.apply
    assert T.autograd.gradgradcheck(through_wrong_jvp, (x,))
    with pytest.raises(gradcheck_error(T), match="Jacobian computed with forward mode mismatch"):
        T.autograd.gradgradcheck(through_wrong_jvp, (x,), check_fwd_over_rev=True)
    assert T.autograd.gradgradcheck(through_wrong_jvp, (x,), check_fwd_over_rev=True,
                                    raise_exception=False) is False
