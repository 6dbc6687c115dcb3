from tests.factories import UserFactory


def test_person_logs_in_through_the_form(transactional_db, login):
    user = UserFactory(username="verifier07")
    page = login(user)
    assert "verifier07" in page.content()
