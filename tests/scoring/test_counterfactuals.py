import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Item, Variant
from scoring.services import InputErrors, counterfactuals_import

from .conftest import jsonl, retrospective

NEW_PROFILE = {"belief": "The client believes drinking is harmless.", "desire": "The client wants to keep drinking."}


def test_import_creates_nota_items_with_the_profile_replaced(prospective_items):
    original = prospective_items[0]
    summary = counterfactuals_import(lines=jsonl([{"item_id": original.item_id, "profile": NEW_PROFILE}]), source="cf.jsonl")
    assert summary == {"source": "cf.jsonl", "records": 1, "created": 1, "unchanged": 0}
    item = Item.objects.get(variant=Variant.COUNTERFACTUAL)
    assert (item.parent, item.context, item.answer, item.profile) == (original, original.context, "NOTA", NEW_PROFILE)
    assert item.options == original.options and item.choices == ("A", "B", "C", "D", "NOTA")
    # re-importing the same file changes nothing
    again = counterfactuals_import(lines=jsonl([{"item_id": original.item_id, "profile": NEW_PROFILE}]), source="cf.jsonl")
    assert (again["created"], again["unchanged"]) == (0, 1)


def test_errors_name_file_line_and_field_and_nothing_is_written(prospective_items):
    retro = retrospective(prospective_items[0].context)
    lines = [
        json.dumps({"item_id": prospective_items[0].item_id, "profile": NEW_PROFILE}),  # fine
        "{not json",
        json.dumps({"item_id": "nope", "profile": NEW_PROFILE}),
        json.dumps({"item_id": retro.item_id, "profile": NEW_PROFILE}),
        json.dumps({"item_id": prospective_items[1].item_id}),
        json.dumps({"item_id": prospective_items[2].item_id, "profile": {"mood": "x"}}),
        json.dumps({"item_id": prospective_items[3].item_id, "profile": prospective_items[3].profile}),
        json.dumps({"item_id": prospective_items[0].item_id, "profile": NEW_PROFILE}),
        json.dumps({"profile": NEW_PROFILE}),
        json.dumps({"item_id": prospective_items[4].item_id, "profile": {"belief": "  "}}),
    ]
    with pytest.raises(InputErrors) as caught:
        counterfactuals_import(lines=lines, source="cf.jsonl")
    assert caught.value.errors == [
        "cf.jsonl:2: json: invalid JSON (Expecting property name enclosed in double quotes, column 2)",
        "cf.jsonl:3: item_id: unknown item nope",
        f"cf.jsonl:4: item_id: {retro.item_id} is not a prospective hard item",
        "cf.jsonl:5: profile: required",
        "cf.jsonl:6: profile: unknown attribute(s) mood (expected belief, desire, intention, emotion, knowledge, trust)",
        "cf.jsonl:7: profile: identical to the original's profile",
        f"cf.jsonl:8: item_id: {prospective_items[0].item_id} already given on line 1",
        "cf.jsonl:9: item_id: required (a string)",
        "cf.jsonl:10: profile: every attribute needs a non-empty text",
    ]
    assert not Item.objects.filter(variant=Variant.COUNTERFACTUAL).exists()


def test_another_profile_for_an_existing_counterfactual_is_refused(prospective_items):
    item_id = prospective_items[0].item_id
    counterfactuals_import(lines=jsonl([{"item_id": item_id, "profile": NEW_PROFILE}]), source="a.jsonl")
    with pytest.raises(InputErrors, match="already exists with another profile"):
        counterfactuals_import(lines=jsonl([{"item_id": item_id, "profile": {"trust": "none"}}]), source="b.jsonl")


def test_command(prospective_items, tmp_path, capsys):
    path = tmp_path / "cf.jsonl"
    path.write_text("\n".join(jsonl([{"item_id": i.item_id, "profile": NEW_PROFILE} for i in prospective_items[:2]])))
    call_command("import_counterfactuals", str(path), "--json")
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["created"] == 2
    path.write_text('{"item_id": "nope", "profile": {"belief": "x"}}\n')
    with pytest.raises(CommandError, match=rf"{path}:1: item_id: unknown item nope"):
        call_command("import_counterfactuals", str(path))
    with pytest.raises(CommandError, match="file: cannot be read"):
        call_command("import_counterfactuals", str(tmp_path / "missing.jsonl"))


def test_import_queries_do_not_grow_with_the_records(prospective_items, django_assert_max_num_queries):
    lines = jsonl([{"item_id": i.item_id, "profile": NEW_PROFILE} for i in prospective_items])
    with django_assert_max_num_queries(6):
        assert counterfactuals_import(lines=lines, source="cf.jsonl")["created"] == 6
