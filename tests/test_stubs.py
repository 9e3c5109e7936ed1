"""The type stubs that show the Tensor's and ext's whole API (tools/stubs.py) are current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import ext

pytestmark = pytest.mark.ext_only

ROOT = Path(__file__).resolve().parent.parent


def test_the_stubs_are_what_the_package_makes_now():
    # (in a fresh interpreter: what `import ext` alone makes, without modules loaded later)
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "stubs.py"), "--check"],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr


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
