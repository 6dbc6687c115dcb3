"""Benchmark of the scoring app at the paper's scale (5,943 contexts, 41,601 items).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialtom_bench .venv/bin/python bench/scoring.py [--contexts 5943]

Builds the items in one transaction (rolled back at the end, so the database is left as
it was), then times: the Easy set builder, a counterfactual import, a prediction upload
and its scoring job (run in process) on a release holding every item, and a second run's scoring (which adds McNemar
against the first). Prints one JSON object.
"""
import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dialtom_site.settings.test")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402

from annotation.models import Attribute, Batch, Context, Domain, Item, Task, Variant  # noqa: E402
from scoring.services import counterfactuals_import, easy_set_build, model_run_create, model_run_score  # noqa: E402


class Rollback(Exception):
    pass


def build(n_contexts: int) -> None:
    batch = Batch.objects.create(name="bench-scoring")
    domains = list(Domain.objects.order_by("code"))
    contexts = Context.objects.bulk_create(
        Context(
            context_id=f"s{n // 10:05d}-w{n % 10:02d}", domain=domains[n % 3], session_key=f"s{n // 10:05d}",
            window_index=n % 10, turns=[{"speaker": "initiator", "text": "hello"}], n_words=150,
        )
        for n in range(n_contexts)
    )
    items = []
    for context in contexts:
        for attribute in Attribute.values:
            items.append(Item(item_id=f"{context.context_id}-{attribute}", context=context, task=Task.RETROSPECTIVE,
                              attribute=attribute, question="q", options=[f"{context.context_id} {attribute} {x}" for x in "abcd"],
                              answer="ABCD"[Attribute.values.index(attribute) % 4], batch=batch))
        items.append(Item(item_id=f"{context.context_id}-prospective-trust", context=context, task=Task.PROSPECTIVE,
                          attribute="trust",
                          question="q", options=[f"{context.context_id} continuation {x}" for x in "abcd"], answer="A",
                          profile={"belief": "b"}, batch=batch))
    Item.objects.bulk_create(items, batch_size=5000)


def release_every_item() -> None:
    """A ready release holding every item, retained with its key as label (scoring needs one)."""
    from releases.models import Release, ReleaseItem, ReleaseStatus

    release = Release.objects.create(version="bench-scoring", status=ReleaseStatus.READY)
    ReleaseItem.objects.bulk_create(
        (ReleaseItem(release=release, item_id=pk, label=answer, posterior=1.0, n_judgments=3, retained=True)
         for pk, answer in Item.objects.values_list("pk", "answer").iterator()),
        batch_size=5000,
    )


def timed(label, results, fn):
    start = time.perf_counter()
    value = fn()
    results[label] = round(time.perf_counter() - start, 2)
    return value


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--contexts", type=int, default=5943)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    results = {"contexts": args.contexts}
    try:
        with transaction.atomic():
            timed("build_items_s", results, lambda: build(args.contexts))
            results["items"] = Item.objects.count()
            easy = timed("easy_set_build_s", results, lambda: easy_set_build(seed=7))
            results["easy_created"] = easy["created"]
            prospective = list(Item.objects.filter(task=Task.PROSPECTIVE, variant=Variant.HARD)
                               .values_list("item_id", flat=True)[:1000])
            lines = [json.dumps({"item_id": i, "profile": {"belief": "contradictory"}}) for i in prospective]
            timed("counterfactuals_import_1000_s", results, lambda: counterfactuals_import(lines=lines, source="cf"))
            timed("release_of_every_item_s", results, release_every_item)
            rng = random.Random(7)
            all_items = list(Item.objects.values_list("item_id", "variant"))
            results["predicted_items"] = len(all_items)
            for name in ("bench-a", "bench-b"):
                preds = [json.dumps({"item_id": i, "prediction": rng.choice("ABCD") if v != Variant.COUNTERFACTUAL
                                     else rng.choice(["A", "NOTA"])}) for i, v in all_items]
                run = timed(f"upload_{name}_s", results,
                            lambda: model_run_create(name=name, model_name=name, lines=preds, source=name))
                run = timed(f"score_{name}_s", results, lambda: model_run_score(run_id=run.pk))
                results[f"{name}_rate"] = round(run.overall_rate, 4)
            raise Rollback
    except Rollback:
        pass
    print(json.dumps(results))


if __name__ == "__main__":
    main()
