"""Agreement between verifiers, kept as the judgments come in: who co-judged with whom, how often alike, and how long.

`/review/verifiers/` and `GET /api/v1/verifier-pairs/` read these summaries, never the
judgments: `ItemAnswers` (the answers an item holds so far), `VerifierPairTally` (per batch ×
task × pair a < b: items co-judged, agreed) with its sum over batches `VerifierPairTotal`, and
`VerifierSecondsTally` / `VerifierSecondsTotal` (judgments per bucket of seconds, hence the
count and the median). Gold items are left out.

They change in the transaction that changes their source:
- an answer stored by the answer statement: `pair_tallies_sql()`, the CTEs it appends to
  `statements.judgment_store` (the new answer joins the item's `ItemAnswers` under its row lock,
  `INSERT … ON CONFLICT DO UPDATE` returning the answers committed before it);
- an answer stored step by step (`services._judgment_submit_checked`; SQLite): `judgment_added`;
- a changed answer (`services.judgment_change`): `judgment_relabelled`;
- items turned gold or back, imported judgments: `pairs_rebuild(batch_ids=…)` for their batches.
`pairs_rebuild()` rebuilds everything from the judgments (`manage.py verifier_pairs_rebuild`);
a test checks the maintained and the rebuilt summaries are equal after a randomized history.

Rows are always touched in one order (item, then tallies by (batch, task, a, b), then totals,
then seconds), so two answers never wait on each other in a circle.
"""
from __future__ import annotations

from collections.abc import Iterable

from django.db import IntegrityError, connection, transaction
from django.db.models import F

from annotation.models import Item

from .models import (
    ItemAnswers,
    Judgment,
    VerifierPairTally,
    VerifierPairTotal,
    VerifierSecondsTally,
    VerifierSecondsTotal,
)

UNTIMED = -1
MAX_BUCKET = 3600

# Buckets of seconds: to the second under 2 minutes, 5 s under 10 minutes, a minute under an hour, then one.
_BUCKETS = ((120, 1, 0), (600, 5, 120), (MAX_BUCKET, 60, 600))


def seconds_bucket(seconds: float | None) -> int:
    """The lower bound of the bucket of `seconds` (-1 when not timed)."""
    if seconds is None:
        return UNTIMED
    s = max(0.0, float(seconds))
    for upper, width, start in _BUCKETS:
        if s < upper:
            return start + width * int((s - start) // width)
    return MAX_BUCKET


def _floor_sql(expr: str) -> str:
    return f"floor({expr})::int" if connection.vendor == "postgresql" else f"CAST({expr} AS INTEGER)"


def seconds_bucket_sql(expr: str) -> str:
    """`seconds_bucket` in SQL (PostgreSQL or SQLite)."""
    s = f"(CASE WHEN {expr} < 0 THEN 0 ELSE {expr} END)"
    cases = " ".join(
        f"WHEN {s} < {upper} THEN {start} + {width} * {_floor_sql(f'({s} - {start}) / {width}')}"
        for upper, width, start in _BUCKETS
    )
    return f"(CASE WHEN {expr} IS NULL THEN {UNTIMED} {cases} ELSE {MAX_BUCKET} END)"


def median_of_buckets(counts: dict[int, int]) -> float | None:
    """The median (the upper one, as `sorted(seconds)[n // 2]`) of the timed judgments, to its bucket."""
    timed = sorted((b, n) for b, n in counts.items() if b != UNTIMED and n)
    total = sum(n for _, n in timed)
    if not total:
        return None
    seen = 0
    for bucket, n in timed:
        seen += n
        if seen > total // 2:
            return float(bucket)
    return None


def _t(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


# --- the answer statement's part ---------------------------------------------------------------


def pair_tallies_sql() -> str:
    """CTEs appended to the answer statement (`statements.judgment_store`): they read its `ins`
    (the judgment inserted, if any) and keep the summaries above. Each `pt_` CTE writes one table,
    in a fixed order after the statement's `slot` (the item's row lock): the sub-statements of a
    WITH run in no set order, and two answers taking shared rows in different orders deadlock."""
    item, answers = _t(Item), _t(ItemAnswers)
    tally, total = _t(VerifierPairTally), _t(VerifierPairTotal)
    seconds, seconds_total = _t(VerifierSecondsTally), _t(VerifierSecondsTotal)
    return f""",
pt_new AS MATERIALIZED (
    SELECT ins.item_id, ins.verifier_id AS v, ins.batch_id, ins.label, ins.seconds_spent, i.task
    FROM ins JOIN {item} i ON i.id = ins.item_id WHERE NOT i.is_gold AND (SELECT count(*) FROM slot) >= 0
),
pt_answers AS (
    INSERT INTO {answers} AS x (item_id, answers) SELECT item_id, jsonb_build_object(v::text, label) FROM pt_new
    ON CONFLICT (item_id) DO UPDATE SET answers = x.answers || EXCLUDED.answers
    RETURNING x.item_id, x.answers
),
pt_pairs AS MATERIALIZED (
    SELECT n.batch_id, n.task, LEAST(n.v, o.key::bigint) AS a, GREATEST(n.v, o.key::bigint) AS b,
           CASE WHEN o.value = n.label THEN 1 ELSE 0 END AS agreed
    FROM pt_new n JOIN pt_answers x ON x.item_id = n.item_id, jsonb_each_text(x.answers - n.v::text) o
),
pt_tally AS (
    INSERT INTO {tally} AS t (batch_id, task, verifier_a_id, verifier_b_id, co_judged, agreed)
    SELECT batch_id, task, a, b, 1, agreed FROM pt_pairs ORDER BY a, b
    ON CONFLICT (batch_id, task, verifier_a_id, verifier_b_id)
    DO UPDATE SET co_judged = t.co_judged + 1, agreed = t.agreed + EXCLUDED.agreed
    RETURNING 1
),
pt_total AS (
    INSERT INTO {total} AS t (task, verifier_a_id, verifier_b_id, co_judged, agreed)
    SELECT task, a, b, 1, agreed FROM pt_pairs WHERE (SELECT count(*) FROM pt_tally) >= 0 ORDER BY a, b
    ON CONFLICT (task, verifier_a_id, verifier_b_id)
    DO UPDATE SET co_judged = t.co_judged + 1, agreed = t.agreed + EXCLUDED.agreed
    RETURNING 1
),
pt_seconds AS (
    INSERT INTO {seconds} AS t (batch_id, task, verifier_id, bucket, judgments)
    SELECT batch_id, task, v, {seconds_bucket_sql("seconds_spent")}, 1 FROM pt_new WHERE (SELECT count(*) FROM pt_total) >= 0
    ON CONFLICT (batch_id, task, verifier_id, bucket) DO UPDATE SET judgments = t.judgments + 1
    RETURNING 1
),
pt_seconds_total AS (
    INSERT INTO {seconds_total} AS t (task, verifier_id, bucket, judgments)
    SELECT task, v, {seconds_bucket_sql("seconds_spent")}, 1 FROM pt_new WHERE (SELECT count(*) FROM pt_seconds) >= 0
    ON CONFLICT (task, verifier_id, bucket) DO UPDATE SET judgments = t.judgments + 1
    RETURNING 1
)"""


# --- step by step (the slow path, SQLite) --------------------------------------------------------


def _bump(model, key: dict, **deltas: int) -> None:
    """Add `deltas` to the row `key` of `model`, creating it when missing (under concurrency too)."""
    changes = {field: F(field) + d for field, d in deltas.items()}
    if model.objects.filter(**key).update(**changes):
        return
    try:
        with transaction.atomic():
            model.objects.create(**key, **deltas)
    except IntegrityError:  # created meanwhile by another answer: add to it
        model.objects.filter(**key).update(**changes)


def _pairs_bump(*, batch_id: int, task: str, verifier_id: int, label_agrees: list[tuple[int, int]], co: int) -> None:
    """`label_agrees`: (other verifier, agreed delta). Tallies first, then totals, each in (a, b) order."""
    rows = sorted((min(verifier_id, o), max(verifier_id, o), d) for o, d in label_agrees)
    for a, b, d in rows:
        _bump(VerifierPairTally, {"batch_id": batch_id, "task": task, "verifier_a_id": a, "verifier_b_id": b}, co_judged=co, agreed=d)
    for a, b, d in rows:
        _bump(VerifierPairTotal, {"task": task, "verifier_a_id": a, "verifier_b_id": b}, co_judged=co, agreed=d)


def _answers_locked(item_id: int) -> ItemAnswers:
    try:
        with transaction.atomic():
            return ItemAnswers.objects.select_for_update().get_or_create(item_id=item_id)[0]
    except IntegrityError:
        return ItemAnswers.objects.select_for_update().get(item_id=item_id)


def judgment_added(*, judgment: Judgment, task: str, is_gold: bool) -> None:
    """What `pair_tallies_sql` does for an answer stored step by step (in its transaction)."""
    if is_gold:
        return
    answers = _answers_locked(judgment.item_id)
    others = {int(v): label for v, label in answers.answers.items() if int(v) != judgment.verifier_id}
    answers.answers = {**answers.answers, str(judgment.verifier_id): judgment.label}
    answers.save(update_fields=["answers"])
    _pairs_bump(batch_id=judgment.batch_id, task=task, verifier_id=judgment.verifier_id,
                label_agrees=[(o, int(label == judgment.label)) for o, label in others.items()], co=1)
    bucket = seconds_bucket(judgment.seconds_spent)
    _bump(VerifierSecondsTally, {"batch_id": judgment.batch_id, "task": task, "verifier_id": judgment.verifier_id, "bucket": bucket},
          judgments=1)
    _bump(VerifierSecondsTotal, {"task": task, "verifier_id": judgment.verifier_id, "bucket": bucket}, judgments=1)


def judgment_relabelled(*, judgment: Judgment, old_label: str, task: str, is_gold: bool) -> None:
    """A verifier changed an answer from `old_label` to `judgment.label` (in its transaction)."""
    if is_gold or old_label == judgment.label:
        return
    answers = _answers_locked(judgment.item_id)
    others = {int(v): label for v, label in answers.answers.items() if int(v) != judgment.verifier_id}
    answers.answers = {**answers.answers, str(judgment.verifier_id): judgment.label}
    answers.save(update_fields=["answers"])
    deltas = [(o, int(label == judgment.label) - int(label == old_label)) for o, label in others.items()]
    _pairs_bump(batch_id=judgment.batch_id, task=task, verifier_id=judgment.verifier_id,
                label_agrees=[(o, d) for o, d in deltas if d], co=0)


# --- from scratch --------------------------------------------------------------------------------


def _lock_all() -> None:
    """No answer lands while the summaries are rebuilt (PostgreSQL; SQLite has one writer anyway)."""
    if connection.vendor == "postgresql":
        tables = ", ".join(_t(m) for m in (ItemAnswers, VerifierPairTally, VerifierPairTotal, VerifierSecondsTally, VerifierSecondsTotal))
        with connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {tables} IN EXCLUSIVE MODE")


_TOTALS = (
    (VerifierPairTally, VerifierPairTotal, ("task", "verifier_a_id", "verifier_b_id"), ("co_judged", "agreed")),
    (VerifierSecondsTally, VerifierSecondsTotal, ("task", "verifier_id", "bucket"), ("judgments",)),
)


def _totals_move(batch_ids: list[int], *, sign: int) -> None:
    """Add (sign 1) or take away (sign -1) the tallies of `batch_ids` to / from the totals; rows
    left at zero go (as a rebuild from scratch would not make them). PostgreSQL and SQLite."""
    marks = ", ".join(["%s"] * len(batch_ids))
    with connection.cursor() as cursor:
        for tally, total, key, counts in _TOTALS:
            t = _t(total)
            sums = ", ".join(f"sum({c}) AS {c}" for c in counts)
            grouped = f"SELECT {', '.join(key)}, {sums} FROM {_t(tally)} WHERE batch_id IN ({marks}) GROUP BY {', '.join(key)}"
            if sign < 0:
                cursor.execute(
                    f"UPDATE {t} SET {', '.join(f'{c} = {t}.{c} - o.{c}' for c in counts)} FROM ({grouped}) o "
                    f"WHERE {' AND '.join(f'{t}.{k} = o.{k}' for k in key)}", batch_ids)
                cursor.execute(f"DELETE FROM {t} WHERE {' AND '.join(f'{c} = 0' for c in counts)}")
            else:
                cursor.execute(
                    f"INSERT INTO {t} ({', '.join(key)}, {', '.join(counts)}) {grouped} "
                    f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {', '.join(f'{c} = {t}.{c} + excluded.{c}' for c in counts)}",
                    batch_ids)


@transaction.atomic
def pairs_rebuild(*, batch_ids: Iterable[int] | None = None) -> dict:
    """Rebuild the summaries from the judgments: of `batch_ids`, or of every batch. Returns row counts."""
    _lock_all()
    judgment, item = _t(Judgment), _t(Item)
    ids = None if batch_ids is None else sorted(set(batch_ids))
    if ids is not None and not ids:
        return {"batches": 0}
    where, params = ("", []) if ids is None else (f" AND j.batch_id IN ({', '.join(['%s'] * len(ids))})", ids)
    if ids is None:
        for model in (ItemAnswers, VerifierPairTally, VerifierSecondsTally):
            model.objects.all().delete()
    else:
        _totals_move(ids, sign=-1)  # the batches' old tallies leave the totals
        ItemAnswers.objects.filter(item__in=Judgment.objects.filter(batch_id__in=ids).values("item_id")).delete()
        ItemAnswers.objects.filter(item__batch_id__in=ids).delete()
        VerifierPairTally.objects.filter(batch_id__in=ids).delete()
        VerifierSecondsTally.objects.filter(batch_id__in=ids).delete()
    if connection.vendor == "postgresql":
        agg = "jsonb_object_agg(j.verifier_id::text, j.label)"
    else:
        agg = "json_group_object(CAST(j.verifier_id AS TEXT), j.label)"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""INSERT INTO {_t(ItemAnswers)} (item_id, answers)
            SELECT j.item_id, {agg} FROM {judgment} j JOIN {item} i ON i.id = j.item_id
            WHERE NOT i.is_gold{where} GROUP BY j.item_id""", params)
        cursor.execute(
            f"""INSERT INTO {_t(VerifierPairTally)} (batch_id, task, verifier_a_id, verifier_b_id, co_judged, agreed)
            SELECT j.batch_id, i.task, j.verifier_id, k.verifier_id, count(*),
                   sum(CASE WHEN j.label = k.label THEN 1 ELSE 0 END)
            FROM {judgment} j JOIN {judgment} k ON k.item_id = j.item_id AND k.verifier_id > j.verifier_id
                 JOIN {item} i ON i.id = j.item_id
            WHERE NOT i.is_gold{where} GROUP BY j.batch_id, i.task, j.verifier_id, k.verifier_id""", params)
        cursor.execute(
            f"""INSERT INTO {_t(VerifierSecondsTally)} (batch_id, task, verifier_id, bucket, judgments)
            SELECT j.batch_id, i.task, j.verifier_id, {seconds_bucket_sql("j.seconds_spent")} AS bucket, count(*)
            FROM {judgment} j JOIN {item} i ON i.id = j.item_id
            WHERE NOT i.is_gold{where} GROUP BY j.batch_id, i.task, j.verifier_id, bucket""", params)
        if ids is not None:
            _totals_move(ids, sign=1)  # and their new ones join them: the other batches' rows are not read
            return {"batches": len(ids)}
        # every batch: the totals summed again from the tallies
        VerifierPairTotal.objects.all().delete()
        VerifierSecondsTotal.objects.all().delete()
        cursor.execute(
            f"""INSERT INTO {_t(VerifierPairTotal)} (task, verifier_a_id, verifier_b_id, co_judged, agreed)
            SELECT task, verifier_a_id, verifier_b_id, sum(co_judged), sum(agreed) FROM {_t(VerifierPairTally)}
            GROUP BY task, verifier_a_id, verifier_b_id""")
        cursor.execute(
            f"""INSERT INTO {_t(VerifierSecondsTotal)} (task, verifier_id, bucket, judgments)
            SELECT task, verifier_id, bucket, sum(judgments) FROM {_t(VerifierSecondsTally)}
            GROUP BY task, verifier_id, bucket""")
    return {
        "item_answers": ItemAnswers.objects.count(),
        "pair_tallies": VerifierPairTally.objects.count(),
        "pair_totals": VerifierPairTotal.objects.count(),
        "seconds_tallies": VerifierSecondsTally.objects.count(),
    }
