"""Torch's own op database on ext: every considered OpInfo's samples give torch's values,
gradients (non-uniform upstream gradients), node names, forward-mode tangents, double backward
and error types, in float64 and float32 (tests/opdb.py compares them).

``make test`` runs each OpInfo on its first sample in each dtype; ``make test-opdb``
(``EXT_OPDB_ALL=1``) on all of them. An OpInfo in ``opdb_exclusions.EXCLUDED`` must still fail:
once it passes every sample, the test says to take it off the list, so the list stays true.
"""

from __future__ import annotations

import os
import warnings

import pytest
from opdb import check, considered, dtypes_of, key, samples
from opdb_exclusions import EXCLUDED

import ext

FIRST = None if os.environ.get("EXT_OPDB_ALL") else 1
OPS = considered()


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@pytest.mark.ext_only
@pytest.mark.parametrize("op", OPS, ids=key)
def test_op_db(op):
    name = key(op)
    reason, detail = check(op, FIRST)
    entry = EXCLUDED.get(name)
    if entry is None:
        assert reason is None, f"{name}: {reason}: {detail}"
        return
    if reason is None and FIRST is not None:
        reason, detail = check(op, None)  # (an excluded op may fail only on a later sample)
    assert reason is not None, (f"{name} now passes every sample: take it off "
                                "tests/opdb_exclusions.py and run tools/coverage.py")


@pytest.mark.ext_only
def test_exclusions_name_considered_ops_with_known_reasons():
    from opdb import REASONS

    keys = {key(op) for op in OPS}
    assert set(EXCLUDED) <= keys, sorted(set(EXCLUDED) - keys)
    assert {reason for reason, _ in EXCLUDED.values()} <= set(REASONS)


def _gradcheck_ops() -> list:
    return [op for op in OPS if key(op) not in EXCLUDED and op.supports_autograd
            and ext.float64 is not None and any(d.is_floating_point for d in dtypes_of(op))]


@pytest.mark.ext_only
@pytest.mark.parametrize("op", _gradcheck_ops(), ids=key)
def test_op_db_gradcheck(op):
    """gradcheck (and gradgradcheck where torch supports it) in float64 on ext, on the first
    sample torch accepts that has inputs requiring grad (fast mode for a large one)."""
    import torch
    from opdb import ext_callable, leaves, rebound, to_ext

    fn = ext_callable(op)
    for s in samples(op, torch.float64, None):
        memo: dict = {}
        args = to_ext((s.input, *s.args), memo)
        kwargs = to_ext(s.kwargs, memo)
        inputs = [t for t in leaves((args, kwargs)) if t.requires_grad]
        if not inputs:
            continue
        try:
            op(s.input, *s.args, **s.kwargs)
        except Exception:  # noqa: BLE001 - a sample torch refuses
            continue
        ids = {id(t): n for n, t in enumerate(inputs)}
        process = rebound(s.output_process_fn_grad)

        def run(*values, args=args, kwargs=kwargs, process=process, ids=ids):
            def put(v):
                if id(v) in ids:
                    return values[ids[id(v)]]
                if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
                    return type(v)(put(x) for x in v)
                if isinstance(v, dict):
                    return {k: put(x) for k, x in v.items()}
                return v
            return process(fn(*put(args), **put(kwargs)))

        fast = sum(t.numel() for t in inputs) > 60
        assert ext.autograd.gradcheck(run, tuple(inputs), check_undefined_grad=False,
                                      fast_mode=fast)
        if op.supports_gradgrad:
            assert ext.autograd.gradgradcheck(run, tuple(inputs), check_undefined_grad=False,
                                              fast_mode=fast)
        return
    raise AssertionError(f"{key(op)}: no float64 sample with inputs requiring grad ran")
