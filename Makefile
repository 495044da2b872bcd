# The two commands: `make run` serves the dashboard, `make test` runs every check.
.PHONY: run test test-fast checks property lint format bench bench-tools venv

PORT ?= 8000
PY := .venv/bin/python

venv:
	@bin/bootstrap

run: venv
	@# Checks run with the tests; here they would only delay the first page.
	@$(PY) manage.py migrate --no-input --skip-checks -v 0
	@# The link carries the owner token (a 0600 file in the data folder): other accounts
	@# on this machine get 403. `manage.py dashboard_url` prints it again.
	@url=$$($(PY) manage.py dashboard_url --port $(PORT) --skip-checks) && \
		echo "branchboard: serving $$url (open this link; Ctrl-C stops it)"
	@echo "branchboard: importing your sessions behind the pages, newest first (the pages show how far)"
	@# The watcher imports everything first, then what changes; it says where it logs,
	@# its warnings come here too, the rest goes to the log.
	@$(PY) manage.py import_sessions --watch --no-progress & watcher=$$!; \
	trap 'kill $$watcher 2>/dev/null' EXIT INT TERM; \
	BRANCHBOARD_WORKERS=2 $(PY) -m gunicorn branchboard.wsgi --config deploy/gunicorn.conf.py --bind 127.0.0.1:$(PORT)

TEST_DATA = BRANCHBOARD_DATA_DIR=$${BRANCHBOARD_DATA_DIR:-$(CURDIR)/.cache/test-data}

# Lint, format, migrations, layer contracts and types: the habits that keep the code in shape.
checks: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) manage.py makemigrations --check --dry-run -v 0
	$(TEST_DATA) .venv/bin/lint-imports
	$(TEST_DATA) $(PY) -m mypy sessions_app

# In a random order (pytest-randomly prints the seed: "Using --randomly-seed=N"), so a test
# that leans on another's leftovers shows. PYTEST_ARGS="-p randomly --randomly-seed=N"
# repeats an order, PYTEST_ARGS="-p no:randomly" runs them in file order.
RANDOM_ORDER = -p randomly

test: checks
	$(TEST_DATA) $(PY) -m pytest $(RANDOM_ORDER) $(PYTEST_ARGS)

# Everything but the browser and real-CLI tests: the quick loop while working.
test-fast: checks
	$(TEST_DATA) $(PY) -m pytest $(RANDOM_ORDER) -m "not browser and not compat" $(PYTEST_ARGS)

# The long run of the stateful property tests, the index's and the hub's
# (BRANCHBOARD_PROPERTY_EXAMPLES examples).
property: venv
	$(TEST_DATA) BRANCHBOARD_PROPERTY_EXAMPLES=$${BRANCHBOARD_PROPERTY_EXAMPLES:-300} \
		BRANCHBOARD_PROPERTY_STEPS=$${BRANCHBOARD_PROPERTY_STEPS:-20} \
		$(PY) -m pytest tests/test_trust_machine.py tests/test_hub_machine.py $(PYTEST_ARGS)

format: venv
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

# Every bench of issue 12's table, then one summary table (15-25 minutes on 2 cores);
# `make bench BENCH_ARGS=--quick` runs them at small sizes in 3-5 minutes.
bench: venv bench-tools
	$(PY) bench/run_all.py $(BENCH_ARGS)

# The nearest peer, run beside the whole import on the same corpus (a Go binary from PyPI);
# the bench says so and goes on without it when it cannot be installed.
bench-tools:
	@test -x .cache/bench-tools/bin/agentsview || { python3 -m venv .cache/bench-tools && \
		.cache/bench-tools/bin/pip install --quiet agentsview==0.46.1; } || \
		echo "bench: agentsview could not be installed; the whole import is measured alone"
