"""Benchmark: how the cost grows with the work (issue 14, "Scale").

    .venv/bin/python bench/scale.py --reuse --no-release       # queue, plans, dashboard at 40k, 400k, 4M (~10 min)
    .venv/bin/python bench/scale.py --reuse --sizes 40k --pairs 100 --no-release   # a quick look
    .venv/bin/python bench/scale.py --reuse --phases release --sizes 40k,400k      # the release build (4M: ~1 h)
    .venv/bin/python bench/scale.py --reuse                    # everything, loading what is missing

Without `--reuse` a size's database is dropped and loaded again (4M: ~20 min, ~16 GB).
Each run updates the figures of the phases it measured (`results/scale_plans/<size>.json`)
and rewrites `results/scale.md` from all of them.

Three synthetic sets, each in its own PostgreSQL database kept between runs
(`dialtom_scale_40k`, `dialtom_scale_400k`, `dialtom_scale_4m`; `--reuse` skips loading a database
that already holds its set, so a rerun only measures). A set of N items is N/12 contexts of
176 words (8 turns), each with 6 retrospective items (one per attribute) and 6 prospective ones,
in closed batches of 504 items (42 contexts), every item judged by k=3 different verifiers out
of a pool of 22 (claims answered, judgments, queue slots full; the context rule respected), one
succeeded aggregation run per batch with its item, batch and worker results; plus one open batch
of 504 fresh items (no judgment) opened to the pool: the queue every measurement works. At 4M
items that is 12M judgments, 12M claims, about 545k judgments of history per verifier.

The load is server-side SQL (`INSERT … SELECT … FROM generate_series`) into the migrated schema:
the large tables' secondary indexes and constraints are dropped first and rebuilt after, then
VACUUM ANALYZE (what autovacuum would have done on a live database).

Measured per size, each in a fresh Python process (`--measure SIZE`), in-process through
Django's test client:

1. next-item and submit through the public API (token auth, 22 verifiers in turn), p50/p95 over
   `--pairs` next + submit pairs after a warm-up, and SQL statements per request;
2. the plan of every statement one next and one submit execute (auto_explain, ANALYZE and
   BUFFERS, sent to the client as notices: the plans as they ran), saved to
   `results/scale_plans/<size>.txt`; a `Seq Scan` on a table of more than 10,000 rows fails
   the row loudly;
3. every dashboard selector, the whole dashboard page as staff, and the release build.

The open batch is put back as it was (no claim, no judgment) before and after a measurement.
Results: `results/scale.md` (and each size's figures in `results/scale_plans/<size>.json`, so
that a size measured alone, e.g. 4M in the background, joins the table of the others).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PLANS = RESULTS / "scale_plans"
PG = os.environ.get("SCALE_PG", "postgres://postgres@127.0.0.1:5432/")
SIZES = {"40k": 40_000, "400k": 400_000, "4m": 4_000_000}
CONTEXTS_PER_BATCH = 42  # 504 items a batch (the real data: 84 batches for 41,601 items)
VERIFIERS = 22
K = 3
OPEN_BATCH = "scale-open"
ATTRIBUTES = ("belief", "desire", "intention", "emotion", "knowledge", "trust")
BIG_TABLES = (
    "annotation_context",
    "annotation_item",
    "verification_queueslot",
    "verification_claim",
    "verification_judgment",
    "aggregation_itemresult",
)
LARGE_ROWS = 10_000  # a Seq Scan on a table larger than this is reported


def database_for(size: str) -> str:
    return f"dialtom_scale_{size}"


def shape(size: str) -> dict:
    """Counts of a set: N/12 contexts in closed batches of 42 contexts, + one open batch of 42."""
    contexts = math.ceil(SIZES[size] / 12)
    batches = math.ceil(contexts / CONTEXTS_PER_BATCH)
    return {
        "contexts": contexts,
        "items": contexts * 12,
        "batches": batches,
        "judgments": contexts * 12 * K,
        "open_batch_id": batches + 1,
        "open_items": CONTEXTS_PER_BATCH * 12,
    }


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation between closest ranks."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def seq_scans(plan_text: str, large: dict[str, int]) -> list[str]:
    """Tables of `large` (name -> rows) that a plan reads with a (Parallel) Seq Scan; a scan in a
    branch that did not run (a fallback of the statement) is marked "(never executed)"."""
    found = set()
    for line in plan_text.splitlines():
        match = re.search(r"Seq Scan on (\w+)", line)
        if match and large.get(match.group(1), 0) > LARGE_ROWS:
            found.add(match.group(1) + (" (never executed)" if "never executed" in line else ""))
    return sorted(found)


# --- the synthetic text ---------------------------------------------------------------------

WORDS = (
    "i think we could talk about how the week went and what made it hard to keep going with the plan "
    "you said that your sister helped when you felt tired but the job still takes most of your time "
    "maybe it would help to write down what you want to change before we meet again next month so "
    "that it feels less like a promise to me and more like something you chose for yourself today"
).split()


def sentences(n: int, words: int, seed: int) -> list[str]:
    import random

    rng = random.Random(seed)
    out = set()
    while len(out) < n:
        out.add(" ".join(rng.choices(WORDS, k=words)).capitalize() + ".")
    return sorted(out)


# --- load -------------------------------------------------------------------------------------


def _django(size: str) -> None:
    os.environ["SCALE_DB"] = database_for(size)
    os.environ.setdefault("DATABASE_URL", PG + database_for(size))
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.scale_settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def loaded(size: str) -> bool:
    import psycopg

    with psycopg.connect(PG + "postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database_for(size)]).fetchone():
            return False
    with psycopg.connect(PG + database_for(size), autocommit=True) as conn:
        if not conn.execute("SELECT to_regclass('scale_meta')").fetchone()[0]:
            return False
        row = conn.execute("SELECT items FROM scale_meta").fetchone()
        return bool(row) and row[0] == shape(size)["items"]


def recreate_database(size: str) -> None:
    import psycopg

    name = database_for(size)
    with psycopg.connect(PG + "postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def _step(cursor, label: str, sql: str, params=None) -> None:
    t0 = time.perf_counter()
    cursor.execute(sql, params)
    print(f"  {label}: {time.perf_counter() - t0:.1f} s", flush=True)


def _secondary(cursor) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    """The big tables' foreign keys and unique constraints (table, name, definition), and their
    other non-primary indexes (name, definition): what the load drops and rebuilds."""
    cursor.execute(
        """SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid), contype FROM pg_constraint
           WHERE conrelid::regclass::text = ANY(%s) AND contype IN ('f', 'u') ORDER BY contype DESC, conname""",
        [list(BIG_TABLES)],
    )
    constraints = [(t, n, d) for t, n, d, _ in cursor.fetchall()]
    cursor.execute(
        """SELECT i.indexname, i.indexdef FROM pg_indexes i
           WHERE i.schemaname = 'public' AND i.tablename = ANY(%s)
             AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)
           ORDER BY i.indexname""",
        [list(BIG_TABLES)],
    )
    return constraints, cursor.fetchall()


def _has_column(cursor, table: str, column: str) -> bool:
    cursor.execute("SELECT 1 FROM information_schema.columns WHERE table_name = %s AND column_name = %s", [table, column])
    return cursor.fetchone() is not None


def load(size: str) -> None:
    """Migrates a fresh database and fills it (see the module's docstring)."""
    recreate_database(size)
    _django(size)
    from django.core.management import call_command
    from django.db import connection

    s = shape(size)
    C, B, CPB = s["contexts"], s["batches"], CONTEXTS_PER_BATCH
    total_contexts = C + CPB
    t_start = time.perf_counter()
    call_command("migrate", verbosity=0)
    print(f"{size}: migrated in {time.perf_counter() - t_start:.1f} s; loading {s}", flush=True)
    long_s, short_s = sentences(300, 22, 1), sentences(300, 10, 2)
    p = {"C": C, "B": B, "CPB": CPB, "TC": total_contexts, "V": VERIFIERS, "NI": C * 12}
    with connection.cursor() as cur:
        cur.execute("SET maintenance_work_mem = '1GB'; SET work_mem = '256MB'; SET synchronous_commit = off")
        constraints, indexes = _secondary(cur)
        for table, name, _ in constraints:
            cur.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
        for name, _ in indexes:
            cur.execute(f'DROP INDEX "{name}"')
        cur.execute("CREATE TEMP TABLE scale_sentence (n int PRIMARY KEY, text text NOT NULL)")
        cur.execute("CREATE TEMP TABLE scale_phrase (n int PRIMARY KEY, text text NOT NULL)")
        cur.execute("INSERT INTO scale_sentence SELECT o - 1, t FROM unnest(%s::text[]) WITH ORDINALITY AS x(t, o)", [long_s])
        cur.execute("INSERT INTO scale_phrase SELECT o - 1, t FROM unnest(%s::text[]) WITH ORDINALITY AS x(t, o)", [short_s])

        # People: 22 verifiers (ids 1..22) in pool "scale", one staff member (23), API tokens.
        _step(cur, "people", """
            INSERT INTO accounts_user (id, password, last_login, is_superuser, username, first_name, last_name, email,
                                       is_staff, is_active, date_joined, role, excluded_from_aggregation, exclusion_reason)
            SELECT v, '!', NULL::timestamptz, false, 'scale-v' || lpad(v::text, 2, '0'), '', '', '', false, true, now(), 'verifier', false, ''
            FROM generate_series(1, %(V)s) v
            UNION ALL SELECT %(V)s + 1, '!', NULL, false, 'scale-staff', '', '', '', true, true, now(), 'staff', false, '';
            INSERT INTO accounts_pool (id, name) VALUES (1, 'scale');
            INSERT INTO accounts_pool_members (pool_id, user_id) SELECT 1, v FROM generate_series(1, %(V)s) v;
            INSERT INTO authtoken_token (key, created, user_id) SELECT md5('scale-token-' || v), now(), v FROM generate_series(1, %(V)s) v;
        """, p)
        _step(cur, "batches", """
            INSERT INTO annotation_batch (id, name, status, overlap, lease_minutes, gold_rate, created_at, closed_at)
            SELECT b, 'scale-b' || lpad(b::text, 5, '0'), 'closed', 3, 20, 0, now() - interval '300 days', now() - interval '1 day'
            FROM generate_series(1, %(B)s) b
            UNION ALL SELECT %(B)s + 1, 'scale-open', 'open', 3, 20, 0, now(), NULL;
            INSERT INTO annotation_batch_pools (batch_id, pool_id) SELECT b, 1 FROM generate_series(1, %(B)s + 1) b;
        """, p)
        _step(cur, "contexts", """
            INSERT INTO annotation_context (id, context_id, session_key, window_index, first_turn, last_turn, turns, n_words,
                                            metadata, created_at, domain_id, session_id)
            SELECT c, d || '-s' || lpad((c / 5)::text, 7, '0') || '-w' || (c %% 5), d || '-s' || lpad((c / 5)::text, 7, '0'), c %% 5,
                   NULL, NULL,
                   (SELECT jsonb_agg(jsonb_build_object('speaker', CASE WHEN t %% 2 = 0 THEN 'initiator' ELSE 'recipient' END,
                                                        'text', s.text) ORDER BY t)
                    FROM generate_series(0, 7) t JOIN scale_sentence s ON s.n = ((c * 8 + t) * 7919) %% 300),
                   176, '{}', now(), d, NULL
            FROM (SELECT c, (ARRAY['mi', 'esc', 'pfg'])[c %% 3 + 1] AS d FROM generate_series(1::bigint, %(TC)s) c) x
            ORDER BY c
        """, p)
        _step(cur, "items", """
            INSERT INTO annotation_item (id, item_id, task, attribute, variant, target_speaker, question, options, answer, profile,
                                         is_gold, metadata, created_at, batch_id, context_id, parent_id, retained_by_authors)
            SELECT (c - 1) * 12 + j + 1,
                   ctx.context_id || CASE WHEN j < 6 THEN '-' ELSE '-prospective-' END || a.attr,
                   CASE WHEN j < 6 THEN 'retrospective' ELSE 'prospective' END,
                   a.attr, 'hard', CASE WHEN j < 6 THEN 'recipient' ELSE '' END,
                   CASE WHEN j < 6 THEN 'What is the ' || dom.recipient_role || '''s ' || a.attr || ' at the end of the dialogue?'
                        ELSE 'Which continuation is most consistent with the ' || dom.recipient_role || '''s profile?' END,
                   CASE WHEN j < 6 THEN jsonb_build_array(o0.text, o1.text, o2.text, o3.text)
                        ELSE jsonb_build_array(
                            dom.initiator_role || ': ' || o0.text || E'\\n' || dom.recipient_role || ': ' || o1.text,
                            dom.initiator_role || ': ' || o1.text || E'\\n' || dom.recipient_role || ': ' || o2.text,
                            dom.initiator_role || ': ' || o2.text || E'\\n' || dom.recipient_role || ': ' || o3.text,
                            dom.initiator_role || ': ' || o3.text || E'\\n' || dom.recipient_role || ': ' || o0.text) END,
                   chr((65 + ((c * 7 + j * 3) %% 4))::int),
                   CASE WHEN j < 6 THEN '{}'::jsonb ELSE jsonb_build_object(
                       'belief', o0.text, 'desire', o1.text, 'intention', o2.text, 'emotion', o3.text,
                       'knowledge', o1.text, 'trust', o2.text) END,
                   false, '{}', now(), CASE WHEN c <= %(C)s THEN (c - 1) / %(CPB)s + 1 ELSE %(B)s + 1 END, c, NULL,
                   (c + j) %% 5 <> 0
            FROM generate_series(1::bigint, %(TC)s) c
            CROSS JOIN generate_series(0, 11) j
            JOIN annotation_context ctx ON ctx.id = c
            JOIN annotation_domain dom ON dom.code = ctx.domain_id
            CROSS JOIN LATERAL (SELECT (ARRAY['belief', 'desire', 'intention', 'emotion', 'knowledge', 'trust'])[j %% 6 + 1] AS attr,
                                       ((c * 12 + j) * 7919) %% 75 AS base) a
            JOIN scale_phrase o0 ON o0.n = a.base
            JOIN scale_phrase o1 ON o1.n = a.base + 75
            JOIN scale_phrase o2 ON o2.n = a.base + 150
            JOIN scale_phrase o3 ON o3.n = a.base + 225
            ORDER BY 1
        """, p)
        # the counters the schema has: `answered` (verification 0008), `judged` and `aggregated`
        # (issue 23's progress summaries): a closed batch's slot is answered, judged and aggregated 3 times
        counters = {"answered": "CASE WHEN batch_id <= %(B)s THEN 3 ELSE 0 END",
                    "judged": "CASE WHEN batch_id <= %(B)s THEN 3 ELSE 0 END",
                    "aggregated": "batch_id <= %(B)s"}
        counters = {column: value for column, value in counters.items() if _has_column(cur, "verification_queueslot", column)}
        _step(cur, "queue slots", f"""
            INSERT INTO verification_queueslot (item_id, needed, taken, is_gold, batch_id, priority, position
                                                {''.join(', ' + c for c in counters)})
            SELECT id, 3, CASE WHEN batch_id <= %(B)s THEN 3 ELSE 0 END, false, batch_id, 0,
                   ('x' || substr(md5(item_id), 1, 15))::bit(60)::bigint
                   {''.join(', ' + v for v in counters.values())}
            FROM annotation_item ORDER BY id
        """, p)
        # Judgment j = (item - 1) * 3 + r; its verifier: per context, the 6 retrospective items share
        # verifiers o..o+2 and prospective item a gets o+3+3a..o+5+3a (mod 22): 21 different people.
        judged = """
            SELECT i.id AS item_id, i.batch_id, i.answer, r,
                   (i.id - 1) * 3 + r + 1 AS jid,
                   ((i.context_id %% %(V)s) + CASE WHEN i.task = 'retrospective' THEN 0
                        ELSE 3 + 3 * ((i.id - 1) %% 12 - 6) END + r) %% %(V)s + 1 AS verifier_id,
                   timestamptz '2026-01-01' + (i.id::float8 / %(NI)s) * (now() - timestamptz '2026-01-01')
                       + r * interval '7 minutes' AS at,
                   10 + ((i.id * 31 + r * 17) %% 90) AS secs
            FROM annotation_item i CROSS JOIN generate_series(0, 2) r
            WHERE i.batch_id <= %(B)s
        """
        _step(cur, "claims", f"""
            INSERT INTO verification_claim (id, status, display_order, claimed_at, expires_at, batch_id, item_id, verifier_id,
                                            is_gold, skip_reason, exposed)
            SELECT ('00000000-0000-4000-8000-' || lpad(to_hex(jid), 12, '0'))::uuid, 'answered',
                   (ARRAY['ABCD', 'BCDA', 'CDAB', 'DABC', 'ACBD', 'BDAC', 'CADB', 'DBCA'])[jid %% 8 + 1],
                   at - secs * interval '1 second', at - secs * interval '1 second' + interval '20 minutes',
                   batch_id, item_id, verifier_id, false, '', false
            FROM ({judged}) x ORDER BY jid
        """, p)
        _step(cur, "judgments", f"""
            INSERT INTO verification_judgment (id, label, displayed_label, implausible, comment, seconds_spent, idempotency_key,
                                               source, created_at, updated_at, batch_id, claim_id, item_id, verifier_id, exposed)
            SELECT jid,
                   CASE WHEN (jid * 2654435761) %% 100 < 78 THEN answer
                        WHEN (jid * 2654435761) %% 100 < 84 THEN 'NONE'
                        ELSE chr((65 + ((ascii(answer) - 64) %% 4))::int) END,
                   chr((65 + ((jid * 40503) %% 4))::int), '[]', '', secs, ('00000000-0000-4000-9000-' || lpad(to_hex(jid), 12, '0'))::uuid,
                   'form', at, at, batch_id, ('00000000-0000-4000-8000-' || lpad(to_hex(jid), 12, '0'))::uuid, item_id, verifier_id,
                   false
            FROM ({judged}) x ORDER BY jid
        """, p)
        _step(cur, "aggregation runs", """
            INSERT INTO aggregation_aggregationrun (id, status, settings, versions, trigger, created_at, started_at, finished_at,
                progress, counts, timings, summary, error, started_by_id, batches_done, batches_total, celery_id,
                input_fingerprint, attempts, heartbeat_at)
            SELECT b, 'succeeded', '{"method": "dawid-skene", "retention_threshold": 0.5}', '{"crowd-kit": "1.4"}', 'auto',
                   now() - interval '1 day', now() - interval '1 day', now() - interval '1 day', 1.0, '{}', '{}', '{}', '',
                   NULL, 1, 1, '', md5(b::text), 1, NULL
            FROM generate_series(1, %(B)s) b;
            INSERT INTO aggregation_aggregationrun_batches (aggregationrun_id, batch_id) SELECT b, b FROM generate_series(1, %(B)s) b;
        """, p)
        _step(cur, "item results", """
            INSERT INTO aggregation_itemresult (id, label, posterior, mv_label, n_judgments, retained, batch_id, item_id, run_id)
            SELECT id, CASE WHEN keep THEN answer ELSE 'NONE' END, CASE WHEN keep THEN 0.97 ELSE 0.41 END, answer, 3, keep,
                   batch_id, id, batch_id
            FROM (SELECT id, answer, batch_id,
                         (id * 2654435761) %% 100 < CASE WHEN task = 'retrospective' THEN 83 ELSE 54 END AS keep
                  FROM annotation_item WHERE batch_id <= %(B)s) x
            ORDER BY id
        """, p)
        _step(cur, "batch results", """
            INSERT INTO aggregation_batchresult (id, items, judgments, retained, ac1, ac1_se, ac1_ci_low, ac1_ci_high, kappa, alpha,
                                                 by_group, batch_id, run_id, details, gold_items, timings, workers, is_current)
            SELECT g.batch_id, sum(g.n), 3 * sum(g.n), sum(g.kept), 0.62, 0.02, 0.58, 0.66, 0.55, 0.56,
                   jsonb_object_agg(g.task || ':' || g.domain, jsonb_build_object(
                       'items', g.n, 'judgments', 3 * g.n, 'retained', g.kept, 'retention', g.kept::float8 / g.n,
                       'ac1', 0.62, 'ac1_se', 0.03, 'ac1_ci', jsonb_build_array(0.56, 0.68), 'kappa', 0.55, 'alpha', 0.56)),
                   g.batch_id, g.batch_id, '{"ds_iterations": 12}', 0, '{}', %(V)s, true
            FROM (SELECT r.batch_id, i.task, c.domain_id AS domain, count(*) AS n, count(*) FILTER (WHERE r.retained) AS kept
                  FROM aggregation_itemresult r JOIN annotation_item i ON i.id = r.item_id JOIN annotation_context c ON c.id = i.context_id
                  GROUP BY 1, 2, 3) g
            GROUP BY g.batch_id ORDER BY g.batch_id
        """, p)
        _step(cur, "worker results", """
            INSERT INTO aggregation_workerresult (accuracy, confusion, n_judgments, batch_id, run_id, verifier_id, gold_accuracy,
                                                  gold_judgments)
            SELECT 0.7 + verifier_id / 100.0, '{}', count(*), batch_id, batch_id, verifier_id, NULL, 0
            FROM verification_judgment GROUP BY batch_id, verifier_id ORDER BY batch_id, verifier_id
        """, p)
        for table in ("accounts_user", "accounts_pool", "accounts_pool_members", "annotation_batch", "annotation_batch_pools",
                      "annotation_context", "annotation_item", "verification_judgment", "aggregation_aggregationrun",
                      "aggregation_aggregationrun_batches", "aggregation_itemresult", "aggregation_batchresult",
                      "aggregation_workerresult"):
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
        for name, definition in indexes:
            _step(cur, f"index {name}", definition)
        for table, name, definition in constraints:
            _step(cur, f"constraint {name}", f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
        cur.execute("CREATE TABLE scale_meta (size text, items bigint, judgments bigint, loaded_at timestamptz, seconds float8)")
    # the staff pages' kept summaries (issue 23), made from the rows above as the rebuild makes them
    t0 = time.perf_counter()
    call_command("summaries_rebuild", stdout=open(os.devnull, "w"))
    print(f"  summaries rebuilt: {time.perf_counter() - t0:.1f} s", flush=True)
    connection.close()
    import psycopg

    with psycopg.connect(PG + database_for(size), autocommit=True) as conn:  # VACUUM needs autocommit
        t0 = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute("VACUUM (ANALYZE)")
        print(f"  vacuum analyze: {time.perf_counter() - t0:.1f} s", flush=True)
        seconds = time.perf_counter() - t_start
        conn.execute("INSERT INTO scale_meta VALUES (%s, %s, %s, now(), %s)", [size, s["items"], s["judgments"], seconds])
        size_db = conn.execute("SELECT pg_size_pretty(pg_database_size(current_database()))").fetchone()[0]
    print(f"{size}: loaded in {seconds:.1f} s, database {size_db}", flush=True)


# --- measure --------------------------------------------------------------------------------


def _open_batch_reset(*, releases: bool = False) -> None:
    """The open batch as loaded: no claim, no judgment, every slot empty; with `releases`, no
    bench release either (only the release phase touches them: a release may be building at 4M
    in another process while the other phases run)."""
    from django.conf import settings
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT id FROM annotation_batch WHERE name = %s", [OPEN_BATCH])
        (batch_id,) = cur.fetchone()
        cur.execute("DELETE FROM verification_judgment WHERE batch_id = %s", [batch_id])
        cur.execute("DELETE FROM verification_claim WHERE batch_id = %s", [batch_id])
        cur.execute("UPDATE verification_queueslot SET taken = 0, needed = 3, priority = 0 WHERE batch_id = %s", [batch_id])
        if _has_column(cur, "verification_queueslot", "answered"):
            cur.execute("UPDATE verification_queueslot SET answered = 0 WHERE batch_id = %s", [batch_id])
        cur.execute("UPDATE annotation_batch SET status = 'open', closed_at = NULL WHERE id = %s", [batch_id])
        if "verification_itemanswers" in connection.introspection.table_names(cur):  # issue 23: the agreement
            from verification.pair_tallies import pairs_rebuild  # summaries forget the deleted answers too

            pairs_rebuild(batch_ids=[batch_id])
        if not releases:
            return
        cur.execute("DELETE FROM releases_releaseitem WHERE release_id IN (SELECT id FROM releases_release WHERE version LIKE 'scale-%%')")
        cur.execute("DELETE FROM releases_release WHERE version LIKE 'scale-%%'")
    shutil.rmtree(settings.RELEASE_ROOT, ignore_errors=True)


def _celery_queue_empty() -> None:
    """Drops the follow-up tasks the submits published (no worker reads the bench's queue)."""
    from django.conf import settings

    try:
        import redis

        redis.Redis.from_url(settings.CELERY_BROKER_URL).delete(settings.CELERY_TASK_DEFAULT_QUEUE)
    except Exception as exc:  # noqa: BLE001 - best effort
        print(f"could not empty the Celery queue: {exc}", file=sys.stderr)


def _large_tables() -> dict[str, int]:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT relname, reltuples::bigint FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace")
        return dict(cur.fetchall())


def _clients():
    from rest_framework.test import APIClient

    from accounts.models import User

    clients = []
    for user in User.objects.filter(username__startswith="scale-v").order_by("username"):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {user.auth_token.key}")
        clients.append(client)
    return clients


def _pair(client, *, capture: bool = False):
    """One next + submit: (next seconds, submit seconds, next queries, submit queries)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as q_next:
        t0 = time.perf_counter()
        response = client.get("/api/v1/next-item/", {"batch": OPEN_BATCH})
        t_next = time.perf_counter() - t0
    if response.status_code != 200:
        raise RuntimeError(f"next-item answered {response.status_code}: {response.content[:300]!r}")
    body = response.json()
    with CaptureQueriesContext(connection) as q_submit:
        t0 = time.perf_counter()
        answer = client.post(
            "/api/v1/judgments/",
            {"claim": body["claim"], "choice": "A", "idempotency_key": str(uuid.uuid4())},
            format="json",
        )
        t_submit = time.perf_counter() - t0
    if answer.status_code not in (200, 201):
        raise RuntimeError(f"judgments answered {answer.status_code}: {answer.content[:300]!r}")
    return t_next, t_submit, q_next.captured_queries, q_submit.captured_queries


def measure_queue(*, pairs: int, warmup: int) -> dict:
    clients = _clients()
    nexts, submits, n_next, n_submit = [], [], [], []
    for n in range(warmup + pairs):
        t_next, t_submit, q_next, q_submit = _pair(clients[n % len(clients)])
        if n >= warmup:
            nexts.append(t_next * 1000)
            submits.append(t_submit * 1000)
            n_next.append(len(q_next))
            n_submit.append(len(q_submit))
    return {
        "pairs": pairs,
        "next_p50": percentile(nexts, 50),
        "next_p95": percentile(nexts, 95),
        "submit_p50": percentile(submits, 50),
        "submit_p95": percentile(submits, 95),
        "next_queries_median": statistics.median(n_next),
        "next_queries_max": max(n_next),
        "submit_queries_median": statistics.median(n_submit),
        "submit_queries_max": max(n_submit),
    }


SKIP_EXPLAIN = re.compile(r"^\s*(SAVEPOINT|RELEASE|ROLLBACK|BEGIN|COMMIT|SET|SHOW|LOAD)\b", re.I)


def _explain_again(sql: str) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of a captured statement in a transaction rolled back (the
    fallback when auto_explain is not available); plain EXPLAIN when it cannot run again."""
    from django.db import connection, transaction

    class Rollback(Exception):
        pass

    for prefix in ("EXPLAIN (ANALYZE, BUFFERS) ", "EXPLAIN "):
        try:
            with transaction.atomic():
                with connection.cursor() as cur:
                    cur.execute(prefix + sql.replace("%", "%%"))
                    text = "\n".join(r[0] for r in cur.fetchall())
                raise Rollback
        except Rollback:
            return text
        except Exception as exc:  # noqa: BLE001 - try the next form
            error = exc
    return f"(could not explain: {error})"


def capture_plans(*, size: str, large: dict[str, int], pairs: int = 3) -> dict:
    """Plans of every statement of `pairs` next + submit pairs of verifiers who hold no claim (the
    pick), then one of the first again (its next item may be one it holds: a retrospective row),
    as they ran (auto_explain)."""
    from django.db import connection

    clients = _clients()
    notices: list[str] = []
    connection.ensure_connection()
    raw = connection.connection
    auto = True
    try:
        with connection.cursor() as cur:
            cur.execute("LOAD 'auto_explain'")
            cur.execute(
                "SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on;"
                " SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = 'notice';"
                " SET auto_explain.log_timing = on; SET client_min_messages = 'notice'"
            )
        raw.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
    except Exception as exc:  # noqa: BLE001 - fall back to explaining the captured statements again
        print(f"auto_explain unavailable ({exc}); explaining the captured statements again", file=sys.stderr)
        auto = False
    sections, seq = [], []
    _open_batch_reset()  # fresh verifiers: each pair's next runs the pick, not a live claim ...
    order = [clients[(7 * n + 3) % len(clients)] for n in range(pairs)] + [clients[3]]  # ... but the last
    for n, client in enumerate(order):
        notices.clear()
        _, _, q_next, q_submit = _pair(client)
        plans = list(notices)
        for label, queries in (("next", q_next), ("submit", q_submit)):
            for m, query in enumerate(queries):
                sql = query["sql"] or ""  # None: a statement bound server-side (prepared), its text not logged
                if sql and SKIP_EXPLAIN.match(sql):
                    plan = "(not a plannable statement)"
                elif auto:
                    plan = _match_plan(sql, plans)
                else:
                    plan = _explain_again(sql)
                found = seq_scans(plan, large)
                seq += [f"{label} #{m + 1}: {t}" for t in found]
                sections.append(
                    f"### pair {n + 1} · {label} · statement {m + 1} ({query['time']} s)"
                    + (f" · SEQ SCAN on {', '.join(found)}" if found else "")
                    + f"\n\n{sql or '(bound server-side: the text is in the plan)'}\n\n{plan}\n"
                )
    if auto:
        connection.close()  # drops auto_explain and the notice handler with the session
    PLANS.mkdir(parents=True, exist_ok=True)
    header = f"# Plans of next + submit at {size} ({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC)\n"
    header += f"method: {'auto_explain (ANALYZE, BUFFERS), the plans as they ran' if auto else 'EXPLAIN again, rolled back'}\n"
    header += f"Seq Scans on tables over {LARGE_ROWS:,} rows: {', '.join(seq) if seq else 'none'}\n\n"
    (PLANS / f"{size}.txt").write_text(header + "\n".join(sections))
    return {"seq_scans": sorted(set(seq)), "plan_method": "auto_explain" if auto else "explain-again"}


def _match_plan(sql: str, plans: list[str]) -> str:
    """The auto_explain notice whose query text is this statement (consumed from `plans`); for a
    statement bound server-side (`sql` empty), the first plan of a query with $n parameters."""
    if not sql:
        for n, plan in enumerate(plans):
            if re.search(r"Query Text: .*\$1", plan, re.S):
                return plans.pop(n)
    key = re.sub(r"\s+", " ", sql).strip()[:120]
    for n, plan in enumerate(plans):
        text = re.search(r"Query Text: (.*)", plan)
        if text and re.sub(r"\s+", " ", text.group(1)).strip()[:120] == key:
            return plans.pop(n)
    # parameters are sent apart (server-side binding): take the next plan in order
    if plans:
        return plans.pop(0)
    return "(no plan logged: statement not planned by the server, e.g. a utility command)"


def _timed(fn, repeat: int = 2) -> float:
    """Seconds of the fastest of `repeat` calls (the first may pay a cold cache)."""
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure_dashboard(*, repeat: int) -> dict:
    from django.test import Client

    from accounts.models import User
    from dashboard import selectors
    from releases import selectors as release_selectors

    sections = {
        "progress_by_batch": selectors.progress_by_batch,
        "throughput_by_day": selectors.throughput_by_day,
        "adaptive_overlap_by_batch": selectors.adaptive_overlap_by_batch,
        "staffing_by_batch": selectors.staffing_by_batch,
        "agreement_overview": selectors.agreement_overview,
        "retention_overview": selectors.retention_overview,
        "verifier_stats": selectors.verifier_stats,
        "crowd_worker_stats": selectors.crowd_worker_stats,
        "latest_aggregation_run": selectors.latest_aggregation_run,
        "releases_list": lambda: list(release_selectors.releases_list()[:10]),
        "release_warnings": release_selectors.release_warnings,
    }
    out = {}
    for name, fn in sections.items():
        out[name] = _timed(fn, repeat)
        print(f"  {name}: {out[name]:.3f} s", flush=True)
    client = Client()
    client.force_login(User.objects.get(username="scale-staff"))

    def page():
        response = client.get("/dashboard/")
        if response.status_code != 200:
            raise RuntimeError(f"dashboard answered {response.status_code}")

    out["dashboard_page"] = _timed(page, repeat)
    print(f"  dashboard page: {out['dashboard_page']:.3f} s", flush=True)
    return out


def measure_release(*, size: str) -> dict:
    from releases.models import Release
    from releases.services import release_build, release_create

    version = f"scale-{size}-{int(time.time())}"
    t0 = time.perf_counter()
    release = release_create(version=version, build=False, acknowledge_warnings=True, trigger="command")
    created = time.perf_counter() - t0
    t0 = time.perf_counter()
    release = release_build(release_id=release.pk)
    built = time.perf_counter() - t0
    release = Release.objects.get(pk=release.pk)
    files = {name: meta.get("bytes", 0) for name, meta in release.files.items()}
    print(f"  release: create {created:.1f} s, build {built:.1f} s, {release.n_items} items, status {release.status}", flush=True)
    return {"release_create": created, "release_build": built, "release_items": release.n_items,
            "release_bytes": sum(v or 0 for v in files.values())}


PHASES = ("queue", "dashboard", "release")


def measure(size: str, *, pairs: int, warmup: int, phases: tuple[str, ...], repeat: int) -> dict:
    """Measures `phases` at `size`; the figures join those of earlier runs in `<size>.json`."""
    _django(size)
    from django.core.management import call_command

    load_avg = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    call_command("migrate", verbosity=0)  # the code measured may carry new migrations
    _open_batch_reset()
    large = _large_tables()
    path = PLANS / f"{size}.json"
    result = json.loads(path.read_text()) if path.exists() else {}
    at = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    result.update({"size": size, "items": shape(size)["items"], "judgments": shape(size)["judgments"]})
    result.setdefault("phases", {})
    if "queue" in phases:
        print(f"{size}: queue ({warmup} warm-up + {pairs} pairs)", flush=True)
        result.update(measure_queue(pairs=pairs, warmup=warmup))
        print(f"  next p50 {result['next_p50']:.1f} ms, submit p50 {result['submit_p50']:.1f} ms", flush=True)
        result.update(capture_plans(size=size, large=large))
        _open_batch_reset()
        _celery_queue_empty()
        result["phases"]["queue"] = {"at": at, "loadavg_before": load_avg}
    if "dashboard" in phases:
        print(f"{size}: dashboard", flush=True)
        load_avg = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        result["dashboard"] = measure_dashboard(repeat=repeat)
        result["phases"]["dashboard"] = {"at": at, "loadavg_before": load_avg}
    if "release" in phases:
        print(f"{size}: release", flush=True)
        load_avg = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        _open_batch_reset(releases=True)
        result.update(measure_release(size=size))
        _open_batch_reset(releases=True)
        result["phases"]["release"] = {"at": at, "loadavg_before": load_avg}
    PLANS.mkdir(parents=True, exist_ok=True)
    # another process may have written other phases of this size meanwhile (a 4M release runs for
    # most of an hour): keep what it wrote, replace only what this one measured
    latest = json.loads(path.read_text()) if path.exists() else {}
    measured = {"queue": [k for k in result if k.startswith(("next_", "submit_", "pairs", "seq_", "plan_"))],
                "dashboard": ["dashboard"], "release": ["release_create", "release_build", "release_items", "release_bytes"]}
    for phase in phases:
        for key in measured.get(phase, []):
            latest[key] = result[key]
        latest.setdefault("phases", {})[phase] = result["phases"][phase]
    latest.update({"size": size, "items": result["items"], "judgments": result["judgments"]})
    path.write_text(json.dumps(latest, indent=2) + "\n")
    return latest


# --- report ----------------------------------------------------------------------------------


def _ratio(results: dict, key, a: str, b: str) -> str:
    def get(r):
        return r.get("dashboard", {}).get(key, r.get(key))

    if a not in results or b not in results:
        return ""
    x, y = get(results[a]), get(results[b])
    if not x or not y:
        return ""
    return f"{y / x:.2f}"


def report(command: str) -> str:
    results = {}
    for size in SIZES:
        path = PLANS / f"{size}.json"
        if path.exists():
            results[size] = json.loads(path.read_text())
    sizes = [s for s in SIZES if s in results]
    lines = [
        "# Scale: how the cost grows with the work (issue 14)",
        "",
        "Rerun, no reload (each run updates the phases it measures; see bench/README.md):",
        "",
        "    .venv/bin/python bench/scale.py --reuse --phases queue        # next/submit + plans, ~1 min",
        "    .venv/bin/python bench/scale.py --reuse --no-release          # + the dashboard, ~15 min",
        "    .venv/bin/python bench/scale.py --reuse --phases release --sizes 40k,400k   # 4M: about an hour",
        "",
        f"Last command: `{command}`",
        "",
        "| size | items | judgments | phase: measured at (/proc/loadavg before) |",
        "| --- | --- | --- | --- |",
    ]
    for s in sizes:
        r = results[s]
        when = "; ".join(f"{k}: {v['at']} ({v['loadavg_before']})" for k, v in r.get("phases", {}).items())
        lines.append(f"| {s} | {r['items']:,} | {r['judgments']:,} | {when} |")
    lines += ["", "## Next item and submit (in-process, token auth, 22 verifiers in turn)", ""]
    lines.append("| size | next p50 ms | next p95 ms | submit p50 ms | submit p95 ms | SQL/next (median, max) | SQL/submit (median, max) | Seq Scan on a large table |")
    lines.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for s in [s for s in sizes if "next_p50" in results[s]]:
        r = results[s]
        ran = [x for x in r.get("seq_scans", []) if "never executed" not in x]
        idle = sorted({x.split(": ", 1)[1] for x in r.get("seq_scans", []) if "never executed" in x})
        seq = f"**FAIL: {', '.join(ran)}**" if ran else "none"
        if idle:
            seq += f" (in a branch that did not run: {', '.join(idle)})"
        lines.append(
            f"| {s} | {r['next_p50']:.1f} | {r['next_p95']:.1f} | {r['submit_p50']:.1f} | {r['submit_p95']:.1f} | "
            f"{r['next_queries_median']:g}, {r['next_queries_max']} | {r['submit_queries_median']:g}, {r['submit_queries_max']} | {seq} |"
        )
    if "next_p50" in results.get("40k", {}) and "next_p50" in results.get("4m", {}):
        ratio = results["4m"]["next_p50"] / results["40k"]["next_p50"]
        verdict = "met" if ratio <= 1.5 else "**NOT met**"
        lines += ["", f"Next-item p50 at 4M / at 40k: **{ratio:.2f}×** (goal ≤ 1.5×: {verdict})."]
    lines += ["", "## Dashboard sections and release build (seconds; fastest of 2 for the sections)", ""]
    keys = list(dict.fromkeys(k for r in results.values() for k in r.get("dashboard", {})))
    keys += ["release_build"]
    head = "| section | " + " | ".join(sizes) + " | ×400k/40k | ×4M/400k |"
    lines += [head, "| --- |" + " --- |" * (len(sizes) + 2)]
    for key in keys:
        cells = []
        for s in sizes:
            v = results[s].get("dashboard", {}).get(key, results[s].get(key))
            cells.append("" if v is None else f"{v:.3f}")
        lines.append(f"| {key} | " + " | ".join(cells) + f" | {_ratio(results, key, '40k', '400k')} | {_ratio(results, key, '400k', '4m')} |")
    lines += [
        "",
        "Items grow ×10 from one size to the next: a ratio of 10 is linear. Batches of 504 items, so the",
        "number of batches (and of aggregation runs, one a batch) grows ×10 too.",
        "",
        "How: `bench/scale.py` (its docstring says what the sets hold and how they are loaded). Next and",
        "submit go through the public API in-process (Django's test client, token auth, the open batch of",
        "504 fresh items, 22 verifiers in turn, after a warm-up); SQL per request counts every statement",
        "of the request, auth and transaction control included. The plans of every statement of three",
        "next + submit pairs are in `scale_plans/<size>.txt` (auto_explain with ANALYZE and BUFFERS: the",
        "plans as they ran). Dashboard sections: each selector of `dashboard/views.section_context`, then",
        "the whole page (`GET /dashboard/` as staff). Release: `release_create` + `release_build` (items",
        "in three formats, results.csv, judgments.csv, ReleaseItems, manifest). The machine (2 cores) was",
        "shared while this ran: see the load averages above, and compare ratios within a run.",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="40k,400k,4m")
    parser.add_argument("--reuse", action="store_true", help="keep a database that already holds its set")
    parser.add_argument("--load-only", action="store_true")
    parser.add_argument("--report-only", action="store_true", help="rewrite results/scale.md from the figures kept")
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=2, help="calls of each dashboard section (the fastest counts)")
    parser.add_argument("--phases", default=",".join(PHASES), help=f"some of {','.join(PHASES)}")
    parser.add_argument("--no-release", action="store_true", help="every phase but the release build")
    parser.add_argument("--load", metavar="SIZE", help=argparse.SUPPRESS)
    parser.add_argument("--measure", metavar="SIZE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load:
        load(args.load)
        return 0
    if args.measure:
        measure(args.measure, pairs=args.pairs, warmup=args.warmup, phases=tuple(args.phases.split(",")), repeat=args.repeat)
        return 0
    me = [sys.executable, str(Path(__file__).resolve())]
    if args.report_only:
        (RESULTS / "scale.md").write_text(report(".venv/bin/python bench/scale.py --report-only"))
        return 0
    for size in args.sizes.split(","):
        if size not in SIZES:
            parser.error(f"unknown size {size}")
        if not (args.reuse and loaded(size)):
            subprocess.run([*me, "--load", size], check=True)
        if not args.load_only:
            phases = [p for p in args.phases.split(",") if p in PHASES and not (args.no_release and p == "release")]
            extra = ["--pairs", str(args.pairs), "--warmup", str(args.warmup), "--repeat", str(args.repeat)]
            subprocess.run([*me, "--measure", size, *extra, "--phases", ",".join(phases)], check=True)
    if not args.load_only:
        command = ".venv/bin/python bench/scale.py " + " ".join(sys.argv[1:])
        text = report(command)
        (RESULTS / "scale.md").write_text(text)
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
