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
# # Anatomy of the graph
#
# When you compute with a tensor that requires a gradient, every result remembers how it was
# made. Calling `.backward()` on the final result later fills in `.grad` on the tensors you
# started from. This page opens that memory and looks at its parts from plain Python:
# `grad_fn`, `next_functions`, `AccumulateGrad`, the tensors a node saves for later, and the
# flags `requires_grad` and `is_leaf`.
#
# Every example is a small function of `T`, the engine module. The helper `both(fn)` runs it
# twice, with `T = ext` (this project's autograd engine, written in NumPy) and with
# `T = torch` (real PyTorch), prints both results and stops with an error if they disagree.
# A row marked `ext = torch` printed the same on both.

# %%
import warnings

import numpy as np
from sidebyside import both, both_raise, both_warn, check_exercise, claim, grad3, graphs

# %% [markdown]
# ## A puzzle to start
#
# Three numbers `a`, `b`, `d` that require gradients, and $e = (a + b)\,d$. We call a method on
# `e`, and `a` changes: `a.grad` becomes $\partial e / \partial a = d = 4$. In ordinary
# object-oriented code, changing `a` needs a reference to `a`. So `e` must hold a path of
# references that leads back to `a`. The rest of this page finds that path.


# %%
def first_graph(T):
    a = T.tensor(2.0, requires_grad=True)
    b = T.tensor(3.0, requires_grad=True)
    d = T.tensor(4.0, requires_grad=True)
    c = a + b
    e = c * d
    return a, b, c, d, e


def puzzle(T):
    a, b, c, d, e = first_graph(T)
    e.backward()
    return {"e": e, "a.grad": a.grad, "b.grad": b.grad, "d.grad": d.grad}


both(puzzle)

# %% [markdown]
# Notice `grad_fn=<MulBackward0>` in the printout of `e`: that is the start of the path.
#
# ## `grad_fn`: the node that made a tensor
#
# Every tensor computed from something that requires a gradient has a `grad_fn`: an object
# (a *node* of the graph) that knows how to run its operation's derivative backwards. Its class
# is named after the operation, and `name()` gives the same name as a string.


# %%
def grad_fns(T):
    a, b, c, d, e = first_graph(T)
    return {"e.grad_fn": e.grad_fn, "type(e.grad_fn).__name__": type(e.grad_fn).__name__,
            "e.grad_fn.name()": e.grad_fn.name(), "c.grad_fn": c.grad_fn,
            "a.grad_fn": a.grad_fn}


both(grad_fns)

# %% [markdown]
# `a` has no `grad_fn`: we made it ourselves, nothing computed it. The `0` in `AddBackward0`
# numbers the variants of one operation (`x.sum()` gives `SumBackward0`, `x.sum(0)` gives
# `SumBackward1`); it does not count anything in your program.
#
# ## `next_functions`: the edges
#
# A node points to the nodes of its inputs through `next_functions`: a tuple with one pair
# `(node, input_nr)` per input of the operation, in the order of the arguments.


# %%
def edges_of_e(T):
    a, b, c, d, e = first_graph(T)
    first, second = e.grad_fn.next_functions
    return {"e.grad_fn.next_functions": e.grad_fn.next_functions,
            "first[0] is c.grad_fn": first[0] is c.grad_fn}


both(edges_of_e)

# %% [markdown]
# What to notice: the first edge of `e`'s node *is* `c.grad_fn` (the same object), because
# `c` was the first argument of `*`. The second argument, `d`, was made by us, and its edge
# goes to an `AccumulateGrad` node.
#
# The addresses (`0x7f...`) change on every run and make long lines, so from here on the small
# function `edges` writes each node as its name. One name is trimmed: the leaf node's
# `name()` is `torch::autograd::AccumulateGrad` on torch and `ext::autograd::AccumulateGrad`
# on ext.


# %%
def short_name(node):
    return node.name().rsplit("::", 1)[-1]


def edges(node):
    """node.next_functions with each node written as its name."""
    return tuple((None if nxt is None else short_name(nxt), input_nr)
                 for nxt, input_nr in node.next_functions)


def edges_of_c(T):
    a, b, c, d, e = first_graph(T)
    return {"edges(c.grad_fn)": edges(c.grad_fn)}


both(edges_of_c)

# %% [markdown]
# Both edges of `c`'s node go to `AccumulateGrad` nodes too, one for `a` and one for `b`.
#
# ## `AccumulateGrad`: where a leaf's gradient lands
#
# A tensor that requires a gradient and that no operation made (a *leaf*, more below) is
# represented in the graph by an `AccumulateGrad` node. It has no edges of its own, and its
# attribute `variable` is the leaf itself: the same Python object, not a copy.


# %%
def accumulator(T):
    a, b, c, d, e = first_graph(T)
    acc = c.grad_fn.next_functions[0][0]
    return {"acc.name()": acc.name(), "edges(acc)": edges(acc),
            "acc.variable": acc.variable, "acc.variable is a": acc.variable is a,
            "id(acc.variable) == id(a)": id(acc.variable) == id(a),
            "another graph reuses it": (a * 5).grad_fn.next_functions[0][0] is acc}


both(accumulator)

# %% [markdown]
# This is the end of the path from the puzzle: `e.grad_fn` → `c.grad_fn` → the
# `AccumulateGrad` node → `a`. Backward walks the edges from `e.grad_fn`, and when a gradient
# reaches an `AccumulateGrad` node, that node adds it into `variable.grad`. While `a` is alive,
# every graph that uses it goes through this one node (the last row).
#
# Only `AccumulateGrad` has `variable`. An operation's node does not point to the tensor it
# produced, so asking `c`'s node for it fails, with the same message on both engines:

# %%
def variable_of_add_node(T):
    a, b, c, d, e = first_graph(T)
    return e.grad_fn.next_functions[0][0].variable


both_raise(variable_of_add_node, AttributeError)

# %% [markdown]
# ## Inputs that need no gradient: `None` edges
#
# An operation keeps one entry per input even when that input needs no gradient: a plain
# number, or a tensor created without `requires_grad=True`. The entry is then `(None, 0)`, and
# backward skips it.


# %%
def none_edges(T):
    a = T.tensor(2.0, requires_grad=True)
    k = T.tensor(7.0)  # requires_grad=False, the default
    return {"edges((a * 2).grad_fn)": edges((a * 2).grad_fn),
            "edges((k * a).grad_fn)": edges((k * a).grad_fn),
            "edges((a + 1).grad_fn)": edges((a + 1).grad_fn)}


both(none_edges)

# %% [markdown]
# Pictures of the graph often draw only the inputs that need a gradient, and so does some
# pseudo-code of what an operation records. The real node keeps every position:

# %%
def a_plus_1_has_two_edges(T):
    a = T.tensor(2.0, requires_grad=True)
    first, second = (a + 1).grad_fn.next_functions
    return first[0] is not None and second == (None, 0)


claim("a node has edges only for the inputs that need a gradient: a + 1 has one edge.",
      "one entry per input, in argument order; (None, 0) for one that needs no gradient.",
      a_plus_1_has_two_edges)

# %% [markdown]
# ## `input_nr`: which output of the next node
#
# Most operations have one output, and their edges carry `input_nr` 0. Some have several:
# `unbind` splits a tensor into its rows, and all of them share one `UnbindBackward0` node.
# Each output knows its position as `output_nr`. An edge to such a node says, with
# `input_nr`, which of its outputs the gradient belongs to. (The name counts from the backward
# side: an output of the forward step is an input of its backward node.)


# %%
def multi_output(T):
    x = T.tensor([2.0, 3.0, 5.0], requires_grad=True)
    u = x.unbind()
    y = u[0] * u[2]
    return {"output_nr of u": [t.output_nr for t in u],
            "one node for all": u[0].grad_fn is u[1].grad_fn is u[2].grad_fn,
            "edges(y.grad_fn)": edges(y.grad_fn)}


both(multi_output)

# %% [markdown]
# `y`'s node has two edges to the same `UnbindBackward0` node: one for output 0, one for
# output 2. Output 1 was not used, so its gradient will be zero. Gradients three ways
# confirm it: ext's backward, torch's, and finite differences (nudging each input a little).
# The gradient flowing into `y` is 1.5 rather than 1, so a formula that only works for 1
# would be caught: expect $1.5 \times (x_2, 0, x_0) = (7.5, 0, 3)$.

# %%
def first_times_last(T, x):
    u = x.unbind()
    return u[0] * u[2]


grad3(first_times_last, np.array([2.0, 3.0, 5.0]))

# %% [markdown]
# The other way to get two edges to one node: use a result twice. Here `t` feeds both
# arguments of `*`, so both edges are `(ExpBackward0, 0)`, the same node and the same output.
# Backward adds the two gradients before `ExpBackward0` runs (the next walkthrough is about
# that order).


# %%
def used_twice(T):
    x = T.tensor(1.0, requires_grad=True)
    t = x.exp()
    y = t * t
    first, second = y.grad_fn.next_functions
    return {"edges(y.grad_fn)": edges(y.grad_fn),
            "same node": first[0] is second[0] is t.grad_fn}


both(used_twice)

# %% [markdown]
# ## Leaves, non-leaves and `requires_grad`
#
# Two flags decide a tensor's place in the graph.
#
# - `requires_grad`: should gradients flow to this tensor? A result requires a gradient when
#   at least one of its inputs does (and gradient recording is on). Results that are not
#   floating point, such as the booleans of a comparison, never do.
# - `is_leaf`: is this tensor a starting point, with no `grad_fn`? Only leaves that require a
#   gradient get `.grad` filled by backward.
#
# Two tools appear below before their own pages: inside a `with T.no_grad():` block nothing
# is recorded (walkthrough 7), and `t.detach()` gives `t`'s values cut off from the graph.


# %%
def flags(T):
    a = T.tensor([1.0, -2.0], requires_grad=True)
    k = T.tensor([3.0, 4.0])
    with T.no_grad():
        frozen = a * 2
    tensors = {"a": a, "k": k, "a * k": a * k, "k * 2": k * 2, "a > 0": a > 0,
               "a * 2 under no_grad": frozen, "(a * k).detach()": (a * k).detach()}
    return {name: (t.requires_grad, t.is_leaf, None if t.grad_fn is None else t.grad_fn.name())
            for name, t in tensors.items()}


both(flags)

# %% [markdown]
# Each row reads `(requires_grad, is_leaf, grad_fn)`. Notice `k * 2`: an operation computed
# it, yet it is a leaf, because nothing about it needs a gradient, so no graph was recorded.
# The same goes for results computed under `no_grad()` and for `detach()`. The rule is simpler
# than "made by me or not":

# %%
def computed_can_be_a_leaf(T):
    needs_no_grad = T.ones(2) * 3
    needs_grad = T.ones(2, requires_grad=True) * 3
    return needs_no_grad.is_leaf and not needs_grad.is_leaf


claim("a leaf is a tensor we create ourselves; a computed tensor is never a leaf.",
      "is_leaf means grad_fn is None: a computed tensor that needs no grad is a leaf too.",
      computed_can_be_a_leaf)

# %% [markdown]
# A tensor carries one more flag that is easy to take for the leaf flag: whether it is a
# *view*, a tensor that shares its memory with another one (`x.view(2)`, `x[0]`), which
# `t._is_view()` reports. The two flags answer different questions. A view of a leaf that
# requires a gradient is recorded like any operation, so it is a view and not a leaf; the same
# view taken under `no_grad` is a view and a leaf.


# %%
def views_and_leaves_are_independent(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    recorded = x.view(2)
    with T.no_grad():
        unrecorded = x.view(2)
    return (x.is_leaf and not x._is_view()
            and recorded._is_view() and not recorded.is_leaf
            and unrecorded._is_view() and unrecorded.is_leaf)


claim("the view flag a tensor carries says whether it is a leaf.",
      "they are independent: x.view(2) is a view and no leaf; under no_grad it is both.",
      views_and_leaves_are_independent)

# %% [markdown]
# A non-leaf's gradient is passed along during backward but not stored (call `retain_grad()`
# on it first if you want it kept). Reading `c.grad` afterwards gives `None`, and a warning
# says why. `both_warn` checks that both engines warn alike.


# %%
def read_nonleaf_grad(T):
    a, b, c, d, e = first_graph(T)
    e.backward()
    return c.grad


both_warn(read_nonleaf_grad)


# %%
def warns_and_gives_none(T):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        value = read_nonleaf_grad(T)
    return value is None and [w.category for w in seen] == [UserWarning]


claim("reading .grad of an intermediate result quietly gives None.",
      "it gives None and a UserWarning that points to retain_grad().", warns_and_gives_none)

# %% [markdown]
# ## What a node saves for backward
#
# To run its derivative, a node often needs values from the forward pass: for $y = ab$,
# $\partial y / \partial a = b$ and $\partial y / \partial b = a$. Nodes show what they saved
# as attributes named `_saved_<name>` (`self` is the first argument, `other` the second,
# `result` the output). They also have more members than `name` and `next_functions`, for
# example `register_prehook` (a function to call before the node runs).

# %%
def node_has_more_members(T):
    node = (T.ones(1, requires_grad=True) * 2).grad_fn
    return all(hasattr(node, name) for name in ("_saved_self", "_saved_other", "register_prehook"))


claim("a node offers only name(), next_functions, metadata and register_hook.",
      "it also shows what it saved (_saved_<name>) and has register_prehook.",
      node_has_more_members)


# %%
def saved_by_mul(T):
    a = T.tensor(2.0, requires_grad=True)
    b = T.tensor(3.0, requires_grad=True)
    k = T.tensor(3.0)
    both_need, one_needs = (a * b).grad_fn, (a * k).grad_fn
    return {"a * b: _saved_self is a": both_need._saved_self is a,
            "a * b: _saved_other is b": both_need._saved_other is b,
            "a * k: _saved_self": one_needs._saved_self,
            "a * k: _saved_other is k": one_needs._saved_other is k}


both(saved_by_mul)

# %% [markdown]
# A saved input is the input itself (`is` holds). And a node saves only what the gradients it
# must compute use: for `a * k`, only `a` needs a gradient, and that gradient is $k$ times the
# incoming one; `a` itself is not needed, so it is not kept.

# %%
def mul_saves_what_it_uses(T):
    return saved_by_mul(T) == {"a * b: _saved_self is a": True,
                               "a * b: _saved_other is b": True,
                               "a * k: _saved_self": None,
                               "a * k: _saved_other is k": True}


claim("multiplication keeps only the other operand for backward.",
      "MulBackward0 keeps both inputs if both need a gradient, else only the one used.",
      mul_saves_what_it_uses)

# %% [markdown]
# Some operations save their output instead: the derivative of $e^x$ is $e^x$ itself, so
# `exp` keeps its result, and `pow` keeps its input and the exponent. Does `_saved_result`
# give back the very object `y`?


# %%
def saved_output(T):
    x = T.tensor([0.5, 1.0], requires_grad=True)
    y = x.exp()
    p = x.pow(2)
    r = y.grad_fn._saved_result
    return {"r is y": r is y,
            "r.equal(y)": r.equal(y),
            "r.grad_fn is y.grad_fn": r.grad_fn is y.grad_fn,
            "p: _saved_self is x": p.grad_fn._saved_self is x,
            "p: _saved_exponent": p.grad_fn._saved_exponent}


both(saved_output)

# %% [markdown]
# No: `_saved_result` has the same values and the same `grad_fn`, but it is a new tensor
# object. If `y`'s node held `y` itself, `y` and its node would point at each other (a
# reference cycle, freed only by Python's slower cycle collector). So the node keeps the data
# and builds a fresh tensor around it each time you read the attribute. An input, by contrast,
# is saved as the object itself (`_saved_self is x`), because the input does not point to this
# node.
#
# Backward frees the saved values once it has used them (unless you pass
# `retain_graph=True`). Reading them afterwards raises:


# %%
def saved_after_backward(T):
    x = T.tensor([0.5, 1.0], requires_grad=True)
    y = x.exp()
    y.sum().backward()
    return y.grad_fn._saved_result


both_raise(saved_after_backward, RuntimeError)

# %% [markdown]
# ## Pictures
#
# `ext.viz.make_dot` draws a graph in the style of the torchviz package: grey boxes are
# backward nodes, light blue boxes the leaves, green the output. A tensor's box shows the name
# we gave it and its shape; `()` is the shape of a single number, `(2)` that of a vector of
# two. (The dict returned next to the output gives the names.) The helper `graphs` draws the
# graph on both engines and checks that the two pictures have the same boxes and arrows.
# Arrows point the way the forward computation went: from each entry of a node's
# `next_functions` to the node. (In a notebook you see the two pictures side by side; as a
# script, each line names a box and, after `<-`, the boxes whose arrows come into it.)


# %%
def first_graph_named(T):
    a, b, c, d, e = first_graph(T)
    return e, {"a": a, "b": b, "d": d, "e": e}


graphs(first_graph_named)

# %% [markdown]
# With `show_saved=True` the saved tensors appear too, as orange boxes hanging off the node
# that saved them: here `self` and `other` of the multiplication (`x` and `w` themselves,
# drawn again under the name of the slot that holds them), and `result` of `exp`.
# `SumBackward0` saved no tensor, only the shape of its input.


# %%
def with_saved(T):
    x = T.tensor([0.5, 1.0], requires_grad=True)
    w = T.tensor([2.0, 3.0], requires_grad=True)
    loss = (x * w).exp().sum()
    return loss, {"x": x, "w": w, "loss": loss}


graphs(with_saved, show_saved=True)

# %% [markdown]
# ## Walking the graph by hand
#
# Everything above is enough to list a whole graph: start at the output's `grad_fn`, follow
# `next_functions`, and remember which nodes you have seen, because a node can be reached by
# several paths. The function below uses a plain loop and a growing list (nodes are numbered
# in the order they are found) instead of a recursive function, so a graph thousands of steps
# deep is no problem. Each line shows a node and its edges as `#number[input_nr]`.


# %%
def walk(root, leaf_names):
    """One line per node reachable from root, each node once, without recursion."""
    found, number, lines = [root], {id(root): 0}, []
    for node in found:  # found grows while we loop: nodes are visited breadth first
        out = []
        for nxt, input_nr in node.next_functions:
            if nxt is not None and id(nxt) not in number:
                number[id(nxt)] = len(found)
                found.append(nxt)
            out.append("None" if nxt is None else f"#{number[id(nxt)]}[{input_nr}]")
        label = short_name(node)
        if hasattr(node, "variable"):
            label += f"({leaf_names[id(node.variable)]})"
        lines.append(f"#{number[id(node)]} {label} -> {', '.join(out) or 'nothing'}")
    return "\n".join(lines)


# %% [markdown]
# A graph with a bit of everything: `e` is used twice, `3.0` gives a `None` edge.


# %%
def walk_example(T):
    a, b, c, d, e = first_graph(T)
    out = e.exp() + e * 3.0
    return walk(out.grad_fn, {id(a): "a", id(b): "b", id(d): "d"})


both(walk_example)

# %% [markdown]
# Read it from the top: `#0` is the final addition, with edges to the `exp` node `#1` and the
# multiplication by 3 `#2`. Both of these point to `#3`, the `MulBackward0` that made `e`,
# which is listed once although two paths reach it. The leaves end the walk.
#
# A tempting picture of backward is this same walk with a recursive function: each node
# passes its gradient down every edge and recurses right away. That would run `#3` twice,
# once per path, each time with only part of its gradient. The real engine waits until a
# node's gradient is complete and runs each node once; the next walkthrough builds both kinds
# of engine and shows the difference. Here we check it with a *pre-hook*, a function the
# engine calls just before it runs a node:


# %%
def recorder(ran, name):
    """A pre-hook that appends ``name`` to the list ``ran`` each time its node runs."""
    def hook(grads):
        ran.append(name)
    return hook


def runs_shared_node_once(T):
    x = T.tensor(0.5, requires_grad=True)
    a = x.exp()
    y = a.sin() + a.cos()  # a feeds two nodes: a diamond
    ran = []
    (sin_node, _), (cos_node, _) = y.grad_fn.next_functions
    for node in (sin_node, cos_node, a.grad_fn):
        node.register_prehook(recorder(ran, short_name(node)))
    y.backward()
    return ran.count("ExpBackward0") == 1 and ran[-1] == "ExpBackward0"


claim("backward recurses along next_functions, one path at a time down to the leaves.",
      "a node runs once, when all its gradients have arrived: Exp after both Sin and Cos.",
      runs_shared_node_once)

# %% [markdown]
# ## Exercise
#
# Write `find_accumulator(root, leaf)`: starting at the node `root`, walk `next_functions`
# (with a loop, not recursion, as `walk` does) and return the `AccumulateGrad` node whose
# `variable` is `leaf`, or `None` if the leaf is not in the graph. The next cell has the graph
# to test it on, and the checker's two sides: `answer(T)` runs your function on that graph,
# looking for `b`; `expected(T)` reaches `b`'s node by another route (a second graph through
# `b` reuses the same `AccumulateGrad`). Once your function is written, run
# `check_exercise(answer, expected)`. The worked solution is in the cell after next
# (collapsed in the notebook).


# %%
def exercise_graph(T):
    w = T.tensor([0.5, -1.0], requires_grad=True)
    b = T.tensor(0.25, requires_grad=True)
    x = T.tensor([2.0, 3.0])
    loss = ((w * x).sum() + b).tanh() + 0.01 * (w * w).sum()
    return w, b, loss


def answer(T):
    w, b, loss = exercise_graph(T)
    found = find_accumulator(loss.grad_fn, b)  # your function
    return {"name": found.name(), "variable is b": found.variable is b,
            "same node as b * 1 uses": found is (b * 1).grad_fn.next_functions[0][0]}


def expected(T):
    w, b, loss = exercise_graph(T)
    acc = (b * 1).grad_fn.next_functions[0][0]
    return {"name": acc.name(), "variable is b": acc.variable is b,
            "same node as b * 1 uses": True}


# %% tags=["solution", "hide-input"]
def find_accumulator(root, leaf):
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if getattr(node, "variable", None) is leaf:
            return node
        stack.extend(nxt for nxt, _ in node.next_functions)
    return None


check_exercise(answer, expected)
