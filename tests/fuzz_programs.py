"""Random programs for the deep differential fuzzer (``fuzz_deep.py``), drawn from a seed.

A program is a list of Python statements over a backend module ``T`` (``ext`` or ``torch``) and
values ``v0, v1, ...``: leaves of random dtype (float64, float32, int64, bool) and shape (0-d,
size-1 and size-0 dims included), then statements drawn from the op families below, each reading
earlier values (a value is often read several times: the programs are DAGs, not chains). The
families cover elementwise math with promotion, reductions, shape and view ops, indexing reads and
writes, gather/scatter/index ops, matmul, nn.functional, in-place writes through views of views,
tensor and node hooks that log what they see (and some that change the gradient), custom Functions
(several outputs, non-differentiable outputs, mark_dirty, views of inputs, once_differentiable),
retain_grad, detach_, local grad modes, mid-program backward calls, and calls with bad arguments.
A tail builds a weighted loss and runs backward, ``autograd.grad`` and double backward.

Each statement is run on torch while drawing (a shadow run): torch gives the shapes, dtypes and
values the next draws depend on, and guards drop a statement whose result would be ill-conditioned
(an input of a kink within rounding of it, values above ``MAX_ABS``). A statement torch rejects is
kept: it is an error check, and the program goes on without its outputs.
"""

from __future__ import annotations

import math
import random
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch

KINK_GAP = 1e-6  # an input of a kink is on it, or this far from it
MAX_ABS = 1e4  # statements whose finite results exceed this are not kept

# What every program's namespace holds (printed at the head of a repro).
PREAMBLE = """\
fw = T.autograd.forward_ad
nan, inf = float('nan'), float('inf')
log = []
def H(tag, x, ret=None):
    log.append((tag, x))
    return ret
def W(t):
    # In t's floating dtype, so that a float32 program is compared at float32's precision.
    w = T.tensor(0.5 + 0.25 * (np.arange(t.numel()) % 7).reshape(tuple(t.shape)))
    return w.to(t.dtype) if t.is_floating_point() else w
"""

# Custom Functions a program may use; the ones it names are printed with its repro.
FUNCTIONS = {
    "Two": '''
class Two(T.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2, x * x
    @staticmethod
    def backward(ctx, g1, g2):
        x, = ctx.saved_tensors
        return g1 * 2 + g2 * 2 * x
''',
    "NonDiff": '''
class NonDiff(T.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        m = (x > 0).to(x.dtype)
        ctx.mark_non_differentiable(m)
        return x * 3, m
    @staticmethod
    def backward(ctx, g, gm):
        return g * 3
''',
    "Dirty": '''
class Dirty(T.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x
    @staticmethod
    def backward(ctx, g):
        return g * 2
''',
    "DirtyTwo": '''
class DirtyTwo(T.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        x.add_(y)
        ctx.mark_dirty(x)
        return x, y * 2
    @staticmethod
    def backward(ctx, gx, gy):
        return gx, gx + gy * 2
''',
    "ViewOut": '''
class ViewOut(T.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x[...]
    @staticmethod
    def backward(ctx, g):
        return g * 1
''',
    "Once": '''
class Once(T.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x
    @staticmethod
    @T.autograd.function.once_differentiable
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * 2 * x
''',
    "NoMat": '''
class NoMat(T.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2, x + 1
    @staticmethod
    def backward(ctx, g1, g2):
        r = None if g1 is None else g1 * 2
        if g2 is not None:
            r = g2 if r is None else r + g2
        return r
''',
    "Scale": '''
class Scale(T.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y
    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return (g * y if ctx.needs_input_grad[0] else None,
                g * x if ctx.needs_input_grad[1] else None)
''',
    "Jvp": '''
class Jvp(T.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x.sin()
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * x.cos()
    @staticmethod
    def jvp(ctx, t):
        x, = ctx.saved_tensors
        return t * x.cos()
''',
    "BadCount": '''
class BadCount(T.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2
    @staticmethod
    def backward(ctx, g):
        return g * 2, g
''',
}

FLOATS = ("float64", "float32")
DTYPES = ("float64", "float64", "float32", "float32", "int64", "bool")


@dataclass(frozen=True)
class Stmt:
    """One statement: its source, the op it exercises (coverage and signatures), the dtype of
    its first input, and what the runner looks at after it."""

    code: str
    op: str
    dtype: str = ""
    kind: str = "op"  # "leaf", "op", "backward" (gradients and hook logs are read after it)
    fwd: str | None = None  # the forward-AD mode's form of a leaf statement (a dual)


@dataclass(frozen=True)
class Program:
    """A seeded program: its statements, and the custom Functions they name."""

    seed: int
    stmts: tuple[Stmt, ...]
    classes: tuple[str, ...] = field(default=())

    def with_stmts(self, stmts) -> Program:
        """The same program with other statements (shrinking)."""
        stmts = tuple(stmts)
        text = "\n".join(s.code for s in stmts)
        return Program(self.seed, stmts, tuple(c for c in self.classes if c in text))


def namespace(T) -> dict:
    """A fresh namespace in which a program's statements run on backend ``T``."""
    ns = {"T": T, "np": np}
    exec(PREAMBLE, ns)
    return ns


def fmt(x) -> str:
    """Python source for a number or nested list, nan and inf by name."""
    if isinstance(x, list):
        return "[" + ", ".join(fmt(v) for v in x) + "]"
    if isinstance(x, bool):
        return repr(x)
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
    return repr(x)


def _clear(t, kink=0.0, gap=KINK_GAP) -> bool:
    d = (t.detach().double() - kink).abs()
    return bool(((d == 0) | (d > gap) | d.isnan()).all())


def _holds(pred, t) -> bool:
    try:
        return bool(pred(t))
    except Exception:  # reading a stale multi-output view's grad_fn raises
        return False


def _tame(x) -> bool:
    if isinstance(x, (tuple, list)):
        return all(_tame(v) for v in x)
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.numel() == 0:
        return True
    d = x.detach()
    d = d[d.isfinite()]
    return d.numel() == 0 or float(d.abs().max()) <= MAX_ABS


class Gen:
    """Draws one program from ``seed``, running each statement on torch (the shadow run)."""

    def __init__(self, seed: int):
        self.seed = seed
        self.r = random.Random(seed)
        self.ns = namespace(torch)
        self.stmts: list[Stmt] = []
        self.names: list[str] = []  # tensor values, in order of creation
        self.classes: list[str] = []
        self.count = 0
        self.specials = self.r.random() < 0.3  # this program's leaves may hold nan and inf

    # -- draws ------------------------------------------------------------------------------
    def choice(self, seq):
        return seq[self.r.randrange(len(seq))]

    def coin(self, p=0.5) -> bool:
        return self.r.random() < p

    def integer(self, lo, hi) -> int:
        return self.r.randint(lo, hi)

    def val(self, name):
        return self.ns[name]

    def fresh(self) -> str:
        name = f"v{self.count}"
        self.count += 1
        return name

    def tensors(self, pred=None) -> list[str]:
        out = []
        for n in self.names:
            t = self.ns.get(n)
            if isinstance(t, torch.Tensor) and (pred is None or _holds(pred, t)):
                out.append(n)
        return out

    def pick(self, pred=None) -> str | None:
        """An earlier value satisfying ``pred``: recent ones more often, any one sometimes."""
        cands = self.tensors(pred)
        if not cands:
            return None
        if self.coin(0.6):
            return cands[-1 - min(int(self.r.expovariate(0.7)), len(cands) - 1)]
        return self.choice(cands)

    def pick_float(self, pred=None, shape=None) -> str:
        """A float value satisfying ``pred``, or a new leaf (of ``shape`` if given)."""
        name = self.pick(lambda t: t.is_floating_point() and (pred is None or pred(t)))
        return name if name is not None else self.leaf(self.choice(FLOATS), shape)

    def pick_any(self, pred=None) -> str:
        name = self.pick(pred)
        return name if name is not None else self.leaf()

    def dt(self, name) -> str:
        return str(self.ns[name].dtype).split(".")[-1]

    def shape(self, name) -> tuple:
        return tuple(self.ns[name].shape)

    def rand_shape(self, nd=None) -> tuple:
        if nd is None:
            nd = self.choice((0, 1, 1, 1, 2, 2, 2, 3, 3))
        return tuple(self.choice((1, 1, 2, 2, 3, 3, 4, 0) if self.coin(0.3) else (1, 2, 3, 4))
                     for _ in range(nd))

    def dim(self, nd, bad=False) -> int:
        n = max(nd, 1)
        if bad:
            return self.choice((n, -n - 1, n + 2))
        return self.integer(-n, n - 1)

    def scalar(self, kind="float"):
        if kind == "int":
            return self.choice((2, -1, 3, 0, 1))
        if kind == "bool":
            return self.choice((True, False))
        return self.choice((2, 0.5, -1.5, 3.0, -1, 0.25, 2.0, 1))

    # -- statements -------------------------------------------------------------------------
    def emit(self, code, op, dtype="", outs=(), kind="op", guards=(), fwd=None,
             check=True) -> bool:
        """Run ``code`` on the shadow and keep it, unless a guard or the result check says no.

        ``guards`` are ``(expression, kink)`` pairs: the statement is dropped when an entry of
        the expression lies within ``KINK_GAP`` of the kink without being on it. A statement
        torch rejects is kept (an error check); its outputs do not exist afterwards.
        """
        try:
            with torch.no_grad():
                for expr, kink, *gap in guards:
                    t = eval(expr, self.ns)
                    if isinstance(t, torch.Tensor) and not _clear(t, kink, *gap):
                        return False
        except Exception:
            pass  # the statement raises as well: an error check
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                exec(code, self.ns)
            except Exception:
                for o in outs:
                    self.ns.pop(o, None)
                self.stmts.append(Stmt(code, op, dtype, kind, fwd))
                return False
        if check and not all(_tame(self.ns.get(o)) for o in outs):
            for o in outs:
                self.ns.pop(o, None)
            return False
        self.stmts.append(Stmt(code, op, dtype, kind, fwd))
        self.names += [o for o in outs if isinstance(self.ns.get(o), torch.Tensor)]
        return True

    def use_class(self, name):
        if name not in self.classes:
            self.classes.append(name)
            exec(FUNCTIONS[name], self.ns)

    def values(self, dtype, n):
        if dtype == "bool":
            return [self.coin() for _ in range(n)]
        if dtype == "int64":
            return [self.integer(-4, 4) for _ in range(n)]
        out = []
        for _ in range(n):
            if self.specials and self.coin(0.12):
                out.append(self.choice((math.nan, math.inf, -math.inf)))
            elif self.coin(0.8):
                out.append(self.integer(-8, 8) / 4)
            elif self.coin(0.9):
                out.append(self.integer(-128, 128) / 64)
            else:
                out.append(round(self.r.uniform(-2, 2), 3))
        return out

    def leaf(self, dtype=None, shape=None, rg=None) -> str:
        dtype = dtype or self.choice(DTYPES)
        shape = self.rand_shape() if shape is None else tuple(shape)
        if rg is None:
            rg = dtype in FLOATS and self.coin(0.75)
        name = self.fresh()
        n = math.prod(shape)
        if n == 0:
            data = f"T.zeros({shape!r}, dtype=T.{dtype})"
        else:
            vals = np.array(self.values(dtype, n), dtype=object).reshape(shape).tolist()
            data = f"T.tensor({fmt(vals)}, dtype=T.{dtype})"
        code = f"{name} = {data}" if not rg else (
            f"{name} = {data[:-1]}, requires_grad=True)")
        fwd = None
        if dtype in FLOATS:
            tan = np.array([((i * 3 + self.seed) % 5 - 2) / 2 for i in range(n)],
                           dtype=float).reshape(shape).tolist()
            tdata = (f"T.zeros({shape!r}, dtype=T.{dtype})" if n == 0
                     else f"T.tensor({fmt(tan)}, dtype=T.{dtype})")
            fwd = f"{name} = fw.make_dual({data}, {tdata})" + (
                ".requires_grad_()" if rg else "")
        self.emit(code, "leaf", dtype, (name,), kind="leaf", fwd=fwd, check=False)
        return name

    def partner(self, ref, into=False, dtype=None) -> str:
        """A value that broadcasts with ``ref`` (a name or a shape; ``into``: to its shape):
        an earlier value or a new leaf."""
        shape = self.shape(ref) if isinstance(ref, str) else tuple(ref)
        own = self.dt(ref) if isinstance(ref, str) else None

        def fits(t):
            try:
                b = tuple(np.broadcast_shapes(tuple(t.shape), shape))
            except ValueError:
                return False
            return (not into or b == shape) and (dtype is None or str(t.dtype)[6:] == dtype)
        if self.coin(0.6):
            got = self.pick(fits)
            if got is not None:
                return got
        k = self.integer(0, len(shape))
        new = [s if self.coin(0.7) else 1 for s in shape[len(shape) - k:]]
        if not into and len(new) < 3 and self.coin(0.15):
            new.insert(0, self.integer(1, 2))
        dtype = dtype or (own if own and self.coin(0.6) else self.choice(DTYPES))
        return self.leaf(dtype, tuple(new))

    def index_expr(self, shape, write=False, adv=True) -> str:
        """An index for ``x[...]``: ints, slices with steps, None, ``...`` and at most one
        advanced index (an int tensor or list, or a bool mask)."""
        nd = len(shape)
        k = self.integer(0, nd)
        ell = k < nd and self.coin(0.3)
        lead = ell and self.coin()
        sizes = shape[nd - k:] if lead else shape[:k]
        parts = []
        used_adv = not adv
        for n in sizes:
            kinds = ["slice", "int", "full"] + ([] if used_adv or n == 0 else
                                                ["tensor", "list", "bool"])
            kind = self.choice(kinds) if n else self.choice(("slice", "full"))
            if kind == "int":
                parts.append(str(self.integer(-n, n - 1)))
            elif kind == "full":
                parts.append(":")
            elif kind == "slice":
                start = self.integer(0, max(n - 1, 0))
                stop = self.integer(start, n)
                step = self.choice((1, 1, 2, 3))
                text = (str(start) if start else "") + ":" + (str(stop) if stop < n else "")
                parts.append(text + (f":{step}" if step > 1 else ""))
            else:
                used_adv = True
                if kind == "bool":
                    parts.append(f"T.tensor({[self.coin() for _ in range(n)]!r})")
                else:
                    idx = [self.integer(-n, n - 1) for _ in range(self.integer(1, 3))]
                    if write:
                        idx = list(dict.fromkeys(i % n for i in idx))
                    parts.append(f"T.tensor({idx!r})" if kind == "tensor" else repr(idx))
        if ell:
            parts.insert(0 if lead else len(parts), "...")
        if not write:
            for _ in range(self.choice((0, 0, 0, 1))):
                parts.insert(self.integer(0, len(parts)), "None")
        if not parts:
            return self.choice(["...", "None", "()"]) if not write else "..."
        if len(parts) == 1 and parts[0].startswith("["):
            return parts[0]
        return ", ".join(parts)

    def indexed_shape(self, name, idx):
        try:
            with torch.no_grad():
                return tuple(eval(f"_x[{idx}]", {**self.ns, "_x": self.ns[name]}).shape)
        except Exception:
            return None

    def program(self) -> Program:
        return Program(self.seed, tuple(self.stmts), tuple(self.classes))
