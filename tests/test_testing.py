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
    (lambda: check(F.silu, _x(), reference=lambda x: (x, x)), ValueError,
     r"different structures: \('tensor', \(3, 4\)\) and \('tuple'"),
    (lambda: check(F.silu, _x(), reference=lambda x: x[0]), ValueError,
     r"different structures: \('tensor', \(3, 4\)\) and \('tensor', \(4,\)\)"),
    (lambda: check(F.silu, _x(), skip={"speed": "-"}), ValueError, "unknown checks"),
    (lambda: check(F.silu, _x(), tolerance=1), TypeError, "unexpected options"),
])
def test_bad_arguments_are_refused(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ---------------------------------------------------------------------------------- what it catches
@torch.library.custom_op("ext_testing::wrong_silu", mutates_args=())
def _wrong_silu_op(x: torch.Tensor) -> torch.Tensor:
    return F.silu(x)


@_wrong_silu_op.register_fake
def _(x):
    return torch.empty_like(x)


def _silu_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _silu_missing_a_term(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * torch.sigmoid(x)


_wrong_silu_op.register_autograd(_silu_missing_a_term, setup_context=_silu_setup)


def test_a_wrong_backward_that_torch_library_opcheck_passes_fails_check():
    x = _x()
    results = torch.library.opcheck(_wrong_silu_op, (x,))
    assert set(results.values()) == {"SUCCESS"}  # (opcheck checks the registration, not the math)
    report = check(_wrong_silu_op, x, reference=F.silu)
    assert {"backward", "gradcheck"} <= set(report.failures())
    # (a torch custom op refuses ext tensors inside torch: the mini-engine legs say so)
    assert report.results["mini_engine"][0] == "skip"


class WritesSaved(ext.autograd.Function):
    """x * 2 with a backward that scales its saved input in place."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        x.mul_(0.5)
        return grad * 2


def test_a_backward_that_writes_into_a_saved_tensor_fails_no_mutation():
    report = check(WritesSaved, _x(), reference=lambda x: x * 2)
    assert "input 0 was written" in report.failures()["no_mutation"]


class OnceSilu(ext.autograd.Function):
    """silu with a correct backward that cannot be differentiated again."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x.sigmoid()

    @staticmethod
    @ext.autograd.function.once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = x.sigmoid()
        return grad * s * (1 + x * (1 - s))


def test_a_once_differentiable_backward_claimed_twice_differentiable_fails_double_backward():
    report = check(OnceSilu, _x(), reference=F.silu)
    failures = report.failures()
    assert set(failures) == {"double_backward", "gradgradcheck"}
    assert "has no graph, and the reference's second derivative is not zero" in \
        failures["double_backward"]
    # declared as such (the contract says "raises"), the same Function passes
    assert check(OnceSilu, _x(), reference=F.silu,
                 skip={"double_backward": "once differentiable",
                       "gradgradcheck": "once differentiable"}).ok


def test_a_graph_break_fails_compile():
    def logged_silu(x):
        print("silu of", tuple(x.shape))  # (print: a graph break under torch.compile)
        return F.silu(x)

    report = check(logged_silu, _x(), reference=F.silu)
    assert set(report.failures()) == {"compile"}
    assert "Unsupported" in report.failures()["compile"]
    assert check(F.silu, _x(), reference=F.silu).results["compile"][0] == "pass"


class KeepsInputOnCtx(ext.autograd.Function):
    """x ** 2 that keeps x on ctx instead of saving it: no version check."""

    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return x * x

    @staticmethod
    def backward(ctx, grad):
        return grad * 2 * ctx.x


def test_a_missing_version_check_fails_version():
    report = check(KeepsInputOnCtx, _x(), reference=lambda x: x * x)
    assert "without a version error" in report.failures()["version"]
    saved = check(ext.functions.Silu, _x(), reference=F.silu).results["version"]
    assert saved == ("pass", "input 0: version error")
    unread = check(lambda a, b: a + b, _x(), _x(), reference=torch.add).results["version"]
    assert unread == ("pass", "input 0: not read by backward, input 1: not read by backward")


def test_hooks_fire_in_the_references_order_on_both_engines():
    report = check(ext.functions.SwiGLU, _x(), _x(), reference=lambda a, b: F.silu(a) * b)
    assert report.results["hooks"] == ("pass", "output < pre < post < input 0 < input 1")
    # (b detached: its hook never fires)
    dropped = check(lambda a, b: ext.functions.silu(a) * b.detach(), _x(), _x(),
                    reference=lambda a, b: F.silu(a) * b)
    assert "fired ['output', 'pre', 'post', 'input 0'], the reference ['output', 'pre', " \
        "'post', 'input 1', 'input 0']" in dropped.failures()["hooks"]


def test_a_non_differentiable_op_is_compared_by_value_and_says_why_the_rest_is_skipped():
    report = check(lambda x: x.gt(0), _x(), reference=lambda x: x > 0)
    assert report.ok
    assert report.results["backward"] == ("skip", "no output is differentiable")
    assert report.results["mini_engine"] == ("pass", "values (not differentiable)")
