"""``ext.signal.windows``: torch.signal.windows's window functions.

Each window is a few elementwise ops over a ``linspace``, computed in the requested dtype as
torch computes it (the same ops in the same order give the same values), so that a window
built with ``requires_grad=True`` has the same graph as torch's.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import ext
from ext import Tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _checks(name: str, M: int, dtype, layout) -> None:
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not ext.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (ext.float32, ext.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")


def _prepare(name: str, M: int, dtype, layout):
    dtype = ext.get_default_dtype() if dtype is None else dtype
    _checks(name, M, dtype, layout)
    return dtype


def _span(M: int, sym: bool) -> int:
    """The denominator of a window's period: M - 1 when symmetric, else M (periodic)."""
    return M if not sym and M > 1 else M - 1


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype=None, layout=ext.strided, device=None,
                requires_grad: bool = False) -> Tensor:
    """exp(-|n - center| / tau) for n in 0..M-1."""
    dtype = _prepare("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return ext.empty((0,), dtype=dtype, requires_grad=requires_grad)
    center = _span(M, sym) / 2.0 if center is None else center
    scale = 1 / tau
    k = ext.linspace(-center * scale, (-center + (M - 1)) * scale, M, dtype=dtype,
                     requires_grad=requires_grad)
    return ext.exp(-ext.abs(k))


def cosine(M: int, *, sym: bool = True, dtype=None, layout=ext.strided, device=None,
           requires_grad: bool = False) -> Tensor:
    """sin(pi (n + 1/2) / M) (the sine window)."""
    dtype = _prepare("cosine", M, dtype, layout)
    if M == 0:
        return ext.empty((0,), dtype=dtype, requires_grad=requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    k = ext.linspace(0.5 * step, (0.5 + (M - 1)) * step, M, dtype=dtype,
                     requires_grad=requires_grad)
    return ext.sin(k)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=ext.strided,
             device=None, requires_grad: bool = False) -> Tensor:
    """exp(-(n - (M-1)/2)² / (2 std²))."""
    dtype = _prepare("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return ext.empty((0,), dtype=dtype, requires_grad=requires_grad)
    start = -_span(M, sym) / 2.0
    scale = 1 / (std * math.sqrt(2))
    k = ext.linspace(start * scale, (start + (M - 1)) * scale, M, dtype=dtype,
                     requires_grad=requires_grad)
    return ext.exp(-(k**2))


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=ext.strided,
           device=None, requires_grad: bool = False) -> Tensor:
    """I0(beta sqrt(1 - (2n/(M-1) - 1)²)) / I0(beta)."""
    dtype = _prepare("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M == 0:
        return ext.empty((0,), dtype=dtype, requires_grad=requires_grad)
    if M == 1:
        return ext.ones((1,), dtype=dtype, requires_grad=requires_grad)
    b = ext.tensor(beta, dtype=dtype)  # (in the window's dtype, so that beta² - k² stays >= 0)
    step = 2.0 * b / (M if not sym else M - 1)
    end = ext.minimum(b, -b + (M - 1) * step)
    k = ext.linspace(-b, end, M, dtype=dtype, requires_grad=requires_grad)
    return ext.i0(ext.sqrt(b * b - ext.pow(k, 2))) / ext.i0(b)


def general_cosine(M: int, *, a: Iterable, sym: bool = True, dtype=None, layout=ext.strided,
                   device=None, requires_grad: bool = False) -> Tensor:
    """sum_i (-1)^i a_i cos(2 pi i n / (M-1))."""
    dtype = _prepare("general_cosine", M, dtype, layout)
    if M == 0:
        return ext.empty((0,), dtype=dtype, requires_grad=requires_grad)
    if M == 1:
        return ext.ones((1,), dtype=dtype, requires_grad=requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    step = 2 * math.pi / (M if not sym else M - 1)
    k = ext.linspace(0, (M - 1) * step, M, dtype=dtype, requires_grad=requires_grad)
    coefficients = ext.tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype,
                              requires_grad=requires_grad)
    i = ext.arange(coefficients.shape[0], dtype=dtype, requires_grad=requires_grad)
    return (coefficients.unsqueeze(-1) * ext.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype=None,
                    layout=ext.strided, device=None, requires_grad: bool = False) -> Tensor:
    """alpha - (1 - alpha) cos(2 pi n / (M-1))."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=ext.strided, device=None,
            requires_grad: bool = False) -> Tensor:
    """The Hamming window: general_hamming with alpha 0.54."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=ext.strided, device=None,
         requires_grad: bool = False) -> Tensor:
    """The Hann window: general_hamming with alpha 0.5."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=ext.strided, device=None,
             requires_grad: bool = False) -> Tensor:
    """The triangular window 1 - |2n/(M-1) - 1|."""
    dtype = _prepare("bartlett", M, dtype, layout)
    if M == 0:
        return ext.empty((0,), dtype=dtype, requires_grad=requires_grad)
    if M == 1:
        return ext.ones((1,), dtype=dtype, requires_grad=requires_grad)
    step = 2 / (M if not sym else M - 1)
    k = ext.linspace(-1, -1 + (M - 1) * step, M, dtype=dtype, requires_grad=requires_grad)
    return 1 - ext.abs(k)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=ext.strided, device=None,
             requires_grad: bool = False) -> Tensor:
    """The Blackman window: general_cosine with (0.42, 0.5, 0.08)."""
    dtype = _prepare("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=ext.strided, device=None,
            requires_grad: bool = False) -> Tensor:
    """The Nuttall window: general_cosine with four terms."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)
