# Two commands: `make demo` and `make test`. Both build .venv from nothing but python3.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test test-slow test-all bench clean pip-install

# Python writes bytecode as it imports (where the environment says not to, every process would
# compile from source every module it imports: tracejit, NumPy, Numba, SciPy, each pytest
# worker's test files and each notebook kernel's imports). Only what is imported gets compiled,
# once, into .venv and the checkout's __pycache__ folders.
export PYTHONDONTWRITEBYTECODE :=

$(VENV)/.installed: setup.cfg setup.py
	$(PYTHON) -m venv $(VENV)
	@# uv (Astral's installer, from PyPI) fetches and unpacks the wheels in parallel: 26 s on a
	@# clean machine against pip's 37 s, a tenth of CI's five minutes. It writes no bytecode
	@# (pip wrote every package's, one file at a time, 86 s on two cores; imports write what is
	@# used). pip, as before, where uv cannot be installed or fails.
	$(PY) -m pip install --quiet --disable-pip-version-check uv \
	  && $(PY) -m uv pip install --quiet --python $(PY) -e '.[test,demo]' \
	  || $(MAKE) pip-install
	touch $@

# (setuptools and wheel in the venv build tracejit's editable install: no isolated build
# environment to set up)
pip-install:
	$(PY) -m pip install --quiet --upgrade pip wheel
	$(PY) -m pip install --quiet --no-compile --no-build-isolation -e '.[test,demo]'

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
