"""torch's CPU random stream in NumPy: the mt19937 engine, its state layout, and the samplers.

Each sampler draws the same 32- or 64-bit words, in the same order, as torch's CPU kernels and
turns them into numbers by the same arithmetic, rounded where torch rounds, so that a seeded
program gives the same values on ext as on torch. The words come from NumPy's MT19937 (the same
generator); the arithmetic is vectorised over the draws. Python loops remain only where torch's
own work is sequential (randperm's swaps, poisson's rejection sampling, the C++ sort that orders
multinomial's tied keys), where few values are made (the scalar normal sampler's short runs),
for the C library's log1p (which no vectorised kernel rounds alike), and for the rare elements
whose rounding NumPy's kernels may not share with the C library or a fused multiply-add.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ._cppsort import top_places

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
        if n:  # (an empty draw leaves torch's read index as it was)
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


def to_element(values: np.ndarray, np_dtype) -> np.ndarray:
    """Doubles cast to the element type as torch's kernels cast them: half through float (its
    conversion takes a float), so a value may round twice."""
    np_dtype = np.dtype(np_dtype)
    if np_dtype == np.float16:
        values = values.astype(np.float32)
    return values.astype(np_dtype)


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
    return to_element(_normal_scalar(engine, n, mean, std), np_dtype)


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
    out = np.empty_like(blocks)
    np.multiply(radius, _libm(np.cos, math.cos, theta, _TWO_PI), out=out[:, :8])
    np.multiply(radius, _libm(np.sin, math.sin, theta, _TWO_PI), out=out[:, 8:])
    return _fma64(out, std, mean)


_CHUNK = 1 << 16


def _fma64(x: np.ndarray, scale: float, shift: float) -> np.ndarray:
    """``x * scale + shift`` rounded once, as torch's fused multiply-add.

    Error-free steps in double arithmetic: the product is split into two doubles exactly
    (Dekker), and sums into a rounded sum and its exact error (Knuth), so that the exact result
    is ``r + w + v`` for the once-rounded sum ``r`` of the large parts, ``w`` its rounding error
    and ``v`` a remainder smaller than w's granularity. ``r`` is then the correctly rounded
    result unless ``w`` is exactly half the gap to the next double (a tie) and ``v`` leans the
    same way. The rare values these steps cannot vouch for (near overflow or underflow, or a
    shift that cancels nearly all of the product) are redone in exact rational arithmetic.
    """
    if scale == 1.0 and shift == 0.0:
        return x
    if x.size > _CHUNK:  # (in pieces whose temporaries stay in the CPU cache)
        flat = x.reshape(-1)
        parts = [_fma64(flat[i:i + _CHUNK], scale, shift) for i in range(0, flat.size, _CHUNK)]
        return np.concatenate(parts).reshape(x.shape)
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        product = x * scale
        error = _product_error(x, scale, product)
        head, tail = _two_sum(product, np.float64(shift))
        small, rest = _two_sum(tail, error)
        nearest, low = _two_sum(head, small)
        toward = np.nextafter(nearest, np.copysign(np.inf, low))
        tie = (low != 0) & (low == (toward - nearest) / 2)
        nearest = np.where(tie & (rest != 0) & ((rest > 0) == (low > 0)), toward, nearest)
        magnitude = np.abs(nearest)
        doubtful = ~np.isfinite(error) | ~np.isfinite(nearest) | (np.abs(x) >= 2.0 ** 995) | \
            (product != 0) & (np.abs(product) < 2.0 ** -960) | (magnitude < 2.0 ** -960) | \
            (np.spacing(np.abs(small)) > np.spacing(magnitude) / 8)
    if doubtful.any():
        scale_q, shift_q = Fraction(scale), Fraction(shift)
        nearest[doubtful] = [_exact(v, scale_q, shift_q) for v in x[doubtful].tolist()]
    return nearest


def _exact(v: float, scale: Fraction, shift: Fraction) -> float:
    if not math.isfinite(v):
        return v * float(scale) + float(shift)
    value = Fraction(v) * scale + shift
    try:
        return float(value)
    except OverflowError:  # (past the largest double: infinity, as the hardware rounds it)
        return math.inf if value > 0 else -math.inf


def _two_sum(a: np.ndarray, b) -> tuple:
    """``a + b`` rounded, and its rounding error exactly (Knuth)."""
    total = a + b
    b_part = total - a
    return total, (a - (total - b_part)) + (b - b_part)


def _split(a):
    """``a`` as a high part of 26 bits and the rest (Veltkamp), both exact."""
    t = 134217729.0 * a
    high = t - (t - a)
    return high, a - high


def _product_error(a: np.ndarray, b: float, product: np.ndarray) -> np.ndarray:
    """``a * b - product`` exactly, for ``product = a * b`` rounded (Dekker)."""
    a_high, a_low = _split(a)
    b_high, b_low = _split(b)
    return ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low


_TWO_PI = (0.0, 2.0 * math.pi)
_SAME_AS_C: dict = {}  # NumPy kernel -> whether it rounds as the C library does


def _numpy_is_c(vectorised, scalar, domain: tuple) -> bool:
    """Whether NumPy's ``vectorised`` gives the C library's ``scalar`` results on ``domain``
    (NumPy builds call the C library for some functions, such as double sin and cos, and run
    SIMD kernels of their own for others): found once, on 2**16 values spread over it."""
    key = (vectorised, domain)
    same = _SAME_AS_C.get(key)
    if same is None:
        lo, hi = domain
        sample = lo + (hi - lo) * np.random.default_rng(5).random(1 << 16)
        same = bool((vectorised(sample) == np.array(list(map(scalar, sample.tolist())))).all())
        _SAME_AS_C[key] = same
    return same


def _libm(vectorised, scalar, x: np.ndarray, domain: tuple | None = None) -> np.ndarray:
    """``vectorised(x)``, rounded as the C library's ``scalar`` rounds it.

    NumPy's SIMD kernels and the C library each round to within an ulp, but not always the
    same way. Where NumPy's kernel is the C library's on ``domain`` (which holds ``x``), its
    result stands. Elsewhere, where the two could disagree, NumPy's result differs from a long
    double evaluation, or that evaluation lies near a rounding midpoint, only those few elements
    are recomputed with ``scalar``.
    """
    y = vectorised(x)
    if domain is not None and _numpy_is_c(vectorised, scalar, domain):
        return y
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
    wide = np.multiply(a, b, dtype=np.float64)  # (cast as it goes: no float64 copy of a)
    wide += c
    return wide.astype(_F32)


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


_CHUNK_ROWS = 4096  # (blocks per step: the float32 steps' temporaries stay in the CPU cache)


def _box_muller_16_float(blocks: np.ndarray, mean: float, std: float) -> np.ndarray:
    out = np.empty_like(blocks)
    mean32, std32 = _F32(mean), _F32(std)
    for start in range(0, len(blocks), _CHUNK_ROWS):
        chunk = blocks[start:start + _CHUNK_ROWS]
        radius = np.sqrt(_F32(-2) * _log32(_F32(1) - chunk[:, :8]))
        sin, cos = _sincos32(_F32(2.0 * math.pi) * chunk[:, 8:])
        rows = out[start:start + _CHUNK_ROWS]
        rows[:, :8] = _fma32(radius * cos, std32, mean32)
        rows[:, 8:] = _fma32(radius * sin, std32, mean32)
    return out


def _normal_scalar(engine: CPUEngine, n: int, mean: float, std: float) -> np.ndarray:
    """Double-precision normals one by one, each pair sharing two 64-bit draws (cos, then sin).

    This path serves fewer than 16 elements of randn, and every element of non-contiguous
    tensors and of log_normal_. It uses the C library's log1p, sin and cos (whose rounding
    NumPy's vectorised kernels do not always share): per pair for a few pairs, over arrays for
    many.
    """
    head = []
    if n and engine.normal_cache is not None:
        head.append(engine.normal_cache)
        engine.normal_cache = None
        n -= 1
    pairs = (n + 1) // 2
    uniforms = _unit(engine, 2 * pairs, np.dtype(np.float64))
    if pairs < 64:
        samples = head
        for u1, u2 in zip(uniforms[0::2].tolist(), uniforms[1::2].tolist()):
            radius = math.sqrt(-2.0 * math.log1p(-u2))
            theta = 2.0 * math.pi * u1
            samples += [radius * math.cos(theta), radius * math.sin(theta)]
        values = np.array(samples, np.float64)
    else:
        radius = np.sqrt(-2.0 * _c_log1p(-uniforms[1::2]))
        theta = 2.0 * math.pi * uniforms[0::2]
        values = np.empty(len(head) + 2 * pairs)
        values[:len(head)] = head
        np.multiply(radius, _libm(np.cos, math.cos, theta, _TWO_PI), out=values[len(head)::2])
        np.multiply(radius, _libm(np.sin, math.sin, theta, _TWO_PI),
                    out=values[len(head) + 1::2])
    if n % 2:
        engine.normal_cache = float(values[-1])
        values = values[:-1]
    return _fma64(values, std, mean)


def _c_log1p(x: np.ndarray) -> np.ndarray:
    """The C library's log1p of each element (it is not correctly rounded, so neither NumPy's
    kernel nor a wider evaluation can stand in for it)."""
    return np.fromiter(map(math.log1p, x.tolist()), np.float64, x.size)


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



def bernoulli_tensor(engine: CPUEngine, p: np.ndarray) -> np.ndarray:
    """torch's ``bernoulli_(p)`` for a tensor of probabilities (already in iteration order): a
    uniform of p's precision per element (double for float64 ``p``, else float) below ``p``."""
    if p.dtype == np.float64:
        return _unit(engine, p.size, np.dtype(np.float64)) < p
    return _unit(engine, p.size, np.dtype(np.float32)) < p.astype(np.float32)


# ------------------------------------------------------------- the other distributions
# torch draws one double uniform per element for each of these, in double arithmetic, and casts
# the result to the element type.


def _uniform64(engine: CPUEngine, n: int) -> np.ndarray:
    return _unit(engine, n, np.dtype(np.float64))


def exponential(engine: CPUEngine, n: int, lambd: float) -> np.ndarray:
    """torch's ``exponential_(lambd)``: ``(-1 / lambd) * log1p(-u)``."""
    return (-1.0 / lambd) * _c_log1p(-_uniform64(engine, n))


def geometric(engine: CPUEngine, n: int, p: float) -> np.ndarray:
    """torch's ``geometric_(p)``: ``ceil(log(u) / log1p(-p))``, the trials up to a success."""
    with np.errstate(divide="ignore"):
        return np.ceil(_libm(np.log, math.log, _uniform64(engine, n)) / math.log1p(-p))


def cauchy(engine: CPUEngine, n: int, median: float, sigma: float) -> np.ndarray:
    """torch's ``cauchy_(median, sigma)``: ``median + sigma * tan(pi * (u - 0.5))``, fused."""
    angle = math.pi * (_uniform64(engine, n) - 0.5)
    return _fma64(_libm(np.tan, math.tan, angle), sigma, median)


def log_normal(engine: CPUEngine, n: int, mean: float, std: float) -> np.ndarray:
    """torch's ``log_normal_(mean, std)``: ``exp`` of the scalar normal sampler's values (which
    share its cached second sample)."""
    return _libm(np.exp, math.exp, _normal_scalar(engine, n, mean, std))


def full_64_bits(engine: CPUEngine, n: int) -> np.ndarray:
    """torch's ``random_(-2**63)`` (no upper bound): a 64-bit word taken as a signed integer."""
    return engine.random64(n).view(np.int64)


def poisson(engine: CPUEngine, rates: np.ndarray) -> np.ndarray:
    """torch's CPU ``poisson``: for each rate (in iteration order), multiplied uniforms below
    ``exp(-rate)`` when the rate is under 10, else the transformed rejection method. Each sample
    draws an unknown number of uniforms, so this runs element by element."""
    out = np.empty(rates.size, np.float64)
    for i, rate in enumerate(rates.astype(np.float64).tolist()):
        out[i] = _poisson_one(engine, rate)
    return out


def _draw(engine: CPUEngine) -> float:
    return float((int(engine.random64(1)[0]) & ((1 << 53) - 1)) * 2.0 ** -53)


def _poisson_one(engine: CPUEngine, rate: float) -> float:
    if rate == 0:
        return 0.0
    if rate < 10:
        limit, count, product = math.exp(-rate), 0, 1.0
        while True:
            product *= _draw(engine)
            if product <= limit:
                return float(count)
            count += 1
    root, log_rate = math.sqrt(rate), math.log(rate)
    b = 0.931 + 2.53 * root
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)
    while True:
        u = _draw(engine) - 0.5
        v = _draw(engine)
        u_s = 0.5 - abs(u)
        k = math.floor((2 * a / u_s + b) * u + rate + 0.43)
        if u_s >= 0.07 and v <= v_r:
            return float(k)
        if k < 0 or u_s < 0.013 and v > u_s:
            continue
        if math.log(v) + math.log(inv_alpha) - math.log(a / (u_s * u_s) + b) <= \
                -rate + k * log_rate - math.lgamma(k + 1.0):
            return float(k)


def multinomial(engine: CPUEngine, probs: np.ndarray, n_sample: int) -> np.ndarray:
    """torch's CPU ``multinomial`` with replacement on rows of ``probs`` (2-D): per row, the
    running sum in the element type, divided by the total, its last entry set to 1; then per
    sample a double uniform and the first slot whose cumulative value is not below it."""
    uniforms = _uniform64(engine, probs.shape[0] * n_sample).reshape(-1, n_sample)
    # (a running sum, as torch's: in float for half)
    cum = np.add.accumulate(probs, axis=1, dtype=np.result_type(probs.dtype, np.float32))
    cum = cum / cum[:, -1:]
    cum[:, -1] = 1
    cum = cum.astype(np.float64)
    return np.stack([np.searchsorted(c, u, "left") for c, u in zip(cum, uniforms)])


# ------------------------------------------------------------------------------- top k
# multinomial without replacement ranks keys with torch's CPU topk, which runs the C++ standard
# library's selection and sorting (GCC's): where keys tie, which index comes first is whatever
# those algorithms leave, so for rows with ties they are replayed step by step below.


def top_k(keys: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest ``keys`` (NaN largest), largest first, as torch's CPU topk
    orders them; rows without ties among the leaders take a NumPy sort."""
    order = np.argsort(-keys, kind="stable")  # (NaN, negated, sorts last: handled below)
    ranked = keys[order]
    leaders = ranked[:k + 1]
    if not np.isnan(keys).any() and not (leaders[1:] == leaders[:-1]).any():
        return order[:k]
    return np.array(top_places(keys.tolist(), k, largest=True, ordered=True), np.int64)
