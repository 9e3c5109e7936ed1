"""The drop-in pack's normalizers and stable reductions (ext.functions: sparsemax, entmax15,
safe_softmax, rms_norm, safe_logsumexp, log1mexp): the parity checklist against their native ops
or composites, their pinned edge points (ties, -inf entries and rows, size-1 dims, n = 1, a
non-last dim), their bad input, and their run on both engines."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

import ext
from ext import functions as P
from ext.testing.cases import (
    MASK,
    PACK,
    entmax15_reference,
    log1mexp_reference,
    masked_reference,
    sparsemax_reference,
)

torch = pytest.importorskip("torch")

F = torch.nn.functional

pytestmark = pytest.mark.ext_only

_rng = np.random.default_rng(11)
INF = math.inf
NEW_OPS = ("sparsemax", "entmax15", "safe_softmax", "rms_norm", "safe_logsumexp", "log1mexp")


def _x(*shape, low=-2.0, high=2.0):
    return torch.tensor(_rng.uniform(low, high, shape), requires_grad=True)


# (the parity cases of this file: ext.testing.cases.PACK, which `python -m ext parity` runs too)
CASES = {name: case for name, case in PACK.items() if case.group == "normalizers"}


def bisection(x, power, dim=-1, steps=200):
    """max(x' - tau, 0) ** power summing to 1 along dim, tau found by bisection (x' = x for
    sparsemax, power 1; x / 2 for 1.5-entmax, power 2): an independent check of the values,
    -inf entries included."""
    z = (x / power).movedim(dim, -1)
    top = z.amax(-1, keepdim=True)
    lo, hi = top - 1, top
    for _ in range(steps):
        mid = (lo + hi) / 2
        heavy = torch.clamp(z - mid, min=0).pow(power).sum(-1, keepdim=True) >= 1
        lo, hi = torch.where(heavy, mid, lo), torch.where(heavy, hi, mid)
    return torch.clamp(z - lo, min=0).pow(power).movedim(-1, dim)



@pytest.mark.parametrize("name", list(CASES))
def test_the_op_passes_the_parity_checklist(name):
    # (`make test-compile` runs this with torch's inductor backend in place of aot_eager)
    report = CASES[name].check(compile_backend=os.environ.get("EXT_COMPILE_BACKEND", "aot_eager"))
    assert report.ok, str(report)


def test_every_op_of_this_half_is_registered_and_has_a_parity_case():
    assert set(NEW_OPS) <= set(P.dropin.FUNCTIONS)
    assert set(NEW_OPS) <= {n.split("_dim")[0].removesuffix("_mask").removesuffix("_no_weight")
                            for n in CASES}


def test_the_saved_bytes_beat_the_composites_and_match_the_natives():
    from ext.testing import saved_bytes

    x = torch.randn(64, 100, requires_grad=True)
    w = torch.randn(100, requires_grad=True)
    out = 64 * 100 * 4
    # the output only, where the sort-based composites keep sorted values, indices and sums
    assert saved_bytes(P.sparsemax, x) == out < saved_bytes(sparsemax_reference, x)
    assert saved_bytes(P.entmax15, x) == out < saved_bytes(entmax15_reference, x)
    assert saved_bytes(P.safe_softmax, x) == out == saved_bytes(torch.softmax, x, -1)
    # x and the weight (the row scale recomputed), where F.rms_norm keeps more
    assert saved_bytes(lambda x, w: P.rms_norm(x, (100,), w), x, w) == out + 400 < \
        saved_bytes(lambda x, w: F.rms_norm(x, (100,), w, 1e-6), x, w)
    # x and the result, as torch.logsumexp
    assert saved_bytes(P.safe_logsumexp, x, 1) == out + 256 == \
        saved_bytes(torch.logsumexp, x, 1)
    assert saved_bytes(P.log1mexp, x.detach().abs().requires_grad_()) == out


# ---------------------------------------------------------------------------------- edge points
def _run(fn, values, dtype=torch.float64):
    """(output, gradient) of fn at values, with a non-uniform grad_output."""
    x = torch.tensor(values, dtype=dtype, requires_grad=True)
    y = fn(x)
    g = torch.linspace(0.5, 1.5, y.numel(), dtype=dtype).reshape(y.shape)
    (gx,) = torch.autograd.grad(y, x, g)
    return y.detach(), gx


@pytest.mark.parametrize(("op", "power"), [(P.sparsemax, 1), (P.entmax15, 2)])
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_sparse_maps_agree_with_bisection_with_inf_entries(op, power, dim):
    x = torch.tensor(_rng.normal(0, 2, (4, 5, 6)))
    x[0, 0, 0] = x[1, :3, 2] = x[2, 3, :4] = -INF  # -inf entries (no row all -inf)
    y = op(x, dim)
    torch.testing.assert_close(y, bisection(x, power, dim), atol=1e-10, rtol=0)
    torch.testing.assert_close(y.sum(dim), torch.ones(y.sum(dim).shape, dtype=y.dtype))
    assert (y[x == -INF] == 0).all() and (y == 0).any()  # sparse


@pytest.mark.parametrize("op", [P.sparsemax, P.entmax15, P.safe_softmax])
def test_an_all_inf_row_gives_zeros_and_zero_gradient(op):
    y, g = _run(op, [[1.0, 0.5, -INF], [-INF, -INF, -INF]])
    assert y[1].tolist() == [0.0] * 3 and g[1].tolist() == [0.0] * 3
    assert y[0, 2] == 0 and g[0, 2] == 0
    assert y[0].sum().item() == pytest.approx(1.0)
    assert not torch.isnan(g).any()


@pytest.mark.parametrize("op", [P.sparsemax, P.entmax15])
def test_a_row_holding_inf_or_nan_gives_nan_throughout_and_zero_gradient(op, T):
    x = T.tensor([[1.0, math.inf, 0.0], [math.nan, 1.0, 2.0], [1.0, 2.0, 0.5]],
                 requires_grad=True)
    y = op(x)
    (g,) = T.autograd.grad(y, x, T.ones(3, 3))
    assert T.isnan(y[:2]).all() and not T.isnan(y[2]).any()
    assert (g[:2] == 0).all()


@pytest.mark.parametrize(("op", "reference"), [(P.sparsemax, sparsemax_reference),
                                               (P.entmax15, entmax15_reference)])
def test_inf_entries_give_the_references_values_and_gradients(op, reference):
    # (the closed-form composite takes no -inf: -100 stands in, as far outside the support)
    values = [[1.0, 0.5, -INF, 0.9], [-INF, 2.0, -INF, -INF]]
    y, g = _run(op, values)
    ry, rg = _run(reference, [[-100.0 if v == -INF else v for v in row] for row in values])
    torch.testing.assert_close(y, ry)
    torch.testing.assert_close(g, rg)


@pytest.mark.parametrize("op", [P.sparsemax, P.entmax15, P.safe_softmax])
def test_size_one_dims_and_a_single_element_give_one_and_zero_gradient(op):
    for values in ([[3.0]], [[-1.0], [2.0]], 5.0, [7.0]):
        y, g = _run(op, values)
        assert (y == 1).all() and (g == 0).all()
    y, g = _run(lambda x: op(x, dim=0), [[1.0, 2.0, 3.0]])  # a size-1 dim, not the last
    assert (y == 1).all() and (g == 0).all()


def test_sparsemax_ties_share_the_mass_and_the_gradient():
    # equal values split the mass equally and keep a gradient that sums to zero
    y, g = _run(P.sparsemax, [[2.0, 2.0, 2.0], [1.0, 1.0, -5.0]])
    assert y.tolist() == [[1 / 3] * 3, [0.5, 0.5, 0.0]]
    ry, rg = _run(sparsemax_reference, [[2.0, 2.0, 2.0], [1.0, 1.0, -5.0]])
    torch.testing.assert_close(g, rg)
    assert g.sum(-1).abs().max() < 1e-12


def test_an_entry_exactly_at_the_threshold_is_outside_the_support():
    # sparsemax [1, 0]: tau = 0 = the second entry; entmax15 [0, -2]: tau = -1 = -2 / 2. The
    # composite's clamp lets its gradient through at the bound; the pack's convention (the
    # output's support, as the entmax package) gives the entry a zero gradient
    for op, values in ((P.sparsemax, [1.0, 0.0]), (P.entmax15, [0.0, -2.0])):
        y, g = _run(op, values)
        assert y.tolist() == [1.0, 0.0] and g.tolist() == [0.0, 0.0]
    _, composite = _run(sparsemax_reference, [1.0, 0.0])
    assert composite.tolist() != [0.0, 0.0]


@pytest.mark.parametrize("op", [P.sparsemax, P.entmax15])
@pytest.mark.parametrize("point", ["sparse", "dense"])
def test_the_sparse_maps_pass_gradgradcheck_at_sparse_and_dense_points(op, point):
    values = [[3.0, 0.1, -2.5, 1.2], [0.3, -4.0, 2.2, 2.0]] if point == "sparse" else \
        [[0.1, 0.2, 0.15, 0.05], [-0.1, 0.0, 0.1, 0.02]]
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    assert ((op(x) == 0).any()) == (point == "sparse")
    assert torch.autograd.gradcheck(op, (x,))
    assert torch.autograd.gradgradcheck(op, (x,))


def test_entmax15_second_derivative_has_no_nan_on_sparse_outputs():
    x = torch.tensor([[3.0, 0.1, -2.5, 1.2, -INF]], dtype=torch.float64, requires_grad=True)
    y = P.entmax15(x)
    assert (y == 0).sum() == 3
    (g,) = torch.autograd.grad(y, x, torch.tensor([[0.3, -1.0, 2.0, 0.5, 1.0]],
                                                     dtype=torch.float64), create_graph=True)
    assert g.requires_grad
    (hvp,) = torch.autograd.grad((g * torch.arange(5.0, dtype=torch.float64)).sum(), x)
    assert not torch.isnan(hvp).any()
    # the same Hessian-vector product as the closed-form composite on the support
    xr = x.detach()[:, :4].requires_grad_()
    (gr,) = torch.autograd.grad(entmax15_reference(xr), xr, torch.tensor(
        [[0.3, -1.0, 2.0, 0.5]], dtype=torch.float64), create_graph=True)
    (ref,) = torch.autograd.grad((gr * torch.arange(4.0, dtype=torch.float64)).sum(), xr)
    torch.testing.assert_close(hvp[:, :4], ref)


def test_safe_softmax_on_a_fully_masked_row_gives_zeros_and_zero_gradient():
    mask = torch.tensor([[True, False, True], [False, False, False]])
    y, g = _run(lambda x: P.safe_softmax(x, mask), [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    assert y[1].tolist() == [0.0] * 3 and g[1].tolist() == [0.0] * 3
    ry, rg = _run(masked_reference(mask), [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    torch.testing.assert_close(y, ry)
    torch.testing.assert_close(g, rg)
    # the composite softmax(masked_fill(-inf)) gives nan on that row
    composite, _ = _run(lambda x: torch.softmax(x.masked_fill(~mask, -INF), -1),
                        [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    assert torch.isnan(composite[1]).all()


@pytest.mark.parametrize("shape", [(5,), (1, 5), (4, 1), (2, 4, 5)])
def test_safe_softmax_broadcasts_its_mask(shape):
    values = _rng.normal(0, 1, (2, 4, 5)).tolist()
    mask = torch.tensor(_rng.uniform(size=shape) > 0.4)
    y, g = _run(lambda x: P.safe_softmax(x, mask), values)
    ry, rg = _run(masked_reference(mask.expand(2, 4, 5)), values)
    torch.testing.assert_close(y, ry)
    torch.testing.assert_close(g, rg)


def test_safe_softmax_without_a_mask_takes_inf_entries_as_torch_safe_softmax():
    values = [[1.0, -INF, 0.0], [-INF, -INF, -INF]]
    y, g = _run(P.safe_softmax, values)
    ry, rg = _run(lambda x: torch._safe_softmax(x, -1), values)
    torch.testing.assert_close(y, ry)
    torch.testing.assert_close(g, rg)


def test_safe_logsumexp_of_an_all_inf_row_is_inf_with_zero_gradient():
    values = [[1.0, 2.0, -INF], [-INF, -INF, -INF], [0.5, -1.0, 3.0]]
    y, g = _run(lambda x: P.safe_logsumexp(x, 1), values)
    ry, rg = _run(lambda x: torch.logsumexp(x, 1), values)
    assert y[1] == -INF and g[1].tolist() == [0.0] * 3
    assert torch.isnan(rg[1]).all()  # torch.logsumexp's gradient there: nan
    torch.testing.assert_close(y, ry)
    torch.testing.assert_close(g[[0, 2]], rg[[0, 2]])
    # and its second derivative: no nan either
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (first,) = torch.autograd.grad(P.safe_logsumexp(x, 1).sum(), x, create_graph=True)
    (second,) = torch.autograd.grad((first * first).sum(), x)
    assert not torch.isnan(second).any() and second[1].tolist() == [0.0] * 3


@pytest.mark.parametrize(("dim", "keepdim"), [(1, False), (1, True), ((0, 1), False),
                                              ((1, 0), True), (-2, True)])
def test_safe_logsumexp_takes_inf_entries_dims_and_keepdim_as_torch(dim, keepdim):
    values = [[1.0, INF, 0.0], [2.0, -INF, 1.0]]
    y, g = _run(lambda x: P.safe_logsumexp(x, dim, keepdim), values)
    ry, rg = _run(lambda x: torch.logsumexp(x, dim, keepdim), values)
    assert y.shape == ry.shape
    torch.testing.assert_close(y, ry)
    torch.testing.assert_close(g, rg, equal_nan=True)  # (nan at +inf, as torch)


@pytest.mark.parametrize("keepdim", [False, True])
def test_safe_logsumexp_of_a_0d_tensor_is_torchs(keepdim):
    y, g = _run(lambda x: P.safe_logsumexp(x, 0, keepdim), 1.5)
    ry, rg = _run(lambda x: torch.logsumexp(x, 0, keepdim), 1.5)
    assert y.shape == ry.shape == () and y.item() == ry.item() == 1.5
    assert g.item() == rg.item() == 0.5  # (the grad_output)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_log1mexp_gradient_is_finite_down_to_1e_8(dtype):
    points = [1e-8, 1e-6, 1e-3, 0.5, math.log(2), 1.0, 30.0]
    y, g = _run(P.log1mexp, points, dtype)
    assert torch.isfinite(y).all() and torch.isfinite(g).all()
    # log(1 - e^-x), by Maechler's two branches in float64; its slope 1 / expm1(x)
    exact = [math.log(-math.expm1(-p)) if p <= math.log(2) else math.log1p(-math.exp(-p))
             for p in points]
    slope = [1 / math.expm1(p) for p in points]
    weights = torch.linspace(0.5, 1.5, len(points), dtype=torch.float64)
    rtol = 1e-6 if dtype == torch.float32 else 1e-12
    np.testing.assert_allclose(y.tolist(), exact, rtol=rtol)
    np.testing.assert_allclose(g.tolist(), (weights * torch.tensor(slope, dtype=torch.float64))
                               .tolist(), rtol=rtol)
    if dtype == torch.float32:  # the two-branch composite's gradient at 1e-8: nan
        assert torch.isnan(_run(log1mexp_reference, [1e-8], dtype)[1]).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_log1mexp_at_zero_infinity_and_outside_its_domain(dtype):
    points = [0.0, -0.0, INF, -1.0, -INF, math.nan]
    y, g = _run(P.log1mexp, points, dtype)
    ry, rg = _run(log1mexp_reference, points, dtype)
    # the composite's values everywhere: -inf at either zero, -0 at +inf, nan below 0
    torch.testing.assert_close(y, ry, equal_nan=True, rtol=0, atol=0)
    assert y[:3].tolist() == [-INF, -INF, 0.0] and math.copysign(1, y[2]) == -1
    assert torch.isnan(y[3:]).all()
    # the gradient (grad_output 0.5 ... 1.5): the right limit +inf at either zero, where the
    # composite's is nan; 0 at +inf; below 0 the composite's 1 / expm1(x), finite down to -inf
    assert g[:3].tolist() == [INF, INF, 0.0] and torch.isnan(rg[:2]).all() and rg[2] == 0
    torch.testing.assert_close(g[3], rg[3])
    assert g[4] == -torch.linspace(0.5, 1.5, 6, dtype=dtype)[4] and torch.isnan(rg[4])
    assert torch.isnan(g[5]) and torch.isnan(rg[5])


@pytest.mark.parametrize("weight", [True, False])
def test_rms_norm_on_zero_rows_1d_and_non_contiguous_inputs_is_torchs(weight):
    w = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True) if weight \
        else None
    base = torch.tensor(_rng.normal(0, 1, (3, 4)), requires_grad=True)
    for make in (lambda: torch.zeros(2, 3, dtype=torch.float64).requires_grad_(),
                 lambda: torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True),
                 lambda: base.t()[:, :3]):  # (a non-contiguous view)
        outs = []
        for f in (lambda x: P.rms_norm(x, (3,), w, 1e-5), lambda x: F.rms_norm(x, (3,), w, 1e-5)):
            x = make()
            y = f(x)
            leaves = [t for t in (x, w) if t is not None]
            outs.append((y, *torch.autograd.grad(y, leaves, torch.full_like(y, 0.7) + y.detach(),
                                                 allow_unused=True)))
        for a, b in zip(*outs):
            torch.testing.assert_close(a, b)


_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


@pytest.mark.parametrize("dtype", _DTYPES)
@pytest.mark.parametrize("weight_dtype", [None, *_DTYPES])
@pytest.mark.parametrize("eps", [None, 1e-5])
# (torch warns that mixed dtypes take its composite path, not the fused kernel)
@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")
def test_rms_norm_gives_torchs_dtype_and_values_for_every_dtype_pair(dtype, weight_dtype, eps):
    # the output in the input's dtype, whatever the weight's; half inputs normalized in float32
    # and rounded once, as F.rms_norm: the same bits
    x = torch.tensor(_rng.normal(0, 3, (4, 16))).to(dtype).requires_grad_()
    w = None if weight_dtype is None else \
        torch.tensor(_rng.normal(1, 0.3, 16)).to(weight_dtype).requires_grad_()
    y, want = P.rms_norm(x, (16,), w, eps), F.rms_norm(x, (16,), w, eps)
    assert y.dtype == want.dtype
    assert torch.equal(y, want)
    leaves = [t for t in (x, w) if t is not None]
    g = torch.tensor(_rng.normal(0, 1, (4, 16))).to(dtype)
    got, expected = torch.autograd.grad(y, leaves, g), torch.autograd.grad(want, leaves, g)
    for a, b in zip(got, expected):
        assert a.dtype == b.dtype
        torch.testing.assert_close(a.double(), b.double(), rtol=1e-2 if a.element_size() < 4
                                   else 1e-5, atol=1e-2 if a.element_size() < 4 else 1e-6)


@pytest.mark.parametrize("dtype", _DTYPES)
def test_rms_norm_eps_none_is_torchs_default(dtype):
    # rows so small that eps dominates mean(x ** 2): float32's epsilon for half types and
    # float32, float64's for float64
    x = torch.tensor([[1e-4] * 4, [3e-4, -1e-4, 2e-4, 0.0], [1.0, 2.0, 3.0, 4.0]], dtype=dtype)
    assert torch.equal(P.rms_norm(x, (4,)), F.rms_norm(x, (4,)))
    assert not torch.equal(P.rms_norm(x, (4,)), P.rms_norm(x, (4,), eps=1e-3))


@pytest.mark.parametrize("shape", [[3, 4], (3, 4), torch.Size([3, 4]), (2, 3, 4)])
def test_rms_norm_normalizes_over_every_dim_of_normalized_shape(shape):
    x = torch.tensor(_rng.normal(0, 2, (2, 3, 4)), requires_grad=True)
    w = torch.tensor(_rng.normal(1, 0.3, tuple(shape)), requires_grad=True)
    y, want = P.rms_norm(x, shape, w, 1e-5), F.rms_norm(x, shape, w, 1e-5)
    torch.testing.assert_close(y, want, rtol=1e-12, atol=1e-12)
    g = torch.tensor(_rng.normal(0, 1, (2, 3, 4)))
    torch.testing.assert_close(torch.autograd.grad(y, (x, w), g),
                               torch.autograd.grad(want, (x, w), g), rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(lambda x, w: P.rms_norm(x, shape, w), (x, w))
    assert torch.autograd.gradgradcheck(lambda x, w: P.rms_norm(x, shape, w), (x, w))


def test_rms_norm_takes_an_integer_weight_and_a_negative_eps_as_torch():
    # torch is silent on both: an int64 weight scales (and gets no gradient), eps < 0 gives nan
    # where mean(x ** 2) + eps < 0
    x = torch.tensor([[0.1, -0.2, 0.1], [1.0, 2.0, 3.0]])
    w = torch.tensor([1, 2, 3])
    assert torch.equal(P.rms_norm(x, (3,), w), F.rms_norm(x, (3,), w))
    torch.testing.assert_close(P.rms_norm(x, (3,), None, -0.5),
                               F.rms_norm(x, (3,), None, -0.5), equal_nan=True)


# ---------------------------------------------------------------------------------- both engines
_EDGE = [[1.0, 0.5, -INF, 0.9], [-INF, -INF, -INF, -INF], [2.0, 2.0, -1.0, 2.0]]
ENGINE_CASES = {
    "sparsemax": (P.sparsemax, [_EDGE]),
    "sparsemax_dim": (lambda x: P.sparsemax(x, 0), [_rng.normal(0, 2, (4, 3)).tolist()]),
    "entmax15": (P.entmax15, [_EDGE]),
    "entmax15_dim": (lambda x: P.entmax15(x, 0), [_rng.normal(0, 2, (4, 3)).tolist()]),
    "safe_softmax": (P.safe_softmax, [_EDGE]),
    "rms_norm": (lambda x, w: P.rms_norm(x, (4,), w),
                 [_rng.normal(0, 1, (3, 4)).tolist(), [0.5, 1.0, -2.0, 1.5]]),
    "rms_norm_no_weight": (lambda x: P.rms_norm(x, [2]), [[[0.0, 0.0], [1.0, -3.0]]]),
    "rms_norm_two_dims": (lambda x, w: P.rms_norm(x, (2, 2), w, 1e-3),
                          [_rng.normal(0, 1, (3, 2, 2)).tolist(), [[0.5, 1.0], [-2.0, 1.5]]]),
    "safe_logsumexp": (lambda x: P.safe_logsumexp(x, 1), [_EDGE]),
    "safe_logsumexp_dims": (lambda x: P.safe_logsumexp(x, (0, 2), True),
                            [_rng.normal(0, 1, (2, 3, 4)).tolist()]),
    "log1mexp": (P.log1mexp, [[1e-8, 0.3, 0.9, 5.0, INF, 0.0]]),
}


@pytest.mark.parametrize("name", list(ENGINE_CASES))
def test_the_op_gives_the_same_on_the_mini_engine(name, T):
    fn, values = ENGINE_CASES[name]
    inputs = [T.tensor(v, dtype=T.float64, requires_grad=True) for v in values]
    y = fn(*inputs)
    g = T.tensor(np.linspace(0.5, 1.5, y.numel()).reshape(tuple(y.shape)))
    grads = T.autograd.grad(y, inputs, g)
    expected_inputs = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    ref = fn(*expected_inputs)
    expected = torch.autograd.grad(ref, expected_inputs, torch.tensor(g.numpy()))
    torch.testing.assert_close(torch.tensor(y.detach().numpy()), ref.detach())
    for a, b in zip(grads, expected):
        torch.testing.assert_close(torch.tensor(a.numpy()), b)


def test_masked_safe_softmax_gives_the_same_on_the_mini_engine(T):
    values = _rng.normal(0, 1, (3, 4))
    mask = [[True, False, True, True], [False] * 4, [True, True, False, True]]
    got = []
    for lib in (T, torch):
        x = lib.tensor(values, requires_grad=True)
        y = P.safe_softmax(x, lib.tensor(mask))
        (g,) = lib.autograd.grad(y, x, lib.tensor(np.linspace(0.5, 1.5, 12).reshape(3, 4)))
        got.append((torch.tensor(y.detach().numpy()), torch.tensor(g.numpy())))
    for a, b in zip(*got):
        torch.testing.assert_close(a, b)
    assert got[0][1][1].tolist() == [0.0] * 4


@pytest.mark.parametrize("cls", ["Sparsemax", "Entmax15", "SafeSoftmax", "RMSNorm",
                                 "SafeLogsumexp", "Log1mexp"])
def test_the_node_is_named_after_the_function_on_both_engines(T, cls):
    x = T.tensor([[-0.5, -1.0], [-2.0, -0.1]], requires_grad=True)
    name = {"Sparsemax": "sparsemax", "Entmax15": "entmax15", "SafeSoftmax": "safe_softmax",
            "RMSNorm": "rms_norm", "SafeLogsumexp": "safe_logsumexp",
            "Log1mexp": "log1mexp"}[cls]
    args = {"SafeLogsumexp": (x, 1), "RMSNorm": (x, (2,))}.get(cls, (x,))
    y = getattr(P, name)(*args)
    assert type(y.grad_fn).__name__ == f"{cls}Backward"


# ---------------------------------------------------------------------------------- other dtypes
_DTYPE_CASES = {
    "sparsemax": (P.sparsemax, [(3, 5)]), "entmax15": (P.entmax15, [(3, 5)]),
    "safe_softmax": (lambda x: P.safe_softmax(x, MASK.to(x.device)), [(3, 5)]),
    "rms_norm": (lambda x, w: P.rms_norm(x, (5,), w), [(3, 5), (5,)]),
    "safe_logsumexp": (lambda x: P.safe_logsumexp(x, -1), [(3, 5)]),
    "log1mexp": (lambda x: P.log1mexp(-x), [(3, 5)]),  # (the inputs are below 0)
}


@pytest.mark.parametrize("name", list(_DTYPE_CASES))
@pytest.mark.parametrize("where", ["meta", torch.float16, torch.bfloat16])
def test_the_op_runs_on_meta_and_half_tensors_directly(name, where):
    fn, shapes = _DTYPE_CASES[name]
    args = [(-torch.rand(s) - 0.1).to("meta" if where == "meta" else where).requires_grad_()
            for s in shapes]
    y = fn(*args)
    grads = torch.autograd.grad(y, args, torch.ones_like(y))
    assert y.device == args[0].device and y.dtype == args[0].dtype
    assert all(g.shape == a.shape and g.dtype == a.dtype for g, a in zip(grads, args))
    if where != "meta":
        assert torch.isfinite(y).all() and all(torch.isfinite(g).all() for g in grads)


# ---------------------------------------------------------------------------------- bad input
_M = torch.ones(2, 3)


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: P.sparsemax(_M, 2), IndexError, r"sparsemax\(\): Dimension out of range \(expected "
                                             r"to be in range of \[-2, 1\], but got 2\)"),
    (lambda: P.entmax15(_M, -3), IndexError, r"entmax15\(\): Dimension out of range"),
    (lambda: P.safe_softmax(_M, dim=5), IndexError, r"safe_softmax\(\): Dimension out of range"),
    (lambda: P.safe_logsumexp(_M, 2), IndexError, r"safe_logsumexp\(\): Dimension out of range"),
    (lambda: P.safe_logsumexp(_M, (0, 3)), IndexError, "safe_logsumexp.*out of range"),
    (lambda: P.sparsemax(ext.ones(2, 3), 2), IndexError, r"sparsemax\(\): Dimension out"),
    (lambda: P.sparsemax(_M, 1.0), TypeError, r"sparsemax\(\): argument 'dim' must be int"),
    (lambda: P.safe_logsumexp(_M, (1, -1)), RuntimeError, "dim 1 appears multiple times"),
    (lambda: P.safe_logsumexp(_M, ()), ValueError, "'dim' must name at least one dimension"),
    (lambda: P.safe_softmax(_M, torch.ones(2, 2, dtype=torch.bool)), ValueError,
     r"safe_softmax\(\): argument 'mask' of shape \[2, 2\] does not broadcast to x's shape "
     r"\[2, 3\]"),
    (lambda: P.safe_softmax(_M, torch.ones(4, 2, 3, dtype=torch.bool)), ValueError,
     "argument 'mask' of shape"),
    (lambda: P.safe_softmax(_M, torch.ones(2, 3)), TypeError,
     r"safe_softmax\(\): argument 'mask' must be a bool tensor, got float32"),
    (lambda: P.safe_softmax(_M, [True, False, True]), TypeError, "'mask' must be a bool tensor"),
    (lambda: P.log1mexp(torch.tensor([1, 2])), TypeError,
     r"log1mexp\(\): argument 'x' must be a floating-point tensor, got int64"),
    (lambda: P.entmax15(ext.tensor([1, 2])), TypeError, "entmax15.*'x'.*int64"),
])
def test_bad_input_is_refused_before_any_work(call, error, match):
    with pytest.raises(error, match=match):
        call()


_X3 = torch.ones(2, 3, 4)


@pytest.mark.parametrize(("args", "error", "match"), [
    ((_X3, (3,)), RuntimeError, r"Given normalized_shape=\[3\], expected input with shape "
                                r"\[\*3\], but got input of size\[2, 3, 4\]"),
    ((_X3, (5, 4)), RuntimeError, r"normalized_shape=\[5, 4\], expected input with shape "
                                  r"\[\*5, 4\]"),
    ((_X3, (2, 2, 3, 4)), ValueError, "Input tensor must have at least 4 dimensions, but got 3"),
    ((_X3, (4,), torch.ones(3)), RuntimeError,
     r"Expected weight to be of same shape as normalized_shape, but got weight of shape \[3\] "
     r"and normalized_shape = \[4\]"),
    ((_X3, (4,), torch.ones(1, 4)), RuntimeError, "weight of shape \\[1, 4\\]"),
    ((_X3, (3, 4), torch.ones(4)), RuntimeError, "same shape as normalized_shape"),
    ((_X3, 4), TypeError, "argument 'normalized_shape' must be tuple of ints, not int"),
    ((_X3, (4.0,)), TypeError, "must be tuple of ints, but found element of type float"),
    ((_X3, ()), RuntimeError, "Expected normalized_shape to be at least 1-dimensional"),
    ((torch.tensor(1.0), ()), RuntimeError, "at least 1-dimensional"),
    ((torch.tensor(1.0), (1,)), ValueError, "must have at least 1 dimensions, but got 0"),
    ((_X3, (4,), None, "a"), TypeError, "argument 'eps' must be float, not str"),
    ((_X3, (4,), [1.0] * 4), TypeError, "argument 'weight' must be Tensor, not list"),
    ((torch.ones(3, dtype=torch.int64), (3,)), NotImplementedError,
     "\"rms_norm\" not implemented for 'int64'"),
])
def test_rms_norm_refuses_what_f_rms_norm_refuses_with_its_error(args, error, match):
    with pytest.raises(error):
        F.rms_norm(*args)
    with pytest.raises(error, match=r"rms_norm\(\): .*" + match):
        P.rms_norm(*args)


def test_a_refused_call_leaves_its_input_untouched(T):
    x = T.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError):
        P.rms_norm(x, (3,), T.ones(2))
    with pytest.raises(IndexError):
        P.safe_softmax(x, None, 2)
    assert x.grad is None and x._version == 0


# ---------------------------------------------------------------------------------- a model
def test_a_small_model_built_from_these_ops_trains_as_the_reference_one():
    gen = np.random.default_rng(1)
    w1, w2, g = gen.standard_normal((8, 6)) * 0.4, gen.standard_normal((4, 8)) * 0.4, \
        gen.uniform(0.5, 1.5, 8)
    data, target = gen.standard_normal((16, 6)), gen.standard_normal((16, 4))

    def train(norm, attend, lse, steps=4):
        params = [torch.tensor(w, requires_grad=True) for w in (w1, w2, g)]
        x, t = torch.tensor(data), torch.tensor(target)
        losses = []
        for _ in range(steps):
            h = norm(x @ params[0].t(), params[2])
            p = attend(h @ params[1].t())
            loss = ((p - t.softmax(-1)) ** 2).sum() + lse(h).mean()
            losses.append(loss.item())
            for q in params:
                q.grad = None
            loss.backward()
            with torch.no_grad():
                for q in params:
                    q -= 0.05 * q.grad
        return losses

    pack = train(lambda h, w: P.rms_norm(h, (8,), w, 1e-6), P.entmax15,
                 lambda h: P.safe_logsumexp(h, -1))
    reference = train(lambda h, w: F.rms_norm(h, (8,), w, 1e-6), entmax15_reference,
                      lambda h: torch.logsumexp(h, -1))
    np.testing.assert_allclose(pack, reference, rtol=0, atol=1e-10)
    assert pack[-1] < pack[0]
