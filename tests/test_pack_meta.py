"""The drop-in pack's torch path assumes no CPU: every op runs forward and backward on torch's meta
device (tensors without data: a host round-trip, ``.item()``, ``.tolist()``, ``bool(tensor)`` or a
NumPy conversion, raises there), with the shapes, dtypes and devices it gives on the CPU; on CUDA
too, with the CPU's values, when a GPU is present."""

from __future__ import annotations

import pytest
import torch

import ext
import ext.functions as P

FUNCTIONS = P.dropin.FUNCTIONS
DEVICES = ["meta"] + (["cuda"] if torch.cuda.is_available() else [])


def _x(*shape, low=-3.0, high=3.0, dtype=torch.float32):
    g = torch.Generator().manual_seed(sum(shape) + len(shape))
    return (torch.rand(*shape, generator=g, dtype=dtype) * (high - low) + low).requires_grad_()


def _target(n, classes, ignored=()):
    t = torch.arange(n) % classes
    t[list(ignored)] = -100
    return t


# (case id, op name, args, kwargs), made on the CPU; every pack op at least once
SAMPLES = [
    ("silu", "silu", (_x(3, 5),), {}),
    ("mish", "mish", (_x(3, 5),), {}),
    ("gelu", "gelu", (_x(3, 5),), {}),
    ("gelu_tanh", "gelu_tanh", (_x(3, 5),), {}),
    ("hardswish", "hardswish", (_x(3, 5),), {}),
    ("hardsigmoid", "hardsigmoid", (_x(3, 5),), {}),
    ("hardmish", "hardmish", (_x(3, 5),), {}),
    ("swiglu", "swiglu", (_x(3, 4), _x(3, 4)), {}),
    ("geglu", "geglu", (_x(3, 4), _x(3, 4), "tanh"), {}),
    ("clamp_masked", "clamp_masked", (_x(3, 5), -1.0, 1.5, "block"), {}),
    ("round_ste", "round_ste", (_x(3, 5),), {}),
    ("sign_ste", "sign_ste", (_x(3, 5),), {}),
    ("fake_quant_ste", "fake_quant_ste", (_x(4, 6, low=-90, high=90), 0.7, 3, -128, 127), {}),
    ("quantize", "quantize", (_x(10), 4), {}),
    ("grad_reverse", "grad_reverse", (_x(3, 5), 0.7), {}),
    ("grad_scale", "grad_scale", (_x(3, 5), 0.3), {}),
    ("sparsemax", "sparsemax", (_x(2, 5, 3), 1), {}),
    ("entmax15", "entmax15", (_x(3, 6),), {}),
    ("safe_softmax", "safe_softmax",
     (_x(3, 5), torch.tensor([[True] * 5, [False] * 5, [True, False] * 2 + [True]])), {}),
    ("rms_norm", "rms_norm", (_x(2, 3, 4), [3, 4], _x(3, 4)), {}),
    ("rms_norm_half", "rms_norm", (_x(3, 8, dtype=torch.bfloat16), [8]), {}),
    ("safe_logsumexp", "safe_logsumexp", (_x(3, 4, 5), (0, -1)), {"keepdim": True}),
    ("log1mexp", "log1mexp", (_x(3, 5, low=0.1, high=4),), {}),
    ("cross_entropy_lse", "cross_entropy_lse", (_x(6, 9), _target(6, 9, (2,))),
     {"label_smoothing": 0.1}),
    ("cross_entropy_lse_none", "cross_entropy_lse", (_x(6, 9), _target(6, 9)),
     {"reduction": "none"}),
    ("fused_linear_cross_entropy", "fused_linear_cross_entropy",
     (_x(7, 5), _x(11, 5), _target(7, 11, (2,)), _x(11)), {"chunk_size": 3}),
]
IDS = [s[0] for s in SAMPLES]


def _on(device, args):
    """args moved to ``device``: tensors detached and copied, the ones requiring grad again
    leaves that do."""
    return tuple(a.detach().to(device).requires_grad_(a.requires_grad)
                 if isinstance(a, torch.Tensor) else a for a in args)


def _run(fn, args, kwargs):
    """fn's output, and the gradients of its inputs that require grad for a ones cotangent."""
    out = fn(*args, **kwargs)
    inputs = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    grads = torch.autograd.grad(out, inputs, torch.ones_like(out))
    return out, grads


def _like(got, want, device):
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    assert got.device.type == device


def test_every_pack_op_has_a_sample():
    assert {name for _, name, *_ in SAMPLES} == set(FUNCTIONS)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", SAMPLES, ids=IDS)
def test_pack_op_forward_and_backward_on_device(case, device):
    _, name, args, kwargs = case
    want, want_grads = _run(FUNCTIONS[name], args, kwargs)
    got, grads = _run(FUNCTIONS[name], _on(device, args), kwargs)
    _like(got, want, device)
    assert got.grad_fn is not None
    assert len(grads) == len(want_grads)
    for g, w in zip(grads, want_grads):
        _like(g, w, device)
    if device != "meta":
        torch.testing.assert_close(got.cpu(), want)
        torch.testing.assert_close([g.cpu() for g in grads], list(want_grads))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", [SAMPLES[7], SAMPLES[19], SAMPLES[-1]],
                         ids=[IDS[7], IDS[19], IDS[-1]])
def test_pack_twin_on_device(case, device):
    _, name, args, kwargs = case
    want, want_grads = _run(getattr(torch.ops.ext, name), args, kwargs)
    got, grads = _run(getattr(torch.ops.ext, name), _on(device, args), kwargs)
    _like(got, want, device)
    for g, w in zip(grads, want_grads):
        _like(g, w, device)


def test_meta_refuses_a_host_round_trip():
    # (what makes the meta runs above a proof: reading a value there raises)
    x = torch.ones(3, device="meta")
    for read in (lambda: x.sum().item(), lambda: x.tolist(), lambda: bool(x.sum() > 0)):
        with pytest.raises((RuntimeError, NotImplementedError)):
            read()


def test_loss_target_check_reads_values_off_meta_only():
    x, t = _x(3, 4), torch.tensor([0, 7, 1])
    with pytest.raises(IndexError, match="out of bounds|out of range"):
        P.cross_entropy_lse(x, t)
    out = P.cross_entropy_lse(*_on("meta", (x, t)))
    assert out.device.type == "meta"


class Scale(ext.autograd.Function):
    """x * w with w a tensor, saving both; and a ones-like intermediate made from x."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w + x.new_zeros(()) * torch.ones_like(x)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        return grad * w, (grad * x).sum(0)


class Square(ext.autograd.Function):
    """x ** 2, written as forward + setup_context."""

    @staticmethod
    def forward(x):
        return x * x

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * grad * x


@pytest.mark.parametrize("device", DEVICES)
def test_bridge_runs_a_user_function_on_device(device):
    x, w = _on(device, (_x(3, 4), _x(4)))
    y = Scale.apply(x, w)
    assert type(y.grad_fn).__name__ == "ScaleBackward"
    gx, gw = torch.autograd.grad(y, (x, w), torch.ones_like(y))
    _like(y, torch.empty(3, 4), device)
    _like(gx, torch.empty(3, 4), device)
    _like(gw, torch.empty(4), device)
    z = Square.apply(x)
    (g,) = torch.autograd.grad(z, x, torch.ones_like(z))
    _like(g, torch.empty(3, 4), device)
    # the torch.func flavour (a recording ctx, the saves as extra outputs) on the device too
    gf = torch.func.grad(lambda t: Square.apply(t).sum())(x.detach())
    _like(gf, torch.empty(3, 4), device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["silu", "mish", "hardswish", "hardsigmoid"])
def test_inplace_variant_on_device(name, device):
    (x,) = _on(device, (_x(3, 5),))
    y = x * 1  # (a leaf that requires grad may not be written in place)
    out = FUNCTIONS[name](y, inplace=True)
    assert out is y
    (g,) = torch.autograd.grad(out, x, torch.ones_like(out))
    _like(g, torch.empty(3, 5), device)
