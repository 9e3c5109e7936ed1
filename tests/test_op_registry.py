"""The declared ops: the registry lists them, and each overload's backward and forward-mode rule
run on torch tensors with torch's own results (the bodies use only the common tensor API)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ext
from ext.functions import _op, linalg, reduction, shape
from ext.functions.pointwise import arithmetic, logical, unary

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.ext_only

_rng = np.random.default_rng(7)
_X = _rng.uniform(0.5, 1.5, (3, 4))
_Y = np.array([[0.0, 1.5, -0.5, 2.0]] * 3)  # (a zero exponent and a negative one)
_B = _rng.uniform(0.5, 1.5, (1, 4))  # (broadcast against _X)


def _t(a):
    return torch.tensor(a, dtype=torch.float64)


# (overload, the forward's arguments: an array becomes a float64 torch tensor)
CASES = [
    (unary.Exp, (_X,)),
    (unary.Relu, (_X - 1.0,)),
    (unary.ThresholdBackward, (_Y, _X - 1.0, 0)),
    (unary.ThresholdBackward, (_Y, _X, 0.75)),
    (arithmetic.PowTensorScalar, (_X, 2.5)),
    (arithmetic.PowTensorScalar, (_X, 0)),
    (arithmetic.PowTensorTensor, (_X, _Y)),
    (arithmetic.PowTensorTensor, (_X - 1.0, _Y)),
    (arithmetic.PowScalarTensor, (2.0, _Y)),
    (arithmetic.PowScalarTensor, (0.0, _Y)),
    (reduction.SumAll, (_X,)),
    (reduction.SumDim, (_X, (0,), False)),
    (reduction.SumDim, (_X, (1,), True)),
    (reduction.MaxAll, (_X,)),
    (reduction.MinAll, (_X,)),
    (reduction.MaxDim, (_X, 1, False)),
    (reduction.MinDim, (_X, 0, True)),
    (shape.View, (_X, (2, 6))),
    # arithmetic
    (arithmetic.Add, (_X, _B, 1)),
    (arithmetic.Add, (_B, _X, 2.5)),
    (arithmetic.Sub, (_X, _B, 1)),
    (arithmetic.Sub, (_B, _X, -0.5)),
    (arithmetic.RsubTensor, (_X, _B, 2)),
    (arithmetic.Rsub, (_X, 2.0, 1)),
    (arithmetic.Rsub, (_X, 2.0, 1.5)),
    (arithmetic.Mul, (_X, _B)),
    (arithmetic.Mul, (_X, 2.5)),
    (arithmetic.MulScalar, (_X, 2.5)),
    (arithmetic.Div, (_B, _X)),
    (arithmetic.Div, (_X, 2.5)),
    (arithmetic.DivScalar, (_X, 2.5)),
    (arithmetic.Reciprocal, (_X,)),
    # matrix products (matmul is a composite of these and of views: no overload of its own)
    (linalg.Mm, (_X, _X.T.copy())),
    (linalg.Mv, (_X, _X[0])),
    (linalg.Dot, (_X[0], _Y[0])),
    (linalg.Bmm, (np.stack([_X, _Y]), np.stack([_X.T, _Y.T]))),
    # comparisons, logical and bitwise ops, checks of values (only nan_to_num has a derivative)
    (logical.NanToNum, (np.where(_Y > 1.0, np.inf, np.where(_Y < 0.0, np.nan, _X)), 0.5, 2.0,
                        None)),
]
IDS = [f"{ov.node_name}-{i}" for i, (ov, _) in enumerate(CASES)]


def _torch_args(args):
    return tuple(_t(a) if isinstance(a, np.ndarray) else a for a in args)


def _first(out):
    return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize(("ov", "args"), CASES, ids=IDS)
def test_backward_runs_on_torch_tensors_as_torch_differentiates(ov, args):
    args = _torch_args(args)
    inputs = [a.requires_grad_() for a in args if isinstance(a, torch.Tensor)]
    out = ov.forward(*args)
    grad = _t(_rng.uniform(0.5, 1.5, tuple(_first(out).shape)))
    expected = torch.autograd.grad(_first(out), inputs, grad)

    plain = tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in args)
    outputs = tuple(o.detach() for o in out) if isinstance(out, tuple) else (out.detach(),)
    needs = tuple(isinstance(a, torch.Tensor) for a in args)
    result = ov.backward(ov.ctx_for(plain, outputs, needs), grad)
    result = result if isinstance(result, tuple) else (result,)
    got = [g for g, a in zip(result, args) if isinstance(a, torch.Tensor)]
    for g, e in zip(got, expected):
        assert type(g) is torch.Tensor
        g = g.sum_to_size(e.shape)  # (the engine's reduction of a broadcast input's gradient)
        torch.testing.assert_close(g, e, equal_nan=True)


@pytest.mark.parametrize(("ov", "args"), CASES, ids=IDS)
def test_forward_rule_runs_on_torch_tensors_as_torch_func_jvp(ov, args):
    args = _torch_args(args)
    where = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    tangents = [_t(_rng.uniform(-1.0, 1.0, tuple(args[i].shape))) for i in where]

    def f(*tensors):
        full = list(args)
        for i, t in zip(where, tensors):
            full[i] = t
        return _first(ov.forward(*full))

    _, expected = torch.func.jvp(f, tuple(args[i] for i in where), tuple(tangents))
    per_arg = [None] * len(args)
    for i, t in zip(where, tangents):
        per_arg[i] = t
    out = ov.forward(*args)
    got = _first(ov.tangents(args, tuple(out) if isinstance(out, tuple) else out, tuple(per_arg)))
    assert type(got) is torch.Tensor
    torch.testing.assert_close(got.expand(expected.shape), expected, equal_nan=True)


def test_every_declared_overload_has_a_torch_case():
    declared = {ov for op in _op.registry() for ov in op.overloads}
    assert declared == {ov for ov, _ in CASES}


def test_the_registry_lists_each_op_with_its_names_and_contract():
    pow_ = _op.lookup("pow")
    assert pow_.node_names == ("PowBackward0", "PowBackward1", "PowBackward2")
    assert {"pow", "__pow__", "__rpow__"} <= set(pow_.methods)
    assert (pow_.inplace, pow_.augmented) == ("pow_", "__ipow__")
    assert pow_.torch_op == "aten::pow"
    contract = _op.lookup("max").contract()
    assert contract["MaxBackward0"]["outputs"] == ("values", "indices")
    assert contract["MaxBackward0"]["forward_rule"] == "jvp"
    assert _op.lookup("exp").contract()["ExpBackward0"] == {
        "saved_fields": ("result",), "saved_attrs": (), "forward_rule": "elementwise",
        "double_backward": True, "outputs": ("result",)}
    assert _op.lookup("sum").contract()["SumBackward1"]["saved_attrs"] == (
        "dim", "keepdim", "self_sym_sizes")
    assert _op.lookup("view").contract()["ViewBackward0"]["forward_rule"] == "linear"
    assert "view" not in _op.lookup("view").functions  # (torch has no torch.view)
    names = {op.name for op in _op.registry()}
    assert {"exp", "pow", "sum", "max", "min", "view"} <= names


def test_a_backward_op_is_called_by_its_aten_name_on_both_engines():
    assert ext.ops.aten.threshold_backward is _op.lookup("threshold_backward").function
    grad, y = ext.tensor([1.0, 2.0, 3.0]), ext.tensor([-1.0, 0.0, 1.0])
    assert ext.ops.aten.threshold_backward(grad, y, 0).tolist() == [0.0, 0.0, 3.0]
    assert unary.ThresholdBackward.forward(torch.tensor([1.0, 2.0]), torch.tensor([0.0, 1.0]),
                                           0).tolist() == [0.0, 2.0]
    with pytest.raises(AttributeError, match="no attribute 'not_an_op'"):
        ext.ops.aten.not_an_op  # noqa: B018


def test_the_method_table_takes_declared_ops_and_their_inplace_variants():
    x = ext.tensor([0.0, 1.0], dtype=ext.float64)
    assert ext.Tensor.exp is _op.lookup("exp").function
    assert ext.exp is _op.lookup("exp").function
    assert x.exp_() is x
    assert x.tolist() == [1.0, math.e]
