"""What ``ext.testing.check`` tells a person whose Function is wrong: the likely cause, the worst
element (expected against actual), each distinct failure once, whole messages, no leg that did
not run called "pass", and no warning or traceback printed on the way."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings

import pytest

import ext
from ext.testing import CHECKS, assert_parity, check

torch = pytest.importorskip("torch")
F = torch.nn.functional

pytestmark = pytest.mark.ext_only

# a compiled check costs seconds, and none of these stories is about torch.compile
QUICK = {"compile": "not about torch.compile"}


def _x():
    return torch.randn(3, 4, dtype=torch.float64, requires_grad=True)


class DoubledSilu(ext.autograd.Function):
    """silu whose backward returns twice the gradient."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x.sigmoid()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = x.sigmoid()
        return 2 * grad * s * (1 + x * (1 - s))


class TooFewGradients(ext.autograd.Function):
    """x * y whose backward returns one gradient for two inputs."""

    @staticmethod
    def forward(ctx, x, y):
        return x * y

    @staticmethod
    def backward(ctx, grad):
        return grad


class WrongShapeGradient(ext.autograd.Function):
    """x * 2 whose backward returns a gradient summed over the first dimension."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad.sum(0)


class RightOnTorchOnly(ext.autograd.Function):
    """x * x whose backward is right on torch tensors and wrong on ext's."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x * (3 if isinstance(x, ext.Tensor) else 2)


class DetachedSquare(ext.autograd.Function):
    """x * x whose backward detaches x: right first derivative, no second one."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * x.detach()


_WORST = re.compile(r"worst at index \(([\d, ]+)\): expected (\S+), got (\S+) "
                    r"\(abs error (\S+), rel error (\S+);")


def _worst(detail: str) -> tuple:
    found = _WORST.search(detail)
    assert found, detail
    index = tuple(int(i) for i in found[1].split(","))
    return (index, *(float(v) for v in found.groups()[1:]))


# ---------------------------------------------------------------------------------- the cause
def test_a_wrong_backward_is_named_as_the_likely_cause_of_what_follows_from_it():
    report = check(DoubledSilu, _x(), reference=F.silu, skip=QUICK)
    assert report.cause == "backward"
    assert {"double_backward", "gradcheck", "upstream", "torch_func"} <= set(report.failures())
    line = str(report).splitlines()[1]
    assert line.startswith("  likely cause: backward")
    assert "double_backward, gradcheck, upstream, torch_func run it" in line
    with pytest.raises(AssertionError, match=r"DoubledSilu differs:\n  likely cause: backward"):
        assert_parity(DoubledSilu, _x(), reference=F.silu, skip=QUICK)


def test_a_backward_right_on_torch_only_names_the_mini_engine():
    report = check(RightOnTorchOnly, _x(), reference=lambda x: x * x, skip=QUICK)
    assert report.cause == "mini_engine" and set(report.failures()) == {"mini_engine"}
    assert "likely cause: mini_engine (the only failing check)" in str(report)
    index, expected, got, _, _ = _worst(report.failures()["mini_engine"])
    assert got == pytest.approx(1.5 * expected, rel=1e-6)  # (3x on ext against torch's 2x)


def test_a_backward_without_a_graph_names_double_backward_before_gradgradcheck():
    report = check(DetachedSquare, _x(), reference=lambda x: x * x, skip=QUICK)
    assert report.cause == "double_backward"
    assert report.results["backward"][0] == "pass"
    assert "gradgradcheck" in report.cause_line().split("may fail")[0]


# ---------------------------------------------------------------------------------- worst element
def test_a_value_mismatch_shows_expected_and_actual_at_the_worst_element():
    x = _x()
    report = check(DoubledSilu, x, reference=F.silu, skip=QUICK)
    index, expected, got, abs_error, rel_error = _worst(report.failures()["backward"])
    assert len(index) == 2 and all(0 <= i < n for i, n in zip(index, x.shape))
    assert got == pytest.approx(2 * expected, rel=1e-6)
    assert abs_error == pytest.approx(abs(got - expected), rel=1e-2)
    assert rel_error == pytest.approx(1.0, rel=1e-2)
    assert "12 of 12 elements differ" in report.failures()["backward"]
    # (every numeric comparison says so: the gradient behind exp too)
    _, expected, got, _, _ = _worst(report.failures()["upstream"])
    assert got == pytest.approx(2 * expected, rel=1e-6)


def test_gradcheck_names_the_worst_jacobian_entry_and_is_not_cut():
    detail = check(DoubledSilu, _x(), reference=F.silu, skip=QUICK).failures()["gradcheck"]
    found = re.search(r"Jacobian mismatch for output 0 with respect to input 0: \d+ of 144 "
                      r"entries differ; worst d output 0\[(\d), (\d)\] / d input 0\[(\d), (\d)\]: "
                      r"numerical (\S+), analytical (\S+) \(abs error", detail)
    assert found, detail
    # (silu acts elementwise: the worst entry sits on the diagonal, and the backward doubles it)
    assert found.groups()[0:2] == found.groups()[2:4]
    assert float(found[6]) == pytest.approx(2 * float(found[5]), rel=1e-4)
    assert not detail.rstrip().endswith(",")


def test_gradgradcheck_names_the_worst_entry_of_the_backwards_own_derivative():
    detail = check(DetachedSquare, _x(), reference=lambda x: x * x,
                   skip=QUICK).failures()["gradgradcheck"]
    found = re.search(r"Jacobian mismatch for gradient 0 with respect to input 0: .* "
                      r"numerical (\S+), analytical (\S+) \(", detail)
    assert found, detail
    assert float(found[2]) == 0.0 and float(found[1]) != 0.0  # (no graph: an analytical zero)


# ---------------------------------------------------------------------------------- once each
def test_a_backward_with_too_few_gradients_is_said_once():
    report = check(TooFewGradients, _x(), _x(), reference=torch.mul, skip=QUICK)
    message = "function TooFewGradientsBackward returned an incorrect number of gradients"
    assert message in report.failures()["backward"]
    assert str(report).count("incorrect number of gradients") == 1
    repeats = {k for k, d in report.failures().items() if d == "same as backward"}
    assert {"double_backward", "gradcheck", "mini_engine", "torch_func"} <= repeats
    # saving nothing is no saving when backward cannot run: not judged, not "pass"
    assert report.results["saved_bytes"][0] == "skip"
    assert "backward fails" in report.results["saved_bytes"][1]


def test_a_wrong_shaped_gradient_is_said_once_and_leaks_no_anomaly_traceback(capfd):
    report = check(WrongShapeGradient, _x(), reference=lambda x: x * 2)
    text = str(report)
    assert report.cause == "backward"
    assert text.count("returned an invalid gradient at index 0 - got [4]") == 1
    # (torch.compile's failure is the same error, raised by the compiled graph's node)
    assert report.failures()["compile"] == "same as backward"
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == ""
    assert "Traceback" not in text and "File \"" not in text
    anomaly = [w for w in report.warnings if "Error detected in" in w]
    assert anomaly and all("traceback of the forward call is left out" in w for w in anomaly)


# ---------------------------------------------------------------------------------- never "pass"
def test_a_wrong_backward_does_not_leave_mini_engine_a_bare_pass():
    status, detail = check(DoubledSilu, _x(), reference=F.silu, skip=QUICK).results["mini_engine"]
    assert status == "pass"
    assert detail == "ext gives what fn gives on torch, so it fails backward the same way"


def test_checks_that_did_not_run_are_shown_skipped_with_why():
    report = check(DoubledSilu, _x(), skip=QUICK)  # (no reference: nothing to compare with)
    assert report.cause == "gradcheck"
    for name in ("forward", "backward", "double_backward", "upstream", "torch_func"):
        assert report.results[name] == ("skip", "no reference given")
    assert report.results["saved_bytes"] == ("skip", "no reference given (fn saves 96 B)")
    assert "no reference" in report.results["mini_engine"][1]
    lines = {line.split()[0]: line for line in str(report).splitlines()[2:]}
    assert "skipped: no reference given" in lines["forward"]
    assert "skipped: --" not in str(report) and set(report.results) == set(CHECKS)


def test_a_torch_only_callable_says_why_the_mini_engine_did_not_run():
    report = check(F.silu, _x(), reference=F.silu, skip=QUICK)
    status, detail = report.results["mini_engine"]
    assert status == "skip"
    assert "torch.nn.functional.silu() got an ext.Tensor" in detail


# ---------------------------------------------------------------------------------- whole messages
class RaisesTwoLines(ext.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("the first line,\nand the second line that says why")


def test_a_message_of_several_lines_is_reported_whole():
    report = check(RaisesTwoLines, _x(), reference=lambda x: x * 2, skip=QUICK)
    detail = report.failures()["backward"]
    assert detail == "RuntimeError: the first line,\nand the second line that says why"
    assert "and the second line that says why" in str(report)


# ---------------------------------------------------------------------------------- no warnings
class Warns(ext.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        warnings.warn("forward is approximate here", UserWarning, stacklevel=1)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_warnings_raised_while_checking_go_into_the_report():
    with warnings.catch_warnings(record=True) as outside:
        warnings.simplefilter("always")
        report = check(Warns, _x(), reference=lambda x: x * 2, skip=QUICK)
    assert report.ok and outside == []
    assert report.warnings == ["UserWarning: forward is approximate here"]  # (once)
    assert "warnings raised while checking (1)" in str(report)


def test_check_leaks_no_cpp_vmap_fallback_notice():
    # A fresh process: torch prints the notice once per process, from C++, on stderr.
    program = ("from ext.testing import check, op_cases\n"
               "case = next(c for c in op_cases() if c.op == 'fill')\n"
               "report = check(case.fn, *case.inputs(), reference=case.reference, "
               "skip={'compile': 'slow'})\n"
               "assert report.results['torch_func'][0] == 'pass', str(report)\n")
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stderr == "" and out.stdout == ""
