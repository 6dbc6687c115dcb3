"""A one-time login link posted 10 times at once logs in once (issue 12, break 9).

Each POST runs the real view in its own thread with its own PostgreSQL connection (as
Django's select_for_update tests do); the attack found two sessions from one link."""
import threading

import pytest
from django.db import connection
from django.test import Client

from accounts.services import login_link_path
from tests.factories import UserFactory

pytestmark = [pytest.mark.concurrency, pytest.mark.django_db(transaction=True)]

N_POSTS = 10
ROUNDS = 3  # a fresh link each round: one lucky interleaving must not hide the race


def _post_at_once(path: str) -> tuple[list[int], list[BaseException]]:
    start = threading.Barrier(N_POSTS)
    logged_in, errors = [], []

    def post():
        try:
            client = Client()
            start.wait()
            response = client.post(path)
            if "_auth_user_id" in client.session:
                logged_in.append(response.status_code)
        except BaseException as exc:  # noqa: BLE001 — reported in the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(N_POSTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return logged_in, errors


def test_a_login_link_posted_ten_times_at_once_logs_in_once():
    for round_ in range(ROUNDS):
        person = UserFactory(username=f"link-race-{round_}")
        path = login_link_path(user=person)
        logged_in, errors = _post_at_once(path)
        assert not errors, errors[:3]
        assert logged_in == [302], f"round {round_}: {len(logged_in)} sessions from one link"
        # And the link is spent: a later POST is refused.
        late = Client()
        assert late.post(path).status_code == 400 and "_auth_user_id" not in late.session
