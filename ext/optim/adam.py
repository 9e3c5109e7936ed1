"""``ext.optim.adam``: Adam and AdamW, torch.optim's rules with bias-corrected moments.

Per parameter, at step t with gradient g (negated under ``maximize``)::

    p = p * (1 - lr * weight_decay)     (AdamW: decoupled decay)
    g = g + weight_decay * p            (Adam: L2 penalty in the gradient)
    m = m + (1 - beta1) * (g - m)       (torch's lerp)
    v = beta2 * v + (1 - beta2) * g * g
    v_max = max(v_max, v)               (amsgrad; v_max replaces v below)
    p = p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)

The state of a parameter is ``step`` (a 0-d float tensor, as torch keeps it), ``exp_avg`` (m),
``exp_avg_sq`` (v) and, with ``amsgrad``, ``max_exp_avg_sq`` (v_max).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._factories import zeros_like
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad, no_grad
from .optimizer import Optimizer, ParamsT, _step_counter, _to_float

__all__ = ["Adam", "AdamW", "adam"]


class Adam(Optimizer):
    """Adam: steps scaled by running averages of the gradient and of its square.

    ``decoupled_weight_decay=True`` makes it AdamW. ``foreach``, ``fused`` and ``capturable``
    are accepted for torch compatibility and change nothing: the mini-engine has one
    implementation.
    """

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not (all(isinstance(b, float) for b in betas)
                or all(isinstance(b, Tensor) for b in betas)):
            raise ValueError("betas must be either both floats or both Tensors")
        for i, beta in enumerate(betas):
            if isinstance(beta, Tensor) and beta.numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("fused", None)
            for p in group["params"]:
                p_state = self.state.get(p, {})
                # A step saved as a plain number (old checkpoints) becomes the 0-d tensor.
                if p_state and not isinstance(p_state["step"], Tensor):
                    p_state["step"] = _step_counter(p_state["step"])

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a ``.grad`` once; return what ``closure`` returned.

        ``closure`` (re-evaluate the model and return the loss) runs with grad mode on; the
        update itself runs under ``no_grad``, in place on the parameters. A parameter's state
        is created at its first update.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()

        with no_grad():
            for group in self.param_groups:
                amsgrad = group["amsgrad"]
                params = [p for p in group["params"] if p.grad is not None]
                for p in params:
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = _step_counter()
                        state["exp_avg"] = zeros_like(p)
                        state["exp_avg_sq"] = zeros_like(p)
                        if amsgrad:
                            state["max_exp_avg_sq"] = zeros_like(p)
                states = [self.state[p] for p in params]
                beta1, beta2 = group["betas"]
                adam(params, [p.grad for p in params], [s["exp_avg"] for s in states],
                     [s["exp_avg_sq"] for s in states],
                     [s["max_exp_avg_sq"] for s in states] if amsgrad else [],
                     [s["step"] for s in states], amsgrad=amsgrad, beta1=beta1, beta2=beta2,
                     lr=group["lr"], weight_decay=group["weight_decay"], eps=group["eps"],
                     maximize=group["maximize"],
                     decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss


class AdamW(Adam):
    """AdamW: Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` each step).

    The decay shrinks the parameter directly instead of entering the moment estimates.
    """

    def __init__(self, params: ParamsT, lr: float | Tensor = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


def adam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
         exp_avg_sqs: list[Tensor], max_exp_avg_sqs: list[Tensor], state_steps: list[Tensor],
         *, amsgrad: bool, beta1: float, beta2: float, lr: float | Tensor, weight_decay: float,
         eps: float, maximize: bool, decoupled_weight_decay: bool = False) -> None:
    """The Adam/AdamW update on lists of parameters, gradients and state (functional API).

    The buffers and step counters are updated in place. Call it under ``no_grad``.
    """
    lr, beta1, beta2 = _to_float(lr), _to_float(beta1), _to_float(beta2)
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], state_steps[i]

        step_t += 1
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)

        # The operand order is that of torch's lerp_ and addcmul_ kernels.
        exp_avg.add_(grad - exp_avg, alpha=1 - beta1)
        exp_avg_sq.mul_(beta2).add_(grad * (1 - beta2) * grad)

        step = step_t.item()
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2**0.5

        if amsgrad:
            max_exp_avg_sqs[i].copy_(max_exp_avg_sqs[i].maximum(exp_avg_sq))
            denom = (max_exp_avg_sqs[i].sqrt() / bias_correction2_sqrt).add_(eps)
        else:
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        # torch's addcdiv_: p + (value * exp_avg) / denom
        param.add_(exp_avg * -step_size / denom)
