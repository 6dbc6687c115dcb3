"""Benchmark: the staff's item list (issue 23, part 2) against the login page, in one process.

    SCALE_DB=dialtom_scale_400k_h3 .venv/bin/python bench/item_list.py [--repeat 15]

Runs on a *copy* of a scale database (`createdb -T dialtom_scale_400k dialtom_scale_400k_h3`,
migrated, `manage.py item_summaries_rebuild`), in-process through Django's test client as
`scale-staff`: the login page, then `/review/items/` unfiltered (first page and a page after
a cursor), and the worst cases (a rare filter sorted on another key, a batch sorted by
agreement, a posterior range sorted by flags), median of `--repeat`. For each: the ratio to
the login page, SQL statements per page, and whether the plan of the page's statements holds
a Seq Scan on a table of more than 10,000 rows (EXPLAIN of each captured SELECT).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
from html import unescape
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.scale_settings")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    import django

    django.setup()
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from accounts.models import User
    from annotation.models import ItemSummary

    batch = ItemSummary.objects.exclude(batch=None).order_by("-item_id").values_list("batch__name", flat=True).first()
    cases = {
        "unfiltered, first page": {},
        "unfiltered, sort judgments desc": {"sort": "judgments", "dir": "desc"},
        "decided=drop, sort agreement desc": {"decided": "drop", "sort": "agreement", "dir": "desc"},
        "flagged=yes, sort posterior": {"flagged": "yes"},
        "one batch, sort agreement": {"batch": batch, "sort": "agreement"},
        "posterior 0.4–0.6 + domain + attribute, sort flags desc": {
            "posterior_min": "0.4", "posterior_max": "0.6", "domain": "esc", "attribute": "trust", "sort": "flags", "dir": "desc"},
        "disagrees=yes + variant, sort decision": {"disagrees": "yes", "variant": "hard", "sort": "decision"},
    }
    staff = Client()
    staff.force_login(User.objects.get(username="scale-staff"))
    anonymous = Client()

    def timed(client, url, params):
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            response = client.get(url, params)
            times.append(time.perf_counter() - t0)
            assert response.status_code == 200, (url, params, response.status_code)
        return statistics.median(times), response

    large = {t: n for t, n in _sizes(connection).items() if n > 10_000}
    login, _ = timed(anonymous, "/accounts/login/", {})
    rows = {"items": ItemSummary.objects.count(), "login_ms": round(login * 1000, 2), "pages": {}}
    print(f"items {rows['items']:,}; login page {login * 1000:.2f} ms", flush=True)
    for name, params in cases.items():
        params = {k: v for k, v in params.items() if v}
        seconds, response = timed(staff, "/review/items/", params)
        html = response.content.decode()
        cursor = re.search(r'[?&]after=([^"&]+)"? ?[^>]*rel="next"', html) or re.search(r'after=([A-Za-z0-9_-]+)', html)
        count = _count_text(html)
        later = re.search(r'<span id="item-total" hx-get="([^"]+)"', html)
        exact = None
        if later:  # the page showed an estimate: the exact count it asks for once loaded
            exact_s, exact_response = timed(staff, unescape(later.group(1)), {})
            exact = (round(exact_s * 1000, 2), _count_text(exact_response.content.decode()))
        if cursor:  # the page after: a keyset cursor
            after, _ = timed(staff, "/review/items/", {**params, "after": cursor.group(1)})
        else:
            after = None
        with CaptureQueriesContext(connection) as queries:
            staff.get("/review/items/", params)
        seq = []
        for q in queries.captured_queries:
            if q["sql"].lstrip().upper().startswith("SELECT") and "itemsummary" in q["sql"]:
                with connection.cursor() as cursor:
                    cursor.execute("EXPLAIN " + q["sql"])
                    plan = "\n".join(r[0] for r in cursor.fetchall())
                seq += [t for t in large if re.search(rf"Seq Scan on {t}\b", plan)]
        rows["pages"][name] = {
            "ms": round(seconds * 1000, 2), "x_login": round(seconds / login, 1),
            "next_ms": round(after * 1000, 2) if after else None, "statements": len(queries.captured_queries),
            "count": count, "seq_scans_on_large": sorted(set(seq)),
            "exact_count_later_ms": exact[0] if exact else None, "exact_count_later": exact[1] if exact else None,
        }
        print(f"{name}: {seconds * 1000:.1f} ms ({seconds / login:.1f}× login), next page "
              f"{after * 1000 if after else float('nan'):.1f} ms, {len(queries.captured_queries)} statements, "
              f"count {rows['pages'][name]['count']}" + (f" (exact {exact[1]} after the page, in {exact[0]:.1f} ms)" if exact else "")
              + f", seq scans on large tables: {sorted(set(seq)) or 'none'}", flush=True)
    out = ROOT / "bench" / "results" / f"item_list_{os.environ['SCALE_DB']}.json"
    out.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


def _count_text(html: str) -> str:
    """What the list says of its total ("12", "about 6,856", "10,000+")."""
    return re.search(r'<span id="item-total"[^>]*>([^<]+?) items?\b', html).group(1)


def _sizes(connection) -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname, reltuples::bigint FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace")
        return dict(cursor.fetchall())


if __name__ == "__main__":
    raise SystemExit(main())
