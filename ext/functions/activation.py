"""Softmax-family ops and the building blocks of ``ext.nn.functional``."""

from __future__ import annotations

METHODS: dict = {}
FUNCTIONS: dict = {}
