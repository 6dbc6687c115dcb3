"""The data a load run needs, and the invariants checked after it (needs Django set up).

`load_fixture` makes a batch of items the ordinary way: contexts and items in bulk, people
and API tokens through `create_people --json --tokens`, the batch opened to their pool with
`batch_open NAME --overlap K --pool POOL`. `check_invariants` reads the database back.
"""
from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

from django.core.management import call_command
from django.db import connection


def load_fixture(*, batch: str, n_verifiers: int, n_items: int, overlap: int, pool: str = "load-verifiers") -> list[str]:
    """Create n_items items in `batch` and n_verifiers verifiers; returns their API tokens."""
    from annotation.models import Batch, Context, Domain, Item

    domains = list(Domain.objects.order_by("code"))
    batch_row, _ = Batch.objects.get_or_create(name=batch, defaults={"overlap": overlap})
    contexts = Context.objects.bulk_create([
        Context(
            context_id=f"load-{batch}-{n:05d}-w00", domain=domains[n % len(domains)], session_key=f"load-{batch}-{n:05d}",
            window_index=0, n_words=12,
            turns=[{"speaker": "initiator", "text": f"How are you feeling today, number {n}?"},
                   {"speaker": "recipient", "text": "Honestly, a bit tired of all this."}],
        )
        for n in range((n_items + 1) // 2)
    ])
    items = []
    for n, context in enumerate(contexts):
        items.append(Item(
            item_id=f"{context.context_id}-trust", context=context, task="retrospective", attribute="trust",
            target_speaker="recipient", question="How much does the speaker trust the other?",
            options=[f"trust option {x} {n}" for x in "ABCD"], answer="ABCD"[n % 4], batch=batch_row,
        ))
        items.append(Item(
            item_id=f"{context.context_id}-prospective-belief", context=context, task="prospective", attribute="belief",
            question="Which continuation fits the profile?", options=[f"continuation {x} {n}" for x in "ABCD"],
            answer="ABCD"[(n + 1) % 4], batch=batch_row,
            profile={a: f"{a} {n}" for a in ("belief", "desire", "intention", "emotion", "knowledge", "trust")},
        ))
    Item.objects.bulk_create(items[:n_items])

    with tempfile.TemporaryDirectory() as tmp:
        people = Path(tmp) / "people.csv"
        people.write_text("username,email,role,pools\n" + "".join(
            f"load-{batch}-v{i:03d},load-v{i:03d}@example.org,verifier,{pool}\n" for i in range(n_verifiers)
        ))
        out = io.StringIO()
        call_command("create_people", str(people), "--json", "--tokens", stdout=out)
    created = json.loads(out.getvalue().strip().splitlines()[-1])
    tokens = [p["token"] for p in created["people"]]
    call_command("batch_open", batch, "--overlap", str(overlap), "--pool", pool, "--json", stdout=io.StringIO())
    return tokens


def check_invariants(*, batch: str, acknowledged: dict[str, int], queue_exhausted: bool) -> dict:
    """What the database holds after a run; `violations` lists every broken invariant."""
    from annotation.models import Batch
    from verification.models import Judgment

    b = Batch.objects.get(name=batch)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM (SELECT item_id FROM verification_judgment WHERE batch_id = %s"
            " GROUP BY item_id HAVING count(*) > %s) over_k", [b.pk, b.overlap])
        over_k = cursor.fetchone()[0]
        cursor.execute(
            "SELECT count(*) FROM (SELECT 1 FROM verification_judgment WHERE batch_id = %s"
            " GROUP BY item_id, verifier_id HAVING count(*) > 1) dup", [b.pk])
        duplicates = cursor.fetchone()[0]
        cursor.execute(
            "SELECT count(*) FROM annotation_item i WHERE i.batch_id = %s AND"
            " (SELECT count(*) FROM verification_judgment j WHERE j.item_id = i.id) <> %s", [b.pk, b.overlap])
        not_at_k = cursor.fetchone()[0]
    stored = dict(
        Judgment.objects.filter(batch=b).values_list("idempotency_key", "id")
    )
    stored = {str(k): v for k, v in stored.items()}
    violations = []
    if over_k:
        violations.append(f"{over_k} items have more than k={b.overlap} judgments")
    if duplicates:
        violations.append(f"{duplicates} (item, verifier) pairs judged twice")
    if len(stored) != len(acknowledged):
        violations.append(f"{len(acknowledged)} submissions acknowledged but {len(stored)} stored")
    missing = [k for k, v in acknowledged.items() if stored.get(k) != v]
    if missing:
        violations.append(f"{len(missing)} acknowledged judgments missing or different, e.g. {missing[:3]}")
    if queue_exhausted and not_at_k:
        violations.append(f"queue exhausted but {not_at_k} items are not at exactly k={b.overlap}")
    return {
        "items": b.items.count(),
        "overlap": b.overlap,
        "stored_judgments": len(stored),
        "acknowledged_submissions": len(acknowledged),
        "items_over_k": over_k,
        "duplicate_pairs": duplicates,
        "items_not_at_k": not_at_k,
        "queue_exhausted": queue_exhausted,
        "violations": violations,
    }
