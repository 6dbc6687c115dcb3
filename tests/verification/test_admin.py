import pytest

from accounts.models import User
from annotation.models import Batch
from tests.factories import UserFactory

from .factories import open_batch

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(User.objects.create_superuser("root", "root@example.org", "pw-for-tests-1"))
    return client


def test_admin_actions_pause_close_gold_and_exclude(admin_client):
    batch = open_batch(n_items=2)
    item = batch.items.first()
    url = "/admin/verification/batchqueue/"
    assert admin_client.get(url).status_code == 200
    admin_client.post(url, {"action": "pause_batches", "_selected_action": [batch.pk]})
    assert Batch.objects.get(pk=batch.pk).status == "paused"
    admin_client.post(url, {"action": "close_batches", "_selected_action": [batch.pk]})
    assert Batch.objects.get(pk=batch.pk).status == "closed"
    admin_client.post("/admin/verification/audititem/", {"action": "mark_gold", "_selected_action": [item.pk]})
    item.refresh_from_db()
    assert item.is_gold
    person = UserFactory()
    admin_client.post("/admin/accounts/user/", {"action": "exclude_from_aggregation", "_selected_action": [person.pk]})
    person.refresh_from_db()
    assert person.excluded_from_aggregation
    for page in ["/admin/verification/claim/", "/admin/verification/judgment/", "/admin/verification/queueslot/",
                 f"/admin/verification/audititem/{item.pk}/change/"]:
        assert admin_client.get(page).status_code == 200, page
