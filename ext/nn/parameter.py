"""``ext.nn.Parameter``: a tensor that a Module registers as one of its parameters.

torch makes Parameter a Tensor subclass. ext's ops take their fast path on ``type(x) is Tensor``,
so a subclass would have to be unwrapped by every op; instead ``Parameter(data)`` returns a
plain ``ext.Tensor`` (a leaf sharing ``data``'s storage and version counter, requiring grad)
and remembers it, weakly, as a parameter. ``isinstance(p, ext.nn.Parameter)`` asks that
registry, so it is True exactly for tensors made by ``Parameter``; the results of ops on a
parameter are ordinary tensors and are never in it.
"""

from __future__ import annotations

from .._dtype import FROM_NUMPY
from .._factories import empty
from .._tensor import Tensor

__all__ = ["Parameter", "is_parameter"]

def is_parameter(obj: object) -> bool:
    """Whether ``obj`` is a tensor made by ``Parameter``."""
    return type(obj) is Tensor and getattr(obj, "_is_param", False)


def mark_parameter(t: Tensor) -> Tensor:
    """Mark ``t`` as a parameter (what ``Parameter`` does once it has made the tensor)."""
    t._is_param = True
    return t


class _ParameterMeta(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return is_parameter(obj)


class Parameter(metaclass=_ParameterMeta):
    """A tensor registered as a module parameter when assigned to a Module attribute.

    ``Parameter(data, requires_grad=True)`` returns a leaf ``ext.Tensor`` over ``data``'s
    values (no copy: they share storage and version counter) that requires grad by default.
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Tensor:
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): data must be a Tensor, not {type(data).__name__}")
        if requires_grad and not FROM_NUMPY[data._data.dtype].is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t = data.detach()
        t._requires_grad = bool(requires_grad)
        return mark_parameter(t)
