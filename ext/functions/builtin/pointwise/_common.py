"""What the elementwise ops share: operand checks, broadcasting errors and the one-input fast
path."""

from __future__ import annotations

import numpy as np

from ...._args import not_a_tensor
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


