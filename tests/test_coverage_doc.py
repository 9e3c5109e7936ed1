"""docs/coverage.md is what tools/coverage.py makes of the exclusion list and today's names."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.ext_only
def test_the_coverage_page_is_current():
    spec = importlib.util.spec_from_file_location("coverage_tool", ROOT / "tools" / "coverage.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert (ROOT / "docs" / "coverage.md").read_text() == tool.page(), \
        "docs/coverage.md is stale: run python tools/coverage.py"
