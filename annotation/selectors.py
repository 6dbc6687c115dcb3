"""Reads of the annotation app: the figures the ingestion and segmentation reports give."""
from django.db.models import Avg, Count, Q, Sum

from .models import Context, Domain, Session


def _mean(value) -> float:
    return round(float(value or 0), 1)


def corpus_stats() -> dict[str, dict]:
    """Per domain: ingested `sessions`, `turns`, `mean_words_per_session` (2 queries)."""
    rows = {
        row["domain"]: row
        for row in Session.objects.order_by().values("domain").annotate(
            sessions=Count("id"), turns=Sum("n_turns"), mean_words=Avg("n_words"))
    }
    stats = {}
    for code in Domain.objects.order_by("code").values_list("code", flat=True):
        row = rows.get(code, {})
        stats[code] = {"sessions": row.get("sessions", 0), "turns": row.get("turns") or 0,
                       "mean_words_per_session": _mean(row.get("mean_words"))}
    return stats


def segmentation_stats(*, max_words: int) -> dict[str, dict]:
    """Per domain: ingested `sessions`, their segmented `contexts`, mean words per session and
    per context, and `over_max` (contexts over `max_words`). Imported contexts (no session)
    are not counted here."""
    sessions = corpus_stats()
    contexts = {
        row["domain"]: row
        for row in Context.objects.filter(session__isnull=False).order_by().values("domain").annotate(
            contexts=Count("id"), mean_words=Avg("n_words"), over_max=Count("id", filter=Q(n_words__gt=max_words)))
    }
    stats = {}
    for code, row in sessions.items():
        ctx = contexts.get(code, {})
        stats[code] = {
            "sessions": row["sessions"],
            "contexts": ctx.get("contexts", 0),
            "mean_words_per_session": row["mean_words_per_session"],
            "mean_words_per_context": _mean(ctx.get("mean_words")),
            "over_max": ctx.get("over_max", 0),
        }
    return stats


def unsegmented_sessions(*, domain: str | None = None):
    """Ingested sessions none of whose windows exist yet (by session id, so imported
    contexts of the same session count too)."""
    qs = Session.objects.exclude(session_id__in=Context.objects.order_by().values("session_key"))
    if domain:
        qs = qs.filter(domain_id=domain)
    return qs.order_by("session_id")
