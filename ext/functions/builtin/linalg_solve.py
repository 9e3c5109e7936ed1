"""Inverses, solves, determinants, matrix powers and exponentials, norms, and the products of
torch.linalg.

The ops with a node of their own in torch are declared here (kernel: NumPy's ``np.linalg``, and
SciPy imported inside a kernel where NumPy has no counterpart); the ones torch composes of other
ops (``outer``, ``kron``, ``tensordot``, ``matrix_power``, ``matrix_norm`` ...) are composed of
the same ops here, so that their graphs hold torch's nodes.
"""

from __future__ import annotations

import math
import sys
from collections import namedtuple

import numpy as np

from ..._args import not_a_tensor
from ..._dtype import FROM_NUMPY
from ..._state import STATE
from ..._tensor import Tensor, _wrap_dim
from ..._warnings import warn_once
from .._op import Overload, declare, dispatch
from ._builtin import namespace_of

# torch.linalg's names this module gives (``ext.linalg`` collects them): name -> function.
LINALG: dict = {}


class LinAlgError(RuntimeError):
    """A matrix that a linalg op cannot work with (singular, not positive-definite).

    Stands in until ``ext.linalg`` gives its own class; raised through :func:`_linalg_error`,
    which prefers that one."""


def _linalg_error(msg: str) -> RuntimeError:
    mod = sys.modules.get("ext.linalg")
    cls = getattr(mod, "LinAlgError", LinAlgError) if mod is not None else LinAlgError
    return cls(msg)


# ---------------------------------------------------------------------------------- helpers
def _short(d: np.ndarray) -> str:
    return FROM_NUMPY[d.dtype]._short


def _check(x, name: str, arg: str = "input", pos: int = 1) -> np.ndarray:
    if type(x) is not Tensor:
        raise not_a_tensor(x, name, arg, pos)
    return x._data


def _square(d: np.ndarray, name: str, arg: str = "A") -> None:
    """torch's checks of a (batch of) square floating matrices."""
    if d.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    if d.shape[-1] != d.shape[-2]:
        raise RuntimeError(f"{name}: {arg} must be batches of square matrices, but they are "
                           f"{d.shape[-2]} by {d.shape[-1]} matrices")
    _floating(d, name)


def _floating(d: np.ndarray, name: str) -> None:
    if d.dtype.kind != "f":
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {_short(d)}")


def _lu(a: np.ndarray) -> tuple:
    """LU factorization with partial pivoting of a batch of square matrices, as LAPACK's getrf
    gives it: (LU, 1-based int32 pivots, int32 info: the first zero pivot's 1-based index or
    0)."""
    if a.size:
        import warnings

        from scipy.linalg import lu_factor

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (a singular matrix: told by info)
                lu, piv = lu_factor(a, check_finite=False)
        except (ValueError, np.linalg.LinAlgError):
            pass
        else:
            zero = np.diagonal(lu, axis1=-2, axis2=-1) == 0
            info = np.where(zero.any(-1), zero.argmax(-1) + 1, 0).astype(np.int32)
            return lu, (piv + 1).astype(np.int32), info
    return _lu_np(a)


def _lu_np(a: np.ndarray) -> tuple:
    """_lu in NumPy, column by column over the whole batch."""
    lu = np.array(a, copy=True)
    n = a.shape[-1]
    batch = a.shape[:-2]
    if a.size == 0:
        return lu, np.zeros(batch + (n,), np.int32), np.zeros(batch, np.int32)
    lu = lu.reshape((-1, n, n))
    piv = np.zeros((lu.shape[0], n), np.int32)
    info = np.zeros(lu.shape[0], np.int32)
    rows = np.arange(lu.shape[0])
    with np.errstate(all="ignore"):
        for k in range(n):
            p = k + np.argmax(np.abs(lu[:, k:, k]), axis=1)
            piv[:, k] = p + 1
            swap = lu[rows, p].copy()
            lu[rows, p] = lu[:, k]
            lu[:, k] = swap
            pivot = lu[:, k, k]
            zero = pivot == 0
            info[(info == 0) & zero] = k + 1
            safe = np.where(zero, 1, pivot)
            lu[:, k + 1:, k] = np.where(zero[:, None], lu[:, k + 1:, k],
                                        lu[:, k + 1:, k] / safe[:, None])
            lu[:, k + 1:, k + 1:] -= lu[:, k + 1:, k:k + 1] * lu[:, k:k + 1, k + 1:]
    return lu.reshape(a.shape), piv.reshape(batch + (n,)), info.reshape(batch)


def _det_of_lu(lu: np.ndarray, piv: np.ndarray) -> np.ndarray:
    n = lu.shape[-1]
    diag = np.diagonal(lu, axis1=-2, axis2=-1)
    swaps = (piv != np.arange(1, n + 1, dtype=np.int32)).sum(-1)
    sign = np.where(swaps % 2 == 1, -1, 1).astype(lu.dtype)
    return sign, diag


def _batch_msg(info: np.ndarray, msg: str) -> str:
    if info.ndim:
        idx = int(np.flatnonzero(info.reshape(-1))[0])
        return f"(Batch element {idx}): {msg}"
    return msg


def _unsqueeze_dims(t, dims: tuple):
    for d in sorted(dims):
        t = t.unsqueeze(d)
    return t


def _norm_backward(grad, x, p: float, norm, dims, keepdim: bool):
    """The gradient of the p-norm of ``x`` over ``dims`` (None: all), as torch gives it (zero
    where the norm is zero; at an infinity norm split among the elements that reach it)."""
    ns = namespace_of(grad)
    if not keepdim and x.dim() != 0 and dims is not None:
        grad = _unsqueeze_dims(grad, dims)
        norm = _unsqueeze_dims(norm, dims)
    if p == 0.0:
        return x * 0
    if p == 1.0:
        return x.sign() * grad
    if p == 2.0:
        return grad * ns.where(norm == 0, 0.0, x / norm)
    if math.isinf(p):
        both_nan = ns.logical_and(x.isnan(), norm.isnan())
        is_max = ns.logical_or(x.abs() == norm, both_nan).to(norm.dtype)
        count = is_max.sum() if dims is None else is_max.sum(dims, keepdim=True)
        return x.sign() * is_max * (grad / count)
    if p < 1.0:
        scaled = x.sign() * ns.where(x == 0, 0.0, x.abs().pow(p - 1))
        return scaled * grad * norm.pow(1 - p)
    scaled = x.sign() * x.abs().pow(p - 1) if p < 2.0 else x * x.abs().pow(p - 2)
    return scaled * ns.where(norm == 0, 0.0, grad / norm.pow(p - 1))


def _dims_of(dim, ndim: int):
    """dim as a tuple of non-negative ints, or None for all dims."""
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    out = tuple(_wrap_dim(d, max(ndim, 1)) for d in dims)
    if len(set(out)) != len(out):
        raise RuntimeError(f"dim {out[0]} appears multiple times in the list of dims")
    return out


# ------------------------------------------------------------------------------------- inverse
_InvEx = namedtuple("linalg_inv_ex", ('inverse', 'info'))


class LinalgInvEx(Overload):
    """A⁻¹: dA = -A⁻ᵀ grad A⁻ᵀ."""

    node_name = "LinalgInvExBackward0"
    args = ("A", "check_errors")
    outputs = ("inverse", "info")
    non_differentiable = ("info",)
    returns = _InvEx
    saved_fields = ("inverse",)
    tensor_positions = (0,)
    keywords = ("check_errors",)

    @staticmethod
    def backward(ctx, grad, _info=None):
        (inv,) = ctx.saved_tensors
        inv_t = inv.mT
        return -inv_t.matmul(grad).matmul(inv_t), None

    @staticmethod
    def jvp(ctx, tangent, _check):
        (inv,) = ctx.saved_tensors
        return -inv.matmul(tangent).matmul(inv), None


def _inv_kernel(d: np.ndarray) -> tuple:
    # (LAPACK's inverse refuses the batch when a matrix has a zero pivot: only then is each
    # one's info needed)
    try:
        with np.errstate(all="ignore"):
            return np.linalg.inv(d), np.zeros(d.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        pass
    lu, _piv, info = _lu(d)
    with np.errstate(all="ignore"):
        out = np.empty_like(d)
        flat_d, flat_o = d.reshape((-1,) + d.shape[-2:]), out.reshape((-1,) + d.shape[-2:])
        eye = np.eye(d.shape[-1], dtype=d.dtype)
        for i, ok in enumerate(info.reshape(-1)):
            flat_o[i] = np.linalg.inv(flat_d[i]) if ok == 0 else eye / 0.0
    return out, info


def linalg_inv_ex(A: Tensor, *, check_errors: bool = False, out=None):
    """The inverse of a (batch of) square matrices and LAPACK's info (non-zero: singular)."""
    d = _check(A, "linalg_inv_ex", "A")
    _square(d, "linalg.inv")
    inv, info = _inv_kernel(d)
    if check_errors and info.any():
        k = int(info.reshape(-1)[np.flatnonzero(info.reshape(-1))[0]])
        raise _linalg_error("linalg.inv: " + _batch_msg(
            info, f"The diagonal element {k} is zero, the inversion could not be completed "
                  "because the input matrix is singular."))
    return dispatch(LinalgInvEx, (inv, info), (A, check_errors))


def linalg_inv(A: Tensor, *, out=None) -> Tensor:
    """The inverse of a (batch of) square matrices; LinAlgError when one is singular."""
    return linalg_inv_ex(A, check_errors=True)[0]


linalg_inv_ex = declare("linalg_inv_ex", LinalgInvEx, function=linalg_inv_ex, methods=(),
                        functions=())
linalg_inv = declare("linalg_inv", function=linalg_inv, methods={"inverse": linalg_inv},
                     functions=("inverse",))
LINALG.update(inv=linalg_inv, inv_ex=linalg_inv_ex)


# --------------------------------------------------------------------------------------- solve
_SolveEx = namedtuple("linalg_solve_ex", ('result', 'info'))


def _vector_rhs(a: np.ndarray, b: np.ndarray) -> bool:
    return b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])


class LinalgSolveEx(Overload):
    """X with A X = B (X A = B for left=False): dB = A⁻ᵀ grad, dA = -dB Xᵀ."""

    node_name = "LinalgSolveExBackward0"
    args = ("A", "B", "left", "check_errors")
    outputs = ("result", "LU", "pivots", "info")
    non_differentiable = ("LU", "pivots", "info")
    saved_fields = ("A", "LU", "pivots", "result")
    saved_attrs = ("left",)
    tensor_positions = (0, 1)
    keywords = ("left", "check_errors")

    @staticmethod
    def backward(ctx, grad, *_):
        A, _lu_, _piv, X = ctx.saved_tensors
        left = ctx.left
        vec = X.dim() == A.dim() - 1
        g = grad.unsqueeze(-1) if vec else grad
        Xm = X.unsqueeze(-1) if vec else X
        gB = namespace_of(grad).linalg.solve(A.mT, g, left=left)
        gA = None
        if ctx.needs_input_grad[0]:
            gA = -gB.matmul(Xm.mT) if left else -Xm.mT.matmul(gB)
        if vec:
            gB = gB.squeeze(-1)
        return gA, gB if ctx.needs_input_grad[1] else None, None, None

    @staticmethod
    def jvp(ctx, tA, tB, _left, _check):
        A, _lu_, _piv, X = ctx.saved_tensors
        left = ctx.left
        vec = X.dim() == A.dim() - 1
        Xm = X.unsqueeze(-1) if vec else X
        rhs = None
        if tB is not None:
            rhs = tB.unsqueeze(-1) if vec else tB
        if tA is not None:
            term = -(tA.matmul(Xm) if left else Xm.matmul(tA))
            rhs = term if rhs is None else rhs + term
        out = namespace_of(A).linalg.solve(A, rhs, left=left)
        return (out.squeeze(-1) if vec else out), None, None, None


def _solve_kernel(a: np.ndarray, b: np.ndarray, left: bool, factor: bool) -> tuple:
    """(X, A's LU, pivots, info); the LU and pivots only when ``factor`` (a node saves them)
    or A is singular (info tells which), else None."""
    vec = _vector_rhs(a, b)
    bm = b[..., None] if vec else b
    a_ = a
    if not left:
        a, bm = np.swapaxes(a, -1, -2), np.swapaxes(bm, -1, -2)
    batch = np.broadcast_shapes(a.shape[:-2], bm.shape[:-2])
    lu = piv = None
    with np.errstate(all="ignore"):
        try:
            x = np.linalg.solve(np.broadcast_to(a, batch + a.shape[-2:]),
                                np.broadcast_to(bm, batch + bm.shape[-2:]))
            info = np.zeros(a_.shape[:-2], np.int32)
        except np.linalg.LinAlgError:
            factor = True
            x = _inv_kernel(np.ascontiguousarray(a))[0] @ bm
    if factor:
        # (the LU torch saves is A's either way: it solves X A = B as Aᵀ Xᵀ = Bᵀ with it)
        lu, piv, info = _lu(a_)
    if not left:
        x = np.swapaxes(x, -1, -2)
    x = x[..., 0] if vec else x
    return np.ascontiguousarray(x), lu, piv, info


def _solve_ex(A: Tensor, B: Tensor, left: bool, check_errors: bool, factor: bool) -> tuple:
    """The four outputs of torch's aten op: X, A's LU factor and pivots, and info (the factor
    and pivots None unless ``factor``, a node saves them, or A is singular)."""
    a = _check(A, "linalg_solve_ex", "A")
    b = _check(B, "linalg_solve_ex", "B", 2)
    _square(a, "linalg.solve")
    if a.dtype != b.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {_short(a)} and B of type {_short(b)} instead")
    vec = _vector_rhs(a, b)
    if not vec and b.ndim < 2:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 2 dimensions.")
    n = a.shape[-1]
    k = b.shape[-1] if vec else b.shape[-2 if left else -1]
    if k != n:
        shape = "x".join(map(str, a.shape[-2:]))
        bshape = "x".join(map(str, b.shape[-2:] if b.ndim > 1 else b.shape))
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({shape} and {bshape})")
    try:
        x, lu, piv, info = _solve_kernel(a, b, left, factor or STATE.special or (
            STATE.grad_enabled and (A._requires_grad or B._requires_grad)))
    except ValueError as err:
        raise RuntimeError(f"linalg.solve: {err}") from None
    if check_errors and info.any():
        raise _linalg_error("torch.linalg.solve: " + _batch_msg(
            info, "The solver failed because the input matrix is singular."))
    return dispatch(LinalgSolveEx, (x, lu, piv, info), (A, B, left, check_errors))


def linalg_solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False,
                    out=None):
    """X with A X = B (left) or X A = B, and LAPACK's info (non-zero: A singular)."""
    outs = _solve_ex(A, B, left, check_errors, False)
    return _SolveEx(outs[0], outs[3])


def _linalg_solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False):
    """torch's aten op: (X, A's LU factor, its pivots, info), the factor always computed."""
    return tuple(_solve_ex(A, B, left, check_errors, True))


def linalg_solve(A: Tensor, B: Tensor, *, left: bool = True, out=None) -> Tensor:
    """X with A X = B (left) or X A = B; LinAlgError when A is singular."""
    return linalg_solve_ex(A, B, left=left, check_errors=True)[0]


# (the op's function is the aten one, which ext.ops.aten._linalg_solve_ex names, as torch's
# returns four outputs; linalg.solve_ex keeps two of them)
declare("linalg_solve_ex", LinalgSolveEx, function=_linalg_solve_ex, methods=(), functions=(),
        torch_op="aten::_linalg_solve_ex")
linalg_solve = declare("linalg_solve", function=linalg_solve, methods=(), functions=())
LINALG.update(solve=linalg_solve, solve_ex=linalg_solve_ex)


# ---------------------------------------------------------------------------------- determinant
class LinalgDet(Overload):
    """det A: dA = grad · det A · A⁻ᵀ (through an SVD where A is singular)."""

    node_name = "LinalgDetBackward0"
    args = ("A",)
    outputs = ("result", "LU", "pivots")
    non_differentiable = ("LU", "pivots")
    saved_fields = ("A", "LU", "pivots", "result")

    @staticmethod
    def backward(ctx, grad, *_):
        A, _lu_, _piv, det = ctx.saved_tensors
        ns = namespace_of(grad)
        # (no branch on values, which torch.compile cannot trace: each matrix of the batch
        # takes its formula through where, the others' inputs swapped for harmless ones)
        singular = (det == 0).unsqueeze(-1).unsqueeze(-1)
        n = A.shape[-1]
        # Without a graph to build, torch solves with a perturbed LU factor: a singular
        # matrix's gradient is its zero determinant times that solve, zeros.
        plain = ((grad * det).unsqueeze(-1).unsqueeze(-1)
                 * ns.linalg.inv(ns.where(singular, ns.eye(n, dtype=A.dtype), A)).mT)
        if not ns.is_grad_enabled():
            return plain
        # (for a graph, the cofactors through an SVD where A is singular; a nonsingular one
        # is swapped for a diagonal with distinct values, whose SVD has a finite derivative)
        spread = ns.diag(ns.arange(1, n + 1, dtype=A.dtype))
        return ns.where(singular, _det_backward_singular(grad, ns.where(singular, A, spread)),
                        plain)

    @staticmethod
    def jvp(ctx, tangent):
        A, _lu_, _piv, det = ctx.saved_tensors
        ns = namespace_of(A)
        # (a singular matrix's tangent is its zero determinant times a finite solve, zero, as
        # torch's rule with its perturbed LU factor: no inverse of it is taken)
        singular = (det == 0).unsqueeze(-1).unsqueeze(-1)
        inv = ns.linalg.inv(ns.where(singular, ns.eye(A.shape[-1], dtype=A.dtype), A))
        return det * (inv.mT * tangent).sum((-2, -1)), None, None


def _det_backward_singular(grad, A):
    """The cofactor matrix times grad through an SVD, defined for singular A too."""
    ns = namespace_of(grad)
    U, S, Vh = ns.linalg.svd(A)
    alpha = ns.linalg.det(U) * ns.linalg.det(Vh)
    n = S.shape[-1]
    eye = ns.eye(n, dtype=_bool_dtype(ns)).expand(S.shape[:-1] + (n, n))
    others = ns.where(eye, 1.0, S.unsqueeze(-2).expand(eye.shape)).prod(-1)
    D = (grad * alpha).unsqueeze(-1) * others
    return (U * D.unsqueeze(-2)).matmul(Vh)


def _bool_dtype(ns):
    """The bool dtype of an engine's namespace."""
    return ns.bool


def _det_operand(a: np.ndarray) -> np.ndarray:
    """The matrix whose LU torch factors for a determinant: Aᵀ for a row-major A (LAPACK reads
    it so without a copy; the determinant is the same), and the LU it saves is that one."""
    return np.swapaxes(a, -1, -2) if a.flags.c_contiguous else a


def linalg_det(A: Tensor, *, out=None) -> Tensor:
    """The determinant of a (batch of) square matrices."""
    a = _check(A, "linalg_det", "A")
    _square(a, "linalg.det")
    lu, piv, _info = _lu(_det_operand(a))
    sign, diag = _det_of_lu(lu, piv)
    det = np.asarray(sign * np.prod(diag, axis=-1), dtype=a.dtype)
    return dispatch(LinalgDet, (det, lu, piv), (A,))[0]


linalg_det = declare("linalg_det", LinalgDet, function=linalg_det,
                     methods={"det": linalg_det}, functions=("det",),
                     torch_op="aten::_linalg_det")
LINALG.update(det=linalg_det)


_Slogdet = namedtuple("linalg_slogdet", ('sign', 'logabsdet'))


class LinalgSlogdet(Overload):
    """(sign, log|det A|): dA = grad_logabsdet · A⁻ᵀ; the sign has no gradient."""

    node_name = "LinalgSlogdetBackward0"
    args = ("A",)
    outputs = ("sign", "logabsdet", "LU", "pivots")
    non_differentiable = ("LU", "pivots")
    saved_fields = ("A", "LU", "pivots", "sign")

    @staticmethod
    def backward(ctx, _gsign, glog, *_):
        A = ctx.saved_tensors[0]
        if glog is None:
            return None
        return glog.unsqueeze(-1).unsqueeze(-1) * namespace_of(glog).linalg.inv(A).mT

    @staticmethod
    def jvp(ctx, tangent):
        A = ctx.saved_tensors[0]
        inv = namespace_of(A).linalg.inv(A)
        t = (inv.mT * tangent).sum((-2, -1))
        return t * 0, t, None, None


def linalg_slogdet(A: Tensor, *, out=None):
    """The sign and the log of the absolute value of the determinant."""
    a = _check(A, "linalg_slogdet", "A")
    _square(a, "linalg.slogdet")
    lu, piv, _info = _lu(_det_operand(a))
    sign, diag = _det_of_lu(lu, piv)
    with np.errstate(all="ignore"):
        sign = np.asarray(sign * np.prod(np.sign(diag), axis=-1), dtype=a.dtype)
        logabs = np.asarray(np.sum(np.log(np.abs(diag)), axis=-1), dtype=a.dtype)
    outs = dispatch(LinalgSlogdet, (sign, logabs, lu, piv), (A,))
    return _Slogdet(outs[0], outs[1])


linalg_slogdet = declare("linalg_slogdet", LinalgSlogdet, function=linalg_slogdet,
                         methods={"slogdet": linalg_slogdet}, functions=("slogdet",),
                         torch_op="aten::_linalg_slogdet")
LINALG.update(slogdet=linalg_slogdet)


def logdet(input: Tensor) -> Tensor:  # noqa: A002 - torch's name
    """log det A: nan where the determinant is negative."""
    sign, logabs = linalg_slogdet(input)
    return namespace_of(input).where(sign == -1, math.nan, logabs)


logdet = declare("logdet", function=logdet)


# --------------------------------------------------------------------------------- matrix power
def linalg_matrix_power(A: Tensor, n: int, *, out=None) -> Tensor:
    """A to the integer power n (negative: of the inverse), by repeated squaring as torch."""
    a = _check(A, "linalg_matrix_power", "A")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise RuntimeError("linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {a.shape[-2] if a.ndim > 1 else 1} by {a.shape[-1]} "
                           "matrices")
    if type(n) is not int:
        raise TypeError(f"linalg_matrix_power(): argument 'n' must be int, not "
                        f"{type(n).__name__}")
    if n == 0:
        ns = namespace_of(A)
        eye = ns.eye(a.shape[-1], dtype=A.dtype).expand(a.shape)
        return A.clone(memory_format=ns.contiguous_format).copy_(eye)
    if n < 0:
        A, n = linalg_inv(A), -n
        if n == 1:
            return A
    if n == 1:
        return A.clone(memory_format=namespace_of(A).contiguous_format)
    if n == 2:
        return A.matmul(A)
    if n == 3:
        return A.matmul(A).matmul(A)
    z = result = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = A if z is None else z.matmul(z)
        if bit:
            result = z if result is None else result.matmul(z)
    return result


linalg_matrix_power = declare("linalg_matrix_power", function=linalg_matrix_power, methods={
    "matrix_power": linalg_matrix_power}, functions=("matrix_power",))
LINALG.update(matrix_power=linalg_matrix_power)


# ----------------------------------------------------------------------------------- matrix exp
def _expm_frechet(A, E, transpose: bool):
    """The derivative of exp at A in direction E: the upper right block of exp([[A, E], [0, A]])
    (A transposed for the gradient)."""
    ns = namespace_of(E)
    a = A.mT if transpose else A
    n = a.shape[-1]
    top = ns.cat([a, E], -1)
    bottom = ns.cat([a * 0, a], -1)
    return _matrix_exp_any(ns.cat([top, bottom], -2))[..., :n, n:]


def _matrix_exp_any(M):
    """matrix_exp on whichever engine M lives."""
    return namespace_of(M).linalg.matrix_exp(M)


class LinalgMatrixExp(Overload):
    """exp(A): the gradient is the Fréchet derivative of exp at Aᵀ applied to grad."""

    node_name = "LinalgMatrixExpBackward0"
    saved_fields = ("self",)

    @staticmethod
    def backward(ctx, grad):
        (A,) = ctx.saved_tensors
        return _expm_frechet(A, grad, True)

    @staticmethod
    def jvp(ctx, tangent):
        (A,) = ctx.saved_tensors
        return _expm_frechet(A, tangent, False)


def linalg_matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential of a (batch of) square matrices."""
    a = _check(A, "linalg_matrix_exp", "input")
    _square(a, "linalg.matrix_exp")
    if a.size == 0:
        out = a.copy()
    elif a.shape[-1] == 1:
        out = np.exp(a)
    else:
        out = _expm_np(a)
    return dispatch(LinalgMatrixExp, out, (A,))


# The matrix exponential as torch computes it, so that float32 results round alike: a Taylor
# polynomial of degree 1, 2, 4, 8, 12 or 18 by the matrix's 1-norm, each evaluated with few
# products (Bader, Blanes and Casas' schemes), and scaling and squaring above the last bound.
_THETAS = {np.dtype(np.float32): (1.192092800768788e-07, 5.978858893805233e-04,
                                  5.116619363445086e-02, 5.800524627688768e-01,
                                  1.461661507209034e+00, 3.010066362817634e+00),
           np.dtype(np.float64): (2.220446049250313e-16, 2.580956802971767e-08,
                                  3.397168839976962e-04, 4.991228871115323e-02,
                                  2.996158913811580e-01, 1.090863719290036e+00)}
_B12 = ((9.0198e-16, 0.46932117595418237389, -0.20099424927047284052, -0.04623946134063071740),
        (5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031,
         0.01108844528519167989),
        (0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968,
         0.00610700528898058230),
        (-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079,
         -0.00675951846863086359))
_B18 = ((0.0, -1.00365581030144618291e-01, -8.02924648241156932449e-03,
         -8.92138498045729985177e-04, 0.0),
        (0.0, 3.97849749499645077844e-01, 1.36783778460411720168e+00,
         4.98289622525382669416e-01, -6.37898194594723280150e-04),
        (-1.09676396052962061844e+01, 1.68015813878906206114e+00, 5.71779846478865511061e-02,
         -6.98210122488052056106e-03, 3.34975017086070470649e-05),
        (-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02,
         2.95552570429315521194e-02, -1.39180257516060693404e-05),
        (0.0, 0.0, -9.23364619367118555360e-02, -1.69364939002081722752e-02,
         -1.40086798182036094347e-05))


def _powers(a: np.ndarray, count: int) -> list:
    """I, A, A², A³, A⁶: the first ``count`` of them."""
    out = [np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape).copy(), a]
    if count > 2:
        out.append(a @ a)
    if count > 3:
        out.append(a @ out[2])
    if count > 4:
        out.append(out[3] @ out[3])
    return out


def _combine(mats: list, coeffs, dtype) -> list:
    return [sum(np.asarray(c, dtype) * m for c, m in zip(row, mats)) for row in coeffs]


def _taylor(a: np.ndarray, degree: int) -> np.ndarray:
    dt = a.dtype
    if degree == 1:
        i, a1 = _powers(a, 2)
        return i + a1
    if degree == 2:
        i, a1, a2 = _powers(a, 3)
        return i + a1 + a2 / np.asarray(2.0, dt)
    if degree == 4:
        i, a1, a2 = _powers(a, 3)
        inner = _combine([i, a1, a2], [(1 / 2.0, 1 / 6.0, 1 / 24.0)], dt)[0]
        return i + a1 + a2 @ inner
    if degree == 8:
        sq = 0.1330413469565007072504e+2
        x3 = 2.0 / 3.0
        x1, x2 = x3 * ((1.0 + sq) / 88.0), x3 * ((1.0 + sq) / 352.0)
        x4, x5 = (-271.0 + 29.0 * sq) / (315.0 * x3), (-11.0 + 11.0 * sq) / (1260.0 * x3)
        x6, x7 = (-99.0 + 11.0 * sq) / (5040.0 * x3), (89.0 - sq) / (5040.0 * x3)
        y2 = (857.0 - 58.0 * sq) / 630.0
        i, a1, a2 = _powers(a, 3)
        a4 = a2 @ _combine([a1, a2], [(x1, x2)], dt)[0]
        a8 = _combine([a2, a4], [(x3, 1.0)], dt)[0] @ _combine([i, a1, a2, a4],
                                                               [(x4, x5, x6, x7)], dt)[0]
        return i + a1 + np.asarray(y2, dt) * a2 + a8
    if degree == 12:
        b = _combine(_powers(a, 4), _B12, dt)
        b[2] = b[2] + b[3] @ b[3]
        return b[0] + (b[1] + b[2]) @ b[2]
    b = _combine(_powers(a, 5), _B18, dt)
    b[3] = b[3] + b[0] @ b[4]
    return b[1] + (b[2] + b[3]) @ b[3]


def _expm_np(a: np.ndarray) -> np.ndarray:
    """torch's polynomial for the dtype's bounds, evaluated in double precision (its rounding
    in float32 is not reproducible; its truncation is)."""
    thetas = _THETAS[a.dtype]
    dtype = a.dtype
    a = a.astype(np.float64)
    flat = a.reshape((-1,) + a.shape[-2:])
    out = np.empty_like(flat)
    norms = np.abs(flat).sum(-2).max(-1)
    with np.errstate(all="ignore"):
        for i, (m, norm) in enumerate(zip(flat, norms)):
            degree = next((d for d, t in zip((1, 2, 4, 8, 12), thetas) if norm <= t), 18)
            if degree < 18:
                out[i] = _taylor(m, degree)
                continue
            s = max(0, int(np.ceil(np.log2(np.float32(norm) / np.float32(thetas[-1]))
                                   if dtype == np.float32 else
                                   np.log2(norm / thetas[-1]))))
            e = _taylor(m / np.asarray(2.0 ** s, a.dtype), 18)
            for _ in range(s):
                e = e @ e
            out[i] = e
    return out.reshape(a.shape).astype(dtype)


linalg_matrix_exp = declare("linalg_matrix_exp", LinalgMatrixExp, function=linalg_matrix_exp,
                            methods={"matrix_exp": linalg_matrix_exp}, functions=("matrix_exp",))
LINALG.update(matrix_exp=linalg_matrix_exp)


# ---------------------------------------------------------------------------------------- norms
class LinalgVectorNorm(Overload):
    """The p-norm over some dims: see _norm_backward."""

    node_name = "LinalgVectorNormBackward0"
    args = ("self", "ord", "dim", "keepdim")
    saved_fields = ("self", "result")
    saved_attrs = ("ord", "dim", "keepdim")
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad):
        x, norm = ctx.saved_tensors
        dims = ctx.dim
        if dims is not None and len(dims) == 0:
            dims = None
        return _norm_backward(grad, x, float(ctx.ord), norm, dims, ctx.keepdim), None, None, None

    @staticmethod
    def jvp(ctx, tangent, *_):
        x, norm = ctx.saved_tensors
        dims = ctx.dim
        if dims is not None and len(dims) == 0:
            dims = None
        t = _norm_backward(norm.new_ones(norm.shape), x, float(ctx.ord), norm, dims,
                           ctx.keepdim) * tangent
        return t.sum() if dims is None and not ctx.keepdim else t.sum(
            dims if dims is not None else tuple(range(x.dim())), keepdim=ctx.keepdim)


def _vector_norm_np(d: np.ndarray, p: float, axes, keepdim: bool) -> np.ndarray:
    with np.errstate(all="ignore"):
        a = np.abs(d)
        if p == 2.0:
            r = np.sqrt(np.sum(a * a, axis=axes, keepdims=keepdim))
        elif p == 1.0:
            r = np.sum(a, axis=axes, keepdims=keepdim)
        elif p == math.inf:
            r = np.max(a, axis=axes, keepdims=keepdim, initial=0.0) if d.size else \
                np.zeros(_reduced_shape(d.shape, axes, keepdim), d.dtype)
            if d.size:
                r = np.where(np.isnan(d).any(axis=axes, keepdims=keepdim), np.nan, r)
        elif p == -math.inf:
            r = np.min(a, axis=axes, keepdims=keepdim)
        elif p == 0.0:
            r = np.sum(a != 0, axis=axes, keepdims=keepdim).astype(d.dtype)
        else:
            r = np.power(np.sum(np.power(a, p), axis=axes, keepdims=keepdim), 1.0 / p)
    return np.asarray(r, dtype=d.dtype)


def _reduced_shape(shape: tuple, axes, keepdim: bool) -> tuple:
    axes = range(len(shape)) if axes is None else axes
    if keepdim:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def linalg_vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None,
                       out=None) -> Tensor:
    """The ord-norm of x over ``dim`` (None: all of it), as a vector."""
    d = _check(x, "linalg_vector_norm", "input")
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not "
                        f"{type(ord).__name__}")
    if dtype is not None:
        if d.dtype.kind != "f" or not np.dtype(dtype._np).kind == "f":
            raise RuntimeError("linalg.vector_norm: dtype should be floating point or "
                               f"complex. Got {dtype._short}")
        if dtype._np != d.dtype:
            x = x.to(dtype)
            d = x._data
    if d.dtype.kind != "f":
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor "
                           f"as input. Got {_short(d)}")
    dims = _dims_of(dim, d.ndim)
    axes = None if dims is None or len(dims) == 0 else dims
    p = float(ord)
    if p < 0 or math.isinf(p) and p > 0:
        empty = [i for i in (range(d.ndim) if axes is None else axes) if d.shape[i] == 0] \
            if d.ndim else []
        if d.size == 0 and (axes is None or empty):
            raise IndexError("linalg.vector_norm cannot compute the "
                             f"{ord} norm on an empty tensor because the operation does not "
                             "have an identity")
    if d.ndim == 0:
        axes = None
    r = _vector_norm_np(d, p, axes, keepdim)
    return dispatch(LinalgVectorNorm, r, (x, ord, dims, keepdim))


linalg_vector_norm = declare("linalg_vector_norm", LinalgVectorNorm,
                             function=linalg_vector_norm, methods=(), functions=())
LINALG.update(vector_norm=linalg_vector_norm)


def _svdvals(A):
    return namespace_of(A).linalg.svdvals(A)


def _backshift(d0: int, d1: int, ndim: int) -> list:
    return [i for i in range(ndim) if i not in (d0, d1)] + [d0, d1]


def linalg_matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *,
                       dtype=None, out=None) -> Tensor:
    """A matrix norm (``fro``, ``nuc``, ±1, ±2, ±inf) over the two dims ``dim``."""
    a = _check(A, "linalg_matrix_norm", "input")
    if a.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    dims = list(_dims_of(dim, a.ndim))
    if len(dims) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {tuple(dim)}")
    if dims[0] == dims[1]:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dims[0]}, "
                           f"{dims[1]})")
    if isinstance(ord, str):
        if ord == "fro":
            return linalg_vector_norm(A, 2, dims, keepdim, dtype=dtype)
        if ord != "nuc":
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
        A_ = A if dtype is None else A.to(dtype)
        perm = _backshift(dims[0], dims[1], a.ndim)
        result = _svdvals(A_.permute(perm)).sum(-1, keepdim=keepdim)
        if keepdim:
            result = result.unsqueeze(-1).permute(_inverse_perm(perm))
        return result
    p = float(ord)
    if abs(p) not in (1.0, 2.0, math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")

    def max_min(t, d):
        return t.amax(d, keepdim) if p > 0 else t.amin(d, keepdim)

    if abs(p) == 2.0:
        perm = _backshift(dims[0], dims[1], a.ndim)
        A_ = A if dtype is None else A.to(dtype)
        result = max_min(_svdvals(A_.permute(perm)), -1)
        if keepdim:
            result = result.unsqueeze(-1).permute(_inverse_perm(perm))
        return result
    if math.isinf(p):
        dims = dims[::-1]
    if not keepdim and dims[0] < dims[1]:
        dims[1] -= 1
    return max_min(linalg_vector_norm(A, 1.0, (dims[0],), keepdim, dtype=dtype), dims[1])


def _inverse_perm(perm: list) -> list:
    out = [0] * len(perm)
    for i, p in enumerate(perm):
        out[p] = i
    return out


linalg_matrix_norm = declare("linalg_matrix_norm", function=linalg_matrix_norm, methods=(),
                             functions=())
LINALG.update(matrix_norm=linalg_matrix_norm)


def linalg_norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None,
                out=None) -> Tensor:
    """A vector or matrix norm, chosen as torch chooses by ``ord`` and ``dim``."""
    a = _check(A, "linalg_norm", "input")
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. "
                               f"Got {list(dims)}")
    else:
        dims = None
        if ord is not None and a.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input "
                               f"must be 1D or 2D. Got {a.ndim}D.")
    if isinstance(ord, str):
        if dims is None and a.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input "
                               f"must be 1D or 2D. Got {a.ndim}D.")
        return linalg_matrix_norm(A, ord, dims if dims is not None else (0, 1), keepdim,
                                  dtype=dtype)
    if ord is not None and ((dims is not None and len(dims) == 2) or
                            (dims is None and a.ndim == 2)):
        return linalg_matrix_norm(A, ord, dims if dims is not None else (0, 1), keepdim,
                                  dtype=dtype)
    return linalg_vector_norm(A, 2.0 if ord is None else ord, dims, keepdim, dtype=dtype)


linalg_norm = declare("linalg_norm", function=linalg_norm, methods=(), functions=())
LINALG.update(norm=linalg_norm)


def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, out=None,  # noqa: A002
         dtype=None) -> Tensor:
    """torch.norm: the vector 2-norm for ``fro`` over at most two dims, ``nuc`` through
    matrix_norm, any number p as a vector norm."""
    _check(input, "norm", "input")
    dims = None if dim is None else [dim] if isinstance(dim, int) else list(dim)
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
            return linalg_vector_norm(input, 2, dims, keepdim, dtype=dtype)
        if dims is None:
            dims = list(range(input.dim()))
        return linalg_matrix_norm(input, p, dims, keepdim, dtype=dtype)
    return linalg_vector_norm(input, 2.0 if p is None else p, dims, keepdim, dtype=dtype)


norm = declare("norm", function=norm)


def linalg_cond(A: Tensor, p=None) -> Tensor:
    """The condition number of A in the norm ``p`` (None: the 2-norm, through singular
    values)."""
    a = _check(A, "linalg_cond", "input")
    if a.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor A must have at least 2 dimensions.")
    if p is None or p in (2, -2):
        S = _svdvals(A)
        first, last = S[..., :1], S[..., -1:]
        return (first / last if p in (None, 2) else last / first).squeeze(-1)
    _square(a, "linalg.cond")
    inv = linalg_inv_ex(A)[0]
    return linalg_matrix_norm(A, p) * linalg_matrix_norm(inv, p)


linalg_cond = declare("linalg_cond", function=linalg_cond, methods=(), functions=())
LINALG.update(cond=linalg_cond)


# ---------------------------------------------------------------------------------------- cross
class LinalgCross(Overload):
    """a × b along dim: da = b × grad, db = grad × a."""

    node_name = "LinalgCrossBackward0"
    args = ("self", "other", "dim")
    saved_fields = ("self", "other")
    saved_attrs = ("dim",)
    saved_for = {"self": "other", "other": "self"}
    unsigned_attrs = ("dim",)
    tensor_positions = (0, 1)
    keywords = ("dim",)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ns = namespace_of(grad)
        ga = ns.linalg.cross(b, grad, dim=ctx.dim) if ctx.needs_input_grad[0] else None
        gb = ns.linalg.cross(grad, a, dim=ctx.dim) if ctx.needs_input_grad[1] else None
        return ga, gb, None

    @staticmethod
    def jvp(ctx, ta, tb, _dim):
        a, b = ctx.saved_tensors
        ns = namespace_of(a if a is not None else b)
        out = None
        if ta is not None:
            out = ns.linalg.cross(ta, b, dim=ctx.dim)
        if tb is not None:
            t = ns.linalg.cross(a, tb, dim=ctx.dim)
            out = t if out is None else out + t
        return out


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1, out=None) -> Tensor:  # noqa: A002
    """The cross product of 3-vectors along ``dim``, broadcasting the others."""
    a = _check(input, "linalg_cross", "input")
    b = _check(other, "linalg_cross", "other", 2)
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise RuntimeError("linalg.cross: the size of tensor a must match the size of tensor b"
                           ) from None
    pos = _wrap_dim(dim, a.ndim)
    if a.shape[pos] != 3 or b.shape[pos] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{a.shape[pos]} and {b.shape[pos]}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {_short(a)} but found {_short(b)}")
    return dispatch(LinalgCross, _cross_np(a, b, pos), (input, other, dim))


def _cross_np(a: np.ndarray, b: np.ndarray, pos: int) -> np.ndarray:
    """a × b along axis pos (NumPy's cross moves axes and checks more: several times slower)."""
    first, second = [1, 2, 0], [2, 0, 1]
    return (np.take(a, first, pos) * np.take(b, second, pos)
            - np.take(a, second, pos) * np.take(b, first, pos))


linalg_cross = declare("linalg_cross", LinalgCross, function=linalg_cross, methods=(),
                       functions=())
LINALG.update(cross=linalg_cross)


def cross(input: Tensor, other: Tensor, dim=None, *, out=None) -> Tensor:  # noqa: A002
    """torch.cross: dim None picks the first dim of size 3."""
    a = _check(input, "cross", "input")
    if dim is None:
        b = _check(other, "cross", "other", 2)
        shape = np.broadcast_shapes(a.shape, b.shape) if a.ndim == b.ndim else a.shape
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return linalg_cross(input, other, dim=dim)


cross = declare("cross", function=cross)


# ---------------------------------------------------------------------------------------- trace
class Trace(Overload):
    """The sum of the diagonal: the gradient is grad on the diagonal."""

    node_name = "TraceBackward0"
    saved_attrs = ("self_sym_sizes",)

    @staticmethod
    def backward(ctx, grad):
        n, m = ctx.self_sym_sizes
        return namespace_of(grad).eye(n, m, dtype=grad.dtype) * grad

    @staticmethod
    def jvp(ctx, tangent):
        n, m = ctx.self_sym_sizes
        return (namespace_of(tangent).eye(n, m, dtype=tangent.dtype) * tangent).sum()


def trace(input: Tensor) -> Tensor:  # noqa: A002
    """The sum of a matrix's diagonal."""
    d = _check(input, "trace", "input")
    if d.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {d.ndim}")
    out = np.trace(d)
    if d.dtype.kind in "biu":
        out = np.asarray(out, np.int64)
    return dispatch(Trace, np.asarray(out, dtype=out.dtype if d.dtype.kind in "biu"
                                      else d.dtype), (input,))


trace = declare("trace", Trace, function=trace)


# ----------------------------------------------------------------------------------- add-products
def _scaled(g, s):
    return g if s == 1 else g * s


def _blend(self_d, prod, beta, alpha):
    """beta * self + alpha * prod, self ignored when beta is 0 (as torch: no nan from it)."""
    out = prod if alpha == 1 else prod * alpha
    if beta == 0:
        return np.broadcast_to(np.zeros((), out.dtype), out.shape) + out
    return out + (self_d if beta == 1 else self_d * beta)


def _add_product_check(name: str, *arrays) -> None:
    dt = arrays[0].dtype
    for a in arrays[1:]:
        if a.dtype != dt:
            raise RuntimeError(f"{name}: expected all inputs to have the same dtype, but got "
                               f"{_short(arrays[0])} and {_short(a)}")


class Addmv(Overload):
    """beta·self + alpha·(mat @ vec)."""

    node_name = "AddmvBackward0"
    args = ("self", "mat", "vec", "beta", "alpha")
    saved_fields = ("mat", "vec")
    saved_attrs = ("alpha", "beta")
    saved_for = {"mat": "vec", "vec": "mat"}
    tensor_positions = (0, 1, 2)
    jvp_zeros = True
    keywords = ("beta", "alpha")

    @staticmethod
    def backward(ctx, grad):
        mat, vec = ctx.saved_tensors
        n = ctx.needs_input_grad
        return (_scaled(grad, ctx.beta) if n[0] else None,
                _scaled(grad.unsqueeze(-1) * vec, ctx.alpha) if n[1] else None,
                _scaled(mat.t().mv(grad), ctx.alpha) if n[2] else None, None, None)

    @staticmethod
    def jvp(ctx, ts, tm, tv, _b, _a):
        mat, vec = ctx.saved_tensors
        return _scaled(ts, ctx.beta) + _scaled(tm.mv(vec) + mat.mv(tv), ctx.alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:  # noqa: A002
    """beta·input + alpha·(mat @ vec)."""
    s = _check(input, "addmv", "input")
    m = _check(mat, "addmv", "mat", 2)
    v = _check(vec, "addmv", "vec", 3)
    if m.ndim != 2 or v.ndim != 1 or s.ndim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {s.ndim}, {m.ndim}, {v.ndim}")
    if m.shape[1] != v.shape[0] or np.broadcast_shapes(s.shape, (m.shape[0],)) != (m.shape[0],):
        raise RuntimeError(f"size mismatch, got input ({s.shape[0] if s.ndim else 1}), mat "
                           f"({m.shape[0]}x{m.shape[1]}), vec ({v.shape[0]})")
    _add_product_check("addmv", s, m, v)
    out = _blend(s, m @ v, beta, alpha).astype(s.dtype, copy=False)
    return dispatch(Addmv, np.ascontiguousarray(out), (input, mat, vec, beta, alpha))


addmv = declare("addmv", Addmv, function=addmv, inplace="addmv_")


class Addr(Overload):
    """beta·self + alpha·outer(vec1, vec2)."""

    node_name = "AddrBackward0"
    args = ("self", "vec1", "vec2", "beta", "alpha")
    saved_fields = ("vec1", "vec2")
    saved_attrs = ("alpha", "beta")
    saved_for = {"vec1": "vec2", "vec2": "vec1"}
    tensor_positions = (0, 1, 2)
    jvp_zeros = True
    keywords = ("beta", "alpha")

    @staticmethod
    def backward(ctx, grad):
        v1, v2 = ctx.saved_tensors
        n = ctx.needs_input_grad
        return (_scaled(grad, ctx.beta) if n[0] else None,
                _scaled(grad.mv(v2), ctx.alpha) if n[1] else None,
                _scaled(grad.t().mv(v1), ctx.alpha) if n[2] else None, None, None)

    @staticmethod
    def jvp(ctx, ts, t1, t2, _b, _a):
        v1, v2 = ctx.saved_tensors
        return _scaled(ts, ctx.beta) + _scaled(t1.unsqueeze(-1) * v2 + v1.unsqueeze(-1) * t2,
                                               ctx.alpha)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:  # noqa: A002
    """beta·input + alpha·outer(vec1, vec2)."""
    s = _check(input, "addr", "input")
    a = _check(vec1, "addr", "vec1", 2)
    b = _check(vec2, "addr", "vec2", 3)
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {a.ndim}-D")
    _add_product_check("addr", s, a, b)
    prod = np.multiply.outer(a, b)
    if s.dtype == np.bool_:
        out = (s & bool(beta)) | (prod & bool(alpha))
    else:
        try:
            np.broadcast_shapes(s.shape, prod.shape)
        except ValueError:
            raise RuntimeError(f"The expanded size of the tensor ({prod.shape[-1]}) must match "
                               f"the existing size ({s.shape[-1]}) at non-singleton dimension "
                               "1") from None
        out = _blend(s, prod, beta, alpha).astype(s.dtype, copy=False)
    return dispatch(Addr, np.ascontiguousarray(out), (input, vec1, vec2, beta, alpha))


addr = declare("addr", Addr, function=addr, inplace="addr_")


class Addbmm(Overload):
    """beta·self + alpha·Σ_b batch1[b] @ batch2[b]."""

    node_name = "AddbmmBackward0"
    args = ("self", "batch1", "batch2", "beta", "alpha")
    saved_fields = ("batch1", "batch2")
    saved_attrs = ("alpha", "batch1_sym_argsize_0", "batch1_sym_argsize_1",
                   "batch2_sym_argsize_2", "beta")
    saved_for = {"batch1": "batch2", "batch2": "batch1"}
    tensor_positions = (0, 1, 2)
    jvp_zeros = True
    autocast = "lower_precision_fp"  # (torch casts its inputs under CPU autocast)
    keywords = ("beta", "alpha")

    @staticmethod
    def backward(ctx, grad):
        b1, b2 = ctx.saved_tensors
        n = ctx.needs_input_grad
        g = grad.unsqueeze(0).expand(ctx.batch1_sym_argsize_0, ctx.batch1_sym_argsize_1,
                                     ctx.batch2_sym_argsize_2)
        return (_scaled(grad, ctx.beta) if n[0] else None,
                _scaled(g.bmm(b2.transpose(1, 2)), ctx.alpha) if n[1] else None,
                _scaled(b1.transpose(1, 2).bmm(g), ctx.alpha) if n[2] else None, None, None)

    @staticmethod
    def jvp(ctx, ts, t1, t2, _b, _a):
        b1, b2 = ctx.saved_tensors
        return _scaled(ts, ctx.beta) + _scaled((t1.bmm(b2) + b1.bmm(t2)).sum(0), ctx.alpha)


def _bmm_check(name: str, a: np.ndarray, b: np.ndarray) -> None:
    if a.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got "
                           f"{a.shape[0]} and {b.shape[0]}")
    if a.shape[2] != b.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({a.shape[1]}x{a.shape[2]} and "
                           f"{b.shape[1]}x{b.shape[2]})")


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1,  # noqa: A002
           out=None) -> Tensor:
    """beta·input + alpha·(the sum over the batch of batch1 @ batch2)."""
    s = _check(input, "addbmm", "input")
    a = _check(batch1, "addbmm", "batch1", 2)
    b = _check(batch2, "addbmm", "batch2", 3)
    _bmm_check("addbmm", a, b)
    _add_product_check("addbmm", s, a, b)
    prod = np.matmul(a, b).sum(0) if a.shape[0] else np.zeros((a.shape[1], b.shape[2]), s.dtype)
    out = _blend(s, prod, beta, alpha).astype(s.dtype, copy=False)
    return dispatch(Addbmm, np.ascontiguousarray(out), (input, batch1, batch2, beta, alpha))


def _addbmm_(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """Tensor.addbmm_: as torch's, a self of another shape than the result (one it broadcasts
    from) is resized to the result's shape, when nothing records its history."""
    from .inplace import apply_inplace, bump_version

    a = _check(batch1, "addbmm_", "batch1", 1)
    b = _check(batch2, "addbmm_", "batch2", 2)
    shape = (a.shape[1], b.shape[2]) if a.ndim == 3 and b.ndim == 3 else None
    if shape is not None and type(self) is Tensor and self._data.shape != shape and \
            not self._requires_grad and not (batch1._requires_grad or batch2._requires_grad):
        self._data = addbmm(self, batch1, batch2, beta=beta, alpha=alpha)._data
        bump_version(self)
        return self
    return apply_inplace(self, addbmm, batch1, batch2, beta=beta, alpha=alpha)


addbmm = declare("addbmm", Addbmm, function=addbmm, inplace=(("addbmm_", _addbmm_),))


class Baddbmm(Overload):
    """beta·self + alpha·(batch1 @ batch2), batch by batch."""

    node_name = "BaddbmmBackward0"
    args = ("self", "batch1", "batch2", "beta", "alpha")
    saved_fields = ("batch1", "batch2")
    saved_attrs = ("alpha", "beta")
    saved_for = {"batch1": "batch2", "batch2": "batch1"}
    tensor_positions = (0, 1, 2)
    jvp_zeros = True
    autocast = "lower_precision_fp"  # (torch casts its inputs under CPU autocast)
    keywords = ("beta", "alpha")

    @staticmethod
    def backward(ctx, grad):
        b1, b2 = ctx.saved_tensors
        n = ctx.needs_input_grad
        return (_scaled(grad, ctx.beta) if n[0] else None,
                _scaled(grad.bmm(b2.transpose(1, 2)), ctx.alpha) if n[1] else None,
                _scaled(b1.transpose(1, 2).bmm(grad), ctx.alpha) if n[2] else None, None, None)

    @staticmethod
    def jvp(ctx, ts, t1, t2, _b, _a):
        b1, b2 = ctx.saved_tensors
        return _scaled(ts, ctx.beta) + _scaled(t1.bmm(b2) + b1.bmm(t2), ctx.alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1,  # noqa: A002
            out=None) -> Tensor:
    """beta·input + alpha·(batch1 @ batch2), batch by batch."""
    s = _check(input, "baddbmm", "input")
    a = _check(batch1, "baddbmm", "batch1", 2)
    b = _check(batch2, "baddbmm", "batch2", 3)
    _bmm_check("baddbmm", a, b)
    _add_product_check("baddbmm", s, a, b)
    out = _blend(s, np.matmul(a, b), beta, alpha).astype(s.dtype, copy=False)
    return dispatch(Baddbmm, np.ascontiguousarray(out), (input, batch1, batch2, beta, alpha))


baddbmm = declare("baddbmm", Baddbmm, function=baddbmm, inplace="baddbmm_")


# ----------------------------------------------------------------------------- vector products
class Vdot(Overload):
    """u · v (the first conjugated, a no-op for real): du = grad v, dv = grad u."""

    node_name = "VdotBackward0"
    args = ("self", "other")
    saved_fields = ("self", "other")
    saved_for = {"self": "other", "other": "self"}

    @staticmethod
    def backward(ctx, grad):
        u, v = ctx.saved_tensors
        return (grad * v if ctx.needs_input_grad[0] else None,
                grad * u if ctx.needs_input_grad[1] else None)

    @staticmethod
    def jvp(ctx, tu, tv):
        u, v = ctx.saved_tensors
        if tu is None:
            return u.vdot(tv)
        return tu.vdot(v) if tv is None else tu.vdot(v) + u.vdot(tv)


def vdot(input: Tensor, other: Tensor, *, out=None) -> Tensor:  # noqa: A002
    """The inner product of two 1-D tensors."""
    u = _check(input, "vdot", "input")
    v = _check(other, "vdot", "other", 2)
    if u.ndim != 1 or v.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {u.ndim}D and {v.ndim}D tensors")
    if u.dtype != v.dtype:
        raise RuntimeError(f"vdot : expected both vectors to have same dtype, but found "
                           f"{_short(u)} and {_short(v)}")
    if u.shape[0] != v.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{u.shape[0]}] and src "
                           f"[{v.shape[0]}] to have the same number of elements, but got "
                           f"{u.shape[0]} and {v.shape[0]} elements respectively")
    return dispatch(Vdot, np.asarray(np.dot(u, v), u.dtype), (input, other))


vdot = declare("vdot", Vdot, function=vdot)


def outer(input: Tensor, vec2: Tensor) -> Tensor:  # noqa: A002
    """The outer product of two 1-D tensors."""
    a = _check(input, "outer", "input")
    _check(vec2, "outer", "vec2", 2)
    if a.ndim != 1 or vec2._data.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {a.ndim}-D")
    return input.reshape(a.shape[0], 1) * vec2


outer = declare("outer", function=outer, methods=("outer", "ger"), functions=("outer", "ger"))


def tensordot(a: Tensor, b: Tensor, dims=2, out=None) -> Tensor:
    """The contraction of a's dims ``dims[0]`` with b's ``dims[1]`` (an int n: a's last n with
    b's first n), as a permute, reshape, mm and reshape."""
    x = _check(a, "tensordot", "a")
    y = _check(b, "tensordot", "b", 2)
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        d1, d2 = list(range(x.ndim - dims, x.ndim)), list(range(dims))
    else:
        d1, d2 = dims
        d1 = [d1] if isinstance(d1, int) else list(d1)
        d2 = [d2] if isinstance(d2, int) else list(d2)
    if len(d1) != len(d2):
        raise RuntimeError("both dimension lists should have same length")
    d1 = [_wrap_dim(d, x.ndim) for d in d1]
    d2 = [_wrap_dim(d, y.ndim) for d in d2]
    csize = 1
    for i, j in zip(d1, d2):
        # (a contracted dim of size 1 broadcasts: summed away at once, as torch does)
        if y.shape[j] == 1:
            a = a.sum(i, True)
        elif x.shape[i] == 1:
            b = b.sum(j, True)
        elif x.shape[i] != y.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{x.shape[i]} in dim {i} and second has size {y.shape[j]} in "
                               f"dim {j}")
        else:
            csize *= x.shape[i]
    free1 = [i for i in range(x.ndim) if i not in d1]
    free2 = [j for j in range(y.ndim) if j not in d2]
    size1 = int(np.prod([x.shape[i] for i in free1], dtype=np.int64))
    size2 = int(np.prod([y.shape[j] for j in free2], dtype=np.int64))
    t1 = a.permute(free1 + d1).reshape(size1, csize)
    t2 = b.permute(d2 + free2).reshape(csize, size2)
    return t1.mm(t2).reshape([x.shape[i] for i in free1] + [y.shape[j] for j in free2])


tensordot = declare("tensordot", function=tensordot, methods=())


def inner(input: Tensor, other: Tensor, *, out=None) -> Tensor:  # noqa: A002
    """The sum of products over the last dims (a product when either is a number tensor)."""
    a = _check(input, "inner", "input")
    b = _check(other, "inner", "other", 2)
    if a.ndim == 0 or b.ndim == 0:
        return input * other
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(a.shape)} and {list(b.shape)}")
    return tensordot(input, other, ([-1], [-1]))


inner = declare("inner", function=inner)


def kron(input: Tensor, other: Tensor, *, out=None) -> Tensor:  # noqa: A002
    """The Kronecker product, as a broadcast product of interleaved views."""
    a = _check(input, "kron", "input")
    b = _check(other, "kron", "other", 2)
    n = max(a.ndim, b.ndim)
    sa = (1,) * (n - a.ndim) + a.shape
    sb = (1,) * (n - b.ndim) + b.shape
    ra = [s for i in range(n) for s in (sa[i], 1)]
    rb = [s for i in range(n) for s in (1, sb[i])]
    from .shape import unsafe_view

    prod = unsafe_view(input.contiguous(), tuple(ra)) * unsafe_view(other.contiguous(), tuple(rb))
    return unsafe_view(prod, tuple(sa[i] * sb[i] for i in range(n)))


kron = declare("kron", function=kron)


def dist(input: Tensor, other: Tensor, p=2) -> Tensor:  # noqa: A002
    """The p-norm of input - other."""
    a = _check(input, "dist", "input")
    b = _check(other, "dist", "other", 2)
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {_short(a)} but found {_short(b)}")
    _floating(a, "dist")
    diff = np.subtract(*np.broadcast_arrays(a, b))
    return dispatch(Dist, _vector_norm_np(diff, float(p), None, False), (input, other, p))


class Dist(Overload):
    """‖a - b‖_p: the gradient is that of the norm, with opposite signs for a and b."""

    node_name = "DistBackward0"
    args = ("self", "other", "p")
    saved_fields = ("self", "other", "result")
    saved_attrs = ("p",)
    tensor_positions = (0, 1)

    @staticmethod
    def backward(ctx, grad):
        a, b, result = ctx.saved_tensors
        g = _norm_backward(grad, a - b, float(ctx.p), result, None, False)
        return (g if ctx.needs_input_grad[0] else None,
                -g if ctx.needs_input_grad[1] else None, None)

    @staticmethod
    def jvp(ctx, ta, tb, _p):
        a, b, result = ctx.saved_tensors
        t = ta if tb is None else -tb if ta is None else ta - tb
        g = _norm_backward(result.new_ones(()), a - b, float(ctx.p), result, None, False)
        return (g * t).sum()


dist = declare("dist", Dist, function=dist)


class Renorm(Overload):
    """Each slice along dim scaled down to p-norm maxnorm where above it."""

    node_name = "RenormBackward0"
    args = ("self", "p", "dim", "maxnorm")
    saved_fields = ("self",)
    saved_attrs = ("dim", "maxnorm", "p")
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return _renorm_backward(grad, x, float(ctx.p), ctx.dim, ctx.maxnorm), None, None, None

    @staticmethod
    def jvp(ctx, tangent, *_):
        (x,) = ctx.saved_tensors
        dims = tuple(i for i in range(x.dim()) if i != ctx.dim)
        p, maxnorm = float(ctx.p), ctx.maxnorm
        ns = namespace_of(x)
        norm = ns.linalg.vector_norm(x, p, dims, True)
        inv = 1 / (norm + 1e-7)
        factor = inv * maxnorm
        nb = _norm_backward(norm.new_ones(norm.shape), x, p, norm, dims, True)
        dnorm = (nb * tangent).sum(dims, keepdim=True)
        return ns.where(norm > maxnorm, factor * tangent - factor * inv * dnorm * x, tangent)


def _renorm_backward(grad, x, p, dim, maxnorm):
    dims = tuple(i for i in range(x.dim()) if i != dim)
    ns = namespace_of(grad)
    norm = ns.linalg.vector_norm(x, p, dims, True)
    go = (x * grad).sum(dims, keepdim=True)
    nb = _norm_backward(go, x, p, norm, dims, True)
    inv = 1 / (norm + 1e-7)
    factor = inv * maxnorm
    return ns.where(norm > maxnorm, factor * grad - (factor * inv) * nb, grad)


def renorm(input: Tensor, p, dim: int, maxnorm) -> Tensor:  # noqa: A002
    """input with each slice along dim whose p-norm exceeds maxnorm scaled to maxnorm."""
    d = _check(input, "renorm", "input")
    if float(p) <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if float(maxnorm) < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if d.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {d.ndim} dimensions")
    _floating(d, "renorm")
    pos = _wrap_dim(dim, d.ndim)
    axes = tuple(i for i in range(d.ndim) if i != pos)
    norm = _vector_norm_np(d, float(p), axes, True)
    with np.errstate(all="ignore"):
        factor = np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0).astype(d.dtype)
    return dispatch(Renorm, d * factor, (input, p, pos, maxnorm))


renorm = declare("renorm", Renorm, function=renorm, inplace="renorm_")


# --------------------------------------------------------------------------------- compositions
def linalg_multi_dot(tensors, *, out=None) -> Tensor:
    """The product of a chain of matrices, in the cheapest order (the ends may be vectors)."""
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first, last = tensors[0].dim(), tensors[-1].dim()
    for i, t in enumerate(tensors):
        want = (1, 2) if i in (0, n - 1) else (2,)
        if t.dim() not in want:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    if first == 1:
        tensors[0] = tensors[0].unsqueeze(0)
    if last == 1:
        tensors[-1] = tensors[-1].unsqueeze(-1)
    for i in range(n - 1):
        if tensors[i].shape[1] != tensors[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{tuple(tensors[i].shape)} and {tuple(tensors[i + 1].shape)} "
                               "cannot be multiplied")
    if n == 2:
        result = tensors[0].mm(tensors[1])
    elif n == 3:
        a, b = tensors[0].shape[0], tensors[1].shape[0]
        c, d = tensors[2].shape[0], tensors[2].shape[1]
        if (a * c) * (b + d) > (b * d) * (a + c):
            result = tensors[0].mm(tensors[1].mm(tensors[2]))
        else:
            result = tensors[0].mm(tensors[1]).mm(tensors[2])
    else:
        result = _chain(tensors)
    rows, cols = result.shape
    return result.view(((rows,) if first == 2 else ()) + ((cols,) if last == 2 else ()))


def _chain(ts: list):
    """The matrix-chain product in the order of least multiplications."""
    n = len(ts)
    p = [ts[0].shape[0]] + [t.shape[1] for t in ts]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def product(i: int, j: int):
        if i == j:
            return ts[i]
        k = split[i][j]
        return product(i, k).mm(product(k + 1, j))

    return product(0, n - 1)


linalg_multi_dot = declare("linalg_multi_dot", function=linalg_multi_dot, methods=(),
                           functions=())
LINALG.update(multi_dot=linalg_multi_dot)


def linalg_vecdot(x: Tensor, y: Tensor, *, dim: int = -1, out=None) -> Tensor:
    """The dot product of vectors along ``dim``, broadcasting the others."""
    a = _check(x, "linalg_vecdot", "x")
    b = _check(y, "linalg_vecdot", "y", 2)
    if a.dtype != b.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found "
                           f"x of type {_short(a)} and y of type {_short(b)} instead")
    if a.ndim == 1 and b.ndim == 1:
        return vdot(x, y)
    return (x * y).sum(dim)


linalg_vecdot = declare("linalg_vecdot", function=linalg_vecdot, methods=(), functions=())
LINALG.update(vecdot=linalg_vecdot)


def linalg_vander(x: Tensor, *, N=None) -> Tensor:
    """The Vandermonde matrix of x: columns x⁰, x¹, ..., x^(N-1)."""
    d = _check(x, "linalg_vander", "x")
    if d.dtype.kind == "b":
        raise RuntimeError("linalg.vander supports floating point, complex, and integer "
                           "tensors, but got Bool")
    x_ = x.unsqueeze(-1) if d.ndim == 0 else x
    shape = list(x_.shape)
    n = shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    result = x_.unsqueeze(-1).expand(*shape, n - 1).cumprod(-1)
    ones = result.new_ones(shape + [1])
    return namespace_of(x).cat([ones, result], -1)


linalg_vander = declare("linalg_vander", function=linalg_vander, methods=(), functions=())
LINALG.update(vander=linalg_vander)


def linalg_tensorinv(A: Tensor, ind: int = 2, *, out=None) -> Tensor:
    """The inverse of A as a linear map from its first ``ind`` dims to the rest."""
    d = _check(A, "linalg_tensorinv", "input")
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    end, start = d.shape[ind:], d.shape[:ind]
    n = int(np.prod(end, dtype=np.int64))
    if int(np.prod(start, dtype=np.int64)) != n:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {n} != "
                           f"{int(np.prod(start, dtype=np.int64))}")
    inv, info = linalg_inv_ex(A.reshape(n, n))
    if info.any():
        raise _linalg_error("linalg.inv: The diagonal element is zero, the inversion could "
                            "not be completed because the input matrix is singular.")
    return inv.mT.contiguous().mT.reshape(tuple(end) + tuple(start))


linalg_tensorinv = declare("linalg_tensorinv", function=linalg_tensorinv, methods=(),
                           functions=())
LINALG.update(tensorinv=linalg_tensorinv)


def linalg_tensorsolve(A: Tensor, B: Tensor, dims=None, *, out=None) -> Tensor:
    """X with tensordot(A, X, X.ndim) = B."""
    a = _check(A, "linalg_tensorsolve", "A")
    b = _check(B, "linalg_tensorsolve", "B", 2)
    if dims is not None:
        dims = [_wrap_dim(i, a.ndim) for i in dims]
        rest = [i for i in range(a.ndim) if i not in dims]
        A = A.permute(rest + dims)
        a = A._data
    shape = a.shape[b.ndim:]
    n = int(np.prod(shape, dtype=np.int64))
    m = int(np.prod(b.shape, dtype=np.int64))
    if n != m:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:"
                           "]) == prod(self.shape[:other.ndim]), but got "
                           f"{n} != {m}")
    return linalg_solve(A.reshape(n, n), B.flatten()).reshape(shape)


linalg_tensorsolve = declare("linalg_tensorsolve", function=linalg_tensorsolve, methods=(),
                             functions=())
LINALG.update(tensorsolve=linalg_tensorsolve)


# ------------------------------------------------------------------------- triangular systems
def _triangle_mask(like, upper: bool, k: int):
    """A bool mask of the upper (k-th diagonal and above) or lower (k-th and below) triangle of
    a matrix shaped as ``like``'s last two dims, on ``like``'s engine."""
    ns = namespace_of(like)
    rows = ns.arange(like.shape[-2]).unsqueeze(-1)
    cols = ns.arange(like.shape[-1])
    return cols - rows >= k if upper else cols - rows <= k


def _keep_triangle(g, upper: bool, unitriangular: bool):
    k = (1 if upper else -1) if unitriangular else 0
    return namespace_of(g).where(_triangle_mask(g, upper, k), g, 0.0)


def _tri_np(a: np.ndarray, upper: bool, unitriangular: bool) -> np.ndarray:
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        t = t.copy()
        idx = np.arange(a.shape[-1])
        t[..., idx, idx] = 1
    return t


def _solve_np(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a⁻¹ b for (batches of) matrices, batch dims broadcast; inf/nan for a singular a."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    if a.size == 0 or b.size == 0:
        return np.zeros(batch + (a.shape[-1], b.shape[-1]), np.result_type(a, b))
    with np.errstate(all="ignore"):
        try:
            return np.linalg.solve(a, b)
        except np.linalg.LinAlgError:
            return _inv_kernel(np.ascontiguousarray(a))[0] @ b


def _tri_solve_np(a: np.ndarray, b: np.ndarray, upper: bool, transpose: bool,
                  unitriangular: bool) -> np.ndarray:
    """op(T)⁻¹ b for the triangle T of a (op: a transpose or not), by substitution as LAPACK's
    trsm (a general solve where a diagonal element is zero)."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    if a.size and b.size:
        from scipy.linalg import solve_triangular

        try:
            with np.errstate(all="ignore"):
                return solve_triangular(a, b, trans=1 if transpose else 0, lower=not upper,
                                        unit_diagonal=unitriangular, check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            pass
    t = _tri_np(a, upper, unitriangular)
    return _solve_np(np.swapaxes(t, -1, -2) if transpose else t, b)


class LinalgSolveTriangular(Overload):
    """X with A X = B (X A = B) for triangular A: dB = A⁻ᵀ grad, dA = -dB Xᵀ on A's
    triangle."""

    node_name = "LinalgSolveTriangularBackward0"
    args = ("self", "B", "upper", "left", "unitriangular")
    saved_fields = ("self", "result")
    saved_attrs = ("left", "unitriangular", "upper")
    tensor_positions = (0, 1)
    keywords = ("upper", "left", "unitriangular")

    @staticmethod
    def backward(ctx, grad):
        A, X = ctx.saved_tensors
        upper, left, unit = ctx.upper, ctx.left, ctx.unitriangular
        gB = namespace_of(grad).linalg.solve_triangular(A.mT, grad, upper=not upper, left=left,
                                                        unitriangular=unit)
        gA = None
        if ctx.needs_input_grad[0]:
            gA = _keep_triangle(-gB.matmul(X.mT) if left else -X.mT.matmul(gB), upper, unit)
        return gA, gB if ctx.needs_input_grad[1] else None, None, None, None

    @staticmethod
    def jvp(ctx, tA, tB, *_):
        A, X = ctx.saved_tensors
        upper, left, unit = ctx.upper, ctx.left, ctx.unitriangular
        rhs = tB
        if tA is not None:
            tA = _keep_triangle(tA, upper, unit)
            term = -(tA.matmul(X) if left else X.matmul(tA))
            rhs = term if rhs is None else rhs + term
        return namespace_of(A).linalg.solve_triangular(A, rhs, upper=upper, left=left,
                                                       unitriangular=unit)


def linalg_solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                            unitriangular: bool = False, out=None) -> Tensor:
    """X with A X = B (left) or X A = B, A read as triangular."""
    a = _check(A, "linalg_solve_triangular", "input")
    b = _check(B, "linalg_solve_triangular", "B", 2)
    if a.ndim < 2 or b.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor "
                           f"{'A' if a.ndim < 2 else 'B'} must have at least 2 dimensions.")
    _square(a, "linalg.solve_triangular")
    if a.dtype != b.dtype:
        raise RuntimeError(f"linalg.solve_triangular: Expected A and B to have the same dtype, "
                           f"but found A of type {_short(a)} and B of type {_short(b)} instead")
    if a.shape[-1] != b.shape[-2 if left else -1]:
        raise RuntimeError("linalg.solve_triangular: Incompatible shapes of A and B for the "
                           f"equation {'AX = B' if left else 'XA = B'} "
                           f"({a.shape[-2]}x{a.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})")
    if left:
        x = _tri_solve_np(a, b, upper, False, unitriangular)
    else:
        x = np.swapaxes(_tri_solve_np(a, np.swapaxes(b, -1, -2), upper, True, unitriangular),
                        -1, -2)
    x = np.ascontiguousarray(x, dtype=a.dtype)
    return dispatch(LinalgSolveTriangular, x, (A, B, upper, left, unitriangular))


linalg_solve_triangular = declare("linalg_solve_triangular", LinalgSolveTriangular,
                                  function=linalg_solve_triangular, methods=(), functions=())
LINALG.update(solve_triangular=linalg_solve_triangular)


_TriangularSolve = namedtuple("triangular_solve", ('solution', 'cloned_coefficient'))


class TriangularSolve(Overload):
    """(X, A) with op(A) X = b, A triangular, op a transpose or not."""

    node_name = "TriangularSolveBackward0"
    args = ("self", "A", "upper", "transpose", "unitriangular")
    outputs = ("solution", "cloned_coefficient")
    returns = _TriangularSolve
    saved_fields = ("A", "self", "solution")
    saved_attrs = ("transpose", "unitriangular", "upper")
    tensor_positions = (0, 1)

    @staticmethod
    def backward(ctx, gx, gm):
        A, _b, X = ctx.saved_tensors
        upper, tr, unit = ctx.upper, ctx.transpose, ctx.unitriangular
        gb = ga = None
        if gx is not None:
            gb = gx.triangular_solve(A, upper, not tr, unit)[0]
            if ctx.needs_input_grad[1]:
                ga = _keep_triangle(-X.matmul(gb.mT) if tr else -gb.matmul(X.mT), upper, unit)
        if gm is not None and ctx.needs_input_grad[1]:
            ga = gm if ga is None else ga + gm
        return gb if ctx.needs_input_grad[0] else None, ga, None, None, None

    @staticmethod
    def jvp(ctx, tb, tA, *_):
        A, _b, X = ctx.saved_tensors
        upper, tr, unit = ctx.upper, ctx.transpose, ctx.unitriangular
        rhs = tb
        if tA is not None:
            # (as torch's rule: the whole tangent of A, untransposed, as a general solve's)
            term = -tA.matmul(X)
            rhs = term if rhs is None else rhs + term
        sol = rhs.triangular_solve(A, upper, tr, unit)[0]
        return sol, tA if tA is not None else A * 0


def triangular_solve(input: Tensor, A: Tensor, upper: bool = True,  # noqa: A002
                     transpose: bool = False, unitriangular: bool = False, *, out=None):
    """(X, a copy of A) with op(A) X = input, A read as triangular (op: Aᵀ for transpose)."""
    b = _check(input, "triangular_solve", "input")
    a = _check(A, "triangular_solve", "A", 2)
    if a.ndim < 2 or b.ndim < 2:
        raise RuntimeError(f"torch.triangular_solve: The input tensor "
                           f"{'A' if a.ndim < 2 else 'b'} must have at least 2 dimensions.")
    _square(a, "triangular_solve")
    if a.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"triangular_solve: Incompatible matrix sizes for A and b: A "
                           f"({a.shape[-2]}x{a.shape[-1]}) and b ({b.shape[-2]}x{b.shape[-1]})")
    warn_once("torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangular"
              "and will be removed in a future PyTorch release.\ntorch.linalg.solve_triangular "
              "has its arguments reversed and does not return a copy of one of the inputs.\nX = "
              "torch.triangular_solve(B, A).solution\nshould be replaced with\nX = "
              "torch.linalg.solve_triangular(A, B).")
    x = np.ascontiguousarray(_tri_solve_np(a, b, upper, transpose, unitriangular),
                             dtype=a.dtype)
    batch = x.shape[:-2]
    m = np.ascontiguousarray(np.broadcast_to(a, batch + a.shape[-2:]))
    return dispatch(TriangularSolve, (x, m), (input, A, upper, transpose, unitriangular))


triangular_solve = declare("triangular_solve", TriangularSolve, function=triangular_solve)


# ------------------------------------------------------------------------- Cholesky factors
def _gram_np(f: np.ndarray, upper: bool) -> np.ndarray:
    """L Lᵀ (Uᵀ U) from the triangle of a Cholesky factor."""
    t = np.triu(f) if upper else np.tril(f)
    return np.swapaxes(t, -1, -2) @ t if upper else t @ np.swapaxes(t, -1, -2)


def _gram_tangent(F, tF, upper: bool):
    term = tF.mT.matmul(F) if upper else tF.matmul(F.mT)
    return term + term.mT


class CholeskySolve(Overload):
    """X = (L Lᵀ)⁻¹ B from a Cholesky factor L (or U)."""

    node_name = "CholeskySolveBackward0"
    args = ("self", "input2", "upper")
    saved_fields = ("input2", "result", "self")
    saved_attrs = ("upper",)
    tensor_positions = (0, 1)

    @staticmethod
    def backward(ctx, grad):
        F, X, _b = ctx.saved_tensors
        upper = ctx.upper
        gb = grad.cholesky_solve(F, upper)
        gF = None
        if ctx.needs_input_grad[1]:
            common = gb.matmul(X.mT)
            common = common + common.mT
            gF = -F.matmul(common) if upper else -common.matmul(F)
        return gb if ctx.needs_input_grad[0] else None, gF, None

    @staticmethod
    def jvp(ctx, tb, tF, _upper):
        F, X, _b = ctx.saved_tensors
        rhs = tb
        if tF is not None:
            term = -_gram_tangent(F, tF, ctx.upper).matmul(X)
            rhs = term if rhs is None else rhs + term
        return rhs.cholesky_solve(F, ctx.upper)


def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False, *,  # noqa: A002
                   out=None) -> Tensor:
    """X with (L Lᵀ) X = input, L = input2 a Cholesky factor (Uᵀ U for upper)."""
    b = _check(input, "cholesky_solve", "input")
    f = _check(input2, "cholesky_solve", "input2", 2)
    if b.ndim < 2 or f.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {b.ndim} dimensions "
                           "instead" if b.ndim < 2 else
                           f"u should have at least 2 dimensions, but has {f.ndim} dimensions "
                           "instead")
    if b.dtype != f.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_short(b)} and A of type {_short(f)} instead.")
    _square(f, "cholesky_solve", "A")
    if f.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{f.shape[-1]} by {f.shape[-1]} but each b matrix is "
                           f"{b.shape[-2]} by {b.shape[-1]}")
    x = np.ascontiguousarray(_solve_np(_gram_np(f, upper), b), dtype=b.dtype)
    return dispatch(CholeskySolve, x, (input, input2, upper))


cholesky_solve = declare("cholesky_solve", CholeskySolve, function=cholesky_solve)


class CholeskyInverse(Overload):
    """(L Lᵀ)⁻¹ from a Cholesky factor L (or U)."""

    node_name = "CholeskyInverseBackward0"
    args = ("self", "upper")
    saved_fields = ("self", "result")
    saved_attrs = ("upper",)
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad):
        F, inv = ctx.saved_tensors
        common = inv.matmul((grad + grad.mT).matmul(inv))
        return (-F.matmul(common) if ctx.upper else -common.matmul(F)), None

    @staticmethod
    def jvp(ctx, tangent, _upper):
        F, X = ctx.saved_tensors
        # (torch's rule, written as it writes it: -X dF X Fᵀ for a lower factor, symmetrized)
        cf, dcf = (F, tangent.mT) if ctx.upper else (F.mT, tangent)
        part = -X.matmul(dcf).matmul(X).matmul(cf)
        return part + part.mT


def cholesky_inverse(input: Tensor, upper: bool = False, *, out=None) -> Tensor:  # noqa: A002
    """(L Lᵀ)⁻¹ (or (Uᵀ U)⁻¹) from a Cholesky factor."""
    f = _check(input, "cholesky_inverse", "input")
    if f.ndim < 2:
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 "
                           "dimensions.")
    _square(f, "cholesky_inverse")
    t = np.triu(f) if upper else np.tril(f)
    if f.size:
        # (the inverse factor's Gram matrix, symmetrized: exactly symmetric, as LAPACK's)
        inv = _inv_kernel(t)[0]
        out = inv @ np.swapaxes(inv, -1, -2) if upper else np.swapaxes(inv, -1, -2) @ inv
        out = (out + np.swapaxes(out, -1, -2)) / 2
    else:
        out = t.copy()
    return dispatch(CholeskyInverse, np.ascontiguousarray(out, dtype=f.dtype), (input, upper))


cholesky_inverse = declare("cholesky_inverse", CholeskyInverse, function=cholesky_inverse)


# --------------------------------------------------------------------------------------- einsum
def _parse_einsum(equation: str, operands: list) -> tuple:
    """The labels of each operand (an ellipsis as one label per broadcast dim, numbered from the
    right: ``'.0'`` is the last) and of the output."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError("einsum(): more operands were provided than specified in the equation"
                         if len(operands) > len(terms) else
                         "einsum(): fewer operands were provided than specified in the equation")
    labels, ell = [], 0
    for term, op in zip(terms, operands):
        if "..." in term:
            head, _, tail = term.partition("...")
            n = op.dim() - len(head) - len(tail)
            ell = max(ell, n)
            labels.append(list(head) + [f".{i}" for i in range(n - 1, -1, -1)] + list(tail))
        else:
            if len(term) != op.dim():
                raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                                   f"({len(term)}) does not match the number of dimensions "
                                   f"({op.dim()}) for operand {len(labels)}"
                                   + ("" if len(term) > op.dim() else
                                      " and no ellipsis was given"))
            labels.append(list(term))
    dots = [f".{i}" for i in range(ell - 1, -1, -1)]
    # (an operand with an ellipsis covers all of its dims: the ones it lacks are of size one)
    for i, term in enumerate(terms):
        if "..." in term:
            head = term.partition("...")[0]
            have = [lab for lab in labels[i] if lab.startswith(".")]
            missing = ell - len(have)
            for _ in range(missing):
                operands[i] = operands[i].unsqueeze(len(head))
            labels[i] = list(head) + dots + labels[i][len(head) + len(have):]
    if arrow:
        head, has, tail = rhs.partition("...")
        out = list(head) + (dots if has else []) + list(tail)
    else:
        counts: dict = {}
        for ls in labels:
            for label in ls:
                if not label.startswith("."):
                    counts[label] = counts.get(label, 0) + 1
        out = dots + sorted(k for k, c in counts.items() if c == 1)
    return labels, out


def _take_diagonals(op, labels: list) -> tuple:
    """An operand with each repeated label reduced to one dim (its diagonal), by a mask and a
    sum, which differentiate as the diagonal does."""
    ns = namespace_of(op)
    while len(set(labels)) != len(labels):
        label = next(lab for lab in labels if labels.count(lab) > 1)
        p = labels.index(label)
        q = labels.index(label, p + 1)
        n = op.shape[p]
        shape = [1] * op.dim()
        shape[p] = shape[q] = n
        eye = ns.eye(n, dtype=op.dtype).reshape(shape)
        op = (op * eye).sum(q)
        labels = labels[:q] + labels[q + 1:]
    return op, labels


def einsum(equation: str, *operands) -> Tensor:
    """Sums of products over the labelled dims of the operands, as torch contracts them: one
    operand at a time into the result, dims no later operand has summed as early as possible,
    each pair multiplied (no dim to sum) or contracted by a batched product."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    for op in operands:
        if type(op) is not Tensor:
            raise TypeError(f"einsum(): argument 'operands' must be tuple of Tensors, not "
                            f"{type(op).__name__}")
    operands = list(operands)
    labels, out = _parse_einsum(equation, operands)
    ops = []
    for op, ls in zip(operands, labels):
        op, ls = _take_diagonals(op, ls)
        ops.append((op, ls))
    last = {}
    for i, (_, ls) in enumerate(ops):
        for label in ls:
            last[label] = i
    result, rl = ops[0]
    result, rl = _sum_labels(result, rl, [lab for lab in rl if lab not in out and last[lab] == 0])
    for i in range(1, len(ops)):
        op, ol = ops[i]
        only = [lab for lab in ol if lab not in out and last[lab] == i and lab not in rl]
        op, ol = _sum_labels(op, ol, only)
        summed = [lab for lab in ol if lab not in out and last[lab] == i]
        result, rl = _pair(result, rl, op, ol, summed)
    result, rl = _sum_labels(result, rl, [lab for lab in rl if lab not in out])
    if rl != out:
        result = result.permute([rl.index(lab) for lab in out])
    return result


def _sum_labels(t, ls: list, gone: list) -> tuple:
    if not gone:
        return t, ls
    return t.sum([ls.index(lab) for lab in gone]), [lab for lab in ls if lab not in gone]


def _pair(a, al: list, b, bl: list, summed: list) -> tuple:
    """The product of two labelled operands with the labels ``summed`` summed away."""
    batch = [lab for lab in al if lab in bl and lab not in summed]
    free_a = [lab for lab in al if lab not in bl]
    free_b = [lab for lab in bl if lab not in al]
    size = {}
    for t, ls in ((a, al), (b, bl)):
        for d, lab in enumerate(ls):
            size[lab] = max(size.get(lab, 1), t.shape[d])
    if not summed:
        labels = batch + free_a + free_b
        return _aligned(a, al, labels) * _aligned(b, bl, labels), labels

    def numel(ls):
        n = 1
        for lab in ls:
            n *= size[lab]
        return n

    # (a summed dim of size one on one side is summed on the other first: it broadcasts)
    for lab in list(summed):
        if a.shape[al.index(lab)] == 1 and size[lab] > 1:
            a = a.squeeze(al.index(lab))
            al = [x for x in al if x != lab]
            b, bl = _sum_labels(b, bl, [lab])
            summed.remove(lab)
        elif b.shape[bl.index(lab)] == 1 and size[lab] > 1:
            b = b.squeeze(bl.index(lab))
            bl = [x for x in bl if x != lab]
            a, al = _sum_labels(a, al, [lab])
            summed.remove(lab)
    bshape = [size[lab] for lab in batch]
    ta = a.permute([al.index(lab) for lab in batch + free_a + summed])
    ta = ta.expand(*bshape, *ta.shape[len(batch):]) if batch else ta
    tb = b.permute([bl.index(lab) for lab in batch + summed + free_b])
    tb = tb.expand(*bshape, *tb.shape[len(batch):]) if batch else tb
    ta = ta.reshape(numel(batch), numel(free_a), numel(summed))
    tb = tb.reshape(numel(batch), numel(summed), numel(free_b))
    labels = batch + free_a + free_b
    return ta.bmm(tb).view([size[lab] for lab in labels]), labels


def _aligned(t, ls: list, labels: list):
    """t with its dims in the order of ``labels``, a missing one as a dim of size one."""
    t = t.permute([ls.index(lab) for lab in labels if lab in ls]) if ls else t
    shape = []
    it = iter(t.shape)
    for lab in labels:
        shape.append(next(it) if lab in ls else 1)
    return t.reshape(shape) if len(shape) != t.dim() else t


einsum = declare("einsum", function=einsum, methods=())


# ---------------------------------------------------------------------------------------- cdist
def _pairwise_np(x1: np.ndarray, x2: np.ndarray, p: float) -> np.ndarray:
    diff = np.abs(x1[..., :, None, :] - x2[..., None, :, :])
    with np.errstate(all="ignore"):
        if p == 0.0:
            return (diff != 0).sum(-1).astype(x1.dtype)
        if p == 1.0:
            return diff.sum(-1)
        if p == 2.0:
            return np.sqrt((diff * diff).sum(-1))
        if math.isinf(p):
            return diff.max(-1, initial=0.0)
        return np.power(np.power(diff, p).sum(-1), 1.0 / p)


def _cdist_grad(grad, x1, x2, p: float, dist):
    """The gradient of the pairwise p-distances in x1 (that in x2 is the same with the roles
    swapped and the sign flipped)."""
    ns = namespace_of(grad)
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    d = dist.unsqueeze(-1)
    if p == 0.0:
        return x1 * 0
    if p == 1.0:
        term = diff.sign()
    elif p == 2.0:
        term = ns.where(d == 0, 0.0, diff / d)
    elif math.isinf(p):
        term = diff.sign() * (diff.abs() == d).to(diff.dtype)
    elif p < 1.0:
        term = ns.where((diff == 0) | (d == 0), 0.0,
                        diff.sign() * diff.abs().pow(p - 1) * d.pow(1 - p))
    else:
        term = ns.where(d == 0, 0.0, diff.sign() * diff.abs().pow(p - 1) / d.pow(p - 1))
    return (grad.unsqueeze(-1) * term).sum(-2)


class Cdist(Overload):
    """The p-distances between the rows of x1 and those of x2."""

    node_name = "CdistBackward0"
    args = ("x1", "x2", "p", "compute_mode")
    saved_fields = ("x1", "x2", "result")
    saved_attrs = ("p",)
    tensor_positions = (0, 1)
    double_backward = False

    @staticmethod
    def backward(ctx, grad):
        x1, x2, dist = ctx.saved_tensors
        p = float(ctx.p)
        g1 = _cdist_grad(grad, x1, x2, p, dist) if ctx.needs_input_grad[0] else None
        g2 = (_cdist_grad(grad.mT, x2, x1, p, dist.mT) if ctx.needs_input_grad[1]
              else None)
        return g1, g2, None, None


class EuclideanDist(Overload):
    """The Euclidean distances between rows, through one matrix product (as torch's mm path:
    sqrt(max(|a|² - 2 a·b + |b|², 1e-30)))."""

    node_name = "EuclideanDistBackward0"
    args = ("x1", "x2")
    saved_fields = ("x1", "x2", "result")
    double_backward = False

    @staticmethod
    def backward(ctx, grad):
        x1, x2, res = ctx.saved_tensors
        ratio = namespace_of(grad).where(res == 0, 0.0, grad / res)
        return (x1 * ratio.sum(-1, True) - ratio.matmul(x2),
                x2 * ratio.sum(-2).unsqueeze(-1) - ratio.mT.matmul(x1))


def _euclidean_np(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    n1 = (x1 * x1).sum(-1, keepdims=True)
    n2 = (x2 * x2).sum(-1, keepdims=True)
    a = np.concatenate([x1 * -2, n1, np.ones_like(n1)], -1)
    b = np.concatenate([x2, np.ones_like(n2), n2], -1)
    return np.sqrt(np.maximum(a @ np.swapaxes(b, -1, -2), 1e-30))


_euclidean_dist = declare("_euclidean_dist", EuclideanDist, function=lambda x1, x2: dispatch(
    EuclideanDist, _euclidean_np(x1._data, x2._data), (x1, x2)), methods=(), functions=())

_MODES = {None: 0, "use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1,
          "donot_use_mm_for_euclid_dist": 2}


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str | None = None) -> Tensor:
    """The p-distance between each row of x1 and each row of x2 (batch dims broadcast)."""
    a = _check(x1, "cdist", "x1")
    b = _check(x2, "cdist", "x2", 2)
    if compute_mode not in _MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if a.ndim < 2 or b.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, "
                           f"X{1 if a.ndim < 2 else 2} got: {min(a.ndim, b.ndim)}D")
    if a.dtype.kind != "f" or b.dtype.kind != "f":
        raise RuntimeError(f"cdist only supports floating-point dtypes, X"
                           f"{1 if a.dtype.kind != 'f' else 2} got: "
                           f"{_short(a if a.dtype.kind != 'f' else b)}")
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {a.shape[-1]} "
                           f"X2: {b.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    r1, r2 = a.shape[-2], b.shape[-2]
    mode = _MODES[compute_mode]
    if a.size and b.size and p == 2 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25))):
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        if int(np.prod(batch, dtype=np.int64)) != 1:
            x1 = x1.expand(*batch, r1, a.shape[-1])
            x2 = x2.expand(*batch, r2, b.shape[-1])
        return _euclidean_dist(x1, x2).view(*batch, r1, r2)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    out = _pairwise_np(np.broadcast_to(a, batch + a.shape[-2:]),
                       np.broadcast_to(b, batch + b.shape[-2:]), float(p))
    return dispatch(Cdist, np.asarray(out, a.dtype), (x1, x2, p, compute_mode))


cdist = declare("cdist", Cdist, function=cdist, methods=(), torch_op="aten::_cdist_forward")


def linalg_diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The diagonal of each matrix in a batch (a view), by default of the last two dims."""
    _check(A, "linalg_diagonal", "A")
    return A.diagonal(offset=offset, dim1=dim1, dim2=dim2)


linalg_diagonal = declare("linalg_diagonal", function=linalg_diagonal, methods=(), functions=())
LINALG.update(diagonal=linalg_diagonal)


def _linalg_matmul(input: Tensor, other: Tensor, *, out=None) -> Tensor:  # noqa: A002
    """torch.linalg.matmul: the matrix product (an alias of matmul)."""
    return input.matmul(other)


LINALG.update(matmul=_linalg_matmul)


def chain_matmul(*matrices) -> Tensor:
    """The product of a chain of matrices (torch's older spelling of linalg.multi_dot)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for t in matrices:
        if type(t) is not Tensor or t.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {t.dim() if type(t) is Tensor else '?'}, "
                               "expected 2 instead.")
    warn_once("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
              "release. Use torch.linalg.multi_dot instead, which accepts a list of two or more "
              "tensors rather than multiple parameters.")
    if len(matrices) == 1:
        return matrices[0].clone()
    return linalg_multi_dot(list(matrices))


chain_matmul = declare("chain_matmul", function=chain_matmul, methods=())


def nuclear_norm(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A002
    """The sum of the singular values over two dims (default the last two)."""
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    return linalg_matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim)


nuclear_norm = declare("nuclear_norm", function=nuclear_norm, methods=())
