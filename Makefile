# Two entry points: `make serve` (build the site and serve it locally) and `make test` (everything).
# `make test-fast` is the tier for every edit: lint and the tests that build no site, start no
# Chromium and boot no Pyodide.
# Both install what they need on a fresh machine: a virtualenv from requirements.txt, the npm
# runtime from package-lock.json and, for the browser tests, Debian's chromium.
VENV := .venv
PY := $(VENV)/bin/python
export NO_MKDOCS_2_WARNING := 1

.PHONY: serve build test test-fast test-random lint deps bench

serve: deps
	$(PY) -m mkdocs serve --strict --dev-addr 127.0.0.1:8000

build: deps
	$(PY) -m mkdocs build --strict

test: deps /usr/bin/chromium lint
	$(PY) -m pytest

test-fast: deps lint
	VLLM_SETTINGS_TIER=fast $(PY) -m pytest -m "not slow" -q

# The property tests with fresh random draws (make test draws the same ones every run).
test-random: deps
	HYPOTHESIS_PROFILE=random $(PY) -m pytest tests/test_properties.py

lint: deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m calc schema --check
	$(VENV)/bin/mypy --strict -p calc -p hooks

bench: deps /usr/bin/chromium
	$(PY) scripts/bench.py

deps: $(VENV)/.installed node_modules/.installed

$(VENV)/.installed: requirements.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

/usr/bin/chromium:
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
