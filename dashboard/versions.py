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


def _version_sql() -> dict[str, str]:
    from references.models import ReferenceAssignment, ReferenceSubmission  # noqa: PLC0415
    from releases.models import Release  # noqa: PLC0415

    runs = f"(SELECT concat_ws('.', count(*), max(id::text)) FROM {_t(AggregationRun)} WHERE status = 'succeeded')"
    tallies = f"(SELECT concat_ws('.', sum(judgments), sum(items), sum(agg_items), count(*)) FROM {_t(BatchTally)})"
    batches = f"(SELECT concat_ws('.', count(*), sum(overlap), count(*) FILTER (WHERE status = 'open'), count(*) FILTER (WHERE status = 'paused')) FROM {_t(Batch)})"
    live = f"(SELECT count(*) FROM {_t(Claim)} WHERE status = 'active' AND expires_at > now())"
    adaptive = f"(SELECT concat_ws('.', count(*), sum(rounds), sum(undecided)) FROM {_t(AdaptiveOverlap)})"
    latest = f"(SELECT concat_ws('.', id, status, progress, batches_done) FROM {_t(AggregationRun)} ORDER BY created_at DESC, id DESC LIMIT 1)"
    cells = f"(SELECT concat_ws('.', sum(total), sum(retained), count(*)) FROM {_t(CurrentResultCell)})"
    people = (f"(SELECT concat_ws('.', sum(judgments), count(*)) FROM {_t(VerifierTally)}),"
              f" (SELECT concat_ws('.', count(*), count(*) FILTER (WHERE excluded_from_aggregation)) FROM {_t(User)}),"
              f" (SELECT concat_ws('.', sum(n), count(*)) FROM {_t(CurrentWorkerTally)}),"
              f" (SELECT concat_ws('.', count(*), max(id::text), count(*) FILTER (WHERE status = 'sent_back')) FROM {_t(ReferenceAssignment)}),"
              f" (SELECT concat_ws('.', count(*), max(id::text)) FROM {_t(ReferenceSubmission)})")
    releases = f"(SELECT concat_ws('.', count(*), max(id::text), count(*) FILTER (WHERE status = 'ready'), count(*) FILTER (WHERE error <> '')) FROM {_t(Release)})"
    return {
        "progress": f"SELECT concat_ws('|', {tallies}, {batches}, {live}, {adaptive}, current_date)",
        "staffing": f"SELECT concat_ws('|', {tallies}, {batches})",
        "agreement": f"SELECT concat_ws('|', {runs})",
        "agreement_groups": f"SELECT concat_ws('|', {runs})",
        "retention": f"SELECT concat_ws('|', {runs}, {cells}, {tallies})",
        "people": f"SELECT concat_ws('|', {people})",
        "run": f"SELECT concat_ws('|', {latest}, {tallies}, {batches})",
        "releases": f"SELECT concat_ws('|', {releases}, {runs}, {tallies})",
    }


def section_versions(names) -> dict[str, str]:
    """`section_version` of several sections in one statement (the whole page)."""
    names = list(names)
    if connection.vendor != "postgresql":
        return dict.fromkeys(names, "")
    sql = _version_sql()
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(f"({sql[n]})" for n in names))
        values = cursor.fetchone()
    return {n: hashlib.blake2s((v or "").encode(), digest_size=6).hexdigest() for n, v in zip(names, values)}


def section_version(name: str) -> str:
    """A short fingerprint of what a dashboard section shows (one statement on the summaries): the
    page polls with it and the server answers 204 No Content while it is the same."""
    sql = _version_sql()[name]
    if connection.vendor != "postgresql":  # SQLite (the demo): no concat_ws FILTER; always fresh
        return ""
    with connection.cursor() as cursor:
        cursor.execute(sql)
        value = cursor.fetchone()[0] or ""
    return hashlib.blake2s(value.encode(), digest_size=6).hexdigest()
