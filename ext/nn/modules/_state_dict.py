"""``Module.state_dict`` and ``Module.load_state_dict``, with torch's keys, checks and messages."""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Mapping
from typing import Any

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..parameter import Parameter

__all__ = ["state_dict", "load_state_dict"]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys the module expected but did not get, and the
    keys it got but does not have."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def state_dict(module, destination: dict | None, prefix: str, keep_vars: bool) -> dict:
    """The module's parameters, then its persistent buffers, then its children's, by dotted
    name; detached unless ``keep_vars``."""
    if destination is None:
        destination = OrderedDict()
        destination._metadata = OrderedDict()
    metadata = getattr(destination, "_metadata", None)
    if metadata is not None:
        metadata[prefix[:-1]] = {"version": module._version}
    for name, param in module._parameters.items():
        if param is not None:
            destination[prefix + name] = param if keep_vars else param.detach()
    for name, buf in module._buffers.items():
        if buf is not None and name not in module._non_persistent_buffers_set:
            destination[prefix + name] = buf if keep_vars else buf.detach()
    for name, child in module._modules.items():
        if child is not None:
            child.state_dict(destination=destination, prefix=prefix + name + ".",
                             keep_vars=keep_vars)
    return destination


def _load_own(module, state: Mapping, prefix: str, assign: bool, missing: list,
              unexpected: list, errors: list) -> None:
    persistent = {k: v for k, v in module._buffers.items()
                  if k not in module._non_persistent_buffers_set}
    local = {k: v for k, v in (*module._parameters.items(), *persistent.items())
             if v is not None}
    for name, param in local.items():
        key = prefix + name
        if key not in state:
            missing.append(key)
            continue
        value = state[key]
        if not isinstance(value, Tensor):
            errors.append(f'While copying the parameter named "{key}", expected ext.Tensor or '
                          f"Tensor-like object from checkpoint but received {type(value)}")
            continue
        if param.dim() == 0 and value.dim() == 1 and value.shape[0] == 1:
            # A 1-element vector loads into a 0-d parameter (checkpoints of old versions).
            value = value[0]
        if value.shape != param.shape:
            errors.append(f"size mismatch for {key}: copying a param with shape {value.shape} "
                          f"from checkpoint, the shape in current model is {param.shape}.")
            continue
        try:
            with no_grad():
                if assign:
                    if isinstance(param, Parameter) and not isinstance(value, Parameter):
                        value = Parameter(value, requires_grad=param.requires_grad)
                    setattr(module, name, value)
                else:
                    param.copy_(value)
        except Exception as ex:  # torch reports any failure to copy as a load error
            errors.append(f'While copying the parameter named "{key}", whose dimensions in the '
                          f"model are {param.size()} and whose dimensions in the checkpoint are "
                          f"{value.size()}, an exception occurred : {ex.args}.")
    for key in state:
        if key.startswith(prefix):
            head = key[len(prefix):].split(".", 1)
            if (len(head) > 1 and head[0] not in module._modules) or \
                    (len(head) == 1 and head[0] not in local):
                unexpected.append(key)


def load_state_dict(module, state: Mapping[str, Any], strict: bool, assign: bool):
    """Copy ``state`` into the module's parameters and buffers, recursively; raise torch's
    RuntimeError listing missing and unexpected keys (when ``strict``) and size mismatches."""
    if not isinstance(state, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state)}.")
    missing: list[str] = []
    unexpected: list[str] = []
    errors: list[str] = []

    def load(mod, local_state: Mapping, prefix: str = "") -> None:
        _load_own(mod, local_state, prefix, assign, missing, unexpected, errors)
        for name, child in mod._modules.items():
            if child is not None:
                child_prefix = prefix + name + "."
                load(child, {k: v for k, v in local_state.items()
                             if k.startswith(child_prefix)}, child_prefix)

    load(module, OrderedDict(state))
    if strict:
        if unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                ", ".join(f'"{k}"' for k in unexpected)))
        if missing:
            errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                ", ".join(f'"{k}"' for k in missing)))
    if errors:
        raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
            type(module).__name__, "\n\t".join(errors)))
    return _IncompatibleKeys(missing, unexpected)
