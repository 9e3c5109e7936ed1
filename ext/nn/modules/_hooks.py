"""Module hooks: registering them (``ModuleHooks``, a base of ``Module``) and calling a module
through them (``call_with_hooks``).

Full backward hooks work as in torch: ``BackwardHookFunction``, an identity custom Function, is
applied to the module's positional tensor inputs before ``forward`` and to its outputs after.
The output-side node's post-hook receives the gradients w.r.t. the outputs and runs the
``full_backward_pre_hook``s; the input-side node's post-hook receives the gradients w.r.t. the
inputs and runs the ``full_backward_hook``s. So, in backward: output tensor hooks, backward
pre-hooks, the module's own nodes (parameters' hooks included), backward hooks, input tensor
hooks. The deprecated ``register_backward_hook`` is a post-hook on the first output's node.
"""

from __future__ import annotations

import functools
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from ..._tensor import Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled
from ...autograd.graph import RemovableHandle, add_hook

__all__ = ["ModuleHooks", "BackwardHookFunction", "BackwardHook", "call_with_hooks",
           "MIXED_BACKWARD_HOOKS"]

MIXED_BACKWARD_HOOKS = ("Cannot use both regular backward hooks and full backward hooks on a "
                        "single Module. Please use only one of them.")
_NO_INPUT_GRAD = (
    "Full backward hook is firing when gradients are computed with respect to module outputs "
    "since no inputs require gradients. See https://docs.pytorch.org/docs/main/generated/"
    "torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for more details.")


def _move_to_front(hooks: dict, key: int) -> None:
    items = list(hooks.items())
    hooks.clear()
    hooks[key] = items[-1][1]
    hooks.update(items[:-1])


class ModuleHooks:
    """The hook registration methods of ``Module`` (the tables live on each module)."""

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Call ``hook(module, args)`` before ``forward`` (``hook(module, args, kwargs)`` with
        ``with_kwargs``); a returned value replaces the arguments."""
        handle = add_hook(self._forward_pre_hooks, hook)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(handle.id)
        if prepend:
            _move_to_front(self._forward_pre_hooks, handle.id)
        return handle

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after ``forward``; a returned value replaces
        the output. ``always_call`` runs it even when forward raised."""
        handle = add_hook(self._forward_hooks, hook)
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(handle.id)
        if always_call:
            self._forward_hooks_always_called.add(handle.id)
        if prepend:
            _move_to_front(self._forward_hooks, handle.id)
        return handle

    def register_full_backward_pre_hook(self, hook: Callable,
                                        prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` when the gradients w.r.t. the module's outputs
        are computed; a returned tuple replaces ``grad_output``."""
        handle = add_hook(self._backward_pre_hooks, hook)
        if prepend:
            _move_to_front(self._backward_pre_hooks, handle.id)
        return handle

    def register_full_backward_hook(self, hook: Callable,
                                    prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` when the gradients w.r.t. the
        module's positional tensor inputs are computed; a returned tuple replaces
        ``grad_input``."""
        if self._is_full_backward_hook is False:
            raise RuntimeError(MIXED_BACKWARD_HOOKS)
        self._is_full_backward_hook = True
        handle = add_hook(self._backward_hooks, hook)
        if prepend:
            _move_to_front(self._backward_hooks, handle.id)
        return handle

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """The deprecated backward hook: a post-hook on the node of the module's first output,
        which sees that node's gradients (use ``register_full_backward_hook``)."""
        if self._is_full_backward_hook is True:
            raise RuntimeError(MIXED_BACKWARD_HOOKS)
        self._is_full_backward_hook = False
        return add_hook(self._backward_hooks, hook)


class BackwardHookFunction(Function):
    """The identity on its tensor arguments; its node is where module backward hooks live."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *args):
        return args


class BackwardHook:
    """The backward hooks of one call of a module: captures the gradients w.r.t. its outputs,
    then calls the user's hooks once those w.r.t. its inputs are known."""

    def __init__(self, module, user_hooks: list, user_pre_hooks: list) -> None:
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    @staticmethod
    def _pack_with_none(indices: list, values: tuple, size: int) -> tuple:
        res = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    @staticmethod
    def _unpack_none(indices: list, values: tuple) -> tuple:
        return tuple(values[idx] for idx in indices)

    def _set_user_hook(self, grad_fn) -> None:
        def hook(grad_input, _):
            if self.grad_outputs is None:
                # The gradient reached the inputs without passing through the outputs (double
                # backward): there is nothing to report.
                return None
            res = self._pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
            for user_hook in self.user_hooks:
                out = user_hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                       f"got {len(out)}, but expected {len(res)}")
                res = out
            self.grad_outputs = None
            return self._unpack_none(self.input_tensors_index, res)

        grad_fn.register_hook(hook)

    def _apply_on_tensors(self, fn, args: tuple) -> tuple:
        tensors_idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in tensors_idx]
        if not (any(t.requires_grad for t in tensors) and is_grad_enabled()):
            return args, None
        new_tensors = BackwardHookFunction.apply(*tensors)
        fn(next(t.grad_fn for t in new_tensors if t.grad_fn is not None))
        arg_list = list(args)
        for idx, old, new in zip(tensors_idx, tensors, new_tensors):
            # A tensor that does not require grad passes through as it is (torch's
            # non-differentiable output of the hook Function does not require grad either).
            arg_list[idx] = new if old.requires_grad else old
        return tuple(arg_list), tensors_idx

    def setup_input_hook(self, args: tuple) -> tuple:
        """Route the module's positional tensor inputs through a hook node."""
        res, input_idx = self._apply_on_tensors(self._set_user_hook, args)
        self.n_inputs = len(args)
        self.input_tensors_index = input_idx
        return res

    def setup_output_hook(self, args):
        """Route the module's output tensors through a hook node."""
        def fn(grad_fn) -> None:
            def hook(_, grad_output):
                self.grad_outputs = self._pack_with_none(self.output_tensors_index, grad_output,
                                                         self.n_outputs)
                expected = len(self.grad_outputs)
                for user_pre_hook in self.user_pre_hooks:
                    new = user_pre_hook(self.module, self.grad_outputs)
                    if new is None:
                        continue
                    if len(new) != expected:
                        raise RuntimeError("Backward pre hook returned an invalid number of "
                                           f"grad_output, got {len(new)}, but expected "
                                           f"{expected}")
                    self.grad_outputs = new
                local_grad_outputs = self.grad_outputs
                if self.input_tensors_index is None:
                    # No input requires grad: the backward hooks fire here, on the outputs'.
                    warnings.warn(_NO_INPUT_GRAD, stacklevel=5)
                    grad_inputs = self._pack_with_none([], [], self.n_inputs)
                    for user_hook in self.user_hooks:
                        res = user_hook(self.module, grad_inputs, self.grad_outputs)
                        if res is not None and not (isinstance(res, tuple)
                                                    and all(el is None for el in res)):
                            raise RuntimeError("Backward hook for Modules where no input "
                                               "requires gradient should always return None "
                                               "or None for all gradients.")
                    self.grad_outputs = None
                if local_grad_outputs is None:
                    return None
                return tuple(local_grad_outputs[i] for i in self.output_tensors_index)

            grad_fn.register_hook(hook)

        is_tuple = isinstance(args, tuple)
        if not is_tuple:
            args = (args,)
        res, output_idx = self._apply_on_tensors(fn, args)
        self.n_outputs = len(args)
        self.output_tensors_index = output_idx
        return res if is_tuple else res[0]


class _WrappedHook:
    """A module's legacy backward hook as a node post-hook: ``hook(module, *args)``."""

    def __init__(self, hook, module) -> None:
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.module = weakref.ref(module)

    def __call__(self, *args: Any) -> Any:
        module = self.module()
        if module is None:
            raise RuntimeError("You are trying to call the hook of a dead Module!")
        return self.hook(module, *args)


def _legacy_warning(text: str) -> None:
    warnings.warn(text + " Please use register_full_backward_hook to get the documented "
                  "behavior.", FutureWarning, stacklevel=4)


def _maybe_warn_legacy(inputs, result, grad_fn) -> None:
    """torch's warnings for the cases where a legacy backward hook misses gradients."""
    if isinstance(result, Tensor):
        result = (result,)
    elif not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
        _legacy_warning("Using non-full backward hooks on a Module that does not return a "
                        "single Tensor or a tuple of Tensors is deprecated and will be removed "
                        "in future versions. This hook will be missing some of the grad_output.")
        return
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    elif not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
        _legacy_warning("Using non-full backward hooks on a Module that does not take as input "
                        "a single Tensor or a tuple of Tensors is deprecated and will be "
                        "removed in future versions. This hook will be missing some of the "
                        "grad_input.")
        return
    out_fns = {r.grad_fn for r in result if r.grad_fn is not None}
    if not out_fns or (len(out_fns) == 1 and grad_fn not in out_fns):
        _legacy_warning("Using a non-full backward hook when outputs are nested in python data "
                        "structure is deprecated and will be removed in future versions. This "
                        "hook will be missing some grad_output.")
    elif len(out_fns) > 1:
        _legacy_warning("Using a non-full backward hook when outputs are generated by different "
                        "autograd Nodes is deprecated and will be removed in future versions. "
                        "This hook will be missing some grad_output.")
    elif {i.grad_fn for i in inputs if i.grad_fn is not None} != \
            {n for n, _ in grad_fn.next_functions}:
        _legacy_warning("Using a non-full backward hook when the forward contains multiple "
                        "autograd Nodes is deprecated and will be removed in future versions. "
                        "This hook will be missing some grad_input.")


def _first_tensor(value) -> Tensor:
    while not isinstance(value, Tensor):
        if isinstance(value, dict):
            value = next(v for v in value.values() if isinstance(v, Tensor))
        else:
            value = value[0]
    return value


def call_with_hooks(module, args: tuple, kwargs: dict) -> Any:
    """``module(*args, **kwargs)`` when the module has hooks, in torch's order."""
    result = None
    called_always: set[int] = set()
    try:
        full_hooks, legacy_hooks = [], []
        if module._backward_hooks:
            hooks = list(module._backward_hooks.values())
            if module._is_full_backward_hook:
                full_hooks = hooks
            else:
                legacy_hooks = hooks
        pre_hooks = list(module._backward_pre_hooks.values())
        for hook_id, hook in list(module._forward_pre_hooks.items()):
            if hook_id in module._forward_pre_hooks_with_kwargs:
                res = hook(module, args, kwargs)
                if res is not None:
                    if not (isinstance(res, tuple) and len(res) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {res}.")
                    args, kwargs = res
            else:
                res = hook(module, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
        bw_hook = None
        if full_hooks or pre_hooks:
            bw_hook = BackwardHook(module, full_hooks, pre_hooks)
            args = bw_hook.setup_input_hook(args)
        result = module.forward(*args, **kwargs)
        for hook_id, hook in list(module._forward_hooks.items()):
            if hook_id in module._forward_hooks_always_called:
                called_always.add(hook_id)
            if hook_id in module._forward_hooks_with_kwargs:
                res = hook(module, args, kwargs, result)
            else:
                res = hook(module, args, result)
            if res is not None:
                result = res
        if bw_hook is not None:
            if not isinstance(result, (Tensor, tuple)):
                warnings.warn("For backward hooks to be called, module output should be a "
                              f"Tensor or a tuple of Tensors but received {type(result)}",
                              stacklevel=3)
            result = bw_hook.setup_output_hook(result)
        if legacy_hooks:
            grad_fn = _first_tensor(result).grad_fn
            if grad_fn is not None:
                for hook in legacy_hooks:
                    grad_fn.register_hook(_WrappedHook(hook, module))
                _maybe_warn_legacy(args, result, grad_fn)
        return result
    except Exception:
        _run_always_called(module, args, kwargs, result, called_always)
        raise


def _run_always_called(module, args, kwargs, result, called: set) -> None:
    # Forward hooks registered with always_call run even when forward raised; their own
    # errors are reported as warnings, so that forward's error is the one raised.
    for hook_id, hook in list(module._forward_hooks.items()):
        if hook_id not in module._forward_hooks_always_called or hook_id in called:
            continue
        try:
            if hook_id in module._forward_hooks_with_kwargs:
                hook(module, args, kwargs, result)
            else:
                hook(module, args, result)
        except Exception as e:
            warnings.warn("module forward hook with ``always_call=True`` raised an exception "
                          f"that was silenced as another error was raised in forward: {e}",
                          stacklevel=3)
