import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from accounts.models import Pool
from annotation.models import Batch
from tests.factories import ItemFactory
from verification.models import QueueSlot

pytestmark = pytest.mark.django_db


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_batch_open_pause_close_gold_and_expire_commands(verifier):
    Pool.objects.create(name="verifiers").members.add(verifier)
    item = ItemFactory(batch__name="mi-b07")
    result = run("batch_open", "mi-b07", "--overlap", "2", "--pool", "verifiers", "--json")
    assert result == {"batch": "mi-b07", "created": False, "status": "open", "overlap": 2, "lease_minutes": 20,
                      "gold_rate": 0.0, "pools": ["verifiers"], "items": 1, "adaptive_overlap": None,
                      "verifiers_needed": 2, "verifiers_available": 1, "short": True}
    assert QueueSlot.objects.get(pk=item.pk).needed == 2
    assert run("batch_pause", "mi-b07", "--json")["status"] == "paused"
    assert run("items_gold", item.item_id, "--json") == {"items": 1, "is_gold": True}
    assert run("claims_expire", "--json") == {"expired": 0}
    assert run("gold_accuracy", "--batch", "mi-b07", "--json") == {"verifiers": []}
    assert run("batch_close", "mi-b07", "--json")["status"] == "closed"
    assert Batch.objects.get(name="mi-b07").closed_at is not None


def test_bad_input_is_a_clear_error():
    with pytest.raises(CommandError, match="pool: no pool named 'nobody'"):
        call_command("batch_open", "mi-b08", "--pool", "nobody")
    assert not Batch.objects.filter(name="mi-b08").exists()
    with pytest.raises(CommandError, match="overlap"):
        call_command("batch_open", "mi-b08", "--overlap", "0")
    with pytest.raises(CommandError, match="no batch named"):
        call_command("batch_close", "nope")


def test_batch_open_refuses_an_unknown_name_unless_told_to_create_it():
    # Given no batch named mi-b99 (a typo of an imported batch's name)
    # When it is opened, Then it is refused, and no empty open batch appears for verifiers
    with pytest.raises(CommandError, match="batch: no batch named 'mi-b99'.*--create"):
        call_command("batch_open", "mi-b99", "--overlap", "3")
    assert not Batch.objects.filter(name="mi-b99").exists()

    # ... unless --create says so
    result = run("batch_open", "mi-b99", "--create", "--json")
    assert result["created"] is True and result["status"] == "open" and result["items"] == 0
