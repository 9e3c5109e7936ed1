"""torch's CPU random stream in NumPy: the mt19937 engine, its state layout, and the samplers.

Each sampler draws the same 32- or 64-bit words, in the same order, as torch's CPU kernels and
turns them into numbers by the same arithmetic, rounded where torch rounds, so that a seeded
program gives the same values on ext as on torch. The words come from NumPy's MT19937 (the same
generator); the arithmetic is vectorised over the draws. Python loops remain only where torch's
own work is sequential (randperm's swaps), where fewer than 16 values are made (the scalar
normal sampler), and for the rare elements whose rounding NumPy's kernels may not share with the
C library or a fused multiply-add.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

DEFAULT_SEED = 67280421310721  # torch's seed for a generator nobody has seeded
_N = 624                       # words of mt19937 state
STATE_BYTES = 5056             # size of torch's CPU generator state tensor

# Byte offsets of torch's CPU generator state (a packed C struct; the rest is padding).
_SEED, _LEFT, _SEEDED, _NEXT, _WORDS = 0, 8, 12, 16, 24
_NORMAL_Y, _NORMAL_VALID = 5024, 5040
_FLOAT_NORMAL, _FLOAT_NORMAL_VALID = 5044, 5048

_LOW_53 = np.uint64((1 << 53) - 1)
_LOW_24 = np.uint64((1 << 24) - 1)


def _seed_words(seed: int) -> np.ndarray:
    """mt19937's initial state for ``seed`` (only its low 32 bits count, as in torch)."""
    words = [seed & 0xFFFFFFFF]
    for j in range(1, _N):
        prev = words[-1]
        words.append((1812433253 * (prev ^ (prev >> 30)) + j) & 0xFFFFFFFF)
    return np.array(words, np.uint32)


class CPUEngine:
    """The state of one torch CPU generator: mt19937 words, seed and the cached normal sample."""

    __slots__ = ("_bits", "initial_seed", "_next", "normal_cache", "float_normal_cache")

    def __init__(self, seed: int = DEFAULT_SEED) -> None:
        self._bits = np.random.MT19937()
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> None:
        """Restart from ``seed`` (an unsigned 64-bit value), dropping the cached normal."""
        self.initial_seed = seed
        self._set_words(_seed_words(seed), left=1, next_=0)
        self.normal_cache: float | None = None
        self.float_normal_cache: float | None = None

    def _set_words(self, words: np.ndarray, left: int, next_: int) -> None:
        # torch counts the words still to read (left); NumPy the position of the next one.
        state = {"key": words.astype(np.uint32), "pos": _N + 1 - left}
        self._bits.state = {"bit_generator": "MT19937", "state": state}
        self._next = next_  # torch's read index, kept only until the next draw

    def random32(self, n: int) -> np.ndarray:
        """``n`` 32-bit words (as uint64), torch's ``random()``."""
        self._next = None
        return self._bits.random_raw(n)

    def random64(self, n: int) -> np.ndarray:
        """``n`` 64-bit words, torch's ``random64()``: the first 32-bit draw is the high half."""
        words = self.random32(2 * n).reshape(n, 2)
        return (words[:, 0] << np.uint64(32)) | words[:, 1]

    def __deepcopy__(self, memo) -> CPUEngine:
        twin = CPUEngine.__new__(CPUEngine)
        twin._bits = np.random.MT19937()
        twin._bits.state = self._bits.state
        twin.initial_seed, twin._next = self.initial_seed, self._next
        twin.normal_cache, twin.float_normal_cache = self.normal_cache, self.float_normal_cache
        return twin

    def get_state(self) -> np.ndarray:
        """The state as torch lays it out: 5056 bytes of uint8."""
        state = self._bits.state["state"]
        out = np.zeros(STATE_BYTES, np.uint8)
        pos = int(state["pos"])
        _put(out, _SEED, np.uint64(self.initial_seed))
        _put(out, _LEFT, np.int32(_N + 1 - pos))
        _put(out, _SEEDED, np.int32(1))
        _put(out, _NEXT, np.uint64(pos if self._next is None else self._next))
        out[_WORDS:_WORDS + 8 * _N] = state["key"].astype(np.uint64).view(np.uint8)
        if self.normal_cache is not None:
            _put(out, _NORMAL_Y, np.float64(self.normal_cache))
            _put(out, _NORMAL_VALID, np.int32(1))
        if self.float_normal_cache is not None:
            _put(out, _FLOAT_NORMAL, np.float32(self.float_normal_cache))
            out[_FLOAT_NORMAL_VALID] = 1
        return out

    def set_state(self, data: np.ndarray) -> None:
        """Load a state laid out as :meth:`get_state` writes it, initial seed included."""
        left = int(_get(data, _LEFT, np.int32))
        if not 1 <= left <= _N:
            raise RuntimeError(f"The invalid state: left must be in [1, {_N}], got {left}")
        words = data[_WORDS:_WORDS + 8 * _N].view(np.uint64)
        self._set_words(words, left, int(_get(data, _NEXT, np.uint64)))
        self.initial_seed = int(_get(data, _SEED, np.uint64))
        valid = _get(data, _NORMAL_VALID, np.int32)
        self.normal_cache = float(_get(data, _NORMAL_Y, np.float64)) if valid else None
        valid = data[_FLOAT_NORMAL_VALID]
        self.float_normal_cache = float(_get(data, _FLOAT_NORMAL, np.float32)) if valid else None


def _put(out: np.ndarray, offset: int, value: np.generic) -> None:
    out[offset:offset + value.nbytes] = np.frombuffer(value.tobytes(), np.uint8)


def _get(data: np.ndarray, offset: int, kind) -> np.generic:
    size = np.dtype(kind).itemsize
    return np.frombuffer(data[offset:offset + size].tobytes(), kind)[0]


# ---------------------------------------------------------------------------- uniform


def _unit(engine: CPUEngine, n: int, np_dtype: np.dtype) -> np.ndarray:
    """``n`` uniforms in [0, 1): 53 bits of a 64-bit word for double, else 24 of a 32-bit one."""
    if np_dtype == np.float64:
        return (engine.random64(n) & _LOW_53).astype(np.float64) * 2.0 ** -53
    return ((engine.random32(n) & _LOW_24).astype(np.float32) * np.float32(2.0 ** -24))


def uniform(engine: CPUEngine, n: int, np_dtype, low: float = 0.0,
            high: float = 1.0) -> np.ndarray:
    """torch's ``uniform_(low, high)`` on ``n`` elements of ``np_dtype`` (float16/32/64)."""
    np_dtype = np.dtype(np_dtype)
    math_type = np.float64 if np_dtype == np.float64 else np.float32  # torch's opmath type
    lo, hi = math_type(low), math_type(high)
    unit = _unit(engine, n, np.dtype(math_type))
    # torch's ``x * (high - low) + low`` is one fused multiply-add
    fused = _fma64(unit, hi - lo, lo) if math_type is np.float64 else _fma32(unit, hi - lo, lo)
    values = fused.astype(np_dtype)
    # A value that rounds up to ``high`` when cast to the element type becomes ``low``.
    return np.where(values == np_dtype.type(high), np_dtype.type(low), values)


# ----------------------------------------------------------------------------- normal


def normal(engine: CPUEngine, n: int, np_dtype, mean: float = 0.0, std: float = 1.0,
           contiguous: bool = True) -> np.ndarray:
    """torch's ``normal_(mean, std)`` on ``n`` elements of ``np_dtype``.

    Contiguous tensors of 16 or more elements take the block Box-Muller fill; others the scalar
    sampler, which makes a pair at a time and keeps the second for the next call.
    """
    np_dtype = np.dtype(np_dtype)
    if n >= 16 and contiguous:
        return _normal_fill(engine, n, np_dtype, mean, std)
    return _normal_scalar(engine, n, mean, std).astype(np_dtype)


def _normal_fill(engine: CPUEngine, n: int, np_dtype: np.dtype, mean: float,
                 std: float) -> np.ndarray:
    math_type = np.dtype(np.float64 if np_dtype == np.float64 else np.float32)
    full = n - n % 16
    # float and double draw a uniform for every element first; half draws whole blocks only
    out = _unit(engine, n if np_dtype == math_type else full, math_type)
    out[:full] = _box_muller_16(out[:full].reshape(-1, 16), mean, std).ravel()
    if n % 16:
        # torch redraws 16 fresh uniforms for the last 16 places, overwriting the tail.
        tail = _box_muller_16(_unit(engine, 16, math_type).reshape(1, 16), mean, std)[0]
        out = np.concatenate([out[:n - 16], tail])
    return out.astype(np_dtype)


def _box_muller_16(blocks: np.ndarray, mean: float, std: float) -> np.ndarray:
    """Box-Muller on blocks of 16 uniforms in place of torch's ``normal_fill_16``: columns j
    and j + 8 make a pair (cos into j, sin into j + 8)."""
    if blocks.dtype == np.float32:
        return _box_muller_16_float(blocks, mean, std)
    u1 = 1.0 - blocks[:, :8]
    radius = np.sqrt(-2.0 * _libm(np.log, math.log, u1))
    theta = 2.0 * math.pi * blocks[:, 8:]
    first = radius * _libm(np.cos, math.cos, theta)
    second = radius * _libm(np.sin, math.sin, theta)
    return _fma64(np.concatenate([first, second], axis=1), std, mean)


def _fma64(x: np.ndarray, scale: float, shift: float) -> np.ndarray:
    """``x * scale + shift`` rounded once, as torch's fused multiply-add: long double for all,
    exact rational arithmetic for the few results near a rounding midpoint."""
    if scale == 1.0 and shift == 0.0:
        return x
    wide = x.astype(np.longdouble) * scale + shift
    nearest = wide.astype(np.float64)
    ulps = (wide - nearest) / np.spacing(np.abs(nearest)).astype(np.longdouble)
    # (long double leaves 11 bits to spare, fewer where the shift cancels most of the product)
    doubtful = (np.abs(np.abs(ulps) - 0.5) < 0.1) | (np.abs(nearest) * 256 < np.abs(x * scale))
    if doubtful.any():
        scale_q, shift_q = Fraction(scale), Fraction(shift)
        nearest[doubtful] = [float(Fraction(v) * scale_q + shift_q) for v in x[doubtful].tolist()]
    return nearest


def _libm(vectorised, scalar, x: np.ndarray) -> np.ndarray:
    """``vectorised(x)``, rounded as the C library's ``scalar`` rounds it.

    NumPy's SIMD kernels and the C library each round to within an ulp, but not always the
    same way. Where the two could disagree, NumPy's result differs from a long double
    evaluation, or that evaluation lies near a rounding midpoint; only those few elements are
    recomputed with ``scalar``.
    """
    y = vectorised(x)
    wide = vectorised(x.astype(np.longdouble))
    nearest = wide.astype(np.float64)
    ulps = (wide - nearest) / np.spacing(np.abs(nearest)).astype(np.longdouble)
    doubtful = (y != nearest) | (np.abs(np.abs(ulps) - 0.5) < 0.1) | ~np.isfinite(y)
    if doubtful.any():
        y[doubtful] = [scalar(v) for v in x[doubtful].tolist()]
    return y


# Steps of torch's float Box-Muller on x86 (its SIMD log and sincos, Cephes polynomials). Each
# multiply that feeds an add is fused into one rounding there, as the C compiler contracts it.
_LOG_POLY = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
             1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
             3.3333331174e-1)
_COS_POLY = (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2)
_SIN_POLY = (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)
_F32 = np.float32


def _fma32(a: np.ndarray, b, c) -> np.ndarray:
    """a * b + c with one rounding to float32 (the product is exact in double)."""
    return (np.asarray(a, np.float64) * np.float64(b) + c).astype(_F32)


def _poly32(coefficients: tuple, x: np.ndarray) -> np.ndarray:
    y = np.full_like(x, _F32(coefficients[0]))
    for c in coefficients[1:]:
        y = _fma32(y, x, _F32(c))
    return y


def _log32(x: np.ndarray) -> np.ndarray:
    """Natural log of positive float32 ``x``: exponent and mantissa in [sqrt(1/2), sqrt(2))."""
    bits = x.view(np.int32)
    exponent = ((bits >> 23) - 0x7F).astype(_F32) + _F32(1)
    m = ((bits & ~0x7F800000) | 0x3F000000).view(_F32)  # mantissa in [0.5, 1)
    small = m < _F32(0.707106781186547524)
    exponent = exponent - small.astype(_F32)
    m = (m - _F32(1)) + np.where(small, m, _F32(0))
    z = m * m
    y = _poly32(_LOG_POLY, m) * m
    y = _fma32(y, z, exponent * _F32(-2.12194440e-4))
    y = _fma32(z, _F32(-0.5), y)
    return _fma32(exponent, _F32(0.693359375), m + y)


def _sincos32(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sin and cos of float32 ``x``: reduce by multiples of pi/4, then one polynomial each."""
    sign_sin = x.view(np.int32) & np.int32(-2**31)
    x = np.abs(x)
    octant = (x * _F32(1.27323954473516)).astype(np.int32)
    octant = (octant + 1) & ~1
    y = octant.astype(_F32)
    for step in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8):
        x = _fma32(y, _F32(step), x)
    sign_sin = sign_sin ^ ((octant & 4) << 29)
    sign_cos = ((~(octant - 2)) & 4) << 29
    z = x * x
    cos_poly = _poly32(_COS_POLY, z) * z
    cos_poly = _fma32(cos_poly, z, -(z * _F32(0.5))) + _F32(1)
    sin_poly = _fma32(_poly32(_SIN_POLY, z) * z, x, x)
    first = (octant & 2) == 0
    sin = np.where(first, sin_poly, cos_poly)
    cos = np.where(first, cos_poly, sin_poly)
    return (sin.view(np.int32) ^ sign_sin).view(_F32), (cos.view(np.int32) ^ sign_cos).view(_F32)


def _box_muller_16_float(blocks: np.ndarray, mean: float, std: float) -> np.ndarray:
    radius = np.sqrt(_F32(-2) * _log32(_F32(1) - blocks[:, :8]))
    sin, cos = _sincos32(_F32(2.0 * math.pi) * blocks[:, 8:])
    mean32, std32 = _F32(mean), _F32(std)
    return np.concatenate([_fma32(radius * cos, std32, mean32),
                           _fma32(radius * sin, std32, mean32)], axis=1)


def _normal_scalar(engine: CPUEngine, n: int, mean: float, std: float) -> np.ndarray:
    """Double-precision normals one by one, each pair sharing two 64-bit draws (cos, then sin).

    This path serves fewer than 16 elements, so it runs per pair with the C library's log1p,
    sin and cos (whose rounding NumPy's vectorised kernels do not always share).
    """
    samples = []
    if n and engine.normal_cache is not None:
        samples.append(engine.normal_cache)
        engine.normal_cache = None
        n -= 1
    pairs = (n + 1) // 2
    uniforms = _unit(engine, 2 * pairs, np.dtype(np.float64)).tolist()
    for u1, u2 in zip(uniforms[0::2], uniforms[1::2]):
        radius = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        samples += [radius * math.cos(theta), radius * math.sin(theta)]
    if n % 2:
        engine.normal_cache = samples.pop()
    return _fma64(np.array(samples, np.float64), std, mean)


# ---------------------------------------------------------------------------- integers


def randint(engine: CPUEngine, n: int, low: int, high: int) -> np.ndarray:
    """torch's ``random_(low, high)``: one word per element, modulo the range.

    Ranges of 2**28 or more take 64-bit words, smaller ones 32-bit words. Returned as int64
    (the caller casts to the element type, as torch does).
    """
    span = high - low
    words = engine.random64(n) if span >= 1 << 28 else engine.random32(n)
    offset = np.uint64(low % (1 << 64))
    return ((words % np.uint64(span)) + offset).view(np.int64)


def random_full(engine: CPUEngine, n: int, np_dtype) -> np.ndarray:
    """torch's ``random_()`` with no bounds: [0, max] for integers, [0, 2**mantissa] for floats."""
    np_dtype = np.dtype(np_dtype)
    wide = np_dtype in (np.dtype(np.int64), np.dtype(np.float64))
    words = engine.random64(n) if wide else engine.random32(n)
    if np_dtype.kind == "b":
        return (words & np.uint64(1)).astype(bool)
    if np_dtype.kind == "f":
        digits = np.finfo(np_dtype).nmant + 1
        return (words % np.uint64((1 << digits) + 1)).astype(np_dtype)
    top = np.uint64(int(np.iinfo(np_dtype).max) + 1)
    return (words % top).astype(np_dtype)


def randperm(engine: CPUEngine, n: int) -> np.ndarray:
    """torch's CPU ``randperm``: a Fisher-Yates shuffle of ``arange(n)`` with 32-bit draws."""
    if n >= 0xFFFFFFFF // 20:
        raise NotImplementedError(f"randperm: n={n} is past the sizes ext reproduces")
    perm = np.arange(n, dtype=np.int64)
    if n < 2:
        return perm
    left = np.arange(n, 1, -1, dtype=np.uint64)  # n - i for i in 0 .. n-2
    targets = (engine.random32(n - 1) % left).astype(np.int64) + np.arange(n - 1)
    # The swaps depend on each other, so they run one by one; the draws above are vectorised.
    values = perm.tolist()
    for i, j in enumerate(targets.tolist()):
        values[i], values[j] = values[j], values[i]
    return np.array(values, np.int64)


# --------------------------------------------------------------------------- bernoulli


def bernoulli(engine: CPUEngine, n: int, p: float) -> np.ndarray:
    """torch's ``bernoulli_(p)`` for a number ``p``: a double uniform below ``p``, as bools."""
    return _unit(engine, n, np.dtype(np.float64)) < p

