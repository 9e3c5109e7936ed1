"""The pack's cross-entropy losses (cross_entropy_lse, fused_linear_cross_entropy) against
F.cross_entropy: the parity checklist, every reduction with a non-uniform grad_output, the pinned
edge points, the saved bytes, bad input and both engines."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ext
from ext import functions as P
from ext.functions.dropin.losses import FusedLinearCrossEntropy
from ext.testing import saved_bytes
from ext.testing.cases import PACK, fused_case, lse_case

torch = pytest.importorskip("torch")
F = torch.nn.functional

pytestmark = pytest.mark.ext_only

_rng = np.random.default_rng(11)
def _t(*shape, dtype=torch.float64):
    return torch.tensor(_rng.standard_normal(shape), dtype=dtype, requires_grad=True)


def _target(n, classes, ignored=(), ignore_index=-100):
    t = torch.tensor(_rng.integers(0, classes, n))
    for i in ignored:
        t[i] = ignore_index
    return t


class _CountProducts(torch.overrides.TorchFunctionMode):
    """Counts the matrix products (matmul, mm, addmm) run inside it."""

    def __enter__(self):
        self.n = 0
        return super().__enter__()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in {"matmul", "__matmul__", "mm", "addmm"}:
            self.n += 1
        return func(*args, **(kwargs or {}))


# (the parity cases of this file: ext.testing.cases.PACK, which `python -m ext parity` runs too)
CASES = {name: case for name, case in PACK.items() if case.group == "losses"}


# (vmap over every input batches the one-hot write, whose in-place form torch.func runs through
# its slower fallback, with this warning)
@pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning")
@pytest.mark.parametrize("name", list(CASES))
def test_the_loss_passes_the_parity_checklist(name):
    report = CASES[name].check(compile_backend=os.environ.get("EXT_COMPILE_BACKEND", "aot_eager"))
    assert report.ok, str(report)


def _grads(out, inputs, grad_out):
    return torch.autograd.grad(out, inputs, grad_out)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("chunk", [1, 3, 10, 64])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_fused_gives_every_reduction_with_a_non_uniform_grad_output(reduction, chunk, smoothing):
    # the per-row grad_output of 'none' reaches every row's share of dW and db, chunk by chunk
    x, w, b, t = _t(10, 4), _t(7, 4), _t(7), _target(10, 7, (3, 8))
    fn, ref = fused_case(reduction, smoothing, chunk)
    out, want = fn(x, w, t, b), ref(x, w, t, b)
    torch.testing.assert_close(out, want, rtol=0, atol=1e-12)
    g = torch.tensor(_rng.uniform(-2.0, 3.0, tuple(out.shape)))
    for a, e in zip(_grads(out, (x, w, b), g), _grads(want, (x, w, b), g)):
        torch.testing.assert_close(a, e, rtol=0, atol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_lse_gives_every_reduction_with_a_non_uniform_grad_output(reduction):
    z, t = _t(8, 5), _target(8, 5, (0, 6))
    fn, ref = lse_case(reduction, 0.15)
    out, want = fn(z, t), ref(z, t)
    g = torch.tensor(_rng.uniform(-2.0, 3.0, tuple(out.shape)))
    torch.testing.assert_close(_grads(out, z, g), _grads(want, z, g), rtol=0, atol=1e-12)


# ------------------------------------------------------------------ F.cross_entropy's arguments
def _targets(shape, probs, ignored=True):
    """Class probabilities (input's shape, a leaf) or class indices (one per row, the first
    ignored) for logits of ``shape``."""
    if probs:
        p = torch.tensor(_rng.uniform(0.1, 1.0, shape))
        return (p / p.sum(1 if len(shape) > 1 else 0, keepdim=True)).requires_grad_()
    classes = shape[1] if len(shape) > 1 else shape[0]
    rows = (shape[0], *shape[2:]) if len(shape) > 1 else ()
    t = torch.tensor(_rng.integers(0, classes, rows))
    if ignored and rows:
        t.view(-1)[0] = -100
    return t


@pytest.mark.parametrize("shape", [(5,), (6, 5), (3, 5, 2), (2, 5, 2, 3)])
@pytest.mark.parametrize("probs", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_lse_is_f_cross_entropy_for_every_shape_and_keyword(
        shape, probs, weighted, smoothing, reduction):
    # values and gradients (the logits'; a probability target's and the weight beside it, which
    # torch differentiates too), with a non-uniform grad_output
    z, t = _t(*shape), _targets(shape, probs)
    classes = shape[1] if len(shape) > 1 else shape[0]
    w = torch.tensor(_rng.uniform(0.2, 2.0, classes), requires_grad=probs) if weighted else None
    out = P.cross_entropy_lse(z, t, w, reduction=reduction, label_smoothing=smoothing)
    want = F.cross_entropy(z, t, w, reduction=reduction, label_smoothing=smoothing)
    assert out.shape == want.shape and out.dtype == want.dtype
    torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)
    leaves = [a for a in (z, t, w) if a is not None and a.requires_grad]
    g = torch.tensor(_rng.uniform(-2.0, 3.0, tuple(out.shape)))
    torch.testing.assert_close(_grads(out, leaves, g), _grads(want, leaves, g), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("probs", [False, True])
def test_cross_entropy_lse_passes_gradcheck_with_weights_and_smoothing(probs):
    z, t = _t(3, 4, 2), _targets((3, 4, 2), probs)
    w = torch.tensor(_rng.uniform(0.2, 2.0, 4), requires_grad=probs)
    inputs = (z, t, w) if probs else (z,)

    def fn(*a):
        return P.cross_entropy_lse(a[0], a[1] if probs else t, a[2] if probs else w,
                                   label_smoothing=0.2)
    assert torch.autograd.gradcheck(fn, inputs)


@pytest.mark.parametrize("probs", [False, True])
def test_cross_entropy_lse_in_float32_is_torchs_to_rounding(probs):
    z = torch.tensor(_rng.normal(0, 3, (64, 10, 3)), dtype=torch.float32, requires_grad=True)
    t = _targets((64, 10, 3), probs)
    t = t.detach().float() if probs else t
    w = torch.tensor(_rng.uniform(0.2, 2.0, 10), dtype=torch.float32)
    out = P.cross_entropy_lse(z, t, w, label_smoothing=0.1)
    want = F.cross_entropy(z, t, w, label_smoothing=0.1)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(_grads(out, z, None), _grads(want, z, None))


def test_cross_entropy_lse_takes_f_cross_entropys_positional_arguments():
    # input, target, weight, size_average, ignore_index, reduce, reduction, label_smoothing
    z, t = _t(6, 4), _target(6, 4, (2,), ignore_index=1)
    w = torch.tensor(_rng.uniform(0.5, 1.5, 4))
    args = (w, None, 1, None, "sum", 0.25)
    torch.testing.assert_close(P.cross_entropy_lse(z, t, *args), F.cross_entropy(z, t, *args))


@pytest.mark.parametrize(("size_average", "reduce"), [(False, None), (None, False),
                                                      (True, True), (False, True)])
def test_deprecated_size_average_and_reduce_act_and_warn_as_torchs(size_average, reduce):
    z, t = _t(5, 3), _target(5, 3)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        want = F.cross_entropy(z, t, size_average=size_average, reduce=reduce, reduction="sum")
    with pytest.warns(UserWarning, match=r"cross_entropy_lse\(\): size_average and reduce"):
        out = P.cross_entropy_lse(z, t, size_average=size_average, reduce=reduce,
                                  reduction="sum")
    assert out.shape == want.shape
    torch.testing.assert_close(out, want)


def test_label_smoothing_at_or_below_zero_is_none_as_torchs():
    z, t = _t(4, 3), _target(4, 3)
    for smoothing in (0.0, -0.5):
        torch.testing.assert_close(P.cross_entropy_lse(z, t, label_smoothing=smoothing),
                                   F.cross_entropy(z, t, label_smoothing=smoothing))


@pytest.mark.parametrize("lead", [(), (7,), (2, 3)])
@pytest.mark.parametrize("probs", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_fused_takes_leading_dims_class_weights_and_probabilities(lead, probs, weighted,
                                                                  reduction):
    # the linear's last dim holds the classes: the reference flattens x's leading dims into rows
    x, w, b = _t(*lead, 4), _t(6, 4), _t(6)
    t = _t(*lead, 6).detach().softmax(-1).requires_grad_() if probs else \
        torch.tensor(_rng.integers(0, 6, lead))
    cw = torch.tensor(_rng.uniform(0.2, 2.0, 6), requires_grad=probs) if weighted else None
    out = P.fused_linear_cross_entropy(x, w, t, b, class_weight=cw, reduction=reduction,
                                       label_smoothing=0.2, chunk_size=2)
    z = F.linear(x, w, b)
    want = F.cross_entropy(z.reshape(-1, 6), t.reshape(-1, 6) if probs else t.reshape(-1), cw,
                           reduction=reduction, label_smoothing=0.2)
    want = want.reshape(lead) if reduction == "none" else want
    assert out.shape == want.shape
    torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)
    leaves = [a for a in (x, w, b, t, cw) if a is not None and a.requires_grad]
    g = torch.tensor(_rng.uniform(-2.0, 3.0, tuple(out.shape)))
    torch.testing.assert_close(_grads(out, leaves, g), _grads(want, leaves, g), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("probs", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_fused_under_bf16_autocast_is_the_linear_and_cross_entropy_composite(probs, bias):
    # bf16 x and float32 weight, as in a model under autocast: F.linear runs in bf16 and
    # F.cross_entropy in float32; the pack rounds the linear's inputs as F.linear does, so the
    # loss and the gradients agree to bf16's precision, in the composite's dtypes
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(4, 5, 32, generator=gen).bfloat16().requires_grad_()
    w = (torch.randn(50, 32, generator=gen) / 4).requires_grad_()
    b = torch.randn(50, generator=gen).requires_grad_() if bias else None
    t = torch.randn(4, 5, 50, generator=gen).softmax(-1) if probs else \
        torch.randint(0, 50, (4, 5), generator=gen)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = P.fused_linear_cross_entropy(x, w, t, b, label_smoothing=0.1, chunk_size=8)
        z = F.linear(x, w, b)
        want = F.cross_entropy(z.flatten(0, 1), t.flatten(0, 1), label_smoothing=0.1)
    assert out.dtype == want.dtype == torch.float32
    torch.testing.assert_close(out, want, rtol=1e-2, atol=1e-2)
    leaves = [a for a in (x, w, b) if a is not None]
    for a, e in zip(_grads(out, leaves, None), _grads(want, leaves, None)):
        assert a.dtype == e.dtype
        torch.testing.assert_close(a.float(), e.float(), rtol=2e-2, atol=2e-2 * e.abs().max())


def test_cross_entropy_lse_under_bf16_autocast_takes_a_float32_weight():
    z = torch.randn(6, 5).bfloat16().requires_grad_()
    t, w = torch.tensor([0, 1, 4, 2, 2, 3]), torch.rand(5) + 0.5
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, want = P.cross_entropy_lse(z, t, w), F.cross_entropy(z, t, w)
    assert out.dtype == want.dtype == torch.float32
    torch.testing.assert_close(out, want)
    (g,), (ge,) = _grads(out, z, None), _grads(want, z, None)
    assert g.dtype == ge.dtype == torch.bfloat16
    torch.testing.assert_close(g, ge)


# ---------------------------------------------------------------------------------- edge points
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_all_targets_ignored_give_torchs_loss_and_zero_gradients(reduction, smoothing):
    # mean: 0 / 0 = nan, as torch; the gradients are zeros, not nan
    x, w, b = _t(4, 3), _t(5, 3), _t(5)
    t = torch.full((4,), -100)
    fused = P.fused_linear_cross_entropy(x, w, t, b, reduction=reduction,
                                         label_smoothing=smoothing, chunk_size=3)
    z = F.linear(x, w, b).detach().requires_grad_()
    lse = P.cross_entropy_lse(z, t, reduction=reduction, label_smoothing=smoothing)
    want = F.cross_entropy(F.linear(x, w, b), t, reduction=reduction, label_smoothing=smoothing)
    torch.testing.assert_close(fused, want, equal_nan=True)
    torch.testing.assert_close(lse, want, equal_nan=True)
    assert torch.isnan(want).all() if reduction == "mean" else not want.any()
    for g in (*_grads(fused, (x, w, b), torch.ones_like(fused)),
              *_grads(lse, z, torch.ones_like(lse))):
        assert not g.any() and not torch.isnan(g).any()


def test_n_equal_1_and_unbatched_inputs_as_torch():
    x, w, b = _t(1, 4), _t(6, 4), _t(6)
    t = _target(1, 6)
    for reduction in ("mean", "none"):
        fn, ref = fused_case(reduction)
        torch.testing.assert_close(fn(x, w, t, b), ref(x, w, t, b))
        # (H,) with a 0-d target: F.linear gives (V,), F.cross_entropy a 0-d loss
        xs, ts = x[0].detach().requires_grad_(), t[0]
        out, want = fn(xs, w, ts, b), ref(xs, w, ts, b)
        assert out.shape == want.shape == ()
        torch.testing.assert_close(_grads(out, (xs, w), torch.tensor(0.7, dtype=torch.float64)),
                                   _grads(want, (xs, w), torch.tensor(0.7, dtype=torch.float64)))
        z = _t(6)
        lse, native = lse_case(reduction)
        assert lse(z, ts).shape == native(z, ts).shape == ()
        torch.testing.assert_close(_grads(lse(z, ts), z, torch.tensor(1.3, dtype=torch.float64)),
                                   _grads(native(z, ts), z,
                                          torch.tensor(1.3, dtype=torch.float64)))


def test_label_smoothing_leaves_the_ignored_rows_out_as_torch():
    x, w = _t(6, 3), _t(4, 3)
    t = _target(6, 4, (0, 2, 3), ignore_index=1)
    for reduction in ("mean", "sum", "none"):
        out = P.fused_linear_cross_entropy(x, w, t, reduction=reduction, ignore_index=1,
                                           label_smoothing=0.4, chunk_size=4)
        want = F.cross_entropy(F.linear(x, w), t, reduction=reduction, ignore_index=1,
                               label_smoothing=0.4)
        torch.testing.assert_close(out, want)
        if reduction == "none":
            assert out[[0, 2, 3]].tolist() == [0.0, 0.0, 0.0]
        g = torch.ones_like(out)
        gx, gw = _grads(out, (x, w), g)
        torch.testing.assert_close((gx, gw), _grads(want, (x, w), g))
        assert not gx[[0, 2, 3]].any()


@pytest.mark.parametrize("needs", [(True, False, False), (False, True, True), (False, False, True)])
def test_fused_gives_the_gradients_of_the_inputs_that_ask_for_one(needs):
    x, w, b = (a.detach().requires_grad_(n) for a, n in zip((_t(5, 3), _t(4, 3), _t(4)), needs))
    t = _target(5, 4, (1,))
    leaves = [a for a in (x, w, b) if a.requires_grad]
    out = P.fused_linear_cross_entropy(x, w, t, b, chunk_size=2)
    want = F.cross_entropy(F.linear(x, w, b), t)
    torch.testing.assert_close(_grads(out, leaves, None), _grads(want, leaves, None))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_the_dtype_is_kept_through_forward_and_backward(dtype):
    # float64 stays float64 (no float32 accumulator), to float64's precision
    x, w, b = _t(9, 4, dtype=dtype), _t(5, 4, dtype=dtype), _t(5, dtype=dtype)
    t = _target(9, 5, (4,))
    out = P.fused_linear_cross_entropy(x, w, t, b, chunk_size=2)
    want = F.cross_entropy(F.linear(x, w, b), t)
    assert out.dtype == dtype
    grads = _grads(out, (x, w, b), None)
    assert all(g.dtype == dtype for g in grads)
    tol = 1e-13 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(out, want, rtol=tol, atol=tol)
    torch.testing.assert_close(grads, _grads(want, (x, w, b), None), rtol=tol, atol=tol)


@pytest.mark.parametrize("op", ["cross_entropy_lse", "fused_linear_cross_entropy"])
def test_float64_stays_float64_under_autocast_as_torchs_cross_entropy(op):
    fn, ref, args = CASES[op].fn, CASES[op].reference, CASES[op].inputs()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, want = fn(*args), ref(*args)
    assert out.dtype == want.dtype == torch.float64
    leaves = [a for a in args if a.requires_grad]
    grads = _grads(out, leaves, None)
    assert all(g.dtype == torch.float64 for g in grads)
    torch.testing.assert_close(out, want, rtol=0, atol=1e-12)
    torch.testing.assert_close(grads, _grads(want, leaves, None), rtol=0, atol=1e-12)


@pytest.mark.parametrize("op", ["cross_entropy_lse", "fused_linear_cross_entropy"])
@pytest.mark.parametrize("where", ["meta", torch.float16, torch.bfloat16])
def test_the_loss_runs_on_meta_and_half_tensors_directly(op, where):
    args = [a.detach().to(torch.float32).to("meta" if where == "meta" else where)
            .requires_grad_() if torch.is_tensor(a) and a.is_floating_point() else
            (a.to("meta") if where == "meta" else a) for a in CASES[op].inputs()]
    y = getattr(P, op)(*args)
    leaves = [a for a in args if torch.is_tensor(a) and a.is_floating_point()]
    grads = torch.autograd.grad(y, leaves, torch.ones_like(y))
    assert y.device == leaves[0].device and y.dtype == leaves[0].dtype
    assert all(g.shape == a.shape and g.dtype == a.dtype for g, a in zip(grads, leaves))
    if where != "meta":  # (half inputs, accumulated in float32, near the float64 loss)
        want = getattr(P, op)(*[a.detach().double() if a.is_floating_point() else a
                                for a in args])
        assert abs(y.double().item() - want.item()) < 0.05


# ---------------------------------------------------------------------------------- saved bytes
def test_fused_saves_no_logits_only_the_gradients_or_its_inputs_and_a_logsumexp_per_row():
    # a scalar loss: the gradients of x, weight and bias, computed in forward (their bytes);
    # 'none': x, weight, bias, the target and a logsumexp per row, for the recompute
    n, h, v = 64, 8, 256
    x, w, b = (torch.randn(*s, dtype=torch.float32, requires_grad=True)
               for s in ((n, h), (v, h), (v,)))
    t = torch.randint(0, v, (n,))
    inputs = 4 * (n * h + v * h + v)
    for chunk in (1, 16, 1024):
        assert saved_bytes(lambda *a, c=chunk: P.fused_linear_cross_entropy(*a, chunk_size=c),
                           x, w, t, b) == inputs
        assert saved_bytes(lambda *a, c=chunk: P.fused_linear_cross_entropy(
            *a, chunk_size=c, reduction="none"), x, w, t, b) == inputs + 8 * n + 4 * n
    reference = saved_bytes(lambda x, w, t, b: F.cross_entropy(F.linear(x, w, b), t), x, w, t, b)
    assert reference >= 4 * n * v  # (the reference keeps an (n x v) log_softmax)


def test_cross_entropy_lse_saves_its_logits_and_two_values_per_row():
    # class indices: the index (int64) and the row's scale (float); probabilities: the target
    # and a logsumexp per row
    z, t = torch.randn(32, 100, requires_grad=True), torch.randint(0, 100, (32,))
    mine = saved_bytes(P.cross_entropy_lse, z, t)
    assert mine == 4 * 32 * 100 + 8 * 32 + 4 * 32
    p = torch.rand(32, 100).softmax(1)
    assert saved_bytes(P.cross_entropy_lse, z, p) == 2 * 4 * 32 * 100 + 4 * 32
    # the reference's log_softmax replaces the logits: one float per row less, no more
    assert mine <= saved_bytes(F.cross_entropy, z, t) + 4 * 32


# ------------------------------------------------------------- gradients computed in forward
def _fused_both_ways(x, w, t, b, grad_out, **kwargs):
    """The gradients of x, weight and bias from FusedLinearCrossEntropy computed in forward and
    recomputed in backward (the same call otherwise), for a scalar grad_output."""
    args = (t, b, kwargs.get("class_weight"), kwargs.get("ignore_index", -100),
            kwargs.get("reduction", "mean"), kwargs.get("label_smoothing", 0.0),
            kwargs.get("chunk_size", 3))
    leaves = [a for a in (x, w, b) if a is not None]
    need = (True, True, b is not None)
    out = [FusedLinearCrossEntropy.apply(x, w, *args, grads) for grads in (need, ())]
    torch.testing.assert_close(out[0], out[1], rtol=0, atol=0, equal_nan=True)
    return [_grads(o, leaves, grad_out) for o in out]


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_fused_gradients_from_forward_equal_the_recomputed_ones_and_torchs(
        reduction, smoothing, weighted, bias):
    x, w, b = _t(10, 4), _t(7, 4), _t(7) if bias else None
    t = _target(10, 7, (2, 9))
    cw = torch.tensor(_rng.uniform(0.2, 2.0, 7)) if weighted else None
    g = torch.tensor(-1.7, dtype=torch.float64)  # (any scalar grad_output, not only 1)
    in_forward, recomputed = _fused_both_ways(x, w, t, b, g, reduction=reduction,
                                              label_smoothing=smoothing, class_weight=cw)
    torch.testing.assert_close(in_forward, recomputed, rtol=1e-12, atol=1e-12)
    want = F.cross_entropy(F.linear(x, w, b), t, cw, reduction=reduction,
                           label_smoothing=smoothing)
    leaves = [a for a in (x, w, b) if a is not None]
    torch.testing.assert_close(in_forward, _grads(want, leaves, g), rtol=1e-12, atol=1e-12)


def test_fused_gradients_from_forward_with_probability_targets_and_all_rows_ignored():
    x, w, b = _t(6, 3), _t(5, 3), _t(5)
    p = torch.tensor(_rng.uniform(0.1, 1.0, (6, 5))).softmax(1)
    g = torch.tensor(0.4, dtype=torch.float64)
    in_forward, recomputed = _fused_both_ways(x, w, p, b, g, label_smoothing=0.1)
    torch.testing.assert_close(in_forward, recomputed, rtol=1e-12, atol=1e-12)
    # every row ignored: a nan loss ('mean': 0 / 0, as torch) and zero gradients
    in_forward, _ = _fused_both_ways(x, w, torch.full((6,), -100), b, g)
    assert all(not a.any() for a in in_forward)


def test_fused_public_function_computes_in_forward_only_what_a_scalar_loss_needs():
    # forward's own products: the logits, then dX and dW only where they are to be
    # differentiated (a 'mean' or 'sum' loss with grad enabled and an input that requires grad)
    x, w, t = _t(8, 4), _t(6, 4), _target(8, 6, (1,))

    def products(**kwargs):
        with _CountProducts() as count:
            P.fused_linear_cross_entropy(x, w, t, chunk_size=8, **kwargs)
        return count.n

    assert products() == products(reduction="sum") == 3
    assert products(reduction="none") == 1
    with torch.no_grad():
        assert products() == 1
    x.requires_grad_(False)
    assert products() == 2  # (dW: the weight still requires grad)
    w.requires_grad_(False)
    assert products() == 1


def test_fused_saves_nothing_under_no_grad_and_only_the_gradients_with_it():
    x, w, b, t = _t(8, 4), _t(6, 4), _t(6), _target(8, 6, (1,))
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda s: saved.append(s) or s, lambda s: s):
        with torch.no_grad():
            P.fused_linear_cross_entropy(x, w, t, b)
        assert saved == []
        P.fused_linear_cross_entropy(x, w, t, b)
    assert [tuple(s.shape) for s in saved] == [(8, 4), (6, 4), (6,)]
    assert not any(s is a for s in saved for a in (x, w, b))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("op", ["cross_entropy_lse", "fused_linear_cross_entropy"])
def test_a_second_backward_with_retain_graph_gives_the_same_gradients(op, reduction):
    # (the gradients saved by forward are scaled out of place: the second backward finds them
    # as they were)
    x, w, b, t = _t(9, 4), _t(5, 4), _t(5), _target(9, 5, (3,))
    if op == "cross_entropy_lse":
        z = _t(9, 5)
        leaves, out = (z,), P.cross_entropy_lse(z, t, reduction=reduction)
    else:
        leaves, out = (x, w, b), P.fused_linear_cross_entropy(x, w, t, b, reduction=reduction,
                                                              chunk_size=4)
    g = torch.tensor(_rng.uniform(0.5, 2.0, tuple(out.shape)))
    first = torch.autograd.grad(out, leaves, g, retain_graph=True)
    second = torch.autograd.grad(out, leaves, g)
    torch.testing.assert_close(first, second, rtol=0, atol=0)


def test_an_out_of_range_index_beside_ignored_rows_is_refused_naming_the_op():
    # (the range check reads the kept rows' indices: -100 ignored, -1 refused)
    z, x, w = torch.ones(4, 3), torch.ones(4, 2), torch.ones(3, 2)
    t = torch.tensor([0, -100, -1, 2])
    with pytest.raises(IndexError):
        F.cross_entropy(z, t)
    with pytest.raises(IndexError, match=r"cross_entropy_lse\(\): Target -1 is out of bounds"):
        P.cross_entropy_lse(z, t)
    with pytest.raises(IndexError, match=r"fused_linear_cross_entropy\(\): Target 3 is out"):
        P.fused_linear_cross_entropy(x, w, torch.tensor([0, -100, 3, 1]))


# ---------------------------------------------------------------------------------- double backward
@pytest.mark.parametrize("op", ["cross_entropy_lse", "fused_linear_cross_entropy"])
def test_differentiating_the_gradient_raises_once_differentiable(T, op):
    args = [T.tensor(a.detach().numpy(), requires_grad=a.requires_grad)
            for a in CASES[op].inputs()]
    out = getattr(P, op)(*args)
    g = T.ones_like(out, requires_grad=True)
    grads = T.autograd.grad(out, args[0], g, create_graph=True)
    with pytest.raises(RuntimeError, match="marked with @once_differentiable"):
        grads[0].sum().backward()


# ---------------------------------------------------------------------------------- both engines
@pytest.mark.parametrize("name", list(CASES))
def test_the_loss_gives_the_same_on_the_mini_engine(name, T):
    fn, args = CASES[name].fn, CASES[name].inputs()
    inputs = [T.tensor(a.detach().numpy(), requires_grad=a.requires_grad) for a in args]
    y = fn(*inputs)
    leaves = [i for i in inputs if i.requires_grad]
    g = _rng.uniform(0.5, 1.5, tuple(y.shape))
    grads = T.autograd.grad(y, leaves, T.tensor(g))
    ref = fn(*args)
    torch.testing.assert_close(torch.tensor(np.asarray(y.detach().numpy())), ref.detach())
    expected = _grads(ref, [a for a in args if a.requires_grad], torch.tensor(g))
    for a, e in zip(grads, expected):
        torch.testing.assert_close(torch.tensor(np.asarray(a.numpy())), e)


# ---------------------------------------------------------------------------------- bad input
_X, _W, _T3 = torch.ones(3, 2), torch.ones(4, 2), torch.tensor([0, 1, 3])
_Z = torch.ones(3, 4)


# (the pack's call, F.cross_entropy's same call (None: a pack-only argument), the error, the
# pack's message)
@pytest.mark.parametrize(("args", "kwargs", "error", "match"), [
    ((_Z, torch.tensor([0, 7, -100])), {}, IndexError,
     r"Target 7 is out of bounds.*0 to 3 \(or ignore_index=-100\)"),
    ((_Z, torch.tensor([0, -1, 1])), {}, IndexError, "Target -1 is out of bounds"),
    ((_Z, torch.tensor([0, -100, 1])), {"ignore_index": 1}, IndexError,
     "Target -100 is out of bounds"),
    ((_Z, _T3), {"reduction": "avg"}, ValueError, "avg is not a valid value for reduction"),
    ((_Z, _T3), {"label_smoothing": 1.5}, RuntimeError,
     r"label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
    ((_Z, _T3), {"ignore_index": 1.0}, TypeError, "argument 'ignore_index' must be int"),
    ((_Z, torch.tensor([0, 1])), {}, ValueError,
     r"Expected input batch_size \(3\) to match target batch_size \(2\)"),
    ((torch.ones(2, 3, 4), torch.zeros(2, 3, dtype=torch.int64)), {}, RuntimeError,
     r"Expected target size \[2, 4\], got \[2, 3\]"),
    ((_Z, _T3.int()), {}, RuntimeError,
     "expected target dtype to be Long or Byte.*but got int32"),
    ((_Z, _T3.bool()), {}, RuntimeError, "Long or Byte.*but got bool"),
    ((_Z, torch.rand(3, 5)), {}, RuntimeError,
     r"class probabilities and must have the logits' shape \[3, 4\], got \[3, 5\]"),
    ((_Z, torch.rand(3, 4)), {"ignore_index": 0}, RuntimeError,
     "ignore_index is not supported for floating point target"),
    ((_Z, _T3, torch.ones(3)), {}, RuntimeError,
     r"weight tensor should be defined either for all 4 classes or no classes but got weight "
     r"tensor of shape: \[3\]"),
    ((_Z, _T3, torch.ones(4, dtype=torch.float64)), {}, RuntimeError,
     "argument 'weight' must have input's dtype"),
    ((_Z, _T3, 3), {}, TypeError, "argument 'weight' must be Tensor, not int"),
    ((_Z.long(), _T3), {}, NotImplementedError,
     "argument 'input' must be a floating-point tensor, got int64"),
    ((torch.tensor(1.0), torch.tensor(0)), {}, RuntimeError, "got a 0-d tensor"),
    ((_Z, _T3, torch.ones(4, requires_grad=True)), {}, RuntimeError,
     "not differentiable with respect to argument 'weight'"),
])
def test_cross_entropy_lse_refuses_what_f_cross_entropy_refuses(args, kwargs, error, match):
    with pytest.raises(error):
        F.cross_entropy(*args, **kwargs)
    with pytest.raises(error, match=r"cross_entropy_lse\(\): .*" + match):
        P.cross_entropy_lse(*args, **kwargs)


def test_a_bad_target_is_refused_on_the_mini_engine_too():
    with pytest.raises(IndexError, match=r"cross_entropy_lse\(\): Target 7 is out of bounds"):
        P.cross_entropy_lse(ext.ones(3, 4), ext.tensor([0, 7, 1]))
    with pytest.raises(RuntimeError, match=r"expected target dtype to be Long or Byte"):
        P.cross_entropy_lse(ext.ones(3, 4), ext.tensor([0, 1, 1], dtype=ext.int32))


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: P.fused_linear_cross_entropy(_X, _W, torch.tensor([0, 4, 1])), IndexError,
     r"fused_linear_cross_entropy\(\): Target 4 is out of bounds"),
    (lambda: P.fused_linear_cross_entropy(_X, torch.ones(4, 3), _T3), ValueError,
     r"fused_linear_cross_entropy\(\): argument 'weight' must be \(V, 2\).*got shape \[4, 3\]"),
    (lambda: P.fused_linear_cross_entropy(_X, torch.ones(8), _T3), ValueError,
     r"argument 'weight' must be \(V, 2\)"),
    (lambda: P.fused_linear_cross_entropy(_X, _W, _T3, torch.ones(3)), ValueError,
     r"argument 'bias' must have shape \[4\]"),
    (lambda: P.fused_linear_cross_entropy(_X, _W, _T3, chunk_size=0), ValueError,
     r"fused_linear_cross_entropy\(\): chunk_size must be a positive int, got 0"),
    (lambda: P.fused_linear_cross_entropy(_X, _W, _T3, chunk_size=-3), ValueError,
     "chunk_size must be a positive int"),
    (lambda: P.fused_linear_cross_entropy(_X, _W, _T3, chunk_size=2.0), ValueError,
     "chunk_size must be a positive int"),
    (lambda: P.fused_linear_cross_entropy(_X, _W, torch.tensor([0, 1])), ValueError,
     r"Expected input batch_size \(3\) to match target batch_size \(2\)"),
    (lambda: P.fused_linear_cross_entropy(_X, _W, _T3.double()), RuntimeError,
     r"class probabilities and must have the logits' shape \[3, 4\], got \[3\]"),
    (lambda: P.fused_linear_cross_entropy(_X, _W.double(), _T3), RuntimeError,
     "'x', 'weight' and 'bias' must have the same dtype"),
    (lambda: P.fused_linear_cross_entropy(_X.long(), _W, _T3), NotImplementedError,
     "argument 'x' must be a floating-point tensor"),
    (lambda: P.fused_linear_cross_entropy(_X, _W, _T3, class_weight=torch.ones(3)),
     RuntimeError, "class_weight tensor should be defined either for all 4 classes"),
    (lambda: P.fused_linear_cross_entropy(_X, _W, _T3, reduction="avg"), ValueError,
     "avg is not a valid value for reduction"),
    (lambda: P.fused_linear_cross_entropy(torch.ones(2, 3, 2), _W, _T3), ValueError,
     "Expected input batch_size"),
])
def test_fused_bad_input_is_refused_before_any_work(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_a_refused_target_leaves_the_gradients_unchanged():
    x = torch.ones(3, 2, requires_grad=True)
    w = torch.ones(4, 2, requires_grad=True)
    P.fused_linear_cross_entropy(x, w, _T3).backward()
    before = (x.grad.clone(), w.grad.clone())
    with pytest.raises(IndexError):
        P.fused_linear_cross_entropy(x, w, torch.tensor([9, 0, 0])).backward()
    assert torch.equal(x.grad, before[0]) and torch.equal(w.grad, before[1])
