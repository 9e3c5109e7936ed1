"""The op families of the deep fuzzer's programs: each draws one statement (or a few).

``draw_program(seed)`` builds a program from leaves, a run of family statements and the gradient
tail (``fuzz_programs.py`` holds the drawing machinery, ``fuzz_deep.py`` runs the programs).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch
from fuzz_programs import DTYPES, FLOATS, Gen, Program

# -------------------------------------------------------------------------------------------
# Elementwise
# -------------------------------------------------------------------------------------------

# name: (dtype letters it applies to: f float, i int64, b bool; kink or None; forms)
# forms: m = method, f = T.<name>, F = T.nn.functional.<name>
UNARY = {
    "exp": ("fib", None, "mf"), "log": ("fib", None, "mf"), "sin": ("fib", None, "mf"),
    "cos": ("fib", None, "mf"), "tan": ("fi", None, "mf"), "tanh": ("fib", None, "mfF"),
    "sigmoid": ("fib", None, "mfF"), "relu": ("fi", 0.0, "mfF"), "sqrt": ("fi", None, "mf"),
    "rsqrt": ("fi", None, "mf"), "abs": ("fi", 0.0, "mf"), "neg": ("fi", None, "mf"),
    "sign": ("fib", 0.0, "mf"), "erf": ("fib", None, "mf"), "expm1": ("fib", None, "mf"),
    "log1p": ("fib", None, "mf"), "reciprocal": ("fib", None, "mf"), "ceil": ("fi", None, "mf"),
    "floor": ("fi", None, "mf"), "round": ("fi", None, "mf"), "logical_not": ("fib", None, "mf"),
    "bitwise_not": ("ib", None, "mf"), "isnan": ("fib", None, "mf"),
    "isinf": ("fib", None, "mf"), "isfinite": ("fib", None, "mf"),
    "nan_to_num": ("fib", None, "mf"), "clone": ("fib", None, "mf"),
    "contiguous": ("fib", None, "m"), "float": ("fib", None, "m"), "double": ("fib", None, "m"),
    "long": ("fib", None, "m"), "bool": ("fib", None, "m"), "gelu": ("f", None, "F"),
    "silu": ("f", None, "F"),
}


def _letter(dtype: str) -> str:
    return "f" if dtype in FLOATS else ("i" if dtype == "int64" else "b")


def _applies(g: Gen, letters: str, name: str) -> bool:
    """Whether ``name``'s dtype is one an op takes (or, now and then, any: an error check)."""
    return _letter(g.dt(name)) in letters or g.coin(0.04)


def unary(g: Gen):
    op = g.choice(list(UNARY))
    letters, kink, forms = UNARY[op]
    a = g.pick_any(lambda t: _letter(str(t.dtype)[6:]) in letters or g.coin(0.05))
    form = g.choice(forms)
    call = {"m": f"{a}.{op}()", "f": f"T.{op}({a})", "F": f"T.nn.functional.{op}({a})"}[form]
    out = g.fresh()
    guards = [(a, kink)] if kink is not None else []
    g.emit(f"{out} = {call}", op, g.dt(a), (out,), guards=guards)


def convert(g: Gen):
    a = g.pick_any()
    dt = g.choice(("float32", "float64", "int64", "bool"))
    out = g.fresh()
    if g.coin(0.3):
        b = g.pick_any()
        g.emit(f"{out} = {a}.type_as({b})", "type_as", g.dt(a), (out,))
    else:
        g.emit(f"{out} = {a}.to(T.{dt})", "to", g.dt(a), (out,))


def softmax(g: Gen):
    a = g.pick_any(lambda t: t.is_floating_point() or g.coin(0.1))
    nd = g.val(a).dim()
    d = g.dim(nd, bad=g.coin(0.03))
    op = g.choice(("softmax", "log_softmax", "cumsum", "logsumexp", "cumprod"))
    form = g.choice((f"{a}.{op}({d})", f"T.{op}({a}, {d})", f"T.{op}({a}, dim={d})")
                    + ((f"T.nn.functional.{op}({a}, dim={d})",) if "softmax" in op else ()))
    out = g.fresh()
    # cumprod's gradient divides by the input, as prod's: keep inputs clear of zero or on it
    guards = [(a, 0.0, 0.05)] if op == "cumprod" else ()
    g.emit(f"{out} = {form}", op, g.dt(a), (out,), guards=guards)


BINARY = {
    # name: (operator or None, dtype letters, kink on a - b)
    "add": ("+", "fib", False), "sub": ("-", "fi", False), "mul": ("*", "fib", False),
    "div": ("/", "fib", False), "pow": ("**", "fi", False), "maximum": (None, "fib", True),
    "minimum": (None, "fib", True), "eq": ("==", "fib", True), "ne": ("!=", "fib", True),
    "lt": ("<", "fi", True), "le": ("<=", "fi", True), "gt": (">", "fi", True),
    "ge": (">=", "fi", True), "logical_and": (None, "fib", False),
    "logical_or": (None, "fib", False), "logical_xor": (None, "fib", False),
    "bitwise_and": ("&", "ib", False), "bitwise_or": ("|", "ib", False),
    "bitwise_xor": ("^", "ib", False), "true_divide": (None, "fib", False),
    "rsub": (None, "fi", False), "isclose": (None, "fi", False),
}
FUNCTION_ONLY = ("rsub",)


def binary(g: Gen):
    op = g.choice(list(BINARY))
    sym, letters, kink = BINARY[op]
    a = g.pick_any(lambda t: _letter(str(t.dtype)[6:]) in letters or g.coin(0.05))
    out = g.fresh()
    shape_kind = g.r.random()
    if shape_kind < 0.25 and op not in ("isclose", "rsub") or op == "pow" and g.coin(0.3):
        # a Python number on either side
        s = g.scalar(g.choice(("float", "float", "int", "bool")))
        if op == "pow" and g.coin(0.4):
            s = g.choice((2.0, -2.0, 0.5, 2, 3))
        if sym is not None and g.coin(0.6):
            lit = f"({s!r})" if s < 0 else repr(s)  # -2.0 ** x is -(2.0 ** x)
            code = f"{lit} {sym} {a}" if g.coin() else f"{a} {sym} {lit}"
        elif op not in FUNCTION_ONLY:
            code = f"{a}.{op}({s!r})"
        else:
            code = f"T.{op}({a}, {s!r})"
        guards = [(f"{a} - {s!r}", 0.0)] if kink else []
        g.emit(f"{out} = {code}", op + ".scalar", g.dt(a), (out,), guards=guards)
        return
    b = g.partner(a)
    forms = [f"T.{op}({a}, {b})"]
    if op not in FUNCTION_ONLY:
        forms.append(f"{a}.{op}({b})")
    if sym is not None:
        forms += [f"{a} {sym} {b}"] * 2
    if op in ("add", "sub", "rsub"):
        alpha = g.choice((2, 0.5, -1, True))
        forms.append(f"T.{op}({a}, {b}, alpha={alpha!r})")
    guards = [(f"{a} - {b}", 0.0)] if kink else []
    g.emit(f"{out} = {g.choice(forms)}", op, g.dt(a), (out,), guards=guards)


def clamp(g: Gen):
    a = g.pick_any(lambda t: t.dtype != torch.bool or g.coin(0.05))
    out = g.fresh()
    lo = g.choice((-1.0, -0.5, 0.0, 0.5, -1, 0))
    hi = g.choice((1.0, 0.5, 0.0, 2, lo))
    kind = g.choice(("scalar", "scalar", "tensor", "same", "kw", "one"))
    if kind == "scalar":
        code = g.choice((f"{a}.clamp({lo!r}, {hi!r})", f"T.clamp({a}, {lo!r}, {hi!r})",
                         f"{a}.clip({lo!r}, {hi!r})", f"T.clip({a}, min={lo!r}, max={hi!r})"))
        guards = [(a, float(lo)), (a, float(hi))]
    elif kind == "one":
        code = g.choice((f"{a}.clamp(min={lo!r})", f"{a}.clamp_min({lo!r})",
                         f"T.clamp({a}, max={hi!r})", f"{a}.clamp_max({hi!r})",
                         f"T.clamp_min({a}, {lo!r})"))
        guards = [(a, float(lo)), (a, float(hi))]
    else:
        t = g.partner(a)
        u = t if kind == "same" else g.partner(a)
        code = {"tensor": f"T.clamp({a}, {t}, {u})", "same": f"T.clamp({a}, {t}, {t})",
                "kw": g.choice((f"{a}.clamp(min={t})", f"T.clamp({a}, max={t})",
                                f"{a}.clamp(min={t}, max={u})"))}[kind]
        guards = [(f"{a} - {t}", 0.0), (f"{a} - {u}", 0.0), (f"{t} - {u}", 0.0)]
    g.emit(f"{out} = {code}", "clamp." + kind, g.dt(a), (out,), guards=guards)


def where(g: Gen):
    c = g.pick_any()
    kind = g.choice(("gt", "bool", "lt"))
    if kind == "bool":
        b = g.pick(lambda t: t.dtype == torch.bool)
        cond, guards = (b, []) if b else (f"{c} > 0", [(c, 0.0)])
    elif kind == "gt":
        cond, guards = f"{c} > 0", [(c, 0.0)]
    else:
        d = g.partner(c)
        cond, guards = f"{c} < {d}", [(f"{c} - {d}", 0.0)]
    x = g.pick_any()
    form = g.choice(("tt", "tt", "method", "ts", "st"))
    if form in ("tt", "method"):
        y = g.partner(x)
        code = f"T.where({cond}, {x}, {y})" if form == "tt" else f"{x}.where({cond}, {y})"
    elif form == "ts":
        code = f"T.where({cond}, {x}, {g.scalar()!r})"
    else:
        code = f"T.where({cond}, {g.scalar()!r}, {x})"
    out = g.fresh()
    g.emit(f"{out} = {code}", "where", g.dt(x), (out,), guards=guards)


# -------------------------------------------------------------------------------------------
# Reductions
# -------------------------------------------------------------------------------------------

def _dims(g: Gen, nd: int):
    n = max(nd, 1)
    perm = list(range(n))
    g.r.shuffle(perm)
    chosen = perm[: g.integer(1, n)]
    if g.coin(0.05):
        chosen.append(chosen[0])  # a dim named twice
    return tuple(d - n if g.coin() else d for d in chosen)


def reduce(g: Gen):
    a = g.pick_any()
    nd = g.val(a).dim()
    bad = g.coin(0.03)
    d, ds, k = g.dim(nd, bad), _dims(g, nd), g.coin()
    op = g.choice(("sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin",
                   "var", "std", "all", "any", "logsumexp", "sum_dtype", "sort"))
    outs = [g.fresh()]
    guards = []
    gap = None
    if op in ("sum", "mean", "prod", "all", "any"):
        code = g.choice(("{a}.{op}()", "{a}.{op}({d})", "{a}.{op}({d}, keepdim=True)",
                         "T.{op}({a}, {d})", "T.{op}({a})")
                        + (("{a}.{op}(dim={ds}, keepdim={k})",) if op in ("sum", "mean") else ()))
        if op == "prod":
            guards, gap = [(a, 0.0)], 0.05
    elif op == "sum_dtype":
        code = g.choice(("{a}.sum(dtype=T.float64)", "T.sum({a}, {d}, dtype=T.float32)"))
    elif op in ("amax", "amin"):
        code = g.choice(("{a}.{op}({d})", "{a}.{op}(dim={ds}, keepdim={k})", "T.{op}({a}, {d})",
                         "{a}.{op}()"))
        guards = [(f"{a} - {a}.{op}({ds}, keepdim=True)", 0.0)]
    elif op in ("max", "min", "argmax", "argmin"):
        base = op[3:] if op.startswith("arg") else op
        guards = [(f"{a} - {a}.a{base}({d}, keepdim=True)", 0.0)]
        form = g.choice(("all", "dim", "pair", "values"))
        if form == "all" or op.startswith("arg") and form == "pair":
            code = "{a}.{op}()" if form == "all" else "T.{op}({a}, {d}, keepdim={k})"
            guards = [(f"{a} - {a}.{base}()", 0.0)] if form == "all" else guards
        elif form == "pair":
            outs.append(g.fresh())
            code = "{a}.{op}({d}, keepdim={k})"
        elif op.startswith("arg"):
            code = "{a}.{op}({d})"
        else:
            code = g.choice(("{a}.{op}({d}).values", "T.{op}({a}, {d})[0]",
                             "{a}.{op}(dim={d}).indices"))
    elif op == "sort":
        outs.append(g.fresh())
        code = g.choice(("{a}.sort({d})", "T.sort({a}, {d}, descending=True)"))
        guards = [(f"{a}.unsqueeze(-1) - {a}.unsqueeze(-2)", 0.0)]
    elif op in ("var", "std"):
        code = g.choice(("{a}.{op}()", "{a}.{op}({d})", "{a}.{op}({d}, keepdim=True)",
                         "{a}.{op}(dim={ds}, correction=0)", "{a}.{op}({d}, unbiased=False)",
                         "T.{op}({a}, {d})", "{a}.{op}(correction=2)"))
        if op == "std":
            guards, gap = [(code.format(a=a, op=op, d=d, ds=ds, k=k), 0.0)], 1e-3
    else:
        code = g.choice(("{a}.logsumexp({d})", "{a}.logsumexp({ds}, keepdim=True)",
                         "T.logsumexp({a}, {d}, keepdim={k})"))
    code = code.format(a=a, op=op, d=d, ds=ds, k=k)
    lhs = ", ".join(outs) if len(outs) > 1 else outs[0]
    if gap:
        guards = [(e, kink, gap) for e, kink in guards]
    g.emit(f"{lhs} = {code}", op, g.dt(a), tuple(outs), guards=guards)


# -------------------------------------------------------------------------------------------
# Shapes and views
# -------------------------------------------------------------------------------------------

def _factor(g: Gen, shape) -> tuple:
    """A random shape with as many elements as ``shape``, at most 3 dims."""
    n = math.prod(shape)
    if n == 0:
        out = [0] + [g.integer(1, 3) for _ in range(g.integer(0, 2))]
        g.r.shuffle(out)
        return tuple(out)
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
    a = g.pick_any()
    t = g.val(a)
    shape = tuple(t.shape)
    nd = len(shape)
    ops = ["reshape", "view", "transpose", "unsqueeze", "squeeze", "expand", "flatten",
           "view_as", "getitem", "getitem", "getitem"]
    ops += ["t"] if nd <= 2 else []
    ops += ["permute", "select", "split", "chunk", "unbind", "iterate", "cat"] if nd >= 1 else []
    ops += ["stack"]
    op = g.choice(ops)
    outs = [g.fresh()]
    if op in ("reshape", "view"):
        new = list(_factor(g, shape))
        if new and g.coin(0.4) and 0 not in new:
            new[g.integer(0, len(new) - 1)] = -1
        if op == "view" and not t.is_contiguous() and g.coin(0.7):
            op = "reshape"
        code = g.choice([f"{a}.{op}({tuple(new)!r})", f"{a}.{op}(-1)",
                         f"{a}.{op}({', '.join(map(str, new)) or '()'})"]
                        + ([f"T.reshape({a}, {tuple(new)!r})"] if op == "reshape" else []))
    elif op == "view_as":
        b = g.pick(lambda u: u.numel() == t.numel())
        code = f"{a}.{g.choice(('view_as', 'reshape_as'))}({b})" if b else f"{a}.view(-1)"
    elif op == "t":
        code = g.choice([f"{a}.t()", f"T.t({a})"] + ([f"{a}.T", f"{a}.mT"] if nd == 2 else []))
    elif op == "transpose":
        d0, d1 = g.dim(nd), g.dim(nd, bad=g.coin(0.03))
        code = g.choice([f"{a}.transpose({d0}, {d1})", f"T.transpose({a}, {d0}, {d1})"]
                        + ([f"{a}.mT"] if nd >= 2 else []))
    elif op == "permute":
        perm = list(range(nd))
        g.r.shuffle(perm)
        perm = [p - nd if g.coin() else p for p in perm]
        if g.coin(0.03):
            perm[0] = perm[-1]  # a repeated dim
        code = g.choice([f"{a}.permute({tuple(perm)!r})", f"T.permute({a}, {tuple(perm)!r})",
                         f"{a}.permute({', '.join(map(str, perm))})"])
    elif op == "unsqueeze":
        d = g.integer(-nd - 1, nd) if not g.coin(0.03) else nd + 2
        code = g.choice([f"{a}.unsqueeze({d})", f"T.unsqueeze({a}, {d})"])
    elif op == "squeeze":
        code = g.choice([f"{a}.squeeze()", f"{a}.squeeze({g.dim(nd)})",
                         f"T.squeeze({a}, {g.dim(nd)})", f"{a}.squeeze({_dims(g, nd)!r})"])
    elif op == "expand":
        new = [(g.integer(1, 3) if s == 1 and g.coin() else (-1 if g.coin() else s))
               for s in shape]
        if nd < 3 and g.coin():
            new.insert(0, g.integer(0 if g.coin(0.1) else 1, 3))
        if g.coin(0.4):
            b = g.pick(lambda u: _expands(shape, tuple(u.shape)))
            if b:
                code = f"{a}.expand_as({b})"
                g.emit(f"{outs[0]} = {code}", "expand_as", g.dt(a), tuple(outs))
                return
        code = g.choice([f"{a}.expand({tuple(new)!r})",
                         f"{a}.expand({', '.join(map(str, new)) or '()'})"])
    elif op == "flatten":
        s, e = sorted((g.dim(nd), g.dim(nd)), key=lambda d: d % max(nd, 1))
        code = g.choice([f"{a}.flatten()", f"{a}.flatten({s})", f"{a}.flatten({s}, {e})",
                         f"T.flatten({a}, {s}, {e})"])
    elif op == "getitem":
        kind = g.choice(("basic", "basic", "basic", "mask", "compare") if nd else ("basic",))
        if kind == "basic":
            code = f"{a}[{g.index_expr(shape)}]"
        elif kind == "mask":
            m = g.pick(lambda u: u.dtype == torch.bool and tuple(u.shape) == shape)
            code = f"{a}[{m}]" if m else f"{a}[{a} != 0]"
        else:
            code = f"{a}[{a} > 0.5]"
            g.emit(f"{outs[0]} = {code}", "getitem." + kind, g.dt(a), tuple(outs),
                   guards=[(a, 0.5)])
            return
        op = "getitem." + kind
    elif op == "select":
        d = g.dim(nd)
        n = shape[d]
        i = g.integer(-n, n - 1) if n else 0
        code = g.choice([f"{a}.select({d}, {i})", f"T.select({a}, {d}, {i})"])
    elif op == "cat":
        d = g.dim(nd, bad=g.coin(0.02))
        items = [a]
        for _ in range(g.integer(1, 2)):
            pattern = list(shape)
            if -nd <= d < nd:
                pattern[d] = None
            b = g.pick(lambda u, pattern=pattern: u.dim() == nd and all(
                p is None or p == s for p, s in zip(pattern, u.shape)))
            if b is None or g.coin(0.3):
                b = g.leaf(g.dt(a) if g.coin(0.8) else g.choice(DTYPES),
                           tuple(g.choice((0, 1, 2)) if p is None else p for p in pattern))
            items.append(b)
        items = ", ".join(items)
        code = g.choice([f"T.cat([{items}], dim={d})", f"T.cat(({items}), {d})",
                         f"T.concat([{items}], {d})"])
    elif op == "stack":
        d = g.integer(-nd - 1, nd)
        b = g.pick(lambda u: tuple(u.shape) == shape and u is not t) or a
        code = g.choice([f"T.stack([{a}, {b}])", f"T.stack(({a}, {b}), dim={d})"])
    else:
        d = g.dim(nd)
        n = shape[d]
        if op == "split":
            if g.coin():
                rhs = g.choice([f"{a}.split({g.integer(1, max(n, 1))}, dim={d})",
                                f"T.split({a}, {g.integer(1, max(n, 1))}, {d})"])
            else:
                sizes, left = [], n
                while left:
                    sizes.append(g.integer(1, left))
                    left -= sizes[-1]
                rhs = g.choice([f"{a}.split({sizes!r}, {d})",
                                f"{a}.split_with_sizes({sizes!r}, dim={d})"])
        elif op == "chunk":
            rhs = g.choice([f"{a}.chunk({g.integer(1, 4)}, {d})",
                            f"T.chunk({a}, {g.integer(1, 4)}, dim={d})"])
        elif op == "iterate":
            rhs = a
        else:
            rhs = g.choice([f"{a}.unbind({d})", f"T.unbind({a}, {d})"])
        try:
            with torch.no_grad():
                count = len(eval(rhs, g.ns))
        except Exception:
            return
        if not 1 <= count <= 4:
            return
        outs += [g.fresh() for _ in range(count - 1)]
        g.emit(", ".join(outs) + (" = " if count > 1 else ", = ") + rhs, op, g.dt(a),
               tuple(outs))
        return
    g.emit(f"{outs[0]} = {code}", op, g.dt(a), tuple(outs))


def _expands(shape, target) -> bool:
    try:
        return tuple(np.broadcast_shapes(shape, target)) == target
    except ValueError:
        return False


# -------------------------------------------------------------------------------------------
# Index ops: gather, scatter, index_select, index_put
# -------------------------------------------------------------------------------------------

def _index_tensor(g: Gen, self_shape, d, idx_shape, unique) -> str:
    """An int64 index of ``idx_shape`` with values in ``self_shape[d]`` (distinct along ``d``
    when ``unique``: scatter's order over repeated targets is not defined)."""
    n = self_shape[d]
    arr = np.zeros(idx_shape, dtype=np.int64)
    if arr.size and n:
        moved = np.moveaxis(arr, d, -1)
        for pos in np.ndindex(moved.shape[:-1]):
            k = moved.shape[-1]
            vals = g.r.sample(range(n), k) if unique else [g.integer(0, n - 1) for _ in range(k)]
            moved[pos] = vals
        arr = np.moveaxis(moved, -1, d)
    if not arr.size:
        return f"T.zeros({tuple(idx_shape)!r}, dtype=T.int64)"
    return f"T.tensor({arr.tolist()!r})"


def index_op(g: Gen):
    a = g.pick_any(lambda t: t.dim() >= 1 or g.coin(0.2))
    t = g.val(a)
    shape = tuple(t.shape)
    nd = len(shape)
    d = g.dim(nd, bad=g.coin(0.03)) if nd else 0
    dd = d % nd if nd else 0
    op = g.choice(("gather", "scatter", "scatter_value", "index_select", "index_put"))
    out = g.fresh()
    if op == "gather":
        ishape = [g.integer(0 if s == 0 else 1, max(s, 1)) for s in shape] if nd else []
        if nd:
            ishape[dd] = g.integer(1, 3)
        idx = _index_tensor(g, shape or (1,), dd, tuple(ishape), unique=False) if nd else \
            "T.tensor(0)"
        code = g.choice((f"T.gather({a}, {d}, {idx})", f"{a}.gather({d}, {idx})"))
    elif op in ("scatter", "scatter_value"):
        ishape = [g.integer(0 if s == 0 else 1, max(s, 1)) for s in shape] if nd else []
        if nd:
            ishape[dd] = g.integer(0 if shape[dd] == 0 else 1, shape[dd])
        idx = _index_tensor(g, shape or (1,), dd, tuple(ishape), unique=True) if nd else \
            "T.tensor(0)"
        if op == "scatter_value":
            src = repr(g.scalar())
        elif g.coin(0.15):
            src = g.leaf(g.dt(a), ())
        else:
            sshape = tuple(s + g.choice((0, 0, 1)) for s in ishape)
            src = g.pick(lambda u: tuple(u.shape) == sshape) or g.leaf(g.dt(a), sshape)
        code = g.choice((f"T.scatter({a}, {d}, {idx}, {src})", f"{a}.scatter({d}, {idx}, {src})"))
    elif op == "index_select":
        n = shape[dd] if nd else 1
        k = g.integer(0 if g.coin(0.1) else 1, 3)
        idx = [g.integer(0, n - 1) for _ in range(k)] if n else []
        it = f"T.tensor({idx!r}, dtype=T.int64)"
        code = g.choice((f"T.index_select({a}, {d}, {it})", f"{a}.index_select({d}, {it})"))
    else:
        n = shape[0] if nd else 0
        acc = g.coin(0.3)
        k = g.integer(1, 3)
        idx = [g.integer(0, n - 1) for _ in range(k)] if n else [0] * (k if g.coin(0.3) else 0)
        if not acc:
            idx = list(dict.fromkeys(idx))
        vshape = (len(idx),) + shape[1:] if nd else ()
        if g.coin(0.5) and len(vshape) > 0:
            vshape = vshape[g.integer(0, len(vshape)):]
        v = g.pick(lambda u: tuple(u.shape) == vshape and u.dtype == t.dtype) or g.leaf(
            g.dt(a) if g.coin(0.9) else g.choice(DTYPES), vshape)
        it = f"T.tensor({idx!r}, dtype=T.int64)"
        # (the method form too accumulates when the indices may repeat: a repeated index
        # written without accumulating has no defined result in torch)
        code = g.choice((f"T.index_put({a}, ({it},), {v}, accumulate={acc})",
                         f"{a}.index_put(({it},), {v}{', accumulate=True' if acc else ''})"))
    g.emit(f"{out} = {code}", op, g.dt(a), (out,))


# -------------------------------------------------------------------------------------------
# Matmul and nn.functional
# -------------------------------------------------------------------------------------------

def _exact(g: Gen, pattern, dtype) -> str:
    b = g.pick(lambda t: t.dim() == len(pattern) and str(t.dtype)[6:] == dtype and all(
        p is None or p == s for p, s in zip(pattern, t.shape))) if g.coin(0.5) else None
    if b is None:
        wrong = g.coin(0.04)
        b = g.leaf(dtype if not wrong else g.choice(DTYPES),
                   tuple(g.integer(1, 3) if p is None else p for p in pattern))
    return b


def matmul(g: Gen):
    a = g.pick(lambda t: 1 <= t.dim() <= 3 and t.dtype != torch.bool) or g.leaf(
        g.choice(FLOATS), g.rand_shape(2))
    shape = g.shape(a)
    dt = g.dt(a)
    nd = len(shape)
    if nd == 1:
        (n,) = shape
        form = g.choice(("dot", "vm", "mv"))
        if form == "dot":
            b = _exact(g, [n], dt)
            code = g.choice((f"{a} @ {b}", f"{a}.dot({b})", f"T.matmul({a}, {b})",
                             f"T.dot({a}, {b})"))
        elif form == "vm":
            b = _exact(g, [n, None], dt)
            code = g.choice((f"{a} @ {b}", f"T.matmul({a}, {b})"))
        else:
            b = _exact(g, [None, n], dt)
            code = g.choice((f"{b} @ {a}", f"{b}.mv({a})", f"T.mv({b}, {a})"))
    elif nd == 2:
        n, m = shape
        form = g.choice(("mm", "mv", "left", "batch", "addmm", "linear"))
        if form == "mm":
            b = _exact(g, [m, None], dt)
            code = g.choice((f"{a} @ {b}", f"{a}.mm({b})", f"T.mm({a}, {b})",
                             f"T.matmul({a}, {b})"))
        elif form == "mv":
            code = g.choice((f"{a} @ {{b}}", f"{a}.mv({{b}})")).format(b=_exact(g, [m], dt))
        elif form == "left":
            code = f"{_exact(g, [None, n], dt)} @ {a}"
        elif form == "batch":
            code = f"{a} @ {_exact(g, [None, m, None], dt)}"
        elif form == "addmm":
            b = _exact(g, [m, None], dt)
            k = g.shape(b)[1]
            c = _exact(g, g.choice(([n, k], [k], [1, k], [])), dt)
            code = g.choice((f"T.addmm({c}, {a}, {b})", f"{c}.addmm({a}, {b})",
                             f"T.addmm({c}, {a}, {b}, beta=0.5, alpha=2)"))
        else:
            w = _exact(g, [None, m], dt)
            bias = _exact(g, [g.shape(w)[0]], dt) if g.coin() else None
            code = f"T.nn.functional.linear({a}, {w}" + (f", {bias})" if bias else ")")
    else:
        bsz, n, m = shape
        form = g.choice(("bmm", "mat", "vec"))
        if form == "bmm":
            b = _exact(g, [bsz, m, None], dt)
            code = g.choice((f"{a} @ {b}", f"T.bmm({a}, {b})", f"{a}.bmm({b})"))
        elif form == "mat":
            code = f"{a} @ {_exact(g, [m, None], dt)}"
        else:
            code = f"T.matmul({a}, {_exact(g, [m], dt)})"
    out = g.fresh()
    g.emit(f"{out} = {code}", "matmul." + code.split("(")[0].split(".")[-1].split(" ")[-1]
           if "@" not in code else "matmul.@", dt, (out,))


def nn_op(g: Gen):
    F = "T.nn.functional"
    op = g.choice(("mse_loss", "cross_entropy", "nll_loss", "layer_norm", "dropout",
                   "embedding", "softmax"))
    out = g.fresh()
    if op == "mse_loss":
        a = g.pick_any()
        b = g.partner(a, into=g.coin(0.8))
        red = g.choice(("'mean'", "'sum'", "'none'", "'mean'", "'bogus'" if g.coin(0.1)
                        else "'mean'"))
        g.emit(f"{out} = {F}.mse_loss({a}, {b}, reduction={red})", op, g.dt(a), (out,))
        return
    if op in ("cross_entropy", "nll_loss"):
        x = g.pick_float(lambda t: t.dim() in (1, 2) and t.shape[-1] > 0, (2, 3))
        shape = g.shape(x)
        c = shape[-1]
        n = shape[0] if len(shape) == 2 else None
        tgt = [g.integer(0, c - 1) for _ in range(n or 1)]
        if g.coin(0.04):
            tgt[0] = c  # out of range
        target = f"T.tensor({tgt!r})" if n is not None else f"T.tensor({tgt[0]})"
        red = g.choice(("'mean'", "'sum'", "'none'"))
        arg = f"{x}.log_softmax(-1)" if op == "nll_loss" else x
        g.emit(f"{out} = {F}.{op}({arg}, {target}, reduction={red})", op, g.dt(x), (out,))
        return
    if op == "layer_norm":
        x = g.pick_float(lambda t: t.dim() >= 1, (2, 3))
        shape = g.shape(x)
        k = g.integer(1, min(2, len(shape)))
        ns = shape[len(shape) - k:]
        w = _exact(g, list(ns), g.dt(x)) if g.coin(0.7) else None
        b = _exact(g, list(ns), g.dt(x)) if g.coin(0.7) else None
        args = f"{x}, {ns!r}" + (f", {w}" if w else "") + (f", {b}" if b and w else "")
        g.emit(f"{out} = {F}.layer_norm({args})", op, g.dt(x), (out,),
               guards=[(f"{x}.var({tuple(range(-k, 0))!r})", 0.0, 1e-3)])
        return
    if op == "dropout":
        x = g.pick_any()
        code = g.choice((f"{F}.dropout({x}, 0.0)", f"{F}.dropout({x}, 0.5, training=False)",
                         f"{F}.dropout({x}, p=0.0, training=True)"))
        g.emit(f"{out} = {code}", op, g.dt(x), (out,))
        return
    if op == "embedding":
        w = g.pick_float(lambda t: t.dim() == 2 and t.shape[0] > 0, (3, 2))
        n = g.shape(w)[0]
        idx = np.array([g.integer(0, n - 1) for _ in range(4)]).reshape(
            g.choice(((4,), (2, 2), (1, 4)))).tolist()
        g.emit(f"{out} = {F}.embedding(T.tensor({idx!r}), {w})", op, g.dt(w), (out,))
        return
    x = g.pick_any()
    d = g.dim(g.val(x).dim())
    g.emit(f"{out} = {F}.{g.choice(('softmax', 'log_softmax'))}({x}, {d})", "softmax",
           g.dt(x), (out,))


# -------------------------------------------------------------------------------------------
# In-place writes, directly and through views
# -------------------------------------------------------------------------------------------

INPLACE_UNARY = ("relu_", "sigmoid_", "tanh_", "exp_", "cos_", "sin_", "neg_", "abs_", "zero_",
                 "sqrt_", "reciprocal_", "nan_to_num_", "log_", "sign_", "round_", "floor_")


def _view_target(g: Gen, c: str):
    """``c`` itself, or an expression for a view of it (views of views now and then)."""
    t = g.val(c)
    nd = t.dim()
    forms = ["self", "self", "slice"]
    if nd >= 2:
        forms += ["transpose", "t"]
    if t.is_contiguous():
        forms += ["view"]
    forms += ["unsqueeze", "viewofview"]
    form = g.choice(forms)
    if form == "self":
        return c
    if form == "slice":
        return f"{c}[{g.index_expr(tuple(t.shape), write=True, adv=False)}]"
    if form == "transpose":
        return f"{c}.transpose(0, 1)" if g.coin() else f"{c}.t()" if nd == 2 else f"{c}.mT"
    if form == "t":
        return f"{c}.mT"
    if form == "view":
        return f"{c}.view({tuple(_factor(g, tuple(t.shape)))!r})"
    if form == "unsqueeze":
        return f"{c}.unsqueeze(0)"
    inner = f"{c}[{g.index_expr(tuple(t.shape), write=True, adv=False)}]"
    try:
        with torch.no_grad():
            u = eval(inner, g.ns)
    except Exception:
        return inner
    if u.dim() >= 1:
        return f"{inner}[{g.index_expr(tuple(u.shape), write=True, adv=False)}]"
    return f"{inner}.unsqueeze(0)"


def _write(g: Gen, target: str):
    """An in-place statement on the expression ``target``."""
    try:
        with torch.no_grad():
            tv = eval(target, g.ns)
    except Exception:
        return f"{target}.add_(1)", "add_"
    shape = tuple(tv.shape)
    op = g.choice(("add_", "add_alpha", "sub_", "mul_", "div_", "mul_s", "add_s", "copy_",
                   "pow_", "clamp_", "clamp_t", "unary", "unary", "setitem_s", "setitem_t",
                   "setitem_mask", "fill_", "iadd", "imul", "index_put_", "overlap"))
    if op in ("add_", "add_alpha", "sub_", "mul_", "div_", "copy_", "iadd", "imul"):
        b = g.partner(shape, into=g.coin(0.9))
        code = {"add_": f"{target}.add_({b})", "add_alpha": f"{target}.add_({b}, alpha=-0.5)",
                "sub_": f"{target}.sub_({b})", "mul_": f"{target}.mul_({b})",
                "div_": f"{target}.div_({b}.abs() + 1)", "copy_": f"{target}.copy_({b})",
                "iadd": f"{target} += {b}", "imul": f"{target} *= {b}"}[op]
        if op in ("iadd", "imul") and target not in g.ns:
            code = f"{target}.{op[1:]}_({b})"
    elif op in ("mul_s", "add_s"):
        code = f"{target}.{op[:3]}_({g.scalar()!r})"
    elif op == "pow_":
        code = f"{target}.pow_({g.choice((2, 3, 0.5, -1))})"
    elif op == "clamp_":
        code = g.choice((f"{target}.clamp_(-0.5, 0.5)", f"{target}.clamp_(min=0.0)",
                         f"{target}.clamp_max_(1.0)", f"{target}.clamp_min_(0.25)"))
    elif op == "clamp_t":
        b = g.partner(shape, into=True)
        code = g.choice((f"{target}.clamp_(min={b})", f"{target}.clamp_({b}, {b})",
                         f"{target}.clamp_(max={b})"))
    elif op == "unary":
        code = f"{target}.{g.choice(INPLACE_UNARY)}()"
    elif op == "overlap":
        # the operand overlaps the target: a transposed or shifted view of itself
        if len(shape) == 2 and shape[0] == shape[1]:
            code = g.choice((f"{target}.add_({target}.t())", f"{target}.mul_({target}.mT)",
                             f"{target}.copy_({target}.t())"))
        elif shape and shape[0] >= 2:
            n = shape[0]
            k = g.integer(1, n - 1)
            code = g.choice((f"{target}[0:{n - k}] = {target}[{k}:{n}]",
                             f"{target}[{k}:{n}] = {target}[0:{n - k}]",
                             f"{target}[0:{n - k}].add_({target}[{k}:{n}])",
                             f"{target}.add_({target})", f"{target}.mul_({target}[0])"))
        else:
            code = f"{target}.add_({target})"
    elif op == "fill_":
        code = f"{target}.fill_({g.scalar()!r})"
    elif op == "setitem_s":
        code = f"{target}[{g.index_expr(shape, write=True)}] = {g.scalar()!r}"
    elif op == "setitem_mask":
        if not shape:
            code = f"{target}[{target} > 0] = {g.scalar()!r}"
        else:
            code = f"{target}[{target} > 0.5] = {g.scalar()!r}"
    elif op == "index_put_":
        n = shape[0] if shape else 0
        idx = list(dict.fromkeys(g.integer(0, n - 1) for _ in range(2))) if n else []
        code = f"{target}.index_put_((T.tensor({idx!r}, dtype=T.int64),), {g.scalar()!r})" \
            if shape else f"{target}.fill_(1)"
    else:
        idx = g.index_expr(shape, write=True)
        try:
            with torch.no_grad():
                ishape = tuple(eval(f"_x[{idx}]", {**g.ns, "_x": tv}).shape)
        except Exception:
            ishape = ()
        if g.coin(0.1):
            ishape = (1,) + ishape  # extra leading size-1 dims
        # (a value that requires grad is written only into a floating target: torch 2.13 gives
        # an integer or bool target written through a mask or an index a grad_fn)
        v = g.pick(lambda u: _expands(tuple(u.shape), ishape) and (
            tv.is_floating_point() or not u.requires_grad)) if g.coin(0.5) else None
        if v is None:
            v = g.leaf(str(tv.dtype)[6:] if g.coin(0.85) else g.choice(DTYPES), ishape,
                       rg=g.coin(0.4) and str(tv.dtype)[6:] in FLOATS)
        code = f"{target}[{idx}] = {v}"
    return code, op


def _expanded(t) -> bool:
    """Several elements share memory: writing into it is deprecated in torch (and crashes
    torch 2.13 in some sequences with hooks), so the programs do not."""
    return any(st == 0 and n > 1 for st, n in zip(t.stride(), t.shape))


def inplace(g: Gen):
    kind = g.choice(("clone", "direct", "direct", "piece", "leaf", "nograd_leaf"))
    if kind == "clone":
        a = g.pick_any()
        c = g.fresh()
        if not g.emit(f"{c} = {a}{g.choice(('.clone()', ' * 1', ' + 0'))}", "clone", g.dt(a),
                      (c,)):
            return
    elif kind in ("direct", "piece"):
        c = g.pick(lambda t: not t.is_leaf and not _expanded(t))
        if c is None:
            return
    else:
        c = g.pick(lambda t: t.is_leaf and not _expanded(t)) or g.leaf()
    target = _view_target(g, c)
    code, op = _write(g, target)
    if kind == "nograd_leaf":
        code = "with T.no_grad():\n    " + code
    g.emit(code, "inplace." + op, g.dt(c), check=False)


# -------------------------------------------------------------------------------------------
# Autograd: retain_grad, hooks, custom Functions, detach, grad modes, mid-program backward
# -------------------------------------------------------------------------------------------

HOOK_RETURNS = ("None", "None", "g * 2", "g + 1", "g.clone()")


def hook(g: Gen):
    # torch 2.13 crashes registering a hook on a view whose base was written in place after the
    # view was made; a view whose counter moved may be one
    a = g.pick_any(lambda t: (t.requires_grad or g.coin(0.1))
                   and not (t._base is not None and t._version > 0))
    tag = f"'{a}'"
    kind = g.choice(("tensor", "tensor", "retain", "pre", "post", "acc", "remove"))
    if kind == "tensor":
        ret = g.choice(HOOK_RETURNS)
        code = f"{a}.register_hook(lambda g: H({tag}, g, {ret}))"
    elif kind == "retain":
        code = f"{a}.retain_grad()"
    elif kind == "pre":
        ret = g.choice(("None", "None", "tuple(None if x is None else x * 3 for x in g)"))
        code = f"{a}.grad_fn.register_prehook(lambda g: H('pre' + {tag}, g, {ret}))"
    elif kind == "post":
        ret = g.choice(("None", "None", "tuple(None if x is None else x * 0.5 for x in gi)"))
        code = (f"{a}.grad_fn.register_hook(lambda gi, go: "
                f"H('post' + {tag}, (gi, go), {ret}))")
    elif kind == "acc":
        code = f"{a}.register_post_accumulate_grad_hook(lambda p: H('acc' + {tag}, p.grad))"
    else:
        code = (f"_h = {a}.register_hook(lambda g: H('removed' + {tag}, g, g * 100)); "
                "_h.remove()")
    g.emit(code, "hook." + kind, g.dt(a), check=False)


def detach(g: Gen):
    a = g.pick_any()
    out = g.fresh()
    kind = g.choice(("detach", "detach_", "requires_grad_false", "requires_grad_", "data"))
    if kind == "detach":
        g.emit(f"{out} = {a}.detach()", "detach", g.dt(a), (out,))
    elif kind == "data":
        g.emit(f"{out} = {a}.data", "data", g.dt(a), (out,))
    elif kind == "detach_":
        g.emit(f"{a}.detach_()", "detach_", g.dt(a), check=False)
    elif kind == "requires_grad_false":
        g.emit(f"{a}.requires_grad_(False)", "requires_grad_(False)", g.dt(a), check=False)
    else:
        g.emit(f"{a}.requires_grad_()", "requires_grad_", g.dt(a), check=False)


def function(g: Gen):
    name = g.choice(("Two", "NonDiff", "Dirty", "DirtyTwo", "ViewOut", "Once", "NoMat", "Scale",
                     "Jvp", "BadCount"))
    g.use_class(name)
    a = g.pick_float() if g.coin(0.95) else g.pick_any()
    dt = g.dt(a)
    if name in ("Dirty", "DirtyTwo", "ViewOut") and g.coin(0.2):
        a = f"{a}[{g.index_expr(g.shape(a), write=True, adv=False)}]"  # a view, maybe of a leaf
    elif name in ("Dirty", "DirtyTwo") and g.coin(0.7):
        c = g.fresh()
        if not g.emit(f"{c} = {a} * 1", "mul", dt, (c,)):
            return
        a = c if g.coin(0.7) else f"{c}[{g.index_expr(g.shape(c), write=True, adv=False)}]"
    outs = [g.fresh()]
    if name in ("Two", "NonDiff", "NoMat", "DirtyTwo"):
        outs.append(g.fresh())
    args = a
    if name in ("Scale", "DirtyTwo"):
        with torch.no_grad():
            shape = tuple(eval(a, g.ns).shape)
        args = f"{a}, {g.partner(shape, into=True)}"
    lhs = ", ".join(outs)
    g.emit(f"{lhs} = {name}.apply({args})", "Function." + name, dt, tuple(outs))


def grad_mode(g: Gen):
    """An op statement run under a local grad mode (a view made under no_grad, ...)."""
    ctx = g.choice(("T.no_grad()", "T.no_grad()", "T.enable_grad()", "T.inference_mode()",
                    "T.set_grad_enabled(False)"))
    a = g.pick_any()
    out = g.fresh()
    body = g.choice((f"{a}[{g.index_expr(g.shape(a))}]", f"{a} * 2", f"{a}.view(-1)"
                     if g.val(a).is_contiguous() else f"{a}.reshape(-1)", f"{a}.exp()",
                     f"{a}.unsqueeze(0)"))
    g.emit(f"with {ctx}:\n    {out} = {body}", "mode." + ctx[2:].split("(")[0], g.dt(a),
           (out,))


def backward_mid(g: Gen):
    """A backward call in the middle of the program (hooks fire, .grad accumulates)."""
    a = g.pick_float(lambda t: t.requires_grad)
    kind = g.choice(("backward", "backward", "grad", "grad_unused"))
    if kind == "backward":
        code = f"({a} * W({a})).sum().backward(retain_graph=True)"
        g.emit(code, "backward", g.dt(a), kind="backward", check=False)
        return
    ins = [n for n in g.tensors(lambda t: t.requires_grad)]
    ins = g.r.sample(ins, min(len(ins), g.integer(1, 3)))
    out = g.fresh()
    unused = ", allow_unused=True" if kind == "grad_unused" else ""
    code = (f"{out} = T.autograd.grad(({a} * W({a})).sum(), [{', '.join(ins)}], "
            f"retain_graph=True{unused})")
    g.emit(code, "autograd.grad", g.dt(a), kind="backward", check=False)
    g.names = [n for n in g.names if n != out]


# -------------------------------------------------------------------------------------------
# Bad arguments
# -------------------------------------------------------------------------------------------

def bad_call(g: Gen):
    """A call torch rejects (most of the time): its exception type is compared."""
    a = g.pick_any()
    t = g.val(a)
    nd = t.dim()
    b = g.pick_any()
    forms = (
        f"{a}.sum({nd + 1})", f"{a}.transpose(0, {nd + 2})", f"{a}.view({t.numel() + 1})",
        f"{a}.reshape(-1, -1)", f"{a}.expand(5, 7)", f"{a}.squeeze({nd + 3})",
        f"T.cat([{a}, {b}], dim={nd})", f"T.stack([{a}, {b}])", f"{a} + 'x'",
        f"{a}.add({b}, alpha='x')", f"{a}.softmax(dim={nd + 1})", f"{a}.sum(dim=1.5)",
        f"{a}.mean(dtype=T.int64)", f"{a}.var(correction='x')", f"{a}.permute(0, 0)",
        f"{a}.unsqueeze({nd + 2})", f"{a}.split(0)", f"{a}.chunk(0)", f"{a}.flatten(1, 0)",
        f"{a}.gather(0, T.tensor([1.5]))", f"{a}.index_select(0, T.tensor([[0]]))",
        f"{a}.clamp()", f"{a}.max(dim=None)", f"{a}.pow()", f"{a}.select(0, 99)",
        f"T.where({a}, {b}, {b})", f"{a}.mm({b})", f"{a}.dot({b})", f"{a}.bmm({b})",
        f"{a}.sum(keepdim='yes')", f"{a}.expand({tuple(t.shape)!r} + (2,))",
        f"{a} @ {b}", f"{a} & {b}", f"{a} | 1.5", f"{a}.bitwise_not()", f"{a}.abs_()",
        f"T.nn.functional.mse_loss({a}, {b})", f"{a}.view(T.float32)", "T.tensor([1, 'x'])",
        f"{a}.scatter(0, T.tensor([0]), {b})", f"{a}.index_put_(({a},), {b})",
        f"{a}.log_softmax()", f"{a}.new_zeros(-1)", f"{a}[{nd + 1}]", f"{a}[:, :, :, :, 0]",
        f"{a}.item()", f"{a}.backward()", f"T.autograd.grad({a}.sum(), [{b}])",
        f"{a}.register_hook(5)", f"{a}.retain_grad()", f"{a}.grad_fn.name()",
        f"{a}.add_({b})", f"{a}.sub_(True)", f"{a}.mul_({b}.double())", f"{a}.copy_({b})",
        f"{a}.unbind({nd + 1})", f"{a}.amax({nd + 2})", f"{a}.std(dim=({nd},))",
        f"{a}.detach_().add_(1)", f"T.clamp({a}, min={b}, max=1.5)", f"T.isclose({a}, {b})",
        f"{a}.to('bogus')", f"{a}.max({b})", f"{a}.requires_grad_()",
    )
    out = g.fresh()
    code = g.choice(forms)
    op = "bad." + code.replace(a, "a").replace(b, "b").split("(")[0].removeprefix(
        "a.").removeprefix("T.")[:24]
    g.emit(f"{out} = {code}", op, g.dt(a), (out,))


# -------------------------------------------------------------------------------------------
# Motifs: short compositions where views, versions, grad modes and Functions meet
# -------------------------------------------------------------------------------------------

def _nonleaf_copy(g: Gen, a: str) -> str | None:
    c = g.fresh()
    return c if g.emit(f"{c} = {a} * 1", "mul", g.dt(a), (c,)) else None


def motif(g: Gen):
    kind = g.choice(("unbind_write", "view_then_setitem", "expand_then_write", "nograd_view",
                     "viewout_then_write", "piece_copy", "setitem_other_dtype",
                     "inference_then_write", "reflected_pow", "special_values", "one_element",
                     "clamp_equal_bounds", "index_put_empty", "loss_mixed_dtypes",
                     "transposed_write"))
    a = g.pick_float()
    dt = g.dt(a)
    shape = g.shape(a)
    if kind == "unbind_write":
        base = g.pick(lambda t: t.dim() >= 1 and 1 <= t.shape[0] <= 4 and not (
            t.is_leaf and t.requires_grad)) or g.leaf(dt, (3,), rg=False)
        n = g.shape(base)[0]
        pieces = [g.fresh() for _ in range(n)]
        lhs = ", ".join(pieces) + ("," if n == 1 else "")
        rhs = g.choice((f"{base}.unbind(0)", base))
        if g.emit(f"{lhs} = {rhs}", "unbind" if "unbind" in rhs else "iterate", g.dt(base),
                  tuple(pieces)):
            target = g.choice((base, pieces[0]))
            g.emit(f"{target}.{g.choice(('mul_(2)', 'add_(10)', 'neg_()'))}",
                   "inplace.piece_or_base", g.dt(base), check=False)
    elif kind == "view_then_setitem":
        base = g.leaf(dt, shape or (3,), rg=False) if g.coin() else _nonleaf_copy(g, a)
        if base is None:
            return
        v = g.fresh()
        bshape = g.shape(base)
        g.emit(f"{v} = {base}.view({tuple(_factor(g, bshape))!r})", "view", dt, (v,))
        idx = g.index_expr(bshape, write=True)
        ishape = g.indexed_shape(base, idx) or ()
        w = g.leaf(dt, ishape, rg=True)
        g.emit(f"{base}[{idx}] = {w}", "inplace.setitem_t", dt, check=False)
    elif kind == "expand_then_write":
        y = _nonleaf_copy(g, a)
        if y is None:
            return
        v = g.fresh()
        new = tuple([g.integer(1, 3)] + list(shape))
        g.emit(f"{v} = {y}.expand({new!r})", "expand", dt, (v,))
        g.emit(f"{y}.mul_(2)", "inplace.mul_s", dt, check=False)
    elif kind == "nograd_view":
        y = _nonleaf_copy(g, a) if g.coin(0.7) else a
        if y is None:
            return
        v = g.fresh()
        ctx = g.choice(("T.no_grad()", "T.inference_mode()", "T.set_grad_enabled(False)"))
        g.emit(f"with {ctx}:\n    {v} = {y}[{g.index_expr(g.shape(y))}]",
               "mode." + ctx[2:].split("(")[0], dt, (v,))
        g.emit(f"{y}.mul_(2)", "inplace.mul_s", dt, check=False)
        w = g.fresh()
        g.emit(f"{w} = {v}.reshape(-1) * 2", "reshape", dt, (w,))
    elif kind == "viewout_then_write":
        g.use_class("ViewOut")
        y = _nonleaf_copy(g, a)
        if y is None:
            return
        v = g.fresh()
        g.emit(f"{v} = ViewOut.apply({y})", "Function.ViewOut", dt, (v,))
        g.emit(g.choice((f"{y} += 1", f"{y}.mul_(2)", f"{v}[None].add_(1)")),
               "inplace.after_view_function", dt, check=False)
    elif kind == "piece_copy":
        base = g.pick(lambda t: t.dim() >= 1 and t.shape[0] >= 2 and not t.requires_grad) \
            or g.leaf(dt, (4,), rg=False)
        p, q = g.fresh(), g.fresh()
        n = g.shape(base)[0]
        k = g.integer(1, n - 1)
        if g.emit(f"{p}, {q} = {base}.split([{k}, {n - k}])", "split", g.dt(base), (p, q)):
            w = g.leaf(g.dt(base) if g.dt(base) in FLOATS else dt, g.shape(q), rg=True)
            g.emit(g.choice((f"{q}.copy_({w})", f"{q}.add_({w})", f"{q}[0] = {w}[0]")),
                   "inplace.piece", g.dt(base), check=False)
    elif kind == "setitem_other_dtype":
        y = _nonleaf_copy(g, a) if shape and shape[0] else None
        if y is None:
            return
        n = shape[0]
        idx = list(dict.fromkeys(g.integer(0, n - 1) for _ in range(2)))
        other = "float32" if dt == "float64" else "float64"
        w = g.leaf(other, (len(idx),) + shape[1:] if g.coin() else (1,) + shape[1:],
                   rg=g.coin())
        g.emit(f"{y}[T.tensor({idx!r})] = {w}", "inplace.setitem_index_dtype", dt,
               check=False)
    elif kind == "inference_then_write":
        b = g.fresh()
        g.emit(f"with T.inference_mode():\n    {b} = {a} * 2", "mode.inference_mode", dt, (b,))
        g.emit(g.choice((f"{b}.div_(2.0)", f"{b}.add_(1)", f"{b}[...] = 0.5")),
               "inplace.inference_tensor", dt, check=False)
    elif kind == "reflected_pow":
        i = g.pick(lambda t: t.dtype == torch.int64) or g.leaf("int64")
        out = g.fresh()
        code = g.choice((f"(-2.0) ** {a}", f"(-0.5) ** {a}", f"2 ** {i}", f"{i} ** {i}",
                         f"T.tensor(0) ** {i}", f"{i}.pow(-1)", f"3 ** {i}"))
        g.emit(f"{out} = {code}", "pow.reflected", dt if a in code else "int64", (out,))
    elif kind == "special_values":
        x = g.leaf(dt, shape or (2,), rg=True)
        if g.coin(0.2):
            g.emit(f"{x}.data[...] = T.tensor({g.choice(('nan', 'inf', '-inf'))})",
                   "data_write", dt, check=False)
        out = g.fresh()
        vals = g.choice(("nan", "inf", "-inf", "0.0"))
        y = g.fresh()
        g.emit(f"{y} = T.where({x} > 0, {x}, {vals})", "where", dt, (y,), guards=[(x, 0.0)],
               check=False)
        op = g.choice((f"{y}.sign()", f"T.relu({y})", f"T.maximum({y}, {a})", f"{a} / {y}",
                       f"T.minimum({a}, {y})", f"{y}.max()", f"{a}.max() * {y}"))
        g.emit(f"{out} = {op}", "special." + op.split("(")[0].split(".")[-1].split(" ")[-1],
               dt, (out,), check=False)
    elif kind == "one_element":
        out = g.fresh()
        op = g.choice(("var()", "std()", "var(0)", "var(correction=0)", "std(0)"))
        g.emit(f"{out} = {a}.reshape(-1)[:1].{op}", op.split("(")[0], dt, (out,), check=False)
    elif kind == "clamp_equal_bounds":
        t = g.partner(a, into=True)
        out = g.fresh()
        g.emit(f"{out} = T.clamp({a}, {t}, {t}.clone())", "clamp.equal_bounds", dt, (out,),
               guards=[(f"{a} - {t}", 0.0)])
    elif kind == "index_put_empty":
        k = g.integer(0, 3)
        e = g.pick(lambda t: t.dim() >= 1 and t.shape[0] == 0) or g.leaf(dt, (0, k))
        es = g.shape(e)
        out = g.fresh()
        g.emit(f"{out} = {e}.index_put((T.tensor([0, 0]),), T.zeros({(1,) + es[1:]!r}, "
               f"dtype={e}.dtype))", "index_put.empty", g.dt(e), (out,))
    elif kind == "loss_mixed_dtypes":
        b = g.pick(lambda t: t.dtype in (torch.bool, torch.int64)) or g.leaf("bool")
        out = g.fresh()
        g.emit(f"{out} = T.nn.functional.mse_loss({b}, {a})", "mse_loss", g.dt(b), (out,))
    else:
        y = _nonleaf_copy(g, a)
        if y is None or len(shape) < 1:
            return
        view = f"{y}.t()" if len(shape) <= 2 else f"{y}.transpose(0, 1)"
        g.emit(f"{view}.{g.choice(('tanh_()', 'sigmoid_()', 'mul_(2)', 'exp_()'))}",
               "inplace.transposed", dt, check=False)


# -------------------------------------------------------------------------------------------
# Programs
# -------------------------------------------------------------------------------------------

FAMILIES = {
    "unary": (unary, 6), "convert": (convert, 1), "softmax": (softmax, 2),
    "binary": (binary, 7), "clamp": (clamp, 2), "where": (where, 2), "reduce": (reduce, 4),
    "shape": (shape_op, 7), "index": (index_op, 3), "matmul": (matmul, 2), "nn": (nn_op, 2),
    "inplace": (inplace, 7), "hook": (hook, 4), "detach": (detach, 1),
    "function": (function, 3), "grad_mode": (grad_mode, 2), "backward": (backward_mid, 1),
    "bad": (bad_call, 1), "motif": (motif, 4),
}


def _tail(g: Gen):
    """The gradient tail: a weighted loss over the values that require grad, then backward,
    ``autograd.grad`` (double backward for some programs) and a second backward."""
    tracked = g.tensors(lambda t: t.requires_grad and t.is_floating_point())
    if not tracked:
        return
    tracked = tracked[-6:] if len(tracked) > 6 else tracked
    g.emit("loss = 0", "loss", check=False)
    for n in tracked:
        g.emit(f"loss = loss + ({n} * W({n})).sum()", "loss", g.dt(n), check=False)
    leaves = g.tensors(lambda t: t.requires_grad and t.is_leaf)
    inputs = leaves + g.r.sample(tracked, min(len(tracked), 2))
    inputs = list(dict.fromkeys(inputs))[:6]
    lv = "[" + ", ".join(inputs) + "]"
    kind = g.choice(("backward", "grad", "double", "double"))
    if kind == "backward":
        g.emit("loss.backward(retain_graph=True)", "tail.backward", kind="backward",
               check=False)
    elif kind == "grad":
        g.emit(f"gs = T.autograd.grad(loss, {lv}, retain_graph=True, allow_unused=True)",
               "tail.grad", kind="backward", check=False)
    else:
        g.emit(f"gs = T.autograd.grad(loss, {lv}, create_graph=True, allow_unused=True)",
               "tail.grad_create_graph", kind="backward", check=False)
        g.emit("gsum = sum((x * W(x)).sum() for x in gs if x is not None and x.requires_grad)",
               "tail.gsum", check=False)
        g.emit(f"ggs = T.autograd.grad(gsum, {lv}, allow_unused=True)", "tail.double_backward",
               kind="backward", check=False)
    g.emit("loss.backward()", "tail.backward_again", kind="backward", check=False)


def draw_program(seed: int, max_steps: int = 14) -> Program:
    """The program of ``seed``: a few leaves, up to ``max_steps`` family statements, the tail."""
    with warnings.catch_warnings():  # torch's warnings while shapes are worked out (std of one)
        warnings.simplefilter("ignore")
        return _draw(seed, max_steps)


def _draw(seed: int, max_steps: int) -> Program:
    g = Gen(seed)
    names = list(FAMILIES)
    weights = [FAMILIES[n][1] for n in names]
    # A program leans on a few families, so that their interactions get depth.
    focus = g.r.sample(names, 3)
    weights = [w * (4 if n in focus else 1) for n, w in zip(names, weights)]
    for _ in range(g.integer(1, 3)):
        g.leaf()
    for _ in range(g.integer(3, max_steps)):
        FAMILIES[g.r.choices(names, weights)[0]][0](g)
    _tail(g)
    return g.program()
