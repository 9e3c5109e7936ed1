"""The ops behind ext.nn (erf, gelu, silu, layer_norm, embedding, dropout): values, graphs,
first, second and forward-mode derivatives, and errors, as torch's.

Every test runs on ``ext`` and on ``torch``. Inputs are built in NumPy; expected values are NumPy
references (``math.erf`` for the error function) or what torch 2.13 shows.
"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
from helpers import leaf, sample, to_np

NEG1 = 2**64 - 1  # torch shows a saved -1 as an unsigned 64-bit integer
ERF = np.vectorize(math.erf)
BETA, KAPPA = math.sqrt(2 / math.pi), 0.044715


def functional(T):
    return importlib.import_module(f"{T.__name__}.nn.functional")


def np_gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(BETA * (x + KAPPA * x**3)))
    return 0.5 * x * (1 + ERF(x / math.sqrt(2)))


def np_gelu_grad(x, approximate="none"):
    if approximate == "tanh":
        t = np.tanh(BETA * (x + KAPPA * x**3))
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * BETA * (1 + 3 * KAPPA * x * x)
    return 0.5 * (1 + ERF(x / math.sqrt(2))) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def np_layer_norm(x, k, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = x.mean(axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y, mean, 1 / np.sqrt(var + eps)


INDICES = np.array([[0, 2, 4], [2, 2, 1]])


# ---------------------------------------------------------------------------------- values
def test_erf_matches_math_erf_to_the_last_digits(T):
    a = np.concatenate([np.linspace(-7, 7, 2001), [0.0, 1e-300, -1e-8, 0.4999, 0.5001, 3.99,
                                                   4.01, 26.9, 27.5, 40.0]])
    y = T.erf(T.tensor(a))
    np.testing.assert_allclose(to_np(y), ERF(a), rtol=1e-15, atol=0)
    np.testing.assert_allclose(to_np(T.tensor([1.0, 2.0]).erf()), ERF([1.0, 2.0]), rtol=1e-7)


def test_erf_of_specials_and_integers(T):
    y = to_np(T.erf(T.tensor([float("inf"), -float("inf"), float("nan"), -0.0])))
    assert y[:2].tolist() == [1.0, -1.0] and math.isnan(y[2]) and math.copysign(1, y[3]) == -1
    assert T.erf(T.tensor([0, 1])).dtype == T.float32


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_values_and_gradient(T, rng, approximate):
    a = sample(rng, (3, 4)) * 2
    x = leaf(T, a)
    y = functional(T).gelu(x, approximate=approximate)
    # torch's tanh form loses a few digits to cancellation near -3 (0.5x(1 + tanh) ~ 1e-3).
    np.testing.assert_allclose(to_np(y), np_gelu(a, approximate), rtol=1e-12, atol=1e-15)
    g = sample(rng, (3, 4))
    y.backward(T.tensor(g))
    np.testing.assert_allclose(to_np(x.grad), g * np_gelu_grad(a, approximate), rtol=1e-12,
                               atol=1e-15)


def test_silu_values_and_gradient(T, rng):
    a = sample(rng, (5,)) * 3
    x = leaf(T, a)
    y = functional(T).silu(x)
    s = 1 / (1 + np.exp(-a))
    np.testing.assert_allclose(to_np(y), a * s, rtol=1e-14)
    y.sum().backward()
    np.testing.assert_allclose(to_np(x.grad), s * (1 + a * (1 - s)), rtol=1e-14)


def test_silu_of_large_negative_inputs_is_minus_zero(T):
    y = to_np(functional(T).silu(T.tensor([-1000.0, 1000.0], dtype=T.float64)))
    assert y.tolist() == [0.0, 1000.0] and math.copysign(1, y[0]) == -1


@pytest.mark.parametrize("x_shape,k", [((3, 4), 1), ((2, 3, 4), 2), ((4,), 1)])
def test_layer_norm_values_and_gradients(T, rng, x_shape, k):
    a = sample(rng, x_shape)
    wa, ba = sample(rng, x_shape[-k:]), sample(rng, x_shape[-k:])
    x, w, b = leaf(T, a), leaf(T, wa), leaf(T, ba)
    y = functional(T).layer_norm(x, x_shape[-k:], w, b, eps=1e-3)
    expected, _, rstd = np_layer_norm(a, k, wa, ba, eps=1e-3)
    np.testing.assert_allclose(to_np(y), expected, rtol=1e-13)
    g = sample(rng, x_shape)
    y.backward(T.tensor(g))
    axes = tuple(range(a.ndim - k, a.ndim))
    xhat = np_layer_norm(a, k, eps=1e-3)[0]
    gs = g * wa
    gx = rstd * (gs - gs.mean(axes, keepdims=True) - xhat * (gs * xhat).mean(axes, keepdims=True))
    batch = tuple(range(a.ndim - k))
    np.testing.assert_allclose(to_np(x.grad), gx, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(to_np(w.grad), (g * xhat).sum(batch), rtol=1e-12)
    np.testing.assert_allclose(to_np(b.grad), g.sum(batch), rtol=1e-12)


def test_layer_norm_without_affine_and_in_float32(T, rng):
    a = sample(rng, (3, 5), dtype=np.float32)
    y = functional(T).layer_norm(T.tensor(a), [5])
    assert y.dtype == T.float32
    np.testing.assert_allclose(to_np(y), np_layer_norm(a.astype(np.float64), 1)[0], rtol=1e-5,
                               atol=1e-6)


def test_layer_norm_without_a_bias_gives_plus_zero_where_the_weight_is_zero(T):
    x = T.tensor([[1.5, -0.5], [-0.5, 1.5], [0.0, -0.0]])
    signs = lambda y: [math.copysign(1, v) for v in y.reshape(-1).tolist()]  # noqa: E731
    F = functional(T)
    assert signs(F.layer_norm(x, (2,), T.zeros(2))) == [1] * 6
    assert signs(F.layer_norm(x, (2,))[2]) == [1, 1]
    # with a bias, the product's sign survives a -0 bias
    assert signs(F.layer_norm(x, (2,), T.zeros(2), -T.zeros(2))) == [1, -1, -1, 1, 1, -1]


def test_embedding_values_and_gradient_with_padding_and_frequency_scaling(T, rng):
    wa = sample(rng, (5, 3))
    w = leaf(T, wa)
    y = functional(T).embedding(T.tensor(INDICES), w, padding_idx=1, scale_grad_by_freq=True)
    np.testing.assert_allclose(to_np(y), wa[INDICES], rtol=0)
    g = sample(rng, (2, 3, 3))
    y.backward(T.tensor(g))
    expected = np.zeros((5, 3))
    counts = np.bincount(INDICES.ravel(), minlength=5)
    for i, row in zip(INDICES.ravel(), g.reshape(-1, 3)):
        if i != 1:
            expected[i] += row / counts[i]
    np.testing.assert_allclose(to_np(w.grad), expected, rtol=1e-14)


def test_embedding_weight_gradient_is_one_node_that_reads_the_rows_back(T, rng):
    w = leaf(T, sample(rng, (5, 3)))
    y = functional(T).embedding(T.tensor(INDICES), w, padding_idx=1)
    g = leaf(T, sample(rng, (2, 3, 3)))
    (gw,) = T.autograd.grad(y, w, g, create_graph=True)
    fn = gw.grad_fn
    assert fn.name() == "EmbeddingDenseBackwardBackward0"
    assert fn._saved_padding_idx == 1
    assert to_np(fn._saved_indices).tolist() == INDICES.tolist()
    v = sample(rng, (5, 3))
    (gg,) = T.autograd.grad(gw, g, T.tensor(v))
    expected = v[INDICES] * (INDICES != 1)[..., None]
    np.testing.assert_allclose(to_np(gg), expected, rtol=0)


@pytest.mark.ext_only
def test_embedding_double_backward_keeps_the_frequency_scaling(rng):
    """torch 2.13's embedding_dense_double_backward leaves out scale_grad_by_freq's division
    (its gradgradcheck fails); ext's keeps it."""
    import ext

    w = ext.tensor(sample(rng, (5, 3)), requires_grad=True)
    idx = ext.tensor(INDICES)
    assert ext.autograd.gradgradcheck(
        lambda w: ext.nn.functional.embedding(idx, w, scale_grad_by_freq=True), (w,))


def test_embedding_negative_padding_idx_counts_from_the_end(T, rng):
    w = leaf(T, sample(rng, (5, 2)))
    y = functional(T).embedding(T.tensor([4, 0]), w, padding_idx=-1)
    assert y.grad_fn._saved_padding_idx == 4
    y.sum().backward()
    assert to_np(w.grad).tolist() == [[1, 1], [0, 0], [0, 0], [0, 0], [0, 0]]


def test_embedding_max_norm_rescales_the_rows_read_in_place(T):
    wa = np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    w = T.tensor(wa)
    y = functional(T).embedding(T.tensor([0, 1, 0]), w, max_norm=1.0)
    scale = 1 / (5 + 1e-7)
    np.testing.assert_allclose(to_np(w), [[3 * scale, 4 * scale], [0.3, 0.4], [6, 8]],
                               rtol=1e-15)
    np.testing.assert_allclose(to_np(y)[1], [0.3, 0.4])
    assert w._version == 1


def test_embedding_of_int32_and_0d_indices(T, rng):
    wa = sample(rng, (4, 2))
    w = T.tensor(wa)
    F = functional(T)
    assert to_np(F.embedding(T.tensor([3, 0], dtype=T.int32), w)).tolist() == wa[[3, 0]].tolist()
    assert to_np(F.embedding(T.tensor(2), w)).tolist() == wa[2].tolist()


def test_dropout_zeroes_with_probability_p_and_scales_the_rest(T):
    x = T.ones(100_000, dtype=T.float64)
    T.manual_seed(0)
    y = to_np(functional(T).dropout(x, 0.3))
    assert set(np.unique(y).tolist()) == {0.0, 1 / 0.7}
    assert abs((y == 0).mean() - 0.3) < 0.01


def test_dropout_mask_follows_the_seed(T, rng):
    x = T.tensor(sample(rng, (50,)))
    F = functional(T)
    T.manual_seed(7)
    first = to_np(F.dropout(x, 0.5))
    T.manual_seed(7)
    assert to_np(F.dropout(x, 0.5)).tolist() == first.tolist()


def test_dropout_is_the_identity_when_not_training_or_p_is_0(T, rng):
    x = leaf(T, sample(rng, (3,)))
    F = functional(T)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    empty = T.zeros(0, requires_grad=True)
    assert F.dropout(empty, 0.5) is empty


def test_dropout_p_1_multiplies_by_a_zero_scalar(T):
    x = T.tensor([1.0, -2.0], requires_grad=True)
    y = functional(T).dropout(x, 1.0)
    assert to_np(y).tolist() == [0.0, -0.0] and math.copysign(1, to_np(y)[1]) == -1
    assert y.grad_fn._saved_other.shape == () and y.grad_fn._saved_other.item() == 0


def test_dropout_in_place_and_its_gradient_is_the_mask(T, rng):
    F = functional(T)
    x = leaf(T, sample(rng, (4, 5)))
    y = F.dropout(x, 0.4)
    mask = to_np(y.grad_fn._saved_other)
    y.sum().backward()
    assert to_np(x.grad).tolist() == mask.tolist()
    np.testing.assert_allclose(to_np(y), to_np(x) * mask)
    z = T.tensor(sample(rng, (4, 5)))
    out = F.dropout(z, 0.4, inplace=True)
    assert out is z and z._version == 1


def test_silu_in_place_rebases_the_history(T, rng):
    a = sample(rng, (3,))
    x = leaf(T, a)
    y = x * 1
    out = functional(T).silu(y, inplace=True)
    assert out is y and y._version == 1 and y.grad_fn.name() == "SiluBackward0"
    y.sum().backward()
    s = 1 / (1 + np.exp(-a))
    np.testing.assert_allclose(to_np(x.grad), s * (1 + a * (1 - s)), rtol=1e-14)


def test_no_graph_without_grad(T, rng):
    F = functional(T)
    x = T.tensor(sample(rng, (2, 3)))
    w = T.tensor(sample(rng, (4, 3)))
    outs = [F.gelu(x), F.silu(x), F.layer_norm(x, (3,)), T.erf(x),
            F.embedding(T.tensor([1, 3]), w)]
    assert all(o.grad_fn is None and not o.requires_grad for o in outs)
    x.requires_grad_()
    with T.no_grad():
        assert F.gelu(x).grad_fn is None and F.layer_norm(x, (3,)).grad_fn is None


# ---------------------------------------------------------------------------------- graphs
def test_gelu_and_silu_nodes_save_the_input(T, rng):
    F = functional(T)
    x = leaf(T, sample(rng, (3,)))
    for approximate in ("none", "tanh"):
        node = F.gelu(x, approximate=approximate).grad_fn
        assert node.name() == "GeluBackward0"
        assert node._saved_self is x and node._saved_approximate == approximate
    node = F.silu(x).grad_fn
    assert node.name() == "SiluBackward0" and node._saved_self is x
    node = T.erf(x).grad_fn
    assert node.name() == "ErfBackward0" and node._saved_self is x


def test_layer_norm_node_saves_input_statistics_and_affine(T, rng):
    a = sample(rng, (2, 3, 4))
    x, w = leaf(T, a), leaf(T, sample(rng, (3, 4)))
    y = functional(T).layer_norm(x, (3, 4), w, None, eps=1e-3)
    node = y.grad_fn
    assert node.name() == "NativeLayerNormBackward0"
    assert node._saved_input is x and node._saved_weight is w and node._saved_bias is None
    assert node._saved_normalized_shape == (3, 4)
    _, mean, rstd = np_layer_norm(a, 2, eps=1e-3)
    assert tuple(node._saved_result1.shape) == (2, 1, 1)
    np.testing.assert_allclose(to_np(node._saved_result1), mean, rtol=1e-14)
    np.testing.assert_allclose(to_np(node._saved_result2), rstd, rtol=1e-13)
    assert not node._saved_result1.requires_grad
    names = [None if f is None else type(f).__name__ for f, _ in node.next_functions]
    assert names == ["AccumulateGrad", "AccumulateGrad", None]


def test_layer_norm_of_a_constant_input_gets_an_edge_for_the_weight_only(T, rng):
    w = leaf(T, np.ones(4))
    node = functional(T).layer_norm(T.tensor(sample(rng, (2, 4))), (4,), w).grad_fn
    assert [f is None for f, _ in node.next_functions] == [True, False, True]


def test_embedding_node_saves_indices_and_settings(T, rng):
    w = leaf(T, sample(rng, (5, 3)))
    idx = T.tensor(INDICES)
    node = functional(T).embedding(idx, w).grad_fn
    assert node.name() == "EmbeddingBackward0"
    assert node._saved_indices is idx
    assert node._saved_padding_idx == NEG1
    assert node._saved_scale_grad_by_freq is False and node._saved_sparse is False
    assert node._saved_weight_sym_argsize_0 == 5
    assert len(node.next_functions) == 1
    node = functional(T).embedding(idx, w, padding_idx=2, scale_grad_by_freq=True).grad_fn
    assert node._saved_padding_idx == 2 and node._saved_scale_grad_by_freq is True


def test_dropout_node_is_a_product_with_the_saved_mask(T, rng):
    x = leaf(T, sample(rng, (3, 4)))
    y = functional(T).dropout(x, 0.5)
    node = y.grad_fn
    assert node.name() == "MulBackward0"
    assert node._saved_self is None
    assert set(np.unique(to_np(node._saved_other)).tolist()) <= {0.0, 2.0}
    assert [type(f).__name__ for f, _ in node.next_functions if f is not None] == \
        ["AccumulateGrad"]
    assert functional(T).dropout(T.tensor(sample(rng, (3,))), 0.5).grad_fn is None


# ---------------------------------------------------------------------------------- gradcheck
def _seeded_dropout(T, F, x):
    # The same mask on every call, so that finite differences see one function.
    T.manual_seed(3)
    return F.dropout(x, 0.4)


GRADCHECK_CASES = [
    ("erf", lambda T, F, x: T.erf(x), [(3, 4)]),
    ("gelu", lambda T, F, x: F.gelu(x), [(3, 4)]),
    ("gelu_tanh", lambda T, F, x: F.gelu(x, approximate="tanh"), [(3, 4)]),
    ("silu", lambda T, F, x: F.silu(x), [(3, 4)]),
    ("layer_norm", lambda T, F, x: F.layer_norm(x, (4,)), [(3, 4)]),
    ("layer_norm_affine", lambda T, F, x, w, b: F.layer_norm(x, (4,), w, b), [(3, 4), (4,), (4,)]),
    ("layer_norm_2d", lambda T, F, x, w: F.layer_norm(x, (3, 4), w, None, 1e-2),
     [(2, 3, 4), (3, 4)]),
    ("layer_norm_1d", lambda T, F, x, w, b: F.layer_norm(x, (5,), w, b), [(5,), (5,), (5,)]),
    ("embedding", lambda T, F, w: F.embedding(T.tensor(INDICES), w), [(5, 3)]),
    ("dropout", _seeded_dropout, [(3, 4)]),
]


@pytest.mark.parametrize("fn,shapes", [pytest.param(*c[1:], id=c[0]) for c in GRADCHECK_CASES])
def test_gradcheck_and_gradgradcheck(T, rng, fn, shapes):
    F = functional(T)
    inputs = tuple(leaf(T, sample(rng, shape)) for shape in shapes)

    def func(*args):
        return fn(T, F, *args)

    assert T.autograd.gradcheck(func, inputs)
    assert T.autograd.gradgradcheck(func, inputs)


def test_embedding_padding_and_frequency_gradients_differentiate_consistently(T, rng):
    # Not the true derivative (the padding row is read but gets no gradient, and repeated rows
    # are scaled down), so only the second-order check applies: backward's own derivative.
    def func(w):
        return functional(T).embedding(T.tensor(INDICES), w, padding_idx=2,
                                       scale_grad_by_freq=True)

    assert T.autograd.gradgradcheck(func, (leaf(T, sample(rng, (5, 3))),))


FORWARD_AD_CASES = [c for c in GRADCHECK_CASES if c[0] != "dropout"]


@pytest.mark.parametrize("fn,shapes", [pytest.param(*c[1:], id=c[0]) for c in FORWARD_AD_CASES])
def test_forward_mode_derivatives_match_finite_differences(T, rng, fn, shapes):
    F = functional(T)
    fwad = importlib.import_module(f"{T.__name__}.autograd.forward_ad")
    primals = [sample(rng, shape) for shape in shapes]
    tangents = [sample(rng, shape) for shape in shapes]
    with fwad.dual_level():
        duals = [fwad.make_dual(T.tensor(p), T.tensor(t)) for p, t in zip(primals, tangents)]
        jvp = to_np(fwad.unpack_dual(fn(T, F, *duals)).tangent)
    h = 1e-6
    plus = to_np(fn(T, F, *[T.tensor(p + h * t) for p, t in zip(primals, tangents)]))
    minus = to_np(fn(T, F, *[T.tensor(p - h * t) for p, t in zip(primals, tangents)]))
    np.testing.assert_allclose(jvp, (plus - minus) / (2 * h), rtol=1e-6, atol=1e-8)


def test_gelu_second_derivative(T, rng):
    a = sample(rng, (6,))
    x = leaf(T, a)
    (g,) = T.autograd.grad(functional(T).gelu(x).sum(), x, create_graph=True)
    (gg,) = T.autograd.grad(g.sum(), x)
    phi = np.exp(-a * a / 2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(to_np(gg), phi * (2 - a * a), rtol=1e-12)


# ---------------------------------------------------------------------------------- errors
def _w(T):
    return T.ones(5, 3, dtype=T.float64)


ERROR_CASES = [
    ("gelu_approximate", lambda T, F: F.gelu(T.ones(2), approximate="foo"), RuntimeError,
     "approximate argument must be either none or tanh."),
    ("gelu_long", lambda T, F: F.gelu(T.tensor([1, 2])), NotImplementedError,
     "\"GeluKernelImpl\" not implemented for 'Long'"),
    ("gelu_not_tensor", lambda T, F: F.gelu(1.0), TypeError, "must be Tensor, not float"),
    ("silu_long", lambda T, F: F.silu(T.tensor([1, 2])), NotImplementedError,
     "\"silu_cpu\" not implemented for 'Long'"),
    ("ln_long", lambda T, F: F.layer_norm(T.tensor([[1, 2]]), (2,)), NotImplementedError,
     "\"LayerNormKernelImpl\" not implemented for 'Long'"),
    ("ln_int_shape", lambda T, F: F.layer_norm(T.ones(2, 3), 3), TypeError,
     "argument 'normalized_shape' (position 2) must be tuple of ints, not int"),
    ("ln_input_shape", lambda T, F: F.layer_norm(T.ones(2, 3, 4), (3, 5)), RuntimeError,
     "Given normalized_shape=[3, 5], expected input with shape [*, 3, 5], but got input of "
     "size[2, 3, 4]"),
    ("ln_weight_shape", lambda T, F: F.layer_norm(T.ones(2, 3), (3,), T.ones(4)), RuntimeError,
     "Expected weight to be of same shape as normalized_shape, but got weight of shape [4] and "
     "normalized_shape = [3]"),
    ("ln_bias_shape", lambda T, F: F.layer_norm(T.ones(2, 3), (3,), None, T.ones(2)),
     RuntimeError, "Expected bias to be of same shape as normalized_shape, but got bias of "
     "shape [2] and normalized_shape = [3]"),
    ("ln_weight_before_input", lambda T, F: F.layer_norm(T.ones(2, 3), (5,), T.ones(4)),
     RuntimeError, "Expected weight to be of same shape"),
    ("ln_mixed_dtype", lambda T, F: F.layer_norm(T.ones(2, 3, dtype=T.float64), (3,), T.ones(3)),
     RuntimeError, "mixed dtype (CPU): all inputs must share same datatype."),
    ("emb_float_indices", lambda T, F: F.embedding(T.tensor([0.0, 1.0]), _w(T)), RuntimeError,
     "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
     "Long, Int; but got {T}.FloatTensor instead (while checking arguments for embedding)"),
    ("emb_out_of_range", lambda T, F: F.embedding(T.tensor([0, 5]), _w(T)), IndexError,
     "index out of range in self"),
    ("emb_negative_index", lambda T, F: F.embedding(T.tensor([-1]), _w(T)), IndexError,
     "index out of range in self"),
    ("emb_weight_1d", lambda T, F: F.embedding(T.tensor([0]), T.ones(3)), RuntimeError,
     "'weight' must be 2-D"),
    ("emb_padding_idx", lambda T, F: F.embedding(T.tensor([0]), _w(T), padding_idx=5),
     AssertionError, "Padding_idx must be within num_embeddings"),
    ("emb_padding_idx_negative", lambda T, F: F.embedding(T.tensor([0]), _w(T), padding_idx=-6),
     AssertionError, "Padding_idx must be within num_embeddings"),
    ("dropout_p_high", lambda T, F: F.dropout(T.ones(2), 1.5), ValueError,
     "dropout probability has to be between 0 and 1, but got 1.5"),
    ("dropout_p_negative", lambda T, F: F.dropout(T.ones(2), -0.1), ValueError,
     "dropout probability has to be between 0 and 1, but got -0.1"),
    ("dropout_long", lambda T, F: F.dropout(T.tensor([1, 2]), 0.5), RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
]


@pytest.mark.parametrize("fn,exc,message", [pytest.param(*c[1:], id=c[0]) for c in ERROR_CASES])
def test_errors_match_torch(T, fn, exc, message):
    with pytest.raises(exc) as info:
        fn(T, functional(T))
    assert message.format(T=T.__name__) in str(info.value)


# ---------------------------------------------------------------------------------- tensor API
class Ctx:
    """A stand-in for ctx: what ``setup_context`` leaves on it, and ``needs_input_grad``."""

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors


def _op_cases(T):
    from ext.functions.builtin.nn_ops import activation, normalization, sparse

    idx = T.tensor(INDICES)
    return {
        "Erf": (activation.Erf, lambda F, a: T.erf(a[0]), [(3, 4)], ()),
        "Gelu": (activation.Gelu, lambda F, a: F.gelu(a[0]), [(3, 4)], ("none",)),
        "GeluTanh": (activation.Gelu, lambda F, a: F.gelu(a[0], approximate="tanh"), [(3, 4)],
                     ("tanh",)),
        "Silu": (activation.Silu, lambda F, a: F.silu(a[0]), [(3, 4)], ()),
        "NativeLayerNorm": (normalization.NativeLayerNorm,
                            lambda F, a: F.layer_norm(a[0], (3, 4), a[1], a[2], 1e-3),
                            [(2, 3, 4), (3, 4), (3, 4)], ()),
        "Embedding": (sparse.Embedding,
                      lambda F, a: F.embedding(idx, a[0], padding_idx=2, scale_grad_by_freq=True),
                      [(5, 3)], (idx, 2, True, False)),
    }


def _op_args(op, tensors, rest):
    if op.__name__ == "NativeLayerNorm":
        x, w, b = tensors
        return (x, (3, 4), w, b, 1e-3)
    return (*tensors, *rest)


@pytest.mark.parametrize("name", ["Erf", "Gelu", "GeluTanh", "Silu", "NativeLayerNorm",
                                  "Embedding"])
def test_op_pieces_are_tensor_api(T, rng, name):
    """Each op's ``forward``, ``setup_context``, ``backward`` and ``jvp`` run by hand on either
    backend's tensors (as the torch bridge runs them) give the native op's results."""
    op, native, shapes, rest = _op_cases(T)[name]
    F = functional(T)
    tensors = [leaf(T, sample(rng, s)) for s in shapes]
    args = _op_args(op, tensors, rest)
    with T.no_grad():
        outputs = op.forward(*args)
    out = outputs[0] if isinstance(outputs, tuple) else outputs  # (native_layer_norm: 3)
    expected = native(F, tensors)
    np.testing.assert_allclose(to_np(out), to_np(expected), rtol=1e-14)
    ctx = Ctx(tuple(isinstance(a, T.Tensor) and a.requires_grad for a in args))
    op.setup_context(ctx, args, outputs)
    g = T.tensor(sample(rng, tuple(out.shape)))
    grads = op.backward(ctx, g)
    grads = grads if isinstance(grads, tuple) else (grads,)
    assert len(grads) == len(args)
    wanted = T.autograd.grad(expected, tensors, g)
    got = [gr for gr, a in zip(grads, args) if isinstance(a, T.Tensor) and a.requires_grad]
    for a, b in zip(got, wanted):
        np.testing.assert_allclose(to_np(a), to_np(b), rtol=1e-12, atol=1e-14)
    directions = [sample(rng, tuple(t.shape)) for t in tensors]
    by_id = {id(t): T.tensor(d) for t, d in zip(tensors, directions)}
    tangents = tuple(by_id.get(id(a)) for a in args)
    with T.no_grad():
        jvp = to_np(op.tangents(tuple(a.detach() if isinstance(a, T.Tensor) else a
                                      for a in args), outputs, tangents))
    h = 1e-6
    shifted = [[T.tensor(to_np(t) + s * h * d) for t, d in zip(tensors, directions)]
               for s in (1, -1)]
    fd = (to_np(native(F, shifted[0])) - to_np(native(F, shifted[1]))) / (2 * h)
    if name != "Embedding":  # padding and frequency scaling only change backward
        np.testing.assert_allclose(jvp, fd, rtol=1e-6, atol=1e-8)


def _layer_norm_grads(T, rng):
    return _layer_norm_grads_at(T, rng, rng.normal(size=(2, 3)))


def test_layer_norm_gradients_with_create_graph_come_from_one_node(T, rng):
    _, (gx, gw, gb) = _layer_norm_grads(T, rng)
    assert type(gx.grad_fn).__name__ == "NativeLayerNormBackwardBackward0"
    assert gx.grad_fn is gw.grad_fn is gb.grad_fn
    assert gb.requires_grad  # an output of a node whose inputs require grad


@pytest.mark.parametrize(("shape", "normalized"), [((1, 1, 0), (1, 0)), ((0, 4), (0, 4))])
def test_layer_norm_double_backward_of_an_empty_input_passes_anomaly_mode(T, shape, normalized):
    # The statistics of nothing are nan; torch's double backward node checks only its outputs.
    x = T.zeros(shape, dtype=T.float64, requires_grad=True)
    with pytest.warns(UserWarning), T.autograd.detect_anomaly():
        y = T.nn.functional.layer_norm(x, normalized)
        (g,) = T.autograd.grad((y * 2).sum(), [x], create_graph=True)
        (gg,) = T.autograd.grad((g * 3).sum(), [x])
    assert tuple(gg.shape) == shape


def test_layer_norm_gradients_with_create_graph_require_grad_through_bias_alone(T, rng):
    # The gradient node's edges are (grad, x, mean, rstd, weight, bias): a bias that requires
    # grad makes the gradients require grad, though none of them depends on it.
    x = T.tensor(rng.normal(size=(2, 3)))
    b = T.tensor(rng.normal(size=3), requires_grad=True)
    y = T.nn.functional.layer_norm(x, (3,), None, b)
    (gb,) = T.autograd.grad((y * T.tensor(rng.normal(size=(2, 3)))).sum(), [b],
                            create_graph=True)
    assert gb.requires_grad
    assert type(gb.grad_fn).__name__ == "NativeLayerNormBackwardBackward0"
    nexts = gb.grad_fn.next_functions
    assert len(nexts) == 6
    assert [n is None for n, _ in nexts] == [True] * 5 + [False]
    assert T.autograd.grad(gb.sum(), [b], allow_unused=True) == (None,)


def _np_ln_backward(g, x, mean, rstd, w):
    """native_layer_norm_backward over the last dim at the given statistics: (dx, dw, db)."""
    xhat = (x - mean) * rstd
    gw = g * w
    dx = rstd * (gw - gw.mean(-1, keepdims=True) - xhat * (gw * xhat).mean(-1, keepdims=True))
    return dx, (g * xhat).sum(0), g.sum(0)


def _np_ln_double_backward(g, x, mean, rstd, w, ggx, ggw, ggb):
    """torch's layer_norm_double_backward over the last dim: (d grad, d x, d weight). It
    differentiates the first backward as if mean and rstd were x's statistics, whatever they
    are."""
    n = x.shape[-1]
    xmu = x - mean

    def s(a):
        return a.sum(-1, keepdims=True)

    def first(gl, scale):
        return scale * rstd / n * (n * gl - s(gl) - xmu * rstd**2 * s(gl * xmu))

    gxhat = g * w
    dx = (xmu * rstd**3 * (s(ggx) * s(gxhat) / n - s(ggx * gxhat)
                           + rstd**2 * s(gxhat * xmu) * s(ggx * xmu) * 3 / n) / n
          + s(ggx * xmu) * rstd**3 / n * (s(gxhat) / n - gxhat)
          + s(gxhat * xmu) * rstd**3 / n * (s(ggx) / n - ggx))
    dx += (g * ggw * rstd - rstd * s(g * ggw) / n - xmu * rstd**3 * s(g * ggw * xmu) / n)
    dw = (g * first(ggx, 1.0)).sum(0)
    dg = first(ggx, w) + ggw * xmu * rstd + ggb
    return dg, dx, dw


def _central(f, arrays, k, direction, h=1e-6):
    """The central difference of f(*arrays) along ``direction`` in argument k."""
    plus, minus = list(arrays), list(arrays)
    plus[k], minus[k] = arrays[k] + h * direction, arrays[k] - h * direction
    return [(p - m) / (2 * h) for p, m in zip(f(*plus), f(*minus))]


def test_native_layer_norm_backward_at_constant_statistics_differentiates_torch_formula(T, rng):
    # Statistics that are not x's: the first backward reads them as given, its backward
    # differentiates as if they were x's (held constant), its forward rule recomputes x's mean
    # and reads eps back from rstd.
    G, X, W, B = (rng.normal(size=s) for s in ((3, 4), (3, 4), 4, 4))
    mean = X.mean(-1, keepdims=True) + rng.normal(size=(3, 1)) * 0.3
    var = X.var(-1, keepdims=True)
    rstd = 1 / np.sqrt(var + 1e-5) * rng.uniform(0.5, 2.0, (3, 1))
    gg = [rng.normal(size=s) for s in ((3, 4), 4, 4)]
    cs = [rng.normal(size=s) for s in ((3, 4), (3, 4), 4)]
    g, x, w = (leaf(T, a) for a in (G, X, W))
    op = T.ops.aten.native_layer_norm_backward
    outs = op(g, x, [4], T.tensor(mean), T.tensor(rstd), w, leaf(T, B), [True, True, True])
    for got, want in zip(outs, _np_ln_backward(G, X, mean, rstd, W)):
        np.testing.assert_allclose(to_np(got), want, rtol=1e-12, atol=1e-12)
    firsts = T.autograd.grad(sum((o * T.tensor(a)).sum() for o, a in zip(outs, gg)), [g, x, w],
                             create_graph=True)
    for got, want in zip(firsts, _np_ln_double_backward(G, X, mean, rstd, W, *gg)):
        np.testing.assert_allclose(to_np(got), want, rtol=1e-12, atol=1e-12)
    seconds = T.autograd.grad(sum((f * T.tensor(c)).sum() for f, c in zip(firsts, cs)),
                              [g, x, w])
    # (the statistics stay constant: the derivatives of the formula above in grad, x, weight)
    for k, got in enumerate(seconds):
        for i in np.ndindex(got.shape):
            e = np.zeros(got.shape)
            e[i] = 1.0
            diff = _central(lambda *a: _np_ln_double_backward(*a[:2], mean, rstd, a[2], *gg),
                            (G, X, W), k, e)
            np.testing.assert_allclose(to_np(got)[i], sum((d * c).sum() for d, c in
                                                          zip(diff, cs)), rtol=1e-6, atol=1e-8)
    # forward mode: the first backward at x's own mean and the eps that rstd implies
    eps = rstd**-2 - var
    tangents = [rng.normal(size=s) for s in ((3, 4), (3, 4), 4)]

    def recomputed(G, X, W):
        m = X.mean(-1, keepdims=True)
        return _np_ln_backward(G, X, m, 1 / np.sqrt(((X - m) ** 2).mean(-1, keepdims=True)
                                                   + eps), W)

    fw = T.autograd.forward_ad
    with fw.dual_level():
        duals = [fw.make_dual(T.tensor(a), T.tensor(t)) for a, t in zip((G, X, W), tangents)]
        outs = op(*duals[:2], [4], T.tensor(mean), T.tensor(rstd), duals[2], T.tensor(B),
                  [True, True, True])
        got = [to_np(fw.unpack_dual(o).tangent) for o in outs]
    want = [sum(parts) for parts in zip(*(_central(recomputed, (G, X, W), k, t)
                                          for k, t in enumerate(tangents)))]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)


def test_native_layer_norm_backward_refuses_a_gradient_of_a_missing_parameter(T, rng):
    g, x = T.tensor(rng.normal(size=(2, 3))), T.tensor(rng.normal(size=(2, 3)))
    _, mean, rstd = T.ops.aten.native_layer_norm(x, [3], None, None, 1e-5)
    w = T.tensor(rng.normal(size=3))
    for weight, bias, mask in ((None, w, [True, True, False]), (w, None, [False, False, True])):
        with pytest.raises(RuntimeError, match="tensor does not have a device"):
            T.ops.aten.native_layer_norm_backward(g, x, [3], mean, rstd, weight, bias, mask)


def test_native_layer_norm_backward_without_a_weight_drops_the_bias_gradient_gradient(T, rng):
    # torch's formula reads the bias's gradient in the weight's shape: without a weight, it
    # reaches nothing alone, and fails beside the input's
    g = leaf(T, rng.normal(size=(2, 3)))
    x = leaf(T, rng.normal(size=(2, 3)))
    _, mean, rstd = T.ops.aten.native_layer_norm(x.detach(), [3], None, None, 1e-5)
    gx, _, gb = T.ops.aten.native_layer_norm_backward(g, x, [3], mean, rstd, None,
                                                     leaf(T, rng.normal(size=3)),
                                                     [True, False, True])
    assert T.autograd.grad(gb.sum(), [g, x], retain_graph=True, allow_unused=True) == \
        (None, None)
    for inputs in ([g, x], [x]):
        with pytest.raises(RuntimeError, match="Expected a proper Tensor but got None"):
            T.autograd.grad(gx.sum() + gb.sum(), inputs, retain_graph=True)


@pytest.mark.ext_only
def test_layer_norm_third_derivative_is_torch_s(rng):
    """layer_norm's second-order gradients come from torch's formula at the saved statistics,
    constants of the graph it builds: its third derivative is that formula's at fixed
    statistics (not layer_norm's own, which finite differences give), as torch's."""
    import ext

    torch = pytest.importorskip("torch")
    base = rng.normal(size=(2, 3))
    thirds = []
    for T in (ext, torch):
        (x, w), (gx, gw, _) = _layer_norm_grads_at(T, np.random.default_rng(1), base)
        h = T.autograd.grad((gx ** 2).sum() + (gw ** 3).sum(), [x, w], create_graph=True)
        thirds.append(to_np(T.autograd.grad((h[0] ** 2).sum() + h[1].sum(), [x])[0]))
    np.testing.assert_allclose(thirds[0], thirds[1], rtol=1e-10)


def _layer_norm_grads_at(T, rng, X):
    x = T.tensor(X, requires_grad=True)
    w = T.tensor(rng.normal(size=3), requires_grad=True)
    b = T.tensor(rng.normal(size=3), requires_grad=True)
    y = T.nn.functional.layer_norm(x, (3,), w, b)
    up = T.tensor(rng.normal(size=(2, 3)))
    return (x, w), T.autograd.grad((y * up).sum(), [x, w, b], create_graph=True)


def test_layer_norm_forward_over_reverse_uses_the_gradient_node(T, rng):
    fw = T.autograd.forward_ad
    x0, tx, w0, tw, up = (rng.normal(size=s) for s in ((2, 3), (2, 3), 3, 3, (2, 3)))

    def grad_at(s):
        xs = T.tensor(x0 + s * tx, requires_grad=True)
        ws = T.tensor(w0 + s * tw, requires_grad=True)
        out = T.nn.functional.layer_norm(xs, (3,), ws)
        return to_np(T.autograd.grad((out * T.tensor(up)).sum(), [xs])[0])

    with fw.dual_level():
        x = fw.make_dual(T.tensor(x0), T.tensor(tx)).requires_grad_()
        w = fw.make_dual(T.tensor(w0), T.tensor(tw)).requires_grad_()
        y = T.nn.functional.layer_norm(x, (3,), w)
        gx, gw = T.autograd.grad((y * T.tensor(up)).sum(), [x, w], create_graph=True)
        assert type(gx.grad_fn).__name__ == "NativeLayerNormBackwardBackward0"
        tangent = to_np(fw.unpack_dual(gx).tangent)
    np.testing.assert_allclose(tangent, (grad_at(1e-6) - grad_at(-1e-6)) / 2e-6,
                               rtol=1e-5, atol=1e-7)


def test_layer_norm_with_the_input_as_its_own_weight_passes_gradgradcheck(T, rng):
    x = T.tensor(rng.normal(size=4), requires_grad=True)
    b = T.tensor(rng.normal(size=4), requires_grad=True)
    fn = lambda x, b: T.nn.functional.layer_norm(x, (4,), x, b)  # noqa: E731
    assert T.autograd.gradgradcheck(fn, (x, b))


@pytest.mark.parametrize(("fn", "node"), [("softmax", "SoftmaxBackwardDataBackward0"),
                                          ("log_softmax", "LogSoftmaxBackwardDataBackward0")])
def test_softmax_gradient_with_create_graph_is_one_node_differentiable_again(T, rng, fn, node):
    x = T.tensor(rng.normal(size=(2, 3)), requires_grad=True)
    y = getattr(T, fn)(x, 1)
    (g,) = T.autograd.grad((y * T.tensor(rng.normal(size=(2, 3)))).sum(), [x],
                           create_graph=True)
    assert type(g.grad_fn).__name__ == node
    assert T.autograd.gradgradcheck(lambda x: getattr(T, fn)(x, 1), (x,))
    # third order through the gradient node's own backward
    assert T.autograd.gradgradcheck(
        lambda x: T.autograd.grad(getattr(T, fn)(x, 0).pow(3).sum(), [x], create_graph=True)[0],
        (x,))


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_forward_over_reverse_matches_finite_differences(T, rng, fn):
    fw = T.autograd.forward_ad
    x0, tx, up = (rng.normal(size=(2, 3)) for _ in range(3))

    def grad_at(s):
        xs = T.tensor(x0 + s * tx, requires_grad=True)
        return to_np(T.autograd.grad((getattr(T, fn)(xs, 1) * T.tensor(up)).sum(), [xs])[0])

    with fw.dual_level():
        x = fw.make_dual(T.tensor(x0), T.tensor(tx)).requires_grad_()
        (g,) = T.autograd.grad((getattr(T, fn)(x, 1) * T.tensor(up)).sum(), [x],
                               create_graph=True)
        tangent = to_np(fw.unpack_dual(g).tangent)
    np.testing.assert_allclose(tangent, (grad_at(1e-6) - grad_at(-1e-6)) / 2e-6,
                               rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_gradient_is_a_gelu_backward_node_differentiable_twice_more(T, approximate):
    x = T.tensor([-2.5, -0.7, 0.0, 0.3, 1.9], dtype=T.float64, requires_grad=True)
    g = T.tensor([1.5, -1.0, 0.5, 2.0, 1.0], dtype=T.float64, requires_grad=True)
    out = functional(T).gelu(x, approximate=approximate)
    (gx,) = T.autograd.grad(out, [x], g, create_graph=True)
    assert gx.grad_fn.name() == "GeluBackwardBackward0"
    assert gx.grad_fn._saved_approximate == approximate
    # the gradient, as a function of x and g, has correct first and second derivatives
    assert T.autograd.gradgradcheck(lambda a, b: T.autograd.grad(
        functional(T).gelu(a, approximate=approximate), [a], b, create_graph=True)[0], (x, g))


def test_layer_norm_input_gradient_meets_inf_and_nan_as_torch_kernel(T):
    # torch's kernel: dx = rstd * g * w + b * x + c, with b and c from the row sums of
    # g * w * x and g * w; an inf weight makes every gradient of a row nan, even where the
    # composite formula gives -inf
    x = T.tensor([[1.75, -1.75, -1.0], [-0.546875, 1.0, -1.75]], requires_grad=True)
    w = T.tensor([2.0, 0.25, float("inf")])
    y = T.nn.functional.layer_norm(x, (3,), w)
    y.backward(T.tensor([[0.5, 0.75, 1.0], [1.25, 1.5, 1.75]]))
    assert np.isnan(to_np(x.grad)).all()
