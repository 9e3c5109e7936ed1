"""The drop-in pack (ext.functions): each op through the parity harness against its native op or
composite, its pinned edge points, its bad input, and its run on both engines."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

import ext
from ext import functions as P
from ext.functions import _op
from ext.testing import op_cases
from ext.testing.cases import NO_BUILTIN_CASE, PACK, fq_reference

torch = pytest.importorskip("torch")

F = torch.nn.functional

pytestmark = pytest.mark.ext_only

_rng = np.random.default_rng(5)


def _x(*shape, low=-4.0, high=4.0):
    return torch.tensor(_rng.uniform(low, high, shape), requires_grad=True)


# (the parity cases of this file: ext.testing.cases.PACK, which `python -m ext parity` runs too)
CASES = {name: case for name, case in PACK.items() if case.group == "pack"}


@pytest.mark.parametrize("name", list(CASES))
def test_the_op_passes_the_parity_checklist(name):
    # (`make test-compile` runs this with torch's inductor backend in place of aot_eager)
    report = CASES[name].check(compile_backend=os.environ.get("EXT_COMPILE_BACKEND", "aot_eager"))
    assert report.ok, str(report)


def test_every_op_of_the_registry_has_a_parity_case():
    # (the pack's in ext.testing.cases.PACK, tests in this file and tests/test_pack_*.py; the
    # built-ins' in BUILTINS, one case or more per declared overload; a built-in without a
    # derivative, bincount or isreal, is compared with torch by tests/test_opdb.py)
    covered = {case.op for case in op_cases()}
    assert {op.name if not op.pack else f"pack.{op.name}" for op in _op.registry()
            if op.pack or any(ov.node_name not in NO_BUILTIN_CASE for ov in op.overloads)} \
        <= covered
    assert {f"classic.{name}" for name in ("Exp", "AddMul", "Softmax", "Quantize")} <= covered
    assert len({case.name for case in op_cases()}) == len(op_cases())


# ---------------------------------------------------------------------------------- edge points
def _grad(fn, values, dtype=torch.float64):
    x = torch.tensor(values, dtype=dtype, requires_grad=True)
    (g,) = torch.autograd.grad(fn(x).sum(), x)
    return g.tolist()


@pytest.mark.parametrize(("op", "native"), [(P.hardswish, F.hardswish),
                                            (P.hardsigmoid, F.hardsigmoid),
                                            (P.silu, F.silu), (P.mish, F.mish)])
def test_the_gradient_at_bounds_and_infinities_is_the_native_ops(op, native):
    points = [-3.0, 3.0, 0.0, -20.0, 20.0, 25.0, math.inf, -math.inf, math.nan]
    # (the same nan and inf, and values to float32's rounding of torch's constants)
    np.testing.assert_allclose(_grad(op, points), _grad(native, points), rtol=1e-6)
    values = torch.tensor(points)
    np.testing.assert_allclose(op(values).tolist(), native(values).tolist(), rtol=1e-6)


def test_hardmish_follows_clamps_convention_at_its_bounds():
    assert _grad(P.hardmish, [-2.0, 0.0, -3.0, 1.0]) == [-1.0, 1.0, 0.0, 1.0]
    assert _grad(P.hardmish, [-2.0, 0.0]) == _grad(lambda x: 0.5 * x * torch.clamp(x + 2, 0, 2),
                                                   [-2.0, 0.0])


def test_clamp_masked_boundary_pass_is_clamps_and_block_is_hardtanhs():
    points = [-1.0, 1.0, 0.5, -2.0, 2.0, math.nan]
    assert _grad(lambda x: P.clamp_masked(x, -1.0, 1.0), points) == \
        _grad(lambda x: torch.clamp(x, -1.0, 1.0), points)
    assert _grad(lambda x: P.clamp_masked(x, -1.0, 1.0, "block"), points) == \
        _grad(lambda x: F.hardtanh(x, -1.0, 1.0), points)
    # min > max: every value is max and no gradient passes, as torch.clamp
    assert _grad(lambda x: P.clamp_masked(x, 2.0, 1.0), [0.0, 1.5]) == \
        _grad(lambda x: torch.clamp(x, 2.0, 1.0), [0.0, 1.5])


def test_round_ste_rounds_half_to_even_and_passes_the_gradient():
    x = torch.tensor([0.5, 1.5, -0.5, 2.5], requires_grad=True)
    y = P.round_ste(x)
    assert y.tolist() == [0.0, 2.0, -0.0, 2.0]
    y.sum().backward()
    assert x.grad.tolist() == [1.0] * 4


def test_sign_ste_passes_the_gradient_at_one_and_gives_sign_zero():
    x = torch.tensor([-1.0, 1.0, 0.0, 1.5], requires_grad=True)
    y = P.sign_ste(x)
    assert y.tolist() == [-1.0, 1.0, 0.0, 1.0]
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0, 0.0]


def test_fake_quant_masks_on_the_rounded_value_as_torch():
    points = [-12.85, 12.75, 12.7, -12.9]
    args = (0.1, 0, -128, 127)
    assert _grad(lambda x: P.fake_quant_ste(x, *args), points, torch.float32) == \
        _grad(lambda x: fq_reference(x, *args), points, torch.float32)
    assert _grad(lambda x: P.fake_quant_ste(x, *args), points, torch.float32)[:2] == [1.0, 0.0]


# scale 0.7: torch's kernel multiplies by float32(1 / float32(0.7)), a little above 1 / 0.7, so
# float64 midpoints round a level up where x / 0.7 in float64 would not
_FQ = (0.7, 3, -128, 127)


def _fq_points() -> np.ndarray:
    """Every midpoint between levels from two below qmin to two above qmax, the clipping edges
    (the end levels and the midpoints beyond them) with their float64 neighbours, and +-inf."""
    scale, zero_point, qmin, qmax = _FQ
    mids = (np.arange(qmin - 2, qmax + 3) - zero_point + 0.5) * scale
    edges = np.array([qmin, qmax, qmin - 0.5, qmax + 0.5]) - zero_point
    edges = edges * scale
    return np.concatenate([mids, edges, np.nextafter(edges, math.inf),
                           np.nextafter(edges, -math.inf), [math.inf, -math.inf]])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fake_quant_ste_is_torchs_kernel_at_midpoints_and_clipping_edges(T, dtype):
    values = _fq_points()
    x = T.tensor(values, dtype=getattr(T, dtype), requires_grad=True)
    y = P.fake_quant_ste(x, *_FQ)
    (g,) = T.autograd.grad(y, x, T.ones_like(y))
    xt = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True)
    ref = torch.fake_quantize_per_tensor_affine(xt, *_FQ)
    (rg,) = torch.autograd.grad(ref, xt, torch.ones_like(ref))
    assert str(y.dtype).rsplit(".", 1)[-1] == dtype
    np.testing.assert_array_equal(y.detach().numpy(), ref.detach().numpy())
    np.testing.assert_array_equal(g.numpy(), rg.numpy())


def test_fake_quant_ste_on_float64_rounds_and_masks_as_torchs_float32_kernel(T):
    # 87.15 = (124 + 0.5) * 0.7, the midpoint above the top level (qmax - zero_point = 124):
    # float64 x / 0.7 rounds to 124 (gradient 1), torch's kernel to 125 (clipped, gradient 0)
    x = T.tensor([87.15, 86.8, -91.35], dtype=T.float64, requires_grad=True)
    y = P.fake_quant_ste(x, *_FQ)
    (g,) = T.autograd.grad(y, x, T.ones_like(y))
    level = float(np.float32(124) * np.float32(0.7))  # a float32 level, for a float64 x
    assert y.tolist() == [level, level, float(np.float32(-131) * np.float32(0.7))]
    assert g.tolist() == [0.0, 1.0, 1.0]


def test_fake_quant_ste_passes_the_gradient_on_both_end_levels_as_torch(T):
    # at scale 0.1: x at the top level 12.7 passes and the midpoint above it (12.75) not; just
    # below that midpoint passes. The midpoint below the bottom level (-12.85, q = -128.5) rounds
    # half to even onto -128 and passes, as does its float64 neighbour below
    points = [12.7, 12.75, float(np.nextafter(12.75, 0)), -12.8, -12.85,
              float(np.nextafter(-12.85, -20))]
    x = T.tensor(points, dtype=T.float64, requires_grad=True)
    (g,) = T.autograd.grad(P.fake_quant_ste(x, 0.1, 0, -128, 127).sum(), x)
    assert g.tolist() == [1.0, 0.0, 1.0, 1.0, 1.0, 1.0] == \
        _grad(lambda x: fq_reference(x, 0.1, 0, -128, 127), points)


def test_grad_reverse_returns_a_view_not_its_input():
    x = _x(3)
    y = P.grad_reverse(x, 2.0)
    assert y is not x and y._base is x
    y.sum().backward()
    assert x.grad.tolist() == [-2.0] * 3


def test_grad_scale_takes_a_0d_tensor_scale():
    x = _x(3)
    P.grad_scale(x, torch.tensor(0.25, dtype=torch.float64)).sum().backward()
    assert x.grad.tolist() == [0.25] * 3


def test_swiglu_of_one_tensor_twice_accumulates_both_gradients():
    x = _x(4)
    (g,) = torch.autograd.grad(P.swiglu(x, x).sum(), x)
    (e,) = torch.autograd.grad((F.silu(x) * x).sum(), x)
    torch.testing.assert_close(g, e)


def test_swiglu_of_the_two_halves_of_one_tensor():
    x = _x(3, 8)
    a, b = x.chunk(2, -1)
    (g,) = torch.autograd.grad(P.swiglu(a, b).sum(), x)
    a2, b2 = x.chunk(2, -1)
    (e,) = torch.autograd.grad((F.silu(a2) * b2).sum(), x)
    torch.testing.assert_close(g, e)


# ---------------------------------------------------------------------------------- both engines
@pytest.mark.parametrize("name", ["silu", "mish", "gelu", "gelu_tanh", "hardswish",
                                  "hardsigmoid", "hardmish", "swiglu", "geglu", "clamp_masked",
                                  "round_ste", "sign_ste", "fake_quant_ste", "grad_reverse",
                                  "grad_scale", "quantize"])
def test_the_op_gives_the_same_on_the_mini_engine(name, T):
    fn, args = CASES[name].fn, CASES[name].inputs()
    inputs = [T.tensor(a.detach().numpy(), requires_grad=True) if torch.is_tensor(a) else a
              for a in args]
    y = fn(*inputs)
    leaves = [i for i in inputs if hasattr(i, "requires_grad")]
    grads = T.autograd.grad(y.sum(), leaves)
    ref = fn(*args)
    torch.testing.assert_close(torch.tensor(y.detach().numpy()), ref.detach())
    expected = torch.autograd.grad(ref.sum(), [a for a in args if torch.is_tensor(a)])
    for g, e in zip(grads, expected):
        torch.testing.assert_close(torch.tensor(g.numpy()), e)


@pytest.mark.parametrize(("cls", "args", "node"), [
    ("Exp", ([0.5, 1.0],), "ExpBackward"),
    ("AddMul", ([1.0], [2.0], [3.0]), "AddMulBackward"),
    ("Softmax", ([0.1, 2.0, -1.0],), "SoftmaxBackward"),
    ("Quantize", ([0.1, 2.0, -1.0], 8), "QuantizeBackward"),
])
def test_the_seed_functions_run_on_both_engines_with_their_names(T, cls, args, node):
    fn = getattr(P, cls)
    inputs = [T.tensor(a, dtype=T.float64, requires_grad=True) if isinstance(a, list) else a
              for a in args]
    y = fn.apply(*inputs)
    assert type(y.grad_fn).__name__ == node
    y.sum().backward()
    assert all(i.grad is not None for i in inputs if hasattr(i, "grad"))


# ---------------------------------------------------------------------------------- other dtypes
@pytest.mark.parametrize("name", ["silu", "mish", "gelu", "gelu_tanh", "hardswish",
                                  "hardsigmoid", "hardmish", "swiglu", "geglu", "clamp_masked",
                                  "round_ste", "sign_ste", "fake_quant_ste", "grad_reverse",
                                  "grad_scale", "quantize"])
@pytest.mark.parametrize("where", ["meta", torch.float16, torch.bfloat16])
def test_the_op_runs_on_meta_and_half_tensors_directly(name, where):
    fn, inputs = CASES[name].fn, CASES[name].inputs()
    args = [a.detach().to(torch.float32).to("meta" if where == "meta" else where)
            .requires_grad_() if torch.is_tensor(a) else a for a in inputs]
    y = fn(*args)
    leaves = [a for a in args if torch.is_tensor(a)]
    grads = torch.autograd.grad(y, leaves, torch.ones_like(y))
    assert y.device == leaves[0].device and y.dtype == leaves[0].dtype
    assert all(g.shape == a.shape for g, a in zip(grads, leaves))


# ---------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: P.silu(torch.tensor([1, 2])), TypeError, r"silu\(\): argument 'x' must be a "
                                                      "floating-point tensor, got int64"),
    (lambda: P.hardmish(ext.tensor([1, 2])), TypeError, "hardmish.*'x'.*int64"),
    (lambda: P.silu([1.0]), TypeError, r"silu\(\): argument 'x' must be a tensor, not list"),
    (lambda: P.swiglu(torch.ones(2, 3), torch.ones(2, 4)), ValueError,
     r"swiglu\(\): arguments 'a' and 'b' must have the same shape, got \[2, 3\] and \[2, 4\]"),
    (lambda: P.geglu(torch.ones(2), torch.ones(2), "erf"), ValueError, "approximate"),
    (lambda: P.fake_quant_ste(torch.ones(2), 0.0, 0, 0, 255), ValueError, "scale must be "
                                                                          "positive"),
    (lambda: P.fake_quant_ste(torch.ones(2), 0.1, 0, 255, 0), ValueError, "qmin must be less"),
    (lambda: P.fake_quant_ste(torch.ones(2), 1e39, 0, 0, 255), ValueError,
     "scale must lie within float32's range"),
    (lambda: P.fake_quant_ste(torch.ones(2), 1e-40, 0, 0, 255), ValueError, "as must 1 / scale"),
    (lambda: P.fake_quant_ste(torch.ones(2), 0.1, 300, 0, 255), ValueError, "zero_point"),
    (lambda: P.clamp_masked(torch.ones(2), 0.0, 1.0, "open"), ValueError, "boundary must be"),
    (lambda: P.clamp_masked(torch.ones(2)), RuntimeError, "at least one of 'min' or 'max'"),
    (lambda: P.quantize(torch.ones(2), 0), ValueError, "bits must be a positive int"),
    (lambda: P.grad_scale(torch.ones(2), torch.ones(2)), ValueError, "0-d tensor"),
    (lambda: P.grad_reverse(torch.ones(2), torch.tensor(1.0)), TypeError, "alpha must be a "
                                                                          "number"),
])
def test_bad_input_is_refused_before_any_work(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_a_backward_with_the_wrong_number_of_gradients_is_refused_as_torch():
    class Wrong(ext.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    for x in (torch.ones(2, requires_grad=True), ext.ones(2, requires_grad=True)):
        with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
            Wrong.apply(x).sum().backward()


def test_a_backward_with_a_gradient_of_the_wrong_shape_is_refused_as_torch():
    class Wrong(ext.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad.new_ones(3)

    for x in (torch.ones(2, requires_grad=True), ext.ones(2, requires_grad=True)):
        with pytest.raises(RuntimeError, match=r"Function WrongBackward returned an invalid "
                                               r"gradient at index 0 - got \[3\] but expected "
                                               r"shape compatible with \[2\]"):
            Wrong.apply(x).sum().backward()


# ---------------------------------------------------------------------------------- a model
def test_a_small_model_built_from_pack_ops_trains_as_the_native_one():
    gen = np.random.default_rng(0)
    w1, w2, w3 = (gen.standard_normal(s) * 0.3 for s in ((16, 8), (8, 8), (1, 8)))
    data, target = gen.standard_normal((32, 8)), gen.standard_normal((32, 1))

    def train(act, gate, steps=5):
        params = [torch.tensor(w, requires_grad=True) for w in (w1, w2, w3)]
        x, t = torch.tensor(data), torch.tensor(target)
        losses = []
        for _ in range(steps):
            h = x @ params[0].t()
            a, b = h.chunk(2, -1)
            h = act(gate(a, b) @ params[1].t())
            loss = ((h @ params[2].t() - t) ** 2).mean()
            losses.append(loss.item())
            for p in params:
                p.grad = None
            loss.backward()
            with torch.no_grad():
                for p in params:
                    p -= 0.1 * p.grad
        return losses

    pack = train(P.mish, P.swiglu)
    native = train(F.mish, lambda a, b: F.silu(a) * b)
    np.testing.assert_allclose(pack, native, rtol=0, atol=1e-10)
    assert pack[-1] < pack[0]
