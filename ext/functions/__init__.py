"""``ext.functions``: the op library. Every differentiable op is a Function here.

Every op is declared once through ``_op.declare`` (see docs/adding_an_op.md) and carries its
names in the op registry. ``install`` puts the registry's methods on ``ext.Tensor`` and its
functions in ``ext`` when ``ext`` is imported: the one table through which the Tensor reaches
the ops, and the only place where a lower layer is given code from a higher one
(``tools/stubs.py`` writes what it installs into ``ext/_tensor.pyi`` and ``ext/__init__.pyi``).
"""

from __future__ import annotations

from .._tensor import Tensor
from . import _op
from . import _lazy
from ._keywords import free
from ._lazy import family_of, load, load_all
from .builtin import (  # (importing a family declares its ops; _lazy.FAMILIES load later)
    activation,
    conversion,
    creation,
    indexing,
    inplace,
    linalg,
    nn_ops,
    pointwise,
    reduction,
    setitem,
    shape,
)
from . import dropin
from .builtin._builtin import BuiltinFunction, namespace_of
from .dropin import (  # the drop-in pack (docs/contracts.md)
    AddMul,
    ClampMasked,
    CrossEntropyLSE,
    Entmax15,
    Exp,
    FakeQuantSTE,
    FusedLinearCrossEntropy,
    GeGLU,
    Gelu,
    GeluTanh,
    GradReverse,
    GradScale,
    Hardmish,
    Hardsigmoid,
    Hardswish,
    Log1mexp,
    Mish,
    Quantize,
    RMSNorm,
    RoundSTE,
    SafeLogsumexp,
    SafeSoftmax,
    SignSTE,
    Silu,
    Softmax,
    Sparsemax,
    SwiGLU,
    clamp_masked,
    cross_entropy_lse,
    entmax15,
    fake_quant_ste,
    fused_linear_cross_entropy,
    geglu,
    gelu,
    gelu_tanh,
    grad_reverse,
    grad_scale,
    hardmish,
    hardsigmoid,
    hardswish,
    log1mexp,
    mish,
    quantize,
    rms_norm,
    round_ste,
    safe_logsumexp,
    safe_softmax,
    sign_ste,
    silu,
    sparsemax,
    swiglu,
)

__all__ = ["BuiltinFunction", "namespace_of", "install", "free", "load", "load_all", "family_of",
           *dropin.FUNCTIONS, *dropin.CLASSES]

def install(namespace: dict) -> None:
    """Attach the op library's methods to ``ext.Tensor`` and put its functions in
    ``namespace`` (the ``ext`` package's); the families that load on first use install theirs
    then (``_lazy``)."""
    _lazy.install(namespace)

