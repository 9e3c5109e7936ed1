"""Random op programs for the differential fuzz test (``test_fuzz_differential.py``).

A program is a short list of Python statements over values ``v0, v1, ...`` and a backend module
``T`` (``ext`` or ``torch``): leaves are made from NumPy float64 arrays, every later statement
applies one op (or a small fixed combination) to earlier values. The same text runs on both
engines, so a failing program prints as a repro that runs under ``import torch as T`` and under
``import ext as T`` alike.

The generator runs each candidate statement on torch while drawing (a shadow run): torch gives the
shapes, the contiguity and the values the next draws depend on, and guards drop a statement whose
result would be ill-conditioned (a kink or a comparison within rounding of its input, a standard
deviation near 0, values above ``MAX_ABS``). A statement torch rejects ends the program: the test
then checks that ext rejects it with the same exception type.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass

import numpy as np
import torch
from hypothesis import strategies as st

KINK_GAP = 1e-6  # an input of a kink (relu, abs, clamp, comparison, max) is on it or this far
STD_MIN = 1e-3  # smallest standard deviation whose gradient is not ill-conditioned
MAX_ABS = 1e3  # statements whose result exceeds this are not kept
INF = math.inf

# Leaf entries: quarter steps (exact, and ties on purpose) or any float in [-2, 2], with tiny
# magnitudes made 0 (a 1e-300 next to a kink, or dividing a product, is ill-conditioned).
VALUES = st.one_of(
    st.integers(-8, 8).map(lambda i: i / 4),
    st.floats(-2, 2, allow_nan=False).map(lambda x: x if abs(x) >= 1e-3 else 0.0),
)
SCALARS = (2, 0.5, -1.5, 3.0, -1, 0.25)
BASES = (2.0, 0.5, 3, 1.5)  # positive bases for ``s ** x``
BOUNDS = (-1.0, -0.5, 0.0, 0.5, 1.0)  # clamp bounds

_OUTPUTS = re.compile(r"^\s*((?:v\d+\s*,\s*)*v\d+)\s*,?\s*=(?!=)")


@dataclass(frozen=True)
class Program:
    """Statements over ``T`` and ``np``; ``double`` adds a double-backward check."""

    steps: tuple[str, ...]
    double: bool = False


def outputs_of(step: str) -> list[str]:
    """The names a statement assigns (``v5, v6 = ...`` gives both), in order."""
    names = []
    for part in step.split("; "):
        match = _OUTPUTS.match(part)
        if match:
            names += [n.strip() for n in match.group(1).split(",")]
    return names


# The weights of the weighted sums that start backward: fixed, uneven, of a value's shape.
WEIGHTS_SRC = ("def w(shape): return T.tensor("
               "0.5 + 0.25 * (np.arange(np.prod(shape, dtype=int)) % 7).reshape(tuple(shape)))")


def namespace(T) -> dict:
    """A fresh namespace in which a program's statements run on backend ``T``."""
    ns = {"T": T, "np": np}
    exec(WEIGHTS_SRC, ns)
    return ns


# ---------------------------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------------------------


def _clear_of_kink(t) -> bool:
    d = t.detach().abs()
    return bool(((d == 0) | (d > KINK_GAP) | d.isnan()).all())


def _tame(t) -> bool:
    if not isinstance(t, torch.Tensor) or not t.is_floating_point():
        return False
    d = t.detach()
    if d.isinf().any():
        return False
    d = torch.where(d.isnan(), torch.zeros_like(d), d)
    return d.numel() == 0 or float(d.abs().max()) <= MAX_ABS


def _leaf_view(t) -> bool:
    return t._base is not None and t._base.is_leaf and t._base.requires_grad


def _fmt_shape(shape) -> str:
    return repr(tuple(shape))


def _broadcast(*shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


class Gen:
    """Draws one program, running each kept statement on torch (the shadow run)."""

    def __init__(self, draw):
        self.draw = draw
        self.ns = namespace(torch)
        self.names: list[str] = []
        self.leaves: set[str] = set()
        self.steps: list[str] = []
        self.done = False

    # -- draws ----------------------------------------------------------------------------
    def choice(self, seq):
        return self.draw(st.sampled_from(seq))

    def integer(self, lo, hi):
        return self.draw(st.integers(lo, hi))

    def coin(self):
        return self.draw(st.booleans())

    def shape(self, name):
        return tuple(self.ns[name].shape)

    def mag(self, name):
        t = self.ns[name].detach()
        t = torch.where(t.isnan(), torch.zeros_like(t), t)
        return float(t.abs().max()) if t.numel() else 0.0

    def fresh(self, k=1):
        return [f"v{len(self.names) + i}" for i in range(k)]

    def pick(self, pred=None, non_leaf=False):
        """An earlier value (the most recent first, when shrinking) satisfying ``pred``."""
        cands = [n for n in self.names  # empty results (a mask with no True) feed no op
                 if self.ns[n].numel() and (pred is None or pred(self.ns[n]))
                 and not (non_leaf and n in self.leaves)]
        if not cands:
            return None
        return cands[-1 - self.integer(0, len(cands) - 1)]

    def dim(self, nd):
        n = max(nd, 1)
        return self.integer(-n, n - 1)

    def dims(self, nd):
        n = max(nd, 1)
        perm = self.draw(st.permutations(range(n)))
        chosen = perm[: self.integer(1, n)]
        return tuple(d - n if self.coin() else d for d in chosen)

    def scalar(self):
        return self.choice(SCALARS)

    def bounds(self):
        lo = self.choice(BOUNDS[:-1])
        hi = self.choice([b for b in BOUNDS if b > lo])
        return lo, hi

    # -- statements -----------------------------------------------------------------------
    def emit(self, code, guards=(), check=True) -> bool:
        """Run ``code`` on the shadow and keep it, unless a guard or the result check says no."""
        if self.done:
            return False
        try:
            with torch.no_grad():
                for guard in guards:
                    if guard.startswith("min:"):
                        t = eval(guard[4:], self.ns).detach()
                        if not bool(((t > STD_MIN) | t.isnan()).all()):
                            return False
                    elif not _clear_of_kink(eval(guard, self.ns)):
                        return False
        except Exception:
            return False
        outs = outputs_of(code)
        try:
            exec(code, self.ns)
        except Exception:
            # Torch rejects it: the program ends here, and ext must reject it the same way.
            self.steps.append(code)
            self.done = True
            return False
        if check and not all(_tame(self.ns[o]) for o in outs):
            for o in outs:
                self.ns.pop(o, None)
            return False
        self.steps.append(code)
        self.names += outs
        return True

    def leaf(self, shape=None, requires_grad=None) -> str:
        if shape is None:
            shape = tuple(self.integer(1, 4) for _ in range(self.integer(0, 3)))
        n = math.prod(shape)
        arr = np.array(self.draw(st.lists(VALUES, min_size=n, max_size=n)),
                       dtype=np.float64).reshape(shape)
        if requires_grad is None:
            requires_grad = self.choice([True, True, False])
        (name,) = self.fresh()
        self.emit(f"{name} = T.tensor(np.array({arr.tolist()!r}), requires_grad={requires_grad})",
                  check=False)
        self.leaves.add(name)
        return name

    def partner_shape(self, shape, into):
        """A shape that broadcasts with ``shape`` (``into``: broadcasts *to* ``shape``)."""
        k = self.integer(0, len(shape))
        out = []
        for size in shape[len(shape) - k:]:
            if size == 1 and not into:
                out.append(self.integer(1, 4))
            else:
                out.append(size if self.coin() else 1)
        if not into and k == len(shape) < 3 and self.coin():
            out.insert(0, self.integer(1, 3))
        return tuple(out)

    def partner(self, shape, into=False, max_mag=INF) -> str:
        """A value to combine with one of ``shape``: reused when one fits, else a new leaf."""
        def fits(t):
            b = _broadcast(tuple(t.shape), shape)
            if b is None or (into and b != tuple(shape)) or len(b) > 4:
                return False
            return max_mag == INF or float(t.detach().abs().max()) <= max_mag
        if self.coin():
            name = self.pick(fits)
            if name is not None:
                return name
        return self.leaf(self.partner_shape(shape, into))

    def exact(self, pattern) -> str:
        """A value whose shape matches ``pattern`` (``None`` entries are free)."""
        def fits(t):
            return t.dim() == len(pattern) and all(
                p is None or p == s for p, s in zip(pattern, t.shape))
        if self.coin():
            name = self.pick(fits)
            if name is not None:
                return name
        return self.leaf(tuple(self.integer(1, 4) if p is None else p for p in pattern))

    def index(self, shape, write=False, allow_adv=True) -> str:
        """An index expression for ``x[...]``: ints, slices with steps, None, ``...``, and at
        most one advanced index (an int tensor or list, or a bool vector)."""
        nd = len(shape)
        k = self.integer(0, nd)
        ellipsis = k < nd and self.coin()
        lead = ellipsis and self.coin()  # ``...`` first: index the trailing dims
        sizes = shape[nd - k:] if lead else shape[:k]
        parts = []
        adv = not allow_adv
        for n in sizes:
            kinds = ["slice", "int", "full"] + ([] if adv else ["tensor", "list", "bool"])
            kind = self.choice(kinds)
            if kind == "int":
                parts.append(str(self.integer(-n, n - 1)))
            elif kind == "full":
                parts.append(":")
            elif kind == "slice":
                start = self.integer(0, n - 1)
                stop = self.integer(start + 1, n)
                step = self.integer(1, 3)
                text = (str(start) if start else "") + ":" + (str(stop) if stop < n else "")
                parts.append(text + (f":{step}" if step > 1 else ""))
            else:
                adv = True
                if kind == "bool":
                    mask = [self.coin() for _ in range(n)]
                    mask[self.integer(0, n - 1)] = True
                    parts.append(f"T.tensor({mask!r})")
                else:
                    idx = [self.integer(-n, n - 1) for _ in range(self.integer(1, 3))]
                    if write:
                        idx = list(dict.fromkeys(i % n for i in idx))
                    parts.append(f"T.tensor({idx!r})" if kind == "tensor" else repr(idx))
        if ellipsis:
            parts.insert(0 if lead else len(parts), "...")
        for _ in range(self.integer(0, 2) if not write else 0):
            parts.insert(self.integer(0, len(parts)), "None")
        if not parts:
            return self.choice(["...", "None", "()"]) if not write else "..."
        if len(parts) == 1 and parts[0].startswith("["):
            return parts[0]
        return ", ".join(parts)

    def indexed_shape(self, name, idx):
        with torch.no_grad():
            return tuple(eval(f"_x[{idx}]", {**self.ns, "_x": self.ns[name]}).shape)

    def mask(self, shape) -> str:
        n = math.prod(shape)
        bits = [self.coin() for _ in range(n)]
        if n:
            bits[self.integer(0, n - 1)] = True
        return f"T.tensor(np.array({np.array(bits).reshape(shape).tolist()!r}))"

    def program(self, double) -> Program:
        return Program(tuple(self.steps), double)


# ---------------------------------------------------------------------------------------------
# Op families: each draws one statement (or none, when a guard drops it)
# ---------------------------------------------------------------------------------------------

# (template over {a}, {lo}, {hi}; kink guards; largest |a| allowed)
UNARY = (
    ("{a}.exp()", (), 6.0),
    ("T.exp({a})", (), 6.0),
    ("{a}.expm1()", (), 6.0),
    ("({a}.abs() + 1).log()", ("{a}",), INF),
    ("T.log({a}.abs() + 0.5)", ("{a}",), INF),
    ("{a}.abs().log1p()", ("{a}",), INF),
    ("{a}.sin()", (), INF),
    ("T.cos({a})", (), INF),
    ("{a}.tanh()", (), INF),
    ("T.tanh({a})", (), INF),
    ("{a}.sigmoid()", (), INF),
    ("T.sigmoid({a})", (), INF),
    ("{a}.relu()", ("{a}",), INF),
    ("T.relu({a})", ("{a}",), INF),
    ("({a}.abs() + 0.5).sqrt()", ("{a}",), INF),
    ("T.sqrt({a} * {a} + 0.25)", (), INF),
    ("{a}.abs()", ("{a}",), INF),
    ("T.abs({a})", ("{a}",), INF),
    ("-{a}", (), INF),
    ("{a}.neg()", (), INF),
    ("{a} ** 2", (), 30.0),
    ("{a}.pow(3)", (), 10.0),
    ("T.pow({a}, 2.0)", (), 30.0),
    ("({a}.abs() + 0.5) ** -1", ("{a}",), INF),
    ("({a}.abs() + 0.5) ** 0.5", ("{a}",), INF),
    ("({a}.abs() + 0.5).pow(1.5)", ("{a}",), 90.0),
    ("({a}.abs() + 0.5).pow(-2)", ("{a}",), INF),
    ("({a}.abs() + 0.5).reciprocal()", ("{a}",), INF),
    ("({a}.abs() + 0.5).rsqrt()", ("{a}",), INF),
    ("{a}.erf()", (), INF),
    ("{a}.sign()", ("{a}",), INF),
    ("{a}.clamp({lo}, {hi})", ("{a} - {lo}", "{a} - {hi}"), INF),
    ("{a}.clamp(min={lo})", ("{a} - {lo}",), INF),
    ("{a}.clamp(max={hi})", ("{a} - {hi}",), INF),
    ("T.clamp({a}, {lo}, {hi})", ("{a} - {lo}", "{a} - {hi}"), INF),
    ("{a}.clip({lo}, {hi})", ("{a} - {lo}", "{a} - {hi}"), INF),
    ("{a}.clamp_min({lo})", ("{a} - {lo}",), INF),
    ("{a}.clamp_max({hi})", ("{a} - {hi}",), INF),
)


def unary(g: Gen):
    a = g.pick()
    m = g.mag(a)
    tmpl, guards, limit = g.choice([u for u in UNARY if m <= u[2]])
    lo, hi = g.bounds()
    fill = {"a": a, "lo": lo, "hi": hi}
    (out,) = g.fresh()
    g.emit(f"{out} = " + tmpl.format(**fill), [x.format(**fill) for x in guards])


# (template over {a}, {b}; kink guards; largest |b| allowed)
BINARY = (
    ("{a} + {b}", (), INF),
    ("{a} - {b}", (), INF),
    ("{a} * {b}", (), INF),
    ("{a} / ({b}.abs() + 0.5)", ("{b}",), INF),
    ("T.add({a}, {b}, alpha=2)", (), INF),
    ("T.sub({a}, {b}, alpha=0.5)", (), INF),
    ("{a}.add({b})", (), INF),
    ("{a}.sub({b})", (), INF),
    ("{a}.mul({b})", (), INF),
    ("T.mul({a}, {b})", (), INF),
    ("{a}.div({b}.exp())", (), 6.0),
    ("T.div({a}, {b} * {b} + 1)", (), INF),
    ("T.maximum({a}, {b})", ("{a} - {b}",), INF),
    ("T.minimum({a}, {b})", ("{a} - {b}",), INF),
    ("({a}.abs() + 0.5) ** {b}", ("{a}",), 3.0),
    ("({a}.abs() + 0.5).pow({b})", ("{a}",), 3.0),
)


def binary(g: Gen):
    a = g.pick()
    tmpl, guards, limit = g.choice(BINARY)
    b = g.partner(g.shape(a), max_mag=limit)
    (out,) = g.fresh()
    g.emit(f"{out} = " + tmpl.format(a=a, b=b), [x.format(a=a, b=b) for x in guards])


# (template over {a}, {s}, {p}; kink guards; largest |a| allowed)
SCALAR = (
    ("{a} + {s}", (), INF),
    ("{s} + {a}", (), INF),
    ("{a} - {s}", (), INF),
    ("{s} - {a}", (), INF),
    ("{a} * {s}", (), INF),
    ("{s} * {a}", (), INF),
    ("{a} / {s}", (), INF),
    ("{s} / ({a}.abs() + 0.5)", ("{a}",), INF),
    ("{p} ** {a}", (), 5.0),
    ("T.pow({p}, {a})", (), 5.0),
    ("{a}.add({s})", (), INF),
    ("{a}.sub({s}, alpha=2)", (), INF),
    ("{a}.mul({s})", (), INF),
    ("T.mul({a}, {s})", (), INF),
    ("{a}.div({s})", (), INF),
    ("T.rsub({a}, {s})", (), INF),
    ("T.add({a}, {s}, alpha=3)", (), INF),
)


def scalar(g: Gen):
    a = g.pick()
    m = g.mag(a)
    tmpl, guards, limit = g.choice([u for u in SCALAR if m <= u[2]])
    fill = {"a": a, "s": g.scalar(), "p": g.choice(BASES)}
    (out,) = g.fresh()
    g.emit(f"{out} = " + tmpl.format(**fill), [x.format(**fill) for x in guards])


def where(g: Gen):
    c = g.pick()
    shape = g.shape(c)
    kind = g.choice(["gt0", "lt", "ge", "le", "mask"])
    guards = []
    if kind == "gt0":
        cond, guards = f"{c} > 0", [c]
    elif kind == "lt":
        d = g.partner(shape)
        cond, guards = f"{c} < {d}", [f"{c} - {d}"]
    elif kind == "ge":
        cond, guards = f"{c} >= 0.5", [f"{c} - 0.5"]
    elif kind == "le":
        d = g.partner(shape)
        cond, guards = f"{c}.le({d})", [f"{c} - {d}"]
    else:
        cond = g.mask(shape)
    with torch.no_grad():
        try:
            cshape = tuple(eval(cond, g.ns).shape)
        except Exception:
            return
    x = g.partner(cshape)
    form = g.choice(["tt", "method", "ts", "st"])
    if form in ("tt", "method"):
        y = g.partner(_broadcast(cshape, g.shape(x)) or cshape)
        code = (f"T.where({cond}, {x}, {y})" if form == "tt" else f"{x}.where({cond}, {y})")
    elif form == "ts":
        code = f"T.where({cond}, {x}, {g.scalar()})"
    else:
        code = f"T.where({cond}, {g.scalar()}, {x})"
    (out,) = g.fresh()
    g.emit(f"{out} = {code}", guards)


def reduce(g: Gen):
    a = g.pick()
    nd = len(g.shape(a))
    d, ds, k = g.dim(nd), g.dims(nd), g.coin()
    op = g.choice(["sum", "mean", "amax", "max", "min", "prod", "var", "std", "logsumexp"])
    guards = []
    if op in ("sum", "mean"):
        code = g.choice(["{a}.{op}()", "{a}.{op}({d})", "{a}.{op}({d}, keepdim=True)",
                         "{a}.{op}(dim={ds}, keepdim={k})", "T.{op}({a}, {d})", "T.{op}({a})"])
    elif op == "amax":
        code = g.choice(["{a}.amax({d})", "{a}.amax(dim={ds}, keepdim={k})",
                         "T.amax({a}, {d}, keepdim=True)", "{a}.amin({ds})"])
        red = "amin" if "amin" in code else "amax"
        guards = [f"{a} - {a}.{red}({ds if 'ds' in code else d}, keepdim=True)"]
    elif op in ("max", "min"):
        if g.coin():
            code, guards = f"{{a}}.{op}()", [f"{a} - {a}.{op}()"]
        else:
            code = f"{{a}}.{op}({{d}}, keepdim={{k}})[0]"
            guards = [f"{a} - {a}.a{op}({d}, keepdim=True)"]
    elif op == "prod":
        code = g.choice(["{a}.prod()", "{a}.prod({d}, keepdim={k})", "T.prod({a}, {d})"])
        # its gradient divides by the factors: a factor is 0 or away from it
        guards = [f"T.where({a}.abs() < 0.05, {a}, 1)"]
    elif op in ("var", "std"):
        code = g.choice(["{a}.{op}()", "{a}.{op}({d})", "{a}.{op}({d}, keepdim=True)",
                         "{a}.{op}(dim={ds}, correction=0)", "{a}.{op}({d}, unbiased=False)",
                         "T.{op}({a}, {d})"])
        if op == "std" and nd:  # (a 0-d input's std is exactly 0 on both engines)
            guards = ["min:" + code.format(a=a, op=op, d=d, ds=ds, k=k)]
    else:
        code = g.choice(["{a}.logsumexp({d})", "{a}.logsumexp({ds}, keepdim=True)",
                         "T.logsumexp({a}, {d}, keepdim={k})"])
    (out,) = g.fresh()
    g.emit(f"{out} = " + code.format(a=a, op=op, d=d, ds=ds, k=k), guards)


def softmax(g: Gen):
    a = g.pick()
    d = g.dim(len(g.shape(a)))
    code = g.choice(["{a}.softmax({d})", "T.softmax({a}, dim={d})", "{a}.log_softmax({d})",
                     "T.log_softmax({a}, {d})", "{a}.log_softmax(dim={d}).exp() * {a}"])
    (out,) = g.fresh()
    g.emit(f"{out} = " + code.format(a=a, d=d))


def _factor(g: Gen, n):
    """A random shape with ``n`` elements and at most 3 dims."""
    out = []
    for _ in range(g.integer(0 if n == 1 else 1, 3) - 1):
        f = g.choice([f for f in range(1, n + 1) if n % f == 0])
        out.append(f)
        n //= f
    out.append(n)
    if len(out) == 1 and n == 1 and g.coin():
        return ()
    return tuple(out)


def shape_op(g: Gen):
    a = g.pick()
    shape = g.shape(a)
    nd = len(shape)
    ops = ["reshape", "view", "transpose", "unsqueeze", "squeeze", "expand", "flatten"]
    ops += ["t"] if nd <= 2 else []
    ops += ["permute"] if nd >= 1 else []
    ops += ["cat", "split", "chunk", "unbind"] if nd >= 1 else []
    ops += ["stack"] if nd <= 2 else []
    op = g.choice(ops)
    if op in ("reshape", "view"):
        new = list(_factor(g, math.prod(shape)))
        if new and g.coin():
            new[g.integer(0, len(new) - 1)] = -1
        new = tuple(new)
        if op == "view" and not g.ns[a].is_contiguous():
            op = "reshape"
        code = g.choice([f"{a}.{op}({_fmt_shape(new)})", f"{a}.{op}(-1)",
                         f"{a}.{op}({', '.join(map(str, new)) or '()'})"]
                        + ([f"T.reshape({a}, {_fmt_shape(new)})"] if op == "reshape" else []))
    elif op == "t":
        code = g.choice([f"{a}.t()", f"T.t({a})"] + ([f"{a}.T", f"{a}.mT"] if nd == 2 else []))
    elif op == "transpose":
        d0, d1 = g.dim(nd), g.dim(nd)
        code = g.choice([f"{a}.transpose({d0}, {d1})", f"T.transpose({a}, {d0}, {d1})"]
                        + ([f"{a}.mT"] if nd >= 2 else []))
    elif op == "permute":
        perm = [p - nd if g.coin() else p for p in g.draw(st.permutations(range(nd)))]
        code = g.choice([f"{a}.permute({tuple(perm)!r})", f"T.permute({a}, {tuple(perm)!r})",
                         f"{a}.permute({', '.join(map(str, perm))})"])
    elif op == "unsqueeze":
        d = g.integer(-nd - 1, nd)
        code = g.choice([f"{a}.unsqueeze({d})", f"T.unsqueeze({a}, {d})"])
    elif op == "squeeze":
        d = g.dim(nd)
        code = g.choice([f"{a}.squeeze()", f"{a}.squeeze({d})", f"T.squeeze({a}, {d})",
                         f"{a}.squeeze({g.dims(nd)!r})"])
    elif op == "expand":
        new = [(g.integer(1, 3) if s == 1 and g.coin() else (-1 if g.coin() else s))
               for s in shape]
        if nd < 3 and g.coin():
            new.insert(0, g.integer(1, 3))
        code = g.choice([f"{a}.expand({tuple(new)!r})",
                         f"{a}.expand({', '.join(map(str, new)) or '()'})"])
    elif op == "flatten":
        s, e = sorted((g.dim(nd), g.dim(nd)), key=lambda d: d % max(nd, 1))
        code = g.choice([f"{a}.flatten()", f"{a}.flatten({s})", f"{a}.flatten({s}, {e})",
                         f"T.flatten({a}, {s}, {e})"])
    elif op == "cat":
        d = g.dim(nd)
        others = []
        for _ in range(g.integer(1, 2)):
            pattern = list(shape)
            pattern[d] = None
            others.append(a if g.coin() else g.exact(pattern))
        items = ", ".join([a, *others])
        code = g.choice([f"T.cat([{items}], dim={d})", f"T.cat(({items}), {d})",
                         f"T.concat([{items}], {d})"])
    elif op == "stack":
        d = g.integer(-nd - 1, nd)
        b = a if g.coin() else g.exact(list(shape))
        code = g.choice([f"T.stack([{a}, {b}])", f"T.stack(({a}, {b}), dim={d})"])
    else:
        d = g.dim(nd)
        n = shape[d]
        if op == "split":
            if g.coin():
                rhs = g.choice([f"{a}.split({g.integer(1, n)}, dim={d})",
                                f"T.split({a}, {g.integer(1, n)}, {d})"])
            else:
                sizes, left = [], n
                while left:
                    sizes.append(g.integer(1, left))
                    left -= sizes[-1]
                rhs = g.choice([f"{a}.split({sizes!r}, {d})",
                                f"{a}.split_with_sizes({sizes!r}, dim={d})"])
        elif op == "chunk":
            c = g.integer(1, 4)
            rhs = g.choice([f"{a}.chunk({c}, {d})", f"T.chunk({a}, {c}, dim={d})"])
        else:
            rhs = g.choice([f"{a}.unbind({d})", f"T.unbind({a}, {d})"])
        try:
            with torch.no_grad():
                count = len(eval(rhs, g.ns))
        except Exception:
            return
        g.emit(", ".join(g.fresh(count)) + (" = " if count > 1 else ", = ") + rhs)
        return
    (out,) = g.fresh()
    g.emit(f"{out} = {code}")


def index(g: Gen):
    a = g.pick()
    shape = g.shape(a)
    kind = g.choice(["basic", "basic", "mask", "compare", "select", "index_select"]
                    if shape else ["basic"])
    guards = []
    if kind == "basic":
        code = f"{a}[{g.index(shape)}]"
    elif kind == "mask":
        code = f"{a}[{g.mask(shape)}]"
    elif kind == "compare":
        t = g.choice([0, 0.5, -0.5])
        code, guards = f"{a}[{a} > {t}]", [f"{a} - {t}"]
    elif kind == "select":
        d = g.dim(len(shape))
        code = f"{a}.select({d}, {g.integer(-shape[d], shape[d] - 1)})"
    else:
        d = g.dim(len(shape))
        idx = [g.integer(0, shape[d] - 1) for _ in range(g.integer(1, 3))]
        code = f"T.index_select({a}, {d}, T.tensor({idx!r}))"
    (out,) = g.fresh()
    g.emit(f"{out} = {code}", guards)


def matmul(g: Gen):
    a = g.pick(lambda t: 1 <= t.dim() <= 3)
    if a is None:
        a = g.leaf((g.integer(1, 4), g.integer(1, 4)))
    shape = g.shape(a)
    if len(shape) == 1:
        (n,) = shape
        form = g.choice(["dot", "vm", "mv"])
        if form == "dot":
            b = g.exact([n])
            code = g.choice([f"{a} @ {b}", f"{a}.dot({b})", f"T.matmul({a}, {b})"])
        elif form == "vm":
            b = g.exact([n, None])
            code = g.choice([f"{a} @ {b}", f"T.matmul({a}, {b})"])
        else:
            b = g.exact([None, n])
            code = g.choice([f"{b} @ {a}", f"{b}.mv({a})", f"T.mv({b}, {a})"])
    elif len(shape) == 2:
        n, m = shape
        form = g.choice(["mm", "mv", "left", "batch"])
        if form == "mm":
            b = g.exact([m, None])
            code = g.choice([f"{a} @ {b}", f"{a}.mm({b})", f"T.mm({a}, {b})",
                             f"T.matmul({a}, {b})"])
        elif form == "mv":
            b = g.exact([m])
            code = g.choice([f"{a} @ {b}", f"{a}.mv({b})"])
        elif form == "left":
            b = g.exact([None, n])
            code = f"{b} @ {a}"
        else:
            b = g.exact([None, m, None])
            code = f"{a} @ {b}"
    else:
        bsz, n, m = shape
        form = g.choice(["bmm", "mat", "vec", "left"])
        if form == "bmm":
            b = g.exact([bsz, m, None])
            code = g.choice([f"{a} @ {b}", f"T.bmm({a}, {b})", f"{a}.bmm({b})"])
        elif form == "mat":
            b = g.exact([m, None])
            code = f"{a} @ {b}"
        elif form == "vec":
            b = g.exact([m])
            code = f"T.matmul({a}, {b})"
        else:
            b = g.exact([None, n])
            code = f"{b} @ {a}"
    (out,) = g.fresh()
    g.emit(f"{out} = {code}")


def _inplace_op(g: Gen, c: str, a: str, shape, direct: bool):
    """An in-place statement on ``c`` (a clone of ``a``, or ``a`` itself when ``direct``)."""
    lo, hi = g.bounds()
    s = g.scalar()
    m = g.mag(a)
    ops = ["add", "add_alpha", "sub", "mul", "add_s", "mul_s", "div_s", "clamp", "relu",
           "sigmoid", "tanh", "neg", "setitem_s", "setitem_t", "setmask", "setcompare",
           "view_mul", "view_add", "copy", "pow"]
    if m <= 6:
        ops.append("exp")
    op = g.choice(ops)
    limit = 1.5 if direct else INF  # mutating a shared value: keep its neighbours' sizes tame
    guards = []
    if op in ("add", "add_alpha", "sub", "mul", "copy"):
        b = g.partner(shape, into=True, max_mag=limit)
        code = {"add": f"{c}.add_({b})", "add_alpha": f"{c}.add_({b}, alpha=-0.5)",
                "sub": f"{c}.sub_({b})", "mul": f"{c}.mul_({b})", "copy": f"{c}.copy_({b})"}[op]
    elif op in ("add_s", "mul_s", "div_s"):
        code = {"add_s": f"{c}.add_({s})", "mul_s": f"{c}.mul_({s})",
                "div_s": f"{c}.div_({s})"}[op]
    elif op == "clamp":
        code, guards = f"{c}.clamp_({lo}, {hi})", [f"{a} - {lo}", f"{a} - {hi}"]
    elif op == "relu":
        code, guards = f"{c}.relu_()", [a]
    elif op in ("sigmoid", "tanh", "neg", "exp"):
        code = f"{c}.{op}_()"
    elif op == "pow":
        code = f"{c}.pow_(2)" if m <= 30 else f"{c}.neg_()"
    elif op == "setitem_s":
        code = f"{c}[{g.index(shape, write=True)}] = {s}"
    elif op == "setitem_t":
        idx = g.index(shape, write=True)
        b = g.partner(g.indexed_shape(a, idx), into=True, max_mag=limit)
        code = f"{c}[{idx}] = {b}"
    elif op == "setmask":
        code = f"{c}[{g.mask(shape)}] = {s}"
    elif op == "setcompare":
        code, guards = f"{c}[{c} > 0.5] = {s}", [f"{a} - 0.5"]
    else:
        idx = g.index(shape, write=True, allow_adv=False)
        if op == "view_mul":
            code = f"{c}[{idx}].mul_({s})"
        else:
            b = g.partner(g.indexed_shape(a, idx), into=True, max_mag=limit)
            code = f"{c}[{idx}].add_({b})"
    return code, guards


def inplace(g: Gen):
    a = g.pick()
    code, guards = _inplace_op(g, "{c}", a, g.shape(a), direct=False)
    start = g.choice([f"{a}.clone()", f"{a} * 1", f"{a}.clone()"])
    (c,) = g.fresh()  # after the partners the op may have made
    g.emit(f"{c} = {start}; " + code.replace("{c}", c), guards)


def inplace_direct(g: Gen):
    """An in-place op on an existing non-leaf value (it may be a view, or saved by a node)."""
    # Now and then a view of a leaf that requires grad: torch's error, and ext's, end the program.
    leaf_views = g.integer(0, 7) == 0
    a = g.pick(lambda t: leaf_views or not _leaf_view(t), non_leaf=True)
    if a is None:
        return
    code, guards = _inplace_op(g, a, a, g.shape(a), direct=True)
    g.emit(code, guards, check=False)


def reuse(g: Gen):
    """One value used several times in one statement."""
    a = g.pick()
    shape = g.shape(a)
    nd = len(shape)
    m = g.mag(a)
    forms = [("{a} * {a}", ()), ("{a} + {a} * {a}", ()), ("{a} - {a}.mean()", ()),
             ("{a} * {a}.sum()", ()), ("T.stack([{a}, {a}.sin()])", ()),
             ("T.where({a} > 0, {a}, {a} * 0.1)", ("{a}",)),
             ("{a}.tanh() * {a}.sigmoid() + {a}", ())]
    if m <= 6:
        forms.append(("{a}.exp() * {a}", ()))
    if nd <= 1:
        forms.append(("{a}.unsqueeze(0) * {a}.unsqueeze(-1)", ()))
    if nd >= 1:
        forms += [("{a}[0] + {a}[-1]", ()), ("T.cat([{a}, -{a}, {a}])", ())]
    if nd == 2:
        forms += [("{a} @ {a}.t()", ()), ("{a}.t() @ {a}", ())]
    tmpl, guards = g.choice(forms)
    (out,) = g.fresh()
    g.emit(f"{out} = " + tmpl.format(a=a), [x.format(a=a) for x in guards])


FAMILIES = {
    "unary": unary, "scalar": scalar, "binary": binary, "where": where, "reduce": reduce,
    "softmax": softmax, "shape": shape_op, "index": index, "matmul": matmul,
    "inplace": inplace, "inplace_direct": inplace_direct, "reuse": reuse,
}


@st.composite
def programs(draw, families=tuple(FAMILIES), max_steps=8, double=None) -> Program:
    """A random program of up to ``max_steps`` op statements from ``families``."""
    g = Gen(draw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(draw(st.integers(1, 3))):
            g.leaf()
        for _ in range(draw(st.integers(1, max_steps))):
            if g.done:
                break
            FAMILIES[draw(st.sampled_from(families))](g)
    if double is None:
        double = draw(st.sampled_from([False, False, True]))
    return g.program(double)
