import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError

from accounts.models import Pool
from review import selectors, services
from review.markdown import render_markdown
from review.models import Adjudication, Flag, FlagStatus
from tests.factories import BatchFactory, ItemFactory, JudgmentFactory, UserFactory
from verification.services import batch_open, item_claim_next

pytestmark = pytest.mark.django_db


def test_guideline_markdown_is_rendered_and_sanitised(staff):
    batch = BatchFactory(name="mi-b01")
    services.guideline_set(
        batch_name="mi-b01",
        text="# Read first\n\n**Trust** means *reliance*.\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) <img src=x onerror=alert(1)>",
        examples={"trust": "A client who says *I believe you*", "prospective": "Pick the continuation"},
        updated_by=staff,
    )

    view = selectors.guideline_for(batch=batch)

    assert "<strong>Trust</strong>" in view["html"] and "<em>reliance</em>" in view["html"]
    # raw HTML is shown as text, never as markup; a javascript: link loses its href
    assert "<script" not in view["html"] and "<img" not in view["html"] and "&lt;script&gt;" in view["html"]
    assert 'href="javascript' not in view["html"]
    assert [e["topic"] for e in view["examples"]] == ["prospective", "trust"]
    assert "<em>I believe you</em>" in view["examples"][1]["html"]


def test_guideline_refuses_unknown_topics_and_empty_text():
    BatchFactory(name="mi-b01")
    with pytest.raises(ValidationError, match="examples"):
        services.guideline_set(batch_name="mi-b01", text="x", examples={"wisdom": "y"})
    with pytest.raises(ValidationError, match="text"):
        services.guideline_set(batch_name="mi-b01", text="  ")
    with pytest.raises(ValidationError, match="no batch"):
        services.guideline_set(batch_name="nope", text="x")


def test_guideline_set_command_reads_markdown_and_examples(tmp_path):
    BatchFactory(name="mi-b01")
    (tmp_path / "g.md").write_text("Be *careful*.", encoding="utf-8")
    (tmp_path / "ex.json").write_text(json.dumps({"belief": "An example"}), encoding="utf-8")
    call_command("guideline_set", "mi-b01", str(tmp_path / "g.md"), "--examples", str(tmp_path / "ex.json"))
    assert selectors.guideline_for(batch=BatchFactory(name="mi-b01"))["examples"][0]["topic"] == "belief"
    (tmp_path / "bad.json").write_text("{nope", encoding="utf-8")
    with pytest.raises(CommandError, match="bad.json:1: not JSON"):
        call_command("guideline_set", "mi-b01", str(tmp_path / "g.md"), "--examples", str(tmp_path / "bad.json"))


def test_render_markdown_keeps_safe_links_only():
    html = render_markdown("[ok](https://example.org) [bad](data:text/html,x)")
    assert 'href="https://example.org"' in html and 'href="data:' not in html


def _claim(verifier):
    item = ItemFactory()
    Pool.objects.get_or_create(name="verifiers")[0].members.add(verifier)
    batch_open(name=item.batch.name, overlap=3, pools=["verifiers"])
    return item_claim_next(verifier=verifier, batch=item.batch)


def test_a_verifier_flags_the_item_in_hand_and_flagging_again_updates_it(verifier):
    claim = _claim(verifier)

    flag = services.flag_submit(verifier=verifier, claim_id=claim.pk, reason="options_overlap")
    again = services.flag_submit(verifier=verifier, claim_id=claim.pk, reason="other", comment="B and C say the same")

    assert again.pk == flag.pk and Flag.objects.count() == 1
    assert again.reason == "other" and again.status == FlagStatus.OPEN


def test_flag_refuses_other_without_comment_and_someone_elses_claim(verifier):
    claim = _claim(verifier)
    with pytest.raises(ValidationError, match="comment"):
        services.flag_submit(verifier=verifier, claim_id=claim.pk, reason="other")
    with pytest.raises(ValidationError, match="not yours"):
        services.flag_submit(verifier=UserFactory(), claim_id=claim.pk, reason="dialogue_cut")
    assert not Flag.objects.exists()


def test_staff_resolve_or_dismiss_a_flag(verifier, staff):
    claim = _claim(verifier)
    flag = services.flag_submit(verifier=verifier, claim_id=claim.pk, reason="dialogue_cut")

    services.flag_handle(flag_id=flag.pk, status="dismissed", staff=staff, note="the cut is fine")

    flag.refresh_from_db()
    assert (flag.status, flag.handled_by, flag.note) == ("dismissed", staff, "the cut is fine")
    assert flag.handled_at is not None
    assert selectors.flag_counts() == {"open": 0, "resolved": 0, "dismissed": 1}


def test_adjudication_is_recorded_with_who_and_when_and_resolves_open_flags(verifier, staff):
    claim = _claim(verifier)
    services.flag_submit(verifier=verifier, claim_id=claim.pk, reason="options_overlap")

    services.adjudication_record(item_id=claim.item.item_id, decision="drop", reason="B and C overlap", staff=staff)
    services.adjudication_record(item_id=claim.item.item_id, decision="keep", reason="on second reading, fine", staff=staff)

    history = list(Adjudication.objects.filter(item=claim.item))
    assert [a.decision for a in history] == ["keep", "drop"]  # newest first: the first is in force
    assert all(a.decided_by == staff and a.decided_at for a in history)
    assert Flag.objects.get().status == FlagStatus.RESOLVED


def test_adjudication_needs_a_reason_and_refuses_gold(staff):
    item = ItemFactory()
    with pytest.raises(ValidationError, match="reason"):
        services.adjudication_record(item_id=item.item_id, decision="drop", reason=" ", staff=staff)
    gold = ItemFactory(is_gold=True)
    with pytest.raises(ValidationError, match="gold"):
        services.adjudication_record(item_id=gold.item_id, decision="keep", reason="x", staff=staff)
    with pytest.raises(ValidationError, match="keep or drop"):
        services.adjudication_record(item_id=item.item_id, decision="maybe", reason="x", staff=staff)
    assert not Adjudication.objects.exists()


def test_commented_judgments_are_in_the_review_queue():
    JudgmentFactory(comment="")
    commented = JudgmentFactory(comment="the dialogue stops mid-sentence")
    assert selectors.commented_judgments() == [commented]
