"""ext.hooks on both engines: each utility's effect against torch doing the same by hand.

The oracle is always torch with the equivalent manual hook (a lambda given to
``register_hook``, ``register_forward_hook``, ``saved_tensors_hooks`` ...); the utility runs on
the backend under test, ext or torch.
"""

from __future__ import annotations

import contextlib
import importlib.util
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import leaf, sample, to_np

from ext import hooks

ROOT = Path(__file__).resolve().parents[1]


def grads_with_hook(T, hook, x_np, w_np):
    """x.grad after backward of sum((x * w) ** 2 * v) with ``hook`` on the intermediate x * w;
    the grad_output v is non-uniform."""
    x, w = leaf(T, x_np), leaf(T, w_np)
    y = x * w
    y.register_hook(hook)
    v = T.tensor(np.linspace(-3.0, 3.0, x_np.size).reshape(x_np.shape))
    ((y ** 2) * v).sum().backward()
    return to_np(x.grad), to_np(w.grad)


# -------------------- gradient hooks


def test_clip_hook_clamps_as_a_manual_clamp_hook_in_torch(T, rng):
    x_np, w_np = sample(rng, (3, 4)), sample(rng, (3, 4))
    got = grads_with_hook(T, hooks.clip(-1.0, 2.0), x_np, w_np)
    want = grads_with_hook(torch, lambda g: g.clamp(-1.0, 2.0), x_np, w_np)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    unclipped = grads_with_hook(torch, lambda g: None, x_np, w_np)
    assert not np.allclose(got, unclipped)  # the clip did something


def test_clip_with_one_bound_clamps_one_side(T, rng):
    x_np, w_np = sample(rng, (5,)), sample(rng, (5,))
    got = grads_with_hook(T, hooks.clip(max=0.5), x_np, w_np)
    want = grads_with_hook(torch, lambda g: g.clamp(max=0.5), x_np, w_np)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_clip_refuses_bounds_in_the_wrong_order():
    with pytest.raises(ValueError, match="min"):
        hooks.clip(1.0, -1.0)
    with pytest.raises(ValueError, match="at least one"):
        hooks.clip()


def test_scale_hook_multiplies_as_a_manual_hook_in_torch(T, rng):
    x_np, w_np = sample(rng, (2, 3)), sample(rng, (2, 3))
    got = grads_with_hook(T, hooks.scale(0.25), x_np, w_np)
    want = grads_with_hook(torch, lambda g: g * 0.25, x_np, w_np)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_scale_refuses_a_non_number():
    with pytest.raises(ValueError, match="finite number"):
        hooks.scale(float("nan"))


def nan_grad(T, hook):
    """x.grad of sum(x * w) with a NaN in w, so x's gradient holds one NaN, through ``hook``."""
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = T.tensor([0.5, float("nan"), -2.0])
    x.register_hook(hook)
    (x * w).sum().backward()
    return x


def test_nan_guard_zero_replaces_nan_as_a_manual_where_hook(T):
    got = to_np(nan_grad(T, hooks.nan_guard("zero")).grad)
    want = to_np(nan_grad(torch, lambda g: torch.where(g.isnan(), g.new_zeros(()), g)).grad)
    np.testing.assert_array_equal(got, want)
    assert got.tolist() == [0.5, 0.0, -2.0]


def test_nan_guard_raise_stops_backward_before_the_leaf_is_touched(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = T.tensor([0.5, float("nan"), -2.0])
    x.register_hook(hooks.nan_guard("raise"))
    with pytest.raises(RuntimeError, match="1 NaN"):
        (x * w).sum().backward()
    assert x.grad is None


def test_nan_guard_warn_passes_the_gradient_on(T):
    with pytest.warns(hooks.NanGradientWarning, match="NaN"):
        got = to_np(nan_grad(T, hooks.nan_guard("warn")).grad)
    want = to_np(nan_grad(torch, lambda g: None).grad)
    np.testing.assert_array_equal(got, want)


def test_nan_guard_is_silent_on_a_finite_gradient(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(hooks.nan_guard("warn"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_nan_guard_refuses_an_unknown_action():
    with pytest.raises(ValueError, match="'raise', 'zero', 'warn'"):
        hooks.nan_guard("ignore")


# -------------------- register_all


def params_grads(T, arrays, hook_each):
    """Grads of sum(a * b * c) over three leaves; ``hook_each(tensors)`` registers hooks."""
    ps = [leaf(T, a) for a in arrays]
    handle = hook_each(ps)
    (ps[0] * ps[1] * ps[2]).sum().backward()
    return [to_np(p.grad) for p in ps], handle, ps


def test_register_all_hooks_every_tensor_as_manual_hooks_in_torch(T, rng):
    arrays = [sample(rng, (4,)) for _ in range(3)]
    got, group, _ = params_grads(T, arrays, lambda ps: hooks.register_all(ps, hooks.scale(2.0)))
    want, _, _ = params_grads(torch, arrays,
                              lambda ps: [p.register_hook(lambda g: g * 2.0) for p in ps])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert len(group) == 3


def test_register_all_handle_removes_every_hook(T, rng):
    arrays = [sample(rng, (4,)) for _ in range(3)]
    ps = [leaf(T, a) for a in arrays]
    group = hooks.register_all(ps, hooks.scale(10.0))
    group.remove()
    group.remove()  # a second remove does nothing
    (ps[0] * ps[1] * ps[2]).sum().backward()
    want, _, _ = params_grads(torch, arrays, lambda ps: None)
    np.testing.assert_allclose([to_np(p.grad) for p in ps], want, rtol=1e-12)


def test_register_all_takes_a_module_and_works_as_a_context(T):
    model = T.nn.Linear(3, 2)
    with hooks.register_all(model, hooks.scale(0.0)) as group:
        model(T.ones(1, 3)).sum().backward()
        assert len(group) == 2
    assert model.weight.grad.abs().sum().item() == 0.0
    model(T.ones(1, 3)).sum().backward()
    assert model.bias.grad.tolist() == [1.0, 1.0]


def test_register_all_refuses_a_tensor_without_grad_and_registers_nothing(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="element 1"):
        hooks.register_all([a, T.tensor([1.0])], hooks.scale(5.0))
    (a * 1).sum().backward()
    assert a.grad.tolist() == [1.0, 1.0]


# -------------------- module recorders


def mlp(T, rng_seed=0):
    """Linear(3, 4), Tanh, Linear(4, 2) with the same weights on either backend."""
    rng = np.random.default_rng(rng_seed)
    model = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Linear(4, 2)).double()
    with T.no_grad():
        for p in model.parameters():
            p.copy_(T.tensor(sample(rng, tuple(p.shape))))
    return model


def test_module_recorder_records_what_manual_module_hooks_see_in_torch(T, rng):
    x_np = sample(rng, (5, 3))
    v_np = sample(rng, (5, 2))
    model = mlp(T)
    rec = hooks.ModuleRecorder(model)
    x = leaf(T, x_np)
    (model(x) * T.tensor(v_np)).sum().backward()

    ref = mlp(torch)
    acts, gouts, gins = {}, {}, {}

    def backward_hook(module, grad_input, grad_output, name):
        gouts[name], gins[name] = grad_output, grad_input

    for name, m in ref.named_children():
        m.register_forward_hook(lambda m, a, out, n=name: acts.__setitem__(n, out.detach()))
        m.register_full_backward_hook(lambda m, gi, go, n=name: backward_hook(m, gi, go, n))
    (ref(leaf(torch, x_np)) * torch.tensor(v_np)).sum().backward()

    assert sorted(rec.activations) == sorted(acts) == ["0", "1", "2"]
    for name in acts:
        np.testing.assert_allclose(to_np(rec.activations[name]), to_np(acts[name]), rtol=1e-12)
        np.testing.assert_allclose(to_np(rec.grad_outputs[name][0]), to_np(gouts[name][0]),
                                   rtol=1e-12)
        np.testing.assert_allclose(to_np(rec.grad_inputs[name][0]), to_np(gins[name][0]),
                                   rtol=1e-12)
    assert not rec.activations["0"].requires_grad  # recorded detached


def test_module_recorder_keeps_every_call_and_removes_its_hooks(T):
    model = mlp(T)
    rec = hooks.ModuleRecorder(model, gradients=False, keep="all", names=["1"])
    model(T.ones(2, 3, dtype=T.float64))
    model(T.ones(1, 3, dtype=T.float64))
    assert [tuple(a.shape) for a in rec.activations["1"]] == [(2, 4), (1, 4)]
    rec.remove()
    model(T.ones(1, 3, dtype=T.float64))
    assert len(rec.activations["1"]) == 2


def test_output_gradients_tolerate_an_inplace_relu_after_the_module(T, rng):
    x_np, v_np = sample(rng, (4, 3)), sample(rng, (4, 2))
    model = mlp(T)
    model[1] = T.nn.ReLU(inplace=True)
    rec = hooks.ModuleRecorder(model, gradients="outputs", names=["0"])
    (model(leaf(T, x_np)) * T.tensor(v_np)).sum().backward()

    ref = mlp(torch)
    ref[1] = torch.nn.ReLU(inplace=True)
    seen = []

    def forward_hook(module, args, out):
        out.register_hook(seen.append)  # returns None: the output stays as it is

    ref[0].register_forward_hook(forward_hook)
    (ref(leaf(torch, x_np)) * torch.tensor(v_np)).sum().backward()
    np.testing.assert_allclose(to_np(rec.grad_outputs["0"][0]), to_np(seen[0]), rtol=1e-12)
    assert (to_np(seen[0]) == 0).any()  # the ReLU's mask is in it

    # Full backward hooks cannot be used there, on either engine.
    seq = T.nn.Sequential(T.nn.Linear(3, 2).double(), T.nn.ReLU(inplace=True))
    hooks.ModuleRecorder(seq, names=["0"])
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        seq(leaf(T, x_np))


def test_module_recorder_refuses_an_unknown_module_name(T):
    with pytest.raises(ValueError, match="no submodule named"):
        hooks.ModuleRecorder(mlp(T), names=["9"])
    with pytest.raises(TypeError, match="must be a module"):
        hooks.ModuleRecorder(T.ones(2))
    with pytest.raises(ValueError, match="gradients must be"):
        hooks.ModuleRecorder(mlp(T), gradients="inputs")


# -------------------- GradFlow


def test_gradflow_records_mean_and_max_abs_grad_per_backward(T, rng):
    x_np = sample(rng, (6, 3))
    model = mlp(T)
    flow = hooks.GradFlow(model)
    model(leaf(T, x_np, requires_grad=False)).pow(2).sum().backward()
    first = dict(flow.latest)
    model(leaf(T, x_np, requires_grad=False)).sum().backward()  # accumulates into .grad

    ref = mlp(torch)
    seen = []
    for name, p in ref.named_parameters():
        p.register_post_accumulate_grad_hook(
            lambda p, n=name: seen.append((n, p.grad.abs().mean().item(),
                                           p.grad.abs().max().item())))
    ref(torch.tensor(x_np)).pow(2).sum().backward()
    ref(torch.tensor(x_np)).sum().backward()

    assert len(flow.records) == 2
    want = [dict((n, (m, x)) for n, m, x in seen[:4]), dict((n, (m, x)) for n, m, x in seen[4:])]
    for record, expected in zip([first, flow.latest], want):
        assert sorted(record) == sorted(expected)
        for name in expected:
            np.testing.assert_allclose(record[name], expected[name], rtol=1e-12)


def test_gradflow_prints_a_table_and_plots_a_png(T, tmp_path):
    model = mlp(T)
    flow = hooks.GradFlow(model)
    model(T.ones(2, 3, dtype=T.float64)).sum().backward()
    text = str(flow)
    assert "0.weight" in text and "2.bias" in text and "max |grad|" in text
    path = tmp_path / "flow.png"
    flow.plot(str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    flow.remove()
    model(T.ones(2, 3, dtype=T.float64)).sum().backward()
    assert len(flow.records) == 1


def test_gradflow_plot_before_any_backward_says_so(T):
    with pytest.raises(RuntimeError, match="no backward"):
        hooks.GradFlow(mlp(T)).plot()


def load_tool(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.ext_only
def test_gradflow_of_a_deep_sigmoid_network_shows_vanishing_gradients(tmp_path):
    # The committed picture comes from this function (tools/gradflow_vanishing.py).
    flow = load_tool("gradflow_vanishing").draw(tmp_path / "gradflow.png")
    means = [flow.latest[f"layers.{i}.weight"][0] for i in range(20)]
    assert all(a < b for a, b in zip(means, means[1:]))  # smaller towards the input
    assert means[0] < 1e-10 * means[-1]
    assert (tmp_path / "gradflow.png").stat().st_size > 10_000
    assert (ROOT / "docs" / "gradflow.png").read_bytes()[:4] == b"\x89PNG"


# -------------------- saved tensors: meter and compression


def swish(x):
    return x * x.sigmoid()


def manual_meter(fn, x):
    """Appendix A.1 of the reference, in torch: saves and unique storages."""
    saves, storages = [], {}

    def pack(t):
        s = t.untyped_storage()
        saves.append(t.numel() * t.element_size())
        storages[(s.data_ptr(), s.nbytes())] = s.nbytes()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(x)
    return out, saves, storages


def test_saved_tensor_meter_counts_as_manual_pack_hooks_in_torch(T, rng):
    x_np = sample(rng, (10,), dtype=np.float32)
    with hooks.SavedTensorMeter() as meter:
        y = swish(leaf(T, x_np))
    _, saves, storages = manual_meter(swish, leaf(torch, x_np))
    assert meter.count == len(saves) == 3
    assert meter.total_bytes == sum(saves) == 120
    assert meter.unique_bytes == sum(storages.values()) == 80
    # sigmoid saves its result, mul its two inputs (x and the same sigmoid result)
    assert meter.by_node(y) == {"MulBackward0": 80, "SigmoidBackward0": 40}
    assert "SigmoidBackward0" in meter.report(y)


def test_saved_tensor_meter_sees_nothing_outside_its_block(T):
    x = T.ones(3, requires_grad=True)
    with hooks.SavedTensorMeter() as meter:
        x.exp()
    (x * x).sum()
    assert meter.count == 1


def test_saved_tensor_meter_names_a_custom_functions_saves_and_survives_backward(T):
    from ext.functions.dropin import Silu

    x = T.ones(4, requires_grad=True)
    with hooks.SavedTensorMeter() as meter:
        y = Silu.apply(x).sum()
    assert meter.by_node(y) == {"SiluBackward": 16}
    y.backward()
    assert meter.by_node(y) == {"SiluBackward": 16}  # freed saves keep the name found before


def test_saved_tensor_meter_measures_compressed_saves(T):
    x = T.ones(8, requires_grad=True)
    with hooks.SavedTensorMeter(compress="fp16") as meter:
        x.exp()
    assert meter.total_bytes == 16
    assert meter.records[0].dtype == "float16"


def compressed_grad(T, x_np, context):
    x = leaf(T, x_np)
    with context():
        y = swish(x)
    (y * T.tensor(np.linspace(-1, 2, x_np.size, dtype=np.float32))).sum().backward()
    return to_np(x.grad)


def manual_cast_hooks(low=torch.float16):
    def pack(t):
        return (t.to(low), t.dtype)

    def unpack(packed):
        return packed[0].to(packed[1])
    return torch.autograd.graph.saved_tensors_hooks(pack, unpack)


def test_fp16_compression_gives_the_gradient_of_manual_cast_hooks_in_torch(T, rng):
    x_np = sample(rng, (50,), dtype=np.float32)
    got = compressed_grad(T, x_np, lambda: hooks.compress_saved_tensors("fp16"))
    want = compressed_grad(torch, x_np, manual_cast_hooks)
    exact = compressed_grad(torch, x_np, contextlib.nullcontext)  # no hooks at all
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert not np.array_equal(want, exact)  # the compression is visible in the gradient


def test_bf16_compression_gives_the_gradient_of_manual_cast_hooks_in_torch(T, rng):
    x_np = sample(rng, (20,), dtype=np.float32)
    got = compressed_grad(T, x_np, lambda: hooks.compress_saved_tensors("bf16"))
    want = compressed_grad(torch, x_np, lambda: manual_cast_hooks(torch.bfloat16))
    exact = compressed_grad(torch, x_np, contextlib.nullcontext)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert not np.array_equal(want, exact)  # the compression is visible in the gradient
    with pytest.raises(ValueError, match="dtype must be one of"):
        hooks.compress_saved_tensors("int8")


# -------------------- trace_backward


def test_trace_backward_records_nodes_in_the_order_of_manual_node_hooks(T, rng):
    x_np = sample(rng, (3,))
    x = leaf(T, x_np)
    y = ((x * 2).exp() + x).sum()
    x.register_hook(hooks.clip(-1.0, 1.0))
    with hooks.trace_backward(y) as trace:
        y.backward(retain_graph=True)

    xr = leaf(torch, x_np)
    yr = ((xr * 2).exp() + xr).sum()
    order, stack, seen = [], [yr.grad_fn], set()
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        name = fn.name()
        fn.register_prehook(lambda g, n=name: order.append(n))
        stack.extend(f for f, _ in fn.next_functions if f is not None)
    yr.backward()

    names = [e.name for e in sorted(trace.nodes, key=lambda e: e.start)]
    assert [n.replace("ext::", "torch::") for n in names] == order
    assert [e.name for e in trace.hooks] == ["clip"]
    assert all(e.duration >= 0 for e in trace.nodes)
    assert "SumBackward0" in str(trace)
    # Leaving the block removed the trace's hooks.
    y.backward()
    assert len(trace.events) == len(names) + 1


def test_trace_wrap_records_a_user_hook(T):
    x = T.ones(2, requires_grad=True)
    y = (x * 3).sum()
    with hooks.trace_backward(y) as trace:
        x.register_hook(trace.wrap(lambda g: g * 2, name="double"))
        y.backward()
    assert [e.name for e in trace.hooks] == ["double"]
    assert x.grad.tolist() == [6.0, 6.0]


def test_trace_backward_refuses_a_non_tensor(T):
    with pytest.raises(TypeError, match="argument 0 must be a tensor"):
        hooks.trace_backward(3.0)


@pytest.mark.ext_only
def test_importing_hooks_and_viz_does_not_import_torch():
    code = "import sys, ext.hooks, ext.viz; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.ext_only
def test_cuda_check_compares_every_pack_case_across_devices():
    # tools/cuda_check.py runs on a GPU machine; here the same comparison runs CPU against CPU,
    # so the tool stays runnable: every pack case, its Function classes through apply, its
    # masks on the input's device
    tool = load_tool("cuda_check")
    results = {name: tool.run_case(case, "cpu") for name, case in tool.cases.PACK.items()}
    assert len(results) == len(tool.cases.PACK) > 30
    assert {status for status, _ in results.values()} == {"ok"}, results
    assert results["AddMul"][1] == "1 output(s), 3 gradient(s)"
    if not torch.cuda.is_available():
        assert tool.main([]) == 2
