"""torch.linalg's inverses, solves, determinants, norms and products: node names, saved fields,
values, singular inputs and gradients, on both engines; gradcheck and gradgradcheck on ext; and
torch's own op database (tests/opdb.py) for each OpInfo of the family."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import to_np

import ext

sys.path.insert(0, str(Path(__file__).parent))


def _mats(rng, *shape):
    """Well-conditioned square matrices: random entries plus a multiple of the identity."""
    n = shape[-1]
    return rng.uniform(-1.0, 1.0, shape) + 3.0 * np.eye(n)


def _tril_mask(T):
    return T.tensor(np.tril(np.ones((3, 3))), dtype=T.float64)


def _lower(rng, *shape):
    return np.tril(_mats(rng, *shape))


# (node name, the op on backend T and leaves, the leaves' arrays from a generator, the saved
# fields torch shows)
CASES = [
    ("LinalgInvExBackward0", lambda T, a: T.linalg.inv(a), lambda r: [_mats(r, 3, 3)],
     ["_saved_inverse"]),
    ("LinalgInvExBackward0", lambda T, a: T.linalg.inv_ex(a).inverse,
     lambda r: [_mats(r, 2, 3, 3)], ["_saved_inverse"]),
    ("LinalgSolveExBackward0", lambda T, a, b: T.linalg.solve(a, b),
     lambda r: [_mats(r, 3, 3), r.uniform(-1, 1, (3, 2))],
     ["_saved_A", "_saved_LU", "_saved_left", "_saved_pivots", "_saved_result"]),
    ("LinalgSolveExBackward0", lambda T, a, b: T.linalg.solve(a, b, left=False),
     lambda r: [_mats(r, 3, 3), r.uniform(-1, 1, (2, 3))],
     ["_saved_A", "_saved_LU", "_saved_left", "_saved_pivots", "_saved_result"]),
    ("LinalgSolveExBackward0", lambda T, a, b: T.linalg.solve_ex(a, b).result,
     lambda r: [_mats(r, 2, 3, 3), r.uniform(-1, 1, (2, 3))],
     ["_saved_A", "_saved_LU", "_saved_left", "_saved_pivots", "_saved_result"]),
    ("LinalgDetBackward0", lambda T, a: T.linalg.det(a), lambda r: [_mats(r, 2, 3, 3)],
     ["_saved_A", "_saved_LU", "_saved_pivots", "_saved_result"]),
    ("LinalgSlogdetBackward0", lambda T, a: T.linalg.slogdet(a).logabsdet,
     lambda r: [_mats(r, 3, 3)], ["_saved_A", "_saved_LU", "_saved_pivots", "_saved_sign"]),
    ("WhereBackward0", lambda T, a: T.logdet(a), lambda r: [_mats(r, 3, 3)],
     ["_saved_condition"]),
    ("LinalgMatrixExpBackward0", lambda T, a: T.linalg.matrix_exp(a),
     lambda r: [r.uniform(-1, 1, (3, 3))], ["_saved_self"]),
    ("LinalgVectorNormBackward0", lambda T, a: T.linalg.vector_norm(a, 3, (0, 1)),
     lambda r: [r.uniform(-1, 1, (2, 3))],
     ["_saved_dim", "_saved_keepdim", "_saved_ord", "_saved_result", "_saved_self"]),
    ("LinalgVectorNormBackward0", lambda T, a: a.norm(),
     lambda r: [r.uniform(-1, 1, (2, 3))],
     ["_saved_dim", "_saved_keepdim", "_saved_ord", "_saved_result", "_saved_self"]),
    ("AmaxBackward0", lambda T, a: T.linalg.matrix_norm(a, 1), lambda r: [_mats(r, 3, 3)],
     ["_saved_dim", "_saved_keepdim", "_saved_result", "_saved_self"]),
    ("LinalgCrossBackward0", lambda T, a, b: T.linalg.cross(a, b),
     lambda r: [r.uniform(-1, 1, (2, 3)), r.uniform(-1, 1, (2, 3))],
     ["_saved_dim", "_saved_other", "_saved_self"]),
    ("TraceBackward0", lambda T, a: a.trace(), lambda r: [r.uniform(-1, 1, (3, 4))],
     ["_saved_self_sym_sizes"]),
    ("AddmvBackward0", lambda T, s, m, v: T.addmv(s, m, v, beta=2, alpha=3),
     lambda r: [r.uniform(-1, 1, 3), r.uniform(-1, 1, (3, 2)), r.uniform(-1, 1, 2)],
     ["_saved_alpha", "_saved_beta", "_saved_mat", "_saved_vec"]),
    ("AddrBackward0", lambda T, s, a, b: T.addr(s, a, b, beta=2, alpha=3),
     lambda r: [r.uniform(-1, 1, (3, 2)), r.uniform(-1, 1, 3), r.uniform(-1, 1, 2)],
     ["_saved_alpha", "_saved_beta", "_saved_vec1", "_saved_vec2"]),
    ("AddbmmBackward0", lambda T, s, a, b: T.addbmm(s, a, b, beta=2, alpha=3),
     lambda r: [r.uniform(-1, 1, (3, 2)), r.uniform(-1, 1, (2, 3, 4)),
                r.uniform(-1, 1, (2, 4, 2))],
     ["_saved_alpha", "_saved_batch1", "_saved_batch1_sym_argsize_0",
      "_saved_batch1_sym_argsize_1", "_saved_batch2", "_saved_batch2_sym_argsize_2",
      "_saved_beta"]),
    ("BaddbmmBackward0", lambda T, s, a, b: T.baddbmm(s, a, b, beta=2, alpha=3),
     lambda r: [r.uniform(-1, 1, (2, 3, 2)), r.uniform(-1, 1, (2, 3, 4)),
                r.uniform(-1, 1, (2, 4, 2))],
     ["_saved_alpha", "_saved_batch1", "_saved_batch2", "_saved_beta"]),
    ("VdotBackward0", lambda T, a, b: T.vdot(a, b),
     lambda r: [r.uniform(-1, 1, 3), r.uniform(-1, 1, 3)], ["_saved_other", "_saved_self"]),
    ("DistBackward0", lambda T, a, b: T.dist(a, b, 3),
     lambda r: [r.uniform(-1, 1, (2, 3)), r.uniform(-1, 1, 3)],
     ["_saved_other", "_saved_p", "_saved_result", "_saved_self"]),
    ("RenormBackward0", lambda T, a: T.renorm(a, 2, 0, 1.0),
     lambda r: [r.uniform(-1, 1, (3, 4))],
     ["_saved_dim", "_saved_maxnorm", "_saved_p", "_saved_self"]),
    ("LinalgSolveTriangularBackward0",
     lambda T, a, b: T.linalg.solve_triangular(a, b, upper=False),
     lambda r: [_lower(r, 3, 3), r.uniform(-1, 1, (3, 2))],
     ["_saved_left", "_saved_result", "_saved_self", "_saved_unitriangular", "_saved_upper"]),
    ("TriangularSolveBackward0", lambda T, b, a: T.triangular_solve(b, a, upper=False)[0],
     lambda r: [r.uniform(-1, 1, (3, 2)), _lower(r, 3, 3)],
     ["_saved_A", "_saved_self", "_saved_solution", "_saved_transpose",
      "_saved_unitriangular", "_saved_upper"]),
    # (the factor's other triangle masked away: the op reads only its own triangle, while its
    # gradient, as torch's, is a full matrix)
    ("CholeskySolveBackward0", lambda T, b, f: T.cholesky_solve(b, f * _tril_mask(T)),
     lambda r: [r.uniform(-1, 1, (3, 2)), _lower(r, 3, 3)],
     ["_saved_input2", "_saved_result", "_saved_self", "_saved_upper"]),
    ("CholeskyInverseBackward0", lambda T, f: T.cholesky_inverse(f * _tril_mask(T)),
     lambda r: [_lower(r, 3, 3)], ["_saved_result", "_saved_self", "_saved_upper"]),
    ("CdistBackward0", lambda T, a, b: T.cdist(a, b, 1.5),
     lambda r: [r.uniform(-1, 1, (3, 2)), r.uniform(-1, 1, (4, 2))],
     ["_saved_p", "_saved_result", "_saved_x1", "_saved_x2"]),
    ("ViewBackward0", lambda T, a, b: T.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
     lambda r: [r.uniform(-1, 1, (3, 2)), r.uniform(-1, 1, (4, 2))], ["_saved_self_sym_sizes"]),
    ("EuclideanDistBackward0",
     lambda T, a, b: T.cdist(a, b, compute_mode="use_mm_for_euclid_dist").grad_fn and
     T.ops.aten._euclidean_dist(a, b),
     lambda r: [r.uniform(-1, 1, (3, 2)), r.uniform(-1, 1, (4, 2))],
     ["_saved_result", "_saved_x1", "_saved_x2"]),
    ("MulBackward0", lambda T, a, b: T.outer(a, b),
     lambda r: [r.uniform(-1, 1, 3), r.uniform(-1, 1, 2)], ["_saved_other", "_saved_self"]),
    ("UnsafeViewBackward0", lambda T, a, b: T.kron(a, b),
     lambda r: [r.uniform(-1, 1, (2, 3)), r.uniform(-1, 1, (2, 2))],
     ["_saved_self_sym_sizes"]),
    ("ViewBackward0", lambda T, a, b: T.tensordot(a, b, 1),
     lambda r: [r.uniform(-1, 1, (2, 3)), r.uniform(-1, 1, (3, 2))],
     ["_saved_self_sym_sizes"]),
    ("ViewBackward0", lambda T, a, b: T.einsum("ij,jk->ik", a, b),
     lambda r: [r.uniform(-1, 1, (2, 3)), r.uniform(-1, 1, (3, 2))],
     ["_saved_self_sym_sizes"]),
    ("SqueezeBackward1", lambda T, a: T.linalg.cond(a), lambda r: [_mats(r, 3, 3)],
     ["_saved_dim", "_saved_self_sym_sizes"]),
    ("CatBackward0", lambda T, a: T.linalg.vander(a), lambda r: [r.uniform(-1, 1, 3)],
     ["_saved_dim"]),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]
# (cdist's and _euclidean_dist's backward are not differentiable in torch either)
NO_GRADGRAD = {"CdistBackward0", "EuclideanDistBackward0"}


def _leaves(T, arrays):
    return [T.tensor(a, dtype=T.float64, requires_grad=True) for a in arrays]


@pytest.mark.parametrize(("node", "fn", "make", "saved"), CASES, ids=IDS)
def test_node_and_saved_fields_are_torch_s(T, node, fn, make, saved):
    y = fn(T, *_leaves(T, make(np.random.default_rng(3))))
    assert type(y.grad_fn).__name__ == node
    assert sorted(a for a in dir(y.grad_fn) if a.startswith("_saved_")) == saved


@pytest.mark.parametrize(("node", "fn", "make", "saved"), CASES, ids=IDS)
def test_values_and_gradients_match_torch(node, fn, make, saved):
    torch = pytest.importorskip("torch")
    arrays = make(np.random.default_rng(4))
    outs = []
    for T in (ext, torch):
        xs = _leaves(T, arrays)
        y = fn(T, *xs)
        g = np.random.default_rng(5).uniform(0.5, 1.5, tuple(y.shape))
        grads = T.autograd.grad(y, xs, T.tensor(g, dtype=T.float64))
        outs.append([to_np(y.detach())] + [to_np(gr) for gr in grads])
    for e, t in zip(*outs):
        np.testing.assert_allclose(e, t, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize(("node", "fn", "make", "saved"), CASES, ids=IDS)
def test_gradcheck_and_gradgradcheck(node, fn, make, saved):
    xs = _leaves(ext, make(np.random.default_rng(6)))
    assert ext.autograd.gradcheck(lambda *a: fn(ext, *a), xs)
    if node not in NO_GRADGRAD:
        assert ext.autograd.gradgradcheck(lambda *a: fn(ext, *a), xs)


def test_saved_values_are_torch_s(T):
    a = T.tensor(_mats(np.random.default_rng(0), 3, 3), requires_grad=True)
    b = T.tensor(np.ones((3, 2)), dtype=T.float64)
    node = T.linalg.solve(a, b, left=True).grad_fn
    assert node._saved_left is True
    assert node._saved_pivots.dtype == T.int32
    assert tuple(node._saved_LU.shape) == (3, 3)
    x = T.tensor(np.ones((2, 3)), requires_grad=True)
    cross = T.linalg.cross(x, x + 1).grad_fn
    assert cross._saved_dim == 2**64 - 1  # (dim=-1, shown unsigned as torch shows it)
    vn = T.linalg.vector_norm(x, 3, 1).grad_fn
    assert (vn._saved_ord, vn._saved_dim, vn._saved_keepdim) == (3, (1,), False)
    assert T.linalg.vector_norm(x).grad_fn._saved_dim is None


def test_singular_matrices(T):
    z = T.zeros(3, 3, dtype=T.float64)
    with pytest.raises(RuntimeError, match="singular") as err:
        T.linalg.inv(z)
    assert isinstance(err.value, T.linalg.LinAlgError)
    with pytest.raises(RuntimeError, match="Batch element 0"):
        T.linalg.inv(T.zeros(2, 3, 3, dtype=T.float64))
    with pytest.raises(RuntimeError, match="singular"):
        T.linalg.solve(z, T.ones(3, dtype=T.float64))
    inv, info = T.linalg.inv_ex(T.zeros(2, 3, 3, dtype=T.float64))
    assert info.tolist() == [1, 1] and info.dtype == T.int32
    assert T.linalg.solve_ex(z, T.ones(3, dtype=T.float64)).info.item() == 1
    assert T.linalg.det(z).item() == 0.0
    sign, logabs = T.linalg.slogdet(z)
    assert sign.item() == 0.0 and logabs.item() == -np.inf
    assert np.isnan(T.logdet(T.tensor([[-1.0, 0.0], [0.0, 1.0]], dtype=T.float64)).item())


def test_det_gradient_of_a_singular_matrix(T):
    a = T.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=T.float64, requires_grad=True)
    # With a graph built, the cofactor matrix [[4, -2], [-2, 1]] (through an SVD) ...
    (g,) = T.autograd.grad(T.linalg.det(a), a, create_graph=True)
    np.testing.assert_allclose(to_np(g.detach()), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)
    # ... without one, torch's cheaper solve, which gives zeros for a zero determinant.
    T.linalg.det(a).backward()
    np.testing.assert_array_equal(to_np(a.grad), np.zeros((2, 2)))


def test_names_and_aliases(T):
    a = T.tensor(_mats(np.random.default_rng(1), 3, 3))
    np.testing.assert_allclose(to_np(T.det(a)), to_np(T.linalg.det(a)))
    np.testing.assert_allclose(to_np(a.inverse()), to_np(T.linalg.inv(a)))
    np.testing.assert_allclose(to_np(a.matrix_power(-2)), to_np(T.linalg.inv(a @ a)),
                               rtol=1e-10)
    np.testing.assert_allclose(to_np(a.matrix_exp()), to_np(T.linalg.matrix_exp(a)))
    v = T.tensor([1.0, 2.0])
    assert T.ger(v, v).tolist() == T.outer(v, v).tolist() == [[1.0, 2.0], [2.0, 4.0]]
    np.testing.assert_allclose(to_np(a.norm(p="nuc")), np.linalg.norm(to_np(a), "nuc"))
    np.testing.assert_allclose(to_np(T.linalg.norm(a, 2)), np.linalg.norm(to_np(a), 2))
    assert T.trace(T.arange(9).reshape(3, 3)).dtype == T.int64
    y = a[0].clone()
    assert y.addmv_(a, a[1], beta=0.5) is y
    with pytest.raises(RuntimeError, match="vector \\+ matrix @ vector expected, got 2, 2, 1"):
        T.addmv(a, a, a[0])


def test_norms_match_numpy(T):
    a = np.random.default_rng(2).uniform(-1, 1, (3, 4))
    t = T.tensor(a)
    for ord_ in (1, 2, 3, 0.5, 0, np.inf, -np.inf):
        np.testing.assert_allclose(to_np(T.linalg.vector_norm(t, ord_, 1)),
                                   np.linalg.norm(a, ord_, 1), rtol=1e-12)
    for ord_ in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        np.testing.assert_allclose(to_np(T.linalg.matrix_norm(t, ord_)),
                                   np.linalg.norm(a, ord_), rtol=1e-12)


def test_errors(T):
    a = T.ones(2, 3, dtype=T.float64)
    with pytest.raises(RuntimeError, match="square"):
        T.linalg.inv(a)
    with pytest.raises(RuntimeError, match="floating point"):
        T.linalg.det(T.ones(2, 2, dtype=T.int64))
    with pytest.raises(RuntimeError, match="length 3"):
        T.linalg.cross(a, a, dim=0)
    with pytest.raises(RuntimeError, match="same dtype"):
        T.linalg.solve(T.eye(2, dtype=T.float64), T.ones(2, dtype=T.float32))
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        T.vdot(a, a)


def test_saved_factors_match_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(8).uniform(-1, 1, (2, 4, 4))
    b = np.random.default_rng(9).uniform(-1, 1, (2, 4, 3))
    nodes = []
    for T in (ext, torch):
        x = T.tensor(a, requires_grad=True)
        nodes.append((T.linalg.solve(x, T.tensor(b)).grad_fn,
                      T.linalg.solve(x, T.tensor(b).mT, left=False).grad_fn,
                      T.linalg.det(x).grad_fn, T.linalg.slogdet(x)[1].grad_fn,
                      T.linalg.det(x.mT).grad_fn))
    for e, t in zip(*nodes):
        np.testing.assert_allclose(to_np(e._saved_LU), to_np(t._saved_LU), rtol=1e-12)
        assert to_np(e._saved_pivots).tolist() == to_np(t._saved_pivots).tolist()


FORWARD = [
    lambda T, a: T.linalg.inv(a),
    lambda T, a: T.linalg.det(a),
    lambda T, a: T.linalg.slogdet(a)[1],
    lambda T, a: T.linalg.solve(a, a[..., :1] + 1.0),
    lambda T, a: T.linalg.matrix_exp(a / 4),
    lambda T, a: T.linalg.vector_norm(a, 3, -1),
    lambda T, a: T.linalg.cross(a[..., :3], a[..., 1:]),
    lambda T, a: T.linalg.solve_triangular(a, a, upper=True),
    lambda T, a: T.renorm(a, 2, 0, 1.0),
    lambda T, a: T.dist(a, a.t(), 3),
    lambda T, a: T.trace(a),
]


@pytest.mark.parametrize("fn", FORWARD, ids=[f"forward-{i}" for i in range(len(FORWARD))])
def test_forward_mode_tangent_is_the_directional_derivative(T, fn):
    fwAD = T.autograd.forward_ad
    rng = np.random.default_rng(10)
    a = _mats(rng, 4, 4)
    t = rng.uniform(-1, 1, (4, 4))
    with fwAD.dual_level():
        dual = fwAD.make_dual(T.tensor(a), T.tensor(t))
        tangent = to_np(fwAD.unpack_dual(fn(T, dual)).tangent)
    eps = 1e-6
    plus = to_np(fn(T, T.tensor(a + eps * t)))
    minus = to_np(fn(T, T.tensor(a - eps * t)))
    np.testing.assert_allclose(tangent, (plus - minus) / (2 * eps), rtol=1e-5, atol=1e-7)
