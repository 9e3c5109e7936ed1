"""Recipes of the special functions (ext/functions/builtin/special.py): gamma and its relatives,
error functions, Bessel functions, xlogy, zeta and the incomplete gamma functions."""

FAMILIES = [
    ("special", """
        x.digamma()
        T.polygamma(1, x)
        x.lgamma()
        (x + 1).mvlgamma(2)
        x.erfc()
        (x - 1).erfinv()
        s.i0()
        T.special.i0e(s)
        T.special.i1(s)
        T.special.i1e(s)
        T.special.ndtr(s)
        T.special.ndtri(x / 2)
        T.special.log_ndtr(s)
        T.special.erfcx(s)
        s.sinc()
        T.special.entr(x)
        (x / 2).logit()
        T.xlogy(x, y)
        T.xlogy(2.0, y)
        T.xlogy(x, 2.0)
        T.special.xlog1py(x, y)
        T.special.xlog1py(2.0, y)
        T.special.xlog1py(x, 2.0)
        T.special.zeta(2.0, x)
        T.special.zeta(k + 1, x)
        T.igamma(k, x)
        T.igammac(k, x)
    """),
    # (torch does not differentiate the Bessel functions and the polynomials)
    ("special forward", """
        T.special.bessel_j0(x)
        T.special.modified_bessel_k1(x)
        T.special.chebyshev_polynomial_t(s, 5)
        T.special.hermite_polynomial_h(s, k * 8)
    """, False),
]
