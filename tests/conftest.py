"""Shared fixtures: every behaviour test runs once on ``ext`` and once on ``torch``."""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest

# torch's checkpoint(debug=True) symbolizes C++ frames with addr2line subprocesses, which can
# take minutes on a busy machine; it names them from the symbol table instead.
os.environ.setdefault("TORCH_DISABLE_ADDR2LINE", "1")


@pytest.fixture(params=["ext", "torch"])
def T(request):
    """The backend module under test: ``ext`` (the mini-engine) or ``torch`` (the oracle)."""
    return importlib.import_module(request.param)


@pytest.fixture
def rng():
    """A NumPy generator for inputs handed to both backends (their own RNGs differ)."""
    return np.random.default_rng(0)


def pytest_configure(config):
    config.addinivalue_line("markers", "ext_only: ext internals, no torch counterpart")
    config.addinivalue_line("markers", "slow: a test that takes more than a few seconds")
