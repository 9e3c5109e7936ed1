"""``ext.nn.pack``: the drop-in pack's own ops (those torch.nn has no class for) as ``ext.nn``
modules, on ext tensors.

Each is the form of ``ext.functions.dropin.forms`` over ``ext.nn.Module``; ``ext.compat.nn``
makes the same forms over ``torch.nn.Module``, so the two engines' modules share constructor
arguments, defaults and repr. The gated units split their input in two halves along ``dim`` as
``torch.nn.GLU`` does: ``SwiGLU(dim)(x)`` is ``x1 * silu(x2)``.
"""

from __future__ import annotations

from ..functions.dropin.forms import (
    ClampMaskedForm,
    Entmax15Form,
    FakeQuantSTEForm,
    FusedLinearCrossEntropyLossForm,
    GeGLUForm,
    GradReverseForm,
    GradScaleForm,
    HardmishForm,
    Log1mexpForm,
    QuantizeForm,
    RoundSTEForm,
    SafeLogsumexpForm,
    SafeSoftmaxForm,
    SignSTEForm,
    SparsemaxForm,
    SwiGLUForm,
)
from .modules.module import Module

__all__ = ["SwiGLU", "GeGLU", "Sparsemax", "Entmax15", "SafeSoftmax", "SafeLogsumexp", "Log1mexp",
           "Hardmish", "GradReverse", "GradScale", "FakeQuantSTE", "ClampMasked",
           "RoundSTE", "SignSTE", "Quantize", "FusedLinearCrossEntropyLoss", "FORMS"]


class SwiGLU(SwiGLUForm, Module):
    """``x1 * silu(x2)`` over the halves of the input along ``dim``, on ext tensors."""


class GeGLU(GeGLUForm, Module):
    """``x1 * gelu(x2, approximate)`` over the halves of the input along ``dim``, on ext
    tensors."""


class Sparsemax(SparsemaxForm, Module):
    """sparsemax along ``dim``, on ext tensors."""


class Entmax15(Entmax15Form, Module):
    """1.5-entmax along ``dim``, on ext tensors."""


class SafeSoftmax(SafeSoftmaxForm, Module):
    """softmax along ``dim`` under an optional mask (empty rows give zeros), on ext tensors."""


class Hardmish(HardmishForm, Module):
    """0.5 x clamp(x + 2, 0, 2), on ext tensors."""


class SafeLogsumexp(SafeLogsumexpForm, Module):
    """logsumexp over ``dim`` with a finite gradient on all -inf rows, on ext tensors."""


class Log1mexp(Log1mexpForm, Module):
    """log(1 - exp(-x)) for x > 0, on ext tensors."""


class GradReverse(GradReverseForm, Module):
    """Identity forward, gradient times ``-alpha``, on ext tensors."""


class GradScale(GradScaleForm, Module):
    """Identity forward, gradient times ``scale``, on ext tensors."""


class FakeQuantSTE(FakeQuantSTEForm, Module):
    """Fake quantization with a straight-through gradient, on ext tensors."""


class ClampMasked(ClampMaskedForm, Module):
    """clamp with a chosen gradient at the bounds, on ext tensors."""


class RoundSTE(RoundSTEForm, Module):
    """round forward, identity gradient, on ext tensors."""


class SignSTE(SignSTEForm, Module):
    """sign forward, gradient inside ``|x| <= 1``, on ext tensors."""


class Quantize(QuantizeForm, Module):
    """Uniform ``bits``-bit quantization, straight-through gradient, on ext tensors."""


class FusedLinearCrossEntropyLoss(FusedLinearCrossEntropyLossForm, Module):
    """The output layer and cross entropy in one op, on ext tensors."""


# (module name, its engine-agnostic form): what ext.compat.nn makes over torch.nn.Module too
FORMS = {cls.__name__: form for cls, form in (
    (SwiGLU, SwiGLUForm), (GeGLU, GeGLUForm), (Sparsemax, SparsemaxForm),
    (Entmax15, Entmax15Form), (SafeSoftmax, SafeSoftmaxForm), (SafeLogsumexp, SafeLogsumexpForm),
    (Log1mexp, Log1mexpForm), (Hardmish, HardmishForm),
    (GradReverse, GradReverseForm), (GradScale, GradScaleForm),
    (FakeQuantSTE, FakeQuantSTEForm), (ClampMasked, ClampMaskedForm), (RoundSTE, RoundSTEForm),
    (SignSTE, SignSTEForm), (Quantize, QuantizeForm),
    (FusedLinearCrossEntropyLoss, FusedLinearCrossEntropyLossForm))}
