# annex: the README's two commands.
#   make demo   simulated GPU cluster -> collection -> warehouse -> fleet summary
#   make test   lint + the whole test suite
# Both install what they need on a fresh Debian 12 machine with Python and pip: the system
# libraries WeasyPrint needs, kubectl (Debian's kubernetes-client) for the protocol tests, a C
# compiler (annex builds two small lineage parts on first use: collectors/lineage/graph.c and
# canonical.c), uv itself if missing, then the locked Python environment (uv sync --locked).

SHELL := /bin/bash
.DEFAULT_GOAL := help

APT_PACKAGES := libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 fonts-dejavu-core chromium chromium-driver qpdf poppler-utils gcc libc6-dev prometheus
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
UV := $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
export UV_PYTHON_DOWNLOADS ?= never
# Trust the system certificate store (corporate proxies add their CA there).
export UV_SYSTEM_CERTS ?= 1
# Compile bytecode at install: start-up stays fast where PYTHONDONTWRITEBYTECODE is set.
export UV_COMPILE_BYTECODE ?= 1
export DAGSTER_HOME ?= $(CURDIR)/.dagster_home

.PHONY: help setup system-deps uv probe-deps demo dev test lint format bench dictionary clean

help:
	@echo "make demo   run annex end to end on a simulated GPU cluster"
	@echo "make dev    start the Dagster UI on http://127.0.0.1:3000 (DAGSTER_HOME=.dagster_home)"
	@echo "make test   lint and run the tests"
	@echo "make bench  python -m bench.collect_scale --nodes 7500 (writes bench/RESULTS.md)"

system-deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	command -v kubectl >/dev/null || missing="$$missing kubernetes-client"; \
	if [ -n "$$missing" ]; then \
	  echo "installing system packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

uv:
	@command -v uv >/dev/null || python3 -m uv --version >/dev/null 2>&1 || { \
	  echo "installing uv"; \
	  python3 -m pip install -q --user uv 2>/dev/null || \
	  python3 -m pip install -q --user --break-system-packages uv; }

setup: system-deps uv
	@$(UV) sync --locked --inexact --quiet

# The probe suite's GPU stack (the `gpu` extra's torch and triton), installed beside the lock into
# .venv: `setup` syncs with --inexact so they survive, and `uv run` never removes extra packages.
# Where /opt/wheels exists (a CPU build of torch) it is used; uv does not read pip.conf. Without
# it PyPI's default torch build is installed: much bigger, but it runs the tests on CPU too.
# A no-op when the pinned versions are already installed.
PROBE_TORCH := 2.13.0
PROBE_TRITON := 3.9.0
probe-deps: setup
	@.venv/bin/python -c "import importlib.metadata as m, sys; \
	  ok = m.version('torch').split('+')[0] == '$(PROBE_TORCH)' and m.version('triton') == '$(PROBE_TRITON)'; \
	  m.version('numpy'); sys.exit(0 if ok else 1)" 2>/dev/null || { \
	  echo "installing torch $(PROBE_TORCH) and triton $(PROBE_TRITON) into .venv"; \
	  $(UV) pip install --python .venv/bin/python --quiet \
	    $$([ -d /opt/wheels ] && echo --find-links /opt/wheels) \
	    torch==$(PROBE_TORCH) triton==$(PROBE_TRITON) numpy; }

demo: setup
	$(UV) run annex demo

# The Dagster UI and daemon (schedules, sensors) on loopback; runs, pools and history persist in
# .dagster_home, where `annex demo` and `annex run` record their runs too.
dev: setup
	DAGSTER_HOME=$(CURDIR)/.dagster_home $(UV) run dagster dev -m pipelines.definitions -h 127.0.0.1 -p 3000

test: setup probe-deps
	$(UV) run ruff check .
	$(UV) run ruff format --check .
	$(UV) run pytest -m "not deploy"
	@# Dagster-on-Kubernetes packages (they pin kubernetes<37): the deploy tests, and the
	@# collector's tests again on that older client generation.
	$(UV) run --with-requirements deploy/requirements-k8s.txt pytest -m "deploy or not deploy" \
	  tests/pipelines/test_deploy.py tests/collectors/kubernetes/test_listing.py tests/integration/test_k8s_collect.py \
	  tests/integration/test_k8s_watch.py tests/integration/test_k8s_hostile.py

lint: setup
	$(UV) run ruff check .
	$(UV) run ruff format --check .

format: setup
	$(UV) run ruff check --fix .
	$(UV) run ruff format .

bench: setup probe-deps
	$(UV) run python -m bench.collect_scale --nodes 7500

dictionary: setup
	$(UV) run python -m warehouse.dictionary

clean:
	rm -rf .demo .pytest_cache .ruff_cache annex.duckdb annex.duckdb.wal annex.duckdb.unpublished annex.published.duckdb
