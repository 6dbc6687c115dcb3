"""Seed a studio database for bench/queue_compare.py (run by the studio's .venv python).

    python bench/compare/studio_setup.py --tree TREE --batches qc-a,qc-b --items 5000 --annotators 100

TREE is the studio's source tree to use (the working tree, or a `git worktree` of an older
commit): its code migrates DATABASE_URL's database (created empty by the caller) and makes,
the ordinary way, one pool of verifiers with API tokens (`create_people --tokens`) and one
batch per name of --items items at overlap k (`batch_open --overlap K --pool POOL`). Each
item is a retrospective question about its own context of ~200 words. Prints one JSON line:
{"tokens": [...], "batches": {...}}. Uses only models and commands that 811de43 has.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
from pathlib import Path

WORDS = ("well I think we could talk about how the week went and what made the drinking harder on the days "
         "when work was stressful and you felt nobody at home was really listening to you").split()


def dialogue(n: int, words: int = 200) -> list[dict]:
    """Alternating turns of about `words` words in all, distinct per n."""
    turns, total, t = [], 0, 0
    while total < words:
        size = 18 + (n + t) % 9
        text = " ".join(WORDS[(n + t + i) % len(WORDS)] for i in range(size))
        turns.append({"speaker": ("initiator", "recipient")[t % 2], "text": f"({n}.{t}) {text}."})
        total += size + 1
        t += 1
    return turns


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", required=True)
    parser.add_argument("--batches", required=True, help="comma-separated batch names")
    parser.add_argument("--items", type=int, default=5000, help="items per batch")
    parser.add_argument("--annotators", type=int, default=100)
    parser.add_argument("--overlap", type=int, default=3)
    parser.add_argument("--pool", default="qc-verifiers")
    args = parser.parse_args()

    sys.path[:1] = [args.tree]  # not this script's folder
    os.chdir(args.tree)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dialtom_site.settings.test")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from annotation.models import Batch, Context, Domain, Item

    domains = list(Domain.objects.order_by("code"))
    for b, name in enumerate(args.batches.split(",")):
        batch = Batch.objects.create(name=name, overlap=args.overlap)
        contexts = Context.objects.bulk_create([
            Context(context_id=f"{name}-s{n:06d}-w00", domain=domains[n % len(domains)], session_key=f"{name}-s{n:06d}",
                    window_index=0, turns=dialogue(n + 7919 * b), n_words=200)
            for n in range(args.items)
        ], batch_size=2000)
        Item.objects.bulk_create([
            Item(item_id=f"{c.context_id}-trust", context=c, task="retrospective", attribute="trust",
                 target_speaker="recipient", question="How much does the client trust the counselor at this point?",
                 options=[f"trust option {x} for {c.context_id}" for x in "ABCD"], answer="ABCD"[n % 4], batch=batch)
            for n, c in enumerate(contexts)
        ], batch_size=2000)

    with tempfile.TemporaryDirectory() as tmp:
        people = Path(tmp) / "people.csv"
        people.write_text("username,email,role,pools\n" + "".join(
            f"qc-v{i:03d},qc-v{i:03d}@example.org,verifier,{args.pool}\n" for i in range(args.annotators)))
        out = io.StringIO()
        call_command("create_people", str(people), "--json", "--tokens", stdout=out)
    created = json.loads(out.getvalue().strip().splitlines()[-1])
    tokens = [p["token"] for p in created["people"]]
    for name in args.batches.split(","):
        call_command("batch_open", name, "--overlap", str(args.overlap), "--pool", args.pool, "--json", stdout=io.StringIO())
    from django.db import connection

    with connection.cursor() as cursor:  # fresh bulk rows: give the planner statistics, as a live database has
        cursor.execute("VACUUM ANALYZE")
    print(json.dumps({"tokens": tokens, "batches": args.batches.split(",")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
