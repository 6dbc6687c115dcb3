import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Item, Variant
from scoring.services import easy_set_build

from .conftest import prospective, retrospective


def easy_items():
    return {i.parent.item_id: i for i in Item.objects.filter(variant=Variant.EASY).select_related("parent", "context")}


def test_distractors_are_true_continuations_from_other_sessions(prospective_items):
    summary = easy_set_build(seed=7)
    assert summary["created"] == 6 and summary["unbuildable"] == []
    continuations = {
        i.options[0]: i for i in Item.objects.filter(variant=Variant.HARD).select_related("context")
    }  # every fixture item has its true continuation at A
    for parent_id, easy in easy_items().items():
        parent = easy.parent
        assert easy.context_id == parent.context_id and easy.task == "prospective"
        assert easy.options["ABCD".index(easy.answer)] == parent.options[0]
        assert easy.profile == parent.profile
        distractors = [o for i, o in enumerate(easy.options) if "ABCD"[i] != easy.answer]
        assert len(set(easy.options)) == 4
        for text in distractors:
            source = continuations[text]  # a correct option of another prospective item
            assert source.context.session_key != parent.context.session_key
            assert source.context_id != parent.context_id
        assert easy.metadata["distractors_from"] == [continuations[t].item_id for t in distractors]


def test_same_seed_reproduces_the_set_and_another_seed_changes_it(prospective_items):
    easy_set_build(seed=7)
    first = {k: (v.options, v.answer) for k, v in easy_items().items()}
    Item.objects.filter(variant=Variant.EASY).delete()
    easy_set_build(seed=7)
    again = {k: (v.options, v.answer) for k, v in easy_items().items()}
    assert again == first
    Item.objects.filter(variant=Variant.EASY).delete()
    easy_set_build(seed=8)
    other = {k: (v.options, v.answer) for k, v in easy_items().items()}
    assert other != first


def test_idempotent_and_limited_to_a_batch(prospective_items):
    in_batch = prospective("mi-s0009", batch__name="easy-only")
    assert easy_set_build(seed=7, batch_name="easy-only")["created"] == 1
    assert Item.objects.get(variant=Variant.EASY).parent == in_batch
    summary = easy_set_build(seed=7)
    assert (summary["created"], summary["skipped_existing"]) == (6, 1)
    assert easy_set_build(seed=7)["created"] == 0


def test_retrospective_items_are_left_alone(prospective_items):
    retrospective(prospective_items[0].context)
    easy_set_build(seed=7)
    assert not Item.objects.filter(variant=Variant.EASY, task="retrospective").exists()


def test_not_enough_other_sessions_is_reported_not_faked(db):
    prospective("mi-s0001")
    prospective("mi-s0001", window=1)
    prospective("mi-s0002")
    summary = easy_set_build(seed=7)
    assert summary["created"] == 0
    assert summary["unbuildable"] == ["mi-s0001-w00-prospective", "mi-s0001-w01-prospective", "mi-s0002-w00-prospective"]


def test_command_prints_json_last(prospective_items, capsys):
    call_command("build_easy_set", "--seed", "7", "--json")
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["created"] == 6 and summary["seed"] == 7
    with pytest.raises(CommandError, match="--batch: unknown batch"):
        call_command("build_easy_set", "--batch", "nope")


def test_into_batch_makes_the_items_answerable(prospective_items):
    easy_set_build(seed=7, into_batch="easy-baseline")
    assert {i.batch.name for i in Item.objects.filter(variant=Variant.EASY)} == {"easy-baseline"}


def test_build_queries_do_not_grow_with_the_items(prospective_items, django_assert_max_num_queries):
    with django_assert_max_num_queries(6):
        assert easy_set_build(seed=7)["created"] == 6
