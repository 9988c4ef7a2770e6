# The two commands the README promises. Both set everything up on a fresh machine.
.PHONY: demo test lint unit integration setup clean bench

export DBT_SEND_ANONYMOUS_USAGE_STATS := false
export PYSPARK_PYTHON := $(CURDIR)/.venv/bin/python

setup:
	@bash scripts/bootstrap.sh

demo: setup
	.venv/bin/retrylake demo

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/python scripts/check_imports.py
	.venv/bin/sqlfluff lint --processes 0 models macros tests/dbt

unit: setup
	.venv/bin/pytest -m "not integration" tests/unit

integration: setup
	@bash scripts/install-chromium.sh
	@bash scripts/install-postgresql.sh
	.venv/bin/pytest -m integration tests/integration

# Two workers, one test module each at a time: each has its own SparkSession and lakehouse.
# A run keeps both cores busy (vmstat: 1% idle on average, 2026-11-27): more would not help.
test: lint
	@bash scripts/install-chromium.sh
	@bash scripts/install-postgresql.sh
	.venv/bin/pytest -n 2 --dist loadfile --durations=15

# A benchmark, not a test: prints one JSON object of figures. RECORDS=10000000 for the targets.
RECORDS ?= 1000000
bench: setup
	.venv/bin/retrylake bench --records $(RECORDS) --dir bench

clean:
	rm -rf lakehouse target logs
