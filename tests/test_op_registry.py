"""The declared ops: the registry lists them, and each overload's backward and forward-mode rule
run on torch tensors with torch's own results (the bodies use only the common tensor API)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ext
from ext.functions import _op
from ext.functions.builtin.pointwise import unary
from ext.testing.cases import BUILTINS, NO_BUILTIN_CASE

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.ext_only

_rng = np.random.default_rng(7)


def _t(a):
    return torch.tensor(a, dtype=torch.bool if a.dtype == np.bool_ else torch.float64)


# (overload, the forward's arguments: an array becomes a float64 torch tensor), the cases that
# ``python -m ext parity`` runs too
CASES = BUILTINS
IDS = [f"{ov.node_name}-{i}" for i, (ov, _) in enumerate(CASES)]


def _torch_args(args):
    return tuple(_torch_arg(a) for a in args)


def _torch_arg(a):
    if isinstance(a, list):
        return [_torch_arg(i) for i in a]
    if not isinstance(a, np.ndarray):
        return a
    return torch.tensor(a) if a.dtype.kind in "biu" else _t(a)


def _inputs(args) -> list:
    """The differentiable inputs, by position: the float arrays (an integer or bool array is an
    index tensor or a mask, a list an index list, and a torch tensor given as it is, such as
    class targets, a constant argument)."""
    return [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]


def _first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


@pytest.mark.parametrize(("ov", "args"), CASES, ids=IDS)
def test_backward_runs_on_torch_tensors_as_torch_differentiates(ov, args):
    where = _inputs(args)
    args = _torch_args(args)
    inputs = [args[i].requires_grad_() for i in where]
    out = ov.forward(*args)
    grad = _t(_rng.uniform(0.5, 1.5, tuple(_first(out).shape)))
    expected = torch.autograd.grad(_first(out), inputs, grad)

    plain = tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in args)
    outputs = (tuple(None if o is None else o.detach() for o in out)
               if isinstance(out, (tuple, list)) else (out.detach(),))
    needs = tuple(i in where for i in range(len(args)))
    # (the other outputs of a multi-output op get no gradient)
    result = ov.backward(ov.ctx_for(plain, outputs, needs), grad, *[None] * (len(outputs) - 1))
    result = result if isinstance(result, tuple) else (result,)
    got = [result[i] for i in where]
    for g, e in zip(got, expected):
        assert type(g) is torch.Tensor
        # (the engine sums a broadcast input's gradient to its shape, as torch's does)
        torch.testing.assert_close(g.sum_to_size(e.shape), e, equal_nan=True)


@pytest.mark.parametrize(("ov", "args"), CASES, ids=IDS)
def test_forward_rule_runs_on_torch_tensors_as_torch_func_jvp(ov, args):
    where = _inputs(args)
    args = _torch_args(args)
    tangents = [_t(_rng.uniform(-1.0, 1.0, tuple(args[i].shape))) for i in where]

    def f(*tensors):
        full = list(args)
        for i, t in zip(where, tensors):
            full[i] = t
        return _first(ov.forward(*full))

    per_arg = [None] * len(args)
    for i, t in zip(where, tangents):
        per_arg[i] = t
    out = ov.forward(*args)
    try:
        # (copies of the tangents: torch's rule for _index_put_impl writes into self's)
        _, expected = torch.func.jvp(f, tuple(args[i] for i in where),
                                     tuple(t.clone() for t in tangents))
    except NotImplementedError as refused:
        # torch has no forward rule for this overload (scatter_reduce's prod): nor has ext
        assert "Trying to use forward AD with" in str(refused)
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with"):
            ov.tangents(args, tuple(out) if isinstance(out, (tuple, list)) else out,
                        tuple(per_arg))
        return
    got = _first(ov.tangents(args, tuple(out) if isinstance(out, (tuple, list)) else out,
                             tuple(per_arg)))
    assert type(got) is torch.Tensor
    torch.testing.assert_close(got.expand(expected.shape), expected, equal_nan=True)


def test_every_declared_overload_has_a_torch_case():
    declared = {ov for op in _op.registry() if not op.pack for ov in op.overloads
                if ov.node_name not in NO_BUILTIN_CASE}
    assert declared == {ov for ov, _ in CASES}
    assert set(NO_BUILTIN_CASE) <= {ov.node_name for op in _op.registry() if not op.pack
                                    for ov in op.overloads}


def test_the_registry_lists_each_op_with_its_names_and_contract():
    pow_ = _op.lookup("pow")
    assert pow_.node_names == ("PowBackward0", "PowBackward1", "PowBackward2")
    assert {"pow", "__pow__", "__rpow__"} <= set(pow_.methods)
    assert (pow_.inplace, pow_.augmented) == ("pow_", "__ipow__")
    assert pow_.torch_op == "aten::pow"
    contract = _op.lookup("max").contract()
    assert contract["MaxBackward0"]["outputs"] == ("values", "indices")
    assert contract["MaxBackward0"]["forward_rule"] == "jvp"
    assert _op.lookup("exp").contract()["ExpBackward0"] == {
        "saved_fields": ("result",), "saved_attrs": (), "forward_rule": "elementwise",
        "double_backward": True, "outputs": ("result",), "autocast": "none"}
    assert _op.lookup("mm").contract()["MmBackward0"]["autocast"] == "lower_precision_fp"
    assert _op.lookup("sum").contract()["SumBackward1"]["saved_attrs"] == (
        "dim", "keepdim", "self_sym_sizes")
    assert _op.lookup("view").contract()["ViewBackward0"]["forward_rule"] == "linear"
    assert "view" not in _op.lookup("view").functions  # (torch has no torch.view)
    names = {op.name for op in _op.registry()}
    assert {"exp", "pow", "sum", "max", "min", "view"} <= names


def test_a_backward_op_is_called_by_its_aten_name_on_both_engines():
    assert ext.ops.aten.threshold_backward is _op.lookup("threshold_backward").function
    grad, y = ext.tensor([1.0, 2.0, 3.0]), ext.tensor([-1.0, 0.0, 1.0])
    assert ext.ops.aten.threshold_backward(grad, y, 0).tolist() == [0.0, 0.0, 3.0]
    assert unary.ThresholdBackward.forward(torch.tensor([1.0, 2.0]), torch.tensor([0.0, 1.0]),
                                           0).tolist() == [0.0, 2.0]
    with pytest.raises(AttributeError, match="no attribute 'not_an_op'"):
        ext.ops.aten.not_an_op  # noqa: B018


def test_the_method_table_takes_declared_ops_and_their_inplace_variants():
    x = ext.tensor([0.0, 1.0], dtype=ext.float64)
    assert ext.Tensor.exp is _op.lookup("exp").function
    # (ext.exp is the op's function taking torch's keyword spellings and out=: functions.free)
    assert ext.exp.__wrapped__ is _op.lookup("exp").function
    assert x.exp_() is x
    assert x.tolist() == [1.0, math.e]
