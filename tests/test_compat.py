"""The bridge: an ext.autograd.Function applied to torch tensors runs as a torch.autograd.Function
(ext.compat), with torch's ctx, and agrees with the same Function on the mini-engine."""

from __future__ import annotations

import numpy as np
import pytest

import ext
from ext.compat import to_torch
from ext.functions import namespace_of

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.ext_only

_rng = np.random.default_rng(3)


class Swish(ext.autograd.Function):
    """x * sigmoid(x), saving its input."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x.sigmoid()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = x.sigmoid()
        return grad * s * (1 + x * (1 - s))


class ScaledSwish(ext.autograd.Function):
    """scale * x * sigmoid(x), saving an intermediate and a number on ctx, with a jvp."""

    @staticmethod
    def forward(ctx, x, scale=1.0):
        s = x.sigmoid()
        ctx.save_for_backward(x, s)
        ctx.save_for_forward(x, s)
        ctx.scale = scale
        return scale * x * s

    @staticmethod
    def backward(ctx, grad):
        x, s = ctx.saved_tensors
        return ctx.scale * grad * s * (1 + x * (1 - s)), None

    @staticmethod
    def jvp(ctx, tx, _):
        x, s = ctx.saved_tensors
        return ctx.scale * tx * s * (1 + x * (1 - s))


class SplitSwish(ext.autograd.Function):
    """Swish written as forward + setup_context (torch.func's own style)."""

    @staticmethod
    def forward(x):
        return x * x.sigmoid()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = x.sigmoid()
        return grad * s * (1 + x * (1 - s))


def _x(*shape, dtype=None):
    return torch.tensor(_rng.standard_normal(shape), dtype=dtype or torch.float64,
                        requires_grad=True)


def test_apply_on_torch_tensors_runs_a_torch_function_with_torch_node():
    x = _x(5)
    y = Swish.apply(x)
    assert type(y) is torch.Tensor
    assert type(y.grad_fn).__name__ == "SwishBackward"
    assert issubclass(to_torch(Swish), torch.autograd.Function)
    assert to_torch(Swish) is to_torch(Swish)
    torch.testing.assert_close(y, torch.nn.functional.silu(x))
    (g,) = torch.autograd.grad(y.sum(), x)
    (e,) = torch.autograd.grad(torch.nn.functional.silu(x).sum(), x)
    torch.testing.assert_close(g, e)


def test_one_function_gives_the_same_values_and_gradients_on_both_engines():
    data = _rng.standard_normal((3, 4))
    grad = _rng.standard_normal((3, 4))
    results = []
    for T in (ext, torch):
        x = T.tensor(data, requires_grad=True)
        y = ScaledSwish.apply(x, 2.5)
        (g,) = T.autograd.grad(y, x, T.tensor(grad), create_graph=True)
        (gg,) = T.autograd.grad(g.sum(), x)
        results.append([t.detach().numpy() for t in (y, g, gg)])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn", [Swish, SplitSwish])
def test_gradcheck_and_gradgradcheck_through_the_bridge(fn):
    x = _x(4)
    assert torch.autograd.gradcheck(fn.apply, (x,))
    assert torch.autograd.gradgradcheck(fn.apply, (x,))


def test_keywords_bind_to_forward_on_torch_tensors():
    x = _x(3)
    torch.testing.assert_close(ScaledSwish.apply(x, scale=3.0), 3.0 * torch.nn.functional.silu(x))


def test_compiles_with_fullgraph_and_no_graph_break():
    x = _x(6)
    compiled = torch.compile(lambda t: ScaledSwish.apply(t, 2.0).sum(), fullgraph=True,
                             backend="eager")
    out = compiled(x)
    out.backward()
    torch.testing.assert_close(out, (2.0 * torch.nn.functional.silu(x)).sum())
    torch.testing.assert_close(x.grad, torch.func.grad(
        lambda t: (2.0 * torch.nn.functional.silu(t)).sum())(x.detach()))
    # the default flavour has no jvp of its own (a jvp breaks compile's graph)
    assert "jvp" not in vars(to_torch(ScaledSwish))


def test_torch_func_jvp_uses_the_functions_jvp_in_the_func_flavour():
    x, t = _x(2, 3).detach(), _x(2, 3).detach()
    got = torch.func.jvp(lambda v: ScaledSwish.apply(v, 2.0), (x,), (t,))
    expected = torch.func.jvp(lambda v: 2.0 * torch.nn.functional.silu(v), (x,), (t,))
    torch.testing.assert_close(got, expected)


@pytest.mark.parametrize("fn", [Swish, ScaledSwish, SplitSwish])
def test_torch_func_transforms_vmap_grad_jacrev(fn):
    from torch.func import grad, jacrev, vmap

    x = _x(2, 3).detach()
    silu = torch.nn.functional.silu

    def f(t):
        return fn.apply(t)

    torch.testing.assert_close(vmap(f)(x), silu(x))
    torch.testing.assert_close(grad(lambda t: f(t).sum())(x), grad(lambda t: silu(t).sum())(x))
    torch.testing.assert_close(jacrev(f)(x[0]), jacrev(silu)(x[0]))
    torch.testing.assert_close(vmap(grad(lambda t: f(t).sum()))(x),
                               vmap(grad(lambda t: silu(t).sum()))(x))


def test_forward_mode_ad_uses_the_functions_jvp():
    import torch.autograd.forward_ad as fwAD

    x, t = _x(4).detach(), _x(4).detach()
    with fwAD.dual_level():
        y = ScaledSwish.apply(fwAD.make_dual(x, t), 2.0)
        tangent = fwAD.unpack_dual(y).tangent
    _, expected = torch.func.jvp(lambda v: 2.0 * torch.nn.functional.silu(v), (x,), (t,))
    torch.testing.assert_close(tangent, expected)


def test_needs_input_grad_is_torchs():
    seen = []

    class Mul(ext.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            seen.append(ctx.needs_input_grad)
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad * b if ctx.needs_input_grad[0] else None, \
                grad * a if ctx.needs_input_grad[1] else None

    a, b = _x(3), _x(3).detach()
    Mul.apply(a, b).sum().backward()
    assert seen == [(True, False)]
    torch.testing.assert_close(a.grad, b)


def test_mark_dirty_writes_into_the_input_and_bumps_its_version():
    class Double(ext.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return 2 * grad

    leaf = _x(3)
    x = leaf.clone()
    before = x._version
    y = Double.apply(x)
    assert y is x and x._version > before
    y.sum().backward()
    torch.testing.assert_close(leaf.grad, torch.full((3,), 2.0, dtype=torch.float64))


def test_mark_non_differentiable_and_set_materialize_grads():
    got = []

    class SortValues(ext.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            values, indices = x.sort()
            ctx.mark_non_differentiable(indices)
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(indices)
            return values, indices

        @staticmethod
        def backward(ctx, grad_values, grad_indices):
            got.append(grad_indices)
            (indices,) = ctx.saved_tensors
            return namespace_of(grad_values).zeros_like(grad_values).scatter(0, indices,
                                                                             grad_values)

    x = _x(4)
    values, indices = SortValues.apply(x)
    assert not indices.requires_grad and values.requires_grad
    values.sum().backward()
    assert got == [None]
    torch.testing.assert_close(x.grad, torch.ones(4, dtype=torch.float64))


def test_once_differentiable_refuses_double_backward_as_torch():
    class Cube(ext.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @ext.autograd.function.once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 3 * grad * x ** 2

    x, v = _x(3), _x(3)  # (v: a gradient that requires grad, so the result does too)
    (g,) = torch.autograd.grad(Cube.apply(x), x, v, create_graph=True)
    torch.testing.assert_close(g, 3 * v.detach() * x.detach() ** 2)
    assert g.requires_grad
    with pytest.raises(RuntimeError, match="marked with @once_differentiable"):
        g.sum().backward()


def test_an_input_modified_after_forward_fails_the_version_check():
    x = _x(3).clone()
    y = Swish.apply(x)
    x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_saved_tensors_hooks_see_the_bridges_saves():
    packed = []

    def pack(t):
        packed.append(t.shape)
        return t

    x = _x(2, 2)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = Swish.apply(x)
    y.sum().backward()
    assert packed == [torch.Size([2, 2])]


def test_autocast_policy_casts_inputs_where_the_function_asks():
    class Square(ext.autograd.Function):
        cast_inputs = "float32"

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x @ x.t()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return (grad + grad.t()) @ x

    class Ambient(ext.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x @ x.t()

        @staticmethod
        def backward(ctx, grad):
            return None

    x = torch.randn(3, 3, dtype=torch.float32, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = Square.apply(x)
        z = Ambient.apply(x)
    assert y.dtype == torch.float32 and z.dtype == torch.bfloat16
    y.sum().backward()
    assert x.grad.dtype == torch.float32


def test_autocast_policy_leaves_float64_inputs_as_torchs_custom_fwd():
    class Double(ext.autograd.Function):
        cast_inputs = "float32"

        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    class TorchDouble(torch.autograd.Function):
        @staticmethod
        @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
        def forward(ctx, x):
            return x * 2

        @staticmethod
        @torch.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            return grad * 2

    for dtype in (torch.float64, torch.bfloat16):
        x = torch.ones(3, dtype=dtype, requires_grad=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert Double.apply(x).dtype == TorchDouble.apply(x).dtype


def test_runs_on_meta_tensors_without_computing():
    x = torch.empty(3, 4, device="meta", requires_grad=True)
    y = Swish.apply(x)
    assert y.device.type == "meta" and y.shape == (3, 4)
    (g,) = torch.autograd.grad(y, x, torch.empty(3, 4, device="meta"))
    assert g.device.type == "meta"


def test_to_torch_refuses_what_is_not_an_ext_function():
    with pytest.raises(TypeError, match="ext.autograd.Function subclass"):
        to_torch(torch.autograd.Function)
