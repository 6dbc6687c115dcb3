"""The queue's two hot paths, each one SQL statement, one round trip, its plan reused.

`claim_next` is a verifier's "next item": membership, the live claim, the verifier's turn,
the gold rate, the pick (`FOR NO KEY UPDATE … SKIP LOCKED`, with the rules of `queue.py`
compiled into it), the context's retrospective row, the slot counters and the new claims,
all in one CTE. `judgment_store` is an answer: the claim, the label in the original
letters, the judgment (`INSERT … ON CONFLICT DO NOTHING`, idempotent by its key), the claim
marked answered and the slot's `answered` counter, in one CTE.

Both are the common case only. When a statement cannot finish the request in one go (the
queue looks empty, a retry with the same key, an expired lease, a refused answer), it says
so and `services.py` takes the slower path, which holds every rule and says what went
wrong. The rules themselves are not written here twice: the pick and the row are
`queue.slots_open_to` compiled to SQL once per process, with the verifier and the batch
as references to the statement's arguments.

The statements run prepared on a server-side binding cursor, so PostgreSQL plans them once
per connection and reuses the plan (persistent connections: `CONN_MAX_AGE`). Outside a transaction a statement is its own transaction: no BEGIN/COMMIT.
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from functools import cache

import psycopg
from django.db import connection
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL

from accounts.models import Pool
from annotation.models import OPTION_LETTERS, Batch, BatchStatus, Context, Domain, Item, ItemSummary, Task, Variant

from . import queue, tallies
from .models import Claim, ClaimStatus, Judgment, QueueSlot, QueueTurn
from .pair_tallies import pair_tallies_sql  # issue 23: agreement between verifiers, kept by the answer

RETRO = Task.RETROSPECTIVE.value
SERVED = ", ".join(f"'{s.value}'" for s in queue.SERVED)


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _columns(model, alias: str) -> list[str]:
    return [f'{alias}."{f.column}"' for f in model._meta.concrete_fields]


def _from_row(model, values):
    """A model instance from the statement's columns (as a queryset would convert them)."""
    fields = model._meta.concrete_fields
    converted = []
    for field, value in zip(fields, values):
        if value is not None and hasattr(field, "from_db_value"):
            value = field.from_db_value(value, None, connection)
        converted.append(value)
    return model.from_db(connection.alias, [f.attname for f in fields], converted)


def _compile(queryset) -> tuple[str, tuple]:
    return queryset.query.get_compiler(connection=connection).as_sql()


_PLACEHOLDER = re.compile(r"%(%|s)")


@cache
def _native(sql: str) -> str:
    """`sql` with PostgreSQL's own placeholders: Django's `%s` become `$1`, `$2` … and `%%` a `%`.

    psycopg converts a query's `%s` on every run unless the query is short (4 KiB); these two
    are longer (the claim about 22 KB: half a millisecond a run) and always the same two, so
    they are converted here once per process and run on a `RawCursor`, which takes them as
    they are."""
    numbers = iter(range(1, sql.count("%s") + 1))
    return _PLACEHOLDER.sub(lambda m: "%" if m.group(1) == "%" else f"${next(numbers)}", sql)


class _PreparedCursor(psycopg.RawCursor):
    """Server-side binding, native placeholders, always prepared: PostgreSQL plans the statement
    once per connection. (Django turns psycopg's automatic preparing off, for connection
    poolers' sake; these two statements ask for it.) Public psycopg API (3.2 and later)."""

    def execute(self, query, params=None, *, prepare=None, binary=None):
        return super().execute(query, params, prepare=True, binary=binary)


def _execute(sql: str, params) -> tuple:
    """Run one statement, prepared, logged like any Django query (so
    `django_assert_max_num_queries` counts it)."""
    connection.close_if_health_check_failed()  # as Django's own cursors do (CONN_HEALTH_CHECKS)
    connection.ensure_connection()
    if connection.connection.prepare_threshold is None:  # Django's "never prepare" (its own cursors bind client-side)
        connection.connection.prepare_threshold = 5
    raw = _PreparedCursor(connection.connection)
    with connection._prepare_cursor(raw) as cursor:
        cursor.execute(_native(sql), params)
        return cursor.fetchone()


# --- next item -------------------------------------------------------------------------------

VERIFIER = RawSQL("(SELECT v FROM arg)", ())
BATCH = RawSQL("(SELECT id FROM b)", ())  # one scalar: `batch_id = …`, so the pick can walk the queue index


def display_order_sql(verifier: str, item: str) -> str:
    """SQL for `queue.display_order_for`: HMAC-SHA256 of "display:<verifier>:<item>" under the
    shuffle secret (its padded keys are arguments), its first 8 bytes >> 1, modulo 24."""
    message = f"convert_to('display:' || {verifier} || ':' || {item}, 'UTF8')"
    digest = f"sha256(arg.okey || sha256(arg.ikey || {message}))"
    draw = f"((('x' || encode(substring({digest} from 1 for 8), 'hex'))::bit(64) >> 1)::bigint)"
    return f"arg.orders[1 + mod({draw}, {len(queue.DISPLAY_ORDERS)})]"


def _pick_sql(*, gold: bool, exposure_allowed: bool, after_gold: bool) -> tuple[str, tuple]:
    """The first slot in queue order this verifier may take (compiled from `queue.py`),
    locked with SKIP LOCKED: another verifier claiming it right now means the next one."""
    gate = "EXISTS (SELECT 1 FROM turn)"
    gate += " AND (SELECT due FROM gold)" if gold else ""
    gate += " AND NOT EXISTS (SELECT 1 FROM pick_gold)" if after_gold else ""
    columns = ["item_id", "item_context", "item_task"] + (["exposed"] if exposure_allowed else [])
    queryset = (
        queue.slots_open_to(verifier=VERIFIER, batch_ids=BATCH, exposure_allowed=exposure_allowed)
        .filter(RawSQL(gate, (), output_field=BooleanField()), is_gold=gold)
        # contexts whose row another verifier was claiming when this request last looked
        .exclude(item_context__in=RawSQL("SELECT unnest(avoid) FROM arg", ()))
        .order_by(*queue.queue_order(exposure_allowed=exposure_allowed))
        .values(*columns)[:1]
    )
    sql, params = _compile(queryset)
    return f"{sql} FOR NO KEY UPDATE OF {_table(QueueSlot)} SKIP LOCKED", params


def _row_sql(*, exposure_allowed: bool) -> tuple[str, tuple]:
    """The open retrospective slots of the picked context this verifier may take, locked in
    item order once the context row is held (the row's mutex: `ctx`)."""
    queryset = (
        queue.slots_open_to(verifier=VERIFIER, batch_ids=BATCH, exposure_allowed=exposure_allowed)
        .filter(item__task=RETRO, item__context_id=RawSQL("(SELECT id FROM ctx)", ()))
        .order_by("item_id")
        .values("item_id")
    )
    sql, params = _compile(queryset)
    return f"{sql} FOR NO KEY UPDATE OF {_table(QueueSlot)}", params


def _waiting_sql(*, exposure_allowed: bool) -> tuple[str, tuple]:
    """Whether a slot this verifier may take is open but locked by other claims in flight
    (SKIP LOCKED hid it): then "nothing left" would be wrong, and the claim looks again."""
    due = RawSQL("(SELECT due FROM gold)", (), output_field=BooleanField())
    queryset = (
        queue.slots_open_to(verifier=VERIFIER, batch_ids=BATCH, exposure_allowed=exposure_allowed)
        .filter(Q(is_gold=False) | Q(due))
        .values("item_id")[:1]
    )
    return _compile(queryset)


CLAIM_FIELDS = [f.column for f in Claim._meta.concrete_fields]


@cache
def _claim_next_sql(exposure_allowed: bool, exposed_count: bool = False) -> tuple[str, tuple]:
    pick_gold, gold_params = _pick_sql(gold=True, exposure_allowed=exposure_allowed, after_gold=False)
    pick_any, any_params = _pick_sql(gold=False, exposure_allowed=exposure_allowed, after_gold=True)
    row, row_params = _row_sql(exposure_allowed=exposure_allowed)
    waiting, waiting_params = _waiting_sql(exposure_allowed=exposure_allowed)
    exposed = "exposed" if exposure_allowed else "false AS exposed"
    # an exposed claim counts towards k only where aggregation uses exposed judgments (`queue.counts_towards_k`)
    taken_by = "1" if exposed_count or not exposure_allowed else "CASE WHEN (SELECT exposed FROM pick) THEN 0 ELSE 1 END"
    members = Pool.members.through
    pools = Batch.pools.through
    new_claim = {
        "id": "gen_random_uuid()",
        "item_id": "upd.item_id",
        "verifier_id": "arg.v",
        "batch_id": "b.id",
        "status": f"'{ClaimStatus.ACTIVE.value}'",
        "display_order": display_order_sql("arg.v", "upd.item_id"),
        "claimed_at": "now()",
        # a row's items are served one after the other: one lease each
        "expires_at": "now() + make_interval(mins => (b.lease_minutes * row_number() OVER (ORDER BY upd.item_id))::int)",
        "is_gold": "upd.is_gold",
        "skip_reason": "''",
        "exposed": "(SELECT exposed FROM pick)",
    }
    assert set(new_claim) == set(CLAIM_FIELDS), "a Claim field is missing from the claim statement"
    claim_cols = ", ".join(f'"{c}"' for c in CLAIM_FIELDS)
    sql = f"""
WITH arg AS (SELECT %s::bigint AS v, %s::text AS batch_name, %s::bytea AS ikey, %s::bytea AS okey, %s::text[] AS orders,
                    %s::bigint[] AS avoid),
b AS MATERIALIZED (
    SELECT b.* FROM {_table(Batch)} b, arg
    WHERE b.name = arg.batch_name AND EXISTS (
        SELECT 1 FROM {_table(pools)} bp JOIN {_table(members)} pm ON pm.pool_id = bp.pool_id
        WHERE bp.batch_id = b.id AND pm.user_id = arg.v)
),
live AS MATERIALIZED (
    SELECT c.id FROM {_table(Claim)} c, b, arg
    WHERE c.verifier_id = arg.v AND c.batch_id = b.id AND c.status = '{ClaimStatus.ACTIVE.value}'
      AND c.expires_at > now() AND b.status <> '{BatchStatus.CLOSED.value}'
    ORDER BY c.expires_at, c.claimed_at LIMIT 1
),
turn AS (
    INSERT INTO {_table(QueueTurn)} AS t (verifier_id, claims)
    SELECT arg.v, 1 FROM arg, b WHERE b.status = '{BatchStatus.OPEN.value}' AND NOT EXISTS (SELECT 1 FROM live)
    ON CONFLICT (verifier_id) DO UPDATE SET claims = t.claims + 1
    WHERE t.claims = (SELECT s.claims FROM {_table(QueueTurn)} s, arg WHERE s.verifier_id = arg.v)
    RETURNING t.claims
),
gold AS MATERIALIZED (
    SELECT CASE WHEN b.gold_rate > 0 THEN (
        SELECT count(*) FILTER (WHERE c.is_gold) < b.gold_rate * (count(*) + 1)
        FROM {_table(Claim)} c, arg WHERE c.verifier_id = arg.v AND c.batch_id = b.id AND c.status IN ({SERVED})
    ) ELSE false END AS due FROM b
),
pick_gold AS MATERIALIZED ({pick_gold}),
pick_any AS MATERIALIZED ({pick_any}),
pick AS MATERIALIZED (
    SELECT item_id, "item_context", "item_task", {exposed} FROM pick_gold
    UNION ALL SELECT item_id, "item_context", "item_task", {exposed} FROM pick_any
),
ctx AS MATERIALIZED (
    SELECT id FROM {_table(Context)}
    WHERE id = (SELECT "item_context" FROM pick WHERE "item_task" = '{RETRO}')
    FOR NO KEY UPDATE SKIP LOCKED
),
grp AS MATERIALIZED ({row}),
chosen AS (
    SELECT item_id FROM pick WHERE "item_task" <> '{RETRO}' UNION ALL SELECT item_id FROM grp
),
upd AS (
    UPDATE {_table(QueueSlot)} s SET taken = s.taken + {taken_by} FROM chosen
    WHERE s.item_id = chosen.item_id AND s.taken < s.needed
    RETURNING s.item_id, s.is_gold
),
ins AS (
    INSERT INTO {_table(Claim)} ({claim_cols})
    SELECT {", ".join(new_claim[c] for c in CLAIM_FIELDS)} FROM upd, arg, b
    RETURNING {claim_cols}
)
SELECT (SELECT count(*) FROM b), (SELECT status FROM b), (SELECT count(*) FROM turn),
       (SELECT "item_context" FROM pick),
       CASE WHEN EXISTS (SELECT 1 FROM turn) AND NOT EXISTS (SELECT 1 FROM pick) THEN EXISTS ({waiting}) ELSE false END,
       {", ".join(_columns(Claim, "c") + _columns(Item, "i") + _columns(Context, "x") + _columns(Domain, "d") + _columns(Batch, "bb"))}
FROM (SELECT 1) AS one
LEFT JOIN LATERAL (
    (SELECT {claim_cols} FROM ins ORDER BY expires_at LIMIT 1)
    UNION ALL
    (SELECT {claim_cols} FROM {_table(Claim)} WHERE id = (SELECT id FROM live))
) c ON true
LEFT JOIN {_table(Item)} i ON i.id = c.item_id
LEFT JOIN {_table(Context)} x ON x.id = i.context_id
LEFT JOIN {_table(Domain)} d ON d.code = x.domain_id
LEFT JOIN {_table(Batch)} bb ON bb.id = c.batch_id
"""
    return sql, gold_params + any_params + row_params + waiting_params


@dataclass(frozen=True)
class NextResult:
    """What the claim statement did. `claim` is the item in hand (live or new) with its item,
    context, domain and batch loaded; otherwise the flags say why there is none."""

    claim: Claim | None
    found: bool  # the batch exists and is open to this verifier's pools
    batch_status: str | None
    turned: bool  # this verifier's turn was free (False: another request of theirs ran at once)
    picked: int | None  # the context of the slot picked (when no claim came of it: its row was being claimed)
    waiting: bool  # none was picked, but open slots it may take are being claimed by others right now

    @property
    def contended(self) -> bool:
        """Another request got in the way (the verifier's other tab, the picked context being
        claimed by someone else this instant): looking again will do."""
        if self.claim is not None or not self.found or self.batch_status != BatchStatus.OPEN:
            return False
        return not self.turned or self.picked is not None or self.waiting


def claim_next(*, verifier_id: int, batch_name: str, exposure_allowed: bool = False, avoid=()) -> NextResult:
    """Run the claim statement once (see the module's docstring), passing over the contexts in `avoid`.
    PostgreSQL only: elsewhere (SQLite: the demo) `services` runs the same steps through the ORM (`portable.py`)."""
    sql, tail = _claim_next_sql(exposure_allowed, queue.exposed_judgments_count())
    inner, outer = queue.hmac_pads()
    row = _execute(sql, (verifier_id, batch_name, inner, outer, list(queue.DISPLAY_ORDERS), list(avoid), *tail))
    found, status, turned, picked, waiting = row[:5]
    values = row[5:]
    claim = None
    if values[0] is not None:
        parts = []
        for model in (Claim, Item, Context, Domain, Batch):
            n = len(model._meta.concrete_fields)
            parts.append(_from_row(model, values[:n]))
            values = values[n:]
        claim, item, context, domain, batch = parts
        context.domain = domain
        item.context = context
        claim.item, claim.batch = item, batch
    return NextResult(claim=claim, found=bool(found), batch_status=status, turned=bool(turned), picked=picked, waiting=bool(waiting))


# --- an answer -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stored:
    judgment: Judgment
    batch_name: str
    filled: bool  # this answer brought its item to the judgments it needs


def _label_sql() -> str:
    """The choice (a displayed letter, NOTA where offered, NONE, MULTIPLE) in the original
    letters; NULL for anything else, which the slow path refuses with its reason."""
    nota = f"(c.task <> '{RETRO}' OR c.variant = '{Variant.COUNTERFACTUAL.value}')"
    assert queue.offers_nota(task=Task.PROSPECTIVE, variant=Variant.EASY) and not queue.offers_nota(
        task=Task.RETROSPECTIVE, variant=Variant.HARD
    ), "queue.offers_nota changed: change the answer statement with it"
    return f"""CASE
        WHEN arg.choice IN ('NONE', 'MULTIPLE') THEN arg.choice
        WHEN arg.choice = 'NOTA' AND {nota} THEN 'NOTA'
        WHEN arg.choice IN ({", ".join(f"'{x}'" for x in OPTION_LETTERS)}) THEN substr(c.display_order, strpos(arg.letters, arg.choice), 1)
    END"""


JUDGMENT_FIELDS = [f.column for f in Judgment._meta.concrete_fields if f.column != "id"]


# --- issue 23: the item summary (h3) ---------------------------------------------------------
def item_summary_sql() -> str:
    """The answer statement's CTE counting the stored judgment in its item's summary
    (`annotation.ItemSummary.judgments`; the step-by-step path: `summaries.item_summary_judged`)."""
    return f"""item_summary AS (
    UPDATE {_table(ItemSummary)} SET judgments = judgments + 1
    WHERE item_id IN (SELECT item_id FROM ins) AND (SELECT count(*) FROM t_seconds) >= 0 RETURNING 1
)"""
# --- end issue 23: the item summary ------------------------------------------------------------


@cache
def _judgment_store_sql(exposed_count: bool = False) -> str:
    lease = "make_interval(mins => c.lease_minutes)"
    # a row's later question counts from the verifier's answer before it in the row
    row_started = f"""(SELECT max(j.created_at) FROM {_table(Judgment)} j JOIN {_table(Claim)} rc ON rc.id = j.claim_id
        WHERE j.verifier_id = arg.v AND j.batch_id = c.batch_id AND rc.claimed_at = c.claimed_at)"""
    started = f"CASE WHEN c.expires_at - c.claimed_at > {lease} THEN GREATEST(c.claimed_at, {row_started}) ELSE c.claimed_at END"
    new = {
        "item_id": "c.item_id",
        "verifier_id": "arg.v",
        "batch_id": "c.batch_id",
        "claim_id": "c.id",
        "label": "lab.label",
        "displayed_label": "arg.choice",
        "implausible": """to_jsonb(ARRAY(SELECT DISTINCT substr(c.display_order, strpos(arg.letters, m), 1)
                                    FROM unnest(arg.marks) m ORDER BY 1))""",
        "comment": "arg.comment",
        "seconds_spent": f"round(GREATEST(0, extract(epoch FROM now() - ({started})))::numeric, 3)::float8",
        "idempotency_key": "arg.key",
        "source": "arg.source",
        "exposed": "c.exposed",
        "created_at": "now()",
        "updated_at": "now()",
    }
    assert set(new) == set(JUDGMENT_FIELDS), "a Judgment field is missing from the answer statement"
    cols = ", ".join(f'"{c}"' for c in JUDGMENT_FIELDS)
    counted = "TRUE" if exposed_count else "NOT ins.exposed"  # `queue.counts_towards_k`
    return f"""
WITH arg AS (SELECT %s::bigint AS v, %s::uuid AS claim_id, %s::uuid AS key, %s::text AS choice,
                    %s::text[] AS marks, %s::text AS comment, %s::text AS source, %s::text AS letters),
c AS MATERIALIZED (
    SELECT cl.*, b.status AS batch_status, b.lease_minutes, b.name AS batch_name, i.task, i.variant,
           i.is_gold AS item_is_gold, i.answer AS item_answer, b.overlap AS batch_overlap  -- tallies_sql (issue 23)
    FROM {_table(Claim)} cl JOIN {_table(Batch)} b ON b.id = cl.batch_id JOIN {_table(Item)} i ON i.id = cl.item_id, arg
    WHERE cl.id = arg.claim_id AND cl.verifier_id = arg.v AND cl.status = '{ClaimStatus.ACTIVE.value}'
      AND b.status <> '{BatchStatus.CLOSED.value}'
      AND NOT EXISTS (SELECT 1 FROM {_table(Judgment)} j WHERE j.idempotency_key = arg.key)
      AND NOT EXISTS (SELECT 1 FROM {_table(Judgment)} j WHERE j.item_id = cl.item_id AND j.verifier_id = arg.v)
    FOR NO KEY UPDATE OF cl
),
lab AS (SELECT {_label_sql()} AS label FROM c, arg),
ins AS (
    INSERT INTO {_table(Judgment)} ({cols})
    SELECT {", ".join(new[c] for c in JUDGMENT_FIELDS)} FROM c, arg, lab WHERE lab.label IS NOT NULL
    ON CONFLICT DO NOTHING
    RETURNING id, {cols}
),
ans AS (UPDATE {_table(Claim)} SET status = '{ClaimStatus.ANSWERED.value}' WHERE id IN (SELECT claim_id FROM ins) RETURNING id),
slot AS (
    UPDATE {_table(QueueSlot)} qs SET answered = qs.answered + ({counted})::int, judged = qs.judged + 1
    FROM ins WHERE qs.item_id = ins.item_id
    RETURNING ({counted}) AND qs.answered >= qs.needed AS filled, qs.judged - 1 AS judged_before, qs.aggregated
){pair_tallies_sql()},
-- issue 23: the summaries, in the same statement (verification/tallies.py)
{tallies.tallies_sql(after='pt_seconds_total')}
,
{item_summary_sql()}
SELECT ins.*, c.display_order, c.batch_name, (SELECT bool_or(filled) FROM slot), (SELECT count(*) FROM ans)
FROM ins, c
"""


def judgment_store(
    *, verifier_id: int, claim_id, idempotency_key, choice: str, marks: list[str], comment: str, source: str
) -> Stored | None:
    """Store an answer to a live claim in one statement; None when the slow path must decide
    (a replayed key, an answered or lapsed claim, a closed batch, a choice not offered), and
    elsewhere than on PostgreSQL (SQLite: the demo), where the slow path does every answer."""
    if connection.vendor != "postgresql":
        return None
    row = _execute(
        _judgment_store_sql(queue.exposed_judgments_count()),
        (verifier_id, uuid.UUID(str(claim_id)), uuid.UUID(str(idempotency_key)), choice, marks, comment, source, "".join(OPTION_LETTERS)),
    )
    if row is None:
        return None
    fields = ["id", *JUDGMENT_FIELDS]
    n = len(fields)
    values = dict(zip(fields, row[:n]))
    display_order, batch_name, filled = row[n], row[n + 1], row[n + 2]
    judgment = _from_row(Judgment, [values[f.column] for f in Judgment._meta.concrete_fields])
    judgment.claim = Claim(
        pk=judgment.claim_id, item_id=judgment.item_id, verifier_id=verifier_id, batch_id=judgment.batch_id,
        status=ClaimStatus.ANSWERED, display_order=display_order,
    )
    return Stored(judgment=judgment, batch_name=batch_name, filled=bool(filled))
