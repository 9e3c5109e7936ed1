"""Conversions, creation and the in-place variants: t_, transpose_, unsqueeze_ and squeeze_ (a
tensor's own geometry changed in place), erf_, addmm_, cumsum_, true_divide_; dtype and layout
conversions (``to`` in each form, byte / char / short ...), resize_ and resize_as_; and the
factories empty_strided, new_empty_strided, empty_permuted, scalar_tensor and logspace; the
aten-level native_batch_norm, native_group_norm, native_layer_norm and native_dropout_backward.

Node names and saved fields, version counts, views, gradcheck and gradgradcheck in float64,
values, errors, and torch's op database (``tests/opdb.py``) on every sample. Every test but the
last runs on ``ext`` and on ``torch``; the expectations are torch 2.13's.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import leaf, to_np

sys.path.insert(0, str(Path(__file__).parent))


def _saved(node) -> list:
    return sorted(a for a in dir(node) if a.startswith("_saved_"))


# --------------------------------------------------------------------------------------------
# In-place views: the tensor's own sizes and strides change, a node of their own
# --------------------------------------------------------------------------------------------
# (name, op on a (2, 1, 3) tensor, node name, saved fields with their values)
INPLACE_VIEWS = [
    ("t_", lambda y: y[:, 0].t_(), "TBackward1", {}),
    ("transpose_", lambda y: y.transpose_(0, 2), "TransposeBackward1",
     {"_saved_dim0": 0, "_saved_dim1": 2}),
    ("unsqueeze_", lambda y: y.unsqueeze_(2), "UnsqueezeBackward1", {"_saved_dim": 2}),
    ("squeeze_", lambda y: y.squeeze_(), "SqueezeBackward3",
     {"_saved_self_sym_sizes": (2, 1, 3)}),
    ("squeeze_dim", lambda y: y.squeeze_(1), "SqueezeBackward4",
     {"_saved_dim": 1, "_saved_self_sym_sizes": (2, 1, 3)}),
    ("squeeze_dims", lambda y: y.squeeze_((0, 1)), "SqueezeBackward5",
     {"_saved_dim": (0, 1), "_saved_self_sym_sizes": (2, 1, 3)}),
]
VIEW_IDS = [c[0] for c in INPLACE_VIEWS]


@pytest.mark.parametrize(("name", "fn", "node", "saved"), INPLACE_VIEWS, ids=VIEW_IDS)
def test_inplace_view_records_its_own_node_and_a_version(T, rng, name, fn, node, saved):
    x = leaf(T, rng.uniform(-1, 1, (2, 1, 3)))
    y = x * 1
    if name == "t_":
        y = y[:, 0].clone()
        fn = type(y).t_
    before = y._version
    out = fn(y)
    assert out is y
    assert type(y.grad_fn).__name__ == node
    assert y._version == before + 1
    assert _saved(y.grad_fn) == sorted(saved)
    for field, value in saved.items():
        got = getattr(y.grad_fn, field)
        assert (tuple(got) if isinstance(got, (tuple, list)) else got) == value


@pytest.mark.parametrize(("name", "fn", "node", "saved"), INPLACE_VIEWS, ids=VIEW_IDS)
def test_inplace_view_matches_the_out_of_place_view_and_its_gradient(T, rng, name, fn, node,
                                                                     saved):
    a = rng.uniform(-1, 1, (2, 1, 3))
    x = leaf(T, a)
    y = fn(x * 1)
    plain = {"t_": lambda t: t[:, 0].t(), "transpose_": lambda t: t.transpose(0, 2),
             "unsqueeze_": lambda t: t.unsqueeze(2), "squeeze_": lambda t: t.squeeze(),
             "squeeze_dim": lambda t: t.squeeze(1), "squeeze_dims": lambda t: t.squeeze((0, 1))}
    expected = plain[name](T.tensor(a))
    assert tuple(y.shape) == tuple(expected.shape)
    assert y.stride() == expected.stride()
    np.testing.assert_array_equal(to_np(y), expected.numpy())
    g = rng.uniform(-1, 1, tuple(y.shape))
    y.backward(T.tensor(g))
    want = np.zeros_like(a)
    if name == "t_":
        want[:, 0] = g.T
    else:
        want[...] = np.reshape(g.transpose(2, 1, 0) if name == "transpose_" else g, a.shape)
    np.testing.assert_allclose(to_np(x.grad), want)


def test_inplace_view_on_a_leaf_that_requires_grad_is_refused(T):
    x = T.ones(2, 1, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                           "an in-place operation"):
        x.squeeze_()
    assert tuple(x.shape) == (2, 1)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[:].t_()


def test_inplace_view_of_a_view_keeps_its_base_and_a_later_write_goes_through(T, rng):
    x = leaf(T, rng.uniform(-1, 1, (2, 1, 3)))
    z = x * 1
    v = z[0:2]
    v.squeeze_(1)
    assert type(v.grad_fn).__name__ == "SqueezeBackward4"
    assert v._base is z
    assert type(z.grad_fn).__name__ == "MulBackward0"
    v.mul_(2)
    assert type(v.grad_fn).__name__ == "AsStridedBackward0"
    assert type(z.grad_fn).__name__ == "CopySlices"
    g = rng.uniform(-1, 1, (2, 3))
    v.backward(T.tensor(g))
    np.testing.assert_allclose(to_np(x.grad), 2 * g[:, None, :])


def test_inplace_view_of_a_view_made_in_no_grad_is_refused(T):
    z = T.ones(2, 1, requires_grad=True) * 1
    with T.no_grad():
        v = z[:]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        v.squeeze_()


def test_inplace_view_without_grad_and_its_errors(T):
    a = T.arange(6.0).reshape(2, 3)
    assert a.t_() is a and tuple(a.shape) == (3, 2) and a._version == 1
    b = T.ones(2, 1, dtype=T.int64)
    b.squeeze_()
    assert tuple(b.shape) == (2,)
    with pytest.raises(RuntimeError, match=r"t_\(\) expects a tensor with <= 2 dimensions"):
        T.ones(2, 3, 4).t_()
    with pytest.raises(IndexError, match="Dimension out of range"):
        T.ones(2, 3).transpose_(0, 5)
    with pytest.raises(IndexError, match="Dimension out of range"):
        T.ones(2, 3).unsqueeze_(4)
    with pytest.raises(IndexError, match="Dimension out of range"):
        T.ones(2, 3).squeeze_(3)


def test_inplace_views_under_forward_ad(T, rng):
    fwAD = T.autograd.forward_ad
    a, t = rng.uniform(-1, 1, (2, 1, 3)), rng.uniform(-1, 1, (2, 1, 3))
    with fwAD.dual_level():
        d = fwAD.make_dual(T.tensor(a), T.tensor(t)) * 1
        d.transpose_(0, 2).squeeze_(1)
        tangent = fwAD.unpack_dual(d).tangent
    np.testing.assert_allclose(to_np(tangent), t.transpose(2, 1, 0)[:, 0, :])


@pytest.mark.parametrize("name", ["t_", "transpose_", "unsqueeze_", "squeeze_"])
def test_inplace_view_gradcheck_and_gradgradcheck(T, rng, name):
    call = {"t_": lambda u: (u * 1).t_(), "transpose_": lambda u: (u * 1).transpose_(0, 1),
            "unsqueeze_": lambda u: (u * 1).unsqueeze_(1),
            "squeeze_": lambda u: (u * 1).unsqueeze(0).squeeze_(0)}[name]
    x = leaf(T, rng.uniform(-1, 1, (3, 4)))
    assert T.autograd.gradcheck(call, (x,))
    assert T.autograd.gradgradcheck(call, (x,))


# --------------------------------------------------------------------------------------------
# In-place variants: erf_, addmm_, cumsum_, true_divide_
# --------------------------------------------------------------------------------------------
def test_inplace_variants_write_the_op_into_their_input(T, rng):
    a = rng.uniform(-1, 1, (3, 3))
    m1, m2 = rng.uniform(-1, 1, (3, 2)), rng.uniform(-1, 1, (2, 3))
    cases = [
        (lambda t: t.erf_(), lambda t: T.erf(t), "ErfBackward0"),
        (lambda t: t.addmm_(T.tensor(m1), T.tensor(m2), beta=0.5, alpha=2.0),
         lambda t: T.addmm(t, T.tensor(m1), T.tensor(m2), beta=0.5, alpha=2.0), "AddmmBackward0"),
        (lambda t: t.cumsum_(1), lambda t: T.cumsum(t, 1), "CumsumBackward0"),
        (lambda t: t.true_divide_(2.5), lambda t: T.true_divide(t, 2.5), "DivBackward0"),
    ]
    for inplace, plain, node in cases:
        x = leaf(T, a)
        y = x * 1
        assert inplace(y) is y
        assert type(y.grad_fn).__name__ == node
        np.testing.assert_allclose(to_np(y), to_np(plain(T.tensor(a))), rtol=1e-12)


def test_erf_into_an_integer_tensor_is_refused(T):
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        T.ones(3, dtype=T.int64).erf_()


# --------------------------------------------------------------------------------------------
# Conversions
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("method", "dtype"), [
    ("byte", "uint8"), ("char", "int8"), ("short", "int16"), ("int", "int32"),
    ("long", "int64"), ("half", "float16"), ("bool", "bool"), ("float", "float32"),
    ("double", "float64")])
def test_conversion_methods(T, rng, method, dtype):
    a = rng.uniform(-3, 3, (2, 3, 2, 2)) * 20
    x = T.tensor(a)
    y = getattr(x, method)()
    assert y.dtype == getattr(T, dtype)
    np.testing.assert_array_equal(to_np(y), a.astype(y.numpy().dtype))
    z = getattr(x, method)(memory_format=T.channels_last)
    assert z.stride() == (12, 1, 6, 3)  # (channels last)
    same = getattr(y, method)()
    assert same is y


def test_to_in_each_form(T, rng):
    x = leaf(T, rng.uniform(-1, 1, (2, 3, 4, 5)))
    assert x.to(T.float64) is x
    assert x.to("cpu", T.float64, False, False) is x
    assert x.to(x, False, False) is x
    y = x.to("cpu", T.float64, True, True)
    assert y is not x and type(y.grad_fn).__name__ == "ToCopyBackward0"
    y = x.to(T.float64, memory_format=T.channels_last)
    assert type(y.grad_fn).__name__ == "ToCopyBackward0"
    assert y.stride() == (60, 1, 15, 3)
    y = x.to(dtype=T.float32, copy=True)
    assert y.dtype == T.float32 and type(y.grad_fn).__name__ == "ToCopyBackward0"
    y = x.to(T.ones(1, dtype=T.float32))
    assert y.dtype == T.float32
    y = x.to(None, T.float32)
    assert y.dtype == T.float32
    with pytest.raises(TypeError, match="to"):
        x.to(T.float64, 1)
    with pytest.raises(TypeError, match="to"):
        x.to("cpu", "cpu")


def test_to_gradcheck_and_gradgradcheck(T, rng):
    x = leaf(T, rng.uniform(-1, 1, (2, 3, 2, 2)))
    for call in (lambda u: u.to(T.float64, copy=True),
                 lambda u: u.to(T.float64, memory_format=T.channels_last) * u):
        assert T.autograd.gradcheck(call, (x,))
        assert T.autograd.gradgradcheck(call, (x,))


def test_resize_keeps_the_storage_order_and_bumps_the_version(T):
    x = T.arange(6.0).reshape(2, 3)
    assert x.resize_(3, 2) is x and x._version == 1
    np.testing.assert_array_equal(to_np(x), np.arange(6.0).reshape(3, 2))
    x.resize_(3, 2)
    assert x._version == 1  # (the same sizes: nothing changes)
    x.resize_(4)
    np.testing.assert_array_equal(to_np(x), np.arange(4.0))
    x = T.arange(6.0).reshape(2, 3)
    x.resize_((2, 2, 2))
    assert tuple(x.shape) == (2, 2, 2)
    np.testing.assert_array_equal(to_np(x).reshape(-1)[:6], np.arange(6.0))
    y = T.ones(2)
    assert y.resize_as_(T.ones(3, 1)) is y and tuple(y.shape) == (3, 1)
    assert tuple(T.resize_as_(T.ones(2), T.ones(1, 2)).shape) == (1, 2)


def test_resize_errors(T):
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        T.ones(2, requires_grad=True).resize_(3)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        (T.ones(2, requires_grad=True) * 1).resize_(3)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        T.ones(2, requires_grad=True).resize_as_(T.ones(3))
    with pytest.raises(TypeError, match="resize_"):
        T.ones(2).resize_(2.5)
    with pytest.raises(TypeError, match="resize_as_"):
        T.ones(2).resize_as_(3)
    x = T.ones(2)
    with pytest.raises(RuntimeError, match="numel: integer multiplication overflow"):
        x.resize_(-2)


# --------------------------------------------------------------------------------------------
# Factories
# --------------------------------------------------------------------------------------------
def test_empty_strided_and_new_empty_strided(T):
    e = T.empty_strided((2, 3), (1, 2))
    assert tuple(e.shape) == (2, 3) and e.stride() == (1, 2) and e.dtype == T.float32
    assert T.empty_strided((2, 3), (1, 2), dtype=T.int64).dtype == T.int64
    n = T.ones(3, dtype=T.float64).new_empty_strided((2, 3), (3, 1))
    assert n.dtype == T.float64 and n.stride() == (3, 1) and not n.requires_grad
    assert T.empty_strided((2, 0), (0, 1)).numel() == 0
    with pytest.raises(RuntimeError, match=r"dimensionality of sizes \(2\) must match "
                                           r"dimensionality of strides \(1\)"):
        T.empty_strided((2, 3), (1,))
    with pytest.raises(RuntimeError, match="negative dimension -3"):
        T.empty_strided((2, -3), (1, 2))
    with pytest.raises(TypeError, match="empty_strided"):
        T.empty_strided(2, (1,))
    with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
        T.empty_strided((2,), (1,), dtype=T.int64, requires_grad=True)


def test_empty_permuted(T):
    p = T.empty_permuted((2, 3, 4), (2, 0, 1))
    assert tuple(p.shape) == (2, 3, 4) and p.stride() == (3, 1, 6)
    with pytest.raises(RuntimeError, match="Duplicate dim not allowed"):
        T.empty_permuted((2, 3), (0, 0))
    with pytest.raises(RuntimeError, match="does not match the length of the physical_layout"):
        T.empty_permuted((2, 3), (0,))
    with pytest.raises(RuntimeError, match="Dimension out of range"):
        T.empty_permuted((2, 3), (0, 2))


def test_scalar_tensor(T):
    s = T.scalar_tensor(3)
    assert s.dim() == 0 and s.dtype == T.float32 and s.item() == 3.0
    assert T.scalar_tensor(True).dtype == T.float32
    assert T.scalar_tensor(2, dtype=T.int64).dtype == T.int64
    assert T.scalar_tensor(T.tensor(2.5)).item() == 2.5
    with pytest.raises(TypeError, match="scalar_tensor"):
        T.scalar_tensor("a")
    with pytest.raises(TypeError, match="scalar_tensor"):
        T.scalar_tensor(T.tensor([1.0, 2.0]))


LOGSPACE_DTYPES = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "int16",
                   "int8", "uint8"]


@pytest.mark.ext_only
@pytest.mark.parametrize("dtype", LOGSPACE_DTYPES)
def test_logspace_gives_torchs_values_exactly(dtype):
    torch = pytest.importorskip("torch")
    import ext

    rng = np.random.default_rng(3)
    for _ in range(150):
        a, b = (float(v) for v in rng.uniform(-6, 6, 2))
        if rng.random() < 0.3:
            a, b = round(a), round(b)
        steps = int(rng.integers(0, 30))
        base = float(rng.choice([10.0, 2.0, 1.1, 0.5, -2.0, rng.uniform(0.1, 4)]))
        try:
            expected = torch.logspace(a, b, steps, base, dtype=getattr(torch, dtype))
        except RuntimeError:  # (a bound beyond uint8)
            continue
        got = ext.logspace(a, b, steps, base, dtype=getattr(ext, dtype))
        assert got.dtype == getattr(ext, dtype)
        np.testing.assert_array_equal(got.float().numpy(), expected.float().numpy())


def test_logspace_forms_and_errors(T):
    y = T.logspace(T.tensor(-1.0), T.tensor(2.0), 4, base=2.0)
    np.testing.assert_allclose(to_np(y), [0.5, 1.0, 2.0, 4.0])
    assert T.logspace(0, 1, 0).numel() == 0
    assert T.logspace(0, 2, 3, dtype=T.int64).dtype == T.int64
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        T.logspace(0, 1, -1)
    with pytest.raises(RuntimeError, match="logspace only supports 0-dimensional start and end"):
        T.logspace(T.ones(2), 1, 3)
    with pytest.raises(TypeError, match="logspace"):
        T.logspace("a", 1, 3)


# --------------------------------------------------------------------------------------------
# aten-level normalizations and dropout's gradient
# --------------------------------------------------------------------------------------------
def test_native_batch_norm_nodes_statistics_and_running_update(T, rng):
    a = rng.uniform(-1, 1, (3, 2, 4))
    x, w, b = leaf(T, a), leaf(T, rng.uniform(0.5, 1.5, 2)), leaf(T, rng.uniform(-1, 1, 2))
    rm, rv = T.zeros(2, dtype=T.float64), T.ones(2, dtype=T.float64)
    out, mean, invstd = T.native_batch_norm(x, w, b, rm, rv, True, 0.3, 1e-5)
    assert type(out.grad_fn).__name__ == "NativeBatchNormBackward0"
    assert _saved(out.grad_fn) == ["_saved_eps", "_saved_input", "_saved_result1",
                                   "_saved_result2", "_saved_running_mean", "_saved_running_var",
                                   "_saved_training", "_saved_weight"]
    assert out.grad_fn._saved_training is True and out.grad_fn._saved_eps == 1e-5
    assert not mean.requires_grad and not invstd.requires_grad
    np.testing.assert_allclose(to_np(mean), a.mean((0, 2)))
    np.testing.assert_allclose(to_np(invstd), 1 / np.sqrt(a.var((0, 2)) + 1e-5))
    np.testing.assert_allclose(to_np(rm), 0.3 * a.mean((0, 2)))
    np.testing.assert_allclose(to_np(rv), 0.7 + 0.3 * a.var((0, 2), ddof=1))
    assert rm._version == 0
    out, mean, invstd = T.native_batch_norm(x, w, b, rm, rv, False, 0.3, 1e-5)
    assert tuple(mean.shape) == (0,) and tuple(invstd.shape) == (0,)
    want = (a - to_np(rm)[:, None]) / np.sqrt(to_np(rv)[:, None] + 1e-5)
    np.testing.assert_allclose(to_np(out), want * to_np(w)[:, None] + to_np(b)[:, None])


@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm_gradcheck_and_gradgradcheck(T, rng, training):
    x = leaf(T, rng.uniform(-1, 1, (3, 2, 2)))
    w, b = leaf(T, rng.uniform(0.5, 1.5, 2)), leaf(T, rng.uniform(-1, 1, 2))
    rm, rv = T.tensor(rng.uniform(-1, 1, 2)), T.tensor(rng.uniform(0.5, 1.5, 2))

    def call(u, ww, bb):
        return T.native_batch_norm(u, ww, bb, rm.clone(), rv.clone(), training, 0.1, 1e-5)[0]

    assert T.autograd.gradcheck(call, (x, w, b))
    assert T.autograd.gradgradcheck(call, (x, w, b))


def test_native_group_norm_nodes_and_statistics(T, rng):
    a = rng.uniform(-1, 1, (2, 6, 3))
    x, w, b = leaf(T, a), leaf(T, rng.uniform(0.5, 1.5, 6)), leaf(T, rng.uniform(-1, 1, 6))
    out, mean, rstd = T.native_group_norm(x, w, b, 2, 6, 3, 2, 1e-5)
    assert type(out.grad_fn).__name__ == "NativeGroupNormBackward0"
    assert _saved(out.grad_fn) == ["_saved_C", "_saved_HxW", "_saved_N", "_saved_eps",
                                   "_saved_group", "_saved_input", "_saved_result1",
                                   "_saved_result2", "_saved_weight"]
    node = out.grad_fn
    assert (node._saved_N, node._saved_C, node._saved_HxW, node._saved_group) == (2, 6, 3, 2)
    assert mean.requires_grad and rstd.requires_grad  # (as torch's, differentiable too)
    grouped = a.reshape(2, 2, 9)
    np.testing.assert_allclose(to_np(mean), grouped.mean(-1))
    np.testing.assert_allclose(to_np(rstd), 1 / np.sqrt(grouped.var(-1) + 1e-5))
    with pytest.raises(RuntimeError):
        T.native_group_norm(x, w, b, 2, 6, 3, 4, 1e-5)


def test_native_group_norm_gradcheck_and_gradgradcheck(T, rng):
    x = leaf(T, rng.uniform(-1, 1, (2, 4, 3)))
    w, b = leaf(T, rng.uniform(0.5, 1.5, 4)), leaf(T, rng.uniform(-1, 1, 4))

    def call(u, ww, bb):
        return T.native_group_norm(u, ww, bb, 2, 4, 3, 2, 1e-5)[0]

    assert T.autograd.gradcheck(call, (x, w, b))
    assert T.autograd.gradgradcheck(call, (x, w, b))


def test_native_group_norm_statistics_have_tangents_but_no_gradient(T, rng):
    a, t = rng.uniform(-1, 1, (2, 4, 3)), rng.uniform(-1, 1, (2, 4, 3))
    fwAD = T.autograd.forward_ad
    with fwAD.dual_level():
        _, mean, rstd = T.native_group_norm(fwAD.make_dual(T.tensor(a), T.tensor(t)), None,
                                             None, 2, 4, 3, 2, 1e-5)
        t_mean, t_rstd = fwAD.unpack_dual(mean).tangent, fwAD.unpack_dual(rstd).tangent
    grouped, tg = a.reshape(2, 2, 6), t.reshape(2, 2, 6)
    centered = grouped - grouped.mean(-1, keepdims=True)
    var = (centered ** 2).mean(-1)
    np.testing.assert_allclose(to_np(t_mean), tg.mean(-1))
    np.testing.assert_allclose(to_np(t_rstd), -(var + 1e-5) ** -1.5 * (centered * tg).mean(-1))
    x = leaf(T, a)
    _, mean, _ = T.native_group_norm(x, None, None, 2, 4, 3, 2, 1e-5)
    assert mean.requires_grad
    assert T.autograd.grad(mean.sum(), x, allow_unused=True) == (None,)


def test_native_group_norm_statistics_gradients_along_with_the_result(T, rng):
    x = leaf(T, rng.uniform(-1, 1, (2, 4, 3)))
    c, d = T.tensor(rng.uniform(-1, 1, (2, 2))), T.tensor(rng.uniform(-1, 1, (2, 2)))
    u = T.tensor(rng.uniform(-1, 1, (2, 4, 3)))

    def call(t):
        out, mean, rstd = T.native_group_norm(t, None, None, 2, 4, 3, 2, 1e-5)
        return (out * u).sum() + (mean * c).sum() + (rstd * d).sum()

    assert T.autograd.gradcheck(call, (x,))
    assert T.autograd.gradgradcheck(call, (x,))


def test_native_layer_norm_is_a_function(T, rng):
    x = leaf(T, rng.uniform(-1, 1, (2, 3)))
    out, mean, rstd = T.native_layer_norm(x, (3,), None, None, 1e-5)
    assert type(out.grad_fn).__name__ == "NativeLayerNormBackward0"
    assert tuple(mean.shape) == (2, 1) and tuple(rstd.shape) == (2, 1)


def test_native_dropout_backward(T, rng):
    g = leaf(T, rng.uniform(-1, 1, (3, 4)))
    mask = T.tensor(rng.random((3, 4)) < 0.5)
    out = T.ops.aten.native_dropout_backward(g, mask, 2.0)
    assert type(out.grad_fn).__name__ == "NativeDropoutBackwardBackward0"
    assert _saved(out.grad_fn) == ["_saved_grad_output", "_saved_mask", "_saved_scale"]
    assert out.grad_fn._saved_scale == 2.0
    np.testing.assert_allclose(to_np(out), to_np(g) * to_np(mask) * 2.0)

    def call(u):
        return T.ops.aten.native_dropout_backward(u, mask, 2.0)

    assert T.autograd.gradcheck(call, (g,))
    assert T.autograd.gradgradcheck(call, (g,))
