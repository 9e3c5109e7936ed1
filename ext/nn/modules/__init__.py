"""The Module classes of ``ext.nn``, one file per topic as in torch.nn.modules."""

from .module import Module
from .activation import GELU, ReLU, SiLU, Sigmoid, Softmax, Tanh
from .container import ModuleList, Sequential
from .dropout import Dropout
from .linear import Identity, Linear
from .loss import CrossEntropyLoss, MSELoss
from .normalization import LayerNorm
from .sparse import Embedding

__all__ = ["Module", "Sequential", "ModuleList", "Linear", "Identity", "ReLU", "Sigmoid",
           "Tanh", "GELU", "SiLU", "Softmax", "Dropout", "LayerNorm", "Embedding", "MSELoss",
           "CrossEntropyLoss"]
