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
# # Forward mode and the functional API
#
# A function $F$ from $n$ numbers to $m$ numbers has $m \times n$ first derivatives, one for
# each output $i$ and input $j$. Laid out as a matrix they form the **Jacobian**:
#
# $$J_{ij} = \frac{\partial F_i}{\partial x_j}, \qquad J \text{ has shape } (m, n).$$
#
# Autograd almost never builds $J$. It computes *products* with it, each at the cost of
# about one evaluation of $F$:
#
# - **reverse mode** (`backward`) computes a **vector-Jacobian product** $v^\top J$: $v$ has
#   the output's shape, the result has the input's shape;
# - **forward mode** computes a **Jacobian-vector product** $J u$: $u$ has the input's shape,
#   the result has the output's shape.
#
# This walkthrough shows both on tensors, on **ext** (an autograd engine written from scratch
# in NumPy, with PyTorch's names) and on **torch**, then the `autograd.functional` helpers
# (`vjp`, `jvp`, `jacobian`, `hessian`, `hvp`), and measures when each mode wins.

# %% [markdown]
# ## A small function and its Jacobian by hand
#
# $F(x) = \sin(W x)$ with a fixed $3 \times 2$ matrix $W$: 2 inputs, 3 outputs, which we
# differentiate at the point `x0` $= (0.5, -1)$. By the chain rule
# $J_{ij} = \cos\big((Wx)_i\big)\, W_{ij}$, which NumPy computes directly. We keep it as the
# answer to check everything else against.

# %%
import time

import numpy as np
import torch
from sidebyside import both, both_raise, check_exercise, claim, grad3

import ext

rng = np.random.default_rng(0)
W = rng.standard_normal((3, 2))
x0 = np.array([0.5, -1.0])
v = np.array([1.0, -2.0, 0.5])   # shaped like the output: for v^T J
u = np.array([0.3, -1.0])        # shaped like the input: for J u


def F(T, x):
    return T.sin(T.tensor(W) @ x)


J = np.cos(W @ x0)[:, None] * W
print("J =\n", J.round(4))

# %% [markdown]
# ## The Jacobian versus the vector-Jacobian product
#
# `y.backward()` on a vector output does not give the Jacobian. It refuses outright:

# %%
def backward_of_a_vector(T):
    x = T.tensor(x0, requires_grad=True)
    F(T, x).backward()


both_raise(backward_of_a_vector, RuntimeError)

# %% [markdown]
# "Implicitly created" refers to the vector $v$: for a single-number output backward uses
# $v = 1$, for anything else you pass it yourself, `y.backward(v)`. What lands in `x.grad` is
# then $v^\top J$, **one** row of length $n$ (the input's shape), not the $3 \times 2$ matrix:

# %%
def vector_jacobian_product(T):
    x = T.tensor(x0, requires_grad=True)
    F(T, x).backward(T.tensor(v))
    return x.grad


pair = both(vector_jacobian_product)
print("v @ J by hand:", (v @ J).round(4))
assert np.allclose(pair.ext.numpy(), v @ J)

# %%
def one_row_not_the_matrix(T):
    vjp = vector_jacobian_product(T)
    return vjp.shape == (2,) and bool(np.allclose(vjp.numpy(), v @ J))


claim("calling backward on a vector output gives its Jacobian",
      "backward(v) gives one product v^T J, shaped like the input",
      one_row_not_the_matrix)

# %% [markdown]
# `grad3` (gradients three ways: ext, torch and finite differences) computes exactly this
# product, with an upstream gradient $v$ of its own choosing:

# %%
grads = grad3(F, x0)  # returns the gradients it compared: grads.ext[0] is ext's for x
assert np.allclose(grads.ext[0], np.linspace(0.5, 2.0, 3) @ J)  # its v (printed), times J

# %% [markdown]
# With $v = (0, \dots, 1, \dots, 0)$, a one at position $i$, the product $v^\top J$ is row $i$
# of $J$. So a full Jacobian by reverse mode takes $m$ backward passes, one per output. We
# build exactly that below and time it.

# %% [markdown]
# ## Forward mode: dual tensors
#
# Forward mode carries, next to each value, its *tangent*: how fast it moves when the input
# moves in direction $u$ (walkthrough 1 met it on dual numbers). The API lives in
# `T.autograd.forward_ad`, which the code calls `fwAD` for short:
#
# - `with dual_level():` opens a region where tangents are tracked;
# - `make_dual(x, u)` gives a tensor with the values of `x` that carries tangent `u`;
# - every operation on it also computes its result's tangent (each op knows its forward
#   derivative rule);
# - `unpack_dual(y)` returns `(primal, tangent)`: the value and the tangent $J u$.

# %%
def jacobian_vector_product(T):
    fwAD = T.autograd.forward_ad
    x = T.tensor(x0)  # note: no requires_grad
    with fwAD.dual_level():
        y = F(T, fwAD.make_dual(x, T.tensor(u)))
        primal, tangent = fwAD.unpack_dual(y)
        return {"primal": primal, "tangent": tangent,
                "y.requires_grad": y.requires_grad, "y.grad_fn": y.grad_fn}


pair = both(jacobian_vector_product)
print("J @ u by hand:", (J @ u).round(4))
assert np.allclose(pair.ext["tangent"].numpy(), J @ u)

# %% [markdown]
# The tangent is $J u$, shaped like the output. Notice the last two rows: the input never
# had `requires_grad=True`, and no graph was recorded (`grad_fn` is `None`). Forward mode
# computes the derivative *during* the forward pass, so there is nothing to walk back.

# %%
def no_requires_grad_needed(T):
    result = jacobian_vector_product(T)
    return result["y.grad_fn"] is None and bool(np.allclose(result["tangent"].numpy(), J @ u))


claim("an input needs requires_grad=True to get a derivative",
      "forward mode needs none: the tangent rides on the dual, no graph is built",
      no_requires_grad_needed)

# %% [markdown]
# Tangents exist only inside their `dual_level()`. After it closes, `unpack_dual` finds no
# tangent, and `make_dual` outside any level is an error, with the same message on both
# engines:

# %%
def tangent_after_the_level(T):
    fwAD = T.autograd.forward_ad
    with fwAD.dual_level():
        y = F(T, fwAD.make_dual(T.tensor(x0), T.tensor(u)))
    return fwAD.unpack_dual(y).tangent


def make_dual_outside_a_level(T):
    return T.autograd.forward_ad.make_dual(T.tensor(x0), T.tensor(u))


both(tangent_after_the_level)
both_raise(make_dual_outside_a_level, RuntimeError)

# %% [markdown]
# ## The functional API
#
# `T.autograd.functional` wraps these products into functions that take *your function* (of
# one tensor, here `fn(x) = F(T, x)`) and the point to differentiate at, so you never touch
# `requires_grad` or `.grad`. `vjp` and `jvp` return a pair, the value and the product; the
# code keeps only the product. (`hessian` needs a *scalar* function, one whose output is a
# single number.)
#
# | call | returns |
# |---|---|
# | `vjp(func, x, v)` | `(func(x), v^T J)` |
# | `jvp(func, x, u)` | `(func(x), J u)` |
# | `jacobian(func, x)` | $J$, shape `output.shape + input.shape` |
# | `hessian(func, x)` | the matrix of second derivatives of a scalar `func` |
# | `hvp(func, x, u)` | `(func(x), H u)` |

# %%
def functional_products(T):
    def fn(x):
        return F(T, x)

    x = T.tensor(x0)
    value, vjp = T.autograd.functional.vjp(fn, x, T.tensor(v))
    value, jvp = T.autograd.functional.jvp(fn, x, T.tensor(u))
    return {"vjp": vjp, "jvp": jvp, "jacobian": T.autograd.functional.jacobian(fn, x)}


pair = both(functional_products)
assert np.allclose(pair.ext["jacobian"].numpy(), J)  # the J computed by hand at the top

# %% [markdown]
# By its name one would expect `functional.jvp` to run forward mode. It does not: it uses the
# *double-backward trick*. A backward pass computes $b(v) = J^\top v$, and that is a linear
# function of $v$ whose own Jacobian is $J^\top$. A second backward pass, through $b$ and with
# $u$ as its vector, therefore gives $(J^\top)^\top u = J u$. Two reverse passes, no dual
# tensors. The proof: a custom `autograd.Function` (an operation whose derivative you write
# yourself, the subject of walkthrough 10) that defines only `backward`, and no forward-mode
# rule (its `jvp` method), works with `functional.jvp` but fails with dual tensors.

# %%
def backward_only_cube(T):
    class Cube(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x**2
    return Cube


def cube_with_duals(T):
    with T.autograd.forward_ad.dual_level():
        backward_only_cube(T).apply(T.autograd.forward_ad.make_dual(T.tensor(x0), T.tensor(u)))


both_raise(cube_with_duals, NotImplementedError)

# %%
def functional_jvp_works(T):
    value, jvp = T.autograd.functional.jvp(backward_only_cube(T).apply, T.tensor(x0), T.tensor(u))
    return bool(np.allclose(jvp.numpy(), 3 * x0**2 * u))


claim("autograd.functional.jvp computes J u with forward-mode AD",
      "it runs two backward passes; forward mode is autograd.forward_ad",
      functional_jvp_works)

# %% [markdown]
# `jacobian` also accepts `vectorize=True, strategy="forward-mode"`. In torch that builds the
# Jacobian column by column with forward mode, batched into one pass. ext accepts the same
# arguments and returns the same values, but computes them with its reverse passes (it has no
# batching), so it is not a measure of forward mode there:

# %%
def forward_strategy(T):
    def fn(x):
        return F(T, x)

    return T.autograd.functional.jacobian(fn, T.tensor(x0), vectorize=True,
                                          strategy="forward-mode")


both(forward_strategy)

# %% [markdown]
# ## Second derivatives: `hessian` and `hvp`
#
# For a function with a single-number output, $s(x) = \sum_k x_k^3 + x_0 x_1$, the
# **Hessian** $H_{jk} = \partial^2 s / \partial x_j \partial x_k$ is the Jacobian of the
# gradient. Here $H = \operatorname{diag}(6x) + \begin{pmatrix}0 & 1\\ 1 & 0\end{pmatrix}$.
# `hvp` gives $H u$ without ever forming $H$ (which has $n^2$ entries: too many when $n$ is the
# number of weights of a network).

# %%
def s(x):
    return (x**3).sum() + x[0] * x[1]


def second_derivatives(T):
    x = T.tensor(x0)
    H = T.autograd.functional.hessian(s, x)
    value, hvp = T.autograd.functional.hvp(s, x, T.tensor(u))
    return {"hessian": H, "hvp": hvp}


pair = both(second_derivatives)
H = np.diag(6 * x0) + np.array([[0.0, 1.0], [1.0, 0.0]])
assert np.allclose(pair.ext["hessian"].numpy(), H)
assert np.allclose(pair.ext["hvp"].numpy(), H @ u)

# %% [markdown]
# ## When forward mode wins, measured
#
# A full Jacobian can be built two ways:
#
# - **by rows, in reverse mode**: one forward pass, then $m$ backward passes, the $i$-th with
#   $v = e_i$ (a one at position $i$) giving row $i$;
# - **by columns, in forward mode**: $n$ forward passes with dual tensors, the $j$-th with
#   tangent $e_j$ giving column $j$.
#
# For the rows we use `T.autograd.grad(y, x, v)`: the same product $v^\top J$ as
# `y.backward(v)`, but returned instead of added into `x.grad`; `retain_graph=True` keeps the
# recorded graph for the next pass (by default backward frees it). For the columns, the dual
# tensors from above.
#
# So reverse mode should win for a **wide** Jacobian (many inputs, few outputs, like a loss of
# many weights) and forward mode for a **tall** one (few inputs, many outputs).

# %%
def jacobian_by_rows(T, fn, x):
    x = x.detach().requires_grad_()  # a fresh leaf with x's values, that requires grad
    y = fn(x)  # one forward pass, kept for all the backward passes
    e = T.eye(y.shape[0], dtype=y.dtype)
    return T.stack([T.autograd.grad(y, x, e[i], retain_graph=True)[0]
                    for i in range(y.shape[0])])


def jacobian_by_columns(T, fn, x):
    fwAD = T.autograd.forward_ad
    e = T.eye(x.shape[0], dtype=x.dtype)
    with fwAD.dual_level():
        columns = [fwAD.unpack_dual(fn(fwAD.make_dual(x, e[j]))).tangent
                   for j in range(x.shape[0])]
    return T.stack(columns, dim=1)

# %% [markdown]
# The function to differentiate: $G(x) = \tanh(Ax) \odot Ax$ (elementwise product) with a
# random $m \times n$ matrix $A$, for a wide shape ($n = 48$ inputs, $m = 4$ outputs) and a
# tall one ($n = 4$, $m = 48$). First the values: both methods must give the same Jacobian as
# `functional.jacobian`, on both engines.

# %%
SHAPES = {"wide": (4, 48), "tall": (48, 4)}  # (m outputs, n inputs)
A = {name: rng.standard_normal(shape) for name, shape in SHAPES.items()}
xs = {name: rng.standard_normal(shape[1]) for name, shape in SHAPES.items()}


def G(T, a, x):
    z = T.tensor(a) @ x
    return T.tanh(z) * z


def G_of(T, name):
    """G with the matrix A[name] fixed: a function of x alone."""
    def fn(x):
        return G(T, A[name], x)
    return fn


# %%
def both_ways(T, name):
    fn, x = G_of(T, name), T.tensor(xs[name])
    by_rows, by_columns = jacobian_by_rows(T, fn, x), jacobian_by_columns(T, fn, x)
    assert np.allclose(by_rows.numpy(), by_columns.numpy())
    assert np.allclose(by_rows.numpy(), T.autograd.functional.jacobian(fn, x).numpy())
    return {"rows": by_rows, "columns": by_columns}


def wide(T):
    return both_ways(T, "wide")


def tall(T):
    return both_ways(T, "tall")


for name, shape_case in (("wide", wide), ("tall", tall)):
    print(name, SHAPES[name])
    both(shape_case, quiet=True)

# %% [markdown]
# Now the timing: the best of three runs of each method (a fraction of a second in all).
# Timings depend on the machine and vary from run to run, so nothing is asserted about them;
# only the values above are checked.

# %%
def best_ms(method, T, name, repeats=3):
    fn, x = G_of(T, name), T.tensor(xs[name])
    method(T, fn, x)  # warm up once
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        method(T, fn, x)
        times.append(time.perf_counter() - start)
    return 1e3 * min(times)


print(f"{'shape':<6} {'(m, n)':>8} {'passes rev/fwd':>15} {'engine':>7} "
      f"{'rows (reverse)':>15} {'columns (forward)':>18}")
for name, (m, n) in SHAPES.items():
    for engine in (ext, torch):
        rows = best_ms(jacobian_by_rows, engine, name)
        cols = best_ms(jacobian_by_columns, engine, name)
        print(f"{name:<6} {str((m, n)):>8} {f'{m} / {n}':>15} {engine.__name__:>7} "
              f"{rows:>12.2f} ms {cols:>15.2f} ms")

# %% [markdown]
# The method that needs fewer passes wins, on both engines: reverse mode (4 backward passes)
# for the wide Jacobian, forward mode (4 forward passes) for the tall one, each by a wide
# margin over the 48 passes of the other. The exact milliseconds will differ on your machine;
# the pass counts will not.
#
# Training a network differentiates a loss, one number, with respect to millions of weights:
# the widest Jacobian there is, one row. That is why `backward` (reverse mode) is the default.
# Forward mode earns its place with few inputs and many outputs, e.g. the sensitivity of a
# whole image or trajectory to one parameter, or a directional derivative.

# %% [markdown]
# ## Exercise
#
# A Hessian-vector product without the Hessian: $H u$ is the derivative of the gradient
# $\nabla s$ in the direction $u$. Write `answer(T)`, which computes it for `s` at `x0` with
# two calls to `T.autograd.grad`: first the gradient, with `create_graph=True` so that it can
# be differentiated again, then a vector-Jacobian product of that gradient with $u$ (the
# vector goes third, as in `jacobian_by_rows`). That gives $u^\top H$, which is $H u$ because
# a Hessian is symmetric. Then run `check_exercise(answer, expected)`: `expected`, in the next
# cell, computes `hessian(s, x) @ u`, and the checker compares the two on both engines. The
# solution is in the cell after next (collapsed in the notebook).

# %%
def expected(T):
    return T.autograd.functional.hessian(s, T.tensor(x0)) @ T.tensor(u)


# %% tags=["solution", "hide-input"]
def answer(T):
    x = T.tensor(x0, requires_grad=True)
    (gradient,) = T.autograd.grad(s(x), x, create_graph=True)  # a graph of the gradient
    (hu,) = T.autograd.grad(gradient, x, T.tensor(u))          # u^T H = (H u)^T
    return hu


check_exercise(answer, expected)
