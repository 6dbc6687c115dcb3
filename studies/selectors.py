"""Reads of studies: a participant's progress and gold record, the ledger (items, active
time, what each participant is owed), the study's effective hourly rate, and the payment
exports (Prolific bulk bonus, a CSV of the whole ledger, MTurk's bonus and approve calls)."""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from urllib.parse import urlencode

from django.conf import settings
from django.db.models import Count, F, FloatField, Q, Sum, Value
from django.db.models.functions import Coalesce, Least
from django.urls import reverse

from references.models import AssignmentStatus, ReferenceAssignment
from verification.models import Claim, ClaimStatus, Judgment

from .models import LedgerLine, Participant, PayBasis, Platform, Study

# Every participant's pseudonymous account starts with this; the middleware looks a
# participant up only for usernames that do (nobody else pays a query).
PSEUDONYM_PREFIX = "study~"
CENT = Decimal("0.01")
WRITTEN = (AssignmentStatus.SUBMITTED, AssignmentStatus.ACCEPTED, AssignmentStatus.SENT_BACK)

PROLIFIC_COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc={code}"
PLACEHOLDERS = {
    Platform.PROLIFIC: "PROLIFIC_PID={%PROLIFIC_PID%}&STUDY_ID={%STUDY_ID%}&SESSION_ID={%SESSION_ID%}",
    Platform.MTURK: "",  # MTurk appends workerId, assignmentId, hitId and turkSubmitTo to an ExternalQuestion's URL
    Platform.LINK: "pid=PARTICIPANT_ID",
}


def study_by_token(*, token: str) -> Study | None:
    return Study.objects.select_related("reference_set", "qualification_batch", "pool").filter(token=token).first()


def study_path(*, study: Study) -> str:
    return reverse("studies:enter", args=[study.token])


def study_url(*, study: Study, base: str | None = None) -> str:
    """The link to give the platform: the study's address with the platform's placeholders."""
    base = (base or settings.DIALTOM_SITE_URL).rstrip("/")
    query = PLACEHOLDERS[study.platform]
    return f"{base}{study_path(study=study)}" + (f"?{query}" if query else "")


def participant_for_user(*, user) -> Participant | None:
    """The study participant behind an account, or None (without a query for everyone else)."""
    if not getattr(user, "is_authenticated", False) or not user.username.startswith(PSEUDONYM_PREFIX):
        return None
    return Participant.objects.select_related("study").filter(user=user).first()


# --- one participant -------------------------------------------------------------------------


def participant_items_done(*, participant: Participant) -> int:
    """Items answered in the study's batches (attention checks included), or contexts written."""
    study = participant.study
    if study.is_writing:
        return ReferenceAssignment.objects.filter(
            worker_id=participant.user_id, member__reference_set_id=study.reference_set_id, status__in=WRITTEN
        ).count()
    return Judgment.objects.filter(verifier_id=participant.user_id, batch__in=study.batches.all()).count()


def qualification_score(*, participant: Participant) -> float | None:
    """Share of the qualification batch's gold items answered with their known answer."""
    row = Judgment.objects.filter(
        verifier_id=participant.user_id, batch_id=participant.study.qualification_batch_id, item__is_gold=True
    ).aggregate(n=Count("pk"), correct=Count("pk", filter=Q(label=F("item__answer"))))
    return round(row["correct"] / row["n"], 4) if row["n"] else None


def participant_gold(*, participant: Participant) -> tuple[int, int]:
    """(answered, correct) attention checks in the study's batches."""
    row = Judgment.objects.filter(
        verifier_id=participant.user_id, batch__in=participant.study.batches.all(), item__is_gold=True
    ).aggregate(n=Count("pk"), correct=Count("pk", filter=Q(label=F("item__answer"))))
    return row["n"], row["correct"]


def participant_live_claim_ids(*, participant: Participant) -> list:
    batch_ids = list(participant.study.batches.values_list("pk", flat=True))
    if participant.study.qualification_batch_id:
        batch_ids.append(participant.study.qualification_batch_id)
    return list(
        Claim.objects.filter(verifier_id=participant.user_id, batch_id__in=batch_ids, status=ClaimStatus.ACTIVE)
        .order_by("claimed_at", "pk").values_list("pk", flat=True)
    )


def completion_for(*, participant: Participant) -> dict:
    """What the finished participant is shown: the code, and where to take it."""
    study = participant.study
    screened = participant.status in ("screened_out", "stopped") and study.screen_out_code
    code = study.screen_out_code if screened else study.completion_code
    done = {"code": code, "screened_out": bool(screened), "status": participant.status,
            "return_url": "", "mturk_action": "", "assignment_id": ""}
    if study.platform == Platform.PROLIFIC:
        done["return_url"] = PROLIFIC_COMPLETE_URL.format(code=code)
    elif study.platform == Platform.MTURK and participant.return_to:
        done["mturk_action"] = f"{participant.return_to}/mturk/externalSubmit"
        done["assignment_id"] = participant.platform_session_id
    return done


# --- the ledger ---------------------------------------------------------------------------------


@dataclass
class LedgerRow:
    participant_id: str
    username: str
    status: str
    items: int
    active_seconds: float
    base: Decimal
    bonus: Decimal
    owed: Decimal
    excluded: bool
    assignment_id: str = ""
    hit_id: str = ""
    bonus_reasons: list[str] = field(default_factory=list)
    pk: int = 0


def _money(value) -> Decimal:
    return Decimal(value).quantize(CENT, rounding=ROUND_HALF_UP)


def _work_by_user(study: Study) -> dict[int, tuple[int, float]]:
    """user id → (items, active seconds with each item's time capped): one query."""
    cap = Value(float(study.item_seconds_cap), output_field=FloatField())
    if study.is_writing:
        rows = (
            ReferenceAssignment.objects.filter(member__reference_set_id=study.reference_set_id, status__in=WRITTEN,
                                               worker__study_participant__study=study)
            .values("worker_id").order_by()
            .annotate(n=Count("pk"), seconds=Sum(Least(Coalesce("seconds_spent", Value(0.0)), cap)))
            .values_list("worker_id", "n", "seconds")
        )
    else:
        rows = (
            Judgment.objects.filter(batch__in=study.batches.all(), verifier__study_participant__study=study)
            .values("verifier_id").order_by()
            .annotate(n=Count("pk"), seconds=Sum(Least(Coalesce("seconds_spent", Value(0.0)), cap)))
            .values_list("verifier_id", "n", "seconds")
        )
    return {user_id: (n, float(seconds or 0)) for user_id, n, seconds in rows}


def study_ledger(*, study: Study) -> list[LedgerRow]:
    """Every participant of the study with items, active time and what they are owed: base pay
    (per item, or per hour of active time) plus bonuses. Three queries, whatever the size."""
    work = _work_by_user(study)
    bonuses: dict[int, list] = {}
    for line in LedgerLine.objects.filter(participant__study=study).order_by("participant_id", "created_at", "pk"):
        bonuses.setdefault(line.participant_id, []).append(line)
    rows = []
    for p in Participant.objects.filter(study=study).select_related("user").order_by("created_at", "pk"):
        items, seconds = work.get(p.user_id, (0, 0.0))
        if study.pay_basis == PayBasis.ITEM:
            base = _money(study.pay_rate * items)
        else:
            base = _money(study.pay_rate * Decimal(str(seconds)) / Decimal(3600))
        lines = bonuses.get(p.pk, [])
        bonus = _money(sum((line.amount for line in lines), Decimal(0)))
        rows.append(LedgerRow(
            participant_id=p.participant_id, username=p.user.username, status=p.status, items=items,
            active_seconds=round(seconds, 1), base=base, bonus=bonus, owed=base + bonus,
            excluded=p.user.excluded_from_aggregation, assignment_id=p.platform_session_id,
            hit_id=p.platform_study_id, bonus_reasons=[line.reason for line in lines], pk=p.pk,
        ))
    return rows


def study_rate(*, study: Study, ledger: list[LedgerRow] | None = None) -> dict:
    """The study's effective hourly rate (everything owed / every active hour) against the staff's minimum."""
    ledger = study_ledger(study=study) if ledger is None else ledger
    seconds = sum(r.active_seconds for r in ledger)
    owed = sum((r.owed for r in ledger), Decimal(0))
    hourly = _money(owed / (Decimal(str(seconds)) / Decimal(3600))) if seconds else None
    below = hourly is not None and study.minimum_hourly is not None and hourly < study.minimum_hourly
    return {"participants": len(ledger), "items": sum(r.items for r in ledger), "active_hours": round(seconds / 3600, 3),
            "owed": _money(owed), "effective_hourly": hourly, "minimum_hourly": study.minimum_hourly,
            "below_minimum": below, "currency": study.currency}


def study_counts(*, study: Study) -> dict[str, int]:
    rows = Participant.objects.filter(study=study).values("status").order_by().annotate(n=Count("pk"))
    return {r["status"]: r["n"] for r in rows}


# --- exports ------------------------------------------------------------------------------------

EXPORT_FORMATS = ("prolific-bonus", "csv", "mturk")
CSV_FIELDS = ("participant_id", "status", "items", "active_seconds", "base", "bonus", "owed", "currency",
              "excluded_from_aggregation", "assignment_id", "hit_id")
MTURK_FIELDS = ("worker_id", "assignment_id", "hit_id", "approve", "bonus_amount", "reason", "unique_request_token")


def payments_export(*, study: Study, fmt: str) -> str:
    """The ledger as Prolific's bulk bonus lines, a CSV, or the rows MTurk's calls need."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"format: one of {', '.join(EXPORT_FORMATS)}")
    ledger = study_ledger(study=study)
    out = io.StringIO()
    if fmt == "prolific-bonus":
        # Prolific's bulk bonus box: one `participant_id,amount` a line, no header.
        for r in ledger:
            if r.owed > 0:
                out.write(f"{r.participant_id},{r.owed:.2f}\n")
        return out.getvalue()
    writer = csv.writer(out, lineterminator="\n")
    if fmt == "csv":
        writer.writerow(CSV_FIELDS)
        for r in ledger:
            writer.writerow([r.participant_id, r.status, r.items, f"{r.active_seconds:.1f}", f"{r.base:.2f}",
                             f"{r.bonus:.2f}", f"{r.owed:.2f}", study.currency, int(r.excluded), r.assignment_id, r.hit_id])
        return out.getvalue()
    # MTurk: ApproveAssignment(AssignmentId) for everyone who worked, and
    # SendBonus(WorkerId, AssignmentId, BonusAmount, Reason, UniqueRequestToken) for what they are owed.
    writer.writerow(MTURK_FIELDS)
    for r in ledger:
        if not r.assignment_id:
            continue
        writer.writerow([r.participant_id, r.assignment_id, r.hit_id, int(r.items > 0), f"{r.owed:.2f}",
                         f"DialToM study {study.name}: {r.items} items", f"{study.name}-{r.assignment_id}"[:64]])
    return out.getvalue()


def study_link_params(*, study: Study, params) -> dict:
    """The platform's own parameter names → ours."""
    if study.platform == Platform.PROLIFIC:
        return {"participant_id": params.get("PROLIFIC_PID", ""), "platform_study_id": params.get("STUDY_ID", ""),
                "platform_session_id": params.get("SESSION_ID", "")}
    if study.platform == Platform.MTURK:
        return {"participant_id": params.get("workerId", ""), "platform_study_id": params.get("hitId", ""),
                "platform_session_id": params.get("assignmentId", ""), "return_to": params.get("turkSubmitTo", "")}
    return {"participant_id": params.get("pid", "")}


def query_of(params: dict) -> str:
    return urlencode(params)
