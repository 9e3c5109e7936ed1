"""The built-in ops: every Tensor method and ``ext.*`` op of the mini-engine, each declared once
(``ext.functions._op.declare``), grouped by family; ``ext.functions`` imports the families, which
declares their ops."""
