"""Reductions and scans: sum / mean over tuples of dims, max / min (whole tensor and with dim),
amax / amin, prod, var / std, cumsum, cumprod, argmax / argmin and sort.

Node names and saved fields, forward values against NumPy, gradcheck and gradgradcheck in
float64, the gradients torch picks at ties and zeros, result dtypes and error messages.
Every test runs on ``ext`` and on ``torch``; the expectations are torch 2.13's behaviour.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import POS, leaf, sample, to_np

# torch reports a saved negative dim as an unsigned 64-bit integer: -1 reads back as 2**64 - 1.
NEG1 = 2**64 - 1
NEG2 = 2**64 - 2


def check_grads(T, fn, *arrays):
    inputs = tuple(leaf(T, np.asarray(a, dtype=np.float64)) for a in arrays)
    assert T.autograd.gradcheck(fn, inputs)
    assert T.autograd.gradgradcheck(fn, inputs)


def distinct(rng, shape):
    """float64 values in about [-1.3, 1.5], pairwise at least 0.3 apart: no ties anywhere."""
    n = int(np.prod(shape))
    values = (rng.permutation(n) - (n - 1) / 2) * 0.4 + rng.uniform(0.05, 0.15, size=n)
    return values.reshape(shape)


# --------------------------------------------------------------------------------------------
# Node names and saved fields
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Is:
    """The saved tensor is this very input object."""

    name: str


@dataclass(frozen=True)
class Out:
    """The saved tensor is this very field of the op's returned named tuple."""

    field: str


@dataclass(frozen=True)
class Result:
    """The saved tensor equals the op's output but is a different object."""


RESULT = Result()
INDICES = Out("indices")


def graph_inputs(T, rng):
    return SimpleNamespace(x=leaf(T, distinct(rng, (2, 3))))


def node(id_, fn, name, **saved):
    """A table row: ``fn(T, inputs)``, the node name and every ``_saved_<key>`` field.

    ``fn`` returns a tensor or a named tuple whose ``values`` carry the node.
    """
    return pytest.param(fn, name, {f"_saved_{k}": v for k, v in saved.items()}, id=id_)


SIZES = dict(self_sym_sizes=(2, 3))
MEAN = dict(self_sym_sizes=(2, 3), self_sym_numel=6)
XR = dict(self=Is("x"), result=RESULT)

NODE_CASES = [
    node("x.sum_(0,1)", lambda T, i: i.x.sum((0, 1)), "SumBackward1", dim=(0, 1),
         keepdim=False, **SIZES),
    node("x.sum_(-1,0)", lambda T, i: i.x.sum((-1, 0)), "SumBackward1", dim=(NEG1, 0),
         keepdim=False, **SIZES),
    node("x.sum_(0,)_keepdim", lambda T, i: i.x.sum((0,), keepdim=True), "SumBackward1",
         dim=(0,), keepdim=True, **SIZES),
    node("x.sum_dim=()", lambda T, i: i.x.sum(()), "SumBackward1", dim=(), keepdim=False,
         **SIZES),
    node("T.sum_(1,0)", lambda T, i: T.sum(i.x, (1, 0)), "SumBackward1", dim=(1, 0),
         keepdim=False, **SIZES),
    node("x.mean_(0,1)", lambda T, i: i.x.mean((0, 1)), "MeanBackward1", dim=(0, 1),
         keepdim=False, **MEAN),
    node("x.mean_(-2,-1)_keepdim", lambda T, i: i.x.mean((-2, -1), keepdim=True),
         "MeanBackward1", dim=(NEG2, NEG1), keepdim=True, **MEAN),
    node("T.mean_dim=(1,)", lambda T, i: T.mean(i.x, dim=(1,)), "MeanBackward1", dim=(1,),
         keepdim=False, **MEAN),
    node("x.max", lambda T, i: i.x.max(), "MaxBackward1", **XR),
    node("T.max", lambda T, i: T.max(i.x), "MaxBackward1", **XR),
    node("x.min", lambda T, i: i.x.min(), "MinBackward1", **XR),
    node("T.min", lambda T, i: T.min(i.x), "MinBackward1", **XR),
    node("x.max_0", lambda T, i: i.x.max(0), "MaxBackward0", dim=0, keepdim=False,
         indices=INDICES, **SIZES),
    node("x.max_-1_keepdim", lambda T, i: i.x.max(-1, keepdim=True), "MaxBackward0", dim=NEG1,
         keepdim=True, indices=INDICES, **SIZES),
    node("x.max_dim=1", lambda T, i: i.x.max(dim=1), "MaxBackward0", dim=1, keepdim=False,
         indices=INDICES, **SIZES),
    node("T.max_x_1", lambda T, i: T.max(i.x, 1), "MaxBackward0", dim=1, keepdim=False,
         indices=INDICES, **SIZES),
    node("x.min_1", lambda T, i: i.x.min(1), "MinBackward0", dim=1, keepdim=False,
         indices=INDICES, **SIZES),
    node("T.min_dim=0_keepdim", lambda T, i: T.min(i.x, dim=0, keepdim=True), "MinBackward0",
         dim=0, keepdim=True, indices=INDICES, **SIZES),
    node("x.amax", lambda T, i: i.x.amax(), "AmaxBackward0", dim=(), keepdim=False, **XR),
    node("x.amax_0", lambda T, i: i.x.amax(0), "AmaxBackward0", dim=(0,), keepdim=False, **XR),
    node("x.amax_-1_keepdim", lambda T, i: i.x.amax(-1, keepdim=True), "AmaxBackward0",
         dim=(NEG1,), keepdim=True, **XR),
    node("x.amax_(0,1)", lambda T, i: i.x.amax((0, 1)), "AmaxBackward0", dim=(0, 1),
         keepdim=False, **XR),
    node("T.amax_(1,)", lambda T, i: T.amax(i.x, (1,)), "AmaxBackward0", dim=(1,),
         keepdim=False, **XR),
    node("x.amin_1", lambda T, i: i.x.amin(1), "AminBackward0", dim=(1,), keepdim=False, **XR),
    node("x.amin_None", lambda T, i: i.x.amin(None), "AminBackward0", dim=(), keepdim=False,
         **XR),
    node("T.amin_dim=(0,)", lambda T, i: T.amin(i.x, dim=(0,)), "AminBackward0", dim=(0,),
         keepdim=False, **XR),
    node("x.prod", lambda T, i: i.x.prod(), "ProdBackward0", **XR),
    node("T.prod", lambda T, i: T.prod(i.x), "ProdBackward0", **XR),
    node("x.prod_0", lambda T, i: i.x.prod(0), "ProdBackward1", dim=0, keepdim=False, **XR),
    node("x.prod_-1_keepdim", lambda T, i: i.x.prod(-1, keepdim=True), "ProdBackward1",
         dim=NEG1, keepdim=True, **XR),
    node("T.prod_1", lambda T, i: T.prod(i.x, 1), "ProdBackward1", dim=1, keepdim=False, **XR),
    # var / std: correction is None when neither correction nor unbiased is given
    node("x.var", lambda T, i: i.x.var(), "VarBackward0", correction=None, dim=None,
         keepdim=False, self=Is("x")),
    node("T.var", lambda T, i: T.var(i.x), "VarBackward0", correction=None, dim=None,
         keepdim=False, self=Is("x")),
    node("x.var_0", lambda T, i: i.x.var(0), "VarBackward0", correction=1, dim=(0,),
         keepdim=False, self=Is("x")),
    node("x.var_-1_keepdim", lambda T, i: i.x.var(-1, keepdim=True), "VarBackward0",
         correction=1, dim=(NEG1,), keepdim=True, self=Is("x")),
    node("x.var_correction=0", lambda T, i: i.x.var(correction=0), "VarBackward0",
         correction=0, dim=None, keepdim=False, self=Is("x")),
    node("x.var_unbiased=False", lambda T, i: i.x.var(unbiased=False), "VarBackward0",
         correction=0, dim=None, keepdim=False, self=Is("x")),
    node("x.var_unbiased=True", lambda T, i: i.x.var(unbiased=True), "VarBackward0",
         correction=1, dim=None, keepdim=False, self=Is("x")),
    node("x.var_1_unbiased=False", lambda T, i: i.x.var(1, unbiased=False), "VarBackward0",
         correction=0, dim=(1,), keepdim=False, self=Is("x")),
    node("x.var_(0,1)_correction=2", lambda T, i: i.x.var(dim=(0, 1), correction=2),
         "VarBackward0", correction=2, dim=(0, 1), keepdim=False, self=Is("x")),
    node("x.var_correction=1.5", lambda T, i: i.x.var(correction=1.5), "VarBackward0",
         correction=1.5, dim=None, keepdim=False, self=Is("x")),
    node("x.var_keepdim_no_dim", lambda T, i: i.x.var(keepdim=True), "VarBackward0",
         correction=None, dim=None, keepdim=True, self=Is("x")),
    node("T.var_0_keepdim", lambda T, i: T.var(i.x, 0, keepdim=True), "VarBackward0",
         correction=1, dim=(0,), keepdim=True, self=Is("x")),
    node("x.std", lambda T, i: i.x.std(), "StdBackward0", correction=None, dim=None,
         keepdim=False, **XR),
    node("x.std_0", lambda T, i: i.x.std(0), "StdBackward0", correction=1, dim=(0,),
         keepdim=False, **XR),
    node("x.std_correction=0", lambda T, i: i.x.std(correction=0), "StdBackward0",
         correction=0, dim=None, keepdim=False, **XR),
    node("x.std_-1_keepdim_unbiased=False", lambda T, i: i.x.std(-1, keepdim=True,
         unbiased=False), "StdBackward0", correction=0, dim=(NEG1,), keepdim=True, **XR),
    node("T.std_1", lambda T, i: T.std(i.x, 1), "StdBackward0", correction=1, dim=(1,),
         keepdim=False, **XR),
    node("T.std_(0,1)_correction=0", lambda T, i: T.std(i.x, dim=(0, 1), correction=0),
         "StdBackward0", correction=0, dim=(0, 1), keepdim=False, **XR),
    node("x.cumsum_0", lambda T, i: i.x.cumsum(0), "CumsumBackward0", dim=0),
    node("x.cumsum_-1", lambda T, i: i.x.cumsum(-1), "CumsumBackward0", dim=NEG1),
    node("T.cumsum_dim=1", lambda T, i: T.cumsum(i.x, dim=1), "CumsumBackward0", dim=1),
    node("x.cumprod_0", lambda T, i: i.x.cumprod(0), "CumprodBackward0", dim=0, **XR),
    node("x.cumprod_-1", lambda T, i: i.x.cumprod(-1), "CumprodBackward0", dim=NEG1, **XR),
    node("T.cumprod_dim=1_dtype", lambda T, i: T.cumprod(i.x, dim=1, dtype=T.float64),
         "CumprodBackward0", dim=1, **XR),
    node("x.sort", lambda T, i: i.x.sort(), "SortBackward0", dim=NEG1, indices=INDICES,
         **SIZES),
    node("x.sort_0", lambda T, i: i.x.sort(0), "SortBackward0", dim=0, indices=INDICES,
         **SIZES),
    node("x.sort_descending", lambda T, i: i.x.sort(descending=True), "SortBackward0",
         dim=NEG1, indices=INDICES, **SIZES),
    node("T.sort_0_descending", lambda T, i: T.sort(i.x, dim=0, descending=True),
         "SortBackward0", dim=0, indices=INDICES, **SIZES),
    # the stable overload has its own node
    node("x.sort_stable", lambda T, i: i.x.sort(stable=True), "SortBackward1", dim=NEG1,
         indices=INDICES, **SIZES),
    node("T.sort_stable_dim=0", lambda T, i: T.sort(i.x, stable=True, dim=0), "SortBackward1",
         dim=0, indices=INDICES, **SIZES),
]


def check_saved(T, actual, expected, inputs, out, res):
    if isinstance(expected, Is):
        assert actual is getattr(inputs, expected.name)
    elif isinstance(expected, Out):
        assert actual is getattr(res, expected.field)
    elif isinstance(expected, Result):
        assert isinstance(actual, T.Tensor)
        assert actual is not out
        np.testing.assert_array_equal(to_np(actual), to_np(out))
    elif expected is None:
        assert actual is None
    else:
        assert type(actual) is type(expected)
        assert actual == expected


@pytest.mark.parametrize("fn,name,saved", NODE_CASES)
def test_node_name_and_saved_fields(T, rng, fn, name, saved):
    inputs = graph_inputs(T, rng)
    res = fn(T, inputs)
    out = res if isinstance(res, T.Tensor) else res.values
    grad_fn = out.grad_fn
    assert type(grad_fn).__name__ == name
    assert sorted(a for a in dir(grad_fn) if a.startswith("_saved_")) == sorted(saved)
    for attr, expected in saved.items():
        check_saved(T, getattr(grad_fn, attr), expected, inputs, out, res)


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda T, x: x.argmax(), id="x.argmax"),
        pytest.param(lambda T, x: x.argmin(1), id="x.argmin_1"),
        pytest.param(lambda T, x: T.argmax(x, dim=0, keepdim=True), id="T.argmax_0_keepdim"),
        pytest.param(lambda T, x: T.argmin(x), id="T.argmin"),
        pytest.param(lambda T, x: x.max(1).indices, id="max_1.indices"),
        pytest.param(lambda T, x: x.min(0)[1], id="min_0[1]"),
        pytest.param(lambda T, x: x.sort().indices, id="sort.indices"),
    ],
)
def test_indices_are_int64_without_grad(T, rng, fn):
    x = leaf(T, distinct(rng, (2, 3)))
    idx = fn(T, x)
    assert idx.dtype == T.int64
    assert idx.requires_grad is False
    assert idx.grad_fn is None


# --------------------------------------------------------------------------------------------
# Forward values against NumPy
# --------------------------------------------------------------------------------------------


def np_var(a, axis=None, ddof=1, keepdims=False):
    return np.var(a, axis=axis, ddof=ddof, keepdims=keepdims)


def np_std(a, axis=None, ddof=1, keepdims=False):
    return np.std(a, axis=axis, ddof=ddof, keepdims=keepdims)


# id, fn(T, x), NumPy reference, input shape
SHAPED = [
    ("x.sum_(0,1)", lambda T, x: x.sum((0, 1)), lambda a: a.sum((0, 1)), (2, 3)),
    ("x.sum_(0,2)", lambda T, x: x.sum((0, 2)), lambda a: a.sum((0, 2)), (2, 1, 3)),
    ("x.sum_(-1,0)", lambda T, x: x.sum((-1, 0)), lambda a: a.sum((-1, 0)), (2, 1, 3)),
    ("x.sum_(2,0)_keepdim", lambda T, x: x.sum((2, 0), keepdim=True),
     lambda a: a.sum((2, 0), keepdims=True), (2, 1, 3)),
    ("x.sum_[1]", lambda T, x: x.sum([1]), lambda a: a.sum(1), (2, 3)),
    ("x.sum_dim=()", lambda T, x: x.sum(()), np.sum, (2, 3)),  # an empty tuple reduces all
    ("T.sum_(0,-1)", lambda T, x: T.sum(x, (0, -1)), lambda a: a.sum((0, -1)), (2, 3)),
    ("x.sum_(0,)_0d", lambda T, x: x.sum((0,)), np.sum, ()),
    ("x.sum_(0,)_size1", lambda T, x: x.sum((0,)), np.sum, (1,)),
    ("x.mean_(0,1)", lambda T, x: x.mean((0, 1)), lambda a: a.mean((0, 1)), (2, 3)),
    ("x.mean_(-2,-1)_keepdim", lambda T, x: x.mean((-2, -1), keepdim=True),
     lambda a: a.mean((-2, -1), keepdims=True), (2, 1, 3)),
    ("x.mean_dim=()", lambda T, x: x.mean(()), np.mean, (2, 3)),
    ("T.mean_(2,)", lambda T, x: T.mean(x, (2,)), lambda a: a.mean(2), (2, 1, 3)),
    ("x.max", lambda T, x: x.max(), np.max, (2, 3)),
    ("x.max_0d", lambda T, x: x.max(), np.max, ()),
    ("T.max", lambda T, x: T.max(x), np.max, (1,)),
    ("x.min", lambda T, x: x.min(), np.min, (2, 3)),
    ("T.min_0d", lambda T, x: T.min(x), np.min, ()),
    ("x.amax", lambda T, x: x.amax(), np.max, (2, 3)),
    ("x.amax_0", lambda T, x: x.amax(0), lambda a: a.max(0), (2, 3)),
    ("x.amax_-1_keepdim", lambda T, x: x.amax(-1, keepdim=True),
     lambda a: a.max(-1, keepdims=True), (2, 3)),
    ("x.amax_(0,2)", lambda T, x: x.amax((0, 2)), lambda a: a.max((0, 2)), (2, 1, 3)),
    ("x.amax_dim=()", lambda T, x: x.amax(()), np.max, (2, 3)),
    ("x.amax_dim=None", lambda T, x: x.amax(None), np.max, (2, 3)),
    ("T.amax_(0,)_0d", lambda T, x: T.amax(x, (0,)), np.max, ()),
    ("x.amin_1", lambda T, x: x.amin(1), lambda a: a.min(1), (2, 3)),
    ("T.amin_(0,-1)_keepdim", lambda T, x: T.amin(x, (0, -1), keepdim=True),
     lambda a: a.min((0, -1), keepdims=True), (2, 1, 3)),
    ("x.prod", lambda T, x: x.prod(), np.prod, (2, 3)),
    ("x.prod_0d", lambda T, x: x.prod(), np.prod, ()),
    ("T.prod", lambda T, x: T.prod(x), np.prod, (1,)),
    ("x.prod_0", lambda T, x: x.prod(0), lambda a: a.prod(0), (2, 3)),
    ("x.prod_-1_keepdim", lambda T, x: x.prod(-1, keepdim=True),
     lambda a: a.prod(-1, keepdims=True), (2, 1, 3)),
    ("T.prod_1", lambda T, x: T.prod(x, 1), lambda a: a.prod(1), (2, 1, 3)),
    ("x.prod_0_0d", lambda T, x: x.prod(0), np.prod, ()),
    ("x.var", lambda T, x: x.var(), np_var, (2, 3)),
    ("x.var_0", lambda T, x: x.var(0), lambda a: np_var(a, 0), (2, 3)),
    ("x.var_-1_keepdim", lambda T, x: x.var(-1, keepdim=True),
     lambda a: np_var(a, -1, keepdims=True), (2, 3)),
    ("x.var_correction=0", lambda T, x: x.var(correction=0), lambda a: np_var(a, ddof=0),
     (2, 3)),
    ("x.var_unbiased=False", lambda T, x: x.var(unbiased=False), lambda a: np_var(a, ddof=0),
     (5,)),
    ("x.var_1_unbiased=True", lambda T, x: x.var(1, unbiased=True), lambda a: np_var(a, 1),
     (2, 3)),
    ("x.var_(0,2)_correction=2", lambda T, x: x.var(dim=(0, 2), correction=2),
     lambda a: np_var(a, (0, 2), ddof=2), (2, 1, 3)),
    ("x.var_correction=1.5", lambda T, x: x.var(correction=1.5), lambda a: np_var(a, ddof=1.5),
     (2, 3)),
    ("x.var_keepdim_no_dim", lambda T, x: x.var(keepdim=True),
     lambda a: np_var(a, keepdims=True), (2, 3)),
    ("T.var_0_keepdim", lambda T, x: T.var(x, 0, keepdim=True),
     lambda a: np_var(a, 0, keepdims=True), (2, 3)),
    ("x.var_correction=0_0d", lambda T, x: x.var(correction=0), lambda a: np_var(a, ddof=0),
     ()),
    ("x.std", lambda T, x: x.std(), np_std, (2, 3)),
    ("x.std_0", lambda T, x: x.std(0), lambda a: np_std(a, 0), (2, 3)),
    ("x.std_correction=0", lambda T, x: x.std(correction=0), lambda a: np_std(a, ddof=0),
     (2, 3)),
    ("x.std_-1_keepdim_unbiased=False", lambda T, x: x.std(-1, keepdim=True, unbiased=False),
     lambda a: np_std(a, -1, ddof=0, keepdims=True), (2, 3)),
    ("T.std_1", lambda T, x: T.std(x, 1), lambda a: np_std(a, 1), (2, 3)),
    ("T.std_(0,1)_keepdim", lambda T, x: T.std(x, (0, 1), keepdim=True),
     lambda a: np_std(a, (0, 1), keepdims=True), (2, 3)),
    ("x.cumsum_0", lambda T, x: x.cumsum(0), lambda a: a.cumsum(0), (2, 3)),
    ("x.cumsum_-1", lambda T, x: x.cumsum(-1), lambda a: a.cumsum(-1), (2, 3)),
    ("T.cumsum_dim=1", lambda T, x: T.cumsum(x, dim=1), lambda a: a.cumsum(1), (2, 1, 3)),
    ("x.cumsum_0_1d", lambda T, x: x.cumsum(0), np.cumsum, (5,)),
    ("x.cumsum_0_size1", lambda T, x: x.cumsum(0), np.cumsum, (1,)),
    ("x.cumsum_0_0d", lambda T, x: x.cumsum(0), lambda a: a, ()),
    ("x.cumprod_0", lambda T, x: x.cumprod(0), lambda a: a.cumprod(0), (3, 2)),
    ("x.cumprod_-1", lambda T, x: x.cumprod(-1), lambda a: a.cumprod(-1), (2, 4)),
    ("T.cumprod_dim=1", lambda T, x: T.cumprod(x, dim=1), lambda a: a.cumprod(1), (2, 3, 2)),
    ("x.cumprod_0_size1", lambda T, x: x.cumprod(0), np.cumprod, (1,)),
    ("x.cumprod_0_0d", lambda T, x: x.cumprod(0), lambda a: a, ()),
]
SHAPED_PARAMS = [pytest.param(*row[1:], id=row[0]) for row in SHAPED]


@pytest.mark.parametrize("fn,ref,shape", SHAPED_PARAMS)
def test_shaped_forward(T, rng, fn, ref, shape):
    a = distinct(rng, shape)
    y = fn(T, T.tensor(a))
    expected = np.asarray(ref(a))
    assert tuple(y.shape) == expected.shape
    assert y.dtype == T.float64
    np.testing.assert_allclose(to_np(y), expected, rtol=1e-12, atol=1e-15)


# id, fn(T, x) -> (values, indices), NumPy reference -> (values, indices), input shape
NAMED = [
    ("x.max_0", lambda T, x: x.max(0), lambda a: (a.max(0), a.argmax(0)), (2, 3)),
    ("x.max_1", lambda T, x: x.max(1), lambda a: (a.max(1), a.argmax(1)), (2, 3)),
    ("x.max_-1_keepdim", lambda T, x: x.max(-1, keepdim=True),
     lambda a: (a.max(-1, keepdims=True), a.argmax(-1, keepdims=True)), (2, 1, 3)),
    ("x.max_dim=0_keepdim", lambda T, x: x.max(dim=0, keepdim=True),
     lambda a: (a.max(0, keepdims=True), a.argmax(0, keepdims=True)), (3,)),
    ("T.max_x_1", lambda T, x: T.max(x, 1), lambda a: (a.max(1), a.argmax(1)), (2, 1, 3)),
    ("x.max_0_0d", lambda T, x: x.max(0), lambda a: (a, np.array(0)), ()),
    ("x.max_-1_size1", lambda T, x: x.max(-1), lambda a: (a.max(-1), a.argmax(-1)), (1,)),
    ("x.min_1", lambda T, x: x.min(1), lambda a: (a.min(1), a.argmin(1)), (2, 3)),
    ("T.min_dim=0", lambda T, x: T.min(x, dim=0), lambda a: (a.min(0), a.argmin(0)), (2, 3)),
    ("T.min_x_-1_keepdim", lambda T, x: T.min(x, -1, keepdim=True),
     lambda a: (a.min(-1, keepdims=True), a.argmin(-1, keepdims=True)), (2, 3)),
    ("x.sort", lambda T, x: x.sort(), lambda a: (np.sort(a), np.argsort(a)), (2, 3)),
    ("x.sort_0", lambda T, x: x.sort(0), lambda a: (np.sort(a, 0), np.argsort(a, 0)), (2, 3)),
    ("x.sort_dim=1", lambda T, x: x.sort(dim=1), lambda a: (np.sort(a, 1), np.argsort(a, 1)),
     (2, 1, 3)),
    ("x.sort_descending", lambda T, x: x.sort(descending=True),
     lambda a: (-np.sort(-a), np.argsort(-a)), (2, 3)),
    ("x.sort_0_True", lambda T, x: x.sort(0, True),
     lambda a: (-np.sort(-a, 0), np.argsort(-a, 0)), (2, 3)),
    ("T.sort_stable", lambda T, x: T.sort(x, stable=True), lambda a: (np.sort(a), np.argsort(a)),
     (5,)),
    ("T.sort_0_descending", lambda T, x: T.sort(x, 0, descending=True),
     lambda a: (-np.sort(-a, 0), np.argsort(-a, 0)), (3, 2)),
    ("x.sort_0d", lambda T, x: x.sort(), lambda a: (a, np.array(0)), ()),
    ("x.sort_size1", lambda T, x: x.sort(), lambda a: (a, np.array([0])), (1,)),
]
NAMED_PARAMS = [pytest.param(*row[1:], id=row[0]) for row in NAMED]


@pytest.mark.parametrize("fn,ref,shape", NAMED_PARAMS)
def test_values_indices_forward(T, rng, fn, ref, shape):
    a = distinct(rng, shape)
    res = fn(T, T.tensor(a))
    values, indices = ref(a)
    assert isinstance(res, tuple)
    assert len(res) == 2
    assert res[0] is res.values
    assert res[1] is res.indices
    v, i = res  # tuple unpacking
    assert v is res.values
    assert i is res.indices
    assert v.dtype == T.float64
    assert i.dtype == T.int64
    assert tuple(v.shape) == values.shape
    assert tuple(i.shape) == indices.shape
    np.testing.assert_array_equal(to_np(v), values)
    np.testing.assert_array_equal(to_np(i), indices)


# id, fn(T, x), NumPy reference, input shape
ARG = [
    ("x.argmax", lambda T, x: x.argmax(), np.argmax, (2, 3)),
    ("x.argmax_0", lambda T, x: x.argmax(0), lambda a: a.argmax(0), (2, 3)),
    ("x.argmax_-1_keepdim", lambda T, x: x.argmax(-1, keepdim=True),
     lambda a: a.argmax(-1, keepdims=True), (2, 1, 3)),
    ("x.argmax_keepdim_no_dim", lambda T, x: x.argmax(keepdim=True),
     lambda a: a.argmax(keepdims=True), (2, 3)),
    ("T.argmax_dim=1", lambda T, x: T.argmax(x, dim=1), lambda a: a.argmax(1), (2, 3)),
    ("x.argmax_0d", lambda T, x: x.argmax(), lambda a: np.array(0), ()),
    ("x.argmax_0_0d", lambda T, x: x.argmax(0), lambda a: np.array(0), ()),
    ("x.argmax_size1", lambda T, x: x.argmax(), lambda a: np.array(0), (1,)),
    ("x.argmin", lambda T, x: x.argmin(), np.argmin, (2, 3)),
    ("x.argmin_1", lambda T, x: x.argmin(1), lambda a: a.argmin(1), (2, 3)),
    ("T.argmin_0_keepdim", lambda T, x: T.argmin(x, 0, keepdim=True),
     lambda a: a.argmin(0, keepdims=True), (2, 3)),
    ("T.argmin", lambda T, x: T.argmin(x), np.argmin, (5,)),
]


@pytest.mark.parametrize("fn,ref,shape", [pytest.param(*r[1:], id=r[0]) for r in ARG])
def test_argmax_argmin_forward(T, rng, fn, ref, shape):
    a = distinct(rng, shape)
    y = fn(T, leaf(T, a))
    expected = np.asarray(ref(a))
    assert y.dtype == T.int64
    assert y.requires_grad is False
    assert tuple(y.shape) == expected.shape
    np.testing.assert_array_equal(to_np(y), expected)


# --------------------------------------------------------------------------------------------
# gradcheck and gradgradcheck in float64 (tie-free inputs)
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn,ref,shape", SHAPED_PARAMS)
def test_shaped_gradcheck(T, rng, fn, ref, shape):
    check_grads(T, lambda x: fn(T, x), distinct(rng, shape))


@pytest.mark.parametrize("fn,ref,shape", NAMED_PARAMS)
def test_values_gradcheck(T, rng, fn, ref, shape):
    check_grads(T, lambda x: fn(T, x).values, distinct(rng, shape))


@pytest.mark.parametrize(
    "values",
    [
        pytest.param([2.0, 0.0, 3.0, 4.0], id="one_zero"),
        pytest.param([2.0, 0.0, 3.0, 0.0], id="two_zeros"),
        pytest.param([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.0, 2.0, 3.0]], id="2d_zeros"),
    ],
)
@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda x: x.prod(), id="prod"),
        pytest.param(lambda x: x.prod(0), id="prod_0"),
        pytest.param(lambda x: x.prod(-1, keepdim=True), id="prod_-1_keepdim"),
    ],
)
def test_prod_with_zeros_gradcheck(T, fn, values):
    check_grads(T, fn, values)


@pytest.mark.parametrize(
    "values",
    [
        pytest.param([2.0, 0.0, 3.0, 4.0], id="one_zero"),
        pytest.param([0.0, 1.5, 0.0, -2.0, 0.5], id="two_zeros"),
        pytest.param([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.0, -2.0, 3.0]], id="2d_zeros"),
    ],
)
@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda x: x.cumprod(0), id="cumprod_0"),
        pytest.param(lambda x: x.cumprod(-1), id="cumprod_-1"),
    ],
)
def test_cumprod_with_zeros_gradcheck(T, fn, values):
    # gradcheck's backward takes torch's O(n) form at zeros, gradgradcheck's the O(n^2) one
    check_grads(T, fn, values)


def test_sort_descending_puts_nan_first_and_keeps_ties_in_order(T):
    nan, inf = float("nan"), float("inf")
    x = T.tensor([1.0, nan, inf, 0.0, -0.0, nan, -inf])
    values, indices = x.sort(descending=True)
    assert indices.tolist() == [1, 5, 2, 0, 3, 4, 6]
    assert x.sort().indices.tolist() == [6, 3, 4, 0, 2, 1, 5]


@pytest.mark.parametrize("dtype", ["uint8", "int64"])
def test_sort_descending_of_integers_does_not_overflow(T, dtype):
    values = [0, 1, 255, 7] if dtype == "uint8" else [-(2**63), 0, 5, -1]
    x = T.tensor(values, dtype=getattr(T, dtype))
    assert x.sort(descending=True).values.tolist() == sorted(values, reverse=True)


def test_sort_of_a_0d_tensor_checks_the_dim(T):
    assert T.tensor(1.0).sort(-1).indices.item() == 0
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-1, 0\], but got 3\)"):
        T.tensor(1.0).sort(3)


def test_sorted_values_feed_further_ops_gradcheck(T, rng):
    check_grads(T, lambda x: (x.sort(0).values * x).cumsum(1).amax(1), distinct(rng, (3, 2)))


# --------------------------------------------------------------------------------------------
# Gradients at ties and zeros: the exact values torch picks
# --------------------------------------------------------------------------------------------

TIE = [[1.0, 3.0, 3.0], [2.0, 3.0, 0.0]]
THIRD = 1.0 / 3.0

# id, fn(T, x), input values, upstream gradient, expected gradient
TIE_CASES = [
    # max() / min() of the whole tensor split the gradient evenly over all ties
    ("max_3_ties", lambda T, x: x.max(), TIE, 3.0, [[0, 1, 1], [0, 1, 0]]),
    ("T.max_3_ties", lambda T, x: T.max(x), TIE, 1.0, [[0, THIRD, THIRD], [0, THIRD, 0]]),
    ("min_3_ties", lambda T, x: x.min(), [[1.0, 0.0, 0.0], [0.0, 3.0, 5.0]], 3.0,
     [[0, 1, 1], [1, 0, 0]]),
    ("max_no_tie", lambda T, x: x.max(), [[1.0, 3.0], [2.0, 0.0]], 2.0, [[0, 2], [0, 0]]),
    ("max_all_equal", lambda T, x: x.max(), [2.0, 2.0, 2.0, 2.0], 1.0, [0.25] * 4),
    # max(dim) / min(dim) send it all to the returned index (the first occurrence)
    ("max_1_ties", lambda T, x: x.max(1).values, TIE, [1.0, 2.0], [[0, 1, 0], [0, 2, 0]]),
    ("max_0_ties", lambda T, x: x.max(0).values, [[1.0, 3.0, 3.0], [1.0, 3.0, 0.0]],
     [1.0, 2.0, 3.0], [[1, 2, 3], [0, 0, 0]]),
    ("min_1_ties", lambda T, x: x.min(1).values, [[1.0, 1.0, 3.0], [2.0, 0.0, 0.0]], [1.0, 2.0],
     [[1, 0, 0], [0, 2, 0]]),
    ("max_1_keepdim_ties", lambda T, x: x.max(1, keepdim=True).values, TIE, [[1.0], [2.0]],
     [[0, 1, 0], [0, 2, 0]]),
    # amax / amin split evenly over the ties of each reduced slice
    ("amax_ties", lambda T, x: x.amax(), TIE, 3.0, [[0, 1, 1], [0, 1, 0]]),
    ("amax_1_ties", lambda T, x: x.amax(1), TIE, [1.0, 2.0], [[0, 0.5, 0.5], [0, 2, 0]]),
    ("amax_(0,1)_ties", lambda T, x: x.amax((0, 1)), TIE, 3.0, [[0, 1, 1], [0, 1, 0]]),
    ("amax_0_keepdim_ties", lambda T, x: x.amax(0, keepdim=True), TIE, [[1.0, 2.0, 3.0]],
     [[0, 1, 3], [1, 1, 0]]),
    ("amin_0_ties", lambda T, x: x.amin(0), [[1.0, 1.0, 3.0], [1.0, 0.0, 0.0]], [2.0, 4.0, 6.0],
     [[1, 0, 0], [1, 4, 6]]),
    ("T.amin_ties", lambda T, x: T.amin(x), [[1.0, 0.0], [0.0, 3.0]], 1.0, [[0, 0.5], [0.5, 0]]),
    # a nan extremum: the gradient goes to the nan elements
    ("max_nan", lambda T, x: x.max(), [1.0, np.nan, 3.0], 2.0, [0, 2, 0]),
    ("min_two_nans", lambda T, x: x.min(), [np.nan, 1.0, np.nan], 2.0, [1, 0, 1]),
    # prod with zeros
    ("prod_one_zero", lambda T, x: x.prod(), [2.0, 0.0, 3.0, 4.0], 1.0, [0, 24, 0, 0]),
    ("prod_two_zeros", lambda T, x: x.prod(), [2.0, 0.0, 3.0, 0.0], 1.0, [0, 0, 0, 0]),
    ("prod_no_zero", lambda T, x: x.prod(), [2.0, 0.5, 3.0], 2.0, [3, 12, 2]),
    ("prod_1_zeros", lambda T, x: x.prod(1), [[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.0, 2.0, 3.0]],
     [1.0, 1.0, 2.0], [[0, 6, 0], [0, 0, 0], [12, 6, 4]]),
    ("prod_0_zeros", lambda T, x: x.prod(0), [[2.0, 0.0, 0.0], [0.0, 4.0, 0.0]], [1.0, 1.0, 1.0],
     [[0, 4, 0], [2, 0, 0]]),
    ("prod_-1_keepdim_zero", lambda T, x: x.prod(-1, keepdim=True), [[0.0, 5.0], [3.0, 0.0]],
     [[1.0], [2.0]], [[5, 0], [0, 6]]),
    # std at zero variance: zero gradient, not nan
    ("std_constant", lambda T, x: x.std(), [1.5, 1.5, 1.5], 1.0, [0, 0, 0]),
    ("std_0_constant_column", lambda T, x: x.std(0), [[1.0, 2.0], [1.0, 4.0]], [1.0, 1.0],
     [[0, -np.sqrt(0.5)], [0, np.sqrt(0.5)]]),
    # sort with ties: the gradient follows the (stable) permutation
    ("sort_stable_ties", lambda T, x: x.sort(stable=True).values, [2.0, 1.0, 2.0, 1.0],
     [1.0, 2.0, 3.0, 4.0], [3, 1, 4, 2]),
    ("sort_descending_stable_ties", lambda T, x: x.sort(descending=True, stable=True).values,
     [2.0, 1.0, 2.0, 1.0], [1.0, 2.0, 3.0, 4.0], [1, 3, 2, 4]),
    ("cumsum_0", lambda T, x: x.cumsum(0), [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [6, 5, 3]),
]


@pytest.mark.parametrize("fn,values,g,expected", [pytest.param(*r[1:], id=r[0])
                                                   for r in TIE_CASES])
def test_gradient_at_ties_and_zeros(T, fn, values, g, expected):
    x = leaf(T, np.asarray(values, dtype=np.float64))
    y = fn(T, x)
    y.backward(T.tensor(np.asarray(g, dtype=np.float64)))
    np.testing.assert_allclose(to_np(x.grad), np.asarray(expected, dtype=np.float64),
                               rtol=1e-14, atol=0)


@pytest.mark.parametrize("name", ["max", "min"])
def test_whole_extremum_gradient_is_a_masked_fill_of_zeros(T, name):
    # torch's evenly_distribute_backward: zeros.masked_fill_(x == result, grad / count)
    x = leaf(T, np.array([1.0, 3.0, 1.0, 3.0]))
    g = leaf(T, np.array(2.0))
    (gx,) = T.autograd.grad(getattr(x, name)(), x, g, create_graph=True)
    assert gx.grad_fn.name() == "MaskedFillBackward1"
    (gg,) = T.autograd.grad(gx.sum(), g)
    assert float(gg) == 1.0


@pytest.mark.parametrize(
    "fn,values,indices",
    [
        pytest.param(lambda x: x.max(1), TIE, [1, 1], id="max_1"),
        pytest.param(lambda x: x.max(0), [[1.0, 3.0, 3.0], [1.0, 3.0, 0.0]], [0, 0, 0],
                     id="max_0"),
        pytest.param(lambda x: x.min(1), [[1.0, 1.0, 3.0], [2.0, 0.0, 0.0]], [0, 1], id="min_1"),
        pytest.param(lambda x: x.sort(stable=True), [2.0, 1.0, 2.0, 1.0], [1, 3, 0, 2],
                     id="sort_stable"),
        pytest.param(lambda x: x.sort(descending=True, stable=True), [2.0, 1.0, 2.0, 1.0],
                     [0, 2, 1, 3], id="sort_descending_stable"),
    ],
)
def test_indices_at_ties(T, fn, values, indices):
    res = fn(T.tensor(np.asarray(values)))
    np.testing.assert_array_equal(to_np(res.indices), indices)


@pytest.mark.parametrize(
    "fn,values,expected",
    [
        pytest.param(lambda x: x.argmax(), [1.0, 3.0, 3.0, 0.0], 1, id="argmax"),
        pytest.param(lambda x: x.argmin(), [1.0, 0.0, 3.0, 0.0], 1, id="argmin"),
        pytest.param(lambda x: x.argmax(1), [[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], [1, 0],
                     id="argmax_1"),
        pytest.param(lambda x: x.argmin(0), [[1.0, 0.0], [1.0, 0.0]], [0, 0], id="argmin_0"),
        pytest.param(lambda x: x.argmax(), [[5.0, 1.0], [5.0, 5.0]], 0, id="argmax_flat"),
    ],
)
def test_argmax_argmin_first_occurrence(T, fn, values, expected):
    np.testing.assert_array_equal(to_np(fn(T.tensor(np.asarray(values)))), expected)


def test_var_of_single_element_is_nan_with_warning(T):
    x = T.tensor(np.array([1.5]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        v = x.var()
    assert np.isnan(to_np(v))
    assert any("degrees of freedom is <= 0" in str(w.message) for w in caught)
    assert float(x.var(correction=0)) == 0.0


@pytest.mark.parametrize("values,kwargs,expected", [
    pytest.param([-1.5], {}, [np.nan], id="one_element"),
    pytest.param(2.0, {"dim": 0}, np.nan, id="0d_over_dim_0"),
    pytest.param([1.0, 2.0], {"correction": 2}, [np.inf, np.inf], id="correction_2"),
])
def test_var_gradient_without_degrees_of_freedom_is_a_constant(T, values, kwargs, expected):
    # torch: the gradient times nan where x equals its mean, inf elsewhere; with a gradient
    # that needs no graph, neither does the result.
    x = T.tensor(values, dtype=T.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (g,) = T.autograd.grad(x.var(**kwargs).sum() * 3, [x], create_graph=True)
    assert not g.requires_grad
    np.testing.assert_array_equal(to_np(g), expected)


@pytest.mark.parametrize("op", ["var", "std"])
def test_var_gradient_without_degrees_of_freedom_scales_the_incoming_gradient(T, op):
    x = T.tensor([1.0, 2.0, 3.0], dtype=T.float64, requires_grad=True)
    g = T.tensor(-1.0, dtype=T.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (gx,) = T.autograd.grad(getattr(x, op)(correction=3), [x], g, create_graph=True)
    # grad * where(x == mean, nan, inf) in float32, converted back to float64
    assert gx.grad_fn.name() == "ToCopyBackward0"
    expected = [-np.inf, np.nan, -np.inf] if op == "var" else [np.nan] * 3
    np.testing.assert_array_equal(to_np(gx), expected)


def test_var_gradient_of_one_element_over_a_dim_stays_differentiable(T):
    x = T.tensor([-1.5], dtype=T.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (g,) = T.autograd.grad(x.var(0), [x], create_graph=True)
    assert g.requires_grad and np.isnan(to_np(g)).all()


# --------------------------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------------------------

I64 = np.array([[3, -1, 2], [0, 5, 1]], dtype=np.int64)
I32 = I64.astype(np.int32)
BOOL = np.array([[True, False, True], [True, True, False]])
F32 = np.array([[0.5, -1.5, 2.0], [1.0, 0.25, -3.0]], dtype=np.float32)

# id, fn(T), result dtype, expected values
DTYPE_CASES = [
    ("sum_(0,1)_int32", lambda T: T.tensor(I32).sum((0, 1)), "int64", I32.sum()),
    ("sum_(1,)_bool", lambda T: T.tensor(BOOL).sum((1,)), "int64", BOOL.sum(1)),
    ("sum_(0,1)_float32", lambda T: T.tensor(F32).sum((0, 1)), "float32", F32.sum()),
    ("prod_int32", lambda T: T.tensor(I32).prod(), "int64", I32.prod()),
    ("prod_0_int32", lambda T: T.tensor(I32).prod(0), "int64", I32.prod(0)),
    ("prod_bool", lambda T: T.tensor(BOOL).prod(), "int64", 0),
    ("prod_1_bool", lambda T: T.tensor(BOOL).prod(1), "int64", [0, 0]),
    ("prod_float32", lambda T: T.tensor(F32).prod(), "float32", F32.prod()),
    ("max_int32", lambda T: T.tensor(I32).max(), "int32", 5),
    ("min_int64", lambda T: T.tensor(I64).min(), "int64", -1),
    ("max_bool", lambda T: T.tensor(BOOL).max(), "bool", True),
    ("max_1_int32.values", lambda T: T.tensor(I32).max(1).values, "int32", [3, 5]),
    ("min_0_bool.values", lambda T: T.tensor(BOOL).min(0).values, "bool", [True, False, False]),
    ("max_1_int32.indices", lambda T: T.tensor(I32).max(1).indices, "int64", [0, 1]),
    ("amax_int32", lambda T: T.tensor(I32).amax(), "int32", 5),
    ("amin_1_int64", lambda T: T.tensor(I64).amin(1), "int64", [-1, 0]),
    ("amax_bool", lambda T: T.tensor(BOOL).amax(), "bool", True),
    ("amax_0_float32", lambda T: T.tensor(F32).amax(0), "float32", F32.max(0)),
    ("cumsum_1_int32", lambda T: T.tensor(I32).cumsum(1), "int64", I32.cumsum(1)),
    ("cumsum_0_bool", lambda T: T.tensor(BOOL).cumsum(0), "int64", BOOL.cumsum(0)),
    ("cumsum_0_float32", lambda T: T.tensor(F32).cumsum(0), "float32", F32.cumsum(0)),
    ("cumprod_1_int32", lambda T: T.tensor(I32).cumprod(1), "int64", I32.cumprod(1)),
    ("cumprod_0_bool", lambda T: T.tensor(BOOL).cumprod(0), "int64", BOOL.cumprod(0)),
    ("cumprod_0_float32", lambda T: T.tensor(F32).cumprod(0), "float32", F32.cumprod(0)),
    ("cumprod_1_dtype=float64", lambda T: T.tensor(F32).cumprod(1, dtype=T.float64), "float64",
     F32.astype(np.float64).cumprod(1)),
    # dtype= converts the input first: the products of the truncated values
    ("cumprod_1_dtype=int64", lambda T: T.tensor(F32).cumprod(1, dtype=T.int64), "int64",
     F32.astype(np.int64).cumprod(1)),
    # torch's float32 running product is kept in float64, rounded at each step: past an
    # overflow to inf the next factor brings it back
    ("cumprod_0_float32_runs_in_float64",
     lambda T: T.tensor(np.array([1e30, 1e30, 1e-30], np.float32)).cumprod(0), "float32",
     [1e30, np.inf, 1e30]),
    ("argmax_int32", lambda T: T.tensor(I32).argmax(), "int64", 4),
    ("argmin_1_int64", lambda T: T.tensor(I64).argmin(1), "int64", [1, 0]),
    ("argmax_1_float32", lambda T: T.tensor(F32).argmax(1), "int64", [2, 0]),
    ("sort_int32.values", lambda T: T.tensor(I32).sort().values, "int32", np.sort(I32)),
    ("sort_int32.indices", lambda T: T.tensor(I32).sort().indices, "int64", np.argsort(I32)),
    ("sort_0_bool.values", lambda T: T.tensor(BOOL).sort(0).values, "bool", np.sort(BOOL, 0)),
    ("var_float32", lambda T: T.tensor(F32).var(), "float32", np.var(F32, ddof=1)),
    ("std_0_float32", lambda T: T.tensor(F32).std(0), "float32", np.std(F32, 0, ddof=1)),
    ("mean_(0,1)_float32", lambda T: T.tensor(F32).mean((0, 1)), "float32", F32.mean()),
]


@pytest.mark.parametrize("fn,dtype,expected", [pytest.param(*r[1:], id=r[0]) for r in DTYPE_CASES])
def test_result_dtype_and_values(T, fn, dtype, expected):
    y = fn(T)
    assert y.dtype == getattr(T, dtype)
    np.testing.assert_allclose(to_np(y).astype(np.float64), np.asarray(expected, dtype=float),
                               rtol=1e-6)


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda x: x.max(), id="max"),
        pytest.param(lambda x: x.max(1).values, id="max_1"),
        pytest.param(lambda x: x.amax(0), id="amax_0"),
        pytest.param(lambda x: x.prod(1), id="prod_1"),
        pytest.param(lambda x: x.var(0), id="var_0"),
        pytest.param(lambda x: x.std(), id="std"),
        pytest.param(lambda x: x.cumsum(1), id="cumsum_1"),
        pytest.param(lambda x: x.cumprod(1), id="cumprod_1"),
        pytest.param(lambda x: x.sort(0).values, id="sort_0"),
        pytest.param(lambda x: x.sum((0, 1)), id="sum_(0,1)"),
    ],
)
def test_float32_grads_stay_float32(T, rng, fn):
    x = leaf(T, sample(rng, (2, 3), POS, dtype=np.float32))
    y = fn(x)
    assert y.dtype == T.float32
    y.sum().backward()
    assert x.grad.dtype == T.float32
    assert tuple(x.grad.shape) == (2, 3)


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


def f64(*shape):
    return np.zeros(shape, dtype=np.float64)


def x23(T):
    return T.tensor(f64(2, 3))


OOR = "Dimension out of range"
DUP = "appears multiple times in the list of dims"
NO_DIM = "Expected reduction dim to be specified for input.numel\\(\\) == 0"
ZERO_SIZE = "to have non-zero size"

# id, fn(T), exception type, message fragment
ERROR_CASES = [
    ("sum_(0,2)", lambda T: x23(T).sum((0, 2)), IndexError, OOR),
    ("sum_(-3,)", lambda T: x23(T).sum((-3,)), IndexError, OOR),
    ("mean_(0,-3)", lambda T: x23(T).mean((0, -3)), IndexError, OOR),
    ("max_2", lambda T: x23(T).max(2), IndexError, OOR),
    ("min_-3", lambda T: x23(T).min(-3), IndexError, OOR),
    ("max_1_0d", lambda T: T.tensor(1.0).max(1), IndexError, OOR),
    ("amax_2", lambda T: x23(T).amax(2), IndexError, OOR),
    ("amin_(0,5)", lambda T: x23(T).amin((0, 5)), IndexError, OOR),
    ("prod_2", lambda T: x23(T).prod(2), IndexError, OOR),
    ("var_2", lambda T: x23(T).var(2), IndexError, OOR),
    ("std_-3", lambda T: x23(T).std(-3), IndexError, OOR),
    ("cumsum_2", lambda T: x23(T).cumsum(2), IndexError, OOR),
    ("cumprod_2", lambda T: x23(T).cumprod(2), IndexError, OOR),
    ("cumprod_-3", lambda T: T.cumprod(x23(T), -3), IndexError, OOR),
    ("cumprod_1_0d", lambda T: T.tensor(1.0).cumprod(1), IndexError, OOR),
    ("cumprod_without_dim", lambda T: x23(T).cumprod(), TypeError,
     "missing 1 required positional argument"),
    ("cumprod_dtype_str", lambda T: x23(T).cumprod(0, dtype="x"), TypeError,
     "cumprod\\(\\): argument 'dtype' must be"),
    ("cumprod__dtype", lambda T: T.zeros(3).cumprod_(0, dtype=T.float64), RuntimeError,
     "Bad in-place call: input tensor dtype float and output tensor dtype double should match"),
    ("cumprod__int64_dtype", lambda T: T.tensor([2, 3]).cumprod_(0, dtype=T.float32),
     RuntimeError, "input tensor dtype long int and output tensor dtype float should match"),
    ("cumprod__dtype_str", lambda T: T.zeros(3).cumprod_(0, dtype="x"), TypeError,
     "cumprod_\\(\\): argument 'dtype' must be"),
    ("cumprod__bool", lambda T: T.tensor([True, False]).cumprod_(0), NotImplementedError,
     "\"cumprod_out_cpu\" not implemented for 'Bool'"),
    ("argmax_2", lambda T: x23(T).argmax(2), IndexError, OOR),
    ("argmin_-3", lambda T: x23(T).argmin(-3), IndexError, OOR),
    ("sort_2", lambda T: x23(T).sort(2), IndexError, OOR),
    ("sum_dup", lambda T: x23(T).sum((0, 0)), RuntimeError, DUP),
    ("sum_dup_negative", lambda T: x23(T).sum((1, -1)), RuntimeError, DUP),
    ("mean_dup", lambda T: x23(T).mean((1, 1)), RuntimeError, DUP),
    ("amax_dup", lambda T: x23(T).amax((0, 0)), RuntimeError, DUP),
    ("sum_dup_0d", lambda T: T.tensor(1.0).sum((0, -1)), RuntimeError, DUP),
    ("max_empty", lambda T: T.tensor(f64(0)).max(), RuntimeError, "max\\(\\): " + NO_DIM),
    ("min_empty", lambda T: T.tensor(f64(0)).min(), RuntimeError, "min\\(\\): " + NO_DIM),
    ("amax_empty", lambda T: T.tensor(f64(0)).amax(), RuntimeError, "amax\\(\\): " + NO_DIM),
    ("amin_empty", lambda T: T.tensor(f64(0)).amin(), RuntimeError, "amin\\(\\): " + NO_DIM),
    ("argmax_empty", lambda T: T.tensor(f64(0)).argmax(), IndexError, "argmax\\(\\): " + NO_DIM),
    ("argmin_empty", lambda T: T.tensor(f64(0)).argmin(), IndexError, "argmin\\(\\): " + NO_DIM),
    ("max_0_empty", lambda T: T.tensor(f64(0)).max(0), IndexError,
     "max\\(\\): Expected reduction dim 0 to have non-zero size"),
    ("max_1_of_2x0", lambda T: T.tensor(f64(2, 0)).max(1), IndexError,
     "Expected reduction dim 1 to have non-zero size"),
    ("argmax_0_empty", lambda T: T.tensor(f64(0)).argmax(0), IndexError, ZERO_SIZE),
    ("amax_0_empty", lambda T: T.tensor(f64(0)).amax(0), IndexError,
     "amax\\(\\): Expected reduction dim 0 to have non-zero size"),
    # amax names the dim as given, max the wrapped one
    ("amin_(-1,0)_of_3x0", lambda T: T.tensor(f64(3, 0)).amin((-1, 0)), IndexError,
     "amin\\(\\): Expected reduction dim -1 to have non-zero size"),
    ("amax_(0,1)_of_3x0", lambda T: T.tensor(f64(3, 0)).amax((0, 1)), IndexError,
     "amax\\(\\): Expected reduction dim 1 to have non-zero size"),
    # each dim's size is checked, in the order given, before a repeated dim is looked for
    ("amax_repeated_empty_dim", lambda T: T.tensor(f64(0, 0)).amax((0, -1, -2)), IndexError,
     "amax\\(\\): Expected reduction dim 0 to have non-zero size"),
    ("amin_repeated_dim_then_empty_dim", lambda T: T.tensor(f64(2, 0)).amin((0, -1, -2)),
     IndexError, "amin\\(\\): Expected reduction dim -1 to have non-zero size"),
    ("amax_repeated_nonempty_dim_of_empty", lambda T: T.tensor(f64(0, 2)).amax((1, 1)),
     RuntimeError, DUP),
    ("min_-1_empty", lambda T: T.tensor(f64(0)).min(-1), IndexError,
     "min\\(\\): Expected reduction dim 0 to have non-zero size"),
    ("argmax_bool", lambda T: T.tensor(BOOL).argmax(), RuntimeError,
     "argmax\\(\\): does not support bool input"),
    ("var_int64", lambda T: T.tensor(I64).var(), RuntimeError,
     "std and var only support floating point and complex dtypes"),
    ("std_0_int32", lambda T: T.tensor(I32).std(0), RuntimeError,
     "std and var only support floating point and complex dtypes"),
    ("var_bool", lambda T: T.tensor(BOOL).var(), RuntimeError,
     "std and var only support floating point and complex dtypes"),
    ("mean_(0,)_int64", lambda T: T.tensor(I64).mean((0,)), RuntimeError,
     "mean\\(\\): could not infer output dtype"),
    ("var_unbiased_and_correction", lambda T: x23(T).var(unbiased=True, correction=1),
     TypeError, "invalid combination of arguments"),
    ("cumsum_without_dim", lambda T: x23(T).cumsum(), TypeError, "dim"),
]


@pytest.mark.parametrize("fn,exc,match", [pytest.param(*r[1:], id=r[0]) for r in ERROR_CASES])
def test_errors(T, fn, exc, match):
    with pytest.raises(exc, match=match):
        fn(T)


def test_max_over_empty_dim_of_nonempty_shape(T):
    # reducing a non-empty dim of a (0, 3) tensor is fine and gives empty results
    res = T.tensor(f64(0, 3)).max(1)
    assert tuple(res.values.shape) == (0,)
    assert res.indices.dtype == T.int64


def test_prod_gradient_goes_through_the_saved_result(T):
    x = T.tensor([[1.5, 2.0], [0.5, -3.0]], requires_grad=True)
    y = x.prod(-1)
    gx, gy = T.autograd.grad((y * 2).sum(), [x, y], create_graph=True)
    # the input's gradient depends on the result, so the result gets a second-order gradient
    ggy = T.autograd.grad(gx.sum(), [y], allow_unused=True)[0]
    assert ggy is not None
    np.testing.assert_allclose(ggy.tolist(), [2.0 * (1 / 1.5 + 1 / 2.0),
                                              2.0 * (1 / 0.5 - 1 / 3.0)], rtol=1e-6)


@pytest.mark.filterwarnings("ignore:var\\(\\)|std\\(\\):UserWarning")
@pytest.mark.parametrize("g", [-1.0, 0.0, 2.0])
def test_gradient_of_a_variance_without_degrees_of_freedom_is_grad_times_nan_or_inf(T, g):
    # torch: grad * (nan where x is its mean, inf elsewhere); std's goes through it with
    # grad / (2 std), and std is inf here.
    x = T.tensor([1.0, 2.0], requires_grad=True)
    x.var(correction=2).backward(T.tensor(g))
    want = {-1.0: -np.inf, 0.0: np.nan, 2.0: np.inf}[g]
    np.testing.assert_array_equal(x.grad.numpy(), [want, want])
    x.grad = None
    x.std(correction=3).backward(T.tensor(g))
    np.testing.assert_array_equal(x.grad.numpy(), [np.nan, np.nan])


def test_reductions_meeting_inf_minus_inf_give_nan_without_a_warning(T):
    # As a user's script sees it (Python's default warning filters, a fresh interpreter): torch
    # prints nothing; ext's NumPy kernels must not either.
    code = (f"import {T.__name__} as T\n"
            "x = T.tensor([float('inf'), -float('inf')])\n"
            "print([bool(r.isnan()) for r in (x.sum(), x.mean(), x.var(), x.std(),\n"
            "       x.sum(0), x.mean(0, keepdim=True), T.nn.functional.softmax(x, 0).sum())])")
    done = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True,
                          text=True, timeout=60)
    assert done.stderr == ""
    assert done.stdout.strip() == "[True, True, True, True, True, True, True]"


@pytest.mark.parametrize("shape,dim", [((1, 3), 0), ((3,), 0), ((2, 1), 1), ((), 0)])
def test_cumsum_over_at_most_one_element_passes_the_gradient_itself_on(T, shape, dim):
    x = T.ones(shape, requires_grad=True)
    g = T.ones(shape, requires_grad=True) * 2
    (gx,) = T.autograd.grad(x.cumsum(dim), [x], g, create_graph=True)
    trivial = len(shape) == 0 or shape[dim] == 1
    assert gx.grad_fn.name() == ("MulBackward0" if trivial else "FlipBackward0")


def test_prod_gradient_with_two_zeros_is_zeros_even_beside_nan(T):
    # torch's prod_backward: two zeros make every product of the others 0 (without
    # create_graph; the gradient that is to be differentiated again takes the formula)
    x = T.tensor([0.0, 2.0, 0.0, float("nan")], dtype=T.float64, requires_grad=True)
    x.prod().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 0.0]
    (g,) = T.autograd.grad(x.prod(), [x], create_graph=True)
    np.testing.assert_array_equal(to_np(g), [np.nan, np.nan, np.nan, 0.0])


def _second_order(T, x, fn, w1, w2):
    """The gradient of ``(fn(x) * w1).sum()`` built with create_graph, and the gradient of
    ``(g * w2).sum()`` through it."""
    (g,) = T.autograd.grad((fn(x) * w1).sum(), [x], create_graph=True)
    (gg,) = T.autograd.grad((g * w2).sum(), [x])
    return to_np(g.detach()), to_np(gg)


def test_prod_double_backward_at_a_zero_beside_inf_is_torchs_cumprod_formulas(T):
    # prod's gradient at a zero runs through exclusive cumprods; their own backward gives the
    # -inf column's middle element nan (0 * inf in cumprod_backward), not a finite value
    inf = float("inf")
    x = T.tensor([[1.25, -1.0], [0.0, -inf], [-0.25, 1.75]], requires_grad=True)
    w2 = T.tensor([[0.5, 0.75], [1.0, 1.25], [1.5, 1.75]])
    g, gg = _second_order(T, x, lambda x: x.prod(0), T.tensor([0.5, 0.75]), w2)
    np.testing.assert_array_equal(g, [[0.0, -inf], [-0.15625, -1.3125], [0.0, inf]])
    np.testing.assert_array_equal(gg, [[-0.125, -inf], [0.875, np.nan], [0.625, -inf]])


def test_prod_double_backward_of_all_elements_with_two_zeros_and_nan(T):
    # with create_graph the two-zeros shortcut is not taken: the formula's nan reach the
    # second-order gradient where torch's cumprod_backward lets them
    nan = float("nan")
    x = T.tensor([[0.0, 2.0, -0.5], [2.0, -1.0, 0.0], [-1.0, 1.5, nan]], dtype=T.float64,
                 requires_grad=True)
    w2 = T.tensor([[0.5, 0.75, 1.0], [1.25, 1.5, 1.75], [2.0, 0.5, 0.75]], dtype=T.float64)
    g, gg = _second_order(T, x, lambda x: x.prod(), T.tensor(0.5, dtype=T.float64), w2)
    np.testing.assert_array_equal(g, [[nan] * 3, [nan] * 3, [nan, nan, 0.0]])
    np.testing.assert_array_equal(gg, [[nan, 0.0, 0.0], [0.0, 0.0, nan], [nan, nan, nan]])


def test_cumprod_gradient_at_zeros_with_and_without_a_graph(T):
    # without a graph torch's O(n) form: 0 after a slice's first zero, however large the
    # products there (the inf in row 0); with one, the O(n^2) form, whose inf * 0 give nan
    inf, nan = float("inf"), float("nan")
    x = T.tensor([[2.0, 0.0, 3.0, 0.0, inf], [1.5, -2.0, 0.0, 4.0, 0.5]], dtype=T.float64,
                 requires_grad=True)
    g = T.tensor([[1.0, 2.0, 3.0, 4.0, 0.0], [0.5, 1.0, -1.0, 2.0, 1.0]], dtype=T.float64)
    (plain,) = T.autograd.grad(x.cumprod(1), [x], g)
    (graph,) = T.autograd.grad(x.cumprod(1), [x], g, create_graph=True)
    np.testing.assert_array_equal(to_np(plain), [[1.0, 22.0, 0.0, 0.0, 0.0],
                                                 [-1.5, 1.5, -27.0, 0.0, 0.0]])
    np.testing.assert_array_equal(to_np(graph.detach()), [[nan, nan, nan, nan, 0.0],
                                                          [-1.5, 1.5, -27.0, 0.0, 0.0]])
    assert graph.grad_fn.name().endswith("CopySlices")


def test_cumprod_second_derivative_at_two_zeros(T):
    x = T.tensor([2.0, 0.0, 3.0, 0.0, 5.0], dtype=T.float64, requires_grad=True)
    g, gg = _second_order(T, x, lambda x: x.cumprod(0),
                          T.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=T.float64),
                          T.tensor([0.5, 1.0, 1.5, 2.0, 2.5], dtype=T.float64))
    np.testing.assert_array_equal(g, [1.0, 22.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(gg, [11.0, 362.5, 6.0, 174.0, 0.0])
