"""RemovableHandle: what registering a hook returns, to take the hook away again (torch's
module path; the class lives with the graph's hooks in ``ext.autograd.graph``)."""

from __future__ import annotations

from ..autograd.graph import RemovableHandle

__all__ = ["RemovableHandle"]
