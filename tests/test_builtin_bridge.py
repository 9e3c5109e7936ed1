"""Every declared built-in, three ways: on the mini-engine, torch-native, and the same declaration
run inside torch as a torch.autograd.Function (ext.compat.to_torch): values, gradients, double
backward, the version check after an in-place write, and the order in which hooks fire."""

from __future__ import annotations

import numpy as np
import pytest
from test_op_registry import CASES, IDS

import ext
from ext.compat import to_torch

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.ext_only

_rng = np.random.default_rng(11)


def _input(T, a):
    """As tests/test_op_registry.py reads a case: a float array is a float64 tensor (here one
    that requires grad), an integer or bool array an index tensor, a list an index list."""
    if isinstance(a, list):
        return [_input(T, i) for i in a]
    if isinstance(a, torch.dtype):
        return getattr(T, str(a).rsplit(".", 1)[-1])
    if isinstance(a, torch.Tensor):  # (a constant argument, such as class targets)
        return a if T is torch else ext.tensor(a.numpy())
    if not isinstance(a, np.ndarray):
        return a
    if a.dtype.kind in "biu":
        return T.tensor(a)
    return T.tensor(a, dtype=T.float64, requires_grad=True)


def _inputs(T, args):
    return tuple(_input(T, a) for a in args)


def _first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def _ways(ov, args):
    """(name, module, inputs, output) for the mini-engine, torch-native and the bridge."""
    for name, T, run in (("ext", ext, ov.forward), ("torch", torch, ov.forward),
                         ("bridge", torch, lambda *a: to_torch(ov).apply(*a))):
        inputs = _inputs(T, args)
        yield name, T, inputs, run(*inputs)


def _tensors(inputs):
    return [a for a in inputs if isinstance(a, (ext.Tensor, torch.Tensor)) and a.requires_grad]


@pytest.mark.parametrize(("ov", "args"), CASES, ids=IDS)
def test_values_gradients_and_double_backward_agree_three_ways(ov, args):
    out_shape = tuple(_first(ov.forward(*_inputs(torch, args))).shape)
    grad = _rng.uniform(0.5, 1.5, out_shape)
    results = {}
    for name, T, inputs, out in _ways(ov, args):
        y = _first(out)
        leaves = _tensors(inputs)
        grads = T.autograd.grad(y, leaves, T.tensor(grad), create_graph=True,
                                allow_unused=True)
        total = sum((g * g).sum() for g in grads if g is not None and g.requires_grad)
        second = T.autograd.grad(total, leaves, allow_unused=True) if torch.is_tensor(total) \
            or isinstance(total, ext.Tensor) else [None] * len(leaves)
        results[name] = [y, *grads, *second]
    for name in ("torch", "bridge"):
        for got, want in zip(results[name], results["ext"]):
            assert (got is None) == (want is None), name
            if got is not None:
                # (force: torch's second derivative of abs is a ZeroTensor)
                np.testing.assert_allclose(got.detach().numpy(force=True), want.detach().numpy(),
                                           rtol=1e-10, atol=1e-12, err_msg=name)


def _saved_tensor(ov, inputs, out):
    """The first value the overload saves that is a tensor (an argument or an output)."""
    outs = out if isinstance(out, tuple) else (out,)
    for name in ov.saved_fields:
        needer = ov.saved_for.get(name)
        if needer is not None and not getattr(inputs[ov.args.index(needer)], "requires_grad",
                                              False):
            continue  # (saved only when that input needs a gradient)
        value = inputs[ov.args.index(name)] if name in ov.args else outs[ov.outputs.index(name)]
        if isinstance(value, (ext.Tensor, torch.Tensor)):
            return value
    return None


_SAVING = [(i, ov, a) for i, (ov, a) in zip(IDS, CASES)
           if _saved_tensor(ov, _inputs(torch, a), ov.forward(*_inputs(torch, a))) is not None]


@pytest.mark.parametrize(("ov", "args"), [(ov, a) for _, ov, a in _SAVING],
                         ids=[i for i, _, _ in _SAVING])
def test_a_saved_tensor_written_in_place_after_forward_fails_the_version_check(ov, args):
    for _name, T, inputs, out in _ways(ov, args):
        # (detached: the same storage and version counter as the saved one; a mask is bool)
        saved = _saved_tensor(ov, inputs, out).detach()
        if saved.is_floating_point():
            saved.add_(0)
        else:
            saved.zero_()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            T.autograd.grad(_first(out).sum(), _tensors(inputs), allow_unused=True)


@pytest.mark.parametrize(("ov", "args"), CASES, ids=IDS)
def test_hooks_fire_in_the_same_order_three_ways(ov, args):
    orders = {}
    for name, _T, inputs, out in _ways(ov, args):
        fired = orders[name] = []
        y = _first(out)
        for k, leaf in enumerate(_tensors(inputs)):
            leaf.register_hook(lambda g, k=k, fired=fired: fired.append(f"input{k}"))
        y.register_hook(lambda g, fired=fired: fired.append("output"))
        y.grad_fn.register_prehook(lambda g, fired=fired: fired.append("pre"))
        y.grad_fn.register_hook(lambda gi, go, fired=fired: fired.append("post"))
        y.sum().backward()
    assert orders["torch"] == orders["ext"]
    assert orders["ext"][:3] == orders["bridge"][:3] == ["output", "pre", "post"]
    # (the inputs' hooks each fire once; their order may differ where torch's own forward is a
    # composite of several nodes, as copy's clone-then-copy_, and the bridge's is one node)
    assert sorted(orders["bridge"][3:]) == sorted(orders["ext"][3:])


@pytest.mark.parametrize(("ov", "args"), CASES, ids=IDS)
def test_the_declared_forward_rule_answers_torch_forward_ad_in_the_bridge(ov, args):
    import torch.autograd.forward_ad as fwAD

    plain = tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in _inputs(torch, args))
    # (the inputs are the float arrays; a torch tensor in a case is a constant argument)
    where = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    tangents = [torch.tensor(_rng.uniform(-1, 1, tuple(plain[i].shape))) for i in where]

    def native(*tensors):
        full = list(plain)
        for i, t in zip(where, tensors):
            full[i] = t
        return _first(ov.forward(*full))

    # (copies of the tangents: torch's rule for _index_put_impl writes into self's)
    _, expected = torch.func.jvp(native, tuple(plain[i] for i in where),
                                 tuple(t.clone() for t in tangents))
    with fwAD.dual_level():
        full = list(plain)
        for i, t in zip(where, tangents):
            full[i] = fwAD.make_dual(plain[i], t)
        got = fwAD.unpack_dual(_first(to_torch(ov).apply(*full))).tangent
    torch.testing.assert_close(got.expand(expected.shape), expected, equal_nan=True)
