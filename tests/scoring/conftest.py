import json

import pytest

from accounts.models import Role
from annotation.models import Context, Item, Variant
from tests.factories import ContextFactory, ItemFactory, ProspectiveItemFactory, UserFactory


def prospective(session: str, window: int = 0, **kwargs) -> Item:
    context = ContextFactory(context_id=f"{session}-w{window:02d}", session_key=session, window_index=window)
    return ProspectiveItemFactory(
        context=context,
        item_id=f"{session}-w{window:02d}-prospective",
        options=[f"{session}/{window} true continuation", f"{session}/{window} d1", f"{session}/{window} d2",
                 f"{session}/{window} d3"],
        answer="A",
        **kwargs,
    )


def retrospective(context: Context, attribute: str = "trust", answer: str = "C", **kwargs) -> Item:
    return ItemFactory(context=context, attribute=attribute, answer=answer,
                       item_id=f"{context.context_id}-{attribute}", **kwargs)


@pytest.fixture
def prospective_items(db):
    """Six prospective items: sessions s0001–s0005, and a second window of s0001."""
    items = [prospective(f"mi-s{n:04d}") for n in range(1, 6)]
    items.append(prospective("mi-s0001", window=1))
    return items


@pytest.fixture
def reader(db):
    return UserFactory(username="reader01", role=Role.RELEASE_READER)


def jsonl(records) -> list[str]:
    return [json.dumps(r) for r in records]


def letters_for(items, correct: set[str]) -> list[dict]:
    """Predictions: right for the item_ids in `correct`, wrong (another letter) otherwise."""
    out = []
    for item in items:
        right = item.answer
        wrong = next(letter for letter in "ABCD" if letter != right)
        out.append({"item_id": item.item_id, "prediction": right if item.item_id in correct else wrong})
    return out




@pytest.fixture
def release(db):
    """A small released set: two domains, retrospective and prospective, every variant.

    - mi-s0001: retrospective trust (C) and belief (B), prospective (A) with Easy and counterfactual variants
    - esc-s0002: retrospective trust (C), prospective (A)
    - mi-s0003: prospective (A), dropped by the aggregation (not released); its Easy
      variant was never audited

    Release v1 holds every audited item (`dropped` not retained, `dropped-easy` absent).
    """
    from aggregation.models import AggregationRun, ItemResult, RunStatus
    from tests.factories import domain

    mi1 = prospective("mi-s0001")
    esc = ContextFactory(context_id="esc-s0002-w00", session_key="esc-s0002", domain=domain("esc"))
    esc_prosp = ProspectiveItemFactory(context=esc, item_id="esc-s0002-w00-prospective", answer="A",
                                       options=["esc true", "esc d1", "esc d2", "esc d3"])
    dropped = prospective("mi-s0003")
    items = {
        "mi-trust": retrospective(mi1.context, "trust", "C"),
        "mi-belief": retrospective(mi1.context, "belief", "B"),
        "esc-trust": retrospective(esc, "trust", "C"),
        "mi-prosp": mi1,
        "esc-prosp": esc_prosp,
        "dropped": dropped,
    }
    items["mi-easy"] = ItemFactory(
        context=mi1.context, task="prospective", attribute="trust", variant=Variant.EASY, parent=mi1,
        item_id="mi-s0001-w00-prospective-easy", answer="B", batch=None,
    )
    items["mi-cf"] = ItemFactory(
        context=mi1.context, task="prospective", attribute="trust", variant=Variant.COUNTERFACTUAL, parent=mi1,
        item_id="mi-s0001-w00-prospective-counterfactual", answer="NOTA", batch=None,
    )
    items["dropped-easy"] = ItemFactory(
        context=dropped.context, task="prospective", attribute="trust", variant=Variant.EASY, parent=dropped,
        item_id="mi-s0003-w00-prospective-easy", answer="D", batch=None,
    )
    run = AggregationRun.objects.create(status=RunStatus.SUCCEEDED)
    for key in ("mi-trust", "mi-belief", "esc-trust", "mi-prosp", "esc-prosp", "dropped"):
        item = items[key]
        ItemResult.objects.create(run=run, item=item, batch=item.batch, label=item.answer, posterior=0.9,
                                  n_judgments=3, retained=key != "dropped")
    release_of(items, unaudited=UNAUDITED, dropped={"dropped"})  # ready release v1
    return items


def release_of(items: dict, *, unaudited: set[str], dropped: set[str], version: str = "v1"):
    """A ready release whose audited items are `items` but `unaudited`; `dropped` audited, not retained."""
    from releases.models import Release, ReleaseItem, ReleaseStatus

    release = Release.objects.create(version=version, status=ReleaseStatus.READY)
    ReleaseItem.objects.bulk_create(
        ReleaseItem(release=release, item=item, label=item.answer if key not in dropped else "NONE", posterior=0.9,
                    n_judgments=3, retained=key not in dropped)
        for key, item in items.items()
        if key not in unaudited
    )
    return release


UNAUDITED = {"dropped-easy"}
