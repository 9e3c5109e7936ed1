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
# # Three ways to differentiate
#
# A derivative says how fast a function's output moves when its input moves. Training a neural
# network is, at bottom, computing such derivatives (of a loss, with respect to every weight)
# over and over. A computer can get them in three ways:
#
# 1. **Numerically**: nudge the input a little and watch the output (finite differences).
# 2. **Forward mode**: carry each value's derivative along with the value, step by step.
# 3. **Reverse mode**: compute the values first while writing down every step, then walk the
#    steps backwards from the output. This is *backpropagation*, what `.backward()` does.
#
# We build the two automatic ones by hand in a dozen lines each, then run the same functions
# on two engines: **ext** (an autograd engine written from scratch in NumPy, with PyTorch's
# names) and **torch** (real PyTorch). Both compute with **tensors**: a tensor is the engines'
# array, like a NumPy array (`T.tensor([1.0, 2.0])` is the counterpart of
# `np.array([1.0, 2.0])`), that can also remember how it was computed. Every cell that
# compares the engines asserts that they agree.

# %% [markdown]
# ## The two functions we differentiate
#
# $$f(x) = x^2 + 3x + 1, \qquad f'(x) = 2x + 3, \qquad f'(2) = 7$$
#
# $$g(x) = \sin(x^2 + 3x), \qquad g'(x) = \cos(x^2 + 3x)\,(2x + 3), \qquad
# g'(2) = 7\cos(10) \approx -5.8735$$
#
# Each is written once, as a Python function of `T`, the "math module" to use: `T` can be
# `ext`, `torch`, NumPy, or the little engines we build below. Only `sin` is looked up on `T`;
# `+`, `*` and `**` are Python operators, so each kind of number brings its own.

# %%
import math
from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
from sidebyside import both, check_exercise, claim, grad3, graphs


def f(T, x):
    return x**2 + 3 * x + 1


def g(T, x):
    return T.sin(x**2 + 3 * x)


F_PRIME_2 = 7.0                  # f'(2), worked out by hand above
G_PRIME_2 = 7.0 * math.cos(10.0)  # g'(2)
print("f(2) =", f(np, 2.0), "  g(2) =", g(np, 2.0))

# %% [markdown]
# ## 1. Numerical: finite differences
#
# The definition of the derivative, with a small but finite step $h$ instead of a limit:
#
# $$\text{forward difference: } \frac{g(x+h) - g(x)}{h}, \qquad
# \text{central difference: } \frac{g(x+h) - g(x-h)}{2h}$$
#
# No calculus needed, only two evaluations of the function.

# %%
def forward_difference(fn, x, h):
    return (fn(np, x + h) - fn(np, x)) / h


def central_difference(fn, x, h):
    return (fn(np, x + h) - fn(np, x - h)) / (2 * h)


for name, fn, exact in [("f", f, F_PRIME_2), ("g", g, G_PRIME_2)]:
    fd = forward_difference(fn, 2.0, 1e-6)
    cd = central_difference(fn, 2.0, 1e-6)
    print(f"{name}'(2): exact {exact:.10f}  forward {fd:.10f}  central {cd:.10f}")

# %% [markdown]
# Close, not exact: the forward difference is off by about $10^{-6}$ to $10^{-5}$, the central
# one by $10^{-10}$ or less. Which step $h$ is best? Surely the smallest? Let us measure the
# error of $g'(2)$ for steps from $10^{-1}$ down to $10^{-15}$.

# %%
steps = np.logspace(-15, -1, 57)
fwd_err = [abs(forward_difference(g, 2.0, h) - G_PRIME_2) for h in steps]
ctr_err = [abs(central_difference(g, 2.0, h) - G_PRIME_2) for h in steps]

fig, ax = plt.subplots(figsize=(6.5, 4))
ax.loglog(steps, np.maximum(fwd_err, 1e-17), "o-", ms=3, label="forward difference")
ax.loglog(steps, np.maximum(ctr_err, 1e-17), "s-", ms=3, label="central difference")
ax.set_xlabel("step h")
ax.set_ylabel("|error| of g'(2)")
ax.set_title("Finite differences: truncation error (right) vs rounding error (left)")
ax.legend()
print(f"best forward step {steps[np.argmin(fwd_err)]:.0e}, error {min(fwd_err):.1e}")
print(f"best central step {steps[np.argmin(ctr_err)]:.0e}, error {min(ctr_err):.1e}")

# %% [markdown]
# Read the plot from right to left. (Run as a script, the plot is drawn off screen and not
# shown; open the walkthrough as a notebook to see it. The two printed lines sum it up.)
#
# - **On the right, the error falls as $h$ shrinks.** This is *truncation error*: the formula
#   ignores the curvature of $g$ between $x$ and $x+h$. It falls like $h$ for the forward
#   difference (slope 1) and like $h^2$ for the central one (slope 2, steeper), because the
#   central difference's errors on both sides cancel to first order.
# - **On the left, the error rises again as $h$ shrinks.** This is *rounding error*: a float64
#   keeps about 16 significant digits, so $g(x+h)$ and $g(x)$ agree in almost all of them and
#   their difference keeps only the few that differ; dividing by a tiny $h$ magnifies that
#   noise, like $10^{-16}/h$.
#
# The best step sits where the two meet, as the two printed lines say: near $10^{-8}$ for the
# forward difference, and near $10^{-6}$ for the central one, which also gets far closer
# (about $10^{-11}$ against $10^{-8}$). That is why gradient checkers use central differences
# with a step around $10^{-6}$.
#
# The same happens with ext tensors and torch tensors. The box below is the first of the
# "common claim" boxes you will meet on every page. Its first line is a belief that is
# widespread; its second line, headed "What torch does", is what really happens when the
# program runs. Under the box, a small function checks the second line on torch and on ext
# and the tick says it held on both.

# %%
def forward_difference_on(T, h):
    """The forward difference of g at 2, computed with T's float64 tensors."""
    x = T.tensor(2.0, dtype=T.float64)
    return float((g(T, x + h) - g(T, x)) / h)


def tiny_step_is_worse(T):
    error_at_1e12 = abs(forward_difference_on(T, 1e-12) - G_PRIME_2)
    error_at_1e7 = abs(forward_difference_on(T, 1e-7) - G_PRIME_2)
    return error_at_1e12 > 100 * error_at_1e7


claim("the smaller the step h, the more accurate the finite difference",
      "below h = 1e-8 the error grows again: at h = 1e-12 it is over 100x that at h = 1e-7",
      tiny_step_is_worse)

# %% [markdown]
# Precision matters even more. A tensor has a *dtype*, the kind of number it holds, as a
# NumPy array does: `float64` keeps about 16 significant digits, `float32` only about 7, so
# in float32 the two kinds of error meet much higher up:

# %%
def best_central_error(T, dtype_name):
    x = T.tensor(2.0, dtype=getattr(T, dtype_name))
    errors = [abs(float((g(T, x + h) - g(T, x - h)) / (2 * h)) - G_PRIME_2)
              for h in np.logspace(-8, -1, 29)]
    return min(errors)


def float32_is_too_coarse(T):
    return best_central_error(T, "float32") > 1e-5 and best_central_error(T, "float64") < 1e-8


claim("float32 is precise enough for finite-difference gradient checks",
      "float32's best error on g'(2) is above 1e-5; float64's is below 1e-8",
      float32_is_too_coarse)

# %% [markdown]
# That is why gradient checks, `grad3` below as well as torch's own `gradcheck`, work in
# float64.
#
# Finite differences have one more cost: a function of $n$ inputs needs at least $n + 1$
# evaluations (central: $2n$), one nudge per input. For a network with a million weights that
# is a million forward passes for one gradient. So they are used only to *test* the exact
# methods, never to train.

# %% [markdown]
# ## 2. Forward mode: carry the derivative along
#
# Instead of one number, carry a pair: the value $v$ and its derivative $\dot v$ with respect
# to the input. Every operation computes its output pair from its input pairs, using its own
# small derivative rule (the chain rule, one step at a time):
#
# | operation | value | derivative |
# |---|---|---|
# | $a + b$ | $a + b$ | $\dot a + \dot b$ |
# | $a \cdot b$ | $a b$ | $\dot a\, b + a\, \dot b$ |
# | $a^n$ | $a^n$ | $n a^{n-1} \dot a$ |
# | $\sin a$ | $\sin a$ | $\cos a \cdot \dot a$ |
#
# Such pairs are called *dual numbers*. Start with $x = (2, 1)$ (the input's derivative with
# respect to itself is 1) and the derivative falls out of the last pair.

# %%
class Dual:
    """A value with its derivative (the 'tangent') riding along."""

    def __init__(self, val, dot=0.0):  # a plain constant has derivative 0
        self.val, self.dot = val, dot

    def __add__(self, other):
        other = other if isinstance(other, Dual) else Dual(other)
        return Dual(self.val + other.val, self.dot + other.dot)

    def __mul__(self, other):
        other = other if isinstance(other, Dual) else Dual(other)
        return Dual(self.val * other.val, self.dot * other.val + self.val * other.dot)

    def __pow__(self, n):  # n is a plain number
        return Dual(self.val**n, n * self.val ** (n - 1) * self.dot)

    __radd__, __rmul__ = __add__, __mul__  # so that 3 * x and 1 + x work too

    def __repr__(self):
        return f"Dual(val={self.val:.4f}, dot={self.dot:.4f})"

# %% [markdown]
# Add $\sin$, then step through $g$ at $x = 2$ one operation at a time and watch both halves
# of each pair:

# %%
def dual_sin(a):
    return Dual(math.sin(a.val), math.cos(a.val) * a.dot)


# A tiny "T" for dual numbers: an object whose attribute `sin` is dual_sin, so g's T.sin works
DualMath = SimpleNamespace(sin=dual_sin)

x = Dual(2.0, 1.0)
v1 = x**2
v2 = 3 * x
v3 = v1 + v2
v4 = dual_sin(v3)
for name, v in [("x", x), ("v1 = x**2", v1), ("v2 = 3*x", v2), ("v3 = v1+v2", v3),
                ("v4 = sin(v3)", v4)]:
    print(f"{name:<13} {v}")

print("f:", f(DualMath, Dual(2.0, 1.0)), "  g:", g(DualMath, Dual(2.0, 1.0)))
assert math.isclose(g(DualMath, Dual(2.0, 1.0)).dot, G_PRIME_2, rel_tol=1e-14)

# %% [markdown]
# `dot` of the last pair is $g'(2) \approx -5.8735$, exact to the last digit: no step $h$, no
# rounding trouble. One pass gives the derivative along one input direction; a function of
# $n$ inputs needs $n$ passes, each starting with `dot = 1` on a different input (and 0 on
# the others).
#
# Both engines have forward mode built in, with the same idea on tensors, in
# `T.autograd.forward_ad` (the code calls it `fwAD` for short). Inside a
# `with fwAD.dual_level():` block, `make_dual(x, tangent)` makes a tensor that carries a
# *tangent* (our `dot`); every operation propagates it; `unpack_dual(y)` splits a result into
# its value (`primal`) and its tangent. (The first time, this cell takes a second or two
# longer on torch: some forward-mode operations make torch load part of its compiler.)
#
# `both(forward_mode)` runs the function twice, once with `T = ext` and once with
# `T = torch`, and prints each named result on a row: `ext = torch` means both engines printed
# the same text, otherwise you would see an `ext` line and a `torch` line. It stops with an
# error at the first disagreement; the tick at the end says there was none. It also returns
# both results, as `pair.ext` and `pair.torch`.

# %%
def forward_mode(T):
    fwAD = T.autograd.forward_ad
    x = T.tensor(2.0)
    with fwAD.dual_level():
        xd = fwAD.make_dual(x, T.tensor(1.0))  # tangent dx/dx = 1
        f_val, f_dot = fwAD.unpack_dual(f(T, xd))
        g_val, g_dot = fwAD.unpack_dual(g(T, xd))
    return {"f(2)": f_val, "f'(2)": f_dot, "g(2)": g_val, "g'(2)": g_dot}


pair = both(forward_mode)
assert math.isclose(pair.ext["g'(2)"].item(), G_PRIME_2, rel_tol=1e-5)  # float32 precision

# %% [markdown]
# Same values, same derivatives, on both engines, and they match our `Dual` (to float32's 7
# digits: `T.tensor(2.0)` is float32 by default).

# %% [markdown]
# ## 3. Reverse mode: record the steps, then walk back
#
# Reverse mode splits the work in two.
#
# 1. **Forward pass**: compute the values, and write every operation on a *tape*: which inputs
#    it used, and the *local derivative* of its output with respect to each input.
# 2. **Backward pass**: start from the output with gradient 1 and walk the tape in reverse.
#    Each entry passes its gradient on to its inputs, multiplied by the local derivative. An
#    input used twice receives two contributions, and they add up.
#
# Walking the tape in reverse is always a valid order: an entry is written after its inputs,
# so by the time we reach an entry, everything that used its result has already passed its
# gradient back to it.

# %%
tape = []  # entries (result, parents) in the order they were computed, where parents is
#            a list [(input, d result / d input), ...] of the inputs the result came from


class Var:
    """A number that writes on the tape how it was computed."""

    def __init__(self, val, parents=()):
        self.val, self.grad = val, 0.0
        tape.append((self, parents))

    def __add__(self, other):
        other = other if isinstance(other, Var) else Var(other)
        return Var(self.val + other.val, [(self, 1.0), (other, 1.0)])

    def __mul__(self, other):
        other = other if isinstance(other, Var) else Var(other)
        return Var(self.val * other.val, [(self, other.val), (other, self.val)])

    def __pow__(self, n):
        return Var(self.val**n, [(self, n * self.val ** (n - 1))])

    __radd__, __rmul__ = __add__, __mul__


def var_sin(a):
    return Var(math.sin(a.val), [(a, math.cos(a.val))])

# %% [markdown]
# The whole backward pass:

# %%
def backward(out):
    out.grad = 1.0  # d out / d out
    for result, parents in reversed(tape):
        for parent, local in parents:
            parent.grad += local * result.grad  # the chain rule, one edge at a time

# %% [markdown]
# Run $g$ at $x = 2$, then walk back, and print the tape with each entry's gradient:

# %%
tape.clear()
x = Var(2.0)
y = g(SimpleNamespace(sin=var_sin), x)
backward(y)
position = {id(result): i for i, (result, _) in enumerate(tape)}  # entry number of each Var
for i, (result, parents) in enumerate(tape):
    uses = ", ".join(f"#{position[id(p)]} (local {d:+.3f})" for p, d in parents)
    print(f"#{i}: value {result.val:+8.3f}  grad {result.grad:+8.4f}  <- "
          f"{uses or 'input/constant'}")
assert math.isclose(x.grad, G_PRIME_2, rel_tol=1e-14)

# %% [markdown]
# Read it bottom up. The output (#5, $\sin$) starts with gradient 1 and hands
# $\cos(10) \approx -0.839$ to the sum (#4), which passes it unchanged to both of its inputs.
# The square (#1) multiplies by $2x = 4$ and the product $3x$ (#3) by 3, and both land on
# $x$ (#0): $-3.356 - 2.517 = -5.8735$. The constant 3 (#2) gets a gradient too; nobody reads
# it.
#
# What did one backward pass buy? The derivative of one output with respect to **every**
# input at once. If $x$ were a million weights, one walk back would still give all million
# derivatives, whereas forward mode would need a million passes. That is why training uses
# reverse mode.
#
# On the engines, `y.backward()` runs exactly this walk, and the gradient of each input that
# has `requires_grad=True` lands in its `.grad`. (`requires_grad=True` marks a tensor whose
# gradient we want; only operations on such tensors are written down.)

# %%
def reverse_mode(T):
    x = T.tensor(2.0, requires_grad=True)
    y = f(T, x)
    y.backward()
    f_grad = x.grad
    x = T.tensor(2.0, requires_grad=True)  # a fresh x: .grad adds up over backward calls
    z = g(T, x)
    z.backward()
    return {"f(2)": y, "f'(2)": f_grad, "g(2)": z, "g'(2)": x.grad}


pair = both(reverse_mode)
assert pair.ext["f'(2)"].item() == F_PRIME_2

# %% [markdown]
# The results carry a `grad_fn`: the backward step of the operation that made them. Each
# engine keeps its tape as a graph of such steps, called **nodes**, one per operation.
# `graphs` draws both engines' graphs for $g$ and checks that they have the same nodes and
# arrows. In a notebook you see two pictures: the blue box is the input `x` (with its shape,
# `()` for a single number), the green one the output, and the arrows run the way the values
# flowed. Run as a script, it prints one line per box instead, `box <- the boxes that feed
# it`: the first line, `()`, is the output (a tensor is shown by its shape), and `x ()` is the
# input we named `x`.

# %%
def g_at_2(T):
    x = T.tensor(2.0, requires_grad=True)
    return g(T, x), {"x": x}  # the output, and a name for the input in the picture


graphs(g_at_2)

# %% [markdown]
# The grey nodes are our tape entries under the engines' names: `PowBackward0` for $x^2$,
# `MulBackward0` for $3x$, `AddBackward0`, `SinBackward0`. `AccumulateGrad` is the step that
# writes the final gradient into `x.grad`; both branches of the backward walk end there, and
# that is where their two contributions are added up. There is no node for the constant 3:
# the engines record only what depends on an input that requires a gradient.

# %% [markdown]
# ## 4. The three ways side by side
#
# `grad3` checks a gradient three ways at once: ext's backward, torch's backward, and central
# finite differences (in float64, with $h = 10^{-6}$). Two details make the check stronger
# than it looks:
#
# - The input is a vector, so $g$ returns a vector; `backward` then needs an *upstream
#   gradient* $v$ (one weight per output) and computes $\sum_i v_i \, \partial g_i/\partial x$.
#   (For an output that is a single number, a *scalar*, `backward()` takes $v = 1$, as above.)
#   `grad3` picks a $v$ that is not all ones, so a rule that is right only for $v = 1$ fails.
# - Finite differences use no derivative rule at all, and torch uses its own rules: a rule in
#   ext that is wrong would disagree with at least one of them.

# %%
xs = np.array([-1.0, 0.5, 2.0, 3.0])
grads = grad3(g, xs)

# a fourth way, with the formula for g' worked out on paper
v = np.linspace(0.5, 2.0, 4)  # the upstream gradient grad3 printed
by_hand = v * np.cos(xs**2 + 3 * xs) * (2 * xs + 3)
print("by hand  ", by_hand.round(6))
assert np.allclose(grads.ext[0], by_hand)

# %% [markdown]
# ## When to use which
#
# | | exact? | cost of a full gradient of $n$ inputs, 1 output | used for |
# |---|---|---|---|
# | finite differences | no (6 to 10 digits in float64) | $n+1$ to $2n$ evaluations | testing |
# | forward mode | yes | $n$ passes (one per input) | few inputs, many outputs |
# | reverse mode | yes | 1 forward + 1 backward pass | many inputs, one output (training) |
#
# Forward mode wins in the opposite case, few inputs and many outputs: one forward pass per
# input against one backward pass per output. Walkthrough 14, *Forward mode and the
# functional API*, measures this.

# %% [markdown]
# ## Exercise
#
# Give the dual numbers an `exp` (a function `dual_exp(a)`, like `dual_sin`; the derivative
# of $e^a$ is $e^a \cdot \dot a$), then find $h'(0.7)$ for
#
# $$h(x) = e^{\sin x} \cdot x^2$$
#
# with **one** forward pass of `Dual`. The next cell writes $h$ as a function of `T`, like `f`
# and `g`: call it with a namespace that has your `sin` and `exp`, as `DualMath` does for `g`.
# Then write `answer(T)`, returning your number as `T.tensor(number, dtype=T.float64)`, and
# run `check_exercise(answer, expected)`: it compares your number, on both engines, with the
# derivative that `expected` gets from ext's and torch's `backward()`. The solution is in the
# cell after next (collapsed in the notebook).

# %%
def h(T, x):
    return T.exp(T.sin(x)) * x**2


def expected(T):  # reverse mode on the engine, independent of Dual
    x = T.tensor(0.7, dtype=T.float64, requires_grad=True)
    h(T, x).backward()
    return x.grad


# %% tags=["solution", "hide-input"]
def dual_exp(a):
    e = math.exp(a.val)
    return Dual(e, e * a.dot)


h_dot = h(SimpleNamespace(sin=dual_sin, exp=dual_exp), Dual(0.7, 1.0)).dot
print("h'(0.7) by forward mode:", h_dot)


def answer(T):
    return T.tensor(h_dot, dtype=T.float64)


check_exercise(answer, expected)
