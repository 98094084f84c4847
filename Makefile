# pyevidence: the two commands a newcomer runs are `make demo` and `make test`.
# Everything installs into .venv (and .venv-X.Y) and builds into build/. Outside the tree, only
# the system packages they need: `make deps` checks them first and, as root on Debian/Ubuntu,
# installs what is missing with one printed apt-get line (tools/deps).

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
CC     ?= cc

EXT_SOURCES  := csrc/evidence_ext.c csrc/evidence_overlap.c csrc/evidence_eligible.c csrc/evidence_hash.c \
                csrc/evidence_docset.c csrc/evidence_search.c csrc/evidence_search_vtab.c \
                csrc/evidence_utf8.c csrc/evidence_tokens.c csrc/evidence_tokenset.c
STORE_SOURCES := $(EXT_SOURCES) csrc/evidence_store.c csrc/evidence_sigint.c csrc/evidence_stmt_cache.c csrc/evidence_batch.c csrc/evidence_index_write.c
C_HEADERS    := $(wildcard csrc/*.h)
C_TESTS      := csrc/test/token_overlap.test.sql csrc/test/evidence_eligible.test.sql csrc/test/evidence_hash.test.sql \
                csrc/test/evidence_put.test.sql csrc/test/evidence_utf8.test.sql csrc/test/evidence_search.test.sql
BUILD_INPUTS := pyproject.toml setup.py $(wildcard csrc/*.c) $(C_HEADERS) $(wildcard pyevidence/storage/_build_*.py)

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
# make test also runs the local embedding model (the embeddings extra: sentence-transformers on
# PyTorch's CPU build). EMBEDDINGS=0 leaves it out, and its tests then skip, saying so. TORCH is
# what pip installs first; where no CPU wheel is at hand, point it at PyTorch's CPU index, e.g.
# TORCH="torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" (PyPI's is a CUDA build).
EMBEDDINGS ?= 1
TORCH ?= torch==2.13.0
ifeq ($(EMBEDDINGS),1)
  DEV_EXTRAS := test,lint,embeddings
else
  DEV_EXTRAS := test,lint
endif
export HYPOTHESIS_PROFILE ?= dev
# make test runs the Python suite on each of these versions: $(PYTHON) in .venv (with the
# embeddings extra), every other one in .venv-X.Y without it (PyTorch is only tested on the
# main one). tools/find-python finds them on PATH or in pyenv; a missing one stops make test at
# once, saying so: leave it out explicitly, e.g. make test PYTHONS="3.11 3.12".
PYTHONS ?= 3.11 3.12 3.13
MAIN_PYTHON_VERSION := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
OTHER_PYTHONS := $(filter-out $(MAIN_PYTHON_VERSION),$(PYTHONS))

.PHONY: deps deps-build demo test test-py test-web test-c test-asan test-valgrind test-leaks test-crash test-load fuzz fuzz-quick ext bench bench-overlap lint format clean

## deps: check (and as root install) the system packages make test needs, before any work
deps:
	tools/deps test $(PYTHON) $(PYTHONS)

deps-build:
	tools/deps build $(PYTHON)

## demo: install the package into .venv and run the demonstration on the native engine
demo: deps-build $(VENV)/.installed
	$(VENV)/bin/pyevidence demo --engine native
	@echo "(the native engine ran this demo; $(VENV)/bin/pyevidence doctor shows what this installation has)"

## test: every check that must pass before anything lands
test: deps lint test-c test-asan test-valgrind test-leaks fuzz-quick test-node test-cluster test-py test-web $(OTHER_PYTHONS:%=test-py-%)

test-py: $(VENV)/.installed-dev
	PYEVIDENCE_REQUIRE_NATIVE=$(REQUIRE_NATIVE) PYEVIDENCE_REQUIRE_EMBEDDINGS=$(EMBEDDINGS) PYEVIDENCE_REQUIRE_MCP=1 PYEVIDENCE_REQUIRE_WEB=1 $(PY) -m pytest -q \
	  --ignore=tests/test_web_browser.py

## test-web: pyevidence serve in a real browser (tests/test_web_browser.py): Playwright drives
## Debian's chromium (Playwright's own browser download is not used), which comes from apt if
## missing, as root. The web extra's packages come with the test extra; playwright is added here.
## Its screenshot goes to build/web-search.png; WEB_SCREENSHOT=docs/web-search.png refreshes the
## one README.md and docs/web.md show.
PLAYWRIGHT ?= playwright>=1.40,<2
WEB_SCREENSHOT ?= build/web-search.png
test-web: $(VENV)/.installed-dev
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "apt-get install -y chromium"; \
	  [ "$$(id -u)" = 0 ] || { echo "chromium is missing: run the line above as root" >&2; exit 1; }; \
	  apt-get install -y chromium; }
	$(PIP) install '$(PLAYWRIGHT)'
	PYEVIDENCE_REQUIRE_BROWSER=1 PYEVIDENCE_SCREENSHOT=$(WEB_SCREENSHOT) $(PY) -m pytest -q tests/test_web_browser.py

## test-node: the loadable extension in Node's better-sqlite3, which binds every JavaScript
## number as a real: it writes and ranks there with plain numbers, and EvidenceStore reads the
## same file back (tests/test_node.py). better-sqlite3@12 goes into build/node (13 needs Node 22);
## node and npm come from apt (nodejs npm) if missing, as root.
.PHONY: test-node
NODE_MODULES := build/node/node_modules
AS_ROOT       = $(if $(filter 0,$(shell id -u)),,sudo)

test-node: $(VENV)/.installed-dev $(NODE_MODULES)/better-sqlite3/package.json
	PYEVIDENCE_NODE_MODULES=$(NODE_MODULES) PYEVIDENCE_REQUIRE_NODE=1 \
	  PYEVIDENCE_REQUIRE_NATIVE=$(REQUIRE_NATIVE) $(PY) -m pytest -q tests/test_node.py

$(NODE_MODULES)/better-sqlite3/package.json: | build
	@if ! command -v node >/dev/null || ! command -v npm >/dev/null; then \
	  echo "$(strip $(AS_ROOT) apt-get install -y nodejs npm)"; \
	  $(AS_ROOT) apt-get update -q && $(AS_ROOT) apt-get install -y -q nodejs npm || exit 1; \
	fi
	npm install --prefix build/node --no-save --no-audit --no-fund better-sqlite3@12
	test -f $@ && touch $@

## test-py-X.Y: the Python suite on Python X.Y, in .venv-X.Y, without the embeddings extra
test-py-%: $(VENV)-%/.installed-dev
	PYEVIDENCE_REQUIRE_NATIVE=$(REQUIRE_NATIVE) PYEVIDENCE_REQUIRE_EMBEDDINGS=0 PYEVIDENCE_REQUIRE_MCP=1 PYEVIDENCE_REQUIRE_WEB=1 \
	  $(VENV)-$*/bin/python -m pytest -q --ignore=tests/test_cluster.py --ignore=tests/test_web_browser.py

## test-leaks: the native engine under valgrind, driven from Python (tests/valgrind_leaks.py)
test-leaks: $(VENV)/.installed-dev
	$(PY) tests/valgrind_leaks.py

## bench: retrieve through the token index beside the scan, the Python engine, the floor and FTS5,
## then put_many beside FTS5 and plain SQLite (see docs/performance.md);
## BENCH_ARGS=--full adds 1,000,000 eligible rows
bench: bench-overlap $(VENV)/.installed-bench
	$(VENV)/bin/pyevidence bench --out bench-results $(BENCH_ARGS)
	$(VENV)/bin/pyevidence bench --vectors --out bench-results
	$(VENV)/bin/pyevidence bench --web --out bench-results

## bench-overlap: token_overlap's wide scan against its byte-by-byte reference, in C
bench-overlap: build/bench_overlap
	build/bench_overlap

build/bench_overlap: $(EXT_SOURCES) $(C_HEADERS) csrc/test/bench_overlap.c | build
	$(CC) $(C_STD) $(WARN) -O2 -g -DSQLITE_CORE -o $@ csrc/evidence_tokens.c csrc/evidence_tokenset.c \
		csrc/test/bench_overlap.c -lsqlite3

$(VENV)/.installed-bench: $(VENV)/bin/python $(BUILD_INPUTS)
	$(PIP) install -e '.[bench,web]'
	touch $@

## test-crash: the SIGKILL crash test, long (make test runs it with 24 kills)
test-crash: $(VENV)/.installed-dev
	CRASH_KILLS=$${CRASH_KILLS:-400} $(PY) -m pytest -q -s tests/test_crash.py

## test-load: the concurrent load test, long (make test runs it for 4 s)
test-load: $(VENV)/.installed-dev
	LOAD_SECONDS=$${LOAD_SECONDS:-60} $(PY) -m pytest -q -s tests/test_load.py

## fuzz-quick / fuzz: libFuzzer (with ASan+UBSan) on token_overlap, on evidence_eligible's arguments and on
## docsets and token lists, FUZZ_SECONDS each (30 in make test; `make fuzz` runs 600). Needs clang with libFuzzer
## (Debian: apt-get install clang-14 libclang-rt-14-dev). The corpus grows in build/corpus.
FUZZ_TARGETS := token_overlap eligible docset
CLANG ?= $(shell command -v clang-14 || command -v clang || echo clang-14)
FUZZ_SECONDS ?= 30

fuzz-quick: $(FUZZ_TARGETS:%=build/fuzz_%)
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p build/corpus/$$t; \
	  build/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -print_final_stats=1 \
	    -artifact_prefix=build/ build/corpus/$$t csrc/test/fuzz-seeds/$$t > build/fuzz_$$t.log 2>&1; \
	  rc=$$?; grep -E "^stat::number_of_executed_units" build/fuzz_$$t.log | sed "s/^/fuzz_$$t: /"; \
	  if [ $$rc -ne 0 ]; then tail -40 build/fuzz_$$t.log; exit 1; fi; \
	done

fuzz:
	$(MAKE) fuzz-quick FUZZ_SECONDS=$${FUZZ_SECONDS:-600}

build/fuzz_%: csrc/test/fuzz_%.c $(EXT_SOURCES) $(C_HEADERS) | build
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -DSQLITE_CORE -o $@ $< $(EXT_SOURCES) -lsqlite3

## node: the cluster node program, build/evidence_node (csrc/node/): one dqlite node with
## pyevidence's functions on every connection. Needs libdqlite's headers (Debian/Ubuntu:
## apt-get install libdqlite-dev); `make test-cluster` installs them if missing. -rdynamic: the
## node's own functions are named in its crash reports (csrc/node/evidence_crash.c).
.PHONY: node
NODE_SOURCES := csrc/node/evidence_node.c csrc/node/evidence_join.c csrc/node/evidence_members.c csrc/node/evidence_remove.c csrc/node/evidence_wire.c csrc/node/evidence_crash.c csrc/node/evidence_address.c
NODE_HEADERS := csrc/node/evidence_join.h csrc/node/evidence_members.h csrc/node/evidence_remove.h csrc/node/evidence_wire.h csrc/node/evidence_crash.h csrc/node/evidence_address.h

node: build/evidence_node

build/evidence_node: $(NODE_SOURCES) $(NODE_HEADERS) $(EXT_SOURCES) $(C_HEADERS) | build
	@pkg-config --exists dqlite || { echo "libdqlite's headers are missing: apt-get install libdqlite-dev" >&2; exit 1; }
	$(CC) $(C_STD) -D_POSIX_C_SOURCE=200809L $(WARN) $(CFLAGS) -rdynamic -DSQLITE_CORE -o $@ $(NODE_SOURCES) $(EXT_SOURCES) \
		$$(pkg-config --cflags --libs dqlite) -lsqlite3 -lpthread

## test-cluster: three nodes on loopback, a leader killed with SIGKILL (tests/test_cluster.py),
## under Python >= 3.13 (the cluster client's floor) in .venv-3.13, with the cluster extra added
## (test-py-3.13 leaves this file to it). Installs libdqlite-dev from apt if missing (as root),
## builds the node.
## The load test kills the leader CLUSTER_KILLS times (4 here; CLUSTER_KILLS=20 for a longer run).
.PHONY: test-cluster
CLUSTER_VENV := $(VENV)-3.13

test-cluster:
	$(MAKE) dqlite-dev
	$(MAKE) $(CLUSTER_VENV)/.installed
	PYEVIDENCE_REQUIRE_CLUSTER=1 PYEVIDENCE_NODE=build/evidence_node $(CLUSTER_VENV)/bin/python -m pytest -q \
	  -p no:cacheprovider tests/test_cluster.py

$(CLUSTER_VENV)/.installed: build/evidence_node $(CLUSTER_VENV)/.installed-dev
	$(CLUSTER_VENV)/bin/python -m pip --disable-pip-version-check -q install -e '.[cluster,test]'
	touch $@

## test-cluster-asan: the same tests on nodes built with ASan and UBSan (their clean stops check leaks)
.PHONY: test-cluster-asan
test-cluster-asan:
	$(MAKE) dqlite-dev
	$(MAKE) build/evidence_node_asan $(CLUSTER_VENV)/.installed
	ASAN_OPTIONS=detect_leaks=1 PYEVIDENCE_REQUIRE_CLUSTER=1 PYEVIDENCE_NODE=build/evidence_node_asan \
	  $(CLUSTER_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/test_cluster.py

build/evidence_node_asan: $(NODE_SOURCES) $(NODE_HEADERS) $(EXT_SOURCES) $(C_HEADERS) | build
	$(CC) $(C_STD) -D_POSIX_C_SOURCE=200809L $(WARN) -O1 -g $(SANITIZE) -DSQLITE_CORE -o $@ $(NODE_SOURCES) \
		$(EXT_SOURCES) $$(pkg-config --cflags --libs dqlite) -lsqlite3 -lpthread

.PHONY: dqlite-dev
dqlite-dev:
	@pkg-config --exists dqlite || { \
	  echo "$(strip $(AS_ROOT) apt-get install -y libdqlite-dev pkg-config)"; \
	  $(AS_ROOT) apt-get update -q && $(AS_ROOT) apt-get install -y -q libdqlite-dev pkg-config; }

## ext: the loadable extension, for `.load build/evidence` in the sqlite3 shell
ext: build/evidence.$(EXT_SUFFIX)

build/evidence.$(EXT_SUFFIX): $(EXT_SOURCES) $(C_HEADERS) | build
	$(CC) $(C_STD) $(WARN) $(CFLAGS) -fPIC -shared -o $@ $(EXT_SOURCES)

## test-c: the SQL test files and the store API test, on the extension compiled into test programs
test-c: build/run_sql_tests build/run_sql_tests_portable build/test_store build/test_tokens build/test_tokens_portable
	build/run_sql_tests --init pyevidence/storage/schema.sql $(C_TESTS)
	build/run_sql_tests_portable --init pyevidence/storage/schema.sql $(C_TESTS)
	build/test_store pyevidence/storage/schema.sql
	build/test_tokens 200000
	build/test_tokens_portable 200000

test-asan: build/run_sql_tests_asan build/test_store_asan build/test_tokens_asan
	ASAN_OPTIONS=detect_leaks=1 build/run_sql_tests_asan --init pyevidence/storage/schema.sql $(C_TESTS)
	ASAN_OPTIONS=detect_leaks=1 build/test_store_asan pyevidence/storage/schema.sql
	ASAN_OPTIONS=detect_leaks=1 build/test_tokens_asan 50000

test-valgrind: build/run_sql_tests build/test_store build/test_tokens
	$(VALGRIND) build/run_sql_tests --init pyevidence/storage/schema.sql $(C_TESTS)
	$(VALGRIND) build/test_store pyevidence/storage/schema.sql
	$(VALGRIND) build/test_tokens 5000

build/run_sql_tests: $(EXT_SOURCES) $(C_HEADERS) csrc/test/run_sql_tests.c | build
	$(CC) $(TEST_CFLAGS) -o $@ $(EXT_SOURCES) csrc/test/run_sql_tests.c -lsqlite3

# The same SQL tests without SIMD: SHA-256 and the token scan on their portable paths.
build/run_sql_tests_portable: $(EXT_SOURCES) $(C_HEADERS) csrc/test/run_sql_tests.c | build
	$(CC) $(TEST_CFLAGS) -DEVIDENCE_NO_SIMD -o $@ $(EXT_SOURCES) csrc/test/run_sql_tests.c -lsqlite3

build/run_sql_tests_asan: $(EXT_SOURCES) $(C_HEADERS) csrc/test/run_sql_tests.c | build
	$(CC) $(TEST_CFLAGS) $(SANITIZE) -o $@ $(EXT_SOURCES) csrc/test/run_sql_tests.c -lsqlite3

build/test_tokens: $(EXT_SOURCES) $(C_HEADERS) csrc/test/test_tokens.c | build
	$(CC) $(TEST_CFLAGS) -o $@ csrc/evidence_tokens.c csrc/evidence_tokenset.c csrc/test/test_tokens.c -lsqlite3

build/test_tokens_portable: $(EXT_SOURCES) $(C_HEADERS) csrc/test/test_tokens.c | build
	$(CC) $(TEST_CFLAGS) -DEVIDENCE_NO_SIMD -o $@ csrc/evidence_tokens.c csrc/evidence_tokenset.c \
		csrc/test/test_tokens.c -lsqlite3

build/test_tokens_asan: $(EXT_SOURCES) $(C_HEADERS) csrc/test/test_tokens.c | build
	$(CC) $(TEST_CFLAGS) $(SANITIZE) -o $@ csrc/evidence_tokens.c csrc/evidence_tokenset.c \
		csrc/test/test_tokens.c -lsqlite3

build/test_store: $(STORE_SOURCES) $(C_HEADERS) csrc/test/test_store.c | build
	$(CC) $(TEST_CFLAGS) -o $@ $(STORE_SOURCES) csrc/test/test_store.c -lsqlite3

build/test_store_asan: $(STORE_SOURCES) $(C_HEADERS) csrc/test/test_store.c | build
	$(CC) $(TEST_CFLAGS) $(SANITIZE) -o $@ $(STORE_SOURCES) csrc/test/test_store.c -lsqlite3

build:
	mkdir -p build

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/clang-format --dry-run -Werror csrc/*.c csrc/*.h csrc/test/*.c csrc/node/*.c csrc/node/*.h

## format: rewrite sources in the house style
format: $(VENV)/.installed-dev
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/clang-format -i csrc/*.c csrc/*.h csrc/test/*.c csrc/node/*.c csrc/node/*.h

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(VENV)/bin/python $(BUILD_INPUTS)
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/bin/python $(BUILD_INPUTS)
	$(if $(filter 1,$(EMBEDDINGS)),$(PIP) install $(TORCH))
	$(PIP) install -e '.[$(DEV_EXTRAS)]'
	touch $@ $(VENV)/.installed

.PRECIOUS: $(VENV)-%/.installed-dev
# The editable install builds the compiled parts in pyevidence/ for every version side by side
# (evidence.cpython-3XY-*.so; _native.abi3.so is one for all).
$(VENV)-%/.installed-dev: $(BUILD_INPUTS)
	@[ -x $(VENV)-$*/bin/python ] || { \
	  python=$$(tools/find-python $*) || { echo "no Python $* here: see make deps" >&2; exit 1; }; \
	  echo "$$python -m venv $(VENV)-$*"; "$$python" -m venv $(VENV)-$*; }
	$(VENV)-$*/bin/python -m pip --disable-pip-version-check -q install -e '.[test]'
	touch $@

clean:
	rm -rf $(VENV) $(VENV)-* build dist *.egg-info .pytest_cache .hypothesis .mypy_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
	find pyevidence -name '*.so' -delete
