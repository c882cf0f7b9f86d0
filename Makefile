# showdown: every target creates and uses the project virtual environment by itself.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
BENCH_STAMP := $(VENV)/.bench-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
PYTEST_ARGS ?=
# Test workers (pytest-xdist): 3 measured fastest on 2 cores (the long tests wait on
# subprocesses and brokers); `make test PYTEST_WORKERS=0` runs serially in one process.
PYTEST_WORKERS ?= 3

.PHONY: help venv demo test lint bench clean

help:
	@echo "make demo   - set everything up and run the demo on embedded defaults"
	@echo "make test   - set up and run the test suite (uses Mosquitto/PostgreSQL when reachable)"
	@echo "make lint   - ruff, mypy --strict on every package, the import contracts"
	@echo "make bench  - run the benchmarks in bench/ and print their figures"

$(STAMP): pyproject.toml
	@$(PY) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "showdown needs Python 3.11 or newer")'
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,lint,reports]'
	@rm -f $(VENV)/.installed-*
	@touch $@

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,lint,reports,bench]'
	@rm -f $(VENV)/.bench-*
	@touch $@

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/showdown demo

test: $(STAMP)
	@$(BIN)/python -m tests.services
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy game wire runtime controller drivers simulators leaderboard
	$(BIN)/lint-imports --no-cache --no-logo

bench: $(BENCH_STAMP)
	$(BIN)/python bench/evaluator.py
	$(BIN)/python bench/par_sheet.py
	$(BIN)/python bench/fuzz_codecs.py
	$(BIN)/python bench/recall.py
	$(BIN)/python bench/dispute_replay.py
	$(BIN)/python bench/report_scores.py
	$(BIN)/python bench/floor.py
	$(BIN)/python bench/cli.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
