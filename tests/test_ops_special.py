"""The special functions (torch.special and their top-level names): nodes and saves, gradients
of gradients, the values torch gives at the edges, and torch's op database on each of them.

Every test that takes ``T`` runs on ``ext`` and on ``torch``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

# node name, the op (T, x, y) with x in (0.25, 0.75) and y in (1.5, 2.5) requiring grad, and
# torch's _saved_* fields with their non-tensor values ("T" for a saved tensor)
NODES = [
    ("DigammaBackward0", lambda T, x, y: x.digamma(), {"self": "T"}),
    ("PolygammaBackward0", lambda T, x, y: T.polygamma(2, x), {"n": 2, "self": "T"}),
    ("LgammaBackward0", lambda T, x, y: T.special.gammaln(x), {"self": "T"}),
    ("MvlgammaBackward0", lambda T, x, y: y.mvlgamma(3), {"p": 3, "self": "T"}),
    ("ErfcBackward0", lambda T, x, y: x.erfc(), {"self": "T"}),
    ("ErfinvBackward0", lambda T, x, y: x.erfinv(), {"self": "T"}),
    ("SpecialErfcxBackward0", lambda T, x, y: T.special.erfcx(x), {"result": "T", "self": "T"}),
    ("SpecialNdtriBackward0", lambda T, x, y: T.special.ndtri(x), {"result": "T"}),
    ("SpecialLogNdtrBackward0", lambda T, x, y: T.special.log_ndtr(x),
     {"result": "T", "self": "T"}),
    ("MulBackward1", lambda T, x, y: T.special.ndtr(x), {"other": 0.5}),
    ("I0Backward0", lambda T, x, y: x.i0(), {"self": "T"}),
    ("SpecialI0EBackward0", lambda T, x, y: T.special.i0e(x), {"result": "T", "self": "T"}),
    ("SpecialI1Backward0", lambda T, x, y: T.special.i1(x), {"result": "T", "self": "T"}),
    ("SpecialI1EBackward0", lambda T, x, y: T.special.i1e(x), {"result": "T", "self": "T"}),
    ("SincBackward0", lambda T, x, y: x.sinc(), {"self": "T"}),
    ("SpecialEntrBackward0", lambda T, x, y: T.special.entr(x), {"self": "T"}),
    ("LogitBackward0", lambda T, x, y: x.logit(), {"eps": None, "self": "T"}),
    ("LogitBackward0", lambda T, x, y: T.special.logit(x, eps=0.3), {"eps": 0.3, "self": "T"}),
    ("XlogyBackward0", lambda T, x, y: T.xlogy(x, y), {"other": "T", "self": "T"}),
    ("XlogyBackward1", lambda T, x, y: T.xlogy(2.0, y), {"other": "T", "self": 2.0}),
    ("XlogyBackward2", lambda T, x, y: x.xlogy(3.0), {"other": 3.0, "self": "T"}),
    ("SpecialXlog1PyBackward0", lambda T, x, y: T.special.xlog1py(x, y),
     {"other": "T", "self": "T"}),
    ("SpecialXlog1PyBackward1", lambda T, x, y: T.special.xlog1py(2.0, y),
     {"other": "T", "self": 2.0}),
    ("SpecialXlog1PyBackward2", lambda T, x, y: T.special.xlog1py(x, 3.0),
     {"other": 3.0, "self": "T"}),
    ("SpecialZetaBackward0", lambda T, x, y: T.special.zeta(y, x), {"other": "T", "self": "T"}),
    ("SpecialZetaBackward1", lambda T, x, y: T.special.zeta(2.0, x), {"other": "T", "self": 2.0}),
    ("SpecialZetaBackward2", lambda T, x, y: T.special.zeta(y, 2.0), {}),
    ("IgammaBackward0", lambda T, x, y: T.igamma(y, x), {"other": "T", "self": "T"}),
    ("IgammacBackward0", lambda T, x, y: T.special.gammaincc(y, x), {"other": "T", "self": "T"}),
]


def _inputs(T, rng):
    x = T.tensor(rng.uniform(0.25, 0.75, (2, 3)), requires_grad=True)
    y = T.tensor(rng.uniform(1.5, 2.5, (2, 3)), requires_grad=True)
    return x, y


@pytest.mark.parametrize("node, fn, saved", NODES, ids=[n[0] for n in NODES])
def test_node_name_and_saved_fields(T, rng, node, fn, saved):
    x, y = _inputs(T, rng)
    out = fn(T, x, y)
    g = out.grad_fn
    assert type(g).__name__ == node
    assert sorted(a[len("_saved_"):] for a in dir(g) if a.startswith("_saved_")) == sorted(saved)
    for name, value in saved.items():
        got = getattr(g, f"_saved_{name}")
        if value == "T":
            assert isinstance(got, T.Tensor)
        else:
            assert got == value


# the differentiable ops, on inputs inside their domains (x in (0.25, 0.75), y in (1.5, 2.5))
DIFFERENTIABLE = {
    "digamma": lambda T, x, y: T.digamma(x),
    "polygamma": lambda T, x, y: T.polygamma(1, x),
    "lgamma": lambda T, x, y: T.lgamma(x),
    "mvlgamma": lambda T, x, y: T.mvlgamma(y, 2),
    "erfc": lambda T, x, y: T.erfc(x),
    "erfinv": lambda T, x, y: T.erfinv(x),
    "erfcx": lambda T, x, y: T.special.erfcx(x),
    "ndtr": lambda T, x, y: T.special.ndtr(x),
    "ndtri": lambda T, x, y: T.special.ndtri(x),
    "log_ndtr": lambda T, x, y: T.special.log_ndtr(-4 * y),
    "i0": lambda T, x, y: T.i0(x - 0.5),
    "i0e": lambda T, x, y: T.special.i0e(x - 0.5),
    "i1": lambda T, x, y: T.special.i1(x - 0.5),
    "i1e": lambda T, x, y: T.special.i1e(x - 0.5),
    "sinc": lambda T, x, y: T.sinc(4 * x - 2),
    "entr": lambda T, x, y: T.special.entr(x),
    "logit": lambda T, x, y: T.logit(x),
    "logit_eps": lambda T, x, y: T.logit(x, 0.3),
    "xlogy": lambda T, x, y: T.xlogy(x, y),
    "xlogy_number_self": lambda T, x, y: T.xlogy(2.0, y),
    "xlogy_number_other": lambda T, x, y: T.xlogy(x, 3.0),
    "xlog1py": lambda T, x, y: T.special.xlog1py(x, y),
    "zeta_in_q": lambda T, x, y: T.special.zeta(3.0, y),
    "igamma_in_x": lambda T, x, y: T.igamma(T.ones_like(x) * 2, x),
    "igammac_in_x": lambda T, x, y: T.igammac(T.ones_like(x) * 2, x),
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_gradcheck_and_gradgradcheck(T, rng, name):
    x, y = _inputs(T, rng)
    fn = DIFFERENTIABLE[name]
    assert T.autograd.gradcheck(lambda a, b: fn(T, a, b), (x, y))
    assert T.autograd.gradgradcheck(lambda a, b: fn(T, a, b), (x, y))


NO_FORWARD_MODE = {"zeta_in_q", "igamma_in_x", "igammac_in_x"}  # (torch has no rule)


@pytest.mark.parametrize("name", sorted(set(DIFFERENTIABLE) - NO_FORWARD_MODE))
def test_forward_mode_gives_the_jacobian_times_the_tangents(T, rng, name):
    x, y = _inputs(T, rng)
    fn = DIFFERENTIABLE[name]
    tx, ty = (T.tensor(rng.uniform(-1, 1, (2, 3))) for _ in range(2))
    fwAD = T.autograd.forward_ad
    with fwAD.dual_level():
        out = fn(T, fwAD.make_dual(x.detach(), tx), fwAD.make_dual(y.detach(), ty))
        tangent = fwAD.unpack_dual(out).tangent
    # (elementwise ops: a diagonal Jacobian, so J t is the gradient for the upstream t)
    a, b = x.detach().requires_grad_(), y.detach().requires_grad_()
    ga, gb = (T.autograd.grad(fn(T, a, b), v, t, allow_unused=True, materialize_grads=True)[0]
              for v, t in ((a, tx), (b, ty)))
    assert np.allclose(tangent.detach().numpy(), (ga + gb).numpy())


@pytest.mark.parametrize("name", sorted(NO_FORWARD_MODE))
def test_forward_mode_is_refused_where_torch_has_no_rule(T, rng, name):
    x, y = _inputs(T, rng)
    fwAD = T.autograd.forward_ad
    with fwAD.dual_level(), pytest.raises(NotImplementedError, match="forward AD"):
        DIFFERENTIABLE[name](T, fwAD.make_dual(x.detach(), T.ones_like(x)),
                             fwAD.make_dual(y.detach(), T.ones_like(y)))


def test_torch_raises_for_the_derivatives_it_does_not_define(T, rng):
    x, y = _inputs(T, rng)
    with pytest.raises(NotImplementedError, match="igamma: input"):
        T.igamma(y, x).sum().backward()
    with pytest.raises(NotImplementedError, match="zeta"):
        T.special.zeta(y, x).sum().backward()


def test_not_differentiated_functions_give_no_node(T, rng):
    x, _ = _inputs(T, rng)
    for out in (T.special.bessel_j0(x), T.special.airy_ai(x),
                T.special.chebyshev_polynomial_t(x, 3), T.special.modified_bessel_k0(x)):
        assert out.grad_fn is None and not out.requires_grad


def test_argument_errors(T):
    x = T.tensor([0.5, 1.5])
    with pytest.raises(RuntimeError, match="negative n"):
        T.polygamma(-1, x)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        T.mvlgamma(x, 0)
    assert T.mvlgamma(x, 3)[0].item() == float("inf")  # (no domain check: lgamma's pole)
    with pytest.raises(NotImplementedError, match="igamma_cpu"):
        T.igamma(T.tensor([1, 2]), T.tensor([1, 2]))
    with pytest.raises(TypeError):
        T.xlogy(2, 3)


def test_inplace_variants_write_into_their_input(T):
    for name, args in (("digamma_", ()), ("lgamma_", ()), ("erfc_", ()), ("erfinv_", ()),
                       ("i0_", ()), ("sinc_", ()), ("logit_", ()), ("polygamma_", (1,)),
                       ("xlogy_", (2.0,)), ("igamma_", (T.tensor([0.5, 0.25]),))):
        x = T.tensor([0.25, 0.75], dtype=T.float64)
        expected = getattr(x.clone(), name[:-1])(*args)
        assert getattr(x, name)(*args) is x
        assert np.allclose(x.numpy(), expected.numpy())
    y = T.tensor([2.5, 3.5], dtype=T.float64)
    assert np.allclose(y.clone().mvlgamma_(2).numpy(), y.mvlgamma(2).numpy())


def test_special_names_are_torch_special_names(T):
    import torch

    names = {n for n in dir(torch.special) if not n.startswith("_")} - {
        "torch", "Tensor", "common_args", "multi_dim_common"}
    assert all(callable(getattr(T.special, n)) for n in names)
    x = T.tensor([0.25, 0.75])
    assert np.allclose(T.special.expit(x).numpy(), x.sigmoid().numpy())
    assert np.allclose(T.special.psi(x).numpy(), x.digamma().numpy())
    assert np.allclose(T.special.gammainc(x, x).numpy(), T.igamma(x, x).numpy())


@pytest.mark.ext_only
@pytest.mark.parametrize("name", ["chebyshev_polynomial_t", "chebyshev_polynomial_u",
                                  "chebyshev_polynomial_v", "chebyshev_polynomial_w",
                                  "shifted_chebyshev_polynomial_t",
                                  "shifted_chebyshev_polynomial_u",
                                  "shifted_chebyshev_polynomial_v",
                                  "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                                  "hermite_polynomial_he", "laguerre_polynomial_l",
                                  "legendre_polynomial_p"])
def test_polynomials_match_torch_at_the_edges(name):
    """n < 0, n fractional or large, |x| > 1 and the ends of the interval, as torch gives."""
    import torch

    import ext

    xs = np.array([-2.5, -1.0, -0.3, 0.0, 0.2, 0.5, 1.0, 1.7])[:, None]
    ns = np.array([-3.0, -0.5, 0.0, 1.0, 2.0, 2.7, 5.0, 7.0, 9.0, 12.0, 30.0])[None, :]
    for dtype in (np.float64, np.float32):
        x, n = xs.astype(dtype), ns.astype(dtype)
        want = getattr(torch.special, name)(torch.from_numpy(x), torch.from_numpy(n)).numpy()
        got = getattr(ext.special, name)(ext.tensor(x), ext.tensor(n)).numpy()
        assert np.allclose(got, want, rtol=1e-4, atol=1e-6, equal_nan=True)
        number = getattr(ext.special, name)(ext.tensor(x), 3).numpy()
        want = getattr(torch.special, name)(torch.from_numpy(x), 3).numpy()
        assert np.allclose(number, want, rtol=1e-4, atol=1e-6, equal_nan=True)


def test_xlogy_derivatives_in_x_where_x_is_zero(T):
    """Where x is 0, xlogy's derivative in x is still log y (0 where y is 0 too, -inf where
    only y is), and its forward rule xlogy(tx, y) + ty x / y passes tx log y."""
    fwAD = T.autograd.forward_ad
    x = T.tensor([0.0, 0.0, 0.5, 0.5], dtype=T.float64)
    y = T.tensor([2.0, 0.0, 0.0, 3.0], dtype=T.float64)
    tx = T.tensor([1.5, 1.0, 1.0, 2.0], dtype=T.float64)
    a = x.clone().requires_grad_()
    (grad,) = T.autograd.grad(T.xlogy(a, y), a, tx)
    assert np.allclose(grad.numpy(), [1.5 * np.log(2.0), 0.0, -np.inf, 2.0 * np.log(3.0)])
    (grad,) = T.autograd.grad(T.xlogy(a, 0.0), a, tx)
    assert np.allclose(grad.numpy(), [0.0, 0.0, -np.inf, -np.inf])
    x, y, tx = x[::3], y[::3], tx[::3]  # (where y is not 0)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(T.xlogy(fwAD.make_dual(x, tx), y)).tangent
    assert np.allclose(tangent.numpy(), (tx * y.log()).numpy())
