"""Similarity runs: a model's inferences scored against the accepted references (BLEU, ROUGE-L)."""
from statistics import mean

from django.db import transaction
from django.utils import timezone

from annotation.models import Attribute, Context
from annotation.parsers import InputError, jsonl_record
from dialtom_site import jobs

from .models import SimilarityRun, SimilarityRunStatus, SimilarityScore
from .selectors import accepted_references_by_context
from .services import InputFormatError


_ATTRIBUTE_ALIASES = {a: a for a in Attribute.values} | {
    "beliefs": "belief", "desires": "desire", "intentions": "intention", "emotions": "emotion",
}


def inferences_parse(*, lines, filename: str) -> list[dict]:
    """Model inferences, JSONL `{context_id, attribute, text}`; all-or-nothing, errors as `file:line: field: reason`."""
    records: list[dict] = []
    errors: list[str] = []
    seen: dict[tuple[str, str], int] = {}
    for number, raw in enumerate(lines, start=1):
        try:
            obj = jsonl_record(raw, source=filename, number=number)
        except InputError as exc:
            errors.append(str(exc))
            continue
        if obj is None:
            continue
        context_id, attribute, text = obj.get("context_id"), obj.get("attribute"), obj.get("text")
        if not isinstance(context_id, str) or not context_id.strip():
            errors.append(f"{filename}:{number}: context_id: missing")
            continue
        attr = _ATTRIBUTE_ALIASES.get(str(attribute or "").strip().lower())
        if attr is None:
            errors.append(f"{filename}:{number}: attribute: {attribute!r} is not one of {', '.join(Attribute.values)}")
            continue
        if not isinstance(text, str) or not text.strip():
            errors.append(f"{filename}:{number}: text: missing or empty")
            continue
        key = (context_id.strip(), attr)
        if key in seen:
            errors.append(f"{filename}:{number}: context_id: {key[0]} / {attr} repeats line {seen[key]}")
            continue
        seen[key] = number
        records.append({"context_id": key[0], "attribute": attr, "text": text.strip()})
    known = set(Context.objects.filter(context_id__in={r["context_id"] for r in records}).values_list("context_id", flat=True))
    for r in records:
        if r["context_id"] not in known:
            errors.append(f"{filename}:{seen[(r['context_id'], r['attribute'])]}: context_id: unknown context {r['context_id']!r}")
    if not records and not errors:
        errors.append(f"{filename}:1: line: the file holds no inference")
    if errors:
        raise InputFormatError(sorted(errors, key=lambda m: int(m.split(":")[1])))
    return records


def similarity_run_create(*, name: str, records: list[dict], reference_set_id: int | None = None, created_by=None) -> SimilarityRun:
    """Store an uploaded set of inferences and queue its scoring after commit (it waits, and
    the jobs sweep queues it, while the broker is unreachable)."""
    with transaction.atomic():
        run = SimilarityRun.objects.create(
            name=(name or "model inferences")[:200], reference_set_id=reference_set_id, inferences=records, created_by=created_by
        )
        jobs.job_queue_on_commit(SimilarityRun, run.pk)
    return run


def similarity_scores(*, inferences: list[dict], references: dict[tuple[str, str], list[str]]) -> list[dict]:
    """Per attribute and over all: corpus BLEU (sacrebleu; every accepted reference of the context is one
    of its references) and ROUGE-L (rouge-score; best F over the references, averaged over inferences)."""
    import sacrebleu
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    groups: dict[str, list[tuple[str, list[str]]]] = {a: [] for a in [*Attribute.values, "all"]}
    skipped = {a: 0 for a in groups}
    for record in inferences:
        refs = references.get((record["context_id"], record["attribute"]), [])
        if not refs:
            skipped[record["attribute"]] += 1
            skipped["all"] += 1
            continue
        groups[record["attribute"]].append((record["text"], refs))
        groups["all"].append((record["text"], refs))
    out = []
    for attribute, pairs in groups.items():
        if not pairs:
            if skipped[attribute]:
                out.append({"attribute": attribute, "bleu": 0.0, "rouge_l": 0.0, "n_contexts": 0, "n_references": 0,
                            "n_skipped": skipped[attribute]})
            continue
        hyps = [h for h, _ in pairs]
        width = max(len(r) for _, r in pairs)
        ref_streams = [[r[i] if i < len(r) else None for _, r in pairs] for i in range(width)]
        bleu = sacrebleu.corpus_bleu(hyps, ref_streams).score
        rouge = mean(scorer.score_multi(r, h)["rougeL"].fmeasure for h, r in pairs)
        out.append({
            "attribute": attribute, "bleu": round(bleu, 4), "rouge_l": round(rouge, 6), "n_contexts": len(pairs),
            "n_references": sum(len(r) for _, r in pairs), "n_skipped": skipped[attribute],
        })
    return out


def similarity_run_compute(*, run_id: int) -> SimilarityRun:
    """Score a run; safe to run twice (a finished run is left as it is, a failed one is redone)."""
    run = SimilarityRun.objects.get(pk=run_id)
    if run.status == SimilarityRunStatus.DONE:
        return run
    jobs.job_start(SimilarityRun, run_id, running=SimilarityRunStatus.RUNNING, from_statuses=SimilarityRunStatus.values)
    SimilarityRun.objects.filter(pk=run_id).update(error="")
    try:
        with jobs.job_heartbeat(SimilarityRun, run_id):
            references = accepted_references_by_context(reference_set_id=run.reference_set_id)
            rows = similarity_scores(inferences=run.inferences, references=references)
    except Exception as exc:  # recorded for staff to see; the task logs the traceback
        SimilarityRun.objects.filter(pk=run_id).update(status=SimilarityRunStatus.FAILED, error=str(exc)[:2000])
        raise
    with transaction.atomic():
        run = SimilarityRun.objects.select_for_update().get(pk=run_id)
        SimilarityScore.objects.filter(run=run).delete()
        SimilarityScore.objects.bulk_create(SimilarityScore(run=run, **row) for row in rows)
        run.status = SimilarityRunStatus.DONE
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "finished_at"])
    return run
