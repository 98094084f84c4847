# pyevidence: the two commands a newcomer runs are `make demo` and `make test`.
# Everything installs into .venv; nothing outside the tree is touched.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
BUILD_INPUTS := pyproject.toml setup.py $(wildcard csrc/*.c csrc/*.h pyevidence/_build_*.py)

export HYPOTHESIS_PROFILE ?= dev
REQUIRE_NATIVE ?= 0

.PHONY: demo test test-py lint format clean

## demo: install the package into .venv and run the demonstration
demo: $(VENV)/.installed
	$(VENV)/bin/pyevidence demo

## test: every check that must pass before anything lands
test: lint test-py

test-py: $(VENV)/.installed-dev
	PYEVIDENCE_REQUIRE_NATIVE=$(REQUIRE_NATIVE) $(PY) -m pytest -q

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

## format: rewrite sources in the house style
format: $(VENV)/.installed-dev
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(VENV)/bin/python $(BUILD_INPUTS)
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/bin/python $(BUILD_INPUTS)
	$(PIP) install -e '.[test,lint]'
	touch $@ $(VENV)/.installed

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis .mypy_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
	find pyevidence -name '*.so' -delete
