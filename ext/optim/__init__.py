"""``ext.optim``: optimizers that update parameters in place from their ``.grad``, as torch.optim.

``SGD``, ``Adam`` and ``AdamW`` follow torch 2.13's single-tensor update rules step for step, so
a model trained from the same weights follows torch's loss curve; ``Optimizer`` is their base
(parameter groups, ``zero_grad``, ``state_dict``/``load_state_dict``).
"""

from . import adam, optimizer, sgd
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Adam", "AdamW", "Optimizer", "SGD"]
