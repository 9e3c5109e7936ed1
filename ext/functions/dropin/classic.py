"""The classic first custom Functions of autograd courses, written as user Functions usable on
both engines: Exp, AddMul and Softmax (Quantize is in ``quant``). Their nodes are
``ExpBackward``, ``AddMulBackward`` and ``SoftmaxBackward``, as torch names a user Function's."""

from __future__ import annotations

from ._base import PackFunction

__all__ = ["Exp", "AddMul", "Softmax"]


class Exp(PackFunction):
    """e^x, saving its result: d/dx e^x = e^x."""

    reference = "torch.exp"
    saves = "the result (as torch.exp)"

    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (result,) = ctx.saved_tensors
        return grad * result


class AddMul(PackFunction):
    """(x + y) * z: several inputs, one output."""

    reference = "(x + y) * z"
    saves = "x, y, z"

    @staticmethod
    def forward(ctx, x, y, z):
        ctx.save_for_backward(x, y, z)
        return (x + y) * z

    @staticmethod
    def backward(ctx, grad):
        x, y, z = ctx.saved_tensors
        return grad * z, grad * z, grad * (x + y)


class Softmax(PackFunction):
    """softmax over all elements, shifted by the max for stability."""

    reference = "torch.softmax(x.flatten(), 0).view_as(x)"
    saves = "the result"

    @staticmethod
    def forward(ctx, x):
        e = (x - x.max()).exp()
        result = e / e.sum()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad):
        (s,) = ctx.saved_tensors
        return s * (grad - (s * grad).sum())
