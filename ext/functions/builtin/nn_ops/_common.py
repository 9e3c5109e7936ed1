"""Checks shared by the ``nn_ops`` modules."""

from __future__ import annotations

import numpy as np

from ...._args import not_a_tensor
from ...._dtype import FROM_NUMPY
from ...._tensor import Tensor


def check_tensor(x, fn: str, arg: str = "input", position: int = 1) -> None:
    """torch's TypeError for a non-tensor argument."""
    if type(x) is not Tensor:
        raise not_a_tensor(x, fn, arg, position)


def float_kernel(d: np.ndarray, kernel: str) -> None:
    """torch's NotImplementedError for a kernel that takes floating dtypes only."""
    if d.dtype.kind not in "fV":  # ("V": bfloat16)
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{FROM_NUMPY[d.dtype]._short}'")

