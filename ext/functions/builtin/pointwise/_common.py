"""What the elementwise ops share: operand checks, broadcasting errors and the one-input fast
path."""

from __future__ import annotations

import numpy as np

from ...._args import not_a_tensor
from ...._dtype import FROM_NUMPY
from ...._tensor import Tensor
from .._builtin import binary_operands


def operands(a, b, name: str):
    if type(a) is not Tensor:
        raise not_a_tensor(a, name)
    ops = binary_operands(a, b)
    if ops is None:
        raise not_a_tensor(b, name, "other", 2)
    return ops


def broadcast_error(a: np.ndarray, b) -> RuntimeError:
    bs = np.shape(b)
    for i in range(1, max(a.ndim, len(bs)) + 1):
        sa = a.shape[-i] if i <= a.ndim else 1
        sb = bs[-i] if i <= len(bs) else 1
        if sa != sb and sa != 1 and sb != 1:
            dim = max(a.ndim, len(bs)) - i
            return RuntimeError(f"The size of tensor a ({sa}) must match the size of tensor b "
                                f"({sb}) at non-singleton dimension {dim}")
    return RuntimeError("operands could not be broadcast together")


def apply(kernel, ad, bd) -> np.ndarray:
    try:
        return kernel(ad, bd)
    except ValueError:
        raise broadcast_error(ad, bd) from None



def quiet(kernel):
    def run(d):
        with np.errstate(divide="ignore", invalid="ignore"):
            return kernel(d)

    return run


def refuse_uncastable(a: Tensor, b) -> None:
    """torch's check for ``a op= b`` into an integer or bool tensor ``a``: a floating operand
    gives a floating result, which cannot be written back. It comes before the kernel's own
    refusals (a float operand of ``&`` or ``<<``)."""
    ops = binary_operands(a, b) if type(b) in (Tensor, bool, int, float) else None
    if ops is not None and ops[0].dtype.kind == "f" and a._data.dtype.kind != "f":
        raise RuntimeError(f"result type {FROM_NUMPY[ops[0].dtype]._short} can't be cast to the "
                           f"desired output type {FROM_NUMPY[a._data.dtype]._short}")


def augmented_operator(symbol: str, inplace: str, into):
    """The augmented operator ``x <symbol>= y`` (``__iand__``): it writes into ``x`` as the
    in-place method ``inplace`` does (``into`` is that method's op), so that x's views and other
    references see the new values; NotImplemented for an operand it does not take."""
    def method(self: Tensor, other):
        from ..inplace import apply_inplace  # (it loads after the ops)

        if not isinstance(other, (Tensor, int, float, np.generic)):
            return NotImplemented
        return apply_inplace(self, into, other)

    method.__doc__ = f"``x {symbol}= y``: writes into ``x``, as ``{inplace}`` does."
    return method
