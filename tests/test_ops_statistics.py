"""Order statistics, scans and summaries: median, nanmedian, mode, kthvalue, topk, quantile,
var_mean / std_mean, aminmax, cummax / cummin, logcumsumexp, nansum / nanmean, differences and
integrals, covariance, sorting, searching, counting, unique values and histograms.

Node names and saved fields, gradcheck and gradgradcheck in float64, the index picked among ties
and nans, result dtypes, errors, and torch's op database (``tests/opdb.py``) on every sample.
Every test but the last runs on ``ext`` and on ``torch``; the expectations are torch 2.13's.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import leaf, to_np

sys.path.insert(0, str(Path(__file__).parent))

NAN = float("nan")


def distinct(rng, shape):
    """float64 values pairwise at least 0.3 apart: no ties anywhere."""
    n = int(np.prod(shape))
    values = (rng.permutation(n) - (n - 1) / 2) * 0.4 + rng.uniform(0.05, 0.15, size=n)
    return values.reshape(shape)


def first(out):
    return out[0] if isinstance(out, tuple) else out


# --------------------------------------------------------------------------------------------
# Node names and saved fields
# --------------------------------------------------------------------------------------------
# ("self" and "result"-like values: "x" is the input itself, an output name its returned tensor
# (compared by value), anything else the saved attribute's value.)
NODE_CASES = [
    ("median", lambda T, x: x.median(), "MedianBackward0",
     {"self": "x", "result": "out"}),
    ("nanmedian", lambda T, x: x.nanmedian(), "NanmedianBackward0",
     {"self": "x", "result": "out"}),
    ("median_1", lambda T, x: x.median(1), "MedianBackward1",
     {"dim": 1, "keepdim": False, "indices": "indices", "self_sym_sizes": (3, 4)}),
    ("nanmedian_0_keepdim", lambda T, x: x.nanmedian(0, keepdim=True), "NanmedianBackward1",
     {"dim": 0, "keepdim": True, "indices": "indices", "self_sym_sizes": (3, 4)}),
    ("mode_1", lambda T, x: x.mode(1), "ModeBackward0",
     {"dim": 1, "keepdim": False, "indices": "indices", "self_sym_sizes": (3, 4)}),
    ("kthvalue_2_1", lambda T, x: x.kthvalue(2, 1), "KthvalueBackward0",
     {"dim": 1, "keepdim": False, "indices": "indices", "self_sym_sizes": (3, 4)}),
    ("topk_2_1", lambda T, x: x.topk(2, 1), "TopkBackward0",
     {"dim": 1, "indices": "indices", "self_sym_sizes": (3, 4)}),
    ("var_mean_1", lambda T, x: T.var_mean(x, 1), "VarMeanBackward0",
     {"correction": 1, "dim": (1,), "keepdim": False, "self": "x"}),
    ("var_mean", lambda T, x: T.var_mean(x), "VarMeanBackward0",
     {"correction": None, "dim": None, "keepdim": False, "self": "x"}),
    ("std_mean_0", lambda T, x: T.std_mean(x, 0, correction=0, keepdim=True),
     "StdMeanBackward0",
     {"correction": 0, "dim": (0,), "keepdim": True, "self": "x", "result0": "out0"}),
    ("aminmax", lambda T, x: T.aminmax(x), "AminmaxBackward0",
     {"dim": None, "keepdim": False, "self": "x", "min": "min", "max": "max"}),
    ("aminmax_1", lambda T, x: T.aminmax(x, dim=1), "AminmaxBackward0",
     {"dim": 1, "keepdim": False, "self": "x", "min": "min", "max": "max"}),
    ("cummax_1", lambda T, x: x.cummax(1), "CummaxBackward0",
     {"dim": 1, "indices": "indices", "self": "x"}),
    ("cummin_0", lambda T, x: x.cummin(0), "CumminBackward0",
     {"dim": 0, "indices": "indices", "self": "x"}),
    ("logcumsumexp_1", lambda T, x: x.logcumsumexp(1), "LogcumsumexpBackward0",
     {"dim": 1, "result": "out", "self": "x"}),
    ("nansum", lambda T, x: x.nansum(), "NansumBackward0",
     {"dim": None, "keepdim": False, "self": "x"}),
    ("nansum_1", lambda T, x: x.nansum(1), "NansumBackward0",
     {"dim": (1,), "keepdim": False, "self": "x"}),
]


def _expected_value(name, spec, x, out):
    if spec == "x":
        return x
    if spec == "out":
        return first(out)
    if spec == "out0":
        return out[0]
    if spec in ("indices", "min", "max"):
        return getattr(out, spec)
    return spec


@pytest.mark.parametrize(("fn", "node_name", "saved"),
                         [pytest.param(*c[1:], id=c[0]) for c in NODE_CASES])
def test_node_name_and_saved_fields(T, rng, fn, node_name, saved):
    x = leaf(T, distinct(rng, (3, 4)))
    out = fn(T, x)
    grad_fn = first(out).grad_fn
    assert type(grad_fn).__name__ == node_name
    fields = {a for a in dir(grad_fn) if a.startswith("_saved_")}
    assert fields == {f"_saved_{k}" for k in saved}
    for key, spec in saved.items():
        got = getattr(grad_fn, f"_saved_{key}")
        want = _expected_value(key, spec, x, out)
        if spec == "x":
            assert got is x
        elif isinstance(want, (T.Tensor,)):
            np.testing.assert_array_equal(to_np(got), to_np(want))
        else:
            assert got == want


def test_multi_output_results_are_named_tuples(T, rng):
    x = T.tensor(distinct(rng, (3, 4)))
    for out in (x.median(1), x.nanmedian(1), x.mode(1), x.kthvalue(1, 1), x.topk(1),
                x.cummax(0), x.cummin(0)):
        np.testing.assert_array_equal(to_np(out.values), to_np(out[0]))
        assert out.indices.dtype == T.int64
    lo, hi = T.aminmax(x)
    assert T.aminmax(x).min is not None and float(lo) == float(x.min())
    assert float(hi) == float(x.max())


# --------------------------------------------------------------------------------------------
# gradcheck and gradgradcheck in float64
# --------------------------------------------------------------------------------------------
GRAD_CASES = [
    ("median", lambda T, x: x.median()),
    ("median_1", lambda T, x: x.median(1).values),
    ("nanmedian_0", lambda T, x: x.nanmedian(0, keepdim=True).values),
    ("mode_1", lambda T, x: x.mode(1).values),
    ("kthvalue", lambda T, x: x.kthvalue(3, 0).values),
    ("topk", lambda T, x: x.topk(2, 1, largest=False).values),
    ("var_mean", lambda T, x: T.var_mean(x, 1)),
    ("std_mean", lambda T, x: T.std_mean(x, (0, 1), correction=0)),
    ("aminmax", lambda T, x: T.aminmax(x, dim=0)),
    ("aminmax_all", lambda T, x: T.aminmax(x)),
    ("cummax", lambda T, x: x.cummax(1).values),
    ("cummin", lambda T, x: x.cummin(0).values),
    ("logcumsumexp", lambda T, x: x.logcumsumexp(1)),
    ("nansum", lambda T, x: x.nansum(0)),
    ("nanmean", lambda T, x: x.nanmean(1)),
    ("quantile", lambda T, x: x.quantile(0.3, dim=1)),
    ("quantile_q", lambda T, x: T.quantile(x, T.tensor([0.2, 0.7], dtype=x.dtype))),
    ("nanquantile", lambda T, x: x.nanquantile(0.6, dim=0, interpolation="midpoint")),
    ("msort", lambda T, x: x.msort()),
    ("diff", lambda T, x: T.diff(x, n=2, dim=1)),
    ("trapezoid", lambda T, x: T.trapezoid(x, dx=0.5)),
    ("trapz_x", lambda T, x: T.trapz(x, T.tensor([0.0, 1.0, 3.0, 3.5], dtype=x.dtype))),
    ("cumulative_trapezoid", lambda T, x: T.cumulative_trapezoid(x, dim=0)),
    ("gradient", lambda T, x: T.gradient(x, spacing=2.0, edge_order=2)),
    ("cov", lambda T, x: x.cov()),
    ("corrcoef", lambda T, x: x.corrcoef()),
]


@pytest.mark.parametrize("fn", [pytest.param(c[1], id=c[0]) for c in GRAD_CASES])
def test_gradcheck_and_gradgradcheck(T, rng, fn):
    x = leaf(T, distinct(rng, (3, 4)))
    assert T.autograd.gradcheck(lambda t: fn(T, t), (x,))
    assert T.autograd.gradgradcheck(lambda t: fn(T, t), (x,))


def test_cov_gradcheck_in_the_weights(T, rng):
    x = leaf(T, distinct(rng, (2, 4)))
    aw = leaf(T, rng.uniform(0.5, 1.5, 4))
    fw = T.tensor([1, 2, 1, 3])

    def fn(a, w):
        return T.cov(a, fweights=fw, aweights=w)

    assert T.autograd.gradcheck(fn, (x, aw))
    assert T.autograd.gradgradcheck(fn, (x, aw))


# --------------------------------------------------------------------------------------------
# Values: ties, nans and torch's conventions
# --------------------------------------------------------------------------------------------
def test_median_is_the_lower_middle_value_and_nan_wins(T):
    assert float(T.tensor([1.0, 2.0, 3.0, 4.0]).median()) == 2.0
    assert T.tensor([1, 2, 3, 4]).median().dtype == T.int64
    x = T.tensor([[1.0, NAN, 2.0, NAN, 0.0]])
    out = x.median(1)
    assert np.isnan(to_np(out.values)).all()
    assert out.indices.tolist() == [1]  # the first nan
    nan_out = x.nanmedian(1)
    assert nan_out.values.tolist() == [1.0]
    assert nan_out.indices.tolist() == [0]
    assert np.isnan(float(T.tensor([]).median()))


def test_the_index_picked_among_equal_values(T):
    x = T.tensor([[1.0, 2.0, 2.0, 1.0, 3.0, 2.0, 1.0], [5.0] * 7])
    assert x.median(1).indices.tolist() == [1, 3]
    assert x.kthvalue(3, 1).indices.tolist() == [6, 5]
    assert x.kthvalue(5, 1).indices.tolist() == [2, 2]
    y = T.tensor([[1.0, 1.0, 1.0, 2.0, 2.0, 2.0]])
    assert y.topk(4, 1).indices.tolist() == [[3, 5, 4, 0]]
    assert y.topk(4, 1, largest=False).indices.tolist() == [[2, 0, 1, 5]]


@pytest.mark.ext_only
@pytest.mark.parametrize("n", [7, 30, 200])
def test_ties_and_nans_pick_torchs_indices(n):
    torch = pytest.importorskip("torch")
    import ext

    rng = np.random.default_rng(n)
    for _ in range(40):
        a = rng.integers(0, 4, (3, n)).astype(float)
        a[rng.random((3, n)) < 0.1] = NAN
        k = int(rng.integers(1, n + 1))
        small = int(rng.integers(1, n // 64 + 2))
        calls = [("kthvalue", (k, 1), {}), ("topk", (k, 1), {}),
                 ("topk", (small, 1), {"largest": False}), ("median", (1,), {}),
                 ("nanmedian", (1,), {}), ("mode", (1,), {}), ("cummax", (1,), {}),
                 ("cummin", (1,), {}), ("topk", (k, 1), {"sorted": False})]
        for name, args, kwargs in calls:
            want = getattr(torch.tensor(a), name)(*args, **kwargs)
            got = getattr(ext.tensor(a), name)(*args, **kwargs)
            assert got.indices.tolist() == want.indices.tolist()
            np.testing.assert_array_equal(to_np(got.values), want.values.numpy())


def test_mode_picks_the_smallest_most_frequent_value_at_its_last_place(T):
    out = T.tensor([[3, 3, 1, 1, 2]]).mode(1)
    assert out.values.tolist() == [1]
    assert out.indices.tolist() == [3]


def test_cummax_and_cummin_take_the_latest_equal_value_and_keep_nan(T):
    x = T.tensor([[1.0, 2.0, 2.0, 1.0, 3.0, 2.0, 1.0]])
    assert x.cummax(1).indices.tolist() == [[0, 1, 2, 2, 4, 4, 4]]
    assert x.cummin(1).indices.tolist() == [[0, 0, 0, 3, 3, 3, 6]]
    y = T.tensor([[1.0, NAN, 2.0, NAN, 0.0]])
    assert y.cummax(1).indices.tolist() == [[0, 1, 1, 3, 3]]


def test_topk_and_kthvalue_values(T, rng):
    a = distinct(rng, (3, 5))
    x = T.tensor(a)
    np.testing.assert_array_equal(to_np(x.topk(2, 1).values), -np.sort(-a, 1)[:, :2])
    np.testing.assert_array_equal(to_np(x.topk(2, 0, largest=False).values), np.sort(a, 0)[:2])
    np.testing.assert_array_equal(to_np(x.kthvalue(2, 1).values), np.sort(a, 1)[:, 1])


def test_quantile_interpolations(T, rng):
    a = distinct(rng, (7,))
    x = T.tensor(a)
    for how in ("linear", "lower", "higher", "midpoint", "nearest"):
        np.testing.assert_allclose(float(x.quantile(0.4, interpolation=how)),
                                   np.quantile(a, 0.4, method=how))
    y = T.tensor([1.0, NAN, 3.0])
    assert np.isnan(float(y.quantile(0.5)))
    assert float(y.nanquantile(0.5)) == 2.0


def test_logcumsumexp_values_without_overflow(T, rng):
    a = distinct(rng, (3, 4))
    np.testing.assert_allclose(to_np(T.tensor(a).logcumsumexp(1)),
                               np.logaddexp.accumulate(a, axis=1))
    big = T.tensor([1000.0, 1000.0, -np.inf])
    np.testing.assert_allclose(to_np(big.logcumsumexp(0)),
                               [1000.0, 1000.0 + np.log(2), 1000.0 + np.log(2)])
    assert not hasattr(T.Tensor, "logcumsumexp_")  # (no in-place variant in torch)


def test_result_dtypes_of_counts_searches_and_bins(T):
    x = T.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, 3.0]])
    assert x.count_nonzero().dtype == T.int64
    assert x.count_nonzero(1).tolist() == [1, 2]
    assert T.searchsorted(T.tensor([1.0, 2.0, 3.0]), x, out_int32=True).dtype == T.int32
    assert T.bucketize(x, T.tensor([1.0, 2.0]), right=True).tolist() == [[0, 1, 0], [2, 0, 2]]
    assert T.tensor([0, 1, 1, 3]).bincount().tolist() == [1, 2, 0, 1]
    w = T.tensor([0.5, 1.0, 1.0, 2.0], dtype=T.float32)
    assert T.tensor([0, 1, 1, 3]).bincount(w).dtype == T.float32
    assert T.isin(T.tensor([1, 2, 3]), T.tensor([3, 1])).tolist() == [True, False, True]
    assert x.histc(bins=3, min=0, max=3).tolist() == [3.0, 1.0, 2.0]
    assert x.argsort(1, descending=True).tolist() == [[1, 0, 2], [2, 0, 1]]


def test_unique_keeps_each_nan_apart(T):
    x = T.tensor([3.0, 1.0, NAN, 1.0, NAN, 2.0])
    values, inverse, counts = T.unique(x, return_inverse=True, return_counts=True)
    assert values.tolist()[:3] == [1.0, 2.0, 3.0] and len(values) == 5
    assert inverse.tolist() == [2, 0, 3, 0, 4, 1]
    assert counts.tolist() == [2, 1, 1, 1, 1]
    out, inv, cnt = T.unique_consecutive(T.tensor([1, 1, 2, 2, 1]), return_inverse=True,
                                         return_counts=True)
    assert (out.tolist(), inv.tolist(), cnt.tolist()) == ([1, 2, 1], [0, 0, 1, 1, 2], [2, 2, 1])


def test_out_tensors_are_written_and_checked(T):
    x = T.tensor([3.0, 1.0, 2.0])
    values, indices = T.empty(0), T.empty(0, dtype=T.int64)
    out = T.kthvalue(x, 2, out=(values, indices))
    assert out.values is values and out.indices is indices
    assert (values.tolist(), indices.tolist()) == (2.0, 2)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        T.kthvalue(x, 2, out=(x, indices))
    with pytest.raises(RuntimeError, match="dtype"):
        T.aminmax(x, out=(T.empty(0, dtype=T.float64), T.empty(0, dtype=T.float64)))


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------
ERROR_CASES = [
    ("kthvalue_k", lambda T: T.ones(2, 2).kthvalue(3, 0), RuntimeError, "k out of range"),
    ("nanmean_int", lambda T: T.tensor([1, 2]).nanmean(), RuntimeError, "nanmean"),
    ("cov_3d", lambda T: T.ones(2, 2, 2).cov(), RuntimeError, "cov"),
    ("bucketize_2d", lambda T: T.bucketize(T.ones(2), T.ones(2, 2)), RuntimeError,
     "boundaries"),
    ("gradient_edge_order", lambda T: T.gradient(T.ones(3, 3), edge_order=3), RuntimeError,
     "edge_order"),
    ("gradient_size", lambda T: T.gradient(T.ones(3, 1)), RuntimeError, "at least"),
    ("quantile_q", lambda T: T.ones(3).quantile(1.5), RuntimeError, "range"),
    ("diff_0d", lambda T: T.diff(T.tensor(1.0)), RuntimeError, "one-dimensional"),
    ("aminmax_empty", lambda T: T.aminmax(T.ones(5, 0)), RuntimeError, "aminmax"),
    ("histogramdd_bins", lambda T: T.histogramdd(T.ones(5, 2), [1, 1, 1]), RuntimeError,
     "bins"),
]


@pytest.mark.parametrize(("fn", "error", "words"),
                         [pytest.param(*c[1:], id=c[0]) for c in ERROR_CASES])
def test_errors(T, fn, error, words):
    with pytest.raises(error, match=words):
        fn(T)
