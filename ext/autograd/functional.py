"""``ext.autograd.functional``: Jacobians, Hessians and vector products of whole functions.

Each function runs the user's ``func`` on fresh copies of the inputs (so that tensors the function
captures from outside are not mistaken for the inputs) and differentiates it with
``autograd.grad``. Products with the Jacobian (``jvp``) and the Hessian (``hvp``) use the
*double backward trick*, as torch's own ``torch.autograd.functional`` does: the vector-Jacobian
product ``u -> J^T u`` is linear in ``u``, so differentiating it w.r.t. ``u`` gives ``J v``. No
forward-mode AD is needed.

Results are detached unless ``create_graph=True``; then they carry the graph that lets them be
differentiated again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._factories import zeros_like
from .._tensor import Tensor
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

Tensors = Tensor | tuple[Tensor, ...]

_STRATEGIES = ("forward-mode", "reverse-mode")
_STRATEGY_ERROR = (
    'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function has '
    'more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, prefer to '
    'use "reverse-mode".'
)
_FORWARD_NEEDS_VECTORIZE = (
    # torch's message, including its missing space ("isonly").
    "Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly implemented for "
    "`vectorize=True`."
)


# ---- Packing inputs and results -----------------------------------------------------------------

def _as_tuple(inp: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """Whether ``inp`` was a tuple, and ``inp`` as a tuple of Tensors (TypeError otherwise)."""
    is_tuple = isinstance(inp, tuple)
    items = inp if is_tuple else (inp,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"value at index {i}" if is_tuple else f"given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but the {where} has type {type(el)}.")
    return is_tuple, items


def _tuple_postprocess(res: tuple, to_unpack: bool | tuple[bool, bool]) -> Any:
    """Undo ``_as_tuple``: a single tensor where the user gave one (per level when nested)."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """New tensor objects for ``inputs``: differentiable views of inputs that require grad when
    ``create_graph`` (so gradients reach the user's tensors), detached copies otherwise."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs: tuple, create_graph: bool) -> tuple:
    """Detach results (also nested tuples of them) unless the user asked for a graph."""
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v: tuple, other: tuple, is_other_tuple: bool) -> None:
    """``v`` must have one tensor per tensor of ``other``, each of the same size."""
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but "
                               f"got {el_v.size()}.")


def _check_requires_grad(inputs: tuple, input_type: str, strict: bool) -> None:
    """In strict mode, refuse tensors that do not depend on the inputs (torch's messages)."""
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if inp.requires_grad:
            continue
        if input_type == "hessian":
            raise RuntimeError(
                f"The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should "
                "ensure that your function is thrice differentiable and that the hessian "
                "depends on the inputs.")
        if input_type == "jacobian":
            raise RuntimeError(
                "While computing the hessian, found that the jacobian of the user-provided "
                f"function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).")
        if input_type == "grad_inputs":
            raise RuntimeError(
                f"The gradient with respect to input {i} is independent of the inputs of the "
                "user-provided function. This is not allowed in strict mode.")
        raise RuntimeError(
            f"Output {i} of the user-provided function does not require gradients. The outputs "
            "must be computed in a differentiable manner from the input when running in strict "
            "mode.")


def _autograd_grad(outputs: tuple, inputs: tuple, grad_outputs: tuple | None = None,
                   create_graph: bool = False, retain_graph: bool | None = None) -> tuple:
    """``autograd.grad`` that skips outputs which are None or need no gradient, and gives None
    for inputs that nothing reached."""
    from . import grad

    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs = []
    new_grad_outputs = []
    for out, grad_out in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs.append(out)
            new_grad_outputs.append(grad_out)
    if not new_outputs:
        return (None,) * len(inputs)
    return grad(tuple(new_outputs), inputs, tuple(new_grad_outputs), allow_unused=True,
                create_graph=create_graph, retain_graph=retain_graph)


_STRICT_MESSAGES = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
            "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} "
                         "in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward mode "
                         "AD.",
}


def _fill_in_zeros(grads: tuple, refs: tuple, strict: bool, create_graph: bool,
                   stage: str) -> tuple:
    """Zeros shaped like ``refs`` where no gradient arrived (an error in strict mode)."""
    res = []
    for i, grads_i in enumerate(grads):
        if grads_i is None:
            if strict:
                raise RuntimeError(_STRICT_MESSAGES[stage].format(i=i))
            grads_i = zeros_like(refs[i])
        elif strict and create_graph and not grads_i.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        res.append(grads_i)
    return tuple(res)


def _prepare_v(v: Any, fn_name: str, create_graph: bool, other: tuple, is_other_tuple: bool,
               none_message: str) -> tuple | None:
    """``v`` as a checked tuple of detached tensors; None only where ``other`` is one
    single-element tensor (then autograd's implicit ones is the vector)."""
    if v is None:
        if len(other) != 1 or other[0].nelement() != 1:
            raise RuntimeError(none_message)
        return None
    _, v = _as_tuple(v, "v", fn_name)
    v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
    _validate_v(v, other, is_other_tuple)
    return v


_V_NONE_OUTPUT = ("The vector v can only be None if the user-provided function returns a single "
                  "Tensor with a single element.")
_V_NONE_INPUT = ("The vector v can only be None if the input to the user-provided function is a "
                 "single Tensor with a single element.")


def _call(func: Callable, inputs: tuple, fn_name: str, strict: bool) -> tuple[bool, tuple]:
    """Run ``func`` and check its outputs are Tensors (and, in strict mode, differentiable)."""
    is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                          fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    return is_outputs_tuple, outputs


# ---- Vector products ----------------------------------------------------------------------------

def vjp(func: Callable[..., Tensors], inputs: Tensors, v: Tensors | None = None,
        create_graph: bool = False, strict: bool = False) -> tuple[Tensors, Tensors]:
    """The vector-Jacobian product ``v^T J`` of ``func`` at ``inputs``.

    Returns ``(func_output, vjp)``; ``vjp`` has the structure of ``inputs``. ``v`` has the
    structure of the outputs and may be None only when ``func`` returns one single-element
    tensor. With ``strict``, an output or input that the other does not depend on raises instead
    of giving zeros.
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        is_outputs_tuple, outputs = _call(func, inputs, "vjp", strict)
        v = _prepare_v(v, "vjp", create_graph, outputs, is_outputs_tuple, _V_NONE_OUTPUT)

    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")

    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))


def jvp(func: Callable[..., Tensors], inputs: Tensors, v: Tensors | None = None,
        create_graph: bool = False, strict: bool = False) -> tuple[Tensors, Tensors]:
    """The Jacobian-vector product ``J v`` of ``func`` at ``inputs``.

    Returns ``(func_output, jvp)``; ``jvp`` has the structure of the outputs. ``v`` has the
    structure of ``inputs`` and may be None only for one single-element input. Computed with the
    double backward trick: ``u -> J^T u`` is linear, and its gradient w.r.t. ``u`` applied to
    ``v`` is ``J v``.
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, "jvp", create_graph, inputs, is_inputs_tuple, _V_NONE_INPUT)
        is_outputs_tuple, outputs = _call(func, inputs, "jvp", strict)
        # Backward is linear in grad_outputs, so their value never appears in the double
        # backward graph: zeros are as good as anything finite.
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)

    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")

    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_outputs_tuple))


def _scalar_output(outputs: tuple, is_outputs_tuple: bool, fn_name: str) -> None:
    """hvp, vhp and hessian need a function returning one single-element tensor."""
    if is_outputs_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")


def vhp(func: Callable[..., Tensor], inputs: Tensors, v: Tensors | None = None,
        create_graph: bool = False, strict: bool = False) -> tuple[Tensor, Tensors]:
    """The vector-Hessian product ``v^T H`` of the scalar function ``func`` at ``inputs``.

    Returns ``(func_output, vhp)``; ``vhp`` and ``v`` have the structure of ``inputs`` (``v``
    may be None for one single-element input).
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, "vhp", create_graph, inputs, is_inputs_tuple, _V_NONE_INPUT)
        is_outputs_tuple, outputs = _call(func, inputs, "vhp", strict)
        _scalar_output(outputs, is_outputs_tuple, "vhp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)

    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")

    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))


def hvp(func: Callable[..., Tensor], inputs: Tensors, v: Tensors | None = None,
        create_graph: bool = False, strict: bool = False) -> tuple[Tensor, Tensors]:
    """The Hessian-vector product ``H v`` of the scalar function ``func`` at ``inputs``.

    Returns ``(func_output, hvp)``; ``hvp`` and ``v`` have the structure of ``inputs`` (``v``
    may be None for one single-element input). Uses the double backward trick on the gradient,
    i.e. one more backward than ``vhp``; for a twice continuously differentiable function the
    two are equal (the Hessian is symmetric).
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, "hvp", create_graph, inputs, is_inputs_tuple, _V_NONE_INPUT)
        is_outputs_tuple, outputs = _call(func, inputs, "hvp", strict)
        _scalar_output(outputs, is_outputs_tuple, "hvp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        # torch checks ``jac`` here too (not ``double_back``): same errors as torch.
        _check_requires_grad(jac, "hessian", strict=strict)

    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")

    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (_tuple_postprocess(outputs, is_outputs_tuple),
            _tuple_postprocess(result, is_inputs_tuple))


# ---- Jacobian and Hessian -----------------------------------------------------------------------

def stacked(rows: list) -> Tensor:
    """``rows`` (of one shape and dtype) stacked along a new first dim by the facade's
    ``stack``, as torch's jacobian does (its graph shows ``StackBackward0``)."""
    import ext  # a named seam of the layer rules: the op belongs to a layer above

    return ext.stack(rows)


def _jacobian_rows(outputs: tuple, inputs: tuple, create_graph: bool, strict: bool) -> tuple:
    """J[i][j] of shape ``outputs[i].shape + inputs[j].shape``: one backward per output
    element, each giving a row of the Jacobian for every input."""
    jacobian = []
    for i, out in enumerate(outputs):
        rows: tuple[list, ...] = tuple([] for _ in inputs)
        flat = out.reshape(-1)
        for k in range(out.nelement()):
            vj = _autograd_grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
            for j, (row, vj_el, inp) in enumerate(zip(rows, vj, inputs)):
                if vj_el is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is "
                                           f"independent of input {j}. This is not allowed "
                                           "in strict mode.")
                    vj_el = zeros_like(inp)
                elif strict and create_graph and not vj_el.requires_grad:
                    raise RuntimeError("The jacobian of the user-provided function is "
                                       f"independent of input {i}. This is not allowed in "
                                       "strict mode when create_graph=True.")
                row.append(vj_el)
        jacobian.append(tuple(stacked(row).view(tuple(out.size()) + tuple(inp.size()))
                              for row, inp in zip(rows, inputs)))
    return tuple(jacobian)


def jacobian(func: Callable[..., Tensors], inputs: Tensors, create_graph: bool = False,
             strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode") -> Tensor | tuple:
    """The Jacobian of ``func`` at ``inputs``.

    For one input and one output, a tensor of shape ``output.shape + input.shape``; with a tuple
    of inputs and/or outputs, tuples ``J[i][j]`` (output ``i``, input ``j``). An input that an
    output does not depend on gives zeros (an error with ``strict=True``).

    ``vectorize=True`` gives the same values as the default: torch batches the backward passes
    with vmap, here they run one after another in a loop. ``strategy="forward-mode"`` (which, as
    in torch, needs ``vectorize=True`` and refuses ``create_graph`` and ``strict``) is computed
    with the same reverse-mode passes: the values and the nesting (lists, as in torch) are those
    of torch's forward-mode Jacobian, but the results are detached, whereas torch's stay attached
    to the graph of inputs that require grad.
    """
    if strategy not in _STRATEGIES:
        raise AssertionError(_STRATEGY_ERROR)
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "ext.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either set '
                '`create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError(
                "ext.autograd.functional.jacobian: `strict=True` and `strategy=\"forward-mode\"`"
                ' are not supported together (yet). Please either set `strict=False` or '
                '`strategy="reverse-mode"`.')
        if not vectorize:
            raise NotImplementedError(_FORWARD_NEEDS_VECTORIZE)

    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        is_outputs_tuple, outputs = _call(func, inputs, "jacobian", strict)
        if vectorize and strict:
            raise RuntimeError(
                "ext.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                "supported together. Please either set `strict=False` or `vectorize=False`.")
        result = _grad_postprocess(_jacobian_rows(outputs, inputs, create_graph, strict),
                                   create_graph)
        if strategy == "forward-mode":
            # torch's forward-mode Jacobian nests lists where the reverse-mode one nests tuples.
            result = [list(row) for row in result]
        return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


def hessian(func: Callable[..., Tensor], inputs: Tensors, create_graph: bool = False,
            strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode") -> Tensor | tuple:
    """The Hessian of the scalar function ``func`` at ``inputs``: the Jacobian of its gradient.

    For one input, a tensor of shape ``input.shape + input.shape``; for a tuple of inputs,
    tuples ``H[i][j]``. ``vectorize`` and ``outer_jacobian_strategy`` are passed to the outer
    ``jacobian`` (same values either way; see there).
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in _STRATEGIES:
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp: Tensor) -> Tensor:
        is_out_tuple, t_out = _call(func, inp, "hessian", strict)
        _scalar_output(t_out, is_out_tuple, "hessian")
        return t_out[0].squeeze()

    def jac_func(*inp: Tensor) -> Tensor | tuple:
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))
