# The two commands: `make run` serves the dashboard, `make test` runs every check.
.PHONY: run test lint format bench venv

PORT ?= 8000
PY := .venv/bin/python

venv:
	@bin/bootstrap

run: venv
	@$(PY) manage.py migrate --no-input -v 0
	@$(PY) manage.py import_sessions
	@echo "branchboard: serving http://127.0.0.1:$(PORT)/ (Ctrl-C stops it)"
	@# The watcher says where it logs; its warnings come here too, the rest goes to the log.
	@$(PY) manage.py import_sessions --watch --no-progress & watcher=$$!; \
	trap 'kill $$watcher 2>/dev/null' EXIT INT TERM; \
	BRANCHBOARD_WORKERS=2 $(PY) -m gunicorn branchboard.wsgi --config deploy/gunicorn.conf.py --bind 127.0.0.1:$(PORT)

test: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) manage.py makemigrations --check --dry-run -v 0
	BRANCHBOARD_DATA_DIR=$${BRANCHBOARD_DATA_DIR:-$(CURDIR)/.cache/test-data} $(PY) -m pytest $(PYTEST_ARGS)

format: venv
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

bench: venv
	$(PY) bench/bench_import.py
