"""ext tensors and torch tensors do not mix: each place where they meet (an operator, a torch
function or module, an ext function, a Function's outputs) raises a TypeError that names
``ext.Tensor`` and ``torch.Tensor`` and says what to do; the same calls on one engine work."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import ext

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.ext_only

CONVERT = "torch.from_numpy"


@pytest.mark.parametrize(("call", "name"), [
    (lambda a, b: a + b, "add"),
    (lambda a, b: b + a, "add"),
    (lambda a, b: a * b, "mul"),
    (lambda a, b: b * a, "mul"),
    (lambda a, b: a - b, "sub"),
    (lambda a, b: a @ b, "matmul"),
    (lambda a, b: b @ a, "matmul"),
    (lambda a, b: a == b, "eq"),
    (lambda a, b: b < a, "gt"),  # (torch's < gives up, then ext's reflected > answers)
])
def test_an_operator_between_the_engines_names_both_and_how_to_convert(call, name):
    a, b = ext.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])
    with pytest.raises(TypeError) as raised:
        call(a, b)
    message = str(raised.value)
    assert message.startswith(f"{name}(): cannot combine an ext.Tensor with a torch.Tensor")
    assert CONVERT in message and "ext.tensor(t.detach().numpy())" in message
    # the same operator within one engine: torch's result, on both
    for T in (ext, torch):
        x, y = T.tensor([1.0, 2.0]), T.tensor([3.0, 4.0])
        np.testing.assert_array_equal(np.asarray(call(x, y)),
                                      call(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])))


@pytest.mark.parametrize(("call", "name"), [
    (lambda a: torch.nn.Linear(2, 1)(a), "torch.nn.functional.linear"),
    (lambda a: torch.tanh(a), "torch.tanh"),
    (lambda a: torch.nn.functional.silu(a), "torch.nn.functional.silu"),
    (lambda a: torch.cat([torch.ones(1, 2), a]), "torch.cat"),
    (lambda a: torch.ones(1, 2).add(a), "torch.Tensor.add"),
])
def test_a_torch_function_given_an_ext_tensor_says_so(call, name):
    with pytest.raises(TypeError) as raised:
        call(ext.ones(1, 2))
    message = str(raised.value)
    assert message.startswith(f"{name}() got an ext.Tensor; torch functions take torch.Tensor")
    assert CONVERT in message
    call(torch.ones(1, 2))  # (on a torch tensor it runs)


@pytest.mark.parametrize("name", ["tanh", "exp", "relu", "sigmoid"])
def test_an_ext_function_given_a_torch_tensor_says_what_to_call(name):
    with pytest.raises(TypeError) as raised:
        getattr(ext, name)(torch.ones(2))
    message = str(raised.value)
    assert message.startswith(f"ext.{name}() got a torch.Tensor as argument 'input'")
    assert f"torch.{name}" in message and f"x.{name}(" in message
    assert "namespace_of(x)" in message
    out = getattr(ext, name)(ext.ones(2))
    np.testing.assert_allclose(out.numpy(), getattr(torch, name)(torch.ones(2)).numpy())


def test_an_ext_binary_function_names_the_argument_that_is_a_torch_tensor():
    with pytest.raises(TypeError, match=r"ext.add\(\) got a torch.Tensor as argument 'other' "
                                        r"\(position 2\)"):
        ext.add(ext.ones(2), torch.ones(2))


class BodyWithExtTanh(ext.autograd.Function):
    """A body written with ext's free function: it cannot run on torch tensors."""

    @staticmethod
    def forward(ctx, x):
        return ext.tanh(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


class BodyWithMethods(ext.autograd.Function):
    """The same body written with the common tensor API: it runs on both."""

    @staticmethod
    def forward(ctx, x):
        y = x.tanh()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (1 - y * y)


def test_a_function_body_calling_ext_functions_on_torch_tensors_points_to_the_methods():
    with pytest.raises(TypeError) as raised:
        BodyWithExtTanh.apply(torch.ones(2, requires_grad=True))
    assert "ext.tanh() got a torch.Tensor" in str(raised.value)
    assert "x.tanh(" in str(raised.value) and "namespace_of(x).tanh" in str(raised.value)
    for T in (ext, torch):
        x = T.tensor([0.5, -1.0], requires_grad=True)
        BodyWithMethods.apply(x).sum().backward()
        np.testing.assert_allclose(np.asarray(x.grad), 1 - np.tanh([0.5, -1.0]) ** 2)


class ReturnsExt(ext.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2, ext.ones(2)

    @staticmethod
    def backward(ctx, grad, other):
        return grad * 2


class ReturnsTorch(ext.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.ones(2)

    @staticmethod
    def backward(ctx, grad):
        return grad


def test_a_forward_returning_an_ext_tensor_on_torch_inputs_raises_at_once():
    with pytest.raises(TypeError, match=r"^ReturnsExt.forward returned an ext.Tensor as output "
                                        r"1, on torch.Tensor inputs"):
        ReturnsExt.apply(torch.ones(2, requires_grad=True))
    # under torch.func too (the bridge's flavour for the transforms)
    with pytest.raises(TypeError, match="ReturnsExt.forward returned an ext.Tensor as output 1"):
        torch.func.grad(lambda x: ReturnsExt.apply(x)[0].sum())(torch.ones(2))


def test_a_forward_returning_a_torch_tensor_on_ext_inputs_raises_at_once():
    for requires_grad in (True, False):
        with pytest.raises(TypeError, match=r"^ReturnsTorch.forward returned a torch.Tensor as "
                                            r"output 0, on ext.Tensor inputs"):
            ReturnsTorch.apply(ext.ones(2, requires_grad=requires_grad))


def test_a_forward_returning_its_own_engines_tensors_keeps_the_graph():
    for T in (ext, torch):
        x = T.ones(2, requires_grad=True)
        y, _ = ReturnsExt.apply(x) if T is ext else (BodyWithMethods.apply(x), None)
        assert y.grad_fn is not None


def test_import_ext_still_does_not_import_torch():
    program = "import sys, ext\nassert 'torch' not in sys.modules\nprint(ext.ones(1) + 1)"
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "tensor([2.])"
