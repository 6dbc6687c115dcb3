"""The admin pages of the annotation models: lists with their filters, change pages with inlines."""
import pytest
from django.urls import reverse

from annotation.models import Batch, Context, Item, Session
from demo.services import demo_data_load

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(db):
    demo_data_load()


@pytest.mark.parametrize(("model", "query"), [
    ("domain", ""), ("session", "?domain__code__exact=mi"), ("turn", "?speaker=initiator&q=drink"),
    ("context", "?domain__code__exact=pfg"), ("batch", "?status__exact=open"),
    ("item", "?task__exact=retrospective&attribute__exact=trust&variant__exact=hard"),
    ("item", "?context__domain__code__exact=pfg&variant__exact=easy&q=prospective"),
])
def test_changelists(admin_client, demo, model, query):
    response = admin_client.get(reverse(f"admin:annotation_{model}_changelist") + query)
    assert response.status_code == 200


def test_item_list_filters_by_batch_in_a_fixed_number_of_queries(admin_client, demo, django_assert_max_num_queries):
    url = reverse("admin:annotation_item_changelist")
    batch = Batch.objects.get(name="dialtom-mi-retrospective")
    with django_assert_max_num_queries(20):
        response = admin_client.get(f"{url}?batch__id__exact={batch.pk}")
    assert response.status_code == 200
    assert response.context["cl"].result_count == Item.objects.filter(batch__name="dialtom-mi-retrospective").count() == 6


def test_change_pages_with_inlines(admin_client, demo):
    session = Session.objects.get(session_id="mi-t0000")
    response = admin_client.get(reverse("admin:annotation_session_change", args=[session.pk]))
    assert response.status_code == 200
    assert b"Thanks for filling it out." in response.content  # the turns inline
    context = Context.objects.get(context_id="mi-s0005-w02")
    response = admin_client.get(reverse("admin:annotation_context_change", args=[context.pk]))
    assert b"mi-s0005-w02-knowledge" in response.content  # the items inline
    item = Item.objects.get(item_id="mi-s0005-w02-knowledge")
    assert admin_client.get(reverse("admin:annotation_item_change", args=[item.pk])).status_code == 200
