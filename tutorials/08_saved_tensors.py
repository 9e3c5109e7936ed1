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
# # Saved tensors, version counters and in-place errors
#
# To compute a gradient, backward often needs values from the forward pass: the derivative of
# $x^2$ is $2x$, so the node for `x ** 2` must keep `x`; the derivative of $e^x$ is $e^x$, so the
# node for `x.exp()` keeps its result. These kept values are the **saved tensors**.
#
# If a saved tensor is overwritten in place (`add_`, `mul_`, `t[i] = ...`) before backward
# runs, the gradient would silently use the wrong numbers. Both engines prevent that with a
# **version counter** on every tensor. This page shows:
#
# 1. what a node saves, and how to look at it (`_saved_self`, `_saved_result`, ...);
# 2. `_version`, the count of in-place writes, and the error it makes possible;
# 3. which in-place operations are refused at once (on leaves) and how in-place writes into a
#    view are recorded (`CopySlices`);
# 4. saved-tensor hooks, which let you decide how saved tensors are stored.

# %%
import numpy as np
from sidebyside import both, both_raise, caught, check_exercise, claim, grad3, graphs, torch_only

# %% [markdown]
# ## What a node saves
#
# Each node exposes what it saved as attributes whose names start with `_saved_`: `_saved_self`
# for the input the operation was called on, `_saved_other` for a second operand,
# `_saved_result` for its own output, and non-tensor values too (an exponent, a dimension, a
# shape).

# %%
def saved_fields(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    nodes = {"x ** 3": (x ** 3).grad_fn, "x * x": (x * x).grad_fn,
             "x.exp()": x.exp().grad_fn, "x.sum(0)": x.sum(0).grad_fn}
    return {f"{expr}: {node.name()}": [a for a in dir(node) if a.startswith("_saved_")]
            for expr, node in nodes.items()}


both(saved_fields)

# %% [markdown]
# `PowBackward0` keeps `x` and the exponent 3 (for $3x^2$); `MulBackward0` keeps both factors;
# `ExpBackward0` keeps only its result; `SumBackward1` keeps no tensor at all, only the
# dimension and the input's shape, which is all it needs to spread the gradient back out.
#
# A saved *input* is the very same Python object as the input. A saved *output* is not: a node
# that held its own output would make a reference cycle (output → node → output; see
# walkthrough 5), so the node keeps only the values and builds a new tensor, with the
# same values and `grad_fn`, each time you read it.

# %%
def saved_identity(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.pow(2)
    e = x.exp()
    result = e.grad_fn._saved_result
    return {"y.grad_fn._saved_self is x": y.grad_fn._saved_self is x,
            "y.grad_fn._saved_exponent": y.grad_fn._saved_exponent,
            "e.grad_fn._saved_result is e": result is e,
            "... equal to e": bool(result.equal(e)),
            "... its grad_fn": result.grad_fn}


both(saved_identity)

# %% [markdown]
# ## The version counter
#
# Every tensor has `_version`, a number that starts at 0 and goes up by one with each in-place
# write. A view (a slice, a reshape, a transpose) shares the counter of the tensor it looks
# into, because a write through either changes the same memory. An ordinary operation makes a
# new tensor, with its own counter at 0.

# %%
def versions(T):
    x = T.zeros(4)
    seen = {"new": x._version}
    x.add_(1)
    seen["after x.add_(1)"] = x._version
    x[0] = 5.0
    seen["after x[0] = 5."] = x._version
    v = x[1:3]          # a view of x
    v.mul_(2)
    seen["after v.mul_(2): x"] = x._version
    seen["after v.mul_(2): v"] = v._version
    seen["y = x + 1: y"] = (x + 1)._version
    return seen


both(versions)

# %% [markdown]
# ## The error: a saved tensor changed before backward
#
# When a node saves a tensor it also writes down the tensor's version. When backward unpacks it,
# the versions are compared; if they differ the tensor was overwritten, and backward stops
# instead of computing a wrong gradient. Here `y * y` saves `y` (at version 0), then `y.add_(1)`
# overwrites it:

# %%
def modified_after_saving(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    z = y * y          # saves y, at version 0
    y.add_(1)          # y is now at version 1
    z.sum().backward()


both_raise(modified_after_saving, RuntimeError)

# %% [markdown]
# Read the message piece by piece: `[ext.FloatTensor [3]]` (torch writes `torch.FloatTensor`) is
# the saved tensor, by type and shape; `is at version 1; expected version 0` is the mismatch.
# (The hint at the end, anomaly detection, is a tool of walkthrough 13.)
# And `which is output 0 of Add`? An in-place operation on a tensor that has a history is itself
# recorded: it gives the tensor a new `grad_fn`, whose next node is the old one. So `y`'s
# creator is now the in-place add:

# %%
def inplace_replaces_grad_fn(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    before = y.grad_fn
    y.add_(1)
    return {"before": before, "after": y.grad_fn,
            "after.next_functions[0][0]": y.grad_fn.next_functions[0][0]}


both(inplace_replaces_grad_fn)

# %% [markdown]
# Saved outputs are checked the same way. `exp` saved its result, so changing the result in
# place breaks its own backward:

# %%
def modified_output(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()        # ExpBackward0 saves y
    y.add_(1)
    y.sum().backward()


both_raise(modified_output, RuntimeError)

# %% [markdown]
# The check is precise: only tensors that were saved are checked. Below, `x * 3` saves only the
# number 3 (the derivative of $3x$ is 3 whatever $x$ is) and not its result `g`, so overwriting
# `g` is harmless; `sin` then saves `g` as it is after the write. The gradient is right, as
# the three-way check shows (ext, torch, finite differences):

# %%
def harmless_inplace(T, x):
    g = x * 3
    g.add_(1)          # nothing saved g: fine
    return g.sin()     # sin saves g as it is now (version 1)


grad3(harmless_inplace, np.array([0.1, 0.5, 1.0]))

# %% [markdown]
# ## In-place on a leaf that requires grad
#
# A leaf that requires grad (a tensor you created with `requires_grad=True`, such as a model's
# weight) may not be changed in place while gradients are being recorded, whether or not
# anything saved it. The engine refuses the operation itself:

# %%
def leaf_inplace(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x + 2
    x.add_(1)
    y.backward()


both_raise(leaf_inplace, RuntimeError)

# %% [markdown]
# It is often said that this fails later, at `backward()`. It does not: the exception comes from
# `x.add_(1)`, before `backward()` is ever reached, and `x` is left unchanged.

# %%
def fails_at_the_inplace_op(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x + 2
    try:
        x.add_(1)
    except RuntimeError:
        y.backward()   # the graph is intact: backward still works
        return x.item() == 1.0 and x._version == 0 and x.grad.item() == 1.0
    return False


claim("changing a leaf that requires grad in place raises at backward()",
      "the in-place call itself raises, x stays unchanged and backward still works",
      fails_at_the_inplace_op)

# %% [markdown]
# To change a leaf on purpose, as an optimizer does when it updates weights, do it where nothing
# is recorded, under `T.no_grad()`. The version still counts the write:

# %%
def update_under_no_grad(T):
    w = T.tensor([1.0, 2.0], requires_grad=True)
    with T.no_grad():
        w.sub_(0.5)
    return {"w": w, "w._version": w._version}


both(update_under_no_grad)

# %% [markdown]
# Such a write breaks only the graphs that saved the leaf. In the example above, `y = x + 2`
# saved nothing (the derivative of an addition does not depend on its inputs), so after `x` is
# changed under `no_grad`, `y.backward()` still runs; `x * x`, which saved `x`, fails the
# version check.


# %%
def only_saved_tensors_are_checked(T):
    x = T.tensor([1.0], requires_grad=True)
    added, squared = x + 2, x * x  # x * x saves x; x + 2 saves nothing
    with T.no_grad():
        x.add_(1)
    added.backward()
    error = caught(squared.backward)  # the error raised, as text (None if none)
    return x.grad.item() == 1.0 and error is not None and "inplace operation" in error


claim("once x has been changed in place, backward through y = x + 2 fails the version check",
      "only saved tensors are checked: x + 2 saved none, so it runs; x * x saved x and raises",
      only_saved_tensors_are_checked)

# %% [markdown]
# Back with grad mode on, writing into a slice of such a leaf is refused too: the slice is a
# view of the leaf, and the message says so.

# %%
def write_into_a_leaf_slice(T):
    w = T.tensor([1.0, 2.0], requires_grad=True)
    w[0] = 5.0


both_raise(write_into_a_leaf_slice, RuntimeError)

# %% [markdown]
# ## In-place on a view: `CopySlices`
#
# A write into a view of a tensor that is *not* a leaf is allowed, and it changes the base
# tensor as well. The engine records it on the **base**: its `grad_fn` becomes `CopySlices`,
# which routes the gradient of the written slice through the in-place operation and the rest
# straight through. The view gets a fresh `grad_fn` (`AsStridedBackward0`) that reads its part of
# the base. A view's `_base` attribute is the tensor it looks into.

# %%
def write_into_a_view(T):
    a = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    b = a.clone()      # a copy made by an operation: not a leaf, so in-place is allowed
    view = b[1:3]      # a view into b
    view.mul_(2)
    b.sum().backward()
    return {"b": b.detach(), "b.grad_fn": b.grad_fn.name(), "view._base is b": view._base is b,
            "view.grad_fn": view.grad_fn, "a.grad": a.grad}


both(write_into_a_view)

# %% [markdown]
# `a.grad` is `[1, 2, 2, 1]`: the two middle elements were doubled, so their gradient is 2.
# (The name prints as `ext::autograd::CopySlices` on ext and `torch::autograd::CopySlices` on
# torch: the node is written by hand in both engines, not generated like `MulBackward0`.)
#
# When the value written into the slice itself comes from other tensors, `CopySlices` has two
# inputs: the old base and the new value.

# %%
def slice_assignment(T):
    a = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    c = T.tensor([5.0, 6.0], requires_grad=True)
    b = a.clone()
    b[1:3] = c * 3
    return b.sum(), {"a": a, "c": c}


graphs(slice_assignment)

# %% [markdown]
# (In a notebook the two engines' pictures are drawn side by side; run as a script, each node is
# listed with the nodes that feed it.) The gradients of such a program, three ways: the slice
# `b[1:3]` is overwritten with $e^c$, then everything is squared.


# %%
def slice_then_square(T, a, c):
    b = a * 1.0  # a non-leaf copy of a (a leaf that requires grad may not be written into)
    b[1:3] = c.exp()
    return b * b


grad3(slice_then_square, np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, -0.5]))

# %% [markdown]
# The overwritten elements of `a` get gradient 0: they no longer reach the output.
#
# ## Saved-tensor hooks: deciding how saved tensors are kept
#
# `T.autograd.graph.saved_tensors_hooks(pack, unpack)` is a `with` block. Inside it, every time
# a node saves a tensor `t`, the engine calls `pack(t)` and keeps whatever `pack` returns
# instead of `t`. When backward needs the tensor, it calls `unpack(that)`, which must give a
# tensor back. So pack runs during forward, unpack during backward.
#
# A first use: keep saved tensors in half precision (float16, 2 bytes per number instead of 4)
# and convert them back when they are needed. We log each call to see when it happens.

# %%
def half_precision_saves(T):
    log = []

    def pack(t):
        log.append(f"pack {t.dtype} {tuple(t.shape)}")
        return t.to(T.float16), t.dtype       # what the node keeps: a float16 copy

    def unpack(packed):
        low, dtype = packed
        log.append(f"unpack {low.dtype}")
        return low.to(dtype)

    x = T.tensor([0.1, 0.2, 0.3], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x * x).sin()                     # mul saves x twice, sin saves x * x
    log.append("forward done")
    (grad_half,) = T.autograd.grad(y.sum(), x)
    (grad_exact,) = T.autograd.grad((x * x).sin().sum(), x)   # the same, without hooks
    return {"log": log, "gradient (float16 saves)": grad_half, "gradient (exact)": grad_exact,
            "largest difference": (grad_half - grad_exact).abs().max()}


both(half_precision_saves)

# %% [markdown]
# Three packs during forward, three unpacks during backward (`T.autograd.grad` runs backward and
# returns the gradient instead of storing it in `x.grad`, as in walkthrough 6). The gradient
# carries float16's rounding error, about $10^{-4}$ here: the price of halving the memory.
# `ext.hooks.compress_saved_tensors("fp16")` packages this pair of hooks.
#
# A pack hook can return anything, not only a tensor. Here it files each saved tensor in a
# dict and gives the graph only the key, as a tool that moves saved tensors to another device or
# to disk would:

# %%
def saved_in_a_dict(T):
    store = {}

    def pack(t):
        key = f"saved{len(store)}"
        store[key] = t
        return key                              # the graph holds only this string

    x = T.tensor([0.5, 1.0, 1.5], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(pack, lambda key: store[key]):  # unpack: look up
        y = x.exp().pow(2).sum()              # exp saves its result, pow saves its input
    y.backward()
    expected = 2 * (2 * x.detach()).exp()     # d/dx of e^(2x)
    return {"what the graph kept": sorted(store), "x.grad": x.grad, "expected": expected}


both(saved_in_a_dict)

# %% [markdown]
# torch also has a ready-made pair, `save_on_cpu`, that moves saved tensors from the GPU to main
# memory and back. ext has no devices (everything lives in NumPy arrays), so it has no
# `save_on_cpu`; on a CPU-only torch it changes nothing:

# %%
def on_cpu(T):
    x = T.tensor([0.5, 1.0, 1.5], requires_grad=True)
    with T.autograd.graph.save_on_cpu():
        y = x.exp().pow(2).sum()
    y.backward()
    return x.grad


offloaded = torch_only(on_cpu, "ext has no devices, so it has no save_on_cpu")

# %% [markdown]
# ## Exercise
#
# Predict `x._version` (and `v._version`, `y._version`) at each step of this program, then
# check. Three things to think about: a view shares the counter with its base; `detach()` makes
# a tensor that shares memory *and* the counter; `.data` (an older way to reach a tensor's
# values outside autograd) shares memory but **not** the counter, which is why writes through
# `.data` escape the check above. And is `x += 1` in place?
#
# ```python
# x = T.zeros(4)
# x.add_(1)                      # step "add_"
# x[0] = 5.0                     # step "setitem"
# v = x[1:3]; v.mul_(2)          # steps "view: x", "view: v"
# d = x.detach(); d.zero_()      # step "detach"
# x.data.add_(1)                 # step ".data"
# y = x + 1                      # step "y"
# x += 1                         # step "+="
# x = x * 2                      # step "x = x * 2"
# ```
#
# At each step, the version to predict is that of `x` (for the step "view: v", of `v`; for the
# step "y", of `y`). Write your predictions as a dict from the step names above to numbers,
# `prediction = {"add_": ..., "setitem": ..., ...}`, and run
# `check_exercise(answer, actual_versions)`: the next cell runs the program on both engines and
# reads the versions. The solution is in the cell after next (collapsed in the notebook).

# %%
def actual_versions(T):
    seen = {}
    x = T.zeros(4)
    x.add_(1)
    seen["add_"] = x._version
    x[0] = 5.0
    seen["setitem"] = x._version
    v = x[1:3]
    v.mul_(2)
    seen["view: x"], seen["view: v"] = x._version, v._version
    x.detach().zero_()
    seen["detach"] = x._version
    x.data.add_(1)
    seen[".data"] = x._version
    seen["y"] = (x + 1)._version
    x += 1
    seen["+="] = x._version
    x = x * 2
    seen["x = x * 2"] = x._version
    return seen


def answer(T):
    return prediction  # your dict


# %% tags=["solution", "hide-input"]
prediction = {
    "add_": 1,           # one in-place write
    "setitem": 2,        # t[i] = ... is an in-place write too
    "view: x": 3,        # the view shares x's counter ...
    "view: v": 3,        # ... so both read 3
    "detach": 4,         # detach() shares the counter
    ".data": 4,          # .data does not: the write goes unnoticed
    "y": 0,              # x + 1 is a new tensor
    "+=": 5,             # on a tensor, += is in place (it calls add_)
    "x = x * 2": 0,      # the name x now points at a new tensor
}
check_exercise(answer, actual_versions)
