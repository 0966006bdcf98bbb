# propdata: `make run` serves the demo, `make test` runs every test. `make help` lists all.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
DB      ?= var/propdata.db
HOST    ?= 127.0.0.1
PORT    ?= 8000
export PROPDATA_DATABASE_URL ?= $(DB)

BENCH_ARGS ?= --properties 1000000 --duration 20 --connections 16 --workers 2 --scaleout

.PHONY: help run test test-fast check audit format fuzz lock schema soak bench bench-smoke clean clean-bench valuation-report

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "} {printf "  %-17s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml requirements.lock clients/python/pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	$(BIN)/pip install --quiet --no-deps -e clients/python
	touch $(STAMP)

run: $(STAMP) ## Build the demo data if absent, print a demo key, its exports and a curl line, serve on HOST:PORT (127.0.0.1:8000)
	$(BIN)/propdata data demo --if-missing
	@key=$$($(BIN)/propdata keys create --plan developer --name demo 2>/dev/null | tail -n 1); \
	echo ""; \
	echo "A demo key (Developer plan), shown once. Paste these two lines into your shell:"; \
	echo "  export PROPDATA_API_KEY=$$key"; \
	echo "  export PROPDATA_BASE_URL=http://$(HOST):$(PORT)"; \
	echo "Then try:"; \
	echo '  curl -s -H "Authorization: Bearer $$PROPDATA_API_KEY" "$$PROPDATA_BASE_URL/v1/properties/lookup?streetAddress=1616%20Pinecrest%20Rd&city=Durham&state=NC"'; \
	echo "Docs: http://$(HOST):$(PORT)/docs"; \
	echo "Portal (sign up, keys, usage): http://$(HOST):$(PORT)/"; \
	echo ""
	$(BIN)/propdata serve --host $(HOST) --port $(PORT)

test: $(STAMP) ## Run the whole test suite (real SQLite; PostgreSQL/Redis where present; the TypeScript SDK where node is; the alert rules' tests)
	$(BIN)/pytest -q -n 2 --dist loadfile
	promtool test rules deploy/prometheus/alerts.test.yml
	PROPDATA_PYTHON=$(abspath $(BIN))/python clients/typescript/run-tests.sh

test-fast: $(STAMP) ## The inner loop: the embedded store's tests not marked slow (about 2 minutes; make test runs all)
	PROPDATA_TEST_BACKENDS=embedded $(BIN)/pytest -q -n 2 --dist loadfile -m "not slow"

soak: $(STAMP) ## 5 minutes past every key's limit, with PostgreSQL and Redis faults; table into docs/reliability.md
	$(BIN)/python bench/soak.py --seconds 300 --faults --write-docs

fuzz: $(STAMP) ## Hypothesis on every import reader and schemathesis on the API at 10x make test's cases (minutes)
	PROPDATA_FUZZ_EXAMPLES=3000 PROPDATA_SCHEMATHESIS_EXAMPLES=400 \
		$(BIN)/pytest -q -p no:randomly tests/ingest/test_fuzz.py tests/test_openapi.py

check: $(STAMP) ## Formatting, lint, types, the import rules (docs/architecture.md) and schema.sql (needs PostgreSQL)
	$(BIN)/ruff format --check src tests bench tools clients/python
	$(BIN)/ruff check src tests bench tools clients/python
	$(BIN)/python clients/python/tools/unasync.py --check
	$(BIN)/mypy
	$(BIN)/mypy --config-file tools/mypy-tests.ini
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m propdata.migrations.layout --check

schema: $(STAMP) ## Write src/propdata/migrations/schema.sql: the layout fresh stores get from every step (needs PostgreSQL)
	$(BIN)/python -m propdata.migrations.layout

audit: $(STAMP) ## pip-audit every pinned package; fails unless each one was audited (needs pypi.org)
	@# --strict: a package the service could not look up fails the audit, never passes unchecked.
	$(BIN)/pip-audit --strict --progress-spinner off -r requirements.lock || { \
		echo "make audit: FAILED: not every package was audited (see above), so nothing is known"; \
		echo "about their vulnerabilities. pip-audit needs pypi.org's JSON API."; exit 1; }

lock: ## Pin every dependency, with hashes, in requirements.lock (after changing pyproject.toml)
	$(BIN)/pip-compile --quiet --strip-extras --generate-hashes --allow-unsafe \
		--no-emit-index-url --no-emit-find-links --extra dev -o requirements.lock pyproject.toml

format: $(STAMP) ## Format the code
	$(BIN)/ruff format src tests bench tools clients/python
	$(BIN)/ruff check --fix src tests bench tools clients/python
	$(BIN)/python clients/python/tools/unasync.py

valuation-report: $(STAMP) ## Write docs/valuation.md: the valuation model's accuracy on held-out real sales
	$(BIN)/python tools/valuation_report.py

bench: $(STAMP) ## Benchmark the API at 1,000,000 properties with wrk; table into docs/performance.md
	@command -v wrk >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq wrk; } || { echo "wrk is missing: apt-get install wrk"; exit 1; }
	$(BIN)/python bench/run.py $(BENCH_ARGS) --write-docs

bench-smoke: $(STAMP) ## The benchmark's seconds-long version (what make test runs): no figures kept
	$(BIN)/python bench/run.py --smoke

clean: ## Remove the virtualenv and local data
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache

clean-bench: ## Remove the benchmark's stores (bench/.data, its datasette env, its PostgreSQL schemas)
	rm -rf bench/.data bench/.datasette-venv
	-psql -h 127.0.0.1 -U postgres -d test -Atc "SELECT 'DROP SCHEMA ' || nspname || ' CASCADE;' \
		FROM pg_namespace WHERE nspname LIKE 'bench\_p%' OR nspname = 'bench_events_log'" \
		| psql -h 127.0.0.1 -U postgres -d test -q
