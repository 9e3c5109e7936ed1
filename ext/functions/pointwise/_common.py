"""What the elementwise ops share: operand checks, broadcasting errors and the one-input fast
path."""

from __future__ import annotations

import numpy as np

from ... import _dtype
from ..._state import STATE
from ..._tensor import Tensor, wrap
from .._builtin import BuiltinFunction, binary_operands, record


def operands(a, b, name: str):
    if type(a) is not Tensor:
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(a).__name__}")
    ops = binary_operands(a, b)
    if ops is None:
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(b).__name__}")
    return ops


def recording(a: Tensor, b) -> bool:
    return STATE.grad_enabled and (a._requires_grad or (type(b) is Tensor and b._requires_grad))


def edge(b):
    return b if type(b) is Tensor else None


def broadcast_error(a: np.ndarray, b) -> RuntimeError:
    bs = np.shape(b)
    for i in range(1, max(a.ndim, len(bs)) + 1):
        sa = a.shape[-i] if i <= a.ndim else 1
        sb = bs[-i] if i <= len(bs) else 1
        if sa != sb and sa != 1 and sb != 1:
            dim = max(a.ndim, len(bs)) - i
            return RuntimeError(f"The size of tensor a ({sa}) must match the size of tensor b "
                                f"({sb}) at non-singleton dimension {dim}")
    return RuntimeError("operands could not be broadcast together")


def apply(kernel, ad, bd) -> np.ndarray:
    try:
        return kernel(ad, bd)
    except ValueError:
        raise broadcast_error(ad, bd) from None



def unary(op: type, x, kernel, to_float: bool = False) -> Tensor:
    if type(x) is not Tensor:
        name = op.node_name[: op.node_name.rfind("Backward")].lower()
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    d = x._data
    if to_float and d.dtype.kind != "f":
        d = d.astype(_dtype.get_default_dtype()._np)
    out = wrap(kernel(d))
    if x._requires_grad and STATE.grad_enabled or STATE.special:
        record(op, out, (x,), (x,))
    return out


class UnaryFunction(BuiltinFunction):
    """A one-input op whose forward is the tensor method of the same name."""

    method = ""

    @classmethod
    def forward(cls, x):
        return getattr(x, cls.method)()


class SavesInput(UnaryFunction):
    saved_fields = ("self",)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])


def quiet(kernel):
    def run(d):
        with np.errstate(divide="ignore", invalid="ignore"):
            return kernel(d)

    return run


