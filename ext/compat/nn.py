"""``ext.compat.nn``: the drop-in pack as ``torch.nn.Module``s.

Where torch.nn has the module (``SiLU``, ``Mish``, ``GELU``, ``Hardswish``, ``Hardsigmoid``,
``RMSNorm``, ``CrossEntropyLoss``), the class here is a subclass of torch's that keeps its
constructor, parameters, buffers, ``reset_parameters``, ``extra_repr`` and ``state_dict`` keys
and replaces only ``forward`` by the pack's op: a checkpoint of either loads into the other with
``strict=True``, ``isinstance`` checks against torch's class still hold, and ``inplace=True``
writes into the input and returns it, as torch's does. Swapping one in changes what backward
saves (see each op's contract), not the values.

The pack's own ops (``SwiGLU``, ``GeGLU``, ``Sparsemax``, ``Entmax15``, ``SafeSoftmax``,
``SafeLogsumexp``, ``Log1mexp``, ``Hardmish``, ``GradReverse``, ``GradScale``,
``FakeQuantSTE``, ``ClampMasked``, ``RoundSTE``, ``SignSTE``, ``Quantize``,
``FusedLinearCrossEntropyLoss``) come from the forms in
``ext.functions.dropin.forms``, made here over ``torch.nn.Module``: the same constructor
arguments and repr as their mini-engine twins in ``ext.nn.pack``.

This module imports torch; ``import ext`` never loads it.
"""

from __future__ import annotations

from torch import Tensor, nn

from .. import functions as _pack
from ..functions.dropin import forms as _forms

__all__ = ["SiLU", "Mish", "GELU", "Hardswish", "Hardsigmoid", "RMSNorm", "CrossEntropyLoss",
           "SwiGLU", "GeGLU", "Sparsemax", "Entmax15", "SafeSoftmax", "SafeLogsumexp",
           "Log1mexp", "Hardmish", "GradReverse", "GradScale", "FakeQuantSTE",
           "ClampMasked", "RoundSTE", "SignSTE", "Quantize",
           "FusedLinearCrossEntropyLoss"]


# ------------------------------------------------------------------ torch.nn's modules, pack ops
class SiLU(nn.SiLU):
    """``torch.nn.SiLU`` computed by the pack's ``silu`` (backward keeps only the input)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        """silu(input), into input when ``inplace``."""
        return _pack.silu(input, inplace=self.inplace)


class Mish(nn.Mish):
    """``torch.nn.Mish`` computed by the pack's ``mish``."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """mish(input), into input when ``inplace``."""
        return _pack.mish(input, inplace=self.inplace)


class GELU(nn.GELU):
    """``torch.nn.GELU`` (``approximate='none'`` or ``'tanh'``) computed by the pack's
    ``gelu``."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """gelu(input, approximate)."""
        return _pack.gelu(input, approximate=self.approximate)


class Hardswish(nn.Hardswish):
    """``torch.nn.Hardswish`` computed by the pack's ``hardswish`` (torch's gradient at
    x = -3 and x = 3)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """hardswish(input), into input when ``inplace``."""
        return _pack.hardswish(input, inplace=self.inplace)


class Hardsigmoid(nn.Hardsigmoid):
    """``torch.nn.Hardsigmoid`` computed by the pack's ``hardsigmoid`` (backward keeps a bool
    mask, not the input)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """hardsigmoid(input), into input when ``inplace``."""
        return _pack.hardsigmoid(input, inplace=self.inplace)


class RMSNorm(nn.RMSNorm):
    """``torch.nn.RMSNorm`` computed by the pack's ``rms_norm`` (backward recomputes the row
    scale instead of keeping it); ``weight``, its init and ``eps=None`` (the input dtype's
    epsilon) are torch's."""

    def forward(self, x: Tensor) -> Tensor:
        """rms_norm(x, normalized_shape, weight, eps)."""
        return _pack.rms_norm(x, self.normalized_shape, self.weight, self.eps)


class CrossEntropyLoss(nn.CrossEntropyLoss):
    """``torch.nn.CrossEntropyLoss`` computed by the pack's ``cross_entropy_lse`` (backward keeps
    a logsumexp per row, not the log-softmax); the class ``weight`` is torch's buffer."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        """cross_entropy(input, target, weight, ...)."""
        return _pack.cross_entropy_lse(input, target, self.weight, ignore_index=self.ignore_index,
                                       reduction=self.reduction,
                                       label_smoothing=self.label_smoothing)


# ------------------------------------------------------------------ the pack's own ops
class SwiGLU(_forms.SwiGLUForm, nn.Module):
    """``x1 * silu(x2)`` over the halves of the input along ``dim`` (the halves as
    ``torch.nn.GLU`` takes them)."""


class GeGLU(_forms.GeGLUForm, nn.Module):
    """``x1 * gelu(x2, approximate)`` over the halves of the input along ``dim`` (the halves as
    ``torch.nn.GLU`` takes them)."""


class Sparsemax(_forms.SparsemaxForm, nn.Module):
    """sparsemax along ``dim``: a probability vector with exact zeros."""


class Entmax15(_forms.Entmax15Form, nn.Module):
    """1.5-entmax along ``dim``."""


class SafeSoftmax(_forms.SafeSoftmaxForm, nn.Module):
    """softmax along ``dim`` under an optional bool mask; a row with nothing kept gives zeros
    and a zero gradient."""


class SafeLogsumexp(_forms.SafeLogsumexpForm, nn.Module):
    """logsumexp over ``dim`` with a finite gradient on all -inf rows."""


class Log1mexp(_forms.Log1mexpForm, nn.Module):
    """log(1 - exp(-x)) for x > 0, elementwise."""


class Hardmish(_forms.HardmishForm, nn.Module):
    """0.5 x clamp(x + 2, 0, 2), elementwise."""


class GradReverse(_forms.GradReverseForm, nn.Module):
    """The gradient reversal layer: identity forward, gradient times ``-alpha``."""


class GradScale(_forms.GradScaleForm, nn.Module):
    """Identity forward, gradient times ``scale``."""


class FakeQuantSTE(_forms.FakeQuantSTEForm, nn.Module):
    """Per-tensor affine fake quantization with fixed ``scale`` and ``zero_point`` and a
    straight-through gradient, as ``torch.fake_quantize_per_tensor_affine``."""


class ClampMasked(_forms.ClampMaskedForm, nn.Module):
    """clamp whose gradient at the bounds is torch.clamp's (``'pass'``) or F.hardtanh's
    (``'block'``)."""


class RoundSTE(_forms.RoundSTEForm, nn.Module):
    """round forward, identity gradient."""


class SignSTE(_forms.SignSTEForm, nn.Module):
    """sign forward, gradient inside ``|x| <= 1``."""


class Quantize(_forms.QuantizeForm, nn.Module):
    """Uniform ``bits``-bit quantization between the input's min and max, straight-through
    gradient."""


class FusedLinearCrossEntropyLoss(_forms.FusedLinearCrossEntropyLossForm, nn.Module):
    """``F.cross_entropy(F.linear(x, weight, bias), target)`` without keeping the logits;
    ``forward(x, weight, target, bias=None)``."""

