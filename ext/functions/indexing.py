"""Indexing reads: ``x[...]`` with ints, slices, None, Ellipsis, bool masks and integer arrays."""

from __future__ import annotations

METHODS: dict = {}
FUNCTIONS: dict = {}
