"""Recorders of what flows through the modules of a model: activations (forward hooks) and
gradients (full backward hooks), on ext.nn and torch.nn modules alike."""

from __future__ import annotations

from typing import Any

from .trace import note

__all__ = ["ModuleRecorder"]


def _detached(value: Any) -> Any:
    """``value`` with every tensor detached (a recorded tensor must not keep the graph alive)."""
    if hasattr(value, "detach") and hasattr(value, "grad_fn"):
        return value.detach()
    if isinstance(value, (tuple, list)):
        return type(value)(_detached(v) for v in value)
    return value


class ModuleRecorder:
    """Records each module's output on forward and its gradients on backward.

    ``activations[name]`` is the module's (detached) output, ``grad_outputs[name]`` and
    ``grad_inputs[name]`` the tuples a full backward hook receives; with ``keep="all"`` each
    holds a list, one entry per call. ``leaves_only`` records only modules without children;
    ``names`` picks modules by their ``named_modules`` name.

    ``gradients="full"`` (or True) uses full backward hooks. They wrap a module's output in a
    ``BackwardHookFunction`` view, which an in-place op right after the module refuses (as in
    torch, e.g. before ``ReLU(inplace=True)``); ``gradients="outputs"`` records only
    ``grad_outputs``, with tensor hooks on the outputs, which tolerate such in-place ops (the
    hook gets the gradient of the value the module returned). False records no gradients.
    """

    def __init__(self, model: Any, activations: bool = True, gradients: bool | str = "full",
                 leaves_only: bool = True, names: list[str] | None = None,
                 keep: str = "last") -> None:
        if gradients not in (True, False, None, "full", "outputs"):
            raise ValueError("ModuleRecorder(): gradients must be 'full', 'outputs' or False, "
                             f"got {gradients!r}")
        if keep not in ("last", "all"):
            raise ValueError(f"ModuleRecorder(): keep must be 'last' or 'all', got {keep!r}")
        if not hasattr(model, "named_modules"):
            raise TypeError(f"ModuleRecorder(): model must be a module, not "
                            f"{type(model).__name__}")
        modules = dict(model.named_modules())
        if names is not None:
            missing = [n for n in names if n not in modules]
            if missing:
                raise ValueError(f"ModuleRecorder(): no submodule named {missing}")
            modules = {n: modules[n] for n in names}
        elif leaves_only:
            modules = {n: m for n, m in modules.items() if not any(True for _ in m.children())}
        self.keep = keep
        self.activations: dict[str, Any] = {}
        self.grad_outputs: dict[str, Any] = {}
        self.grad_inputs: dict[str, Any] = {}
        self.handles = []
        for name, module in modules.items():
            if activations:
                self.handles.append(module.register_forward_hook(self._on_forward(name)))
            if gradients == "outputs":
                self.handles.append(module.register_forward_hook(self._on_output(name)))
            elif gradients:
                self.handles.append(module.register_full_backward_hook(self._on_backward(name)))

    def _store(self, table: dict, name: str, value: Any) -> None:
        if self.keep == "all":
            table.setdefault(name, []).append(value)
        else:
            table[name] = value

    def _on_forward(self, name: str):
        def forward_hook(module, args, output):
            self._store(self.activations, name, _detached(output))
        return forward_hook

    def _on_backward(self, name: str):
        def backward_hook(module, grad_input, grad_output):
            note("ModuleRecorder", name)
            self._store(self.grad_inputs, name, _detached(tuple(grad_input)))
            self._store(self.grad_outputs, name, _detached(tuple(grad_output)))
        return backward_hook

    def _on_output(self, name: str):
        def forward_hook(module, args, output):
            outputs = output if isinstance(output, (tuple, list)) else (output,)
            tensors = [t for t in outputs if getattr(t, "requires_grad", False)]
            grads: list = [None] * len(tensors)

            def make_hook(i: int):
                def output_grad_hook(grad):
                    grads[i] = grad.detach()
                    if all(g is not None for g in grads):
                        note("ModuleRecorder", name)
                        self._store(self.grad_outputs, name, tuple(grads))
                return output_grad_hook
            for i, t in enumerate(tensors):
                t.register_hook(make_hook(i))
        return forward_hook

    def clear(self) -> None:
        """Forget what was recorded (the hooks stay)."""
        self.activations.clear()
        self.grad_outputs.clear()
        self.grad_inputs.clear()

    def remove(self) -> None:
        """Remove every hook this recorder registered."""
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def __enter__(self) -> ModuleRecorder:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()
