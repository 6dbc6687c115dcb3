"""The scoring job through a real Celery worker on Redis (queued after commit, by id)."""
import time

import pytest

from scoring.models import ModelRun, ScoreStatus
from scoring.services import model_run_create

from .conftest import jsonl, prospective, release_of, retrospective

pytestmark = [pytest.mark.celery]


def wait_for(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.django_db(transaction=True)
def test_uploaded_predictions_are_scored_by_the_worker(celery_worker):
    item = prospective("mi-s0001")
    retro = retrospective(item.context)
    release_of({"prosp": item, "retro": retro}, unaudited=set(), dropped=set())
    records = [{"item_id": item.item_id, "prediction": "A"}, {"item_id": retro.item_id, "prediction": "B"}]
    run = model_run_create(name="celery-run", model_name="Worker", lines=jsonl(records), source="w.jsonl")

    assert wait_for(lambda: ModelRun.objects.get(pk=run.pk).status in (ScoreStatus.SUCCEEDED, ScoreStatus.FAILED))
    run.refresh_from_db()
    assert run.status == ScoreStatus.SUCCEEDED, run.error
    assert run.scores["overall"] == {"n": 2, "correct": 1, "rate": 0.5, "baseline": 0.25}
    assert run.scores["task"]["prospective"]["rate"] == 1.0
    assert run.release.version == "v1" and run.attempts == 1 and run.heartbeat_at is not None
