# Commands for users: `make demo` and `make test`, and `make lint` (ruff + mypy, as CI runs them). All bootstrap
# .venv from PyPI (pinned by constraints.txt) and are quick when it is already set up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PIP := $(BIN)/python -m pip

.PHONY: demo demo-dsv3 test install clean-venv lint

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -c constraints.txt -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/ptxmoe compare

# DeepSeek-V3 decode sizes on the simulator, rows on one Dask worker per core; rows too big for this machine's memory
# are skipped with the reason (README "Long sweeps").
demo-dsv3: $(STAMP)
	$(BIN)/ptxmoe compare --backend sim --preset dsv3-decode --workers 0

test: $(STAMP)
	$(BIN)/python -m pytest -q

# ruff: pycodestyle, pyflakes, bugbear, isort over the whole project; mypy: the public API and the harness
# (both configured in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m mypy

clean-venv:
	rm -rf $(VENV)
