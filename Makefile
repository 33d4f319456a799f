# Two entry points a new user needs: `make serve` and `make test`. Each sets up .venv first.
PYTHON ?= python3
VENV := .venv
HOST ?= 127.0.0.1
PORT ?= 8000
DATA_DIR ?= ./data

.PHONY: setup setup-test serve test lint

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip

setup: $(VENV)/bin/python
	$(VENV)/bin/pip install -q -e .

setup-test: $(VENV)/bin/python
	$(VENV)/bin/pip install -q -e '.[dev]'

serve: setup
	$(VENV)/bin/xstreams serve --host $(HOST) --port $(PORT) --data-dir $(DATA_DIR)

test: setup-test
	$(VENV)/bin/pytest

lint: setup-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
