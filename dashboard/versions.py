"""The fingerprint of what a dashboard section shows (issue 23): one statement on the summaries.
The page polls each section with it; the server answers 204 No Content while it is the same."""
import hashlib

from django.db import connection

from accounts.models import User
from aggregation.models import AggregationRun, CurrentResultCell, CurrentWorkerTally
from annotation.models import Batch
from verification.models import AdaptiveOverlap, BatchTally, Claim, VerifierTally


# --- What a section shows has changed? -------------------------------------------------------------


def _t(model) -> str:
    return model._meta.db_table


def _parts() -> dict[str, str]:
    """Each thing a section's fingerprint reads: one row, one text column `v`."""
    from references.models import ReferenceAssignment, ReferenceSubmission  # noqa: PLC0415
    from releases.models import Release  # noqa: PLC0415

    return {
        "runs": f"SELECT concat_ws('.', count(*), max(id::text)) FROM {_t(AggregationRun)} WHERE status = 'succeeded'",
        "tallies": f"SELECT concat_ws('.', sum(judgments), sum(items), sum(agg_items), count(*)) FROM {_t(BatchTally)}",
        "batches": (f"SELECT concat_ws('.', count(*), sum(overlap), count(*) FILTER (WHERE status = 'open'),"
                    f" count(*) FILTER (WHERE status = 'paused')) FROM {_t(Batch)}"),
        "live": f"SELECT count(*)::text FROM {_t(Claim)} WHERE status = 'active' AND expires_at > now()",
        "adaptive": f"SELECT concat_ws('.', count(*), sum(rounds), sum(undecided)) FROM {_t(AdaptiveOverlap)}",
        "latest": (f"SELECT concat_ws('.', id, status, progress, batches_done) FROM {_t(AggregationRun)}"
                   f" ORDER BY created_at DESC, id DESC LIMIT 1"),
        "cells": f"SELECT concat_ws('.', sum(total), sum(retained), count(*)) FROM {_t(CurrentResultCell)}",
        "verifiers": f"SELECT concat_ws('.', sum(judgments), count(*)) FROM {_t(VerifierTally)}",
        "users": f"SELECT concat_ws('.', count(*), count(*) FILTER (WHERE excluded_from_aggregation)) FROM {_t(User)}",
        "workers": f"SELECT concat_ws('.', sum(n), count(*)) FROM {_t(CurrentWorkerTally)}",
        "assignments": (f"SELECT concat_ws('.', count(*), max(id::text), count(*) FILTER (WHERE status = 'sent_back'))"
                        f" FROM {_t(ReferenceAssignment)}"),
        "submissions": f"SELECT concat_ws('.', count(*), max(id::text)) FROM {_t(ReferenceSubmission)}",
        "releases": (f"SELECT concat_ws('.', count(*), max(id::text), count(*) FILTER (WHERE status = 'ready'),"
                     f" count(*) FILTER (WHERE error <> '')) FROM {_t(Release)}"),
        "today": "SELECT current_date::text",
    }


# section -> the parts its fingerprint reads, in order
SECTION_PARTS = {
    "progress": ("tallies", "batches", "live", "adaptive", "today"),
    "staffing": ("tallies", "batches"),
    "agreement": ("runs",),
    "agreement_groups": ("runs",),
    "retention": ("runs", "cells", "tallies"),
    "people": ("verifiers", "users", "workers", "assignments", "submissions"),
    "run": ("latest", "tallies", "batches"),
    "releases": ("releases", "runs", "tallies"),
}


def _versions_sql(names: list[str]) -> str:
    """One statement: each part the sections read is computed once (a CTE each), however many
    sections read it: the batch tallies' sums are read by five sections of the page."""
    parts = _parts()
    used = list(dict.fromkeys(p for n in names for p in SECTION_PARTS[n]))
    ctes = ", ".join(f"p_{p} AS ({parts[p]})" for p in used)
    columns = ", ".join(
        "concat_ws('|', " + ", ".join(f"(SELECT * FROM p_{p})" for p in SECTION_PARTS[n]) + ")" for n in names
    )
    return f"WITH {ctes} SELECT {columns}"


def _fingerprint(value: str | None) -> str:
    return hashlib.blake2s((value or "").encode(), digest_size=6).hexdigest()


def section_versions(names) -> dict[str, str]:
    """`section_version` of several sections in one statement (the whole page)."""
    names = list(names)
    if connection.vendor != "postgresql":  # SQLite (the demo): no concat_ws FILTER; always fresh
        return dict.fromkeys(names, "")
    with connection.cursor() as cursor:
        cursor.execute(_versions_sql(names))
        values = cursor.fetchone()
    return {n: _fingerprint(v) for n, v in zip(names, values)}


def section_version(name: str) -> str:
    """A short fingerprint of what a dashboard section shows (one statement on the summaries): the
    page polls with it and the server answers 204 No Content while it is the same."""
    return section_versions([name])[name]
