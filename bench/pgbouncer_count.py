"""Bench-only middleware (bench/pgbouncer_settings.py): counts each request's SQL statements,
and among them the claim statement's runs, by kind of request, in Redis (one hash, summed
over every gunicorn process): `<kind>:requests`, `<kind>:sql`, `<kind>:claim`."""
from __future__ import annotations

import redis
from django.conf import settings
from django.db import connection

KEY = f"{settings.CACHES['default'].get('KEY_PREFIX', 'dialtom')}:pgbench:statements"


def _kind(request) -> str:
    if request.path.startswith("/api/v1/next-item/"):
        return "next"
    if request.path.startswith("/api/v1/judgments/"):
        return "submit_next" if request.GET.get("next") in ("1", "true") else "submit"
    return "other"


def count_statements(get_response):
    client = redis.Redis.from_url(settings.REDIS_URL)

    def middleware(request):
        counts = {"sql": 0, "claim": 0}

        def wrapper(execute, sql, params, many, context):
            counts["sql"] += 1
            if "AS batch_name" in sql[:300]:  # the claim statement (verification/statements.py)
                counts["claim"] += 1
            return execute(sql, params, many, context)

        with connection.execute_wrapper(wrapper):
            response = get_response(request)
        kind = _kind(request)
        pipe = client.pipeline(transaction=False)
        pipe.hincrby(KEY, f"{kind}:requests", 1)
        pipe.hincrby(KEY, f"{kind}:sql", counts["sql"])
        pipe.hincrby(KEY, f"{kind}:claim", counts["claim"])
        pipe.execute()
        return response

    return middleware
