"""``ext.functions``: the op library. Every differentiable op is a Function here.

Ops declared through ``_op.declare`` (see docs/adding_an_op.md) carry their names in the op
registry; the op modules not yet migrated declare ``METHODS`` (Tensor methods and operators) and
``FUNCTIONS`` (``ext.*`` free functions). ``install_methods`` puts both on ``ext.Tensor`` when
``ext`` is imported: the one table through which the Tensor reaches the ops, and the only place
where a lower layer is given code from a higher one.
"""

from __future__ import annotations

from .._tensor import Tensor
from . import (
    _op,
    activation,
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

__all__ = ["BuiltinFunction", "namespace_of", "METHODS", "FUNCTIONS", "install_methods"]

_MODULES = (pointwise, reduction, linalg, shape, indexing, setitem, creation)

METHODS: dict = {}
FUNCTIONS: dict = {}
for _module in _MODULES:
    METHODS.update(_module.METHODS)
    FUNCTIONS.update(_module.FUNCTIONS)
METHODS.update(_op.methods())
FUNCTIONS.update(_op.functions())
METHODS.update(inplace.methods())


def install_methods() -> None:
    """Attach the op library's methods to ``ext.Tensor``."""
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)
    forward_rules.install()
