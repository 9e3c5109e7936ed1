"""gradcheck and gradgradcheck: compare derivatives with finite differences, as torch does.

``gradcheck`` runs torch's checks in torch's order:

1. the inputs: one must require grad, float64 is expected (a warning otherwise), and no input may
   have a stride-0 dimension (an ``expand``-ed input);
2. the outputs: torch rejects sparse and MKLDNN outputs here; ext tensors are always dense;
3. backward mode (``check_backward_ad``): the Jacobian from one ``autograd.grad`` per output
   element against central differences, computed twice for reentrancy (``nondet_tol``), its
   gradients' dtype (``check_grad_dtypes``) and size checked; ``fast_mode`` compares one random
   projection ``v^T J u`` instead, and recomputes the whole Jacobians for the message on failure;
4. forward mode (``check_forward_ad``): the Jacobian built column by column from dual tensors,
   then (``check_undefined_grad``) that an input without a tangent acts as a zero tangent;
5. ``check_batched_forward_grad``; then, in backward mode, ``check_batched_grad``, that zero
   grad_outputs give zero gradients, and (``check_undefined_grad``) that backward copes with
   undefined output gradients.

ext has no complex dtypes, so torch's checks of complex inputs and outputs have no counterpart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._tensor import Tensor, wrap
from ._gradcheck_checks import (
    GradcheckError,
    as_tuple,
    basis,
    check_inputs,
    diff_input_indices,
    differentiable_outputs,
    forward_jacobian,
    is_float_tensor,
    make_vectors,
    numerical_jacobian,
    numerical_jvp,
    test_backward_mul_by_grad_output,
    test_batched_forward_grad,
    test_batched_grad,
    test_undefined_backward_mode,
    test_undefined_forward_mode,
    vjp_matrices,
)

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]

_NONDET_NOTE = """

NOTE: If your op relies on non-deterministic operations, this failure might be expected: call
gradcheck/gradgradcheck with `nondet_tol=<tol>` as a keyword argument."""

_FAST_FAIL_SLOW_OK = """\
Fast gradcheck failed but element-wise differences are small. This means that the
test might've passed in slow_mode!

To check the whole Jacobians instead, call gradcheck/gradgradcheck with `fast_mode=False`."""


# ---------------------------------------------------------------------------- comparisons
def _allclose(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> bool:
    """torch.allclose(a, b) after type promotion: |a - b| <= atol + rtol |b|."""
    return bool(np.allclose(a, b, rtol=rtol, atol=atol))


def _show(x) -> str:
    # A fast-mode projection is a number; torch prints a 0-d tensor in an f-string as one too.
    return str(float(x)) if np.ndim(x) == 0 else repr(wrap(np.asarray(x)))


def _mismatch(a, n, output_idx: int, input_idx: int, forward: bool) -> str:
    mode = "computed with forward mode " if forward else ""
    return (f"Jacobian {mode}mismatch for output {output_idx:d} with respect to input "
            f"{input_idx:d},\nnumerical:{_show(n)}\nanalytical:{_show(a)}\n")


def _diff_positions(func_out) -> list[int]:
    """Among the floating outputs, the positions of those that require grad."""
    floats = [o for o in as_tuple(func_out) if is_float_tensor(o)]
    return [k for k, o in enumerate(floats) if o._requires_grad]


def _expect_zero(jacobians: list, tol: float) -> None:
    """With no differentiable output, the function must not depend on its inputs."""
    for per_output in jacobians:
        for J in per_output:
            if J.size and np.abs(J).max() > tol:
                raise GradcheckError("Numerical gradient for function expected to be zero")


def _analytical(inputs: tuple, output: Tensor, nondet_tol: float, check_grad_dtypes: bool,
                v: np.ndarray | None = None) -> list[np.ndarray]:
    """The VJP-built Jacobian of ``output`` (``v^T J`` with ``v``), computed twice; then, in
    torch's order, the gradients' dtype, their size and reentrancy are checked."""
    n = output._data.size if v is None else 1
    first, types_ok, sizes_ok = vjp_matrices(inputs, output, basis(output) if v is None else [v], n)
    second, _, _ = vjp_matrices(inputs, output, basis(output) if v is None else [v], n)
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if any(a.size and np.abs(a - b).max() > nondet_tol for a, b in zip(first, second)):
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with same input and grad_output "
            "multiple times gives different values, although analytical gradient matches "
            f"numerical gradient.The tolerance for nondeterminism was {nondet_tol}."
            + _NONDET_NOTE)
    return first


def _slow_gradcheck(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes,
                    nondet_tol, forward: bool) -> None:
    """Whole Jacobians: numerical against backward mode, or against forward mode."""
    numerical = numerical_jacobian(func, inputs, func_out, eps)
    if not outputs:
        _expect_zero(numerical, 0.0)
        return
    positions = _diff_positions(func_out)
    if forward:
        analytical = forward_jacobian(func, inputs, func_out)
        for o, k in enumerate(positions):
            for i, (a, n) in enumerate(zip(analytical, numerical)):
                if not _allclose(a[k], n[k], rtol, atol):
                    raise GradcheckError(_mismatch(a[k], n[k], o, i, forward=True))
        return
    for o, (output, k) in enumerate(zip(outputs, positions)):
        analytical = _analytical(inputs, output, nondet_tol, check_grad_dtypes)
        for i, (a, n) in enumerate(zip(analytical, numerical)):
            if not _allclose(a, n[k], rtol, atol):
                raise GradcheckError(_mismatch(a, n[k], o, i, forward=False))


def _fast_gradcheck(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes,
                    nondet_tol, forward: bool) -> None:
    """One random projection per input and output: ``v^T J u`` (backward) or ``J u``
    (forward), numerical against analytical, with atol scaled to the projection."""
    idx = diff_input_indices(inputs)
    all_u, all_v = make_vectors(inputs, outputs, with_v=not forward)
    jvps = [numerical_jvp(func, inputs, i, u, eps) for i, u in zip(idx, all_u)]
    if not outputs:
        _expect_zero(jvps, nondet_tol)
        return
    positions = _diff_positions(func_out)
    if forward:
        numerical = [[ju[k] for k in positions] for ju in jvps]
        analytical = forward_jacobian(func, inputs, func_out, all_u=all_u)
        analytical = [[ju[k] for k in positions] for ju in analytical]
    else:
        numerical = [[np.dot(v, ju[k]) for v, k in zip(all_v, positions)] for ju in jvps]
        analytical = []
        for output, v in zip(outputs, all_v):
            vJ = _analytical(inputs, output, nondet_tol, check_grad_dtypes, v)
            analytical.append([np.dot(m[:, 0], u) for m, u in zip(vJ, all_u)])
        analytical = [list(per_input) for per_input in zip(*analytical)]
    for i, u in enumerate(all_u):
        for o in range(len(outputs)):
            a, n = analytical[i][o], numerical[i][o]
            scaled_atol = atol * float(u.sum()) * (1.0 if forward else float(all_v[o].sum()))
            if not _allclose(a, n, rtol, scaled_atol):
                raise GradcheckError(
                    _mismatch(a, n, o, i, forward)
                    + _slow_mode_report(func, func_out, inputs, outputs, i, o, rtol, atol, eps,
                                        forward))


def _slow_mode_report(func, func_out, inputs, outputs, i, o, rtol, atol, eps, forward) -> str:
    """The whole Jacobians for one input and output, to explain a fast-mode failure."""
    k = _diff_positions(func_out)[o]
    numerical = numerical_jacobian(func, inputs, func_out, eps)[i][k]
    if forward:
        p = diff_input_indices(inputs)[i]
        analytical = forward_jacobian(func, inputs, func_out, which=[p])[i][k]
    else:
        analytical = _analytical(inputs, outputs[o], float("inf"), False)[i]
    max_diff = float(np.abs(numerical - analytical).max()) if numerical.size else 0.0
    report = (
        "\nThe above quantities relating the numerical and analytical jacobians are computed \n"
        "in fast mode. See: https://github.com/pytorch/pytorch/issues/53876 for more background "
        "\nabout fast mode. Below, we recompute numerical and analytical jacobians in slow mode:"
        f"\n\nNumerical:\n {wrap(numerical)}\nAnalytical:\n{wrap(analytical)}\n\n"
        f"The max per-element difference (slow mode) is: {max_diff}.\n")
    if _allclose(analytical, numerical, rtol, atol):
        report += _FAST_FAIL_SLOW_OK
    return report


# ---------------------------------------------------------------------------- public API
def gradcheck(func: Callable[..., Tensor | Sequence[Tensor]], inputs: Tensor | Sequence[Any], *,
              eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Check the derivatives of ``func`` at ``inputs`` against central finite differences.

    The inputs that require grad (float64, for the default tolerances) are differentiated.
    Returns True, or raises ``GradcheckError`` (returns False with ``raise_exception=False``)
    naming what failed; the checks and their order are torch's (see the module docstring).

    Args:
        func: takes the inputs, returns a tensor or a tuple of tensors.
        inputs: a tensor or a tuple of arguments for ``func``.
        eps: the finite-difference step.
        atol, rtol: tolerances of the comparison ``|analytical - numerical| <= atol + rtol
            |numerical|``.
        raise_exception: raise on failure (True) or return False.
        nondet_tol: how far two backward passes with the same grad_output may differ.
        check_undefined_grad: check that backward copes with undefined (None) output
            gradients, and forward mode with inputs without a tangent.
        check_grad_dtypes: check that each gradient has its input's dtype.
        check_batched_grad: check gradients for a batch of grad_outputs. ext has no vmap: it
            loops over the batch and compares with the gradients computed one at a time.
        check_batched_forward_grad: the same for forward mode (needs ``check_forward_ad``).
        check_forward_ad: check the Jacobian computed with forward-mode AD (dual tensors).
        check_backward_ad: check backward mode (the default); False checks forward mode only.
        fast_mode: compare random projections of the Jacobians instead of the whole matrices.
        masked: for sparse inputs in torch; ext tensors are dense, and as in torch it only makes
            the zero-grad_output check compare with allclose rather than exactly.
    """
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad "
                             "to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be "
                             "True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires check_forward_ad "
                             "to be True")
    try:
        return _gradcheck_helper(
            func, as_tuple(inputs), eps, atol, rtol, nondet_tol, check_undefined_grad,
            check_grad_dtypes, check_batched_grad, check_batched_forward_grad, check_forward_ad,
            check_backward_ad, fast_mode, masked)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck_helper(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad,
                      check_grad_dtypes, check_batched_grad, check_batched_forward_grad,
                      check_forward_ad, check_backward_ad, fast_mode, masked) -> bool:
    check_inputs(inputs)
    func_out = func(*inputs)
    outputs = differentiable_outputs(func_out)
    compare = _fast_gradcheck if fast_mode else _slow_gradcheck
    if check_backward_ad:
        compare(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes,
                nondet_tol, forward=False)
    if check_forward_ad:
        compare(func, func_out, inputs, outputs, eps, rtol, atol, check_grad_dtypes,
                nondet_tol, forward=True)
        if check_undefined_grad:
            all_u, _ = make_vectors(inputs, outputs, with_v=False)
            test_undefined_forward_mode(func, inputs, all_u)
    if check_batched_forward_grad:
        test_batched_forward_grad(func, inputs)
    if not check_backward_ad:
        return True
    if check_batched_grad:
        for i, o in enumerate(outputs):
            test_batched_grad(inputs, o, i)
    test_backward_mul_by_grad_output(outputs, inputs, masked)
    if check_undefined_grad:
        test_undefined_backward_mode(func, outputs, inputs)
    return True


def gradgradcheck(func: Callable[..., Tensor | Sequence[Tensor]],
                  inputs: Tensor | Sequence[Any],
                  grad_outputs: Tensor | Sequence[Tensor | None] | None = None, *,
                  eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True,
                  nondet_tol: float = 0.0, check_undefined_grad: bool = True,
                  check_grad_dtypes: bool = False, check_batched_grad: bool = False,
                  check_fwd_over_rev: bool = False, check_rev_over_rev: bool = True,
                  fast_mode: bool = False, masked: bool = False) -> bool:
    """Check second derivatives: gradcheck of ``(inputs, v) -> v^T J``, computed by backward.

    This checks that backward is differentiable and that its derivative is right, not that the
    first derivative is right (gradcheck does that). Without ``grad_outputs``, random ones in
    [-1, 1) are made for the outputs that require grad (non-contiguous with
    ``gen_non_contig_grad_outputs``). ``check_rev_over_rev`` differentiates backward with
    backward, ``check_fwd_over_rev`` with forward-mode AD; the other options are gradcheck's.
    """
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev "
                             "to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev to "
                             "be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to be "
                             "True")
    inputs = as_tuple(inputs)
    if grad_outputs is None:
        outs = differentiable_outputs(func(*inputs))
        rng = np.random.default_rng(0)
        grad_outputs = tuple(_random_grad_output(o, gen_non_contig_grad_outputs, rng)
                             for o in outs)
    grad_outputs = as_tuple(grad_outputs)
    n_in = len(inputs)
    # Forward mode runs on detached duals: requires_grad is restored for autograd.grad.
    diff_inputs = set(diff_input_indices(inputs))
    diff_grad_outputs = {i for i, g in enumerate(grad_outputs)
                         if isinstance(g, Tensor) and g._requires_grad}

    def new_func(*args: Any) -> tuple:
        from . import grad

        ins = tuple(_requiring_grad(x) if i in diff_inputs else x
                    for i, x in enumerate(args[:n_in]))
        vs = tuple(_requiring_grad(g) if i in diff_grad_outputs else g
                   for i, g in enumerate(args[n_in:]))
        outs = differentiable_outputs(func(*ins))
        wrt = [ins[i] for i in sorted(diff_inputs)]
        grads = grad(outs, wrt, vs, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(new_func, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     fast_mode=fast_mode, check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev, masked=masked)


def _requiring_grad(x: Tensor) -> Tensor:
    return x if x._requires_grad else x.requires_grad_()


def _random_grad_output(out: Tensor, noncontiguous: bool, rng: np.random.Generator) -> Tensor:
    """Uniform values in [-1, 1) shaped like ``out``, requiring grad (torch's make_tensor)."""
    dt = out._data.dtype if out._data.dtype.kind == "f" else np.float64
    shape = out._data.shape
    if noncontiguous and out._data.size > 1:
        # Every other element of a twice-as-wide array.
        wide = rng.uniform(-1, 1, shape[:-1] + (2 * shape[-1],)).astype(dt)
        data = wide[..., ::2]
    else:
        data = rng.uniform(-1, 1, shape).astype(dt)
    return wrap(data).requires_grad_()
