"""Write docs/gradflow.png: GradFlow on a deep sigmoid network (vanishing gradients).

Twenty Linear(100, 100) layers, each followed by a sigmoid, trained on the mini-engine: one
backward of an MSE loss on a random batch. The plot shows the mean and max |grad| of every
weight and bias; sigmoid's derivative (at most 1/4) shrinks them layer after layer towards the
input. ``python tools/gradflow_vanishing.py [PATH]``; tests/test_hooks_pack.py runs ``draw``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's ext, not an installed one

import ext  # noqa: E402
from ext import nn  # noqa: E402
from ext.hooks import GradFlow  # noqa: E402

TARGET = ROOT / "docs" / "gradflow.png"


class DeepNetwork(nn.Module):
    """Twenty sigmoid layers: the classic network with the vanishing-gradient problem."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(100, 100) for _ in range(20)])

    def forward(self, x):
        for layer in self.layers:
            x = ext.sigmoid(layer(x))
        return x


def draw(path: Path = TARGET, seed: int = 0) -> GradFlow:
    """One backward through DeepNetwork with GradFlow watching; the plot saved to ``path``."""
    ext.manual_seed(seed)
    model = DeepNetwork()
    flow = GradFlow(model)
    rng = np.random.default_rng(seed)
    x = ext.tensor(rng.standard_normal((32, 100)), dtype=ext.float32)
    target = ext.tensor(rng.random((32, 100)), dtype=ext.float32)
    loss = ((model(x) - target) ** 2).mean()
    loss.backward()
    flow.plot(path, title="vanishing gradients: 20 x (Linear(100, 100) + sigmoid)")
    flow.remove()
    return flow


if __name__ == "__main__":
    flow = draw(Path(sys.argv[1]) if len(sys.argv) > 1 else TARGET)
    print(flow)
