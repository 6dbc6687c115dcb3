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


__all__ = ["prospective", "retrospective", "jsonl", "letters_for", "Variant"]
