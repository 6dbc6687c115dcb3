"""The synthetic DialToM set (make_synthetic.py, copied here: stdlib only) loaded by bulk insert.

Used by the aggregation tests and by bench/aggregate.py. Items go in with plain
bulk_create (the real item importer lives in another app); judgments go through
`aggregation.services.judgments_import`, the same path as `manage.py import_judgments`.
"""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from annotation.services import domains_ensure as ensure_domains  # noqa: F401,E402 (re-exported)

GENERATOR = Path(__file__).with_name("make_synthetic.py")


def generate(out_dir: Path, *, contexts: int, batch_size: int = 500, seed: int = 7, workers: int = 22) -> Path:
    subprocess.run(
        [sys.executable, str(GENERATOR), str(out_dir), "--contexts", str(contexts), "--batch-size", str(batch_size),
         "--seed", str(seed), "--workers", str(workers)],
        check=True, capture_output=True,
    )
    return out_dir


def load_items(out_dir: Path, *, chunk: int = 5000) -> dict[str, int]:
    """Bulk-insert the contexts, batches and items of a synthetic set; returns batch name -> pk."""
    from annotation.models import Batch, Context, Item

    ensure_domains()

    contexts = [json.loads(line) for line in (out_dir / "contexts.jsonl").open()]
    Context.objects.bulk_create(
        [
            Context(
                context_id=c["context_id"], domain_id=c["domain"], session_key=c["session_id"],
                window_index=c["window_index"], turns=c["turns"],
                n_words=sum(len(t["text"].split()) for t in c["turns"]),
            )
            for c in contexts
        ],
        batch_size=chunk,
    )
    context_pk = dict(Context.objects.filter(context_id__in=[c["context_id"] for c in contexts]).values_list("context_id", "id"))
    items = [json.loads(line) for line in (out_dir / "items.jsonl").open()]
    names = sorted({i["batch"] for i in items})
    Batch.objects.bulk_create([Batch(name=n, overlap=3) for n in names], ignore_conflicts=True)
    batch_pk = dict(Batch.objects.filter(name__in=names).values_list("name", "id"))
    Item.objects.bulk_create(
        [
            Item(
                item_id=i["item_id"], context_id=context_pk[i["context_id"]], task=i["task"],
                attribute=i.get("attribute", ""), variant=i.get("variant", "hard"),
                target_speaker=i.get("target_speaker", ""), question=i["question"], options=i["options"],
                answer=i["answer"], profile=i.get("profile", {}), batch_id=batch_pk[i["batch"]],
            )
            for i in items
        ],
        batch_size=chunk,
    )
    return batch_pk


def read_truth(out_dir: Path) -> dict[str, tuple[str, bool]]:
    with (out_dir / "truth.csv").open() as f:
        return {r["item_id"]: (r["true_label"], r["keep"] == "1") for r in csv.DictReader(f)}


def read_judgments(out_dir: Path) -> list[tuple[str, str, str]]:
    with (out_dir / "judgments.csv").open() as f:
        return [(r["item_id"], r["worker"], r["label"]) for r in csv.DictReader(f)]
