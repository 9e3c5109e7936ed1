"""The declared ops: the registry lists them, and each overload's backward and forward-mode rule
run on torch tensors with torch's own results (the bodies use only the common tensor API)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ext
from ext.functions import _op
from ext.functions.builtin import activation, indexing, inplace, linalg, reduction, setitem, shape
from ext.functions.builtin.nn_ops import activation as nn_activation
from ext.functions.builtin.nn_ops import normalization, sparse
from ext.functions.builtin.pointwise import arithmetic, logical, selection, unary

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.ext_only

_rng = np.random.default_rng(7)
_X = _rng.uniform(0.5, 1.5, (3, 4))
_Y = np.array([[0.0, 1.5, -0.5, 2.0]] * 3)  # (a zero exponent and a negative one)
_ROWS = np.array([0, 2, 0])  # (an integer or bool array is an index tensor; a list, an index list)
_COLUMNS = np.array([[0], [3], [3]])
_INDEX = np.array([[2, 0], [1, 3]])  # (an index tensor: integer, never differentiated)
_MASK = _X > 1.0  # (a bool array becomes a bool tensor, which gets no gradient)
_S = _rng.uniform(-2.0, 2.0, (3, 4))  # (both signs)
_TARGETS = torch.tensor([0, 2, 1, 2])  # (a torch tensor is a constant argument, no input)
_W = torch.tensor(_X[0, :3])
_INDICES = torch.tensor([[0, 2], [1, 2]])
# (layer_norm's statistics over the last dim of _X, constants of its backward op)
_STATS = tuple(torch.ops.aten.native_layer_norm(torch.tensor(_X), [4], None, None, 1e-5)[1:])
_B = _rng.uniform(0.5, 1.5, (1, 4))  # (broadcast against _X)


def _t(a):
    return torch.tensor(a, dtype=torch.bool if a.dtype == np.bool_ else torch.float64)


# (overload, the forward's arguments: an array becomes a float64 torch tensor)
CASES = [
    (unary.Exp, (_X,)),
    (unary.Relu, (_X - 1.0,)),
    (unary.ThresholdBackward, (_Y, _X - 1.0, 0)),
    (unary.ThresholdBackward, (_Y, _X, 0.75)),
    # pointwise: one-input math
    (unary.Neg, (_S,)),
    (unary.Abs, (_S,)),
    (unary.Sign, (_S,)),
    (unary.Log, (_X,)),
    (unary.Sin, (_S,)),
    (unary.Cos, (_S,)),
    (unary.Tan, (_S,)),
    (unary.Tanh, (_S,)),
    (unary.TanhBackward, (_S, np.tanh(_X))),
    (unary.Sigmoid, (_S,)),
    (unary.SigmoidBackward, (_S, 1 / (1 + np.exp(-_X)))),
    (unary.Sqrt, (_X,)),
    (unary.Rsqrt, (_X,)),
    (unary.Log1p, (_X,)),
    (unary.Expm1, (_S,)),
    (unary.Round, (_S,)),
    (unary.RoundDecimals, (_S, 1)),
    (unary.Floor, (_S,)),
    (unary.Ceil, (_S,)),
    # pointwise: selection
    (selection.ClampScalar, (_S, -0.5, 1.0)),
    (selection.ClampScalar, (_S, None, 0.5)),
    (selection.ClampTensor, (_S, _X - 1.0, _X)),
    (selection.ClampTensor, (_S, _X - 1.0, None)),
    (selection.ClampMinScalar, (_S, 0.25)),
    (selection.ClampMinTensor, (_S, _Y)),
    (selection.ClampMaxScalar, (_S, 0.25)),
    (selection.ClampMaxTensor, (_S, _Y)),
    (selection.Maximum, (_S, _Y)),
    (selection.Maximum, (_S, _S[:1])),
    (selection.Minimum, (_S, _Y)),
    (selection.MaskedFillScalar, (_S, _MASK, 2.0)),
    (selection.MaskedFillTensor, (_S, _MASK, np.array(2.0))),
    (selection.Where, (_MASK, _S, _Y)),
    (selection.Where, (_MASK[0], _S, 0.5)),
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
    # reduction: mean, prod, amax/amin, var/std, cumsum, cumprod, sort, scatter
    (reduction.MeanAll, (_X,)),
    (reduction.MeanDim, (_X, (1,), False)),
    (reduction.ProdAll, (_X,)),
    (reduction.ProdAll, (_Y,)),
    (reduction.ProdDim, (_X, 1, False)),
    (reduction.ProdDim, (_Y, 0, True)),
    (reduction.Amax, (_X, (0,), False)),
    (reduction.Amin, (_X, (0, 1), True)),
    (reduction.Var, (_X, None, None, False)),
    (reduction.Var, (_X, (1,), 0, True)),
    (reduction.Std, (_X, None, None, False)),
    (reduction.Std, (_X, (0,), 1, False)),
    (reduction.Cumsum, (_X, 1)),
    (reduction.Cumprod, (_X, 1)),
    (reduction.Cumprod, (_Y, 0)),
    (reduction.Sort, (_X, 1, True)),
    (reduction.SortStable, (_Y, 1, False)),
    (reduction.Scatter, (_X, 1, _INDEX, _X[:2, :2])),
    (reduction.ScatterValue, (_X, 1, _INDEX, 2.0)),
    # indexing
    (indexing.Alias, (_X,)),
    (indexing.Select, (_X, 1, -1)),
    (indexing.Slice, (_X, 1, 1, 3, 1)),
    (indexing.SelectBackward, (_X[0], (3, 4), 0, 1)),
    (indexing.SliceBackward, (_X[:, :2], (3, 4), 1, 1, 3, 1)),
    (indexing.Index, (_X, [_ROWS])),
    (indexing.Index, (_X, [None, np.array([True, False, True, True])])),
    (indexing.IndexPutImpl, (_X, [_ROWS], _Y, True, True)),
    (indexing.IndexPutImpl, (_X, [None, _ROWS], _Y[:, :3], False, False)),
    (indexing.IndexSelect, (_X, 1, _ROWS)),
    (indexing.IndexAdd, (_X, 1, _ROWS, _Y[:, :3], 1)),
    (indexing.IndexAdd, (_X, 0, _ROWS, _Y, 2.0)),
    (indexing.Gather, (_X, 1, _COLUMNS, False)),
    (indexing.ScatterAdd, (_X, 1, _COLUMNS, _Y[:, :1])),
    # setitem
    (setitem.IndexPut, (_X, [_ROWS], _Y, True)),
    (setitem.IndexPut, (_X, [None, np.array([1, 3])], _Y[:, :2], False)),
    # in-place writes (run out of place)
    (inplace.Zero, (_X,)),
    (inplace.FillScalar, (_X, 2.5)),
    (inplace.FillTensor, (_X, np.array(2.5))),
    (inplace.Copy, (_X, _Y)),
    # shape
    (shape.View, (_X, (2, 6))),
    (shape.ReshapeAlias, (_X, (4, 3))),
    (shape.UnsafeView, (_X, (12,))),
    (shape.T, (_X,)),
    (shape.Transpose, (_X, 0, -1)),
    (shape.Permute, (_X, (1, 0))),
    (shape.Unsqueeze, (_X, 1)),
    (shape.SqueezeAll, (_X[:1],)),
    (shape.SqueezeDim, (_X[:1], 0)),
    (shape.SqueezeDims, (_X[:1], (0, 1))),
    (shape.SqueezeMatmul, (_X[:, :1], -1)),
    (shape.Expand, (_X[:1], (2, 3, 4))),
    (shape.Clone, (_X,)),
    (shape.ToCopy, (_X, torch.float32)),
    (shape.Unbind, (_X, 1)),
    (shape.Split, (_X, 2, 1)),
    (shape.SplitWithSizes, (_X, (1, 2), 0)),
    (shape.Stack, (_X, _X * 2, 1)),
    (shape.Cat, (_X, _X[:1], 0)),
    (shape.Flip, (_X, (0, 1))),
    # softmax family
    (activation.Softmax, (_X, 1)),
    (activation.LogSoftmax, (_X, 0)),
    (activation.SoftmaxBackwardData, (_Y, _X / 4, 1, torch.float64)),
    (activation.LogSoftmaxBackwardData, (_Y, _X - 2.0, 0, torch.float64)),
    (activation.Logsumexp, (_X, (1,), False)),
    (activation.Logsumexp, (_X, (0, 1), True)),
    (activation.Addmm, (_X[0], _X[:, :3], _Y, 1, 1)),
    (activation.Addmm, (_X[:, :1], _X[:, :3], _Y, 0.5, 2.0)),
    (activation.Addmm, (_X, _X[:, :3], _Y, 2, 1)),
    # losses
    (activation.NllLoss, (_X.T, _TARGETS, None, 1, -100)),
    (activation.NllLoss, (_X.T, _TARGETS, _W, 2, 1)),
    (activation.NllLoss, (_X.T, _TARGETS, None, 0, 2)),
    (activation.NllLossBackward, (_X[0], _X.T, _TARGETS, None, 0, -100, _t(_X[0, 0]))),
    (activation.NllLossBackward, (np.array(_X[0, 0]), _X.T, _TARGETS, _W, 1, 1, _t(_X[0, 1]))),
    (activation.MseLoss, (_X, _Y, 1)),
    (activation.MseLoss, (_X, _Y, 0)),
    (activation.MseLossBackward, (_X, _Y, _X - 1.0, 0)),
    (activation.MseLossBackward, (np.array(_X[0, 0]), _Y, _X - 1.0, 2)),
    # nn activations
    (nn_activation.Erf, (_X - 1.0,)),
    (nn_activation.Gelu, (_X - 1.0, "none")),
    (nn_activation.Gelu, (_X - 1.0, "tanh")),
    (nn_activation.GeluBackward, (_Y, _X - 1.0, "none")),
    (nn_activation.GeluBackward, (_Y, _X - 1.0, "tanh")),
    (nn_activation.Silu, (_X - 1.0,)),
    (normalization.NativeLayerNorm, (_X, (4,), _X[0], _Y[0], 1e-5)),
    (normalization.NativeLayerNorm, (_X, (3, 4), None, None, 1e-3)),
    (normalization.NativeLayerNormBackward,
     (_Y, _X, (4,), *_STATS, _X[1], torch.tensor(_Y[0]), (True, True, True))),
    (normalization.NativeLayerNormBackward,
     (_Y, _X, (4,), *_STATS, None, None, (True, False, False))),
    (sparse.Embedding, (_X, _INDICES, -1, False, False)),
    (sparse.Embedding, (_X, _INDICES, 1, True, False)),
    (sparse.EmbeddingDenseBackward, (_X[:, :2].reshape(2, 1, 3).repeat(2, 1), _INDICES, 4, -1,
                                     False)),
    (sparse.EmbeddingDenseBackward, (_X[:2, :2, None].repeat(3, 2), _INDICES, 3, 2, False)),
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
    return tuple(_torch_arg(a) for a in args)


def _torch_arg(a):
    if isinstance(a, list):
        return [_torch_arg(i) for i in a]
    if not isinstance(a, np.ndarray):
        return a
    return torch.tensor(a) if a.dtype.kind in "biu" else _t(a)


def _inputs(args) -> list:
    """The differentiable inputs, by position: the float arrays (an integer or bool array is an
    index tensor or a mask, a list an index list, and a torch tensor given as it is, such as
    class targets, a constant argument)."""
    return [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]


def _first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


@pytest.mark.parametrize(("ov", "args"), CASES, ids=IDS)
def test_backward_runs_on_torch_tensors_as_torch_differentiates(ov, args):
    where = _inputs(args)
    args = _torch_args(args)
    inputs = [args[i].requires_grad_() for i in where]
    out = ov.forward(*args)
    grad = _t(_rng.uniform(0.5, 1.5, tuple(_first(out).shape)))
    expected = torch.autograd.grad(_first(out), inputs, grad)

    plain = tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in args)
    outputs = (tuple(None if o is None else o.detach() for o in out)
               if isinstance(out, (tuple, list)) else (out.detach(),))
    needs = tuple(i in where for i in range(len(args)))
    # (the other outputs of a multi-output op get no gradient)
    result = ov.backward(ov.ctx_for(plain, outputs, needs), grad, *[None] * (len(outputs) - 1))
    result = result if isinstance(result, tuple) else (result,)
    got = [result[i] for i in where]
    for g, e in zip(got, expected):
        assert type(g) is torch.Tensor
        # (the engine sums a broadcast input's gradient to its shape, as torch's does)
        torch.testing.assert_close(g.sum_to_size(e.shape), e, equal_nan=True)


@pytest.mark.parametrize(("ov", "args"), CASES, ids=IDS)
def test_forward_rule_runs_on_torch_tensors_as_torch_func_jvp(ov, args):
    where = _inputs(args)
    args = _torch_args(args)
    tangents = [_t(_rng.uniform(-1.0, 1.0, tuple(args[i].shape))) for i in where]

    def f(*tensors):
        full = list(args)
        for i, t in zip(where, tensors):
            full[i] = t
        return _first(ov.forward(*full))

    # (copies of the tangents: torch's rule for _index_put_impl writes into self's)
    _, expected = torch.func.jvp(f, tuple(args[i] for i in where),
                                 tuple(t.clone() for t in tangents))
    per_arg = [None] * len(args)
    for i, t in zip(where, tangents):
        per_arg[i] = t
    out = ov.forward(*args)
    got = _first(ov.tangents(args, tuple(out) if isinstance(out, (tuple, list)) else out,
                             tuple(per_arg)))
    assert type(got) is torch.Tensor
    torch.testing.assert_close(got.expand(expected.shape), expected, equal_nan=True)


def test_every_declared_overload_has_a_torch_case():
    declared = {ov for op in _op.registry() if not op.pack for ov in op.overloads}
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
