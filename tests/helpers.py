"""Small helpers shared by the op tests: NumPy-built inputs handed to either backend."""

from __future__ import annotations

import numpy as np

ANY = "any"  # magnitude in [0.5, 2] with a random sign: away from 0, the kink of abs and relu
POS = "pos"  # in [0.5, 2]: inside the domain of log, sqrt and real powers


def sample(rng, shape, domain=ANY, dtype=np.float64):
    """Random values of ``shape`` in the given domain."""
    values = rng.uniform(0.5, 2.0, size=shape)
    if domain == ANY:
        values = values * rng.choice([-1.0, 1.0], size=shape)
    return np.asarray(values, dtype=dtype)


def leaf(T, array, requires_grad=True):
    """A leaf tensor of backend ``T`` holding ``array``."""
    return T.tensor(array, requires_grad=requires_grad)


def to_np(t):
    """The values of a tensor of either backend as a NumPy array."""
    return t.detach().numpy()
