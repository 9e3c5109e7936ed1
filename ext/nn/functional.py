"""``ext.nn.functional``: torch.nn.functional's activations, ``linear``, ``layer_norm``,
``dropout``, ``embedding`` and losses on ext tensors.

Each function builds the graph torch builds: ``linear`` is an ``addmm`` for a 2-D input with a
bias, ``cross_entropy`` is ``log_softmax`` then ``nll_loss``. Where torch composes in C++ (label
smoothing, class-probability targets, weighted MSE), the same composition is written here with
ext ops, so the values and gradients are torch's; a scalar step that torch records as one of its
C++-only overloads (``MulBackward1``, ``DivBackward1``) shows as the Python-level node
(``MulBackward0``, ``DivBackward0``).
"""

from __future__ import annotations

import warnings

import numpy as np

from .._args import not_a_tensor
from .._tensor import Tensor
from ..functions.builtin import activation as _ops
from ..functions.builtin import nn_ops as _nn_ops
from ..functions.builtin.inplace import apply_inplace
from ..functions.builtin.shape import unsafe_view

__all__ = ["relu", "sigmoid", "tanh", "gelu", "silu", "softmax", "log_softmax", "softmin", "linear",
           "layer_norm", "dropout", "embedding", "mse_loss", "nll_loss", "cross_entropy"]


def _check_tensor(x, fn: str, arg: str, position: int) -> None:
    if not isinstance(x, Tensor):
        raise not_a_tensor(x, fn, arg, position)


# ---------------------------------------------------------------------------------- activations
def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002 - torch's name
    """max(input, 0) elementwise; ``inplace`` overwrites ``input`` (``relu_``)."""
    return input.relu_() if inplace else input.relu()


def sigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """1 / (1 + exp(-input)) elementwise."""
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:  # noqa: A002
    """The hyperbolic tangent, elementwise."""
    return input.tanh()


def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002
    """x Φ(x), Φ the standard normal CDF; ``approximate='tanh'``: 0.5x(1 + tanh(√(2/π)(x +
    0.044715x³)))."""
    return _nn_ops.gelu(input, approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """x σ(x) elementwise; ``inplace`` overwrites ``input``."""
    return apply_inplace(input, _nn_ops.silu) if inplace else _nn_ops.silu(input)


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  "include dim=X as an argument.", stacklevel=stacklevel)
    # torch's legacy guess: inputs of 0, 1 or 3 dims are unbatched.
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,  # noqa: A002
            dtype=None) -> Tensor:
    """exp(input) normalised to sum 1 along ``dim``; ``dtype`` converts the input first."""
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    return _ops.softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,  # noqa: A002
                dtype=None) -> Tensor:
    """log(softmax(input)) along ``dim``, computed stably."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _ops.log_softmax(input, dim, dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,  # noqa: A002
            dtype=None) -> Tensor:
    """softmax(-input) along ``dim``: the smallest entries get the largest weights."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    return _ops.softmax(-input, dim, dtype)


# ---------------------------------------------------------------------------------- linear
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    """input @ weight.T + bias, with torch's graph: addmm for a 2-D input (and for a contiguous
    input with a 1-D bias, flattened to 2-D and viewed back), else matmul then add."""
    _check_tensor(input, "linear", "input", 1)
    _check_tensor(weight, "linear", "weight", 2)
    if bias is not None:
        _check_tensor(bias, "linear", "bias", 3)
    if input.dim() == 0 or weight.dim() == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are "
                           f"{input.dim()}D and {weight.dim()}D")
    if bias is not None:
        if input.dim() == 2:
            return _ops.addmm(bias, input, weight.t())
        if bias.dim() == 1 and input.is_contiguous():
            sizes = tuple(input.shape)
            rows = int(np.prod(sizes[:-1], dtype=np.int64))
            out = _ops.addmm(bias, input.reshape(rows, sizes[-1]), weight.t())
            return out.view(*sizes[:-1], out.shape[1])
        return _matmul(input, weight.t()) + bias
    return _matmul(input, weight.t())


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize the trailing ``normalized_shape`` dims to mean 0 and variance 1, then apply
    the elementwise ``weight`` and ``bias`` when given."""
    return _nn_ops.layer_norm(input, normalized_shape, weight, bias, eps)


def dropout(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
            inplace: bool = False) -> Tensor:
    """While ``training``, zero each element with probability ``p`` and scale the others by
    1 / (1 - p) (the mask comes from ext's generator); otherwise the input itself."""
    return _nn_ops.dropout(input, p, training, inplace)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,  # noqa: A002
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """The rows of ``weight`` at the integer ``input`` indices; the ``padding_idx`` row gets
    no gradient, and ``max_norm`` first rescales (in place) the rows that are read."""
    if padding_idx is not None:
        if padding_idx >= weight.size(0) or padding_idx < -weight.size(0):
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            padding_idx += weight.size(0)
    else:
        padding_idx = -1
    if max_norm is not None:
        _nn_ops.embedding_renorm_(weight, input, max_norm, norm_type)
    return _nn_ops.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def _matmul(a: Tensor, b: Tensor) -> Tensor:
    """a @ b for a matrix or vector ``b``; an ``a`` of 3 or more dims is folded into rows (a
    view, or a copy when its strides allow none) and the product unfolded, as torch does."""
    if a.dim() <= 2:
        return a.matmul(b)
    sizes = tuple(a.shape)
    rows = int(np.prod(sizes[:-1], dtype=np.int64))
    folded = a.reshape(rows, sizes[-1])
    if b.dim() == 2:
        product, shape = folded.mm(b), sizes[:-1] + (b.shape[1],)
    else:
        product, shape = folded.mv(b), sizes[:-1]
    return unsafe_view(product, shape)


# ---------------------------------------------------------------------------------- losses
def _legacy_reduction(size_average, reduce) -> str:
    # The size_average / reduce pair that reduction= replaced, with torch's warning.
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{ret}' instead.", stacklevel=3)
    return ret


def _broadcast(a: Tensor, b: Tensor) -> tuple:
    try:
        shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    except ValueError:
        sa, sb = tuple(a.shape), tuple(b.shape)
        n = max(len(sa), len(sb))
        for i in range(1, n + 1):
            x = sa[-i] if i <= len(sa) else 1
            y = sb[-i] if i <= len(sb) else 1
            if x != y and x != 1 and y != 1:
                raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b "
                                   f"({y}) at non-singleton dimension {n - i}") from None
        raise
    return (a if tuple(a.shape) == shape else a.expand(shape),
            b if tuple(b.shape) == shape else b.expand(shape))


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,  # noqa: A002
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """The mean (or sum, or elementwise) squared error between ``input`` and ``target``,
    optionally weighted elementwise."""
    if target.size() != input.size():
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input "
                      f"size ({input.size()}). This will likely lead to incorrect results due "
                      "to broadcasting. Please ensure they have the same size.", stacklevel=2)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    a, b = _broadcast(input, target)
    if weight is None:
        return _ops.mse_loss(a, b, reduction)
    if weight.size() != input.size():
        raise ValueError("Weights and input must have the same size.")
    weighted = (a - b) ** 2 * weight
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return weighted.sum()
    if reduction == "mean":
        return weighted.sum() / weight.sum()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', "
                     "'sum'.")


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
             size_average=None, ignore_index: int = -100, reduce=None,
             reduction: str = "mean") -> Tensor:
    """The negative log likelihood of class-index ``target`` under log-probabilities ``input``
    ((N, C) with (N,) targets, or (C,) with a 0-d target)."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    return _ops.nll_loss(input, target, weight, reduction, ignore_index)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                  size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """The cross entropy between softmax(``input``) and the target: class indices (N,) for an
    (N, C) input (0-d for (C,)), or class probabilities of the input's shape."""
    _check_tensor(input, "cross_entropy_loss", "input", 1)
    _check_tensor(target, "cross_entropy_loss", "target", 2)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in _ops.REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if input.shape == target.shape:
        return _cross_entropy_probabilities(input, target, weight, ignore_index, reduction,
                                            label_smoothing)
    if label_smoothing > 0.0:
        return _cross_entropy_smoothed(input, target, weight, ignore_index, reduction,
                                       label_smoothing)
    class_dim = 0 if input.dim() == 1 else 1
    return _ops.nll_loss(_ops.log_softmax(input, class_dim), target, weight, reduction,
                         ignore_index)


def _check_smoothing(label_smoothing: float) -> None:
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing:g}")


def _class_view(weight: Tensor, ndim: int, class_dim: int) -> Tensor:
    # The class weights shaped to broadcast along the input's class dim.
    if ndim <= 1:
        return weight
    shape = [1] * ndim
    shape[class_dim] = weight.shape[0]
    return weight.view(*shape)


def _cross_entropy_probabilities(input, target, weight, ignore_index, reduction,  # noqa: A002
                                 label_smoothing):
    if not target.is_floating_point():
        raise RuntimeError(f"Expected floating point type for target with class probabilities, "
                           f"got {target.dtype._short}")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    if input.dim() == 0:
        raise IndexError("Dimension specified as 1 but tensor has no dimensions")
    class_dim = 0 if input.dim() == 1 else 1
    n_classes = input.shape[class_dim]
    if weight is not None and (weight.dim() != 1 or weight.numel() != n_classes):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all "
                           f"{n_classes} classes or no classes but got weight tensor of shape: "
                           f"{list(weight.shape)}")
    log_p = _ops.log_softmax(input, class_dim)
    if label_smoothing > 0.0:
        _check_smoothing(label_smoothing)
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    terms = log_p * target
    if weight is not None:
        terms = terms * _class_view(weight, input.dim(), class_dim)
    if reduction == "none":
        return -terms.sum(class_dim)
    if reduction == "sum":
        return -terms.sum()
    if input.numel() == 0:
        # torch fills the mean of no samples with NaN.
        return -(terms.sum() * float("nan"))
    return -terms.sum() / (input.numel() // n_classes)


def _cross_entropy_smoothed(input, target, weight, ignore_index, reduction,  # noqa: A002
                            label_smoothing):
    _check_smoothing(label_smoothing)
    class_dim = 0 if input.dim() == 1 else 1
    n_classes = input.shape[class_dim]
    log_p = _ops.log_softmax(input, class_dim)
    nll = _ops.nll_loss(log_p, target, weight, reduction, ignore_index)
    # The smoothing term: the loss against the uniform distribution, ignored samples zeroed.
    if weight is not None:
        smooth = -(log_p * _class_view(weight, input.dim(), class_dim)).sum(class_dim)
    else:
        smooth = -log_p.sum(class_dim)
    smooth = smooth.masked_fill(target == ignore_index, 0.0)
    if reduction == "mean":
        if weight is not None:
            hits = _ops.target_hits(target, n_classes, ignore_index).to(weight.dtype)
            smooth = smooth.sum() / (hits * weight).sum()
        else:
            smooth = smooth.sum() / (target != ignore_index).sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)
