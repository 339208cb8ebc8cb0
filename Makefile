# dpstack — the two commands of the README, and a few helpers.
#   make book   install what is missing, execute every notebook with papermill, build the Jupyter Book
#   make test   install what is missing, run the unit/statistical tests, then nbval over every notebook
# Packages go into the active virtualenv/conda env if there is one, else into ./.venv.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

ifdef VIRTUAL_ENV
ENV_DIR := $(VIRTUAL_ENV)
else ifdef CONDA_PREFIX
ENV_DIR := $(CONDA_PREFIX)
else
ENV_DIR := $(CURDIR)/.venv
endif
PY := $(ENV_DIR)/bin/python
STAMP := $(ENV_DIR)/.dpstack-installed
export PATH := $(ENV_DIR)/bin:$(PATH)
# The project's shared data folder, when it sits beside the repo (CI); otherwise the data home default.
ifeq ($(origin DPSTACK_DATA), undefined)
ifneq ($(wildcard ../shared/data/MANIFEST.md),)
export DPSTACK_DATA := $(abspath ../shared/data)
endif
endif
# Notebook kernels draw with the inline backend (figures become outputs), whatever the caller's MPLBACKEND.
NB_ENV := MPLBACKEND=module://matplotlib_inline.backend_inline DPSTACK_QUIET=1
# One BLAS thread per process keeps results bit-identical between runs and joblib workers.
export OMP_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1

.PHONY: book test install notebooks html test-unit test-notebooks benchmark demo clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@if [ ! -x "$(PY)" ]; then echo "creating virtualenv $(ENV_DIR)"; python3 -m venv "$(ENV_DIR)"; fi
	"$(PY)" -m pip install -qq --upgrade pip
	"$(PY)" -m pip install -qq -e ".[dev,book]"
	@touch "$@"

book: $(STAMP)
	@start=$$(date +%s); \
	$(NB_ENV) "$(PY)" scripts/run_notebooks.py; \
	$(MAKE) --no-print-directory html; \
	echo "make book: $$(( $$(date +%s) - start )) s; open _build/html/index.html"

notebooks: $(STAMP)
	$(NB_ENV) "$(PY)" scripts/run_notebooks.py

html: $(STAMP)
	"$(PY)" -m jupyter_book build . --warningiserror --keep-going --quiet

test: $(STAMP)
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory test-unit; \
	$(MAKE) --no-print-directory test-notebooks; \
	echo "make test: $$(( $$(date +%s) - start )) s"

test-unit: $(STAMP)
	"$(PY)" -m pytest tests

test-notebooks: $(STAMP)
	$(NB_ENV) "$(PY)" -m pytest --nbval notebooks --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider

demo: $(STAMP)
	"$(PY)" -m dpstack.demo --out _build/demo

benchmark: $(STAMP)
	"$(PY)" -m benchmarks

clean:
	rm -rf _build .pytest_cache
