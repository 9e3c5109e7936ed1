"""The op families that load on first use, so that hundreds of ops cost ``import ext`` nothing.

``import ext`` declares the core families (arithmetic, reductions, shapes, indexing, nn ops).
The others (``FAMILIES``) are imported when one of their names is first reached:

- ``ext.<name>``: the package's ``__getattr__`` finds the family in ``_lazy_names.FUNCTIONS``;
- ``tensor.<name>`` and ``ext.Tensor.<name>``: each of their method names holds a
  ``_LazyMethod`` until then, which loads the family and hands over the real method;
- ``ext.ops.aten.<name>`` and the registry (``_op.registry``, ``_op.lookup``) load them all.

Loading a family declares its ops (``_op.declare``) and installs their methods and functions as
``import ext`` installs the core's. ``_lazy_names.py`` is written by ``tools/stubs.py`` from the
fully loaded registry (tests/test_stubs.py checks that it is current).
"""

from __future__ import annotations

import importlib

from .._tensor import Tensor
from . import _op
from ._lazy_names import FUNCTIONS, METHODS

# The families, as modules of ext.functions.builtin.
FAMILIES = ("arrange", "copies", "index_ops", "linalg_decomp", "linalg_solve", "sampling",
            "special", "statistics", "pointwise.binary", "pointwise.elementary")

_loaded: set = set()
_installed = [0]  # (how many registry entries are installed)
_target: list = []  # (the ext package's globals, once installed)


class _LazyMethod:
    """A Tensor method whose family has not loaded yet: reading it loads the family, which
    puts the real method in its place."""

    __slots__ = ("name", "family")

    def __init__(self, name: str, family: str) -> None:
        self.name, self.family = name, family

    def __get__(self, obj, cls=None):
        load(self.family)
        real = Tensor.__dict__[self.name]
        if type(real) is _LazyMethod:  # (a stale table: the family does not give the name)
            delattr(Tensor, self.name)
            raise AttributeError(f"'Tensor' object has no attribute '{self.name}'")
        return real.__get__(obj, cls)


def install(namespace: dict) -> None:
    """Install the loaded ops' methods and functions, and stand-ins for the families' methods
    (``namespace``: the ext package's globals, which later loads update)."""
    _target[:] = [namespace]
    for name, family in METHODS.items():
        if name not in Tensor.__dict__:
            setattr(Tensor, name, _LazyMethod(name, family))
    _install_new()


def _install_new() -> None:
    ops = _op.loaded()[_installed[0]:]
    _installed[0] += len(ops)
    for name, fn in _op.methods(ops).items():
        setattr(Tensor, name, fn)
    if _target:
        _target[0].update(_op.functions(ops))


def load(family: str) -> None:
    """Import ``family`` (declaring its ops) and install its names."""
    if family in _loaded:
        return
    _loaded.add(family)
    importlib.import_module(f"{__package__}.builtin.{family}")
    _install_new()


def load_all() -> None:
    """Load every family (the whole registry: for tools, contracts and ``ext.ops.aten``)."""
    for family in FAMILIES:
        load(family)


def owners() -> dict:
    """{"functions": {name: family}, "methods": {name: family}} of every family's ops, from the
    module that declared each (for tools/stubs.py, which writes ``_lazy_names.py``)."""
    load_all()
    prefix = f"{__package__}.builtin."
    out: dict = {"functions": {}, "methods": {}}
    for op in _op.loaded():
        family = op.module[len(prefix):] if op.module.startswith(prefix) else ""
        if family in FAMILIES:
            out["functions"].update(dict.fromkeys(_op.functions((op,)), family))
            out["methods"].update(dict.fromkeys(_op.methods((op,)), family))
    return out


def family_of(name: str) -> str | None:
    """The family that gives ``ext.<name>``, if one does."""
    return FUNCTIONS.get(name)
