"""The ops behind ``ext.nn``: erf, gelu, silu, layer_norm, embedding and dropout.

Each backward has a NumPy path for a plain backward and a path made of tensor ops for
``create_graph=True`` (and for torch tensors under the bridge), so higher-order gradients work.
Each op also states its forward-mode rule, ``jvp``, in tensor ops.
"""

from __future__ import annotations

from .activation import erf, gelu, gelu_backward, silu
from .dropout import dropout
from .normalization import layer_norm
from .sparse import embedding, embedding_renorm_

__all__ = ["erf", "gelu", "gelu_backward", "silu", "layer_norm", "embedding",
           "embedding_renorm_", "dropout", "METHODS", "FUNCTIONS"]

METHODS = {"erf": erf}
FUNCTIONS = {"erf": erf, "embedding": embedding, "layer_norm": layer_norm}
