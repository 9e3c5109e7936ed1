"""``ext.nn``: what training a model on the mini-engine needs, with torch.nn's names.

``Module`` and its hooks, ``Parameter``, the layers (``Linear``, ``LayerNorm``, ``Embedding``,
activations, ``Dropout``), containers (``Sequential``, ``ModuleList``), losses, ``ext.nn.init``
and ``ext.nn.functional``; ``ext.nn.pack`` holds the drop-in pack's own ops (SwiGLU, Entmax15,
...) as modules.
"""

from . import functional
from .parameter import Parameter
from .modules import (
    GELU,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Identity,
    LayerNorm,
    Linear,
    Module,
    ModuleList,
    MSELoss,
    ReLU,
    Sequential,
    SiLU,
    Sigmoid,
    Softmax,
    Tanh,
)
from . import init, pack

__all__ = ["functional", "init", "pack", "Parameter", "Module", "Sequential", "ModuleList",
           "Linear", "Identity", "ReLU", "Sigmoid", "Tanh", "GELU", "SiLU", "Softmax", "Dropout",
           "LayerNorm", "Embedding", "MSELoss", "CrossEntropyLoss"]
