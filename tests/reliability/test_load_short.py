"""The load test, short form (CI): 100 simulated verifiers doing next/submit over HTTP
against gunicorn + PostgreSQL for ~20 s, then every invariant is checked in the database:
no item above k, no (item, verifier) twice, every acknowledged submission stored exactly
once (and retries of a submission answered with the same judgment), no server error.
The long form is bench/load/run.py (figures in bench/results/reliability.md).
"""
import json

import pytest
from django.core.management import get_commands

from bench.load.driver import run_load
from bench.load.fixture import check_invariants, load_fixture

from .helpers import Gunicorn, ensure_domains, subprocess_env

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif("create_people" not in get_commands(), reason="needs the verification API (issue 3)"),
]

VERIFIERS = 100
SECONDS = 20


def test_100_verifiers_for_20_seconds_lose_nothing():
    from django.db import connection

    ensure_domains()
    tokens = load_fixture(batch="load-ci", n_verifiers=VERIFIERS, n_items=240, overlap=3)
    env = subprocess_env(DJANGO_SETTINGS_MODULE="dialtom_site.settings.test", CONN_MAX_AGE="60")
    with Gunicorn(env=env, workers=2, threads=8) as server:
        stats = run_load(base_url=server.url, tokens=tokens, batch="load-ci", seconds=SECONDS, max_requests=20_000)
    connection.close()  # a fresh connection sees everything gunicorn committed
    summary = stats.summary()
    invariants = check_invariants(batch="load-ci", acknowledged=stats.acknowledged,
                                  queue_exhausted=stats.finished_verifiers == VERIFIERS)
    print("\n" + json.dumps({**summary, "invariants": invariants}))
    assert not stats.errors, stats.errors[:10]
    assert not invariants["violations"], invariants["violations"]
    assert summary["acknowledged_submissions"] > VERIFIERS, "the load was too light to prove anything"
    assert summary["retries_different_judgment"] == 0
    assert all(s in ("200", "201", "204") for kind in summary["statuses"].values() for s in kind)
