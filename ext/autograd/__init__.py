"""``ext.autograd``: reverse-mode automatic differentiation over the graph of Nodes.

``backward`` accumulates gradients into the ``.grad`` of leaves; ``grad`` returns them.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._args import not_a_tensor_element
from .._tensor import Tensor, wrap
from .._warnings import warn_once
from . import forward_ad, functional, graph
from .anomaly_mode import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from .engine import run_backward
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .graph import gradient_edge

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad",
           "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "gradcheck", "gradgradcheck", "GradcheckError", "graph",
           "Variable", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]

Variable = Tensor
_CREATE_GRAPH_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter "
    "and its gradient which can cause a memory leak. We recommend using autograd.grad when "
    "creating the graph to avoid this. If you have to use this function, make sure to reset the "
    ".grad fields of your parameters to None after use to break the cycle and avoid the leak."
)


def _as_tuple(x, what: str) -> tuple:
    if isinstance(x, Tensor):
        return (x,)
    if x is None:
        return (None,)
    return tuple(x)


def _make_grads(outputs: tuple, grads: tuple) -> list:
    """The gradient for each output: given, or ones for a one-element output."""
    result = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if not isinstance(out, Tensor):
            raise AssertionError("Expected output to be a ext.Tensor")
        if g is None and not out._requires_grad:
            # The engine then reports that this output does not require grad.
            result.append(None)
            continue
        if g is None:
            if out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not out.is_floating_point():
                raise RuntimeError("grad can be implicitly created only for real scalar outputs "
                                   f"but got {out.dtype}")
            result.append(wrap(np.ones(out._data.shape, out._data.dtype)))
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got "
                            f"{type(g).__name__}")
        if g._data.shape != out._data.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] "
                f"has a shape of {out.shape}.")
        if g._data.dtype != out._data.dtype and g._data.dtype.kind in "fV" and \
                out._data.dtype.kind in "fV":
            # torch validates the roots' gradients as every node's: cast to the output's dtype
            g = wrap(g._data.astype(out._data.dtype))
        result.append(g)
    return result


def _roots(outputs: tuple) -> list:
    roots = []
    for i, t in enumerate(outputs):
        if not isinstance(t, Tensor):
            raise not_a_tensor_element(t, i, "backward")
        edge = gradient_edge(t)
        if edge[0] is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
        roots.append(edge)
    return roots


def backward(tensors, grad_tensors=None, retain_graph: bool | None = None,
             create_graph: bool = False, grad_variables=None, inputs=None) -> None:
    """Accumulate into leaves' ``.grad`` the gradient of ``tensors`` (weighted by
    ``grad_tensors``)."""
    if grad_variables is not None:
        grad_tensors = grad_variables
    tensors = _as_tuple(tensors, "tensors")
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    elif isinstance(grad_tensors, Tensor):
        grad_tensors = (grad_tensors,)
    else:
        grad_tensors = tuple(grad_tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"got {len(tensors)} tensors and {len(grad_tensors)} gradients")
    if retain_graph is None:
        retain_graph = create_graph
    input_edges = None
    if inputs is not None:
        inputs = _as_tuple(inputs, "inputs")
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        for t in inputs:
            if not isinstance(t, Tensor):
                raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got "
                                   f"{type(t).__name__}")
    grads = _make_grads(tensors, grad_tensors)
    roots = _roots(tensors)
    if inputs is not None:
        if not all(t._requires_grad for t in inputs):
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        # As in torch, each input retains its gradient: a non-leaf one gets its .grad now and
        # from every later backward too.
        for t in inputs:
            t.retain_grad()
        input_edges = [gradient_edge(t) for t in inputs]
    if create_graph:
        warn_once(_CREATE_GRAPH_WARNING, UserWarning, stacklevel=3)
    run_backward(roots, grads, retain_graph, create_graph, input_edges, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False):
    """The gradients of ``outputs`` w.r.t. ``inputs``, returned without touching ``.grad``."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads="
                         "True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). "
                      "To accumulate gradient for other parts of the graph, please use "
                      "torch.autograd.backward.", FutureWarning, stacklevel=2)
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    outputs = _as_tuple(outputs, "outputs")
    as_dict = isinstance(inputs, dict)
    keys = list(inputs.keys()) if as_dict else None
    inputs = tuple(inputs.values()) if as_dict else _as_tuple(inputs, "inputs")
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs, "grad_outputs")
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output, got "
                           f"{len(grad_outputs)} grad_outputs and {len(outputs)} outputs")
    for t in inputs:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got "
                               f"{type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(outputs, grad_outputs)
    roots = _roots(outputs)
    input_edges = [gradient_edge(t) for t in inputs]
    result = run_backward(roots, grads, retain_graph, create_graph, input_edges,
                          accumulate=False)
    out = []
    for i, (t, g) in enumerate(zip(inputs, result)):
        if g is None:
            if materialize_grads:
                g = wrap(np.zeros_like(t._data))
            elif not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in "
                    "the graph. Set allow_unused=True if this is the desired behavior.")
        elif not create_graph and g._requires_grad:
            g = g.detach()
        out.append(g)
    if as_dict:
        return dict(zip(keys, out))
    return tuple(out)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                  materialize_grads):
    """``grad(..., is_grads_batched=True)``: the first dim of each grad_output is a batch of
    vectors; ext computes one vector-Jacobian product per entry (torch uses vmap) and stacks."""
    outputs = _as_tuple(outputs, "outputs")
    batched = _as_tuple(grad_outputs, "grad_outputs")
    as_dict = isinstance(inputs, dict)
    sizes = {g.shape[0] for g in batched if g is not None}
    if len(sizes) != 1:
        raise RuntimeError("If `is_grads_batched=True`, we interpret the first dimension of each "
                           "grad_output as the batch dimension. The sizes of the first "
                           "dimensions must all match.")
    n = sizes.pop()
    if retain_graph is None:
        retain_graph = create_graph
    rows = []
    for b in range(n):
        rows.append(grad(outputs, inputs, tuple(None if g is None else g[b] for g in batched),
                         retain_graph=retain_graph or b < n - 1, create_graph=create_graph,
                         allow_unused=allow_unused, materialize_grads=materialize_grads))
    if as_dict:
        return {k: None if rows[0][k] is None else functional.stacked([r[k] for r in rows])
                for k in rows[0]}
    return tuple(None if rows[0][i] is None else functional.stacked([r[i] for r in rows])
                 for i in range(len(rows[0])))
