"""gradcheck's building blocks: perturbing inputs, VJPs and JVPs, and the checks beyond Jacobians.

Values are handled as NumPy arrays (a Jacobian is a matrix of numbers, not part of any graph); the
function under test always runs on ext tensors, in grad mode, so that gradgradcheck's function can
call ``autograd.grad`` itself.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable

import numpy as np

from .._dtype import FROM_NUMPY
from .._tensor import Size, Tensor, wrap
from .function import Function

__all__ = ["GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck and gradgradcheck when a check fails."""

    __module__ = "ext.autograd.gradcheck"  # its public home


# ---------------------------------------------------------------------------- inputs and outputs
def as_tuple(x) -> tuple:
    """``x`` as a tuple: tuples and lists are unpacked, anything else is one element."""
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def diff_input_indices(inputs: tuple) -> list[int]:
    """Positions of the inputs that require grad (the ones gradcheck differentiates)."""
    return [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x._requires_grad]


def is_float_tensor(x) -> bool:
    """Whether ``x`` is a floating-point tensor (the outputs a Jacobian is taken of)."""
    return isinstance(x, Tensor) and x._data.dtype.kind == "f"


def differentiable_outputs(func_out) -> tuple:
    """The outputs that require grad."""
    return tuple(o for o in as_tuple(func_out) if isinstance(o, Tensor) and o._requires_grad)


def check_inputs(inputs: tuple) -> None:
    """One input must require grad; a float32 one gets a warning; none may have stride 0."""
    found = False
    for idx, x in enumerate(inputs):
        if not (isinstance(x, Tensor) and x._requires_grad):
            continue
        if x._data.dtype != np.float64:
            warnings.warn(
                f"Input #{idx} requires gradient and is not a double precision floating point "
                "or complex. This check will likely fail if all the inputs are not of double "
                "precision floating point or complex. ", UserWarning, stacklevel=4)
        # An expanded input repeats one element, which the finite differences would then move
        # in several places at once. (NumPy gives an empty array stride-0 dimensions too.)
        strides = zip(x._data.strides, x._data.shape)
        if x._data.size and any(st == 0 and sz > 1 for st, sz in strides):
            raise RuntimeError(
                f"The {idx}th input has a dimension with stride 0. gradcheck only supports "
                "inputs that are non-overlapping to be able to compute the numerical gradients "
                "correctly. You should call .contiguous on the input before passing it to "
                "gradcheck.")
        found = True
    if not found:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of them have requires_grad=True.")


# ---------------------------------------------------------------------------- finite differences
def _float_output_values(func: Callable, inputs: tuple) -> list[np.ndarray]:
    return [np.array(o._data) for o in as_tuple(func(*inputs)) if is_float_tensor(o)]


def central_difference(func: Callable, inputs: tuple, x: np.ndarray, where, delta, eps: float,
                       index: tuple | None = None) -> list[np.ndarray]:
    """``(f(x + delta) - f(x - delta)) / (2 eps)``, flat, for each floating-point output.

    ``x`` (an input's array) is perturbed in place at ``where`` and restored afterwards.
    """
    orig = np.array(x[where])
    try:
        x[where] = orig - delta
        before = _float_output_values(func, inputs)
        x[where] = orig + delta
        after = _float_output_values(func, inputs)
    finally:
        x[where] = orig
    on_index = f"on index {index} " if index is not None else ""
    columns = []
    for a, b in zip(before, after):
        if a.shape != b.shape:
            raise AssertionError(
                "Expected `func` to return outputs with the same shape when inputs are perturbed "
                f"{on_index}by {eps}, but got: shapes {Size(a.shape)} and {Size(b.shape)}.")
        if a.dtype != b.dtype:
            raise AssertionError(
                "Expected `func` to return outputs with the same dtype when inputs are perturbed "
                f"{on_index}by {eps}, but got: dtypes {FROM_NUMPY[a.dtype]} and "
                f"{FROM_NUMPY[b.dtype]}.")
        columns.append(((b - a) / (2 * eps)).reshape(-1))
    return columns


def numerical_jacobian(func: Callable, inputs: tuple, func_out, eps: float) -> list[list]:
    """``J[i][o]``, of shape (numel of differentiable input i, numel of floating output o)."""
    outs = [o for o in as_tuple(func_out) if is_float_tensor(o)]
    jacobians = []
    for i in diff_input_indices(inputs):
        x = inputs[i]._data
        jac = [np.zeros((x.size, o._data.size), o._data.dtype) for o in outs]
        for k, index in enumerate(np.ndindex(x.shape)):
            for J, col in zip(jac, central_difference(func, inputs, x, index, eps, eps, index)):
                J[k] = col
        jacobians.append(jac)
    return jacobians


def numerical_jvp(func: Callable, inputs: tuple, i: int, u: np.ndarray, eps: float) -> list:
    """``J u`` for each floating output, moving input ``i`` along ``u`` (flat) by ``eps``."""
    x = inputs[i]._data
    return central_difference(func, inputs, x, Ellipsis, eps * u.reshape(x.shape), eps)


def make_vectors(inputs: tuple, outputs: tuple, *, with_v: bool) -> tuple:
    """Random unit vectors ``u`` (one per differentiable input) and ``v`` (one per output)."""
    # A generator of its own: the user's random state is left alone, and results repeat.
    rng = np.random.default_rng(0)

    def unit(t: Tensor) -> np.ndarray:
        r = rng.random(t._data.size).astype(t._data.dtype)
        norm = np.linalg.norm(r)
        return r / norm if norm else r

    all_u = [unit(inputs[i]) for i in diff_input_indices(inputs)]
    return all_u, ([unit(o) for o in outputs] if with_v else None)


# ---------------------------------------------------------------------------- backward mode
def vjp_matrices(inputs: tuple, output: Tensor, vectors: Iterable[np.ndarray],
                 n: int) -> tuple[list[np.ndarray], bool, bool]:
    """``v^T J`` for each of the ``n`` vectors, as the columns of one matrix per differentiable
    input; also whether every gradient had its input's dtype, and its size."""
    from . import grad

    diff = [inputs[i] for i in diff_input_indices(inputs)]
    jac = [np.zeros((x._data.size, n), x._data.dtype) for x in diff]
    types_ok = sizes_ok = True
    for j, v in enumerate(vectors):
        grads = grad(output, diff, wrap(v.reshape(output._data.shape)), retain_graph=True,
                     allow_unused=True)
        for J, g, x in zip(jac, grads, diff):
            if g is None:
                continue
            if g._data.shape != x._data.shape:
                sizes_ok = False
                continue
            if g._data.dtype != x._data.dtype:
                types_ok = False
            J[:, j] = g._data.reshape(-1)
    return jac, types_ok, sizes_ok


def basis(t: Tensor) -> Iterable[np.ndarray]:
    """The one-hot vectors of ``t``'s size: with them, VJPs give the Jacobian row by row."""
    for j in range(t._data.size):
        e = np.zeros(t._data.size, t._data.dtype)
        e[j] = 1
        yield e


# ---------------------------------------------------------------------------- forward mode
def run_dual(func: Callable, inputs: tuple, tangents: dict) -> list:
    """Run ``func`` with the inputs at ``tangents``' keys made dual (inside a dual level).

    A tangent array makes its (detached) input a dual tensor; None passes the input detached,
    without a tangent. Returns ``unpack_dual`` of each floating output: (primal, tangent), the
    tangent None where it has none.
    """
    from . import forward_ad

    args = []
    for p, a in enumerate(inputs):
        if p in tangents:
            t = tangents[p]
            a = a.detach() if t is None else forward_ad.make_dual(
                a.detach(), wrap(np.array(t, a._data.dtype).reshape(a._data.shape)))
        args.append(a)
    return [forward_ad.unpack_dual(o) for o in as_tuple(func(*args)) if is_float_tensor(o)]


def forward_jacobian(func: Callable, inputs: tuple, func_out, all_u: list | None = None,
                     which: list[int] | None = None) -> list[list]:
    """``J[i][o]`` from forward AD, one column per input element with one-hot tangents; with
    ``all_u``, ``J u_i`` (flat) for each differentiable input i instead."""
    from . import forward_ad

    outs = [o for o in as_tuple(func_out) if is_float_tensor(o)]
    idx = diff_input_indices(inputs)
    zeros = {p: np.zeros(inputs[p]._data.shape) for p in idx}
    jacobians = []
    with forward_ad.dual_level():
        for n, i in enumerate(idx):
            if which is not None and i not in which:
                jacobians.append(None)
                continue
            size = inputs[i]._data.size
            if all_u is not None:
                directions = [all_u[n]]
                jac = [np.zeros(o._data.size, o._data.dtype) for o in outs]
            else:
                directions = basis(inputs[i])
                jac = [np.zeros((size, o._data.size), o._data.dtype) for o in outs]
            for k, u in enumerate(directions):
                for J, (_, t) in zip(jac, run_dual(func, inputs, {**zeros, i: u})):
                    if t is not None:  # no tangent: a zero column
                        (J if all_u is not None else J[k])[...] = t._data.reshape(-1)
            jacobians.append(jac)
    return jacobians


# ---------------------------------------------------------------------------- further checks
BATCHED_GRAD_MSG = """\
gradcheck or gradgradcheck failed while testing batched gradient computation.
ext has no vmap: it computes a batch of gradients by looping over the batch one grad_output at a
time, so a difference means that backward gave different values for the same grad_output.
To skip this check, call gradcheck/gradgradcheck with `check_batched_grad=False`."""

BATCHED_FORWARD_GRAD_MSG = """\
gradcheck failed while testing batched gradient computation with forward-mode AD.
ext has no vmap: it computes a batch of forward gradients by looping over the batch one tangent
at a time, so a difference means that forward AD gave different values for the same tangent.
To skip this check, call gradcheck with `check_batched_forward_grad=False`."""


def _compare_batch(res: np.ndarray, exp: np.ndarray, output_idx: int, input_idx: int,
                   message: str) -> None:
    if not np.allclose(res, exp):
        raise GradcheckError(f"For output {output_idx} and input {input_idx}:\n\n{message}\n\n"
                             f"Got:\n{wrap(res)}\n\nExpected:\n{wrap(exp)}")


def _looped(compute: Callable, batch: np.ndarray, message: str) -> list[np.ndarray]:
    """``compute`` over each slice of ``batch``, its results stacked per returned value."""
    try:
        rows = [compute(wrap(batch[b])) for b in range(len(batch))]
    except RuntimeError as ex:
        raise GradcheckError(f"While computing batched gradients, got: {ex}\n\n{message}") from ex
    return [np.stack(r) for r in zip(*rows)]


def test_batched_grad(inputs: tuple, output: Tensor, output_idx: int) -> None:
    """VJPs with a batch of grad_outputs, computed by looping, match the VJPs one at a time."""
    from . import grad

    diff = [inputs[i] for i in diff_input_indices(inputs)]

    def vjp(v: Tensor) -> list[np.ndarray]:
        grads = grad(output, diff, v, retain_graph=True, allow_unused=True)
        return [np.zeros(x._data.shape, x._data.dtype) if g is None else np.array(g._data)
                for g, x in zip(grads, diff)]

    rng = np.random.default_rng(0)
    shape, dt = output._data.shape, output._data.dtype
    grad_outputs = [np.asarray(rng.standard_normal(shape), dt) for _ in range(2)]
    expected = [np.stack(r) for r in zip(*(vjp(wrap(g)) for g in grad_outputs))]
    result = _looped(vjp, np.stack(grad_outputs), BATCHED_GRAD_MSG)
    for input_idx, (res, exp) in enumerate(zip(result, expected)):
        _compare_batch(res, exp, output_idx, input_idx, BATCHED_GRAD_MSG)


def _jvp(func: Callable, inputs: tuple, i: int, tangent: Tensor) -> list[np.ndarray]:
    """The output tangents for ``tangent`` on input ``i`` alone (zeros where there is none)."""
    from . import forward_ad

    others = {p: None for p in diff_input_indices(inputs)}
    with forward_ad.dual_level():
        outs = run_dual(func, inputs, {**others, i: tangent._data})
    return [np.zeros(p._data.shape, p._data.dtype) if t is None else np.array(t._data)
            for p, t in outs]


def test_batched_forward_grad(func: Callable, inputs: tuple) -> None:
    """JVPs with a batch of tangents, computed by looping, match the JVPs one at a time."""
    rng = np.random.default_rng(0)
    for input_idx, p in enumerate(diff_input_indices(inputs)):
        x = inputs[p]._data
        jvp = functools.partial(_jvp, func, inputs, p)
        tangents = [np.asarray(rng.standard_normal(x.shape), x.dtype) for _ in range(2)]
        expected = [np.stack(r) for r in zip(*(jvp(wrap(t)) for t in tangents))]
        result = _looped(jvp, np.stack(tangents), BATCHED_FORWARD_GRAD_MSG)
        for output_idx, (res, exp) in enumerate(zip(result, expected)):
            _compare_batch(res, exp, output_idx, input_idx, BATCHED_FORWARD_GRAD_MSG)


def test_backward_mul_by_grad_output(outputs: tuple, inputs: tuple, masked) -> None:
    """Zero grad_outputs must give zero gradients of the inputs' dtype and size."""
    from . import grad

    if not outputs:
        return
    diff = [inputs[i] for i in diff_input_indices(inputs)]
    zeros = [wrap(np.zeros(o._data.shape, o._data.dtype)) for o in outputs]
    for gi, di in zip(grad(outputs, diff, zeros, allow_unused=True), diff):
        if gi is None:
            continue
        # masked: torch compares with allclose rather than exactly.
        zero = np.allclose(gi._data, 0) if masked else not np.any(gi._data)
        if not zero:
            raise GradcheckError("backward not multiplied by grad_output")
        if gi._data.dtype != di._data.dtype:
            raise GradcheckError("grad is incorrect type")
        if gi._data.shape != di._data.shape:
            raise GradcheckError("grad is incorrect size")


class UndefinedGrad(Function):
    """Passes a tensor through; backward sends an undefined (None) gradient on from it."""

    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx, grad: Tensor) -> None:
        return None


_UNDEFINED_NOTE = 'Please look at "Notes about undefined output gradients" in ' \
                  '"tools/autograd/derivatives.yaml"'


def _warn_bc_breaking() -> None:
    warnings.warn(
        "Backwards compatibility: New undefined gradient support checking feature is enabled "
        "by default, but it may break existing callers of this function. If this is true for "
        'you, you can call this function with "check_undefined_grad=False" to disable the '
        "feature", UserWarning, stacklevel=5)


def test_undefined_backward_mode(func: Callable, outputs: tuple, inputs: tuple) -> None:
    """Backward must cope with undefined (None) output gradients, all at once or one at a time,
    and then give undefined or zero gradients."""
    from . import grad

    diff = [inputs[i] for i in diff_input_indices(inputs)]
    to_check = [[UndefinedGrad.apply(o) for o in differentiable_outputs(func(*inputs))]]
    if len(to_check[0]) > 1:
        for undefined in range(len(outputs)):
            outs = differentiable_outputs(func(*inputs))
            to_check.append([UndefinedGrad.apply(o) if k == undefined else o
                             for k, o in enumerate(outs)])
    for outs in to_check:
        if not outs:
            continue
        zeros = [wrap(np.zeros(o._data.shape, o._data.dtype)) for o in outs]
        try:
            grads = grad(outs, diff, zeros, allow_unused=True)
        except RuntimeError as e:
            _warn_bc_breaking()
            raise GradcheckError("Expected backward function to handle undefined output grads. "
                                 + _UNDEFINED_NOTE) from e
        if any(g is not None and np.any(g._data) for g in grads):
            _warn_bc_breaking()
            raise GradcheckError("Expected all input grads to be undefined or zero when all "
                                 "output grads are undefined or zero. " + _UNDEFINED_NOTE)


def test_undefined_forward_mode(func: Callable, inputs: tuple, all_u: list) -> None:
    """An input without a tangent must give the same output tangents as one with zeros."""
    from . import forward_ad

    idx = diff_input_indices(inputs)
    tangents = dict(zip(idx, all_u))
    with forward_ad.dual_level():
        for p in idx:
            with_zeros = run_dual(func, inputs, {**tangents, p: np.zeros(inputs[p]._data.shape)})
            undefined = run_dual(func, inputs, {**tangents, p: None})
            for o, ((_, r1), (_, r2)) in enumerate(zip(with_zeros, undefined)):
                if r1 is not None and r2 is not None and not np.allclose(r1._data, r2._data):
                    raise GradcheckError(
                        f"Mismatch in tangent values for output with index: {o} when input: "
                        f"{inputs[p]} has an undefined tangent value.  Got: {r1} but expected: "
                        f"{r2}")
