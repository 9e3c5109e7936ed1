"""Torch's own op database run on ext: which OpInfos are considered, how a sample input is carried
across to ext, and the comparison of values, gradients, node names and errors with torch's.

``op_db`` (``torch.testing._internal.common_methods_invocations``) lists every op with sample
inputs and error inputs. Each considered OpInfo's samples run on torch and, through NumPy copies,
on ext; what ext returns is compared with what torch returns. Ops are left out by rule (below),
or by name in ``opdb_exclusions.EXCLUDED`` with a reason; ``tools/coverage.py`` writes both into
``docs/coverage.md``.
"""

from __future__ import annotations

import contextlib
import functools
import math
import types
from dataclasses import dataclass

import numpy as np
import torch
from torch.testing._internal.common_methods_invocations import op_db

import ext

# Left out by rule, not by name: the fixed exclusions. A complex dtype for inputs or
# results (torch.fft, linalg.eig, ...), sparse or quantized layouts, float8, private names; and
# torch.nn.functional, whose ops are the model-surface issue's.
RULES = {
    "nn.functional": "torch.nn.functional (the model surface's own list)",
    "cuda": "runs on CUDA only (torch.cuda.jiterator)",
    "private": "a name starting with _",
    "complex": "needs a complex dtype for its inputs or results",
    "sparse": "a sparse or quantized layout",
}
COMPLEX_PREFIXES = ("fft.",)
COMPLEX_NAMES = {"linalg.eig", "linalg.eigvals", "view_as_complex", "view_as_real", "polar",
                 "complex", "istft", "stft", "cfloat", "cdouble", "chalf", "imag"}

REAL = (torch.float64, torch.float32)
# (an op without a floating dtype runs in the first of these it supports)
OTHER = (torch.int64, torch.int32, torch.bool, torch.uint8)
# Ops whose results are memory never written: only their shape, dtype and strides are compared.
UNINITIALIZED = {"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided",
                 "empty_permuted"}


def key(op) -> str:
    """An OpInfo's name, with its variant: ``max.reduction_with_dim``."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def rule_of(op) -> str | None:
    """The rule that leaves ``op`` out, or None when it is considered."""
    name = op.name
    if name.startswith("nn.functional."):
        return "nn.functional"
    if name.startswith("_") or "._" in name:
        return "private"
    if name.startswith("jiterator_"):
        return "cuda"
    if "sparse" in name or "sparse" in op.variant_test_name:
        return "sparse"
    if name.startswith(COMPLEX_PREFIXES) or name in COMPLEX_NAMES or not dtypes_of(op):
        return "complex"
    return None


def dtypes_of(op) -> tuple:
    """The dtypes ``op`` is run in: float64 and float32 where it supports them, else its first
    integer or bool dtype."""
    supported = op.supported_dtypes("cpu")
    real = tuple(d for d in REAL if d in supported)
    if real:
        return real
    return tuple(d for d in OTHER if d in supported)[:1]


@functools.cache
def considered() -> tuple:
    """The OpInfos considered, in op_db's order."""
    return tuple(op for op in op_db if rule_of(op) is None)


@functools.cache
def left_out() -> tuple:
    """(key, rule) of every OpInfo left out by rule."""
    return tuple((key(op), rule_of(op)) for op in op_db if rule_of(op) is not None)


# ------------------------------------------------------------------------------- carrying across
def _ext_wrapper_set_seed(op, *args, **kwargs):
    """op_db's ``wrapper_set_seed`` on ext's generator: seed 42 for the call, the state kept."""
    state = ext.get_rng_state()
    ext.manual_seed(42)
    try:
        return op(*args, **kwargs)
    finally:
        ext.set_rng_state(state)


def _rebind(fn: types.FunctionType) -> types.FunctionType:
    """A test lambda of op_db with ``torch`` in its globals standing for ext (and its seeding
    wrapper seeding ext's generator)."""
    glob = dict(fn.__globals__)
    glob["torch"] = ext
    if "wrapper_set_seed" in glob:
        glob["wrapper_set_seed"] = _ext_wrapper_set_seed
    out = types.FunctionType(fn.__code__, glob, fn.__name__, fn.__defaults__, fn.__closure__)
    out.__kwdefaults__ = fn.__kwdefaults__
    return out


def rebound(fn):
    """A function of torch's tests (a sample's ``output_process_fn_grad``) made to run on ext."""
    if isinstance(fn, types.FunctionType) and fn.__module__.startswith("torch."):
        return _rebind(fn)
    return fn


def _by_name(path: str):
    """ext's object at a torch path (``linalg.inv``), or a Tensor method for a dunder name."""
    if path.startswith("__"):
        return getattr(ext.Tensor, path)
    target = ext
    for part in path.split("."):
        target = getattr(target, part)
    return target


def ext_callable(op, variant: str = "op"):
    """ext's counterpart of ``op``'s function (``variant="op"``), Tensor method or in-place
    method; AttributeError when ext lacks it."""
    fn = getattr(op, variant)
    if fn is None:
        return None
    if isinstance(fn, types.FunctionType) and fn.__module__.startswith("torch.testing"):
        return _rebind(fn)
    if variant == "op":
        return _by_name(op.name)
    return getattr(ext.Tensor, fn.__name__)


def _carry(t: torch.Tensor):
    """An ext tensor of t's values; an expanded t (a stride 0 over a size above 1) stays
    expanded, so that a write into it is refused as torch refuses it."""
    t = t.detach().resolve_conj().resolve_neg()
    repeated = [d for d in range(t.dim()) if t.stride(d) == 0 and t.shape[d] > 1]
    core = t
    for d in repeated:
        core = core.narrow(d, 0, 1)
    out = ext.tensor(core.numpy().copy(), dtype=getattr(ext, _name(t.dtype)))
    return out.expand(*t.shape) if repeated else out


def to_ext(value, memo: dict):
    """``value`` with every torch tensor replaced by an ext tensor of the same values, dtype and
    requires_grad (one ext tensor per torch tensor, so that a tensor passed twice stays one)."""
    if isinstance(value, torch.Tensor):
        got = memo.get(id(value))
        if got is None:
            got = _carry(value)
            if value.requires_grad:
                got.requires_grad_()
            memo[id(value)] = got
        return got
    if isinstance(value, torch.dtype):
        return getattr(ext, _name(value))
    if isinstance(value, torch.device):
        return ext.device(str(value))
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(to_ext(v, memo) for v in value)
    if isinstance(value, dict):
        return {k: to_ext(v, memo) for k, v in value.items()}
    if isinstance(value, torch.memory_format) or isinstance(value, torch.layout):
        return getattr(ext, _name(value))
    return value


def leaves(value) -> list:
    """The tensors in a nested value, in order."""
    if isinstance(value, (torch.Tensor, ext.Tensor)):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in leaves(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in leaves(v)]
    return []


# ---------------------------------------------------------------------------------- comparison
class Mismatch(AssertionError):
    """ext and torch disagree on a sample; ``kind`` says in what."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind


def _name(dtype) -> str:
    """A dtype's name without its engine: ``float32``."""
    return str(dtype).rpartition(".")[2]


def _tolerance(dtype, order: int = 1) -> tuple:
    """(rtol, atol) for values of ``dtype``; a second derivative in float32 sums more rounded
    terms (a product of two backward passes), so it gets a tenth of float32's digits less."""
    if dtype in (torch.float32, ext.float32):
        return (1e-4, 1e-4) if order > 1 else (1.3e-5, 1e-5)
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-2, 1e-2
    return 1e-7, 1e-7


def compare(ours, theirs, what: str, shape_only: bool = False, order: int = 1) -> None:
    """Raise Mismatch unless ``ours`` (ext) is ``theirs`` (torch) to the dtype's tolerance
    (``order`` 2 for a second derivative)."""
    if isinstance(theirs, torch.Tensor):
        if not isinstance(ours, ext.Tensor):
            raise Mismatch("values", f"{what}: ext gave {type(ours).__name__}, torch a tensor")
        if _name(ours.dtype) != _name(theirs.dtype):
            raise Mismatch("dtype", f"{what}: ext {ours.dtype}, torch {theirs.dtype}")
        if tuple(ours.shape) != tuple(theirs.shape):
            raise Mismatch("shape", f"{what}: ext {tuple(ours.shape)}, torch "
                                    f"{tuple(theirs.shape)}")
        if shape_only:
            return
        if theirs.dtype == torch.bfloat16:  # (NumPy cannot hold it: compared as float32)
            ours, theirs = ours.float(), theirs.float()
        a = ours.detach().numpy()
        b = np.zeros(a.shape, a.dtype) if theirs._is_zerotensor() else \
            theirs.detach().resolve_conj().resolve_neg().numpy()
        if a.dtype.kind == "f":
            rtol, atol = _tolerance(theirs.dtype, order)
            ok = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
            if not ok.all():
                i = np.unravel_index(np.argmin(ok), ok.shape) if ok.ndim else ()
                raise Mismatch("values", f"{what}: at {i} ext {a[i]!r}, torch {b[i]!r}")
        elif not np.array_equal(a, b):
            raise Mismatch("values", f"{what}: ext {a!r}, torch {b!r}")
        return
    if isinstance(theirs, (list, tuple)):
        if not isinstance(ours, (list, tuple)) or len(ours) != len(theirs):
            raise Mismatch("values", f"{what}: ext gave {type(ours).__name__} of "
                                     f"{len(ours) if isinstance(ours, (list, tuple)) else '-'},"
                                     f" torch {type(theirs).__name__} of {len(theirs)}")
        for i, (o, t) in enumerate(zip(ours, theirs)):
            compare(o, t, f"{what}[{i}]", shape_only, order)
        return
    if isinstance(theirs, float) and isinstance(ours, float):
        if not (math.isclose(ours, theirs, rel_tol=1e-6, abs_tol=1e-7)
                or (math.isnan(ours) and math.isnan(theirs))):
            raise Mismatch("values", f"{what}: ext {ours!r}, torch {theirs!r}")
        return
    if isinstance(theirs, (torch.dtype,)):
        if _name(ours) != _name(theirs):
            raise Mismatch("values", f"{what}: ext {ours!r}, torch {theirs!r}")
        return
    if ours != theirs:
        raise Mismatch("values", f"{what}: ext {ours!r}, torch {theirs!r}")


def _upstream(t: torch.Tensor, i: int) -> np.ndarray:
    """A non-uniform upstream gradient for output ``i``: each element its own weight."""
    rng = np.random.default_rng(1000 + i)
    shape = tuple(t.shape)
    return np.asarray(rng.uniform(0.5, 1.5, shape) * rng.choice((-1.0, 1.0), shape))


def _differentiable(outs: list) -> list:
    return [i for i, o in enumerate(outs)
            if isinstance(o, torch.Tensor) and o.requires_grad and o.dtype.is_floating_point]


@contextlib.contextmanager
def _seeded():
    """Both engines' generators seeded alike: a random op's sample gives the same numbers."""
    torch.manual_seed(0)
    ext.manual_seed(0)
    yield


@dataclass
class Outcome:
    """What running one sample showed."""

    torch_failed: bool = False  # (torch itself refused the sample: nothing to compare)


def run_sample(op, sample, dtype, *, grads: bool = True, variants: bool = True) -> Outcome:
    """Run one sample on both engines and compare; Mismatch or ext's own error when they
    disagree."""
    fn = ext_callable(op)
    memo: dict = {}
    args = (sample.input, *sample.args)
    e_args = to_ext(args, memo)
    e_kwargs = to_ext(sample.kwargs, memo)
    try:
        with _seeded():
            expected = op(sample.input, *sample.args, **sample.kwargs)
    except Exception:  # noqa: BLE001 - a sample torch refuses says nothing of ext
        return Outcome(torch_failed=True)
    with _seeded():
        got = fn(*e_args, **e_kwargs)
    shape_only = op.name in UNINITIALIZED
    compare(got, expected, "result", shape_only)
    if variants and not shape_only:
        _check_method(op, sample, expected, memo)
    if variants and not shape_only:
        _check_inplace(op, sample)
    if grads and op.supports_autograd and dtype.is_floating_point:
        _check_grads(op, sample, expected, got, memo)
        if op.supports_forward_ad and not shape_only:
            _check_forward(op, sample, fn)
    return Outcome()


def _check_method(op, sample, expected, memo: dict) -> None:
    """The Tensor method gives the function's result (on ext; torch's own tests check torch's)."""
    if op.method_variant is None or not isinstance(sample.input, torch.Tensor):
        return
    method = ext_callable(op, "method_variant")
    e_in = to_ext(sample.input, memo)
    with _seeded():
        got = method(e_in, *to_ext(sample.args, memo), **to_ext(sample.kwargs, memo))
    compare(got, expected, "method")


def _check_inplace(op, sample) -> None:
    """The in-place variant writes the function's result into its input and returns it."""
    if op.inplace_variant is None or not isinstance(sample.input, torch.Tensor):
        return
    t_in = sample.input.detach().clone()
    t_args = [a.detach() if isinstance(a, torch.Tensor) else a for a in sample.args]
    t_kwargs = {k: v.detach() if isinstance(v, torch.Tensor) else v
                for k, v in sample.kwargs.items()}
    try:
        with _seeded():
            expected = op.inplace_variant(t_in, *t_args, **t_kwargs)
    except Exception:  # noqa: BLE001 - torch refuses this one in place (a broadcast input)
        return
    memo: dict = {}
    e_in = to_ext(t_in, memo)
    memo.clear()
    e_in = to_ext(sample.input.detach().clone(), memo)
    inplace = ext_callable(op, "inplace_variant")
    with _seeded():
        got = inplace(e_in, *to_ext(t_args, memo), **to_ext(t_kwargs, memo))
    compare(got, expected, "in-place result")
    if got is not e_in:
        raise Mismatch("values", "in-place: ext returned another tensor than its input")


def _dual_inputs(sample) -> list:
    """The floating tensors of a sample that require grad: the ones given tangents."""
    found = [t for t in leaves((sample.input, sample.args, sample.kwargs))
             if t.requires_grad and t.is_leaf and t.dtype.is_floating_point]
    return list({id(t): t for t in found}.values())


def _tangent(t: torch.Tensor, i: int) -> np.ndarray:
    rng = np.random.default_rng(2000 + i)
    return np.asarray(rng.uniform(-1.0, 1.0, tuple(t.shape)))


def _check_forward(op, sample, fn) -> None:
    """Forward-mode tangents of every floating output, each input given its own tangent."""
    inputs = _dual_inputs(sample)
    if not inputs:
        return
    tangents = [_tangent(t, i) for i, t in enumerate(inputs)]

    def run(T, call, value, convert):
        fwAD = T.autograd.forward_ad
        memo: dict = {}
        with fwAD.dual_level():
            duals = {}
            for t, tan in zip(inputs, tangents):
                primal = convert(t, memo)
                duals[id(t)] = fwAD.make_dual(primal, T.tensor(tan, dtype=primal.dtype))
            def swap(v):
                if isinstance(v, torch.Tensor):
                    return duals[id(v)] if id(v) in duals else convert(v, memo)
                if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
                    return type(v)(swap(x) for x in v)
                if isinstance(v, dict):
                    return {k: swap(x) for k, x in v.items()}
                return convert(v, memo)
            with _seeded():
                out = call(*swap((value.input, *value.args)), **swap(value.kwargs))
            outs = [o for o in _flat(out) if isinstance(o, T.Tensor)
                    and o.dtype.is_floating_point]
            return [fwAD.unpack_dual(o).tangent for o in outs], outs

    # (each engine's primal from the sample's own tensor: to_ext keys its memo by identity, so
    # a detached temporary, whose id may be reused once freed, must not stand in)
    t_tans, t_outs = run(torch, op, sample,
                         lambda v, memo: v.detach() if isinstance(v, torch.Tensor) else v)
    e_tans, e_outs = run(ext, fn, sample, to_ext)
    for n, (e, t, o, eo) in enumerate(zip(e_tans, t_tans, t_outs, e_outs)):
        t = torch.zeros_like(o) if t is None else t
        e = ext.zeros_like(eo) if e is None else e
        compare(e, t, f"forward-mode tangent of output {n}")


def _flat(value) -> list:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    return [value]


def _check_grads(op, sample, expected, got, memo: dict) -> None:
    """Gradients of every differentiable output with a non-uniform upstream gradient, and the
    node name of the first output."""
    t_outs = _flat(sample.output_process_fn_grad(expected))
    e_outs = _flat(rebound(sample.output_process_fn_grad)(got))
    diff = _differentiable(t_outs)
    t_inputs = [t for t in leaves((sample.input, sample.args, sample.kwargs))
                if t.requires_grad and t.is_leaf]
    t_inputs = list({id(t): t for t in t_inputs}.values())
    if not diff or not t_inputs:
        return
    e_inputs = [memo[id(t)] for t in t_inputs]
    t_node = type(t_outs[diff[0]].grad_fn).__name__
    e_node = type(getattr(e_outs[diff[0]], "grad_fn", None)).__name__
    if e_node != t_node:
        raise Mismatch("node", f"ext {e_node}, torch {t_node}")
    ups = [_upstream(t_outs[i], i) for i in diff]
    t_grads = torch.autograd.grad([t_outs[i] for i in diff], t_inputs,
                                  [torch.from_numpy(u).to(t_outs[i].dtype)
                                   for u, i in zip(ups, diff)], allow_unused=True,
                                  retain_graph=True)
    e_grads = ext.autograd.grad([e_outs[i] for i in diff], e_inputs,
                                [ext.tensor(u, dtype=e_outs[i].dtype)
                                 for u, i in zip(ups, diff)], allow_unused=True,
                                retain_graph=True)
    for n, (e, t, x) in enumerate(zip(e_grads, t_grads, t_inputs)):
        t = torch.zeros_like(x) if t is None else t
        e = ext.zeros_like(memo[id(x)]) if e is None else e
        compare(e, t, f"gradient of input {n}")
    if op.supports_gradgrad:
        _check_gradgrad(t_outs, e_outs, diff, ups, t_inputs, e_inputs)


def _check_gradgrad(t_outs, e_outs, diff, ups, t_inputs, e_inputs) -> None:
    """Double backward: the gradient, in the inputs, of the first gradients weighted by fixed
    non-uniform weights."""
    def second(T, outs, inputs):
        first = T.autograd.grad([outs[i] for i in diff], inputs,
                                [T.tensor(u, dtype=outs[i].dtype) for u, i in zip(ups, diff)],
                                create_graph=True, allow_unused=True)
        terms = [(g * T.tensor(_tangent(g, 3000 + k), dtype=g.dtype)).sum()
                 for k, g in enumerate(first) if g is not None and g.requires_grad]
        if not terms:
            return None
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return T.autograd.grad(total, inputs, allow_unused=True)

    try:
        t_second = second(torch, t_outs, t_inputs)
    except RuntimeError:  # (torch's own double backward fails here: nothing to compare)
        return
    e_second = second(ext, e_outs, e_inputs)
    if t_second is None:
        return
    if e_second is None:
        raise Mismatch("gradient", "double backward: ext's first gradients do not require grad")
    for n, (e, t, x, ex) in enumerate(zip(e_second, t_second, t_inputs, e_inputs)):
        t = torch.zeros_like(x) if t is None else t
        e = ext.zeros_like(ex) if e is None else e
        compare(e, t, f"second-order gradient of input {n}", order=2)


def run_errors(op) -> list:
    """Each of op's error inputs on ext: the ones where ext raised another exception type than
    torch's (or none), as (sample, expected type, what ext did)."""
    if op.error_inputs_func is None:
        return []
    fn = ext_callable(op)
    wrong = []
    for ei in op.error_inputs("cpu"):
        s = ei.sample_input
        try:
            op(s.input, *s.args, **s.kwargs)
        except Exception:  # noqa: BLE001, S112 - torch raises: compare with ext below
            pass
        else:
            continue  # (an error input of torch's reference implementations only)
        memo: dict = {}
        try:
            args, kwargs = to_ext((s.input, *s.args), memo), to_ext(s.kwargs, memo)
        except Exception:  # noqa: BLE001, S112 - an input NumPy cannot carry (65 dims, meta)
            continue
        try:
            fn(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - the type is what is compared
            if not isinstance(err, ei.error_type):
                wrong.append((s, ei.error_type.__name__, f"{type(err).__name__}: {err}"))
            continue
        wrong.append((s, ei.error_type.__name__, "no error"))
    return wrong


# ------------------------------------------------------------------------------------- status
# The fixed set of reasons an OpInfo is excluded by name (opdb_exclusions.EXCLUDED).
REASONS = {
    "not built": "ext has no function of this name yet",
    "argument form": "ext has the name, but not every argument form the samples use",
    "values differ": "a sample's result differs from torch's",
    "gradient differs": "a sample's gradient or node differs from torch's",
    "error inputs": "an error input raises another exception type than torch's",
}


def samples(op, dtype, first: int | None):
    """op's sample inputs in ``dtype`` (requiring grad where the op is differentiable), the
    first ``first`` of them or all."""
    grad = op.supports_autograd and dtype.is_floating_point
    torch.manual_seed(0)  # (the same samples on every run)
    it = op.sample_inputs("cpu", dtype, requires_grad=grad)
    for i, s in enumerate(it):
        if first is not None and i >= first:
            return
        yield s


def check(op, first: int | None = 1) -> tuple[str | None, str]:
    """Run ``op``'s samples (the first ``first`` per dtype, or all for None) and its error inputs
    on both engines: (None, "") when ext agrees with torch on all of them, else (reason,
    detail) with a reason from REASONS."""
    try:
        ext_callable(op)
    except AttributeError as err:
        return "not built", str(err)
    ran = 0
    for dtype in dtypes_of(op):
        for n, s in enumerate(samples(op, dtype, first)):
            try:
                out = run_sample(op, s, dtype)
            except Mismatch as m:
                kind = "gradient differs" if m.kind in ("node", "gradient") or \
                    "gradient" in str(m) or "tangent" in str(m) else "values differ"
                return kind, f"{dtype} sample {n}: {m}"
            except (TypeError, AttributeError, NotImplementedError) as err:
                return "argument form", f"{dtype} sample {n}: {type(err).__name__}: {err}"
            except Exception as err:  # noqa: BLE001 - whatever ext raised is the finding
                return "values differ", f"{dtype} sample {n}: {type(err).__name__}: {err}"
            ran += not out.torch_failed
    try:
        wrong = run_errors(op)
    except Exception as err:  # noqa: BLE001 - error inputs that cannot even be built
        return "error inputs", f"{type(err).__name__}: {err}"
    if wrong:
        s, want, did = wrong[0]
        return "error inputs", f"{len(wrong)} error input(s): expected {want}, ext: {did}"
    if not ran:
        return "argument form", "no sample ran on torch"
    return None, ""


def main(argv: list[str]) -> None:
    """``python tests/opdb.py [--all] NAME...``: each named OpInfo's status (every variant of a
    name; ``--all``: every sample, else the first per dtype)."""
    import sys
    import warnings

    warnings.filterwarnings("ignore")
    first = None if "--all" in argv else 1
    names = [a for a in argv if not a.startswith("--")]
    for op in considered():
        if op.name in names or key(op) in names:
            reason, detail = check(op, first)
            print(f"{key(op)}: {'ok' if reason is None else reason + ': ' + detail}")
    sys.stdout.flush()


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
