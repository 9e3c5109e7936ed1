"""Recipes of the elementwise math beyond the basics (ext/functions/builtin/pointwise/
elementary.py and binary.py): inverse trigonometric and hyperbolic functions, other bases,
rounding parts, signs, and the two- and three-input functions."""

FAMILIES = [
    ("pointwise math", """
        (x - 1).acos()
        (x - 1).asin()
        s.atan()
        T.arctan(s)
        (x + 1).acosh()
        s.asinh()
        (x - 1).atanh()
        s.cosh()
        s.sinh()
        s.deg2rad()
        s.rad2deg()
        s.exp2()
        x.log2()
        x.log10()
        s.trunc()
        s.frac()
        T.frexp(s).mantissa
        s.square()
        s.sgn() + s
        s.angle() + s
        T.atan2(s, y)
        T.hypot(s, y)
        s.copysign(y - 1)
        s.copysign(-1.0)
        T.fmod(s, y)
        T.fmod(s, 0.7)
        T.fmax(s, y - 1)
        T.fmin(s, y - 1)
        T.logaddexp(s, y)
        T.logaddexp2(s, y)
        T.ldexp(s, y)
        T.float_power(x, y)
        T.float_power(s, 2)
        T.float_power(2, s)
        T.nextafter(s, y)
        T.lerp(s, y, 0.3)
        T.lerp(s, y, x - 0.5)
        T.lerp(x, v, c)
        T.addcmul(s, x, y, value=0.5)
        T.addcdiv(s, x, y, value=-2)
        gg(T.atan2(s, y), s, g)
        gg(T.lerp(s, y, x), x, g)
        (s * 1).atan2_(y)
        (s * 1).lerp_(y, 0.3)
        (s * 1).addcmul_(x, y)
        s.conj()
        T.real(s)
    """, True),
    ("pointwise math, no backward", """
        s.signbit()
        s.isposinf()
        T.gcd(idx, gidx)
        T.lcm(idx, gidx)
        T.heaviside(k, x.detach())
    """, False),
]
