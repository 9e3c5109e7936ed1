"""``ext.compat.patch``: the drop-in pack put into an already built torch model, in one call.

``patch(model)`` finds the module instances the pack covers and gives each a forward that runs
the pack's op: torch's own activations, ``nn.RMSNorm`` and ``nn.CrossEntropyLoss``; the RMSNorm
and gated-MLP modules of the Llama, Mistral, Qwen2, Qwen3 and Gemma families, recognised by
their class names (transformers is never imported); and, with ``fused_loss=True``, the
causal-LM loss computed by ``fused_linear_cross_entropy`` from the last hidden states, so that
no logits are kept in training.

Only the instances found change: each one's ``__class__`` becomes a subclass of its own class,
made for the patch, whose ``forward`` calls the pack. Parameters, buffers, hooks, state_dict
keys, ``isinstance`` and ``repr`` stay as they were; other instances of the same class, the
classes themselves and torch's functions are untouched. The ``Patch`` returned undoes it
(``undo()``, or on leaving ``with patch(model): ...``). A patched module pickles and deep-copies
as its unpatched self: the patch is a state of the instance, held by its ``Patch``.

Each patched forward computes what the module's own forward does, op for op in the same dtypes
(the Llama family's norm: float32 statistics, cast back, then times weight; Gemma's: times
1 + weight in float32, cast at the end); a call the pack does not cover (a dtype or an argument
it does not take) runs the module's own forward.

``ext.compat.patch`` is the function (this module's own name is taken by it there); the module
itself is ``sys.modules["ext.compat.patch"]``, and ``from ext.compat.patch import Patch`` works.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .. import functions as _pack

__all__ = ["patch", "Patch", "CheckReport", "PatchCheckError"]

_LLAMA_NORMS = frozenset({"LlamaRMSNorm", "MistralRMSNorm", "Qwen2RMSNorm", "Qwen3RMSNorm"})
_GEMMA_NORMS = frozenset({"GemmaRMSNorm", "Gemma2RMSNorm", "Gemma3RMSNorm"})
_GATED_MLPS = frozenset({"LlamaMLP", "MistralMLP", "Qwen2MLP", "Qwen3MLP", "GemmaMLP",
                         "Gemma2MLP", "Gemma3MLP"})
_CAUSAL_LMS = frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM",
                         "Qwen3ForCausalLM", "GemmaForCausalLM", "Gemma2ForCausalLM",
                         "Gemma3ForCausalLM"})
# transformers' activation modules, by name: what each computes in F.gelu's terms
_SILU_NAMES = frozenset({"SiLUActivation"})
_GELU_NAMES = {"GELUTanh": "tanh", "PytorchGELUTanh": "tanh", "GELUActivation": "none"}


# --------------------------------------------------------------------- the patched forwards
def _rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    """The pack's rms_norm over x's last dimension."""
    return _pack.rms_norm(x, (x.shape[-1],), weight, eps)


def _activation_forward(op: str) -> Callable:
    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return getattr(_pack, op)(input, inplace=self.inplace)

    forward.__doc__ = f"``{op}`` from the drop-in pack (into the input when ``inplace``)."
    return forward


def _silu_forward(self, input: torch.Tensor) -> torch.Tensor:
    """silu from the drop-in pack (into the input when the module is ``inplace``)."""
    return _pack.silu(input, inplace=getattr(self, "inplace", False))


def _gelu_forward(self, input: torch.Tensor) -> torch.Tensor:
    """gelu from the drop-in pack, in the module's own approximation."""
    return _pack.gelu(input, approximate=self._ext_approximate)


def _torch_rms_norm_forward(self, input: torch.Tensor) -> torch.Tensor:
    """nn.RMSNorm's F.rms_norm, from the drop-in pack."""
    return _pack.rms_norm(input, self.normalized_shape, self.weight, self.eps)


def _llama_norm_forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
    """The Llama family's RMSNorm from the pack: statistics in float32, the normalized rows
    rounded to the input's dtype, then times weight."""
    x, weight, eps = hidden_states, self.weight, self.variance_epsilon
    if x.dtype == weight.dtype == torch.float32:
        return _rms_norm(x, weight, eps)
    if x.dtype in (torch.float16, torch.bfloat16):
        # (the family rounds before the weight; the pack with a weight rounds once, after it)
        return weight * _rms_norm(x, None, eps)
    # (float64: the family normalizes in float32, which the pack does not)
    return self._ext_original.forward(self, hidden_states)


def _gemma_norm_forward(self, x: torch.Tensor) -> torch.Tensor:
    """Gemma's RMSNorm from the pack: all in float32, times (1 + weight), cast at the end."""
    return _rms_norm(x.float(), 1.0 + self.weight.float(), self.eps).type_as(x)


def _gated_mlp_forward(self, x: torch.Tensor) -> torch.Tensor:
    """down_proj(act(gate_proj(x)) * up_proj(x)) with the gated unit from the pack."""
    gate, up = self.gate_proj(x), self.up_proj(x)
    if self._ext_approximate is None:
        return self.down_proj(_pack.swiglu(gate, up))
    return self.down_proj(_pack.geglu(gate, up, approximate=self._ext_approximate))


def _cross_entropy_forward(self, input: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """nn.CrossEntropyLoss from the pack's cross_entropy_lse."""
    return _pack.cross_entropy_lse(input, target, self.weight, ignore_index=self.ignore_index,
                                   reduction=self.reduction,
                                   label_smoothing=self.label_smoothing)


def _causal_lm_forward(self, *args: Any, **kwargs: Any) -> Any:
    """The model's own forward; in training with labels, the loss from the pack's
    fused_linear_cross_entropy on the last hidden states and no logits in the output."""
    original = self._ext_original.forward
    bound = self._ext_signature.bind(self, *args, **kwargs)
    labels = bound.arguments.get("labels")
    if labels is None or not self.training:
        return original(self, *args, **kwargs)
    bound.arguments["labels"] = None
    hidden, out = _run_keeping_hidden(self, original, bound)
    extra = bound.arguments.get(self._ext_var_keyword, {}) if self._ext_var_keyword else {}
    return _with_loss(out, _causal_lm_loss(self.lm_head, hidden, labels, extra))


def _run_keeping_hidden(model: nn.Module, original: Callable,
                        bound: inspect.BoundArguments) -> tuple[torch.Tensor, Any]:
    """Run ``original`` with lm_head answering an empty tensor: the hidden states it was
    given, and the model's output (which then holds no logits)."""
    head, seen = model.lm_head, []

    def keep_hidden(hidden: torch.Tensor) -> torch.Tensor:
        seen.append(hidden)
        return hidden[..., :0]

    head.forward = keep_hidden  # (this call only: removed below)
    try:
        out = original(*bound.args, **bound.kwargs)
    finally:
        del head.forward
    if len(seen) != 1:
        raise RuntimeError(f"patch(fused_loss=True): {type(model).__name__}.forward called "
                           f"lm_head {len(seen)} times; the fused loss needs exactly one call")
    return seen[0], out


def _causal_lm_loss(head: nn.Linear, hidden: torch.Tensor, labels: torch.Tensor,
                    extra: Mapping) -> torch.Tensor:
    """The causal-LM loss as the family computes it: labels shifted left by one (the last
    position ignored), mean over the positions not ignored, or the sum over
    ``num_items_in_batch``; a float32 loss."""
    ignore_index = extra.get("ignore_index", -100)
    target = extra.get("shift_labels")
    if target is None:
        target = F.pad(labels, (0, 1), value=ignore_index)[..., 1:]
    count = extra.get("num_items_in_batch")
    loss = _pack.fused_linear_cross_entropy(
        hidden.reshape(-1, hidden.shape[-1]), head.weight,
        target.reshape(-1).to(hidden.device), head.bias, ignore_index=ignore_index,
        reduction="mean" if count is None else "sum").float()
    if count is None:
        return loss
    return loss / (count.to(loss.device) if torch.is_tensor(count) else count)


def _with_loss(out: Any, loss: torch.Tensor) -> Any:
    """The model's output with ``loss`` set and no logits."""
    if dataclasses.is_dataclass(out):
        return dataclasses.replace(out, loss=loss, logits=None)
    if isinstance(out, tuple):  # (return_dict=False: the logits first, as no loss was asked)
        return (loss, *out[1:])
    raise TypeError(f"patch(fused_loss=True): cannot set the loss of a {type(out).__name__} "
                    "output (a dataclass or a tuple is expected)")


# ------------------------------------------------------------------------ what is matched
@dataclasses.dataclass(frozen=True)
class _Rule:
    """Which modules a patch() switch covers, the forward they get, and what is patched
    (``what(module)``: a short description, or why the module is left alone)."""

    switch: str
    matches: Callable[[nn.Module], bool]
    forward: Callable
    what: Callable[[nn.Module], tuple[str | None, dict]]


def _named(names: frozenset | dict, *types: type) -> Callable[[nn.Module], bool]:
    return lambda m: type(m) in types or type(m).__name__ in names


def _simple(op: str) -> Callable[[nn.Module], tuple[str | None, dict]]:
    return lambda m: (op, {})


def _norm_what(op: str, eps: str) -> Callable[[nn.Module], tuple[str | None, dict]]:
    def what(m: nn.Module) -> tuple[str | None, dict]:
        if not isinstance(getattr(m, "weight", None), torch.Tensor) or not hasattr(m, eps):
            return None, {"why": f"no weight or {eps} attribute"}
        return op, {}
    return what


def _approximate_of(act: nn.Module) -> str | None:
    """F.gelu's approximate for a gelu module, None when it is not one."""
    if type(act) is nn.GELU:
        return act.approximate
    return _GELU_NAMES.get(type(act).__name__)


def _gelu_what(m: nn.Module) -> tuple[str | None, dict]:
    approximate = _approximate_of(m)
    return f"gelu({approximate})", {"_ext_approximate": approximate}


def _mlp_what(m: nn.Module) -> tuple[str | None, dict]:
    act = getattr(m, "act_fn", None)
    if not all(isinstance(getattr(m, p, None), nn.Module)
               for p in ("gate_proj", "up_proj", "down_proj")):
        return None, {"why": "no gate_proj, up_proj and down_proj"}
    if type(act) is nn.SiLU or type(act).__name__ in _SILU_NAMES:
        return "swiglu", {"_ext_approximate": None}
    approximate = _approximate_of(act) if act is not None else None
    if approximate is None:
        return None, {"why": f"its act_fn ({type(act).__name__}) is not in the pack"}
    return f"geglu({approximate})", {"_ext_approximate": approximate}


def _causal_lm_what(m: nn.Module) -> tuple[str | None, dict]:
    """The fused loss's terms; a model it cannot match exactly is refused (ValueError)."""
    name = type(m).__name__
    head = getattr(m, "lm_head", None)
    if type(head) is not nn.Linear:
        raise ValueError(f"patch(fused_loss=True): {name}.lm_head is "
                         f"{type(head).__name__}, not an nn.Linear")
    cap = getattr(getattr(m, "config", None), "final_logit_softcapping", None)
    if cap is not None:
        raise ValueError(f"patch(fused_loss=True): {name} soft-caps its logits "
                         f"(config.final_logit_softcapping={cap}), which the fused loss does "
                         "not compute; patch it with fused_loss=False")
    signature = inspect.signature(type(m).forward)
    if "labels" not in signature.parameters:
        raise ValueError(f"patch(fused_loss=True): {name}.forward takes no 'labels'")
    var_keyword = next((p.name for p in signature.parameters.values()
                        if p.kind is inspect.Parameter.VAR_KEYWORD), None)
    return "fused_linear_cross_entropy", {"_ext_signature": signature,
                                          "_ext_var_keyword": var_keyword}


_RULES = (
    _Rule("rms_norm", _named(_LLAMA_NORMS), _llama_norm_forward,
          _norm_what("rms_norm", "variance_epsilon")),
    _Rule("rms_norm", _named(_GEMMA_NORMS), _gemma_norm_forward,
          _norm_what("rms_norm(1 + weight)", "eps")),
    _Rule("rms_norm", _named(frozenset(), nn.RMSNorm), _torch_rms_norm_forward,
          _simple("rms_norm")),
    _Rule("mlp", _named(_GATED_MLPS), _gated_mlp_forward, _mlp_what),
    _Rule("activations", _named(_SILU_NAMES, nn.SiLU), _silu_forward, _simple("silu")),
    _Rule("activations", _named(_GELU_NAMES, nn.GELU), _gelu_forward, _gelu_what),
    *(_Rule("activations", _named(frozenset(), cls), _activation_forward(op), _simple(op))
      for cls, op in ((nn.Mish, "mish"), (nn.Hardswish, "hardswish"),
                      (nn.Hardsigmoid, "hardsigmoid"))),
    _Rule("losses", _named(frozenset(), nn.CrossEntropyLoss), _cross_entropy_forward,
          _simple("cross_entropy_lse")),
    _Rule("fused_loss", _named(_CAUSAL_LMS), _causal_lm_forward, _causal_lm_what),
)

_MADE: dict[tuple, type] = {}


def _reduce_ex(self, protocol: int) -> Any:
    # pickled and deep-copied as the unpatched module: the patch belongs to this instance
    return (_unpatched, (self._ext_original,), *object.__reduce_ex__(self, protocol)[2:])


def _unpatched(cls: type) -> Any:
    """A bare instance of ``cls``, which its pickled state then fills."""
    return cls.__new__(cls)


def _patched_class(cls: type, rule: _Rule, attrs: dict) -> type:
    """The subclass of ``cls`` that patched instances of it get (made once per variant)."""
    key = (cls, rule.forward, *sorted((k, repr(v)) for k, v in attrs.items()))
    made = _MADE.get(key)
    if made is None:
        made = _MADE[key] = type(cls.__name__, (cls,), {
            "__module__": cls.__module__, "__qualname__": cls.__qualname__,
            "__doc__": cls.__doc__, "forward": rule.forward, "__reduce_ex__": _reduce_ex,
            "_ext_original": cls, **attrs})
    return made


# ------------------------------------------------------------------------------ the Patch
class Patch:
    """What ``patch()`` changed in one model, and the means to undo it.

    ``patched`` lists ``(module name, class name, pack op)``; ``skipped`` lists
    ``(module name, class name, reason)`` for matched modules left alone; ``report`` is the
    ``CheckReport`` of ``check=`` (None without it). ``undo()``, or leaving a ``with`` block,
    gives every patched instance its own class back.
    """

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.patched: list[tuple[str, str, str]] = []
        self.skipped: list[tuple[str, str, str]] = []
        self.report: CheckReport | None = None
        self._swapped: list[tuple[nn.Module, type, type]] = []

    def undo(self) -> None:
        """Give each patched instance its own class back (again: nothing to do)."""
        for module, made, original in reversed(self._swapped):
            if type(module) is made:
                module.__class__ = original
        self._swapped.clear()

    def __enter__(self) -> Patch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undo()

    def __len__(self) -> int:
        return len(self._swapped)

    def __repr__(self) -> str:
        state = "undone" if not self._swapped and self.patched else f"{len(self)} patched"
        return f"Patch({type(self.model).__name__}: {state}, {len(self.skipped)} skipped)"


def patch(model: nn.Module, *, rms_norm: bool = True, mlp: bool = True,
          activations: bool = True, losses: bool = True, fused_loss: bool = False,
          check: Any = None, tolerance: float | None = None) -> Patch:
    """Put the drop-in pack into ``model``'s modules, instance by instance; returns a ``Patch``.

    Args:
        model: a built torch model; its submodules are matched by class.
        rms_norm: the Llama/Mistral/Qwen2/Qwen3 and Gemma RMSNorm modules, and nn.RMSNorm.
        mlp: the families' gated MLPs (silu: swiglu; Gemma's tanh gelu: geglu); an MLP whose
            act_fn the pack does not cover is left alone (listed in ``skipped``).
        activations: nn.SiLU, nn.GELU, nn.Mish, nn.Hardswish, nn.Hardsigmoid (inplace kept),
            and transformers' SiLU and GELU activation modules.
        losses: nn.CrossEntropyLoss (class-index targets; others run the module's own forward).
        fused_loss: the families' ``*ForCausalLM`` compute the loss in training with labels by
            ``fused_linear_cross_entropy`` from the last hidden states and lm_head, and return
            no logits then (logits as before otherwise); a model whose loss it cannot match
            exactly (soft-capped logits, no nn.Linear lm_head) raises ValueError.
        check: a batch (a dict of keyword arguments, a tuple of positional ones, or one
            argument) for which ``model`` returns a scalar loss: the model runs once before and
            once after patching from the same RNG state; loss and gradients are compared
            (``Patch.report``), the parameters' ``.grad`` are left as they were, and a
            disagreement undoes the patch and raises ``PatchCheckError``.
        tolerance: the largest relative difference ``check`` accepts (default: 1e-4 for a
            float32 or float64 model, 2e-2 with half-precision parameters).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"patch(): argument 'model' must be an nn.Module, not "
                        f"{type(model).__name__}")
    switches = {"rms_norm": rms_norm, "mlp": mlp, "activations": activations,
                "losses": losses, "fused_loss": fused_loss}
    plan, result = _plan(model, switches, fused_loss)
    if check is None:
        return _apply(plan, result)
    return _checked(model, plan, result, check, tolerance)


def _plan(model: nn.Module, switches: dict, fused_loss: bool) -> tuple[list, Patch]:
    """The swaps to make (nothing changed yet), and the Patch that will record them."""
    result, plan = Patch(model), []
    fused_mlps: list[str] = []  # (a patched MLP no longer calls its act_fn: left as it is)
    for name, module in model.named_modules():
        if any(name.startswith(prefix) for prefix in fused_mlps):
            continue
        cls = type(module)
        rule = next((r for r in _RULES if switches[r.switch] and r.matches(module)), None)
        if rule is None:
            continue
        if hasattr(cls, "_ext_original"):
            result.skipped.append((name, cls.__name__, "already patched"))
            if rule.switch == "mlp":
                fused_mlps.append(name + ".")
            continue
        op, attrs = rule.what(module)
        if op is None:
            result.skipped.append((name, cls.__name__, attrs["why"]))
            continue
        plan.append((name, module, _patched_class(cls, rule, attrs), op))
        if rule.switch == "mlp":
            fused_mlps.append(name + ".")
    if fused_loss and not any(op == "fused_linear_cross_entropy" for *_, op in plan):
        raise ValueError(f"patch(fused_loss=True): {type(model).__name__} holds no causal LM of "
                         f"a covered family ({', '.join(sorted(_CAUSAL_LMS))})")
    return plan, result


def _apply(plan: list, result: Patch) -> Patch:
    for name, module, made, op in plan:
        original = type(module)
        module.__class__ = made
        result._swapped.append((module, made, original))
        result.patched.append((name, original.__name__, op))
    return result


# ------------------------------------------------------------------------------- check=
@dataclasses.dataclass
class CheckReport:
    """How the patched model agreed with the unpatched one on ``check``'s batch.

    Differences are relative: the loss's to its value, a gradient's to the largest entry of the
    unpatched gradient of that parameter. ``ok`` when both are within ``tolerance``.
    """

    loss_before: float
    loss_after: float
    loss_rel_diff: float
    grad_max_abs_diff: float
    grad_max_rel_diff: float
    worst_parameter: str | None
    tolerance: float
    ok: bool

    def __str__(self) -> str:
        return (f"loss {self.loss_before:.7g} unpatched, {self.loss_after:.7g} patched "
                f"(relative difference {self.loss_rel_diff:.2e}); gradients: largest "
                f"difference {self.grad_max_abs_diff:.2e} absolute, {self.grad_max_rel_diff:.2e}"
                f" relative (in {self.worst_parameter}); tolerance {self.tolerance:.0e}")


class PatchCheckError(AssertionError):
    """The patched model disagreed with the unpatched one on ``check``'s batch."""

    def __init__(self, report: CheckReport) -> None:
        super().__init__(f"patch(check=...): the patched model disagrees with the unpatched "
                         f"one beyond the tolerance (the patch is undone): {report}")
        self.report = report


def _checked(model: nn.Module, plan: list, result: Patch, batch: Any,
             tolerance: float | None) -> Patch:
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    grads = [p.grad for _, p in params]
    rng = _rng_state()
    try:
        before = _loss_and_grads(model, batch, params)
        _set_rng_state(rng)
        _apply(plan, result)
        try:
            after = _loss_and_grads(model, batch, params)
        except BaseException:
            result.undo()
            raise
    finally:
        _set_rng_state(rng)
        for (_, p), g in zip(params, grads):
            p.grad = g
    result.report = _compare(before, after, [n for n, _ in params],
                             tolerance if tolerance is not None else _tolerance(params))
    if not result.report.ok:
        result.undo()
        raise PatchCheckError(result.report)
    return result


def _tolerance(params: list) -> float:
    half = any(p.dtype in (torch.float16, torch.bfloat16) for _, p in params)
    return 2e-2 if half else 1e-4


def _rng_state() -> tuple:
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda


def _set_rng_state(state: tuple) -> None:
    torch.set_rng_state(state[0])
    if state[1] is not None:
        torch.cuda.set_rng_state_all(state[1])


def _loss_and_grads(model: nn.Module, batch: Any,
                    params: list) -> tuple[float, list[torch.Tensor | None]]:
    for _, p in params:
        p.grad = None
    if isinstance(batch, Mapping):
        out = model(**batch)
    elif isinstance(batch, (tuple, list)):
        out = model(*batch)
    else:
        out = model(batch)
    loss = _loss_of(out)
    loss.backward()
    return loss.item(), [None if p.grad is None else p.grad.detach().clone() for _, p in params]


def _loss_of(out: Any) -> torch.Tensor:
    loss = getattr(out, "loss", None)
    if loss is None and isinstance(out, Mapping):
        loss = out.get("loss")
    if loss is None and isinstance(out, (tuple, list)) and out:
        loss = out[0]
    if loss is None and torch.is_tensor(out):
        loss = out
    if not (torch.is_tensor(loss) and loss.dim() == 0 and loss.is_floating_point()):
        raise ValueError("patch(check=...): the model's output holds no scalar loss; give a "
                         "batch with labels (or a model that returns its loss)")
    return loss


def _compare(before: tuple, after: tuple, names: list[str], tolerance: float) -> CheckReport:
    (loss0, grads0), (loss1, grads1) = before, after
    loss_rel = abs(loss1 - loss0) / max(abs(loss0), 1e-30)
    if math.isnan(loss0) != math.isnan(loss1):
        loss_rel = math.inf
    worst, worst_rel, max_abs = None, 0.0, 0.0
    for name, g0, g1 in zip(names, grads0, grads1):
        if g0 is None and g1 is None:
            continue
        if g0 is None or g1 is None:
            diff, rel = math.inf, math.inf
        else:
            diff = (g1.double() - g0.double()).abs().max().item() if g0.numel() else 0.0
            scale = g0.double().abs().max().item() if g0.numel() else 0.0
            rel = diff / scale if scale > 0 else (0.0 if diff == 0 else math.inf)
        max_abs = max(max_abs, diff)
        if worst is None or rel > worst_rel or math.isnan(rel):
            worst, worst_rel = name, rel
    ok = loss_rel <= tolerance and worst_rel <= tolerance
    return CheckReport(loss0, loss1, loss_rel, max_abs, worst_rel, worst, tolerance, ok)
