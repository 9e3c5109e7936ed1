"""The call recipes of benchmarks/ops.py: one or more small programs per built-in op.

A recipe is one line of torch-named code over the inputs below (``T`` is the backend, ``F`` its
``nn.functional``, ``gg(y, x, g)`` the gradient of ``y`` in ``x`` with ``create_graph=True``).
Statements are separated by ``"; "`` and the last part is the result. A differentiable recipe's
result requires grad, and its timed backward runs through it with a gradient of ones; the others
are timed forward only. Recipes use only the public torch-named API, so that they run unchanged
on torch and on any commit of ext.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# A recipe becomes a function whose inputs are default arguments: a call costs no lookups, and
# the text compiled is only ever this module's table.
_TEMPLATE = "def recipe({params}):\n{body}\n"


@dataclass(frozen=True)
class Recipe:
    """One timed program: its family, its text, and whether backward runs through it."""

    family: str
    code: str
    grad: bool = True

    @property
    def key(self) -> str:
        """The recipe's unique name."""
        return f"{self.family}: {self.code}"

    def build(self, T, inputs: dict) -> Callable[[], object]:
        """The recipe as a function of no arguments over backend ``T`` and ``inputs``."""
        *statements, result = self.code.split("; ")
        body = "\n".join(f"    {s}" for s in [*statements, f"return {result}"])
        env = {"T": T, **inputs}
        # Only what the recipe uses: an old commit may lack ext.nn or autograd.grad.
        if "F." in self.code:
            env["F"] = T.nn.functional
        if "gg(" in self.code:
            env["gg"] = _gg(T)
        params = ", ".join(f"{name}={name}" for name in env)
        exec(_TEMPLATE.format(params=params, body=body), env)
        return env["recipe"]


def _gg(T) -> Callable:
    grad = T.autograd.grad

    def gg(y, x, g):
        return grad(y, x, g, create_graph=True)[0]

    return gg


def make_inputs(T, seed: int = 0) -> dict:
    """The recipes' inputs on backend ``T``, built in NumPy (the same values on every backend)."""
    rng = np.random.default_rng(seed)

    def leaf(a):
        return T.tensor(a, requires_grad=True)

    signs = np.where(rng.random((4, 4)) < 0.5, -1.0, 1.0)
    return {
        "x": leaf(rng.uniform(0.5, 1.5, (4, 4))),
        "y": leaf(rng.uniform(0.5, 1.5, (4, 4))),
        "s": leaf(signs * rng.uniform(0.2, 1.0, (4, 4))),
        "v": leaf(rng.uniform(0.5, 1.5, 4)),
        "w": leaf(rng.uniform(0.5, 1.5, 4)),
        "b": leaf(rng.uniform(0.5, 1.5, (2, 4, 4))),
        "u": leaf(rng.uniform(0.5, 1.5, (1, 4, 1, 4))),
        "c": leaf(np.array(0.75)),
        "k": T.tensor(rng.uniform(0.5, 1.0, (4, 4))),
        "idx": T.tensor(np.array([2, 0, 2, 1])),
        "gidx": T.tensor(rng.integers(0, 4, (4, 4))),
        "mask": T.tensor(rng.random((4, 4)) < 0.5),
        "labels": T.tensor(np.array([1, 0, 3, 2])),
        "arr": rng.uniform(0.5, 1.5, (4, 4)),
        # gradients that require grad, for the gradients of gradients
        "g": leaf(np.ones((4, 4))),
        "g4": leaf(np.ones(4)),
        "g42": leaf(np.ones((4, 2))),
        "g0": leaf(np.array(1.0)),
    }


def _family(name: str, codes: str, grad: bool = True) -> list[Recipe]:
    return [Recipe(name, line.strip(), grad) for line in codes.strip().splitlines()]


RECIPES: list[Recipe] = [
    *_family("unary", """
        s.abs()
        x.ceil()
        x.cos()
        x.erf()
        x.exp()
        T.exp(x)
        x.expm1()
        x.floor()
        x.log()
        x.log1p()
        x.nan_to_num()
        s.neg()
        -s
        x.reciprocal()
        s.relu()
        x.round()
        x.round(decimals=2)
        x.rsqrt()
        x.sigmoid()
        s.sign()
        x.sin()
        x.sqrt()
        x.tan()
        x.tanh()
    """),
    *_family("binary", """
        x + y
        x + 2.0
        2.0 + x
        x + v
        x.add(y, alpha=2)
        T.add(x, y)
        x - y
        x - 2.0
        2.0 - x
        T.rsub(x, y)
        x * y
        x * 2.0
        x * c
        T.mul(x, y)
        x / y
        x / 2.0
        2.0 / x
        x ** 2
        x.pow(0.5)
        x ** y
        2.0 ** x
        T.maximum(x, y)
        T.minimum(x, y)
        T.where(mask, x, y)
        x.clamp(0.7, 1.2)
        x.clamp(k, y)
        x.clip(0.7, 1.2)
        x.clamp_min(0.9)
        x.clamp_min(y)
        x.clamp_max(0.9)
        x.clamp_max(y)
        x.masked_fill(mask, 0.0)
        x.masked_fill(mask, c)
        x % y
        x % 2.0
    """),
    *_family("reduction", """
        x.sum()
        T.sum(x)
        x.sum(0)
        x.sum(1, keepdim=True)
        x.mean()
        x.mean(0)
        x.prod()
        x.prod(1)
        x.max()
        x.max(0)[0]
        x.min()
        x.min(1)[0]
        x.amax(0)
        x.amin(1)
        x.std()
        x.std(0)
        x.var()
        x.var(1)
        x.logsumexp(1)
        x.cumsum(0)
        x.cumprod(1)
        T.cumprod(x, 0)
        x.sort(1)[0]
        x.sort(dim=0, stable=True)[0]
    """),
    *_family("comparison", """
        x > y
        x.eq(y)
        x.le(1.0)
        x.isnan()
        x.isfinite()
        T.isclose(x, y)
        x.allclose(y)
        x.argmax()
        x.argmin(1)
        mask.all()
        mask.any()
        T.logical_and(mask, mask)
        ~mask
        mask & mask
    """, grad=False),
    *_family("shape", """
        x.view(16)
        x.view(2, 8)
        x.view_as(y)
        x.reshape(16)
        x.reshape_as(y)
        x.t().reshape(16)
        b.transpose(1, 2).reshape(2, 2, 2, 4)
        x.flatten()
        b.flatten(1)
        x.permute(1, 0)
        b.permute(2, 0, 1)
        x.transpose(0, 1)
        x.t()
        x.T
        b.mT
        x.expand(2, 4, 4)
        v.expand_as(x)
        u.squeeze()
        u.squeeze(0)
        u.squeeze((0, 2))
        x.unsqueeze(0)
        x.unsqueeze(-1)
        x.flip(0)
        T.cat([x, y])
        T.cat([x, y], 1)
        T.stack([x, y])
        x.split(2)[0]
        x.split([1, 3])[1]
        x.split_with_sizes([1, 3], 1)[0]
        x.unbind(0)[1]
        x.chunk(2, 1)[0]
        x.narrow(1, 1, 2)
        x.clone()
        x.contiguous()
        x.t().contiguous()
    """),
    *_family("indexing", """
        x[0]
        x[-1]
        x[1, 2]
        x[..., 1]
        x[1:3]
        x[:, 1:3]
        x[...]
        x[None]
        x[idx]
        x[:, idx]
        x[idx, idx]
        x[mask]
        x.select(1, 2)
        x.index_select(0, idx)
        x.gather(1, gidx)
        x.scatter(1, gidx, y)
        x.scatter(1, gidx, 2.0)
        x.index_put((idx,), v)
        x.index_put((idx,), v, accumulate=True)
        z = x.clone(); z[idx] = v; z
        z = x.clone(); z[mask] = 0.0; z
        z = x.clone(); z[0] = v; z
        z = x.clone(); z[:, 1:3] = 0.0; z
        z = x.clone(); z[...] = 2.0; z
        z = x.clone(); z[...] = y; z
    """),
    # In-place ops act on a clone (a leaf cannot be modified in place), which is timed with them.
    *_family("in-place", """
        s.clone().abs_()
        x.clone().add_(y)
        x.clone().add_(2.0)
        z = x.clone(); z += y; z
        x.clone().sub_(y)
        x.clone().mul_(y)
        x.clone().mul_(2.0)
        z = x.clone(); z *= 2.0; z
        x.clone().div_(y)
        x.clone().div_(2.0)
        x.clone().pow_(2)
        x.clone().exp_()
        x.clone().expm1_()
        x.clone().log_()
        x.clone().log1p_()
        x.clone().sin_()
        x.clone().cos_()
        x.clone().tan_()
        x.clone().tanh_()
        x.clone().sigmoid_()
        s.clone().relu_()
        s.clone().neg_()
        x.clone().reciprocal_()
        x.clone().rsqrt_()
        x.clone().sqrt_()
        s.clone().sign_()
        x.clone().round_()
        x.clone().ceil_()
        x.clone().floor_()
        x.clone().clamp_(0.7, 1.2)
        x.clone().clip_(0.7, 1.2)
        x.clone().clamp_min_(0.9)
        x.clone().clamp_max_(0.9)
        x.clone().nan_to_num_()
        x.clone().masked_fill_(mask, 0.0)
        x.clone().fill_(2.0)
        x.clone().fill_(c)
        x.clone().zero_()
        x.clone().copy_(y)
        x.clone().scatter_(1, gidx, y)
        x.clone().cumprod_(1)
        x.clone().index_put_((idx,), v)
        z = x.clone(); z[0].mul_(2.0); z
        z = x * 1; r = z[0]; z.mul_(2.0); r.grad_fn; r
    """),
    *_family("linalg", """
        x @ y
        x.mm(y)
        T.mm(x, y)
        T.matmul(x, y)
        x @ v
        x.mv(v)
        v @ x
        v @ w
        v.dot(w)
        b.bmm(b)
        T.bmm(b, b)
        b @ b
        b @ x
        v.addmm(x, y)
        T.addmm(v, x, y)
        F.linear(x, y, v)
        F.linear(x, y)
    """),
    *_family("nn", """
        x.softmax(1)
        F.softmax(x, dim=1)
        x.log_softmax(1)
        F.log_softmax(x, dim=1)
        F.gelu(x)
        F.gelu(x, approximate="tanh")
        F.silu(x)
        F.relu(s)
        F.layer_norm(x, (4,), v, w)
        F.layer_norm(x, (4,))
        F.embedding(idx, x)
        F.mse_loss(x, y)
        F.mse_loss(x, y, reduction="sum")
        F.nll_loss(x, labels)
        F.cross_entropy(x, labels)
        F.dropout(x, 0.5)
        F.dropout(x, 0.5, training=False)
    """),
    # The first backward (create_graph=True) is part of the forward here; backward is the second.
    *_family("grad of grad", """
        gg(x.sigmoid(), x, g)
        gg(x.tanh(), x, g)
        gg(s.relu(), s, g)
        gg(x.softmax(1), x, g)
        gg(x.log_softmax(1), x, g)
        gg(F.gelu(x), x, g)
        gg(F.layer_norm(x, (4,), v, w), x, g)
        gg(F.mse_loss(x, y), x, g0)
        gg(F.nll_loss(x, labels), x, g0)
        gg(F.embedding(idx, x), x, g)
        gg(x[-1], x, g4)
        z = x * 1; r = z[0]; z.mul_(2.0); gg(r, x, g4)
        gg(x[:, 1:3], x, g42)
        gg(x[idx], x, g)
        gg(x.index_select(1, idx), x, g)
        gg(x.gather(1, gidx), x, g)
        gg(x.add(y, alpha=2), y, g)
        gg(x.mean(), x, g0)
        gg(x.sum(), x, g0)
        gg(x * y, x, g)
        gg(x.exp(), x, g)
        gg(x.prod(1), x, g4)
        gg(x.cumprod(1), x, g)
        z = x.masked_fill(mask, 0.0); gg(z.cumprod(1), x, g)
        z = x.masked_fill(mask, 0.0); gg(z.prod(0), x, g4)
    """),
    *_family("conversion", """
        x.to(T.float32)
        x.float()
        x.to(T.float64)
        x.double()
        x.type_as(v)
    """),
    *_family("conversion", """
        x.long()
        x.detach()
        x.detach().numpy()
        c.item()
        x.tolist()
        T.tensor(arr)
        T.as_tensor(arr)
        T.from_numpy(arr)
    """, grad=False),
    *_family("creation", """
        T.zeros(4, 4)
        T.ones(4, 4)
        T.zeros_like(x)
        T.ones_like(x)
        T.full((4, 4), 2.0)
        T.arange(16)
        T.eye(4)
        T.empty(4, 4)
        T.linspace(0.0, 1.0, 16)
        x.new_zeros(4, 4)
        x.new_full((4, 4), 2.0)
    """, grad=False),
]


def _more() -> list[Recipe]:
    """The recipes of the op families kept one module each in ``benchmarks/recipes/``: each
    lists ``FAMILIES``, (family, one recipe a line, whether backward runs) triples."""
    import importlib.util
    from pathlib import Path

    out = []
    for path in sorted((Path(__file__).parent / "recipes").glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"op_recipes_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for family in module.FAMILIES:
            out += _family(*family)
    return out


RECIPES += _more()
