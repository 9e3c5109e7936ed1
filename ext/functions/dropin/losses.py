"""Cross-entropy losses that keep less for backward: cross_entropy_lse (saves the logits and one
logsumexp per row in place of F.cross_entropy's log_softmax) and fused_linear_cross_entropy
(the linear layer and the loss in one op, over chunks of rows: it saves x, the weight and one
logsumexp per row, and recomputes each chunk's logits in backward, so that the (rows x classes)
logits never outlive a chunk).

Both backwards are ``once_differentiable`` (double backward raises): the fused op recomputes the
logits under no_grad, and the per-row logsumexp they use is a saved constant."""

from __future__ import annotations

import sys

from ...autograd.function import once_differentiable
from ..builtin._builtin import namespace_of
from ._base import PackFunction, documented, floating

__all__ = ["CrossEntropyLSE", "FusedLinearCrossEntropy", "cross_entropy_lse",
           "fused_linear_cross_entropy"]

_REDUCTIONS = ("mean", "sum", "none")


def _accumulation_dtype(x):
    """float32 for half inputs (the logsumexp, the loss and dW accumulate in it), else x's."""
    ns = namespace_of(x)
    if x.dtype in {getattr(ns, n) for n in ("float16", "bfloat16") if hasattr(ns, n)}:
        return ns.float32
    return x.dtype


def _rows(z, target, keep, lse, smoothing: float):
    """Each row's loss from its logits z (accumulation dtype): lse - (1 - eps) z[target]
    - eps / C sum(z), and 0 on ignored rows."""
    ns = namespace_of(z)
    picked = z.gather(1, ns.where(keep, target, 0)[:, None])[:, 0]
    loss = lse - (1.0 - smoothing) * picked
    if smoothing:
        loss = loss - (smoothing / z.shape[1]) * z.sum(1)
    return ns.where(keep, loss, 0.0)


def _reduce(loss, keep, reduction: str):
    """The rows' losses reduced as F.cross_entropy: 'mean' over the rows not ignored (all
    ignored: 0 / 0 = nan, as torch)."""
    if reduction == "none":
        return loss
    total = loss.sum()
    return total / keep.sum().to(loss.dtype) if reduction == "mean" else total


def _row_scale(grad, keep, reduction: str, dtype):
    """The factor each row's gradient takes: grad_output (per row for 'none'), divided by the
    count of rows not ignored for 'mean', and 0 on ignored rows (where, not a product: with every
    row ignored, grad / 0 is inf)."""
    ns = namespace_of(keep)
    grad = grad.to(dtype)
    if reduction == "mean":
        grad = grad / keep.sum().to(dtype)
    return ns.where(keep, grad, 0.0)


def _logits_grad(z, target, keep, lse, scale, smoothing: float):
    """d loss / d z for one block of rows: (softmax(z) - (1 - eps) onehot(target) - eps / C)
    times each row's scale. The writes go into a fresh tensor (never into z, which may be the
    saved logits), before the product with the scale: under torch.func's transforms the scale
    is batched when the gradient is, and an in-place write of it into an unbatched tensor is
    refused."""
    ns = namespace_of(z)
    g = (z - lse[:, None]).exp_()
    if smoothing:
        g.sub_(smoothing / z.shape[1])
    index = ns.where(keep, target, 0)[:, None]
    g.scatter_(1, index, g.gather(1, index) - (1.0 - smoothing))
    return g * scale[:, None]


def _linear(x, wt, bias):
    """x @ weight.t() (+ bias, in the same pass)."""
    return x @ wt if bias is None else namespace_of(x).addmm(bias, x, wt)


class CrossEntropyLSE(PackFunction):
    """F.cross_entropy(logits, target) for class-index targets, saving the logits and each row's
    logsumexp (not the (rows x classes) log_softmax)."""

    reference = "F.cross_entropy(logits, target, ignore_index=, reduction=, label_smoothing=)"
    double_backward = "raises (once_differentiable)"
    boundary = "-"
    nan_inf = "propagates nan; all targets ignored with 'mean' gives nan and a zero gradient " \
        "(as torch)"
    autocast = "float32 (cast_inputs, as F.cross_entropy under autocast)"
    saves = "logits, target and a logsumexp per row (the reference: log_softmax (rows x " \
        "classes) and target; the win when the logits are kept alive anyway)"
    cast_inputs = "float32"

    @staticmethod
    def forward(ctx, logits, target, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        z = logits.to(_accumulation_dtype(logits))
        keep = target != ignore_index
        lse = z.logsumexp(1)
        ctx.save_for_backward(logits, target, lse)
        ctx.ignore_index, ctx.reduction, ctx.smoothing = ignore_index, reduction, label_smoothing
        loss = _reduce(_rows(z, target, keep, lse, label_smoothing), keep, reduction)
        return loss.to(logits.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        logits, target, lse = ctx.saved_tensors
        z = logits.to(lse.dtype)
        keep = target != ctx.ignore_index
        scale = _row_scale(grad, keep, ctx.reduction, lse.dtype)
        g = _logits_grad(z, target, keep, lse, scale, ctx.smoothing)
        return g.to(logits.dtype), None, None, None, None


class FusedLinearCrossEntropy(PackFunction):
    """F.cross_entropy(F.linear(x, weight, bias), target) over chunks of ``chunk_size`` rows:
    forward keeps one logsumexp per row; backward recomputes each chunk's logits and
    accumulates the gradients of x, weight and bias chunk by chunk."""

    reference = "F.cross_entropy(F.linear(x, weight, bias), target, ignore_index=, " \
        "reduction=, label_smoothing=)"
    double_backward = "raises (once_differentiable)"
    boundary = "-"
    nan_inf = "propagates nan; all targets ignored with 'mean' gives nan and zero gradients " \
        "(as torch)"
    autocast = "float32 (cast_inputs; the reference runs the linear in the autocast dtype)"
    saves = "x, weight, bias, target and a logsumexp per row: O(rows x hidden + classes x " \
        "hidden); the logits only per chunk, in forward and backward (the reference: " \
        "log_softmax, rows x classes)"
    cast_inputs = "float32"

    @staticmethod
    def forward(ctx, x, weight, target, bias=None, ignore_index=-100, reduction="mean",
                label_smoothing=0.0, chunk_size=1024):
        ns = namespace_of(x)
        acc = _accumulation_dtype(x)
        keep = target != ignore_index
        wt = weight.t()
        lses, losses = [], []
        for s in range(0, max(x.shape[0], 1), chunk_size):
            z = _linear(x[s:s + chunk_size], wt, bias).to(acc)
            lse = z.logsumexp(1)
            lses.append(lse)
            losses.append(_rows(z, target[s:s + chunk_size], keep[s:s + chunk_size], lse,
                                label_smoothing))
        lse = ns.cat(lses)
        if bias is None:
            ctx.save_for_backward(x, weight, target, lse)
        else:
            ctx.save_for_backward(x, weight, target, lse, bias)
        ctx.ignore_index, ctx.reduction = ignore_index, reduction
        ctx.smoothing, ctx.chunk_size = label_smoothing, chunk_size
        return _reduce(ns.cat(losses), keep, reduction).to(x.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        x, weight, target, lse, *bias = ctx.saved_tensors
        bias = bias[0] if bias else None
        acc, n = lse.dtype, ctx.chunk_size
        keep = target != ctx.ignore_index
        scale = _row_scale(grad, keep, ctx.reduction, acc)
        need_x, need_w, _, need_b = ctx.needs_input_grad[:4]
        wt, w_acc = weight.t(), weight.to(acc)
        dxs, dw, db = [], None, None
        for s in range(0, max(x.shape[0], 1), n):
            xc = x[s:s + n]
            g = _logits_grad(_linear(xc, wt, bias).to(acc), target[s:s + n], keep[s:s + n],
                             lse[s:s + n], scale[s:s + n], ctx.smoothing)
            # (sums out of place: under torch.func's vmap an in-place add into an unbatched
            # accumulator is refused)
            if need_x:
                dxs.append((g @ w_acc).to(x.dtype))
            if need_w:
                part = g.t() @ xc.to(acc)
                dw = part if dw is None else dw + part
            if need_b and bias is not None:
                part = g.sum(0)
                db = part if db is None else db + part
        dx = namespace_of(x).cat(dxs) if need_x else None
        dw = dw.to(weight.dtype) if need_w else None
        db = db.to(bias.dtype) if db is not None else None
        return dx, dw, None, db, None, None, None, None


def _values_checkable(t) -> bool:
    """Whether target's values can be read on the host before the op: not on meta tensors, not
    while torch.compile traces, not inside torch.func's transforms (their tensors hold no
    values to read there)."""
    if t.device.type == "meta":
        return False
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(t, torch.Tensor):
        return True
    if torch.compiler.is_compiling():
        return False
    return not torch._C._functorch.is_functorch_wrapped_tensor(t)


def _check_loss_args(op: str, logits_name: str, logits, target, classes: int, ignore_index,
                     reduction, label_smoothing) -> None:
    """The checks both losses share, before any work: target holds class indices of the
    logits' rows, each in [0, classes) or ignore_index; the reduction and the smoothing are
    valid."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}(): reduction must be 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")
    if isinstance(label_smoothing, bool) or not isinstance(label_smoothing, (int, float)) \
            or not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"{op}(): label_smoothing must be a number in [0, 1], got "
                         f"{label_smoothing!r}")
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, int):
        raise TypeError(f"{op}(): ignore_index must be an int, got "
                        f"{type(ignore_index).__name__}")
    if not hasattr(target, "is_floating_point"):
        raise TypeError(f"{op}(): argument 'target' must be a tensor, not "
                        f"{type(target).__name__}")
    if target.is_floating_point() or target.dtype == namespace_of(target).bool:
        raise TypeError(f"{op}(): argument 'target' must hold class indices (an integer "
                        f"tensor), got {str(target.dtype).rsplit('.', 1)[-1]}")
    rows = tuple(logits.shape[:-1])
    if tuple(target.shape) != rows:
        raise ValueError(f"{op}(): argument 'target' must have shape {list(rows)} (one class "
                         f"index per row of '{logits_name}'), got {list(target.shape)}")
    if _values_checkable(target):
        bad = ((target < 0) | (target >= classes)) & (target != ignore_index)
        if bad.any():
            raise IndexError(f"{op}(): argument 'target' holds {int(target[bad][0])}, out of "
                             f"range for {classes} classes (valid: 0 to {classes - 1}, or "
                             f"ignore_index={ignore_index})")


@documented(CrossEntropyLSE)
def cross_entropy_lse(logits, target, *, ignore_index: int = -100, reduction: str = "mean",
                      label_smoothing: float = 0.0):
    """F.cross_entropy(logits, target, ...) for class-index targets: ``logits`` is (N, C) with
    ``target`` (N,), or (C,) with a 0-d target; saves a logsumexp per row in place of the
    (N x C) log_softmax."""
    floating("cross_entropy_lse", "logits", logits)
    if logits.dim() not in (1, 2):
        raise ValueError(f"cross_entropy_lse(): argument 'logits' must be (N, C) or (C,), got "
                         f"shape {list(logits.shape)}")
    if hasattr(target, "is_floating_point") and target.is_floating_point():
        raise TypeError("cross_entropy_lse(): argument 'target' must hold class indices (an "
                        "integer tensor); class probabilities are not supported")
    classes = logits.shape[-1]
    rows_logits = logits if logits.dim() == 2 else logits.reshape(1, classes)
    _check_loss_args("cross_entropy_lse", "logits", logits, target, classes, ignore_index,
                     reduction, label_smoothing)
    if logits.dim() == 1:
        target = target.reshape(1)
    loss = CrossEntropyLSE.apply(rows_logits, target, ignore_index, reduction,
                                 float(label_smoothing))
    return loss.reshape(()) if logits.dim() == 1 and reduction == "none" else loss


@documented(FusedLinearCrossEntropy)
def fused_linear_cross_entropy(x, weight, target, bias=None, *, ignore_index: int = -100,
                               reduction: str = "mean", label_smoothing: float = 0.0,
                               chunk_size: int = 1024):
    """F.cross_entropy(F.linear(x, weight, bias), target, ...) without the (N x V) logits in
    saved state: ``x`` is (N, H) with ``target`` (N,), or (H,) with a 0-d target; ``weight``
    (V, H); ``bias`` (V,) or None; the rows go by chunks of ``chunk_size``."""
    op = "fused_linear_cross_entropy"
    floating(op, "x", x)
    floating(op, "weight", weight)
    if bias is not None:
        floating(op, "bias", bias)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"{op}(): chunk_size must be a positive int, got {chunk_size!r}")
    if x.dim() not in (1, 2):
        raise ValueError(f"{op}(): argument 'x' must be (N, H) or (H,), got shape "
                         f"{list(x.shape)}")
    if weight.dim() != 2 or weight.shape[1] != x.shape[-1]:
        raise ValueError(f"{op}(): argument 'weight' must be (V, {x.shape[-1]}) (classes x "
                         f"the last dim of 'x'), got shape {list(weight.shape)}")
    classes = weight.shape[0]
    if bias is not None and tuple(bias.shape) != (classes,):
        raise ValueError(f"{op}(): argument 'bias' must have shape [{classes}] (one per row of "
                         f"'weight'), got {list(bias.shape)}")
    if x.dtype != weight.dtype or (bias is not None and bias.dtype != x.dtype):
        raise TypeError(f"{op}(): 'x', 'weight' and 'bias' must have one dtype, got "
                        f"{x.dtype}, {weight.dtype}"
                        + ("" if bias is None else f" and {bias.dtype}"))
    _check_loss_args(op, "x", x, target, classes, ignore_index, reduction, label_smoothing)
    rows_x = x if x.dim() == 2 else x.reshape(1, x.shape[0])
    if x.dim() == 1:
        target = target.reshape(1)
    loss = FusedLinearCrossEntropy.apply(rows_x, weight, target, bias, ignore_index, reduction,
                                         float(label_smoothing), chunk_size)
    return loss.reshape(()) if x.dim() == 1 and reduction == "none" else loss
