"""The parity cases of every op in the registry, for ``python -m ext parity`` and the test suite.

``BUILTINS``: each declared overload of a built-in op with arguments for its forward (a float
array becomes a float64 tensor that requires grad, an integer or bool array an index tensor or a
mask, a list an index list, a torch tensor a constant argument). ``PACK``: each op of the drop-in
pack, by name, with a reference to agree with and the checks that do not apply. ``op_cases()``
turns both into ``Case`` objects that ``check`` runs.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from .. import compat
from .. import functions as P
from ..functions import _op
from ..functions.builtin import (
    activation,
    arrange,
    copies,
    index_ops,
    indexing,
    inplace,
    linalg,
    reduction,
    setitem,
    shape,
    special,
    statistics,
)
from ..functions.builtin._builtin import namespace_of
from ..functions.builtin.nn_ops import activation as nn_activation
from ..functions.builtin.nn_ops import normalization, sparse
from ..functions.builtin.nn_ops.dropout import NativeDropoutBackward
from ..functions.builtin.pointwise import (
    arithmetic,
    binary,
    division,
    elementary,
    logical,
    selection,
    unary,
)
from ._harness import ParityReport, _callable, check

P.load_all()  # (every family declared: the cases name overloads of all of them)

F = torch.nn.functional

__all__ = ["Case", "BUILTINS", "NO_BUILTIN_CASE", "COMPOSITES", "PACK", "op_cases",
           "builtin_inputs", "Bridged"]

# ---------------------------------------------------------------------------------- built-ins
_rng = np.random.default_rng(7)  # (fixed: the built-in cases are the same every run)
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
BUILTINS: list[tuple[type, tuple]] = [
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
    (shape.TInplace, (_X,)),
    (shape.TransposeInplace, (_X, 0, -1)),
    (shape.UnsqueezeInplace, (_X, 1)),
    (shape.SqueezeAllInplace, (_X[:1],)),
    (shape.SqueezeDimsInplace, (_X[:1], (0, 1))),
    (NativeDropoutBackward, (_X, _MASK, 2.0)),
    (normalization.NativeBatchNorm, (_X, _X[0], _X[1], None, None, True, 0.1, 1e-5)),
    (normalization.NativeBatchNorm, (_X, _X[0], None, torch.tensor(_X[1]), torch.tensor(_X[2]),
                                     False, 0.1, 1e-5)),
    (normalization.NativeGroupNorm, (_X, _X[0], _X[1], 3, 4, 1, 2, 1e-5)),
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
    (division.RemainderTensor, (_S, _B)),
    (division.RemainderScalar, (_S, 0.7)),
    # matrix products (matmul is a composite of these and of views: no overload of its own)
    (linalg.Mm, (_X, _X.T.copy())),
    (linalg.Mv, (_X, _X[0])),
    (linalg.Dot, (_X[0], _Y[0])),
    (linalg.Bmm, (np.stack([_X, _Y]), np.stack([_X.T, _Y.T]))),
    # comparisons, logical and bitwise ops, checks of values (only nan_to_num has a derivative)
    (logical.NanToNum, (np.where(_Y > 1.0, np.inf, np.where(_Y < 0.0, np.nan, _X)), 0.5, 2.0,
                        None)),
    # elementwise math beyond the basics (pointwise/elementary.py, pointwise/binary.py)
    (elementary.Acos, (_X - 1.0,)),
    (elementary.Asin, (_X - 1.0,)),
    (elementary.Atan, (_S,)),
    (elementary.Acosh, (_X + 1.0,)),
    (elementary.Asinh, (_S,)),
    (elementary.Atanh, (_X - 1.0,)),
    (elementary.Cosh, (_S,)),
    (elementary.Sinh, (_S,)),
    (elementary.Deg2Rad, (_S,)),
    (elementary.Rad2Deg, (_S,)),
    (elementary.Exp2, (_S,)),
    (elementary.Log2, (_X,)),
    (elementary.Log10, (_X,)),
    (elementary.Trunc, (_S,)),
    (elementary.Frac, (_S,)),
    (elementary.FrexpOverload, (_S,)),
    (elementary.Sgn, (_S,)),
    (elementary.Angle, (_S,)),
    (binary.Atan2, (_S, _B)),
    (binary.Hypot, (_S, _B)),
    (binary.CopysignTensor, (_S, _B - 1.0)),
    (binary.CopysignScalar, (_S, -1.5)),
    (binary.FmodTensor, (_S, _B + 1.0)),
    (binary.FmodScalar, (_S, 0.7)),
    (binary.Fmax, (_S, _B - 1.0)),
    (binary.Fmin, (_S, _B - 1.0)),
    (binary.Logaddexp, (_S, _B)),
    (binary.Logaddexp2, (_S, _B)),
    (binary.Ldexp, (_S, _B)),
    (binary.Nextafter, (_S, _B)),
    (binary.LerpScalar, (_S, _B, 0.3)),
    (binary.LerpScalar, (_S, _X, 0.8)),
    (binary.LerpTensor, (_S, _B, _X - 0.5)),
    (binary.Addcmul, (_S, _B, _X, 0.5)),
    (binary.Addcdiv, (_S, _B, _X, -2)),
    # special functions (ext/functions/builtin/special.py; zeta and igamma, which torch
    # differentiates in one argument only and has no forward rule for, are left out)
    (special.Digamma, (_X,)),
    (special.Polygamma, (1, _X)),
    (special.Polygamma, (2, _S)),
    (special.Lgamma, (_X,)),
    (special.Mvlgamma, (_X + 1.0, 2)),
    (special.Erfc, (_S,)),
    (special.Erfinv, (_S / 2.5,)),
    (special.Erfcx, (_S,)),
    (special.Ndtri, (_X / 2,)),
    (special.LogNdtr, (_S,)),
    (special.I0, (_S,)),
    (special.I0e, (_S,)),
    (special.I1, (_S,)),
    (special.I1e, (_S,)),
    (special.Sinc, (_S,)),
    (special.Entr, (_X,)),
    (special.Logit, (_X / 2, None)),
    (special.Logit, (_X / 2, 0.3)),
    (special.Xlogy, (_X, _B)),
    (special.XlogyNumberSelf, (2.0, _X)),
    (special.XlogyNumberOther, (_X, 3.0)),
    (special.Xlog1py, (_X, _B)),
    (special.Xlog1pyNumberSelf, (2.0, _X)),
    (special.Xlog1pyNumberOther, (_X, 3.0)),
]

# order statistics, scans and summaries (statistics.py)
_TIES = np.array([[1.0, 2.0, 2.0, 1.0], [0.5, 0.5, 3.0, 0.5], [2.0, 1.0, 1.0, 2.0]])
BUILTINS += [
    (statistics.MedianAll, (_X,)),
    (statistics.MedianDim, (_X, 1, False)),
    (statistics.NanmedianAll, (_X,)),
    (statistics.NanmedianDim, (_X, 0, True)),
    (statistics.Mode, (_TIES, 1, False)),
    (statistics.Kthvalue, (_X, 2, 1, False)),
    (statistics.Topk, (_X, 2, 1, True, True)),
    (statistics.VarMean, (_X, (1,), 1, False)),
    (statistics.StdMean, (_X, (0,), 0, True)),
    (statistics.Aminmax, (_S, 1, False)),
    (statistics.Aminmax, (_TIES, None, False)),
    (statistics.Cummax, (_S, 1)),
    (statistics.Cummin, (_TIES, 0)),
    (statistics.Logcumsumexp, (_S, 1)),
    (statistics.Nansum, (_X, (1,), False)),
    (statistics.Nansum, (_X, None, False)),
]


# matrix decompositions (linalg_decomp.py): well-conditioned inputs, a symmetric positive-definite
# one for cholesky, LU factors and pivots computed by torch (the pivots a constant argument)
# the arranging and copying families (ext/functions/builtin/arrange.py, copies.py)
_AR = np.random.default_rng(5).uniform(-1, 1, (3, 4))
_VR = np.random.default_rng(6).uniform(-1, 1, (3,))

BUILTINS += [
    (arrange.BlockDiag, (_AR, _VR)),
    (arrange.UnsafeSplit, (_AR, 3, 1)),
    (arrange.Repeat, (_AR, (2, 1, 2))),
    (arrange.Roll, (_AR, (1, -1), (0, 1))),
    (arrange.Rot90, (_AR, 1, (0, 1))),
    (arrange.Tril, (_AR, 1)),
    (arrange.Triu, (_AR, -1)),
    (arrange.Diagonal, (_AR, 1, 0, 1)),
    (arrange.DiagEmbed, (_AR, -1, -2, -1)),
    (arrange.DiagonalScatter, (_AR, _VR, 0, 0, 1)),
    (arrange.Unfold, (_AR, 1, 2, 1)),
    (arrange.ConstantPadNd, (_AR, (1, 2, -1, 0), 0.5)),
    (copies.ExpandCopy, (_AR[:1], (2, 3, 4))),
    (copies.DiagonalCopy, (_AR, -1, 0, 1)),
    (copies.AliasCopy, (_AR,)),
    (copies.ViewCopy, (_AR, (4, 3))),
    (copies.PermuteCopy, (_AR, (1, 0))),
    (copies.SplitWithSizesCopy, (_AR, (1, 2), 0)),
    (copies.UnbindCopy, (_AR, 1)),
    (copies.SqueezeAllCopy, (_AR[:, None],)),
    (copies.SqueezeDimCopy, (_AR[:, None], 1)),
    (copies.SqueezeDimsCopy, (_AR[:, None], (1,))),
    (copies.UnsqueezeCopy, (_AR, 0)),
    (copies.TCopy, (_AR,)),
    (copies.TransposeCopy, (_AR, 0, 1)),
    (copies.UnfoldCopy, (_AR, 0, 2, 1)),
    (copies.NarrowCopy, (_AR, 1, 1, 2)),
    (copies.AsStrided, (_AR, (2, 2), (1, 2), 1)),
    (copies.AsStridedCopy, (_AR, (2, 3), (3, 1), 2)),
    (copies.AsStridedScatter, (_AR, _AR[:2, :2], (2, 2), (1, 2), 1)),
    (copies.SelectScatter, (_AR, _VR[:2].repeat(2), 0, 1)),
    (copies.SliceScatter, (_AR, _AR[:, :2], 1, 1, 3, 1)),
]

# the index ops (ext/functions/builtin/index_ops.py) and div's rounding modes
_PICK = np.array([2, 0])
_GRID = np.array([[0, 1, 2, 0], [2, 0, 1, 1]])
BUILTINS += [
    (index_ops.IndexCopy, (_X, 0, _PICK, _Y[:2])),
    (index_ops.IndexFill, (_X, 1, np.array([0, 3, 3]), 2.0)),
    (index_ops.IndexFillTensor, (_X, 1, np.array([0, 3, 3]), np.array(2.0))),
    (index_ops.Take, (_X, np.array([0, 5, 5, 11]))),
    (index_ops.Put, (_X, np.array([1, 7]), _S[0, :2], False)),
    (index_ops.Put, (_X, np.array([1, 1]), _S[0, :2], True)),
    (index_ops.MaskedSelect, (_X, _MASK)),
    (index_ops.MaskedScatter, (_X, _MASK, _S)),
    (index_ops.Fill, (_X, 2.0)),
    (index_ops.FillTensor, (_X, np.array(2.0))),
    *[(index_ops.ScatterReduce, (_X, 0, _GRID, _S[:2], reduce, keep))
      for reduce in ("sum", "prod", "mean", "amax", "amin") for keep in (True, False)],
    *[(index_ops.IndexReduce, (_X, 0, _PICK, _S[:2], reduce, keep))
      for reduce in ("prod", "mean", "amax", "amin") for keep in (True, False)],
    (division.DivRounding, (_X, _B, "floor")),
    (division.DivRounding, (_X, _B, None)),
]

from ..functions.builtin import linalg_decomp as _decomp  # noqa: E402

_M4 = _rng.uniform(-1.0, 1.0, (4, 4)) + 3 * np.eye(4)
_PD4 = _M4 @ _M4.T
_LU4, _PIV4 = (t.numpy() if t.dtype != torch.int32 else t
               for t in torch.linalg.lu_factor(torch.tensor(_M4)))
BUILTINS += [
    (_decomp.LinalgCholeskyEx, (_PD4, False, False)),
    (_decomp.LinalgCholeskyEx, (_PD4, True, False)),
    (_decomp.Cholesky, (_PD4, False)),
    (_decomp.LinalgQr, (_X.T.copy(), "reduced")),
    (_decomp.LinalgQr, (_X, "reduced")),
    # (distinct, well separated eigenvalues: NumPy's LAPACK and torch's pick the same signs)
    (_decomp.LinalgEigh, (np.diag([1.0, 2.0, 3.0, 4.0]) + 0.1, "L")),
    # (an input whose singular vectors NumPy's LAPACK and torch's give the same signs)
    (_decomp.LinalgSvd, (_X, False, None)),
    (_decomp.LinalgPinv, (_X, None, None, False)),
    (_decomp.LinalgLstsq, (_M4, _X.T.copy(), None, None)),
    (_decomp.LinalgLuFactorEx, (_M4, True, False)),
    (_decomp.LinalgLu, (_X.T.copy(), True)),
    (_decomp.LuUnpack, (_LU4, _PIV4, True, True)),
    (_decomp.LinalgLuSolve, (_LU4, _PIV4, _X.T.copy(), True, False)),
    (_decomp.LinalgHouseholderProduct, (_X.T.copy(), _X[0, :3] / 2)),
    (_decomp.Ormqr, (_M4, _X[0] / 2, _X.T.copy(), True, False)),
]

# linear solves, determinants, matrix products, norms and distances (linalg_solve.py), and the
# special functions torch differentiates in one argument only (the other a constant argument:
# torch's backward for it raises "not implemented")
# Left out, as no case of this form can hold them: LinalgSlogdet (the cases differentiate the
# first output, and torch's backward for the sign of a real matrix raises), ZetaNumberOther
# (torch differentiates zeta(tensor, number) in nothing: its backward raises, and with the
# tensor a constant nothing requires grad), p = 0 for dist and ord = 0 for vector_norm (torch's
# own backward returns no tensor) and a singular det (the backward inverts A, which raises near
# a rank-deficient matrix where torch solves with a perturbed LU factor: gradgradcheck fails).
from ..functions.builtin import linalg_solve as _solve  # noqa: E402

_lg = np.random.default_rng(21)  # (its own generator: the cases above keep their values)
_L4 = np.linalg.cholesky(_PD4)  # (lower triangular, positive diagonal: a Cholesky factor)
_TRI = np.tril(_lg.uniform(-0.5, 0.5, (4, 4)), -1) + np.diag([2.0, 2.5, 3.0, 3.5])
_V4 = _lg.uniform(-1.0, 1.0, 4)
_BATCH1, _BATCH2 = _lg.uniform(-1.0, 1.0, (2, 3, 2)), _lg.uniform(-1.0, 1.0, (2, 2, 4))
_ROWS5 = _lg.uniform(-1.0, 1.0, (5, 4))
_C3 = _lg.uniform(-1.0, 1.0, (4, 3))
_GAMMA_A = torch.tensor(_X + 0.5)  # (igamma's a: torch has no derivative in it)
_ZETA_X = torch.tensor(_X + 1.5)  # (zeta's x > 1: torch has no derivative in it)
_IGAMMA, _IGAMMAC = (next(o for o in _op.registry() if o.name == name).overloads[0]
                     for name in ("igamma", "igammac"))
BUILTINS += [
    (_solve.Addbmm, (_X, _BATCH1, _BATCH2, 1, 1)),
    (_solve.Addbmm, (_X[0], _BATCH1, _BATCH2, 0.5, -2.0)),
    (_solve.Addmv, (_X[:, 0], _X, _V4, 1, 1)),
    (_solve.Addmv, (_X[:1, 0], _X, _V4, 0.5, 2.0)),
    (_solve.Addr, (_X, _X[:, 1], _V4, 1, 1)),
    (_solve.Addr, (_B, _X[:, 1], _V4, -0.5, 1.5)),
    (_solve.Baddbmm, (np.stack([_S, _X]), _BATCH1, _BATCH2, 1, 1)),
    (_solve.Baddbmm, (_X, _BATCH1, _BATCH2, 0.5, 2.0)),
    *[(_solve.Cdist, (_X, _ROWS5, p, None)) for p in (2.0, 1.0, 3.0, 0.5, math.inf, 0.0)],
    (_solve.EuclideanDist, (_X, _ROWS5)),
    *[(_solve.Dist, (_X, _S, p)) for p in (2.0, 1.0, 3.0, math.inf)],
    (_solve.Dist, (_X, _B, 2.0)),
    (_solve.CholeskyInverse, (_L4, False)),
    (_solve.CholeskyInverse, (_L4.T.copy(), True)),
    (_solve.CholeskySolve, (_X.T.copy(), _L4, False)),
    (_solve.CholeskySolve, (_X.T.copy(), _L4.T.copy(), True)),
    (_solve.LinalgCross, (_C3, _lg.uniform(-1.0, 1.0, (4, 3)), -1)),
    (_solve.LinalgCross, (_C3.T.copy(), _lg.uniform(-1.0, 1.0, (3, 1)), 0)),
    (_solve.LinalgDet, (_M4,)),
    (_solve.LinalgInvEx, (_M4, False)),
    (_solve.LinalgMatrixExp, (_M4 / 4,)),
    (_solve.LinalgSolveEx, (_M4, _X.T.copy(), True, False)),
    (_solve.LinalgSolveEx, (_M4, _X, False, False)),
    (_solve.LinalgSolveEx, (_M4, _V4, True, False)),
    # (A, B, upper, left, unitriangular)
    (_solve.LinalgSolveTriangular, (_TRI, _X.T.copy(), False, True, False)),
    (_solve.LinalgSolveTriangular, (_TRI.T.copy(), _X.T.copy(), True, True, False)),
    (_solve.LinalgSolveTriangular, (_TRI, _X, False, False, False)),
    (_solve.LinalgSolveTriangular, (_TRI.T.copy(), _X, True, False, True)),
    # (B, A, upper, transpose, unitriangular)
    (_solve.TriangularSolve, (_X.T.copy(), _TRI.T.copy(), True, False, False)),
    (_solve.TriangularSolve, (_X.T.copy(), _TRI, False, True, False)),
    (_solve.TriangularSolve, (_X.T.copy(), _TRI, False, False, True)),
    # (input, ord, dim, keepdim)
    (_solve.LinalgVectorNorm, (_S, 2.0, None, False)),
    (_solve.LinalgVectorNorm, (_S, 1.0, [1], True)),
    (_solve.LinalgVectorNorm, (_S, 3.0, [1], False)),
    (_solve.LinalgVectorNorm, (_S, 0.5, None, False)),
    (_solve.LinalgVectorNorm, (_S, math.inf, [0], False)),
    (_solve.LinalgVectorNorm, (_S, -math.inf, [1], True)),
    # (input, p, dim, maxnorm: some slices above it, some below)
    (_solve.Renorm, (_S, 2.0, 0, 2.5)),
    (_solve.Renorm, (_S, 1.0, 1, 3.0)),
    (_solve.Trace, (_X,)),
    (_solve.Trace, (_M4,)),
    (_solve.Vdot, (_V4, _X[0])),
    (_IGAMMA, (_GAMMA_A, _X * 2.0)),
    (_IGAMMAC, (_GAMMA_A, _X * 2.0)),
    (special.Zeta, (_ZETA_X, _X)),
    (special.ZetaNumberSelf, (2.5, _X)),
]


def _ns(x):
    return namespace_of(x)


def _setitem(x, y):
    z = x.clone()
    z[1:, ::2] = y[0, :2]
    return z


def _flag(x, value):
    """A Python bool as a tensor of x's engine (``equal`` and ``allclose`` return one)."""
    return _ns(x).tensor(value)


# The ops declared with no overload of their own (composites of declared ops, and ops without a
# derivative): (op, a callable written once for both engines, the arguments as for BUILTINS).
# What they are checked for is the mini-engine against torch: values, dtypes, gradients, hooks.
COMPOSITES: list[tuple[str, Callable, tuple]] = [
    ("view_as", lambda x, y: x.view_as(y), (_X, _X.reshape(4, 3))),
    ("reshape_as", lambda x, y: x.reshape_as(y), (_X.T.copy(), _X.reshape(2, 6))),
    ("flatten", lambda x: x.flatten(), (np.stack([_X, _Y]),)),
    ("numpy_T", lambda x: x.T, (_X,)),
    ("mT", lambda x: x.mT, (np.stack([_X, _Y]),)),
    ("contiguous", lambda x: x.T.contiguous(), (_X,)),
    ("expand_as", lambda x, y: x.expand_as(y), (_X[:1], _X)),
    ("chunk", lambda x: x.chunk(3, 1), (_X,)),
    ("matmul", lambda x, y: x @ y, (np.stack([_X, _Y]), _X.T.copy())),
    ("eq", lambda x, y: x.eq(y), (_S, _S.round())),
    ("ne", lambda x, y: x.ne(y), (_S, _S.round())),
    ("lt", lambda x, y: x.lt(y), (_S, _Y)),
    ("le", lambda x, y: x.le(y), (_S, _Y)),
    ("gt", lambda x, y: x.gt(y), (_S, _Y)),
    ("ge", lambda x, y: x.ge(y), (_S, _Y)),
    ("logical_and", lambda x, y: x.logical_and(y), (_S.round(), _Y)),
    ("logical_or", lambda x, y: x.logical_or(y), (_S.round(), _Y)),
    ("logical_xor", lambda x, y: x.logical_xor(y), (_S.round(), _Y)),
    ("logical_not", lambda x: x.logical_not(), (_S.round(),)),
    ("bitwise_and", lambda x, y: (x > 0).bitwise_and(y > 0), (_S, _Y)),
    ("bitwise_or", lambda x, y: (x > 0).bitwise_or(y > 0), (_S, _Y)),
    ("bitwise_xor", lambda x, y: (x > 0).bitwise_xor(y > 0), (_S, _Y)),
    ("bitwise_not", lambda x: (x > 0).bitwise_not(), (_S,)),
    ("floor_divide", lambda x, y: (x * 4).floor().long() // (y * 3 + 5).floor().long(), (_S, _B)),
    ("bitwise_left_shift", lambda x: (x * 4).floor().long() << 2, (_S,)),
    ("bitwise_right_shift", lambda x: (x * 4).floor().long() >> 1, (_S,)),
    ("isnan", lambda x: x.isnan(), (np.where(_Y < 0.0, np.nan, _X),)),
    ("isinf", lambda x: x.isinf(), (np.where(_Y > 1.0, np.inf, _X),)),
    ("isfinite", lambda x: x.isfinite(), (np.where(_Y > 1.0, -np.inf, _X),)),
    ("equal", lambda x, y: _flag(x, x.equal(y)), (_X, _X.copy())),
    ("isclose", lambda x, y: x.isclose(y, rtol=0.1), (_X, _X * 1.05)),
    ("allclose", lambda x, y: _flag(x, x.allclose(y, rtol=0.01)), (_X, _X * 1.05)),
    ("nll_loss", lambda x, t: _ns(x).nn.functional.nll_loss(x.log_softmax(1), t), (_X.T, _TARGETS)),
    ("new_zeros", lambda x: x.new_zeros((2, 3)) + x.sum(), (_X,)),
    ("new_ones", lambda x: x.new_ones(2, 3) * x.sum(), (_X,)),
    ("new_empty", lambda x: x.new_empty((2, 3)).fill_(2.0) * x.sum(), (_X,)),
    ("new_full", lambda x: x.new_full((2, 3), 1.5) * x.sum(), (_X,)),
    ("new_tensor", lambda x: x.new_tensor([1.0, 2.0]) * x.sum(), (_X,)),
    ("type_as", lambda x, y: x.float().type_as(y), (_X, _Y)),
    ("index_select_backward", lambda g: _ns(g).ops.aten.index_select_backward(
        g, [3, 4], 0, _ns(g).tensor([2, 0])), (_X[:2],)),
    ("gather_backward", lambda g, x: _ns(g).ops.aten.gather_backward(
        g, x, 1, _ns(g).tensor(_COLUMNS), False), (_X[:, :1], _X)),
    ("silu_backward", lambda g, x: _ns(g).ops.aten.silu_backward(g, x), (_Y, _S)),
    ("cumprod_backward", lambda g, x: _ns(g).ops.aten.cumprod_backward(g, x, 1, x.cumprod(1)),
     (_Y, _S)),
    ("narrow", lambda x: x.narrow(1, 1, 2), (_X,)),
    ("getitem", lambda x: x[1:, ::2], (_X,)),
    ("dropout", lambda x: _ns(x).nn.functional.dropout(x, 0.0), (_X,)),
    ("argmax", lambda x: x.argmax(1), (_S,)),
    ("argmin", lambda x: x.argmin(0, keepdim=True), (_S,)),
    ("any", lambda x: (x > 1.0).any(1), (_S,)),
    ("all", lambda x: (x > -1.5).all(), (_S,)),
    ("layer_norm", lambda x, w, b: _ns(x).nn.functional.layer_norm(x, (4,), w, b),
     (_X, _Y[0], _X[1])),
    ("embedding_renorm_", lambda w, i: _ns(w).ops.aten.embedding_renorm_(w.detach().clone(), i,
                                                                          1.0, 2.0),
     (_X * 2.0, _INDICES[0].numpy())),
    ("setitem", _setitem, (_X, _Y)),
]

def builtin_inputs(args: tuple, T=torch) -> tuple:
    """A built-in case's arguments as tensors of backend ``T`` (``ext`` or ``torch``)."""
    return tuple(_builtin_input(T, a) for a in args)


def _builtin_input(T, a):
    if isinstance(a, list):
        return [_builtin_input(T, i) for i in a]
    if isinstance(a, torch.dtype):
        return getattr(T, str(a).rsplit(".", 1)[-1])
    if isinstance(a, torch.Tensor):  # (a constant argument, such as class targets)
        return a if T is torch else T.tensor(a.numpy())
    if not isinstance(a, np.ndarray):
        return a
    if a.dtype.kind in "biu":
        return T.tensor(a)
    return T.tensor(a, dtype=T.float64, requires_grad=True)


class Bridged:
    """A declared overload as ``check`` runs it: on torch tensors through the bridge (the same
    declaration inside torch as a torch.autograd.Function), on ext tensors on the mini-engine."""

    def __init__(self, ov: type) -> None:
        self.ov = ov
        self.__qualname__ = ov.node_name

    def __call__(self, *args):
        if any(isinstance(a, torch.Tensor) for a in args):
            return compat.apply(self.ov, args, {})
        return self.ov.apply(*args)


# ---------------------------------------------------------------------------------- the pack
def _x(g, *shape, low=-4.0, high=4.0):
    return torch.tensor(g.uniform(low, high, shape), requires_grad=True)


def _normal(g, *shape, dtype=torch.float64):
    return torch.tensor(g.standard_normal(shape), dtype=dtype, requires_grad=True)


def _positive(g, *shape):
    return torch.tensor(g.uniform(1e-3, 5.0, shape), requires_grad=True)


def _target(g, n, classes, ignored=(), ignore_index=-100):
    t = torch.tensor(g.integers(0, classes, n))
    for i in ignored:
        t[i] = ignore_index
    return t


def _class_weight(g, classes):
    """A per-class weight of a loss (torch's nll_loss takes no gradient for it)."""
    return torch.tensor(g.uniform(0.2, 2.0, classes))


def _probs(g, *shape, dim=1):
    """Class probabilities along dim, a leaf that asks for its gradient (torch's cross_entropy
    gives one)."""
    return torch.tensor(g.standard_normal(shape)).softmax(dim).requires_grad_()


def fq_reference(x, scale, zp, qmin, qmax):
    """fake_quant_ste's native counterpart."""
    return torch.fake_quantize_per_tensor_affine(x, scale, zp, qmin, qmax)


def _ranks(x, dim):
    """1, 2, ..., n along dim, shaped to broadcast against x."""
    shape = [1] * x.dim()
    shape[dim] = x.shape[dim]
    return torch.arange(1, x.shape[dim] + 1, dtype=x.dtype).view(shape)


def sparsemax_reference(x, dim=-1):
    """Sort, cumsum, support, threshold, clamp: every step differentiable."""
    zs = torch.sort(x, dim, descending=True).values
    cs = zs.cumsum(dim)
    size = (1 + _ranks(x, dim) * zs > cs).sum(dim, keepdim=True)
    tau = (cs.gather(dim, size - 1) - 1) / size
    return torch.clamp(x - tau, min=0)


def entmax15_reference(x, dim=-1):
    """The closed-form threshold of 1.5-entmax (sorted prefix means and variances)."""
    x = x / 2
    x = x - x.amax(dim, keepdim=True)
    zs = torch.sort(x, dim, descending=True).values
    rho = _ranks(x, dim)
    mean = zs.cumsum(dim) / rho
    mean_sq = (zs ** 2).cumsum(dim) / rho
    delta = (1 - rho * (mean_sq - mean ** 2)) / rho
    tau = mean - torch.sqrt(torch.clamp(delta, min=0))
    size = (tau <= zs).sum(dim, keepdim=True)
    return torch.clamp(x - tau.gather(dim, size - 1), min=0) ** 2


def log1mexp_reference(x):
    """log(1 - exp(-x)) by the two branches that keep it accurate (Maechler's switch at ln 2)."""
    return torch.where(x <= math.log(2), torch.log(-torch.expm1(-x)),
                       torch.log1p(-torch.exp(-x)))


def masked_reference(mask, dim=-1):
    """torch's own safe softmax of x with the masked entries at -inf."""
    return lambda x: torch._safe_softmax(x.masked_fill(~mask.to(x.device), -math.inf), dim)


def masked(mask, dim=-1):
    """The pack's safe softmax of x under ``mask``, the mask on x's device (as a user's is)."""
    return lambda x: P.safe_softmax(x, mask.to(x.device), dim)


_masks = np.random.default_rng(11)
MASK = torch.tensor(_masks.uniform(size=(3, 5)) > 0.3)
MASK[1] = False  # a fully masked row
ROW_MASK = torch.tensor([True, False, True, True, False])  # broadcast over rows

_STE = {"gradcheck": "straight-through: the gradient is not the derivative",
        "gradgradcheck": "straight-through: the gradient is not the derivative"}
_GRL = {"gradcheck": "the gradient is reversed on purpose, not the derivative",
        "gradgradcheck": "the gradient is reversed on purpose, not the derivative"}
_ONCE = {"double_backward": "declared raises (once_differentiable)",
         "gradgradcheck": "declared raises (once_differentiable)"}
_LSE_SAVES = {"saved_bytes": "saves the logits and one float per row more than the reference "
                             "(its log_softmax replaces the logits)"}
_TORCH_MASK = {"mini_engine": "the mask is a torch tensor"}


def lse_case(reduction="mean", smoothing=0.0, ignore_index=-100):
    """cross_entropy_lse with these options, and F.cross_entropy with the same (a third input,
    when given, is the per-class weight)."""
    def fn(z, t, *weight):
        return P.cross_entropy_lse(z, t, *weight, reduction=reduction,
                                   label_smoothing=smoothing, ignore_index=ignore_index)

    def ref(z, t, *weight):
        return F.cross_entropy(z, t, *weight, reduction=reduction, label_smoothing=smoothing,
                               ignore_index=ignore_index)
    return fn, ref


def fused_case(reduction="mean", smoothing=0.0, chunk=3, weighted=False):
    """fused_linear_cross_entropy with these options, and the linear + cross_entropy composite
    (x's leading dims flattened into rows, 'none' shaped back); ``weighted``: the last input
    (after the bias) is the class weight."""
    def split(b):
        return (b[:-1], b[-1]) if weighted else (b, None)

    def fn(x, w, t, *b):
        b, class_weight = split(b)
        return P.fused_linear_cross_entropy(x, w, t, *b, class_weight=class_weight,
                                            reduction=reduction, label_smoothing=smoothing,
                                            chunk_size=chunk)

    def ref(x, w, t, *b):
        b, class_weight = split(b)
        z = F.linear(x, w, *b)
        rows_t = t.flatten(0, -2) if t.is_floating_point() else t.flatten()
        loss = F.cross_entropy(z.reshape(-1, w.shape[0]) if z.dim() > 1 else z, rows_t if
                               z.dim() > 1 else t, class_weight, reduction=reduction,
                               label_smoothing=smoothing)
        return loss.reshape(x.shape[:-1]) if reduction == "none" else loss
    return fn, ref


# The in-place forms run on a non-leaf (x * 1), as torch's do; torch.func refuses an in-place
# custom Function, and the forms that keep only the derivative raise on double backward.
_INPLACE = {"torch_func": "torch.func does not run custom Functions that mark an input dirty"}
_INPLACE_ONCE = {**_INPLACE, **{check: "inplace=True keeps the derivative, not the overwritten "
                                "x: double backward raises" for check in
                                ("double_backward", "gradgradcheck")},
                 "saved_bytes": "the derivative, as torch's copy of x, and the output (x itself, "
                                "held by the caller: no new memory) to link double backward's "
                                "error to x"}


def inplace_case(name: str) -> tuple:
    """The pack op ``name`` with ``inplace=True`` on x * 1, and torch's F.<name> the same way."""
    mine, native = getattr(P, name), getattr(F, name)
    return (lambda x: mine(x * 1, inplace=True)), (lambda x: native(x * 1, inplace=True))


def _inplace(name: str) -> Case:
    fn, reference = inplace_case(name)
    return _pack("pack", f"{name}_inplace", fn, lambda g: (_x(g, 3, 5),), reference,
                 _INPLACE if name == "hardsigmoid" else _INPLACE_ONCE)


@dataclass(frozen=True)
class Case:
    """One parity case: ``fn(*make(rng))`` against ``reference`` on the same inputs.

    ``op`` is the registry key of the op it covers (``"pack.silu"``, ``"exp"``); ``skip`` maps
    a check to the reason it does not apply; ``group`` says which pack file tests it.
    """

    name: str
    op: str
    fn: Callable
    make: Callable[[np.random.Generator], tuple]
    reference: Callable | None
    skip: dict = field(default_factory=dict)
    group: str = "builtin"

    @property
    def call(self) -> Callable:
        """``fn`` as a plain callable: a Function class runs through its ``apply``."""
        return _callable(self.fn)

    def inputs(self) -> tuple:
        """Fresh inputs, the same on every call (drawn from a generator seeded by the name)."""
        return self.make(np.random.default_rng(zlib.crc32(self.name.encode())))

    def check(self, **options) -> ParityReport:
        """``check`` on this case (``options`` as check's, ``skip`` added to the case's own). An
        op of the registry runs on both engines: the mini-engine leg skipped without a reason
        given in ``skip`` is a failure."""
        skip = {**self.skip, **options.pop("skip", {})}
        report = check(self.fn, *self.inputs(), reference=self.reference, skip=skip, **options)
        report.name, report.op = self.name, self.op
        status, detail = report.results["mini_engine"]
        if status == "skip" and "mini_engine" not in skip:
            report.results["mini_engine"] = ("fail", f"an op of the registry, and {detail}")
        return report


def _loss(name: str, pair: tuple, make, skip) -> Case:
    fn, reference = pair
    return _pack("losses", name, fn, make, reference, skip)


def _pack(group: str, name: str, fn, make, reference, skip=None, op: str | None = None) -> Case:
    # (a variant is named after its op with a suffix, "geglu_tanh"; a classic teaching Function,
    # which is not a registry op, is keyed "classic.<class>")
    op = op or "pack." + next(o for o, *_ in P.dropin.OPS if name == o or name.startswith(o + "_"))
    return Case(name, op, fn, make, reference, dict(skip or {}), group)


PACK: dict[str, Case] = {c.name: c for c in [
    # activations, gates, quantization, gradient tricks (tests/test_pack.py)
    _pack("pack", "silu", P.silu, lambda g: (_x(g, 3, 5),), F.silu),
    _pack("pack", "mish", P.mish, lambda g: (_x(g, 3, 5),), F.mish),
    _pack("pack", "gelu_tanh", P.gelu_tanh, lambda g: (_x(g, 3, 5),),
          lambda x: F.gelu(x, approximate="tanh")),
    _pack("pack", "gelu", P.gelu, lambda g: (_x(g, 3, 5),), F.gelu),
    _pack("pack", "gelu_approximate_tanh", lambda x: P.gelu(x, approximate="tanh"),
          lambda g: (_x(g, 3, 5),), lambda x: F.gelu(x, approximate="tanh")),
    _pack("pack", "hardswish", P.hardswish, lambda g: (_x(g, 3, 5),), F.hardswish),
    _pack("pack", "hardsigmoid", P.hardsigmoid, lambda g: (_x(g, 3, 5),), F.hardsigmoid),
    *(_inplace(op) for op in ("silu", "mish", "hardswish", "hardsigmoid")),
    _pack("pack", "hardmish", P.hardmish, lambda g: (_x(g, 3, 5),),
          lambda x: 0.5 * x * torch.clamp(x + 2, 0, 2)),
    _pack("pack", "swiglu", P.swiglu, lambda g: (_x(g, 3, 4), _x(g, 3, 4)),
          lambda a, b: F.silu(a) * b),
    _pack("pack", "geglu", P.geglu, lambda g: (_x(g, 3, 4), _x(g, 3, 4)),
          lambda a, b: F.gelu(a) * b),
    _pack("pack", "geglu_tanh", lambda a, b: P.geglu(a, b, "tanh"),
          lambda g: (_x(g, 3, 4), _x(g, 3, 4)), lambda a, b: F.gelu(a, approximate="tanh") * b),
    _pack("pack", "clamp_masked", P.clamp_masked, lambda g: (_x(g, 3, 5), -1.0, 1.5),
          torch.clamp),
    _pack("pack", "clamp_masked_block", lambda x, lo, hi: P.clamp_masked(x, lo, hi, "block"),
          lambda g: (_x(g, 3, 5), -1.0, 1.5), lambda x, lo, hi: F.hardtanh(x, lo, hi)),
    _pack("pack", "round_ste", P.round_ste, lambda g: (_x(g, 3, 5),),
          lambda x: x + (torch.round(x) - x).detach(), _STE),
    _pack("pack", "sign_ste", P.sign_ste, lambda g: (_x(g, 3, 5, low=-2, high=2),),
          lambda x: x.clamp(-1, 1) + (torch.sign(x) - x.clamp(-1, 1)).detach(), _STE),
    _pack("pack", "fake_quant_ste", P.fake_quant_ste,
          lambda g: (torch.tensor(g.uniform(-95, 95, (4, 6)), requires_grad=True), 0.7, 3,
                     -128, 127),
          fq_reference, {**_STE, "torch_func": "the reference has no vmap rule"}),
    _pack("pack", "grad_reverse", P.grad_reverse, lambda g: (_x(g, 3, 5), 0.7),
          lambda x, a: (-a * x) + ((1 + a) * x).detach(), _GRL),
    _pack("pack", "grad_scale", P.grad_scale, lambda g: (_x(g, 3, 5), 0.3),
          lambda x, s: x * s + (x * (1 - s)).detach(), _GRL),
    _pack("pack", "quantize", P.quantize, lambda g: (_x(g, 10), 4), None, _STE),
    # the classic teaching Functions
    _pack("pack", "Exp", P.Exp, lambda g: (_x(g, 4, low=-2, high=2),), torch.exp, op="classic.Exp"),
    _pack("pack", "AddMul", P.AddMul, lambda g: (_x(g, 3), _x(g, 3), _x(g, 3)),
          lambda a, b, c: (a + b) * c, {"saved_bytes": "the textbook formula saves x, y and z"},
          op="classic.AddMul"),
    _pack("pack", "Softmax", P.Softmax, lambda g: (_x(g, 5),),
          lambda t: torch.softmax(t, 0), op="classic.Softmax"),
    _pack("pack", "Quantize", P.Quantize, lambda g: (_x(g, 10), 4), None, _STE,
          op="classic.Quantize"),
    # normalizers and reductions (tests/test_pack_normalizers.py)
    _pack("normalizers", "sparsemax", P.sparsemax, lambda g: (_x(g, 3, 6, low=-2, high=2),),
          sparsemax_reference),
    _pack("normalizers", "sparsemax_dim", lambda x: P.sparsemax(x, 1),
          lambda g: (_x(g, 2, 5, 3, low=-2, high=2),), lambda x: sparsemax_reference(x, 1)),
    _pack("normalizers", "entmax15", P.entmax15, lambda g: (_x(g, 3, 6, low=-2, high=2),),
          entmax15_reference),
    _pack("normalizers", "entmax15_dim", lambda x: P.entmax15(x, 0),
          lambda g: (_x(g, 5, 3, low=-2, high=2),), lambda x: entmax15_reference(x, 0)),
    _pack("normalizers", "safe_softmax", P.safe_softmax, lambda g: (_x(g, 3, 5, low=-2, high=2),),
          lambda x: torch.softmax(x, -1)),
    _pack("normalizers", "safe_softmax_mask", masked(MASK),
          lambda g: (_x(g, 3, 5, low=-2, high=2),), masked_reference(MASK), _TORCH_MASK),
    _pack("normalizers", "safe_softmax_dim", masked(ROW_MASK, 0),
          lambda g: (_x(g, 5, 5, low=-2, high=2),), masked_reference(ROW_MASK, 0), _TORCH_MASK),
    _pack("normalizers", "rms_norm", lambda x, w: P.rms_norm(x, (5,), w, 1e-6),
          lambda g: (_x(g, 3, 5, low=-2, high=2), _x(g, 5, low=-2, high=2)),
          lambda x, w: F.rms_norm(x, (5,), w, 1e-6)),
    _pack("normalizers", "rms_norm_no_weight", lambda x: P.rms_norm(x, [4], eps=1e-3),
          lambda g: (_x(g, 2, 3, 4, low=-2, high=2),),
          lambda x: F.rms_norm(x, [4], None, 1e-3)),
    _pack("normalizers", "rms_norm_two_dims", lambda x, w: P.rms_norm(x, (3, 4), w),
          lambda g: (_x(g, 2, 3, 4, low=-2, high=2), _x(g, 3, 4, low=-2, high=2)),
          lambda x, w: F.rms_norm(x, (3, 4), w)),
    _pack("normalizers", "safe_logsumexp", lambda x: P.safe_logsumexp(x, 1),
          lambda g: (_x(g, 3, 5, low=-2, high=2),), lambda x: torch.logsumexp(x, 1)),
    _pack("normalizers", "safe_logsumexp_dims",
          lambda x: P.safe_logsumexp(x, (0, -1), keepdim=True),
          lambda g: (_x(g, 3, 4, 5, low=-2, high=2),),
          lambda x: torch.logsumexp(x, (0, -1), keepdim=True)),
    _pack("normalizers", "log1mexp", P.log1mexp, lambda g: (_positive(g, 3, 5),),
          log1mexp_reference),
    # cross-entropy losses (tests/test_pack_losses.py)
    _loss("cross_entropy_lse", lse_case(),
          lambda g: (_normal(g, 6, 9), _target(g, 6, 9, (2,))), {**_ONCE, **_LSE_SAVES}),
    _loss("cross_entropy_lse_sum_smoothing", lse_case("sum", 0.2),
          lambda g: (_normal(g, 5, 7), _target(g, 5, 7, (0,))), {**_ONCE, **_LSE_SAVES}),
    _loss("cross_entropy_lse_none_smoothing", lse_case("none", 0.1, ignore_index=3),
          lambda g: (_normal(g, 6, 8), _target(g, 6, 8, (1, 4), 3)), {**_ONCE, **_LSE_SAVES}),
    _loss("cross_entropy_lse_weight_smoothing", lse_case("mean", 0.2),
          lambda g: (_normal(g, 6, 7), _target(g, 6, 7, (3,)), _class_weight(g, 7)),
          {**_ONCE, **_LSE_SAVES}),
    _loss("cross_entropy_lse_spatial_weight", lse_case("none", 0.1),
          lambda g: (_normal(g, 3, 5, 2, 2), _target(g, (3, 2, 2), 5, (0,)),
                     _class_weight(g, 5)), {**_ONCE, **_LSE_SAVES}),
    _loss("cross_entropy_lse_probs", lse_case("mean", 0.1),
          lambda g: (_normal(g, 4, 6), _probs(g, 4, 6), _class_weight(g, 6)),
          {**_ONCE, **_LSE_SAVES}),
    _loss("cross_entropy_lse_spatial_probs", lse_case("sum"),
          lambda g: (_normal(g, 2, 4, 3), _probs(g, 2, 4, 3)), {**_ONCE, **_LSE_SAVES}),
    _loss("fused_linear_cross_entropy", fused_case(),
          lambda g: (_normal(g, 7, 5), _normal(g, 11, 5), _target(g, 7, 11, (2,)),
                     _normal(g, 11)), _ONCE),
    _loss("fused_linear_cross_entropy_sum_no_bias", fused_case("sum", chunk=2),
          lambda g: (_normal(g, 5, 4), _normal(g, 6, 4), _target(g, 5, 6)), _ONCE),
    _loss("fused_linear_cross_entropy_none_smoothing", fused_case("none", 0.1, chunk=4),
          lambda g: (_normal(g, 9, 3), _normal(g, 8, 3), _target(g, 9, 8, (0, 5)),
                     _normal(g, 8)), _ONCE),
    _loss("fused_linear_cross_entropy_leading_dims_class_weight",
          fused_case("none", 0.2, chunk=4, weighted=True),
          lambda g: (_normal(g, 2, 3, 4), _normal(g, 6, 4), _target(g, (2, 3), 6, (1,)),
                     _normal(g, 6), _class_weight(g, 6)), _ONCE),
    _loss("fused_linear_cross_entropy_probs", fused_case("sum", chunk=2),
          lambda g: (_normal(g, 5, 3), _normal(g, 4, 3), _probs(g, 5, 4)), _ONCE),
]}


# Overloads no case of BUILTINS' form can run, by node name, with the reason: the cases
# differentiate the first output, with every float input requiring grad.
NO_BUILTIN_CASE = {
    "LinalgSlogdetBackward0": "the first output is the sign, which torch's own autograd.grad "
                              "refuses to differentiate (not used in the graph)",
    "SpecialZetaBackward2": "zeta(tensor, number) has no derivative in torch at all: its "
                            "backward raises, and with a constant tensor nothing requires grad",
}

# Checks that do not apply to a built-in, by node name, with the reason.
_NO_FUNC = {"torch_func": "torch.func has no batching rule for aten::_index_put_impl, which the "
                          "backward calls as torch's formula does outside torch.func"}
_NO_COMPILE = {"compile": "the backward branches on values (whether x has a zero), as torch's "
                          "C++ prod_backward does: torch.compile cannot trace a data-dependent "
                          "branch"}
_STRIDED = {"compile": "Dynamo cannot trace the Function: the as_strided view's backward reads "
                       "the input's strides and offset, a torch.* call that returns no tensor"}
BUILTIN_SKIPS = {"IndexBackward0": _NO_FUNC, "IndexPutImplBackward0": _NO_FUNC,
                 "ProdBackward0": _NO_COMPILE, "ProdBackward1": _NO_COMPILE,
                 "CdistBackward0": {"torch_func": "torch's own jacrev of cdist is wrong: its "
                                    "batched _cdist_backward differs from autograd.grad taken "
                                    "row by row, which the bridge agrees with"},
                 "EuclideanDistBackward0": {"autocast": "torch's own backward fails under CPU "
                                            "bf16 autocast: its bf16 result meets the float32 "
                                            "inputs in a matmul"},
                 "LinalgPinvBackward0": {"autocast": "torch's own pinv backward fails under CPU "
                                         "bf16 autocast: its matmuls meet bf16 and float32"},
                 "LinalgLstsqBackward0": {"compile": "torch.compile(fullgraph=True) cannot trace "
                                          "torch.linalg.lstsq itself (a dynamic-shape operator)"},
                 "AsStridedBackward0": _STRIDED, "AsStridedBackward0_copy": _STRIDED,
                 "AsStridedScatterBackward0": {"torch_func": "torch.func has no batching rule "
                                               "for aten::as_strided_scatter"},
                 "UnfoldBackward0": {"compile": "under torch.compile (aot_eager) the backward "
                                     "body, which adds overlapping windows back with index_add, "
                                     "gives other gradients than the same body run eagerly, "
                                     "which agree with torch's"}}


def _builtin(i: int, ov: type, args: tuple, op: str) -> Case:
    return Case(f"{ov.node_name}-{i}", op, Bridged(ov), lambda g: builtin_inputs(args),
                ov.forward, dict(BUILTIN_SKIPS.get(ov.node_name, {})))


# What a composite is not checked for: it has no Function of its own, so on torch tensors it is
# torch's op compared with itself.
_TORCH_ITSELF = {name: "no Function of its own: on torch tensors this is torch's op" for name in (
    "forward", "backward", "double_backward", "gradcheck", "gradgradcheck", "no_mutation",
    "upstream", "version", "saved_bytes", "compile", "torch_func", "autocast")}


# Not yet matched, with where it is described.
_OPEN_COMPOSITES = {"silu_backward": {
    name: "not yet matched: torch records a NotImplemented node that raises in backward, ext "
          "records none (docs/differences.md)" for name in ("mini_engine", "hooks")}}


def _composite(op: str, fn: Callable, args: tuple) -> Case:
    return Case(op, op, fn, lambda g: builtin_inputs(args), fn,
                {**_TORCH_ITSELF, **_OPEN_COMPOSITES.get(op, {})})


def op_cases(kind: str = "all") -> list[Case]:
    """The parity cases: ``"pack"``, ``"builtin"`` or ``"all"`` (the pack first)."""
    if kind not in ("all", "pack", "builtin"):
        raise ValueError(f"op_cases(): kind is 'all', 'pack' or 'builtin', not {kind!r}")
    found = list(PACK.values()) if kind != "builtin" else []
    if kind != "pack":
        op_of = {ov: op.name for op in _op.registry() if not op.pack for ov in op.overloads}
        found += [_builtin(i, ov, args, op_of[ov]) for i, (ov, args) in enumerate(BUILTINS)]
        found += [_composite(op, fn, args) for op, fn, args in COMPOSITES]
    return found
