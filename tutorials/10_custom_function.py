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
# # Writing a custom Function
#
# Autograd knows the derivative of every built-in operation. Sometimes you want to write the
# derivative yourself:
#
# - the built-in chain of operations is slow or unstable, and one formula does better
#   (softmax below);
# - the gradient you want is *not* the derivative, as in the straight-through rule for
#   rounding;
# - the operation is one the engine does not have.
#
# A **custom Function** is a class with two static methods. `forward` computes the result from
# the inputs; `backward` receives the gradient of the loss (the number `.backward()` is called
# on) with respect to the result, and returns the gradient with respect to each input. The
# engine records one node of the backward graph for the whole Function, and calls your
# `backward` when the backward pass reaches that node. (A *static method*, marked
# `@staticmethod`, is a function kept in a class that receives no `self`.)

# %%
import numpy as np
import torch
from sidebyside import both, both_raise, check_exercise, claim, grad3, graphs

import ext
import ext.compat
import ext.testing

rng = np.random.default_rng(10)

# %% [markdown]
# ## The contract, on the smallest example
#
# $\frac{d}{dx} e^x = e^x$: the derivative is the result itself. So `forward` keeps its result
# for later with `ctx.save_for_backward`, and `backward` reads it back from `ctx.saved_tensors`
# and multiplies it by the incoming gradient (the chain rule).
#
# `ctx` is a scratch object made for each call, shared by that call's `forward` and
# `backward`: whatever forward leaves on it, backward finds there. The class is written once,
# and its bodies use only tensor methods that ext and torch have in common (`.exp()`, `*`,
# ...), never `torch.something` or `ext.something`.

# %%
class Exp(ext.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.save_for_backward(result)  # backward needs e^x: keep the result, not x
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors  # a tuple, in the order they were saved
        return grad * result  # one gradient per input of forward


# %% [markdown]
# You never call `forward` yourself: `Exp.apply(x)` runs it and links the result into the graph.
# The same class runs on ext tensors *and on torch tensors*: given torch tensors, `apply` turns
# the class into a real `torch.autograd.Function` with the same bodies (ext calls this the
# bridge), so what torch builds is a torch graph. Notice the node's name: **`ExpBackward`**,
# the class name followed by `Backward`, on both engines.

# %%
def exp_example(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = Exp.apply(x)
    y.sum().backward()
    return {"y": y, "y.grad_fn": y.grad_fn, "x.grad": x.grad}


both(exp_example)
# ext.compat.to_torch(Exp) is the torch class the bridge builds from Exp
print("on torch tensors, Exp ran as a torch.autograd.Function:",
      issubclass(ext.compat.to_torch(Exp), torch.autograd.Function))

# %% [markdown]
# The name is torch's own rule for user Functions, not something the bridge invents. To see it,
# build the class with the same two bodies on each engine's own base class,
# `T.autograd.Function`: the node is `ExpBackward` again. (Built-in operations are named
# differently, with a version number: `torch.exp` gives `ExpBackward0`.)

# %%
def native_exp(T):
    # type(name, bases, attributes) makes a class while the program runs: here the same as
    # writing `class Exp(T.autograd.Function):` with Exp's two methods in its body
    methods = {"forward": staticmethod(Exp.forward), "backward": staticmethod(Exp.backward)}
    Native = type("Exp", (T.autograd.Function,), methods)
    x = T.tensor([1.0, 2.0], requires_grad=True)
    return {"custom": Native.apply(x).grad_fn, "built-in": x.exp().grad_fn}


both(native_exp)

# %% [markdown]
# Is the backward right? Check it three ways: ext's backward, torch's, and finite differences
# (nudge each input by a tiny amount and watch the output move). The upstream gradient, the
# gradient arriving from above, is not all ones, so a backward that forgets to multiply by
# `grad` would be caught.

# %%
def exp_function(T, x):
    return Exp.apply(x)


grad3(exp_function, rng.normal(size=3))

# %% [markdown]
# One thing to notice in the graph: there is a single `ExpBackward` node between the sum and the
# leaf `x`. The box `(2)` hanging off `ExpBackward` is the tensor it saved (the result, of
# shape (2,)). The operations *inside* `forward` (here `x.exp()`) leave no trace in the graph.

# %%
def exp_graph(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    return Exp.apply(x).sum(), {"x": x}  # the output, and names for the leaves


graphs(exp_graph)

# %% [markdown]
# So `backward` is the only derivative the engine has for a Function: if it is wrong, nothing
# else corrects it. The reason is that `forward` runs with gradient recording switched off.

# %%
def forward_is_not_recorded(T):
    seen = []

    class Spy(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(T.is_grad_enabled())
            return x.exp()

        @staticmethod
        def backward(ctx, grad):
            raise AssertionError("not called here")

    y = Spy.apply(T.tensor([1.0], requires_grad=True))
    leaf_node = y.grad_fn.next_functions[0][0]
    return seen == [False] and "AccumulateGrad" in leaf_node.name()


claim("the operations inside forward are recorded in the graph as well",
      "forward runs with grad mode off; the only node is the Function's own",
      forward_is_not_recorded)

# %% [markdown]
# Why `ctx.save_for_backward(result)` rather than `ctx.result = result`? Tensors saved this way
# are checked when backward reads them: if one was changed in place after forward (here the
# result is doubled in place), its version number moved on, and backward refuses to compute a
# wrong gradient from it. A tensor stored as a plain attribute gets no such check.
# Non-tensors (a number, a shape) do go on `ctx` as attributes, e.g. `ctx.bits = bits`.

# %%
def modified_after_forward(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = Exp.apply(x)
    y.mul_(2)  # changes the very tensor ExpBackward saved
    y.sum().backward()


both_raise(modified_after_forward, RuntimeError)

# %% [markdown]
# ## Several inputs, and inputs that need no gradient
#
# `backward` returns one gradient per argument of `forward`, in order. For
# $w = (x + y)\,z$: $\partial w/\partial x = \partial w/\partial y = z$ and
# $\partial w/\partial z = x + y$.
#
# `ctx.needs_input_grad` is a tuple of booleans, one per argument: whether the engine wants that
# gradient. A backward may skip the work (and return `None`) where it is False. Here `y` does
# not require grad.

# %%
class AddMul(ext.autograd.Function):
    @staticmethod
    def forward(ctx, x, y, z):
        ctx.save_for_backward(x, y, z)
        return (x + y) * z

    @staticmethod
    def backward(ctx, grad):
        x, y, z = ctx.saved_tensors
        need_x, need_y, need_z = ctx.needs_input_grad
        return (grad * z if need_x else None,
                grad * z if need_y else None,
                grad * (x + y) if need_z else None)


def addmul_example(T):
    x, y = T.tensor([1.0], requires_grad=True), T.tensor([2.0])
    z = T.tensor([4.0], requires_grad=True)
    w = AddMul.apply(x, y, z)
    w.backward()
    return {"w": w, "needs_input_grad": w.grad_fn.needs_input_grad,
            "x.grad (= z)": x.grad, "y.grad": y.grad, "z.grad (= x + y)": z.grad}


both(addmul_example)

# %% [markdown]
# `x.grad` is 4 (that is $z$) and `z.grad` is 3 (that is $x + y$); `y` got no gradient.
# Three ways, with all three inputs requiring grad and arrays instead of single numbers:

# %%
def addmul_function(T, x, y, z):
    return AddMul.apply(x, y, z)


grad3(addmul_function, *rng.normal(size=(3, 4)))  # three random arrays: x, y and z

# %% [markdown]
# ## A gradient that is not the derivative: straight-through rounding
#
# Rounding to a grid (quantization, as used to store weights in few bits) is flat between grid
# points, so its derivative is 0 almost everywhere: nothing would learn through it. The
# **straight-through estimator** pretends the rounding was not there: forward rounds, backward
# passes the gradient through unchanged.
#
# `bits` is a plain Python number, not a tensor. It still gets a slot in `backward`'s answer:
# `None`, meaning "no gradient". Its entry in `needs_input_grad` is False.

# %%
class Quantize(ext.autograd.Function):
    @staticmethod
    def forward(ctx, x, bits):
        low = x.min()
        step = (x.max() - low) / (2**bits - 1)  # 2**bits levels from min to max
        return ((x - low) / step).round() * step + low

    @staticmethod
    def backward(ctx, grad):
        return grad, None  # straight through for x; nothing for bits


def quantize_example(T):
    x = T.tensor([0.0, 0.2, 0.45, 0.7, 1.0], requires_grad=True)
    y = Quantize.apply(x, 2)  # 4 levels: 0, 1/3, 2/3, 1
    y.backward(T.tensor([1.0, 2.0, 3.0, 4.0, 5.0]))
    return {"y": y, "needs_input_grad": y.grad_fn.needs_input_grad, "x.grad": x.grad}


both(quantize_example)

# %% [markdown]
# `x.grad` is exactly the upstream gradient `[1, 2, 3, 4, 5]`. Finite differences would say 0
# here: the straight-through gradient is a deliberate *estimate*, so do not expect `grad3` or
# `gradcheck` to agree with it. (`ext.testing.check`, further down, takes
# `skip={"gradcheck": "straight-through"}` for exactly this case.)

# %% [markdown]
# ## What the engine checks about `backward`'s answer
#
# The engine checks the count and the shapes of what `backward` returns. Both engines raise the
# same errors, naming the node:

# %%
class Forgetful(ext.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        return x * y

    @staticmethod
    def backward(ctx, grad):
        return grad  # one gradient for two inputs


def forgetful_backward(T):
    Forgetful.apply(T.ones(2, requires_grad=True), T.ones(2)).sum().backward()


both_raise(forgetful_backward, RuntimeError)

# %%
class WrongShape(ext.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad[:1] * 2  # the gradient of x must have x's shape


def wrong_shape_backward(T):
    WrongShape.apply(T.ones(2, requires_grad=True)).sum().backward()


both_raise(wrong_shape_backward, RuntimeError)

# %% [markdown]
# The node's name is the class name plus `Backward`, whatever the class is called. People who
# write one Function per operation sometimes name the classes after the nodes they expect:

# %%
class MulBackward(ext.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y, grad * x


def node_name_of_mul_backward(T):
    y = MulBackward.apply(T.ones(1, requires_grad=True), T.ones(1))
    return y.grad_fn.name() == "MulBackwardBackward"


claim("a Function class named MulBackward makes nodes named MulBackward",
      "the node is the class name plus 'Backward': MulBackwardBackward",
      node_name_of_mul_backward)

# %% [markdown]
# ## Softmax, with its backward written by hand
#
# Softmax turns a row of scores into probabilities: $y_i = e^{x_i} / \sum_k e^{x_k}$. Built
# from tensor operations, autograd would record a node for each (max, subtract, exp, sum,
# divide) and save what each needs. One formula does it all. The derivative of $y_i$ with
# respect to $x_j$ is $y_i(\delta_{ij} - y_j)$, where $\delta_{ij}$ is 1 when $i = j$ and 0
# otherwise.
# Given the upstream gradient $g$, backward must return the gradient with respect to $x$ (the
# vector-Jacobian product, a sum over the outputs):
#
# $$\frac{\partial L}{\partial x_j} = \sum_i g_i\, y_i(\delta_{ij} - y_j)
#   = y_j \Big(g_j - \sum_i g_i y_i\Big)$$
#
# so backward needs only the result $y$. Forward subtracts the row's maximum first: the result
# is the same, and `exp` cannot overflow. Every row (the last dimension) is its own softmax.
# (`x.amax(-1, keepdim=True)` is NumPy's `x.max(-1, keepdims=True)`: the maximum of each row,
# kept as a column so that it subtracts from every entry of its row.)

# %%
class Softmax(ext.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        e = (x - x.amax(-1, keepdim=True)).exp()  # shifted: same result, no overflow
        y = e / e.sum(-1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return y * (grad - (grad * y).sum(-1, keepdim=True))


X = rng.normal(size=(2, 4))


def ours_and_built_in(T):
    return {"ours": Softmax.apply(T.tensor(X)), "built-in": T.softmax(T.tensor(X), -1)}


both(ours_and_built_in)

# %%
def softmax_function(T, x):
    return Softmax.apply(x)


grad3(softmax_function, X)

# %% [markdown]
# A popular way to test a softmax backward is to call `y.sum().backward()` and compare `x.grad`
# with what the built-in softmax gives. It proves nothing: every row of $y$ sums to 1 whatever
# $x$ is, so that gradient is zero. Here is a backward that forgets the factor $y_j$: it also
# gives zeros, and only a non-uniform upstream gradient exposes it.

# %%
class ForgotFactor(Softmax):
    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad - (grad * y).sum(-1, keepdim=True)  # the factor y is missing


def sum_test_is_blind(T):
    def x_grad(fn, upstream):
        x = T.tensor(X, requires_grad=True)
        fn(x).backward(upstream)
        return x.grad

    def built_in(x):
        return T.softmax(x, -1)

    ones = T.ones(2, 4)  # the upstream gradient of y.sum()
    ramp = T.tensor(np.linspace(0.5, 2.0, 8).reshape(2, 4))  # a non-uniform one
    fooled = T.allclose(x_grad(ForgotFactor.apply, ones), x_grad(built_in, ones))
    exposed = not T.allclose(x_grad(ForgotFactor.apply, ramp), x_grad(built_in, ramp))
    return bool(fooled) and exposed


claim("y.sum().backward() against the built-in softmax tests a softmax backward",
      "that gradient is always zero; a non-uniform upstream gradient is needed",
      sum_test_is_blind)

# %% [markdown]
# In float32 that test is not even stable. The two "zero" gradients are rounding noise of about
# $10^{-8}$, which is also `allclose`'s default absolute tolerance (`atol=1e-8`), so whether it
# says True depends on the input. Forty random vectors of five numbers:


# %%
def float32_noise_decides(T):
    draw = np.random.default_rng(1)
    verdicts = []
    for _ in range(40):
        x = draw.standard_normal(5).astype(np.float32)
        ours = T.tensor(x, requires_grad=True)
        Softmax.apply(ours).sum().backward()
        built_in = T.tensor(x, requires_grad=True)
        T.softmax(built_in, -1).sum().backward()
        verdicts.append(bool(T.allclose(ours.grad, built_in.grad)))
    return True in verdicts and False in verdicts


claim("in float32, allclose of our softmax's y.sum() gradient and the built-in's prints True",
      "both are rounding noise near its atol of 1e-8: True for some inputs, False for others",
      float32_noise_decides)

# %% [markdown]
# ## Checking a Function: `gradcheck` and `ext.testing.check`
#
# `T.autograd.gradcheck(fn, inputs)` compares backward with finite differences for every
# element, in float64 (`inputs` is a tuple of tensors, one per argument of `fn`). It returns
# True, or raises with both Jacobians: the *Jacobian* is the matrix of the derivatives of every
# output element with respect to every input element. With `raise_exception=False` it returns
# False instead of raising. Both engines have it:

# %%
def gradchecks(T):
    x = T.tensor(X, requires_grad=True)
    return {"Softmax": T.autograd.gradcheck(Softmax.apply, (x,)),
            "ForgotFactor": T.autograd.gradcheck(ForgotFactor.apply, (x,),
                                                 raise_exception=False)}


both(gradchecks)

# %% [markdown]
# Without `raise_exception=False`, the failing check raises and prints the two Jacobians:
# "numerical" from finite differences, "analytical" from our backward. Row $j$, column $i$ is
# $\partial y_i/\partial x_j$ (one row of two values, to keep it small). The same message on
# both engines:

# %%
def failing_gradcheck(T):
    x = T.tensor([[0.3, -0.4]], dtype=T.float64, requires_grad=True)
    T.autograd.gradcheck(ForgotFactor.apply, (x,))


both_raise(failing_gradcheck, RuntimeError)

# %% [markdown]
# `ext.testing.check(fn, *torch_inputs, reference=...)` runs a whole checklist on a Function
# given torch tensors: forward and backward against a reference (with a random, non-uniform
# upstream gradient), second derivatives, gradcheck, the same Function on ext tensors
# ("mini_engine"), the order its hooks fire, that inputs are not overwritten, what it saves,
# and more. It returns a report, one row per check. Two checks are skipped here with a reason:
# `torch.compile` and the `torch.func` transforms take seconds. Some rows touch later pages:
# `hooks` checks the order in which hooks fire around the node (walkthrough 11), `autocast`
# that it runs under mixed precision (walkthrough 12); `version` checks what happens when an
# input is changed in place after forward (walkthrough 8), `saved_bytes` that it saves no more
# than the reference (walkthrough 5), and `upstream` the gradient when the Function's input
# comes out of an `exp`.

# %%
SKIP = {"compile": "slow in a walkthrough", "torch_func": "slow in a walkthrough"}
x_torch = torch.tensor(X[:1], requires_grad=True)  # one row: the checks stay quick
report = ext.testing.check(Softmax, x_torch, reference=lambda x: torch.softmax(x, -1), skip=SKIP)
print(report)
assert report.ok

# %% [markdown]
# The same checklist on the wrong backward: the forward still passes (it is the same), and every
# check that compares gradient values with the reference or with finite differences fails,
# saying what differed.

# %%
bad = ext.testing.check(ForgotFactor, x_torch, reference=lambda x: torch.softmax(x, -1),
                        skip=SKIP)
print(bad)
assert not bad.ok and {"backward", "gradcheck"} <= set(bad.failures())

# %% [markdown]
# Notice that `mini_engine` still passes. It runs the Function on ext tensors and compares with
# the same Function on torch tensors: both engines run the same wrong formula and agree. Two
# engines agreeing shows that the engines are consistent, not that the formula is right; that
# is the job of the reference and of finite differences.

# %% [markdown]
# ext ships tested versions of this page's Functions in `ext.functions` (`Exp`, `AddMul`,
# `Quantize`, and a `Softmax` that normalises over *all* elements). On a single row the two
# softmaxes agree:

# %%
row = rng.normal(size=5)


def difference_of_softmaxes(T):
    return Softmax.apply(T.tensor(row)) - ext.functions.Softmax.apply(T.tensor(row))


both(difference_of_softmaxes)

# %% [markdown]
# ## A custom Function inside a torch model
#
# Because `Softmax.apply` on torch tensors is a genuine `torch.autograd.Function`, it fits
# anywhere in torch: inside a `torch.nn.Module`, under a `torch.optim` optimizer. The model
# below is written once against `T.nn` and `T.optim`; on torch it *is* a torch module. A
# module of your own subclasses `T.nn.Module`, creates its layers in `__init__` and says in
# `forward` what `model(x)` computes. The optimizer `SGD` updates each weight `w` in place,
# `w -= lr * w.grad`, when `step()` is called. One training step, with the loss the negative
# log-likelihood of the right class (minus the mean of the log of the probability each row
# gives its label), then the updated weights. A weight owned by a module is a `Parameter`, a
# leaf that requires grad, and prints as `Parameter containing:`.

# %%
W, B = rng.normal(size=(3, 4)), rng.normal(size=3)
INPUTS, LABELS = rng.normal(size=(5, 4)), np.array([0, 2, 1, 2, 0])


def train_step(T):
    class Classifier(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = T.nn.Linear(4, 3)

        def forward(self, x):
            return Softmax.apply(self.linear(x))

    model = Classifier()
    with T.no_grad():  # the same starting weights on both engines
        model.linear.weight.copy_(T.tensor(W))
        model.linear.bias.copy_(T.tensor(B))
    optimizer = T.optim.SGD(model.parameters(), lr=0.5)
    probs = model(T.tensor(INPUTS, dtype=T.float32))
    loss = -probs[T.arange(5), T.tensor(LABELS)].log().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return {"probs.grad_fn": probs.grad_fn, "loss": loss, "bias after": model.linear.bias}


both(train_step)

# %% [markdown]
# ## Exercise
#
# Write a custom Function `Sigmoid` (a subclass of `ext.autograd.Function`, like `Exp`),
# $\sigma(x) = 1 / (1 + e^{-x})$, whose backward uses
# $\sigma'(x) = \sigma(x)\,(1 - \sigma(x))$ and so saves only the result. Use only tensor
# methods and arithmetic in the bodies, so that it runs on both engines. Then run
# `check_exercise(answer, expected)`: the next cell runs your `Sigmoid.apply` and torch's
# built-in sigmoid on the same input, with an upstream gradient that is not all ones, and
# compares the results and `x.grad`, on both engines. The solution is in the cell after next
# (collapsed in the notebook).

# %%
Z = rng.normal(size=(2, 3)) * 3
UPSTREAM = np.linspace(-1.0, 2.0, 6).reshape(2, 3)


def run(T, fn):
    x = T.tensor(Z, requires_grad=True)
    y = fn(x)
    y.backward(T.tensor(UPSTREAM))
    return {"y": y.detach(), "x.grad": x.grad}


def answer(T):
    return run(T, Sigmoid.apply)  # your Function


def expected(T):
    return run(T, T.sigmoid)  # the built-in


# %% tags=["solution", "hide-input"]
class Sigmoid(ext.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = 1 / (1 + (-x).exp())
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y * (1 - y)


check_exercise(answer, expected)
