"""The pack's cross-entropy losses (cross_entropy_lse, fused_linear_cross_entropy) against
F.cross_entropy: the parity checklist, every reduction with a non-uniform grad_output, the pinned
edge points, the saved bytes, bad input and both engines."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ext
from ext import functions as P
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
def test_fused_saves_no_logits_only_its_inputs_and_a_logsumexp_per_row():
    n, h, v = 64, 8, 256
    x, w, b = (torch.randn(*s, dtype=torch.float32, requires_grad=True)
               for s in ((n, h), (v, h), (v,)))
    t = torch.randint(0, v, (n,))
    inputs = 4 * (n * h + v * h + v) + 8 * n
    for chunk in (1, 16, 1024):
        assert saved_bytes(lambda *a, c=chunk: P.fused_linear_cross_entropy(*a, chunk_size=c),
                           x, w, t, b) == inputs + 4 * n
    reference = saved_bytes(lambda x, w, t, b: F.cross_entropy(F.linear(x, w, b), t), x, w, t, b)
    assert reference >= 4 * n * v  # (the reference keeps an (n x v) log_softmax)


def test_cross_entropy_lse_saves_its_logits_and_a_logsumexp_per_row():
    z, t = torch.randn(32, 100, requires_grad=True), torch.randint(0, 100, (32,))
    mine = saved_bytes(P.cross_entropy_lse, z, t)
    assert mine == 4 * 32 * 100 + 8 * 32 + 4 * 32
    # the reference's log_softmax replaces the logits: one float per row less, no more
    assert mine <= saved_bytes(F.cross_entropy, z, t) + 4 * 32


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


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: P.fused_linear_cross_entropy(_X, _W, torch.tensor([0, 4, 1])), IndexError,
     r"fused_linear_cross_entropy\(\): argument 'target' holds 4, out of range for 4 classes"),
    (lambda: P.fused_linear_cross_entropy(_X, _W, torch.tensor([0, -1, 1])), IndexError,
     r"fused_linear_cross_entropy\(\): argument 'target' holds -1"),
    (lambda: P.cross_entropy_lse(torch.ones(3, 4), torch.tensor([0, 7, -100])), IndexError,
     r"cross_entropy_lse\(\): argument 'target' holds 7.*ignore_index=-100"),
    (lambda: P.cross_entropy_lse(ext.ones(3, 4), ext.tensor([0, 7, 1])), IndexError,
     r"cross_entropy_lse\(\): argument 'target' holds 7"),
    (lambda: P.cross_entropy_lse(torch.ones(3, 4), torch.tensor([0, -100, 1]), ignore_index=1),
     IndexError, r"argument 'target' holds -100"),
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
     r"argument 'target' must have shape \[3\]"),
    (lambda: P.fused_linear_cross_entropy(_X, _W, _T3.double()), TypeError,
     "'target' must hold class indices"),
    (lambda: P.fused_linear_cross_entropy(_X, _W.double(), _T3), TypeError, "one dtype"),
    (lambda: P.fused_linear_cross_entropy(_X.long(), _W, _T3), TypeError,
     "argument 'x' must be a floating-point tensor"),
    (lambda: P.cross_entropy_lse(torch.ones(3, 4), _T3, reduction="avg"), ValueError,
     r"cross_entropy_lse\(\): reduction must be"),
    (lambda: P.cross_entropy_lse(torch.ones(3, 4), _T3, label_smoothing=1.5), ValueError,
     "label_smoothing must be a number in"),
    (lambda: P.cross_entropy_lse(torch.ones(2, 3, 4), _T3), ValueError,
     r"'logits' must be \(N, C\) or \(C,\)"),
    (lambda: P.cross_entropy_lse(torch.ones(3, 4), torch.ones(3, 4)), TypeError,
     "class probabilities are not supported"),
])
def test_bad_input_is_refused_before_any_work(call, error, match):
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
