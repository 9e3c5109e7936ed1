"""``ext._tensor_str.tensor_repr`` must reproduce ``repr(torch.Tensor)`` exactly."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
import torch

from ext._tensor_str import get_printoptions, printoptions, set_printoptions, tensor_repr


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _ours(t: torch.Tensor, namespace: str = "torch") -> str:
    """Render ``t`` through tensor_repr using only what an ext tensor would know."""
    return tensor_repr(
        t.detach().numpy(),
        dtype_name=_dtype_name(t.dtype),
        default_dtype_name=_dtype_name(torch.get_default_dtype()),
        requires_grad=t.requires_grad and t.grad_fn is None,
        grad_fn_name=type(t.grad_fn).__name__ if t.grad_fn is not None else None,
        namespace=namespace,
    )


def _t(values: object, dtype: type | None = None) -> torch.Tensor:
    """A torch tensor from NumPy data; np.array keeps 0-d inputs as arrays."""
    return torch.from_numpy(np.array(values, dtype=dtype))


def _normal(shape: tuple[int, ...], seed: int, scale: float = 1.0, dtype: type = np.float32):
    return _t(np.random.default_rng(seed).standard_normal(shape) * scale, dtype)


def _ints(shape: tuple[int, ...], seed: int, low: int, high: int, dtype: type = np.int64):
    return _t(np.random.default_rng(seed).integers(low, high, shape), dtype)


def _leaf(t: torch.Tensor) -> torch.Tensor:
    return t.requires_grad_()


# Builders rather than tensors, so each case gets a fresh tensor (and a fresh autograd graph).
CASES: dict[str, Callable[[], torch.Tensor]] = {
    # 0-d
    "scalar_int_valued_float": lambda: _t(3.0, np.float32),
    "scalar_fraction": lambda: _t(-3.14159, np.float32),
    "scalar_int64": lambda: _t(7),
    "scalar_bool": lambda: _t(True),
    "scalar_float64": lambda: _t(2.5, np.float64),
    "scalar_float16": lambda: _t(0.1, np.float16),
    "scalar_nan": lambda: _t(np.nan, np.float32),
    "scalar_tiny_sci": lambda: _t(1.5e-7, np.float32),
    # 1-d basics
    "vector_float32": lambda: _normal((5,), 0),
    "vector_int_valued_float": lambda: _t([1.0, -2.0, 30.0], np.float32),
    "vector_negative_zero": lambda: _t([-0.0, 1.0], np.float32),
    "vector_zeros": lambda: _t(np.zeros(4), np.float32),
    "vector_int64": lambda: _ints((6,), 1, -1000, 1000),
    "vector_int32": lambda: _ints((6,), 2, -50, 50, np.int32),
    "vector_int16": lambda: _ints((4,), 3, -300, 300, np.int16),
    "vector_int8": lambda: _ints((5,), 4, -128, 128, np.int8),
    "vector_uint8": lambda: _ints((5,), 5, 0, 256, np.uint8),
    "vector_bool": lambda: _t([True, False, True]),
    "vector_float16": lambda: _normal((6,), 6, dtype=np.float16),
    "vector_float64": lambda: _normal((4,), 7, dtype=np.float64),
    # Scientific notation triggers and their boundaries
    "sci_small_values": lambda: _normal((4,), 8, scale=1e-6),
    "sci_large_values": lambda: _normal((4,), 9, scale=1e9),
    "sci_ratio_above_1000": lambda: _t([1.0, 1500.5], np.float32),
    "fixed_ratio_exactly_1000": lambda: _t([1.0, 1000.0], np.float32),
    "sci_int_valued": lambda: _t([1.0, 2e9], np.float64),
    "fixed_large_but_below_1e8": lambda: _t([5e7, 6e7], np.float64),
    # Non-finite values
    "nonfinite_mixed": lambda: _t([1.5, np.nan, np.inf, -np.inf], np.float32),
    "nonfinite_int_valued": lambda: _t([1.0, np.nan, -np.inf], np.float32),
    "nonfinite_only": lambda: _t([np.nan, np.inf], np.float32),
    "nonfinite_with_zero": lambda: _t([0.0, np.nan], np.float64),
    "nonfinite_sci": lambda: _t([1e-9, np.inf, 3.0], np.float32),
    # Higher rank
    "matrix_3x4": lambda: _normal((3, 4), 10),
    "tensor_2x3x4": lambda: _normal((2, 3, 4), 11),
    "tensor_2x2x2x3_int": lambda: _ints((2, 2, 2, 3), 12, -20, 20),
    "matrix_bool": lambda: _t(np.random.default_rng(13).random((3, 3)) > 0.5),
    "matrix_float64_sci": lambda: _normal((2, 3), 14, scale=1e12, dtype=np.float64),
    "matrix_complex64": lambda: _t(
        np.random.default_rng(15).standard_normal((2, 2)) * (1 - 2j), np.complex64
    ),
    # Rows that wrap at linewidth 80
    "wrap_vector_50": lambda: _normal((50,), 16),
    "wrap_matrix_2x30": lambda: _normal((2, 30), 17, dtype=np.float64),
    "wrap_int_vector": lambda: _ints((100,), 18, 0, 100000),
    "wrap_3d_rows": lambda: _normal((2, 2, 20), 19, scale=100.0),
    # Summarisation past the threshold
    "summary_vector_1001": lambda: _normal((1001,), 20),
    "summary_matrix_40x40": lambda: _normal((40, 40), 21),
    "summary_4d_int": lambda: _ints((3, 3, 3, 40), 22, -5, 5),
    "summary_short_dim": lambda: _normal((2, 600), 23, dtype=np.float64),
    "summary_bool": lambda: _t(np.random.default_rng(24).random(1200) > 0.5),
    "summary_hidden_outlier": lambda: _t(np.r_[np.ones(3), 1e20, np.ones(2000)], np.float32),
    # Empty tensors
    "empty_vector": lambda: _t(np.zeros(0), np.float32),
    "empty_matrix": lambda: _t(np.zeros((0, 3)), np.float32),
    "empty_3d": lambda: _t(np.zeros((2, 0, 2)), np.float32),
    "empty_int64": lambda: _t(np.zeros(0), np.int64),
    "empty_bool": lambda: _t(np.zeros((0, 2)), np.bool_),
    "empty_float64": lambda: _t(np.zeros(0), np.float64),
    # Autograd suffixes
    "leaf_requires_grad": lambda: _leaf(_normal((3,), 25)),
    "leaf_float64_requires_grad": lambda: _leaf(_normal((2, 2), 26, dtype=np.float64)),
    "leaf_scalar_requires_grad": lambda: _leaf(_t(2.0, np.float32)),
    "grad_fn_mul": lambda: _leaf(_normal((3,), 27)) * 2,
    "grad_fn_sum_scalar": lambda: _leaf(_normal((4, 4), 28)).sum(),
    "grad_fn_after_dtype": lambda: _leaf(_normal((2,), 29, dtype=np.float64)).exp(),
    "grad_fn_wrapped_to_new_line": lambda: _leaf(_normal((2, 8), 30)) + 1,
    "grad_fn_summarized": lambda: _leaf(_normal((50, 50), 31)).relu(),
    "suffix_dtype_and_grad_long_line": lambda: _leaf(_normal((9,), 32, dtype=np.float64)),
}


@pytest.fixture
def restore_printoptions() -> Iterator[None]:
    """Leave both libraries on their default print options whatever the test does."""
    try:
        yield
    finally:
        torch.set_printoptions(profile="default")
        set_printoptions(profile="default")


@pytest.mark.parametrize("name", list(CASES))
def test_repr_matches_torch(name: str) -> None:
    t = CASES[name]()
    assert _ours(t) == repr(t)


def test_cases_cover_every_rank() -> None:
    ranks = {CASES[name]().dim() for name in CASES}
    assert ranks >= {0, 1, 2, 3, 4}


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32])
def test_namespace_replaces_torch_in_dtype(dtype: type) -> None:
    t = _t([1, 2, 3], dtype)
    ours = _ours(t, namespace="ext")
    assert f"dtype=ext.{_dtype_name(t.dtype)}" in ours
    assert ours.startswith("tensor(")
    assert ours == repr(t).replace("dtype=torch.", "dtype=ext.")


def test_default_dtype_suffix_follows_default() -> None:
    t = _normal((3,), 33, dtype=np.float64)
    values = t.numpy()
    assert tensor_repr(values, dtype_name="float64", default_dtype_name="float64") == (
        repr(t).replace(", dtype=torch.float64", "")
    )
    single = _normal((3,), 33)
    assert tensor_repr(single.numpy(), dtype_name="float32", default_dtype_name="float64") == (
        repr(single)[:-1] + ", dtype=ext.float32)"
    )


def test_precision_option_matches_torch(restore_printoptions: None) -> None:
    t = _t([1.12345, -2.5, 3.0], np.float32)
    before = _ours(t)
    torch.set_printoptions(precision=2)
    set_printoptions(precision=2)
    assert _ours(t) == repr(t) == "tensor([ 1.12, -2.50,  3.00])"
    assert _ours(t) != before


@pytest.mark.parametrize(
    "options",
    [
        {"sci_mode": True},
        {"sci_mode": False},
        {"threshold": 5},
        {"threshold": 5, "edgeitems": 0},
        {"edgeitems": 1, "threshold": 10},
        {"linewidth": 40},
        {"profile": "short"},
        {"profile": "full"},
        {"precision": 0},
    ],
    ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()),
)
def test_options_match_torch(options: dict[str, object], restore_printoptions: None) -> None:
    tensors = [
        _normal((4,), 34, scale=1e-5),
        _normal((3, 20), 35),
        _ints((2, 12), 36, -10, 10),
        _leaf(_normal((30,), 37, dtype=np.float64)),
        _normal((1001,), 38),
    ]
    torch.set_printoptions(**options)
    set_printoptions(**options)
    for t in tensors:
        assert _ours(t) == repr(t)


def test_printoptions_context_restores(restore_printoptions: None) -> None:
    saved = get_printoptions()
    with printoptions(precision=1, linewidth=20):
        assert get_printoptions()["precision"] == 1
        assert get_printoptions()["linewidth"] == 20
    assert get_printoptions() == saved
