"""Small torch models whose classes carry transformers' class names (LlamaRMSNorm, LlamaMLP,
LlamaForCausalLM, GemmaRMSNorm, ...), for testing ``ext.compat.patch`` without transformers.

The pieces the patch replaces compute what the real ones do, in the same dtypes: the Llama
family's RMSNorm (statistics in float32, cast back, then times weight), Gemma's (all in float32,
times 1 + weight, cast at the end), the gated MLP ``down_proj(act_fn(gate_proj(x)) *
up_proj(x))``, and the causal-LM loss (logits upcast to float32, labels shifted left by one with
ignore_index -100 at the end, mean over the positions kept, or sum / ``num_items_in_batch``).
Attention is plain causal self-attention (no rotary embedding, no cache): the patch does not
touch it.
"""

from __future__ import annotations

import dataclasses
import math

import torch
import torch.nn.functional as F
from torch import nn


@dataclasses.dataclass
class Config:
    """The configuration fields the stand-ins read (transformers' names)."""

    vocab_size: int = 96
    hidden_size: int = 32
    intermediate_size: int = 48
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    hidden_act: str = "silu"
    rms_norm_eps: float = 1e-6
    mlp_bias: bool = False
    final_logit_softcapping: float | None = None


@dataclasses.dataclass
class CausalLMOutputWithPast:
    """The causal LM's output: a dataclass whose None fields mean "not computed"."""

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    hidden_states: torch.Tensor | None = None


class SiLUActivation(nn.Module):
    """transformers' "silu" activation: F.silu."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return F.silu(input)


class GELUTanh(nn.Module):
    """transformers' "gelu_pytorch_tanh": F.gelu's tanh form."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return F.gelu(input, approximate="tanh")


class NewGELUActivation(nn.Module):
    """transformers' "gelu_new", written out (an activation the pack does not match)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        inner = math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))
        return 0.5 * input * (1.0 + torch.tanh(inner))


ACT2FN = {"silu": SiLUActivation, "gelu_pytorch_tanh": GELUTanh, "gelu_new": NewGELUActivation,
          "swish": nn.SiLU}


class _LlamaStyleRMSNorm(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        dtype = hidden_states.dtype
        h = hidden_states.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(dtype)


class _GemmaStyleRMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return (h * (1.0 + self.weight.float())).type_as(x)


class _GatedMLP(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        h, i, bias = config.hidden_size, config.intermediate_size, config.mlp_bias
        self.gate_proj = nn.Linear(h, i, bias=bias)
        self.up_proj = nn.Linear(h, i, bias=bias)
        self.down_proj = nn.Linear(i, h, bias=bias)
        self.act_fn = ACT2FN[config.hidden_act]()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class _Attention(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        h = config.hidden_size
        self.heads = config.num_attention_heads
        self.q_proj, self.k_proj = nn.Linear(h, h, bias=False), nn.Linear(h, h, bias=False)
        self.v_proj, self.o_proj = nn.Linear(h, h, bias=False), nn.Linear(h, h, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, h = x.shape

        def split(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, t, self.heads, h // self.heads).transpose(1, 2)

        y = F.scaled_dot_product_attention(split(self.q_proj(x)), split(self.k_proj(x)),
                                           split(self.v_proj(x)), is_causal=True)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, h))


class _DecoderLayer(nn.Module):
    norm_class: type
    mlp_class: type

    def __init__(self, config: Config) -> None:
        super().__init__()
        self.input_layernorm = self.norm_class(config.hidden_size, config.rms_norm_eps)
        self.self_attn = _Attention(config)
        self.post_attention_layernorm = self.norm_class(config.hidden_size, config.rms_norm_eps)
        self.mlp = self.mlp_class(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class _Model(nn.Module):
    norm_class: type
    layer_class: type
    scales_embeddings: bool  # (Gemma multiplies the embeddings by sqrt(hidden_size))

    def __init__(self, config: Config) -> None:
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(self.layer_class(config)
                                    for _ in range(config.num_hidden_layers))
        self.norm = self.norm_class(config.hidden_size, config.rms_norm_eps)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(input_ids)
        if self.scales_embeddings:
            x = x * torch.tensor(self.config.hidden_size ** 0.5, dtype=x.dtype)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


def causal_lm_loss(logits: torch.Tensor, labels: torch.Tensor, vocab_size: int,
                   num_items_in_batch: torch.Tensor | None = None, ignore_index: int = -100,
                   shift_labels: torch.Tensor | None = None, **kwargs: object) -> torch.Tensor:
    """The causal-LM loss of the families: float32 logits, labels shifted left by one."""
    logits = logits.float()
    if shift_labels is None:
        shift_labels = F.pad(labels, (0, 1), value=ignore_index)[..., 1:].contiguous()
    reduction = "mean" if num_items_in_batch is None else "sum"
    loss = F.cross_entropy(logits.view(-1, vocab_size), shift_labels.view(-1),
                           ignore_index=ignore_index, reduction=reduction)
    return loss if num_items_in_batch is None else loss / num_items_in_batch


class _ForCausalLM(nn.Module):
    model_class: type

    def __init__(self, config: Config) -> None:
        super().__init__()
        self.config = config
        self.model = self.model_class(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None,
                logits_to_keep: int = 0, return_dict: bool = True,
                **kwargs: object) -> CausalLMOutputWithPast | tuple:
        hidden = self.model(input_ids)
        logits = self.lm_head(hidden[:, -logits_to_keep:, :] if logits_to_keep else hidden)
        cap = self.config.final_logit_softcapping
        if cap is not None:
            logits = torch.tanh(logits / cap) * cap
        loss = None
        if labels is not None:
            loss = causal_lm_loss(logits, labels, self.config.vocab_size, **kwargs)
        if not return_dict:
            return tuple(v for v in (loss, logits) if v is not None)
        return CausalLMOutputWithPast(loss=loss, logits=logits)


def _family(prefix: str, gemma: bool) -> tuple[type, type, type, type, type]:
    """The classes of one family, named as transformers names them."""
    norm = type(f"{prefix}RMSNorm", (_GemmaStyleRMSNorm if gemma else _LlamaStyleRMSNorm,), {})
    mlp = type(f"{prefix}MLP", (_GatedMLP,), {})
    layer = type(f"{prefix}DecoderLayer", (_DecoderLayer,), {"norm_class": norm,
                                                            "mlp_class": mlp})
    model = type(f"{prefix}Model", (_Model,), {"norm_class": norm, "layer_class": layer,
                                               "scales_embeddings": gemma})
    return norm, mlp, layer, model, type(f"{prefix}ForCausalLM", (_ForCausalLM,),
                                         {"model_class": model})


LlamaRMSNorm, LlamaMLP, LlamaDecoderLayer, LlamaModel, LlamaForCausalLM = _family("Llama", False)
MistralRMSNorm, MistralMLP, MistralDecoderLayer, MistralModel, MistralForCausalLM = \
    _family("Mistral", False)
Qwen2RMSNorm, Qwen2MLP, Qwen2DecoderLayer, Qwen2Model, Qwen2ForCausalLM = _family("Qwen2", False)
Qwen3RMSNorm, Qwen3MLP, Qwen3DecoderLayer, Qwen3Model, Qwen3ForCausalLM = _family("Qwen3", False)
GemmaRMSNorm, GemmaMLP, GemmaDecoderLayer, GemmaModel, GemmaForCausalLM = _family("Gemma", True)
Gemma2RMSNorm, Gemma2MLP, Gemma2DecoderLayer, Gemma2Model, Gemma2ForCausalLM = \
    _family("Gemma2", True)

FAMILIES = {"Llama": LlamaForCausalLM, "Mistral": MistralForCausalLM, "Qwen2": Qwen2ForCausalLM,
            "Qwen3": Qwen3ForCausalLM, "Gemma": GemmaForCausalLM}


def tiny(cls: type = LlamaForCausalLM, seed: int = 0, **config: object) -> nn.Module:
    """A small model of ``cls`` with random weights (the norms' too, so that they matter)."""
    torch.manual_seed(seed)
    if cls.__name__.startswith("Gemma"):
        config.setdefault("hidden_act", "gelu_pytorch_tanh")
    model = cls(Config(**config))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.uniform_(-0.5, 0.5) if cls.__name__.startswith("Gemma") else p.uniform_(0.5, 1.5)
    return model


def batch(vocab_size: int = 96, size: int = 3, length: int = 10, seed: int = 1) -> dict:
    """Token ids and labels (a few ignored), as a dict of the model's keyword arguments."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab_size, (size, length), generator=gen)
    labels = ids.clone()
    labels[0, :3] = -100
    return {"input_ids": ids, "labels": labels}
