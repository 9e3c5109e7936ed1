"""The deep differential fuzzer's derandomized slice: seeded programs, every mode, both engines.

Cross-backend test: each seed's program (``fuzz_families.draw_program``) runs on ext and on torch
under every mode of ``fuzz_deep.MODES`` and the observations are compared (``fuzz_deep.py`` says
what is observed). A mismatch fails with the program shrunk to the statements that still show it,
as a script over ``T`` to paste, and the first differing observation. The long run that reports
instead of failing is ``make fuzz`` (``PYTHONPATH=tests python -m fuzz_deep 10000`` from the
project root).
"""

from __future__ import annotations

import pytest
from fuzz_deep import first_finding, shrink
from fuzz_families import draw_program

SEEDS = range(400)


@pytest.mark.parametrize("seed", SEEDS)
def test_program_agrees_with_torch(seed):
    found = first_finding(draw_program(seed))
    if found is not None:
        pytest.fail(shrink(found, budget=5.0).report(), pytrace=False)
