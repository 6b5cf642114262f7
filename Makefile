# Two entry points do all set-up on a fresh machine (see README.md):
#   make demo   - shows the failure and the repair on an embedded SQLite store
#   make test   - installs, makes sure PostgreSQL and Redis answer, runs the tests
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo services test lint bench profile

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/adk-pairing demo

services:
	bash scripts/ensure-services.sh

lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

# pytest exits 5 when it collected no test: that is a failure here, not a pass.
test: install services
	$(BIN)/python -m pytest $(PYTEST_ARGS); status=$$?; \
	  if [ $$status -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi; \
	  exit $$status

bench: install services
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)

# pyinstrument call trees of the paths behind the targets RESULTS.md reports missed.
profile: install
	$(BIN)/python benchmarks/profile_misses.py $(PROFILE_ARGS)
