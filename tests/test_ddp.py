"""The pack under torch's DistributedDataParallel: two processes (gloo, file rendezvous) train a
small model built from pack ops for two steps, and end with the parameters and gradients of one
process trained on the whole batch, to 1e-10 in float64. A hang fails the test after TIMEOUT
seconds, and no process outlives it."""

from __future__ import annotations

import time

import numpy as np
import pytest

from ext import functions as P

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

pytestmark = pytest.mark.ext_only

TIMEOUT = 120.0  # seconds for the two workers, start-up included
WORLD = 2
STEPS = 2
ROWS, IN, HIDDEN, CLASSES = 8, 6, 5, 7  # ROWS splits evenly over WORLD


class Model(torch.nn.Module):
    """Linear, swiglu of its two halves, a mish, then fused_linear_cross_entropy (its weight and
    bias are the model's)."""

    def __init__(self, seed: int = 0):
        super().__init__()
        gen = np.random.default_rng(seed)

        def param(*shape):
            return torch.nn.Parameter(torch.tensor(gen.standard_normal(shape) * 0.5))

        self.w1, self.b1 = param(2 * HIDDEN, IN), param(2 * HIDDEN)
        self.w2, self.b2 = param(CLASSES, HIDDEN), param(CLASSES)

    def forward(self, x, target):
        a, b = torch.nn.functional.linear(x, self.w1, self.b1).chunk(2, -1)
        h = P.mish(P.swiglu(a, b))
        return P.fused_linear_cross_entropy(h, self.w2, target, self.b2, label_smoothing=0.1,
                                            chunk_size=3)


def _data():
    gen = np.random.default_rng(1)
    return (torch.tensor(gen.standard_normal((STEPS, ROWS, IN))),
            torch.tensor(gen.integers(0, CLASSES, (STEPS, ROWS))))


def _train(model, rows: slice) -> dict:
    """STEPS of SGD on the given rows of each step's batch; the parameters and the last
    gradients."""
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    x, t = _data()
    for step in range(STEPS):
        opt.zero_grad()
        model(x[step, rows], t[step, rows]).backward()
        opt.step()
    module = getattr(model, "module", model)
    return {name: (p.detach().clone(), p.grad.clone()) for name, p in module.named_parameters()}


def _worker(rank: int, rendezvous: str, out: str) -> None:
    import os

    # (the loopback interface: gloo otherwise resolves the host name, which may have no route)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank,
                            world_size=WORLD)
    try:
        model = torch.nn.parallel.DistributedDataParallel(Model())
        share = ROWS // WORLD
        torch.save(_train(model, slice(rank * share, (rank + 1) * share)), f"{out}/{rank}.pt")
    finally:
        dist.destroy_process_group()


def test_two_ddp_processes_train_as_one_process_on_the_whole_batch(tmp_path):
    import torch.multiprocessing as mp

    context = mp.start_processes(_worker, args=(str(tmp_path / "rendezvous"), str(tmp_path)),
                                 nprocs=WORLD, join=False, start_method="spawn")
    deadline = time.monotonic() + TIMEOUT
    try:
        while not context.join(timeout=max(0.1, min(1.0, deadline - time.monotonic()))):
            if time.monotonic() > deadline:
                pytest.fail(f"the DDP workers did not finish within {TIMEOUT:.0f} s")
    finally:
        for process in context.processes:
            if process.is_alive():
                process.kill()
            process.join()
    want = _train(Model(), slice(None))
    for rank in range(WORLD):
        got = torch.load(tmp_path / f"{rank}.pt")
        assert got.keys() == want.keys()
        for name, (param, grad) in got.items():
            assert param.dtype == torch.float64
            torch.testing.assert_close(param, want[name][0], rtol=0, atol=1e-10, msg=name)
            torch.testing.assert_close(grad, want[name][1], rtol=0, atol=1e-10, msg=name)
    # (the steps moved the parameters: the comparison is not of two untouched models)
    assert not torch.equal(want["w2"][0], Model().w2)
