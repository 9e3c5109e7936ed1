"""Checks of the arguments that many entry points share (devices, flags, numbers, sizes), each
raising torch's exception type with torch's words, so a bad call fails before any work starts.

They are for factories and other calls off the per-op hot path; ops check their own operands.
"""

from __future__ import annotations

import builtins
import numbers

import numpy as np

__all__ = ["check_device", "check_bool", "check_number", "check_int", "as_number"]

_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
                 "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")


def check_device(device, fn: str = "") -> None:
    """Accept the CPU (None, ``"cpu"``, ``"cpu:0"``, a cpu ``ext.device``); refuse other
    devices as torch does on a machine without them."""
    if device is None:
        return
    kind = getattr(device, "type", None)
    if kind is None:
        if not isinstance(device, str):
            raise TypeError(f"{fn}(): argument 'device' must be ext.device, not "
                            f"{type(device).__name__}")
        kind = device.split(":")[0]
        if kind not in _DEVICE_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at "
                               f"start of device string: {device}")
    if kind == "cuda":
        raise AssertionError("ext not compiled with CUDA enabled")
    if kind != "cpu":
        raise RuntimeError(f"ext tensors live on the CPU only, got device {device!r}")


def check_bool(value, fn: str, name: str, position: int) -> builtins.bool:
    """A bool argument: torch refuses anything else (even 0 and 1) with a TypeError."""
    if type(value) is not builtins.bool and not isinstance(value, np.bool_):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be bool, not "
                        f"{type(value).__name__}")
    return builtins.bool(value)


def check_number(value, fn: str, name: str, position: int):
    """A Number argument (a fill value, a bound): a Python or NumPy number or a one-element
    tensor; a string or None is a TypeError."""
    if isinstance(value, (numbers.Number, np.generic)) or \
            hasattr(value, "_data") and value._data.size == 1:
        return value
    raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be Number, not "
                    f"{type(value).__name__}")


def as_number(value):
    """What torch's parser reads from a Number argument: a Python or NumPy number (as a Python
    number, so that it promotes as a Python scalar), or a 0-d tensor that does not require grad
    (as its value); None for anything else."""
    if isinstance(value, numbers.Number) and not isinstance(value, np.generic):
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biufc":
        return value.item()
    if hasattr(value, "_data") and value._data.ndim == 0 and not value._requires_grad:
        return value._data.item()
    return None


def check_int(value, fn: str, name: str, position: int) -> builtins.int:
    """An int argument: a float (even 2.0) or a bool is a TypeError, as in torch."""
    if isinstance(value, (builtins.int, np.integer)) and not isinstance(value, builtins.bool):
        return builtins.int(value)
    raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be int, not "
                    f"{type(value).__name__}")
