# Two commands: `make demo` and `make test`. Both build .venv from nothing but python3.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test test-slow test-all bench clean

# Python writes bytecode as it imports (where the environment says not to, every process would
# compile from source every module it imports: tracejit, NumPy, Numba, SciPy, each pytest
# worker's test files and each notebook kernel's imports). Only what is imported gets compiled,
# once, into .venv and the checkout's __pycache__ folders.
export PYTHONDONTWRITEBYTECODE :=

$(VENV)/.installed: setup.cfg setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip wheel
	@# (setuptools and wheel in the venv build tracejit's editable install: no isolated build
	@# environment to set up)
	@# (no bytecode at install: pip writes every package's, one file at a time, 86 s on two
	@# cores; compileall of them all took 25 s; imports write what is used)
	$(PY) -m pip install --quiet --no-compile --no-build-isolation -e '.[test,demo]'
	touch $@

# Bytecode for all of tracejit's modules before the test workers, demo and compile workers
# start, so that they do not each compile the same modules at once.
BYTECODE = $(PY) -m compileall -q tracejit

demo: $(VENV)/.installed
	$(BYTECODE)
	$(PY) -m tracejit.demo

# Two workers (the CI machines have 2 cores); compiled kernels are shared through the disk cache.
test: $(VENV)/.installed
	$(BYTECODE)
	$(PY) -m pytest -q -n 2 --durations=20 -m "not slow"

# The long tests: many more random programs, every model's compiled standalone vjp.
test-slow: $(VENV)/.installed
	$(BYTECODE)
	$(PY) -m pytest -q -n 2 --durations=20 -m slow

# Everything, the slow tests included.
test-all: $(VENV)/.installed
	$(BYTECODE)
	$(PY) -m pytest -q -n 2 --durations=20

bench: $(VENV)/.installed
	$(BYTECODE)
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build *.egg-info
