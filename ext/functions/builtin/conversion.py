"""Factories beyond the core ones (empty_strided, empty_permuted, scalar_tensor, logspace) and
the Tensor method ``new_empty_strided``: no derivative of their own, declared so that the
registry (the one table of methods and functions) lists them."""

from __future__ import annotations

from ... import _factories
from ..._tensor import Tensor
from .._op import declare

__all__ = ["new_empty_strided"]


def new_empty_strided(self: Tensor, size, stride, *, dtype=None, layout=None, device=None,
                      requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """``ext.empty_strided(size, stride)`` with this tensor's dtype (unless ``dtype`` is
    given)."""
    return _factories.empty_strided(size, stride, dtype=self.dtype if dtype is None else dtype,
                                    layout=layout, device=device, requires_grad=requires_grad)


declare("new_empty_strided", function=new_empty_strided, functions=())
for _fn in (_factories.empty_strided, _factories.empty_permuted, _factories.scalar_tensor,
            _factories.logspace):
    declare(_fn.__name__, function=_fn, methods=())
