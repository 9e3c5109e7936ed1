"""Shared fixtures: every behaviour test runs once on ``ext`` and once on ``torch``."""

from __future__ import annotations

import importlib

import numpy as np
import pytest


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
