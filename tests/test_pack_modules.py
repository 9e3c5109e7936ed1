"""The pack's module forms: ext.compat.nn (torch.nn.Modules) against the torch modules they replace
(constructor, values, gradients, state_dict both ways, repr, inplace, meta device, one fullgraph
compile), the pack-only modules against their functional forms and torch composites, and their
mini-engine twins in ext.nn.pack on ext tensors."""

from __future__ import annotations

import inspect
import subprocess
import sys

import numpy as np
import pytest

import ext
from ext import functions as P
from ext.nn import pack as enn
from ext.testing.cases import entmax15_reference, sparsemax_reference

torch = pytest.importorskip("torch")

from ext.compat import nn as xnn  # noqa: E402  (loaded with torch)

F = torch.nn.functional
nn = torch.nn

pytestmark = pytest.mark.ext_only

_rng = np.random.default_rng(23)
DTYPES = [torch.float32, torch.float64]


def _x(*shape, dtype=torch.float64, low=-4.0, high=4.0):
    return torch.tensor(_rng.uniform(low, high, shape), dtype=dtype, requires_grad=True)


def _tol(dtype):
    return {"rtol": 1e-5, "atol": 1e-6} if dtype == torch.float32 else {}


def _run(module, *inputs):
    """module(*inputs) and the gradients of a weighted sum of it (fixed weights of mixed signs)
    w.r.t. the inputs and the module's parameters that require grad."""
    out = module(*inputs)
    params = module.parameters() if isinstance(module, nn.Module) else ()
    leaves = [t for t in (*inputs, *params)
              if isinstance(t, torch.Tensor) and t.requires_grad]
    weights = torch.arange(out.numel(), dtype=out.dtype).cos().reshape(out.shape)
    return out, torch.autograd.grad((out * weights).sum(), leaves)


def _same_run(ours, theirs, *inputs, dtype=torch.float64):
    """ours and theirs give equal outputs and gradients on copies of the same inputs."""
    got, got_grads = _run(ours, *inputs)
    copies = [t.detach().clone().requires_grad_(t.requires_grad)
              if isinstance(t, torch.Tensor) else t for t in inputs]
    want, want_grads = _run(theirs, *copies)
    torch.testing.assert_close(got, want, **_tol(dtype))
    assert len(got_grads) == len(want_grads)
    for g, w in zip(got_grads, want_grads):
        torch.testing.assert_close(g, w, **_tol(dtype))


# ------------------------------------------------------------------ modules torch.nn has
# (ours, torch's, constructor keyword sets to try)
REPLACEMENTS = {
    "SiLU": (xnn.SiLU, nn.SiLU, [{}, {"inplace": True}]),
    "Mish": (xnn.Mish, nn.Mish, [{}, {"inplace": True}]),
    "GELU": (xnn.GELU, nn.GELU, [{}, {"approximate": "tanh"}]),
    "Hardswish": (xnn.Hardswish, nn.Hardswish, [{}, {"inplace": True}]),
    "Hardsigmoid": (xnn.Hardsigmoid, nn.Hardsigmoid, [{}, {"inplace": True}]),
    "RMSNorm": (xnn.RMSNorm, nn.RMSNorm, [{"normalized_shape": 6},
                                          {"normalized_shape": (4, 6), "eps": 1e-5},
                                          {"normalized_shape": [6], "elementwise_affine": False}]),
    "CrossEntropyLoss": (xnn.CrossEntropyLoss, nn.CrossEntropyLoss,
                         [{}, {"weight": torch.tensor([0.5, 1.0, 2.0, 1.5, 0.25])},
                          {"ignore_index": 1, "reduction": "sum", "label_smoothing": 0.1},
                          {"reduction": "none"}]),
}
ACTIVATIONS = ("SiLU", "Mish", "GELU", "Hardswish", "Hardsigmoid")
INPLACE = ("SiLU", "Mish", "Hardswish", "Hardsigmoid")
SETTINGS = [(name, i) for name, (_, _, kws) in REPLACEMENTS.items() for i in range(len(kws))]


def _pair(name: str, i: int, **extra):
    ours, theirs, kws = REPLACEMENTS[name]
    kw = {**kws[i], **extra}
    return ours(**kw), theirs(**kw)


def _inputs(name: str, module, dtype):
    """Random inputs for the module named ``name`` (with the hardswish bounds +-3 and the mish
    softplus threshold among the activations' points)."""
    if name in ACTIVATIONS:
        x = _x(4, 7, dtype=dtype, low=-6.0, high=6.0)
        with torch.no_grad():
            x[0, :4] = torch.tensor([-3.0, 3.0, 0.0, 25.0], dtype=dtype)
        return (x,)
    if name == "RMSNorm":
        x = _x(3, *module.normalized_shape, dtype=dtype)
        with torch.no_grad():
            x[0] *= 1e-4  # (a row whose mean square is near eps: eps=None must be torch's)
        return (x,)
    target = torch.tensor(_rng.integers(0, 5, (6,)))
    target[2] = 1  # (one row at ignore_index=1 when that is set)
    return _x(6, 5, dtype=dtype), target


@pytest.mark.parametrize("name", list(REPLACEMENTS))
def test_each_replacement_is_the_torch_module_with_its_constructor(name):
    ours, theirs, _ = REPLACEMENTS[name]
    assert issubclass(ours, theirs)
    assert ours.__module__ == "ext.compat.nn"
    assert inspect.signature(ours) == inspect.signature(theirs)
    assert "forward" in vars(ours)  # the pack's op, not torch's


@pytest.mark.parametrize(("name", "i"), SETTINGS)
def test_repr_is_the_torch_modules(name, i):
    ours, theirs = _pair(name, i)
    assert repr(ours) == repr(theirs)
    assert repr(nn.Sequential(ours)) == repr(nn.Sequential(theirs))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(("name", "i"), SETTINGS)
def test_values_and_gradients_are_the_torch_modules(name, i, dtype):
    if REPLACEMENTS[name][2][i].get("inplace"):
        # (inplace: the input is written, so each module gets a non-leaf copy of a leaf)
        leaf = _x(4, 7, dtype=dtype)
        ours, theirs = _pair(name, i)
        _same_run(lambda t: ours(t * 1), lambda t: theirs(t * 1), leaf, dtype=dtype)
        return
    ours, theirs = _pair(name, i)
    ours.to(dtype)
    theirs.to(dtype)
    if name == "RMSNorm" and ours.weight is not None:
        with torch.no_grad():
            theirs.weight.uniform_(0.5, 1.5)
        ours.load_state_dict(theirs.state_dict())
    _same_run(ours, theirs, *_inputs(name, ours, dtype), dtype=dtype)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_loss_takes_class_probabilities_as_torch_does(reduction):
    probs = torch.softmax(torch.tensor(_rng.normal(size=(4, 5))), 1)
    ours = xnn.CrossEntropyLoss(reduction=reduction, label_smoothing=0.2)
    theirs = nn.CrossEntropyLoss(reduction=reduction, label_smoothing=0.2)
    _same_run(ours, theirs, _x(4, 5), probs)


def test_cross_entropy_loss_refuses_an_out_of_range_target_as_torch_does():
    x, target = _x(3, 5), torch.tensor([0, 7, 1])
    with pytest.raises(IndexError):
        nn.CrossEntropyLoss()(x, target)
    with pytest.raises(IndexError, match="target"):
        xnn.CrossEntropyLoss()(x, target)


@pytest.mark.parametrize("kwargs", [{"normalized_shape": 6}, {"normalized_shape": (4, 6)},
                                    {"normalized_shape": 6, "elementwise_affine": False}],
                         ids=["1d", "2d", "no-affine"])
def test_rms_norm_state_dict_loads_both_ways_with_strict(kwargs):
    ours, theirs = xnn.RMSNorm(**kwargs), nn.RMSNorm(**kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    if ours.weight is None:
        assert ours.state_dict() == {} and theirs.state_dict() == {}
        return
    # torch's init (ones) and reset_parameters
    torch.testing.assert_close(ours.weight, theirs.weight)
    with torch.no_grad():
        theirs.weight.normal_()
    ours.load_state_dict(theirs.state_dict(), strict=True)
    torch.testing.assert_close(ours.weight, theirs.weight)
    with torch.no_grad():
        ours.weight.normal_()
    theirs.load_state_dict(ours.state_dict(), strict=True)
    torch.testing.assert_close(theirs.weight, ours.weight)
    ours.reset_parameters()
    torch.testing.assert_close(ours.weight, torch.ones_like(ours.weight))


def test_rms_norm_device_and_dtype_arguments_are_torchs():
    ours = xnn.RMSNorm(5, device="meta", dtype=torch.float64)
    theirs = nn.RMSNorm(5, device="meta", dtype=torch.float64)
    assert (ours.weight.device, ours.weight.dtype) == (theirs.weight.device, theirs.weight.dtype)
    assert isinstance(ours.weight, nn.Parameter)


def test_cross_entropy_weight_is_a_buffer_loading_both_ways():
    w = torch.tensor([0.5, 1.0, 2.0])
    ours, theirs = xnn.CrossEntropyLoss(weight=w), nn.CrossEntropyLoss(weight=w.clone())
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
    assert [n for n, _ in ours.named_buffers()] == ["weight"]
    theirs.load_state_dict({"weight": torch.tensor([1.0, 2.0, 3.0])}, strict=True)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    torch.testing.assert_close(ours.weight, theirs.weight)
    theirs.load_state_dict(xnn.CrossEntropyLoss(weight=w).state_dict(), strict=True)
    torch.testing.assert_close(theirs.weight, w)
    # (a model holding ours loads torch's checkpoint, and back)
    a = nn.Sequential(nn.Linear(4, 3), xnn.CrossEntropyLoss(weight=w))
    b = nn.Sequential(nn.Linear(4, 3), nn.CrossEntropyLoss(weight=w))
    a.load_state_dict(b.state_dict(), strict=True)
    b.load_state_dict(a.state_dict(), strict=True)
    torch.testing.assert_close(a[0].weight, b[0].weight)


# ------------------------------------------------------------------ inplace
@pytest.mark.parametrize("name", INPLACE)
def test_inplace_writes_into_the_input_and_returns_it_as_torch(name):
    ours, theirs = _pair(name, 1)
    leaf = _x(3, 5, low=-5.0, high=5.0)
    x, x_t = leaf * 1, leaf * 1
    version = x._version
    y, y_t = ours(x), theirs(x_t)
    assert (y is x) and (y_t is x_t)
    assert x._version > version
    torch.testing.assert_close(x, x_t)
    assert y.grad_fn is not None
    (g,) = torch.autograd.grad(y.sum(), leaf)
    (g_t,) = torch.autograd.grad(y_t.sum(), leaf)
    torch.testing.assert_close(g, g_t)


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_on_a_leaf_that_requires_grad_is_refused_as_torch(name):
    ours, theirs = _pair(name, 1)
    leaf = _x(4)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        theirs(leaf)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        ours(leaf)


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_without_grad_writes_the_values(name):
    ours, theirs = _pair(name, 1)
    x = torch.tensor(_rng.uniform(-5, 5, (6,)))
    x_t = x.clone()
    assert ours(x) is x
    theirs(x_t)
    torch.testing.assert_close(x, x_t)


# ------------------------------------------------------------------ meta device
@pytest.mark.parametrize(("name", "i"), SETTINGS)
def test_runs_on_the_meta_device_as_torch(name, i):
    ours, theirs = _pair(name, i)
    ours.to("meta")
    theirs.to("meta")
    leaves = [t.detach().to("meta").requires_grad_(t.is_floating_point())
              for t in _inputs(name, ours, torch.float32)]
    # (inplace: into a non-leaf)
    inputs = [t * 1 if t.requires_grad else t for t in leaves]
    got, want = ours(*inputs), theirs(*[t.clone() for t in inputs])
    assert (got.device.type, got.shape, got.dtype) == ("meta", want.shape, want.dtype)
    (g,) = torch.autograd.grad(got.sum(), leaves[0])
    assert (g.device.type, g.shape) == ("meta", leaves[0].shape)


# ------------------------------------------------------------------ the pack's own modules
def _halves_ref(act):
    """x -> x1 * act(x2) over the halves along dim, as torch.nn.GLU takes them."""
    def run(x, dim=-1):
        a, b = x.chunk(2, dim)
        return a * act(b)
    return run


def _fake_quant_ref(x):
    return torch.fake_quantize_per_tensor_affine(x, 0.25, 2, -8, 7)


# name -> (constructor kwargs, torch reference of x (same dtype), input shape)
PACK_ONLY = {
    "SwiGLU": ({}, _halves_ref(F.silu), (3, 8)),
    "SwiGLU-dim0": ({"dim": 0}, lambda x: _halves_ref(F.silu)(x, 0), (6, 5)),
    "GeGLU": ({}, _halves_ref(F.gelu), (3, 8)),
    "GeGLU-tanh": ({"dim": 1, "approximate": "tanh"},
                   lambda x: _halves_ref(lambda t: F.gelu(t, approximate="tanh"))(x, 1),
                   (2, 6, 3)),
    "Sparsemax": ({}, sparsemax_reference, (4, 7)),
    "Sparsemax-dim0": ({"dim": 0}, lambda x: sparsemax_reference(x, 0), (7, 4)),
    "Entmax15": ({}, entmax15_reference, (4, 7)),
    "SafeSoftmax": ({"dim": 0}, lambda x: torch.softmax(x, 0), (5, 3)),
    "Hardmish": ({}, lambda x: 0.5 * x * torch.clamp(x + 2, 0, 2), (4, 6)),
    "SafeLogsumexp": ({}, lambda x: torch.logsumexp(x, -1), (4, 6)),
    "SafeLogsumexp-dim0-keepdim": ({"dim": 0, "keepdim": True},
                                   lambda x: torch.logsumexp(x, 0, keepdim=True), (4, 6)),
    "Log1mexp": ({}, lambda x: torch.log(-torch.expm1(-x)), (4, 6)),
    "GradReverse": ({"alpha": 0.5}, lambda x: -0.5 * x + (1.5 * x).detach(), (4, 3)),
    "GradScale": ({"scale": 3.0}, lambda x: 3.0 * x - (2.0 * x).detach(), (4, 3)),
    "FakeQuantSTE": ({"scale": 0.25, "zero_point": 2, "qmin": -8, "qmax": 7}, _fake_quant_ref,
                     (5, 6)),
    "ClampMasked": ({"min": -1.0, "max": 2.0}, lambda x: torch.clamp(x, -1.0, 2.0), (4, 6)),
    "ClampMasked-block": ({"min": -1.0, "max": 1.0, "boundary": "block"}, F.hardtanh, (4, 6)),
    "RoundSTE": ({}, lambda x: x + (torch.round(x) - x).detach(), (4, 6)),
    "SignSTE": ({}, lambda x: x.clamp(-1, 1) + (torch.sign(x) - x.clamp(-1, 1)).detach(),
                (4, 6)),
    "Quantize": ({"bits": 3}, None, (4, 6)),
}


def _module_name(key: str) -> str:
    return key.split("-")[0]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("key", list(PACK_ONLY))
def test_pack_only_module_matches_its_torch_reference(key, dtype):
    kwargs, reference, shape = PACK_ONLY[key]
    module = getattr(xnn, _module_name(key))(**kwargs)
    assert isinstance(module, nn.Module)
    low = 0.1 if key == "Log1mexp" else -3.0  # (log1mexp's domain: x > 0)
    x = _x(*shape, dtype=dtype, low=low, high=3.0)
    if reference is None:  # (no torch reference: the pack function itself)
        fn = getattr(P, _module_name(key).lower())
        reference = lambda t: fn(t, **kwargs)  # noqa: E731
    _same_run(module, reference, x, dtype=dtype)


@pytest.mark.parametrize("key", list(PACK_ONLY))
def test_pack_only_module_runs_on_the_meta_device(key):
    kwargs, _, shape = PACK_ONLY[key]
    module = getattr(xnn, _module_name(key))(**kwargs)
    want = module(torch.zeros(shape))
    x = torch.empty(shape, device="meta", requires_grad=True)
    got = module(x)
    assert (got.device.type, got.shape, got.dtype) == ("meta", want.shape, want.dtype)
    (g,) = torch.autograd.grad(got.sum(), x)
    assert (g.device.type, g.shape) == ("meta", x.shape)


def test_swiglu_gates_the_second_half_as_torch_glu_does():
    # SwiGLU is GLU with silu in place of sigmoid: the same half carries the activation
    x = _x(3, 8)
    a, b = x.chunk(2, -1)
    torch.testing.assert_close(nn.GLU()(x), a * torch.sigmoid(b))
    torch.testing.assert_close(xnn.SwiGLU()(x), a * F.silu(b))
    torch.testing.assert_close(xnn.SwiGLU()(x), P.swiglu(b, a))
    torch.testing.assert_close(xnn.GeGLU()(x), P.geglu(b, a))


@pytest.mark.parametrize("module", [xnn.SwiGLU(), xnn.GeGLU(dim=0), enn.SwiGLU(), enn.GeGLU()],
                         ids=["torch-SwiGLU", "torch-GeGLU", "ext-SwiGLU", "ext-GeGLU"])
def test_gated_units_refuse_an_odd_dimension_as_glu_does(module):
    T = ext if isinstance(module, ext.nn.Module) else torch
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        nn.GLU(dim=module.dim)(torch.ones(3, 3))
    with pytest.raises(RuntimeError, match=f"{type(module).__name__}: Halving dimension must be "
                                           "even, but dimension [01] is size 3"):
        module(T.ones(3, 3))
    with pytest.raises(RuntimeError, match="scalars"):
        module(T.tensor(1.0))


def test_safe_softmax_module_takes_a_mask_and_gives_zeros_on_an_empty_row():
    x = _x(3, 4)
    mask = torch.tensor([[True, False, True, True], [False] * 4, [True] * 4])
    y = xnn.SafeSoftmax()(x, mask)
    want = torch._safe_softmax(x.masked_fill(~mask, float("-inf")), -1)
    torch.testing.assert_close(y, want)
    (g,) = torch.autograd.grad(y.sum(), x)
    assert torch.all(g[1] == 0) and torch.all(torch.isfinite(g))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kwargs", [{}, {"ignore_index": 2, "reduction": "sum",
                                         "label_smoothing": 0.1, "chunk_size": 3},
                                    {"reduction": "none", "chunk_size": 2}])
@pytest.mark.parametrize("with_bias", [False, True], ids=["nobias", "bias"])
def test_fused_linear_cross_entropy_loss_is_linear_then_cross_entropy(kwargs, with_bias, dtype):
    module = xnn.FusedLinearCrossEntropyLoss(**kwargs)
    ce = {k: v for k, v in kwargs.items() if k != "chunk_size"}
    x, w = _x(7, 4, dtype=dtype), _x(5, 4, dtype=dtype)
    b = _x(5, dtype=dtype) if with_bias else None
    target = torch.tensor(_rng.integers(0, 5, (7,)))
    target[0] = 2
    inputs = (x, w, target) + ((b,) if with_bias else ())
    _same_run(module, lambda x, w, t, b=None: F.cross_entropy(F.linear(x, w, b), t, **ce),
              *inputs, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_fused_linear_cross_entropy_loss_class_weight_is_cross_entropys_weight(dtype):
    class_weight = torch.tensor([0.5, 1.0, 2.0, 1.5, 0.25], dtype=dtype)
    module = xnn.FusedLinearCrossEntropyLoss(class_weight=class_weight, label_smoothing=0.05,
                                             chunk_size=4)
    assert list(module.state_dict()) == ["class_weight"]
    x, w, b = _x(2, 5, 4, dtype=dtype), _x(5, 4, dtype=dtype), _x(5, dtype=dtype)
    target = torch.tensor(_rng.integers(0, 5, (2, 5)))

    def reference(x, w, t, b):
        return F.cross_entropy(F.linear(x, w, b).flatten(0, 1), t.flatten(), class_weight,
                               label_smoothing=0.05)

    _same_run(module, reference, x, w, target, b, dtype=dtype)


def test_module_forms_pass_gradcheck_and_gradgradcheck_in_float64():
    x = _x(2, 6, low=-2.0, high=2.0)
    # (not GradReverse and GradScale: their gradient is not their output's derivative, by design)
    for module in (xnn.SwiGLU(), xnn.GeGLU(approximate="tanh"), xnn.Entmax15(), xnn.Hardmish(),
                   xnn.RMSNorm(6), xnn.Mish(), xnn.GELU()):
        assert torch.autograd.gradcheck(module, (x,)), module
        assert torch.autograd.gradgradcheck(module, (x,)), module


# ------------------------------------------------------------------ the twins on ext tensors
TWINS = sorted(enn.FORMS)
EXT_KWARGS = {"GeGLU": {"approximate": "tanh"}, "GradReverse": {"alpha": 0.5},
              "GradScale": {"scale": 2.0}, "Quantize": {"bits": 3},
              "FakeQuantSTE": {"scale": 0.25, "zero_point": 2, "qmin": -8, "qmax": 7},
              "ClampMasked": {"min": -1.0, "max": 2.0, "boundary": "block"},
              "FusedLinearCrossEntropyLoss": {"label_smoothing": 0.1, "chunk_size": 3},
              "SafeSoftmax": {"dim": 0}, "Sparsemax": {"dim": 0},
              "SafeLogsumexp": {"dim": 0, "keepdim": True}}


def test_every_form_is_a_module_on_both_engines_with_one_constructor():
    assert set(TWINS) == set(enn.__all__) - {"FORMS"}
    for name in TWINS:
        ours, twin = getattr(enn, name), getattr(xnn, name)
        assert issubclass(ours, ext.nn.Module) and issubclass(twin, nn.Module)
        assert issubclass(ours, enn.FORMS[name]) and issubclass(twin, enn.FORMS[name])
        assert inspect.signature(ours) == inspect.signature(twin)
        kwargs = EXT_KWARGS.get(name, {})
        assert repr(ours(**kwargs)) == repr(twin(**kwargs))
        assert ours(**kwargs).state_dict() == {} and twin(**kwargs).state_dict() == {}


def _ext_inputs(name: str):
    """Float64 inputs for the module named ``name``, as numpy arrays."""
    if name == "FusedLinearCrossEntropyLoss":
        return (_rng.normal(size=(7, 4)), _rng.normal(size=(5, 4)),
                _rng.integers(0, 5, (7,)), _rng.normal(size=(5,)))
    if name == "SafeSoftmax":
        return _rng.normal(size=(4, 6)), _rng.uniform(size=(4, 6)) > 0.3
    if name == "Log1mexp":
        return (_rng.uniform(0.1, 3, (4, 6)),)
    return (_rng.uniform(-3, 3, (4, 6)),)


def _as(T, arrays):
    return [T.tensor(a, requires_grad=a.dtype == np.float64) for a in arrays]


def _grads(T, out, inputs):
    leaves = [t for t in inputs if t.requires_grad]
    weights = T.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
    return out, T.autograd.grad((out * weights).sum(), leaves)


@pytest.mark.parametrize("name", TWINS)
def test_mini_engine_module_matches_the_functional_form_and_its_torch_twin(name):
    kwargs = EXT_KWARGS.get(name, {})
    arrays = _ext_inputs(name)
    module = getattr(enn, name)(**kwargs)
    x = _as(ext, arrays)
    out, grads = _grads(ext, module(*x), x)
    # the functional form, on ext tensors
    x2 = _as(ext, arrays)
    want, want_grads = _grads(ext, _functional(name, kwargs, x2), x2)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    for g, w in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-15)
    # the torch twin, on the same values
    xt = _as(torch, arrays)
    out_t, grads_t = _grads(torch, getattr(xnn, name)(**kwargs)(*xt), xt)
    np.testing.assert_allclose(out.detach().numpy(), out_t.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    for g, w in zip(grads, grads_t, strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12)


def _functional(name: str, kwargs: dict, x: list):
    """The pack function that the module named ``name`` calls, written out."""
    if name in ("SwiGLU", "GeGLU"):
        a, b = x[0].chunk(2, -1)
        return P.swiglu(b, a) if name == "SwiGLU" else P.geglu(b, a, **kwargs)
    if name == "FusedLinearCrossEntropyLoss":
        return P.fused_linear_cross_entropy(x[0], x[1], x[2], x[3], **kwargs)
    if name == "SafeSoftmax":
        return P.safe_softmax(x[0], x[1], **kwargs)
    fn = {"Entmax15": P.entmax15, "SafeLogsumexp": P.safe_logsumexp, "Log1mexp": P.log1mexp,
          "FakeQuantSTE": P.fake_quant_ste, "RoundSTE": P.round_ste,
          "SignSTE": P.sign_ste, "ClampMasked": P.clamp_masked, "GradReverse": P.grad_reverse,
          "GradScale": P.grad_scale, "Hardmish": P.hardmish, "Quantize": P.quantize,
          "Sparsemax": P.sparsemax}[name]
    return fn(x[0], **kwargs)


def test_ext_nn_has_torchs_names_for_the_activations_it_backs_with_built_ins():
    for name in ("SiLU", "GELU", "Softmax", "CrossEntropyLoss", "LayerNorm"):
        ours, theirs = getattr(ext.nn, name), getattr(nn, name)
        assert list(inspect.signature(ours).parameters) == \
            list(inspect.signature(theirs).parameters)
    assert repr(ext.nn.SiLU(inplace=True)) == repr(nn.SiLU(inplace=True))
    assert repr(ext.nn.GELU("tanh")) == repr(nn.GELU("tanh"))


# ------------------------------------------------------------------ import and compile
def test_import_ext_loads_neither_torch_nor_the_torch_modules():
    code = ("import sys, ext; assert 'torch' not in sys.modules; "
            "assert 'ext.compat.nn' not in sys.modules;"
            " m = ext.nn.pack.Hardmish(); assert 'torch' not in sys.modules; print(m)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hardmish()"


def test_a_model_of_pack_modules_compiles_with_fullgraph():
    torch.manual_seed(0)
    model = nn.Sequential(xnn.RMSNorm(8), nn.Linear(8, 12), xnn.SwiGLU(), nn.Linear(6, 8),
                          xnn.GELU(approximate="tanh"), xnn.SiLU(inplace=True),
                          xnn.GradReverse(0.5), nn.Linear(8, 5))
    loss_fn = xnn.CrossEntropyLoss(label_smoothing=0.1)
    x, target = torch.randn(4, 8), torch.tensor([0, 3, 4, 1])

    def step(x, target):
        return loss_fn(model(x), target)

    eager = step(x, target)
    eager_grads = torch.autograd.grad(eager, list(model.parameters()))
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    loss = compiled(x, target)
    grads = torch.autograd.grad(loss, list(model.parameters()))
    torch.testing.assert_close(loss, eager)
    for g, w in zip(grads, eager_grads, strict=True):
        torch.testing.assert_close(g, w)
