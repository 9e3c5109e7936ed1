"""Every built-in op's node name is pinned by a parity test that runs on both backends."""

from __future__ import annotations

import pathlib

import pytest

import ext.functions  # noqa: F401 - loads every op module
from ext.functions.builtin._builtin import BuiltinFunction

TESTS = pathlib.Path(__file__).parent
# Nodes that only exist inside other nodes' backward (double backward of a read): they are
# pinned through the gradients' grad_fn in the indexing tests, under these names.
INTERNAL = {"AsStridedScatterBackward0"}


def _all_ops() -> list[type]:
    seen, stack = [], [BuiltinFunction]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            stack.append(sub)
            if "node_name" in sub.__dict__:
                seen.append(sub)
    return seen


@pytest.mark.ext_only
def test_every_builtin_node_name_appears_in_a_parity_test():
    this = pathlib.Path(__file__).name
    text = "\n".join(p.read_text() for p in TESTS.glob("test_*.py") if p.name != this)
    missing = sorted({op.node_name for op in _all_ops()
                      if op.node_name not in text and op.node_name not in INTERNAL})
    assert not missing, f"node names no test pins: {missing}"


@pytest.mark.ext_only
def test_the_op_library_is_large():
    # A guard against the discovery above silently finding nothing.
    assert len(_all_ops()) > 100
