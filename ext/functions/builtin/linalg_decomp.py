"""Matrix decompositions and what is built on them: cholesky, qr, eigh, svd, the lu and ldl
families, householder products, least squares, the pseudo-inverse and the rank.

The kernels are NumPy's (``np.linalg``, batched over leading dims) and SciPy's where NumPy has
none (lu, ldl, householder reflectors), SciPy imported inside the kernel. The backward and
forward-mode formulas are written with the tensor API common to ext and torch, so that they run
on both engines and are differentiable again.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from ..._args import not_a_tensor
from ..._dtype import FROM_NUMPY
from ..._tensor import Tensor, wrap
from .._op import Overload, declare, dispatch
from ._builtin import namespace_of

__all__ = ["LinAlgError", "LINALG"]


class LinAlgError(RuntimeError):
    """A matrix that the decomposition cannot handle (not positive-definite, singular): torch's
    ``torch.linalg.LinAlgError``, a RuntimeError."""


def _result(name: str, fields: str) -> type:
    """The named tuple of torch.return_types.<name>."""
    cls = namedtuple(name, fields)  # noqa: PYI024 - torch's plain named tuples
    cls.__repr__ = lambda self: f"ext.return_types.{name}(\n" + ",\n".join(
        f"{f}={v!r}" for f, v in zip(self._fields, self)) + ")"
    return cls


linalg_cholesky_ex = _result("linalg_cholesky_ex", "L info")
linalg_qr = _result("linalg_qr", "Q R")
qr_result = _result("qr", "Q R")
linalg_eigh = _result("linalg_eigh", "eigenvalues eigenvectors")
linalg_svd = _result("linalg_svd", "U S Vh")
svd_result = _result("svd", "U S V")
linalg_lstsq = _result("linalg_lstsq", "solution residuals rank singular_values")
linalg_lu_factor = _result("linalg_lu_factor", "LU pivots")
linalg_lu_factor_ex = _result("linalg_lu_factor_ex", "LU pivots info")
linalg_lu = _result("linalg_lu", "P L U")
lu_unpack_result = _result("lu_unpack", "P L U")
linalg_ldl_factor = _result("linalg_ldl_factor", "LD pivots")
linalg_ldl_factor_ex = _result("linalg_ldl_factor_ex", "LD pivots info")
geqrf_result = _result("geqrf", "a tau")


# ---------------------------------------------------------------------------- argument checks
def _short(d: np.ndarray) -> str:
    return FROM_NUMPY[d.dtype]._short


def _matrices(x, name: str, square: bool = True, arg: str = "A") -> np.ndarray:
    """The array of a batch of matrices, with torch's errors for a non-tensor, fewer than two
    dims, a non-square matrix and a non-floating dtype."""
    if type(x) is not Tensor:
        raise not_a_tensor(x, name.rpartition(".")[2], "input" if arg == "A" else arg)
    d = x._data
    if d.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    if square and d.shape[-1] != d.shape[-2]:
        raise RuntimeError(f"{name}: {arg} must be batches of square matrices, but they are "
                           f"{d.shape[-2]} by {d.shape[-1]} matrices")
    if d.dtype.kind != "f":
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_short(d)}")
    return d


def _not_implemented(d: np.ndarray, kernel: str) -> None:
    if d.dtype.kind != "f":
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_short(d)}'")


# ------------------------------------------------------- helpers common to both engines' tensors
def _eye(x, n: int):
    return namespace_of(x).eye(n, dtype=x.dtype)


def _tril(x, k: int = 0):
    """The lower triangle of a batch of matrices (from diagonal ``k``)."""
    return x.tril(k)


def _triu(x, k: int = 0):
    """The upper triangle of a batch of matrices (from diagonal ``k``)."""
    return x.triu(k)


def _diagonal(x):
    """The diagonals of a batch of square matrices."""
    return x.diagonal(0, -2, -1)


def _diag_embed(v):
    """Square matrices with ``v`` on their diagonals."""
    return namespace_of(v).diag_embed(v)


def _solve(a, b, upper: bool, left: bool = True, unit: bool = False):
    """a⁻¹ b (left) or b a⁻¹ for a triangular ``a``."""
    return namespace_of(a).linalg.solve_triangular(a, b, upper=upper, left=left,
                                                   unitriangular=unit)


# ------------------------------------------------------------------------------------ cholesky
def _cholesky_backward(gL, upper: bool, L):
    """dA of a Cholesky factor's gradient: L⁻ᴴ Φ(Lᴴ gL) L⁻¹, Φ the lower triangle with its
    diagonal halved (as torch computes it, not symmetrized)."""
    if upper:
        L, gL = L.mT, gL.mT
    g = _tril(L.mT.matmul(gL))
    g = 0.5 * (g + _tril(g, -1).mT)
    g = _solve(L.mT, g, upper=True)
    return _solve(L, g, upper=False, left=False)


def _cholesky_jvp(dA, L, upper: bool):
    """dL = L Φ(L⁻¹ dA L⁻ᴴ)."""
    if upper:
        L = L.mT
    dL = _solve(L, dA, upper=False)
    dL = _solve(L.mT, dL, upper=True, left=False)
    dL = L.matmul(_tril(dL) - 0.5 * _diag_embed(_diagonal(dL)))
    return dL.mT if upper else dL


class LinalgCholeskyEx(Overload):
    """A = L Lᴴ (or Uᴴ U): the factor and the LAPACK info code."""

    node_name = "LinalgCholeskyExBackward0"
    args = ("self", "upper", "check_errors")
    outputs = ("L", "info")
    non_differentiable = ("info",)
    returns = linalg_cholesky_ex
    saved_fields = ("L",)
    saved_attrs = ("upper",)
    tensor_positions = (0,)

    @classmethod
    def forward(cls, A, upper, check_errors):
        """The op on the tensors at hand (its keyword arguments are keyword-only)."""
        return namespace_of(A).linalg.cholesky_ex(A, upper=upper, check_errors=check_errors)

    @staticmethod
    def backward(ctx, gL, ginfo=None):
        (L,) = ctx.saved_tensors
        return _cholesky_backward(gL, ctx.upper, L), None, None

    @staticmethod
    def jvp(ctx, dA, *_):
        (L,) = ctx.saved_tensors
        return _cholesky_jvp(dA, L, ctx.upper), None


class Cholesky(Overload):
    """torch.cholesky: the factor alone (its own node, saving the result)."""

    node_name = "CholeskyBackward0"
    args = ("self", "upper")
    saved_fields = ("result",)
    saved_attrs = ("upper",)
    tensor_positions = (0,)

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return _cholesky_backward(grad, ctx.upper, result), None

    @staticmethod
    def jvp(ctx, dA, _):
        (result,) = ctx.saved_tensors
        return _cholesky_jvp(dA, result, ctx.upper)

    @classmethod
    def forward(cls, A, upper):
        """The op on the tensors at hand, as linalg.cholesky (the same factor; torch's has a
        forward-mode rule, its older spelling none)."""
        return namespace_of(A).linalg.cholesky(A, upper=upper)



def _failed_minor(a: np.ndarray) -> int:
    """The order of the first leading minor of ``a`` that is not positive-definite."""
    for k in range(1, a.shape[-1] + 1):
        try:
            np.linalg.cholesky(a[:k, :k])
        except np.linalg.LinAlgError:
            return k
    return 0


def _cholesky_kernel(d: np.ndarray, upper: bool) -> tuple:
    """(factor, info) of a batch: info is 0, or the order of the failing minor."""
    info = np.zeros(d.shape[:-2], np.int32)
    if d.size == 0:
        return d.copy(), info
    try:
        L = np.linalg.cholesky(d)
    except np.linalg.LinAlgError:
        L = np.zeros_like(d)
        for i in np.ndindex(d.shape[:-2]):
            try:
                L[i] = np.linalg.cholesky(d[i])
            except np.linalg.LinAlgError:
                info[i] = _failed_minor(d[i])
    if upper:
        L = np.ascontiguousarray(L.swapaxes(-1, -2))
    return L, info


def _raise_info(info: np.ndarray, name: str, what: str) -> None:
    """torch's LinAlgError for the first matrix of a batch whose info is not 0."""
    bad = np.argwhere(info.reshape(-1) != 0)
    if bad.size:
        i = int(bad[0, 0])
        batch = f"(Batch element {i}): " if info.ndim else ""
        raise LinAlgError(f"{name}: {batch}{what.format(int(info.reshape(-1)[i]))}")


_NOT_PD = ("The factorization could not be completed because the input is not positive-definite "
           "(the leading minor of order {} is not positive-definite).")


def _linalg_cholesky_ex(A, *, upper: bool = False, check_errors: bool = False, out=None):
    """The Cholesky factor and info code of a batch of symmetric positive-definite matrices."""
    d = _matrices(A, "linalg.cholesky")
    L, info = _cholesky_kernel(d, upper)
    if check_errors:
        _raise_info(info, "linalg.cholesky_ex", _NOT_PD)
    return dispatch(LinalgCholeskyEx, (L, info), (A, upper, check_errors))


def _linalg_cholesky(A, *, upper: bool = False, out=None):
    """The Cholesky factor of a batch of symmetric positive-definite matrices."""
    d = _matrices(A, "linalg.cholesky")
    L, info = _cholesky_kernel(d, upper)
    _raise_info(info, "linalg.cholesky", _NOT_PD)
    return dispatch(LinalgCholeskyEx, (L, info), (A, upper, False))[0]


def _cholesky(input, upper: bool = False, *, out=None):
    """The Cholesky factor (torch.cholesky, the older spelling of linalg.cholesky)."""
    if type(input) is not Tensor:
        raise not_a_tensor(input, "cholesky")
    d = input._data
    if d.ndim >= 2 and d.shape[-1] == d.shape[-2]:
        _not_implemented(d, "cholesky_cpu")
    d = _matrices(input, "cholesky")
    L, info = _cholesky_kernel(d, upper)
    _raise_info(info, "cholesky", _NOT_PD)
    return dispatch(Cholesky, L, (input, upper))


linalg_cholesky_ex_op = declare("linalg_cholesky_ex", LinalgCholeskyEx,
                                function=_linalg_cholesky_ex, methods=(), functions=())
linalg_cholesky = declare("linalg_cholesky", function=_linalg_cholesky, methods=(),
                          functions=())
cholesky = declare("cholesky", Cholesky, function=_cholesky)


# ------------------------------------------------------------------------------------------ qr
def _qr_mode(mode: str) -> tuple:
    """(compute_q, reduced) of a mode."""
    if mode == "reduced":
        return True, True
    if mode == "complete":
        return True, False
    if mode == "r":
        return False, True
    raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
                       "(default), 'r', or 'complete'")


def _qr_check(Q, R, mode: str) -> tuple:
    compute_q, reduced = _qr_mode(mode)
    if not compute_q:
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going "
                           "to differentiate through linalg.qr.")
    m, n = Q.shape[-2], R.shape[-1]
    if not reduced and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")
    return m, n


def _qr_backward(gQ, gR, Q, R, mode: str):
    """dA of Q's and R's gradients (A = QR, R upper triangular)."""
    m, n = _qr_check(Q, R, mode)
    if gQ is None:
        gQ = Q.new_zeros(Q.shape)
    if gR is None:
        gR = R.new_zeros(R.shape)
    if m >= n:
        G = gR.matmul(R.mT) - Q.mT.matmul(gQ)
        W = _triu(G)
        W = W + W.mT - _diag_embed(_diagonal(W))
        return _solve(R.mT, gQ + Q.matmul(W), upper=False, left=False)
    # wide: A = Q [R1 R2], R1 square
    H = Q.mT.matmul(gQ) - gR.matmul(R.mT)
    K = _tril(H - H.mT, -1)
    R1 = R.narrow(-1, 0, m)
    QgR = Q.matmul(gR)
    g1 = _solve(R1.mT, Q.matmul(K), upper=False, left=False) + QgR.narrow(-1, 0, m)
    return namespace_of(Q).cat([g1, QgR.narrow(-1, m, n - m)], -1)


def _qr_jvp(dA, Q, R, mode: str) -> tuple:
    """(dQ, dR) of a tangent dA."""
    m, n = _qr_check(Q, R, mode)
    if m >= n:
        dX = _solve(R, dA, upper=True, left=False)
        Y = Q.mT.matmul(dX)
        M = _triu(Y + Y.mT) - _diag_embed(_diagonal(Y))
        return dX - Q.matmul(M), M.matmul(R)
    R1 = R.narrow(-1, 0, m)
    X = Q.mT.matmul(_solve(R1, dA.narrow(-1, 0, m), upper=True, left=False))
    omega = _tril(X, -1) - _tril(X, -1).mT
    return Q.matmul(omega), Q.mT.matmul(dA) - omega.matmul(R)


class LinalgQr(Overload):
    """A = QR, Q with orthonormal columns and R upper triangular."""

    node_name = "LinalgQrBackward0"
    args = ("A", "mode")
    outputs = ("Q", "R")
    returns = linalg_qr
    saved_fields = ("Q", "R")
    saved_attrs = ("mode",)
    tensor_positions = (0,)

    @classmethod
    def forward(cls, A, mode):
        """The op on the tensors at hand (its keyword arguments are keyword-only)."""
        return namespace_of(A).linalg.qr(A, mode)

    @staticmethod
    def backward(ctx, gQ, gR):
        Q, R = ctx.saved_tensors
        return _qr_backward(gQ, gR, Q, R, ctx.mode), None

    @staticmethod
    def jvp(ctx, dA, _):
        Q, R = ctx.saved_tensors
        return _qr_jvp(dA, Q, R, ctx.mode)


def _qr_kernel(d: np.ndarray, mode: str) -> tuple:
    m, n = d.shape[-2:]
    k = min(m, n)
    batch = d.shape[:-2]
    if d.size == 0:
        qcols = m if mode == "complete" else k
        Q = np.zeros(batch + (m, qcols), d.dtype)
        if qcols:
            Q[...] = np.eye(m, qcols, dtype=d.dtype)
        rrows = m if mode == "complete" else k
        R = np.zeros(batch + (rrows, n), d.dtype)
        return (Q if mode != "r" else np.zeros((0,), d.dtype)), R
    if mode == "r":
        return np.zeros((0,), d.dtype), np.linalg.qr(d, mode="r")
    return tuple(np.linalg.qr(d, mode=mode))


def _linalg_qr(A, mode: str = "reduced", *, out=None):
    """The QR decomposition of a batch of matrices (``mode``: reduced, complete or r)."""
    d = _matrices(A, "linalg.qr", square=False)
    _qr_mode(mode)
    return dispatch(LinalgQr, _qr_kernel(d, mode), (A, mode))


def _qr(input, some: bool = True, *, out=None):
    """The QR decomposition (torch.qr: ``some`` picks the reduced form)."""
    if type(input) is not Tensor:
        raise not_a_tensor(input, "qr")
    mode = "reduced" if some else "complete"
    d = _matrices(input, "linalg.qr", square=False)
    return qr_result(*dispatch(LinalgQr, _qr_kernel(d, mode), (input, mode)))


linalg_qr_op = declare("linalg_qr", LinalgQr, function=_linalg_qr, methods=(), functions=())
qr = declare("qr", function=_qr)


# ---------------------------------------------------------------------------------------- eigh
def _eigh_backward(gL, gV, L, V):
    """dA of the eigenvalues' and eigenvectors' gradients (A symmetric)."""
    if gV is None:
        inner = _diag_embed(gL)
    else:
        VgV = V.mT.matmul(gV)
        VgV = 0.5 * (VgV - VgV.mT)
        E = L.unsqueeze(-2) - L.unsqueeze(-1)
        E = E + _eye(E, E.shape[-1])
        inner = VgV / E
        if gL is not None:
            inner = inner + _diag_embed(gL)
    return V.matmul(inner).matmul(V.mT)


def _eigh_jvp(dA, L, V) -> tuple:
    tmp = V.mT.matmul(dA).matmul(V)
    dL = _diagonal(tmp)
    eye = _eye(tmp, tmp.shape[-1])
    E = L.unsqueeze(-2) - L.unsqueeze(-1) + eye
    return dL, V.matmul(tmp * (1 - eye) / E)


class LinalgEigh(Overload):
    """A = V diag(L) Vᵀ for a symmetric A, eigenvalues in ascending order."""

    node_name = "LinalgEighBackward0"
    args = ("self", "UPLO")
    outputs = ("eigenvalues", "eigenvectors")
    returns = linalg_eigh
    saved_fields = ("eigenvalues", "eigenvectors")
    tensor_positions = (0,)

    @classmethod
    def forward(cls, A, UPLO):
        """The op on the tensors at hand (its keyword arguments are keyword-only)."""
        return namespace_of(A).linalg.eigh(A, UPLO)

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        return _eigh_backward(gL, gV, L, V), None

    @staticmethod
    def jvp(ctx, dA, _):
        L, V = ctx.saved_tensors
        return _eigh_jvp(dA, L, V)


def _eigh_kernel(A, UPLO: str, name: str) -> tuple:
    if type(A) is not Tensor:
        raise not_a_tensor(A, name)
    d = A._data
    if d.ndim >= 2 and d.shape[-1] == d.shape[-2]:
        _not_implemented(d, "linalg_eigh_cpu")
    d = _matrices(A, "linalg.eigh")
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    if d.size == 0:
        return np.zeros(d.shape[:-1], d.dtype), np.zeros(d.shape, d.dtype)
    w, v = np.linalg.eigh(d, UPLO=UPLO)
    return w.astype(d.dtype), v.astype(d.dtype)


def _linalg_eigh(A, UPLO: str = "L", *, out=None):
    """Eigenvalues (ascending) and eigenvectors of a batch of symmetric matrices."""
    return dispatch(LinalgEigh, _eigh_kernel(A, UPLO, "eigh"), (A, UPLO))


def _linalg_eigvalsh(A, UPLO: str = "L", *, out=None):
    """Eigenvalues (ascending) of a batch of symmetric matrices."""
    return dispatch(LinalgEigh, _eigh_kernel(A, UPLO, "eigvalsh"), (A, UPLO))[0]


linalg_eigh_op = declare("linalg_eigh", LinalgEigh, function=_linalg_eigh, methods=(),
                         functions=())
linalg_eigvalsh = declare("linalg_eigvalsh", function=_linalg_eigvalsh, methods=(),
                          functions=())


# ----------------------------------------------------------------------------------------- svd
def _svd_backward(gU, gS, gVh, U, S, Vh, full_matrices: bool):
    """dA of the gradients of U, S and Vh (A = U diag(S) Vh)."""
    m, n = U.shape[-2], Vh.shape[-1]
    k = S.shape[-1]
    if full_matrices:
        U, Vh = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
        gU = None if gU is None else gU.narrow(-1, 0, k)
        gVh = None if gVh is None else gVh.narrow(-2, 0, k)
    if gU is None and gVh is None:
        return U.matmul(_diag_embed(gS)).matmul(Vh) if gS is not None else \
            U.new_zeros(U.shape[:-1] + (n,))
    V, gV = Vh.mT, None if gVh is None else gVh.mT
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    E = E + _eye(E, k)
    g = None
    if gU is not None:
        UgU = U.mT.matmul(gU)
        g = (UgU - UgU.mT) * S.unsqueeze(-2) / E
    if gV is not None:
        VgV = V.mT.matmul(gV)
        term = S.unsqueeze(-1) * (VgV - VgV.mT) / E
        g = term if g is None else g + term
    if gS is not None:
        g = g + _diag_embed(gS)
    if m > k and gU is not None:
        gUS = gU / S.unsqueeze(-2)
        g = U.matmul(g) + gUS - U.matmul(U.mT.matmul(gUS))
        return g.matmul(Vh)
    if n > k and gV is not None:
        gVS = gV / S.unsqueeze(-2)
        g = g.matmul(Vh) + gVS.mT - gVS.mT.matmul(V).matmul(Vh)
        return U.matmul(g)
    return U.matmul(g).matmul(Vh)


def _svd_jvp(dA, U, S, Vh, full_matrices: bool) -> tuple:
    m, n = U.shape[-2], Vh.shape[-1]
    k = S.shape[-1]
    if full_matrices and m != n:
        # (the columns beyond the first k are not unique: their tangents are zeros)
        dU, dS, dVh = _svd_jvp(dA, U.narrow(-1, 0, k), S, Vh.narrow(-2, 0, k), False)
        cat = namespace_of(dU).cat
        if m > k:
            dU = cat([dU, dU.new_zeros(dU.shape[:-1] + (m - k,))], -1)
        if n > k:
            dVh = cat([dVh, dVh.new_zeros(dVh.shape[:-2] + (n - k, n))], -2)
        return dU, dS, dVh
    V = Vh.mT
    dP = U.mT.matmul(dA).matmul(V)
    dS = _diagonal(dP)
    S2 = S * S
    eye = _eye(S2, k)
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye
    off = 1 - eye
    dU = U.matmul((dP * S.unsqueeze(-2) + S.unsqueeze(-1) * dP.mT) * off / E)
    dV = V.matmul((S.unsqueeze(-1) * dP + dP.mT * S.unsqueeze(-2)) * off / E)
    if m > k:
        dAV = dA.matmul(V)
        dU = dU + (dAV - U.matmul(U.mT.matmul(dAV))) / S.unsqueeze(-2)
    if n > k:
        dAU = dA.mT.matmul(U)
        dV = dV + (dAU - V.matmul(V.mT.matmul(dAU))) / S.unsqueeze(-2)
    return dU, dS, dV.mT


class LinalgSvd(Overload):
    """A = U diag(S) Vh, singular values in descending order."""

    node_name = "LinalgSvdBackward0"
    args = ("A", "full_matrices", "driver")
    outputs = ("U", "S", "Vh")
    returns = linalg_svd
    saved_fields = ("U", "S", "Vh")
    saved_attrs = ("full_matrices", "S_sym_argsize_minus_1")
    tensor_positions = (0,)

    @classmethod
    def forward(cls, A, full_matrices, driver):
        """The op on the tensors at hand (its keyword arguments are keyword-only)."""
        return namespace_of(A).linalg.svd(A, full_matrices, driver=driver)

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_tensors
        return _svd_backward(gU, gS, gVh, U, S, Vh, ctx.full_matrices), None, None

    @staticmethod
    def jvp(ctx, dA, *_):
        U, S, Vh = ctx.saved_tensors
        return _svd_jvp(dA, U, S, Vh, ctx.full_matrices)


def _svd_kernel(d: np.ndarray, full_matrices: bool) -> tuple:
    m, n = d.shape[-2:]
    k = min(m, n)
    batch = d.shape[:-2]
    if d.size == 0:
        mu, nv = (m, n) if full_matrices else (k, k)
        U = np.zeros(batch + (m, mu), d.dtype)
        Vh = np.zeros(batch + (nv, n), d.dtype)
        if full_matrices:
            U[...] = np.eye(m, dtype=d.dtype)
            Vh[...] = np.eye(n, dtype=d.dtype)
        return U, np.zeros(batch + (k,), d.dtype), Vh
    U, S, Vh = np.linalg.svd(d, full_matrices=full_matrices)
    return U.astype(d.dtype), S.astype(d.dtype), Vh.astype(d.dtype)


def _linalg_svd(A, full_matrices: bool = True, *, driver=None, out=None):
    """The singular value decomposition of a batch of matrices."""
    d = _matrices(A, "linalg.svd", square=False)
    return dispatch(LinalgSvd, _svd_kernel(d, full_matrices), (A, full_matrices, driver))


def _linalg_svdvals(A, *, driver=None, out=None):
    """The singular values (descending) of a batch of matrices."""
    d = _matrices(A, "linalg.svd", square=False)
    return dispatch(LinalgSvd, _svd_kernel(d, False), (A, False, driver))[1]


def _svd(input, some: bool = True, compute_uv: bool = True, *, out=None):
    """torch.svd: U, S and V (not Vh); ``some`` picks the reduced form."""
    if type(input) is not Tensor:
        raise not_a_tensor(input, "svd")
    d = _matrices(input, "linalg.svd", square=False)
    U, S, Vh = dispatch(LinalgSvd, _svd_kernel(d, not some), (input, not some, None))
    if not compute_uv:
        U, Vh = U.new_zeros(U.shape), Vh.new_zeros(Vh.shape)
    return svd_result(U, S, Vh.mT)


linalg_svd_op = declare("linalg_svd", LinalgSvd, function=_linalg_svd, methods=(),
                        functions=())
linalg_svdvals = declare("linalg_svdvals", function=_linalg_svdvals, methods=(), functions=())
svd = declare("svd", function=_svd)


# ---------------------------------------------------------------------------------------- pinv
def _pinv_backward(grad, pinvA, A):
    """dA of the pseudo-inverse's gradient."""
    m, n = A.shape[-2], A.shape[-1]
    pinvAh, gradh = pinvA.mT, grad.mT
    if m <= n:
        K = gradh.matmul(pinvA)
        KpinvAh = K.matmul(pinvAh)
        return (-(pinvA.matmul(K)).mT + KpinvAh - A.matmul(pinvA).matmul(KpinvAh)
                + pinvAh.matmul(pinvA).matmul(gradh - K.matmul(A)))
    K = pinvA.matmul(gradh)
    pinvAhK = pinvAh.matmul(K)
    return (-(K.matmul(pinvA)).mT + (gradh - A.matmul(K)).matmul(pinvA).matmul(pinvAh)
            + pinvAhK - pinvAhK.matmul(pinvA).matmul(A))


def _pinv_jvp(dA, pinvA, A):
    """d(A⁺) = -A⁺ dA A⁺ + A⁺A⁺ᵀ dAᵀ (I - AA⁺) + (I - A⁺A) dAᵀ A⁺ᵀA⁺."""
    dAh, pinvAh = dA.mT, pinvA.mT
    left = pinvA.matmul(pinvAh).matmul(dAh)
    right = dAh.matmul(pinvAh).matmul(pinvA)
    return (-pinvA.matmul(dA).matmul(pinvA) + left - left.matmul(A).matmul(pinvA)
            + right - pinvA.matmul(A).matmul(right))


class LinalgPinv(Overload):
    """The Moore-Penrose pseudo-inverse."""

    node_name = "LinalgPinvBackward0"
    args = ("self", "atol", "rtol", "hermitian")
    saved_fields = ("self", "result")
    tensor_positions = (0,)

    @classmethod
    def forward(cls, A, atol, rtol, hermitian):
        """The op on the tensors at hand (its keyword arguments are keyword-only)."""
        return namespace_of(A).linalg.pinv(A, atol=atol, rtol=rtol, hermitian=hermitian)

    @staticmethod
    def backward(ctx, grad):
        A, pinvA = ctx.saved_tensors
        return _pinv_backward(grad, pinvA, A), None, None, None

    @staticmethod
    def jvp(ctx, dA, *_):
        A, pinvA = ctx.saved_tensors
        return _pinv_jvp(dA, pinvA, A)


def _tolerance_value(tol, name: str):
    """A tolerance as an array broadcastable over the batch (a number, a tensor or None)."""
    if tol is None:
        return None
    if type(tol) is Tensor:
        return tol._data
    return np.asarray(float(tol))


def _cutoff(smax: np.ndarray, atol, rtol, m: int, n: int, dtype) -> np.ndarray:
    """max(atol, rtol * largest singular value), with torch's defaults (rtol = eps * max(m, n)
    when both are None; 0 when only atol is given)."""
    if rtol is None:
        rtol = np.asarray(np.finfo(dtype).eps * max(m, n) if atol is None else 0.0)
    if atol is None:
        atol = np.asarray(0.0)
    return np.maximum(atol, rtol * smax)


def _pinv_kernel(d: np.ndarray, atol, rtol, hermitian: bool) -> np.ndarray:
    m, n = d.shape[-2:]
    if d.size == 0:
        return np.zeros(d.shape[:-2] + (n, m), d.dtype)
    dtype, d = d.dtype, d.astype(np.float64)
    if hermitian:
        w, v = np.linalg.eigh(d)
        s = np.abs(w)
        cut = _cutoff(s.max(-1), atol, rtol, m, n, dtype)[..., None]
        inv = np.where(s > cut, 1 / np.where(s > cut, w, 1), 0)
        out = (v * inv[..., None, :]) @ v.swapaxes(-1, -2)
    else:
        u, s, vh = np.linalg.svd(d, full_matrices=False)
        cut = _cutoff(s[..., :1].max(-1) if s.shape[-1] else 0, atol, rtol, m, n,
                      dtype)[..., None]
        inv = np.where(s > cut, 1 / np.where(s > cut, s, 1), 0)
        out = (vh.swapaxes(-1, -2) * inv[..., None, :]) @ u.swapaxes(-1, -2)
    return out.astype(dtype)


def _pinv_check(A, name: str) -> np.ndarray:
    if type(A) is not Tensor:
        raise not_a_tensor(A, name)
    d = A._data
    if d.ndim < 2 or d.dtype.kind != "f":
        shape = ", ".join(str(s) for s in d.shape)
        raise RuntimeError(f"linalg.pinv({_short(d)}{{[{shape}]}}): expected a tensor with 2 or "
                           "more dimensions of float, double, cfloat or cdouble types")
    return d


def _linalg_pinv(A, rcond=None, hermitian: bool = False, *, atol=None, rtol=None, out=None):
    """The pseudo-inverse of a batch of matrices, singular values at most
    max(atol, rtol * largest) taken as zero."""
    d = _pinv_check(A, "pinv")
    if rcond is not None:
        rtol = rcond
    a, r = _tolerance_value(atol, "atol"), _tolerance_value(rtol, "rtol")
    return dispatch(LinalgPinv, _pinv_kernel(d, a, r, hermitian), (A, atol, rtol, hermitian))


def _pinverse(input, rcond: float = 1e-15):
    """The pseudo-inverse (torch.pinverse: ``rcond`` is the relative tolerance)."""
    d = _pinv_check(input, "pinverse")
    return dispatch(LinalgPinv, _pinv_kernel(d, None, np.asarray(rcond), False),
                    (input, None, rcond, False))


linalg_pinv = declare("linalg_pinv", LinalgPinv, function=_linalg_pinv, methods=(),
                      functions=())
pinverse = declare("pinverse", function=_pinverse)


# --------------------------------------------------------------------------------- matrix_rank
def _linalg_matrix_rank(A, tol=None, hermitian: bool = False, *, atol=None, rtol=None,
                        out=None):
    """The number of singular values above max(atol, rtol * largest), per matrix."""
    if type(A) is not Tensor:
        raise not_a_tensor(A, "matrix_rank")
    d = A._data
    if d.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least "
                           "2 dimensions.")
    if d.dtype.kind != "f":
        raise RuntimeError("This function doesn't handle types other than float and double")
    if tol is not None:
        atol, rtol = tol, 0.0
    m, n = d.shape[-2:]
    if d.size == 0:
        return wrap(np.zeros(d.shape[:-2], np.int64))
    s = np.abs(np.linalg.eigvalsh(d)) if hermitian else np.linalg.svd(d, compute_uv=False)
    cut = _cutoff(s.max(-1), _tolerance_value(atol, "atol"), _tolerance_value(rtol, "rtol"),
                  m, n, d.dtype)
    return wrap((s > cut[..., None]).sum(-1).astype(np.int64))


linalg_matrix_rank = declare("linalg_matrix_rank", function=_linalg_matrix_rank, methods=(),
                             functions=())


# --------------------------------------------------------------------------------------- lstsq
def _reduce_to(g, shape: tuple):
    """A gradient summed over the batch dims that broadcasting added to an input of ``shape``."""
    while g.dim() > len(shape):
        g = g.sum(0)
    for i, size in enumerate(shape):
        if size == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdim=True)
    return g


class LinalgLstsq(Overload):
    """The least-squares solution X of A X = B (and the squared residuals)."""

    node_name = "LinalgLstsqBackward0"
    args = ("self", "b", "rcond", "driver")
    outputs = ("solution", "residuals", "rank", "singular_values")
    non_differentiable = ("rank", "singular_values")
    returns = linalg_lstsq
    saved_fields = ("b", "self", "solution")
    forward_attrs = ("residuals_sym_sizes",)
    tensor_positions = (0, 1)

    @classmethod
    def forward(cls, A, B, rcond, driver):
        """The op on the tensors at hand (its keyword arguments are keyword-only)."""
        return namespace_of(A).linalg.lstsq(A, B, rcond, driver=driver)

    @staticmethod
    def backward(ctx, gX, gres=None, *_):
        B, A, X = ctx.saved_tensors
        vector = B.dim() == A.dim() - 1
        if vector:
            B, X, gX = B.unsqueeze(-1), X.unsqueeze(-1), gX.unsqueeze(-1)
        pinvA = namespace_of(A).linalg.pinv(A)
        gA = gB = None
        if ctx.needs_input_grad[0]:
            gA = _pinv_backward(gX.matmul(B.mT), pinvA, A)
        if ctx.needs_input_grad[1]:
            gB = pinvA.mT.matmul(gX)
        if gres is not None and gres.numel():
            # (at the least-squares optimum, Aᵀ(AX - B) = 0: the path through X adds nothing)
            R = (A.matmul(X) - B) * (2 * gres.unsqueeze(-2))
            gA = None if gA is None else gA + R.matmul(X.mT)
            gB = None if gB is None else gB - R
        if gB is not None:
            gB = _reduce_to(gB.squeeze(-1) if vector else gB, tuple(ctx.saved_tensors[0].shape))
        if gA is not None:
            gA = _reduce_to(gA, tuple(ctx.saved_tensors[1].shape))
        return gA, gB, None, None

    @staticmethod
    def jvp(ctx, dA, dB, *_):
        B, A, X = ctx.saved_tensors
        if B.dim() == A.dim() - 1:  # (a vector per matrix: one column)
            B, X = B.unsqueeze(-1), X.unsqueeze(-1)
            dB = None if dB is None else dB.unsqueeze(-1)
            squeeze = True
        else:
            squeeze = False
        pinvA = namespace_of(A).linalg.pinv(A)
        dX = None if dA is None else _pinv_jvp(dA, pinvA, A).matmul(B)
        if dB is not None:
            dX = pinvA.matmul(dB) if dX is None else dX + pinvA.matmul(dB)
        if not math.prod(ctx.residuals_sym_sizes):
            dres = X.new_zeros(ctx.residuals_sym_sizes)
        else:
            dR = A.matmul(dX) - (0 if dB is None else dB)
            if dA is not None:
                dR = dR + dA.matmul(X)
            dres = (2 * (A.matmul(X) - B) * dR).sum(-2)
            dres = dres.squeeze(-1) if squeeze else dres
        return (dX.squeeze(-1) if squeeze else dX), dres, None, None


def _lstsq_kernel(a: np.ndarray, b: np.ndarray, rcond, driver: str) -> tuple:
    m, n = a.shape[-2:]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    dt = a.dtype
    a, b = a.astype(np.float64), b.astype(np.float64)  # (rounded once, at the end)
    if rcond is None:
        rcond = np.finfo(dt).eps * max(m, n)
    k = min(m, n)
    if a.size:
        u, s, vh = np.linalg.svd(a, full_matrices=False)
    else:
        s = np.zeros(batch + (k,), dt)
    big = s[..., :1] if k else np.zeros(batch + (1,), dt)
    keep = s > rcond * big
    if a.size:
        inv = np.where(keep, 1 / np.where(keep, s, 1), 0)
        X = (vh.swapaxes(-1, -2) * inv[..., None, :]) @ (u.swapaxes(-1, -2) @ b)
    else:
        X = np.zeros(batch + (n, b.shape[-1]), dt)
    rank = keep.sum(-1).astype(np.int64)
    empty = np.zeros((0,), dt)
    res = empty
    if m > n and driver != "gelsy" and bool((rank == n).all()):
        res = ((a @ X - b) ** 2).sum(-2).astype(dt)
    return (X.astype(dt), res, rank if driver != "gels" else np.zeros((0,), np.int64),
            s.astype(dt) if driver in ("gelsd", "gelss") else empty)


def _linalg_lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution of A X = B, batched and broadcast (B may be a vector per
    matrix), with the residuals, rank and singular values the driver computes."""
    if type(A) is not Tensor:
        raise not_a_tensor(A, "linalg_lstsq", "self")
    if type(B) is not Tensor:
        raise not_a_tensor(B, "linalg_lstsq", "b", 2)
    a, b = A._data, B._data
    if a.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if b.ndim < 1 or not (0 <= a.ndim - b.ndim <= 1):
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to "
                           "other.dim() and (input.dim() - other.dim()) <= 1")
    if a.dtype.kind != "f" or b.dtype.kind != "f":
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to be floating point "
                           f"tensors, but got {_short(a)} and {_short(b)}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input with dtype {_short(a)} and other with dtype "
                           f"{_short(b)}")
    driver = "gelsy" if driver is None else driver
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of (gels, "
                           f"gelsy, gelsd, gelss), but got {driver}")
    vector = b.ndim == a.ndim - 1
    bm = b[..., None] if vector else b
    if bm.shape[-2] != a.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size("
                           f"{-1 if vector else -2})")
    X, res, rank, sv = _lstsq_kernel(a, bm, rcond, driver)
    if vector:
        X = X[..., 0]
        if res.size:
            res = res[..., 0]
    return dispatch(LinalgLstsq, (X, res, rank, sv), (A, B, rcond, driver))


linalg_lstsq_op = declare("linalg_lstsq", LinalgLstsq, function=_linalg_lstsq, methods=(),
                          functions=())


# ------------------------------------------------------------------------------------------ lu
def _perm_of(piv: np.ndarray, m: int) -> np.ndarray:
    """Row order (A[perm] = LU) of LAPACK's 1-based sequential row swaps, batched."""
    perm = np.broadcast_to(np.arange(m), piv.shape[:-1] + (m,)).copy()
    rows = np.ndindex(piv.shape[:-1])
    for b in rows:
        p = perm[b]
        for i, j in enumerate(piv[b] - 1):
            p[i], p[j] = p[j], p[i]
    return perm


def _pivots_of(perm: np.ndarray, k: int) -> np.ndarray:
    """LAPACK's 1-based sequential row swaps (int32) that put the rows in the order ``perm``."""
    piv = np.zeros(perm.shape[:-1] + (k,), np.int32)
    for b in np.ndindex(perm.shape[:-1]):
        cur = list(range(perm.shape[-1]))
        where = {r: i for i, r in enumerate(cur)}
        for i in range(k):
            j = where[perm[b][i]]
            cur[i], cur[j] = cur[j], cur[i]
            where[cur[i]], where[cur[j]] = i, j
            piv[b][i] = j + 1
    return piv


def _perm_matrix(perm: np.ndarray, dtype) -> np.ndarray:
    """P with A = P L U for the row order ``perm``: P[perm[i], i] = 1."""
    m = perm.shape[-1]
    P = np.zeros(perm.shape + (m,), dtype)
    np.put_along_axis(P, perm[..., :, None], 1, -1)
    return np.ascontiguousarray(P.swapaxes(-1, -2))


def _lu_kernel(d: np.ndarray) -> tuple:
    """(perm, L, U) of partial-pivoting LU, batched."""
    import scipy.linalg

    m, n = d.shape[-2:]
    k = min(m, n)
    if d.size == 0:
        batch = d.shape[:-2]
        L = np.zeros(batch + (m, k), d.dtype)
        U = np.zeros(batch + (k, n), d.dtype)
        if k:
            L[...] = np.eye(m, k, dtype=d.dtype)
        return np.broadcast_to(np.arange(m), batch + (m,)).copy(), L, U
    p, L, U = scipy.linalg.lu(d, p_indices=True)
    return np.argsort(p, axis=-1), L.astype(d.dtype), U.astype(d.dtype)


def _lu_square_backward(gL, gU, L, U):
    """gB for B = L U square: L⁻ᵀ [tril(Lᵀ gL, -1) + triu(gU Uᵀ)] U⁻ᵀ."""
    g = _tril(L.mT.matmul(gL), -1) + _triu(gU.matmul(U.mT))
    g = _solve(U.mT, g, upper=False, left=False)
    return _solve(L.mT, g, upper=True, unit=True)


def _lu_backward(gL, gU, P, L, U):
    """dA of the gradients of L and U (A = P L U), for any shape."""
    m, n = L.shape[-2], U.shape[-1]
    gL = L.new_zeros(L.shape) if gL is None else gL
    gU = U.new_zeros(U.shape) if gU is None else gU
    cat = namespace_of(L).cat
    if m == n:
        gB = _lu_square_backward(gL, gU, L, U)
    elif m < n:  # (U = [U1 U2]: U2 = L⁻¹ Pᵀ A2)
        U1, U2, gU2 = U.narrow(-1, 0, m), U.narrow(-1, m, n - m), gU.narrow(-1, m, n - m)
        gA2 = _solve(L.mT, gU2, upper=True, unit=True)
        gB = cat([_lu_square_backward(gL - gA2.matmul(U2.mT), gU.narrow(-1, 0, n - (n - m)),
                                      L, U1), gA2], -1)
    else:  # (L = [L1; L2]: L2 = B2 U⁻¹)
        L1, L2, gL2 = L.narrow(-2, 0, n), L.narrow(-2, n, m - n), gL.narrow(-2, n, m - n)
        gB2 = _solve(U.mT, gL2, upper=False, left=False)
        gB = cat([_lu_square_backward(gL.narrow(-2, 0, n), gU - L2.mT.matmul(gB2), L1, U),
                  gB2], -2)
    return P.matmul(gB)


def _lu_jvp(dA, P, L, U) -> tuple:
    """(dL, dU) of a tangent dA (A = P L U)."""
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    dB = P.mT.matmul(dA)
    L1, U1 = L.narrow(-2, 0, k), U.narrow(-1, 0, k)
    X = _solve(L1, dB.narrow(-2, 0, k).narrow(-1, 0, k), upper=False, unit=True)
    X = _solve(U1, X, upper=True, left=False)
    lower, upper = _tril(X, -1), _triu(X)
    cat = namespace_of(L).cat
    dL, dU = L1.matmul(lower), upper.matmul(U1)
    if n > m:
        dU2 = _solve(L1, dB.narrow(-1, m, n - m), upper=False, unit=True) - \
            lower.matmul(U.narrow(-1, m, n - m))
        dU = cat([dU, dU2], -1)
    if m > n:
        L2 = L.narrow(-2, n, m - n)
        dL2 = _solve(U, dB.narrow(-2, n, m - n), upper=True, left=False) - L2.matmul(upper)
        dL = cat([dL, dL2], -2)
    return dL, dU


def _split_lu(gLU, m: int, n: int) -> tuple:
    """The gradients of L and U that the packed LU's gradient stands for."""
    k = min(m, n)
    return _tril(gLU, -1).narrow(-1, 0, k), _triu(gLU).narrow(-2, 0, k)


def _pack_lu(dL, dU):
    """The packed LU's tangent: dL strictly below the diagonal, dU on and above it."""
    m, n = dL.shape[-2], dU.shape[-1]
    cat = namespace_of(dL).cat
    if m > n:
        dU = cat([dU, dU.new_zeros(dU.shape[:-2] + (m - n, n))], -2)
    elif n > m:
        dL = cat([dL, dL.new_zeros(dL.shape[:-2] + (m, n - m))], -1)
    return _tril(dL, -1) + _triu(dU)


def _unpack(LU, pivots) -> tuple:
    P, L, U = namespace_of(LU).lu_unpack(LU, pivots)
    return P, L, U


class LinalgLuFactorEx(Overload):
    """P A = L U packed into one matrix (L below the diagonal, U on and above), with LAPACK's
    pivots and info code."""

    node_name = "LinalgLuFactorExBackward0"
    args = ("A", "pivot", "check_errors")
    outputs = ("LU", "pivots", "info")
    non_differentiable = ("pivots", "info")
    returns = linalg_lu_factor_ex
    saved_fields = ("LU", "pivots")
    saved_attrs = ("pivot",)
    tensor_positions = (0,)

    @classmethod
    def forward(cls, A, pivot, check_errors):
        """The op on the tensors at hand (its keyword arguments are keyword-only)."""
        return namespace_of(A).linalg.lu_factor_ex(A, pivot=pivot, check_errors=check_errors)

    @staticmethod
    def backward(ctx, gLU, *_):
        LU, pivots = ctx.saved_tensors
        P, L, U = _unpack(LU, pivots)
        gL, gU = _split_lu(gLU, LU.shape[-2], LU.shape[-1])
        return _lu_backward(gL, gU, P, L, U), None, None

    @staticmethod
    def jvp(ctx, dA, *_):
        LU, pivots = ctx.saved_tensors
        P, L, U = _unpack(LU, pivots)
        return _pack_lu(*_lu_jvp(dA, P, L, U)), None, None


def _lu_factor_check(A, name: str, pivot: bool) -> np.ndarray:
    if type(A) is not Tensor:
        raise not_a_tensor(A, name.rpartition(".")[2], "A")
    d = A._data
    if d.ndim < 2:
        shape = ", ".join(str(s) for s in d.shape)
        raise RuntimeError(f"{name}: Expected tensor with 2 or more dimensions. Got size: "
                           f"[{shape}] instead")
    _not_implemented(d, "lu_cpu")
    if not pivot:
        raise RuntimeError(f"{name}: LU without pivoting is not implemented on the CPU")
    return d


def _lu_factor_arrays(d: np.ndarray) -> tuple:
    m, n = d.shape[-2:]
    k = min(m, n)
    perm, L, U = _lu_kernel(d)
    LU = np.zeros(d.shape, d.dtype)
    LU[..., :, :k] = np.tril(L, -1)
    LU[..., :k, :] += np.triu(U)
    diag = np.diagonal(U, axis1=-2, axis2=-1)
    zero = diag == 0
    info = np.where(zero.any(-1), zero.argmax(-1) + 1, 0).astype(np.int32)
    return LU, _pivots_of(perm, k), info


def _linalg_lu_factor_ex(A, *, pivot: bool = True, check_errors: bool = False, out=None):
    """The packed LU decomposition with partial pivoting, its pivots and info code."""
    d = _lu_factor_check(A, "linalg.lu_factor_ex", pivot)
    LU, piv, info = _lu_factor_arrays(d)
    if check_errors:
        _raise_info(info, "torch.linalg.lu_factor_ex", "U[{0},{0}] is zero")
    return dispatch(LinalgLuFactorEx, (LU, piv, info), (A, pivot, check_errors))


def _linalg_lu_factor(A, *, pivot: bool = True, out=None):
    """The packed LU decomposition with partial pivoting, and its pivots."""
    d = _lu_factor_check(A, "torch.lu_factor", pivot)
    LU, piv, info = _lu_factor_arrays(d)
    bad = np.flatnonzero(info.reshape(-1))
    if bad.size:
        i = int(info.reshape(-1)[bad[0]])
        raise RuntimeError(f"torch.linalg.lu_factor: U[{i},{i}] is zero and using it on "
                           "lu_solve would result in a division by zero. If you still want to "
                           "perform the factorization, consider calling linalg.lu(A, pivot) or "
                           "linalg.lu_factor_ex(A, pivot)")
    out = dispatch(LinalgLuFactorEx, (LU, piv, info), (A, pivot, False))
    return linalg_lu_factor(out[0], out[1])


def _lu(A, pivot: bool = True, get_infos: bool = False):
    """torch.lu: the packed LU decomposition and pivots (and the info codes)."""
    d = _lu_factor_check(A, "torch.lu", pivot)
    LU, piv, info = _lu_factor_arrays(d)
    if not get_infos:
        _raise_info(info, "torch.linalg.lu_factor_ex", "U[{0},{0}] is zero")
    out = dispatch(LinalgLuFactorEx, (LU, piv, info), (A, pivot, not get_infos))
    return tuple(out) if get_infos else (out[0], out[1])


class LinalgLu(Overload):
    """A = P L U, unpacked (P a permutation matrix, without a gradient)."""

    node_name = "LinalgLuBackward0"
    args = ("A", "pivot")
    outputs = ("L", "U", "P")
    non_differentiable = ("P",)
    saved_fields = ("L", "P", "U")
    saved_attrs = ("pivot",)
    tensor_positions = (0,)

    @classmethod
    def forward(cls, A, pivot):
        """The op on the tensors at hand (its keyword arguments are keyword-only)."""
        P, L, U = namespace_of(A).linalg.lu(A, pivot=pivot)
        return L, U, P  # (in the order of ``outputs``: P, without a gradient, last)

    @staticmethod
    def backward(ctx, gL, gU, gP=None):
        L, P, U = ctx.saved_tensors
        return _lu_backward(gL, gU, P, L, U), None

    @staticmethod
    def jvp(ctx, dA, _):
        L, P, U = ctx.saved_tensors
        return (*_lu_jvp(dA, P, L, U), None)


def _linalg_lu(A, *, pivot: bool = True, out=None):
    """A = P L U with partial pivoting: the permutation, the unit lower and the upper factor."""
    d = _lu_factor_check(A, "linalg.lu", pivot)
    perm, L, U = _lu_kernel(d)
    Lt, Ut, P = dispatch(LinalgLu, (L, U, _perm_matrix(perm, d.dtype)), (A, pivot))
    return linalg_lu(P, Lt, Ut)


class LuUnpack(Overload):
    """L and U taken out of a packed LU (and P made of the pivots, without a gradient)."""

    node_name = "LuUnpackBackward0"
    args = ("LU_data", "LU_pivots", "unpack_data", "unpack_pivots")
    outputs = ("L", "U", "P")
    non_differentiable = ("P",)
    saved_attrs = ("LU_data_sym_argsize_minus_1", "LU_data_sym_argsize_minus_2")
    tensor_positions = (0,)

    @classmethod
    def forward(cls, LU_data, LU_pivots, unpack_data, unpack_pivots):
        """The op on the tensors at hand (its keyword arguments are keyword-only)."""
        P, L, U = namespace_of(LU_data).lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots)
        return L, U, P  # (in the order of ``outputs``: P, without a gradient, last)

    @staticmethod
    def backward(ctx, gL, gU, gP=None):
        m, n = ctx.LU_data_sym_argsize_minus_2, ctx.LU_data_sym_argsize_minus_1
        k = min(m, n)
        ref = gL if gL is not None else gU
        gL = ref.new_zeros(ref.shape[:-2] + (m, k)) if gL is None else gL
        gU = ref.new_zeros(ref.shape[:-2] + (k, n)) if gU is None else gU
        return _pack_lu(gL, gU), None, None, None

    @staticmethod
    def jvp(ctx, dLU, *_):
        m, n = dLU.shape[-2], dLU.shape[-1]
        dL, dU = _split_lu(dLU, m, n)
        return dL, dU, None


def _lu_unpack(LU_data, LU_pivots, unpack_data: bool = True, unpack_pivots: bool = True, *,
               out=None):
    """P, L and U of a packed LU and its pivots (empty where not asked for)."""
    if type(LU_data) is not Tensor:
        raise not_a_tensor(LU_data, "lu_unpack", "LU_data")
    if type(LU_pivots) is not Tensor:
        raise not_a_tensor(LU_pivots, "lu_unpack", "LU_pivots", 2)
    d, piv = LU_data._data, LU_pivots._data
    if d.ndim < 2:
        raise RuntimeError("torch.lu_unpack: LU_data must have at least 2 dimensions")
    m, n = d.shape[-2:]
    k = min(m, n)
    empty = np.zeros((0,), d.dtype)
    L = U = P = empty
    if unpack_data:
        L = np.tril(d[..., :, :k], -1) + np.eye(m, k, dtype=d.dtype)
        U = np.triu(d[..., :k, :])
    if unpack_pivots:
        if piv.dtype != np.int32:
            raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor "
                               "of torch.int32 dtype.")
        P = _perm_matrix(_perm_of(piv, m), d.dtype)
    Lt, Ut, Pt = dispatch(LuUnpack, (L, U, P), (LU_data, LU_pivots, unpack_data, unpack_pivots))
    return lu_unpack_result(Pt, Lt, Ut)


# ------------------------------------------------------------------------------------ lu_solve
def _lu_solve_backward(gX, LU, pivots, X, left: bool, adjoint: bool, needs: tuple) -> tuple:
    """(dLU, dB) of the solution's gradient."""
    lu_solve_ = namespace_of(LU).linalg.lu_solve
    gB = lu_solve_(LU, pivots, gX, left=left, adjoint=not adjoint)
    gLU = None
    if needs[0]:
        if left:
            gA = -gB.matmul(X.mT) if not adjoint else -X.matmul(gB.mT)
        else:
            gA = -X.mT.matmul(gB) if not adjoint else -gB.mT.matmul(X)
        P, L, U = _unpack(LU, pivots)
        gA = P.mT.matmul(gA)
        gLU = _reduce_to(_tril(gA.matmul(U.mT), -1) + _triu(L.mT.matmul(gA)), tuple(LU.shape))
    return gLU, gB


class LinalgLuSolve(Overload):
    """X with A X = B (or Aᴴ X = B, X A = B, X Aᴴ = B) for A given as its packed LU."""

    node_name = "LinalgLuSolveBackward0"
    args = ("LU", "pivots", "B", "left", "adjoint")
    saved_fields = ("LU", "pivots", "result")
    saved_attrs = ("adjoint", "left")
    tensor_positions = (0, 2)

    @classmethod
    def forward(cls, LU, pivots, B, left, adjoint):
        """The op on the tensors at hand (its keyword arguments are keyword-only)."""
        return namespace_of(LU).linalg.lu_solve(LU, pivots, B, left=left, adjoint=adjoint)

    @staticmethod
    def backward(ctx, gX):
        LU, pivots, X = ctx.saved_tensors
        needs = ctx.needs_input_grad
        gLU, gB = _lu_solve_backward(gX, LU, pivots, X, ctx.left, ctx.adjoint,
                                     (needs[0], needs[2]))
        if gB is not None:
            gB = gB if needs[2] else None
        return gLU, None, gB, None, None

    @staticmethod
    def jvp(ctx, dLU, _, dB, *__):
        LU, pivots, X = ctx.saved_tensors
        lu_solve_ = namespace_of(LU).linalg.lu_solve
        left, adjoint = ctx.left, ctx.adjoint
        rhs = None
        if dLU is not None:
            P, L, U = _unpack(LU, pivots)
            dL, dU = _split_lu(dLU, LU.shape[-2], LU.shape[-1])
            dA = P.matmul(dL.matmul(U) + L.matmul(dU))
            dA = dA.mT if adjoint else dA
            rhs = -(dA.matmul(X) if left else X.matmul(dA))
        if dB is not None:
            rhs = dB if rhs is None else rhs + dB
        return lu_solve_(LU, pivots, rhs, left=left, adjoint=adjoint)


def _lu_solve_kernel(LU: np.ndarray, piv: np.ndarray, B: np.ndarray, left: bool,
                     adjoint: bool) -> np.ndarray:
    n = LU.shape[-1]
    L = np.tril(LU, -1) + np.eye(n, dtype=LU.dtype)
    A = _perm_matrix(_perm_of(piv, n), LU.dtype) @ (L @ np.triu(LU))
    if adjoint:
        A = A.swapaxes(-1, -2)
    if not left:
        A, B = A.swapaxes(-1, -2), B.swapaxes(-1, -2)
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    A = np.broadcast_to(A, batch + A.shape[-2:])
    B = np.broadcast_to(B, batch + B.shape[-2:])
    X = np.linalg.solve(A, B) if A.size and B.size else np.zeros(B.shape, B.dtype)
    return np.ascontiguousarray(X if left else X.swapaxes(-1, -2)).astype(LU.dtype)


def _linalg_lu_solve(LU, pivots, B, *, left: bool = True, adjoint: bool = False, out=None):
    """The solution of A X = B (``left``; else X A = B; ``adjoint``: with Aᴴ) for A given by
    its packed LU decomposition and pivots."""
    for value, arg, pos in ((LU, "LU", 1), (pivots, "pivots", 2), (B, "B", 3)):
        if type(value) is not Tensor:
            raise not_a_tensor(value, "linalg_lu_solve", arg, pos)
    d, piv, b = LU._data, pivots._data, B._data
    if d.ndim < 2 or d.shape[-1] != d.shape[-2]:
        raise RuntimeError("linalg.lu_solve: LU must be batches of square matrices")
    if d.dtype != b.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but "
                           f"found LU of type {_short(d)} and B of type {_short(b)} instead")
    if b.ndim < 2 or b.shape[-2 if left else -1] != d.shape[-1]:
        raise RuntimeError("linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           + ("AX = B" if left else "XA = B"))
    X = _lu_solve_kernel(d, piv, b, left, adjoint)
    return dispatch(LinalgLuSolve, X, (LU, pivots, B, left, adjoint))


def _lu_solve(input, LU_data, LU_pivots, *, out=None):
    """torch.lu_solve: the solution of A X = ``input`` for A's packed LU and pivots."""
    return _linalg_lu_solve(LU_data, LU_pivots, input)


linalg_lu_factor_ex_op = declare("linalg_lu_factor_ex", LinalgLuFactorEx,
                                 function=_linalg_lu_factor_ex, methods=(), functions=())
linalg_lu_factor_op = declare("linalg_lu_factor", function=_linalg_lu_factor, methods=(),
                              functions=())
lu = declare("lu", function=_lu)
linalg_lu_op = declare("linalg_lu", LinalgLu, function=_linalg_lu, methods=(), functions=())
lu_unpack = declare("lu_unpack", LuUnpack, function=_lu_unpack, methods=())
linalg_lu_solve = declare("linalg_lu_solve", LinalgLuSolve, function=_linalg_lu_solve,
                          methods=(), functions=())
lu_solve = declare("lu_solve", function=_lu_solve)


# ------------------------------------------------------------------- householder reflectors
def _below(x, i: int, strict: bool = True):
    """Column ``i`` of a batch of matrices, zero on and above row ``i`` (``strict``)."""
    r = namespace_of(x).arange(x.shape[-2]).unsqueeze(-1)
    return x.narrow(-1, i, 1) * (r > i).to(x.dtype)


def _reflector(A, i: int):
    """v_i: column i of A below the diagonal, with a 1 on it (the Householder vector)."""
    r = namespace_of(A).arange(A.shape[-2]).unsqueeze(-1)
    return _below(A, i) + (r == i).to(A.dtype)


def _reflect(v, t, X):
    """H X = X - t v (vᵀ X), H = I - t v vᵀ."""
    return X - t * v.matmul(v.mT.matmul(X))


def _taus(tau, k: int) -> list:
    return [tau.narrow(-1, i, 1).unsqueeze(-1) for i in range(k)]


def _reflect_all(A, tau, X, order: list):
    """H_{order[0]} ⋯ H_{order[-1]} X, and the intermediate products (the last first)."""
    taus = _taus(tau, tau.shape[-1])
    steps = [X]
    for i in reversed(order):
        X = _reflect(_reflector(A, i), taus[i], X)
        steps.append(X)
    return X, steps


def _reflect_vjp(A, tau, X, order: list, G) -> tuple:
    """(gA, gtau, gX) of Y = H_{order[0]} ⋯ H_{order[-1]} X for Y's gradient G."""
    ns = namespace_of(A)
    k = tau.shape[-1]
    taus = _taus(tau, k)
    _, steps = _reflect_all(A, tau, X, order)
    cols = [None] * A.shape[-1]
    gtaus = [None] * k
    for step, i in enumerate(order):
        v, t = _reflector(A, i), taus[i]
        X_in = steps[len(order) - 1 - step]  # (what H_i is applied to)
        vG, vX = v.mT.matmul(G), v.mT.matmul(X_in)  # (1 x p each)
        gtaus[i] = -(vG * vX).sum((-2, -1))
        gv = -t * (G.matmul(vX.mT) + X_in.matmul(vG.mT))
        cols[i] = _below(gv, 0) if i == 0 else gv * _below_mask(gv, i)
        G = _reflect(v, t, G)
    zero = A.new_zeros(A.shape[:-1] + (1,))
    # (an empty one is still made of the inputs: it is part of the graph, as torch's)
    gA = ns.cat([zero if c is None else c for c in cols], -1) if cols else A * 0
    gtau = ns.stack(gtaus, -1) if k else tau * 0
    return gA, gtau, G


def _below_mask(x, i: int):
    r = namespace_of(x).arange(x.shape[-2]).unsqueeze(-1)
    return (r > i).to(x.dtype)


def _reflect_jvp(A, tau, X, order: list, dA, dtau, dX):
    """The tangent of Y = H_{order[0]} ⋯ H_{order[-1]} X."""
    taus = _taus(tau, tau.shape[-1])
    dtaus = None if dtau is None else _taus(dtau, dtau.shape[-1])
    dY = dX
    for i in reversed(order):
        v, t = _reflector(A, i), taus[i]
        vX = v.mT.matmul(X)
        term = None
        if dtaus is not None:
            term = -dtaus[i] * v.matmul(vX)
        if dA is not None:
            dv = _below(dA, i)
            more = -t * (dv.matmul(vX) + v.matmul(dv.mT.matmul(X)))
            term = more if term is None else term + more
        dY = (_reflect(v, t, dY) if dY is not None else None)
        if term is not None:
            dY = term if dY is None else dY + term
        X = _reflect(v, t, X)
    return dY if dY is not None else X.new_zeros(X.shape)


def _identity_columns(A, n: int):
    """The first n columns of the identity, batched as A."""
    m = A.shape[-2]
    ns = namespace_of(A)
    return ns.eye(m, n, dtype=A.dtype).expand(A.shape[:-2] + (m, n))


class LinalgHouseholderProduct(Overload):
    """The first n columns of H_1 ⋯ H_k, H_i = I - tau_i v_i v_iᵀ."""

    node_name = "LinalgHouseholderProductBackward0"
    args = ("input", "tau")
    saved_fields = ("input", "result", "tau")
    tensor_positions = (0, 1)

    @staticmethod
    def backward(ctx, grad):
        A, _, tau = ctx.saved_tensors
        E = _identity_columns(A, A.shape[-1])
        gA, gtau, _ = _reflect_vjp(A, tau, E, list(range(tau.shape[-1])), grad)
        return gA, gtau

    @staticmethod
    def jvp(ctx, dA, dtau):
        A, _, tau = ctx.saved_tensors
        E = _identity_columns(A, A.shape[-1])
        return _reflect_jvp(A, tau, E, list(range(tau.shape[-1])), dA, dtau, None)


def _householder_np(a: np.ndarray, tau: np.ndarray, X: np.ndarray, order: list) -> np.ndarray:
    """H_{order[0]} ⋯ H_{order[-1]} X on arrays."""
    m = a.shape[-2]
    rows = np.arange(m)[:, None]
    for i in reversed(order):
        v = np.where(rows > i, a[..., :, i:i + 1], 0) + (rows == i)
        t = tau[..., i, None, None]
        X = X - t * (v @ (v.swapaxes(-1, -2) @ X))
    return X


def _linalg_householder_product(input, tau, *, out=None):
    """The first n columns of the product of the Householder reflectors given by ``input``'s
    columns below the diagonal and ``tau``."""
    if type(input) is not Tensor:
        raise not_a_tensor(input, "linalg_householder_product", "input")
    if type(tau) is not Tensor:
        raise not_a_tensor(tau, "linalg_householder_product", "tau", 2)
    a, t = input._data, tau._data
    if a.ndim < 2:
        raise RuntimeError("torch.linalg.householder_product: input must have at least 2 "
                           "dimensions.")
    m, n = a.shape[-2:]
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater "
                           "than or equal to input.shape[-1]")
    if t.shape[-1] > n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater "
                           "than or equal to tau.shape[-1]")
    if a.ndim - t.ndim != 1:
        raise RuntimeError("torch.linalg.householder_product: Expected tau to have one "
                           "dimension less than input")
    if a.dtype != t.dtype:
        raise RuntimeError(f"torch.linalg.householder_product: tau dtype {FROM_NUMPY[t.dtype]} "
                           f"does not match input dtype {FROM_NUMPY[a.dtype]}")
    E = np.broadcast_to(np.eye(m, n, dtype=a.dtype), a.shape)
    Q = _householder_np(a, t, E, list(range(t.shape[-1]))).astype(a.dtype)
    return dispatch(LinalgHouseholderProduct, np.ascontiguousarray(Q), (input, tau))


def _ormqr_order(k: int, left: bool, transpose: bool) -> tuple:
    """(order, transposed): op(Q) C = H_{order[0]} ⋯ X, with X = C, or Cᵀ for a right product
    (C op(Q) = (op(Q)ᵀ Cᵀ)ᵀ)."""
    forward = list(range(k))
    apply_q = (not transpose) if left else transpose  # (Q, not Qᵀ, on the left of X)
    return (forward if apply_q else forward[::-1]), not left


class Ormqr(Overload):
    """op(Q) C or C op(Q), Q = H_1 ⋯ H_k given by its Householder reflectors."""

    node_name = "OrmqrBackward0"
    args = ("self", "input2", "input3", "left", "transpose")
    saved_fields = ("input2", "input3", "result", "self")
    saved_attrs = ("left", "transpose")
    tensor_positions = (0, 1, 2)

    @staticmethod
    def backward(ctx, grad):
        tau, C, _, A = ctx.saved_tensors
        order, flip = _ormqr_order(tau.shape[-1], ctx.left, ctx.transpose)
        X = C.mT if flip else C
        gA, gtau, gX = _reflect_vjp(A, tau, X, order, grad.mT if flip else grad)
        return gA, gtau, (gX.mT if flip else gX), None, None

    @staticmethod
    def jvp(ctx, dA, dtau, dC, *_):
        tau, C, _, A = ctx.saved_tensors
        order, flip = _ormqr_order(tau.shape[-1], ctx.left, ctx.transpose)
        X = C.mT if flip else C
        dX = None if dC is None else (dC.mT if flip else dC)
        dY = _reflect_jvp(A, tau, X, order, dA, dtau, dX)
        return dY.mT if flip else dY

    @classmethod
    def forward(cls, A, tau, C, left, transpose):
        """The op on the tensors at hand, composed of the reflections (torch's ormqr has no
        forward-mode rule; this composition has one)."""
        order, flip = _ormqr_order(tau.shape[-1], left, transpose)
        Y, _ = _reflect_all(A, tau, C.mT if flip else C, order)
        return Y.mT if flip else Y


def _ormqr(input, input2, input3, left: bool = True, transpose: bool = False, *, out=None):
    """op(Q) @ other (``left``) or other @ op(Q), Q given by geqrf's reflectors (``input``) and
    scales (``input2``), op the transpose when ``transpose``."""
    for value, arg, pos in ((input, "input", 1), (input2, "input2", 2), (input3, "input3", 3)):
        if type(value) is not Tensor:
            raise not_a_tensor(value, "ormqr", arg, pos)
    a, t, c = input._data, input2._data, input3._data
    if a.ndim < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    if c.ndim < 2:
        raise RuntimeError("torch.ormqr: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if t.shape[-1] > a.shape[-1]:
        raise RuntimeError("torch.ormqr: tau.shape[-1] must be less than or equal to "
                           "input.shape[-1]")
    if t.shape[-1] != min(c.shape[side], a.shape[-1]) and left:
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[-2], "
                           f"input.shape[-1]), but got tau.shape[-1] = {t.shape[-1]}")
    if c.shape[side] != a.shape[-2]:
        raise RuntimeError(f"torch.ormqr: other.shape[{side}] must be equal to "
                           f"input.shape[-2], but got {c.shape[side]} and {a.shape[-2]}")
    if not (a.dtype == t.dtype == c.dtype):
        raise RuntimeError("torch.ormqr: Expected input, input2 and input3 to have the same "
                           "dtype")
    order, flip = _ormqr_order(t.shape[-1], left, transpose)
    X = c.swapaxes(-1, -2) if flip else c
    Y = _householder_np(a, t, X, order)
    Y = np.ascontiguousarray(Y.swapaxes(-1, -2) if flip else Y).astype(c.dtype)
    return dispatch(Ormqr, Y, (input, input2, input3, left, transpose))


def _geqrf(input, *, out=None):
    """LAPACK's QR: R on and above the diagonal, the Householder vectors below, and their
    scales."""
    import scipy.linalg

    if type(input) is not Tensor:
        raise not_a_tensor(input, "geqrf")
    d = input._data
    if d.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    _not_implemented(d, "geqrf_cpu")
    m, n = d.shape[-2:]
    a = np.zeros(d.shape, d.dtype)
    tau = np.zeros(d.shape[:-2] + (min(m, n),), d.dtype)
    if d.size:
        fn = scipy.linalg.get_lapack_funcs("geqrf", (d,))
        for i in np.ndindex(d.shape[:-2]):
            qr_, t, *_ = fn(d[i])
            a[i], tau[i] = qr_, t[: min(m, n)]
    return geqrf_result(wrap(a), wrap(tau))


linalg_householder_product = declare("linalg_householder_product", LinalgHouseholderProduct,
                                     function=_linalg_householder_product,
                                     methods=("orgqr",), functions=("orgqr",))
ormqr = declare("ormqr", Ormqr, function=_ormqr)
geqrf = declare("geqrf", function=_geqrf)


# ----------------------------------------------------------------------------------------- ldl
def _ldl_arrays(d: np.ndarray, hermitian: bool) -> tuple:
    import scipy.linalg

    LD = np.zeros(d.shape, d.dtype)
    piv = np.zeros(d.shape[:-1], np.int32)
    info = np.zeros(d.shape[:-2], np.int32)
    if d.size:
        fn = scipy.linalg.get_lapack_funcs("sytrf", (d,))
        for i in np.ndindex(d.shape[:-2]):
            ld, ipiv, inf = fn(d[i], lower=1)
            LD[i], piv[i], info[i] = np.tril(ld), ipiv, inf
    return LD, piv, info


def _ldl_check(A, name: str) -> np.ndarray:
    if type(A) is not Tensor:
        raise not_a_tensor(A, name.rpartition(".")[2])
    return _matrices(A, name)


def _linalg_ldl_factor_ex(A, *, hermitian: bool = False, check_errors: bool = False, out=None):
    """The LDLᵀ (Bunch-Kaufman) factorization packed as LAPACK gives it, its pivots and info."""
    d = _ldl_check(A, "torch.linalg.ldl_factor_ex")
    LD, piv, info = _ldl_arrays(d, hermitian)
    if check_errors:
        _raise_info(info, "torch.linalg.ldl_factor_ex", "The factorization could not be "
                    "completed because the input is singular (D[{0},{0}] is zero).")
    return linalg_ldl_factor_ex(wrap(LD), wrap(piv), wrap(info))


def _linalg_ldl_factor(A, *, hermitian: bool = False, out=None):
    """The LDLᵀ (Bunch-Kaufman) factorization packed as LAPACK gives it, and its pivots."""
    d = _ldl_check(A, "torch.linalg.ldl_factor_ex")
    LD, piv, info = _ldl_arrays(d, hermitian)
    _raise_info(info, "torch.linalg.ldl_factor", "The factorization could not be completed "
                "because the input is singular (D[{0},{0}] is zero).")
    return linalg_ldl_factor(wrap(LD), wrap(piv))


def _linalg_ldl_solve(LD, pivots, B, *, hermitian: bool = False, out=None):
    """The solution of A X = B for A given by its packed LDLᵀ factorization and pivots."""
    import scipy.linalg

    for value, arg, pos in ((LD, "LD", 1), (pivots, "pivots", 2), (B, "B", 3)):
        if type(value) is not Tensor:
            raise not_a_tensor(value, "linalg_ldl_solve", arg, pos)
    ld, piv, b = LD._data, pivots._data, B._data
    if ld.ndim < 2 or ld.shape[-1] != ld.shape[-2]:
        raise RuntimeError("torch.linalg.ldl_solve: LD must be batches of square matrices")
    if b.ndim < 2 or b.shape[-2] != ld.shape[-1]:
        raise RuntimeError("torch.linalg.ldl_solve: Incompatible shapes of A and B for the "
                           "equation AX = B")
    if ld.dtype != b.dtype:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected LD and B to have the same dtype, "
                           f"but found LD of type {_short(ld)} and B of type {_short(b)} instead")
    batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    ldb = np.broadcast_to(ld, batch + ld.shape[-2:])
    pb = np.broadcast_to(piv, batch + piv.shape[-1:])
    bb = np.broadcast_to(b, batch + b.shape[-2:])
    X = np.zeros(bb.shape, b.dtype)
    if X.size:
        fn = scipy.linalg.get_lapack_funcs("sytrs", (ldb,))
        for i in np.ndindex(batch):
            X[i], _ = fn(ldb[i], pb[i], bb[i], lower=1)
    return wrap(X)


linalg_ldl_factor_ex_op = declare("linalg_ldl_factor_ex", function=_linalg_ldl_factor_ex,
                                  methods=(), functions=())
linalg_ldl_factor_op = declare("linalg_ldl_factor", function=_linalg_ldl_factor, methods=(),
                               functions=())
linalg_ldl_solve = declare("linalg_ldl_solve", function=_linalg_ldl_solve, methods=(),
                           functions=())


# ---------------------------------------------------------------------- randomized low rank
def _approximate_basis(A, q: int, niter: int, M):
    """Orthonormal columns spanning about the range of A - M: a random projection refined by
    ``niter`` power iterations (each re-orthonormalized by QR)."""
    T = namespace_of(A)
    dtype = A.dtype if A.dtype.is_floating_point else T.float32
    R = T.randn(A.shape[-1], q, dtype=dtype)
    X = A.matmul(R) if M is None else A.matmul(R) - M.matmul(R)
    Q = linalg_qr_op(X).Q
    for _ in range(niter):
        X = A.mT.matmul(Q) if M is None else A.mT.matmul(Q) - M.mT.matmul(Q)
        Q = linalg_qr_op(X).Q
        X = A.matmul(Q) if M is None else A.matmul(Q) - M.matmul(Q)
        Q = linalg_qr_op(X).Q
    return Q


def _lowrank(A, q: int, niter: int, M) -> tuple:
    m, n = A.shape[-2:]
    if M is not None:
        M = M.expand(A.shape)
    wide = m < n
    if wide:  # (the algorithm takes a tall matrix: the transpose's factors, swapped)
        A = A.mT
        M = None if M is None else M.mT
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mT.matmul(A) if M is None else Q.mT.matmul(A) - Q.mT.matmul(M)
    U, S, Vh = linalg_svd_op(B, full_matrices=False)
    V, U = Vh.mT, Q.matmul(U)
    return (V, S, U) if wide else (U, S, V)


def _svd_lowrank(A, q: int | None = 6, niter: int | None = 2, M=None) -> tuple:
    """An approximate rank-``q`` SVD (U, S, V) of A - M by random projection."""
    if type(A) is not Tensor:
        raise not_a_tensor(A, "svd_lowrank", "A")
    return _lowrank(A, 6 if q is None else q, 2 if niter is None else niter, M)


def _pca_lowrank(A, q: int | None = None, center: bool = True, niter: int = 2) -> tuple:
    """An approximate rank-``q`` SVD (U, S, V) of A with its column means taken away
    (``center``)."""
    if type(A) is not Tensor:
        raise not_a_tensor(A, "pca_lowrank", "A")
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _lowrank(A, q, niter, None)
    return _lowrank(A - A.mean(dim=(-2,), keepdim=True), q, niter, None)


svd_lowrank = declare("svd_lowrank", function=_svd_lowrank, methods=())
pca_lowrank = declare("pca_lowrank", function=_pca_lowrank, methods=())


LINALG: dict = {
    "LinAlgError": LinAlgError,
    "cholesky": linalg_cholesky,
    "cholesky_ex": linalg_cholesky_ex_op,
    "qr": linalg_qr_op,
    "eigh": linalg_eigh_op,
    "eigvalsh": linalg_eigvalsh,
    "svd": linalg_svd_op,
    "svdvals": linalg_svdvals,
    "pinv": linalg_pinv,
    "matrix_rank": linalg_matrix_rank,
    "lstsq": linalg_lstsq_op,
    "lu_factor": linalg_lu_factor_op,
    "lu_factor_ex": linalg_lu_factor_ex_op,
    "lu": linalg_lu_op,
    "lu_solve": linalg_lu_solve,
    "householder_product": linalg_householder_product,
    "ldl_factor": linalg_ldl_factor_op,
    "ldl_factor_ex": linalg_ldl_factor_ex_op,
    "ldl_solve": linalg_ldl_solve,
}
