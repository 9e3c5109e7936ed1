PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

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

lint: $(STAMP)
	$(BIN)/ruff check ext tests benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/chain.py
	$(BIN)/python benchmarks/mlp.py

clean:
	rm -rf $(VENV)
