"""``ext.nn.Module``: the base class of layers and models, with torch.nn.Module's behaviour.

Assigning a Parameter, a Module or (through ``register_buffer``) a tensor to an attribute
registers it, in order, in ``_parameters``, ``_modules`` or ``_buffers``; everything that walks a
model (``parameters()``, ``state_dict()``, ``train()``, ``to()``, ``repr``) follows those dicts.
Calling a module runs ``forward`` between its hooks (see ``ext.nn.modules._hooks``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..._args import check_device
from ..._dtype import dtype as _dtype_cls
from ..._tensor import Tensor, device
from ...autograd.grad_mode import no_grad
from ...autograd.graph import hook_dict
from ..parameter import Parameter, mark_parameter
from . import _hooks, _state_dict
from ._hooks import ModuleHooks
from ._state_dict import _IncompatibleKeys

__all__ = ["Module"]


def _typename(obj: Any) -> str:
    """torch.typename: ``ext.FloatTensor`` for a tensor, the qualified class name otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = type(obj)
    module = cls.__module__
    return cls.__qualname__ if module in (None, "builtins") else f"{module}.{cls.__qualname__}"


def _add_indent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    rest = [(" " * spaces) + line if line.strip() else "" for line in lines[1:]]
    return lines[0] + "\n" + "\n".join(rest)


class Module(ModuleHooks):
    """Base class for all neural network modules: subclasses set parameters and submodules as
    attributes in ``__init__`` (after ``super().__init__()``) and define ``forward``."""

    training: bool
    _version: int = 1

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword "
                            f"argument '{next(iter(kwargs))}'")
        if args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_modules", {})
        # Hook tables are weakly referenceable dicts, so that handles do not keep them alive.
        for name in ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks",
                     "_backward_hooks"):
            setattr_(self, name, hook_dict())
        setattr_(self, "_forward_pre_hooks_with_kwargs", set())
        setattr_(self, "_forward_hooks_with_kwargs", set())
        setattr_(self, "_forward_hooks_always_called", set())
        setattr_(self, "_is_full_backward_hook", None)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation a module performs when called; every subclass defines it."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks):
            return self.forward(*args, **kwargs)
        return _hooks.call_with_hooks(self, args, kwargs)

    # ------------------------------------------------------------------ registration
    def register_parameter(self, name: str, param: Tensor | None) -> None:
        """Add a parameter (a ``Parameter``, or None for a declared but absent one)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter", self._parameters)
        if param is not None:
            if not isinstance(param, Parameter):
                raise TypeError(f"cannot assign '{_typename(param)}' object to parameter "
                                f"'{name}' (ext.nn.Parameter or None required)")
            if param._grad_fn is not None:
                raise ValueError(
                    f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters "
                    f"must be created explicitly. To express '{name}' as a function of another "
                    "Tensor, compute the value in the forward() method.")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is part of the module's state but not a parameter (a running
        statistic, say); ``persistent=False`` leaves it out of ``state_dict``."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(ext Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def _check_name(self, name: Any, kind: str, table: dict) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in table:
            raise KeyError(f"attribute '{name}' already exists")

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under ``name`` (it becomes an attribute)."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    def register_module(self, name: str, module: Module | None) -> None:
        """An alias of ``add_module``."""
        self.add_module(name, module)

    def get_submodule(self, target: str) -> Module:
        """The submodule at the dotted path ``target`` (``""`` is the module itself)."""
        if target == "":
            return self
        mod: Module = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, d, self._buffers, self._modules,
                              self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(ext.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            modules = d.get("_modules")
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, d, self._parameters, self._buffers,
                              self._non_persistent_buffers_set)
            modules[name] = value
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(ext.nn.Module or None expected)")
            d["_modules"][name] = value
        elif d.get("_buffers") is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(ext.nn.Buffer, ext.Tensor or None expected)")
            self.register_buffer(name, value, name not in self._non_persistent_buffers_set)
        else:
            object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name: str, *tables) -> None:
        for t in tables:
            if name in t:
                if isinstance(t, dict):
                    del t[name]
                else:
                    t.discard(name)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        keys = (dir(type(self)) + list(self.__dict__) + list(self._parameters)
                + list(self._modules) + list(self._buffers))
        return sorted(k for k in keys if not k[0].isdigit())

    def __getstate__(self) -> dict:
        return self.__dict__.copy()

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        # A copied module holds copies of its parameters: they are parameters too.
        for p in self._parameters.values():
            if p is not None:
                mark_parameter(p)

    # ------------------------------------------------------------------ iteration
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """This module and every submodule, depth first, with their dotted names."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name,
                                            remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """This module and every submodule (each once)."""
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """The direct submodules with their names (each once)."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def children(self) -> Iterator[Module]:
        """The direct submodules."""
        for _, module in self.named_children():
            yield module

    def _named_members(self, get_members: Callable, prefix: str, recurse: bool,
                       remove_duplicate: bool) -> Iterator[tuple[str, Tensor]]:
        memo: set[int] = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for k, v in get_members(module):
                # Tensors hash by identity here: a shared parameter is listed once.
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield module_prefix + ("." if module_prefix else "") + k, v

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """The parameters with their dotted names (``'0.weight'``), each once."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                       remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Tensor]:
        """The parameters of this module (and, with ``recurse``, of its submodules)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """The buffers with their dotted names."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                       remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The buffers of this module (and, with ``recurse``, of its submodules)."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ------------------------------------------------------------------ modes and gradients
    def train(self, mode: bool = True) -> Module:
        """Set training mode (``mode=False``: evaluation) on this module and its submodules."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        """Set evaluation mode (dropout off): ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set ``requires_grad`` on every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the parameters' gradients: to None (the default) or to zeros in place."""
        for p in self.parameters():
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

    # ------------------------------------------------------------------ state
    def state_dict(self, *, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict:
        """Parameters and persistent buffers by dotted name, detached (unless ``keep_vars``)."""
        return _state_dict.state_dict(self, destination, prefix, keep_vars)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Copy values from ``state_dict`` into the parameters and buffers; with ``strict``,
        missing or unexpected keys raise. Returns the keys that did not match."""
        return _state_dict.load_state_dict(self, state_dict, strict, assign)

    # ------------------------------------------------------------------ conversions
    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every submodule (children first) and then on this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _apply(self, fn: Callable[[Tensor], Tensor]) -> Module:
        for module in self.children():
            module._apply(fn)
        for p in self._parameters.values():
            if p is None:
                continue
            # The parameter object stays; its values are replaced, as torch's ``.data =``.
            with no_grad():
                p.data = fn(p)
                if p._grad is not None:
                    p._grad.data = fn(p._grad)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Convert floating parameters and buffers to a dtype (given as a dtype or a tensor);
        the device can only be the CPU."""
        target = kwargs.get("dtype")
        for a in (*args, kwargs.get("device"), kwargs.get("tensor")):
            if isinstance(a, _dtype_cls):
                target = a
            elif isinstance(a, Tensor):
                target = a.dtype
            elif isinstance(a, (str, device)):
                check_device(a, "to")
        if target is None:
            return self
        if not target.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={target}")
        return self._apply(lambda t: t.to(target) if t.is_floating_point() else t)

    def float(self) -> Module:
        """Convert floating parameters and buffers to float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> Module:
        """Convert floating parameters and buffers to float64."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> Module:
        """Convert floating parameters and buffers to float16."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self) -> Module:
        """Convert floating parameters and buffers to bfloat16."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def cpu(self) -> Module:
        """ext modules live on the CPU already."""
        return self

    # ------------------------------------------------------------------ printing
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The module's own settings, shown inside its repr (subclasses override it)."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): {_add_indent(repr(module), 2)}"
                       for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

