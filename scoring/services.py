"""Writes: the Easy set, counterfactual items, model runs and their scoring, human baselines."""
from __future__ import annotations

import random
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Pool, Role, User
from dialtom_site import jobs
from annotation.models import Attribute, Batch, Item, Task, Variant
from annotation.parsers import InputError, jsonl_record
from releases.models import Release, ReleaseItem, ReleaseStatus

from . import selectors, stats
from .models import PREDICTION_LETTERS, BaselineRun, ModelRun, Prediction, RunComparison, ScoreStatus

MAX_REPORTED_ERRORS = 50
RESERVED_RUN_NAMES = {"compare", "baselines"}  # URL words under /leaderboard/ and /api/v1/models/
BASELINE_EXCLUSION_REASON = "human baseline participant: judgments scored, never aggregated"


class ScoringError(Exception):
    """A run cannot be scored (it names no release)."""


class InputErrors(Exception):
    """Bad input, one `file:line: field: reason` per problem; nothing was written."""

    def __init__(self, errors: list[str]):
        def line_number(error: str) -> int:
            found = re.search(r":(\d+): ", error)
            return int(found.group(1)) if found else 0

        errors = sorted(errors, key=line_number)  # in file order, whichever check found them
        self.errors = errors[:MAX_REPORTED_ERRORS]
        more = len(errors) - len(self.errors)
        super().__init__("\n".join(self.errors) + (f"\n… and {more} more" if more else ""))


def _jsonl_records(*, lines: Iterable[str], source: str, errors: list[str]) -> list[tuple[int, dict]]:
    """Every well-formed record of an upload; each bad line adds its error (all are reported)."""
    records = []
    for number, line in enumerate(lines, start=1):
        try:
            record = jsonl_record(line, source=source, number=number)
        except InputError as exc:
            errors.append(str(exc))
            continue
        if record is not None:
            records.append((number, record))
    if not records and not errors:
        errors.append(f"{source}:1: file: no records")
    return records


def release_for_scoring(*, version: str, source: str = "release") -> Release:
    """The ready release a run is scored on: `version`, or the latest ready one when blank.

    Raises InputErrors when there is none: scoring needs audited, aggregated items.
    """
    version = (version or "").strip()
    ready = Release.objects.filter(status=ReleaseStatus.READY)
    release = ready.filter(version=version).first() if version else ready.order_by("-created_at", "-id").first()
    if release is not None:
        return release
    known = ", ".join(ready.order_by("-created_at", "-id").values_list("version", flat=True)[:10]) or "none yet"
    if version:
        raise InputErrors([f"{source}:0: release: {version!r} is not a ready release (ready: {known})"])
    raise InputErrors(
        [f"{source}:0: release: no ready release to score on: scoring needs audited items (make a release first)"]
    )


def _batch_named(name: str | None) -> Batch | None:
    return Batch.objects.get_or_create(name=name)[0] if name else None


# --- Easy set -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Continuation:
    item_id: str
    session_key: str
    text: str


def _pick_distractors(*, rng: random.Random, pool: list[_Continuation], session_key: str, correct: str) -> list | None:
    """Three true continuations from other sessions, pairwise different and unlike the answer."""

    def acceptable(candidate, chosen):
        return (
            candidate.session_key != session_key
            and candidate.text.strip() != correct.strip()
            and all(candidate.text.strip() != c.text.strip() for c in chosen)
        )

    chosen: list[_Continuation] = []
    for _ in range(200):  # rejection sampling: cheap when the pool is large
        candidate = pool[rng.randrange(len(pool))]
        if acceptable(candidate, chosen):
            chosen.append(candidate)
            if len(chosen) == 3:
                return chosen
    rest = [c for c in pool if c not in chosen]  # small pools: draw from what is left, in order
    rng.shuffle(rest)
    for candidate in rest:
        if acceptable(candidate, chosen):
            chosen.append(candidate)
            if len(chosen) == 3:
                return chosen
    return None


@transaction.atomic
def easy_set_build(*, seed: int = 7, batch_name: str | None = None, into_batch: str | None = None) -> dict:
    """Make an `easy` variant of each prospective (hard) item that has none yet.

    Its distractors are the true continuations (correct options) of prospective items of
    other sessions; distractors and the answer's position come from a RNG seeded by
    `seed` and the item's id, so the same seed gives the same set. Idempotent: items that
    already have an Easy variant (for their context and attribute) are skipped.
    """
    originals = Item.objects.filter(task=Task.PROSPECTIVE, variant=Variant.HARD).select_related("context")
    pool = sorted(
        (
            _Continuation(item.item_id, item.context.session_key, item.options["ABCD".index(item.answer)])
            for item in originals
            if item.answer in "ABCD"
        ),
        key=lambda c: c.item_id,
    )
    parents = originals.select_for_update(of=("self",)).order_by("pk")
    if batch_name:
        parents = parents.filter(batch__name=batch_name)
    parents = list(parents)
    existing = set(
        Item.objects.filter(task=Task.PROSPECTIVE, variant=Variant.EASY, context__in=[p.context_id for p in parents])
        .values_list("context_id", "attribute")
    )
    target = _batch_named(into_batch)
    created, skipped, unbuildable = [], 0, []
    for parent in sorted(parents, key=lambda p: p.item_id):
        if (parent.context_id, parent.attribute) in existing:
            skipped += 1
            continue
        rng = random.Random(f"easy:{seed}:{parent.item_id}")
        correct = parent.options["ABCD".index(parent.answer)]
        distractors = _pick_distractors(rng=rng, pool=pool, session_key=parent.context.session_key, correct=correct)
        if distractors is None:
            unbuildable.append(parent.item_id)
            continue
        position = rng.randrange(4)
        options = [d.text for d in distractors]
        options.insert(position, correct)
        created.append(
            Item(
                item_id=f"{parent.item_id}-easy",
                context=parent.context,
                task=Task.PROSPECTIVE,
                attribute=parent.attribute,
                variant=Variant.EASY,
                target_speaker=parent.target_speaker,
                question=parent.question,
                options=options,
                answer="ABCD"[position],
                profile=parent.profile,
                batch=target,
                parent=parent,
                metadata={"built_by": "easy_set_build", "seed": seed, "distractors_from": [d.item_id for d in distractors]},
            )
        )
    Item.objects.bulk_create(created)
    return {
        "seed": seed,
        "batch": batch_name,
        "created": len(created),
        "skipped_existing": skipped,
        "unbuildable": unbuildable,
    }


# --- Counterfactual items ---------------------------------------------------------------


def _profile_errors(profile) -> str | None:
    if not isinstance(profile, dict) or not profile:
        return "a non-empty object of attribute → text is needed"
    unknown = sorted(set(profile) - set(Attribute.values))
    if unknown:
        return f"unknown attribute(s) {', '.join(unknown)} (expected {', '.join(Attribute.values)})"
    if any(not isinstance(v, str) or not v.strip() for v in profile.values()):
        return "every attribute needs a non-empty text"
    return None


@transaction.atomic
def counterfactuals_import(*, lines: Iterable[str], source: str, into_batch: str | None = None) -> dict:
    """Create a `counterfactual` item (answer NOTA) for each `{item_id, profile}` record.

    The original must be a prospective hard item; the new item keeps its context, question
    and four options, replaces the profile and is answered "None of the above" (shown as a
    fifth option). All or nothing; re-importing the same profile is a no-op.
    """
    errors: list[str] = []
    records = _jsonl_records(lines=lines, source=source, errors=errors)
    wanted = [r.get("item_id") for _, r in records if isinstance(r.get("item_id"), str)]
    originals = {i.item_id: i for i in Item.objects.select_for_update().filter(item_id__in=wanted).order_by("pk")}
    existing = {
        i.parent.item_id: i
        for i in Item.objects.filter(variant=Variant.COUNTERFACTUAL, parent__item_id__in=wanted).select_related("parent")
    }
    seen: dict[str, int] = {}
    plans = []
    for number, record in records:
        where = f"{source}:{number}"
        item_id = record.get("item_id")
        if not isinstance(item_id, str) or not item_id.strip():
            errors.append(f"{where}: item_id: required (a string)")
            continue
        if item_id in seen:
            errors.append(f"{where}: item_id: {item_id} already given on line {seen[item_id]}")
            continue
        seen[item_id] = number
        original = originals.get(item_id)
        if original is None:
            errors.append(f"{where}: item_id: unknown item {item_id}")
            continue
        if original.task != Task.PROSPECTIVE or original.variant != Variant.HARD:
            errors.append(f"{where}: item_id: {item_id} is not a prospective hard item")
            continue
        if "profile" not in record:
            errors.append(f"{where}: profile: required")
            continue
        problem = _profile_errors(record["profile"])
        if problem:
            errors.append(f"{where}: profile: {problem}")
            continue
        profile = {k: v.strip() for k, v in record["profile"].items()}
        if profile == original.profile:
            errors.append(f"{where}: profile: identical to the original's profile")
            continue
        current = existing.get(item_id)
        if current is not None and current.profile != profile:
            errors.append(f"{where}: profile: {current.item_id} already exists with another profile")
            continue
        plans.append((original, profile, current))
    if errors:
        raise InputErrors(errors)
    target = _batch_named(into_batch)
    created = [
        Item(
            item_id=f"{original.item_id}-counterfactual",
            context_id=original.context_id,
            task=Task.PROSPECTIVE,
            attribute=original.attribute,
            variant=Variant.COUNTERFACTUAL,
            target_speaker=original.target_speaker,
            question=original.question,
            options=original.options,
            answer="NOTA",
            profile=profile,
            batch=target,
            parent=original,
            metadata={"built_by": "counterfactuals_import", "source": source},
        )
        for original, profile, current in plans
        if current is None
    ]
    Item.objects.bulk_create(created)
    return {"source": source, "records": len(records), "created": len(created), "unchanged": len(plans) - len(created)}


# --- Model runs ---------------------------------------------------------------------------


class UploadLimited(InputErrors):
    """A release reader uploaded DIALTOM_READER_RUNS_PER_DAY runs in the last 24 hours already."""


def run_upload_check(*, uploaded_by: User | None, size: int, source: str) -> None:
    """The limits on an upload, checked by the doors before reading a file and again by
    `model_run_create`: at most DIALTOM_RUN_UPLOAD_MAX_BYTES; a release reader at most
    DIALTOM_READER_RUNS_PER_DAY runs in 24 hours (staff are not limited)."""
    limit = settings.DIALTOM_RUN_UPLOAD_MAX_BYTES
    if size > limit:
        raise InputErrors([f"{source}:0: file: {size} bytes, over the limit of {limit} bytes"])
    if uploaded_by is None or uploaded_by.is_project_staff:
        return
    since = timezone.now() - timedelta(hours=24)
    recent = ModelRun.objects.filter(uploaded_by=uploaded_by, created_at__gte=since).count()
    if recent >= settings.DIALTOM_READER_RUNS_PER_DAY:
        raise UploadLimited(
            [f"{source}:0: file: {recent} runs uploaded in the last 24 hours, the limit is "
             f"{settings.DIALTOM_READER_RUNS_PER_DAY}: try again later"]
        )


@transaction.atomic
def model_run_create(
    *,
    name: str,
    model_name: str,
    lines: Iterable[str],
    source: str,
    release: str = "",
    description: str = "",
    uploaded_by: User | None = None,
) -> ModelRun:
    """Store a model's predictions (`{item_id, prediction, reasoning?}` a line) and queue scoring.

    The run is scored on a release (`release`: a version; blank: the latest ready release):
    a prediction for an item that release did not audit is refused, like any bad line.
    A release reader's run is theirs (they and staff see it) until staff publish it
    (`model_run_publish`); staff's runs are published at once. Limits: `run_upload_check`.
    """
    lines = list(lines)
    if uploaded_by is not None:
        User.objects.select_for_update().filter(pk=uploaded_by.pk).first()  # one upload of a person at a time: the rate limit holds
    run_upload_check(uploaded_by=uploaded_by, size=sum(len(line.encode("utf-8")) + 1 for line in lines), source=source)
    errors: list[str] = []
    if name in RESERVED_RUN_NAMES:
        errors.append(f"{source}:0: name: {name!r} is reserved")
    elif ModelRun.objects.filter(name=name).exists():
        errors.append(f"{source}:0: name: a run named {name!r} exists already")
    try:
        scored_on = release_for_scoring(version=release, source=source)
    except InputErrors as exc:
        errors.extend(exc.errors)
        scored_on = None
    records = _jsonl_records(lines=lines, source=source, errors=errors)
    wanted = [r.get("item_id") for _, r in records if isinstance(r.get("item_id"), str)]
    found = list(Item.objects.filter(item_id__in=wanted).values_list("item_id", "pk", "variant"))
    items = {item_id: pk for item_id, pk, _ in found}
    variants = {item_id: variant for item_id, _, variant in found}
    audited = (
        set(ReleaseItem.objects.filter(release=scored_on, item_id__in=items.values()).values_list("item_id", flat=True))
        if scored_on
        else None
    )
    seen: dict[str, int] = {}
    rows = []
    for number, record in records:
        where = f"{source}:{number}"
        item_id = record.get("item_id")
        if not isinstance(item_id, str) or not item_id:
            errors.append(f"{where}: item_id: required (a string)")
            continue
        if item_id in seen:
            errors.append(f"{where}: item_id: {item_id} already predicted on line {seen[item_id]}")
            continue
        seen[item_id] = number
        if item_id not in items:
            errors.append(f"{where}: item_id: unknown item {item_id}")
            continue
        if audited is not None and items[item_id] not in audited:
            errors.append(
                f"{where}: item_id: {item_id} was not audited for release {scored_on.version}: only its audited items are scored"
            )
            continue
        letter = record.get("prediction")
        letter = letter.strip().upper() if isinstance(letter, str) else letter
        if letter not in PREDICTION_LETTERS:
            errors.append(f"{where}: prediction: must be one of {', '.join(PREDICTION_LETTERS)}")
            continue
        if letter == "NOTA" and variants[item_id] != Variant.COUNTERFACTUAL:
            errors.append(f"{where}: prediction: NOTA is only shown for counterfactual items")
            continue
        reasoning = record.get("reasoning", "")
        if reasoning is None:
            reasoning = ""
        if not isinstance(reasoning, str):
            errors.append(f"{where}: reasoning: must be a string")
            continue
        rows.append((items[item_id], letter, reasoning))
    if errors:
        raise InputErrors(errors)
    run = ModelRun.objects.create(
        name=name,
        model_name=model_name,
        release=scored_on,
        description=description,
        uploaded_by=uploaded_by,
        published=uploaded_by is None or uploaded_by.is_project_staff,
        n_predictions=len(rows),
    )
    Prediction.objects.bulk_create(
        [Prediction(run=run, item_id=item, prediction=letter, reasoning=reasoning) for item, letter, reasoning in rows],
        batch_size=2000,
    )
    jobs.job_queue_on_commit(ModelRun, run.pk)
    return run


@transaction.atomic
def model_run_publish(*, run: ModelRun, published: bool = True) -> ModelRun:
    """Staff put a run on (or take it off) the leaderboard every release reader sees."""
    ModelRun.objects.filter(pk=run.pk).update(published=published)
    run.refresh_from_db()
    return run


def _mark(model, pk: int, **fields) -> None:
    model.objects.filter(pk=pk).update(**fields)


def _start(model, pk: int) -> None:
    """Any state may be scored (again): every stored number is recomputed."""
    jobs.job_start(model, pk, running=ScoreStatus.RUNNING, from_statuses=ScoreStatus.values)
    _mark(model, pk, error="")


def model_run_score(*, run_id: int) -> ModelRun:
    """Score a run on its release (retained items, against the release's labels) and store
    scores, statistics and comparisons with the runs scored on the same release.

    Safe to run twice: every stored number is recomputed from the predictions.
    """
    _start(ModelRun, run_id)
    try:
        with jobs.job_heartbeat(ModelRun, run_id), transaction.atomic():
            run = ModelRun.objects.select_for_update().get(pk=run_id)
            if run.release_id is None:
                raise ScoringError(f"run {run.name} names no release: upload it again naming the release to score on")
            predictions = list(run.predictions.values_list("pk", "item_id", "prediction"))
            labels = selectors.release_labels(release_id=run.release_id, items=run.predictions.values("item_id"))
            verdicts: dict[bool | None, list[int]] = {True: [], False: [], None: []}
            for pk, item_id, letter in predictions:
                reference = labels.get(item_id)
                verdicts[None if reference is None else letter == reference].append(pk)
            for verdict, pks in verdicts.items():  # three UPDATEs, whatever the size of the run
                if pks:
                    Prediction.objects.filter(pk__in=pks).update(correct=verdict)
            outcomes = selectors.run_outcomes(run=run)
            run.scores = stats.correctness_table(outcomes)
            run.scores["n_unreleased"] = len(verdicts[None])
            run.stats = selectors.run_statistics(outcomes=outcomes)
            run.status = ScoreStatus.SUCCEEDED
            run.scored_at = timezone.now()
            run.save(update_fields=["scores", "stats", "status", "scored_at"])
            same_release = ModelRun.objects.filter(status=ScoreStatus.SUCCEEDED, release_id=run.release_id)
            for other in same_release.exclude(pk=run.pk).order_by("pk"):  # figures on one release only
                first, second = sorted([run, other], key=lambda r: r.pk)
                RunComparison.objects.update_or_create(
                    run_a=first, run_b=second, defaults={"result": selectors.runs_mcnemar(run_a=first, run_b=second)}
                )
            return run
    except Exception as exc:
        _mark(ModelRun, run_id, status=ScoreStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
        raise


@transaction.atomic
def model_run_rescore(*, run: ModelRun) -> ModelRun:
    """Queue a new scoring of a run (e.g. after a new aggregation changed the released labels)."""
    _mark(ModelRun, run.pk, status=ScoreStatus.WAITING)
    jobs.job_queue_on_commit(ModelRun, run.pk)
    run.refresh_from_db()
    return run


# --- Human baselines ----------------------------------------------------------------------


@transaction.atomic
def baseline_pool_create(*, name: str, usernames: list[str]) -> Pool:
    """A pool of baseline participants: each gets role participant and is kept out of aggregation.

    Their judgments come through the same audit form as verifiers', but
    `excluded_from_aggregation` keeps them out of Dawid–Skene; only the baseline reads them.
    """
    users = list(User.objects.select_for_update().filter(username__in=usernames).order_by("pk"))
    missing = sorted(set(usernames) - {u.username for u in users})
    if missing:
        raise InputErrors([f"pool:{name}: usernames: unknown user(s) {', '.join(missing)}"])
    staff = [u.username for u in users if u.is_project_staff]
    if staff:
        raise InputErrors([f"pool:{name}: usernames: staff cannot be baseline participants ({', '.join(staff)})"])
    for user in users:
        user.role = Role.PARTICIPANT
        user.excluded_from_aggregation = True
        user.exclusion_reason = BASELINE_EXCLUSION_REASON
        user.save(update_fields=["role", "excluded_from_aggregation", "exclusion_reason"])
    pool, _ = Pool.objects.get_or_create(name=name)
    pool.members.add(*users)
    return pool


@transaction.atomic
def baseline_run_create(*, pool: Pool, release: str = "", started_by: User | None = None) -> BaselineRun:
    """Queue the scoring of a pool's judgments on a release (blank: the latest ready one)."""
    scored_on = release_for_scoring(version=release, source=f"pool:{pool.name}")
    run = BaselineRun.objects.create(pool=pool, release=scored_on, started_by=started_by)
    jobs.job_queue_on_commit(BaselineRun, run.pk)
    return run


def baseline_run_score(*, run_id: int) -> BaselineRun:
    """Score a pool's judgments on its release's retained items; safe to run twice."""
    _start(BaselineRun, run_id)
    try:
        with jobs.job_heartbeat(BaselineRun, run_id), transaction.atomic():
            run = BaselineRun.objects.select_for_update().select_related("pool").get(pk=run_id)
            if run.release_id is None:
                raise ScoringError(f"baseline {run.pk} names no release: start a new one")
            result = selectors.pool_correctness(pool=run.pool, release_id=run.release_id)
            run.scores, run.by_person = result["scores"], result["by_person"]
            run.status, run.scored_at = ScoreStatus.SUCCEEDED, timezone.now()
            run.save(update_fields=["scores", "by_person", "status", "scored_at"])
            return run
    except Exception as exc:
        _mark(BaselineRun, run_id, status=ScoreStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
        raise
