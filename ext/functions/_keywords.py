"""Keyword spellings of the ``ext.*`` functions as torch's: ``input=`` for the first argument,
NumPy's ``axis=`` and ``keepdims=`` beside ``dim=`` and ``keepdim=``, and ``out=``.

Each declared op's function names its parameters for its own body (``x``, ``other``); the
free functions ``ext.*`` are wrapped once, when the registry is installed, by ``free``: a call
without keywords goes straight through, one with keywords is translated here.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable

import numpy as np

from .._dtype import FROM_NUMPY
from .._state import STATE
from .._tensor import Tensor, bump_version

# NumPy's names that torch's functions accept for their own.
_ALIASES = {"axis": "dim", "keepdims": "keepdim"}


@functools.cache
def _parameters(fn: Callable) -> tuple:
    """(the names of fn's parameters, the name of its first, whether it takes **kwargs)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return frozenset(), None, True
    names = tuple(params)
    first = names[0] if names and params[names[0]].kind in (
        inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.VAR_POSITIONAL) else None
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return frozenset(names), first, var_kw


def free(fn: Callable, name: str) -> Callable:
    """``ext.<name>``: ``fn`` taking torch's keyword spellings and ``out=``."""
    def function(*args, **kwargs):
        if kwargs:
            return _call(fn, name, args, kwargs)
        return fn(*args)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = fn.__doc__
    function.__wrapped__ = fn  # (its signature, for help() and the stubs)
    function.__module__ = "ext"
    return function


def _call(fn: Callable, name: str, args: tuple, kwargs: dict):
    names, first, var_kw = _parameters(fn)
    out = kwargs.pop("out", None) if "out" not in names else None
    for alias, own in _ALIASES.items():
        if alias in kwargs and alias not in names and own not in kwargs:
            kwargs[own] = kwargs.pop(alias)
    if "input" in kwargs and "input" not in names and not var_kw and first is not None:
        if args:
            raise TypeError(f"{name}() got multiple values for argument 'input'")
        args = (kwargs.pop("input"),)
    if "other" in kwargs and "other" not in names and not var_kw and len(args) == 1:
        args = (*args, kwargs.pop("other"))
    if out is None:
        return fn(*args, **kwargs)
    _check_out(name, out, args, kwargs)
    if "dtype" in names and kwargs.get("dtype") is None and type(out) is Tensor:
        kwargs["dtype"] = FROM_NUMPY[out._data.dtype]  # (a factory makes out's dtype)
    return write_out(name, out, fn(*args, **kwargs))


def _requires_grad(value) -> bool:
    if type(value) is Tensor:
        return value._requires_grad
    if isinstance(value, (list, tuple)):
        return any(_requires_grad(v) for v in value)
    return False


def _check_out(name: str, out, args: tuple, kwargs: dict) -> None:
    """torch's refusals of an ``out=`` before the op runs: nothing is written."""
    outs = out if isinstance(out, (list, tuple)) else (out,)
    for o in outs:
        if type(o) is not Tensor:
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(o).__name__}")
    if STATE.grad_enabled and (_requires_grad(args) or _requires_grad(tuple(kwargs.values()))
                               or any(o._requires_grad for o in outs)):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")


def write_out(name: str, out, result):
    """Write ``result`` (a tensor, or a tuple of them for ``out=(values, indices)``) into
    ``out``, as torch's out= does: a cast to out's dtype when the result's kind allows it, a
    resize (with torch's warning when out had elements) when the shapes differ; returns
    ``out``."""
    if isinstance(result, tuple):
        if not isinstance(out, (list, tuple)) or len(out) != len(result):
            raise TypeError(f"{name}(): argument 'out' must be tuple of {len(result)} Tensors")
        for o, r in zip(out, result):
            write_out(name, o, r)
        return type(result)(*out) if hasattr(result, "_fields") else tuple(out)
    rd, od = np.asarray(result._data), out._data
    rt, ot = FROM_NUMPY[rd.dtype], FROM_NUMPY[od.dtype]
    if rt._category > ot._category:
        raise RuntimeError(f"result type {rt._short} can't be cast to the desired output type "
                           f"{ot._short}")
    if any(st == 0 and n > 1 for st, n in zip(od.strides, od.shape)):  # (an expand)
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the "
                           "tensor before performing the operation.")
    if od.shape == rd.shape and od.flags.writeable:
        np.copyto(od, rd, casting="unsafe")
    else:
        if od.size:
            shape = list(od.shape)
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{shape}, which does not match the required output shape "
                          f"{list(rd.shape)}. This behavior is deprecated, and in a future "
                          "PyTorch release outputs will not be resized unless they have zero "
                          "elements. You can explicitly reuse an out tensor t by resizing it, "
                          "inplace, to zero elements with t.resize_(0).", UserWarning,
                          stacklevel=4)  # (the caller of ext.<name>)
        out._data = rd.astype(od.dtype, copy=True)
    bump_version(out)
    return out
