"""A tiny Llama's training step, unpatched against patched by ``ext.compat.patch`` (rms_norm,
swiglu and the fused linear cross-entropy): the step's time and the bytes saved for backward.

    python benchmarks/llama.py [--write] [--repeats N] [--steps N]

The model is transformers' LlamaForCausalLM when transformers is installed, else the stand-in of
the same name in tests/standins.py (hidden 64, 2 layers, 4 heads, vocab 4096, float32), on a
batch of 4 sequences of 64 tokens.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import torch  # noqa: E402
from _common import interleaved, machine, write_section  # noqa: E402

from ext.compat.patch import patch  # noqa: E402

SHAPE = {"vocab_size": 4096, "hidden_size": 64, "intermediate_size": 256,
         "num_hidden_layers": 2, "num_attention_heads": 4}
BATCH, LENGTH = 4, 64


def tiny_llama() -> tuple[torch.nn.Module, str]:
    """The model, and where its class comes from."""
    torch.manual_seed(0)
    try:
        import transformers
    except ImportError:
        sys.path.insert(0, str(ROOT / "tests"))
        import standins

        return standins.LlamaForCausalLM(standins.Config(**SHAPE)), "the stand-in of tests/"
    config = transformers.LlamaConfig(**SHAPE, num_key_value_heads=SHAPE["num_attention_heads"])
    return transformers.LlamaForCausalLM(config), f"transformers {transformers.__version__}"


def batch() -> dict:
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, SHAPE["vocab_size"], (BATCH, LENGTH), generator=gen)
    return {"input_ids": ids, "labels": ids}


def stepper(model: torch.nn.Module, data: dict, steps: int):
    """``steps`` training steps: forward with labels, backward, AdamW."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def run() -> None:
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            model(**data).loss.backward()
            opt.step()
    return run


def saved_bytes(model: torch.nn.Module, data: dict) -> int:
    """Bytes of the unique storages that one forward saves for backward."""
    seen: dict = {}

    def keep(t: torch.Tensor) -> torch.Tensor:
        s = t.untyped_storage()
        seen[(s.data_ptr(), s.nbytes())] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t):
        loss = model(**data).loss
    loss.backward()
    model.zero_grad(set_to_none=True)
    return sum(seen.values())


def measure(repeats: int, steps: int) -> dict:
    """Median ms per step and saved bytes, unpatched and patched, and the model's source."""
    torch.set_num_threads(1)
    base, source = tiny_llama()
    base.train()
    fast = copy.deepcopy(base)
    patched = patch(fast, fused_loss=True)
    data = batch()
    runs = {"unpatched": stepper(base, data, steps), "patched": stepper(fast, data, steps)}
    for run in runs.values():  # (warm-up: the bridge's classes, the optimizer's state)
        run()
    timed = interleaved(runs, repeats)
    return {"source": source, "ops": sorted({op for *_, op in patched.patched}),
            "ms": {k: v / steps * 1e3 for k, v in timed.items()},
            "bytes": {"unpatched": saved_bytes(base, data), "patched": saved_bytes(fast, data)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record the table in RESULTS.md")
    # (one step per timed run, many runs: the finer the interleaving, the less a busy machine's
    # bursts favour one side)
    parser.add_argument("--repeats", type=int, default=101)
    parser.add_argument("--steps", type=int, default=1, help="training steps per timed run")
    args = parser.parse_args()
    r = measure(args.repeats, args.steps)
    ms, saved = r["ms"], r["bytes"]
    text = "\n".join([
        "## llama: a tiny Llama's training step, patched (benchmarks/llama.py)", "",
        f"LlamaForCausalLM ({r['source']}): hidden 64, 2 layers, 4 heads, intermediate 256, "
        f"vocab 4096, float32, batch 4 x 64 tokens; one step is forward with labels, backward "
        f"and AdamW. Patched by `ext.compat.patch(model, fused_loss=True)` "
        f"({', '.join(r['ops'])}). Medians of {args.repeats} interleaved runs of {args.steps} "
        f"step(s); saved bytes: unique storages saved for backward by one forward. {machine()}.",
        "",
        "| model | ms per step | saved B | against unpatched |",
        "|---|---:|---:|---:|",
        f"| unpatched | {ms['unpatched']:.2f} | {saved['unpatched']} | 1.00x, 1.00x |",
        f"| patched | {ms['patched']:.2f} | {saved['patched']} | "
        f"{ms['patched'] / ms['unpatched']:.2f}x time, "
        f"{saved['patched'] / saved['unpatched']:.2f}x bytes |"])
    print(text)
    if args.write:
        write_section("llama", text)


if __name__ == "__main__":
    main()
