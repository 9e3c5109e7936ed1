"""Per-op dispatch cost of every built-in op: ext against torch, or ext against another commit.

Each recipe of benchmarks/op_recipes.py (one or more small programs per built-in op, on 4x4
float64 tensors) is timed over N calls, forward only and forward + backward, with the garbage
collector on and torch imported, as a user runs it. N is chosen per recipe from a time budget;
the two sides alternate, recipe by recipe, over several rounds, so that drift hits both alike;
a recipe's ratio is the median of its per-round ratios, a family's the geometric mean of its
recipes' ratios.

    python benchmarks/ops.py                 ext (this checkout) vs torch; --write records the
                                             "ops" section of benchmarks/RESULTS.md
    python benchmarks/ops.py --against REV   this checkout's ext (new) vs REV's ext (old), each in
                                             its own process with PYTHONPATH at its tree (REV is
                                             checked out in a temporary git worktree, removed
                                             afterwards); families over 5% slower are flagged;
                                             --write records the family table in RESULTS.md
    python benchmarks/ops.py --check         every recipe runs on ext and torch, and every
                                             built-in node name is reached by some recipe

Options: -k TEXT keeps the recipes whose "family: code" contains TEXT; --rounds R (default 6);
--seconds S, the timing budget in seconds of the clock (default 50: the whole run takes about
70 s on an idle 2-core machine, twice that when other jobs hold half of it); --clock cpu|wall,
the process's CPU time (default; steadier on a shared machine) or wall time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, write_section  # noqa: E402, I001  (sets threads first)

from op_recipes import RECIPES, Recipe, make_inputs  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODES = ("fwd", "f+b")
# Built-in nodes no torch-named program reaches, with the reason. (The view machinery's own
# nodes, AsStridedBackward0 and AsStridedScatterBackward0, live in ext.autograd.views.)
INTERNAL: dict[str, str] = {
    "NotImplemented": "the node of an op whose derivative torch does not define (floor_divide, "
                      "number % tensor): its backward raises, so no timed backward runs it",
    "SpecialZetaBackward2": "zeta(tensor, number): torch differentiates zeta in its second "
                            "argument only, so the node's backward always raises",
    **{node: "the node of an in-place op torch has no derivative for (acosh_, asinh_, atanh_): "
              "its backward raises" for node in ("AcoshBackward1", "AsinhBackward1",
                                                 "AtanhBackward1")},
}
SLOWER = 1.05  # a family whose new/old ratio is over this is flagged
# The timer: the process's CPU time by default, which other jobs on a shared machine disturb far
# less than wall time (for these single-threaded, CPU-bound calls the two agree on an idle one).
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


# ------------------------------------------------------------------------------------ timing
class Local:
    """The recipes prepared on one backend in this process: one callable per (recipe, mode)."""

    def __init__(self, T, recipes: list[Recipe], clock: str = "cpu") -> None:
        self.clock = CLOCKS[clock]
        self.calls: dict[tuple[str, str], Callable[[], None]] = {}
        self.failed: dict[str, str] = {}
        for recipe in recipes:
            try:
                self.calls.update(_prepare(T, recipe))
            except Exception as e:  # a recipe the backend (or an old commit) cannot run
                self.failed[recipe.key] = f"{type(e).__name__}: {e}"

    def estimate(self, key: tuple[str, str]) -> float:
        """Seconds per call, from raising the number of calls until they take 1 ms."""
        n = 1
        while True:
            elapsed = self.time(key, n) * n
            if elapsed > 1e-3:
                return elapsed / n
            n *= 2 if elapsed > 2e-4 else 8

    def time(self, key: tuple[str, str], n: int) -> float:
        """Seconds per call over ``n`` calls."""
        fn, clock = self.calls[key], self.clock
        t0 = clock()
        for _ in range(n):
            fn()
        return (clock() - t0) / n


def _prepare(T, recipe: Recipe) -> dict:
    # Fresh inputs per recipe: leaves' grads accumulate only within one recipe's calls.
    fwd = recipe.build(T, make_inputs(T))
    out = fwd()
    calls = {(recipe.key, "fwd"): fwd}
    if recipe.grad:
        g = T.ones_like(out)

        def fwd_bwd() -> None:
            fwd().backward(g)

        fwd_bwd()
        calls[(recipe.key, "f+b")] = fwd_bwd
    return calls


class Worker:
    """A process that imports the ext of one tree (through PYTHONPATH) and times on request."""

    def __init__(self, tree: Path, keep: str, clock: str, cpu: int | None) -> None:
        env = dict(os.environ, PYTHONPATH=str(tree))
        pin = [] if cpu is None else ["--cpu", str(cpu)]
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", str(tree), "-k", keep, "--clock", clock, *pin],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True, bufsize=1)
        self.tree = tree
        self.calls: dict[tuple[str, str], None] = {}
        self.failed: dict[str, str] = {}

    def start(self) -> None:
        """Wait for the worker's recipes (prepared or failed)."""
        hello = self._read()
        self.calls = {tuple(k): None for k in hello["calls"]}
        self.failed = hello["failed"]

    def estimate(self, key: tuple[str, str]) -> float:
        """Seconds per call (see ``Local.estimate``)."""
        return self._ask({"estimate": key})

    def time(self, key: tuple[str, str], n: int) -> float:
        """Seconds per call over ``n`` calls."""
        return self._ask({"time": key, "n": n})

    def close(self) -> None:
        """End the worker (it exits when its input closes)."""
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait()

    def _ask(self, request: dict) -> float:
        self.proc.stdin.write(json.dumps(request) + "\n")
        return self._read()

    def _read(self):
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the worker for {self.tree} exited ({self.proc.wait()})")
        return json.loads(line)


def serve(tree: str, keep: str, clock: str, cpu: int | None) -> None:
    """The worker's loop: prepare the recipes on the ext under PYTHONPATH, then time on request
    (one JSON request per line on stdin, one JSON answer per line on stdout)."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr  # nothing but answers goes down the channel
    import torch  # noqa: F401 - imported as a user's program has it

    import ext

    where = Path(ext.__file__).resolve()
    if Path(tree).resolve() not in where.parents:
        raise SystemExit(f"PYTHONPATH={tree} imported ext from {where}")
    side = Local(ext, selected(keep), clock)
    channel.write(json.dumps({"calls": list(side.calls), "failed": side.failed}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        if "estimate" in request:
            answer = side.estimate(tuple(request["estimate"]))
        else:
            answer = side.time(tuple(request["time"]), request["n"])
        channel.write(json.dumps(answer) + "\n")


def measure(sides: dict, keys: list, seconds: float, rounds: int) -> dict:
    """Seconds per call of each key on each side, one sample per round.

    N per key is set so that all rounds of all keys on both sides take about ``seconds``; each
    round times every key on both sides back to back, the first side alternating by round.
    """
    slot = seconds / (len(keys) * len(sides) * rounds)
    calls = {}
    for key in keys:
        per_call = statistics.fmean(side.estimate(key) for side in sides.values())
        calls[key] = max(1, round(slot / per_call))
    names = list(sides)
    samples = {key: {name: [] for name in names} for key in keys}
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        t0 = time.perf_counter()
        for key in keys:
            for name in order:
                samples[key][name].append(sides[name].time(key, calls[key]))
        print(f"  round {r + 1}/{rounds}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return samples


# ------------------------------------------------------------------------------------ report
def summarize(samples: dict, first: str, second: str) -> dict:
    """Per key: median microseconds per call of each side, and the median of the per-round
    ratios first / second."""
    rows = {}
    for key, by_side in samples.items():
        ratios = [a / b for a, b in zip(by_side[first], by_side[second])]
        rows[key] = (statistics.median(by_side[first]) * 1e6,
                     statistics.median(by_side[second]) * 1e6, statistics.median(ratios))
    return rows


def by_family(rows: dict, recipes: list[Recipe]) -> dict:
    """Per family and mode: the number of recipes and the geometric means of the rows."""
    families: dict[str, dict[str, list]] = {}
    for recipe in recipes:
        for mode in MODES:
            if (recipe.key, mode) in rows:
                fam = families.setdefault(recipe.family, {m: [] for m in MODES})
                fam[mode].append(rows[(recipe.key, mode)])
    families["all"] = {m: [r for f in families.values() for r in f[m]] for m in MODES}
    return {name: {mode: (len(rs), *(_geomean([r[i] for r in rs]) for i in range(3)))
                   for mode, rs in fam.items()} for name, fam in families.items()}


def _geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else math.nan


def _cells(row) -> str:
    if row is None:
        return f"{'':>9} {'':>9} {'':>7}"
    return f"{row[0]:9.2f} {row[1]:9.2f} {row[2]:6.2f}x"


def print_rows(rows: dict, recipes: list[Recipe], first: str, second: str) -> None:
    """The per-recipe table, family by family."""
    width = max(len(r.code) for r in recipes) + 2
    head = f"{first + ' us':>9} {second + ' us':>9} {'ratio':>7}"
    print(f"{'':<{width}} {'forward':^27}   {'forward + backward':^27}")
    print(f"{'recipe':<{width}} {head}   {head}")
    family = None
    for recipe in recipes:
        if (recipe.key, "fwd") not in rows:
            continue
        if recipe.family != family:
            family = recipe.family
            print(f"[{family}]")
        print(f"  {recipe.code:<{width - 2}} {_cells(rows[(recipe.key, 'fwd')])}   "
              f"{_cells(rows.get((recipe.key, 'f+b')))}")


def family_table(families: dict, first: str, second: str,
                 flag: float | None = None) -> list[str]:
    """The per-family table in Markdown (geometric means), flagging ratios over ``flag``."""
    lines = [f"| family | recipes | fwd {first} us | fwd {second} us | fwd {first} / {second} | "
             f"fwd+bwd {first} us | fwd+bwd {second} us | fwd+bwd {first} / {second} |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, fam in families.items():
        cells = []
        for mode in MODES:
            n, a, b, r = fam[mode]
            mark = " (over)" if flag is not None and r > flag else ""
            cells += [f"{a:.2f}", f"{b:.2f}", f"{r:.2f}x{mark}"] if n else ["", "", ""]
        lines.append(f"| {name} | {fam['fwd'][0]} | " + " | ".join(cells) + " |")
    return lines


# ------------------------------------------------------------------------------------ modes
def selected(keep: str) -> list[Recipe]:
    """The recipes whose "family: code" contains ``keep``."""
    return [r for r in RECIPES if keep in r.key]


def one_cpu() -> int | None:
    """The CPU that all timing runs on (None where affinity cannot be set): on a shared machine
    the CPUs are loaded unequally, and a process that migrates, or two processes on different
    CPUs, would see different speeds."""
    return min(os.sched_getaffinity(0)) if hasattr(os, "sched_setaffinity") else None


def _keys(recipes: list[Recipe], sides: dict) -> list:
    failed = {}
    for name, side in sides.items():
        for key, error in side.failed.items():
            failed.setdefault(key, []).append(f"{name}: {error}")
    for key, errors in failed.items():
        print(f"not timed: {key} ({'; '.join(errors)})", file=sys.stderr)
    return [(r.key, m) for r in recipes for m in MODES
            if all((r.key, m) in side.calls for side in sides.values())]


def against_torch(args) -> None:
    """ext of this checkout against torch, in this process."""
    import torch

    import ext

    torch.set_num_threads(1)
    cpu = one_cpu()
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    recipes = selected(args.k)
    sides = {"ext": Local(ext, recipes, args.clock), "torch": Local(torch, recipes, args.clock)}
    keys = _keys(recipes, sides)
    if not keys:
        raise SystemExit("no recipe to time")
    t0 = time.perf_counter()
    rows = summarize(measure(sides, keys, args.seconds, args.rounds), "ext", "torch")
    print_rows(rows, recipes, "ext", "torch")
    table = family_table(by_family(rows, recipes), "ext", "torch")
    print("\n" + "\n".join(table))
    print(f"\n{len(recipes)} recipes, {len(keys)} timings, {time.perf_counter() - t0:.0f} s",
          file=sys.stderr)
    if args.write and not args.k:
        write_section("ops", "\n".join([
            "## ops: per-op dispatch cost (benchmarks/ops.py)",
            "",
            f"{len(recipes)} recipes over every built-in op (benchmarks/op_recipes.py) on 4x4 "
            f"float64 tensors; microseconds ({args.clock} time) per call, forward only and "
            "forward + backward, gc on; "
            f"geometric means per family of each recipe's median over {args.rounds} interleaved "
            f"rounds. In-place recipes include the clone they act on. {machine()}.",
            "",
            *table,
        ]))


def against_commit(args) -> int:
    """This checkout's ext (new) against ``args.against``'s (old), in two worker processes."""
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify",
                          f"{args.against}^{{commit}}"], capture_output=True, text=True)
    if rev.returncode:
        raise SystemExit(f"not a commit: {args.against}")
    commit = rev.stdout.strip()
    recipes = selected(args.k)
    tmp = Path(tempfile.mkdtemp(prefix="ops-against-"))
    tree = tmp / commit[:12]
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree),
                    commit], check=True)
    sides = {}
    try:
        cpu = one_cpu()
        sides = {name: Worker(path, args.k, args.clock, cpu)
                 for name, path in (("old", tree), ("new", ROOT))}
        for side in sides.values():
            side.start()
        keys = _keys(recipes, sides)
        if not keys:
            raise SystemExit("no recipe runs on both commits")
        t0 = time.perf_counter()
        rows = summarize(measure(sides, keys, args.seconds, args.rounds), "new", "old")
    finally:
        for side in sides.values():
            side.close()
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                       check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    print_rows(rows, recipes, "new", "old")
    families = by_family(rows, recipes)
    table = family_table(families, "new", "old", SLOWER)
    print("\n" + "\n".join(table))
    over = [name for name, fam in families.items()
            if name != "all" and any(fam[m][0] and fam[m][3] > SLOWER for m in MODES)]
    limit = f"{(SLOWER - 1) * 100:.0f}%"
    print(f"\nnew = this checkout, old = {args.against} ({commit[:12]}); {len(keys)} timings, "
          f"{time.perf_counter() - t0:.0f} s")
    print(f"families over {limit} slower: {', '.join(over) if over else 'none'}")
    if args.write:
        write_section("ops-against", "\n".join([
            f"## ops: this checkout against {args.against} (benchmarks/ops.py --against)",
            "",
            f"new / old per call ({args.clock} time), geometric means per family of each "
            f"recipe's median ratio over {args.rounds} interleaved rounds in two processes; "
            f"old = {commit[:12]}. "
            f"{machine()}.",
            "",
            *table,
        ]))
    return 0


# ------------------------------------------------------------------------------------ check
def node_names(out) -> set[str]:
    """The names of every node reachable from ``out``'s grad_fn."""
    fn = getattr(out, "grad_fn", None)
    names, seen, stack = set(), set(), [fn] if fn is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        names.add(type(node).__name__)
        stack.extend(nxt for nxt, _ in node.next_functions if nxt is not None)
    return names


def builtin_node_names() -> set[str]:
    """The node names of ext's built-in ops (the subclasses of BuiltinFunction that name one)."""
    from ext.functions.builtin._builtin import BuiltinFunction

    names, stack = set(), [BuiltinFunction]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if "node_name" in cls.__dict__:
            names.add(cls.node_name)
    return names


def check() -> int:
    """Run every recipe on ext and torch with grad enabled; report the recipes that fail or
    are marked wrongly, recipes whose graphs differ between the backends, and the built-in node
    names no recipe reaches. Returns the exit status (1 on a failure or an unreached node)."""
    import torch

    import ext

    problems, reached, differ = [], set(), []
    for recipe in RECIPES:
        names = {}
        for T in (ext, torch):
            try:
                out = recipe.build(T, make_inputs(T))()
                if bool(getattr(out, "requires_grad", False)) != recipe.grad:
                    problems.append(f"{T.__name__}: {recipe.key}: requires_grad is not "
                                    f"{recipe.grad}")
                    continue
                names[T.__name__] = node_names(out)
                if recipe.grad:
                    out.backward(T.ones_like(out))
            except Exception as e:
                problems.append(f"{T.__name__}: {recipe.key}: {type(e).__name__}: {e}")
        reached |= names.get("ext", set())
        if len(names) == 2 and names["ext"] != names["torch"]:
            differ.append(f"  {recipe.key}: ext only {sorted(names['ext'] - names['torch'])}, "
                          f"torch only {sorted(names['torch'] - names['ext'])}")
    builtins = builtin_node_names()
    missing = sorted(builtins - reached - set(INTERNAL))
    print(f"{len(RECIPES)} recipes reach {len(builtins & reached)} of {len(builtins)} built-in "
          "node names")
    for name, why in INTERNAL.items():
        print(f"  not reached by design: {name} ({why})")
    if differ:
        print("graphs that differ between ext and torch (for information):")
        print("\n".join(differ))
    for problem in problems:
        print(f"FAILED {problem}")
    if missing:
        print(f"built-in node names no recipe reaches: {missing}")
    if problems or missing:
        return 1
    print(f"ok: all {len(RECIPES)} recipes run on ext and torch; every built-in node name but "
          "the internal ones is reached")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run one mode."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="REV", help="compare with the ext of commit REV")
    parser.add_argument("--write", action="store_true",
                        help="with --against: record the family table in RESULTS.md")
    parser.add_argument("--check", action="store_true", help="check the recipes' coverage")
    parser.add_argument("-k", default="", metavar="TEXT", help="only recipes containing TEXT")
    parser.add_argument("--seconds", type=float, default=50.0, help="timing budget")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="time the process's CPU time (default) or wall time")
    parser.add_argument("--rounds", type=int, default=6,
                        help="interleaved rounds (even: each side goes first as often)")
    parser.add_argument("--worker", metavar="TREE", help=argparse.SUPPRESS)
    parser.add_argument("--cpu", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        serve(args.worker, args.k, args.clock, args.cpu)
        return 0
    sys.path.insert(0, str(ROOT))  # this checkout's ext, not an installed one
    if args.check:
        return check()
    if args.against:
        return against_commit(args)
    against_torch(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
