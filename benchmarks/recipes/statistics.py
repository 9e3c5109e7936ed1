"""Recipes of the order statistics, scans and summaries (ext/functions/builtin/statistics.py)."""

FAMILIES = [
    ("statistics", """
        x.median()
        x.median(1).values
        x.nanmedian()
        x.nanmedian(0).values
        x.mode(1).values
        x.kthvalue(2, 1).values
        x.topk(2, 1).values
        T.var_mean(x, 1)[0]
        T.std_mean(x, 1)[0]
        T.aminmax(x, dim=1).max
        x.cummax(1).values
        x.cummin(0).values
        x.logcumsumexp(1)
        x.nansum(1)
        x.nanmean(1)
        x.msort()
        x.quantile(0.3, dim=1)
        x.nanquantile(0.3, dim=1)
        T.diff(x, dim=1)
        T.trapezoid(x, dim=1)
        T.cumulative_trapezoid(x, dim=1)
        x.cov()
        x.corrcoef()
    """, True),
    ("statistics_nograd", """
        k.count_nonzero(1)
        k.argsort(1)
        T.unique(k, return_counts=True)[1]
        T.unique_consecutive(idx)
        T.searchsorted(v.detach().sort().values, k)
        T.bucketize(k, v.detach().sort().values)
        T.isin(idx, labels)
        k.histc(bins=4)
        T.histogram(k, 4)[0]
        T.histogramdd(k[:, :2], [2, 2])[0]
        idx.bincount()
    """, False),
]
