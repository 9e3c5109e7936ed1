"""torch.special's orthogonal polynomials P_n(x): Chebyshev (and shifted Chebyshev), Hermite,
Laguerre, Legendre. torch does not differentiate them.

Each is evaluated as torch evaluates it, so that the values at large n and outside [-1, 1]
agree: n is truncated to an integer (0 for n < 0), a few closed forms at the ends of the
interval, the trigonometric form inside it for large n, and the three-term recurrence in the
input's dtype otherwise.
"""

from __future__ import annotations

import numpy as np

from ..._tensor import wrap
from .._op import declare

# name -> function, for ext.special (special.py adds them to its SPECIAL).
POLYNOMIALS: dict = {}


def _evaluate(n: np.ndarray, cases: list, p1, step) -> np.ndarray:
    """P_n elementwise: the first of ``cases`` ((mask, value), in torch's order) whose mask
    holds, else the recurrence from P_0 = 1 and P_1 = ``p1``, ``step(k, P_(k-1), P_k)`` giving
    P_(k+1)."""
    shape = n.shape
    out = np.zeros(shape)
    handled = np.zeros(shape, bool)
    for mask, value in cases:
        now = mask & ~handled
        out = np.where(now, value, out)
        handled |= now
    rest = ~handled
    if rest.any():
        one = np.ones_like(p1)
        res = np.where(n == 0, one, p1)
        p, q = one, p1
        for k in range(1, int(n[rest].max())):
            p, q = q, step(k, p, q)
            res = np.where(n == k + 1, q, res)
        out = np.where(rest, res, out)
    return out


def fms(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b - c rounded once, as torch's compiled float32 kernels give it (a fused
    multiply-add); in float64 the product is exact, so one rounding to float32 remains."""
    if a.dtype != np.float32:
        return a * b - c
    f64 = np.float64
    return (a.astype(f64) * b.astype(f64) - c.astype(f64)).astype(np.float32)


def _parity(n: np.ndarray, even, odd):
    return np.where(n % 2 == 0, even, odd)


def _chebyshev_t(x, n):
    m = n.astype(x.dtype)  # (torch's trigonometric forms multiply in x's dtype)
    ax = np.abs(x)
    return _evaluate(n, [(n < 0, 0), (ax == 1, np.where(x > 0, 1, _parity(n, 1, -1))),
                         ((n > 6) & (ax < 1), np.cos(m * np.arccos(x)))],
                     x, lambda k, p, q: fms(x + x, q, p))


def _chebyshev_u(x, n):
    m = n.astype(x.dtype)  # (torch's trigonometric forms multiply in x's dtype)
    ax = np.abs(x)
    t = np.arccos(x)
    s = np.sin(t)
    inside = np.where(s != 0, np.sin((m + 1) * t) / s, (m + 1) * np.cos((m + 1) * t) / x)
    return _evaluate(n, [(n < 0, 0), (ax == 1, np.where(x > 0, n + 1, _parity(n, n + 1,
                                                                              -(n + 1)))),
                         ((n > 8) & (ax < 1), inside)],
                     x + x, lambda k, p, q: fms(x + x, q, p))


def _chebyshev_v(x, n):
    m = n.astype(x.dtype)  # (torch's trigonometric forms multiply in x's dtype)
    ax = np.abs(x)
    t = np.arccos(x)
    odd_end = _parity(n, n + n + 1, -(n + n + 1))
    inside = np.where(np.sin(t / 2) != 1, np.cos((m + 0.5) * t) / np.cos(t / 2), odd_end)
    return _evaluate(n, [(n < 0, 0), (ax == 1, np.where(x > 0, 1, odd_end)),
                         ((n > 8) & (ax < 1), inside)],
                     x + x - 1, lambda k, p, q: fms(x + x, q, p))


def _chebyshev_w(x, n):
    m = n.astype(x.dtype)  # (torch's trigonometric forms multiply in x's dtype)
    ax = np.abs(x)
    t = np.arccos(x)
    end = np.where(x > 0, n + n + 1, _parity(n, 1, -1))
    inside = np.where(np.cos(t / 2) != 1, np.sin((m + 0.5) * t) / np.sin(t / 2), end)
    return _evaluate(n, [(n < 0, 0), (ax == 1, end), ((n > 8) & (ax < 1), inside)],
                     x + x + 1, lambda k, p, q: fms(x + x, q, p))


def _shifted_t(x, n):
    m = n.astype(x.dtype)  # (torch's trigonometric forms multiply in x's dtype)
    y = x + x - 1
    return _evaluate(n, [(n < 0, 0), (x == 1, 1), (x == 0, _parity(n, 1, -1)),
                         ((n > 6) & (np.abs(y) < 1), np.cos(m * np.arccos(y)))],
                     y, lambda k, p, q: fms(y + y, q, p))


def _shifted_u(x, n):
    m = n.astype(x.dtype)  # (torch's trigonometric forms multiply in x's dtype)
    y = x + x - 1
    t = np.arccos(y)
    s = np.sin(t)
    inside = np.where(s != 0, np.sin((m + 1) * t) / s, (m + 1) * np.cos((m + 1) * t) / y)
    return _evaluate(n, [(n < 0, 0), (x == 1, n + 1), (x == 0, _parity(n, n + 1, -(n + 1))),
                         ((n > 6) & (np.abs(y) < 1), inside)],
                     y + y, lambda k, p, q: fms(y + y, q, p))


def _shifted_v(x, n):
    m = n.astype(x.dtype)  # (torch's trigonometric forms multiply in x's dtype)
    y = x + x - 1
    t = np.arccos(y)
    end = _parity(n, n + n + 1, -(n + n + 1))
    inside = np.where(np.sin(t / 2) != 1, np.cos((m + 0.5) * t) / np.cos(t / 2), end)
    return _evaluate(n, [(n < 0, 0), (x == 1, 1), (x == 0, end),
                         ((n > 6) & (np.abs(y) < 1), inside)],
                     y + y - 1, lambda k, p, q: fms(y + y, q, p))


def _shifted_w(x, n):
    m = n.astype(x.dtype)  # (torch's trigonometric forms multiply in x's dtype)
    y = x + x - 1
    t = np.arccos(y)
    end = _parity(n, 1, -1)
    inside = np.where(np.cos(t / 2) != 1, np.sin((m + 0.5) * t) / np.sin(t / 2), end)
    return _evaluate(n, [(n < 0, 0), (x == 1, n + n + 1), (x == 0, end),
                         ((n > 4) & (np.abs(y) < 1), inside)],
                     y + y + 1, lambda k, p, q: fms(y + y, q, p))


def _hermite_limit(x, n):
    """torch gives nan past a degree that depends on the dtype."""
    return n > (128 if x.dtype == np.float32 else 512)


def _hermite_h(x, n):
    cases = [(n < 0, 0), (n == 0, 1), (n == 1, x + x), (_hermite_limit(x, n), np.nan)]
    return _evaluate(n, cases, x + x, lambda k, p, q: fms(x + x, q, (k + k) * p))


def _hermite_he(x, n):
    cases = [(n < 0, 0), (n == 0, 1), (n == 1, x), (_hermite_limit(x, n), np.nan)]
    return _evaluate(n, cases, x, lambda k, p, q: fms(x, q, k * p))


def _laguerre_l(x, n):
    return _evaluate(n, [(n < 0, 0), (np.abs(x) == 0, 1)], 1 - x,
                     lambda k, p, q: fms((k + k) + (1 - x), q, k * p) / (k + 1))


def _legendre_p(x, n):
    return _evaluate(n, [(n < 0, 0), (np.abs(x) == 1, np.where(x > 0, 1, _parity(n, 1, -1)))],
                     x, lambda k, p, q: fms((k + k + 1) * x, q, k * p) / (k + 1))


def _polynomial(name: str, kernel, doc: str):
    """torch.special.<name>(input, n): one of input and n may be a number."""
    def function(input, n):
        from .special import binary_floating

        xd, nd, dt = binary_floating(input, n, f"special_{name}")
        x = np.asarray(xd, dt)
        with np.errstate(all="ignore"):
            # (torch truncates n to an integer; nan and inf become the most negative one)
            k = np.asarray(nd, dt).astype(np.int64)
            x, k = np.broadcast_arrays(x, k)
            out = kernel(x, k)
        return wrap(np.asarray(out, dt))

    function.__doc__ = doc
    POLYNOMIALS[name] = declare(f"special_{name}", function=function, methods=(), functions=())


for _name, _kernel, _doc in (
        ("chebyshev_polynomial_t", _chebyshev_t, "The Chebyshev polynomial of the first kind."),
        ("chebyshev_polynomial_u", _chebyshev_u, "The Chebyshev polynomial of the second kind."),
        ("chebyshev_polynomial_v", _chebyshev_v, "The Chebyshev polynomial of the third kind."),
        ("chebyshev_polynomial_w", _chebyshev_w, "The Chebyshev polynomial of the fourth kind."),
        ("shifted_chebyshev_polynomial_t", _shifted_t,
         "The Chebyshev polynomial of the first kind on [0, 1]."),
        ("shifted_chebyshev_polynomial_u", _shifted_u,
         "The Chebyshev polynomial of the second kind on [0, 1]."),
        ("shifted_chebyshev_polynomial_v", _shifted_v,
         "The Chebyshev polynomial of the third kind on [0, 1]."),
        ("shifted_chebyshev_polynomial_w", _shifted_w,
         "The Chebyshev polynomial of the fourth kind on [0, 1]."),
        ("hermite_polynomial_h", _hermite_h, "The physicists' Hermite polynomial."),
        ("hermite_polynomial_he", _hermite_he, "The probabilists' Hermite polynomial."),
        ("laguerre_polynomial_l", _laguerre_l, "The Laguerre polynomial."),
        ("legendre_polynomial_p", _legendre_p, "The Legendre polynomial."),
):
    _polynomial(_name, _kernel, _doc)
