"""How the differential fuzzers compare what torch and ext did: the shared comparison rules.

Used by ``test_fuzz_differential.py`` (hypothesis programs) and ``fuzz_deep.py`` (seeded programs
under grad modes, hooks and forward AD). Exceptions compare by their builtin kind (torch's own
exception classes derive from ``RuntimeError``, ``TypeError`` ...); values by closeness with the
same nan and inf positions.
"""

from __future__ import annotations

import numpy as np
import torch

import ext

RTOL = 1e-10
ATOL = 1e-12
# (rtol, atol) per dtype for the deep fuzzer's values
TOLERANCE = {"float32": (1e-4, 1e-5), "float64": (1e-7, 1e-9)}


class Mismatch(AssertionError):
    """ext and torch disagree on a program."""


def builtin_kind(e: BaseException) -> type:
    """The builtin exception class an exception is an instance of (torch's classes included)."""
    return next(k for k in type(e).__mro__ if k.__module__ == "builtins")


def node_name(t):
    """The name of ``t.grad_fn``, or the exception type reading it raises (a multi-output view
    whose base was modified in place)."""
    try:
        fn = t.grad_fn
    except Exception as e:  # an outcome to compare, like any other
        return f"<raises {builtin_kind(e).__name__}>"
    return None if fn is None else type(fn).__name__


def is_leaf(t):
    """``t.is_leaf``, or the exception type reading it raises (it reads grad_fn)."""
    try:
        return t.is_leaf
    except Exception as e:  # an outcome to compare, like any other
        return f"<raises {builtin_kind(e).__name__}>"


_DTYPE_NAMES: dict = {}


def dtype_name(t) -> str:
    """``float32`` for ``torch.float32`` and ``ext.float32`` alike."""
    d = t.dtype
    name = _DTYPE_NAMES.get(d)
    if name is None:
        name = _DTYPE_NAMES[d] = str(d).split(".")[-1]
    return name


def to_numpy(t) -> np.ndarray:
    """The values of a tensor of either engine (torch's ZeroTensor gradients included)."""
    t = t.detach()
    return t.numpy(force=True) if isinstance(t, torch.Tensor) else t.numpy()


def close(ref, got, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Same shape, same nan and inf positions, finite entries within tolerance."""
    ref, got = np.asarray(ref), np.asarray(got)
    if ref.shape != got.shape:
        return False
    if ref.dtype.kind not in "fc" and got.dtype.kind not in "fc":
        return bool((ref == got).all())
    ref, got = ref.astype(np.float64), got.astype(np.float64)
    nan_r, nan_g = np.isnan(ref), np.isnan(got)
    inf = np.isinf(ref) | np.isinf(got)
    fin = ~(nan_r | nan_g | inf)
    return bool((nan_r == nan_g).all() and (ref[inf] == got[inf]).all() and (
        np.abs(got[fin] - ref[fin]) <= rtol * np.abs(ref[fin]) + atol).all())


def assert_close(where: str, ref, got, rtol: float = RTOL, atol: float = ATOL) -> None:
    """Raise ``Mismatch`` naming ``where`` unless ``got`` is ``close`` to ``ref``."""
    ref, got = np.asarray(ref), np.asarray(got)
    if ref.shape != got.shape:
        raise Mismatch(f"{where}: shape torch {ref.shape} ext {got.shape}")
    if not close(ref, got, rtol, atol):
        with np.printoptions(precision=17):
            raise Mismatch(f"{where}: values differ\n  torch: {ref!r}\n  ext:   {got!r}")


def is_tensor(x) -> bool:
    """A tensor of either engine."""
    return isinstance(x, (torch.Tensor, ext.Tensor))
