"""Random sampling ops: the in-place fills (``uniform_``, ``normal_``, ``random_``,
``bernoulli_``, ``exponential_``, ``geometric_``, ``log_normal_``, ``cauchy_``) and the sampling
functions (``bernoulli``, ``multinomial``, ``normal``, ``poisson``).

Every sampler draws from torch's CPU stream (``ext._random``) in the order torch's kernels visit
the elements, so a seeded program gives torch's numbers. The in-place fills run through the
in-place machinery (version bump, the leaf check, views); on a tensor that requires grad they
record torch's node, whose gradient is zero: the new values do not depend on the old ones.
"""

from __future__ import annotations

import builtins
import warnings

import numpy as np

from ... import _factories, _random
from ..._args import not_a_tensor
from ..._arrays import _repeats_elements
from ..._dtype import FROM_NUMPY
from ..._legacy import check_layout
from ..._tensor import Tensor, wrap
from .._op import ELEMENTWISE, Overload, declare, dispatch
from ._builtin import namespace_of
from .pointwise._common import broadcast_error

__all__ = ["bernoulli", "multinomial", "normal", "poisson", "randint_like"]

_INTERNAL_OVERLAP = ("unsupported operation: more than one element of the written-to tensor "
                     "refers to a single memory location. Please clone() the tensor before "
                     "performing the operation.")


# --------------------------------------------------------------------------- element order
def _order(d: np.ndarray) -> list:
    """The axes in the order torch's element loop runs over them (outermost first): the
    innermost is the one of smallest stride, as its iterator sorts them."""
    return sorted(range(d.ndim), key=lambda a: -abs(d.strides[a]))


def _placed(values: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``values`` (one per element, in the loop's order) laid out in the shape of ``d``."""
    axes = _order(d)
    shaped = values.reshape([d.shape[a] for a in axes])
    return shaped.transpose(np.argsort(axes))


def _in_order(a: np.ndarray, d: np.ndarray) -> np.ndarray:
    """The elements of ``a`` (shaped like ``d``) in the order the loop visits ``d``'s."""
    return np.transpose(a, _order(d)).ravel()


def _like_layout(d: np.ndarray) -> np.ndarray:
    """An array shaped like ``d`` in the layout torch's ``empty_like`` gives: d's own order of
    strides where d's elements tile memory without gaps, else row-major."""
    axes = [a for a in range(d.ndim) if d.shape[a] != 1]
    expected = d.itemsize
    for a in sorted(axes, key=lambda a: abs(d.strides[a])):
        if d.strides[a] != expected:
            return np.empty(d.shape, d.dtype)
        expected *= d.shape[a]
    return np.empty_like(d, order="K")


def _engine(generator) -> _random.CPUEngine:
    return _factories._rng(generator)


def _short(d: np.ndarray) -> str:
    return FROM_NUMPY[d.dtype]._short


def _floating_only(d: np.ndarray, kernel: str) -> None:
    if d.dtype.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_short(d)}\'')


def _writable(d: np.ndarray) -> None:
    if _repeats_elements(d):
        raise RuntimeError(_INTERNAL_OVERLAP)


def _float(value, op: str, name: str, position: int = 1) -> builtins.float:
    """A number argument as a float, with torch's TypeError for anything else."""
    if isinstance(value, Tensor):
        value = value.item()
    if isinstance(value, (builtins.bool, str)) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{op}(): argument '{name}' (position {position}) must be float, not "
                        f"{type(value).__name__}")
    return builtins.float(value)


def _number(x: builtins.float) -> str:
    """A double as torch's messages print it (C++ stream, six significant digits)."""
    return f"{x:g}"


# ---------------------------------------------------------------------------------- nodes
class _Fill(Overload):
    """An in-place random fill: the values do not depend on the old ones (zero gradient)."""

    jvp = ELEMENTWISE  # zeros

    @staticmethod
    def backward(ctx, grad):
        return namespace_of(grad).zeros_like(grad)


def _fill_node(name: str) -> type:
    return type(name, (_Fill,), {"node_name": name, "__doc__": f"torch's {name}."})


Uniform, Normal, Exponential, Geometric, LogNormal, Cauchy = (
    _fill_node(n) for n in ("UniformBackward0", "NormalBackward0", "ExponentialBackward0",
                            "GeometricBackward0", "LogNormalBackward0", "CauchyBackward0"))
RandomFromTo, RandomTo, RandomFull = (
    _fill_node(n) for n in ("RandomBackward0", "RandomBackward1", "RandomBackward2"))
BernoulliScalar = _fill_node("BernoulliBackward2")
Bernoulli = _fill_node("BernoulliBackward0")
Poisson = _fill_node("PoissonBackward0")


class BernoulliTensor(Overload):
    """bernoulli_(p tensor): zero gradient for both the tensor and the probabilities."""

    node_name = "BernoulliBackward1"
    args = ("self", "p")
    jvp = ELEMENTWISE

    @staticmethod
    def backward(ctx, grad):
        zeros = namespace_of(grad).zeros_like(grad)
        return (zeros if ctx.needs_input_grad[0] else None,
                zeros if ctx.needs_input_grad[1] else None)


class BernoulliP(_Fill):
    """bernoulli(input, p): torch has no derivative for it, only a node that says so."""

    node_name = "NotImplemented"

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for aten::bernoulli is not implemented")


class NormalTensorFloat(_Fill):
    """normal(mean tensor, std number)."""

    node_name = "NormalBackward1"


class NormalFloatTensor(_Fill):
    """normal(mean number, std tensor)."""

    node_name = "NormalBackward2"


class NormalTensorTensor(BernoulliTensor):
    """normal(mean tensor, std tensor)."""

    node_name = "NormalBackward3"
    args = ("mean", "std")


# ------------------------------------------------------------------------- in-place fills
def _uniform_(x: Tensor, from_=0.0, to=1.0, *, generator=None, **kwargs) -> Tensor:
    """Fill with values drawn uniformly from [from, to)."""
    from_ = kwargs.pop("from", from_)  # (torch's name, a Python keyword)
    if kwargs:
        raise TypeError(f"uniform_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    d = x._data
    _floating_only(d, "check_uniform_bounds")
    low, high = _float(from_, "uniform_", "from"), _float(to, "uniform_", "to", 2)
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={_number(low)} > to={_number(high)}")
    limit = np.finfo(d.dtype).max
    if high - low > limit:
        name = {2: "Half", 4: "Float", 8: "Double"}[d.dtype.itemsize]
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<{name}>::max(), but "
                           f"found to={_number(high)} and from={_number(low)} which result in "
                           "to-from to exceed the limit")
    _writable(d)
    values = _random.uniform(_engine(generator), d.size, d.dtype, low, high)
    return dispatch(Uniform, _placed(values, d), (x,))


def _normal_(x: Tensor, mean=0.0, std=1.0, *, generator=None) -> Tensor:
    """Fill with values drawn from the normal distribution N(mean, std²)."""
    d = x._data
    mean, std = _float(mean, "normal_", "mean"), _float(std, "normal_", "std", 2)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_number(std)}")
    _floating_only(d, "normal_kernel_cpu")
    _writable(d)
    return dispatch(Normal, _normal_values(d, mean, std, generator), (x,))


def _normal_values(d: np.ndarray, mean: float, std: float, generator) -> np.ndarray:
    contiguous = d.flags.c_contiguous
    values = _random.normal(_engine(generator), d.size, d.dtype, mean, std, contiguous)
    return values.reshape(d.shape) if contiguous else _placed(values, d)


def _exponential_(x: Tensor, lambd=1.0, *, generator=None) -> Tensor:
    """Fill with values drawn from the exponential distribution of rate ``lambd``."""
    d = x._data
    lambd = _float(lambd, "exponential_", "lambd")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda="
                           f"{_number(lambd)}")
    if d.dtype.kind != "f":
        raise RuntimeError("Exponential distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified {_short(d)}")
    _writable(d)
    values = _random.exponential(_engine(generator), d.size, lambd)
    return dispatch(Exponential, _placed(_random.to_element(values, d.dtype), d), (x,))


def _geometric_(x: Tensor, p, *, generator=None) -> Tensor:
    """Fill with the number of trials up to the first success, each succeeding with ``p``."""
    d = x._data
    p = _float(p, "geometric_", "p")
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_number(p)}")
    if d.dtype.kind == "b":
        raise NotImplementedError("\"geometric_cpu\" not implemented for 'Bool'")
    _writable(d)
    values = _random.geometric(_engine(generator), d.size, p)
    with np.errstate(invalid="ignore", over="ignore"):
        return dispatch(Geometric, _placed(values.astype(d.dtype), d), (x,))


def _log_normal_(x: Tensor, mean=1.0, std=2.0, *, generator=None) -> Tensor:
    """Fill with ``exp`` of values drawn from N(mean, std²)."""
    d = x._data
    mean, std = _float(mean, "log_normal_", "mean"), _float(std, "log_normal_", "std", 2)
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_number(std)}")
    _floating_only(d, "log_normal_cpu")
    _writable(d)
    values = _random.log_normal(_engine(generator), d.size, mean, std)
    with np.errstate(over="ignore"):
        return dispatch(LogNormal, _placed(_random.to_element(values, d.dtype), d), (x,))


def _cauchy_(x: Tensor, median=0.0, sigma=1.0, *, generator=None) -> Tensor:
    """Fill with values drawn from the Cauchy distribution (``median``, scale ``sigma``)."""
    d = x._data
    median, sigma = _float(median, "cauchy_", "median"), _float(sigma, "cauchy_", "sigma", 2)
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_number(sigma)}")
    if d.dtype.kind != "f":
        raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype "
                           "must be a floating point but you specified "
                           f"{_LONG_NAMES[d.dtype.name]}")
    _writable(d)
    values = _random.cauchy(_engine(generator), d.size, median, sigma)
    with np.errstate(over="ignore"):
        return dispatch(Cauchy, _placed(_random.to_element(values, d.dtype), d), (x,))


# The C++ type names some of torch's messages give.
_LONG_NAMES = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
               "uint8": "unsigned char", "bool": "bool", "float16": "c10::Half",
               "float32": "float", "float64": "double"}


# -------------------------------------------------------------------------------- random_
def _random_(x: Tensor, *args, generator=None, **kwargs) -> Tensor:
    """random_(), random_(to), random_(from, to) (``to`` may be None: up to the type's top)."""
    low, high, overload = _random_bounds(args, kwargs)
    d = x._data
    _writable(d)
    engine = _engine(generator)
    if overload is RandomFull:
        values = _random.random_full(engine, d.size, d.dtype)
    elif low == -2**63 and high is None:
        values = _full_64_bits(engine, d)
    else:
        low, span = _random_range(d.dtype, low, high)
        values = _random.randint(engine, d.size, low, low + span)
        if d.dtype.kind == "b":
            values = values != 0
    with np.errstate(invalid="ignore", over="ignore"):
        return dispatch(overload, _placed(values.astype(d.dtype), d), (x,))


def _random_bounds(args: tuple, kwargs: dict) -> tuple:
    """(from, to, node class) of random_'s overloads."""
    names = ("from", "to")
    given = dict(zip(names, args)) if len(args) != 1 else {"to": args[0]}
    if len(args) > 2:
        raise TypeError(f"random_() takes at most 2 arguments ({len(args)} given)")
    for k, v in kwargs.items():
        if k not in names or k in given:
            raise TypeError(f"random_() got an unexpected keyword argument '{k}'")
        given[k] = v
    for v in given.values():
        if v is not None and (not isinstance(v, (int, np.integer)) or isinstance(v, bool)):
            raise TypeError(f"random_() received an invalid combination of arguments - got "
                            f"({', '.join(type(a).__name__ for a in args)})")
    if not given:
        return 0, None, RandomFull
    if "from" not in given:
        if given["to"] is None:
            raise TypeError("random_() received an invalid combination of arguments - got "
                            "(NoneType)")
        return 0, builtins.int(given["to"]), RandomTo
    high = given.get("to")
    return builtins.int(given["from"]), None if high is None else builtins.int(high), RandomFromTo


def _full_64_bits(engine: _random.CPUEngine, d: np.ndarray) -> np.ndarray:
    if d.dtype.kind == "b" or d.dtype == np.float16:
        raise NotImplementedError("\"random_full_64_bits_range_kernel_cpu\" not implemented for "
                                  f"'{_short(d)}'")
    if d.dtype not in (np.dtype(np.int64), np.dtype(np.float64), np.dtype(np.float32)):
        raise RuntimeError("random_full_64_bits_range_kernel_cpu handles only int64, double, "
                           "float and bfloat16")
    return _random.full_64_bits(engine, d.size)


def _random_range(np_dtype: np.dtype, low: int, high: int | None) -> tuple:
    """torch's (from, range) for random_(from, to): bounds a float type cannot hold exactly
    move inward to ones it can, and both must fit the type."""
    floating = np_dtype.kind == "f"
    digits = np.finfo(np_dtype).nmant + 1 if floating else 0
    if high is not None:
        if low >= high:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                               f">= to={high}")
        if floating:
            low, high = _float_from(low, np_dtype, digits), _float_to(high, np_dtype, digits)
            if low >= high:
                raise RuntimeError("random_ expects 'from' casted to dtype to be less than 'to' "
                                   f"casted to dtype, but got from={low} >= to={high}")
        _check_in_range(np_dtype, low, high - 1, digits)
        return low, high - low
    if floating:
        top = min(1 << digits, 2**63 - 1)
        low = _float_from(low, np_dtype, digits)
        if low >= top:
            raise RuntimeError("random_ expects 'from' casted to dtype to be less than or equal "
                               f"to 'to_inc' casted to dtype, but got from={low} > to_inc={top}")
    else:
        top = 1 if np_dtype.kind == "b" else builtins.int(np.iinfo(np_dtype).max)
    _check_in_range(np_dtype, low, top, digits)
    return low, top - low + 1


def _float_from(low: int, np_dtype: np.dtype, digits: int) -> int:
    # The lowest bound must not round down below ``from`` when the type holds it.
    with np.errstate(over="ignore"):
        rounded = np_dtype.type(low + 1)
    if not np.isfinite(rounded):
        return low  # (out of the type's range: the range check says so)
    plus_one = builtins.int(rounded)
    if plus_one < low:
        n = abs(low + 1).bit_length() - 1
        low = plus_one + (1 << (n - digits + 1))
    return low


def _float_to(high: int, np_dtype: np.dtype, digits: int) -> int:
    with np.errstate(over="ignore"):
        rounded = np_dtype.type(high - 1)
    if not np.isfinite(rounded):
        return high
    minus_one = builtins.int(rounded)
    if minus_one >= high:
        n = abs(high - 1).bit_length() - 1
        high = minus_one - (1 << (n - digits + 1))
    return high


def _check_in_range(np_dtype: np.dtype, low: int, top: int, digits: int) -> None:
    name = _LONG_NAMES[np_dtype.name]
    if np_dtype.kind == "f":
        lo, hi = -builtins.float(np.finfo(np_dtype).max), builtins.float(np.finfo(np_dtype).max)
    elif np_dtype.kind == "b":
        lo, hi = 0, 1
    else:
        lo, hi = builtins.int(np.iinfo(np_dtype).min), builtins.int(np.iinfo(np_dtype).max)
    for value, what in ((low, "from"), (top, "to - 1")):
        if not lo <= value <= hi:
            raise RuntimeError(f"{what} is out of bounds for {name}")
    if np_dtype.kind == "f":
        for value, what in ((low, "from"), (top, "to - 1")):
            if not -(1 << digits) <= value <= 1 << digits:
                warnings.warn(f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to "
                              f"precision limitations {name} can support discrete uniform "
                              "distribution only within this range. This warning will become an "
                              "error in version 1.7 release, please fix the code in advance",
                              UserWarning, stacklevel=6)


# ----------------------------------------------------------------------------- bernoulli
def _bernoulli_(x: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Fill with 1 where a draw succeeds with probability ``p`` (a number or a tensor that
    broadcasts to this one), else 0."""
    d = x._data
    _writable(d)
    if isinstance(p, Tensor):
        return _bernoulli_tensor(x, p, generator)
    p = _float(p, "bernoulli_", "p")
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_number(p)}")
    values = _random.bernoulli(_engine(generator), d.size, p)
    return dispatch(BernoulliScalar, _placed(values.astype(d.dtype), d), (x,))


def _bernoulli_tensor(x: Tensor, p: Tensor, generator) -> Tensor:
    d, pd = x._data, p._data
    if pd.dtype.kind != "f":
        raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for "
                                  f"'{_short(pd)}'")
    probs = p.detach().expand(d.shape)._data  # (torch's errors for shapes that do not fit)
    if ((pd < 0) | (pd > 1) | np.isnan(pd)).any():
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could "
                           "this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")
    values = _random.bernoulli_tensor(_engine(generator), _in_order(probs, d))
    return dispatch(BernoulliTensor, _placed(values.astype(d.dtype), d), (x, p))


def _bernoulli(x: Tensor, p=None, *, generator=None) -> Tensor:
    """Samples of 0 or 1 with the probabilities ``x`` (or ``p`` everywhere), shaped like x."""
    if not isinstance(x, Tensor):
        raise not_a_tensor(x, "bernoulli")
    d = x._data
    out = np.empty(d.shape, d.dtype)
    if p is None:
        if d.dtype.kind != "f":
            raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for "
                                      f"'{_short(d)}'")
        if ((d < 0) | (d > 1) | np.isnan(d)).any():
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  "
                               "(Could this error message be improved?  If so, please report an "
                               "enhancement request to PyTorch.)")
        values = _random.bernoulli_tensor(_engine(generator), _in_order(d, out))
        return dispatch(Bernoulli, _placed(values.astype(d.dtype), out), (x,))
    p = _float(p, "bernoulli", "p")
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_number(p)}")
    values = _random.bernoulli(_engine(generator), d.size, p)
    return dispatch(BernoulliP, values.astype(d.dtype).reshape(d.shape), (x,))


# --------------------------------------------------------------------------- multinomial
def _multinomial(x: Tensor, num_samples: int, replacement: bool = False, *,
                 generator=None) -> Tensor:
    """``num_samples`` category indices per row of the (unnormalised) probabilities ``x``."""
    if not isinstance(x, Tensor):
        raise not_a_tensor(x, "multinomial")
    d = x._data
    if d.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if d.dtype.kind != "f":
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_short(d)}")
    n = builtins.int(num_samples)
    if n <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and n > d.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if d.shape[-1] > 2**24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    rows = d.reshape(d.shape[0] if d.ndim == 2 else 1, d.shape[-1])
    shape = (n,) if d.ndim == 1 else (d.shape[0], n)
    if rows.shape[0] == 0:
        return wrap(np.zeros(shape, np.int64))
    engine = _engine(generator)
    if not replacement or n == 1:
        # (one sample takes the same path with or without replacement)
        return wrap(_without_replacement(engine, d, rows, n).reshape(shape))
    _check_rows(rows)
    return wrap(_random.multinomial(engine, rows, n).reshape(shape))


def _check_rows(rows: np.ndarray) -> None:
    for row in rows:
        # (element by element, each checked for a sign and then for being finite: NaN fails
        # the first check)
        bad = np.flatnonzero(~(row >= 0) | ~np.isfinite(row))
        if bad.size:
            what = "< 0" if not row[bad[0]] >= 0 else "= infinity or NaN"
            raise RuntimeError(f"invalid multinomial distribution (encountering probability "
                               f"entry {what})")
        if not (row.size and row.sum(dtype=np.result_type(row.dtype, np.float32)) > 0):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")


def _without_replacement(engine: _random.CPUEngine, d: np.ndarray, rows: np.ndarray,
                         n: int) -> np.ndarray:
    """torch's way: exponential keys q, then the ``n`` largest ``p / q`` per row (argmax for
    one sample; ties go to the lowest index)."""
    if rows.size == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    if not (rows.max() < np.inf and rows.min() >= 0):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (rows.sum(axis=1) == 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    # (q is laid out as ``empty_like`` lays out a copy of d, and filled in memory order)
    q = _placed(_random.to_element(_random.exponential(engine, d.size, 1.0), d.dtype),
                _like_layout(d))
    with np.errstate(divide="ignore", invalid="ignore"):
        # (half divides in float, rounded back to half)
        wide = np.float32 if d.dtype == np.float16 else d.dtype
        keys = (rows.astype(wide) / q.reshape(rows.shape).astype(wide)).astype(d.dtype)
    if n == 1:
        return np.argmax(keys, axis=1).reshape(-1, 1)  # (the first largest, or the first NaN)
    return np.stack([_random.top_k(row, n) for row in keys]).astype(np.int64)


# -------------------------------------------------------------------------------- normal
def _normal(mean, std=1.0, size=None, *, generator=None, dtype=None, layout=None, device=None,
            pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """Normal samples: a tensor of means and/or of standard deviations, or numbers and a
    size."""
    check_layout(layout, "normal")
    mean_t, std_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mean_t and not std_t:
        return _normal_numbers(mean, std, size, generator, dtype, device, requires_grad)
    if std_t:
        sd = std._data
        if (sd < 0).any():
            raise RuntimeError("normal expects all elements of std >= 0.0")
    if mean_t and not std_t:
        std = _float(std, "normal", "std", 2)
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_number(std)}")
        md = mean._data
        _floating_only(md, "normal_kernel_cpu")
        out = _normal_values(np.empty(md.shape, md.dtype), 0.0, std, generator)
        return dispatch(NormalTensorFloat, (out + md).astype(md.dtype), (mean,))
    sd = std._data
    _floating_only(sd, "normal_kernel_cpu")
    if not mean_t:
        mean = _float(mean, "normal", "mean")
        out = _normal_values(np.empty(sd.shape, sd.dtype), 0.0, 1.0, generator)
        return dispatch(NormalFloatTensor, (out * sd + sd.dtype.type(mean)).astype(sd.dtype),
                        (std,))
    md = mean._data
    _floating_only(md, "normal_kernel_cpu")
    try:
        shape = np.broadcast_shapes(md.shape, sd.shape)
    except ValueError:
        raise broadcast_error(md, sd) from None
    # (the result has the mean's dtype; each step is rounded to it, as torch's in-place steps)
    out = _normal_values(np.empty(shape, md.dtype), 0.0, 1.0, generator)
    out = (out * sd).astype(md.dtype)
    return dispatch(NormalTensorTensor, (out + md).astype(md.dtype), (mean, std))


def _normal_numbers(mean, std, size, generator, dtype, device, requires_grad) -> Tensor:
    mean, std = _float(mean, "normal", "mean"), _float(std, "normal", "std", 2)
    if size is None:
        raise TypeError("normal() received an invalid combination of arguments - got "
                        "(float, float)")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_number(std)}")
    np_dtype = _factories._np_dtype(dtype, "normal")
    shape = _factories._size((size,), "normal")
    _factories._options("normal", device, requires_grad)
    _floating_only(np.empty(0, np_dtype), "normal_kernel_cpu")
    data = _normal_values(np.empty(shape, np_dtype), mean, std, generator)
    return _factories._finish(data, requires_grad)


# ------------------------------------------------------------------------------- poisson
def _poisson(x: Tensor, generator=None) -> Tensor:
    """Poisson samples with the rates ``x``."""
    if not isinstance(x, Tensor):
        raise not_a_tensor(x, "poisson")
    d = x._data
    _floating_only(d, "poisson_cpu")
    if (d < 0).any() or np.isnan(d).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    out = np.empty(d.shape, d.dtype)
    values = _random.poisson(_engine(generator), _in_order(d, out))
    return dispatch(Poisson, _placed(values.astype(d.dtype), out), (x,))


# --------------------------------------------------------------------------- randint_like
def _randint_like(x: Tensor, low=0, high=None, *, generator=None, dtype=None, device=None,
                  requires_grad: bool = False, memory_format=None) -> Tensor:
    """Integers drawn uniformly from [low, high) (``randint_like(x, high)`` starts at 0), shaped
    like ``x``: torch's ``empty_like(x).random_(low, high)``."""
    if high is None:
        low, high = 0, low
    if isinstance(high, Tensor):
        high = high.item()
    out = _factories.empty_like(x, dtype=dtype, device=device, memory_format=memory_format)
    return _factories._finish(_random_(out, low, high, generator=generator)._data, requires_grad)


# ------------------------------------------------------------------------------ declared
# (The nodes are not entered as the ops' overloads: the parity checklist those get, values
# compared across engines and gradcheck, does not apply to random draws; the tests compare
# these with torch under the same seed instead.)
# (the ops' names are torch's functional variants: ``uniform`` gives new values, ``uniform_``
# writes them)
for _name, _fn in (("uniform", _uniform_), ("random", _random_),
                   ("exponential", _exponential_), ("geometric", _geometric_),
                   ("log_normal", _log_normal_), ("cauchy", _cauchy_)):
    declare(_name, function=_fn, methods=(), functions=(), inplace=_name + "_")

bernoulli = declare("bernoulli", function=_bernoulli, inplace=(("bernoulli_", _bernoulli_),))
multinomial = declare("multinomial", function=_multinomial)
normal = declare("normal", function=_normal, methods=(), inplace=(("normal_", _normal_),))
poisson = declare("poisson", function=_poisson, methods=())
randint_like = declare("randint_like", function=_randint_like, methods=())
