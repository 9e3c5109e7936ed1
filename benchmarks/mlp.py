"""One training step of an MLP, forward and backward: where the time goes on real-sized tensors.

784-256-256-10, tanh activations, batch 128, float32, softmax cross-entropy (F.cross_entropy);
the same NumPy-built weights, inputs and labels for ext and torch, run interleaved in one
process on one thread.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

# This checkout's ext first (an editable install elsewhere would be measured instead).
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from _common import interleaved, machine, write_section  # noqa: E402, I001  (sets threads first)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import ext  # noqa: E402

SIZES = (784, 256, 256, 10)
BATCH = 128


def make_data(seed: int = 0) -> tuple:
    """Weights (PyTorch's default uniform init), a batch of inputs and its labels, in NumPy."""
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in zip(SIZES[:-1], SIZES[1:]):
        bound = 1 / np.sqrt(n_in)
        params.append(rng.uniform(-bound, bound, (n_out, n_in)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, n_out).astype(np.float32))
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    labels = rng.integers(0, SIZES[-1], BATCH)
    return params, x, labels


def setup(T, data: tuple) -> tuple:
    """The step's tensors on backend ``T``: leaf parameters, input, labels."""
    params, x, labels = data
    leaves = [T.tensor(p, requires_grad=True) for p in params]
    return leaves, T.tensor(x), T.tensor(labels)


LR = 0.01


def step(T, tensors: tuple) -> float:
    """One training step (forward, backward, SGD update), written once for both backends."""
    F = T.nn.functional
    params, x, labels = tensors
    for p in params:
        p.grad = None
    h = x
    for i in range(0, len(params) - 2, 2):
        h = F.linear(h, params[i], params[i + 1]).tanh()
    loss = F.cross_entropy(F.linear(h, params[-2], params[-1]), labels)
    loss.backward()
    with T.no_grad():
        for p in params:
            p -= LR * p.grad
    return loss.item()


def check_same(data: tuple) -> None:
    """Both backends compute the same loss and gradients (float32 tolerance)."""
    e, t = setup(ext, data), setup(torch, data)
    le, lt = step(ext, e), step(torch, t)
    assert abs(le - lt) < 1e-5 * max(1.0, abs(lt)), (le, lt)
    for pe, pt in zip(e[0], t[0]):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-3, atol=1e-6)
        np.testing.assert_allclose(pe.detach().numpy(), pt.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def main(repeats: int = 21, write: bool = False) -> None:
    torch.set_num_threads(1)
    data = make_data()
    check_same(data)
    tensors = {"ext": setup(ext, data), "torch": setup(torch, data)}
    runs = {"ext": functools.partial(step, ext, tensors["ext"]),
            "torch": functools.partial(step, torch, tensors["torch"])}
    for fn in runs.values():
        fn()
    med = interleaved(runs, repeats)
    ms = {k: v * 1e3 for k, v in med.items()}
    ratio = med["ext"] / med["torch"]
    print(f"mlp step: ext {ms['ext']:.2f} ms, torch {ms['torch']:.2f} ms, ratio {ratio:.2f}x")
    body = "\n".join([
        "## mlp: one training step (benchmarks/mlp.py)",
        "",
        f"MLP {'-'.join(map(str, SIZES))}, tanh, batch {BATCH}, float32, F.cross_entropy; "
        f"forward, backward and SGD update (`p -= lr * p.grad` under no_grad) from the same "
        f"NumPy-built weights; median of {repeats} "
        f"interleaved runs. {machine()}.",
        "",
        "| ext ms/step | torch ms/step | ext / torch |",
        "|---:|---:|---:|",
        f"| {ms['ext']:.2f} | {ms['torch']:.2f} | {ratio:.2f}x |",
    ])
    if write:  # (--write: record the table in RESULTS.md)
        write_section("mlp", body)


if __name__ == "__main__":
    main(write="--write" in sys.argv[1:])
