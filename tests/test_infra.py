import pytest

from aggregation.tasks import ping


@pytest.mark.celery
def test_real_worker_answers(celery_worker):
    assert ping.delay().get(timeout=20) == "pong"
