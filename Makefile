# Two entry points do all set-up on a fresh machine (see README.md):
#   make demo   - shows the failure and the repair on an embedded SQLite store
#   make test   - installs, makes sure PostgreSQL, MariaDB and Redis answer, runs the tests
# litellm (a test dependency, imported by ADK's LiteLlm converter) fetches its model price
# map from the internet on import unless told to use the copy it ships; no target here needs
# the live one, and CI has no network beyond package registries.
export LITELLM_LOCAL_MODEL_COST_MAP ?= True
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo services test test-adk check-install-pin check-wheel lint docs docs-check bench profile web-check

# The older google-adk releases CI tests besides the newest: one constraints
# file each (constraints/adk-<version>.txt), one virtualenv each (.venv-adk-<version>).
ADK_VERSIONS := $(sort $(patsubst constraints/adk-%.txt,%,$(wildcard constraints/adk-*.txt)))

# $(call install_extra,EXTRA): .venv (created if absent) gets the project, editable, with EXTRA.
define install_extra
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[$(1)]'
	touch $@
endef

$(STAMP): pyproject.toml
	$(call install_extra,test)

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

# The suite on another google-adk release: make test-adk ADK=1.20.0
# (PYTEST_ARGS as for make test). Its virtualenv is built from pyproject.toml
# and constraints/adk-$(ADK).txt, and rebuilt when either changes.
test-adk: services
	@test -n "$(ADK)" || { echo "usage: make test-adk ADK=<version>, one of: $(ADK_VERSIONS)" >&2; exit 2; }
	@test -f constraints/adk-$(ADK).txt || { echo "no constraints/adk-$(ADK).txt; versions: $(ADK_VERSIONS)" >&2; exit 2; }
	$(MAKE) --no-print-directory .venv-adk-$(ADK)/.installed
	.venv-adk-$(ADK)/bin/python -m pytest $(PYTEST_ARGS); status=$$?; \
	  if [ $$status -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi; \
	  exit $$status

.venv-adk-%/.installed: pyproject.toml constraints/adk-%.txt
	test -x .venv-adk-$*/bin/python || $(PYTHON) -m venv .venv-adk-$*
	.venv-adk-$*/bin/python -m pip install --quiet --upgrade pip
	.venv-adk-$*/bin/python -m pip install --quiet -e '.[test]' -c constraints/adk-$*.txt
	.venv-adk-$*/bin/python -c "import sys; from google.adk import __version__ as v; \
	  sys.exit(0 if v == '$*' else f'installed google-adk {v}, expected $*')"
	touch $@

# README's install line keeps an existing google-adk pin (throwaway venv, real PyPI).
check-install-pin:
	bash scripts/check-install-keeps-pin.sh

# The first install: sdist and wheel built without warnings, twine check, and the
# wheel with no extras in a fresh virtualenv running demo, scan and show.
check-wheel: install
	BUILD_PYTHON=$(BIN)/python PYTHON=$(PYTHON) bash scripts/check-wheel.sh

# The documentation site in site/: docs/, README, CHANGELOG and benchmarks/RESULTS.md as pages,
# an API page per public name from the docstrings (mkdocstrings), the CLI's --help
# (scripts/mkdocs_hooks.py). --strict: a broken link, anchor or reference fails the build.
DOCS_STAMP := $(VENV)/.installed-docs

$(DOCS_STAMP): pyproject.toml
	$(call install_extra,docs)

# NO_MKDOCS_2_WARNING: mkdocs-material prints a banner about its end of life (May 2027) on every build.
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The built site in a real headless Chromium, 1,280 px wide: no code block cut off on any
# page, the quick start and the API pages' members rendered, every llms.txt link loads;
# screenshots in site-check/ to look at. Debian's `chromium` (scripts/ensure-chromium.sh
# installs or finds it), driven over its DevTools pipe by the standard library alone.
# Not part of CI: it needs Chromium there (see docs/development.md).
docs-check: docs
	CHROMIUM="$$(bash scripts/ensure-chromium.sh)" && export CHROMIUM && \
	  $(BIN)/python scripts/check_docs_site.py

bench: install services
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)

# `adk web` over the decorator in a real headless Chromium: Debian's `chromium`
# (scripts/ensure-chromium.sh installs or finds it), driven by Playwright from
# PyPI through its executable_path, so no browser is downloaded. Screenshots go
# to docs/images/. CI asserts the same through adk web's HTTP API
# (tests/integration/test_adk_web_http_api.py, part of make test).
BROWSER_STAMP := $(VENV)/.installed-browser

$(BROWSER_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,browser]'
	touch $(BROWSER_STAMP)

web-check: $(BROWSER_STAMP)
	CHROMIUM="$$(bash scripts/ensure-chromium.sh)" && export CHROMIUM && \
	  $(BIN)/python -m pytest tests/browser/check_adk_web.py $(PYTEST_ARGS)

# pyinstrument call trees of the paths behind the targets RESULTS.md reports missed.
profile: install
	$(BIN)/python benchmarks/profile_misses.py $(PROFILE_ARGS)
