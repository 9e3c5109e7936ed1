"""The argument checks of the cross-entropy losses (losses.py): F.cross_entropy's errors, in its
exception types, each message naming the op. They run before any work, once per call, so they
are written for a small per-call cost: plain Python tests first, and at most a few reductions of
the target (its range) before the op starts."""

from __future__ import annotations

import sys
import warnings

from ..builtin._builtin import namespace_of

REDUCTIONS = ("mean", "sum", "none")


def values_checkable(t) -> bool:
    """Whether target's values can be read on the host before the op: not on meta tensors, not
    while torch.compile traces, not inside torch.func's transforms (their tensors hold no
    values to read there), not on fake tensors (a custom op's fake kernel, torch.export)."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(t, torch.Tensor):
        return t.device.type != "meta"
    if t.is_meta or torch.compiler.is_compiling() \
            or torch._C._functorch.is_functorch_wrapped_tensor(t):
        return False
    # (a plain tensor that no functionalization wraps holds its values: the common case,
    # answered without is_fake's walk through tensor subclasses)
    if type(t) is torch.Tensor and not torch._is_functional_tensor(t):
        return True
    return not torch._subclasses.fake_tensor.is_fake(t)


def _dtype_name(t) -> str:
    return str(t.dtype).rsplit(".", 1)[-1]


def reduction_of(op: str, size_average, reduce, reduction: str) -> str:
    """The reduction, with the deprecated size_average / reduce mapped as torch maps them
    (either given: they win over ``reduction``, with torch's deprecation warning)."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else "mean" if size_average else "sum"
        warnings.warn(f"{op}(): size_average and reduce args will be deprecated, please use "
                      f"reduction='{reduction}' instead.", UserWarning, stacklevel=3)
    if reduction not in REDUCTIONS:
        raise ValueError(f"{op}(): {reduction} is not a valid value for reduction (valid: "
                         f"'mean', 'sum', 'none')")
    return reduction


def check_options(op: str, ignore_index, label_smoothing) -> float:
    """ignore_index an int; label_smoothing a number at most 1 (torch takes one at or below 0
    as no smoothing). Returns the smoothing to use."""
    if type(ignore_index) is not int and (isinstance(ignore_index, bool)
                                          or not isinstance(ignore_index, int)):
        raise TypeError(f"{op}(): argument 'ignore_index' must be int, not "
                        f"{type(ignore_index).__name__}")
    if type(label_smoothing) is float and label_smoothing == 0.0:
        return 0.0  # (the common call: no smoothing)
    if not isinstance(label_smoothing, (int, float)):
        raise TypeError(f"{op}(): argument 'label_smoothing' must be float, not "
                        f"{type(label_smoothing).__name__}")
    if label_smoothing > 1.0:
        raise RuntimeError(f"{op}(): label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{float(label_smoothing)}")
    return max(float(label_smoothing), 0.0)


def check_weight(op: str, name: str, weight, classes: int, input_name: str, dtype) -> None:
    """A per-class weight: a tensor of shape (classes,) in the logits' dtype."""
    if weight is None:
        return
    if not hasattr(weight, "is_floating_point"):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not "
                        f"{type(weight).__name__}")
    if tuple(weight.shape) != (classes,):
        raise RuntimeError(f"{op}(): {name} tensor should be defined either for all {classes} "
                           f"classes or no classes but got {name} tensor of shape: "
                           f"{list(weight.shape)}")
    if weight.dtype != dtype:
        raise RuntimeError(f"{op}(): argument '{name}' must have {input_name}'s dtype "
                           f"(expected scalar type {dtype} but found {weight.dtype})")


def check_index_range(op: str, index, classes: int, ignore_index: int) -> None:
    """Each kept row's class index in [0, classes): ``index`` is the target with 0 on the
    ignored rows, so its smallest and largest values settle it in two reductions."""
    if index.numel() == 0:
        return
    if 0 <= int(index.min()) and int(index.max()) < classes:
        return
    bad = (index < 0) | (index >= classes)
    raise IndexError(f"{op}(): Target {int(index[bad].reshape(-1)[0])} is out of bounds: "
                     f"argument 'target' must hold classes 0 to {classes - 1} (or "
                     f"ignore_index={ignore_index})")


def _check_index_target(op: str, target, rows: tuple) -> None:
    """Class indices: int64 or uint8, one per row (their range: check_index_range, in
    forward, where the kept rows' indices are at hand)."""
    ns = namespace_of(target)
    if target.dtype is not ns.int64 and target.dtype != getattr(ns, "uint8", ns.int64):
        raise RuntimeError(f"{op}(): expected target dtype to be Long or Byte (class indices), "
                           f"but got {_dtype_name(target)}")
    shape = tuple(target.shape)
    if shape != rows:
        if len(rows) >= 1 and len(shape) >= 1 and shape[0] != rows[0]:
            raise ValueError(f"{op}(): Expected input batch_size ({rows[0]}) to match target "
                             f"batch_size ({shape[0]}).")
        raise RuntimeError(f"{op}(): Expected target size {list(rows)}, got {list(shape)}")


def check_target(op: str, target, logits_shape: tuple, rows: tuple, classes: int, weight,
                 ignore_index: int) -> None:
    """A target of class indices (rows) or of class probabilities (the logits' shape)."""
    if not hasattr(target, "is_floating_point"):
        raise TypeError(f"{op}(): argument 'target' must be Tensor, not "
                        f"{type(target).__name__}")
    if not target.is_floating_point():
        _check_index_target(op, target, rows)
        if weight is not None and weight.requires_grad and namespace_of(weight) \
                .is_grad_enabled():
            raise RuntimeError(f"{op}(): with class-index targets the loss is not "
                               f"differentiable with respect to argument 'weight'. This input "
                               f"cannot have requires_grad True.")
        return
    if tuple(target.shape) != logits_shape:
        raise RuntimeError(f"{op}(): a floating 'target' holds class probabilities and must "
                           f"have the logits' shape {list(logits_shape)}, got "
                           f"{list(target.shape)}")
    if ignore_index >= 0:
        raise RuntimeError(f"{op}(): ignore_index is not supported for floating point target "
                           f"(class probabilities), got ignore_index={ignore_index}")


def check_input(op: str, name: str, t) -> None:
    """A floating-point tensor (torch: NotImplementedError for an integer one)."""
    if not hasattr(t, "is_floating_point"):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if not t.is_floating_point():
        raise NotImplementedError(f"{op}(): argument '{name}' must be a floating-point tensor, "
                                  f"got {_dtype_name(t)}")


def autocast_dtype(x):
    """The dtype torch's autocast gives a linear layer's inputs now, or None when autocast is
    off (or x is no torch tensor)."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(x, torch.Tensor) or x.is_meta:
        return None
    kind = x.device.type
    if not torch.is_autocast_enabled(kind):
        return None
    return torch.get_autocast_dtype(kind)


def as_autocast_linear(x, weight, bias):
    """x, weight and bias as F.linear sees them under autocast: each floating one that is not
    float64 cast to the autocast dtype (differentiably: each gradient comes back in its own
    dtype); as they are when autocast is off."""
    dtype = autocast_dtype(x)
    if dtype is None:
        return x, weight, bias
    ns = namespace_of(x)

    def cast(t):
        return t if t is None or t.dtype == ns.float64 else t.to(dtype)
    return cast(x), cast(weight), cast(bias)


def check_linear(op: str, x, weight, bias) -> None:
    """weight (V, H) for x (..., H); bias (V,) or None; one dtype (as F.linear asks)."""
    check_input(op, "x", x)
    check_input(op, "weight", weight)
    if bias is not None:
        check_input(op, "bias", bias)
    if x.dim() == 0:
        raise ValueError(f"{op}(): argument 'x' must be (..., H), got a 0-d tensor")
    if weight.dim() != 2 or weight.shape[1] != x.shape[-1]:
        raise ValueError(f"{op}(): argument 'weight' must be (V, {x.shape[-1]}) (classes x "
                         f"the last dim of 'x'), got shape {list(weight.shape)}")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ValueError(f"{op}(): argument 'bias' must have shape [{weight.shape[0]}] (one per "
                         f"row of 'weight'), got {list(bias.shape)}")
    if x.dtype != weight.dtype or (bias is not None and bias.dtype != x.dtype):
        raise RuntimeError(f"{op}(): 'x', 'weight' and 'bias' must have the same dtype (as "
                           f"F.linear outside autocast), got {x.dtype}, {weight.dtype}"
                           + ("" if bias is None else f" and {bias.dtype}"))


def check_chunk_size(op: str, chunk_size) -> None:
    """A positive int (not a bool, not a float)."""
    if type(chunk_size) is not int and (isinstance(chunk_size, bool)
                                        or not isinstance(chunk_size, int)) or chunk_size < 1:
        raise ValueError(f"{op}(): chunk_size must be a positive int, got {chunk_size!r}")


def loss_dtype(x, class_weight):
    """The dtype the class weight must have: the logits' (x's once autocast has cast it; a
    class weight outside float64 goes along with an autocast cast, as F.cross_entropy's
    autocast casts both to float32)."""
    if class_weight is not None and autocast_dtype(x) is not None \
            and class_weight.dtype != namespace_of(x).float64:
        return class_weight.dtype
    return x.dtype
