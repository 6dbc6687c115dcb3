"""PostgreSQL down under a real server (gunicorn, production settings): the API answers a
JSON 503 with Retry-After, a page the styled 503 -- never an HTML 500 (issue 20, break 5).

The shared PostgreSQL is never stopped: this server's DATABASE_URL points at a port nothing
listens on, which is what the app sees while PostgreSQL restarts. The dropped-connections
case (pg_terminate_backend) is test_db_faults.py.
"""
import http.client
import json

import pytest

from tests.security.test_deploy import static_root  # noqa: F401 - a fixture: the manifest production renders pages with

from .helpers import Gunicorn, free_port, production_env


def _get(port: int, path: str, **headers) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers={"Host": "studio.example.org", "X-Forwarded-Proto": "https", **headers})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, body


@pytest.mark.django_db
def test_a_database_outage_is_a_503_with_retry_after(static_root):  # noqa: F811
    env = production_env(DATABASE_URL=f"postgres://postgres@127.0.0.1:{free_port()}/nothing", CONN_MAX_AGE="0",
                         STATIC_ROOT=str(static_root))
    with Gunicorn(env=env, workers=1, threads=2) as server:
        for path in ("/api/v1/progress/", "/api/v1/next-item/?batch=b", "/api/v1/releases/"):
            status, headers, body = _get(server.port, path, Authorization="Token 0123456789abcdef0123456789abcdef01234567")
            assert status == 503, (path, status, body[:300])
            assert headers["content-type"] == "application/json" and "database" in json.loads(body)["detail"]
            assert int(headers["retry-after"]) > 0 and headers["cache-control"] == "no-store"
        status, headers, body = _get(server.port, "/", Cookie="__Host-sessionid=abcdefghijklmnopqrstuvwxyz012345")
        assert status == 503 and int(headers["retry-after"]) > 0
        assert headers["content-type"].startswith("text/html") and b"unavailable for a moment" in body  # the styled page, or its plain fallback
