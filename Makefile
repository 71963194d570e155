# nnisa developer commands.  Everything runs inside .venv, created on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JOBS ?= 2

.PHONY: demo test test-all bench install warmup clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[test,oracles,hdl,sweep,dist,fast]'
	$(BIN)/python -m compileall -q src
	$(BIN)/python -m nnisa.warmup
	touch $(STAMP)

install: $(STAMP)

# byte-compile the sources and compile the numba kernels into their on-disk cache again (after editing)
warmup: $(STAMP)
	$(BIN)/python -m compileall -q src
	$(BIN)/python -m nnisa.warmup

demo: $(STAMP)
	$(BIN)/nnisa demo

test: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) -q

test-all: $(STAMP)
	$(BIN)/python -m pytest -n $(JOBS) -q -m ''

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache src/nnisa/_native
