# DialToM Studio: `make demo` runs the app on a demo data set; `make test` runs every test.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install demo test test-fast services chromium tex bench screenshots lint clean

install: $(VENV)/.installed node_modules/.installed

$(VENV)/.installed: requirements/base.txt requirements/test.txt requirements/constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements/test.txt -c requirements/constraints.txt
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

services:
	scripts/ensure-services.sh

chromium:
	scripts/ensure-chromium.sh

tex:
	scripts/ensure-tex.sh

# The demo: SQLite and in-process tasks, nothing else needed. Log in with the accounts it prints.
demo: install
	$(BIN)/python manage.py migrate --no-input
	$(BIN)/python manage.py load_demo --url http://$(HOST):$(PORT)/
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

# The whole suite against real PostgreSQL and Redis, browser tests in headless Chromium.
test: install services chromium tex
	$(BIN)/python manage.py makemigrations --check --dry-run --settings=dialtom_site.settings.test
	$(BIN)/python -m pytest -n 2 --dist worksteal --durations=20

test-fast: install services
	$(BIN)/python -m pytest -m "not e2e"

# Re-take the README's screenshots (docs/img/) from the browser tests.
screenshots: install services chromium
	DIALTOM_UPDATE_SCREENSHOTS=1 $(BIN)/python -m pytest tests/e2e -q

lint: install
	$(BIN)/ruff check --select F,E9 --ignore F403,F405 .

bench: install services
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) node_modules staticfiles demo.sqlite3
