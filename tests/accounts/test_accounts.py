import json
import re

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from accounts.models import Pool, User
from accounts.services import login_link_token, login_link_user
from tests.factories import CrowdWorkerFactory, StaffFactory, UserFactory

pytestmark = pytest.mark.django_db

CSV = "username,email,role\nverifier07,v07@example.org,verifier\ncrowd03,c03@example.org,crowd_worker\nlead,lead@example.org,staff\n"


def run(*args):
    from io import StringIO

    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip().splitlines()


def test_create_people_prints_one_time_links_that_log_in_once(tmp_path, client):
    path = tmp_path / "people.csv"
    path.write_text(CSV)
    lines = run("create_people", str(path))
    assert len(lines) == 4 and "3 people created" in lines[-1]
    assert User.objects.get(username="lead").is_staff
    assert Pool.objects.get(name="verifiers").members.filter(username="verifier07").exists()
    link = re.search(r"(/accounts/link/[^/]+/)", lines[0]).group(1)
    assert client.get(link).status_code == 200  # a confirm page: scanners do not spend it
    response = client.post(link)
    assert response.status_code == 302 and client.session["_auth_user_id"] == str(User.objects.get(username="verifier07").pk)
    client.logout()
    assert client.post(link).status_code == 400  # used
    assert client.get("/accounts/link/forged:token/").status_code == 400


def test_create_people_json_tokens_and_bad_input_all_or_nothing(tmp_path):
    path = tmp_path / "people.csv"
    path.write_text(CSV)
    result = json.loads(run("create_people", str(path), "--json", "--tokens")[-1])
    assert result["created"] == 3
    token = result["people"][0]["token"]
    assert Token.objects.get(key=token).user.username == "verifier07"
    bad = tmp_path / "bad.csv"
    bad.write_text("username,email,role\nnew1,n1@example.org,verifier\nnew2,not-an-email,verifier\n")
    with pytest.raises(CommandError, match=r"bad.csv:3: email"):
        call_command("create_people", str(bad))
    bad.write_text("username,email,role\nnew1,n1@example.org,wizard\n")
    with pytest.raises(CommandError, match=r"bad.csv:2: role"):
        call_command("create_people", str(bad))
    assert not User.objects.filter(username="new1").exists()


@override_settings(DIALTOM_LOGIN_LINK_SECONDS=-1)
def test_expired_links_do_not_log_in():
    user = UserFactory()
    assert login_link_user(token=login_link_token(user=user)) is None


@override_settings(DIALTOM_LOGIN_MAX_FAILURES=3)
def test_login_is_throttled_after_repeated_failures(client):
    user = UserFactory(username="verifier09")
    for _ in range(3):
        assert client.post("/accounts/login/", {"username": "verifier09", "password": "wrong"}).status_code == 200
    refused = client.post("/accounts/login/", {"username": "verifier09", "password": "pw-for-tests-1"})
    assert refused.status_code == 429 and "Too many failed attempts" in refused.content.decode()
    assert "_auth_user_id" not in client.session
    other = client.post("/accounts/login/", {"username": "someoneelse", "password": "x"})
    assert other.status_code == 200  # only that username is throttled
    assert user.pk


def test_a_good_login_clears_the_failures(client):
    UserFactory(username="verifier10")
    client.post("/accounts/login/", {"username": "verifier10", "password": "wrong"})
    assert client.post("/accounts/login/", {"username": "verifier10", "password": "pw-for-tests-1"}).status_code == 302


def test_home_routes_each_role(client):
    for user, target in [(UserFactory(), "/verify/"), (StaffFactory(), "/dashboard/"), (CrowdWorkerFactory(), "/annotate/")]:
        client.force_login(user)
        assert client.get("/")["Location"] == target


def test_staff_exclude_a_verifier_through_the_api_and_command(verifier):
    staff = APIClient()
    staff.force_authenticate(StaffFactory())
    r = staff.post(f"/api/v1/people/{verifier.username}/exclusion/", {"excluded": True, "reason": "gold 2/10"}, format="json")
    assert r.status_code == 200 and r.json()["excluded_from_aggregation"] is True
    verifier.refresh_from_db()
    assert verifier.exclusion_reason == "gold 2/10"
    result = json.loads(run("verifier_exclude", verifier.username, "--include", "--json")[-1])
    assert result["excluded_from_aggregation"] is False
    as_verifier = APIClient()
    as_verifier.force_authenticate(verifier)
    assert as_verifier.post(f"/api/v1/people/{verifier.username}/exclusion/", {"excluded": False}, format="json").status_code == 403


def test_a_person_makes_replaces_and_revokes_an_api_token_on_the_profile_page(client, verifier):
    """Issue 21, item 11: API tokens are made on the profile page, the key shown once."""
    from rest_framework.authtoken.models import Token

    client.force_login(verifier)
    page = client.get("/accounts/profile/").content.decode()
    assert "You have no API token." in page and ">Make a token</button>" in page
    response = client.post("/accounts/profile/token/", {"action": "make"})
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    first = Token.objects.get(user=verifier).key
    assert f"data-new-token>{first}<" in response.content.decode()
    page = client.get("/accounts/profile/").content.decode()
    assert first not in page and "You have a token" in page  # shown once only
    client.post("/accounts/profile/token/", {"action": "make"})
    second = Token.objects.get(user=verifier).key
    assert second != first  # the old one no longer works
    api = client.__class__()
    assert api.get("/api/v1/progress/", HTTP_AUTHORIZATION=f"Token {second}").status_code == 200
    assert api.get("/api/v1/progress/", HTTP_AUTHORIZATION=f"Token {first}").status_code == 401
    client.post("/accounts/profile/token/", {"action": "revoke"})
    assert not Token.objects.filter(user=verifier).exists()
