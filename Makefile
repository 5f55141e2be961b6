# Two commands: `make demo` and `make test`. Both build .venv from nothing but python3.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test bench clean

$(VENV)/.installed: setup.cfg setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

demo: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[demo]'
	$(PY) -m tracejit.demo

test: $(VENV)/.installed
	$(PY) -m pytest -q

bench: $(VENV)/.installed
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build *.egg-info
