"""``ext.nn.init``: torch.nn.init's initializers, filling tensors in place from ext's generator.

Each writes under ``no_grad`` (a parameter is a leaf that requires grad, which an in-place op
may only touch untracked), draws its values from ``ext``'s default generator (or the
``generator`` given) as torch's CPU kernels draw them, and returns the tensor: after the same
seed, the numbers are torch's.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _factories, _random
from .._tensor import Tensor, wrap
from ..autograd.grad_mode import no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "ones_", "zeros_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_"]

_LINEAR_FNS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
               "conv_transpose3d")


def _write(tensor: Tensor, values) -> Tensor:
    with no_grad():
        return tensor.copy_(wrap(np.asarray(values, dtype=tensor._data.dtype)))


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (the factor that keeps activations' variance)."""
    if nonlinearity in _LINEAR_FNS or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0,
             generator: _factories.Generator | None = None) -> Tensor:
    """Fill ``tensor`` with values drawn uniformly from [a, b)."""
    data = tensor._data
    values = _random.uniform(_factories._rng(generator), data.size, data.dtype, a, b)
    return _write(tensor, values.reshape(data.shape))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: _factories.Generator | None = None) -> Tensor:
    """Fill ``tensor`` with values drawn from N(mean, std²)."""
    data = tensor._data
    values = _random.normal(_factories._rng(generator), data.size, data.dtype, mean, std,
                            contiguous=data.flags.c_contiguous)
    return _write(tensor, values.reshape(data.shape))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill ``tensor`` with ``val``."""
    return _write(tensor, np.full(tensor._data.shape, val))


def ones_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with 0."""
    return constant_(tensor, 0.0)


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return tensor.size(1) * receptive_field_size, tensor.size(0) * receptive_field_size


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor: Tensor, gain: float = 1.0,
                    generator: _factories.Generator | None = None) -> Tensor:
    """Glorot initialization: uniform on ±gain √(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0,
                   generator: _factories.Generator | None = None) -> Tensor:
    """Glorot initialization: normal with std gain √(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float | None:
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu",
                     generator: _factories.Generator | None = None) -> Tensor:
    """He initialization: uniform on ±gain √(3 / fan), with the gain of ``nonlinearity``."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu",
                    generator: _factories.Generator | None = None) -> Tensor:
    """He initialization: normal with std gain / √fan, with the gain of ``nonlinearity``."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)
