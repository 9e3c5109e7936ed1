"""Recipes of the index ops of ext/functions/builtin/index_ops.py (see benchmarks/op_recipes.py
for the recipe language and the inputs)."""

FAMILIES = [
    ("index ops", """
        x.index_copy(0, T.tensor([1, 3]), y[:2])
        x.index_fill(1, idx, 2.0)
        x.index_fill(1, idx, c)
        x.index_add(0, idx, y)
        x.scatter_add(0, gidx, y)
        x.take(gidx)
        x.put(T.tensor([0, 5]), v[:2])
        x.masked_select(mask)
        x.masked_scatter(mask, y)
        T.fill(x, 2.0)
        T.fill(x, c)
        x.scatter_reduce(0, gidx, y, "amax")
        x.scatter_reduce(0, gidx, y, "mean", include_self=False)
        x.index_reduce(0, idx, y, "prod")
        T.take_along_dim(x, gidx, 1)
    """, True),
    ("index ops (no gradient)", """
        T.nonzero(mask)
        T.argwhere(mask)
    """, False),
]
