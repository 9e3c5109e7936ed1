"""``ext.functions``: the op library. Every differentiable op is a Function here.

Ops declared through ``_op.declare`` (see docs/adding_an_op.md) carry their names in the op
registry; the op modules not yet migrated declare ``METHODS`` (Tensor methods and operators) and
``FUNCTIONS`` (``ext.*`` free functions). ``install`` puts the methods on ``ext.Tensor`` and the
functions in ``ext`` when ``ext`` is imported: the one table through which the Tensor reaches
the ops, and the only place where a lower layer is given code from a higher one
(``tools/stubs.py`` writes what it installs into ``ext/_tensor.pyi`` and ``ext/__init__.pyi``).
"""

from __future__ import annotations

from .._tensor import Tensor
from . import (
    _op,
    activation,
    dropin,
    forward_rules,
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
from ._builtin import BuiltinFunction, namespace_of
from .dropin import (  # the drop-in pack (docs/pack.md)
    AddMul,
    ClampMasked,
    CrossEntropyLSE,
    Exp,
    FakeQuantSTE,
    FusedLinearCrossEntropy,
    GeGLU,
    GeluTanh,
    GradReverse,
    GradScale,
    Hardmish,
    Hardsigmoid,
    Hardswish,
    Mish,
    Quantize,
    RoundSTE,
    SignSTE,
    Silu,
    Softmax,
    SwiGLU,
    clamp_masked,
    cross_entropy_lse,
    fake_quant_ste,
    fused_linear_cross_entropy,
    geglu,
    gelu_tanh,
    grad_reverse,
    grad_scale,
    hardmish,
    hardsigmoid,
    hardswish,
    mish,
    quantize,
    round_ste,
    sign_ste,
    silu,
    swiglu,
)

__all__ = ["BuiltinFunction", "namespace_of", "METHODS", "FUNCTIONS", "install",
           *dropin.FUNCTIONS, *dropin.CLASSES]

_MODULES = (pointwise, reduction, linalg, shape, indexing, setitem, activation, creation,
            nn_ops)

METHODS: dict = {}
FUNCTIONS: dict = {}
for _module in _MODULES:
    METHODS.update(_module.METHODS)
    FUNCTIONS.update(_module.FUNCTIONS)
METHODS.update(_op.methods())
FUNCTIONS.update(_op.functions())
METHODS.update(inplace.methods())


def install(namespace: dict) -> None:
    """Attach the op library's methods to ``ext.Tensor`` and put its functions in
    ``namespace`` (the ``ext`` package's)."""
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)
    namespace.update(FUNCTIONS)
    forward_rules.install()
