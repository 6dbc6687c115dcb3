"""Reads: the released labels, a run's outcomes, the leaderboard, comparisons, baselines."""
from __future__ import annotations

from django.db.models import Q, QuerySet

from accounts.models import Pool
from annotation.models import Item, Variant
from releases.models import Release, ReleaseItem, ReleaseStatus
from verification.models import Judgment

from . import stats
from .models import BaselineRun, ModelRun, RunComparison, ScoreStatus


def release_labels(*, release_id: int, items=None) -> dict[int, str | None]:
    """The label each item (pk; of `items`, default all) is scored against on a release:
    the release's label when it retained the item, None when it audited and dropped it.
    An item absent from the result was not audited for the release (never scored)."""
    entries = ReleaseItem.objects.filter(release_id=release_id)
    if items is not None:
        entries = entries.filter(item_id__in=items)
    return {item_id: label if retained else None for item_id, label, retained in entries.values_list("item_id", "label", "retained")}


def _item_facets(items: QuerySet[Item]) -> dict[int, dict]:
    return {
        row["pk"]: row
        for row in items.values("pk", "task", "attribute", "variant", "context__domain_id")
    }


def _outcome(facets: dict, correct: bool) -> stats.Outcome:
    return stats.Outcome(
        task=facets["task"],
        domain=facets["context__domain_id"],
        attribute=facets["attribute"],
        variant=facets["variant"],
        correct=correct,
        nota_shown=facets["variant"] == Variant.COUNTERFACTUAL,
    )


def run_outcomes(*, run: ModelRun) -> list[stats.Outcome]:
    """The scored predictions of a run (those with `correct` set) as outcomes: one query."""
    rows = run.predictions.exclude(correct=None).values(
        "correct", "item__task", "item__attribute", "item__variant", "item__context__domain_id"
    )
    return [
        _outcome({key.removeprefix("item__"): value for key, value in row.items()}, row["correct"]) for row in rows
    ]


def run_statistics(*, outcomes: list[stats.Outcome]) -> dict:
    """The retrospective–prospective gap (hard items) and Easy vs Hard (prospective items)."""
    hard = [o for o in outcomes if o.variant == Variant.HARD]
    retro = [o.correct for o in hard if o.task == "retrospective"]
    prosp = [o.correct for o in hard if o.task == "prospective"]
    gap = stats.chi_square_gap(
        a_correct=sum(retro), a_wrong=len(retro) - sum(retro), b_correct=sum(prosp), b_wrong=len(prosp) - sum(prosp)
    )
    easy = [int(o.correct) for o in outcomes if o.task == "prospective" and o.variant == Variant.EASY]
    return {
        "retrospective_vs_prospective": gap,
        "easy_vs_hard": stats.mann_whitney_easy_hard(easy=easy, hard=[int(c) for c in prosp]),
    }


def runs_mcnemar(*, run_a: ModelRun, run_b: ModelRun) -> dict:
    """McNemar's test of two runs on the released items both scored."""
    a = dict(run_a.predictions.exclude(correct=None).values_list("item_id", "correct"))
    b = dict(run_b.predictions.exclude(correct=None).values_list("item_id", "correct"))
    common = a.keys() & b.keys()
    counts = {"both": 0, "only_a": 0, "only_b": 0, "neither": 0}
    for item_id in common:
        key = {(True, True): "both", (True, False): "only_a", (False, True): "only_b", (False, False): "neither"}
        counts[key[(a[item_id], b[item_id])]] += 1
    return stats.mcnemar(**counts)


def runs_comparable(*, run_a: ModelRun, run_b: ModelRun) -> str | None:
    """Why two runs cannot be compared (None if they can): only runs scored on one release."""
    if run_a.release_id != run_b.release_id:
        versions = [r.release.version if r.release_id else "none" for r in (run_a, run_b)]
        return f"{run_a.name} and {run_b.name} are scored on different releases ({versions[0]}, {versions[1]})"
    return None


def runs_compare(*, run_a: ModelRun, run_b: ModelRun) -> dict:
    """The stored comparison of two scored runs (computed now if the job has not stored it)."""
    first, second = sorted([run_a, run_b], key=lambda r: r.pk)
    stored = RunComparison.objects.filter(run_a=first, run_b=second).first()
    result = stored.result if stored else runs_mcnemar(run_a=first, run_b=second)
    if first.pk != run_a.pk:  # report from the caller's point of view: a is the first asked
        (both, only_a), (only_b, neither) = result["table"]
        result = {**result, "table": [[both, only_b], [only_a, neither]],
                  "rate_a": result["rate_b"], "rate_b": result["rate_a"]}
    return {"a": run_a.name, "b": run_b.name, "mcnemar": result, "stored": stored is not None}


def runs_visible_to(*, user) -> QuerySet[ModelRun]:
    """The runs a person may see: staff every run; a release reader the published ones and their own."""
    runs = ModelRun.objects.select_related("release", "uploaded_by")
    if user.is_project_staff:
        return runs
    return runs.filter(Q(published=True) | Q(uploaded_by=user))


def leaderboard_releases(*, user) -> list[Release]:
    """The ready releases, newest first: each has a leaderboard of its own."""
    return list(Release.objects.filter(status=ReleaseStatus.READY).order_by("-created_at", "-id"))


def leaderboard_release(*, user, version: str = "") -> Release | None:
    """The release a leaderboard ranks: `version` when given (None if it is not a ready
    release), else the latest ready release holding a scored run the person sees, else the latest."""
    ready = Release.objects.filter(status=ReleaseStatus.READY).order_by("-created_at", "-id")
    if version:
        return ready.filter(version=version).first()
    scored = runs_visible_to(user=user).filter(status=ScoreStatus.SUCCEEDED).values("release_id")
    return ready.filter(pk__in=scored).first() or ready.first()


def leaderboard_runs(*, user, release: Release | None) -> list[ModelRun]:
    """The scored runs on one release the person sees, best overall Correctness Rate first
    (ties: name): runs on different releases are on different items and labels, never ranked together."""
    if release is None:
        return []
    runs = list(runs_visible_to(user=user).filter(status=ScoreStatus.SUCCEEDED, release=release))
    return sorted(runs, key=lambda r: (-(r.overall_rate or 0.0), r.name))


def latest_baselines() -> list[BaselineRun]:
    """The latest succeeded baseline run of each pool."""
    seen: set[int] = set()
    latest = []
    for run in BaselineRun.objects.filter(status=ScoreStatus.SUCCEEDED).select_related("pool", "release"):
        if run.pool_id not in seen:
            seen.add(run.pool_id)
            latest.append(run)
    return latest


def pool_judgments(*, pool: Pool) -> QuerySet[Judgment]:
    """Every judgment made by a member of the pool (whoever created the rows)."""
    return Judgment.objects.filter(verifier__in=pool.members.all())


def pool_correctness(*, pool: Pool, release_id: int) -> dict:
    """A pool's Correctness Rate on a release, overall, per facet and per person.

    Each judgment counts once; NONE and MULTIPLE are wrong answers; judgments on items the
    release audited but did not retain are left out (`n_unreleased`), as are those on items
    it never audited (`n_unaudited`).
    """
    judgments = pool_judgments(pool=pool)
    rows = list(judgments.values_list("item_id", "verifier__username", "label"))
    items = Item.objects.filter(pk__in=judgments.values("item_id"))
    labels = release_labels(release_id=release_id, items=items.values("pk"))
    facets = _item_facets(items)
    outcomes, by_person, unreleased, unaudited = [], {}, 0, 0
    for item_id, username, label in rows:
        if item_id not in labels:
            unaudited += 1
            continue
        reference = labels[item_id]
        if reference is None:
            unreleased += 1
            continue
        outcome = _outcome(facets[item_id], label == reference)
        outcomes.append(outcome)
        by_person.setdefault(username, []).append(outcome)
    table = stats.correctness_table(outcomes)
    table["n_unreleased"] = unreleased
    table["n_unaudited"] = unaudited
    return {
        "scores": table,
        "by_person": {name: stats.correctness_table(found)["overall"] for name, found in sorted(by_person.items())},
    }
