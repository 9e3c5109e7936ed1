"""Activation modules: ReLU, Sigmoid, Tanh, GELU, SiLU and Softmax."""

from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["ReLU", "Sigmoid", "Tanh", "GELU", "SiLU", "Softmax"]


class ReLU(Module):
    """max(x, 0) elementwise (``inplace`` overwrites the input)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        """relu(input)."""
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        """``inplace=True`` when set."""
        return "inplace=True" if self.inplace else ""


class Sigmoid(Module):
    """1 / (1 + exp(-x)) elementwise."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """sigmoid(input)."""
        return input.sigmoid()


class Tanh(Module):
    """The hyperbolic tangent, elementwise."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """tanh(input)."""
        return input.tanh()


class GELU(Module):
    """x Φ(x) elementwise, or its tanh approximation (``approximate='tanh'``)."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """gelu(input)."""
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        """``approximate='none'``."""
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x σ(x) elementwise (``inplace`` overwrites the input)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """silu(input)."""
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        """``inplace=True`` when set."""
        return "inplace=True" if self.inplace else ""


class Softmax(Module):
    """exp(x) normalized to sum 1 along ``dim``."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """softmax(input, dim)."""
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        """``dim=1``."""
        return f"dim={self.dim}"
