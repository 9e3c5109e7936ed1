"""gradcheck and gradgradcheck: compare backward's Jacobian with central finite differences."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np

from .._tensor import Tensor, wrap

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck when the analytical and numerical Jacobians differ."""


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _differentiable_outputs(func: Callable, inputs: tuple) -> tuple:
    out = _as_tuple(func(*inputs))
    return tuple(o for o in out if isinstance(o, Tensor) and o._requires_grad)


def _numerical_jacobians(func: Callable, inputs: tuple, wrt: list[int], eps: float) -> list:
    """J[i][o]: d output o / d input wrt[i], of shape (input numel, output numel)."""
    # Grad mode stays on: gradgradcheck's function itself calls autograd.grad.
    outs = _outputs(func, inputs)
    jacobians = []
    for i in wrt:
        x = inputs[i]._data
        rows = [np.zeros((x.size, o._data.size)) for o in outs]
        for j in range(x.size):
            idx = np.unravel_index(j, x.shape)
            orig = x[idx].copy()
            x[idx] = orig - eps
            minus = [np.array(o._data, dtype=np.float64) for o in _outputs(func, inputs)]
            x[idx] = orig + eps
            plus = [np.array(o._data, dtype=np.float64) for o in _outputs(func, inputs)]
            x[idx] = orig
            for r, p, m in zip(rows, plus, minus):
                r[j] = ((p - m) / (2 * eps)).reshape(-1)
        jacobians.append(rows)
    return jacobians


def _outputs(func: Callable, inputs: tuple) -> list:
    return [o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor)]


def _analytical_jacobians(func: Callable, inputs: tuple, wrt: list[int]) -> list:
    """J[i][o] from one vector-Jacobian product per output element."""
    from . import grad

    outs = [o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor)]
    jacobians = [[np.zeros((inputs[i]._data.size, o._data.size)) for o in outs] for i in wrt]
    for k, out in enumerate(outs):
        if not out._requires_grad:
            continue
        for e in range(out._data.size):
            onehot = np.zeros(out._data.size, out._data.dtype)
            onehot[e] = 1
            grads = grad(out, [inputs[i] for i in wrt],
                         wrap(onehot.reshape(out._data.shape)),
                         retain_graph=True, allow_unused=True)
            for n, g in enumerate(grads):
                if g is not None:
                    if g._data.shape != inputs[wrt[n]]._data.shape:
                        raise GradcheckError("Analytical gradient has incorrect size")
                    jacobians[n][k][:, e] = np.asarray(g._data, np.float64).reshape(-1)
    return jacobians


def _fail(message: str, raise_exception: bool) -> bool:
    if raise_exception:
        raise GradcheckError(message)
    return False


def gradcheck(func: Callable, inputs, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True,
              nondet_tol: float = 0.0) -> bool:
    """Check backward's gradients of ``func`` at ``inputs`` against central differences.

    Returns True, or raises ``GradcheckError`` (False with ``raise_exception=False``) naming the
    output and input whose Jacobians differ and showing both.
    """
    inputs = _as_tuple(inputs)
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x._requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of them have requires_grad=True.")
    for i in wrt:
        if inputs[i]._data.dtype != np.float64:
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point or "
                "complex. This check will likely fail if all the inputs are not of double "
                "precision floating point or complex. ", UserWarning, stacklevel=2)
    numerical = _numerical_jacobians(func, inputs, wrt, eps)
    analytical = _analytical_jacobians(func, inputs, wrt)
    again = _analytical_jacobians(func, inputs, wrt)
    for n, i in enumerate(wrt):
        for o, (num, ana) in enumerate(zip(numerical[n], analytical[n])):
            if not np.allclose(ana, num, rtol=rtol, atol=atol):
                return _fail(
                    f"Jacobian mismatch for output {o} with respect to input {i},\n"
                    f"numerical:{wrap(num)!r}\nanalytical:{wrap(ana)!r}\n", raise_exception)
            if np.max(np.abs(again[n][o] - ana), initial=0.0) > nondet_tol:
                return _fail(
                    "Backward is not reentrant, i.e., running backward with same input and "
                    "grad_output multiple times gives different values, although analytical "
                    "gradient matches numerical gradient.The tolerance for nondeterminism was "
                    f"{nondet_tol}.", raise_exception)
    return True


def gradgradcheck(func: Callable, inputs, grad_outputs: Sequence[Tensor] | None = None, *,
                  eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True,
                  nondet_tol: float = 0.0) -> bool:
    """Check second derivatives: gradcheck of the function ``(inputs, v) -> vJ``.

    This checks that backward is differentiable and that its derivative is right, not that the
    first derivative is right (gradcheck does that).
    """
    from . import grad

    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        outs = _differentiable_outputs(func, inputs)
        grad_outputs = []
        for o in outs:
            g = wrap(rng.uniform(-1, 1, o._data.shape).astype(o._data.dtype))
            g._requires_grad = True
            grad_outputs.append(g)
    grad_outputs = tuple(grad_outputs)
    n_in = len(inputs)

    def new_func(*args):
        ins, vs = args[:n_in], args[n_in:]
        outs = _differentiable_outputs(func, ins)
        diff_ins = [x for x in ins if isinstance(x, Tensor) and x._requires_grad]
        grads = grad(outs, diff_ins, vs, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(new_func, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol)
