"""Recipes of the matrix decompositions (ext/functions/builtin/linalg_decomp.py). ``x`` and
``y`` are 4x4 with entries in [0.5, 1.5]; ``x @ x.mT + 4 * I`` is symmetric positive-definite
and well conditioned."""

FAMILIES = [
    ("linalg_decomp", """
        T.linalg.cholesky(x @ x.mT + 4 * T.eye(4, dtype=x.dtype))
        T.linalg.cholesky_ex(x @ x.mT + 4 * T.eye(4, dtype=x.dtype)).L
        T.cholesky(x @ x.mT + 4 * T.eye(4, dtype=x.dtype), upper=True)
        T.linalg.qr(x).Q
        T.linalg.eigh(x + x.mT).eigenvalues
        T.linalg.eigvalsh(x + x.mT)
        T.linalg.svdvals(x)
        T.linalg.svd(x, full_matrices=False).S
        T.linalg.pinv(x)
        T.pinverse(s)
        T.linalg.lstsq(x, y).solution
        T.linalg.lu_factor(x).LU
        T.linalg.lu(x).U
        T.lu_unpack(*T.linalg.lu_factor(x)).L
        T.linalg.lu_solve(*T.linalg.lu_factor(x), y)
        T.linalg.householder_product(x, v / 4)
        T.ormqr(x, v / 4, y)
    """),
    ("linalg_decomp_values", """
        T.linalg.matrix_rank(x)
        T.geqrf(k)[0]
        T.linalg.ldl_factor(k + k.mT).LD
        T.linalg.ldl_solve(*T.linalg.ldl_factor(k + k.mT), k)
        T.svd_lowrank(k, q=2)[1]
    """, False),
]
