"""Cross-entropy losses that keep less for backward: cross_entropy_lse (saves the logits and two
values per row in place of F.cross_entropy's log_softmax) and fused_linear_cross_entropy (the
linear layer and the loss in one op, over chunks of rows, so that the (rows x classes) logits
never outlive a chunk).

Both take F.cross_entropy's targets: class indices (an int64 or uint8 tensor, one per row) or
class probabilities (a floating tensor shaped as the logits), with per-class weights, an
ignore_index, label smoothing and the three reductions. The math works along the class dim 1 of
the logits, whatever dims follow it, as F.cross_entropy does.

The softmax comes from one exp pass (``softmax``), and each row's logsumexp from it: the largest
probability is exp(max - lse). For class indices, forward saves each row's index (0 on ignored
rows) and its scale (0 on ignored rows, 1 / the denominator for 'mean'), so that backward has
no mask or denominator to rebuild; for probabilities, the target and the logsumexp. The fused op
with a scalar loss ('mean' or 'sum') that is to be differentiated computes its gradients in
forward, while each chunk's logits are at hand, and saves them in place of x and the weight
(the same bytes): backward only scales them by the scalar grad_output. With 'none' (a
grad_output per row), backward recomputes each chunk's logits.

Both backwards are ``once_differentiable`` (double backward raises): the gradients are computed
under no_grad (in forward, or from logits recomputed in backward), from saved constants."""

from __future__ import annotations

import math

from ...autograd.function import once_differentiable
from ..builtin._builtin import namespace_of
from ._base import PackFunction, documented
from ._loss_args import (
    REDUCTIONS,
    as_autocast_linear,
    check_chunk_size,
    check_index_range,
    check_input,
    check_linear,
    check_options,
    check_target,
    check_weight,
    loss_dtype,
    reduction_of,
    values_checkable,
)

__all__ = ["CrossEntropyLSE", "FusedLinearCrossEntropy", "cross_entropy_lse",
           "fused_linear_cross_entropy"]

_LSE, _FUSED = "cross_entropy_lse", "fused_linear_cross_entropy"

def _accumulation_dtype(ns, x):
    """float32 for half inputs (the logsumexp, the loss and dW accumulate in it), else x's."""
    # (float16 and bfloat16 are the two-byte floating dtypes of either engine)
    return ns.float32 if x.dtype.itemsize == 2 else x.dtype


def _along_classes(t, z):
    """A per-row tensor (rows, *d) with a size-1 class dim at 1, to broadcast against z; a 0-d
    one (a reduced loss's grad_output) as it is."""
    return t.unsqueeze(1) if t.dim() else t


def _class_view(weight, z):
    """weight (C,) shaped to broadcast along z's class dim 1."""
    return weight.reshape((1, -1) + (1,) * (z.dim() - 2))


def _softmax_lse(z):
    """softmax(z) along the class dim 1 and each row's logsumexp, from one exp pass: the
    largest probability is exp(max - lse), at least 1 / C, so its log loses nothing."""
    p = z.softmax(1)
    return p, z.amax(1) - p.amax(1).log()


class _Spec:
    """What a loss needs besides the logits: the target, its kind (class indices or
    probabilities), the per-class weight (None or (C,), in the accumulation dtype), the
    smoothing and, for class indices, the rows kept (not ignore_index; forward only) and a
    valid index on every row (0 where ignored)."""

    __slots__ = ("ns", "target", "probs", "weight", "smoothing", "keep", "index", "column")

    def __init__(self, ns, target, weight, ignore_index: int, smoothing: float, acc) -> None:
        self.ns, self.smoothing = ns, smoothing
        self.probs = target.is_floating_point()
        self.weight = weight if weight is None or weight.dtype == acc else weight.to(acc)
        if self.probs:
            self.target = target if target.dtype == acc else target.to(acc)
            self.keep = self.index = self.column = None
            return
        self.target, self.keep = target, target != ignore_index
        self.index = target * self.keep
        self.column = self.index.unsqueeze(1)

    @classmethod
    def saved(cls, ns, target, weight, smoothing: float, acc) -> _Spec:
        """The spec backward rebuilds from what forward saved: the class index per row (0 on
        ignored rows, which the saved row scale leaves out) or the probabilities, and the
        class weight."""
        spec = cls.__new__(cls)
        spec.ns, spec.smoothing, spec.keep = ns, smoothing, None
        spec.weight = weight if weight is None or weight.dtype == acc else weight.to(acc)
        spec.probs = target.is_floating_point()
        if spec.probs:
            spec.target = target if target.dtype == acc else target.to(acc)
            spec.index = spec.column = None
        else:
            spec.target = spec.index = target
            spec.column = target.unsqueeze(1)
        return spec

    def saves(self, lse, reduction: str, den, dtype) -> tuple:
        """What backward needs of the target, besides the class weight: the class index and
        the row scale per row (class indices), or the probabilities and the logsumexp per
        row (their gradients read it)."""
        if self.probs:
            return self.target, lse
        return self.index, self.row_scale(den if reduction == "mean" else None, dtype)

    def check_range(self, op: str, classes: int, ignore_index: int) -> None:
        """Refuse a class index out of range, before any work (forward's first look at the
        target's values, where they can be read)."""
        if self.keep is not None and values_checkable(self.target):
            check_index_range(op, self.index, classes, ignore_index)

    def rows(self, s: int, n: int) -> _Spec:
        """The same spec for rows s to s + n (the fused op's chunks)."""
        part = _Spec.__new__(_Spec)
        part.ns, part.probs, part.weight = self.ns, self.probs, self.weight
        part.smoothing, part.target = self.smoothing, self.target[s:s + n]
        part.keep, part.index, part.column = (None if t is None else t[s:s + n]
                                              for t in (self.keep, self.index, self.column))
        return part

    def picked_weight(self):
        """weight[target] on each row (class indices, with a weight)."""
        return self.weight[self.index]

    def smoothed(self, z):
        """The smoothed probabilities, (1 - eps) p + eps / C."""
        if not self.smoothing:
            return self.target
        return self.target * (1.0 - self.smoothing) + self.smoothing / z.shape[1]

    def soft(self, z):
        """The smoothed probabilities times the class weights."""
        q = self.smoothed(z)
        return q if self.weight is None else q * _class_view(self.weight, z)

    def denominator(self, rows_shape, dtype):
        """What 'mean' divides by: the rows kept (class indices), the sum of their weights
        (with a weight), or the count of rows (probabilities: a float)."""
        if self.probs:
            return float(math.prod(rows_shape))
        if self.weight is None:
            return self.keep.sum(dtype=dtype)
        return self.ns.where(self.keep, self.picked_weight(), 0.0).sum()

    def row_scale(self, den, dtype):
        """The factor each row's gradient takes for a grad_output of 1: 1 / ``den`` ('mean';
        None for the others), and 0 on ignored rows (where, not a product: with every row
        ignored, 1 / 0 is inf). A float where one factor fits every row (probabilities)."""
        if self.keep is None:
            return 1.0 if den is None else 1.0 / den
        if den is None:
            return self.keep.to(dtype)
        return self.ns.where(self.keep, den.reciprocal(), 0.0)


def _saved_scale(spec: _Spec, row, reduction: str, grad=None):
    """Backward's row scale: class indices: the row scale forward saved (``row``), times
    grad_output where given; probabilities: grad_output (or 1), over the count of rows for
    'mean'."""
    if grad is not None and grad.dtype != row.dtype:
        grad = grad.to(row.dtype)
    if not spec.probs:
        return row if grad is None else row * grad
    den = float(math.prod(row.shape)) if reduction == "mean" else None
    if grad is None:
        return 1.0 if den is None else 1.0 / den
    return grad if den is None else grad / den


def _row_losses(z, lse, spec: _Spec):
    """Each row's loss from its logits z (class dim 1, accumulation dtype) and logsumexp:
    class indices: (1 - eps) w[t] (lse - z[t]) + eps / C sum_c w_c (lse - z_c), 0 on ignored
    rows; probabilities: sum_c q_c (lse - z_c) with q the weighted, smoothed target."""
    if spec.probs:
        return (spec.soft(z) * (_along_classes(lse, z) - z)).sum(1)
    loss = lse - z.gather(1, spec.column).squeeze(1)
    if spec.weight is not None:
        loss = loss * spec.picked_weight()
    eps = spec.smoothing
    if eps:
        if spec.weight is None:
            smooth = z.shape[1] * lse - z.sum(1)
        else:
            smooth = spec.weight.sum() * lse - (z * _class_view(spec.weight, z)).sum(1)
        loss = (1.0 - eps) * loss + (eps / z.shape[1]) * smooth
    return spec.ns.where(spec.keep, loss, 0.0)


def _reduce(loss, reduction: str, den):
    """The rows' losses reduced as F.cross_entropy: 'mean' divides by ``den`` (all rows
    ignored: 0 / 0 = nan, as torch)."""
    if reduction == "none":
        return loss
    total = loss.sum()
    return total if reduction == "sum" else total / den


def _logits_grad(p, spec: _Spec):
    """d loss / d z for a block of rows, before each row's scale: softmax(z) times each row's
    total target mass, minus the target (the smoothed one-hot times the weights, or the
    weighted probabilities). ``p`` is the block's softmax, the caller's own: the writes go
    into it (it is never the saved logits)."""
    if spec.probs:
        q = spec.soft(p)
        return p * _along_classes(q.sum(1), p) - q
    eps, classes = spec.smoothing, p.shape[1]
    index = spec.column
    if spec.weight is None:
        if eps:
            p.sub_(eps / classes)
        return p.scatter_(1, index, p.gather(1, index) - (1.0 - eps))
    # the row's mass: (1 - eps) w[t] + eps / C sum(w)
    wt = spec.picked_weight()
    g = p * _along_classes((1.0 - eps) * wt + (eps / classes) * spec.weight.sum(), p)
    if eps:
        g = g - (eps / classes) * _class_view(spec.weight, p)
    return g.scatter_(1, index, g.gather(1, index) - (1.0 - eps) * wt.unsqueeze(1))


def _soft_grads(z, lse, scale, spec: _Spec, need_target: bool, need_weight: bool):
    """The gradients of probability targets and of the class weight beside them (torch's
    cross_entropy gives both): (1 - eps) w_c (lse - z_c) and q_c (lse - z_c), times the
    row's scale (the weight's summed over every row)."""
    nll = _scaled(_along_classes(lse, z) - z, scale)
    dt = dw = None
    if need_target:
        dt = nll * (1.0 - spec.smoothing)
        if spec.weight is not None:
            dt = dt * _class_view(spec.weight, z)
    if need_weight:
        dw = (spec.smoothed(z) * nll).sum(0).reshape(z.shape[1], -1).sum(1)
    return dt, dw


def _linear(x, wt, bias):
    """x @ weight.t() (+ bias, in the same pass)."""
    return x @ wt if bias is None else namespace_of(x).addmm(bias, x, wt)


def _scaled(t, scale):
    """t times the row scale (per row along dim 1, or one float for every row); None stays
    None."""
    if t is None or (isinstance(scale, float) and scale == 1.0):
        return t
    return t * (scale if isinstance(scale, float) else _along_classes(scale, t))


class CrossEntropyLSE(PackFunction):
    """F.cross_entropy(input, target, weight, ...) saving the logits and two values per row
    (not the (rows x classes) log_softmax); backward recomputes the softmax."""

    reference = "F.cross_entropy(input, target, weight, ignore_index=, reduction=, " \
        "label_smoothing=); class indices or probabilities, (C,), (N, C) or (N, C, d1, ...)"
    double_backward = "raises (once_differentiable)"
    boundary = "-"
    nan_inf = "propagates nan; all targets ignored with 'mean' gives nan and a zero gradient " \
        "(as torch)"
    autocast = "float32 (cast_inputs, as F.cross_entropy under autocast)"
    saves = "logits, weight and two per row: the class index (0 on ignored rows) and the " \
        "row's scale (0 on ignored rows, 1 / the denominator for 'mean'), or for probability " \
        "targets the target and a logsumexp per row (the reference: log_softmax (rows x " \
        "classes) and target; the win when the logits are kept alive anyway); backward " \
        "recomputes the softmax from the logits"
    cast_inputs = "float32"

    @staticmethod
    def forward(ctx, logits, target, weight=None, ignore_index=-100, reduction="mean",
                label_smoothing=0.0):
        ns = namespace_of(logits)
        acc = _accumulation_dtype(ns, logits)
        z = logits if logits.dtype == acc else logits.to(acc)
        spec = _Spec(ns, target, weight, ignore_index, label_smoothing, acc)
        spec.check_range(_LSE, z.shape[1], ignore_index)
        lse = _softmax_lse(z)[1]
        den = spec.denominator(tuple(lse.shape), acc) if reduction == "mean" else None
        ctx.save_for_backward(logits, *spec.saves(lse, reduction, den, acc), weight)
        ctx.reduction, ctx.smoothing = reduction, label_smoothing
        loss = _reduce(_row_losses(z, lse, spec), reduction, den)
        return loss if loss.dtype == logits.dtype else loss.to(logits.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        logits, target, row, weight = ctx.saved_tensors
        acc = row.dtype
        z = logits if logits.dtype == acc else logits.to(acc)
        spec = _Spec.saved(namespace_of(z), target, weight, ctx.smoothing, acc)
        scale = _saved_scale(spec, row, ctx.reduction, grad)
        dz = _scaled(_logits_grad(z.softmax(1), spec), scale)
        dz = dz if dz.dtype == logits.dtype else dz.to(logits.dtype)
        dt = dw = None
        if spec.probs and (ctx.needs_input_grad[1] or ctx.needs_input_grad[2]):
            dt, dw = _soft_grads(z, row, scale, spec, ctx.needs_input_grad[1],
                                 weight is not None and ctx.needs_input_grad[2])
            dt = None if dt is None else dt.to(target.dtype)
            dw = None if dw is None else dw.to(weight.dtype)
        return dz, dt, dw, None, None, None


def _chunk_grads(g, xc, w_acc, scale, need: tuple):
    """One chunk's share of dx, dW and db from its logits' gradient g before the row scale:
    the scale goes on the (rows x hidden) side of each product, not on g's (rows x classes)."""
    need_x, need_w, need_b = need
    if isinstance(scale, float) or not scale.dim():
        dx = _scaled(g @ w_acc, scale) if need_x else None
        dw = _scaled(g.t() @ xc, scale) if need_w else None
        return dx, dw, _scaled(g.sum(0), scale) if need_b else None
    col = scale.unsqueeze(1)
    return ((g @ w_acc) * col if need_x else None, g.t() @ (xc * col) if need_w else None,
            scale @ g if need_b else None)


def _fused_pass(x, weight, bias, spec: _Spec, chunk: int, acc, scale, need: tuple):
    """The fused op's pass over the chunks: each chunk's logits, softmax and logsumexp and,
    where ``scale`` is given, its gradients (``need``: of x, weight, bias). Returns the rows'
    logsumexps, their losses and the gradients (None where not computed)."""
    ns, wt, rows = namespace_of(x), weight.t(), x.shape[0]
    w_acc = weight if weight.dtype == acc else weight.to(acc)
    lses, losses, dxs, dw, db = [], [], [], None, None
    for s in range(0, max(rows, 1), chunk):
        xc = x[s:s + chunk] if chunk < rows else x
        z = _linear(xc, wt, bias)
        z = z if z.dtype == acc else z.to(acc)
        p, lse = _softmax_lse(z)
        part = spec if chunk >= rows else spec.rows(s, chunk)
        lses.append(lse)
        losses.append(_row_losses(z, lse, part))
        if scale is None:
            continue
        sc = scale[s:s + chunk] if not isinstance(scale, float) and scale.dim() else scale
        dx, dw_part, db_part = _chunk_grads(_logits_grad(p, part), xc if xc.dtype == acc
                                            else xc.to(acc), w_acc, sc, need)
        dxs.append(dx)
        dw, db = _add(dw, dw_part), _add(db, db_part)
    dx = (dxs[0] if len(dxs) == 1 else ns.cat(dxs)) if need[0] and scale is not None else None
    return _cat(ns, lses), _cat(ns, losses), (dx, dw, db)


def _cat(ns, parts: list):
    """The parts joined along dim 0 (one part as it is: no copy)."""
    return parts[0] if len(parts) == 1 else ns.cat(parts)


class FusedLinearCrossEntropy(PackFunction):
    """F.cross_entropy(F.linear(x, weight, bias), target) over chunks of ``chunk_size`` rows.
    With ``grads_in_forward`` (a scalar loss to be differentiated: the public function says
    which of x, weight and bias require grad, as forward runs under no_grad and, inside
    torch.func's transforms, on tensors that require none) forward computes those gradients
    chunk by chunk and saves them, and backward scales them by grad_output; else forward keeps
    x, the weight and two values per row, and backward recomputes each chunk's logits."""

    reference = "F.cross_entropy(F.linear(x, weight, bias).flatten(0, -2), target.flatten(), " \
        "class_weight, ignore_index=, reduction=, label_smoothing=), 'none' shaped as target"
    double_backward = "raises (once_differentiable)"
    boundary = "-"
    nan_inf = "propagates nan; all targets ignored with 'mean' gives nan and zero gradients " \
        "(as torch)"
    autocast = "the linear's inputs rounded to the autocast dtype (as F.linear under " \
        "autocast), then float32 throughout (cast_inputs); the reference keeps its logits " \
        "in the autocast dtype"
    saves = "'mean' or 'sum' with grad enabled: the gradients of x, weight and bias, " \
        "computed in forward (the bytes of x, weight and bias); 'none', or a probability " \
        "target or class weight that requires grad: x, weight, bias, the class weight and two " \
        "per row (the class index and the row's scale, or the probability target and a " \
        "logsumexp per row), the logits recomputed chunk by chunk in backward; no_grad: " \
        "nothing. O(rows x hidden + classes x hidden), the logits only per chunk (the " \
        "reference: log_softmax, rows x classes)"
    cast_inputs = "float32"

    @staticmethod
    def forward(ctx, x, weight, target, bias=None, class_weight=None, ignore_index=-100,
                reduction="mean", label_smoothing=0.0, chunk_size=1024, grads_in_forward=()):
        ns = namespace_of(x)
        acc = _accumulation_dtype(ns, x)
        spec = _Spec(ns, target, class_weight, ignore_index, label_smoothing, acc)
        spec.check_range(_FUSED, weight.shape[0], ignore_index)
        den = spec.denominator((x.shape[0],), acc) if reduction == "mean" else None
        grads = bool(grads_in_forward)
        scale = spec.row_scale(den, acc) if grads else None
        lse, losses, (dx, dw, db) = _fused_pass(x, weight, bias, spec, chunk_size, acc, scale,
                                                grads_in_forward or (False,) * 3)
        ctx.grads_in_forward = grads
        if grads:
            ctx.save_for_backward(_cast(dx, x), _cast(dw, weight), _cast(db, bias))
        else:
            ctx.save_for_backward(x, weight, *spec.saves(lse, reduction, den, acc), bias,
                                  class_weight)
            ctx.reduction, ctx.smoothing, ctx.chunk_size = reduction, label_smoothing, chunk_size
        loss = _reduce(losses, reduction, den)
        return loss if loss.dtype == x.dtype else loss.to(x.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        if ctx.grads_in_forward:
            dx, dw, db = ctx.saved_tensors
            return (_times(dx, grad), _times(dw, grad), None, _times(db, grad), None, None,
                    None, None, None, None)
        x, weight, target, row, bias, class_weight = ctx.saved_tensors
        acc, n = row.dtype, ctx.chunk_size
        ns = namespace_of(x)
        spec = _Spec.saved(ns, target, class_weight, ctx.smoothing, acc)
        # (a scalar grad_output multiplies the summed gradients last, as the path that computes
        # them in forward does: the two give the same values to the last bit)
        per_row = grad.dim() > 0
        scale = _saved_scale(spec, row, ctx.reduction, grad if per_row else None)
        need_x, need_w, need_t, need_b, need_cw = ctx.needs_input_grad[:5]
        need = (need_x, need_w, need_b and bias is not None)
        soft = spec.probs and (need_t or need_cw)
        wt, w_acc = weight.t(), weight.to(acc)
        # (sums out of place: under torch.func's vmap an in-place add into an unbatched
        # accumulator is refused)
        dxs, dts, dw, db, dcw = [], [], None, None, None
        for s in range(0, max(x.shape[0], 1), n):
            xc, part = x[s:s + n], spec.rows(s, n)
            z = _linear(xc, wt, bias).to(acc)
            sc = scale[s:s + n] if not isinstance(scale, float) and scale.dim() else scale
            if soft:
                dt, dcw_part = _soft_grads(z, row[s:s + n], sc, part, need_t,
                                           class_weight is not None and need_cw)
                dts.append(dt)
                dcw = _add(dcw, dcw_part)
            dx, dw_part, db_part = _chunk_grads(_logits_grad(z.softmax(1), part),
                                                xc.to(acc), w_acc, sc, need)
            dxs.append(dx)
            dw, db = _add(dw, dw_part), _add(db, db_part)
        grads = (_cast(ns.cat(dxs), x) if need_x else None, _cast(dw, weight),
                 ns.cat(dts).to(target.dtype) if soft and need_t else None,
                 _cast(db, bias), _cast(dcw, class_weight))
        if not per_row:
            grads = tuple(_times(g, grad) for g in grads)
        return (*grads, None, None, None, None, None)


def _add(total, part):
    """total + part, where total may be None (nothing yet) and part may be None (not asked)."""
    if part is None:
        return total
    return part if total is None else total + part


def _cast(grad, like):
    """grad in like's dtype (None stays None)."""
    if grad is None or grad.dtype == like.dtype:
        return grad
    return grad.to(like.dtype)


def _times(saved, grad):
    """A gradient computed in forward times the scalar grad_output (None stays None); a new
    tensor, so that a second backward (retain_graph) finds the saved one as it was."""
    return None if saved is None else saved * grad


@documented(CrossEntropyLSE)
def cross_entropy_lse(input, target, weight=None, size_average=None, ignore_index: int = -100,
                      reduce=None, reduction: str = "mean", label_smoothing: float = 0.0):
    """F.cross_entropy with its arguments, saving a logsumexp per row in place of the
    log_softmax: ``input`` (C,), (N, C) or (N, C, d1, ...); ``target`` class indices
    ((), (N,) or (N, d1, ...)) or class probabilities (input's shape); ``weight`` (C,) per
    class. ``size_average`` and ``reduce`` are deprecated as in torch: given, they set the
    reduction, with torch's warning."""
    check_input(_LSE, "input", input)
    if size_average is not None or reduce is not None or reduction not in REDUCTIONS:
        reduction = reduction_of(_LSE, size_average, reduce, reduction)
    smoothing = check_options(_LSE, ignore_index, label_smoothing)
    dims = input.dim()
    if dims == 0:
        raise RuntimeError(f"{_LSE}(): argument 'input' must be (C,), (N, C) or (N, C, d1, "
                           f"...), got a 0-d tensor")
    shape = tuple(input.shape)
    classes = shape[0 if dims == 1 else 1]
    if weight is not None:
        check_weight(_LSE, "weight", weight, classes, "input", loss_dtype(input, weight))
    if dims == 1:
        input, shape = input.unsqueeze(0), (1, classes)
        # (torch takes a 1-element target for a (C,) input as the 0-d one)
        if hasattr(target, "is_floating_point") and (target.is_floating_point() or
                                                     target.numel() == 1):
            target = target.reshape(shape if target.is_floating_point() else (1,))
    check_target(_LSE, target, shape, (shape[0], *shape[2:]), classes, weight, ignore_index)
    loss = CrossEntropyLSE.apply(input, target, weight, ignore_index, reduction, smoothing)
    return loss.reshape(()) if dims == 1 and reduction == "none" else loss


@documented(FusedLinearCrossEntropy)
def fused_linear_cross_entropy(x, weight, target, bias=None, *, class_weight=None,
                               ignore_index: int = -100, reduction: str = "mean",
                               label_smoothing: float = 0.0, chunk_size: int = 1024):
    """F.cross_entropy(F.linear(x, weight, bias), target, class_weight, ...) without the
    (rows x V) logits in saved state: ``x`` (..., H), ``weight`` (V, H), ``bias`` (V,) or
    None; ``target`` class indices of x's leading shape (..., with V classes along the
    linear's last dim, not dim 1) or class probabilities (..., V); ``class_weight`` (V,) is
    F.cross_entropy's ``weight`` (the name ``weight`` is the linear layer's). The rows go by
    chunks of ``chunk_size``; 'none' gives the loss in x's leading shape. A 'mean' or 'sum'
    loss computed with grad enabled has its gradients computed in forward. Under CPU
    autocast, x, weight and bias are rounded to the autocast dtype as F.linear's are."""
    check_chunk_size(_FUSED, chunk_size)
    if reduction not in REDUCTIONS:
        reduction_of(_FUSED, None, None, reduction)
    smoothing = check_options(_FUSED, ignore_index, label_smoothing)
    x, weight, bias = as_autocast_linear(x, weight, bias)
    check_linear(_FUSED, x, weight, bias)
    classes, lead = weight.shape[0], tuple(x.shape[:-1])
    if class_weight is not None:
        check_weight(_FUSED, "class_weight", class_weight, classes, "x",
                     loss_dtype(x, class_weight))
    check_target(_FUSED, target, (*lead, classes), lead, classes, class_weight, ignore_index)
    probs = target.is_floating_point()
    if len(lead) == 1:
        rows_x, rows_t = x, target
    else:
        rows_x = x.reshape(-1, x.shape[-1])
        rows_t = target.reshape(-1, classes) if probs else target.reshape(-1)
    # (the soft gradients of a probability target and of the class weight are (rows x V) and
    # (V,) sums over the logits: they stay with the recompute path)
    grads = ()
    if reduction != "none" and namespace_of(x).is_grad_enabled() and not (
            probs and target.requires_grad) and not (
            class_weight is not None and class_weight.requires_grad):
        need = (x.requires_grad, weight.requires_grad, bias is not None and bias.requires_grad)
        grads = need if any(need) else ()
    loss = FusedLinearCrossEntropy.apply(rows_x, weight, rows_t, bias, class_weight,
                                         ignore_index, reduction, smoothing, chunk_size, grads)
    return loss.reshape(lead) if reduction == "none" else loss
