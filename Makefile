# dpstack — the two commands of the README, and a few helpers.
#   make book   install what is missing, execute with papermill the notebooks whose inputs changed, build the Jupyter Book
#   make test   install what is missing, lint (ruff), run the unit/statistical tests, nbval over every notebook,
#               then the browser test (build the book, open every page in headless Chromium)
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

.PHONY: book test install data notebooks html lint test-unit test-replay test-notebooks test-browser benchmark demo clean reproduce

install: $(STAMP)

# setup.py builds the optional compiled pass (dpstack/_fused.c): editing it reinstalls (rebuilds) the package.
$(STAMP): pyproject.toml setup.py dpstack/_fused.c
	@if [ ! -x "$(PY)" ]; then echo "creating virtualenv $(ENV_DIR)"; python3 -m venv "$(ENV_DIR)"; fi
	"$(PY)" -m pip install -qq --upgrade pip
	"$(PY)" -m pip install -qq -e ".[dev,book,distributed]"
	@touch "$@"

book: $(STAMP)
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory data; \
	$(NB_ENV) "$(PY)" scripts/run_notebooks.py --changed; \
	$(MAKE) --no-print-directory html; \
	echo "make book: done in $$(( $$(date +%s) - start )) s; open file://$(CURDIR)/_build/html/index.html"

# `make book` is an explicit request for the whole companion, so it fetches missing public datasets
# (pinned sha256) into the data home; offline, the pages whose data is absent say so. The URL archive
# (~0.5 GB) only on request: make data DATASETS="url". CI runs `make test`, which never fetches.
DATASETS ?= mnist news20 kddcup99 har
# The shared folder beside the repository is read-only input: `make data` (and so `make book`, which
# runs it as a sub-make with DPSTACK_DATA exported) never fetches into it.
data: $(STAMP)
ifeq ($(abspath $(DPSTACK_DATA)),$(abspath ../shared/data))
	@echo "data: using the shared data folder $(DPSTACK_DATA) as it is (read-only input: nothing is fetched into it)"
else
	"$(PY)" -m dpstack.datasets fetch $(DATASETS) --missing-ok
endif


# Recompute the registered experiments at the papers' scale and write results/<page>/<profile>.csv + .json
# (provenance), then re-execute their pages. Resumable (the runner's cell cache); pages whose data is
# absent are skipped (their pages are re-executed and show the absent-data note).
#   make reproduce                         every registered page, paper profile, 2 workers
#   make reproduce EXPERIMENTS="mpl_kdd"   some pages; PROFILE=quick, N_JOBS=4 likewise
#   make reproduce DASK=tcp://host:8786    on a dask.distributed cluster (DASK=local: a local one)
EXPERIMENTS ?=
PROFILE ?= paper
N_JOBS ?= 2
DASK ?=
reproduce: $(STAMP)
	"$(PY)" -m dpstack.companion reproduce $(EXPERIMENTS) --profile $(PROFILE) --n-jobs $(N_JOBS) $(if $(DASK),--dask $(DASK))
	"$(PY)" -m dpstack.companion verdicts
	$(NB_ENV) "$(PY)" scripts/run_notebooks.py --in-place -j 1 $$("$(PY)" -m dpstack.companion pages $(EXPERIMENTS))

notebooks: $(STAMP)
	$(NB_ENV) "$(PY)" scripts/run_notebooks.py

# jupyter_book has no __main__ module, so `python -m jupyter_book` cannot run it; and
# --all: an incremental build does not repeat the warnings of unchanged pages, so -W would miss them.
JUPYTER_BOOK := "$(PY)" -c "import sys; from jupyter_book.cli.main import main; sys.exit(main())"
html: $(STAMP)
	$(JUPYTER_BOOK) build . --all --warningiserror --keep-going --quiet

# The unit tests run beside nbval and then the browser test (one process each, so both cores work;
# the unit tests' output is printed at the end). Any part failing fails make test, with every part's output.
test: $(STAMP)
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory lint; \
	log=$$(mktemp); \
	( $(MAKE) --no-print-directory test-unit > "$$log" 2>&1 ) & unit_pid=$$!; \
	nb=0; $(MAKE) --no-print-directory test-notebooks || nb=$$?; \
	browser=0; $(MAKE) --no-print-directory test-browser || browser=$$?; \
	unit=0; wait $$unit_pid || unit=$$?; \
	echo "---- unit tests (run beside the notebooks and the browser test): exit $$unit ----"; \
	cat "$$log"; rm -f "$$log"; \
	if [ "$$unit" -ne 0 ] || [ "$$nb" -ne 0 ] || [ "$$browser" -ne 0 ]; then \
	  echo "make test: FAILED (unit tests exit $$unit, notebooks exit $$nb, browser exit $$browser)"; exit 1; fi; \
	echo "make test: $$(( $$(date +%s) - start )) s"

# ruff: the rules are in pyproject.toml ([tool.ruff]); `ruff format .` and `ruff check --fix .` repair most findings.
lint: $(STAMP)
	"$(PY)" -m ruff check .
	"$(PY)" -m ruff format --check .

# tests/conftest.py points DPSTACK_CACHE at a fresh temporary folder for the session and fails it
# if anything in the data home (DPSTACK_DATA, read-only input) was added, removed or modified.
test-unit: $(STAMP)
	"$(PY)" -m pytest tests -m "not browser"

# The replay of the committed results alone (CI runs it again, with nbval, on a second numerical
# platform: DPSTACK_FUSED=0, the solver's numpy pass). Its report is printed at the end.
test-replay: $(STAMP)
	"$(PY)" -m pytest tests/test_results.py tests/test_protocols.py -q -p no:cacheprovider \
	  -k "replay_random_committed or default_protocol_are_recomputed"

test-notebooks: $(STAMP)
	$(NB_ENV) "$(PY)" -m pytest --nbval notebooks --nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider

demo: $(STAMP)
	"$(PY)" -m dpstack.companion demo --out _build/demo

# Builds the book (Sphinx -W) into _build/html, serves it on 127.0.0.1 and opens every page in
# headless Chromium; screenshots go to _build/screenshots/ (DPSTACK_SCREENSHOTS=all: every page).
test-browser: $(STAMP)
	@if [ -z "$${CHROMIUM:-}" ] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null \
	    && ! command -v google-chrome >/dev/null; then \
	  echo "make test-browser needs Chromium: sudo apt-get install -y chromium (Debian/Ubuntu)," \
	       "or set CHROMIUM=/path/to/chrome"; exit 1; fi
	"$(PY)" -m pytest tests/browser -m browser -p no:cacheprovider

benchmark: $(STAMP)
	"$(PY)" -m benchmarks

clean:
	rm -rf _build .pytest_cache
