"""Every declared built-in, three ways: on the mini-engine, torch-native, and the same declaration
run inside torch as a torch.autograd.Function (ext.compat.to_torch): the parity checklist of
ext.testing (values, gradients, double backward, gradcheck, the mini-engine, hooks, the version
check, torch.compile, torch.func, autocast), then what the checklist does not cover: the version
check of a saved output, the exact order of hooks, forward-mode AD."""

from __future__ import annotations

import numpy as np
import pytest
from test_op_registry import CASES, IDS

import ext
from ext.compat import to_torch
from ext.testing import op_cases
from ext.testing.cases import builtin_inputs

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.ext_only

_rng = np.random.default_rng(11)


def _inputs(T, args):
    return builtin_inputs(args, T)


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


_BUILTINS = op_cases("builtin")


@pytest.mark.parametrize("case", _BUILTINS, ids=[c.name for c in _BUILTINS])
def test_every_builtin_passes_the_parity_checklist_three_ways(case):
    # (the bridge against torch-native, the mini-engine against the bridge, to 1e-10; an op
    # without an overload of its own, the mini-engine against torch)
    report = case.check(atol=1e-12, rtol=1e-10)
    assert report.ok, str(report)


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

    try:
        # (copies of the tangents: torch's rule for _index_put_impl writes into self's)
        _, expected = torch.func.jvp(native, tuple(plain[i] for i in where),
                                     tuple(t.clone() for t in tangents))
    except NotImplementedError as refused:
        # torch has no forward rule for this overload (index_reduce): the bridge refuses too
        assert "Trying to use forward AD with" in str(refused)
        with fwAD.dual_level(), pytest.raises(NotImplementedError, match="forward AD"):
            full = list(plain)
            for i, t in zip(where, tangents):
                full[i] = fwAD.make_dual(plain[i], t)
            to_torch(ov, "jvp").apply(*full)
        return
    with fwAD.dual_level():
        full = list(plain)
        for i, t in zip(where, tangents):
            full[i] = fwAD.make_dual(plain[i], t)
        got = fwAD.unpack_dual(_first(to_torch(ov, "jvp").apply(*full))).tangent
    torch.testing.assert_close(got.expand(expected.shape), expected, equal_nan=True)
