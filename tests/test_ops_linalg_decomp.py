"""The matrix decompositions (cholesky, qr, eigh, svd, pinv, lstsq, the lu and ldl families,
householder products), run on both engines: nodes and saves as torch's, gradients checked
numerically, torch's errors, and torch's op database."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import ext

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).parent))

_rng = np.random.default_rng(21)
_A = _rng.uniform(-1, 1, (4, 4))
_TALL = _rng.uniform(-1, 1, (5, 3))
_WIDE = _rng.uniform(-1, 1, (3, 5))
_B = _rng.uniform(-1, 1, (4, 2))
_PD = _A @ _A.T + 4 * np.eye(4)
_SYM = _A + _A.T


def _leaf(T, a):
    return T.tensor(a, dtype=T.float64, requires_grad=True)


def _saved(node) -> set:
    return {a for a in dir(node) if a.startswith("_saved_")}


# (node name, a function of the backend giving a tensor made by that node)
NODES = [
    ("LinalgCholeskyExBackward0", lambda T: T.linalg.cholesky(_leaf(T, _PD))),
    ("LinalgCholeskyExBackward0", lambda T: T.linalg.cholesky_ex(_leaf(T, _PD), upper=True).L),
    ("CholeskyBackward0", lambda T: T.cholesky(_leaf(T, _PD))),
    ("LinalgQrBackward0", lambda T: T.linalg.qr(_leaf(T, _TALL)).Q),
    ("LinalgQrBackward0", lambda T: T.qr(_leaf(T, _WIDE), some=False).R),
    ("LinalgEighBackward0", lambda T: T.linalg.eigh(_leaf(T, _SYM)).eigenvectors),
    ("LinalgEighBackward0", lambda T: T.linalg.eigvalsh(_leaf(T, _SYM), UPLO="U")),
    ("LinalgSvdBackward0", lambda T: T.linalg.svd(_leaf(T, _TALL)).U),
    ("LinalgSvdBackward0", lambda T: T.linalg.svdvals(_leaf(T, _WIDE))),
    ("LinalgSvdBackward0", lambda T: T.svd(_leaf(T, _TALL)).U),
    ("LinalgPinvBackward0", lambda T: T.linalg.pinv(_leaf(T, _WIDE))),
    ("LinalgPinvBackward0", lambda T: T.pinverse(_leaf(T, _TALL))),
    ("LinalgLstsqBackward0", lambda T: T.linalg.lstsq(_leaf(T, _A), _leaf(T, _B)).solution),
    ("LinalgLuFactorExBackward0", lambda T: T.linalg.lu_factor(_leaf(T, _TALL)).LU),
    ("LinalgLuFactorExBackward0", lambda T: T.linalg.lu_factor_ex(_leaf(T, _A)).LU),
    ("LinalgLuBackward0", lambda T: T.linalg.lu(_leaf(T, _WIDE)).L),
    ("LuUnpackBackward0", lambda T: T.lu_unpack(*T.linalg.lu_factor(_leaf(T, _TALL))).L),
    ("LinalgLuSolveBackward0",
     lambda T: T.linalg.lu_solve(*T.linalg.lu_factor(_leaf(T, _A)), _leaf(T, _B))),
    ("LinalgHouseholderProductBackward0",
     lambda T: T.linalg.householder_product(_leaf(T, _TALL), _leaf(T, _TALL[0] / 2))),
    ("OrmqrBackward0",
     lambda T: T.ormqr(_leaf(T, _A), _leaf(T, _A[0] / 2), _leaf(T, _B), transpose=True)),
]


@pytest.mark.parametrize(("node", "make"), NODES, ids=[n for n, _ in NODES])
def test_node_name_and_saved_fields_as_torch(T, node, make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = make(T)
        theirs = make(torch)
    assert type(out.grad_fn).__name__ == node
    assert _saved(out.grad_fn) == _saved(theirs.grad_fn)


def test_saved_values_are_the_outputs_and_arguments(T):
    A = _leaf(T, _PD)
    L = T.linalg.cholesky(A, upper=True)
    assert L.grad_fn._saved_upper is True
    assert T.equal(L.grad_fn._saved_L, L)
    U, S, Vh = T.linalg.svd(_leaf(T, _WIDE), full_matrices=False)
    assert U.grad_fn._saved_full_matrices is False
    assert U.grad_fn._saved_S_sym_argsize_minus_1 == 3
    assert T.equal(U.grad_fn._saved_S, S)
    Q, R = T.linalg.qr(_leaf(T, _TALL), mode="complete")
    assert Q.grad_fn._saved_mode == "complete"


def _e(a):
    return ext.tensor(a, dtype=ext.float64, requires_grad=True)


def _sym(f):
    """``f`` of the symmetric part of its argument (the input a symmetric op reads)."""
    return lambda a: f(a + a.mT)


# (name, function of ext tensors, inputs): gauge-invariant where the factors are not unique
GRADCHECKS = [
    ("linalg.cholesky", _sym(lambda a: ext.linalg.cholesky(a + 4 * ext.eye(4, dtype=a.dtype))),
     (_A,)),
    ("cholesky upper", _sym(lambda a: ext.cholesky(a + 4 * ext.eye(4, dtype=a.dtype), True)),
     (_A,)),
    ("linalg.qr", lambda a: ext.linalg.qr(a), (_TALL,)),
    ("linalg.qr wide", lambda a: ext.linalg.qr(a), (_WIDE,)),
    ("linalg.eigh", _sym(lambda a: (ext.linalg.eigh(a).eigenvalues,
                                    ext.linalg.eigh(a).eigenvectors.abs())), (_A,)),
    ("linalg.svd", lambda a: (lambda u, s, vh: (u @ vh, s))(*ext.linalg.svd(a, False)),
     (_TALL,)),
    ("linalg.svd wide", lambda a: (lambda u, s, vh: (u @ vh, s))(*ext.linalg.svd(a, False)),
     (_WIDE,)),
    ("linalg.svdvals", lambda a: ext.linalg.svdvals(a), (_WIDE,)),
    ("linalg.pinv", lambda a: ext.linalg.pinv(a), (_TALL,)),
    ("linalg.pinv wide", lambda a: ext.linalg.pinv(a), (_WIDE,)),
    ("linalg.lstsq", lambda a, b: ext.linalg.lstsq(a, b).solution, (_A, _B)),
    ("linalg.lu_factor", lambda a: ext.linalg.lu_factor(a).LU, (_A,)),
    ("linalg.lu tall", lambda a: ext.linalg.lu(a)[1:], (_TALL,)),
    ("linalg.lu wide", lambda a: ext.linalg.lu(a)[1:], (_WIDE,)),
    ("lu_unpack", lambda lu: ext.lu_unpack(lu, ext.linalg.lu_factor(lu.detach()).pivots)[1:],
     (_TALL,)),
    ("linalg.lu_solve", lambda a, b: ext.linalg.lu_solve(*ext.linalg.lu_factor(a), b),
     (_A, _B)),
    ("linalg.lu_solve adjoint right",
     lambda a, b: ext.linalg.lu_solve(*ext.linalg.lu_factor(a), b.mT, left=False, adjoint=True),
     (_A, _B)),
    ("householder_product",
     lambda a, tau: ext.linalg.householder_product(a, tau), (_TALL, _TALL[0] / 2)),
    ("ormqr", lambda a, tau, c: ext.ormqr(a, tau, c, left=False), (_A, _A[0] / 2, _B.T)),
]


@pytest.mark.parametrize(("name", "fn", "inputs"), GRADCHECKS, ids=[g[0] for g in GRADCHECKS])
def test_gradcheck_and_gradgradcheck(name, fn, inputs):
    args = tuple(_e(a) for a in inputs)
    assert ext.autograd.gradcheck(fn, args)
    assert ext.autograd.gradgradcheck(fn, args)


def _tangents(T) -> tuple:
    """The forward-mode tangents of cholesky and of a wide matrix's QR on backend T."""
    fw = T.autograd.forward_ad
    with fw.dual_level():
        L = T.linalg.cholesky(fw.make_dual(T.tensor(_PD), T.tensor(_SYM)))
        R = T.linalg.qr(fw.make_dual(T.tensor(_WIDE), T.tensor(_WIDE ** 2))).R
        return fw.unpack_dual(L).tangent.numpy(), fw.unpack_dual(R).tangent.numpy()


def test_forward_mode_matches_torch(T):
    for ours, theirs in zip(_tangents(T), _tangents(torch)):
        np.testing.assert_allclose(ours, theirs, atol=1e-10)


def test_not_positive_definite_raises_linalg_error(T):
    A = T.tensor([[1.0, 2.0], [2.0, 1.0]])
    assert issubclass(T.linalg.LinAlgError, RuntimeError)
    with pytest.raises(T.linalg.LinAlgError, match="leading minor of order 2"):
        T.linalg.cholesky(A)
    with pytest.raises(T.linalg.LinAlgError, match=r"\(Batch element 1\)"):
        T.linalg.cholesky(T.stack([T.eye(2), A]))
    L, info = T.linalg.cholesky_ex(T.stack([T.eye(2), A]))
    assert info.tolist() == [0, 2] and info.dtype == T.int32
    with pytest.raises(T.linalg.LinAlgError, match="linalg.cholesky_ex"):
        T.linalg.cholesky_ex(A, check_errors=True)


def test_argument_errors_as_torch(T):
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        T.linalg.cholesky(T.ones(3))
    with pytest.raises(RuntimeError, match="batches of square matrices, but they are 3 by 4"):
        T.linalg.eigh(T.ones(3, 4))
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        T.linalg.qr(T.ones(3, 3, dtype=T.int64))
    with pytest.raises(RuntimeError, match="unrecognized mode 'x'"):
        T.linalg.qr(T.ones(3, 3), mode="x")
    with pytest.raises(RuntimeError, match="U\\[2,2\\] is zero"):
        T.linalg.lu_factor(T.tensor([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete'"):
        T.linalg.qr(_leaf(T, _TALL), mode="complete").Q.sum().backward()


def test_results_as_torch(T):
    def both(f):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return f(T), f(torch)

    cases = [
        lambda M: M.linalg.matrix_rank(M.tensor(np.outer(_A[0], _A[1]))),
        lambda M: M.linalg.lu(M.tensor(_TALL)).P,
        lambda M: M.linalg.lu_factor(M.tensor(_WIDE)).pivots,
        lambda M: M.geqrf(M.tensor(_TALL)).tau,
        lambda M: M.linalg.ldl_factor(M.tensor(_SYM)).LD,
        lambda M: M.linalg.lstsq(M.tensor(_TALL), M.tensor(_TALL), driver="gelsd").residuals,
        lambda M: M.linalg.pinv(M.tensor(_SYM), hermitian=True, atol=0.5),
        lambda M: M.orgqr(M.tensor(_TALL), M.tensor(_TALL[0] / 2)),
    ]
    for f in cases:
        ours, theirs = both(f)
        assert str(ours.dtype).rpartition(".")[2] == str(theirs.dtype).rpartition(".")[2]
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-10)
