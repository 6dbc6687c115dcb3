"""The README's first command runs on SQLite with tasks in-process (settings.local), while the
rest of the suite runs on PostgreSQL: this test builds the whole demo on SQLite, in a
subprocess with nothing else set, so SQL that only PostgreSQL accepts fails here and not in
a newcomer's first minute (a derived table's column list once broke the release build).
Then `sqlite_walk.py` opens every staff page, answers as a verifier by form and API, and
checks the kept summaries against a rebuild, on the same SQLite file."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UNSET = ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CELERY_TASK_ALWAYS_EAGER",
         "CACHE_KEY_PREFIX", "CELERY_TASK_DEFAULT_QUEUE", "SECRET_KEY", "DEBUG")


def _run(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240)


def test_the_demo_builds_on_sqlite_through_its_release(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env.update(DJANGO_SETTINGS_MODULE="dialtom_site.settings.local",
               DATABASE_URL=f"sqlite:///{tmp_path / 'demo.sqlite3'}")

    migrated = _run(env, "manage.py", "migrate", "--no-input")
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    loaded = _run(env, "manage.py", "load_demo", "--json")
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    assert "failed" not in loaded.stderr + loaded.stdout, (loaded.stderr + loaded.stdout)[-3000:]

    summary = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert summary["judgments_simulated"] > 500
    assert summary["aggregation_run"] is not None
    assert summary["release"].startswith("v1")
    assert (tmp_path / "demo.sqlite3").stat().st_size > 0

    walked = _run(env, "tests/demo/sqlite_walk.py")
    report = json.loads(walked.stdout.strip().splitlines()[-1]) if walked.stdout.strip() else {}
    assert walked.returncode == 0 and report.get("failures") == [], report or walked.stderr[-3000:]
    assert report["steps"] > 50
    assert report["answered"] >= 2
