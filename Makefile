# Every target sets up what it needs: a fresh machine only needs python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: test demo bench docs clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

test: $(VENV)/.installed
	$(BIN)/python -m pytest

demo: $(VENV)/.installed
	$(BIN)/python examples/quickstart.py

bench: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python benchmarks/run.py $(BENCHFLAGS)

docs: $(VENV)/.installed
	$(BIN)/python -m adjoint.catalog > docs/rules.md

clean:
	rm -rf $(VENV) build *.egg-info
