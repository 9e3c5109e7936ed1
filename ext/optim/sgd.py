"""``ext.optim.sgd``: stochastic gradient descent with optional momentum, torch.optim.SGD's rule.

Per parameter, with gradient g (negated under ``maximize``)::

    g = g + weight_decay * p
    b = g                                   (first step: a copy of g)
    b = momentum * b + (1 - dampening) * g  (later steps)
    g = g + momentum * b  if nesterov else  b
    p = p - lr * g
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad, no_grad
from .optimizer import Optimizer, ParamsT, _to_float

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with (Nesterov) momentum and L2 weight decay.

    ``foreach`` and ``fused`` are accepted for torch compatibility and change nothing: the
    mini-engine has one implementation. The momentum buffer of a parameter is
    ``state[p]['momentum_buffer']``.
    """

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float | Tensor = 0, nesterov: bool = False,
                 *, maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a ``.grad`` once; return what ``closure`` returned.

        ``closure`` (re-evaluate the model and return the loss) runs with grad mode on; the
        update itself runs under ``no_grad``, in place on the parameters.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()

        with no_grad():
            for group in self.param_groups:
                params = [p for p in group["params"] if p.grad is not None]
                momentum = group["momentum"]
                buffers = ([self.state[p].get("momentum_buffer") for p in params]
                           if momentum != 0 else [])
                sgd(params, [p.grad for p in params], buffers,
                    weight_decay=group["weight_decay"], momentum=momentum, lr=group["lr"],
                    dampening=group["dampening"], nesterov=group["nesterov"],
                    maximize=group["maximize"])
                if momentum != 0:
                    for p, buffer in zip(params, buffers):
                        self.state[p]["momentum_buffer"] = buffer
        return loss


def sgd(params: list[Tensor], d_p_list: list[Tensor], momentum_buffer_list: list[Tensor | None],
        *, weight_decay: float | Tensor, momentum: float, lr: float | Tensor, dampening: float,
        nesterov: bool, maximize: bool) -> None:
    """The SGD update on lists of parameters, gradients and momentum buffers (functional API).

    A ``None`` buffer is created (as a copy of the gradient) and stored back into
    ``momentum_buffer_list``. Call it under ``no_grad``.
    """
    lr = _to_float(lr)
    weight_decay = _to_float(weight_decay)
    for i, param in enumerate(params):
        grad = -d_p_list[i] if maximize else d_p_list[i]
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if momentum != 0:
            buf = momentum_buffer_list[i]
            if buf is None:
                buf = grad.detach().clone()
                momentum_buffer_list[i] = buf
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            grad = grad.add(buf, alpha=momentum) if nesterov else buf
        param.add_(grad, alpha=-lr)
