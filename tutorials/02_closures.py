# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Reverse mode from closures
#
# Reverse-mode automatic differentiation ("backpropagation") works in two passes. The forward
# pass computes the function and, for every intermediate value, remembers *how to send a
# gradient back* to the values it was made from. The backward pass starts at the output and
# follows those instructions back to the inputs.
#
# In this walkthrough the "how to send a gradient back" is a plain Python closure (a function
# defined inside another function, which keeps the variables it uses from there) stored next
# to each number. We build that small engine in about forty lines, check it against `ext` (this
# project's engine) and real PyTorch on the same examples, and then find where the closure
# design breaks and what PyTorch does instead.

# %%
import gc
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
from sidebyside import (
    backward_order,
    both,
    both_raise,
    caught,
    check_exercise,
    claim,
    grad3,
    graphs,
    to_numpy,
)

# %% [markdown]
# ## The example, by hand
#
# We differentiate $f(x) = \sin(x^2 + 3x)$ at $x = 2$. Split it into one operation per step:
#
# | step | value at $x = 2$ | local derivative |
# |---|---|---|
# | $v_1 = x^2$ | 4 | $\partial v_1 / \partial x = 2x = 4$ |
# | $v_2 = 3x$ | 6 | $\partial v_2 / \partial x = 3$ |
# | $v_3 = v_1 + v_2$ | 10 | $\partial v_3 / \partial v_1 = \partial v_3 / \partial v_2 = 1$ |
# | $v_4 = \sin v_3$ | $\sin 10 \approx -0.544$ | $\partial v_4 / \partial v_3 = \cos 10$ |
#
# Going backwards from $v_4$ (whose derivative with respect to itself is 1), the chain rule
# multiplies the local derivatives along each path from the output to $x$. There are two paths,
# through $v_1$ and through $v_2$, and their contributions **add up**:
# $\cos 10 \cdot 4 + \cos 10 \cdot 3 = 7 \cos 10 \approx -5.873$.

# %%
by_hand = {"f(2)": math.sin(10.0), "via x**2": math.cos(10.0) * 4,
           "via 3*x": math.cos(10.0) * 3, "df/dx": math.cos(10.0) * 7}
for name, number in by_hand.items():
    print(f"{name:9} {number:+.4f}")

# %% [markdown]
# ## A number that carries its link
#
# Our engine's value type is `Var`: it holds two things, the number itself and a **link**, a
# function that knows how to pass a gradient back to whatever the number was computed from.
# (Walkthrough 1's `Var` wrote its steps on a shared tape; this one carries its way back
# with it.) A link is called as `link(me, grad, leaf_grads)`:
#
# - `me` is the `Var` the link belongs to (why it is passed in, rather than remembered by the
#   closure, becomes clear near the end);
# - `grad` is the derivative of the final output with respect to `me`;
# - `leaf_grads` is a dict where the gradients of the inputs are collected, one entry per
#   input.
#
# The operators (`+`, `*`, `**`, ...) are only a convenience: they call functions defined in
# the next cells.

# %%
@dataclass(frozen=True, eq=False)  # eq=False: hashed by identity, so a Var can be a dict key
class Var:
    """A number with its link: the closure that sends a gradient back to its inputs."""

    value: float
    link: Callable[["Var", float, dict], None]

    def __add__(self, other): return add(self, other)
    def __radd__(self, other): return add(other, self)
    def __mul__(self, other): return mul(self, other)
    def __rmul__(self, other): return mul(other, self)
    def __sub__(self, other): return sub(self, other)
    def __neg__(self): return mul(-1.0, self)
    def __pow__(self, n): return pow_n(n)(self)


# %% [markdown]
# An input of the function we differentiate is a **leaf**: nothing comes before it. Its link
# ends the journey: it adds the gradient that reached it into `leaf_grads`. *Adds*, because
# the same input can be reached along several paths (two, in our example).
#
# Plain Python numbers may appear in a computation too (the `3` in `3 * x`). They are constants:
# `send` delivers nothing to them.

# %%
def leaf_link(leaf: Var, grad: float, leaf_grads: dict) -> None:
    """A leaf's link: add the gradient that reached the leaf into leaf_grads."""
    leaf_grads[leaf] = leaf_grads.get(leaf, 0.0) + grad


def value_of(v):
    """The plain number inside ``v``: its value if it is a Var, else ``v`` itself."""
    return v.value if isinstance(v, Var) else v


def send(v, grad: float, leaf_grads: dict) -> None:
    """Pass ``grad`` back into ``v``: through its link if it is a Var; a constant takes none."""
    if isinstance(v, Var):
        v.link(v, grad, leaf_grads)


# %% [markdown]
# ## Primitives from two rules
#
# Every operation is described by two small functions: its **forward** rule (compute the value)
# and its **backward** rule (given the inputs and the gradient `grad` of the output, return
# the gradient of each input, that is `grad` times the local derivative). `prim1` and `prim2`
# turn such a pair into an operation on `Var`s, for one and for two arguments.
#
# The link is created inside the operation, so it *closes over* the inputs (`a`, `b`) and their
# values (`ra`, `rb`): that is all the backward pass needs. When no input is a `Var`, nothing
# needs a gradient and the operation returns a plain number, without building a link.

# %%
def prim1(forward, backward):
    """An operation of one argument; ``backward(a, grad)`` returns the gradient of ``a``."""
    def op(a):
        ra = value_of(a)
        if not isinstance(a, Var):
            return forward(ra)

        def link(me, grad, leaf_grads):
            send(a, backward(ra, grad), leaf_grads)
        return Var(forward(ra), link)
    return op


def prim2(forward, backward):
    """An operation of two arguments; ``backward(a, b, grad)`` returns both inputs' gradients."""
    def op(a, b):
        ra, rb = value_of(a), value_of(b)
        if not isinstance(a, Var) and not isinstance(b, Var):
            return forward(ra, rb)

        def link(me, grad, leaf_grads):
            ga, gb = backward(ra, rb, grad)
            send(a, ga, leaf_grads)
            send(b, gb, leaf_grads)
        return Var(forward(ra, rb), link)
    return op


# %% [markdown]
# Now each primitive is one line: its forward rule and its derivative side by side.

# %%
# In each backward rule, `grad` is the gradient arriving at the output.
add = prim2(lambda a, b: a + b, lambda a, b, grad: (grad, grad))
sub = prim2(lambda a, b: a - b, lambda a, b, grad: (grad, -grad))
mul = prim2(lambda a, b: a * b, lambda a, b, grad: (b * grad, a * grad))
sin = prim1(math.sin, lambda a, grad: math.cos(a) * grad)
cos = prim1(math.cos, lambda a, grad: -math.sin(a) * grad)


def pow_n(n: float):
    """x ** n for a constant n: d/dx x^n = n x^(n-1)."""
    return prim1(lambda a: a**n, lambda a, grad: n * a ** (n - 1) * grad)


# The closure engine as a small "module", so one function can be written for it, ext and torch.
C = SimpleNamespace(sin=sin, cos=cos)

# %% [markdown]
# The backward pass is one call: give the output's own link the starting gradient
# $\partial y / \partial y = 1$ and an empty dict `leaf_grads`. Each link calls the links of its
# inputs, and so on recursively, until the leaves write into `leaf_grads`. (`leaf=` lets us
# swap in a different leaf link later on.)

# %%
def gradient(f, *xs, upstream=1.0, leaf=leaf_link):
    """Value of ``f(C, *xs)`` and its gradient with respect to each x, by the closure engine:
    returns ``(value, [gradient of each x])``."""
    leaves = [Var(float(x), leaf) for x in xs]
    y = f(C, *leaves)
    leaf_grads: dict = {}
    y.link(y, upstream, leaf_grads)
    return y.value, [leaf_grads.get(x, 0.0) for x in leaves]


def f(T, x):
    return T.sin(x**2 + 3 * x)


value, grads = gradient(f, 2.0)
print(f"f(2) = {value:+.4f}   df/dx = {grads[0]:+.4f}")

# %% [markdown]
# The same numbers as by hand. As in walkthrough 1, `f` takes the engine as its first
# argument `T`: `C` here, and below the modules `ext` and `torch`, which both have a `sin`.
#
# ## The same example on ext and torch
#
# `both(fn)` runs `fn(ext)` and `fn(torch)`, prints the results (a row printed once with
# `ext = torch` means both printed the same) and checks that they agree. It returns both
# results, `pair.ext` and `pair.torch`; `compare` below takes torch's and checks our engine's
# numbers against them.

# %%
def on_engine(T, f, *xs):
    """Value and gradients of ``f`` at ``xs`` on a real engine: float64 leaves, backward()."""
    leaves = [T.tensor(x, dtype=T.float64, requires_grad=True) for x in xs]
    y = f(T, *leaves)
    y.backward()
    return {"value": y, **{f"d/d{name}": x.grad for name, x in zip("xyz", leaves)}}


def compare(f, *xs):
    """Run ``f`` on ext and torch (through ``both``), then check the closure engine against them."""
    pair = both(lambda T: on_engine(T, f, *xs))  # the lambda fixes f and xs; both supplies T
    value, grads = gradient(f, *xs)
    ours, real = np.array([value, *grads]), np.array([to_numpy(v) for v in pair.torch.values()])
    print(f"closure engine: {ours}")
    assert np.allclose(ours, real, rtol=1e-12, atol=1e-12), (ours, real)
    print("✓ the closure engine agrees with ext and torch")


compare(f, 2.0)

# %% [markdown]
# The `value` row shows what a real engine records in place of our link: `grad_fn`, the
# backward node that made the tensor. For `sin` it is `SinBackward0`. Drawn as a graph, the
# nodes are the same four steps as our table, plus `AccumulateGrad`, the node that plays our
# `leaf_link` (it accumulates into `x.grad`). In a notebook you see both engines' pictures side
# by side. In a script each node is listed with the nodes it receives a gradient from; a tensor
# is shown by its shape, `()` for a single number, and `x ()` is the leaf we named `x`.

# %%
def f_and_leaf(T):
    x = T.tensor(2.0, requires_grad=True)
    return f(T, x), {"x": x}  # the output, and a name for the leaf in the picture


graphs(f_and_leaf)

# %% [markdown]
# When no input needs a gradient, a real engine also skips the bookkeeping, as `prim1` does
# (our `sin` of a plain number returns a plain number): the result has no `grad_fn` and does
# not require grad.

# %%
print("closure engine, plain input:", sin(2.0))


def plain_input(T):
    y = T.sin(T.tensor(2.0))  # a tensor that does not require grad
    return {"y": y, "y.requires_grad": y.requires_grad, "y.grad_fn": y.grad_fn}


both(plain_input)

# %% [markdown]
# ## Gradients three ways
#
# One check of a gradient is not enough: a gradient can be wrong in a way that still looks
# plausible. `grad3(f, *inputs)` computes it three ways, with ext's backward, with torch's, and
# with finite differences (nudging each input by a tiny amount and watching the output), and
# asserts all three agree. It also starts backward from an **upstream gradient** other than 1
# (here 1.5), so a rule that is right only when the incoming gradient is 1 would be caught. Our
# engine takes the same `upstream` argument; every gradient simply scales by it.

# %%
three = grad3(f, np.array(2.0))  # returns the gradients it compared: three.torch[0] is torch's
value, grads = gradient(f, 2.0, upstream=1.5)
print(f"closure engine with upstream 1.5: {grads[0]:.6f}")
assert math.isclose(grads[0], float(three.torch[0]), rel_tol=1e-12)

# %% [markdown]
# ## When gradients add up
#
# In $f$, $x$ is used twice, so two gradients arrive at the leaf and `leaf_link` adds them. What
# if a leaf simply *stored* what reached it? Then the last path to arrive would win. Our
# engine walks the path through $3x$ last (`add` sends to its first input, $x^2$, first), so
# we would get only that path's $3\cos 10$:

# %%
def overwriting_leaf_link(leaf, grad, leaf_grads):
    leaf_grads[leaf] = grad  # the bug: forgets what earlier paths delivered


value, wrong_grads = gradient(f, 2.0, leaf=overwriting_leaf_link)
print(f"stored, not added: {wrong_grads[0]:+.4f}   (3 cos 10 = {3 * math.cos(10.0):+.4f}, "
      f"the right answer is {by_hand['df/dx']:+.4f})")

# %% [markdown]
# Real engines add. A second example with two inputs, each used several times, checks our
# engine (which adds) against ext and torch, and then three ways.

# %%
def g(T, x, y):
    return x * y * x + T.sin(x * y) - y**3


compare(g, 1.5, -0.5)
grad3(g, np.array(1.5), np.array(-0.5))

# %%
def both_paths_count(T):
    x = T.tensor(2.0, dtype=T.float64, requires_grad=True)
    f(T, x).backward()
    return math.isclose(x.grad.item(), 7 * math.cos(10.0))


claim("a value's gradient is written when a path reaches it, so the last path to arrive wins",
      "gradients arriving at the same tensor along different paths are added",
      both_paths_count)

# %% [markdown]
# ## Gradients exist only after backward
#
# Nothing in our engine computes a gradient during the forward pass: the links only *describe*
# the backward pass, and `gradient` runs it afterwards. A real engine is the same: `x.grad` is
# `None` until `backward()` has run.

# %%
def grad_before_and_after(T):
    x = T.tensor(2.0, requires_grad=True)
    y = f(T, x)
    before = x.grad
    y.backward()
    return {"x.grad after forward": before, "x.grad after backward": x.grad}


both(grad_before_and_after)
claim("PyTorch updates each value's gradient as every operation runs",
      "the forward pass only records the graph; gradients are computed when backward() runs",
      lambda T: grad_before_and_after(T)["x.grad after forward"] is None)

# %% [markdown]
# Our engine starts every backward pass from a single number. A real engine also starts from 1
# when the output holds a single number (a *scalar*, in the error message below); for an
# output with several elements it cannot guess the upstream gradient and asks for it (this is
# what `grad3` passes). `both_raise` runs the function on both engines and checks that both
# raise the same error:

# %%
def backward_of_two_numbers(T):
    y = T.sin(T.tensor([1.0, 2.0], requires_grad=True))  # two outputs
    y.backward()  # no upstream gradient given


both_raise(backward_of_two_numbers, RuntimeError)

# %% [markdown]
# ## Where closures break (1): deep graphs
#
# Each link calls the next link, so the backward pass is a chain of nested Python calls, as
# deep as the graph is long. Python stops at about a thousand nested calls. A chain of 2000
# `sin`s is nothing unusual (a recurrent network unrolled over a long sequence is like that),
# yet our engine cannot differentiate it. ext and torch walk the graph with a loop instead.

# %%
def deep(T, x, n=2000):
    for _ in range(n):
        x = T.sin(x)
    return x


# caught(thunk) runs thunk() and returns the error it raised, as text (None if it raised none)
error = caught(lambda: gradient(deep, 1.0))
print("closure engine:", error.split(" while")[0])  # the message, without its long tail
both(lambda T: on_engine(T, deep, 1.0))

# %% [markdown]
# ## Where closures break (2): shared values are walked once per path
#
# A link passes its gradient on *immediately*. So a value used twice sends two separate
# gradients upstream, and everything before it is walked twice. Double a value `k` times
# (`y = y + y`): there are $2^k$ paths from the output to $x$, and our engine walks every one.
# We count how often the leaf's link runs.

# %%
def doubled(T, x, k):
    for _ in range(k):
        x = x + x
    return x


def counting_leaf_link(calls):
    """A leaf link that also appends to ``calls`` each time it runs."""
    def link(leaf, grad, leaf_grads):
        calls.append(grad)
        leaf_link(leaf, grad, leaf_grads)
    return link


def doubling(k):
    """``doubled`` with ``k`` fixed: a function of ``(T, x)``, the form ``gradient`` expects."""
    def f(T, x):
        return doubled(T, x, k)
    return f


for k in (1, 4, 8, 12):
    calls = []
    value, grads = gradient(doubling(k), 1.0, leaf=counting_leaf_link(calls))
    print(f"k = {k:2}: the leaf's link ran {len(calls):5} times; dy/dx = {grads[0]:g}")

# %% [markdown]
# A real engine first collects every gradient that reaches a node, adds them, and only then
# runs the node, once. For that it processes the nodes in **topological order**: a node runs
# only after every node that feeds a gradient into it. `backward_order` records the nodes in
# the order each engine runs them: each of the twelve `AddBackward0` nodes runs once, then the
# leaf's `AccumulateGrad`, once. (`AccumulateGrad` prints with its full name,
# `ext::autograd::AccumulateGrad`: the helper writes `ext` where torch writes `torch`.)

# %%
backward_order(lambda T: doubled(T, T.tensor(1.0, requires_grad=True), 12))


# %% [markdown]
# To count how often a node runs, the check below gives it a *pre-hook*: a function that the
# engine calls just before it runs the node (walkthrough 11 is about hooks).

# %%
def runs_of_first_node(T):
    x = T.tensor(1.0, requires_grad=True)
    first = x + x  # used twice by the next addition, and that one twice by the next ...
    runs = []
    first.grad_fn.register_prehook(lambda grads: runs.append(1))  # one entry per run
    doubled(T, first, 11).backward()
    return len(runs) == 1 and x.grad.item() == 2.0**12


claim("backpropagation walks every path from the output back to each input",
      "each node runs once, after the gradients reaching it from all paths have been added",
      runs_of_first_node)

# %% [markdown]
# ## Where closures break (3): a link that remembers its own output
#
# Some derivatives are easiest to write with the operation's *output*: for $y = \tanh a$,
# $dy/da = 1 - y^2$. A link that closes over its own output makes the output refer to the link
# and the link to the output: a **reference cycle**. (Many small teaching engines do this for
# every operation, because they also keep each value's gradient on the value.) Python frees
# such objects only when its cycle collector runs, not when the last name for them goes away.
# Our links receive their output as the argument `me`, so they never need to close over it.
#
# To see whether an object still exists without keeping it alive ourselves, we hold it by a
# *weak reference*: `alive = weakref.ref(obj)` does not count as a reference, and `alive()`
# returns the object, or `None` once it has been freed. Below, with the cycle collector paused
# (`gc.disable()`), the first output is freed at once; the second waits for `gc.collect()`.

# %%
def tanh_using_me(a):
    def link(me, grad, leaf_grads):
        send(a, (1 - me.value**2) * grad, leaf_grads)  # the output arrives as an argument
    return Var(math.tanh(a.value), link)


def tanh_remembering_output(a):
    def link(me, grad, leaf_grads):
        send(a, (1 - out.value**2) * grad, leaf_grads)  # the closure holds `out`: a cycle
    out = Var(math.tanh(a.value), link)
    return out


gc.disable()
try:
    for make in (tanh_using_me, tanh_remembering_output):
        alive = weakref.ref(make(Var(0.5, leaf_link)))  # no name keeps the output alive
        print(f"{make.__name__:24} output still alive: {alive() is not None}", end="")
        gc.collect()
        print(f", after gc.collect(): {alive() is not None}")
finally:
    gc.enable()

# %% [markdown]
# A real engine avoids the cycle too. `tanh`'s backward node saves the output `y` (it needs
# $1 - y^2$), yet with the cycle collector paused the tensor object `y` is freed as soon as its
# name is deleted, and backward still works. The gradients waiting for a node live in the
# backward pass's own bookkeeping, not on the tensors.

# %%
def output_not_in_a_cycle(T):
    gc.disable()
    try:
        x = T.tensor([0.5, 1.0], requires_grad=True)
        y = T.tanh(x)
        z = (y * 2).sum()
        alive = weakref.ref(y)
        del y
        freed = alive() is None
        z.backward()
        return {"y freed at once": freed, "x.grad": x.grad}
    finally:
        gc.enable()


both(output_not_in_a_cycle)

# %% [markdown]
# ## Exercise
#
# Add two primitives to the closure engine with `prim1` and `prim2`: `exp` (one argument,
# $\frac{d}{da} e^a = e^a$) and `div` (two arguments,
# $\frac{\partial}{\partial a} \frac{a}{b} = \frac{1}{b}$ and
# $\frac{\partial}{\partial b} \frac{a}{b} = -\frac{a}{b^2}$), and register them in `C`
# (`C.exp = exp`). The next cell writes $h(x, y) = e^{x / y} \cdot x$ as a function of `T`
# that uses `T.exp` and `T.div`. Compute its value and gradients at $(1.5, 2.0)$ with
# `gradient`, write `answer(T)` returning the three numbers as
# `T.tensor([value, dh/dx, dh/dy], dtype=T.float64)`, and run
# `check_exercise(answer, expected)`: `expected` gets the same three numbers from ext's and
# torch's autograd. The solution is in the cell after next (collapsed in the notebook).

# %%
def h(T, x, y):
    return T.exp(T.div(x, y)) * x


def expected(T):
    r = on_engine(T, h, 1.5, 2.0)
    return T.tensor([r["value"].item(), r["d/dx"].item(), r["d/dy"].item()], dtype=T.float64)


# %% tags=["solution", "hide-input"]
exp = prim1(math.exp, lambda a, grad: math.exp(a) * grad)
div = prim2(lambda a, b: a / b, lambda a, b, grad: (grad / b, -a * grad / b**2))
C.exp, C.div = exp, div

value, grads = gradient(h, 1.5, 2.0)
print(f"closure engine: h = {value:.6f}, dh/dx = {grads[0]:.6f}, dh/dy = {grads[1]:.6f}")


def answer(T):
    return T.tensor([value, *grads], dtype=T.float64)


check_exercise(answer, expected)
