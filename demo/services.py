"""The demo's data: the bundled real-format samples (`demo_data/`), ingested, segmented and imported."""
from __future__ import annotations

from pathlib import Path
from typing import TextIO

from django.db import transaction

from annotation.authors import dialtom_import
from annotation.services import contexts_segment, corpus_ingest

DEMO_DATA_DIR = Path(__file__).resolve().parent / "demo_data"

DEMO_CORPORA = (("annomi", "AnnoMI-full.sample.csv"), ("esconv", "ESConv.sample.json"),
                ("pfg", "pfg_full_dialog.sample.csv"))


@transaction.atomic
def demo_data_load(*, stdout: TextIO | None = None) -> dict:
    """Ingest and segment the demo corpora and import the sample release (idempotent)."""
    report = {"ingest": {}}
    for corpus, name in DEMO_CORPORA:
        result = corpus_ingest(corpus=corpus, path=DEMO_DATA_DIR / "corpora" / name)
        report["ingest"][corpus] = {"created": result["created"], "skipped": result["skipped"]}
        if stdout:
            stdout.write(f"ingest {corpus}: {result['created']['sessions']} sessions created, "
                         f"{result['skipped']['sessions']} already there\n")
    segmented = contexts_segment()
    report["segment"] = {"created": segmented["created"], "domains": segmented["domains"]}
    release = dialtom_import(directory=DEMO_DATA_DIR / "dialtom-release")
    report["dialtom"] = {k: release[k] for k in ("retrospective", "prospective", "easy", "counterfactual", "created")}
    if stdout:
        stdout.write(f"segment: {segmented['created']['contexts']} contexts created\n")
        stdout.write(f"dialtom release: {release['created']['items']} items created "
                     f"({release['retrospective']} retrospective, {release['prospective']} prospective, "
                     f"{release['easy']} easy)\n")
    return report
