"""Forward-mode derivatives (jvp rules) of the built-in ops.

Each rule takes the op's recorded arguments (primal values), its primal output and the tangents
of its arguments (None where an argument has none) and returns the output's tangent: the
directional derivative ``J @ t``. Linear ops apply themselves to the tangents; the others are
the derivative formulas their backward uses, read forwards. Rules are attached to the op classes
by ``install`` when ``ext.functions`` loads.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from . import linalg
from .pointwise import arithmetic, logical


def _zeros_like(x: Tensor) -> Tensor:
    return x.new_zeros(x.shape)


def _or_zeros(t: Tensor | None, like: Tensor) -> Tensor:
    return _zeros_like(like) if t is None else t


def _sum(*terms) -> Tensor | None:
    terms = [t for t in terms if t is not None]
    if not terms:
        return None
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


def _linear(fn):
    """The rule of an op that is linear in its first argument: the op applied to the tangent."""
    return lambda args, out, t: fn(t[0], *args[1:])


def _piecewise_constant(args, out, t):
    return _zeros_like(out)


def _reduce_dims(x: Tensor, dim) -> tuple:
    if dim is None or dim == ():
        return tuple(range(x.ndim))
    return (dim,) if isinstance(dim, int) else tuple(dim)


# ---------------------------------------------------------------------------------- arithmetic
def _scaled_zero(tangent: Tensor, operand, alpha) -> Tensor:
    """torch's tangent of ``x + alpha * y`` (or ``x - alpha * y``) when only x has one.

    torch takes y's tangent as a zero tensor of y's dtype, multiplies it by alpha (unless
    alpha is 1), which it then promotes as a 0-d tensor of its own (a float alpha is float64,
    a number y too), and adds x's tangent with promotion: an integer or 0-d y with a float
    alpha makes the tangent float64, whatever the output's dtype.
    """
    if isinstance(operand, Tensor):
        y_dtype, y_dim = operand.dtype, operand.ndim
    elif alpha == 1:
        return tangent  # (no zero for a number)
    else:
        y_dtype, y_dim = _number_dtype(operand), 0
    zero = y_dtype if alpha == 1 else _dtype.result_type(y_dtype, y_dim, _number_dtype(alpha), 0)
    return _promoted(tangent, zero, y_dim)


def _promoted(tangent: Tensor, dtype: _dtype.dtype, dim: int) -> Tensor:
    # tangent plus a zero tensor of ``dtype`` with ``dim`` dims, as torch promotes them
    wide = _dtype.result_type(dtype, dim, tangent.dtype, tangent.ndim)
    return tangent if wide is tangent.dtype else tangent.to(wide)


def _number_dtype(value) -> _dtype.dtype:
    # a Python number taken as a 0-d tensor of its own (not a wrapped number)
    if isinstance(value, (bool, np.bool_)):
        return _dtype.bool
    return _dtype.int64 if isinstance(value, (int, np.integer)) else _dtype.float64


# (the add and subtract rules give torch's tangent dtype: ``tangent_in_output_dtype`` is off)
def _add(args, out, t):
    a, b = args[:2]
    alpha = args[2] if len(args) > 2 else 1
    if t[1] is None:
        return _scaled_zero(t[0], b, alpha)
    tb = t[1] if alpha == 1 else t[1] * alpha
    return _promoted(tb, a.dtype, a.ndim) if t[0] is None else t[0] + tb


def _sub(args, out, t):
    a, b = args[:2]
    alpha = args[2] if len(args) > 2 else 1
    if t[1] is None:
        return _scaled_zero(t[0], b, alpha)
    tb = -t[1] if alpha == 1 else t[1] * -alpha
    return _promoted(tb, a.dtype, a.ndim) if t[0] is None else t[0] + tb


def _rsub_tensor(args, out, t):
    x, other = args[:2]
    alpha = args[2] if len(args) > 2 else 1
    if t[0] is None:
        return _scaled_zero(t[1], x, alpha)
    tx = -t[0] if alpha == 1 else t[0] * -alpha
    return _promoted(tx, other.dtype, other.ndim) if t[1] is None else tx + t[1]


def _mul(args, out, t):
    a, b = args
    return _sum(None if t[0] is None else t[0] * b, None if t[1] is None else a * t[1])


def _div(args, out, t):
    # torch's (ta - tb * out) / b, a missing tangent dropping out as torch's zero tensors do
    b = args[1]
    if t[1] is None:
        return t[0] / b
    prod = t[1] * out
    return (-prod if t[0] is None else t[0] - prod) / b




# ---------------------------------------------------------------------------------- activation
def _mm(mul, zeros: bool = True):
    """The rule of a matrix product ``mul(a, b)``: ``mul(ta, b) + mul(a, tb)``. As in torch, a
    missing tangent takes part as zeros (so a nan or inf in the other factor gives nan), except
    in ``dot``, which skips it."""
    def rule(args, out, t):
        a, b = args
        ta, tb = t
        if zeros:
            ta, tb = _or_zeros(ta, a), _or_zeros(tb, b)
        return _sum(None if ta is None else mul(ta, b), None if tb is None else mul(a, tb))

    return rule


# ---------------------------------------------------------------------------------- joins


RULES = {
    # arithmetic
    arithmetic.Add: _add, arithmetic.Sub: _sub,
    arithmetic.Rsub: lambda a, o, t: -t[0] if (a[2] if len(a) > 2 else 1) == 1 else t[0] * -a[2],
    arithmetic.RsubTensor: _rsub_tensor, arithmetic.Mul: _mul, arithmetic.Div: _div,
    arithmetic.Reciprocal: lambda a, o, t: -t[0] * o * o,
    logical.NanToNum: lambda a, o, t: t[0] * logical.isfinite(a[0]),
    # matrix products
    linalg.Mm: _mm(lambda a, b: a.mm(b)), linalg.Mv: _mm(lambda a, b: a.mv(b)),
    linalg.Dot: _mm(lambda a, b: a.dot(b), zeros=False),
    linalg.Bmm: _mm(lambda a, b: linalg.bmm(a, b)),
    # softmax family and losses
}


def install() -> None:
    """Attach each rule to its op class as its ``jvp``."""
    for op, rule in RULES.items():
        op.jvp = staticmethod(rule)
