"""The module forms of the drop-in pack's own ops (those torch.nn has no class for), for both
engines.

Each form is written once: a ``...Form`` class holds the constructor, the ``forward`` (which
calls the pack function) and the ``extra_repr``, and is made a module twice, in ``ext.nn.pack``
over ``ext.nn.Module`` and in ``ext.compat.nn`` over ``torch.nn.Module``, with the same
constructor arguments and the same repr. The pack functions run on either engine's tensors, so
the forms never ask which one they hold.

The gated units split their input in two halves along ``dim`` as ``torch.nn.GLU`` does: the
first half is the value, the second half the gate that goes through the activation, so
``SwiGLU(dim)(x)`` is ``x1 * silu(x2)`` where ``nn.GLU(dim)(x)`` is ``x1 * sigmoid(x2)``. (To
gate the first half instead, call ``swiglu(x1, x2)``, which is ``silu(x1) * x2``.)
"""

from __future__ import annotations

from typing import Any

from .. import dropin as _pack
from .normalizers import wrap_dim

__all__ = ["SwiGLUForm", "GeGLUForm", "SparsemaxForm", "Entmax15Form", "SafeSoftmaxForm",
           "HardmishForm", "SafeLogsumexpForm", "Log1mexpForm", "GradReverseForm",
           "GradScaleForm", "FakeQuantSTEForm", "ClampMaskedForm", "RoundSTEForm",
           "SignSTEForm", "QuantizeForm", "FusedLinearCrossEntropyLossForm"]


def _halves(name: str, x, dim: int) -> tuple:
    """(value, gate): the two halves of ``x`` along ``dim``, refused as torch's GLU refuses a
    scalar or an odd size."""
    if x.dim() == 0:
        raise RuntimeError(f"{name}: does not support scalars because halving size must be even")
    d = wrap_dim(name, x, dim)
    if x.shape[d] % 2:
        raise RuntimeError(f"{name}: Halving dimension must be even, but dimension {d} is size "
                           f"{x.shape[d]}")
    return x.chunk(2, d)


class _NoArgForm:
    """A form without settings (its constructor takes none, on either engine)."""

    def __init__(self) -> None:
        super().__init__()


class _DimForm:
    """A form whose one setting is the dimension it works along (default -1)."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def extra_repr(self) -> str:
        """``dim=-1``."""
        return f"dim={self.dim}"


class SwiGLUForm(_DimForm):
    """``x1 * silu(x2)``, with ``x1, x2`` the halves of the input along ``dim`` (as nn.GLU)."""

    def forward(self, input: Any) -> Any:  # noqa: A002 - torch's name
        """The value half times silu of the gate half."""
        value, gate = _halves("SwiGLU", input, self.dim)
        return _pack.swiglu(gate, value)


class GeGLUForm:
    """``x1 * gelu(x2, approximate)``, with ``x1, x2`` the halves of the input along ``dim``."""

    def __init__(self, dim: int = -1, approximate: str = "none") -> None:
        super().__init__()
        self.dim = dim
        self.approximate = approximate

    def forward(self, input: Any) -> Any:  # noqa: A002
        """The value half times gelu of the gate half."""
        value, gate = _halves("GeGLU", input, self.dim)
        return _pack.geglu(gate, value, approximate=self.approximate)

    def extra_repr(self) -> str:
        """``dim=-1, approximate='none'``."""
        return f"dim={self.dim}, approximate={self.approximate!r}"


class SparsemaxForm(_DimForm):
    """sparsemax along ``dim``: a probability vector with exact zeros."""

    def forward(self, input: Any) -> Any:  # noqa: A002
        """sparsemax(input, dim)."""
        return _pack.sparsemax(input, self.dim)


class Entmax15Form(_DimForm):
    """1.5-entmax along ``dim``: between softmax and sparsemax."""

    def forward(self, input: Any) -> Any:  # noqa: A002
        """entmax15(input, dim)."""
        return _pack.entmax15(input, self.dim)


class SafeSoftmaxForm(_DimForm):
    """softmax along ``dim`` over the entries a mask keeps; a row with nothing kept gives
    zeros (and a zero gradient), not nan."""

    def forward(self, input: Any, mask: Any = None) -> Any:  # noqa: A002
        """safe_softmax(input, mask, dim); ``mask`` (bool, broadcasting to input) or None."""
        return _pack.safe_softmax(input, mask, self.dim)


class HardmishForm(_NoArgForm):
    """hardmish(x) = 0.5 x clamp(x + 2, 0, 2), elementwise."""

    def forward(self, input: Any) -> Any:  # noqa: A002
        """hardmish(input)."""
        return _pack.hardmish(input)


class SafeLogsumexpForm:
    """log(sum(exp(x))) over ``dim``, with a finite gradient where a row is all -inf."""

    def __init__(self, dim: int | tuple = -1, keepdim: bool = False) -> None:
        super().__init__()
        self.dim = dim
        self.keepdim = keepdim

    def forward(self, input: Any) -> Any:  # noqa: A002
        """safe_logsumexp(input, dim, keepdim)."""
        return _pack.safe_logsumexp(input, self.dim, self.keepdim)

    def extra_repr(self) -> str:
        """``dim=-1, keepdim=False``."""
        return f"dim={self.dim}, keepdim={self.keepdim}"


class Log1mexpForm(_NoArgForm):
    """log1mexp(x) = log(1 - exp(-x)) for x > 0, elementwise."""

    def forward(self, input: Any) -> Any:  # noqa: A002
        """log1mexp(input)."""
        return _pack.log1mexp(input)


class GradReverseForm:
    """The gradient reversal layer: identity forward, gradient times ``-alpha``."""

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self.alpha = alpha

    def forward(self, input: Any) -> Any:  # noqa: A002
        """grad_reverse(input, alpha) (a view of input)."""
        return _pack.grad_reverse(input, self.alpha)

    def extra_repr(self) -> str:
        """``alpha=1.0``."""
        return f"alpha={self.alpha}"


class GradScaleForm:
    """Identity forward, gradient times ``scale`` (a number or a 0-d tensor)."""

    def __init__(self, scale: Any) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, input: Any) -> Any:  # noqa: A002
        """grad_scale(input, scale) (a view of input)."""
        return _pack.grad_scale(input, self.scale)

    def extra_repr(self) -> str:
        """``scale=0.5``."""
        return f"scale={self.scale}"


class FakeQuantSTEForm:
    """Per-tensor affine fake quantization with a straight-through gradient inside
    ``[qmin, qmax]`` (as torch.fake_quantize_per_tensor_affine, with fixed parameters)."""

    def __init__(self, scale: float, zero_point: int, qmin: int, qmax: int) -> None:
        super().__init__()
        self.scale = scale
        self.zero_point = zero_point
        self.qmin = qmin
        self.qmax = qmax

    def forward(self, input: Any) -> Any:  # noqa: A002
        """fake_quant_ste(input, scale, zero_point, qmin, qmax)."""
        return _pack.fake_quant_ste(input, self.scale, self.zero_point, self.qmin, self.qmax)

    def extra_repr(self) -> str:
        """``scale=0.1, zero_point=0, qmin=-128, qmax=127``."""
        return (f"scale={self.scale}, zero_point={self.zero_point}, qmin={self.qmin}, "
                f"qmax={self.qmax}")


class ClampMaskedForm:
    """clamp(x, min, max) saving a bool mask; the gradient passes at the bounds with
    ``boundary='pass'`` (torch.clamp) and not with ``'block'`` (F.hardtanh)."""

    def __init__(self, min: float | None = None, max: float | None = None,  # noqa: A002
                 boundary: str = "pass") -> None:
        super().__init__()
        self.min = min
        self.max = max
        self.boundary = boundary

    def forward(self, input: Any) -> Any:  # noqa: A002
        """clamp_masked(input, min, max, boundary)."""
        return _pack.clamp_masked(input, self.min, self.max, self.boundary)

    def extra_repr(self) -> str:
        """``min=-1.0, max=1.0, boundary='pass'``."""
        return f"min={self.min}, max={self.max}, boundary={self.boundary!r}"


class RoundSTEForm(_NoArgForm):
    """round(x) forward, identity gradient (straight through)."""

    def forward(self, input: Any) -> Any:  # noqa: A002
        """round_ste(input)."""
        return _pack.round_ste(input)


class SignSTEForm(_NoArgForm):
    """sign(x) forward; the gradient passes where ``|x| <= 1``."""

    def forward(self, input: Any) -> Any:  # noqa: A002
        """sign_ste(input)."""
        return _pack.sign_ste(input)


class QuantizeForm:
    """Uniform quantization to ``2 ** bits`` levels between the input's min and max, with a
    straight-through gradient."""

    def __init__(self, bits: int = 8) -> None:
        super().__init__()
        self.bits = bits

    def forward(self, input: Any) -> Any:  # noqa: A002
        """quantize(input, bits)."""
        return _pack.quantize(input, self.bits)

    def extra_repr(self) -> str:
        """``bits=8``."""
        return f"bits={self.bits}"


class FusedLinearCrossEntropyLossForm:
    """cross_entropy(linear(x, weight, bias), target) without keeping the (rows x classes)
    logits: the output layer's weight is an argument of ``forward``, not a parameter here, so the
    module sits where a ``Linear`` followed by a ``CrossEntropyLoss`` would. ``class_weight``
    (one per class, or None) is that loss's ``weight``, kept as a buffer of the same name."""

    def __init__(self, ignore_index: int = -100, reduction: str = "mean",
                 label_smoothing: float = 0.0, chunk_size: int = 1024,
                 class_weight: Any = None) -> None:
        super().__init__()
        self.ignore_index = ignore_index
        self.reduction = reduction
        self.label_smoothing = label_smoothing
        self.chunk_size = chunk_size
        self.register_buffer("class_weight", class_weight)

    def forward(self, x: Any, weight: Any, target: Any, bias: Any = None) -> Any:
        """fused_linear_cross_entropy(x, weight, target, bias, ...)."""
        return _pack.fused_linear_cross_entropy(
            x, weight, target, bias, class_weight=self.class_weight,
            ignore_index=self.ignore_index, reduction=self.reduction,
            label_smoothing=self.label_smoothing, chunk_size=self.chunk_size)

    def extra_repr(self) -> str:
        """``ignore_index=-100, reduction='mean', label_smoothing=0.0, chunk_size=1024``."""
        return (f"ignore_index={self.ignore_index}, reduction={self.reduction!r}, "
                f"label_smoothing={self.label_smoothing}, chunk_size={self.chunk_size}")
