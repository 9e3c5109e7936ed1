"""The ops behind ``ext.nn``: erf, gelu, silu, layer_norm, embedding and dropout.

Each op is declared (``_op.declare``); its backward, in tensor ops, calls its backward op
(``gelu_backward``, ``native_layer_norm_backward`` ...) by its aten name: an op of its own with
a NumPy kernel, so higher-order gradients work and the same code runs on torch tensors.
"""

from __future__ import annotations

from .activation import erf, gelu, gelu_backward, silu
from .dropout import dropout
from .normalization import layer_norm
from .sparse import embedding, embedding_renorm_

__all__ = ["erf", "gelu", "gelu_backward", "silu", "layer_norm", "embedding",
           "embedding_renorm_", "dropout"]
