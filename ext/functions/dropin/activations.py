"""Activations that save less than their composites: silu, mish, gelu (erf and tanh forms),
hardswish, hardsigmoid, hardmish, with torch's ``inplace=`` where the torch function has it.

Each backward has two paths. The plain path is made of differentiable ops on the saved input,
so double backward is exact (the hard ones: zero almost everywhere). When backward is not being
recorded (no ``create_graph``), a fast lane computes the same formula with in-place ops on fresh
intermediates: fewer temporaries and passes over memory (benchmarks/pack.py).

``inplace=True`` writes the result into x and returns x (``ctx.mark_dirty``). x is overwritten, so
forward keeps the derivative (silu, mish, hardswish: one tensor, as torch keeps a copy of x) or
the bool mask (hardsigmoid); differentiating that backward again raises, except for hardsigmoid,
whose second derivative is zero anyway."""

from __future__ import annotations

import math
from collections.abc import Callable

from ...autograd.function import Function
from ..builtin._builtin import namespace_of
from ._base import PackFunction, documented, floating

__all__ = ["Silu", "Mish", "Gelu", "GeluTanh", "Hardswish", "Hardsigmoid", "Hardmish", "silu",
           "mish", "gelu", "gelu_tanh", "hardswish", "hardsigmoid", "hardmish"]

_K = math.sqrt(2.0 / math.pi)  # gelu's tanh approximation: tanh(K (x + C x^3))
_C = 0.044715
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_APPROXIMATIONS = ("none", "tanh")


def _recording(t) -> bool:
    """Whether ops on ``t`` are being recorded: in backward, whether create_graph is on."""
    return namespace_of(t).is_grad_enabled()


class InplaceGrad(Function):
    """grad * slope in the backward of an in-place form: the slope was computed from x before x
    was overwritten, so it has no graph back to x, and differentiating the product raises (as
    torch's ``once_differentiable``) rather than give a second derivative without its x term.
    ``out`` (the op's output, x itself) links the product to x's graph, so that a backward to x
    reaches this node and raises, where it would otherwise leave the x term out silently."""

    @staticmethod
    def forward(ctx, grad, slope, out, op="the op"):
        ctx.op = op
        return grad * slope

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(f"{ctx.op}(inplace=True): double backward is not supported: x was "
                           "overwritten and backward keeps only the derivative; call it with "
                           "inplace=False for higher-order gradients")


def _inplace_grad(op: str, grad, saved: tuple):
    """grad * slope from the saved (slope, output), made by InplaceGrad when backward is
    recorded."""
    slope, out = saved
    return InplaceGrad.apply(grad, slope, out, op) if _recording(grad) else grad * slope


def _lanes(op: str, value, slope, plain_grad, into) -> tuple:
    """The forward and backward of an activation with an in-place form, from its parts:
    ``value(x)`` (the result, fresh), ``slope(x)`` (the derivative, fresh), ``plain_grad(x,
    grad)`` (grad times the derivative from differentiable ops: the plain path, for a backward
    that is recorded) and ``into(x)`` (the result written into x). Out of place, backward keeps
    x; in place, the slope, computed before x is overwritten."""

    def forward(ctx, x, inplace=False):
        ctx.inplace = inplace
        if not inplace:
            ctx.save_for_backward(x)
            return value(x)
        ctx.save_for_backward(slope(x), x)  # (x: the output, once written)
        ctx.mark_dirty(x)
        into(x)
        return x  # (x itself, not the in-place op's result: torch.compile asks for it)

    def backward(ctx, grad):
        if ctx.inplace:
            return _inplace_grad(op, grad, ctx.saved_tensors), None
        (x,) = ctx.saved_tensors
        if _recording(grad):
            return plain_grad(x, grad), None
        return slope(x).mul_(grad), None  # (the fast lane: one fresh tensor, written in place)

    return staticmethod(forward), staticmethod(backward)


def _check_inplace(op: str, x) -> None:
    """Refuse, before any work, an in-place write that torch refuses: into a leaf that requires
    grad, or into a view of one, while grad mode is on."""
    if not (x.requires_grad and _recording(x)):
        return
    if x.is_leaf:
        raise RuntimeError(f"{op}(inplace=True): a leaf Variable that requires grad is being used "
                           "in an in-place operation.")
    base = x._base
    if base is not None and base.is_leaf and base.requires_grad:
        raise RuntimeError(f"{op}(inplace=True): a view of a leaf Variable that requires grad is "
                           "being used in an in-place operation.")


def _inplace(cls: type, op: str, x, write: Callable):
    """op(x, inplace=True): x written by ``write`` and returned; through ``cls`` (its node, what
    backward needs saved) when the write is recorded, else directly, as torch returns x itself."""
    _check_inplace(op, x)
    if x.requires_grad and _recording(x):
        return cls.apply(x, True)
    write(x)
    return x


def _silu_slope(x):
    # d/dx x sigmoid(x) = s (1 + x (1 - s)), s = sigmoid(x); written into fresh tensors
    s = x.sigmoid()
    return (1 - s).mul_(x).add_(1).mul_(s)


def _silu_into(x):
    x.mul_(x.sigmoid())


def _silu_grad(x):
    s = x.sigmoid()
    return s * (1 + x * (1 - s))


class Silu(PackFunction):
    """silu(x) = x * sigmoid(x)."""

    reference = "F.silu; x * sigmoid(x)"
    double_backward = "exact (inplace=True: raises)"
    nan_inf = "as F.silu: silu(-inf) = nan, its gradient at +inf nan"
    saves = "x (the composite: x and sigmoid(x)); inplace=True: the derivative (F.silu: a copy " \
        "of x)"

    forward, backward = _lanes("silu", lambda x: x.sigmoid().mul_(x), _silu_slope,
                               lambda x, grad: grad * _silu_grad(x), _silu_into)


def _mish_parts(x):
    """(s, q, d) with s = sigmoid(x), q = -s (2 - s) and d = -(2 - s (2 - s)), fresh: tanh of
    softplus(x) is q / d, written with sigmoid alone (no exp overflow, no tanh)."""
    s = x.sigmoid()
    q = (s - 2).mul_(s)
    return s, q, -2 - q


def _mish_value(x):
    _, q, d = _mish_parts(x)
    return q.mul_(x).div_(d)


def _mish_into(x):
    _, q, d = _mish_parts(x)
    x.mul_(q).div_(d)  # (the order of the out-of-place form: the same rounding)


def _mish_slope(x):
    # d/dx x t = t + x s (1 - t^2), t = p / D with p = s (2 - s), D = 2 - p, and
    # 1 - t^2 = 4 (1 - s)^2 / D^2: the slope is (p + 4 x s (1 - s)^2 / D) / D
    s, q, d = _mish_parts(x)
    w = s - 1
    w.mul_(w).mul_(s).mul_(x).mul_(4).div_(d)
    return q.add_(w).div_(d)


def _mish_grad(x):
    s = x.sigmoid()
    p = s * (2 - s)
    d = 2 - p
    return (p + 4 * x * s * (1 - s) * (1 - s) / d) / d


class Mish(PackFunction):
    """mish(x) = x * tanh(softplus(x))."""

    reference = "F.mish; x * tanh(softplus(x))"
    double_backward = "exact (inplace=True: raises)"
    nan_inf = "propagates nan; mish(+inf) = +inf, mish(-inf) = nan as F.mish"
    saves = "x (the composite: x and softplus(x)); inplace=True: the derivative (F.mish: a copy " \
        "of x)"

    forward, backward = _lanes("mish", _mish_value, _mish_slope,
                               lambda x, grad: grad * _mish_grad(x), _mish_into)


def _erf_cdf(x):
    """Phi(x) = (1 + erf(x / sqrt 2)) / 2, fresh."""
    return (x * _SQRT_HALF).erf().add_(1).mul_(0.5)


def _gelu_slope(x, plain: bool = False):
    """d/dx x Phi(x) = Phi(x) + x phi(x), fresh; ``plain=True`` gives it from differentiable ops
    (the plain path, for a recorded backward)."""
    if plain:
        return 0.5 * (1 + (x * _SQRT_HALF).erf()) + x * (-0.5 * x * x).exp() * _INV_SQRT_2PI
    pdf = (x * x).mul_(-0.5).exp_().mul_(x).mul_(_INV_SQRT_2PI)
    return _erf_cdf(x).add_(pdf)


class Gelu(PackFunction):
    """gelu(x) = x Phi(x) = 0.5 x (1 + erf(x / sqrt(2))), the exact (erf) form."""

    reference = "F.gelu"
    nan_inf = "propagates nan; gelu(+inf) = +inf and gelu(-inf) = nan (F.gelu: nan at both), " \
        "the gradient nan at both as F.gelu's"
    saves = "x (the composite: x and erf(x / sqrt(2)))"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _erf_cdf(x).mul_(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if _recording(grad):
            return grad * _gelu_slope(x, plain=True)
        return _gelu_slope(x).mul_(grad)


def _tanh_gate(x):
    """sigmoid(2 K (x + C x^3)) = (1 + tanh(K (x + C x^3))) / 2, fresh: the tanh form of gelu is
    x times it."""
    return (x * x).mul_(2 * _K * _C).add_(2 * _K).mul_(x).sigmoid_()


def _gelu_tanh_slope(x, plain: bool = False):
    """d/dx x g(x), g = sigmoid(2u), u = K (x + C x^3): g (1 + 2 x u' (1 - g)), fresh;
    ``plain=True`` gives it from differentiable ops (the plain path, for a recorded backward)."""
    if plain:
        t = (_K * (x + _C * x * x * x)).tanh()
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _K * (1 + 3 * _C * x * x)
    g = _tanh_gate(x)
    du = (x * x).mul_(6 * _K * _C).add_(2 * _K).mul_(x)  # x 2u'
    return (1 - g).mul_(du).add_(1).mul_(g)


class GeluTanh(PackFunction):
    """gelu with the tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""

    reference = "F.gelu(approximate='tanh')"
    saves = "x (the composite: four tensors)"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        # (1 + tanh(u)) / 2 = sigmoid(2u): one sigmoid in place of tanh
        return _tanh_gate(x).mul_(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if _recording(grad):
            return grad * _gelu_tanh_slope(x, plain=True)
        return _gelu_tanh_slope(x).mul_(grad)


def _hardswish_slope(x):
    # 0 at and below -3, x / 3 + 1/2 inside, 1 at and above 3 (nan: 1, as torch). With
    # u = clamp(x, -3, 3) / 3, floor(u^2) is 1 at the bounds u = +-1 and 0 inside, so that
    # trunc(u) = u floor(u^2) and the slope is u - trunc(u) / 2 + 1/2: float ops only, with two
    # fresh tensors (bool masks and where run several times slower on torch's CPU kernels, and
    # each fresh tensor costs a pass: benchmarks/pack.py)
    u = x.clamp(-3, 3).div_(3)
    bound = (u * u).floor_().mul_(u).mul_(0.5)
    return u.sub_(bound).add_(0.5).nan_to_num_(1.0)


def _hardswish_grad(x, grad):
    ns = namespace_of(x)
    inside = grad * (x / 3 + 0.5)
    # (grad itself above the bounds and at nan, 0 below: as torch, even for a nan grad)
    return ns.where(x < 3, ns.where(x > -3, inside, ns.zeros_like(grad)), grad)


def _hardswish_into(x):
    x.mul_((x + 3).clamp_(0, 6)).div_(6)  # (x h / 6, as torch's kernel rounds it)


class Hardswish(PackFunction):
    """hardswish(x) = x * clamp(x + 3, 0, 6) / 6."""

    reference = "F.hardswish"
    double_backward = "exact (1/3 between the bounds, 0 outside; inplace=True: raises)"
    boundary = "as F.hardswish: gradient 0 at x = -3, 1 at x = 3"
    nan_inf = "propagates nan, its gradient that of x >= 3 as F.hardswish; a nan or inf " \
        "grad_output gives nan where the derivative is 0 (F.hardswish: 0) unless backward is " \
        "recorded"
    saves = "x (the composite: three tensors); inplace=True: the derivative (F.hardswish: a " \
        "copy of x)"

    forward, backward = _lanes("hardswish", lambda x: (x + 3).clamp_(0, 6).mul_(x).div_(6),
                               _hardswish_slope, _hardswish_grad, _hardswish_into)


# above this many elements, |x| < 3 is taken from float ops and one float-to-bool conversion:
# torch's CPU comparison kernels run several times slower than these over large tensors, and
# faster over small ones (benchmarks/pack.py)
_FLOAT_MASK_FROM = 1 << 16


def _inside_three(x):
    """|x| < 3 as a bool tensor, False at nan."""
    if x.numel() < _FLOAT_MASK_FROM:
        return x.abs() < 3
    # |clamp(x, -3, 3)| - 3 is 0 at and beyond the bounds, negative inside, nan at nan
    return x.clamp(-3, 3).abs_().sub_(3).nan_to_num_(0.0).to(namespace_of(x).bool)


def _hardsigmoid_into(x):
    x.add_(3).clamp_(0, 6).div_(6)


class Hardsigmoid(PackFunction):
    """hardsigmoid(x) = clamp(x + 3, 0, 6) / 6."""

    reference = "F.hardsigmoid"
    double_backward = "zero almost everywhere"
    boundary = "as F.hardsigmoid: gradient 0 at x = -3 and x = 3"
    nan_inf = "nan gives nan, its gradient 0 (the mask is False); a nan or inf grad_output " \
        "gives nan outside the bounds (F.hardsigmoid: 0) unless backward is recorded"
    saves = "a bool mask, one byte per element (F.hardsigmoid saves x)"

    @staticmethod
    def forward(ctx, x, inplace=False):
        ctx.save_for_backward(_inside_three(x))
        if not inplace:
            return (x + 3).clamp_(0, 6).div_(6)
        ctx.mark_dirty(x)
        _hardsigmoid_into(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        (inside,) = ctx.saved_tensors
        ns = namespace_of(grad)
        if _recording(grad):
            return ns.where(inside, grad / 6, 0.0), None
        # the mask as 0/1 in grad's dtype: through uint8, which converts several times faster
        # than bool, and a product in place of where (benchmarks/pack.py); times 1/6, as torch
        return inside.view(ns.uint8).to(grad.dtype).mul_(grad).mul_(1 / 6), None


class Hardmish(PackFunction):
    """hardmish(x) = 0.5 x clamp(x + 2, 0, 2) (no native op)."""

    reference = "0.5 * x * clamp(x + 2, 0, 2)"
    double_backward = "exact (1 between the bounds, 0 outside)"
    boundary = "as the composite (clamp passes at its bounds): -1 at x = -2, 1 at x = 0"
    saves = "x"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x + 2).clamp_(0, 2).mul_(x).mul_(0.5)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        ns = namespace_of(x)
        return ns.where(x < -2, 0.0, ns.where(x <= 0, grad * (x + 1), grad))


@documented(Silu)
def silu(x, inplace: bool = False):
    """x * sigmoid(x), saving only x; ``inplace=True`` writes it into x and returns x."""
    floating("silu", "x", x)
    if inplace:
        return _inplace(Silu, "silu", x, _silu_into)
    return Silu.apply(x)


@documented(Mish)
def mish(x, inplace: bool = False):
    """x * tanh(softplus(x)), saving only x; ``inplace=True`` writes it into x and returns x."""
    floating("mish", "x", x)
    if inplace:
        return _inplace(Mish, "mish", x, _mish_into)
    return Mish.apply(x)


def _check_approximate(op: str, approximate) -> None:
    """Refuse an ``approximate`` that F.gelu refuses (a RuntimeError, as torch's)."""
    if approximate not in _APPROXIMATIONS:
        raise RuntimeError(f"{op}(): approximate argument must be either none or tanh, got "
                           f"{approximate!r}")


@documented(Gelu)
def gelu(x, approximate: str = "none"):
    """x Phi(x) (``approximate="none"``, the erf form) or its tanh approximation
    (``approximate="tanh"``, as gelu_tanh), saving only x."""
    floating("gelu", "x", x)
    _check_approximate("gelu", approximate)
    return Gelu.apply(x) if approximate == "none" else GeluTanh.apply(x)


@documented(GeluTanh)
def gelu_tanh(x):
    """gelu's tanh approximation, saving only x."""
    floating("gelu_tanh", "x", x)
    return GeluTanh.apply(x)


@documented(Hardswish)
def hardswish(x, inplace: bool = False):
    """x * clamp(x + 3, 0, 6) / 6, with torch's gradient at the bounds; ``inplace=True`` writes
    it into x and returns x."""
    floating("hardswish", "x", x)
    if inplace:
        return _inplace(Hardswish, "hardswish", x, _hardswish_into)
    return Hardswish.apply(x)


@documented(Hardsigmoid)
def hardsigmoid(x, inplace: bool = False):
    """clamp(x + 3, 0, 6) / 6, saving a bool mask; ``inplace=True`` writes it into x and returns
    x."""
    floating("hardsigmoid", "x", x)
    if inplace:
        return _inplace(Hardsigmoid, "hardsigmoid", x, _hardsigmoid_into)
    return Hardsigmoid.apply(x)


@documented(Hardmish)
def hardmish(x):
    """0.5 x clamp(x + 2, 0, 2)."""
    floating("hardmish", "x", x)
    return Hardmish.apply(x)
