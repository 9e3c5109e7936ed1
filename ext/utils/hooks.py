"""RemovableHandle: what registering a hook returns, to take the hook away again."""

from __future__ import annotations

import itertools
import weakref
from typing import Any

__all__ = ["RemovableHandle"]

_ids = itertools.count()


class RemovableHandle:
    """Removes a hook from the dict it was registered in (``handle.remove()`` or ``with``)."""

    def __init__(self, hooks_dict: dict) -> None:
        # Weak: a handle kept by the user must not keep the graph's hook table alive.
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(_ids)

    def remove(self) -> None:
        """Remove the hook (a second call does nothing)."""
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None:
            hooks_dict.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"<ext.utils.hooks.RemovableHandle object at {hex(id(self))}>"


class _HookDict(dict):
    """A dict of hooks by handle id (dicts need a subclass to be weakly referenced)."""

    __slots__ = ("__weakref__",)


def add_hook(hooks_dict: dict, hook) -> RemovableHandle:
    """Add ``hook`` to ``hooks_dict`` and return the handle that removes it."""
    handle = RemovableHandle(hooks_dict)
    hooks_dict[handle.id] = hook
    return handle


def hook_dict() -> dict:
    """A new, weakly referenceable dict for hooks."""
    return _HookDict()
