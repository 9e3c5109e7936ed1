"""Tensor methods that make new tensors like an existing one: new_zeros, new_ones, ..."""

from __future__ import annotations

METHODS: dict = {}
FUNCTIONS: dict = {}
