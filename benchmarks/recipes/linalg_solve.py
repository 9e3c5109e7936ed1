"""Recipes of torch.linalg's inverses, solves, determinants, norms and products
(ext/functions/builtin/linalg_solve.py). ``x + 4 * I``-like inputs keep the matrices well
conditioned: ``x`` and ``y`` are 4x4 with entries in [0.5, 1.5]."""

FAMILIES = [
    ("linalg_solve", """
        T.linalg.inv(x + 4 * k)
        T.linalg.inv_ex(x + 4 * k)[0]
        T.linalg.solve(x + 4 * k, y)
        T.linalg.solve_ex(x + 4 * k, v)[0]
        T.linalg.det(x)
        T.linalg.slogdet(x)[1]
        T.logdet(x @ x.mT + k)
        T.linalg.matrix_power(x, 3)
        T.linalg.matrix_exp(s / 4)
        T.linalg.vector_norm(s, 3, 1)
        T.linalg.vector_norm(s)
        T.linalg.matrix_norm(s, 1)
        T.norm(s)
        T.linalg.cross(b[..., :3], b[..., 1:])
        x.trace()
        T.addmv(v, x, w, beta=0.5, alpha=2)
        T.addr(x, v, w, beta=0.5, alpha=2)
        T.addbmm(x, b, b, beta=0.5, alpha=2)
        T.baddbmm(b, b, b, beta=0.5, alpha=2)
        T.vdot(v, w)
        T.outer(v, w)
        T.kron(x, y)
        T.dist(x, y, 3)
        T.renorm(s, 2, 0, 1.0)
        T.linalg.solve_triangular(x + 4 * k, y, upper=True)
        T.triangular_solve(y, x + 4 * k)[0]
        T.cholesky_solve(y, x + 4 * k)
        T.cholesky_inverse(x + 4 * k)
        T.einsum("ij,jk->ik", x, y)
        T.cdist(x, y)
        T.cdist(x, y, compute_mode="use_mm_for_euclid_dist")
    """),
    ("linalg_solve_grads", """
        gg(T.linalg.inv(x + 4 * k), x, g)
        gg(T.linalg.det(x), x, g0)
        gg(T.linalg.vector_norm(s, 3, 1), s, g4)
    """),
]
