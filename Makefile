# Commands for users: `make demo` and `make test`, `make ptx` (regenerate the templated PTX), and `make lint` (ruff +
# mypy, as CI runs them). All bootstrap .venv from PyPI (pinned by constraints.txt) and are quick when it is already set
# up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PIP := $(BIN)/python -m pip

.PHONY: demo demo-tiny test mutations install clean-venv lint ptx

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -c constraints.txt -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

# DeepSeek-V3 decode shapes, every kernel and the layer on every path: measured on a GPU when one is visible, else on
# the simulator (lazy inputs, big GEMM launches sampled: README "DeepSeek-V3's shapes without a GPU").
demo: $(STAMP)
	$(BIN)/ptxmoe compare --preset dsv3-decode --sim-workers 2 --sim-memory-limit 3.5GB

# The quick look: the `tiny` test size on the simulator (under a minute).
demo-tiny: $(STAMP)
	$(BIN)/ptxmoe compare --backend sim --preset tiny

test: $(STAMP)
	$(BIN)/python -m pytest -q

# Regenerate every PTX file a template renders (ptx_impl/generated.py lists them; the test of them compares).
ptx: $(STAMP)
	$(BIN)/python -m ptx_impl.generated

# Issue 26's mutation suite: single faults of FP8 rungs 2-10 (tests/mutations/table.py) on ptxsim with every sanitizer
# on; fails unless every mutant is caught, the unmutated rungs run clean and docs/mutations.md matches this run.
# MUTATION_JOBS worker processes (default: the CPUs); MUTATION_ARGS passes options (--seed, --only, --write-docs).
MUTATION_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
mutations: $(STAMP)
	$(BIN)/python -m tests.mutations --jobs $(MUTATION_JOBS) $(MUTATION_ARGS)

# ruff: pycodestyle, pyflakes, bugbear, isort over the whole project; mypy: the public API and the harness
# (both configured in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m mypy

clean-venv:
	rm -rf $(VENV)
