"""Compile parity cases on their first call: ``python compile_first_call.py NAME ...``.

In this (fresh) process, each named case of ``ext.testing.cases`` (``--user`` adds a Function
defined here) runs for the first time inside ``torch.compile(fullgraph=True)`` (aot_eager), then
once eagerly; outputs and gradients must agree. ``--ext-first`` imports ext before torch (the
bridge is then prepared when torch's import finishes). One JSON line per case:
``{"name", "status": "ok" | "fail" | "skip", "detail"}``.
"""

from __future__ import annotations

import json
import sys


def _user_function() -> type:
    """A user's Function, defined here (before torch is imported, with ``--ext-first``)."""
    import ext

    class UserExp(ext.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    return UserExp


def _cases(names: list[str]) -> list:
    from ext.testing import cases

    by_name = {c.name: c for c in cases.op_cases("all")}
    found = []
    for name in names:
        case = by_name[name]
        found.append((name, case.call, case.inputs(), case.skip))
    return found


def _fresh(inputs: tuple) -> tuple:
    import torch

    return tuple(a.detach().clone().requires_grad_(a.requires_grad)
                 if isinstance(a, torch.Tensor) else a for a in inputs)


def _run(fn, inputs: tuple) -> tuple[list, list]:
    import torch

    out = fn(*inputs)
    outs = [o for o in (out if isinstance(out, tuple | list) else (out,))
            if isinstance(o, torch.Tensor)]
    diff = [o for o in outs if o.requires_grad]
    leaves = [a for a in inputs if isinstance(a, torch.Tensor) and a.requires_grad]
    grads = torch.autograd.grad(
        diff, leaves, [torch.full_like(o, 0.5).add_(torch.arange(o.numel()).reshape(o.shape)
                                                     .to(o.dtype) / max(o.numel(), 1))
                       for o in diff], allow_unused=True) if diff and leaves else ()
    return outs, [g for g in grads if g is not None]


def check(name: str, fn, inputs: tuple, skip: dict) -> dict:
    """Compile ``fn`` with fullgraph on its first call, then compare with an eager run."""
    import torch

    if "compile" in skip:
        return {"name": name, "status": "skip", "detail": skip["compile"]}
    torch._dynamo.reset()  # (the cases share code objects: each compiles from scratch)
    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager")
    try:
        got = _run(compiled, _fresh(inputs))
    except Exception as e:  # a graph break or a failure to trace: the point of the check
        first = str(e).strip().splitlines()
        return {"name": name, "status": "fail",
                "detail": f"{type(e).__name__}: {' '.join(first[:3])[:400]}"}
    want = _run(fn, _fresh(inputs))
    for what, a_list, b_list in (("output", got[0], want[0]), ("gradient", got[1], want[1])):
        if len(a_list) != len(b_list):
            return {"name": name, "status": "fail", "detail": f"{what} count differs"}
        for i, (a, b) in enumerate(zip(a_list, b_list)):
            if not torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True):
                return {"name": name, "status": "fail", "detail": f"{what} {i} differs"}
    return {"name": name, "status": "ok", "detail": f"{len(got[0])} outputs, {len(got[1])} grads"}


def main(argv: list[str]) -> int:
    user = None
    if "--ext-first" in argv:
        import ext  # noqa: F401

        user = _user_function() if "--user" in argv else None
    import torch

    if "--user" in argv:
        user = user or _user_function()
    names = [a for a in argv if not a.startswith("--")]
    todo = _cases(names)
    if user is not None:
        x = torch.linspace(-1, 1, 6, dtype=torch.float64).requires_grad_()
        todo.append(("user." + user.__name__, user.apply, (x,), {}))
    bad = 0
    for name, fn, inputs, skip in todo:
        result = check(name, fn, inputs, skip)
        bad += result["status"] == "fail"
        print(json.dumps(result), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
