"""``Dropout``: zero random elements while training, the identity in evaluation mode."""

from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["Dropout"]


class Dropout(Module):
    """During training, zero each element with probability ``p`` (mask drawn from ext's
    generator) and scale the rest by 1 / (1 - p); after ``eval()``, return the input."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        """dropout(input, p, training)."""
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        """``p=0.5, inplace=False``."""
        return f"p={self.p}, inplace={self.inplace}"
