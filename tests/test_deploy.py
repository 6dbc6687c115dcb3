"""The deployment files are not run here (no Docker engine): check they say what they must."""
import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_compose_runs_web_worker_beat_postgres_and_redis():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert set(services) == {"web", "worker", "beat", "pgbouncer", "db", "redis"}
    assert "gunicorn dialtom_site.wsgi:application" in services["web"]["command"]
    assert services["worker"]["command"].startswith("celery -A dialtom_site worker")
    assert services["beat"]["command"].startswith("celery -A dialtom_site beat")
    app_env = compose["x-app"]["environment"]
    assert app_env["DATABASE_URL"].startswith("postgres://") and "@pgbouncer:6432/" in app_env["DATABASE_URL"]
    assert app_env["REDIS_URL"] == "redis://redis:6379/0"
    for name in ("web", "worker", "beat"):
        assert services[name]["depends_on"]["db"]["condition"] == "service_healthy"


def test_compose_restarts_a_worker_or_beat_that_dies():
    """Issue 20, break 3: a worker that exited on a Redis outage stayed down until a person
    restarted it. The worker now rides the outage out (tests/reliability/
    test_broker_outage_worker.py); should it die anyway, Docker starts it again."""
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    for name in ("web", "worker", "beat", "pgbouncer", "db", "redis"):
        assert services[name].get("restart") in ("unless-stopped", "always"), name


def test_dockerfile_installs_from_the_pinned_files_that_exist():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "requirements/base.txt -c requirements/constraints.txt" in dockerfile
    assert (ROOT / "requirements" / "base.txt").exists() and (ROOT / "requirements" / "constraints.txt").exists()
    assert "npm ci" in dockerfile and (ROOT / "package-lock.json").exists()


def test_example_env_is_refused_until_the_secret_is_replaced():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "dialtom_site.settings.production"}
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line and not line.startswith("#"):
            key, value = line.split("=", 1)
            env[key] = value
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "SECRET_KEY must be set to a real secret" in result.stderr


# --- issue 23, part 5: PgBouncer between the web processes and PostgreSQL ---------------------


def _pgbouncer_ini() -> dict[str, dict[str, str]]:
    import configparser

    parser = configparser.ConfigParser(delimiters=("=",), comment_prefixes=(";", "#"), interpolation=None)
    parser.read_string((ROOT / "deploy" / "pgbouncer" / "pgbouncer.ini").read_text())
    return {section: dict(parser[section]) for section in parser.sections()}


def test_compose_puts_pgbouncer_between_the_web_processes_and_postgres():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    image = services["pgbouncer"]["image"]
    name, _, tag = image.partition(":")
    assert name == "edoburu/pgbouncer" and tag.startswith("v1.")
    assert int(tag[3:].split(".")[0]) >= 21, "max_prepared_statements needs PgBouncer 1.21"
    assert "./deploy/pgbouncer/pgbouncer.ini:/etc/pgbouncer/pgbouncer.ini:ro" in services["pgbouncer"]["volumes"]
    web = services["web"]["environment"]
    assert "@pgbouncer:6432/dialtom" in web["DATABASE_URL"] and web["DATABASE_URL"].endswith("/dialtom")
    assert web["DATABASE_POOLING"] == "transaction"
    assert "$$MIGRATE_DATABASE_URL" in services["web"]["command"] and "@db:5432/" in web["MIGRATE_DATABASE_URL"]
    app = compose["x-app"]["environment"]  # worker and beat
    assert app["DATABASE_URL"].endswith("@pgbouncer:6432/dialtom_session") and app["DATABASE_POOLING"] == "session"
    for name in ("web", "worker", "beat"):
        assert "pgbouncer" in services[name]["depends_on"]

    ini = _pgbouncer_ini()
    assert "pool_mode=transaction" in ini["databases"]["dialtom"]
    assert "force_generic_plan" in ini["databases"]["dialtom"]
    assert "pool_mode=session" in ini["databases"]["dialtom_session"]
    assert int(ini["pgbouncer"]["max_prepared_statements"]) >= 100
    assert "host=db port=5432" in ini["databases"]["dialtom"]


def _settings(env: dict) -> subprocess.CompletedProcess:
    code = "from django.conf import settings as s; d = s.DATABASES['default']; print(d['ENGINE'], d.get('DISABLE_SERVER_SIDE_CURSORS', False), d['CONN_MAX_AGE'], d.get('POOLING'))"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "dialtom_site.settings.test", **env}
    env.pop("CONN_MAX_AGE", None)
    return subprocess.run([sys.executable, "-c", f"import django; django.setup(); {code}"], cwd=ROOT, env=env,
                          capture_output=True, text=True)


def test_database_pooling_transaction_sets_what_django_needs_and_refuses_anything_else():
    transaction = _settings({"DATABASE_POOLING": "transaction"})
    assert transaction.returncode == 0, transaction.stderr
    assert transaction.stdout.split() == ["dialtom_site.db", "True", "600", "transaction"]
    session = _settings({"DATABASE_POOLING": "session"})
    assert session.stdout.split() == ["dialtom_site.db", "False", "0", "session"]
    wrong = _settings({"DATABASE_POOLING": "statement"})
    assert wrong.returncode != 0 and "DATABASE_POOLING='statement' is not one of session, transaction" in wrong.stderr


def test_the_plan_cache_mode_is_one_of_postgresqls_three():
    code = "from django.conf import settings as s; print(s.DATABASES['default']['PLAN_CACHE_MODE'])"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "dialtom_site.settings.test"}
    default = subprocess.run([sys.executable, "-c", f"import django; django.setup(); {code}"], cwd=ROOT,
                             env={k: v for k, v in env.items() if k != "DIALTOM_PLAN_CACHE_MODE"}, capture_output=True, text=True)
    assert default.stdout.strip() == "force_generic_plan", default.stderr
    wrong = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT,
                           env={**env, "DIALTOM_PLAN_CACHE_MODE": "generic; DROP TABLE x"}, capture_output=True, text=True)
    assert wrong.returncode != 0 and "DIALTOM_PLAN_CACHE_MODE" in wrong.stderr
