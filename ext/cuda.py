"""``ext.cuda``: what scripts ask of CUDA, answered as a CPU-only build answers it."""

from __future__ import annotations

_NO_CUDA = "ext not compiled with CUDA enabled"


def is_available() -> bool:
    """Always False: ext runs on the CPU."""
    return False


def device_count() -> int:
    """Always 0."""
    return 0


def is_initialized() -> bool:
    """Always False."""
    return False


def manual_seed(seed: int) -> None:
    """Accepted and ignored: there is no CUDA generator to seed."""
    int(seed)


def manual_seed_all(seed: int) -> None:
    """Accepted and ignored: there are no CUDA generators to seed."""
    int(seed)


def empty_cache() -> None:
    """Nothing to free."""


def current_device() -> int:
    """Fails as a CPU-only build does: AssertionError."""
    raise AssertionError(_NO_CUDA)


def synchronize(device: object = None) -> None:
    """Fails as a CPU-only build does: AssertionError."""
    raise AssertionError(_NO_CUDA)


def get_device_name(device: object = None) -> str:
    """Fails as a CPU-only build does: AssertionError."""
    raise AssertionError(_NO_CUDA)
