"""The drop-in pack's ops as torch custom ops (``torch.ops.ext.<name>``, ``ext.compat.library``):
each passes ``torch.library.opcheck``, gives the pack function's values and gradients, exports with
``torch.export`` and compiles with ``torch.compile``; a user's own Function registers too."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import ext
import ext.functions as P
from ext.compat.library import custom_op, schema_of

torch.manual_seed(0)


def _x(*shape, low=-3.0, high=3.0):
    return (torch.rand(*shape, dtype=torch.float64) * (high - low) + low).requires_grad_()


def _target(n, classes, ignored=()):
    t = torch.randint(0, classes, (n,))
    t[list(ignored)] = -100
    return t


# (case id, op name, args, kwargs): one call or more of every pack op, on float64 inputs
SAMPLES = [
    ("silu", "silu", (_x(3, 5),), {}),
    ("mish", "mish", (_x(3, 5),), {}),
    ("gelu", "gelu", (_x(3, 5),), {}),
    ("gelu_tanh_arg", "gelu", (_x(3, 5), "tanh"), {}),
    ("gelu_tanh", "gelu_tanh", (_x(3, 5),), {}),
    ("hardswish", "hardswish", (_x(3, 5, low=-5, high=5),), {}),
    ("hardsigmoid", "hardsigmoid", (_x(3, 5, low=-5, high=5),), {}),
    ("hardmish", "hardmish", (_x(3, 5),), {}),
    ("swiglu", "swiglu", (_x(3, 4), _x(3, 4)), {}),
    ("geglu", "geglu", (_x(3, 4), _x(3, 4)), {}),
    ("geglu_tanh", "geglu", (_x(3, 4), _x(3, 4)), {"approximate": "tanh"}),
    ("clamp_masked", "clamp_masked", (_x(3, 5), -1.0, 1.5), {}),
    ("clamp_masked_block", "clamp_masked", (_x(3, 5), None, 1.5, "block"), {}),
    ("round_ste", "round_ste", (_x(3, 5),), {}),
    ("sign_ste", "sign_ste", (_x(3, 5),), {}),
    ("fake_quant_ste", "fake_quant_ste", (_x(4, 6, low=-90, high=90), 0.7, 3, -128, 127), {}),
    ("quantize", "quantize", (_x(10), 4), {}),
    ("grad_reverse", "grad_reverse", (_x(3, 5), 0.7), {}),
    ("grad_scale", "grad_scale", (_x(3, 5), 0.3), {}),
    ("sparsemax", "sparsemax", (_x(3, 6, low=-2, high=2),), {}),
    ("sparsemax_dim", "sparsemax", (_x(2, 5, 3, low=-2, high=2), 1), {}),
    ("entmax15", "entmax15", (_x(3, 6, low=-2, high=2),), {}),
    ("entmax15_dim", "entmax15", (_x(5, 3, low=-2, high=2), 0), {}),
    ("safe_softmax", "safe_softmax", (_x(3, 5),), {}),
    ("safe_softmax_mask", "safe_softmax",
     (_x(3, 5), torch.tensor([[True] * 5, [False] * 5, [True, False] * 2 + [True]])), {}),
    ("rms_norm", "rms_norm", (_x(3, 5), [5], _x(5)), {}),
    ("rms_norm_2d_no_weight", "rms_norm", (_x(2, 3, 4), [3, 4]), {"eps": 1e-3}),
    ("safe_logsumexp", "safe_logsumexp", (_x(3, 5), 1), {}),
    ("safe_logsumexp_dims", "safe_logsumexp", (_x(3, 4, 5), [0, -1], True), {}),
    ("log1mexp", "log1mexp", (_x(3, 5, low=0.1, high=4),), {}),
    ("cross_entropy_lse", "cross_entropy_lse", (_x(6, 9), _target(6, 9, (2,))), {}),
    ("cross_entropy_lse_options", "cross_entropy_lse", (_x(5, 7), _target(5, 7, (0,))),
     {"reduction": "sum", "label_smoothing": 0.2}),
    ("cross_entropy_lse_1d", "cross_entropy_lse", (_x(7), torch.tensor(3)), {}),
    ("fused_linear_cross_entropy", "fused_linear_cross_entropy",
     (_x(7, 5), _x(11, 5), _target(7, 11, (2,)), _x(11)), {"chunk_size": 3}),
    ("fused_linear_cross_entropy_none", "fused_linear_cross_entropy",
     (_x(9, 3), _x(8, 3), _target(9, 8, (0, 5))),
     {"reduction": "none", "label_smoothing": 0.1, "chunk_size": 4}),
]
IDS = [s[0] for s in SAMPLES]


def _op(name):
    return getattr(torch.ops.ext, name)


def _grad_inputs(args):
    return [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]


def test_every_pack_op_has_a_twin():
    names = {name for name, *_ in P.dropin.OPS}
    assert {name for _, name, *_ in SAMPLES} == names
    for name in names:
        assert isinstance(_op(name), torch._ops.OpOverloadPacket)


@pytest.mark.parametrize("case", SAMPLES, ids=IDS)
def test_opcheck(case):
    _, name, args, kwargs = case
    torch.library.opcheck(_op(name), args, kwargs)


@pytest.mark.parametrize("case", SAMPLES, ids=IDS)
def test_twin_values_and_grads_equal_the_pack_function(case):
    _, name, args, kwargs = case
    got = _op(name)(*args, **kwargs)
    want = P.dropin.FUNCTIONS[name](*args, **kwargs)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    inputs = _grad_inputs(args)
    g = torch.randn_like(want)
    torch.testing.assert_close(torch.autograd.grad(got, inputs, g),
                               torch.autograd.grad(want, inputs, g), rtol=0, atol=0)


@pytest.mark.parametrize("name", ["silu", "rms_norm", "entmax15"])
def test_twin_double_backward_equals_the_pack_function(name):
    _, _, args, kwargs = next(s for s in SAMPLES if s[1] == name)
    inputs = _grad_inputs(args)

    def second(f):
        out = f(*args, **kwargs)
        first = torch.autograd.grad(out.square().sum(), inputs, create_graph=True)
        return torch.autograd.grad(sum(g.sum() for g in first), inputs)

    torch.testing.assert_close(second(_op(name)), second(P.dropin.FUNCTIONS[name]))


def test_twin_gradcheck_and_gradgradcheck():
    x, w = _x(2, 4), _x(4)
    assert torch.autograd.gradcheck(lambda a, b: torch.ops.ext.rms_norm(a, [4], b), (x, w))
    assert torch.autograd.gradgradcheck(lambda a, b: torch.ops.ext.rms_norm(a, [4], b), (x, w))


def test_twin_of_an_identity_op_returns_a_copy_not_its_input():
    x = _x(3)
    y = torch.ops.ext.grad_reverse(x, 2.0)
    assert not torch._C._is_alias_of(y, x)
    (g,) = torch.autograd.grad(y.sum(), x)
    torch.testing.assert_close(g, torch.full_like(x, -2.0))


def test_twin_leaves_out_inplace():
    assert "inplace" in str(inspect.signature(P.silu))
    assert "inplace" not in str(torch.ops.ext.silu.default._schema)


def test_twin_checks_its_arguments_as_the_pack_function():
    with pytest.raises(ValueError, match="same shape"):
        torch.ops.ext.swiglu(_x(3, 4), _x(3, 5))


def test_twins_are_registered_with_the_bridge_not_at_import_ext():
    code = ("import sys, ext; assert 'torch' not in sys.modules; import torch; "
            "assert torch._C._dispatch_has_kernel('ext::silu') and "
            "torch._C._dispatch_has_kernel('ext::fused_linear_cross_entropy')")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------- a user Function
class Cube(ext.autograd.Function):
    """x ** 3, saving x; scaled by a number kept on ctx."""

    @staticmethod
    def forward(ctx, x, scale=1.0):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x * x * x * scale

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x * ctx.scale, None


class ScaledTanh(ext.autograd.Function):
    """tanh(x) * s, written as forward + setup_context, saving its output (an intermediate too)."""

    @staticmethod
    def forward(x, s):
        return x.tanh() * s

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, s = inputs
        ctx.save_for_backward(x.tanh(), s)

    @staticmethod
    def backward(ctx, grad):
        t, s = ctx.saved_tensors
        return grad * s * (1 - t * t), grad * t


CUBE = custom_op(Cube, "test_cube", namespace="ext_tests")
SCALED_TANH = custom_op(ScaledTanh, namespace="ext_tests")


def test_user_function_schema_comes_from_its_forward():
    assert schema_of(Cube) == "(Tensor x, float scale=1.0) -> Tensor"
    assert str(torch.ops.ext_tests.scaled_tanh.default._schema) == \
        "ext_tests::scaled_tanh(Tensor x, Tensor s) -> Tensor"


@pytest.mark.parametrize("op, args", [(CUBE, (_x(3, 4), 0.5)), (SCALED_TANH, (_x(3, 4), _x(4)))],
                         ids=["ctx_forward", "setup_context"])
def test_user_function_passes_opcheck_and_matches_apply(op, args):
    torch.library.opcheck(op, args)
    fn = Cube if op is CUBE else ScaledTanh
    got, want = op(*args), fn.apply(*args)
    torch.testing.assert_close(got, want)
    inputs = _grad_inputs(args)
    torch.testing.assert_close(torch.autograd.grad(got.sum(), inputs),
                               torch.autograd.grad(want.sum(), inputs))
    assert torch.autograd.gradcheck(op, args)


VMAP_CALLS: list = []


class Twice(ext.autograd.Function):
    """2 x, with its own vmap rule."""

    @staticmethod
    def forward(x):
        return x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad):
        return grad * 2

    @staticmethod
    def vmap(info, in_dims, x):
        VMAP_CALLS.append(in_dims)
        return x * 2, in_dims[0]


def test_user_function_vmap_rule_is_the_ops():
    op = custom_op(Twice, namespace="ext_tests")
    x = torch.randn(4, 3)
    torch.testing.assert_close(torch.vmap(op)(x), x * 2)
    assert VMAP_CALLS == [(0,)]


def doubled_cube(x):
    """Cube of 2 x: the Function gets a tensor computed from x, not x."""
    return Cube.apply(x * 2)


def test_gradient_that_cannot_reach_its_argument_is_refused():
    op = custom_op(doubled_cube, namespace="ext_tests")
    torch.testing.assert_close(op(torch.ones(2)), torch.full((2,), 8.0))
    with pytest.raises(RuntimeError, match="ext_tests::doubled_cube: the gradient of argument 'x'"):
        op(torch.ones(2, requires_grad=True))


def test_custom_op_refuses_what_is_not_a_function():
    with pytest.raises(TypeError, match="ext.autograd.Function"):
        custom_op(int)


# ---------------------------------------------------------------------------- export, compile
class Block(torch.nn.Module):
    """rms_norm -> swiglu -> a linear -> fused cross entropy: several twins in one model."""

    def __init__(self, ops) -> None:
        super().__init__()
        self.ops = ops
        g = torch.Generator().manual_seed(1)
        self.norm = torch.nn.Parameter(1 + 0.1 * torch.randn(8, generator=g))
        self.up = torch.nn.Parameter(0.3 * torch.randn(16, 8, generator=g))
        self.head = torch.nn.Parameter(0.3 * torch.randn(5, 8, generator=g))

    def forward(self, x, target):
        h = self.ops.rms_norm(x, [8], self.norm)
        a, b = (h @ self.up.t()).chunk(2, dim=-1)
        h = self.ops.swiglu(a, b)
        return self.ops.fused_linear_cross_entropy(h, self.head, target, chunk_size=2)


def test_export_of_a_model_using_twins_equals_eager():
    x, target = torch.randn(6, 8), torch.tensor([0, 4, 2, 1, 3, 0])
    eager = Block(P)
    model = Block(torch.ops.ext)
    exported = torch.export.export(model, (x, target))
    called = {n.target for n in exported.graph.nodes if n.op == "call_function"}
    assert {torch.ops.ext.rms_norm.default, torch.ops.ext.swiglu.default,
            torch.ops.ext.fused_linear_cross_entropy.default} <= called
    module = exported.module()
    got, want = module(x, target), eager(x, target)
    torch.testing.assert_close(got, want)
    params = [dict(module.named_parameters())[n] for n in ("norm", "up", "head")]
    torch.testing.assert_close(torch.autograd.grad(got, params),
                               torch.autograd.grad(want, [eager.norm, eager.up, eager.head]))


def test_compile_fullgraph_over_a_twin():
    x = torch.randn(4, 6, requires_grad=True)
    compiled = torch.compile(lambda t: torch.ops.ext.mish(t).sum(), fullgraph=True,
                             backend="aot_eager")
    got = compiled(x)
    (g,) = torch.autograd.grad(got, x)
    torch.testing.assert_close(got, F.mish(x).sum())
    torch.testing.assert_close(g, torch.autograd.grad(F.mish(x).sum(), x)[0])
