# One entry point for everything. Every target installs what it needs itself:
# uv is taken from PATH, or installed with pip into .tools/ when missing, and uv
# always uses this machine's Python (it never downloads an interpreter).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
PACKAGES := computegraph tidu tenferro
# Distribution names (the directory and import names are the package names above; the
# name `computegraph` on the package index belongs to an unrelated project).
DIST_computegraph := tenferro-computegraph
DIST_tidu := tidu
DIST_tenferro := tenferro
PYTEST_ARGS ?= -q
# Each suite runs on pytest-xdist workers, one per core (JOBS=0: in one process).
JOBS ?= auto
# How many cases of each group of a large test product run (tests/sampling.py in
# tenferro): `all` for `make test` and CI, a few per rule for `make test-quick`.
SAMPLE ?= all
# The quick tier: the tests not marked slow, each product sampled.
QUICK_SAMPLE ?= 1
QUICK_MARKERS ?= not slow

export UV_PYTHON_DOWNLOADS := never
export UV_PYTHON := $(shell $(PYTHON) -c 'import sys; print(sys.executable)')
export UV_NO_PROGRESS := 1
# Trust the platform's certificate store (machines behind a corporate TLS proxy);
# UV_NATIVE_TLS is the name older uv releases read.
export UV_SYSTEM_CERTS := 1
export UV_NATIVE_TLS := 1

UV := $(shell command -v uv 2>/dev/null)
ifeq ($(strip $(UV)),)
UV := $(CURDIR)/.tools/bin/uv
endif

WORKSPACE_ENV := $(CURDIR)/.venv
RUN := $(WORKSPACE_ENV)/bin/python

.PHONY: help test test-quick test-computegraph test-tidu test-tenferro test-integration lint \
        format demo bench figures dist sync sync-docs clean

help:
	@echo "make demo   - run the showcase: a tensor-network workflow, every derivative checked"
	@echo "make test   - every package's suite in isolation, then the integration suite,"
	@echo "              complete, on one pytest-xdist worker per core (what CI runs)"
	@echo "make test-quick - the same without the slow tests, large products sampled"
	@echo "make lint   - ruff check, ruff format --check, mypy, tenferro's import layers"
	@echo "make bench  - benchmarks (not tests); writes docs/benchmarks.md (BENCH_QUICK=1: fast)"
	@echo "make figures - regenerate the tutorial's figures in docs/figures/"
	@echo "make dist   - build wheels and sdists, install each wheel alone and import it,"
	@echo "              then pip install tenferro from dist/ with the package index reachable"

$(CURDIR)/.tools/bin/uv:
	$(PYTHON) -m venv $(CURDIR)/.tools
	$(CURDIR)/.tools/bin/python -m pip install --quiet --disable-pip-version-check "uv>=0.5,<1"

# The whole workspace (all packages + dev tools), for integration tests, lint, demo, bench.
# `--extra xla` brings JAX's CPU wheel: the XLA backend's tests, docs and benchmarks run.
sync: | $(UV)
	UV_PROJECT_ENVIRONMENT=$(WORKSPACE_ENV) $(UV) sync --locked --all-packages --group dev \
	    --extra xla --quiet

PYTEST_OPTIONS = -n $(JOBS) $(PYTEST_ARGS)

test: test-computegraph test-tidu test-tenferro test-integration

# The edit loop: the same suites, each in isolation, less the tests marked slow and with
# the large products sampled (SAMPLE cases per group).
test-quick:
	$(MAKE) --no-print-directory test SAMPLE=$(QUICK_SAMPLE) \
	    PYTEST_ARGS='$(PYTEST_ARGS) -m "$(QUICK_MARKERS)"'

# Each package's suite runs in an environment holding only that package, its declared
# dependencies (with its optional extras: tenferro's `xla`, JAX's CPU wheel) and the test
# tools: importing a higher layer there fails.
EXTRAS_tenferro := --extra xla
test-computegraph test-tidu test-tenferro: test-%: | $(UV)
	UV_PROJECT_ENVIRONMENT=$(CURDIR)/.venvs/$* $(UV) sync --locked --package $(DIST_$*) \
	    --no-default-groups --group test $(EXTRAS_$*) --exact --quiet
	cd packages/$* && TENFERRO_TEST_SAMPLE=$(SAMPLE) \
	    $(CURDIR)/.venvs/$*/bin/python -m pytest $(PYTEST_OPTIONS) tests

test-integration: sync
	TENFERRO_TEST_SAMPLE=$(SAMPLE) $(RUN) -m pytest $(PYTEST_OPTIONS) tests

lint: sync
	$(WORKSPACE_ENV)/bin/ruff check .
	$(WORKSPACE_ENV)/bin/ruff format --check .
	$(WORKSPACE_ENV)/bin/mypy
	$(RUN) tools/import_layers.py check

format: sync
	$(WORKSPACE_ENV)/bin/ruff format .
	$(WORKSPACE_ENV)/bin/ruff check --fix .

demo: sync
	$(RUN) docs/examples/demo.py

# matplotlib (the `docs` group) draws the report's plots and the tutorial's figures; it is
# never a runtime dependency. `--inexact` keeps peers installed by hand (torch, jax,
# autograd, opt_einsum: see docs/benchmarks.md), which the lockfile never holds.
sync-docs: | $(UV)
	UV_PROJECT_ENVIRONMENT=$(WORKSPACE_ENV) $(UV) sync --locked --all-packages --group dev \
	    --group docs --extra xla --inexact --quiet

bench: sync-docs
	$(RUN) tests/benchmarks/run_all.py

figures: sync-docs
	$(RUN) docs/figures/make_figures.py

# Wheels needed to install each package from dist/ alone (its workspace dependencies are
# installed from the local wheels by path, never from an index). Wheel file names use the
# distribution name with `-` as `_`.
DIST_WHEELS_computegraph := tenferro_computegraph
DIST_WHEELS_tidu := tidu tenferro_computegraph
DIST_WHEELS_tenferro := tenferro tidu tenferro_computegraph

define dist_check
	rm -rf $(CURDIR)/.venvs/dist-$(1)
	$(UV) venv --quiet $(CURDIR)/.venvs/dist-$(1)
	$(UV) pip install --quiet --python $(CURDIR)/.venvs/dist-$(1)/bin/python \
	    $(foreach w,$(DIST_WHEELS_$(1)),dist/$(w)-*.whl)
	cd /tmp && $(CURDIR)/.venvs/dist-$(1)/bin/python -c \
	    "import $(1); print('$(1)', $(1).__version__, 'installed alone from', $(1).__file__)"

endef

# What a user gets from `pip install --find-links dist tenferro` with the package index
# reachable: every requirement is resolved by name, so a sibling whose name or version
# the index would answer instead of dist/ (a name collision, a loose pin) is caught.
define index_check
	rm -rf $(CURDIR)/.venvs/dist-index
	$(PYTHON) -m venv $(CURDIR)/.venvs/dist-index
	$(CURDIR)/.venvs/dist-index/bin/python -m pip install --quiet --disable-pip-version-check \
	    --no-cache-dir --find-links dist tenferro
	cd /tmp && $(CURDIR)/.venvs/dist-index/bin/python -c \
	    "import tenferro as tf, tidu, computegraph, importlib.metadata as m; \
	    assert tf.__version__ == tidu.__version__ == computegraph.__version__, 'versions'; \
	    assert m.version('tenferro-computegraph') == computegraph.__version__; \
	    print('tenferro', tf.__version__, 'from the index + dist/:', tf.grad(lambda x: tf.sum(x * x))(tf.asarray([1.0, 2.0])))"

endef

dist: | $(UV)
	rm -rf dist
	$(UV) build --all-packages --out-dir dist --quiet
	ls dist
	$(foreach p,$(PACKAGES),$(call dist_check,$(p)))
	$(call index_check)

clean:
	rm -rf .venv .venvs .tools dist .mypy_cache .ruff_cache .pytest_cache .hypothesis
