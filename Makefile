PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-opdb coverage test-compile fuzz lint bench docs clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

# torch first and pinned: the 2.13.0 CPU wheel is found locally; an unpinned torch would pull a CUDA build.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m ext

test: $(STAMP)
	$(BIN)/python -m pytest

# Every sample of every OpInfo of torch's op database (make test runs the first of each).
test-opdb: $(STAMP)
	EXT_OPDB_ALL=1 $(BIN)/python -m pytest tests/test_opdb.py

# docs/coverage.md anew, after running every op_db sample to rewrite the exclusion list.
coverage: $(STAMP)
	$(BIN)/python tools/coverage.py --exclusions

# The pack's parity checklist with torch.compile's inductor backend (C++ kernels: slower).
test-compile: $(STAMP)
	EXT_COMPILE_BACKEND=inductor $(BIN)/python -m pytest tests/test_pack*.py -k parity_checklist

# 10,000 seeded programs on ext and torch under every grad mode; reports, exits 1 on a mismatch.
fuzz: $(STAMP)
	PYTHONPATH=tests $(BIN)/python -m fuzz_deep 10000

lint: $(STAMP)
	$(BIN)/ruff check ext tests benchmarks tools tutorials setup.py docs/conf.py

# Every benchmark, each table recorded in benchmarks/RESULTS.md (`python -m ext bench` prints
# them without recording).
bench: $(STAMP)
	$(BIN)/python benchmarks/chain.py --write
	$(BIN)/python benchmarks/mlp.py --write
	$(BIN)/python benchmarks/pack.py --write
	$(BIN)/python benchmarks/llama.py --write
	$(BIN)/python benchmarks/ops.py --write

# The documentation site in docs/_build/html (open index.html there): docs/*.md, the walkthroughs
# (executed again when they or ext/ change) and benchmarks/RESULTS.md; any warning fails it.
docs: $(STAMP)
	$(BIN)/sphinx-build -j auto -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf $(VENV) docs/_build
