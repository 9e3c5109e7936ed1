"""The pack on a GPU: every pack case of ``ext.testing.cases`` run through the bridge on CUDA
tensors and on CPU tensors, forward and backward, compared.

    python tools/cuda_check.py [--json FILE]

Each case's inputs are made on the CPU as the parity suite makes them, copied to the GPU (the
differentiable ones as fresh leaves), and the case's function runs on both; the outputs, the
node's name and the inputs' gradients under a non-uniform upstream gradient must agree within
the dtype's tolerance (CUDA kernels sum in other orders). Exit status 1 on any disagreement or
error, 2 when no CUDA device is present.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's ext

import torch  # noqa: E402

from ext.testing import cases  # noqa: E402


def _to(value, device: str):
    if isinstance(value, torch.Tensor):
        moved = value.detach().to(device)
        return moved.requires_grad_(value.requires_grad)
    return value


def _outputs(out) -> list:
    return list(out) if isinstance(out, tuple | list) else [out]


def _upstream(t: torch.Tensor) -> torch.Tensor:
    n = t.numel()
    return torch.linspace(0.5, 2.0, max(n, 1), dtype=t.dtype, device=t.device)[:n].reshape(t.shape)


def _tolerance(dtype: torch.dtype) -> tuple[float, float]:
    return (1e-9, 1e-11) if dtype == torch.float64 else (1e-4, 1e-5)


def run_case(case, device: str = "cuda") -> tuple[str, str]:
    """(status, detail) of one case on ``device`` against the CPU: "ok" or "differs"."""
    cpu = case.inputs()
    gpu = tuple(_to(v, device) for v in cpu)
    results = {}
    for where, inputs in (("cpu", cpu), ("device", gpu)):
        out = _outputs(case.call(*inputs))
        diff = [o for o in out if isinstance(o, torch.Tensor) and o.requires_grad]
        leaves = [v for v in inputs if isinstance(v, torch.Tensor) and v.requires_grad]
        grads = torch.autograd.grad(diff, leaves, [_upstream(o) for o in diff],
                                    allow_unused=True) if diff else ()
        names = [o.grad_fn.name() if o.grad_fn is not None else None for o in out
                 if isinstance(o, torch.Tensor)]
        results[where] = (out, grads, names)
    (out_c, grads_c, names_c), (out_g, grads_g, names_g) = results["cpu"], results["device"]
    if names_c != names_g:
        return "differs", f"nodes: cpu {names_c}, {device} {names_g}"
    pairs = [("output", a, b) for a, b in zip(out_c, out_g)]
    pairs += [("gradient", a, b) for a, b in zip(grads_c, grads_g)]
    for what, a, b in pairs:
        if not isinstance(a, torch.Tensor) or a is None:
            continue
        if b.device.type != torch.device(device).type:
            return "differs", f"{what} left {device}: {b.device}"
        rtol, atol = _tolerance(a.dtype)
        if not torch.allclose(a, b.cpu(), rtol=rtol, atol=atol, equal_nan=True):
            worst = (a - b.cpu()).abs().max().item()
            return "differs", f"{what}: max |cpu - {device}| = {worst:.3g}"
    return "ok", f"{len(out_c)} output(s), {len(grads_c)} gradient(s)"


def main(argv: list[str] | None = None) -> int:
    """Run every pack case on CPU and CUDA; print a line per case; 1 on any failure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("cuda_check: no CUDA device")
        return 2
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    rows = {}
    for name, case in cases.PACK.items():
        try:
            rows[name] = run_case(case)
        except Exception as e:  # report every case, whatever breaks
            rows[name] = ("error", f"{type(e).__name__}: {str(e).splitlines()[0][:200]}")
        print(f"{rows[name][0]:8} {name:28} {rows[name][1]}", flush=True)
    bad = {k: v for k, v in rows.items() if v[0] != "ok"}
    print(f"{len(rows)} pack cases on CUDA: {len(rows) - len(bad)} agree with the CPU, "
          f"{len(bad)} do not")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
