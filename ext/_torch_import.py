"""Run a callback once torch is imported, without importing it: at once if it already is, else
when the first ``import torch`` finishes (a finder on ``sys.meta_path`` that wraps torch's loader
and steps aside once torch is imported).

``ext`` loads its torch bridge this way (``ext.compat``), so that the bridge is ready before any
torch code, compiled or not, calls an ext Function.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["after_torch_import"]


def after_torch_import(callback: Callable[[], None]) -> None:
    """Call ``callback()`` now if torch is imported, else right after torch's import."""
    if "torch" in sys.modules:
        _guarded(callback)
    else:
        sys.meta_path.insert(0, _Watcher(callback))


def _guarded(callback: Callable[[], None]) -> None:
    # A failure here must not fail `import torch`: the bridge then loads at its first call,
    # where the same error is raised with the call that needed it.
    try:
        callback()
    except Exception as e:
        warnings.warn(f"ext could not prepare its torch bridge when torch was imported ({e}); "
                      "it will be loaded at the first call on torch tensors", stacklevel=3)


class _Watcher(importlib.abc.MetaPathFinder):
    """Finds nothing itself: hands out torch's own spec with a loader that calls back once
    torch's module has run, and leaves ``sys.meta_path`` then. (A mere ``find_spec("torch")``,
    as libraries ask whether torch is installed, imports nothing and keeps it watching.)"""

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.asking = threading.local()  # (set while it asks the other finders itself)

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "torch" or getattr(self.asking, "now", False):
            return None
        self.asking.now = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.asking.now = False
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenCall(spec.loader, self)
        return spec


class _ThenCall(importlib.abc.Loader):
    """torch's loader, and the watcher's callback once its module has run."""

    def __init__(self, loader: Any, watcher: _Watcher) -> None:
        self.loader, self.watcher = loader, watcher

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        module.__loader__ = module.__spec__.loader = self.loader  # (torch's own, as without us)
        if self.watcher in sys.meta_path:
            sys.meta_path.remove(self.watcher)
            _guarded(self.watcher.callback)
