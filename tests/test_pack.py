"""The drop-in pack (ext.functions): each op through the parity harness against its native op or
composite, its pinned edge points, its bad input, and its run on both engines."""

from __future__ import annotations

import importlib
import math
import os
from pathlib import Path

import numpy as np
import pytest

import ext
from ext import functions as P
from ext.testing import assert_parity

torch = pytest.importorskip("torch")
F = torch.nn.functional

pytestmark = pytest.mark.ext_only

_rng = np.random.default_rng(5)
_STE = {"gradcheck": "straight-through: the gradient is not the derivative",
        "gradgradcheck": "straight-through: the gradient is not the derivative"}
_GRL = {"gradcheck": "the gradient is reversed on purpose, not the derivative",
        "gradgradcheck": "the gradient is reversed on purpose, not the derivative"}


def _x(*shape, low=-4.0, high=4.0):
    return torch.tensor(_rng.uniform(low, high, shape), requires_grad=True)


def _fq_reference(x, scale, zp, qmin, qmax):
    return torch.fake_quantize_per_tensor_affine(x, scale, zp, qmin, qmax)


# (op, inputs maker, reference, checks to skip with the reason)
CASES = {
    "silu": (P.silu, lambda: (_x(3, 5),), F.silu, {}),
    "mish": (P.mish, lambda: (_x(3, 5),), F.mish, {}),
    "gelu_tanh": (P.gelu_tanh, lambda: (_x(3, 5),), lambda x: F.gelu(x, approximate="tanh"),
                  {}),
    "hardswish": (P.hardswish, lambda: (_x(3, 5),), F.hardswish, {}),
    "hardsigmoid": (P.hardsigmoid, lambda: (_x(3, 5),), F.hardsigmoid, {}),
    "hardmish": (P.hardmish, lambda: (_x(3, 5),), lambda x: 0.5 * x * torch.clamp(x + 2, 0, 2),
                 {}),
    "swiglu": (P.swiglu, lambda: (_x(3, 4), _x(3, 4)), lambda a, b: F.silu(a) * b, {}),
    "geglu": (P.geglu, lambda: (_x(3, 4), _x(3, 4)), lambda a, b: F.gelu(a) * b, {}),
    "geglu_tanh": (lambda a, b: P.geglu(a, b, "tanh"), lambda: (_x(3, 4), _x(3, 4)),
                   lambda a, b: F.gelu(a, approximate="tanh") * b, {}),
    "clamp_masked": (P.clamp_masked, lambda: (_x(3, 5), -1.0, 1.5), torch.clamp, {}),
    "clamp_masked_block": (lambda x, lo, hi: P.clamp_masked(x, lo, hi, boundary="block"),
                           lambda: (_x(3, 5), -1.0, 1.5), lambda x, lo, hi: F.hardtanh(x, lo, hi),
                           {}),
    "round_ste": (P.round_ste, lambda: (_x(3, 5),),
                  lambda x: x + (torch.round(x) - x).detach(), _STE),
    "sign_ste": (P.sign_ste, lambda: (_x(3, 5, low=-2, high=2),),
                 lambda x: x.clamp(-1, 1) + (torch.sign(x) - x.clamp(-1, 1)).detach(), _STE),
    "fake_quant_ste": (P.fake_quant_ste,
                       lambda: (torch.tensor(_rng.uniform(-15, 15, (4, 6)), dtype=torch.float32,
                                             requires_grad=True), 0.1, 3, -128, 127),
                       _fq_reference, {**_STE, "torch_func": "the reference has no vmap rule"}),
    "grad_reverse": (P.grad_reverse, lambda: (_x(3, 5), 0.7),
                     lambda x, a: (-a * x) + ((1 + a) * x).detach(), _GRL),
    "grad_scale": (P.grad_scale, lambda: (_x(3, 5), 0.3),
                   lambda x, s: x * s + (x * (1 - s)).detach(), _GRL),
    "quantize": (P.quantize, lambda: (_x(10), 4), None, _STE),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_op_passes_the_parity_checklist(name):
    # (`make test-compile` runs this with torch's inductor backend in place of aot_eager)
    fn, make, reference, skip = CASES[name]
    assert_parity(fn, *make(), reference=reference, skip=skip,
                  compile_backend=os.environ.get("EXT_COMPILE_BACKEND", "aot_eager"))


def test_every_pack_op_has_a_parity_case():
    # (the cases of this file and of the other pack files, tests/test_pack_*.py; a case is
    # named after its op, with a suffix for a variant: "geglu_tanh")

    names = set(CASES)
    for path in Path(__file__).parent.glob("test_pack_*.py"):
        names |= set(getattr(importlib.import_module(path.stem), "CASES", ()))
    missing = [op for op in P.dropin.FUNCTIONS
               if not any(n == op or n.startswith(op + "_") for n in names)]
    assert not missing


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
        _grad(lambda x: _fq_reference(x, *args), points, torch.float32)
    assert _grad(lambda x: P.fake_quant_ste(x, *args), points, torch.float32)[:2] == [1.0, 0.0]


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
@pytest.mark.parametrize("name", ["silu", "mish", "gelu_tanh", "hardswish", "hardsigmoid",
                                  "hardmish", "swiglu", "geglu", "clamp_masked", "round_ste",
                                  "sign_ste", "grad_reverse", "grad_scale", "quantize"])
def test_the_op_gives_the_same_on_the_mini_engine(name, T):
    fn, make, _, _ = CASES[name]
    args = make()
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


def test_the_seed_softmax_and_exp_agree_with_torch():
    x = _x(5)
    assert_parity(P.Softmax, x, reference=lambda t: torch.softmax(t, 0))
    assert_parity(P.Exp, x, reference=torch.exp)
    assert_parity(P.AddMul, _x(3), _x(3), _x(3), reference=lambda a, b, c: (a + b) * c,
                  skip={"saved_bytes": "the seed's formula saves x, y and z"})


# ---------------------------------------------------------------------------------- other dtypes
@pytest.mark.parametrize("name", ["silu", "mish", "gelu_tanh", "hardswish", "hardsigmoid",
                                  "hardmish", "swiglu", "geglu", "clamp_masked", "round_ste",
                                  "sign_ste", "fake_quant_ste", "grad_reverse", "grad_scale",
                                  "quantize"])
@pytest.mark.parametrize("where", ["meta", torch.float16, torch.bfloat16])
def test_the_op_runs_on_meta_and_half_tensors_directly(name, where):
    fn, make, _, _ = CASES[name]
    args = [a.detach().to(torch.float32).to("meta" if where == "meta" else where)
            .requires_grad_() if torch.is_tensor(a) else a for a in make()]
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
