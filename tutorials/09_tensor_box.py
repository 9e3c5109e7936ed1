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
# # The Tensor box
#
# A tensor is a box around an array of numbers. The box adds what autograd needs (whether the
# numbers require a gradient, the node that made them), but from the outside it should feel
# like the array inside: it prints readably, has a length and a shape, and works with `+`, `*`
# and `**` like any number. Small teaching engines such as DeZero (walkthrough 4) add these
# niceties one by one to their `Variable` class; here we look at what each one is in PyTorch,
# on `ext` (this project's engine) and on real `torch` side by side.
#
# The walkthrough ends with three classic test functions from optimization, whose gradients we
# check three ways.
#
# Every example is a function of `T`, the engine module. `both(fn)` runs it with `T = ext` and
# with `T = torch`, prints both results (a row printed once, marked `ext = torch`, means both
# printed the same text, with `ext` written where torch writes `torch`) and checks that they
# agree.

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sidebyside import both, both_raise, check_exercise, claim, grad3, graphs, to_numpy

# %% [markdown]
# ## Making one
#
# A `Variable(np.array(1.0))` in a DeZero-style engine is `T.tensor(1.0, requires_grad=True)` in
# PyTorch: `requires_grad=True` marks the tensor as one whose gradient we want. `T.tensor`
# takes Python numbers and lists as well as NumPy arrays. Notice the dtypes: a Python float
# becomes `float32` (PyTorch's default), while a NumPy array keeps its own dtype, `float64`.

# %%
def making_one(T):
    return {"T.tensor(1.0)": T.tensor(1.0, requires_grad=True),
            "T.tensor(np.array(1.0))": T.tensor(np.array(1.0), requires_grad=True),
            "dtype of the first": T.tensor(1.0).dtype,
            "dtype of the second": T.tensor(np.array(1.0)).dtype}


both(making_one)

# %% [markdown]
# ## How a tensor prints
#
# `print(t)` and `repr(t)` show the same text. It starts with `tensor(`, separates the
# numbers with commas like a Python list, lines up the rows of a matrix, and rounds to four
# decimals (leaving them out when every number is whole). Then it adds what is *not* the
# default: the dtype unless it is `float32`, `int64` or `bool`, `requires_grad=True` on a leaf
# that requires grad, and the `grad_fn` of a computed result. Every row below is printed once:
# apart from the module's name, ext prints character for character what torch prints,
# including the scientific notation for numbers of very different sizes and the `...` for long
# tensors.

# %%
def printed(T):
    x = T.tensor(np.array([[1.0, 2.0], [3.0, 4.5]]), requires_grad=True)
    return {"ints": repr(T.tensor(np.array([[1, 2], [3, 4]]))),
            "a third": repr(T.tensor([1 / 3])),
            "float64 leaf": repr(x),
            "a result": repr(x * 2),
            "str = repr": str(x * 2) == repr(x * 2),
            "wide range": repr(T.tensor([1e-5, 1.0, 1e5])),
            "long": repr(T.arange(2000.0))}


both(printed)

# %%
def prints_unlike_numpy(T):
    return (repr(T.tensor(np.array([1, 2, 3]))) == "tensor([1, 2, 3])"
            and str(np.array([1, 2, 3])) == "[1 2 3]")


claim("a tensor prints like the NumPy array inside it",
      "tensor(...) with commas and four decimals, plus dtype, requires_grad, grad_fn",
      prints_unlike_numpy)

# %% [markdown]
# ## Length, shape, size, dtype
#
# `len(t)` is the length of the first dimension, as for a NumPy array or a list. `t.shape` and
# `t.ndim` mean what they mean in NumPy. `t.size` is where the two part ways: in NumPy it is the
# number of elements; in PyTorch it is a *method*, `t.size()`, that returns the shape (a
# `torch.Size`, which is a tuple), and `t.size(0)` one dimension of it. The number of elements
# is `t.numel()`.

# %%
def measures(T):
    t = T.tensor(np.array([[1, 2, 3], [4, 5, 6]]))
    return {"len(t)": len(t), "t.shape": t.shape, "t.ndim": t.ndim, "t.size()": t.size(),
            "t.size(1)": t.size(1), "t.numel()": t.numel(), "t.dtype": t.dtype}


both(measures)
claim("a tensor's size is its number of elements, as for a NumPy array",
      "size() is a method that returns the shape; the number of elements is numel()",
      lambda T: T.zeros(2, 3).size() == (2, 3) and T.zeros(2, 3).numel() == 6)

# %% [markdown]
# A tensor holding a single number (a **0-d tensor**, shape `()`) has no first dimension, so it
# has no length. Both engines refuse with the same message:

# %%
both_raise(lambda T: len(T.tensor(1.0)), TypeError)

# %% [markdown]
# ## Operators build the graph
#
# Python turns `x + y` into the call `x.__add__(y)`, `x * y` into `x.__mul__(y)`, and so on.
# A tensor's operator methods do the arithmetic *and* record a backward node (`grad_fn`) that
# knows the derivative. Each operator has its own node; `x ** 2` (a number as exponent) and
# `x ** y` (a tensor as exponent) are different nodes, `PowBackward0` and `PowBackward1`,
# because their derivatives are computed differently.

# %%
def operators(T):
    x = T.tensor(3.0, requires_grad=True)
    y = T.tensor(2.0, requires_grad=True)
    return {"x + y": x + y, "x * y": x * y, "-x": -x, "x - y": x - y, "x / y": x / y,
            "x ** 2": x**2, "x ** y": x**y}


both(operators)

# %% [markdown]
# With operators, a formula reads like the math, and backward differentiates it. For
# $y = ab + c$: $\partial y/\partial a = b$, $\partial y/\partial b = a$,
# $\partial y/\partial c = 1$, so at $(3, 2, 1)$ the gradients are 2, 3 and 1.

# %%
def abc(T):
    a, b, c = (T.tensor(v, requires_grad=True) for v in (3.0, 2.0, 1.0))
    y = a * b + c
    y.backward()
    return {"y": y, "a.grad": a.grad, "b.grad": b.grad, "c.grad": c.grad}


both(abc)

# %% [markdown]
# `grad3` checks gradients three ways: ext's backward, torch's, and finite differences (nudge
# each input a little and watch the output). It feeds backward an upstream gradient that is not
# all ones, so a derivative that is right only for an upstream gradient of 1 would be caught.
# Here on arrays of four numbers, with $(a + 3)^2 / 2$ added to the formula:

# %%
def abc_formula(T, a, b, c):
    return a * b + c + (a + 3) ** 2 / 2


rng = np.random.default_rng(9)
grad3(abc_formula, *rng.normal(size=(3, 4)))  # three random arrays: a, b and c

# %% [markdown]
# ## A number on the left: the reflected operators
#
# In `2 - x`, the left operand is a Python `int`, and `int.__sub__` knows nothing about
# tensors: it returns `NotImplemented`. Python then asks the right operand, calling
# `x.__rsub__(2)` ("reflected" subtract). So a tensor class needs `__radd__`, `__rmul__`,
# `__rsub__`, `__rtruediv__` and `__rpow__` as well. PyTorch does not always record the same
# node as for the unreflected version:
#
# - `2 - x` records `RsubBackward1` (reversed subtraction; the `1` names the variant that takes
#   a number), not `SubBackward0`;
# - `2 / x` is computed as `reciprocal(x) * 2`: a `MulBackward0` whose input is a
#   `ReciprocalBackward0`;
# - `2 ** x` (a number raised to a tensor) records `PowBackward2`.

# %%
def reflected(T):
    x = T.tensor(3.0, requires_grad=True)
    return {"2 + x": 2 + x, "2 * x": 2 * x, "2 - x": 2 - x, "2 / x": 2 / x, "2 ** x": 2**x,
            "x.__rsub__(2)": x.__rsub__(2),
            "(2 / x).grad_fn.next_functions[0][0]": (2 / x).grad_fn.next_functions[0][0]}


both(reflected)

# %% [markdown]
# The graph of `2 / x` shows the two nodes. In a notebook you see both engines' pictures side
# by side; in a script each node is listed with the nodes it receives from, and a tensor is
# shown by its shape (`()` for a single number). The dict returned next to the output names
# the leaves in the picture, the job a `name=` argument does for a DeZero-style `Variable`.

# %%
def two_over_x(T):
    x = T.tensor(3.0, requires_grad=True)
    return 2 / x, {"x": x}


graphs(two_over_x)

# %% [markdown]
# A Python number does not change the tensor's dtype: `x * 2.5` stays `float32` (no dtype is
# printed) even though a Python float is a 64-bit number. An integer tensor meeting a float
# becomes `float32`, and `/` always gives a float. And `np.float64(2.0)`, a NumPy *scalar*,
# behaves like a Python number on either side.

# %%
def with_numbers(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    i = T.tensor([1, 2])
    return {"x * 2.5": x * 2.5, "i + 1": i + 1, "i * 2.5": i * 2.5, "i / 2": i / 2,
            "np.float64(2.0) - x": np.float64(2.0) - x}


both(with_numbers)

# %% [markdown]
# ## A NumPy array on either side
#
# NumPy arrays are where surprises live. DeZero-style engines convert an array operand into a
# `Variable` and set a class attribute `__array_priority__` so that `ndarray + Variable` is
# handed to the `Variable`. What do ext and torch do? Run it:
#
# - `x + array`, with `x` requiring grad: `Tensor.__add__` does not take arrays and returns
#   `NotImplemented`. Python then calls the array's reflected `__radd__`, and NumPy tries to
#   read `x` as an array, which a tensor that requires grad refuses.

# %%
def tensor_plus_array(T):
    return T.tensor([1.0], requires_grad=True) + np.array([2.0])


both_raise(tensor_plus_array, RuntimeError)

# %% [markdown]
# - `array + x`: the array goes first. `ndarray.__add__` sees that tensors have a higher
#   `__array_priority__` (1000, against the array's 0) and steps aside, so Python calls
#   `x.__radd__(array)`, which does not take arrays either. Both operands declined, so Python
#   raises a `TypeError`, with a message about concatenation from NumPy's fallback for `+`. It
#   raises whether or not `x` requires grad. The table after the error calls the two methods
#   by hand: each answers `NotImplemented`, Python's way of saying "not me".

# %%
def array_plus_tensor(T):
    return np.array([2.0]) + T.tensor([1.0])


def who_declines(T):
    a, x = np.array([2.0]), T.tensor([1.0])
    return {"ndarray priority": a.__array_priority__,
            "Tensor priority": T.Tensor.__array_priority__,
            "ndarray.__add__(a, x)": np.ndarray.__add__(a, x),
            "x.__radd__(a)": x.__radd__(a)}


both_raise(array_plus_tensor, TypeError)
both(who_declines)

# %%
def array_first(T):
    x, a = T.tensor([1.0], requires_grad=True), np.array([2.0])
    try:
        a + x
    except TypeError:
        return T.Tensor.__array_priority__ == 1000 and a.__array_priority__ == 0
    return False


claim("ndarray's priority is 100; a higher one makes ndarray + tensor give a tensor",
      "ndarray's is 0, Tensor's 1000, NumPy steps aside, but __radd__ refuses: TypeError",
      array_first)

# %% [markdown]
# - `t + array`, with `t` **not** requiring grad: this one runs, but NumPy does the arithmetic
#   (through the array's `__radd__` again) and hands back its result wrapped in a tensor. The
#   result is `float64`, NumPy's type promotion, and it has no graph. (On torch, NumPy also
#   emits a `DeprecationWarning` about torch's `__array_wrap__`; ext does not. We silence it
#   here.)

# %%
def tensor_first(T):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return T.tensor([1.0]) + np.array([2.0])


both(tensor_first)

# %% [markdown]
# The reliable way is to say what you mean: make the array a tensor first, with `T.tensor`
# (a copy) or `T.from_numpy` (shares the memory). Then the operation is a tensor operation,
# the graph is recorded, and the array is a constant in it. Notice the dtypes: unlike a Python
# number, a `float64` tensor of several elements promotes the `float32` `x`, so `y` is
# `float64`; `x.grad` keeps `x`'s own dtype.

# %%
def wrapped(T):
    x = T.tensor([1.0, 1.0], requires_grad=True)
    y = x * T.from_numpy(np.array([2.0, 3.0])) + T.tensor(np.array([1.0, 1.0]))
    y.sum().backward()
    return {"y": y, "x.grad": x.grad}


both(wrapped)

# %% [markdown]
# ## Three test functions
#
# Optimization methods are tried on standard functions whose minima are known. Three of them,
# written with operators exactly as in the math:
#
# - sphere: $z = x^2 + y^2$ (minimum 0 at the origin);
# - Matyas: $z = 0.26 (x^2 + y^2) - 0.48 x y$ (minimum 0 at the origin);
# - Goldstein-Price, a degree-8 polynomial with minimum 3 at $(0, -1)$:
#   $z = [1 + (x + y + 1)^2 (19 - 14x + 3x^2 - 14y + 6xy + 3y^2)]
#   \cdot [30 + (2x - 3y)^2 (18 - 32x + 12x^2 + 48y - 36xy + 27y^2)]$.
#
# The same Python function works on ext tensors, torch tensors and NumPy arrays: operators are
# all it uses.

# %%
def sphere(x, y):
    return x**2 + y**2


def matyas(x, y):
    return 0.26 * (x**2 + y**2) - 0.48 * x * y


def goldstein(x, y):
    return ((1 + (x + y + 1) ** 2 * (19 - 14 * x + 3 * x**2 - 14 * y + 6 * x * y + 3 * y**2))
            * (30 + (2 * x - 3 * y) ** 2
               * (18 - 32 * x + 12 * x**2 + 48 * y - 36 * x * y + 27 * y**2)))


# %% [markdown]
# At $(1, 1)$, by hand: sphere's gradient is $(2x, 2y) = (2, 2)$, Matyas' is
# $(0.52x - 0.48y,\ 0.52y - 0.48x) = (0.04, 0.04)$. Goldstein-Price's is best left to the
# engine: $(-5376, 8064)$. Resetting the gradients between functions is `x.grad = None` (what a
# DeZero-style `cleargrad()` does); without it, the second backward would *add* to the first.

# %%
def at_one_one(T):
    x = T.tensor(1.0, dtype=T.float64, requires_grad=True)
    y = T.tensor(1.0, dtype=T.float64, requires_grad=True)
    out = {}
    for fn in (sphere, matyas, goldstein):
        x.grad = y.grad = None
        z = fn(x, y)
        z.backward()
        out[fn.__name__] = z
        out[f"{fn.__name__} grads"] = (x.grad, y.grad)
    return out


pair = both(at_one_one)

# %% [markdown]
# The gradients printed above are tensors, not bare numbers: a gradient is itself a tensor of
# its input's shape and dtype. (Matyas' 0.04 is exactly what floating point gives:
# `0.040000000000000036`.)

# %%
def grad_is_a_tensor(T):
    x = T.tensor(1.0, dtype=T.float64, requires_grad=True)
    sphere(x, x).backward()
    return isinstance(x.grad, T.Tensor) and x.grad.dtype == x.dtype and x.grad.shape == x.shape


print(f"Matyas' gradient in x, all digits: {pair.torch['matyas grads'][0].item()!r}")
claim("a gradient is a plain array of numbers",
      "x.grad is a tensor with x's shape and dtype", grad_is_a_tensor)

# %% [markdown]
# Gradients three ways, at random points this time (from a generator started at a fixed
# state, so every run draws the same points). `grad3` wants a function of `(T, x, y)`, and our
# three take only `(x, y)`: `with_T` makes the one from the other.

# %%
def with_T(fn):
    """``fn(x, y)`` as a function of ``(T, x, y)``, the form ``grad3`` expects."""
    def on_engine(T, x, y):
        return fn(x, y)
    return on_engine


rng = np.random.default_rng(24)
for fn in (sphere, matyas, goldstein):
    print(fn.__name__)
    grad3(with_T(fn), *rng.uniform(-1.5, 1.5, size=(2, 3)))  # 3 points: x and y of 3 values

# %% [markdown]
# ## Their graphs
#
# Sphere and Matyas have small graphs. Notice in Matyas' that `x` and `y` each feed two
# nodes: their gradients are added in their `AccumulateGrad` nodes.

# %%
def at_two_leaves(fn):
    """A function of T for ``graphs``: ``fn`` at two new leaves, and the leaves' names."""
    def output_and_names(T):
        x = T.tensor(1.0, requires_grad=True)
        y = T.tensor(1.0, requires_grad=True)
        return fn(x, y), {"x": x, "y": y}
    return output_and_names


for fn in (sphere, matyas):
    print(fn.__name__)
    graphs(at_two_leaves(fn))

# %% [markdown]
# Goldstein-Price's graph is large (43 nodes). Operator by operator, both engines record the
# same nodes with the same edges.

# %%
graphs(at_two_leaves(goldstein))

# %% [markdown]
# ## What a gradient looks like
#
# The gradient points uphill, across the contour lines. One backward pass can give the gradient
# at many points at once: put the points in tensors and differentiate the *sum*, because each
# point's term depends on that point alone. Below, Goldstein-Price's contours (on a log scale,
# its values range from 3 to about a million) with arrows along minus the gradient, the
# direction gradient descent takes. Each arrow crosses the contour lines at a right angle and
# points downhill: toward the minimum at $(0, -1)$ (the star), or into one of the function's
# shallower local minima.

# %%
def descent_directions(T):
    g = np.linspace(-1.8, 1.8, 9)
    x = T.tensor(np.repeat(g, 9), requires_grad=True)
    y = T.tensor(np.tile(g, 9), requires_grad=True)
    goldstein(x, y).sum().backward()
    return {"x": x.detach(), "y": y.detach(), "-dz/dx": -x.grad, "-dz/dy": -y.grad}


pair = both(descent_directions, quiet=True)
arrows = {name: to_numpy(value) for name, value in pair.ext.items()}  # as NumPy arrays
u, v = arrows["-dz/dx"], arrows["-dz/dy"]
xs, ys = np.meshgrid(np.linspace(-2, 2, 101), np.linspace(-2, 2, 101))
fig, ax = plt.subplots(figsize=(5, 4.5))
ax.contour(xs, ys, np.log10(goldstein(xs, ys)), levels=15, cmap="viridis")
ax.quiver(arrows["x"], arrows["y"], u / np.hypot(u, v), v / np.hypot(u, v), angles="xy")
ax.plot(0, -1, "r*", markersize=12)
ax.set(xlabel="x", ylabel="y", aspect="equal",
       title="Goldstein-Price: log10 z, and -gradient directions")
plt.show()

# %% [markdown]
# ## Exercise
#
# Write the Rosenbrock function, `rosenbrock(x, y)` for $z = (1 - x)^2 + 100 (y - x^2)^2$, with
# operators. Then write `answer(T)`, which computes its gradient at two points with **one**
# backward pass (the trick of the last cell): at $(0.5, -0.3)$ and at its minimum $(1, 1)$,
# where the gradient should be zero. Use float64 tensors, and return the gradients as a 2×2
# tensor, `x`'s gradients in the first row and `y`'s in the second (`T.stack([a, b])` stacks
# two tensors as rows). Run `check_exercise(answer, expected)`: `expected`, in the next cell,
# computes the formula $\partial z/\partial x = -2(1 - x) - 400 x (y - x^2)$,
# $\partial z/\partial y = 200 (y - x^2)$ in NumPy. The solution is in the cell after next
# (collapsed in the notebook).

# %%
def expected(T):
    x, y = np.array([0.5, 1.0]), np.array([-0.3, 1.0])
    return T.tensor(np.stack([-2 * (1 - x) - 400 * x * (y - x**2), 200 * (y - x**2)]))


# %% tags=["solution", "hide-input"]
def rosenbrock(x, y):
    return (1 - x) ** 2 + 100 * (y - x**2) ** 2


def answer(T):
    x = T.tensor([0.5, 1.0], dtype=T.float64, requires_grad=True)
    y = T.tensor([-0.3, 1.0], dtype=T.float64, requires_grad=True)
    rosenbrock(x, y).sum().backward()  # each point's term depends on that point alone
    return T.stack([x.grad, y.grad])


both(answer)  # -0. is a zero that kept the sign of -2 · (1 - x)
grad3(with_T(rosenbrock), *np.random.default_rng(7).uniform(-2, 2, (2, 3)))
check_exercise(answer, expected)
