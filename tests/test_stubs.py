"""The type stubs that show the Tensor's and ext's whole API (tools/stubs.py) are current."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import ext

pytestmark = pytest.mark.ext_only

ROOT = Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location("stubs", ROOT / "tools" / "stubs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", ["ext/_tensor.pyi", "ext/__init__.pyi"])
def test_the_stub_is_what_the_package_makes_now(path):
    made = _tool().STUBS[path]()
    assert (ROOT / path).read_text() == made, "stale stub: run python tools/stubs.py"


def test_the_tensor_stub_lists_every_installed_method_with_its_docstring():
    text = (ROOT / "ext" / "_tensor.pyi").read_text()
    for name in ("exp", "exp_", "pow", "__pow__", "sum", "view", "backward", "register_hook"):
        assert f"    def {name}(self" in text, name
    assert '"""e^x: d/dx = e^x, the result."""' in text
    assert ext.Tensor.exp.__doc__.startswith("e^x")


def test_the_package_stub_lists_the_op_functions():
    text = (ROOT / "ext" / "__init__.pyi").read_text()
    for name in ("exp", "pow", "sum", "tensor", "zeros"):
        assert f"\ndef {name}(" in text, name
    assert "from . import autograd as autograd" in text
