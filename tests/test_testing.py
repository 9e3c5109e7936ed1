"""The parity harness itself (ext.testing): it catches what it claims to, and says what it
skipped."""

from __future__ import annotations

import pytest

import ext
from ext.testing import CHECKS, assert_parity, check, saved_bytes

torch = pytest.importorskip("torch")
F = torch.nn.functional

pytestmark = pytest.mark.ext_only


class WrongSilu(ext.autograd.Function):
    """silu with a backward that forgets a term."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x.sigmoid()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.sigmoid()


class TorchSilu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return F.silu(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad * s * (1 + x * (1 - s))


def _x():
    return torch.randn(3, 4, dtype=torch.float64, requires_grad=True)


def test_a_wrong_backward_fails_backward_and_gradcheck():
    report = check(WrongSilu, _x(), reference=F.silu)
    assert not report.ok
    assert {"backward", "gradcheck"} <= set(report.failures())
    assert report.results["forward"][0] == "pass"
    with pytest.raises(AssertionError, match="WrongSilu differs:\n.*backward"):
        assert_parity(WrongSilu, _x(), reference=F.silu)


def test_a_plain_torch_function_runs_without_the_mini_engine_leg_and_says_so():
    report = check(TorchSilu, _x(), reference=F.silu)
    # (torch.func needs a setup_context, which this ctx-style torch Function has not)
    assert set(report.failures()) == {"torch_func"}
    assert "must override the setup_context" in report.failures()["torch_func"]
    status, detail = report.results["mini_engine"]
    assert status == "skip" and "does not run on ext tensors" in detail
    assert set(report.results) == set(CHECKS)


def test_a_backward_that_writes_into_its_gradient_fails_no_mutation():
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad.mul_(2)

    report = check(Scale, _x(), reference=lambda x: x * 2)
    assert "incoming gradient was written" in report.failures()["no_mutation"]


def test_the_report_prints_and_serializes_every_check():
    report = check(ext.functions.Silu, _x(), reference=F.silu)
    text = str(report)
    assert text.startswith("Silu: ok") and all(name in text for name in CHECKS)
    data = report.to_dict()
    assert data["ok"] and data["checks"]["gradcheck"]["status"] == "pass"
    assert data["checks"]["saved_bytes"]["detail"] == "96 B, the reference 96 B"


def test_saved_bytes_counts_unique_storages():
    x = torch.randn(1000, requires_grad=True)
    assert saved_bytes(F.silu, x) == 4000
    assert saved_bytes(lambda t: t * torch.sigmoid(t), x) == 8000
    assert saved_bytes(ext.functions.hardsigmoid, x) == 1000


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: check(3, _x()), TypeError, "fn must be callable"),
    (lambda: check(F.silu, torch.randn(3)), ValueError, "no input requires grad"),
    (lambda: check(F.silu, _x(), reference=2), TypeError, "reference must be callable"),
    (lambda: check(F.silu, _x(), skip={"speed": "-"}), ValueError, "unknown checks"),
    (lambda: check(F.silu, _x(), tolerance=1), TypeError, "unexpected options"),
])
def test_bad_arguments_are_refused(call, error, match):
    with pytest.raises(error, match=match):
        call()
