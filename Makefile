# Two entry points a new user needs: `make serve` and `make test`. Each sets up .venv first.
PYTHON ?= python3
VENV := .venv
HOST ?= 127.0.0.1
PORT ?= 8000
DATA_DIR ?= ./data

.PHONY: setup setup-test setup-pipeline java serve test test-fast lint screenshots docs docs-serve

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip

setup: $(VENV)/bin/python
	$(VENV)/bin/pip install -q -e .

setup-test: $(VENV)/bin/python java
	$(VENV)/bin/pip install -q -e '.[dev]'

# The Spark pipeline (xstreams archive / report) and its tests need PySpark and Java 17+.
setup-pipeline: $(VENV)/bin/python java
	$(VENV)/bin/pip install -q -e '.[pipeline]'

# Java 17 from Debian's packages when no Java 17+ is on PATH (sudo when not root).
java:
	@v=$$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1); \
	if [ -z "$$v" ] || [ "$$v" -lt 17 ]; then \
	  s=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$s apt-get update -qq && $$s apt-get install -y -qq openjdk-17-jre-headless; \
	fi

serve: setup
	$(VENV)/bin/xstreams serve --host $(HOST) --port $(PORT) --data-dir $(DATA_DIR)

# Two workers (the tests wait on servers, sockets and timeouts more than they compute), a
# file's tests on one worker; then the Spark tests in a process of their own, one Spark
# session beside nothing else.
TEST_WORKERS ?= 2
test: setup-test
	$(VENV)/bin/pytest -n $(TEST_WORKERS) --dist loadfile -m "not spark" --durations=30
	$(VENV)/bin/pytest -m spark

# The engine and protocol tests, the differential suite in process (redis-server as the
# reference, no HTTP): no browser, Spark, PostgreSQL, server subprocess or slow runs.
FAST_TESTS := tests/engine tests/differential tests/api/test_hostile_input.py \
	tests/api/commands/test_limits.py tests/test_layers.py
test-fast: setup-test
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS) $(FAST_TESTS) -m "not (slow or browser or spark or postgres or server)"

lint: setup-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/python -m tests.support.lua_lint

# The README's screenshots of the dashboard (docs/screenshots/*.png), taken with Debian's
# Chromium (apt-get install -y chromium) against a service of their own.
screenshots: setup-test
	$(VENV)/bin/python -m tests.web.screenshots --out docs/screenshots

# The documentation site (mkdocs.yml, pages in docs/): built strictly into site/, or served with
# live reload on 127.0.0.1:8001 (8000 is the service's).
docs: setup-test
	$(VENV)/bin/mkdocs build --strict

docs-serve: setup-test
	$(VENV)/bin/mkdocs serve --strict --dev-addr 127.0.0.1:8001
