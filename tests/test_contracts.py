"""The contract table (docs/contracts.md) is generated from the registry and current, and the
registry holds the pack beside the built-ins."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import ext
from ext.functions import _op
from ext.functions.dropin import CONTRACT_FIELDS, FUNCTIONS

pytestmark = pytest.mark.ext_only

ROOT = Path(__file__).resolve().parent.parent


def test_the_contract_table_is_what_the_registry_makes_now():
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "contracts.py"), "--check"],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_registry_lists_every_pack_op_with_its_contract():
    pack = {op.name: op for op in _op.registry() if op.pack}
    assert set(pack) == set(FUNCTIONS)
    hardsigmoid = pack["hardsigmoid"]
    assert hardsigmoid.node_names == ("HardsigmoidBackward",)
    contract = hardsigmoid.contract()["HardsigmoidBackward"]
    assert set(contract) == set(CONTRACT_FIELDS)
    assert contract["double_backward"] == "zero almost everywhere"
    assert pack["grad_reverse"].contract()["GradReverseBackward"]["output"] == "view"


def test_pack_ops_stay_out_of_the_torch_named_namespace():
    assert not hasattr(ext, "swiglu") and ext.functions.swiglu is FUNCTIONS["swiglu"]
    text = (ROOT / "docs" / "contracts.md").read_text()
    assert "| `hardsigmoid` |" in text and "| `exp` | ExpBackward0 |" in text
