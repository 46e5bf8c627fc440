# One entry point for everything. Every target installs what it needs itself:
# uv is taken from PATH, or installed with pip into .tools/ when missing, and uv
# always uses this machine's Python (it never downloads an interpreter).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
PACKAGES := computegraph tidu tenferro
PYTEST_ARGS ?= -q

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

.PHONY: help test test-computegraph test-tidu test-tenferro test-integration lint format \
        demo bench dist sync clean

help:
	@echo "make demo   - run the showcase"
	@echo "make test   - every package's suite in isolation, then the integration suite"
	@echo "make lint   - ruff check, ruff format --check, mypy"
	@echo "make bench  - benchmarks (not tests)"
	@echo "make dist   - build wheels and sdists, install each wheel alone and import it"

$(CURDIR)/.tools/bin/uv:
	$(PYTHON) -m venv $(CURDIR)/.tools
	$(CURDIR)/.tools/bin/python -m pip install --quiet --disable-pip-version-check "uv>=0.5,<1"

# The whole workspace (all packages + dev tools), for integration tests, lint, demo, bench.
sync: | $(UV)
	UV_PROJECT_ENVIRONMENT=$(WORKSPACE_ENV) $(UV) sync --locked --all-packages --group dev --quiet

test: test-computegraph test-tidu test-tenferro test-integration

# Each package's suite runs in an environment holding only that package, its declared
# dependencies and the test tools: importing a higher layer there fails.
test-computegraph test-tidu test-tenferro: test-%: | $(UV)
	UV_PROJECT_ENVIRONMENT=$(CURDIR)/.venvs/$* $(UV) sync --locked --package $* \
	    --no-default-groups --group test --exact --quiet
	cd packages/$* && $(CURDIR)/.venvs/$*/bin/python -m pytest $(PYTEST_ARGS) tests

test-integration: sync
	$(RUN) -m pytest $(PYTEST_ARGS) tests

lint: sync
	$(WORKSPACE_ENV)/bin/ruff check .
	$(WORKSPACE_ENV)/bin/ruff format --check .
	$(WORKSPACE_ENV)/bin/mypy

format: sync
	$(WORKSPACE_ENV)/bin/ruff format .
	$(WORKSPACE_ENV)/bin/ruff check --fix .

demo: sync
	$(RUN) docs/examples/demo.py

bench: sync
	$(RUN) tests/benchmarks/run_all.py

# Wheels needed to install each package from dist/ alone (its workspace dependencies are
# installed from the local wheels by path, never from an index).
DIST_WHEELS_computegraph := computegraph
DIST_WHEELS_tidu := tidu computegraph
DIST_WHEELS_tenferro := tenferro tidu computegraph

define dist_check
	rm -rf $(CURDIR)/.venvs/dist-$(1)
	$(UV) venv --quiet $(CURDIR)/.venvs/dist-$(1)
	$(UV) pip install --quiet --python $(CURDIR)/.venvs/dist-$(1)/bin/python \
	    $(foreach w,$(DIST_WHEELS_$(1)),dist/$(w)-*.whl)
	cd /tmp && $(CURDIR)/.venvs/dist-$(1)/bin/python -c \
	    "import $(1); print('$(1)', $(1).__version__, 'installed alone from', $(1).__file__)"

endef

dist: | $(UV)
	rm -rf dist
	$(UV) build --all-packages --out-dir dist --quiet
	ls dist
	$(foreach p,$(PACKAGES),$(call dist_check,$(p)))

clean:
	rm -rf .venv .venvs .tools dist .mypy_cache .ruff_cache .pytest_cache .hypothesis
