# pyevidence: the two commands a newcomer runs are `make demo` and `make test`.
# Everything installs into .venv and builds into build/; nothing outside the tree is touched.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
CC     ?= cc

EXT_SOURCES  := csrc/evidence_ext.c csrc/evidence_overlap.c csrc/evidence_eligible.c csrc/evidence_tokens.c
C_HEADERS    := $(wildcard csrc/*.h)
C_TESTS      := csrc/test/token_overlap.test.sql csrc/test/evidence_eligible.test.sql
BUILD_INPUTS := pyproject.toml setup.py $(wildcard csrc/*.c) $(C_HEADERS) $(wildcard pyevidence/_build_*.py)

UNAME := $(shell uname -s)
ifeq ($(UNAME),Darwin)
  EXT_SUFFIX := dylib
else
  EXT_SUFFIX := so
endif

WARN        := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Werror
CFLAGS      ?= -O2 -g
C_STD       := -std=c11
TEST_CFLAGS := $(C_STD) $(WARN) -O1 -g -DSQLITE_CORE -DEVIDENCE_TEST
SANITIZE    := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
VALGRIND    := valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=all \
               --show-leak-kinds=definite,indirect

# make test insists on the compiled engine; a silent fallback to Python would hide a broken build.
REQUIRE_NATIVE ?= 1
export HYPOTHESIS_PROFILE ?= dev

.PHONY: demo test test-py test-c test-asan test-valgrind test-leaks ext lint format clean

## demo: install the package into .venv and run the demonstration
demo: $(VENV)/.installed
	$(VENV)/bin/pyevidence demo

## test: every check that must pass before anything lands
test: lint test-c test-asan test-valgrind test-leaks test-py

test-py: $(VENV)/.installed-dev
	PYEVIDENCE_REQUIRE_NATIVE=$(REQUIRE_NATIVE) $(PY) -m pytest -q

## test-leaks: the native engine under valgrind, driven from Python (tests/valgrind_leaks.py)
test-leaks: $(VENV)/.installed-dev
	$(PY) tests/valgrind_leaks.py

## ext: the loadable extension, for `.load build/evidence` in the sqlite3 shell
ext: build/evidence.$(EXT_SUFFIX)

build/evidence.$(EXT_SUFFIX): $(EXT_SOURCES) $(C_HEADERS) | build
	$(CC) $(C_STD) $(WARN) $(CFLAGS) -fPIC -shared -o $@ $(EXT_SOURCES)

## test-c: the SQL test files, on the extension compiled into a test runner
test-c: build/run_sql_tests
	build/run_sql_tests --init pyevidence/schema.sql $(C_TESTS)

test-asan: build/run_sql_tests_asan
	ASAN_OPTIONS=detect_leaks=1 build/run_sql_tests_asan --init pyevidence/schema.sql $(C_TESTS)

test-valgrind: build/run_sql_tests
	$(VALGRIND) build/run_sql_tests --init pyevidence/schema.sql $(C_TESTS)

build/run_sql_tests: $(EXT_SOURCES) $(C_HEADERS) csrc/test/run_sql_tests.c | build
	$(CC) $(TEST_CFLAGS) -o $@ $(EXT_SOURCES) csrc/test/run_sql_tests.c -lsqlite3

build/run_sql_tests_asan: $(EXT_SOURCES) $(C_HEADERS) csrc/test/run_sql_tests.c | build
	$(CC) $(TEST_CFLAGS) $(SANITIZE) -o $@ $(EXT_SOURCES) csrc/test/run_sql_tests.c -lsqlite3

build:
	mkdir -p build

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/clang-format --dry-run -Werror csrc/*.c csrc/*.h csrc/test/*.c

## format: rewrite sources in the house style
format: $(VENV)/.installed-dev
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/clang-format -i csrc/*.c csrc/*.h csrc/test/*.c

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
