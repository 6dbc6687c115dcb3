"""Login throttling, as an attacker would meet it: after DIALTOM_LOGIN_MAX_FAILURES wrong
passwords for one username from one address, even the right password is refused (429)
until the window passes; another address, or another username, is not locked out; and
the admin's login is no way around it (it sends people to the same throttled door)."""
from django.conf import settings
from django.test import Client

from tests.factories import StaffFactory, UserFactory


def _login(client, path, username, password, ip="203.0.113.7"):
    return client.post(path, {"username": username, "password": password}, REMOTE_ADDR=ip)


def _lock_out(user):
    client = Client()
    for _ in range(settings.DIALTOM_LOGIN_MAX_FAILURES):
        assert _login(client, "/accounts/login/", user.username, "wrong-password").status_code == 200
    return client


def test_repeated_failures_lock_the_username_from_that_address(db):
    user = UserFactory(username="throttled-verifier")
    client = _lock_out(user)
    refused = _login(client, "/accounts/login/", user.username, "pw-for-tests-1")
    assert refused.status_code == 429
    assert "_auth_user_id" not in client.session
    # Another address is not locked out, nor is another account from the same address.
    assert _login(Client(), "/accounts/login/", user.username, "pw-for-tests-1", ip="198.51.100.9").status_code == 302
    other = UserFactory(username="other-verifier")
    assert _login(Client(), "/accounts/login/", other.username, "pw-for-tests-1").status_code == 302


def test_the_admin_login_is_not_a_way_around_the_throttle(db):
    staff = StaffFactory(username="throttled-staff")
    _lock_out(staff)
    client = Client()
    response = _login(client, "/admin/login/", staff.username, "pw-for-tests-1")
    assert "_auth_user_id" not in client.session, "the admin's login form bypassed the throttle"
    assert response.status_code in (302, 429)
    # It sends people to the throttled login page, keeping where they were going.
    page = Client().get("/admin/login/?next=/admin/")
    assert page.status_code == 302 and page["Location"] == "/accounts/login/?next=/admin/"


def test_other_spellings_of_the_username_share_one_counter(db):
    """Break 5 (issue 12): the login form NFKC-normalises the username before authenticating,
    so `ｔｈｒｏｔｔｌｅｄ` (full-width) and `THROTTLED` reach the same account: they must also
    reach the same counter, or each spelling buys DIALTOM_LOGIN_MAX_FAILURES more guesses."""
    user = UserFactory(username="spelled-verifier")
    full_width = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in user.username)
    spellings = [user.username, full_width, user.username.upper(), f"  {user.username} ", full_width.upper()]
    client = Client()
    failures = 0
    for spelling in spellings:
        for _ in range(settings.DIALTOM_LOGIN_MAX_FAILURES):
            if _login(client, "/accounts/login/", spelling, "wrong-password").status_code == 429:
                break
            failures += 1
    assert failures == settings.DIALTOM_LOGIN_MAX_FAILURES, f"{failures} guesses got through the throttle"
    for spelling in spellings:
        assert _login(client, "/accounts/login/", spelling, "pw-for-tests-1").status_code == 429, spelling
    assert "_auth_user_id" not in client.session


def test_a_success_does_not_reset_the_counter(db):
    """Break 5 (issue 12): a success under one spelling cleared the real counter, so an
    attacker who also holds any valid login could interleave it to guess without end. The
    counter runs out with its window, never because of a success."""
    user = UserFactory(username="reset-verifier")
    client = Client()
    for _ in range(settings.DIALTOM_LOGIN_MAX_FAILURES - 1):
        assert _login(client, "/accounts/login/", user.username, "wrong-password").status_code == 200
    assert _login(Client(), "/accounts/login/", "ｒｅｓｅｔ-verifier", "pw-for-tests-1").status_code == 302
    assert _login(client, "/accounts/login/", user.username, "wrong-password").status_code == 200
    assert _login(client, "/accounts/login/", user.username, "pw-for-tests-1").status_code == 429
