#!/usr/bin/env python3
"""Drain of pool files through the API: does any verifier see a continuation they read? (issue 20)

  DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialtom .venv/bin/python bench/continuation_drain.py

In a throw-away database `bench_drain_<database>`:
1. Makes three pool files (MI, ESC, PFG) shaped like the authors': sessions of four windows
   copied from the real sample (`../shared/data/dialtom-pool/MI_data_0_50.sample.json`,
   session 0, windows 0-3), each session's texts made distinct by a suffix on every line,
   the same in a window's continuation and in the next window's dialogue, so that, as in
   the authors' pool, window w's true continuation opens window w+1's dialogue word for word.
2. Imports them (`import_dialtom`), opens one batch a file at k=3 to N verifiers.
3. The verifiers take turns through the API (`GET next-item`, `POST judgments`), each on the
   first batch with work for them, until none has any.
4. Counts, per verifier, the prospective items served that showed an option standing word for
   word (`annotation.continuations`: normalised containment) in a dialogue the same verifier
   read (before or after), and whether it was the intended one; items that reached k usable
   (not exposed) judgments; exposed judgments.
`--old-rule` empties the reveals table first (the rule before issue 20) for comparison.
"""
import argparse
import json
import os
import random
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dialtom_site.settings.test")

SAMPLE = ROOT.parent / "shared" / "data" / "dialtom-pool" / "MI_data_0_50.sample.json"  # ../shared, beside the repository
ROLES = {"MI": ("counselor", "client"), "ESC": ("supporter", "seeker"), "PFG": ("persuader", "persuadee")}


def _retext(value, suffix: str, roles):
    if isinstance(value, str):
        text = value.replace("counselor:", f"{roles[0]}:").replace("client:", f"{roles[1]}:")
        return "\n".join(f"{line} ({suffix})" for line in text.split("\n"))
    if isinstance(value, dict):
        return {k: v if k == "correct_option" else _retext(v, suffix, roles) for k, v in value.items()}
    if isinstance(value, list):
        return [_retext(v, suffix, roles) for v in value]
    return value


def make_pool(out: Path, sessions: int) -> None:
    sample = json.loads(SAMPLE.read_text())
    windows = [sample[f"0, {w}"] for w in range(4)]
    for domain, roles in ROLES.items():
        entries = {}
        for s in range(sessions):
            for w, record in enumerate(windows):
                entries[f"{s}, {w}"] = _retext(record, f"{domain}{s}", roles)
        (out / f"{domain}_data_0_{len(entries)}.json").write_text(json.dumps(entries))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=10, help="sessions of 4 windows per file")
    parser.add_argument("--verifiers", type=int, default=30)
    parser.add_argument("--old-rule", action="store_true", help="no reveals: the rule before issue 20")
    parser.add_argument("--seed", type=int, default=20)
    args = parser.parse_args()

    import django
    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment

    setup_test_environment()
    connection.settings_dict.setdefault("TEST", {})["NAME"] = f"bench_drain_{connection.settings_dict['NAME']}"
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False, serialize=False)
    try:
        report = run(args)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
    print(json.dumps(report, indent=1))


def run(args) -> dict:
    from accounts.models import Pool, Role
    from annotation.continuations import continuation_text, dialogue_text
    from annotation.models import ContinuationReveal, Item, Task
    from annotation.authors import dialtom_import
    from tests.factories import UserFactory, api_for
    from verification.models import Judgment
    from verification.queue import batch_staffing
    from verification.services import batch_open

    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        make_pool(Path(tmp), args.sessions)
        imported = dialtom_import(directory=tmp)
    if args.old_rule:
        ContinuationReveal.objects.all().delete()
    people = [UserFactory(username=f"drain{i:02d}", role=Role.VERIFIER) for i in range(args.verifiers)]
    pool, _ = Pool.objects.get_or_create(name="verifiers")
    pool.members.add(*people)
    batches = sorted(b for b in Item.objects.values_list("batch__name", flat=True).distinct())
    for name in batches:
        batch_open(name=name, overlap=3, pools=["verifiers"])
    batch_ids = list(Item.objects.values_list("batch_id", flat=True).distinct())
    staffing = {str(pk): s.as_dict() for pk, s in batch_staffing(batch_ids=batch_ids).items()}

    clients = {p.pk: api_for(p) for p in people}
    read = defaultdict(list)  # verifier -> dialogues read (normalised)
    shown = defaultdict(list)  # verifier -> (options, intended letter or None) of prospective items
    active = {p.pk: list(batches) for p in people}
    requests, started = 0, time.perf_counter()
    while active:
        for pk in list(active):
            client = clients[pk]
            while active[pk]:
                response = client.get(f"/api/v1/next-item/?batch={active[pk][0]}")
                requests += 1
                if response.status_code == 200:
                    break
                active[pk].pop(0)
            if not active[pk]:
                del active[pk]
                continue
            body = response.json()
            if body["task"] == Task.RETROSPECTIVE:
                read[pk].append(dialogue_text(body["context"]))
            else:
                shown[pk].append([o["text"] for o in body["options"]])
            choice = rng.choice([o["letter"] for o in body["options"]])
            client.post("/api/v1/judgments/", {"claim": body["claim"], "choice": choice,
                                               "idempotency_key": str(uuid.uuid4())}, format="json")
            requests += 1
    seconds = time.perf_counter() - started

    intended = {continuation_text(o[ord(a) - 65]) for o, a in Item.objects.filter(task=Task.PROSPECTIVE).values_list("options", "answer") if a in "ABCD"}
    served = leaked = leaked_intended = 0
    leaking_verifiers = set()
    for pk, items in shown.items():
        for options in items:
            served += 1
            hits = [o for o in options if any(continuation_text(o) in text for text in read[pk])]
            if hits:
                leaked += 1
                leaking_verifiers.add(pk)
                leaked_intended += any(continuation_text(o) in intended for o in hits)
    items = Item.objects.filter(is_gold=False).count()
    usable = Counter(Judgment.objects.filter(exposed=False).values_list("item_id", flat=True))
    return {
        "rule": "old (same context only)" if args.old_rule else "issue 20 (across windows)",
        "verifiers": args.verifiers, "sessions_per_file": args.sessions, "files": len(batches),
        "contexts": imported["contexts"], "items": items, "reveals": ContinuationReveal.objects.count(),
        "staffing": staffing,
        "prospective_served": served, "prospective_showing_a_read_continuation": leaked,
        "of_which_intended": leaked_intended, "verifiers_concerned": len(leaking_verifiers),
        "judgments": Judgment.objects.count(), "exposed": Judgment.objects.filter(exposed=True).count(),
        "items_reaching_k_usable": sum(1 for n in usable.values() if n >= 3),
        "share_reaching_k": round(sum(1 for n in usable.values() if n >= 3) / items, 4),
        "requests": requests, "seconds": round(seconds, 1),
    }


if __name__ == "__main__":
    main()
