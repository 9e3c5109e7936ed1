"""Checks of the arguments that many entry points share (devices, flags, numbers, sizes), each
raising torch's exception type with torch's words, so a bad call fails before any work starts.

They are for factories and other calls off the per-op hot path; ops check their own operands.
The errors for a tensor of the other engine (a torch.Tensor given to ext, an ext.Tensor given to
torch) are here too: each names both types and says what to call instead.
"""

from __future__ import annotations

import builtins
import numbers
import sys

import numpy as np

__all__ = ["check_device", "check_bool", "check_number", "check_int", "as_number",
           "is_torch_tensor", "not_a_tensor", "torch_tensor_given", "mixed_operands",
           "torch_function_given_ext", "wrong_engine_output"]

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


# ---------------------------------------------------------------------------------- two engines
def is_torch_tensor(value) -> builtins.bool:
    """Whether ``value`` is a torch.Tensor (never true before torch is imported: ext does not
    import it)."""
    torch = sys.modules.get("torch")
    tensor_type = getattr(torch, "Tensor", None)
    return tensor_type is not None and isinstance(value, tensor_type)


def torch_tensor_given(fn: str, arg: str = "input", position: int = 1) -> TypeError:
    """The TypeError for a torch.Tensor handed to ext's function ``fn``: the engines' tensors do
    not mix, and the message says what to call instead."""
    return TypeError(
        f"ext.{fn}() got a torch.Tensor as argument '{arg}' (position {position}); ext's "
        f"functions take ext.Tensor. On torch tensors call torch.{fn} or the Tensor method "
        f"(x.{fn}(...)). A Function body that runs on both engines uses the tensor's methods, "
        f"or namespace_of(x).{fn} (ext.functions.namespace_of gives ext or torch for the "
        f"tensor at hand), never ext.{fn}. To move a torch tensor to ext: "
        "ext.tensor(t.detach().numpy()).")


def not_a_tensor(value, fn: str, arg: str = "input", position: int = 1) -> TypeError:
    """torch's TypeError for an argument that must be a tensor; a torch tensor is named as
    such, with what to do."""
    if is_torch_tensor(value):
        return torch_tensor_given(fn, arg, position)
    return TypeError(f"{fn}(): argument '{arg}' (position {position}) must be Tensor, not "
                     f"{type(value).__name__}")


def not_a_tensor_element(value, i: int, fn: str) -> TypeError:
    """torch's TypeError for element ``i`` of a list of tensors that is not one; a torch tensor
    is named as such, with what to do."""
    if is_torch_tensor(value):
        return torch_tensor_given(fn, f"tensors[{i}]", 1)
    return TypeError(f"expected Tensor as element {i} in argument 0, but got "
                     f"{type(value).__name__}")


def mixed_operands(op: str) -> TypeError:
    """The TypeError for an operator between an ext.Tensor and a torch.Tensor."""
    return TypeError(
        f"{op}(): cannot combine an ext.Tensor with a torch.Tensor: the two engines' tensors do "
        "not mix. Convert one side: torch.from_numpy(x.numpy()) makes an ext tensor a torch "
        "one, ext.tensor(t.detach().numpy()) makes a torch tensor an ext one.")


def torch_function_given_ext(name: str) -> TypeError:
    """The TypeError for an ext.Tensor handed to torch's function ``name`` (a module, or a
    torch tensor's operator or method)."""
    return TypeError(
        f"{name}() got an ext.Tensor; torch functions take torch.Tensor: convert with "
        "torch.from_numpy(t.numpy()) (or torch.as_tensor(t.numpy())), or use ext's own "
        "functions and modules (ext.*, ext.nn) on ext tensors.")


def wrong_engine_output(function: str, index: int, got: str, engine: str) -> TypeError:
    """The TypeError for a Function whose forward returns the other engine's tensor: the graph
    would be lost."""
    return TypeError(
        f"{function}.forward returned {got} as output {index}, on {engine} inputs: a "
        f"Function's outputs must be tensors of its inputs' engine ({engine}), or the graph is "
        "lost. Build them from the inputs, with their methods (x.exp(), x.new_zeros(...)) or "
        "namespace_of(x) (ext.functions.namespace_of), not with the other engine's "
        "functions.")
