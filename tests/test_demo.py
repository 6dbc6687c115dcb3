import json
from io import StringIO

from django.core.management import call_command

from accounts.models import User
from aggregation.models import AggregationRun, RunStatus
from annotation.models import Item
from verification.models import Judgment


def _load_demo() -> dict:
    out = StringIO()
    call_command("load_demo", "--json", stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_demo_loads_people_items_judgments_and_an_aggregation(db):
    summary = _load_demo()

    assert {"admin", "verifier", "crowd", "reader"} <= set(summary["people"])
    assert User.objects.get(username="admin").check_password(summary["password"])
    assert Item.objects.count() == 30  # the sample release: 6 retrospective, 9 prospective, 6 easy, 9 counterfactual
    assert Judgment.objects.count() == summary["judgments_simulated"] > 0
    run = AggregationRun.objects.get(pk=summary["aggregation_run"])
    assert run.status == RunStatus.SUCCEEDED
    # Contexts wait for `crowd` to write references.
    from references.models import ReferenceSet

    assert ReferenceSet.objects.get(name=summary["reference_set"]).members.count() == 6
    # One batch is left open for the person trying the demo as `verifier`.
    assert not Judgment.objects.filter(verifier__username="verifier").exists()


def test_demo_is_idempotent(db):
    first = _load_demo()
    counts = (Item.objects.count(), Judgment.objects.count(), User.objects.count())

    second = _load_demo()

    assert (Item.objects.count(), Judgment.objects.count(), User.objects.count()) == counts
    assert second["judgments_simulated"] == 0 and first["judgments_simulated"] > 0
