"""The drop-in pack against torch: the bridge's cost per call against the same Function written as
a torch.autograd.Function by hand, and per pack op its eager time and saved bytes against the
native op or composite, at 4096 and at 1,048,576 float32 elements.

    python benchmarks/pack.py [--write] [--repeats N] [--only OP,OP]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from _common import interleaved, machine, write_section  # noqa: E402

import ext  # noqa: E402
from ext import functions as P  # noqa: E402
from ext.testing import saved_bytes  # noqa: E402


class Scale(ext.autograd.Function):
    """2x: the smallest Function, so that the cost measured is the call's."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class TorchScale(torch.autograd.Function):
    """The same, written for torch by hand."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def _per_call(fn, calls: int = 2000):
    def run():
        for _ in range(calls):
            fn()
    return run, calls


def bridge_overhead(repeats: int) -> tuple[float, float, float, float]:
    """(us per call: hand-written, bridge; fwd+bwd: hand-written, bridge)."""
    x = torch.randn(16, requires_grad=True)
    g = torch.ones(16)
    runs = {"torch": lambda: TorchScale.apply(x), "bridge": lambda: Scale.apply(x),
            "torch_bwd": lambda: torch.autograd.grad(TorchScale.apply(x), x, g),
            "bridge_bwd": lambda: torch.autograd.grad(Scale.apply(x), x, g)}
    calls = 2000
    timed = interleaved({k: _per_call(f, calls)[0] for k, f in runs.items()}, repeats)
    return tuple(timed[k] / calls * 1e6 for k in ("torch", "bridge", "torch_bwd", "bridge_bwd"))


def _ranks(x):
    return torch.arange(1, x.shape[-1] + 1, dtype=x.dtype)


def sparsemax_composite(x):
    """Sort, cumsum, support, threshold, clamp (no native op)."""
    zs = torch.sort(x, -1, descending=True).values
    cs = zs.cumsum(-1)
    size = (1 + _ranks(x) * zs > cs).sum(-1, keepdim=True)
    return torch.clamp(x - (cs.gather(-1, size - 1) - 1) / size, min=0)


def entmax15_composite(x):
    """The closed-form threshold of 1.5-entmax (no native op)."""
    x = x / 2
    x = x - x.amax(-1, keepdim=True)
    zs = torch.sort(x, -1, descending=True).values
    rho = _ranks(x)
    mean, mean_sq = zs.cumsum(-1) / rho, (zs ** 2).cumsum(-1) / rho
    tau = mean - torch.sqrt(torch.clamp((1 - rho * (mean_sq - mean ** 2)) / rho, min=0))
    size = (tau <= zs).sum(-1, keepdim=True)
    return torch.clamp(x - tau.gather(-1, size - 1), min=0) ** 2


def _rows(x):
    return x.view(-1, 64)


def _log1mexp_composite(x):
    # log(1 - exp(-x)) for x > 0, switching at log 2
    return torch.where(x <= 0.6931471805599453, torch.log(-torch.expm1(-x)),
                       torch.log1p(-torch.exp(-x)))


OPS = [
    ("silu", P.silu, F.silu, 1),
    ("mish", P.mish, F.mish, 1),
    ("gelu", P.gelu, F.gelu, 1),
    ("gelu_tanh", P.gelu_tanh, lambda x: F.gelu(x, approximate="tanh"), 1),
    ("hardswish", P.hardswish, F.hardswish, 1),
    ("hardsigmoid", P.hardsigmoid, F.hardsigmoid, 1),
    ("hardmish", P.hardmish, lambda x: 0.5 * x * torch.clamp(x + 2, 0, 2), 1),
    ("swiglu", P.swiglu, lambda a, b: F.silu(a) * b, 2),
    ("geglu", P.geglu, lambda a, b: F.gelu(a) * b, 2),
    ("clamp_masked", lambda x: P.clamp_masked(x, -1.0, 1.0), lambda x: torch.clamp(x, -1, 1), 1),
    ("round_ste", P.round_ste, lambda x: x + (torch.round(x) - x).detach(), 1),
    ("sign_ste", P.sign_ste,
     lambda x: x.clamp(-1, 1) + (torch.sign(x) - x.clamp(-1, 1)).detach(), 1),
    ("fake_quant_ste", lambda x: P.fake_quant_ste(x, 0.1, 0, -128, 127),
     lambda x: torch.fake_quantize_per_tensor_affine(x, 0.1, 0, -128, 127), 1),
    ("grad_reverse", P.grad_reverse, lambda x: (-1.0 * x) + (2.0 * x).detach(), 1),
    ("grad_scale", lambda x: P.grad_scale(x, 0.5), lambda x: x * 0.5 + (x * 0.5).detach(), 1),
    # (rows of 64: the elements viewed as n / 64 x 64, the result flat again; safe_logsumexp
    # as the normalizer of a log-softmax; log1mexp's input shifted above 0)
    ("sparsemax", lambda x: P.sparsemax(_rows(x)).view(-1),
     lambda x: sparsemax_composite(_rows(x)).view(-1), 1),
    ("entmax15", lambda x: P.entmax15(_rows(x)).view(-1),
     lambda x: entmax15_composite(_rows(x)).view(-1), 1),
    ("safe_softmax", lambda x: P.safe_softmax(_rows(x)).view(-1),
     lambda x: torch.softmax(_rows(x), -1).view(-1), 1),
    ("rms_norm", lambda x, w: P.rms_norm(_rows(x), (64,), w[:64], 1e-6).view(-1),
     lambda x, w: F.rms_norm(_rows(x), (64,), w[:64], 1e-6).view(-1), 2),
    ("safe_logsumexp", lambda x: (_rows(x) - P.safe_logsumexp(_rows(x), -1, True)).view(-1),
     lambda x: (_rows(x) - torch.logsumexp(_rows(x), -1, True)).view(-1), 1),
    ("log1mexp", lambda x: P.log1mexp(x + 6), lambda x: _log1mexp_composite(x + 6), 1),
]


# the sizes timed, each with the calls per timed run
SIZES = ((4096, 50), (1 << 20, 5))


def _time_op(mine, ref, arity: int, n: int, calls: int, repeats: int,
             gen: torch.Generator) -> tuple[float, float]:
    """fwd+bwd us of the pack op and of its reference on ``arity`` inputs of n elements."""
    xs = [torch.randn(n, generator=gen, requires_grad=True) for _ in range(arity)]
    g = torch.randn(n, generator=gen)

    def step(f):
        def run():
            for _ in range(calls):
                torch.autograd.grad(f(*xs), xs, g)
        return run

    timed = interleaved({"pack": step(mine), "ref": step(ref)}, repeats)
    return timed["pack"] / calls * 1e6, timed["ref"] / calls * 1e6


def ops_table(repeats: int, only: set | None = None) -> list[tuple]:
    """Per op: (name, [(pack us, reference us) per size of SIZES], saved bytes at 4096 (pack,
    reference))."""
    rows = []
    gen = torch.Generator().manual_seed(0)
    for name, mine, ref, arity in OPS:
        if only and name not in only:
            continue
        times = [_time_op(mine, ref, arity, n, calls, repeats, gen) for n, calls in SIZES]
        xs = [torch.randn(SIZES[0][0], generator=gen, requires_grad=True) for _ in range(arity)]
        rows.append((name, times, saved_bytes(mine, *xs), saved_bytes(ref, *xs)))
    return rows


def _loss_inputs(n: int, h: int, v: int, gen: torch.Generator) -> tuple:
    """x (n, h), weight (v, h), target (n,) with one row in 16 ignored, bias (v,): float32."""
    x = torch.randn(n, h, generator=gen).requires_grad_()
    w = (torch.randn(v, h, generator=gen) / h ** 0.5).requires_grad_()
    t = torch.randint(0, v, (n,), generator=gen)
    t[::16] = -100
    return x, w, t, torch.zeros(v).requires_grad_()


# (name, pack op, reference, inputs from (x, weight, target, bias), calls per timed run): the
# losses at N=4096 rows, H=64, V=8192 classes, float32
LOSSES = [
    ("cross_entropy_lse", P.cross_entropy_lse, F.cross_entropy,
     lambda x, w, t, b: (F.linear(x, w, b).detach().requires_grad_(), t), 2),
    ("fused_linear_cross_entropy", P.fused_linear_cross_entropy,
     lambda x, w, t, b: F.cross_entropy(F.linear(x, w, b), t), lambda *a: a, 1),
]


def losses_table(repeats: int, n: int = 4096, h: int = 64, v: int = 8192) -> list[tuple]:
    """Per loss: fwd+bwd us (pack, reference), saved bytes (pack, reference)."""
    rows = []
    gen = torch.Generator().manual_seed(0)
    for name, mine, ref, pick, calls in LOSSES:
        xs = pick(*_loss_inputs(n, h, v, gen))
        leaves = [a for a in xs if a.requires_grad]

        def step(f, xs=xs, leaves=leaves):
            return lambda: torch.autograd.grad(f(*xs), leaves)

        timed = interleaved({"pack": _per_call(step(mine), calls)[0],
                             "ref": _per_call(step(ref), calls)[0]}, repeats)
        rows.append((name, timed["pack"] / calls * 1e6, timed["ref"] / calls * 1e6,
                     saved_bytes(mine, *xs), saved_bytes(ref, *xs)))
    return rows


def _ops_lines(repeats: int, only: set | None) -> list[str]:
    heads = " | ".join(f"{n} pack us | {n} reference us | {n} ratio" for n, _ in SIZES)
    lines = ["Each pack op against its native op or composite, on torch: forward + backward of "
             + " and of ".join(f"{n}" for n, _ in SIZES) + " float32 elements (random "
             "grad_output; medians of " + str(repeats) + " interleaved runs of "
             + " and of ".join(f"{c}" for _, c in SIZES) + " calls: at 1M elements a run's time "
             "depends on whether the allocator hands back pages it had freed, and single runs "
             "vary by 2x), and the bytes saved for backward at 4096 elements (unique storages, "
             "through saved_tensors_hooks).", "",
             f"| op | {heads} | pack saved B | reference saved B |",
             "|---|" + "---:|" * (3 * len(SIZES) + 2)]
    for name, times, sm, sr in ops_table(repeats, only):
        cells = " | ".join(f"{m:.1f} | {r:.1f} | {m / r:.2f}x" for m, r in times)
        lines.append(f"| {name} | {cells} | {sm} | {sr} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record the tables in RESULTS.md")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--only", default="", help="time only these ops (comma-separated), "
                        "skipping the bridge and the losses; not with --write")
    args = parser.parse_args()
    torch.set_num_threads(1)
    only = set(filter(None, args.only.split(",")))
    if only:
        if args.write:
            parser.error("--only times a part of the table: it cannot be written")
        print("\n".join(_ops_lines(args.repeats, only)))
        return
    t, b, tb, bb = bridge_overhead(args.repeats)
    lines = ["## pack: the bridge and the drop-in ops (benchmarks/pack.py)", "",
             "The bridge: `Scale.apply(x)` on a torch tensor of 16 elements (an ext Function run "
             "as a torch.autograd.Function) against the same Function written for torch by hand; "
             f"medians of {args.repeats} interleaved runs of 2000 calls. {machine()}.", "",
             "| call | hand-written us | bridge us | bridge / hand-written |",
             "|---|---:|---:|---:|",
             f"| forward | {t:.2f} | {b:.2f} | {b / t:.2f}x |",
             f"| forward + backward | {tb:.2f} | {bb:.2f} | {bb / tb:.2f}x |", ""]
    lines += _ops_lines(args.repeats, None)
    lines += ["", "The losses: forward + backward at N=4096 rows, H=64, V=8192 classes, float32 "
              "(cross_entropy_lse on the logits; fused_linear_cross_entropy from x, weight and "
              "bias, chunks of 1024 rows), and the bytes saved for backward.", "",
              "| op | pack us | reference us | pack / reference | pack saved B "
              "| reference saved B |",
              "|---|---:|---:|---:|---:|---:|"]
    for name, mine, ref, sm, sr in losses_table(3):
        lines.append(f"| {name} | {mine:.0f} | {ref:.0f} | {mine / ref:.2f}x | {sm} | {sr} |")
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section("pack", text)


if __name__ == "__main__":
    main()
