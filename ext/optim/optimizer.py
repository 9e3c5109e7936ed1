"""``ext.optim.optimizer``: the ``Optimizer`` base class, torch.optim.Optimizer's bookkeeping.

An optimizer holds ``param_groups`` (dicts of tensors plus their hyperparameters, filled from
``defaults``) and ``state`` (a dict of buffers per parameter). Subclasses implement ``step``;
the base class owns everything around it: building and validating groups, ``zero_grad``, and
``state_dict``/``load_state_dict`` in torch's layout, where parameters become integer indices.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable
from copy import deepcopy
from itertools import chain
from typing import Any

from .._dtype import float32, float64, get_default_dtype
from .._factories import tensor
from .._tensor import Tensor

__all__ = ["Optimizer"]

ParamsT = Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]]


def _typename(obj: Any) -> str:
    """torch.typename: ``ext.DoubleTensor`` for a tensor, the qualified class name otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = type(obj)
    module = cls.__module__
    return cls.__qualname__ if module in (None, "builtins") else f"{module}.{cls.__qualname__}"


def _scalar_dtype():
    """The dtype of a step counter: float64 under a float64 default dtype, float32 otherwise."""
    return float64 if get_default_dtype() == float64 else float32


def _to_float(value: float | Tensor) -> float:
    """A hyperparameter as a Python number (a one-element tensor gives its item)."""
    return value.item() if isinstance(value, Tensor) else value


def _step_counter(value: float = 0.0) -> Tensor:
    """A 0-d tensor counting steps, as torch keeps ``state['step']`` (on the CPU, not fused)."""
    return tensor(float(value), dtype=_scalar_dtype())


class Optimizer:
    """Base class of all optimizers: parameter groups, per-parameter state and their saving.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts each holding
    ``'params'`` and the hyperparameters that override ``defaults`` for that group.
    """

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        if defaults.get("differentiable"):
            raise NotImplementedError("ext.optim does not support differentiable=True: steps "
                                      "always run under no_grad")
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []

        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.defaults.setdefault("differentiable", False)

    def __repr__(self) -> str:
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters, with its own hyperparameters, to ``param_groups``.

        Options the group does not set are taken from ``defaults``. A parameter may belong to
        one group only; every group must be given with names or every group without.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")

        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            params = list(params)

        names = [p[0] for p in params if isinstance(p, tuple)]
        param_group["params"] = [p[1] if isinstance(p, tuple) else p for p in params]
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = names

        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(param))
            if not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len(set(params)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)

        seen: set[Tensor] = set()
        for group in self.param_groups:
            seen.update(group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                kind = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {kind} to the optimizer")
        if not seen.isdisjoint(params):
            raise ValueError("some parameters appear in more than one parameter group")

        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors: to ``None``, or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update the parameters once from their ``.grad``; return what ``closure`` returned."""
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state as ``{'state': {index: {...}}, 'param_groups': [...]}``.

        Parameters are replaced by their position across all groups (in group order), both as
        the keys of ``state`` and in each group's ``'params'``. The state's tensors are the
        optimizer's own buffers, not copies, as in torch.
        """
        index_of: dict[int, int] = {}
        start = 0

        def pack_group(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                index_of.setdefault(id(p), i)
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        state = {(index_of[id(k)] if isinstance(k, Tensor) else k): v
                 for k, v in self.state.items()}
        return {"state": state, "param_groups": param_groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a ``state_dict()``: hyperparameters per group and the buffers per parameter.

        Parameters are matched by position, so the groups must have the sizes of this
        optimizer's groups. Floating-point buffers take their parameter's dtype; the step
        counter keeps its own.
        """
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")

        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param: Tensor, value: Any, key: Any = None) -> Any:
            if isinstance(value, Tensor):
                if key == "step":
                    return value
                if param.is_floating_point():
                    return value.to(dtype=param.dtype, device=param.device)
                return value.to(device=param.device)
            if isinstance(value, dict):
                return {k: cast(param, v, key=k) for k, v in value.items()}
            if isinstance(value, Iterable) and not isinstance(value, str):
                return type(value)(cast(param, v) for v in value)
            return value

        state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = cast(id_map[k], v)
            else:
                state[k] = v

        for group, new_group in zip(groups, saved_groups):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
        self.__setstate__({"state": state, "param_groups": saved_groups})
