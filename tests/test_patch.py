"""``ext.compat.patch``: the pack put into a built torch model in one call, checked against the
same model unpatched (torch's own forwards are the oracle), on stand-ins with transformers'
class names (tests/standins.py) and, when it is installed, on transformers' tiny Llama."""

from __future__ import annotations

import copy
import pickle
import sys

import pytest
import standins as S
import torch
import torch.nn.functional as F
from torch import nn

import ext.functions
from ext.compat.patch import Patch, PatchCheckError, patch


def _classes(model: nn.Module) -> dict[str, type]:
    return {name: type(m) for name, m in model.named_modules()}


def _loss_and_grads(model: nn.Module, batch: dict) -> tuple[torch.Tensor, dict]:
    model.zero_grad(set_to_none=True)
    out = model(**batch)
    out.loss.backward()
    return out, {n: p.grad.clone() for n, p in model.named_parameters()}


def _assert_grads_close(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=1e-5, atol=1e-6, msg=name)


class Saved:
    """The tensors saved for backward while a block runs: their shapes and unique bytes."""

    def __enter__(self) -> Saved:
        self.shapes, self.storages = [], {}

        def keep(t: torch.Tensor) -> torch.Tensor:
            s = t.untyped_storage()
            self.shapes.append(tuple(t.shape))
            self.storages[(s.data_ptr(), s.nbytes())] = s.nbytes()
            return t

        self.hooks = torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t)
        self.hooks.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.hooks.__exit__(*exc)

    @property
    def bytes(self) -> int:
        return sum(self.storages.values())


# ------------------------------------------------------------------ the families, patched
@pytest.mark.parametrize("family", sorted(S.FAMILIES))
def test_patched_family_gives_the_same_loss_logits_and_every_gradient(family):
    model, batch = S.tiny(S.FAMILIES[family]), S.batch()
    ref_out, ref_grads = _loss_and_grads(model, batch)
    done = patch(model)
    out, grads = _loss_and_grads(model, batch)
    kinds = {op for _, _, op in done.patched}
    assert any(op.startswith("rms_norm") for op in kinds)
    assert kinds & {"swiglu", "geglu(tanh)"}
    torch.testing.assert_close(out.loss, ref_out.loss, rtol=1e-6, atol=0)
    torch.testing.assert_close(out.logits, ref_out.logits, rtol=1e-5, atol=1e-6)
    _assert_grads_close(grads, ref_grads)


@pytest.mark.parametrize("family", ["Llama", "Gemma"])
def test_five_adamw_steps_of_the_patched_model_with_fused_loss_follow_the_unpatched_ones(family):
    ref = S.tiny(S.FAMILIES[family])
    model = copy.deepcopy(ref)
    patch(model, fused_loss=True)
    batch = S.batch()
    opts = [torch.optim.AdamW(m.parameters(), lr=1e-3) for m in (ref, model)]
    for _ in range(5):
        for m, opt in zip((ref, model), opts):
            opt.zero_grad()
            m(**batch).loss.backward()
            opt.step()
    for (name, a), b in zip(ref.named_parameters(), model.parameters()):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5, msg=name)


def test_gemma_norm_scales_by_one_plus_weight_in_float32_and_casts_at_the_end():
    norm = S.GemmaRMSNorm(16, eps=1e-6)
    with torch.no_grad():
        norm.weight.uniform_(-1, 1)
    ref = copy.deepcopy(norm)
    patch(norm)
    for dtype in (torch.float32, torch.bfloat16, torch.float64):
        x = torch.randn(3, 16, dtype=dtype, generator=torch.Generator().manual_seed(0))
        got, want = norm(x), ref(x)
        assert got.dtype == want.dtype == dtype
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    assert norm(x).grad_fn is not None and ref(x).grad_fn is not None


def test_llama_norm_keeps_its_order_of_casts_in_half_precision():
    norm = S.LlamaRMSNorm(16).to(torch.bfloat16)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
    ref = copy.deepcopy(norm)
    patch(norm)
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(0)).bfloat16().requires_grad_()
    assert torch.equal(norm(x), ref(x))
    steps = {type(f).__name__ for f, _ in norm(x).grad_fn.next_functions if f is not None}
    assert "RMSNormBackward" in steps


def test_gemma_mlp_is_a_gated_tanh_gelu():
    mlp = S.GemmaMLP(S.Config(hidden_act="gelu_pytorch_tanh"))
    ref = copy.deepcopy(mlp)
    done = patch(mlp)
    assert ("", "GemmaMLP", "geglu(tanh)") in done.patched
    x = torch.randn(2, 5, 32, requires_grad=True)
    torch.testing.assert_close(mlp(x), ref(x), rtol=1e-5, atol=1e-6)
    g = torch.autograd.grad(mlp(x).sum(), [x, mlp.gate_proj.weight])
    g_ref = torch.autograd.grad(ref(x).sum(), [x, ref.gate_proj.weight])
    for a, b in zip(g, g_ref):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_the_act_fn_of_a_patched_mlp_is_left_as_it_is():
    # (the patched MLP calls swiglu itself: its act_fn module is no longer called)
    model = S.tiny(S.LlamaForCausalLM)
    act = type(model.model.layers[0].mlp.act_fn)
    done = patch(model)
    assert type(model.model.layers[0].mlp.act_fn) is act
    assert not any(name.endswith("act_fn") for name, *_ in done.patched)
    assert ("model.layers.0.mlp", "LlamaMLP", "swiglu") in done.patched


def test_an_mlp_whose_activation_the_pack_does_not_cover_is_left_alone():
    model = S.tiny(S.LlamaForCausalLM, hidden_act="gelu_new")
    done = patch(model)
    assert type(model.model.layers[0].mlp) is S.LlamaMLP
    assert ("model.layers.0.mlp", "LlamaMLP",
            "its act_fn (NewGELUActivation) is not in the pack") in done.skipped


# ------------------------------------------------------------------ torch's own modules
_ACTIVATIONS = [nn.SiLU(), nn.SiLU(inplace=True), nn.GELU(), nn.GELU(approximate="tanh"),
                nn.Mish(), nn.Mish(inplace=True), nn.Hardswish(), nn.Hardswish(inplace=True),
                nn.Hardsigmoid(), nn.Hardsigmoid(inplace=True)]


@pytest.mark.parametrize("module", _ACTIVATIONS, ids=repr)
def test_torch_activation_modules_are_swapped_and_equal(module):
    ref = copy.deepcopy(module)
    done = patch(module)
    assert len(done) == 1, done.skipped
    leaf = torch.linspace(-5, 5, 41, dtype=torch.float64, requires_grad=True)
    outs = []
    for m in (module, ref):
        x = leaf * 1  # (not a leaf: an inplace form may write into it)
        y = m(x)
        assert (y is x) == getattr(m, "inplace", False)
        outs.append((y, torch.autograd.grad(y.sum(), leaf)[0]))
    (y, g), (y_ref, g_ref) = outs
    assert type(y.grad_fn).__name__ != type(y_ref.grad_fn).__name__  # (the pack's node)
    torch.testing.assert_close(y, y_ref)
    torch.testing.assert_close(g, g_ref)


@pytest.mark.parametrize("make", [lambda: nn.RMSNorm(8), lambda: nn.RMSNorm(8, eps=1e-3),
                                  lambda: nn.RMSNorm(8, elementwise_affine=False)],
                         ids=["default", "eps", "no-weight"])
def test_torch_rms_norm_module_is_swapped_and_equal(make):
    norm = make().double()
    if norm.weight is not None:
        with torch.no_grad():
            norm.weight.uniform_(0.5, 1.5)
    ref = copy.deepcopy(norm)
    assert len(patch(norm)) == 1
    x = torch.randn(3, 8, dtype=torch.float64, requires_grad=True)
    y, y_ref = norm(x), ref(x)
    torch.testing.assert_close(y, y_ref)
    torch.testing.assert_close(torch.autograd.grad(y.sum(), x)[0],
                               torch.autograd.grad(y_ref.sum(), x)[0])


@pytest.mark.parametrize("kwargs", [{}, {"reduction": "sum"}, {"ignore_index": 2},
                                    {"label_smoothing": 0.1}, {"reduction": "none"}],
                         ids=repr)
def test_torch_cross_entropy_module_is_swapped_and_equal(kwargs):
    loss = nn.CrossEntropyLoss(**kwargs)
    ref = copy.deepcopy(loss)
    assert len(patch(loss)) == 1
    x = torch.randn(6, 5, dtype=torch.float64, requires_grad=True)
    t = torch.tensor([0, 2, 4, 1, 2, 3])
    y, y_ref = loss(x, t), ref(x, t)
    assert type(y.grad_fn).__name__ == "CrossEntropyLSEBackward"
    torch.testing.assert_close(y, y_ref)
    torch.testing.assert_close(torch.autograd.grad(y.sum(), x)[0],
                               torch.autograd.grad(y_ref.sum(), x)[0])


def test_cross_entropy_with_class_probabilities_runs_the_modules_own_forward():
    loss = nn.CrossEntropyLoss()
    patch(loss)
    x, p = torch.randn(4, 3), torch.softmax(torch.randn(4, 3), -1)
    torch.testing.assert_close(loss(x, p), F.cross_entropy(x, p))


# -------------------------------------------------------------- undo, scope, bookkeeping
def test_undo_gives_back_the_classes_and_bitwise_the_same_outputs():
    model, batch = S.tiny(), S.batch()
    classes, want = _classes(model), model(**batch)
    done = patch(model, fused_loss=True)
    assert _classes(model) != classes
    done.undo()
    assert _classes(model) == classes
    assert all("forward" not in vars(m) for m in model.modules())
    got = model(**batch)
    assert torch.equal(got.loss, want.loss) and torch.equal(got.logits, want.logits)
    done.undo()  # (a second undo has nothing left to do)
    assert _classes(model) == classes


def test_as_a_context_manager_the_patch_is_undone_on_exit_even_on_error():
    model = S.tiny()
    classes = _classes(model)
    with patch(model) as done:
        assert isinstance(done, Patch) and len(done) > 0
        assert type(model.model.norm) is not S.LlamaRMSNorm
    assert _classes(model) == classes
    with pytest.raises(KeyError), patch(model):
        raise KeyError("inside")
    assert _classes(model) == classes


def test_only_that_models_instances_change():
    functions = (F.silu, F.gelu, F.rms_norm, F.cross_entropy, F.linear)
    methods = (nn.SiLU.forward, nn.RMSNorm.forward, nn.CrossEntropyLoss.forward,
               S.LlamaRMSNorm.forward, S.LlamaMLP.forward, S.LlamaForCausalLM.forward)
    model, other = S.tiny(), S.tiny()
    act, other_act = nn.SiLU(), nn.SiLU()
    patch(model, fused_loss=True)
    patch(act)
    assert _classes(other) == _classes(S.tiny())
    assert type(other_act) is nn.SiLU
    assert (F.silu, F.gelu, F.rms_norm, F.cross_entropy, F.linear) == functions
    assert (nn.SiLU.forward, nn.RMSNorm.forward, nn.CrossEntropyLoss.forward,
            S.LlamaRMSNorm.forward, S.LlamaMLP.forward, S.LlamaForCausalLM.forward) == methods


def test_a_patched_module_keeps_parameters_hooks_state_dict_isinstance_and_repr():
    model = S.tiny()
    keys, text = list(model.state_dict()), repr(model)
    params = {n: p for n, p in model.named_parameters()}
    seen = []
    model.model.norm.register_forward_hook(lambda m, i, o: seen.append(o.shape))
    patch(model)
    assert isinstance(model.model.norm, S.LlamaRMSNorm)
    assert list(model.state_dict()) == keys and repr(model) == text
    assert all(p is params[n] for n, p in model.named_parameters())
    model(**S.batch())
    assert seen == [torch.Size([3, 10, 32])]


def test_a_patched_model_pickles_and_copies_as_the_unpatched_model():
    model = S.tiny()
    classes = _classes(model)
    with patch(model, fused_loss=True):
        for twin in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
            assert _classes(twin) == classes
            torch.testing.assert_close(twin(**S.batch()).loss, model(**S.batch()).loss)


def test_patching_twice_leaves_the_patched_instances_alone():
    model = S.tiny()
    first = patch(model)
    second = patch(model)
    assert len(second) == 0 and len(second.skipped) == len(first)
    assert {why for *_, why in second.skipped} == {"already patched"}


def test_patch_refuses_what_is_not_a_module():
    with pytest.raises(TypeError, match="patch\\(\\): argument 'model' must be an nn.Module"):
        patch(lambda x: x)


def test_switches_choose_what_is_patched():
    model = S.tiny()
    done = patch(model, rms_norm=False, activations=False)
    assert {op for *_, op in done.patched} == {"swiglu"}
    assert type(model.model.norm) is S.LlamaRMSNorm


# ------------------------------------------------------------------------ the fused loss
def test_fused_loss_keeps_no_logits_and_gives_the_same_loss_and_gradients():
    model, batch = S.tiny(vocab_size=512), S.batch(vocab_size=512)
    ref = copy.deepcopy(model)
    with Saved() as ref_saved:
        ref_out = ref(**batch)
    ref_out.loss.backward()
    patch(model, fused_loss=True)
    with Saved() as saved:
        out = model(**batch)
    out.loss.backward()
    logits_bytes = ref_out.logits.numel() * 4
    assert out.logits is None and out.loss.dtype == torch.float32
    assert not any(512 in shape[-1:] and len(shape) > 1 and shape[0] != 512
                   for shape in saved.shapes), saved.shapes
    assert saved.bytes <= ref_saved.bytes - logits_bytes
    torch.testing.assert_close(out.loss, ref_out.loss, rtol=1e-6, atol=0)
    _assert_grads_close({n: p.grad for n, p in model.named_parameters()},
                        {n: p.grad for n, p in ref.named_parameters()})


def test_fused_loss_in_eval_or_without_labels_returns_the_logits_as_before():
    model, batch = S.tiny(), S.batch()
    want = model(**batch)
    patch(model, rms_norm=False, mlp=False, activations=False, fused_loss=True)
    assert torch.equal(model(input_ids=batch["input_ids"]).logits, want.logits)
    model.eval()
    got = model(**batch)
    assert torch.equal(got.logits, want.logits) and torch.equal(got.loss, want.loss)


@pytest.mark.parametrize("extra", [{"num_items_in_batch": torch.tensor(17)},
                                   {"num_items_in_batch": 17}, {"ignore_index": 5},
                                   {"shift_labels": "given"}], ids=repr)
def test_fused_loss_follows_the_loss_arguments(extra):
    model, batch = S.tiny(), S.batch()
    if "ignore_index" in extra:
        batch["labels"][batch["labels"] == -100] = extra["ignore_index"]
    if extra.get("shift_labels") == "given":
        extra = {"shift_labels": torch.roll(batch["labels"], 2, dims=1)}
    ref = copy.deepcopy(model)
    patch(model, fused_loss=True)
    got, want = model(**batch, **extra).loss, ref(**batch, **extra).loss
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-7)


def test_fused_loss_with_return_dict_false_returns_the_loss_first():
    model, batch = S.tiny(), S.batch()
    want = model(**batch).loss
    patch(model, fused_loss=True)
    got = model(**batch, return_dict=False)
    assert isinstance(got, tuple) and len(got) == 1
    torch.testing.assert_close(got[0], want, rtol=1e-6, atol=0)


def test_fused_loss_refuses_soft_capped_logits_and_changes_nothing():
    model = S.tiny(S.Gemma2ForCausalLM, final_logit_softcapping=30.0)
    classes = _classes(model)
    with pytest.raises(ValueError, match="final_logit_softcapping=30.0"):
        patch(model, fused_loss=True)
    assert _classes(model) == classes
    assert len(patch(model)) > 0  # (the rest of it is covered)


def test_fused_loss_on_a_model_without_a_causal_lm_raises():
    with pytest.raises(ValueError, match="holds no causal LM"):
        patch(nn.Sequential(nn.Linear(2, 2), nn.SiLU()), fused_loss=True)


# ------------------------------------------------------------------------------- check=
def test_check_reports_agreement_and_leaves_grad_and_rng_as_they_were():
    model, batch = S.tiny(), S.batch()
    marks = {n: torch.full_like(p, 7.0) for n, p in model.named_parameters()}
    for n, p in model.named_parameters():
        p.grad = marks[n]
    state = torch.get_rng_state()
    done = patch(model, fused_loss=True, check=batch)
    report = done.report
    assert report.ok and report.worst_parameter in marks
    assert report.loss_rel_diff <= 1e-6 and report.grad_max_rel_diff <= 1e-5
    assert report.loss_before == pytest.approx(report.loss_after, rel=1e-6)
    assert all(p.grad is marks[n] for n, p in model.named_parameters())
    assert torch.equal(torch.get_rng_state(), state)
    assert len(done) > 0 and "tolerance" in str(report)


def test_check_takes_a_tuple_batch_and_replays_dropout():
    model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.SiLU(), nn.Linear(8, 1))
    wrapped = _LossOf(model)
    done = patch(wrapped, check=(torch.randn(16, 8),))
    assert done.report.ok and wrapped.calls == 2
    assert [op for *_, op in done.patched] == ["silu"]


class _LossOf(nn.Module):
    """A model that returns its own scalar loss."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner, self.calls = inner, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.inner(x).square().mean()


def test_check_flags_a_broken_patch_names_the_worst_parameter_and_undoes_it(monkeypatch):
    model, batch = S.tiny(), S.batch()
    classes = _classes(model)
    right = ext.functions.swiglu
    monkeypatch.setattr(ext.functions, "swiglu", lambda a, b: right(a, b) * 1.01)
    with pytest.raises(PatchCheckError, match="disagrees") as caught:
        patch(model, check=batch)
    report = caught.value.report
    assert not report.ok and report.grad_max_rel_diff > 1e-3
    assert report.worst_parameter in dict(model.named_parameters())
    assert _classes(model) == classes


def test_check_needs_a_batch_that_gives_a_loss():
    model, batch = S.tiny(), S.batch()
    with pytest.raises(ValueError, match="no scalar loss"):
        patch(model, check={"input_ids": batch["input_ids"]})
    assert type(model.model.norm) is S.LlamaRMSNorm


# ------------------------------------------------------------------ transformers, if there
def test_a_tiny_transformers_llama_patched_in_one_call_trains_as_the_unpatched_one():
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=48,
                                      num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2)
    torch.manual_seed(0)
    ref = transformers.LlamaForCausalLM(config).train()
    model = copy.deepcopy(ref)
    ids = torch.randint(0, 128, (2, 12), generator=torch.Generator().manual_seed(3))
    batch = {"input_ids": ids, "labels": ids}
    classes = _classes(model)
    done = patch(model, fused_loss=True, check=batch)
    assert done.report.ok, done.report
    assert {op for *_, op in done.patched} >= {"rms_norm", "swiglu",
                                               "fused_linear_cross_entropy"}
    assert model(**batch).logits is None
    opts = [torch.optim.AdamW(m.parameters(), lr=1e-3) for m in (ref, model)]
    for _ in range(5):
        for m, opt in zip((ref, model), opts):
            opt.zero_grad()
            m(**batch).loss.backward()
            opt.step()
    for (name, a), b in zip(ref.named_parameters(), model.parameters()):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5, msg=name)
    done.undo()
    assert _classes(model) == classes


def test_a_tiny_transformers_gemma_gets_its_own_norm_and_gated_gelu():
    transformers = pytest.importorskip("transformers")
    config = transformers.GemmaConfig(vocab_size=128, hidden_size=32, intermediate_size=48,
                                      num_hidden_layers=1, num_attention_heads=4,
                                      num_key_value_heads=2, head_dim=8)
    torch.manual_seed(0)
    model = transformers.GemmaForCausalLM(config).train()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.uniform_(-0.5, 0.5)
    ids = torch.randint(0, 128, (2, 12), generator=torch.Generator().manual_seed(3))
    done = patch(model, fused_loss=True, check={"input_ids": ids, "labels": ids})
    assert done.report.ok, done.report
    assert {op for *_, op in done.patched} >= {"rms_norm(1 + weight)", "geglu(tanh)"}


def test_the_module_is_reachable_as_ext_compat_patch():
    import ext.compat

    assert ext.compat.patch is patch
    assert sys.modules["ext.compat.patch"].Patch is Patch
