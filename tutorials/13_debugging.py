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
# # Debugging gradients
#
# Gradients go wrong in three typical ways, and each has its tool:
#
# - a gradient is NaN ("not a number") or infinite, and you do not know which node made it:
#   **anomaly mode** names the node and shows the line of your forward code that created it;
# - a backward you wrote yourself is wrong: **gradcheck** compares it with finite differences,
#   and so does a **gradient computed by hand**, which also shows you understand the formulas;
# - every gradient is right, but those of the first layers are too small to train anything:
#   a **gradient-flow plot** shows where they shrink.
#
# As on every page, each example is a function of `T`, the engine module. `both(fn)` runs it
# with `T = ext` (this project's engine, written in NumPy) and with `T = torch` (real PyTorch),
# prints both results and stops with an error if they disagree. A row marked `ext = torch`
# printed the same on both.

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sidebyside import both, both_raise, caught, check_exercise, claim, grad3

from ext.hooks import GradFlow

# %% [markdown]
# ## A NaN that appears only in backward
#
# A square root is fine at 0 going forward, but its derivative $\frac{1}{2\sqrt{x}}$ is infinite
# there. A common way to "protect" it is `where(x > 0, sqrt(x), 0)`: the forward result is
# clean. The gradient is not: backward runs through *both* branches of `where` and multiplies
# the unused one by 0, and $0 \cdot \infty$ is NaN.

# %%
def safe_looking_sqrt(T):
    x = T.tensor([0.0, 4.0], requires_grad=True)
    y = T.where(x > 0, x.sqrt(), 0.0)
    y.sum().backward()
    return {"y": y, "x.grad": x.grad}


both(safe_looking_sqrt)

# %% [markdown]
# In a real model that NaN would spread through every later update, far from where it was
# born. *Anomaly mode* checks the output of every backward node for NaN and stops at the first
# one, with a `RuntimeError` that names the node. Turn it on for a block with
# `with T.autograd.detect_anomaly():` (or for the whole program with
# `T.autograd.set_detect_anomaly(True)`). It slows everything down: use it to debug only.

# %%
def nan_hunt(T):
    with T.autograd.detect_anomaly():
        safe_looking_sqrt(T)


with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # anomaly mode's warnings are the subject of the next cell
    both_raise(nan_hunt, RuntimeError)

# %% [markdown]
# The node is `SqrtBackward0`, the backward of `sqrt`; its "0th output" is the gradient for its
# first (and only) input. To say *which* `sqrt` in a big model, anomaly mode records where each
# node was created during the forward pass, and before raising it warns with that traceback.
# Here is the warning on both engines: the first line, and the last line of code of the
# traceback (the earlier lines are the calls that led there).

# %%
def anomaly_warning(T):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        error = caught(lambda: nan_hunt(T))
    report = next(str(w.message) for w in seen if "Error detected" in str(w.message))
    code_lines = [line.strip() for line in report.splitlines() if line.startswith("    ")]
    return {"error": error, "warning": report.splitlines()[0], "forward code": code_lines[-1]}


both(anomaly_warning)

# %% [markdown]
# The warning points at the line `y = T.where(x > 0, x.sqrt(), 0.0)` of `safe_looking_sqrt`.
# The fix is to keep the argument of `sqrt` away from 0 in the branch that is not used, so that
# no infinity is made in the first place:

# %%
def safe_sqrt(T):
    x = T.tensor([0.0, 4.0], requires_grad=True)
    y = T.where(x > 0, T.where(x > 0, x, 1.0).sqrt(), 0.0)  # sqrt never sees the 0
    y.sum().backward()
    return {"y": y, "x.grad": x.grad}


both(safe_sqrt)

# %% [markdown]
# Anomaly mode looks for NaN only. An *infinite* gradient passes, as in $1/(x^2 - 1)$ at
# $x = 1$: the forward divides by zero and gives `inf`, backward gives `-inf`, and nothing
# stops.

# %%
def division_by_zero(T):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with T.autograd.set_detect_anomaly(True):
            x = T.tensor([1.0], requires_grad=True)
            (1 / (x**2 - 1)).backward()
    return bool(T.isinf(x.grad).all())


claim("anomaly mode stops at a division by zero",
      "it checks for NaN only; here the gradient is -inf and backward finishes without error",
      division_by_zero)

# %% [markdown]
# To catch infinities too, check the gradients yourself after backward, e.g.
# `all(T.isfinite(p.grad).all() for p in model.parameters())`.
#
# ## gradcheck: testing a backward you wrote
#
# A custom `T.autograd.Function` (an operation whose forward and backward you write yourself,
# the subject of its own page) comes with a hand-written `backward`. Here is one for $x^3$
# with a typo: $2x^2$ instead of $3x^2$. Nothing fails when you use it; the gradients are just
# wrong.

# %%
def cube(T, factor):
    """``Cube.apply``: x ** 3 as a custom Function whose backward uses ``factor * x**2``."""
    class Cube(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * factor * x**2  # the right factor is 3

    return Cube.apply


X3 = np.array([0.5, -1.0, 2.0])


def gradcheck_cube(T, factor):
    x = T.tensor(X3, requires_grad=True)  # float64, as X3 is
    return T.autograd.gradcheck(cube(T, factor), (x,))  # the inputs go in a tuple


both_raise(lambda T: gradcheck_cube(T, 2), RuntimeError)

# %% [markdown]
# `gradcheck` builds the Jacobian matrix (every output's derivative with respect to every input
# element) in two ways: "numerical" from finite differences (nudge one input element by
# $\pm 10^{-6}$, see how the outputs move) and "analytical" from our backward. They should
# match. Here the matrix is diagonal (output $i$ depends on input $i$ only), and the diagonal
# reads $3x^2 = (0.75, 3, 12)$ numerically but $2x^2 = (0.5, 2, 8)$ from our backward.
# With the factor fixed, `gradcheck` returns `True`, and the usual three-way check agrees:

# %%
def right_cube(T, x):
    return cube(T, 3)(x)


both(lambda T: gradcheck_cube(T, 3))
grad3(right_cube, X3)

# %% [markdown]
# Finite differences subtract two nearly equal numbers, so they need every digit float64 has.
# In float32 the numerical Jacobian is mostly rounding noise, and `gradcheck` fails a correct
# backward (after warning that the input is not double precision):

# %%
def float32_gradcheck(T):
    x = T.tensor(X3, dtype=T.float32, requires_grad=True)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        passed = T.autograd.gradcheck(cube(T, 3), (x,), raise_exception=False)
    return passed is False and len(seen) > 0


claim("gradcheck works on tensors of any float type",
      "in float32 it warns and, at its default tolerances, fails even a correct backward",
      float32_gradcheck)

# %% [markdown]
# ## Gradients by hand
#
# The surest way to know what backward should give is to work it out yourself. First a warm-up
# with two numbers: $f(x, y) = (x^2 + y^2)(x + y)$ at $x = 2$, $y = 3$. By the product rule,
#
# $$\frac{\partial f}{\partial x} = 2x(x + y) + (x^2 + y^2) = 33, \qquad
#   \frac{\partial f}{\partial y} = 2y(x + y) + (x^2 + y^2) = 43.$$

# %%
def warm_up(T):
    x = T.tensor(2.0, requires_grad=True)
    y = T.tensor(3.0, requires_grad=True)
    f = (x**2 + y**2) * (x + y)
    f.backward()
    return {"f": f, "df/dx": x.grad, "df/dy": y.grad}


by_hand = {"f": 65.0, "df/dx": 33.0, "df/dy": 43.0}
result = both(warm_up)
assert all(result.torch[k].item() == v for k, v in by_hand.items())
print("✓ and by hand:", by_hand)

# %% [markdown]
# Now a small network with two layers: 4 samples with 3 features each go through a hidden
# layer of 5 tanh units, then a linear layer with 2 outputs; the loss is the mean squared error
# against targets $t$. With rows as samples ($X$ is 4 × 3):
#
# $$Z = X W_1^\top + b_1,\quad H = \tanh Z,\quad P = H W_2^\top + b_2,\quad
#   L = \frac{1}{8}\sum (P - t)^2 .$$
#
# Backward applies the chain rule from the loss down, one line per forward line, each time
# multiplying by the local derivative:
#
# $$\bar P = \tfrac{2}{8}(P - t),\quad \bar W_2 = \bar P^\top H,\quad
#   \bar b_2 = \textstyle\sum_{\text{rows}} \bar P,\quad \bar H = \bar P W_2,$$
#
# $$\bar Z = \bar H \odot (1 - H^2),\quad \bar W_1 = \bar Z^\top X,\quad
#   \bar b_1 = \textstyle\sum_{\text{rows}} \bar Z,$$
#
# where $\bar A$ means $\partial L / \partial A$ and $\odot$ is elementwise multiplication.
# In NumPy:

# %%
rng = np.random.default_rng(7)
X = rng.standard_normal((4, 3))
TARGET = rng.standard_normal((4, 2))
PARAMS = {"W1": rng.standard_normal((5, 3)), "b1": rng.standard_normal(5),
          "W2": rng.standard_normal((2, 5)), "b2": rng.standard_normal(2)}


def manual_backprop(W1, b1, W2, b2):
    H = np.tanh(X @ W1.T + b1)
    P = H @ W2.T + b2
    dP = 2 * (P - TARGET) / P.size
    dH = dP @ W2
    dZ = dH * (1 - H**2)  # tanh' = 1 - tanh²
    return {"W1": dZ.T @ X, "b1": dZ.sum(0), "W2": dP.T @ H, "b2": dP.sum(0)}


# %% [markdown]
# The same network written once for both engines, with autograd doing backward:

# %%
def network(T, W1, b1, W2, b2):
    H = T.tanh(T.tensor(X) @ W1.T + b1)
    return H @ W2.T + b2


def autograd_backprop(T):
    params = {name: T.tensor(value, requires_grad=True) for name, value in PARAMS.items()}
    loss = ((network(T, **params) - T.tensor(TARGET)) ** 2).mean()
    loss.backward()
    return {name: p.grad for name, p in params.items()}


engines = both(autograd_backprop, quiet=True)
hand = manual_backprop(**PARAMS)
print(f"{'gradient':<10}{'shape':<9}{'max |hand - ext|':>18}{'max |hand - torch|':>20}")
for name, g in hand.items():
    gaps = [np.abs(g - engines[e][name].numpy()).max() for e in ("ext", "torch")]
    print(f"{name:<10}{str(g.shape):<9}{gaps[0]:>18.1e}{gaps[1]:>20.1e}")
    assert max(gaps) < 1e-12
print("✓ the hand-written backward agrees with ext and torch")

# %% [markdown]
# All the differences are at the level of float64 rounding ($10^{-16}$). Last, gradients of the
# network's output three ways: ext, torch, and finite differences, with a different upstream
# gradient for each of the 8 outputs (what a later layer would send back).

# %%
grad3(network, *PARAMS.values(), quiet=True)

# %% [markdown]
# ## Vanishing gradients: 20 sigmoid layers
#
# A deep stack: 20 layers, each `Linear(100, 100)` (computing $h W^\top + b$) followed by a
# sigmoid $\sigma(z) = 1/(1 + e^{-z})$, on a batch of 16 random inputs, with a mean-squared-error
# loss. The weights are drawn like torch's default for `Linear(100, 100)` (uniform in
# $\pm 1/\sqrt{100}$), here with NumPy so that both engines get the same numbers. We use float64
# so that tiny gradients are compared exactly.
#
# To watch the gradients we use `ext.hooks.GradFlow`. It puts a hook on each weight that
# runs after backward has written its `.grad` (a post-accumulate hook, walkthrough 11), and
# records the mean and the largest $|\text{grad}|$. It works on ext and torch tensors alike.

# %%
WIDTH, DEPTH, BATCH = 100, 20, 16
INPUT, GOAL = rng.standard_normal((BATCH, WIDTH)), rng.random((BATCH, WIDTH))
DEFAULT_INIT = [rng.uniform(-0.1, 0.1, (WIDTH, WIDTH)) for _ in range(DEPTH)]
DEFAULT_BIAS = [rng.uniform(-0.1, 0.1, WIDTH) for _ in range(DEPTH)]


def deep_network(T, activation, weights, biases, residual=False):
    """Returns two things: the mean |grad| of each layer's weight after one backward (an array,
    layer 0 first), and every layer's input to the activation (the pre-activation)."""
    layers = [T.nn.Linear(WIDTH, WIDTH, dtype=T.float64) for _ in range(DEPTH)]
    with T.no_grad():
        for layer, w, b in zip(layers, weights, biases):
            layer.weight.copy_(T.tensor(w))
            layer.bias.copy_(T.tensor(b))
    flow = GradFlow({f"layer {i}": layer.weight for i, layer in enumerate(layers)})
    h, pre = T.tensor(INPUT), []
    for layer in layers:
        z = layer(h)
        pre.append(z.detach())
        h = (h + activation(T, z)) if residual else activation(T, z)
    ((h - T.tensor(GOAL)) ** 2).mean().backward()
    # flow.latest[name] is (mean |grad|, largest |grad|) of that weight after the last backward;
    # it fills in backward order (last layer first), so read it in layer order
    return np.array([flow.latest[name][0] for name in flow.params]), pre


def sigmoid(T, z):
    return T.sigmoid(z)


# %% [markdown]
# We compare $\log_{10}$ of the mean $|\text{grad}|$ per layer (layer 0 is the first, nearest
# the input): the numbers span many powers of ten.

# %%
def log_grads(activation, weights, biases, residual=False):
    def run(T):
        means, pre_activations = deep_network(T, activation, weights, biases, residual)
        return np.log10(means)
    curve = both(run, quiet=True, atol=1e-8).torch  # compared on both engines within 1e-8
    print("log10 mean |grad|, layer 0 to 19:", np.array2string(curve, precision=1))
    return curve


curves = {"sigmoid": log_grads(sigmoid, DEFAULT_INIT, DEFAULT_BIAS)}

# %% [markdown]
# The last layer's weights get gradients around $10^{-4}$; the first layer's around
# $10^{-20}$. A training step moves the first layers by nothing at all: they never learn.
#
# Why? Backward multiplies the gradient, layer after layer, by the sigmoid's derivative
# $\sigma'(z) = \sigma(z)(1 - \sigma(z))$ and by the transposed weights. $\sigma'$ is at most
# $1/4$ (at $z = 0$), and these weights shrink vectors too. The usual explanation is that the
# sigmoids *saturate* (sit where the curve is flat, $\sigma' \approx 0$). Measure it: the
# inputs of the sigmoids stay near 0, and averaged over the units of each layer $\sigma'$ is
# above 0.23, close to its maximum.

# %%
def sigmoid_not_saturated(T):
    means, pre = deep_network(T, sigmoid, DEFAULT_INIT, DEFAULT_BIAS)
    slopes = [T.sigmoid(z) * (1 - T.sigmoid(z)) for z in pre]  # σ' at every unit
    return min(s.mean().item() for s in slopes) > 0.23  # its maximum is 0.25


claim("these gradients vanish because the sigmoids saturate",
      "σ' averages over 0.23 in every layer (max 0.25); σ' ≤ 1/4 times small weights does it",
      sigmoid_not_saturated)

# %% [markdown]
# ## Fixing it
#
# Replacing sigmoid with ReLU is the usual advice. ReLU's derivative is 1 for positive inputs,
# but with the same default weights the gradients still shrink by six orders of magnitude:
# ReLU zeroes about half the signal, and the default weights (variance $1/(3 \cdot 100)$ for 100
# inputs) are too small to make up for it. *He initialisation* draws weights with variance
# $2/100$ (2 over the number of inputs; normal, zero biases), which keeps the size of the
# signal constant through ReLU layers. In code it is
# `T.nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")`; here NumPy draws from the
# same distribution, so that both engines get the same numbers.
#
# A third fix keeps the sigmoid and adds a *residual connection*,
# $h \leftarrow h + \sigma(\text{layer}(h))$: the gradient then also flows back through the
# "+ h", untouched by any derivative.

# %%
def relu(T, z):
    return T.relu(z)


HE_INIT = [rng.normal(0, np.sqrt(2 / WIDTH), (WIDTH, WIDTH)) for _ in range(DEPTH)]
ZERO_BIAS = [np.zeros(WIDTH)] * DEPTH
curves["ReLU, default init"] = log_grads(relu, DEFAULT_INIT, DEFAULT_BIAS)
curves["ReLU, He init"] = log_grads(relu, HE_INIT, ZERO_BIAS)
curves["sigmoid + residual"] = log_grads(sigmoid, DEFAULT_INIT, DEFAULT_BIAS, residual=True)

# %% [markdown]
# The gradient flow of the four networks (the values both engines agreed on above):

# %%
fig, ax = plt.subplots(figsize=(7, 4))
for label, curve in curves.items():
    ax.plot(range(DEPTH), curve, marker="o", markersize=3, label=label)
ax.set_xlabel("layer (0 = nearest the input)")
ax.set_ylabel("log10 mean |grad| of the weight")
ax.set_title("Gradient flow through 20 layers")
ax.set_xticks(range(0, DEPTH, 2))
ax.legend()
ax.grid(True, alpha=0.3)

# %% [markdown]
# The sigmoid network loses a factor of about 7 per layer; ReLU with the default weights up to
# a factor of 3 per layer. With He initialisation the curve is nearly flat, and with the
# residual connection the first layer gets a tenth of the last layer's gradient: both
# networks can train all their layers. The claim about ReLU, checked:

# %%
def spread(T, weights, biases):
    """How many powers of ten lie between the largest and the smallest layer gradient (ReLU)."""
    means, pre = deep_network(T, relu, weights, biases)
    return np.ptp(np.log10(means))  # ptp: largest minus smallest


def he_init_is_needed(T):
    return bool(spread(T, DEFAULT_INIT, DEFAULT_BIAS) > 5 and spread(T, HE_INIT, ZERO_BIAS) < 1)


claim("switching from sigmoid to ReLU fixes vanishing gradients",
      "not with the default init: layer 0 still gets ~10^6 times less than layer 19; He init "
      "fixes it",
      he_init_is_needed)

# %% [markdown]
# ## Exercise
#
# Backpropagate through one layer by hand. The layer is $Y = \sigma(X W^\top + b)$ with $X$ of
# shape 4 × 3, $W$ of shape 2 × 3 and $b$ of shape 2; the next cell draws them as the NumPy
# arrays `EX_X`, `EX_W` and `EX_B`, and the gradient $G = \partial L / \partial Y$ that
# arrives from later layers as `EX_G` (4 × 2). Write `answer(T)`, which computes with NumPy
# formulas (no autograd) $\partial L / \partial W$, $\partial L / \partial b$ and
# $\partial L / \partial X$ and returns them as a list of three tensors, in that order
# (`T.tensor(array)` for each). Hint: $\sigma' = \sigma (1 - \sigma)$, and the two-layer
# network above has the other formulas. Then run `check_exercise(answer, expected)`:
# `expected` gets the three gradients from autograd, on both engines. The solution is in the
# cell after next (collapsed in the notebook).

# %%
EX_X, EX_W, EX_B = rng.standard_normal((4, 3)), rng.standard_normal((2, 3)), rng.standard_normal(2)
EX_G = rng.standard_normal((4, 2))


def expected(T):
    x, w, b = (T.tensor(a, requires_grad=True) for a in (EX_X, EX_W, EX_B))
    T.sigmoid(T.nn.functional.linear(x, w, b)).backward(T.tensor(EX_G))  # linear: x @ w.T + b
    return [w.grad, b.grad, x.grad]


# %% tags=["solution", "hide-input"]
def answer(T):
    Y = 1 / (1 + np.exp(-(EX_X @ EX_W.T + EX_B)))
    dZ = EX_G * Y * (1 - Y)  # through the sigmoid
    return [T.tensor(dZ.T @ EX_X), T.tensor(dZ.sum(0)), T.tensor(dZ @ EX_W)]


check_exercise(answer, expected)
