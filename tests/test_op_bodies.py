"""Every declared built-in's backward and forward rule is written in the common tensor API: no
NumPy, no ext-only internals, no question of which engine it runs on (tests/test_op_registry.py
runs each on torch tensors; this reads each body, so that a branch a case does not reach is
held to the same rule)."""

from __future__ import annotations

import inspect
import re

import pytest

from ext.functions import _op

pytestmark = pytest.mark.ext_only

# NumPy, an ext tensor's array or wrapper, the engine's state, or a test of the tensor's kind
_FORBIDDEN = re.compile(r"\._data\b|\bnp\.|\bnumpy\b|\bwrap\(|\bSTATE\b|"
                        r"isinstance\([^)]*\bTensor\b|type\([^)]*\) is Tensor")


def _bodies():
    for op in _op.registry():
        if op.pack:
            continue
        for ov in op.overloads:
            for name in ("backward", "jvp", "tangents"):
                f = ov.__dict__.get(name)
                f = getattr(f, "__func__", f)
                if callable(f):
                    yield f"{ov.__name__}.{name}", f


BODIES = dict(_bodies())


def test_there_are_bodies_to_read():
    assert len(BODIES) > 50 and "Exp.backward" in BODIES


@pytest.mark.parametrize("name", sorted(BODIES))
def test_the_body_uses_only_the_common_tensor_api(name):
    found = _FORBIDDEN.findall(inspect.getsource(BODIES[name]))
    assert not found, f"{name} uses {sorted(set(found))}"
