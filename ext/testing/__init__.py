"""``ext.testing``: the parity harness users run on their own Functions.

``check(fn, *inputs, reference=None, **options)`` runs ``fn`` (an ext Function, a callable built
from Functions, a plain ``torch.autograd.Function`` or any torch callable) through the checklist
below and returns a ``ParityReport``; ``assert_parity`` does the same and raises AssertionError
naming what differs. ``saved_bytes`` is the meter the saved-tensor check uses.

Checks (each passes, fails, or is skipped with its reason):

- ``forward``, ``backward``, ``double_backward``: against ``reference``, with a random
  non-uniform grad_output; a first-order gradient that has no graph where the reference's has,
  or a second-order one with nan where the reference's has none, fails;
- ``gradcheck``, ``gradgradcheck``: torch's, in float64;
- ``mini_engine``: the same call on ext tensors gives torch's values and gradients (skipped,
  and said so, when ``fn`` does not run on ext tensors);
- ``no_mutation``: inputs and the incoming gradient are left as they were;
- ``upstream``: behind ``exp`` (which saves its output), the gradient is the reference's;
- ``version``: an input the op saved, modified in place after forward, fails backward with
  torch's version error;
- ``saved_bytes``: what the op saves (unique storages, via saved_tensors_hooks) is at most what
  the reference saves;
- ``compile``: ``torch.compile(fullgraph=True)`` (``backend="aot_eager"`` unless told) equals
  eager, with no graph break;
- ``torch_func``: vmap, grad and jacrev equal the reference's;
- ``autocast``: forward and backward run under CPU bf16 autocast, with the reference's dtype.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .._factories import tensor
from .._tensor import Tensor
from ..autograd import grad

__all__ = ["check", "assert_parity", "saved_bytes", "ParityReport", "CHECKS"]

CHECKS = ("forward", "backward", "double_backward", "gradcheck", "gradgradcheck", "mini_engine",
          "no_mutation", "upstream", "version", "saved_bytes", "compile", "torch_func",
          "autocast")


@dataclass
class ParityReport:
    """The outcome of ``check``: per check, ``"pass"``, ``"fail"`` or ``"skip"`` and a detail."""

    name: str
    results: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether no check failed."""
        return all(status != "fail" for status, _ in self.results.values())

    def failures(self) -> dict:
        """The checks that failed, with what differed."""
        return {k: d for k, (s, d) in self.results.items() if s == "fail"}

    def to_dict(self) -> dict:
        """The report as plain data (for JSON)."""
        return {"name": self.name, "ok": self.ok,
                "checks": {k: {"status": s, "detail": d} for k, (s, d) in self.results.items()}}

    def __str__(self) -> str:
        width = max(len(k) for k in self.results) if self.results else 0
        lines = [f"{self.name}: {'ok' if self.ok else 'FAILED'}"]
        lines += [f"  {k:<{width}}  {s:<4}  {d}" for k, (s, d) in self.results.items()]
        return "\n".join(lines)


def saved_bytes(fn: Callable, *inputs) -> int:
    """Bytes of the unique storages that ``fn(*inputs)`` saves for backward (torch tensors)."""
    seen: dict = {}

    def pack(t):
        s = t.untyped_storage()
        seen[(s.data_ptr(), s.nbytes())] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*inputs)
    return sum(seen.values())


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _callable(fn) -> Callable:
    """A plain callable for ``fn``: a Function class runs through its ``apply``."""
    if isinstance(fn, type) and hasattr(fn, "apply"):
        return fn.apply
    if not callable(fn):
        raise TypeError(f"check(): fn must be callable (a Function or a function), got "
                        f"{type(fn).__name__}")
    return fn


def _outputs(out) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _diff(out) -> list:
    return [o for o in _outputs(out) if isinstance(o, torch.Tensor) and o.requires_grad]


def _fresh(inputs: tuple) -> tuple:
    """Leaf copies of the inputs (those that require grad stay so)."""
    return tuple(i.detach().clone().requires_grad_(i.requires_grad)
                 if isinstance(i, torch.Tensor) else copy.copy(i) for i in inputs)


def _grad_inputs(inputs: tuple) -> list:
    return [i for i in inputs if isinstance(i, torch.Tensor) and i.requires_grad]


def _close(a, b, what: str, atol: float | None, rtol: float | None) -> str:
    """'' when a and b agree (None counts as zeros), else what differs."""
    if a is None and b is None:
        return ""
    if a is None or b is None:
        other = b if a is None else a
        if isinstance(other, torch.Tensor) and not other.detach().any():
            return ""
        return f"{what}: one side is None"
    try:
        torch.testing.assert_close(a.detach(), b.detach(), atol=atol, rtol=rtol, equal_nan=True)
    except AssertionError as e:
        return f"{what}: {str(e).splitlines()[0]} {str(e).splitlines()[-1].strip()}"
    return ""


def _grads(out, inputs: list, grad_out: list, create_graph: bool = False) -> tuple:
    outs = _diff(out)
    return torch.autograd.grad(outs, inputs, grad_out[: len(outs)], create_graph=create_graph,
                               allow_unused=True)


class _Run:
    def __init__(self, fn, inputs, reference, seed, atol, rtol):
        self.fn, self.inputs, self.reference = fn, inputs, reference
        self.atol, self.rtol = atol, rtol
        gen = np.random.default_rng(seed)
        out = fn(*_fresh(inputs))
        # random, non-uniform gradients of the outputs (never ones)
        self.grad_out = [torch.tensor(gen.uniform(0.5, 1.5, tuple(o.shape)), dtype=o.dtype)
                         for o in _diff(out)]
        self.report: dict = {}

    def put(self, name: str, problem: str, detail: str = "") -> None:
        self.report[name] = ("fail", problem) if problem else ("pass", detail)


def check(fn, *inputs, reference: Callable | None = None, seed: int = 0,
          atol: float | None = None, rtol: float | None = None, skip: dict | None = None,
          compile_backend: str = "aot_eager", **options: Any) -> ParityReport:
    """Run the parity checklist (the module's docstring) on ``fn(*inputs)``.

    ``inputs`` are torch tensors (the differentiable ones with ``requires_grad=True``; float64
    for gradcheck) and other arguments; ``reference`` is the native op or composite to agree
    with; ``skip`` maps a check's name to the reason it does not apply (a straight-through
    estimator skips ``gradcheck``: its gradient is not the derivative); ``compile_backend`` is
    torch.compile's (``"aot_eager"`` catches graph breaks without a C++ build; ``"inductor"``
    compiles kernels).
    """
    skip = dict(skip or {})
    unknown = set(skip) - set(CHECKS)
    if unknown:
        raise ValueError(f"check(): unknown checks to skip: {sorted(unknown)}")
    if options:
        raise TypeError(f"check(): unexpected options {sorted(options)}")
    call = _callable(fn)
    if reference is not None and not callable(reference):
        raise TypeError(f"check(): reference must be callable, got {type(reference).__name__}")
    if not _grad_inputs(inputs):
        raise ValueError("check(): no input requires grad: give the differentiable inputs "
                         "requires_grad=True")
    run = _Run(call, inputs, reference, seed, atol, rtol)
    run.backend = compile_backend
    for name in CHECKS:
        if name in skip:
            run.report[name] = ("skip", skip[name])
            continue
        try:
            _LEGS[name](run)
        except Exception as e:  # a leg that raises is a failure, reported with the error
            run.report[name] = ("fail", f"{type(e).__name__}: {str(e).splitlines()[0]}")
    return ParityReport(_name(fn), run.report)


def assert_parity(fn, *inputs, **kwargs) -> ParityReport:
    """``check``, raising AssertionError with every failed check when one fails."""
    report = check(fn, *inputs, **kwargs)
    if not report.ok:
        raise AssertionError(f"{report.name} differs:\n" + "\n".join(
            f"  {k}: {d}" for k, d in report.failures().items()))
    return report


# ---------------------------------------------------------------------------------- the legs
def _needs_reference(run: _Run, name: str) -> bool:
    if run.reference is None:
        run.report[name] = ("skip", "no reference given")
        return False
    return True


def _forward(run: _Run) -> None:
    if not _needs_reference(run, "forward"):
        return
    got, want = run.fn(*_fresh(run.inputs)), run.reference(*_fresh(run.inputs))
    problems = [_close(a, b, f"output {i}", run.atol, run.rtol)
                for i, (a, b) in enumerate(zip(_outputs(got), _outputs(want)))]
    if len(_outputs(got)) != len(_outputs(want)):
        problems.append(f"{len(_outputs(got))} outputs, the reference {len(_outputs(want))}")
    run.put("forward", "; ".join(p for p in problems if p))


def _both(run: _Run, create_graph: bool):
    mine, ref = _fresh(run.inputs), _fresh(run.inputs)
    got = _grads(run.fn(*mine), _grad_inputs(mine), run.grad_out, create_graph)
    want = _grads(run.reference(*ref), _grad_inputs(ref), run.grad_out, create_graph)
    return mine, ref, got, want


def _backward(run: _Run) -> None:
    if not _needs_reference(run, "backward"):
        return
    _, _, got, want = _both(run, False)
    run.put("backward", "; ".join(p for p in (
        _close(a, b, f"gradient {i}", run.atol, run.rtol)
        for i, (a, b) in enumerate(zip(got, want))) if p))


def _double_backward(run: _Run) -> None:
    if not _needs_reference(run, "double_backward"):
        return
    mine, ref, got, want = _both(run, True)
    second = [_weighted_grad(g, _grad_inputs(mine)) for g in got]
    try:
        ref_second = [_weighted_grad(w, _grad_inputs(ref)) for w in want]
    except RuntimeError as e:  # the reference cannot be differentiated twice
        nan = any(a is not None and torch.isnan(a).any() for s in second for a in s)
        run.put("double_backward", "second derivative has nan" if nan else "",
                f"the reference has none ({str(e).splitlines()[0]})")
        return
    problems = []
    for i, (s, r) in enumerate(zip(second, ref_second)):
        g = got[i]
        if (g is None or not g.requires_grad) and any(
                b is not None and b.detach().any() for b in r):
            # (no graph is right only where the reference's second derivative is zero)
            problems.append(f"gradient {i} has no graph, and the reference's second derivative "
                            "is not zero")
            continue
        for j, (a, b) in enumerate(zip(s, r)):
            if a is not None and torch.isnan(a).any() and not (b is not None
                                                               and torch.isnan(b).any()):
                problems.append(f"second derivative {i},{j} has nan")
            else:
                problems.append(_close(a, b, f"second derivative {i},{j}", run.atol, run.rtol))
    run.put("double_backward", "; ".join(p for p in problems if p))


def _weighted_grad(g, inputs: list) -> tuple:
    if g is None or not g.requires_grad:
        return (None,) * len(inputs)
    w = torch.linspace(0.5, 1.5, g.numel(), dtype=g.dtype).reshape(g.shape)
    return torch.autograd.grad((g * w).sum(), inputs, retain_graph=True, allow_unused=True)


def _gradcheck(run: _Run) -> None:
    inputs = _float64(run.inputs)
    run.put("gradcheck", "" if torch.autograd.gradcheck(run.fn, inputs) else "gradcheck failed")


def _gradgradcheck(run: _Run) -> None:
    inputs = _float64(run.inputs)
    run.put("gradgradcheck",
            "" if torch.autograd.gradgradcheck(run.fn, inputs) else "gradgradcheck failed")


def _float64(inputs: tuple) -> tuple:
    return tuple(i.detach().to(torch.float64).requires_grad_(i.requires_grad)
                 if isinstance(i, torch.Tensor) and i.is_floating_point() else i for i in inputs)


def _mini_engine(run: _Run) -> None:
    def to_ext(i):
        if isinstance(i, torch.Tensor):
            return tensor(i.detach().numpy(), requires_grad=i.requires_grad)
        return i

    inputs = tuple(to_ext(i) for i in run.inputs)
    try:
        out = run.fn(*inputs)
    except (TypeError, AttributeError) as e:
        run.report["mini_engine"] = ("skip", f"does not run on ext tensors ({type(e).__name__})")
        return
    mine = _fresh(run.inputs)
    want = run.fn(*mine)
    problems = [_close(torch.from_numpy(np.array(a.detach().numpy())), b, f"output {i}",
                       run.atol, run.rtol)
                for i, (a, b) in enumerate(zip(_outputs(out), _outputs(want)))]
    outs = [o for o in _outputs(out) if isinstance(o, Tensor) and o.requires_grad]
    leaves = [i for i in inputs if isinstance(i, Tensor) and i.requires_grad]
    got = grad(outs, leaves, [tensor(g.numpy()) for g in run.grad_out][: len(outs)],
               allow_unused=True)
    ref = _grads(want, _grad_inputs(mine), run.grad_out)
    for i, (a, b) in enumerate(zip(got, ref)):
        a = None if a is None else torch.from_numpy(np.array(a.numpy()))
        problems.append(_close(a, b, f"gradient {i}", run.atol, run.rtol))
    run.put("mini_engine", "; ".join(p for p in problems if p))


def _no_mutation(run: _Run) -> None:
    inputs = _fresh(run.inputs)
    before = [(i.detach().clone(), i._version) for i in inputs if isinstance(i, torch.Tensor)]
    out = run.fn(*inputs)
    grads = [g.clone() for g in run.grad_out]
    _grads(out, _grad_inputs(inputs), grads)
    problems = []
    for k, ((value, version), i) in enumerate(zip(before, [i for i in inputs
                                                           if isinstance(i, torch.Tensor)])):
        if i._version != version or not torch.equal(i.detach(), value):
            problems.append(f"input {k} was written")
    if any(not torch.equal(g, h) for g, h in zip(grads, run.grad_out)):
        problems.append("the incoming gradient was written")
    run.put("no_mutation", "; ".join(problems))


def _upstream(run: _Run) -> None:
    if not _needs_reference(run, "upstream"):
        return
    k = next(i for i, a in enumerate(run.inputs)
             if isinstance(a, torch.Tensor) and a.requires_grad)
    results = []
    for f in (run.fn, run.reference):
        args = list(_fresh(run.inputs))
        leaf = args[k]
        args[k] = leaf.exp()  # ExpBackward0 saves this output: a write into it shows upstream
        results.append(_grads(f(*args), [leaf], run.grad_out)[0])
    run.put("upstream", _close(results[0], results[1], "gradient behind exp", run.atol, run.rtol))


def _version(run: _Run) -> None:
    # which inputs the op saves (by storage, through the hooks; the hooks also turn torch's
    # version check off, so the write is tried on a second run without them)
    storages: list = []

    def pack(t):
        storages.append(t.untyped_storage().data_ptr())
        return t

    probe = _fresh(run.inputs)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        run.fn(*probe)
    saved = [k for k, i in enumerate(probe) if isinstance(i, torch.Tensor) and i.requires_grad
             and i.untyped_storage().data_ptr() in storages]
    if not saved:
        run.report["version"] = ("skip", "saves no input")
        return
    leaves = list(_fresh(run.inputs))
    inputs = [i.clone() if k == saved[0] else i for k, i in enumerate(leaves)]
    out = run.fn(*inputs)
    with torch.no_grad():
        inputs[saved[0]].add_(0)
    try:
        _grads(out, _grad_inputs(leaves), run.grad_out)
    except RuntimeError as e:
        if "modified by an inplace operation" in str(e):
            run.put("version", "", f"input {saved[0]}")
            return
        raise
    run.put("version", f"input {saved[0]} was saved and written, and backward did not fail")


def _saved_bytes(run: _Run) -> None:
    mine = saved_bytes(run.fn, *_fresh(run.inputs))
    if run.reference is None:
        run.report["saved_bytes"] = ("pass", f"{mine} B (no reference)")
        return
    ref = saved_bytes(run.reference, *_fresh(run.inputs))
    run.put("saved_bytes", f"{mine} B saved, the reference {ref} B" if mine > ref else "",
            f"{mine} B, the reference {ref} B")


def _compile(run: _Run) -> None:
    import torch._dynamo

    torch._dynamo.reset()
    compiled = torch.compile(run.fn, fullgraph=True, backend=run.backend)
    mine, eager = _fresh(run.inputs), _fresh(run.inputs)
    got, want = compiled(*mine), run.fn(*eager)
    problems = [_close(a, b, f"output {i}", run.atol, run.rtol)
                for i, (a, b) in enumerate(zip(_outputs(got), _outputs(want)))]
    g1 = _grads(got, _grad_inputs(mine), run.grad_out)
    g2 = _grads(want, _grad_inputs(eager), run.grad_out)
    problems += [_close(a, b, f"gradient {i}", run.atol, run.rtol)
                 for i, (a, b) in enumerate(zip(g1, g2))]
    run.put("compile", "; ".join(p for p in problems if p),
            f"fullgraph ({run.backend}), no graph break")


def _torch_func(run: _Run) -> None:
    if not _needs_reference(run, "torch_func"):
        return
    from torch.func import grad, jacrev, vmap

    where = [k for k, a in enumerate(run.inputs) if isinstance(a, torch.Tensor)]
    plain = [a.detach() if isinstance(a, torch.Tensor) else a for a in run.inputs]

    def with_tensors(f):
        def call(*tensors):
            args = list(plain)
            for k, t in zip(where, tensors):
                args[k] = t
            return _outputs(f(*args))[0]
        return call

    f, r = with_tensors(run.fn), with_tensors(run.reference)
    tensors = [plain[k] for k in where]
    batched = [torch.stack([t, t.flip(tuple(range(t.dim()))) if t.dim() else -t]) for t in tensors]
    problems = [_close(vmap(f)(*batched), vmap(r)(*batched), "vmap", run.atol, run.rtol)]
    # (differentiated with respect to the floating tensors only: an index tensor has no grad)
    argnums = tuple(k for k, t in enumerate(tensors) if t.is_floating_point())
    g = grad(lambda *t: f(*t).sum(), argnums=argnums)(*tensors)
    e = grad(lambda *t: r(*t).sum(), argnums=argnums)(*tensors)
    problems += [_close(a, b, f"grad {i}", run.atol, run.rtol) for i, (a, b) in
                 enumerate(zip(g, e))]
    problems += [_close(a, b, f"jacrev {i}", run.atol, run.rtol) for i, (a, b) in
                 enumerate(zip(jacrev(f, argnums=argnums)(*tensors),
                               jacrev(r, argnums=argnums)(*tensors)))]
    run.put("torch_func", "; ".join(p for p in problems if p), "vmap, grad, jacrev")


def _autocast(run: _Run) -> None:
    def as_float32(inputs):
        return tuple(i.detach().float().requires_grad_(i.requires_grad)
                     if isinstance(i, torch.Tensor) and i.is_floating_point() else i
                     for i in inputs)

    dtypes = []
    for f in (run.fn,) + ((run.reference,) if run.reference is not None else ()):
        inputs = as_float32(run.inputs)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = f(*inputs)
        outs = _diff(out)
        grad_out = [torch.ones_like(o) for o in outs]
        torch.autograd.grad(outs, _grad_inputs(inputs), grad_out, allow_unused=True)
        dtypes.append(_outputs(out)[0].dtype)
    problem = "" if len(set(dtypes)) == 1 else f"output dtype {dtypes[0]}, reference {dtypes[1]}"
    run.put("autocast", problem, f"bf16 autocast: output {dtypes[0]}")


_LEGS = {"forward": _forward, "backward": _backward, "double_backward": _double_backward,
         "gradcheck": _gradcheck, "gradgradcheck": _gradgradcheck, "mini_engine": _mini_engine,
         "no_mutation": _no_mutation, "upstream": _upstream, "version": _version,
         "saved_bytes": _saved_bytes, "compile": _compile, "torch_func": _torch_func,
         "autocast": _autocast}
