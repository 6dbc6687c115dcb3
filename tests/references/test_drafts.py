"""Draft saves are ordered by the browser's stamp: a late one (a beacon of a page already left) never overwrites newer text."""
import pytest

from references import services
from references.models import ReferenceDraft
from tests.factories import api_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def held(workers, small_set):
    return services.reference_assignment_claim_next(worker=workers[0], reference_set_id=small_set.pk)


def draft(assignment):
    return ReferenceDraft.objects.get(member_id=assignment.member_id, worker_id=assignment.worker_id)


def save(worker, assignment, text, **kwargs):
    return services.reference_draft_save(worker=worker, assignment_id=assignment.pk, texts={"belief": text}, **kwargs)


def test_an_older_stamp_is_dropped_and_a_newer_one_wins(workers, held):
    assert not save(workers[0], held, "typed at 2000", client_ts=2000, client_id="tab-1").stale
    late = save(workers[0], held, "typed at 1500 (a late beacon)", client_ts=1500, client_id="tab-1")
    assert late.stale and late.draft.texts["belief"] == "typed at 2000"
    assert (draft(held).client_ts, draft(held).client_id) == (2000, "tab-1")
    same = save(workers[0], held, "typed at 2000, sent twice", client_ts=2000, client_id="tab-1")
    assert not same.stale  # equal stamps: the same edit again, stored
    newer = save(workers[0], held, "typed at 2500 elsewhere", client_ts=2500, client_id="laptop")
    assert not newer.stale and (draft(held).texts["belief"], draft(held).client_id) == ("typed at 2500 elsewhere", "laptop")


def test_a_save_without_a_stamp_always_writes_and_keeps_the_stamp(workers, held):
    save(workers[0], held, "autosaved", client_ts=5000, client_id="tab-1")
    plain = save(workers[0], held, "saved with the button")  # no JavaScript: no stamp
    assert not plain.stale and draft(held).texts["belief"] == "saved with the button"
    assert (draft(held).client_ts, draft(held).client_id) == (5000, "tab-1")
    assert save(workers[0], held, "a late beacon", client_ts=4000, client_id="tab-1").stale


@pytest.mark.parametrize("bad", ["", "soon", "-5", str(2**63), None])
def test_a_malformed_stamp_counts_as_none(workers, held, bad):
    save(workers[0], held, "first", client_ts=3000)
    assert not save(workers[0], held, "second", client_ts=bad).stale
    assert draft(held).texts["belief"] == "second" and draft(held).client_ts == 3000


def test_the_autosave_view_drops_a_late_beacon_and_says_so(client, workers, held):
    client.force_login(workers[0])
    url = f"/annotate/work/{held.pk}/autosave/"
    assert client.post(url, {"belief": "newest words", "client_ts": "9000", "client_id": "tab-1"}).status_code == 200
    response = client.post(url, {"belief": "older words", "client_ts": "8000", "client_id": "tab-1"})
    assert response.status_code == 200 and "a later version of this draft was saved" in response.content.decode()
    assert draft(held).texts["belief"] == "newest words"
    page = client.get(f"/annotate/work/{held.pk}/").content.decode()
    assert 'name="client_ts" value="9000"' in page and 'data-draft-client="tab-1"' in page


def test_the_api_reports_a_stale_save(workers, held):
    url = f"/api/v1/reference-assignments/{held.pk}/draft/"
    client = api_for(workers[0])
    assert client.put(url, {"texts": {"belief": "new"}, "client_ts": 10}, format="json").json()["stale"] is False
    assert client.put(url, {"texts": {"belief": "old"}, "client_ts": 9}, format="json").json()["stale"] is True
    assert client.put(url, {"texts": {"belief": "x"}, "client_ts": -1}, format="json").status_code == 400
    assert draft(held).texts["belief"] == "new"
