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
# # Memory: how a graph is freed
#
# Every operation on a tensor that requires grad adds a node to the backward graph, and many
# nodes keep tensors alive for the backward pass ("saved tensors": $x$ for $x^2$, the result for
# $e^x$). In a training loop that graph is built and thrown away thousands of times, so *when*
# its memory comes back matters.
#
# This page shows:
#
# 1. how a naive graph design makes reference cycles, which only Python's cyclic garbage
#    collector can free;
# 2. how a weak reference breaks the cycle (the fix DeZero, the teaching framework of the
#    previous walkthrough, uses);
# 3. that in ext and in torch a graph is freed the moment its last tensor goes;
# 4. that backward frees the saved tensors, unless you pass `retain_graph=True`.

# %%
import gc
import warnings
import weakref

import numpy as np
from sidebyside import ENGINES, both, both_raise, caught, check_exercise, claim, grad3

import ext.hooks

# %% [markdown]
# ## Two ways Python frees an object
#
# - **Reference counting.** Every object counts the references to it. When the count drops to
#   zero (the last variable, list entry or attribute pointing at it goes), the object is freed
#   at once.
# - **The cyclic garbage collector** (the `gc` module). Objects that point at each other in a
#   circle keep each other's counts above zero forever, even when nothing else can reach them.
#   The collector finds such groups now and then, not at once: it runs when enough new objects
#   have been created since its last run.
#
# The collector sorts objects into three *generations* by age (no relation to DeZero's
# generation numbers of the previous walkthrough). Generation 0 holds the objects
# created since its last run; `gc.get_threshold()` says how many new objects (lists, dicts,
# instances: anything that can hold references) trigger a collection of it, and `gc.get_count()`
# how far along that count is now. The other two numbers are for the older generations, which
# are collected more rarely still.

# %%
print("threshold:", gc.get_threshold(), " count now:", gc.get_count())

# %% [markdown]
# ## A graph with a cycle
#
# Here is the smallest graph engine that makes the mistake: a `Variable` remembers the function
# that created it (`creator`, needed to walk the graph backwards), and the function remembers
# its inputs and its outputs. The output points at its creator, and the creator points back at
# the output: a cycle.

# %%
class Variable:
    """A value, and the function that produced it (None for an input)."""

    def __init__(self, data):
        self.data = data
        self.creator = None


class Square:
    """y = x ** 2, remembering its inputs and outputs for a later backward pass."""

    def __call__(self, x):
        y = Variable(x.data ** 2)
        y.creator = self      # output -> creator
        self.inputs = [x]
        self.outputs = [y]    # creator -> output: the cycle closes here
        return y


# %% [markdown]
# To see when `y` is freed we attach a `weakref.finalize` callback to it: it runs the moment the
# object is destroyed, and it does not keep the object alive itself. We switch the collector off
# (`gc.disable()`) while we watch, so that only reference counting can free anything; then we
# run the collector by hand. `gc.collect(0)` collects generation 0 and returns how many
# unreachable objects it found. Our fresh graph lives in generation 0, and looking only there is
# much faster than a full `gc.collect()` in a process that has imported torch.

# %%
def watch_naive(square_class):
    """Build y = x**2, drop y, and record when y is freed: by `del` or by the collector."""
    events = []
    gc.collect(0)
    gc.disable()  # only reference counting may free things until we collect by hand
    try:
        y = square_class()(Variable(np.ones(1000)))
        weakref.finalize(y, events.append, "y freed")
        del y
        events.append("del y done")
        found = gc.collect(0)
        events.append(f"gc.collect(0) found {found} unreachable objects")
    finally:
        gc.enable()
    return events


naive = watch_naive(Square)
print(naive)
assert naive[0] == "del y done" and naive[1] == "y freed"

# %% [markdown]
# Notice the order: `del y` did **not** free `y` (nor its 8 KB array); only the collector did,
# when we ran it. The objects it found are the cycle and what hangs off it: among them `y`, the
# `Square`, its two lists and the input `Variable`. Without our manual collection, all of them
# would have waited until the collector happened to run. With many large graphs per second,
# that is memory you do not control.
#
# ## Breaking the cycle with a weak reference
#
# A `weakref.ref(obj)` points at an object without counting as a reference; calling it returns
# the object, or `None` once the object is gone. DeZero's fix is to keep the outputs weakly:
# the function still finds its output during backward (`self.outputs[0]()`), but no longer keeps
# it alive.

# %%
class WeakSquare(Square):
    """The same function, keeping only weak references to its outputs."""

    def __call__(self, x):
        y = super().__call__(x)
        self.outputs = [weakref.ref(y)]  # backward calls self.outputs[0]() to get y
        return y


fixed = watch_naive(WeakSquare)
print(fixed)
assert fixed == ["y freed", "del y done", "gc.collect(0) found 0 unreachable objects"]

# %% [markdown]
# Now `y` is freed by `del y` itself, before the next line runs, and the collector finds
# nothing.
#
# ## ext and torch: no cycle to break
#
# ext and torch avoid the cycle by design rather than with weak references. A node holds edges
# to the nodes of its *inputs* (`next_functions`), never to its outputs. A node that saves its own
# output (like `ExpBackward0`, which saves $e^x$) stores the values without the link back to
# the node, and rebuilds a tensor when backward asks for it. So every arrow points from the
# output towards the inputs, and reference counting alone frees a graph.
#
# To watch it happen we need something both engines let us weakly reference. Nodes will not
# do: torch's are C++ objects that refuse weak references (ext's happen to accept them).

# %%
def try_weakref(obj):
    """'works' if obj accepts a weak reference, else the error it raised, as text."""
    error = caught(lambda: weakref.ref(obj))  # caught: the error raised as text, or None
    return "works" if error is None else error


for name, T in ENGINES.items():
    y = T.tensor([1.0], requires_grad=True).exp()
    print(f"{name:5}  weakref to a node: {try_weakref(y.grad_fn)};  to a tensor: {try_weakref(y)}")

# %% [markdown]
# Tensors accept them on both. So we watch `h`, an intermediate tensor that the graph saved:
# `h * h` saves `h` twice, to compute $\partial (h h)/\partial h = 2h$ later.

# %%
def refcount_only(program):
    """``program`` (a function of T that returns a dict), changed to run with the cyclic
    collector off and to add to its dict what the collector then finds."""
    def run(T):
        gc.collect(0)
        gc.disable()
        try:
            result = program(T)
            return {**result, "gc.collect(0) finds": gc.collect(0)}
        finally:
            gc.enable()
    return run


def drop_the_graph(T):
    events = []
    x = T.tensor(np.linspace(0.0, 1.0, 5), requires_grad=True)
    h = x.sin()
    weakref.finalize(h, events.append, "h freed")
    y = (h * h).sum()
    del h
    events.append("del h done")  # the graph still holds h
    del y
    events.append("del y done")  # the graph went with y, and h with it
    return {"events": events}


both(refcount_only(drop_the_graph))

# %% [markdown]
# Read the events in order: after `del h` the tensor is still alive, because `y`'s graph saved
# it. `del y` drops the last reference to the graph; its nodes are freed by reference counting,
# and `h` with them, before `"del y done"` is recorded. The collector finds nothing.
#
# The same holds for a long chain: a thousand nodes, forward and backward, and nothing left for
# the collector.

# %%
def long_chain(T):
    x = T.tensor(np.linspace(0.1, 1.0, 4), requires_grad=True)
    y = x
    for _ in range(1000):
        y = y + 0.001 * y.sin()
    y.sum().backward()
    return {"x.grad": x.grad}


both(refcount_only(long_chain))

# %% [markdown]
# ## Backward frees the saved tensors
#
# You do not have to drop the graph to get most of its memory back. The saved tensors are
# needed only by backward, so by default **backward frees them as it goes**. The graph's nodes
# stay (you can still read `y.grad_fn`), but their saved tensors are gone.
#
# Let us measure how much a graph saves. `T.autograd.graph.saved_tensors_hooks(pack, unpack)`
# calls `pack(t)` for each tensor as it is saved, and `unpack(...)` when backward needs it back.
# Our `pack` notes the bytes and hands the tensor on unchanged; our `unpack`, `lambda t: t`,
# gives it back as it is.

# %%
def saved_then_backward(T):
    saved = []

    def pack(t):
        saved.append(t.numel() * t.element_size())  # bytes of this saved tensor
        return t

    events = []
    x = T.tensor(np.linspace(0.0, 1.0, 1000), requires_grad=True)  # float64: 8000 bytes
    with T.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        h = x.sin()
        y = (h * h).sum()
    weakref.finalize(h, events.append, "h freed")
    del h
    y.backward()
    events.append("backward done")
    return {"bytes saved": sum(saved), "events": events, "y.grad_fn": y.grad_fn}


both(refcount_only(saved_then_backward))

# %% [markdown]
# 24 000 bytes: `sin` saved `x` (to compute $\cos x$ in backward) and `h * h` saved `h` twice,
# three tensors of 1000 float64 numbers. (Saving the same tensor twice costs its memory once;
# the counter adds up what was saved, not distinct storage.) Notice that `h` was freed *during*
# `y.backward()`, while `y` and its node `SumBackward0` are still alive.
#
# Because the saved tensors are gone, a second backward through the same graph has nothing to
# work with, and both engines refuse it with the same message:

# %%
def backward_twice(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = (x.sin() * x.sin()).sum()
    y.backward()
    y.backward()


both_raise(backward_twice, RuntimeError)

# %% [markdown]
# Reading a saved tensor after backward (`grad_fn._saved_self` is how you look at one, as in
# walkthrough 3) fails with the same error:

# %%
def read_after_backward(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x.pow(2)
    y.sum().backward()
    return y.grad_fn._saved_self


both_raise(read_after_backward, RuntimeError)

# %% [markdown]
# A graph that saved nothing can be walked again: `(x + 1).sum()` needs no saved value (the
# derivative of $x + 1$ is 1 whatever $x$ is), so a second backward just adds the gradient again.

# %%
def nothing_saved(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    return x.grad


both(nothing_saved)

# %% [markdown]
# So "backward frees the graph" is shorthand. Backward without `retain_graph` releases what the
# nodes saved, not the nodes: they stay reachable from `y.grad_fn`, edges and all, until the
# last reference to the graph goes (as in the previous section).


# %%
def nodes_survive_backward(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x.pow(2).sum()
    pow_node = y.grad_fn.next_functions[0][0]
    y.backward()
    saved_gone = caught(lambda: pow_node._saved_self) is not None
    return (y.grad_fn.name() == "SumBackward0" and y.grad_fn.next_functions[0][0] is pow_node
            and pow_node.next_functions[0][0].variable is x and saved_gone)


claim("backward without retain_graph=True frees the graph's nodes",
      "it frees only what the nodes saved; the nodes and their edges stay while y is alive",
      nodes_survive_backward)

# %% [markdown]
# ## `retain_graph=True` keeps them
#
# Pass `retain_graph=True` and backward leaves the saved tensors in place, so you can call it
# again. The gradients of the two calls add up in `x.grad` (each backward adds to `.grad`
# rather than replacing it, the subject of the next walkthrough: $2 \cdot 2x = 4x$ for
# $y = x^2$), and the saved tensor lives on until the graph goes.

# %%
def retained(T):
    events = []
    x = T.tensor([1.0, 3.0], requires_grad=True)
    h = x * 1.0
    weakref.finalize(h, events.append, "h freed")
    y = (h * h).sum()
    del h
    y.backward(retain_graph=True)
    events.append("first backward done")
    y.backward()
    events.append("second backward done")
    return {"x.grad": x.grad, "events": events}


both(refcount_only(retained))

# %% [markdown]
# `h` survived the first backward (it was retained) and was freed by the second, which did not
# ask to retain anything. So `retain_graph=True` is a promise about *that* call only. A third
# call after that would fail, which is easy to get wrong:

# %%
def third_backward_raises(T):
    x = T.tensor([1.0], requires_grad=True)
    y = x ** 2
    y.backward(retain_graph=True)
    y.backward()          # frees the saved tensors
    try:
        y.backward()
    except RuntimeError as e:
        return "backward through the graph a second time" in str(e)
    return False


claim("once a backward used retain_graph=True, the graph stays usable for any later calls",
      "retain_graph applies to one call; the next plain backward frees the graph, and a third "
      "backward raises",
      third_backward_raises)

# %% [markdown]
# All this freeing never changes the numbers. Here is the gradient of `x.sin() * x.sin()` (the
# program we tried to run backward twice) computed by ext, by torch and by finite differences,
# with an upstream gradient that is not all ones:

# %%
def sin_squared(T, x):
    return x.sin() * x.sin()


grad3(sin_squared, np.array([0.3, 1.0, 2.0]))

# %% [markdown]
# ## Intermediate gradients are not kept either
#
# A from-scratch engine often stores a `.grad` on every variable it passes through during
# backward, and then needs a flag to clear those intermediate gradients to save memory. ext and
# torch never store them: only leaves that require grad (like `x`) get `.grad`. Reading
# `.grad` of an intermediate tensor gives `None` and a warning; call `retain_grad()` on it before
# backward if you do want it.

# %%
def intermediate_grad(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    h = x.sin()
    kept = x.cos()
    kept.retain_grad()
    (h * kept).sum().backward()
    with warnings.catch_warnings(record=True) as caught_warnings:
        warnings.simplefilter("always")
        h_grad = h.grad
    return {"h.grad": h_grad, "warning": str(caught_warnings[0].message).split(". ")[0],
            "kept.grad": kept.grad, "x.grad": x.grad}


both(intermediate_grad)

# %% [markdown]
# ## A ready-made meter, and what `no_grad` saves
#
# `ext.hooks.SavedTensorMeter` is the counting hook above, packaged: it records every save
# (on ext tensors and on torch tensors), and `by_node(output)` says which node saved what. Under
# `T.no_grad()` no graph is built, so nothing is saved at all: this is why inference code runs
# in `no_grad`.

# %%
def meter(T):
    x = T.tensor(np.ones((4, 3)), requires_grad=True)
    w = T.tensor(np.ones((3, 2)), requires_grad=True)
    with ext.hooks.SavedTensorMeter() as training:
        y = (x @ w).tanh().sum()
    with ext.hooks.SavedTensorMeter() as inference, T.no_grad():
        (x @ w).tanh().sum()
    return {"bytes by node": training.by_node(y), "bytes under no_grad": inference.total_bytes}


both(meter)

# %% [markdown]
# `MmBackward0` keeps both matrices (96 + 48 bytes: the gradient of each factor needs the
# other), `TanhBackward0` its result (64 bytes, since $\tanh' = 1 - \tanh^2$), and `SumBackward0`
# keeps only a shape, no tensor.
#
# ## Exercise
#
# `x` and `w` are float32 tensors of 100 elements each (a float32 number takes 4 bytes).
# Predict how many bytes each of these programs saves for backward, counting a tensor each time
# a node saves it, as `SavedTensorMeter` does:
#
# - `a`: `(x.exp() * w).sum()` with both `x` and `w` requiring grad;
# - `b`: the same, with only `x` requiring grad (hint: a factor is saved only when it is
#   needed for the *other* factor's gradient);
# - `c`: `(x.sigmoid() * x).sum()` with `x` requiring grad.
#
# Write your numbers as a dict, `prediction = {"a": ..., "b": ..., "c": ...}`, then run
# `check_exercise(answer, measured_bytes)`: the next cell measures the three programs with the
# meter, on both engines. The solution is in the cell after next (collapsed in the notebook).

# %%
def measured_bytes(T):
    programs = {"a": (True, lambda x, w: (x.exp() * w).sum()),
                "b": (False, lambda x, w: (x.exp() * w).sum()),
                "c": (False, lambda x, w: (x.sigmoid() * x).sum())}
    result = {}
    for name, (w_requires_grad, program) in programs.items():
        x = T.ones(100, requires_grad=True)
        w = T.ones(100, requires_grad=w_requires_grad)
        with ext.hooks.SavedTensorMeter() as m:
            program(x, w)
        result[name] = m.total_bytes
    return result


def answer(T):
    return prediction  # your dict


# %% tags=["solution", "hide-input"]
# A float32 number is 4 bytes, so a saved 100-element tensor costs 400 bytes.
# a: exp saves its result (400); mul saves both factors (800); sum saves only a shape.
# b: exp still saves its result; mul saves w (needed for d/d exp(x)) but not exp(x), since w
#    needs no gradient (400).
# c: sigmoid saves its result (400); mul saves both factors (800).
prediction = {"a": 1200, "b": 800, "c": 1200}
check_exercise(answer, measured_bytes)
