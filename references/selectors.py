"""Reads of the crowd-worker reference workflow (issue 4): queues, review, export, similarity."""
import random
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.db.models import Count, Prefetch, Q

from annotation.models import Attribute, Context
from .models import (
    AssignmentStatus,
    Reference,
    ReferenceAssignment,
    ReferenceDraft,
    ReferenceSet,
    ReferenceSetContext,
    ReferenceSetStatus,
    ReferenceSubmission,
    SimilarityRun,
)

# What a worker is shown next to each field: a short definition and an example.
ATTRIBUTE_HELP = {
    "belief": (
        "What the speaker holds to be true about themselves, others or the situation.",
        "The client believes that drinking helps him cope with stress at work.",
    ),
    "desire": (
        "What the speaker wants or wishes for, whether or not they act on it.",
        "The seeker wants her family to accept her decision to change careers.",
    ),
    "intention": (
        "What the speaker plans or has decided to do next.",
        "The persuadee intends to look up the charity before donating anything.",
    ),
    "emotion": (
        "What the speaker feels at this point of the dialogue, and about what.",
        "The client feels embarrassed and a little defensive about the doctor's warning.",
    ),
    "knowledge": (
        "What the speaker knows or has just learned (facts, not opinions).",
        "The seeker knows that her contract ends next month.",
    ),
    "trust": (
        "How far the speaker trusts the other speaker, and why.",
        "The client is starting to trust the counselor because she did not judge him.",
    ),
}


def attribute_fields(attributes: list[str] | None = None) -> list[dict]:
    """The given attributes (default all six) in form order, each with its label, definition and example."""
    return [
        {"name": value, "label": label, "definition": ATTRIBUTE_HELP[value][0], "example": ATTRIBUTE_HELP[value][1]}
        for value, label in Attribute.choices
        if attributes is None or value in attributes
    ]


def contexts_stratified_sample(*, size: int, seed: int) -> list[int]:
    """`size` context pks, stratified by domain (proportional, largest remainder), reproducible by seed.

    The result is in queue order: shuffled with the same seed, so domains interleave.
    """
    by_domain: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for pk, context_id, domain_id in Context.objects.order_by("context_id").values_list("pk", "context_id", "domain_id"):
        by_domain[domain_id].append((context_id, pk))
    total = sum(len(v) for v in by_domain.values())
    if size < 1:
        raise ValueError("size: must be at least 1")
    if size > total:
        raise ValueError(f"size: {size} contexts asked for, only {total} exist")
    exact = {d: size * len(v) / total for d, v in by_domain.items()}
    quotas = {d: int(x) for d, x in exact.items()}
    leftover = size - sum(quotas.values())
    for d in sorted(exact, key=lambda d: (-(exact[d] - quotas[d]), d))[:leftover]:
        quotas[d] += 1
    rng = random.Random(seed)
    chosen: list[int] = []
    for d in sorted(by_domain):
        chosen.extend(pk for _, pk in rng.sample(by_domain[d], quotas[d]))
    rng.shuffle(chosen)
    return chosen


# --- the worker's side ------------------------------------------------------------------


@dataclass
class SetQueue:
    reference_set: ReferenceSet
    done: int = 0
    assigned: int = 0
    active: list = field(default_factory=list)
    sent_back: list = field(default_factory=list)

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.assigned) if self.assigned else 0


def reference_queue_for(*, worker) -> list[SetQueue]:
    """Open/paused sets with what this worker has in progress, sent back and done. Two queries."""
    sets = list(ReferenceSet.objects.exclude(status=ReferenceSetStatus.CLOSED).annotate(n_members=Count("members")))
    queues = {s.pk: SetQueue(reference_set=s) for s in sets}
    mine = (
        ReferenceAssignment.objects.filter(worker=worker, member__reference_set__in=sets)
        .exclude(status=AssignmentStatus.EXPIRED)
        .select_related("member__context", "member__reference_set")
        .order_by("claimed_at", "id")
    )
    for a in mine:
        q = queues[a.member.reference_set_id]
        q.assigned += 1
        if a.status in (AssignmentStatus.SUBMITTED, AssignmentStatus.ACCEPTED):
            q.done += 1
        elif a.status == AssignmentStatus.SENT_BACK:
            q.sent_back.append(a)
        else:
            q.active.append(a)
    return list(queues.values())


def reference_assignment_for_worker(*, worker, assignment_id) -> ReferenceAssignment | None:
    return (
        ReferenceAssignment.objects.filter(pk=assignment_id, worker=worker)
        .select_related("member__context__domain", "member__reference_set")
        .first()
    )


@dataclass
class FormInitial:
    texts: dict
    seconds_spent: float = 0.0
    client_ts: int = 0  # the browser clock of the stored draft's last edit (0: none)
    client_id: str = ""  # the browser that autosaved it last


def reference_form_initial(*, assignment: ReferenceAssignment) -> FormInitial:
    """What the form shows: the draft if there is one, else the last submission; and seconds spent so far."""
    draft = ReferenceDraft.objects.filter(member_id=assignment.member_id, worker_id=assignment.worker_id).first()
    if draft is not None:
        return FormInitial(dict(draft.texts), draft.seconds_spent, draft.client_ts, draft.client_id)
    last = ReferenceSubmission.objects.filter(assignment=assignment).order_by("-created_at", "-id").first()
    if last is not None:
        return FormInitial(dict(last.texts), last.seconds_spent)
    return FormInitial({})


def reference_progress(*, texts: dict, min_chars: int, attributes: list[str]) -> dict:
    """How many of the assigned inferences are long enough to count: filled, total, percent."""
    filled = sum(1 for a in attributes if len(str(texts.get(a) or "").strip()) >= min_chars)
    total = len(attributes)
    return {"filled": filled, "total": total, "percent": round(100 * filled / total) if total else 0}


def context_window(*, context: Context) -> list[dict]:
    """The dialogue window with speakers named by their domain roles."""
    return [
        {"speaker": t.get("speaker"), "role": context.domain.role_name(t.get("speaker")), "text": t.get("text", "")}
        for t in context.turns
    ]


# --- staff --------------------------------------------------------------------------------


def reference_sets_overview() -> list[ReferenceSet]:
    """Every set with counts of members and of assignments by status. One query."""
    return list(
        ReferenceSet.objects.annotate(
            n_members=Count("members", distinct=True),
            n_submitted=Count("members__assignments", filter=Q(members__assignments__status=AssignmentStatus.SUBMITTED)),
            n_accepted=Count("members__assignments", filter=Q(members__assignments__status=AssignmentStatus.ACCEPTED)),
            n_sent_back=Count("members__assignments", filter=Q(members__assignments__status=AssignmentStatus.SENT_BACK)),
        ).order_by("name")
    )


def reference_set_members(*, reference_set: ReferenceSet) -> list[ReferenceSetContext]:
    """The set's contexts with counts by status, in queue order. One query."""
    a = "assignments__status"
    return list(
        ReferenceSetContext.objects.filter(reference_set=reference_set)
        .select_related("context")
        .annotate(
            n_submitted=Count("assignments", filter=Q(**{a: AssignmentStatus.SUBMITTED})),
            n_accepted=Count("assignments", filter=Q(**{a: AssignmentStatus.ACCEPTED})),
            n_sent_back=Count("assignments", filter=Q(**{a: AssignmentStatus.SENT_BACK})),
            n_active=Count("assignments", filter=Q(**{a: AssignmentStatus.ACTIVE})),
        )
        .order_by("position")
    )


def reference_review_for(*, member: ReferenceSetContext) -> dict:
    """All references of one context side by side: columns = assignments, rows = the member's attributes.

    A cell is None where the attribute was not assigned to that column's worker.
    """
    assignments = list(
        ReferenceAssignment.objects.filter(member=member)
        .exclude(status__in=[AssignmentStatus.EXPIRED, AssignmentStatus.ACTIVE])
        .select_related("worker")
        .prefetch_related(Prefetch("references", queryset=Reference.objects.order_by("attribute")))
        .order_by("claimed_at", "id")
    )
    rows = []
    for f in attribute_fields(member.attributes):
        texts = []
        for a in assignments:
            by_attr = {r.attribute: r.text for r in a.references.all()}
            texts.append(by_attr.get(f["name"], "") if f["name"] in a.attributes else None)
        rows.append({**f, "texts": texts})
    return {"assignments": assignments, "rows": rows}


def reference_next_member_to_review(*, reference_set: ReferenceSet) -> ReferenceSetContext | None:
    return (
        ReferenceSetContext.objects.filter(reference_set=reference_set, assignments__status=AssignmentStatus.SUBMITTED)
        .order_by("position")
        .first()
    )


# --- export and similarity ------------------------------------------------------------


def references_export_rows(*, reference_set: ReferenceSet | None = None) -> Iterator[dict]:
    """Accepted references, one row per (context, worker, attribute), in a stable order.

    The release machinery and the API call this: `{"context_id", "worker", "attribute", "text"}`.
    """
    qs = Reference.objects.filter(assignment__status=AssignmentStatus.ACCEPTED)
    if reference_set is not None:
        qs = qs.filter(assignment__member__reference_set=reference_set)
    order = {a: i for i, a in enumerate(Attribute.values)}
    rows = qs.values_list("assignment__member__context__context_id", "assignment__worker__username", "attribute", "text")
    rows = sorted(rows, key=lambda r: (r[0], r[1], order.get(r[2], 99)))
    for context_id, worker, attribute, text in rows:
        yield {"context_id": context_id, "worker": worker, "attribute": attribute, "text": text}


def reference_counts_by_worker() -> dict[int, dict[str, int]]:
    """user id → {"written": contexts the worker submitted, "sent_back": times their work was sent back}. One query.

    Every submission after an assignment's first answers a send-back; one still open counts too.
    """
    rows = (
        ReferenceAssignment.objects.exclude(status__in=[AssignmentStatus.ACTIVE, AssignmentStatus.EXPIRED])
        .values("worker_id")
        .annotate(
            written=Count("id", distinct=True),
            submissions=Count("submissions"),
            open_sent_back=Count("id", filter=Q(status=AssignmentStatus.SENT_BACK), distinct=True),
        )
        .order_by("worker_id")
    )
    return {
        r["worker_id"]: {"written": r["written"], "sent_back": r["submissions"] - r["written"] + r["open_sent_back"]}
        for r in rows
    }


def accepted_references_by_context(*, reference_set_id: int | None = None) -> dict[tuple[str, str], list[str]]:
    """(context_id, attribute) → accepted reference texts, ordered by worker."""
    qs = Reference.objects.filter(assignment__status=AssignmentStatus.ACCEPTED)
    if reference_set_id is not None:
        qs = qs.filter(assignment__member__reference_set_id=reference_set_id)
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    for context_id, attribute, text in qs.order_by(
        "assignment__member__context__context_id", "attribute", "assignment__worker__username", "assignment_id"
    ).values_list("assignment__member__context__context_id", "attribute", "text"):
        out[(context_id, attribute)].append(text)
    return dict(out)


def similarity_runs_list() -> list[SimilarityRun]:
    """Every run, newest first, each with `overall` (its score over all attributes, or None). Three queries."""
    runs = list(
        SimilarityRun.objects.select_related("reference_set", "created_by").prefetch_related("scores").order_by("-created_at", "-id")
    )
    for run in runs:
        run.overall = next((s for s in run.scores.all() if s.attribute == "all"), None)
    return runs


def similarity_run_detail(*, run_id: int) -> SimilarityRun | None:
    return SimilarityRun.objects.select_related("reference_set").prefetch_related("scores").filter(pk=run_id).first()


def similarity_scores_ordered(*, run: SimilarityRun) -> list:
    order = {a: i for i, a in enumerate([*Attribute.values, "all"])}
    return sorted(run.scores.all(), key=lambda s: order.get(s.attribute, 99))
