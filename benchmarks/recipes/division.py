"""Recipes of div with a rounding mode (DivBackward2; see benchmarks/op_recipes.py)."""

FAMILIES = [
    ("division", """
        T.div(x, y, rounding_mode="floor")
        T.div(x, 2.0, rounding_mode="trunc")
        x.div(y, rounding_mode=None)
    """, True),
]
