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
# # Performance and memory
#
# Autograd is not free. Every operation on a tensor that requires a gradient records a node of
# the graph (time), and many nodes keep tensors alive until backward needs them (memory). This
# page shows four ways to pay less:
#
# - turn recording off when you will not call backward: `no_grad` and `inference_mode`;
# - keep fewer tensors and recompute them in backward instead: activation checkpointing;
# - split a batch that does not fit into smaller ones and add up their gradients:
#   gradient accumulation;
# - compute in 16-bit floats where that is safe: mixed precision (torch only, for now).
#
# As on every page, each example is a function of `T`, the engine module. `both(fn)` runs it
# with `T = ext` (this project's engine, written in NumPy) and with `T = torch` (real PyTorch),
# prints both results and stops with an error if they disagree. A row marked `ext = torch`
# printed the same on both.

# %%
import contextlib
import time
import warnings

import numpy as np
import torch
from sidebyside import both, both_raise, check_exercise, claim, grad3, torch_only

import ext
import ext.utils.checkpoint  # `import torch` loads torch.utils.checkpoint; ext needs this line

# %% [markdown]
# Our test subject is a small multi-layer perceptron (MLP): eight `Linear(32, 32)` layers (each
# computes $h W^\top + b$ for a 32 × 32 weight matrix $W$) with a ReLU ($\max(0, \cdot)$,
# elementwise) between them, applied to a batch of 64 rows. Its weights are drawn once with
# NumPy and copied into the layers, so both engines compute with exactly the same numbers.

# %%
rng = np.random.default_rng(0)
WIDTH, BATCH, DEPTH = 32, 64, 8
WEIGHTS = [rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH) for _ in range(DEPTH)]
X = rng.standard_normal((BATCH, WIDTH))
Y = rng.standard_normal((BATCH, WIDTH))


def mlp(T):
    """DEPTH Linear layers holding the same weights on either engine (biases zero)."""
    layers = [T.nn.Linear(WIDTH, WIDTH) for _ in WEIGHTS]
    with T.no_grad():  # filling in weights is not part of any computation to differentiate
        for layer, w in zip(layers, WEIGHTS):
            layer.weight.copy_(T.tensor(w, dtype=T.float32))
            layer.bias.zero_()
    return layers


def hidden(T, layers, h):
    """Every layer but the last, each followed by ReLU."""
    for layer in layers[:-1]:
        h = T.relu(layer(h))
    return h


def mse(T, layers, h, y):
    """The last layer and a mean-squared-error loss."""
    return ((layers[-1](h) - y) ** 2).mean()


# %% [markdown]
# ## Switching recording off: `no_grad` and `inference_mode`
#
# To make predictions you need no gradients, so there is no reason to record a graph. Both
# context managers stop the recording:
#
# - under `T.no_grad()` no node is recorded and nothing is saved for backward. The results are
#   ordinary tensors: they still carry a *version counter* (a number that every in-place change
#   increases, so that autograd can notice later if a saved tensor was overwritten), and they
#   can be fed into a graph afterwards;
# - under `T.inference_mode()` even that bookkeeping is skipped. The results are *inference
#   tensors*, with no version counter, and autograd refuses to save them for a later backward.
#
# Notice in the output: no `grad_fn` in either mode, a version counter (0) under `no_grad`, and
# `is_inference()` true only under `inference_mode`.

# %%
def predictions(T):
    layers, x = mlp(T), T.tensor(X, dtype=T.float32)
    recorded = hidden(T, layers, x)
    with T.no_grad():
        plain = hidden(T, layers, x)
    with T.inference_mode():
        inference = hidden(T, layers, x)
    return {"grad on: grad_fn": recorded.grad_fn,
            "no_grad: grad_fn": plain.grad_fn,
            "no_grad: _version": plain._version,
            "no_grad: is_inference()": plain.is_inference(),
            "inference_mode: grad_fn": inference.grad_fn,
            "inference_mode: is_inference()": inference.is_inference()}


both(predictions)

# %% [markdown]
# What an inference tensor refuses, outside the `with` block: telling its version (`_version`
# is torch's name for the counter), and being saved for backward. Multiplying it by a tensor
# that requires a gradient would save it, since the gradient of $a \cdot b$ with respect to $b$
# is $a$. Both engines raise the same errors.

# %%
def inference_tensor(T):
    with T.inference_mode():
        return T.ones(3) * 2


def saved_for_backward(T):
    return inference_tensor(T) * T.ones(3, requires_grad=True)  # mul must save the first factor


both_raise(lambda T: inference_tensor(T)._version, RuntimeError)
both_raise(saved_for_backward, RuntimeError)

# %% [markdown]
# A view is a tensor that shares memory with another one (`x.view(-1)`, `x[0]`, `x.t()`).
# Views are sometimes said to be off limits in inference mode. They are not: they work, and a
# view of an ordinary tensor taken there even stays an ordinary tensor (it shares the version
# counter of the tensor it looks into).

# %%
def views_in_inference_mode(T):
    x = T.ones(2, 3)
    with T.inference_mode():
        flat, doubled = x.view(-1), x * 2
    return flat.shape == (6,) and not flat.is_inference() and doubled.is_inference()


claim("views cannot be taken inside inference_mode",
      "they can, and a view of a normal tensor taken there is a normal tensor",
      views_in_inference_mode)

# %% [markdown]
# How much time does each mode save? The next cell times 10 forward passes of the MLP in each
# mode on each engine (the best of three tries) and prints the time per forward pass. These
# numbers depend on the machine and on what else it is doing, so they are printed, never
# checked. Expect "grad on" to be the slowest; the gap between `no_grad` and `inference_mode` is
# small for a few large operations and grows with the number of small ones.

# %%
def grad_on(T):
    return contextlib.nullcontext()  # a `with` block that changes nothing


def no_grad(T):
    return T.no_grad()


def inference_mode(T):
    return T.inference_mode()


MODES = {"grad on": grad_on, "no_grad": no_grad, "inference_mode": inference_mode}


# %%
def microseconds_per_forward(T, mode, repeat=10):
    layers, x = mlp(T), T.tensor(X, dtype=T.float32)
    best = float("inf")
    for _ in range(3):  # the best of three runs: the least disturbed by other programs
        start = time.perf_counter()
        for _ in range(repeat):
            with mode(T):
                hidden(T, layers, x)
        best = min(best, (time.perf_counter() - start) / repeat)
    return best * 1e6


print(f"{'mode':<16}{'ext (µs)':>12}{'torch (µs)':>12}")
for name, mode in MODES.items():
    row = [microseconds_per_forward(T, mode) for T in (ext, torch)]
    print(f"{name:<16}{row[0]:>12.0f}{row[1]:>12.0f}")

# %% [markdown]
# ## What backward keeps: counting saved bytes
#
# In training, most memory goes to *saved tensors*: values the forward pass keeps because
# backward will need them (a `Linear` layer keeps its input, since the weight's gradient is
# built from it; ReLU keeps its result, since its derivative is 1 where the result is positive).
#
# `T.autograd.graph.saved_tensors_hooks(pack, unpack)` lets us see each one (walkthroughs 5
# and 8 used it): inside the `with` block every tensor a node saves is handed to `pack`, and
# what `pack` returns is what the graph stores (`unpack` turns it back into a tensor in
# backward). Our `pack` stores the tensor unchanged and notes its size. Two details keep the
# count honest: a tensor saved by two nodes (ReLU's result is also the next layer's input)
# counts once, and weights are left out, since the model holds them anyway. A layer's weights
# are `T.nn.Parameter`s, and a `Linear` layer saves a transposed *view* of its weight, whose
# `_base` is the weight.

# %%
def saved_bytes(T, run):
    """Run ``run()`` and return (its result, bytes of the distinct non-weight tensors it saves)."""
    kept = {}

    def pack(t):
        if not (isinstance(t, T.nn.Parameter) or isinstance(t._base, T.nn.Parameter)):
            kept[id(t)] = t  # by identity: one tensor saved by two nodes counts once
        return t

    with T.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        result = run()
    return result, sum(t.numel() * t.element_size() for t in kept.values())


# %% [markdown]
# ## Activation checkpointing
#
# *Activations* are the intermediate results of a network's layers, the bulk of what its graph
# saves. `T.utils.checkpoint.checkpoint(fn, x)` runs `fn(x)` but keeps none of the tensors
# saved inside `fn`: only its input `x`. When backward reaches that part of the graph, it runs
# `fn(x)` a second time to get them back. Memory goes down; one more forward pass of `fn` is
# the price.
#
# Below, the seven hidden layers form one checkpointed block; the last layer and the loss are
# outside it. We count the saved bytes, how many times the block ran, and the first layer's
# weight gradient. (`use_reentrant=False` is the variant torch recommends; leaving the argument
# out gives a warning.)

# %%
def train_step(T, checkpointed):
    layers = mlp(T)
    x, y = T.tensor(X, dtype=T.float32), T.tensor(Y, dtype=T.float32)
    runs = []

    def block(h):
        runs.append(1)
        return hidden(T, layers, h)

    def forward():
        if checkpointed:
            return mse(T, layers, T.utils.checkpoint.checkpoint(block, x, use_reentrant=False), y)
        return mse(T, layers, block(x), y)

    loss, nbytes = saved_bytes(T, forward)
    loss.backward()
    return {"saved bytes": nbytes, "block runs": len(runs), "grad": layers[0].weight.grad}


plain = both(lambda T: train_step(T, checkpointed=False), quiet=True)  # compared, not printed
saving = both(lambda T: train_step(T, checkpointed=True), quiet=True)
for name, result in (("without checkpoint", plain.torch), ("with checkpoint", saving.torch)):
    print(f"{name:<20} saved bytes {result['saved bytes']:>6}   block runs {result['block runs']}")
for engine in ("ext", "torch"):
    assert np.allclose(plain[engine]["grad"].numpy(), saving[engine]["grad"].numpy())
print("✓ the same gradients with and without checkpointing, on both engines")

# %% [markdown]
# Without checkpointing the graph keeps nine tensors of 64 × 32 float32 numbers (8 192 bytes
# each): the input, the seven hidden results, and the loss's difference. With the block
# checkpointed it keeps three: the block's input, its output (the last layer's input) and the
# difference. The block ran twice, and the gradients are the same.
#
# Checkpointing changes what is kept, not what is computed: gradients three ways (ext, torch,
# finite differences) through a checkpointed function.

# %%
def checkpointed_layer(T, x, w):
    def layer(a):
        return T.tanh(a @ w)
    return T.utils.checkpoint.checkpoint(layer, x, use_reentrant=False)


grad3(checkpointed_layer, rng.standard_normal((2, 3)), rng.standard_normal((3, 2)))

# %% [markdown]
# Where should the checkpoints go? A common pattern wraps each layer on its own. For a
# `Linear` layer this saves nothing: all the layer keeps is its input, and a checkpoint around
# it keeps... its input. Savings come from checkpointing a block whose *inner* results are
# dropped. Here three `Linear` layers in a chain, plain and each one checkpointed:

# %%
def chain_bytes(T, per_layer_checkpoint):
    layers, x = mlp(T)[:3], T.tensor(X, dtype=T.float32)

    def run():
        h = x
        for layer in layers:
            if per_layer_checkpoint:
                h = T.utils.checkpoint.checkpoint(layer, h, use_reentrant=False)
            else:
                h = layer(h)
        return h

    output, nbytes = saved_bytes(T, run)
    return nbytes


def same_bytes_either_way(T):
    checkpointed, plain = chain_bytes(T, True), chain_bytes(T, False)
    return checkpointed == plain and plain > 0


claim("checkpointing each Linear layer on its own keeps its activations out of memory",
      "a Linear layer saves only its input, and so does a checkpoint around it: same bytes",
      same_bytes_either_way)

# %% [markdown]
# The same pattern hides a worse trap when `use_reentrant` is left out. The default is still
# the older *reentrant* variant, which passes gradients only to the checkpoint's tensor
# arguments. Around the first layer, that argument is the data, which needs no gradient: the
# output then needs none either, and the layer's weights get no gradient at all, with nothing
# but a warning to say so.


# %%
def default_variant_starves_the_layer(T):
    first, second = mlp(T)[:2]
    x = T.tensor(X, dtype=T.float32)  # data: requires_grad=False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no use_reentrant; no input requires grad
        h = T.utils.checkpoint.checkpoint(first, x)
    second(h).sum().backward()
    return not h.requires_grad and first.weight.grad is None and second.weight.grad is not None


claim("wrapping a layer in checkpoint() only changes memory: its weights train as before",
      "by default (use_reentrant=True) on an input that needs no grad, its weights get no gradient",
      default_variant_starves_the_layer)

# %% [markdown]
# Two more rules of thumb you will meet, and what they mean. "Memory $O(\sqrt{n})$": for $n$
# layers cut into $\sqrt{n}$ checkpointed segments (what `checkpoint_sequential` does), the graph
# keeps $\sqrt{n}$ segment inputs and, during backward, one segment's inner results at a time.
# "Twice as slow": the recomputation is one extra forward pass of the checkpointed part, as the
# count of block runs showed; backward is not repeated, so a training step usually grows by far
# less than a factor of two.
#
# ## Gradient accumulation
#
# When a batch does not fit in memory, split it into micro-batches and call `backward` on each:
# `.grad` *adds* the new gradient to what is there. If the loss is a mean over the rows, the
# full batch's loss is the mean of the micro-batches' losses, so each micro-batch's loss must be
# divided by their number $k$:
#
# $$\frac{1}{N}\sum_{i=1}^{N} \ell_i = \frac{1}{k}\sum_{j=1}^{k}
#   \Big(\frac{1}{N/k}\sum_{i \in \text{batch } j} \ell_i\Big).$$
#
# Our example is a linear model with one output, $x \mapsto x \cdot w$, fitted to the first column
# of `Y`. First the gradient of its full-batch loss, three ways:

# %%
def full_batch_loss(T, w):
    return ((T.tensor(X) @ w - T.tensor(Y[:, :1])) ** 2).mean()


W0 = rng.standard_normal((WIDTH, 1)) / np.sqrt(WIDTH)
grad3(full_batch_loss, W0, quiet=True)

# %% [markdown]
# Now four micro-batches of 16 rows, with and without dividing each loss by 4:

# %%
def accumulated(T, divide):
    w = T.tensor(W0, requires_grad=True)
    for rows in np.split(np.arange(BATCH), 4):
        loss = ((T.tensor(X[rows]) @ w - T.tensor(Y[rows, :1])) ** 2).mean()
        (loss / 4 if divide else loss).backward()  # .grad adds up across the four calls
    return w.grad


def full_batch_grad(T):
    w = T.tensor(W0, requires_grad=True)
    full_batch_loss(T, w).backward()
    return w.grad


def three_gradients(T):
    return {"full batch": full_batch_grad(T), "loss / 4": accumulated(T, True),
            "no / 4": accumulated(T, False)}


grads = both(three_gradients, quiet=True)
for name, g in grads.torch.items():
    print(f"{name:<12}", np.array2string(g.numpy()[:4, 0], precision=5), "...")
for engine in ("ext", "torch"):
    g = {name: value.numpy() for name, value in grads[engine].items()}
    assert np.allclose(g["loss / 4"], g["full batch"])
    assert np.allclose(g["no / 4"], 4 * g["full batch"])
print("✓ on both engines: with / 4 the full batch's gradient, without it 4 times that")

# %% [markdown]
# Dividing by $k$ works when the micro-batches have the same size. The last one is often
# smaller (60 rows in batches of 16 give 16, 16, 16 and 12). Then each micro-batch's mean must
# be weighted by its share of the rows, $n_j / N$, instead:

# %%
def accumulated_over(T, sizes, weight):
    w, start = T.tensor(W0, requires_grad=True), 0
    for n in sizes:
        rows = slice(start, start + n)
        loss = ((T.tensor(X[rows]) @ w - T.tensor(Y[rows, :1])) ** 2).mean()
        (loss * weight(n)).backward()
        start += n
    return w.grad


def close(a, b):
    return bool(np.allclose(a.numpy(), b.numpy()))


def unequal_batches(T):
    # the third argument gives each micro-batch's weight from its number of rows n
    whole = accumulated_over(T, [60], lambda n: 1.0)
    by_count = accumulated_over(T, [16, 16, 16, 12], lambda n: 1 / 4)
    by_share = accumulated_over(T, [16, 16, 16, 12], lambda n: n / 60)
    return not close(by_count, whole) and close(by_share, whole)


claim("dividing each micro-batch's loss by their number always gives the full batch's gradient",
      "only if they all have the same size; otherwise weight each mean by its share of the rows",
      unequal_batches)

# %% [markdown]
# ## Mixed precision (torch only)
#
# **ext does not have autocast or GradScaler yet**: the cells of this section run on torch
# alone, and say so.
#
# *Mixed precision* runs some operations in a 16-bit float type: bfloat16 (8 exponent bits like
# float32, fewer digits) or float16 (5 exponent bits: tiny values underflow to 0). Inside
# `torch.autocast(device_type, dtype)`, operations that are safe and profit from it (matrix
# products) run in the low type; others (exponentials, losses, sums of many terms) stay in
# float32. The parameters themselves stay float32, and so do their gradients.

# %%
def autocast_dtypes(T):
    a = T.tensor(X[:4, :3], dtype=T.float32)
    w = T.tensor(W0[:3], dtype=T.float32, requires_grad=True)
    with T.autocast("cpu", dtype=T.bfloat16):
        product, exponential = a @ w, T.exp(a)
        loss = T.nn.functional.mse_loss(product, T.zeros(4, 1))
    loss.backward()
    return {"a @ w": product.dtype, "exp(a)": exponential.dtype, "mse_loss": loss.dtype,
            "w": w.dtype, "w.grad": w.grad.dtype}


dtypes = torch_only(autocast_dtypes, "ext has no autocast yet")

# %% [markdown]
# float16's small range is why `GradScaler` exists: it multiplies the loss by a large factor
# (65536 to start with) before backward, so that small gradients do not underflow to zero in
# float16, then divides the gradients by it before the optimizer uses them (and skips a step,
# lowering the factor, if any gradient overflowed to infinity). It works on CPU in torch 2.13.
# Here a loss scaled by $10^{-8}$ stands for a loss whose gradients are tiny:

# %%
def scaled_grads(T, use_scaler):
    w = T.tensor(W0[:3], dtype=T.float32, requires_grad=True)
    optimizer = T.optim.SGD([w], lr=0.1)
    scaler = T.amp.GradScaler("cpu", enabled=use_scaler)
    with T.autocast("cpu", dtype=T.float16):
        loss = (T.tensor(X[:4, :3], dtype=T.float32) @ w).float().sum() * 1e-8
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)  # .grad divided by the scale again
    return w.grad.flatten()


def with_and_without_scaler(T):
    return {"w.grad without scaler": scaled_grads(T, False),
            "w.grad with scaler": scaled_grads(T, True),
            "exact": T.tensor(X[:4, :3].sum(0) * 1e-8, dtype=T.float32)}


scaled = torch_only(with_and_without_scaler, "ext has no autocast or GradScaler yet")

# %% [markdown]
# Without the scaler the gradient reaching the float16 matrix product is $10^{-8}$, below
# float16's smallest positive number (about $6 \times 10^{-8}$): it becomes 0, and so does
# `w.grad`. With the scaler it is $6.6 \times 10^{-4}$ in float16, and dividing by 65536 in
# float32 gives back the right value, to the three or so digits float16 keeps. bfloat16 has
# float32's range and needs no scaler.
#
# Older code imports `autocast` and `GradScaler` from `torch.cuda.amp`. That spelling is
# deprecated (torch warns with a `FutureWarning`), and it only ever concerned CUDA tensors: on
# a machine without a GPU it switches itself off, saying so in a `UserWarning`, and the matrix
# product stays float32.

# %%
def cuda_spelling(T):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with T.cuda.amp.autocast():
            product = T.ones(2, 2) @ T.ones(2, 2)
    return {"matrix product": product.dtype, "warnings": [w.category.__name__ for w in seen]}


old_spelling = torch_only(cuda_spelling, "ext has no autocast yet")

# %% [markdown]
# ## Exercise
#
# Combine the two memory savers. Write `answer(T)`: it builds the MLP with `mlp(T)` and
# computes the gradient of its loss (`hidden` and `mse`, from the top of this page) over the
# 64 rows of `X` and `Y`, but in four micro-batches of 16 rows, with the seven hidden layers
# checkpointed in each (`checkpoint(fn, a, b, ...)` calls `fn(a, b, ...)`, so extra arguments
# such as `T` and `layers` go after `fn`). It returns the first layer's weight gradient,
# `layers[0].weight.grad`. Then run `check_exercise(answer, expected)`: `expected`, in the next
# cell, computes the gradient of one full-batch step without checkpointing, with torch's own
# `mse_loss`. The solution is in the cell after next (collapsed in the notebook).

# %%
def expected(T):
    layers = mlp(T)
    x, y = T.tensor(X, dtype=T.float32), T.tensor(Y, dtype=T.float32)
    T.nn.functional.mse_loss(layers[-1](hidden(T, layers, x)), y).backward()
    return layers[0].weight.grad


# %% tags=["solution", "hide-input"]
def answer(T):
    layers = mlp(T)
    for rows in np.split(np.arange(BATCH), 4):
        x, y = T.tensor(X[rows], dtype=T.float32), T.tensor(Y[rows], dtype=T.float32)
        h = T.utils.checkpoint.checkpoint(hidden, T, layers, x, use_reentrant=False)
        (mse(T, layers, h, y) / 4).backward()  # equal micro-batches: divide by their number
    return layers[0].weight.grad


check_exercise(answer, expected)
