"""dropout: no node of its own. As in torch, the input is multiplied by a scaled random mask, so
its node is ``MulBackward0`` and the mask is its ``_saved_other``."""

from __future__ import annotations

import numpy as np

from .... import _factories, _random
from ...._dtype import FROM_NUMPY
from ...._tensor import Tensor, wrap
from ..._op import Overload, declare, dispatch
from ._common import check_tensor

__all__ = ["dropout", "native_dropout_backward"]


def _dropout(x: Tensor, p: float, training: bool, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the others by 1 / (1 - p), with a mask
    drawn from ext's default generator; the identity when not training or p = 0."""
    check_tensor(x, "dropout")
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    d = x._data
    if not training or p == 0 or d.size == 0:
        return x
    if d.dtype.kind not in "fV":  # ("V": bfloat16)
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{FROM_NUMPY[d.dtype]._short}")
    if p == 1:
        # As torch: a product with a 0-d zero, which keeps the input's signs (-0.0).
        mask = np.zeros((), d.dtype)
    else:
        keep = _random.bernoulli(_factories.default_generator._rng, d.size, 1 - p).reshape(d.shape)
        mask = keep.astype(d.dtype) * np.asarray(1 / (1 - p), d.dtype)
    return x.mul_(wrap(mask)) if inplace else x * wrap(mask)


dropout = declare("dropout", function=_dropout, methods=(), functions=())


class NativeDropoutBackward(Overload):
    """grad_output * mask * scale, dropout's gradient as an op."""

    node_name = "NativeDropoutBackwardBackward0"
    args = ("grad_output", "mask", "scale")
    saved_fields = ("grad_output", "mask")
    saved_attrs = ("scale",)
    tensor_positions = (0, 1)  # (torch has no forward-mode rule for it)

    @staticmethod
    def backward(ctx, grad):
        _, mask = ctx.saved_tensors
        return grad * (mask.to(grad.dtype) * ctx.scale), None, None


def _native_dropout_backward(grad_output: Tensor, mask: Tensor, scale: float) -> Tensor:
    """The gradient of dropout for ``grad_output``, given its ``mask`` and ``scale``."""
    check_tensor(grad_output, "native_dropout_backward")
    check_tensor(mask, "native_dropout_backward")
    g = grad_output._data
    # (as torch's: the mask scaled in the gradient's dtype, then the product)
    kept = mask._data.astype(g.dtype) * np.asarray(scale, g.dtype)
    return dispatch(NativeDropoutBackward, np.multiply(g, kept).astype(g.dtype, copy=False),
                    (grad_output, mask, scale))


native_dropout_backward = declare("native_dropout_backward", NativeDropoutBackward,
                                  function=_native_dropout_backward, methods=())
