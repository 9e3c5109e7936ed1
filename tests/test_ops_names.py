"""Autograd node names and saved fields of the elementary ops, pinned to torch 2.13.

Every test runs on ``ext`` and on ``torch``; the expected values are what torch shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import POS, leaf, sample, to_np

# torch reports a saved negative dim as an unsigned 64-bit integer: -1 reads back as 2**64 - 1.
NEG1 = 2**64 - 1


@dataclass(frozen=True)
class Is:
    """The saved tensor is this very input object."""

    name: str


@dataclass(frozen=True)
class Result:
    """The saved tensor equals the op's output but is a different object."""


@dataclass(frozen=True)
class Scalar:
    """The saved tensor is a 0-d tensor holding a wrapped Python number."""

    value: float
    dtype: str


RESULT = Result()


def graph_inputs(T, rng):
    return SimpleNamespace(
        x=leaf(T, sample(rng, (2, 3), POS)),
        w=leaf(T, sample(rng, (2, 3), POS)),
        c=leaf(T, sample(rng, (2, 3), POS), requires_grad=False),
        b=leaf(T, sample(rng, (3,), POS)),
        m=leaf(T, sample(rng, (3, 4))),
        v=leaf(T, sample(rng, (3,))),
        u=leaf(T, sample(rng, (2,))),
        xf=leaf(T, sample(rng, (2, 3), dtype=np.float32)),
    )


def node(id_, fn, name, **saved):
    """A table row: ``fn(T, inputs)``, the node name and every ``_saved_<key>`` field."""
    return pytest.param(fn, name, {f"_saved_{k}": v for k, v in saved.items()}, id=id_)


MM_SAVED = dict(
    self=Is("x"),
    self_sym_sizes=(2, 3),
    self_sym_strides=(3, 1),
    mat2=Is("m"),
    mat2_sym_sizes=(3, 4),
    mat2_sym_strides=(4, 1),
)
SUM_ALL = dict(self_sym_sizes=(2, 3))
MEAN_ALL = dict(self_sym_sizes=(2, 3), self_sym_numel=6)

NODE_CASES = [
    node("x+w", lambda T, i: i.x + i.w, "AddBackward0", alpha=1),
    node("x+b_broadcast", lambda T, i: i.x + i.b, "AddBackward0", alpha=1),
    node("x+c", lambda T, i: i.x + i.c, "AddBackward0", alpha=1),
    node("x+2", lambda T, i: i.x + 2, "AddBackward0", alpha=1),
    node("2+x", lambda T, i: 2 + i.x, "AddBackward0", alpha=1),
    node("x+2.5", lambda T, i: i.x + 2.5, "AddBackward0", alpha=1),
    node("T.add_alpha2", lambda T, i: T.add(i.x, i.w, alpha=2), "AddBackward0", alpha=2),
    node("x.add_alpha0.5", lambda T, i: i.x.add(i.w, alpha=0.5), "AddBackward0", alpha=0.5),
    node("x-w", lambda T, i: i.x - i.w, "SubBackward0", alpha=1),
    node("x-2", lambda T, i: i.x - 2, "SubBackward0", alpha=1),
    node("c-x", lambda T, i: i.c - i.x, "SubBackward0", alpha=1),
    node("T.sub_alpha2", lambda T, i: T.sub(i.x, i.w, alpha=2), "SubBackward0", alpha=2),
    node("x.sub_alpha3", lambda T, i: i.x.sub(i.w, alpha=3), "SubBackward0", alpha=3),
    node("2-x", lambda T, i: 2 - i.x, "RsubBackward1", alpha=1),
    node("2.5-x", lambda T, i: 2.5 - i.x, "RsubBackward1", alpha=1),
    node("T.rsub(x, w)", lambda T, i: T.rsub(i.x, i.w), "RsubBackward0", alpha=1),
    node("T.rsub(x, c, alpha=2)", lambda T, i: T.rsub(i.x, i.c, alpha=2), "RsubBackward0",
         alpha=2),
    node("x*w", lambda T, i: i.x * i.w, "MulBackward0", self=Is("x"), other=Is("w")),
    node("T.mul", lambda T, i: T.mul(i.x, i.w), "MulBackward0", self=Is("x"), other=Is("w")),
    node("x.mul", lambda T, i: i.x.mul(i.w), "MulBackward0", self=Is("x"), other=Is("w")),
    node("x*c", lambda T, i: i.x * i.c, "MulBackward0", self=None, other=Is("c")),
    node("c*x", lambda T, i: i.c * i.x, "MulBackward0", self=Is("c"), other=None),
    node("x*2", lambda T, i: i.x * 2, "MulBackward0", self=None, other=Scalar(2, "int64")),
    node("2*x", lambda T, i: 2 * i.x, "MulBackward0", self=None, other=Scalar(2, "int64")),
    node("x*2.5", lambda T, i: i.x * 2.5, "MulBackward0", self=None, other=Scalar(2.5, "float64")),
    node("x/w", lambda T, i: i.x / i.w, "DivBackward0", self=Is("x"), other=Is("w")),
    node("T.div", lambda T, i: T.div(i.x, i.w), "DivBackward0", self=Is("x"), other=Is("w")),
    node("x.div", lambda T, i: i.x.div(i.w), "DivBackward0", self=Is("x"), other=Is("w")),
    node("x/c", lambda T, i: i.x / i.c, "DivBackward0", self=None, other=Is("c")),
    node("c/x", lambda T, i: i.c / i.x, "DivBackward0", self=Is("c"), other=Is("x")),
    node("x/2", lambda T, i: i.x / 2, "DivBackward0", self=None, other=Scalar(2, "int64")),
    node("x/2.5", lambda T, i: i.x / 2.5, "DivBackward0", self=None, other=Scalar(2.5, "float64")),
    node("2/x", lambda T, i: 2 / i.x, "MulBackward0", self=None, other=Scalar(2, "int64")),
    node("x**2", lambda T, i: i.x**2, "PowBackward0", self=Is("x"), exponent=2),
    node("x**2.5", lambda T, i: i.x**2.5, "PowBackward0", self=Is("x"), exponent=2.5),
    node("x**-1", lambda T, i: i.x**-1, "PowBackward0", self=Is("x"), exponent=-1),
    node("T.pow_x_2", lambda T, i: T.pow(i.x, 2), "PowBackward0", self=Is("x"), exponent=2),
    node("x.pow_3.0", lambda T, i: i.x.pow(3.0), "PowBackward0", self=Is("x"), exponent=3.0),
    node(
        "x**w",
        lambda T, i: i.x**i.w,
        "PowBackward1",
        self=Is("x"),
        exponent=Is("w"),
        result=RESULT,
    ),
    node(
        "x.pow_w",
        lambda T, i: i.x.pow(i.w),
        "PowBackward1",
        self=Is("x"),
        exponent=Is("w"),
        result=RESULT,
    ),
    node(
        "x**c",
        lambda T, i: i.x**i.c,
        "PowBackward1",
        self=Is("x"),
        exponent=Is("c"),
        result=RESULT,
    ),
    node(
        "c**x",
        lambda T, i: i.c**i.x,
        "PowBackward1",
        self=Is("c"),
        exponent=Is("x"),
        result=RESULT,
    ),
    node("2**x", lambda T, i: 2**i.x, "PowBackward2", self=2, exponent=Is("x"), result=RESULT),
    node(
        "2.5**x", lambda T, i: 2.5**i.x, "PowBackward2", self=2.5, exponent=Is("x"), result=RESULT
    ),
    node(
        "T.pow_2_x",
        lambda T, i: T.pow(2, i.x),
        "PowBackward2",
        self=2,
        exponent=Is("x"),
        result=RESULT,
    ),
    node("-x", lambda T, i: -i.x, "NegBackward0"),
    node("x.neg", lambda T, i: i.x.neg(), "NegBackward0"),
    node("T.neg", lambda T, i: T.neg(i.x), "NegBackward0"),
    node("x.abs", lambda T, i: i.x.abs(), "AbsBackward0", self=Is("x")),
    node("T.abs", lambda T, i: T.abs(i.x), "AbsBackward0", self=Is("x")),
    node("x.exp", lambda T, i: i.x.exp(), "ExpBackward0", result=RESULT),
    node("T.exp", lambda T, i: T.exp(i.x), "ExpBackward0", result=RESULT),
    node("x.log", lambda T, i: i.x.log(), "LogBackward0", self=Is("x")),
    node("T.log", lambda T, i: T.log(i.x), "LogBackward0", self=Is("x")),
    node("x.sin", lambda T, i: i.x.sin(), "SinBackward0", self=Is("x")),
    node("T.sin", lambda T, i: T.sin(i.x), "SinBackward0", self=Is("x")),
    node("x.cos", lambda T, i: i.x.cos(), "CosBackward0", self=Is("x")),
    node("T.cos", lambda T, i: T.cos(i.x), "CosBackward0", self=Is("x")),
    node("x.tanh", lambda T, i: i.x.tanh(), "TanhBackward0", result=RESULT),
    node("T.tanh", lambda T, i: T.tanh(i.x), "TanhBackward0", result=RESULT),
    node("x.sigmoid", lambda T, i: i.x.sigmoid(), "SigmoidBackward0", result=RESULT),
    node("T.sigmoid", lambda T, i: T.sigmoid(i.x), "SigmoidBackward0", result=RESULT),
    node("x.relu", lambda T, i: i.x.relu(), "ReluBackward0", result=RESULT),
    node("T.relu", lambda T, i: T.relu(i.x), "ReluBackward0", result=RESULT),
    node("x.sqrt", lambda T, i: i.x.sqrt(), "SqrtBackward0", result=RESULT),
    node("T.sqrt", lambda T, i: T.sqrt(i.x), "SqrtBackward0", result=RESULT),
    node("x.sum", lambda T, i: i.x.sum(), "SumBackward0", **SUM_ALL),
    node("T.sum", lambda T, i: T.sum(i.x), "SumBackward0", **SUM_ALL),
    node("x.sum_0", lambda T, i: i.x.sum(0), "SumBackward1", dim=(0,), keepdim=False, **SUM_ALL),
    node("x.sum_dim=0", lambda T, i: i.x.sum(dim=0), "SumBackward1", dim=(0,), keepdim=False,
         **SUM_ALL),
    node("x.sum_-1", lambda T, i: i.x.sum(-1), "SumBackward1", dim=(NEG1,), keepdim=False,
         **SUM_ALL),
    node("x.sum_1_keepdim", lambda T, i: i.x.sum(1, keepdim=True), "SumBackward1", dim=(1,),
         keepdim=True, **SUM_ALL),
    node("x.sum_(0,1)", lambda T, i: i.x.sum((0, 1)), "SumBackward1", dim=(0, 1),
         keepdim=False, **SUM_ALL),
    node("T.sum_1", lambda T, i: T.sum(i.x, 1), "SumBackward1", dim=(1,), keepdim=False,
         **SUM_ALL),
    node("x.mean", lambda T, i: i.x.mean(), "MeanBackward0", **MEAN_ALL),
    node("T.mean", lambda T, i: T.mean(i.x), "MeanBackward0", **MEAN_ALL),
    node("x.mean_0", lambda T, i: i.x.mean(0), "MeanBackward1", dim=(0,), keepdim=False,
         **MEAN_ALL),
    node("x.mean_-1_keepdim", lambda T, i: i.x.mean(-1, keepdim=True), "MeanBackward1",
         dim=(NEG1,), keepdim=True, **MEAN_ALL),
    node("T.mean_1", lambda T, i: T.mean(i.x, 1), "MeanBackward1", dim=(1,), keepdim=False,
         **MEAN_ALL),
    node("mat@mat", lambda T, i: i.x @ i.m, "MmBackward0", **MM_SAVED),
    node("T.matmul_mat_mat", lambda T, i: T.matmul(i.x, i.m), "MmBackward0", **MM_SAVED),
    node("x.matmul_mat_mat", lambda T, i: i.x.matmul(i.m), "MmBackward0", **MM_SAVED),
    node("T.mm", lambda T, i: T.mm(i.x, i.m), "MmBackward0", **MM_SAVED),
    node("x.mm", lambda T, i: i.x.mm(i.m), "MmBackward0", **MM_SAVED),
    node("mat@vec", lambda T, i: i.x @ i.v, "MvBackward0", self=Is("x"), vec=Is("v")),
    node("vec@vec", lambda T, i: i.v @ i.b, "DotBackward0", self=Is("v"), tensor=Is("b")),
    node("vec@mat", lambda T, i: i.u @ i.x, "SqueezeBackward4", dim=0, self_sym_sizes=(1, 3)),
    node("x.t", lambda T, i: i.x.t(), "TBackward0"),
    node("T.t", lambda T, i: T.t(i.x), "TBackward0"),
    node("x.transpose_0_1", lambda T, i: i.x.transpose(0, 1), "TransposeBackward0", dim0=0,
         dim1=1),
    node("x.transpose_-1_0", lambda T, i: i.x.transpose(-1, 0), "TransposeBackward0",
         dim0=NEG1, dim1=0),
    node("T.transpose", lambda T, i: T.transpose(i.x, 1, 0), "TransposeBackward0", dim0=1,
         dim1=0),
    node("x.view_3_2", lambda T, i: i.x.view(3, 2), "ViewBackward0", self_sym_sizes=(2, 3)),
    node("x.view_-1", lambda T, i: i.x.view(-1), "ViewBackward0", self_sym_sizes=(2, 3)),
    node("x.reshape_3_2", lambda T, i: i.x.reshape(3, 2), "ViewBackward0",
         self_sym_sizes=(2, 3)),
    node("x.reshape_(-1,2)", lambda T, i: i.x.reshape((-1, 2)), "ViewBackward0",
         self_sym_sizes=(2, 3)),
    node("T.reshape", lambda T, i: T.reshape(i.x, (6,)), "ViewBackward0", self_sym_sizes=(2, 3)),
    node("reshape_noncontig", lambda T, i: i.x.t().reshape(6), "UnsafeViewBackward0",
         self_sym_sizes=(3, 2)),
    node("x.clone", lambda T, i: i.x.clone(), "CloneBackward0"),
    node("T.clone", lambda T, i: T.clone(i.x), "CloneBackward0"),
    node("x.to_float32", lambda T, i: i.x.to(T.float32), "ToCopyBackward0"),
    node("x.float", lambda T, i: i.x.float(), "ToCopyBackward0"),
    node("xf.double", lambda T, i: i.xf.double(), "ToCopyBackward0"),
    node("xf.to_float64", lambda T, i: i.xf.to(T.float64), "ToCopyBackward0"),
]


def check_saved(T, actual, expected, inputs, out):
    if isinstance(expected, Is):
        assert actual is getattr(inputs, expected.name)
    elif isinstance(expected, Result):
        assert isinstance(actual, T.Tensor)
        assert actual is not out
        np.testing.assert_array_equal(to_np(actual), to_np(out))
    elif isinstance(expected, Scalar):
        assert isinstance(actual, T.Tensor)
        assert tuple(actual.shape) == ()
        assert actual.dtype == getattr(T, expected.dtype)
        assert actual.item() == expected.value
    elif expected is None:
        assert actual is None
    else:
        assert type(actual) is type(expected)
        assert actual == expected


@pytest.mark.parametrize("fn,name,saved", NODE_CASES)
def test_node_name_and_saved_fields(T, rng, fn, name, saved):
    inputs = graph_inputs(T, rng)
    out = fn(T, inputs)
    grad_fn = out.grad_fn
    assert type(grad_fn).__name__ == name
    assert sorted(a for a in dir(grad_fn) if a.startswith("_saved_")) == sorted(saved)
    for attr, expected in saved.items():
        check_saved(T, getattr(grad_fn, attr), expected, inputs, out)


CHAIN_CASES = [
    pytest.param(
        lambda T, i: 2 / i.x, ["MulBackward0", "ReciprocalBackward0", "AccumulateGrad"],
        "x",
        id="2/x",
    ),
    pytest.param(
        lambda T, i: i.x.t().reshape(6),
        ["UnsafeViewBackward0", "CloneBackward0", "TBackward0", "AccumulateGrad"],
        "x",
        id="reshape_noncontig",
    ),
    pytest.param(
        lambda T, i: i.u @ i.x,
        ["SqueezeBackward4", "MmBackward0", "UnsqueezeBackward0", "AccumulateGrad"],
        "u",
        id="vec@mat",
    ),
]


@pytest.mark.parametrize("fn,chain,leaf_name", CHAIN_CASES)
def test_composite_node_chain(T, rng, fn, chain, leaf_name):
    """Following the first edge from the output reaches the leaf through these nodes."""
    inputs = graph_inputs(T, rng)
    grad_fn = fn(T, inputs).grad_fn
    names = []
    while grad_fn is not None:
        names.append(type(grad_fn).__name__)
        last = grad_fn
        grad_fn = grad_fn.next_functions[0][0] if grad_fn.next_functions else None
    assert names == chain
    assert last.variable is getattr(inputs, leaf_name)


def test_reciprocal_saves_its_result(T, rng):
    inputs = graph_inputs(T, rng)
    recip = (2 / inputs.x).grad_fn.next_functions[0][0]
    assert sorted(a for a in dir(recip) if a.startswith("_saved_")) == ["_saved_result"]
    np.testing.assert_allclose(to_np(recip._saved_result), 1 / to_np(inputs.x), rtol=1e-15)


def test_vec_at_mat_unsqueeze_saves_dim(T, rng):
    inputs = graph_inputs(T, rng)
    mm = (inputs.u @ inputs.x).grad_fn.next_functions[0][0]
    assert mm._saved_self_sym_sizes == (1, 2)
    assert mm._saved_mat2 is inputs.x
    unsqueeze = mm.next_functions[0][0]
    assert unsqueeze._saved_dim == 0


@pytest.mark.parametrize(
    "src,convert",
    [
        pytest.param(np.float64, lambda T, t: t.to(T.float64), id="f64.to_float64"),
        pytest.param(np.float64, lambda T, t: t.double(), id="f64.double"),
        pytest.param(np.float32, lambda T, t: t.to(T.float32), id="f32.to_float32"),
        pytest.param(np.float32, lambda T, t: t.float(), id="f32.float"),
    ],
)
def test_to_same_dtype_returns_self(T, rng, src, convert):
    x = leaf(T, sample(rng, (2, 3), dtype=src))
    assert convert(T, x) is x
    y = x * 2
    node_before = y.grad_fn
    assert convert(T, y) is y
    assert y.grad_fn is node_before
