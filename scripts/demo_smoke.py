"""Smoke run of a served demo: log in as each role, open its home page and one item.

    .venv/bin/python scripts/demo_smoke.py http://127.0.0.1:8013

Used by `scripts/demo-smoke.sh` (which starts `make demo` on a clean clone) and so by
`.ci/run`. Needs only the standard library and `requests` (in the virtualenv). Exits 1
with one line per failed step.
"""
from __future__ import annotations

import re
import sys
import time

import requests

PASSWORD = "dialtom-demo"


class StepFailed(Exception):
    pass


def _get(session: requests.Session, url: str, *, expect: str = "") -> requests.Response:
    response = session.get(url, timeout=60)
    if response.status_code != 200:
        raise StepFailed(f"GET {url}: HTTP {response.status_code}: {response.text[:300]!r}")
    if expect and expect not in response.text:
        raise StepFailed(f"GET {url}: the page does not say {expect!r}")
    return response


def _post(session: requests.Session, url: str, data: dict, *, referer: str) -> requests.Response:
    data = {"csrfmiddlewaretoken": session.cookies.get("csrftoken", ""), **data}
    response = session.post(url, data=data, headers={"Referer": referer}, timeout=60)
    if response.status_code != 200:
        raise StepFailed(f"POST {url}: HTTP {response.status_code}")
    return response


def _first_link(html: str, pattern: str, what: str) -> str:
    match = re.search(pattern, html)
    if match is None:
        raise StepFailed(f"no {what} to open")
    return match.group(1)


def login(base: str, username: str) -> tuple[requests.Session, requests.Response]:
    session = requests.Session()
    _get(session, f"{base}/accounts/login/")
    home = _post(session, f"{base}/accounts/login/", {"username": username, "password": PASSWORD},
                 referer=f"{base}/accounts/login/")
    if "/accounts/login/" in home.url:
        raise StepFailed(f"{username} cannot log in with the demo password")
    return session, home


def admin(base: str) -> str:
    session, home = login(base, "admin")
    _get(session, f"{base}/dashboard/", expect="esc-b01")
    items = _get(session, f"{base}/review/items/").text
    item = _first_link(items, r'href="(/review/items/[^"/]+/)"', "item on /review/items/")
    _get(session, base + item)
    _get(session, f"{base}/review/verifiers/")
    return f"admin: {home.url} , /dashboard/, {item}"


def verifier(base: str) -> str:
    session, home = login(base, "verifier")
    batches = _get(session, f"{base}/verify/").text
    batch = _first_link(batches, r'href="(/verify/[a-z0-9-]+/)"', "batch on /verify/")
    page = _get(session, base + batch).text
    if 'name="choice"' not in page and "guideline" not in page.lower():
        raise StepFailed(f"{batch}: neither an item nor the guidelines")
    return f"verifier: {home.url} , {batch}"


def crowd(base: str) -> str:
    session, home = login(base, "crowd")
    queue = _get(session, f"{base}/annotate/").text
    claim = _first_link(queue, r'action="(/annotate/sets/[^"]+/next/)"', "reference set to claim on /annotate/")
    work = _post(session, base + claim, {}, referer=f"{base}/annotate/")
    if "/annotate/work/" not in work.url:
        raise StepFailed(f"claiming {claim} did not open a context to write for (landed on {work.url})")
    return f"crowd: {home.url} , {work.url}"


def reader(base: str) -> str:
    session, home = login(base, "reader")
    releases = _get(session, f"{base}/releases/").text
    release = _first_link(releases, r'href="(/releases/[^"/]+/)"', "release on /releases/")
    _get(session, base + release, expect="manifest")
    return f"reader: {home.url} , {release}"


def wait_until_up(base: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            if requests.get(f"{base}/accounts/login/", timeout=5).status_code == 200:
                return
        except requests.RequestException:
            pass
        if time.monotonic() > deadline:
            raise StepFailed(f"the demo did not answer at {base} within {seconds:.0f} s")
        time.sleep(1)


def main(argv: list[str]) -> int:
    base = (argv[1] if len(argv) > 1 else "http://127.0.0.1:8000").rstrip("/")
    wait = float(argv[2]) if len(argv) > 2 else 0
    failures = []
    try:
        if wait:
            wait_until_up(base, wait)
    except StepFailed as exc:
        print(f"demo smoke: FAILED: {exc}")
        return 1
    for step in (admin, verifier, crowd, reader):
        try:
            print(f"demo smoke: ok: {step(base)}")
        except (StepFailed, requests.RequestException) as exc:
            failures.append(f"{step.__name__}: {exc}")
    for failure in failures:
        print(f"demo smoke: FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
