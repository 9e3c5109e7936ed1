"""Clamping, quantization and straight-through estimators: clamp_masked, round_ste, sign_ste,
fake_quant_ste and the textbook Quantize. They save a bool mask or nothing, and pin the gradient at
the bounds."""

from __future__ import annotations

import math
import struct

from ..builtin._builtin import namespace_of
from ._base import PackFunction, documented, floating

__all__ = ["ClampMasked", "RoundSTE", "SignSTE", "FakeQuantSTE", "Quantize", "clamp_masked",
           "round_ste", "sign_ste", "fake_quant_ste", "quantize"]

_BOUNDARIES = ("pass", "block")


def _float32(value: float) -> float:
    """value rounded to the nearest float32 (as a C++ float(value))."""
    return struct.unpack("f", struct.pack("f", value))[0]


def _passing(grad, mask):
    """grad where mask, else 0 (a nan gradient outside the mask gives 0, as torch's clamp)."""
    ns = namespace_of(grad)
    return ns.where(mask, grad, ns.zeros_like(grad))


class ClampMasked(PackFunction):
    """clamp(x, min, max) whose gradient passes inside the bounds, and at them when ``boundary``
    is ``"pass"`` (as torch.clamp) but not when it is ``"block"`` (as F.hardtanh)."""

    reference = "torch.clamp (boundary='pass'); F.hardtanh (boundary='block')"
    double_backward = "zero almost everywhere"
    boundary = "a parameter: 'pass' (torch.clamp) or 'block' (F.hardtanh)"
    nan_inf = "nan gives nan; its gradient is 0 with 'pass' (torch.clamp), passes with 'block' " \
        "(F.hardtanh)"
    saves = "a bool mask (torch.clamp saves x)"

    @staticmethod
    def forward(ctx, x, min=None, max=None, boundary="pass"):  # noqa: A002 - torch's names
        # "pass": inside the closed bounds (nan is not); "block": not on or beyond a bound (nan
        # is not), as torch.clamp and F.hardtanh decide
        inclusive = boundary == "pass"
        mask = None
        if min is not None:
            mask = x >= min if inclusive else ~(x <= min)
        if max is not None:
            upper = x <= max if inclusive else ~(x >= max)
            mask = upper if mask is None else mask & upper
        ctx.save_for_backward(mask)
        return x.clamp(min, max)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return _passing(grad, mask), None, None, None


class RoundSTE(PackFunction):
    """round(x) (half to even) forward, identity backward."""

    reference = "x + (torch.round(x) - x).detach()"
    double_backward = "exact (zero)"
    boundary = "round half to even: 0.5 -> 0, 1.5 -> 2, -0.5 -> -0"
    saves = "nothing"

    @staticmethod
    def forward(ctx, x):
        return x.round()

    @staticmethod
    def backward(ctx, grad):
        return grad


class SignSTE(PackFunction):
    """sign(x) forward; the gradient passes where |x| <= 1 (the hardtanh straight-through)."""

    reference = "x.clamp(-1, 1) + (torch.sign(x) - x.clamp(-1, 1)).detach()"
    double_backward = "zero almost everywhere"
    boundary = "the gradient passes at |x| = 1; sign(0) = 0 as torch.sign"
    saves = "a bool mask"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x.abs() <= 1)
        return x.sign()

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return _passing(grad, mask)


class FakeQuantSTE(PackFunction):
    """(clamp(round(x / scale) + zero_point, qmin, qmax) - zero_point) * scale, with the gradient
    passing where the rounded value lies in [qmin, qmax], computed as torch's kernel does."""

    reference = "torch.fake_quantize_per_tensor_affine"
    double_backward = "zero almost everywhere"
    boundary = "inclusive, on the rounded value (as torch): -12.85 at scale 0.1 passes, 12.75 " \
        "not; q = round(x * inv) with inv = float32(1 / float32(scale)), in x's precision (" \
        "float32 for half types), ties to even"
    nan_inf = "+inf and -inf give the qmax and qmin levels with gradient 0 (as torch); nan gives " \
        "nan with gradient 0 (torch's kernel casts nan to int64 and gives a clamped level)"
    autocast = "ambient; the levels are float32 (q - zero_point) * float32(scale), as torch's " \
        "kernel, for every dtype"
    saves = "a bool mask (as torch)"

    @staticmethod
    def forward(ctx, x, scale, zero_point, qmin, qmax):
        ns = namespace_of(x)
        # torch's kernel: x * (1.0f / float(scale)) in float32 arithmetic (in double for a
        # float64 x), rounded half to even; the level (q - zero_point) * float(scale) in float32
        # for every dtype, so a float64 x gets float32 levels
        scale32 = _float32(scale)
        wide = x if x.dtype == ns.float64 else x.float()
        rounded = (wide * _float32(1.0 / scale32)).round() + zero_point
        ctx.save_for_backward((rounded >= qmin) & (rounded <= qmax))
        return ((rounded.clamp(qmin, qmax) - zero_point).float() * scale32).to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return _passing(grad, mask), None, None, None, None


class Quantize(PackFunction):
    """Uniform quantization of x to 2**bits levels between its min and max; the gradient passes
    straight through: the textbook straight-through estimator."""

    reference = "the straight-through identity gradient"
    double_backward = "exact (zero)"
    boundary = "straight through everywhere"
    nan_inf = "a constant x (max == min) gives nan, as the textbook formula"
    saves = "nothing"

    @staticmethod
    def forward(ctx, x, bits=8):
        low = x.min()
        scale = (2 ** bits - 1) / (x.max() - low)
        return ((x - low) * scale).round() / scale + low

    @staticmethod
    def backward(ctx, grad):
        return grad, None


@documented(ClampMasked)
def clamp_masked(x, min=None, max=None, boundary: str = "pass"):  # noqa: A002 - torch's names
    """clamp(x, min, max) saving a bool mask; ``boundary`` says whether the gradient passes at the
    bounds (``"pass"``, as torch.clamp) or not (``"block"``, as F.hardtanh)."""
    if boundary not in _BOUNDARIES:
        raise ValueError(f"clamp_masked(): boundary must be 'pass' or 'block', got {boundary!r}")
    if min is None and max is None:
        raise RuntimeError("clamp_masked(): at least one of 'min' or 'max' must not be None")
    if not hasattr(x, "is_floating_point"):
        raise TypeError(f"clamp_masked(): argument 'x' must be a tensor, not {type(x).__name__}")
    return ClampMasked.apply(x, min, max, boundary)


@documented(RoundSTE)
def round_ste(x):
    """round(x) with the identity gradient (straight through)."""
    floating("round_ste", "x", x)
    return RoundSTE.apply(x)


@documented(SignSTE)
def sign_ste(x):
    """sign(x) with the gradient passing where |x| <= 1."""
    floating("sign_ste", "x", x)
    return SignSTE.apply(x)


@documented(FakeQuantSTE)
def fake_quant_ste(x, scale: float, zero_point: int, qmin: int, qmax: int):
    """Fake quantization with a straight-through gradient inside [qmin, qmax]."""
    floating("fake_quant_ste", "x", x)
    if not scale > 0:
        raise ValueError(f"fake_quant_ste(): scale must be positive, got {scale}")
    # torch's kernel takes float(scale) and 1.0f / float(scale): both must be finite and nonzero
    scale32 = _float32(scale)
    if scale32 == 0 or math.isinf(scale32) or math.isinf(_float32(1.0 / scale32)):
        raise ValueError(f"fake_quant_ste(): scale must lie within float32's range, as must 1 / "
                         f"scale (torch's kernel computes in float32), got {scale}")
    if not qmin < qmax:
        raise ValueError(f"fake_quant_ste(): qmin must be less than qmax, got qmin={qmin}, "
                         f"qmax={qmax}")
    if not qmin <= zero_point <= qmax:
        raise ValueError(f"fake_quant_ste(): zero_point must lie in [qmin, qmax], got "
                         f"{zero_point}")
    return FakeQuantSTE.apply(x, float(scale), int(zero_point), int(qmin), int(qmax))


@documented(Quantize)
def quantize(x, bits: int = 8):
    """Quantize x to 2**bits levels between its min and max, straight-through gradient."""
    floating("quantize", "x", x)
    if isinstance(bits, bool) or not isinstance(bits, int) or bits < 1:
        raise ValueError(f"quantize(): bits must be a positive int, got {bits!r}")
    return Quantize.apply(x, bits)
