# Two commands: `make demo` and `make test`. Both build .venv from nothing but python3.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test test-slow test-all bench clean

$(VENV)/.installed: setup.cfg setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip wheel
	@# (setuptools and wheel in the venv build tracejit's editable install: no isolated build
	@# environment to set up)
	$(PY) -m pip install --quiet --no-compile --no-build-isolation -e '.[test,demo]'
	@# pip writes the packages' bytecode one file at a time (86 s for the whole install on two
	@# cores); compileall on every core writes it in half the time (63 s). Bytecode only saves
	@# time, and some packages ship files that do not compile: its failures are not errors.
	-$(PY) -m compileall -q -j 0 "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" > /dev/null 2>&1
	touch $@

# Bytecode for tracejit's own modules, as a pip install of it would write: the editable install
# writes none, and neither does Python where PYTHONDONTWRITEBYTECODE is set, so every process
# (and each compile worker) would compile them from source (0.3 s each).
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
