"""Tensor methods that make new tensors like an existing one (new_zeros, new_ones, ...) and
conversions between tensors (type_as)."""

from __future__ import annotations

import numpy as np

from ... import _factories
from ..._tensor import Tensor
from .._op import declare
from .shape import to

__all__ = ["new_zeros", "new_ones", "new_full", "new_empty", "new_tensor", "type_as"]


def _dtype_of(self: Tensor, dtype):
    return self.dtype if dtype is None else dtype


def new_zeros(self: Tensor, *size, dtype=None, device=None,
              requires_grad: bool = False) -> Tensor:
    """Zeros of ``size`` with this tensor's dtype (unless ``dtype`` is given)."""
    return _factories.constant(np.zeros, size, _dtype_of(self, dtype), device, requires_grad,
                               "new_zeros")


def new_ones(self: Tensor, *size, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """Ones of ``size`` with this tensor's dtype (unless ``dtype`` is given)."""
    return _factories.constant(np.ones, size, _dtype_of(self, dtype), device, requires_grad,
                               "new_ones")


def new_empty(self: Tensor, *size, dtype=None, device=None,
              requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor (zeros here) of ``size`` with this tensor's dtype."""
    return _factories.constant(np.zeros, size, _dtype_of(self, dtype), device, requires_grad,
                               "new_empty")


def new_full(self: Tensor, size, fill_value, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """``fill_value`` everywhere, with this tensor's dtype (unless ``dtype`` is given)."""
    return _factories.filled(size, fill_value, _dtype_of(self, dtype), device, requires_grad,
                             "new_full")


def new_tensor(self: Tensor, data, *, dtype=None, device=None,
               requires_grad: bool = False) -> Tensor:
    """A copy of ``data`` as a tensor with this tensor's dtype (unless ``dtype`` is given)."""
    if isinstance(data, Tensor):
        data = data.detach()._data
    return _factories.tensor(data, dtype=_dtype_of(self, dtype), requires_grad=requires_grad)


def type_as(self: Tensor, other: Tensor) -> Tensor:
    """This tensor converted to ``other``'s dtype."""
    return to(self, other.dtype)


# (Tensor methods only, with no derivative of their own: declared so that the registry, the
# one method table, lists them)
for _fn in (new_zeros, new_ones, new_empty, new_full, new_tensor, type_as):
    declare(_fn.__name__, function=_fn, functions=())
