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
    assert set(services) == {"web", "worker", "beat", "db", "redis"}
    assert "gunicorn dialtom_site.wsgi:application" in services["web"]["command"]
    assert services["worker"]["command"].startswith("celery -A dialtom_site worker")
    assert services["beat"]["command"].startswith("celery -A dialtom_site beat")
    app_env = compose["x-app"]["environment"]
    assert app_env["DATABASE_URL"].startswith("postgres://") and "@db:5432/" in app_env["DATABASE_URL"]
    assert app_env["REDIS_URL"] == "redis://redis:6379/0"
    for name in ("web", "worker", "beat"):
        assert services[name]["depends_on"]["db"]["condition"] == "service_healthy"


def test_compose_restarts_a_worker_or_beat_that_dies():
    """Issue 20, break 3: a worker that exited on a Redis outage stayed down until a person
    restarted it. The worker now rides the outage out (tests/reliability/
    test_broker_outage_worker.py); should it die anyway, Docker starts it again."""
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    for name in ("web", "worker", "beat", "db", "redis"):
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
