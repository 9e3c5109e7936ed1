"""embedding: rows of a weight matrix picked by integer indices, and ``max_norm``'s renorm."""

from __future__ import annotations

import numpy as np

from ...._dtype import FROM_NUMPY
from ...._tensor import Tensor, bump_version
from ..._op import LINEAR, Overload, declare, dispatch
from .._builtin import namespace_of
from ._common import check_tensor

__all__ = ["embedding", "embedding_dense_backward", "embedding_renorm_"]


class Embedding(Overload):
    """Rows ``indices`` of ``weight``: dweight adds each grad row back to the row it was read
    from (except ``padding_idx``'s, divided by the index's count with ``scale_grad_by_freq``)."""

    node_name = "EmbeddingBackward0"
    args = ("weight", "indices", "padding_idx", "scale_grad_by_freq", "sparse")
    saved_fields = ("indices",)
    saved_attrs = ("padding_idx", "scale_grad_by_freq", "sparse", "weight_sym_argsize_0")
    tensor_positions = (0,)
    jvp = LINEAR  # embedding(tangent, indices, ...)

    @classmethod
    def _decorate_node(cls) -> None:
        super()._decorate_node()
        # torch shows "no padding row" (-1) as an unsigned 64-bit integer.
        cls._backward_cls._saved_padding_idx = property(lambda node: node.padding_idx % 2**64)

    @staticmethod
    def backward(ctx, grad):
        (indices,) = ctx.saved_tensors
        return (namespace_of(grad).ops.aten.embedding_dense_backward(
            grad, indices, ctx.weight_sym_argsize_0, ctx.padding_idx, ctx.scale_grad_by_freq),
            None, None, None, None)


class EmbeddingDenseBackward(Overload):
    """embedding's weight gradient as one op (torch's ``embedding_dense_backward``): each grad
    row added to the weight row it was read from. Its own gradient reads those rows back.
    (torch's formula for it leaves out the division by the counts of ``scale_grad_by_freq``;
    here it is kept, see docs/differences.md.)"""

    node_name = "EmbeddingDenseBackwardBackward0"
    args = ("grad_output", "indices", "num_weights", "padding_idx", "scale_grad_by_freq")
    saved_fields = ("indices",)
    saved_attrs = ("padding_idx",)
    ctx_attrs = ("scale_grad_by_freq",)
    tensor_positions = (0,)
    jvp = LINEAR  # embedding_dense_backward(tangent, indices, ...)

    @classmethod
    def _decorate_node(cls) -> None:
        super()._decorate_node()
        cls._backward_cls._saved_padding_idx = property(lambda node: node.padding_idx % 2**64)

    @staticmethod
    def backward(ctx, gg):
        (indices,) = ctx.saved_tensors
        flat = indices.reshape(-1)
        rows = gg.index_select(0, flat)
        if ctx.scale_grad_by_freq:
            rows = rows / _counts(flat).unsqueeze(1).to(rows.dtype)
        if ctx.padding_idx >= 0:
            rows.masked_fill_((flat == ctx.padding_idx).unsqueeze(1), 0)
        return rows.view(*indices.shape, -1), None, None, None, None


def _counts(flat):
    # How many times each entry's index occurs.
    return (flat.unsqueeze(1) == flat.unsqueeze(0)).sum(1)


def _embedding_dense_backward(grad: Tensor, indices: Tensor, num_weights: int,
                              padding_idx: int, scale_grad_by_freq: bool) -> Tensor:
    """The gradient of embedding's weight for ``grad``: zeros of ``num_weights`` rows plus each
    grad row at the row it was read from."""
    g = grad._data
    flat = indices._data.reshape(-1)
    rows = g.reshape(flat.size, g.shape[-1])
    if scale_grad_by_freq:
        _, where, counts = np.unique(flat, return_inverse=True, return_counts=True)
        rows = rows / counts[where].astype(g.dtype)[:, None]
    if padding_idx >= 0:
        # Selected, not multiplied: an infinite grad on the padding row still gives 0.
        rows = np.where((flat == padding_idx)[:, None], np.zeros((), g.dtype), rows)
    d = np.zeros((num_weights, g.shape[-1]), g.dtype)
    np.add.at(d, flat, rows)
    return dispatch(EmbeddingDenseBackward, d,
                    (grad, indices, num_weights, padding_idx, scale_grad_by_freq))


def _embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
               scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """The rows ``indices`` of the 2-D ``weight``: the result has shape indices.shape + (dim,).
    ``padding_idx`` (-1: none) is the row that receives no gradient."""
    check_tensor(weight, "embedding", "weight")
    check_tensor(indices, "embedding", "indices", 2)
    i = indices._data
    if i.dtype != np.int64 and i.dtype != np.int32:
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got "
                           f"ext.{FROM_NUMPY[i.dtype]._legacy} instead (while checking "
                           f"arguments for embedding)")
    w = weight._data
    if w.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    if sparse:
        raise NotImplementedError("ext has no sparse tensors: embedding(sparse=True) is not "
                                  "supported")
    if i.size and (i.min() < 0 or i.max() >= w.shape[0]):
        raise IndexError("index out of range in self")
    return dispatch(Embedding, w[i], (weight, indices, padding_idx, scale_grad_by_freq, sparse))


def _embedding_renorm_(weight: Tensor, indices: Tensor, max_norm: float,
                       norm_type: float) -> Tensor:
    """Rescale, in place and untracked, each row of ``weight`` read by ``indices`` whose
    ``norm_type``-norm exceeds ``max_norm`` down to that norm."""
    rows = np.unique(indices._data)
    w = weight._data
    norms = np.linalg.norm(w[rows], ord=norm_type, axis=1)
    big = norms > max_norm
    if big.any():
        w[rows[big]] *= (max_norm / (norms[big] + 1e-7))[:, None].astype(w.dtype)
        bump_version(weight)
    return weight


embedding = declare("embedding", Embedding, function=_embedding, methods=())
embedding_dense_backward = declare("embedding_dense_backward", EmbeddingDenseBackward,
                                   function=_embedding_dense_backward, methods=(), functions=())
# (no derivative: torch runs it under no_grad)
embedding_renorm_ = declare("embedding_renorm_", function=_embedding_renorm_, methods=(),
                            functions=())
