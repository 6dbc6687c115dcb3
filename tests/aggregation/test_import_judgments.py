"""manage.py import_judgments: spec §3, all or nothing, idempotent on item × worker."""
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from accounts.models import Role, User
from tests.factories import ItemFactory, UserFactory
from verification.models import Judgment


@pytest.fixture
def items(db):
    return [
        ItemFactory(item_id="mi-s0001-w00-trust"),
        ItemFactory(item_id="mi-s0002-w00-trust", variant="counterfactual", answer="NOTA"),
    ]


def write(tmp_path, text, name="judgments.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def run(path, capsys):
    call_command("import_judgments", str(path), "--json")
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_import_creates_verifiers_and_is_idempotent(items, tmp_path, capsys):
    UserFactory(username="verifier07")
    path = write(tmp_path, "item_id,worker,label\n"
                 "mi-s0001-w00-trust,verifier07,C\n"
                 "mi-s0001-w00-trust,verifier11,NONE\n"
                 "mi-s0002-w00-trust,verifier11,NOTA\n"
                 "mi-s0002-w00-trust,verifier12,MULTIPLE\n")
    out = run(path, capsys)
    assert out["created"] == 4 and out["users_created"] == 2 and out["unchanged"] == 0
    new = User.objects.get(username="verifier11")
    assert new.role == Role.VERIFIER and not new.has_usable_password()
    j = Judgment.objects.get(item=items[0], verifier=new)
    assert (j.label, j.source, j.batch_id, j.displayed_label) == ("NONE", "import", items[0].batch_id, "NONE")
    # the same file again: nothing new
    again = run(path, capsys)
    assert again["created"] == 0 and again["unchanged"] == 4 and again["users_created"] == 0
    assert Judgment.objects.count() == 4


GOOD_FIRST = "item_id,worker,label\nmi-s0002-w00-trust,newbie,A\n"  # line 2 is fine: nothing of it may stay


@pytest.mark.parametrize(
    "body, message",
    [
        (GOOD_FIRST + "nope,verifier07,A\n", "judgments.csv:3: item_id: unknown item 'nope'"),
        (GOOD_FIRST + "mi-s0001-w00-trust,verifier07,E\n", "judgments.csv:3: label: 'E' is not one of"),
        (GOOD_FIRST + "mi-s0001-w00-trust,verifier07,NOTA\n", "judgments.csv:3: label: 'NOTA' is not one of"),
        (GOOD_FIRST + "mi-s0001-w00-trust,bad name!,A\n", "judgments.csv:3: worker: 'bad name!' is not a valid"),
        ("item_id,worker\nmi-s0001-w00-trust,v\n", "judgments.csv:1: header: missing column(s) label"),
        (GOOD_FIRST + "mi-s0001-w00-trust,v1,A\nmi-s0001-w00-trust,v1,B\n", "judgments.csv:4: label: v1 judged"),
        (GOOD_FIRST + "mi-s0001-w00-trust,v1\n", "judgments.csv:3: row: expected 3 fields, got 2"),
    ],
)
def test_bad_rows_are_reported_and_nothing_is_written(items, tmp_path, body, message):
    path = write(tmp_path, body)
    with pytest.raises(CommandError) as exc:
        call_command("import_judgments", str(path))
    assert message in str(exc.value)
    assert Judgment.objects.count() == 0
    assert not User.objects.filter(username="newbie").exists()


def test_conflict_with_stored_judgment_rolls_back(items, tmp_path):
    v = UserFactory(username="verifier07")
    Judgment.objects.create(item=items[0], verifier=v, batch=items[0].batch, label="A")
    path = write(tmp_path, "item_id,worker,label\nmi-s0002-w00-trust,someone,B\nmi-s0001-w00-trust,verifier07,B\n")
    with pytest.raises(CommandError, match=r"judgments.csv:3: label: verifier07 already judged mi-s0001-w00-trust as A"):
        call_command("import_judgments", str(path))
    assert Judgment.objects.count() == 1
    assert not User.objects.filter(username="someone").exists()


def test_missing_file(db, tmp_path):
    with pytest.raises(CommandError, match="missing.csv:0: file"):
        call_command("import_judgments", str(tmp_path / "missing.csv"))
