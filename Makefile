# Two commands: `make demo` and `make test`. Both build .venv from nothing but python3.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test test-slow test-all bench clean

$(VENV)/.installed: setup.cfg setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,demo]'
	touch $@

demo: $(VENV)/.installed
	$(PY) -m tracejit.demo

# Two workers (the CI machines have 2 cores); compiled kernels are shared through the disk cache.
test: $(VENV)/.installed
	$(PY) -m pytest -q -n 2 --durations=20 -m "not slow"

# The long tests: many more random programs, every model's compiled standalone vjp.
test-slow: $(VENV)/.installed
	$(PY) -m pytest -q -n 2 --durations=20 -m slow

# Everything, the slow tests included.
test-all: $(VENV)/.installed
	$(PY) -m pytest -q -n 2 --durations=20

bench: $(VENV)/.installed
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build *.egg-info
