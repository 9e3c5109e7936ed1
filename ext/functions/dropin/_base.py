"""What the drop-in pack's ops share: the contract each declares, and the argument checks that
run before any work."""

from __future__ import annotations

from ...autograd.function import Function

__all__ = ["PackFunction", "CONTRACT_FIELDS", "documented", "floating", "same_shape"]

# The fields of an op's contract, in the order the generated table shows them.
CONTRACT_FIELDS = (
    "reference",        # the native op or composite it is checked against
    "double_backward",  # "exact", "zero almost everywhere" or "raises"
    "boundary",         # the gradient at kinks and bounds
    "nan_inf",          # what nan and inf inputs give
    "autocast",         # "ambient" (computes in the input's dtype) or the dtype it casts to
    "output",           # "fresh" or "view"
    "saves",            # what backward keeps, against the native op
)


class PackFunction(Function):
    """A Function of the drop-in pack: a user Function (node ``<Name>Backward``) that runs on ext
    and torch tensors, with its contract as class attributes (``CONTRACT_FIELDS``)."""

    reference = ""
    double_backward = "exact"
    boundary = "-"
    nan_inf = "propagates nan"
    autocast = "ambient"
    output = "fresh"
    saves = ""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        # the contract, written into the docstring that help() and editors show
        cls.__doc__ = (cls.__doc__ or "").rstrip() + "\n\nContract:\n" + "\n".join(
            f"    {f.replace('_', ' ')}: {getattr(cls, f)}" for f in CONTRACT_FIELDS)

    @classmethod
    def contract(cls) -> dict:
        """The op's contract, field by field."""
        return {f: getattr(cls, f) for f in CONTRACT_FIELDS}


def documented(cls: type):
    """Give a pack function its Function's contract at the end of its docstring."""
    def decorate(fn):
        fn.__doc__ = (fn.__doc__ or "").rstrip() + "\n\n" + cls.__doc__[
            cls.__doc__.index("Contract:"):]
        return fn
    return decorate


def floating(op: str, name: str, x) -> None:
    """Refuse a non-tensor or an integer/bool tensor for a floating-point op's argument."""
    dtype = getattr(x, "dtype", None)
    if dtype is None or not hasattr(x, "is_floating_point"):
        raise TypeError(f"{op}(): argument '{name}' must be a tensor, not {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{op}(): argument '{name}' must be a floating-point tensor, got "
                        f"{str(dtype).rsplit('.', 1)[-1]}")


def same_shape(op: str, a, b, names: tuple = ("a", "b")) -> None:
    """Refuse two halves of a gated unit that differ in shape."""
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"{op}(): arguments '{names[0]}' and '{names[1]}' must have the same "
                         f"shape, got {list(a.shape)} and {list(b.shape)}")
