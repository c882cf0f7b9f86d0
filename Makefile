# showdown: every target creates and uses the project virtual environment by itself.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# What each target installs (pyproject's extras): the demo only `demo`; tests and lint every
# extra (`all`) and their tools; bench also the other evaluators.
# The example vendor adapter (examples/textline-shoe) is installed beside showdown, editable:
# `showdown devices check --driver text-line` works in a developer's venv, and its tests run.
EXAMPLE := examples/textline-shoe
CKSUM := $(shell cat pyproject.toml $(EXAMPLE)/pyproject.toml | cksum | cut -d' ' -f1)
STAMP := $(VENV)/.installed-$(CKSUM)
DEMO_STAMP := $(VENV)/.demo-$(CKSUM)
BENCH_STAMP := $(VENV)/.bench-$(CKSUM)
# The browser tests' npm packages (axe-core for the console's accessibility check), pinned by
# tests/browser/package-lock.json; npm ci writes the stamp. Without npm the check skips.
BROWSER_DEPS := tests/browser/node_modules/.package-lock.json
PYTEST_ARGS ?=
# Bytecode is cached (__pycache__, ignored by git) even where the environment says not to
# (PYTHONDONTWRITEBYTECODE): without it every test worker and every command a test starts
# compiles the project again, and pytest rewrites every test module's asserts again, about a
# minute of CPU per `make test` on 2 cores (docs/testing.md).
unexport PYTHONDONTWRITEBYTECODE
# Test workers (pytest-xdist): 3 measured fastest on 2 cores (the long tests wait on
# subprocesses and brokers); `make test PYTEST_WORKERS=0` runs serially in one process.
PYTEST_WORKERS ?= 3
# Two tiers (docs/testing.md): `make test` everything but the soak tests, on the light
# Hypothesis profile; `make test-soak` the soak tests (long whole-process runs) and every
# Hypothesis test again (marked `property`), on the thorough profile.

.PHONY: help venv demo test test-soak lint bench wheel clean

help:
	@echo "make demo   - set everything up and run the demo on embedded defaults"
	@echo "make test   - set up and run the test suite (uses Mosquitto/PostgreSQL when reachable)"
	@echo "make test-soak - the long whole-process tests make test leaves out, and every property test thoroughly"
	@echo "make lint   - ruff, mypy --strict on every package, the import contracts"
	@echo "make bench  - run the benchmarks in bench/ and print their figures"
	@echo "make wheel  - build the wheel into dist/ (pip install it; extras: README.md)"

define new_venv
	@$(PY) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "showdown needs Python 3.11 or newer")'
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
endef

$(STAMP): pyproject.toml $(EXAMPLE)/pyproject.toml
	@sh tools/build-deps.sh
	$(new_venv)
	$(BIN)/python -m pip install --quiet -e '.[all,test,lint]'
	$(BIN)/python -m pip install --quiet --no-deps -e $(EXAMPLE)
	@rm -f $(VENV)/.installed-* $(VENV)/.demo-*
	@touch $@ $(DEMO_STAMP)

# The demo's extra alone (a venv made by `make test` has it already: its stamp is touched).
$(DEMO_STAMP): pyproject.toml
	$(new_venv)
	$(BIN)/python -m pip install --quiet -e '.[demo]'
	@rm -f $(VENV)/.demo-*
	@touch $@

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[all,test,lint,bench]'
	@rm -f $(VENV)/.bench-*
	@touch $@

$(BROWSER_DEPS): tests/browser/package.json tests/browser/package-lock.json
	@if command -v npm >/dev/null; then npm ci --prefix tests/browser --no-audit --no-fund --silent; \
	else echo "npm is missing (apt-get install nodejs npm): the accessibility test will skip"; fi

venv: $(STAMP) $(BROWSER_DEPS)

demo: $(DEMO_STAMP)
	$(BIN)/showdown demo

test: $(STAMP) $(BROWSER_DEPS)
	@$(BIN)/python -m tests.services
	HYPOTHESIS_PROFILE=$(or $(HYPOTHESIS_PROFILE),light) $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup \
		-m "not soak" $(PYTEST_ARGS)

test-soak: $(STAMP) $(BROWSER_DEPS)
	@$(BIN)/python -m tests.services
	HYPOTHESIS_PROFILE=$(or $(HYPOTHESIS_PROFILE),thorough) $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup \
		-m "soak or property" $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy game wire runtime controller drivers simulators adapters leaderboard deploy cli floor \
		$(EXAMPLE)/src/showdown_textline_shoe
	$(BIN)/lint-imports --no-cache --no-logo

bench: $(BENCH_STAMP)
	$(BIN)/python bench/evaluator.py
	$(BIN)/python bench/par_sheet.py
	$(BIN)/python bench/fuzz_codecs.py
	$(BIN)/python bench/recall.py
	$(BIN)/python bench/dispute_replay.py
	$(BIN)/python bench/report_scores.py
	$(BIN)/python bench/floor_rate.py
	$(BIN)/python bench/hand_parts.py
	$(BIN)/python bench/cli_calls.py
	$(BIN)/python bench/install_size.py
	$(BIN)/python bench/textline_shoe.py
	$(BIN)/python bench/quasar_sweep.py
	$(BIN)/python bench/quasar_corruption.py
	$(BIN)/python bench/id_readers.py
	$(BIN)/python bench/devices_kit.py

# The wheel a table PC or the central server installs (docs/operations/deployment.md).
wheel: $(STAMP)
	rm -rf build
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir dist .
	@ls dist/showdown-*.whl

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info
