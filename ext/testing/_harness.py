"""The parity harness: ``check`` and its legs, one function per check.

``check(fn, *inputs, reference=None, **options)`` runs ``fn`` (an ext Function, a callable built
from Functions, a plain ``torch.autograd.Function`` or any torch callable) through the checklist
below and returns a ``ParityReport``; ``assert_parity`` does the same and raises AssertionError
naming what differs. ``saved_bytes`` is the meter the saved-tensor check uses.

Checks (each passes, fails, or is skipped with its reason):

- ``forward``, ``backward``, ``double_backward``: against ``reference``, with a random
  non-uniform grad_output; a first-order gradient that has no graph where the reference's has,
  or a second-order one with nan where the reference's has none, fails;
- ``gradcheck``, ``gradgradcheck``: torch's, in float64;
- ``mini_engine``: the same call on ext tensors gives torch's values, gradients and second
  derivatives (skipped, and said so, when ``fn`` does not run on ext tensors);
- ``hooks``: the output's tensor hook, its node's pre-hook and post-hook and the inputs' hooks
  fire in the reference's order (the node's own three first, then each input's once), and on
  the mini-engine in exactly torch's order;
- ``no_mutation``: inputs and the incoming gradient are left as they were;
- ``upstream``: behind ``exp`` (which saves its output), the gradient is the reference's;
- ``version``: each input, written in place after forward, either fails backward with
  torch's version error or leaves the gradients as they were (backward does not read it); a
  gradient computed from the new value is a missing version check;
- ``saved_bytes``: what the op saves (unique storages, via saved_tensors_hooks) is at most what
  the reference saves;
- ``compile``: ``torch.compile(fullgraph=True)`` (``backend="aot_eager"`` unless told) equals
  eager, with no graph break;
- ``torch_func``: vmap, grad and jacrev equal the reference's;
- ``autocast``: forward and backward run under CPU bf16 autocast, with the reference's dtype.

The report is written for the person who fixes the Function: it names the first failing check in
dependency order as the likely cause (a wrong backward fails the checks that run it too), shows
each value mismatch at its worst element (index, expected, got, absolute and relative error) and
gradcheck's at its worst Jacobian entry, gives each error's whole message, says a failure that
repeats an earlier one as "same as <check>", never counts a check that did not run or could not
be judged as passing, and collects the warnings raised while checking instead of printing them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.autograd.gradcheck import GradcheckError

from .. import _dtype
from .. import autograd as _ext_autograd
from .._factories import tensor
from .._tensor import Tensor
from ..autograd import grad
from .parity import (
    CHECKS,
    ParityReport,
    add_warnings,
    collected_warnings,
    error_text,
    jacobian_mismatch,
    settled,
    worst_element,
)

__all__ = ["check", "assert_parity", "saved_bytes", "ParityReport", "CHECKS"]


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
    """'' when a (what fn gave) and b (what was expected) agree (None counts as zeros), else
    what differs: at the worst element, its index, both values and the errors."""
    if a is None and b is None:
        return ""
    if a is None or b is None:
        other = b if a is None else a
        if isinstance(other, torch.Tensor) and not other.detach().any():
            return ""
        if a is None:
            return f"{what}: got None, expected a tensor that is not zero"
        return f"{what}: got a tensor that is not zero, expected None"
    a, b = a.detach(), b.detach()
    try:
        torch.testing.assert_close(a, b, atol=atol, rtol=rtol, equal_nan=True)
    except AssertionError as e:
        if a.shape != b.shape or a.dtype != b.dtype or a.is_complex():
            return f"{what}: {' '.join(str(e).split())}"  # (a shape or dtype: one line)
        return f"{what}: {worst_element(a, b, atol, rtol)}"
    return ""


def _grads(out, inputs: list, grad_out: list, create_graph: bool = False) -> tuple:
    outs = _diff(out)
    if not outs:  # (an op whose result is not differentiable: a comparison, argmax)
        return (None,) * len(inputs)
    return torch.autograd.grad(outs, inputs, grad_out[: len(outs)], create_graph=create_graph,
                               allow_unused=True)


def _structure(out) -> tuple:
    """What a result is made of: a tensor (with its shape), a tuple of them, anything else."""
    if isinstance(out, torch.Tensor):
        return ("tensor", tuple(out.shape))
    if isinstance(out, (tuple, list)):
        return ("tuple", tuple(_structure(o) for o in out))
    return (type(out).__name__,)


def _same_structure(got, want) -> None:
    """Refuse a reference whose result is not shaped as fn's: the comparison would be
    meaningless."""
    if _structure(got) != _structure(want):
        raise ValueError(f"check(): fn and the reference return different structures: "
                         f"{_structure(got)} and {_structure(want)}")


class _Run:
    def __init__(self, fn, inputs, reference, seed, atol, rtol):
        self.fn, self.inputs, self.reference = fn, inputs, reference
        self.atol, self.rtol = atol, rtol
        gen = np.random.default_rng(seed)
        out = fn(*_fresh(inputs))
        if reference is not None:
            _same_structure(out, reference(*_fresh(inputs)))
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
    with collected_warnings() as caught:
        run = _Run(call, inputs, reference, seed, atol, rtol)
        run.backend = compile_backend
        for name in CHECKS:
            if name in skip:
                run.report[name] = ("skip", skip[name])
            elif not run.grad_out and name in _DIFFERENTIATING:
                run.report[name] = ("skip", "no output is differentiable")
            else:
                _run_leg(run, name)
    report = ParityReport(_name(fn), settled(run.report, reference is not None))
    add_warnings(report, caught)
    return report


def _run_leg(run: _Run, name: str) -> None:
    try:
        _LEGS[name](run)
    except Exception as e:  # a leg that raises is a failure, reported with the whole error
        run.report[name] = ("fail", error_text(e))


def assert_parity(fn, *inputs, **kwargs) -> ParityReport:
    """``check``, raising AssertionError with every failed check when one fails."""
    report = check(fn, *inputs, **kwargs)
    if not report.ok:
        raise AssertionError(f"{report.name} differs:\n  {report.cause_line()}\n" + "\n".join(
            f"  {k}: {d}" for k, d in report.failures().items()))
    return report


# ---------------------------------------------------------------------------------- the legs
# (the checks that differentiate the output, which an op such as eq or argmax has not)
_DIFFERENTIATING = {"backward", "double_backward", "gradcheck", "gradgradcheck", "hooks",
                    "upstream", "version", "torch_func"}


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
                f"the reference has none ({error_text(e)})")
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
    """The gradient of sum(g * w), w a fixed ramp over g's elements (torch or ext tensors)."""
    if g is None or not g.requires_grad:
        return (None,) * len(inputs)
    w = np.linspace(0.5, 1.5, g.numel()).reshape(tuple(g.shape))
    if isinstance(g, Tensor):
        return grad((g * tensor(w, dtype=g.dtype)).sum(), inputs, retain_graph=True,
                    allow_unused=True)
    return torch.autograd.grad((g * torch.tensor(w, dtype=g.dtype)).sum(), inputs,
                               retain_graph=True, allow_unused=True)


def _gradcheck(run: _Run) -> None:
    _numerical(run, "gradcheck", torch.autograd.gradcheck)


def _gradgradcheck(run: _Run) -> None:
    _numerical(run, "gradgradcheck", torch.autograd.gradgradcheck)


def _numerical(run: _Run, name: str, checker) -> None:
    """torch's gradcheck or gradgradcheck in float64; where fn fails it and the reference fails
    it too, the inputs sit where the op's gradient is not its derivative (a tie, a kink, a
    straight-through rule), and the check is skipped, saying so."""
    try:
        checker(run.fn, _float64(run.inputs))
    except Exception as e:
        if run.reference is not None:
            try:
                checker(run.reference, _float64(run.inputs))
            except Exception as r:
                run.report[name] = ("skip", "the reference fails it too: "
                                    + _numerical_error(run, name, run.reference, r))
                return
        run.report[name] = ("fail", _numerical_error(run, name, run.fn, e))
        return
    run.put(name, "")


def _numerical_error(run: _Run, name: str, fn, error: Exception) -> str:
    """gradcheck's error, its Jacobians (which it prints whole) told by their worst entry."""
    if not (isinstance(error, GradcheckError)
            and "Jacobian mismatch" in str(error)):
        return error_text(error)
    inputs = _float64(run.inputs)
    if name == "gradcheck":
        worst = jacobian_mismatch(fn, inputs, "output")
    else:  # (the derivative of the gradients, with the run's grad_output held fixed)
        worst = jacobian_mismatch(_gradients_of(fn, run.grad_out), inputs, "gradient")
    return f"GradcheckError: {worst}" if worst else error_text(error)


def _gradients_of(fn, grad_out: list) -> Callable:
    """The gradients of fn's differentiable outputs as a function of its inputs (zeros for
    an input the output does not reach), with a graph, for their own derivative."""
    def gradients(*args):
        outs = _diff(fn(*args))
        leaves = _grad_inputs(args)
        got = torch.autograd.grad(outs, leaves, [g.to(o.dtype) for g, o in zip(grad_out, outs)],
                                  create_graph=True, allow_unused=True)
        return tuple(torch.zeros_like(x) if g is None else g for g, x in zip(got, leaves))
    return gradients


def _float64(inputs: tuple) -> tuple:
    return tuple(i.detach().to(torch.float64).requires_grad_(i.requires_grad)
                 if isinstance(i, torch.Tensor) and i.is_floating_point() else i for i in inputs)


def _to_ext(inputs: tuple) -> tuple:
    return tuple(_ext_value(i) for i in inputs)


def _ext_value(value):
    """An argument for the mini-engine: a torch tensor as an ext one (nested in a list too), a
    torch dtype as ext's."""
    if isinstance(value, torch.Tensor):
        return _ext_tensor(value.detach()).requires_grad_(value.requires_grad)
    if isinstance(value, (list, tuple)):
        return type(value)(_ext_value(v) for v in value)
    if isinstance(value, torch.dtype):
        return getattr(_dtype, str(value).rsplit(".", 1)[-1])
    return value


def _ext_tensor(t: torch.Tensor) -> Tensor:
    """A torch tensor's values as a new ext tensor (bfloat16 through float32, which holds it
    exactly: neither engine hands bfloat16 to NumPy)."""
    if t.dtype == torch.bfloat16:
        return tensor(t.float().numpy()).to(_dtype.bfloat16)
    return tensor(t.numpy())


def _as_torch(a):
    if a is None:
        return None
    if a.dtype == _dtype.bfloat16:
        return torch.from_numpy(a.detach().float().numpy()).to(torch.bfloat16)
    return torch.from_numpy(np.array(a.detach().numpy()))


def _on_ext(run: _Run, name: str):
    """fn on ext copies of the inputs, or None (the check skipped) when it does not run there."""
    inputs = _to_ext(run.inputs)
    try:
        return inputs, run.fn(*inputs)
    except Exception as e:
        # (a torch callable: an ext tensor where it wants a torch one fails as a TypeError or
        # AttributeError, or inside torch's own code, as a custom op's schema check)
        if not isinstance(e, (TypeError, AttributeError)) and not _raised_in_torch(e):
            raise
        run.report[name] = ("skip", f"does not run on ext tensors ({error_text(e)})")
        return None


def _raised_in_torch(e: Exception) -> bool:
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename.startswith(_TORCH_DIR)


_TORCH_DIR = str(Path(torch.__file__).parent)


def _mini_engine(run: _Run) -> None:
    ran = _on_ext(run, "mini_engine")
    if ran is None:
        return
    inputs, out = ran
    mine = _fresh(run.inputs)
    want = run.fn(*mine)
    problems = [_close(_as_torch(a), b, f"output {i}", run.atol, run.rtol)
                for i, (a, b) in enumerate(zip(_outputs(out), _outputs(want)))]
    problems += [f"output {i} requires_grad={a.requires_grad}, torch's {b.requires_grad}"
                 for i, (a, b) in enumerate(zip(_outputs(out), _outputs(want)))
                 if getattr(a, "requires_grad", None) != getattr(b, "requires_grad", None)]
    outs = [o for o in _outputs(out) if isinstance(o, Tensor) and o.requires_grad]
    leaves = [i for i in inputs if isinstance(i, Tensor) and i.requires_grad]
    if not outs:
        run.put("mini_engine", _on_ext_problems(problems), "values (not differentiable)")
        return
    got = grad(outs, leaves, [_ext_tensor(g) for g in run.grad_out][: len(outs)],
               create_graph=True, allow_unused=True)
    ref = _grads(want, _grad_inputs(mine), run.grad_out, create_graph=True)
    for i, (a, b) in enumerate(zip(got, ref)):
        problems.append(_close(_as_torch(a), b, f"gradient {i}", run.atol, run.rtol))
    for i, (a, b) in enumerate(zip(got, ref)):
        try:  # (second derivatives, where torch's backward is differentiable)
            second = _weighted_grad(b, _grad_inputs(mine))
        except RuntimeError:
            continue
        ours = _weighted_grad(a, leaves)
        problems += [_close(_as_torch(x), y, f"second derivative {i},{j}", run.atol, run.rtol)
                     for j, (x, y) in enumerate(zip(ours, second))]
    run.put("mini_engine", _on_ext_problems(problems))


def _on_ext_problems(problems: list) -> str:
    found = "; ".join(p for p in problems if p)
    return f"on ext tensors (expected: fn's results on torch tensors): {found}" if found else ""


def _hook_order(fn, inputs: tuple, grad_out: list) -> list:
    """Which hooks fire, in order, in the backward of fn's first differentiable output."""
    on_ext = any(isinstance(i, Tensor) for i in inputs)
    fired: list = []
    y = next(o for o in _outputs(fn(*inputs)) if getattr(o, "requires_grad", False))
    for k, leaf in enumerate(i for i in inputs if getattr(i, "requires_grad", False)):
        leaf.register_hook(lambda g, k=k: fired.append(f"input {k}"))
    y.register_hook(lambda g: fired.append("output"))
    if y.grad_fn is not None:  # (None: fn returned a leaf input as it is, as dropout(p=0))
        y.grad_fn.register_prehook(lambda g: fired.append("pre"))
        y.grad_fn.register_hook(lambda gi, go: fired.append("post"))
    if on_ext:
        _ext_autograd.backward(y, _ext_tensor(grad_out[0]))
    else:
        torch.autograd.backward(y, grad_out[0])
    return fired


def _hooks(run: _Run) -> None:
    if not run.grad_out:
        run.report["hooks"] = ("skip", "no differentiable output")
        return
    mine = _hook_order(run.fn, _fresh(run.inputs), run.grad_out)
    problems, want = [], None
    if run.reference is not None:
        want = _hook_order(run.reference, _fresh(run.inputs), run.grad_out)
        # (the reference may be a composite of several nodes: its inputs' hooks may fire in
        # another order, each once)
        if mine[:3] != want[:3] or sorted(mine[3:]) != sorted(want[3:]):
            problems.append(f"fired {mine}, the reference {want}")
    detail = " < ".join(mine)
    ran = _on_ext(run, "hooks")
    if ran is None:
        if want is None:  # (compared with nothing)
            run.report["hooks"] = ("skip", "no reference given, and fn does not run on ext "
                                           f"tensors (torch fired {detail})")
        else:
            run.put("hooks", "; ".join(problems), detail + " (mini-engine skipped)")
        return
    # (exactly torch's order for the same graph: fn's own on torch, or, where fn on ext builds
    # the reference's graph, as a built-in op does, the reference's)
    ours = _hook_order(run.fn, ran[0], run.grad_out)
    if ours != mine and ours != want:
        problems.append(f"the mini-engine fired {ours}, torch {mine}")
    run.put("hooks", "; ".join(problems), detail)


def _no_mutation(run: _Run) -> None:
    inputs = _fresh(run.inputs)
    before = [(i.detach().clone(), i._version) for i in inputs if isinstance(i, torch.Tensor)]
    out = run.fn(*inputs)
    grads = [g.clone() for g in run.grad_out]
    _grads(out, _grad_inputs(inputs), grads)
    problems = []
    for k, ((value, version), i) in enumerate(zip(before, [i for i in inputs
                                                           if isinstance(i, torch.Tensor)])):
        if i._version != version or not _same(i.detach(), value):
            problems.append(f"input {k} was written")
    if any(not _same(g, h) for g, h in zip(grads, run.grad_out)):
        problems.append("the incoming gradient was written")
    run.put("no_mutation", "; ".join(problems))


def _same(a, b) -> bool:
    """Equal, nan where nan (an input may hold nan on purpose)."""
    return torch.equal(a, b) or (a.shape == b.shape and a.dtype == b.dtype and bool(
        ((a == b) | (a.isnan() & b.isnan())).all()))


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
    # Each input that requires grad, written in place after forward (scaled: a new value), then
    # backward: torch's version error is right, and so is the first gradient unchanged (backward
    # does not read that input); a gradient computed from the new value is a missing check (a
    # tensor kept on ctx instead of saved with save_for_backward).
    plain = _fresh(run.inputs)
    want = _grads(run.fn(*plain), _grad_inputs(plain), run.grad_out)
    checked, unread, problems = [], [], []
    for k, arg in enumerate(run.inputs):
        if not (isinstance(arg, torch.Tensor) and arg.requires_grad and arg.is_floating_point()):
            continue
        leaves = list(_fresh(run.inputs))
        inputs = [i.clone() if j == k else i for j, i in enumerate(leaves)]
        out = run.fn(*inputs)
        with torch.no_grad():
            inputs[k].mul_(1.5).add_(0.25)
        try:
            got = _grads(out, _grad_inputs(leaves), run.grad_out)
        except RuntimeError as e:
            # (torch's version error; or, for an output that is a view of the input, its
            # refusal to let a custom Function's view see its base written)
            if "modified by an inplace operation" not in str(e) and \
                    "has been modified inplace" not in str(e):
                raise
            checked.append(k)
            continue
        differs = [i for i, (a, b) in enumerate(zip(got, want))
                   if _close(a, b, "", run.atol, run.rtol)]
        if differs:
            problems.append(f"input {k} was written after forward, and backward used the new "
                            f"value without a version error (gradient {differs[0]} changed)")
        else:
            unread.append(k)
    detail = ", ".join([f"input {k}: version error" for k in checked]
                       + [f"input {k}: not read by backward" for k in unread])
    run.put("version", "; ".join(problems), detail)


def _saved_bytes(run: _Run) -> None:
    mine = saved_bytes(run.fn, *_fresh(run.inputs))
    if run.reference is None:
        run.report["saved_bytes"] = ("skip", f"no reference given (fn saves {mine} B)")
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

    # (transformed over the inputs that require grad; the others, index tensors, masks and
    # constant statistics, are constants)
    where = [k for k, a in enumerate(run.inputs)
             if isinstance(a, torch.Tensor) and a.requires_grad]
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
    argnums = tuple(range(len(tensors)))
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
         "hooks": _hooks,
         "no_mutation": _no_mutation, "upstream": _upstream, "version": _version,
         "saved_bytes": _saved_bytes, "compile": _compile, "torch_func": _torch_func,
         "autocast": _autocast}
