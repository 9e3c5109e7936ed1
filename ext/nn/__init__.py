"""``ext.nn``: what training a model on the mini-engine needs, with torch.nn's names.

For now this is ``ext.nn.functional`` (activations, ``linear`` and the losses).
"""

from . import functional
