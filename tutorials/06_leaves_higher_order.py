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
# # Leaves, retain_grad, accumulation and higher-order derivatives
#
# After `loss.backward()`, where do the gradients end up, and what happens when you call it
# twice? This page answers both questions, then goes one step further: a gradient is computed
# by tensor operations, so autograd can differentiate it again. We use that to get second and
# third derivatives and to run Newton's method.
#
# Every example is a small function of `T`, the engine module. `both(fn)` runs it once with
# `T = ext` (the engine of this project, written over NumPy) and once with `T = torch`, prints
# what each returned, and stops with an error if they differ. A row marked `ext = torch` means
# both engines printed exactly that.

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sidebyside import both, both_raise, both_warn, caught, check_exercise, claim, grad3, graphs

# %% [markdown]
# ## Leaves and non-leaves
#
# A **leaf** is a tensor that was not computed by an operation autograd recorded: typically one
# you made yourself, such as a weight (walkthrough 3 met the exact rule: `grad_fn` is `None`).
# Every other tensor that requires grad is a **non-leaf**:
# it was produced by an operation, and its `grad_fn` names the backward node that will send
# gradients through that operation.

# %%
def leaves(T):
    x = T.tensor([1.0], requires_grad=True)  # made by us: a leaf
    y = x + 2                                 # made by an op: a non-leaf
    z = y * 3
    return {"x": x, "y": y, "z": z, "x.is_leaf": x.is_leaf, "y.is_leaf": y.is_leaf,
            "x.grad_fn": x.grad_fn}


both(leaves)

# %% [markdown]
# `y` and `z` carry a `grad_fn` (`AddBackward0`, `MulBackward0`); `x` has none. The picture
# below is the graph that `z.backward()` walks: from `z`'s node back to `x`. The last box
# before `x` is `AccumulateGrad`, the node whose only job is to add the incoming gradient into
# `x.grad`. Only leaves have such a node.
#
# (In a notebook the two engines' pictures appear side by side. As a script, each line lists a
# box and the boxes that feed it; `(1)` is a tensor of shape `(1,)`: the output `z` at the top,
# the leaf `x` at the bottom.)

# %%
def leaf_graph(T):
    x = T.tensor([1.0], requires_grad=True)
    return (x + 2) * 3, {"x": x}


graphs(leaf_graph)

# %% [markdown]
# ## Only leaves keep `.grad`
#
# After `z.backward()`, `x.grad` holds $\partial z / \partial x = 3$. The gradient with
# respect to `y` was computed on the way (it is also 3) but then dropped: intermediate
# gradients are needed only while backward passes through, and keeping them all would cost as
# much memory again as the forward pass's values. Reading `y.grad` gives `None` and a warning.
# `both_warn` checks that both engines give the same warning (it leaves out the note about its
# C++ source file that torch adds to some warnings); then `both` shows the values, with the
# warning silenced.

# %%
def non_leaf_grad(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x + 2
    z = y * 3
    z.backward()
    return {"x.grad": x.grad, "y.grad": y.grad}  # reading y.grad warns


both_warn(non_leaf_grad)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    both(non_leaf_grad)

# %% [markdown]
# The warning says what to do: call `retain_grad()` if you really want that gradient. It also
# hints at the most common cause, a tensor you believed to be a leaf that is not one, such as
# `w = T.randn(3, requires_grad=True) * 0.1`: `w` is the output of a multiplication, so
# `w.grad` stays `None`.

# %%
def warns_on_read(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x + 2
    (y * 3).backward()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        value = y.grad
    return value is None and any("not a leaf" in str(w.message) for w in record)


claim("reading .grad of an intermediate tensor quietly gives None",
      "it gives None and a UserWarning that points to retain_grad()", warns_on_read)

# %% [markdown]
# (Walkthrough 3 held the same claim against the engines; it comes back here because it is the
# question this section answers.)

# %% [markdown]
# ## `retain_grad()`: keep one intermediate gradient
#
# `y.retain_grad()` asks backward to store the gradient that reaches `y`, and sets the flag
# `y.retains_grad`. On a leaf it does nothing (a leaf keeps its gradient anyway, and the flag
# stays False). On a tensor that does not require grad there is no gradient to keep: an error,
# the same on both engines (`both_raise` checks that).

# %%
def retained(T):
    x = T.tensor([1.0], requires_grad=True)
    x.retain_grad()  # a leaf: nothing to do
    y = x + 2
    y.retain_grad()
    z = y * 3
    z.backward()
    return {"x.grad": x.grad, "y.grad": y.grad, "x.retains_grad": x.retains_grad,
            "y.retains_grad": y.retains_grad, "z.retains_grad": z.retains_grad}


both(retained)
both_raise(lambda T: T.tensor([1.0]).retain_grad(), RuntimeError)

# %% [markdown]
# DeZero (the teaching framework of walkthrough 4) frees intermediate gradients too, but
# keeps them all when you call `backward(retain_grad=True)`. torch has no such switch: you
# mark the tensors you care about, one by one.

# %%
def backward_has_no_retain_grad(T):
    x = T.tensor([1.0], requires_grad=True)
    try:
        (x * 2).backward(retain_grad=True)
    except TypeError as e:
        return "retain_grad" in str(e)
    return False


claim("backward(retain_grad=True) keeps every intermediate gradient",
      "backward has no such argument (TypeError); call .retain_grad() on each tensor",
      backward_has_no_retain_grad)

# %% [markdown]
# `retain_grad` is easily confused with `retain_graph`, an argument of `backward` met in the
# next section. The first keeps one tensor's gradient; only the second keeps the graph (the
# tensors its nodes saved) for another backward. A tensor that retains its gradient does not
# keep the graph alive: a second backward fails as it would without it.


# %%
def retain_grad_keeps_no_graph(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x * x
    y.retain_grad()
    z = y * 3
    z.backward()
    error = caught(z.backward)  # the error raised, as text (None if none)
    return y.grad.item() == 3.0 and error is not None and "second time" in error


claim("retain_grad() keeps the graph, so backward can run through it again",
      "it keeps only that tensor's .grad; backward(retain_graph=True) is what keeps the graph",
      retain_grad_keeps_no_graph)

# %% [markdown]
# ## Gradients three ways
#
# Before going further, a check that the gradients these engines compute are right. `grad3`
# differentiates $f(x) = x^4 - 2x^2$ with ext, with torch and with finite differences (nudging
# each input by a tiny amount and measuring the change of the output). For an output of
# several numbers (not a *scalar*, a single number), `out.backward(v)` takes the **upstream
# gradient** $v$: the gradient of some final loss with
# respect to `out`, as it would arrive from the rest of a program. `grad3` passes a $v$ that is
# not all ones, so what is checked is $v_i f'(x_i)$ with $f'(x) = 4x^3 - 4x$, not just $f'$.

# %%
def poly(T, x):
    return x**4 - 2 * x**2


grad3(poly, np.array([-1.5, 0.5, 2.0]))

# %% [markdown]
# ## Gradients accumulate
#
# `backward()` does not *set* `.grad`, it *adds* to it. That is what you want when one
# parameter is used by several losses: each backward adds its share. To call backward twice
# through the same graph you must pass `retain_graph=True` the first time, because backward
# normally frees the tensors the graph saved (here, `x` for the derivative of `x ** 2`).
#
# The second backward adds into the *same* tensor object: `.grad` is updated in place.

# %%
def accumulate(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x**2
    y.backward(retain_graph=True)
    first = x.grad.clone()  # a copy of the value after one backward
    kept = x.grad           # the tensor object itself
    y.backward()  # no retain_graph: the saved x is freed now
    return {"after one": first, "after two": x.grad, "same object": x.grad is kept}


both(accumulate)

# %% [markdown]
# Sketches of the node that accumulates often write `grad = grad + new`, which would make a new
# tensor at every backward and leave a reference kept earlier at its old value. The engines
# add in place instead (except under `create_graph=True`, met at the end of this page, where
# the addition itself must be recorded), so a kept reference sees the sum.


# %%
def accumulates_in_place(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x**2
    y.backward(retain_graph=True)
    kept = x.grad  # holds 2
    y.backward()
    return x.grad is kept and kept.item() == 4.0


claim("accumulating makes a new .grad tensor, so one kept from an earlier backward is unchanged",
      "the sum is written into the same tensor, so the kept reference now reads 4",
      accumulates_in_place)

# %% [markdown]
# The second call above did not pass `retain_graph=True`, so the graph is spent. Zeroing the
# gradient does not bring it back: a third backward fails, with a message that says why.

# %%
def third_backward(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x**2
    y.backward(retain_graph=True)
    y.backward()
    x.grad.zero_()
    y.backward()


both_raise(third_backward, RuntimeError)

# %%
def zeroing_does_not_help(T):
    error = caught(lambda: third_backward(T))  # the error raised, as text (None if none)
    return error is not None and "second time" in error


claim("x.grad.zero_() resets things, so backward can run once more on the same graph",
      "zero_() touches only .grad; the graph was freed by the last backward, so it raises",
      zeroing_does_not_help)

# %% [markdown]
# ### The forgotten `zero_grad`
#
# Accumulation is the reason every training loop clears the gradients before each backward.
# Here is gradient descent on $L(w) = (w - 3)^2$, whose minimum is at $w = 3$, written twice:
# once clearing `w.grad` at each step, once forgetting to. Without the reset, each step uses
# the *sum of all past gradients*. (`quiet=True` makes `both` compare the two engines' 25
# steps without printing them; we print the last four.)

# %%
def descend(T, clear, steps=25, lr=0.1):
    w = T.tensor(0.0, requires_grad=True)
    path = []
    for _ in range(steps):
        if clear:
            w.grad = None  # the reset
        loss = (w - 3) ** 2
        loss.backward()
        with T.no_grad():  # don't record the update (grad modes: the next walkthrough)
            w -= lr * w.grad
        path.append(w.item())
    return path


def both_loops(T):
    return {"clearing": descend(T, True), "forgetting": descend(T, False)}


paths = both(both_loops, quiet=True)
print("last 4 steps, clearing:  ", np.round(paths.torch["clearing"][-4:], 3))
print("last 4 steps, forgetting:", np.round(paths.torch["forgetting"][-4:], 3))

# %%
fig, ax = plt.subplots(figsize=(6, 3.2), layout="constrained")
ax.plot(paths.ext["clearing"], "o-", label="w.grad = None each step")
ax.plot(paths.ext["forgetting"], "s--", label="never cleared")
ax.axhline(3, color="grey", lw=0.8)
ax.set(xlabel="step", ylabel="w", title="gradient descent on (w - 3)²", ylim=(-0.5, 8))
ax.legend(loc="upper center", ncol=2, fontsize=8)
plt.show()

# %% [markdown]
# The loop that clears converges to 3. The loop that forgets swings between 0 and 6 and never
# settles: the old gradients keep pushing long after `w` has passed the minimum. Nothing
# raises an error; the only symptom is a model that does not learn.
#
# ### Two ways to clear: `x.grad = None` or `x.grad.zero_()`
#
# `x.grad.zero_()` writes zeros into the existing tensor; anyone holding a reference to it sees
# zeros (a method whose name ends in `_` changes its tensor in place). `x.grad = None` drops
# the tensor, and the next backward allocates a new one (DeZero calls this `cleargrad`). Both
# lead to the same gradient on the next backward.

# %%
def clearing(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    old = x.grad
    x.grad.zero_()
    zeroed_in_place = x.grad is old and old.tolist() == [0.0, 0.0]
    x.grad = None
    (x * x).sum().backward()
    return {"zero_() keeps the object": zeroed_in_place, "new grad": x.grad,
            "new object after None": x.grad is not old}


both(clearing)

# %% [markdown]
# Which one do the library's helpers use? A *model* (a `T.nn.Module`) owns its weights, and an
# *optimizer* updates them from their `.grad`; both have a `zero_grad()` that clears every
# weight's gradient. They set the gradients to `None` (their `set_to_none=True` default), which
# saves the work of writing zeros, and the memory until the next backward. The check below
# uses a one-layer model: `T.nn.Linear(2, 1)` holds a weight and a bias, both leaves that
# require grad, and `model(x)` computes `x @ weight.T + bias`.

# %%
def zero_grad_sets_none(T):
    model = T.nn.Linear(2, 1)
    model(T.ones(1, 2)).sum().backward()
    model.zero_grad()
    return model.weight.grad is None and model.bias.grad is None


claim("zero_grad() fills the gradients with zeros",
      "by default (set_to_none=True) it sets each .grad to None", zero_grad_sets_none)

# %% [markdown]
# ## Higher-order derivatives: `create_graph=True`
#
# Backward computes a gradient with ordinary tensor operations: for $y = x^3$ it multiplies the
# upstream gradient by $3x^2$. Normally those operations are not recorded. With
# `create_graph=True` they are: the gradient gets a `grad_fn` of its own, and can be
# differentiated again. `T.autograd.grad(outputs, inputs)` returns the gradients as a tuple,
# one per input (more on it below); `(d1,) = ...` unpacks a tuple of one.

# %%
def cube(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x**3
    (d1,) = T.autograd.grad(y, x, create_graph=True)   # 3x² = 3, recorded
    (d2,) = T.autograd.grad(d1, x, create_graph=True)  # 6x = 6, recorded
    (d3,) = T.autograd.grad(d2, x)                     # 6, not recorded
    return {"dy/dx": d1, "d2y/dx2": d2, "d3y/dx3": d3}


both(cube)

# %% [markdown]
# Notice the `grad_fn` on the first two: they are tensors in a graph, not plain numbers. The
# last call had no `create_graph=True`, so its result is a plain tensor again.

# %%
def first_derivative_is_in_a_graph(T):
    x = T.tensor([1.0], requires_grad=True)
    (d1,) = T.autograd.grad(x**3, x, create_graph=True)
    return d1.requires_grad and d1.grad_fn is not None and not d1.is_leaf


claim("with create_graph=True the first derivative is a plain value, like any gradient",
      "it is a non-leaf with a grad_fn: the graph of the derivative, ready to differentiate",
      first_derivative_is_in_a_graph)

# %% [markdown]
# Here is that graph of the derivative. It is the backward formula of `x ** 3` written out as
# nodes: `PowBackward0` computes $x^2$, `MulBackward1` multiplies it by the number 3
# (torch gives multiplication by a plain number its own node name), and `MulBackward0` multiplies
# by the upstream gradient (1 here, since `x ** 3` is the output). `x` appears once, at the
# bottom.

# %%
def derivative_graph(T):
    x = T.tensor([1.0], requires_grad=True)
    (d1,) = T.autograd.grad(x**3, x, create_graph=True)
    return d1, {"x": x}


graphs(derivative_graph)

# %% [markdown]
# Without `create_graph=True` the first derivative has no graph, so asking for its derivative
# fails: the same error as calling backward on a tensor that does not require grad.

# %%
def no_create_graph(T):
    x = T.tensor([1.0], requires_grad=True)
    (d1,) = T.autograd.grad(x**3, x)
    T.autograd.grad(d1, x)


both_raise(no_create_graph, RuntimeError)

# %% [markdown]
# ### Derivatives of a polynomial, of sin and of tanh
#
# `derivatives(T, f, x, n)` repeats the step $n$ times. `x` holds several points; since each
# output element depends only on its own input, differentiating the *sum* of the outputs gives
# every point's derivative at once.

# %%
def derivatives(T, f, x, n):
    """[f'(x), f''(x), ..., f^(n)(x)] at every point of x, by repeated autograd.grad."""
    x = T.tensor(x, requires_grad=True)
    out, found = f(T, x), []
    for _ in range(n):
        (out,) = T.autograd.grad(out.sum(), x, create_graph=True)
        found.append(out.detach())
    return found


points = np.array([-1.5, 0.5, 2.0])
poly_d = both(lambda T: derivatives(T, poly, points, 3))
x = points  # (a short name for the formulas)
np.testing.assert_allclose(poly_d.torch, [4 * x**3 - 4 * x, 12 * x**2 - 4, 24 * x], rtol=1e-12)
print("✓ and they are 4x³ - 4x, 12x² - 4 and 24x")

# %% [markdown]
# For sine the derivatives go round a cycle: $\cos x$, $-\sin x$, $-\cos x$. For tanh, with
# $t = \tanh x$: $t' = 1 - t^2$, $t'' = -2t(1 - t^2)$, $t''' = (6t^2 - 2)(1 - t^2)$.

# %%
def sine(T, x):
    return T.sin(x)


def tanh(T, x):
    return T.tanh(x)


sin_d = both(lambda T: derivatives(T, sine, points, 3), quiet=True)
np.testing.assert_allclose(sin_d.torch, [np.cos(x), -np.sin(x), -np.cos(x)], rtol=1e-12)
t = np.tanh(x)
tanh_d = both(lambda T: derivatives(T, tanh, points, 3), quiet=True)
tanh_by_hand = [1 - t**2, -2 * t * (1 - t**2), (6 * t**2 - 2) * (1 - t**2)]
np.testing.assert_allclose(tanh_d.torch, tanh_by_hand, rtol=1e-12)
print("✓ sin and tanh: the derivatives match the formulas")

# %%
grid = np.linspace(-3, 3, 121)
curves = both(lambda T: derivatives(T, tanh, grid, 3), quiet=True)
fig, ax = plt.subplots(figsize=(6, 3.2), layout="constrained")
ax.plot(grid, np.tanh(grid), label="tanh")
for k, curve in enumerate(curves.ext, start=1):
    ax.plot(grid, curve, label=f"derivative {k}")
ax.set(xlabel="x", title="tanh and three derivatives, by autograd")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# A derivative computed by autograd is a function of `x` like any other, so we can check *it*
# three ways as well. `grad3` below differentiates $f'(x)$: its gradient is the second
# derivative $12x^2 - 4$ (times the upstream gradient), which finite differences of $f'$
# confirm.

# %%
def poly_first_derivative(T, x):
    x.requires_grad_()  # (grad3's finite differences pass in plain tensors)
    (d1,) = T.autograd.grad(poly(T, x).sum(), x, create_graph=True)
    return d1


grad3(poly_first_derivative, points)

# %% [markdown]
# ## `T.autograd.grad` or `.backward()`?
#
# Both run the same backward pass. They differ in where the result goes:
#
# - `T.autograd.grad(out, inputs)` **returns** the gradients as a tuple and leaves every
#   `.grad` untouched. It is the natural tool for derivatives that are part of a computation,
#   like the ones above.
# - `out.backward()` **adds** into `.grad` of every leaf that requires grad, and returns
#   nothing. It is the tool for training, where an optimizer reads `.grad`.

# %%
def grad_versus_backward(T):
    x = T.tensor([2.0], requires_grad=True)
    y = x**3
    (g,) = T.autograd.grad(y, x, retain_graph=True)
    grad_left_alone = x.grad is None
    y.backward()
    return {"autograd.grad returned": g, "x.grad untouched by it": grad_left_alone,
            "x.grad after backward": x.grad}


both(grad_versus_backward)

# %% [markdown]
# `backward(create_graph=True)` also works, but it stores in `x.grad` a tensor whose graph
# leads back to `x` itself: `x` holds its gradient, the gradient's graph holds `x`. Both
# engines warn about that reference cycle and recommend `autograd.grad`; if you do use it,
# set `x.grad = None` afterwards.

# %%
def backward_create_graph(T):
    x = T.tensor([2.0], requires_grad=True)
    (x**3).backward(create_graph=True)
    result = {"x.grad": x.grad.detach(), "x.grad.requires_grad": x.grad.requires_grad,
              "its node": type(x.grad.grad_fn).__name__}
    x.grad = None  # break the cycle
    return result


both_warn(backward_create_graph)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    both(backward_create_graph)

# %% [markdown]
# `x.grad` is $3x^2 = 12$, and it requires grad. Its node is `CopyBackwards` because backward
# copies the gradient into a fresh tensor for `x.grad`, and with `create_graph=True` even that
# copy is recorded.

# %% [markdown]
# ## Newton's method by double backward
#
# To find a minimum of $f$, gradient descent steps along $-f'(x)$ with a fixed step size.
# Newton's method divides by the second derivative (the curvature) instead:
#
# $$x_{k+1} = x_k - \frac{f'(x_k)}{f''(x_k)}.$$
#
# Both derivatives come from autograd: `create_graph=True` on the first call so the second
# call can differentiate the first derivative. The update runs under `T.no_grad()`, since it
# must not be recorded. We use $f(x) = x^4 - 2x^2$ again, whose minima are at $x = \pm 1$.

# %%
def newton(T, x0, steps=6):
    x = T.tensor(x0, dtype=T.float64, requires_grad=True)
    path = [x.item()]
    for _ in range(steps):
        (d1,) = T.autograd.grad(poly(T, x), x, create_graph=True)
        (d2,) = T.autograd.grad(d1, x)
        with T.no_grad():
            x -= d1 / d2
        path.append(x.item())
    return path


def newton_by_hand(x, steps=6):
    path = [x]
    for _ in range(steps):
        x = x - (4 * x**3 - 4 * x) / (12 * x**2 - 4)
        path.append(x)
    return path


# %%
from_2 = both(lambda T: newton(T, 2.0))
np.testing.assert_allclose(from_2.torch, newton_by_hand(2.0), rtol=1e-12)
print("✓ every step equals the one computed from f' and f'' by hand; the limit is 1")

# %% [markdown]
# Each step roughly doubles the number of correct digits once $x$ is close to 1: the error
# goes 0.45, 0.15, 0.025, 0.0009, 1e-6, 2e-12. That speed is why Newton's method is worth two
# backward passes per step.
#
# One caution: Newton's method looks for a point where $f'(x) = 0$, and does not care whether
# it is a minimum. Started at $x = 0.4$, where $f'' < 0$, it heads for the *maximum* at 0.

# %%
from_04 = both(lambda T: newton(T, 0.4))
np.testing.assert_allclose(from_04.torch, newton_by_hand(0.4), rtol=1e-12, atol=1e-15)
print("✓ same steps as by hand; this time the limit is 0, a maximum of f")

# %% [markdown]
# ## Exercise
#
# Let $g(x) = x^3 \sin x$. Write `second_derivative(T)`, which computes its **second
# derivative** at the points $x = 0.3, 1.1, 2.5$ with `T.autograd.grad` (you will need
# `create_graph=True` once) and returns it as a float64 tensor that does not require grad.
# Then run `check_exercise(second_derivative, by_formula)`: `by_formula`, in the next cell,
# computes $g''(x) = 6x\sin x + 6x^2\cos x - x^3\sin x$ directly, and the checker compares the
# two on both engines. The solution is in the cell after next (collapsed in the notebook).

# %%
def by_formula(T):
    x = T.tensor([0.3, 1.1, 2.5], dtype=T.float64)
    return 6 * x * T.sin(x) + 6 * x**2 * T.cos(x) - x**3 * T.sin(x)


# %% tags=["solution", "hide-input"]
def second_derivative(T):
    x = T.tensor([0.3, 1.1, 2.5], dtype=T.float64, requires_grad=True)
    g = x**3 * T.sin(x)
    (d1,) = T.autograd.grad(g.sum(), x, create_graph=True)  # recorded: we differentiate it next
    (d2,) = T.autograd.grad(d1.sum(), x)                     # not recorded: a plain tensor
    return d2


check_exercise(second_derivative, by_formula)
