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


def _as_function(call, wrapper, sample_args, sample_kwargs, inputs, process):
    """``call`` on the sample as a function of its inputs that require grad (through op_db's
    gradcheck wrapper, which makes a perturbed input valid: symmetric for cholesky)."""
    ids = {id(t): n for n, t in enumerate(inputs)}

    def run(*values):
        def put(v):
            if id(v) in ids:
                return values[ids[id(v)]]
            if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
                return type(v)(put(x) for x in v)
            if isinstance(v, dict):
                return {k: put(x) for k, x in v.items()}
            return v
        return process(wrapper(call, *put(sample_args), **put(sample_kwargs)))

    return run


def _masked_wrapper(op, t_args, t_kwargs):
    """op_db's wrapper for masked reductions on ext: the masked-out places of the output set to
    zero, by the output mask torch's own helper finds for the sample (a constant)."""
    import torch
    from opdb import to_ext

    if t_kwargs.get("mask") is None:
        return lambda call, *a, **k: call(*a, **k)
    keep = to_ext(torch.masked._output_mask(op.op, *t_args, **t_kwargs), {})

    def wrapper(call, *args, **kwargs):
        out = call(*args, **kwargs)
        return ext.where(keep, out, out.new_zeros([]))

    return wrapper


@pytest.mark.ext_only
@pytest.mark.parametrize("op", _gradcheck_ops(), ids=key)
def test_op_db_gradcheck(op):
    """gradcheck (and gradgradcheck where torch supports it) in float64 on ext, on the first
    sample where torch's own gradcheck of the op passes (fast mode for a large one): where
    torch's finite differences disagree with torch's gradient (a random op, a cast to float32),
    there is nothing to hold ext to."""
    import torch
    from opdb import ext_callable, leaves, rebound, to_ext

    fn = ext_callable(op)
    ext_wrapper = rebound(op.gradcheck_wrapper)
    torch_refused = 0
    for s in samples(op, torch.float64, None):
        t_inputs = list({id(t): t for t in leaves((s.input, s.args, s.kwargs))
                         if t.requires_grad}.values())
        if not t_inputs:
            continue
        t_args = (s.input, *s.args)
        try:
            op(*t_args, **s.kwargs)
        except Exception:  # noqa: BLE001, S112 - a sample torch refuses
            continue
        fast = sum(t.numel() for t in t_inputs) > 60
        t_run = _as_function(op.op, op.gradcheck_wrapper, t_args, s.kwargs, t_inputs,
                             s.output_process_fn_grad)
        if not torch.autograd.gradcheck(t_run, tuple(t_inputs), check_undefined_grad=False,
                                        fast_mode=fast, raise_exception=False):
            torch_refused += 1
            continue
        memo: dict = {}
        args, kwargs = to_ext(t_args, memo), to_ext(s.kwargs, memo)
        inputs = [memo[id(t)] for t in t_inputs]
        wrapper = ext_wrapper
        if op.gradcheck_wrapper.__name__ == "gradcheck_wrapper_masked_operation":
            wrapper = _masked_wrapper(op, t_args, s.kwargs)
        run = _as_function(fn, wrapper, args, kwargs, inputs,
                           rebound(s.output_process_fn_grad))
        assert ext.autograd.gradcheck(run, tuple(inputs), check_undefined_grad=False,
                                      fast_mode=fast)
        if op.supports_gradgrad and torch.autograd.gradgradcheck(
                t_run, tuple(t_inputs), check_undefined_grad=False, fast_mode=fast,
                raise_exception=False):
            assert ext.autograd.gradgradcheck(run, tuple(inputs), check_undefined_grad=False,
                                              fast_mode=fast)
        return
    assert torch_refused, f"{key(op)}: no float64 sample with inputs requiring grad ran"
