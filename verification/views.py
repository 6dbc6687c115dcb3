"""The htmx audit pages: thin doors onto services.py / selectors.py.

Every view renders the `#audit` fragment for htmx requests and the whole page otherwise,
so the form also works without JavaScript (plain POST, redirect, GET).
"""
import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotation.models import OPTION_LETTERS

from . import selectors, services
from .forms import AuditForm, ChangeForm
from .models import Judgment, SkipReason


def _verifier_only(request):
    if not request.user.can_audit:
        raise PermissionDenied("the audit queue is for verifiers and baseline participants")


UNDO_SECONDS = 10


def _render_audit(request, batch, *, claim=None, form=None, error=None, notice=None, undo=None, status=200):
    """The audit page (or its #audit fragment): the item in hand, progress, recent answers,
    skipped items; `undo` is the answer just given (Backspace opens it to change it)."""
    if claim is None and error is None:
        try:
            claim = services.item_claim_next(verifier=request.user, batch=batch)
        except services.VerificationError as exc:
            error, status = exc.message, exc.status
    recent = selectors.recent_judgments_for(verifier=request.user, batch=batch)
    context = {
        "batch": batch,
        "claim": claim,
        "item": selectors.item_view_for(claim=claim) if claim else None,
        "row": selectors.context_row_for(claim=claim, previous=recent[0] if recent else None) if claim else None,
        "form": form,
        "idempotency_key": (form.data.get("idempotency_key") if form is not None else None) or uuid.uuid4(),
        "progress": selectors.queue_progress_for(verifier=request.user, batch=batch),
        "recent": selectors.recent_answers_view_for(judgments=recent),
        "skipped": selectors.skipped_claims_for(verifier=request.user, batch=batch),
        "skip_reasons": SkipReason.choices,
        "error": error,
        "notice": notice,
        "undo": undo,
        "undo_seconds": UNDO_SECONDS,
        "can_change": batch.status != "closed",
    }
    if request.htmx:
        # htmx does not swap 4xx responses by default: explain the problem in place instead.
        response = render(request, "verification/audit.html#audit", context, status=200)
        # whatever door the fragment came through (a change, a restore), the address is the queue's
        response["HX-Replace-Url"] = reverse("verification:audit", args=[batch.name])
        return response
    return render(request, "verification/audit.html", context, status=status)


@login_required
def batch_list(request):
    _verifier_only(request)
    rows = selectors.queue_progress_for_batches(verifier=request.user, batches=selectors.batches_for_verifier(verifier=request.user))
    return render(request, "verification/batches.html", {"rows": rows})


@login_required
def audit(request, batch_name):
    _verifier_only(request)
    return _render_audit(request, selectors.batch_for_verifier_or_404(verifier=request.user, name=batch_name))


@login_required
@require_POST
def audit_answer(request, batch_name):
    _verifier_only(request)
    batch = selectors.batch_for_verifier_or_404(verifier=request.user, name=batch_name)
    form = AuditForm(request.POST)
    if not form.is_valid():
        claim = _own_claim(request, form.data.get("claim"))
        return _render_audit(request, batch, claim=claim, form=form, error=None if claim else "This item is no longer yours.", status=400)
    data = form.cleaned_data
    submission = None
    try:
        if data["action"] == "skip":
            services.claim_skip(verifier=request.user, claim_id=data["claim"], reason=data["skip_reason"])
        else:
            submission = services.judgment_submit(
                verifier=request.user,
                claim_id=data["claim"],
                choice=data["choice"],
                idempotency_key=data["idempotency_key"],
                implausible=[m for m in data["implausible"] if m != data["choice"]],
                comment=data["comment"],
                source="form",
            )
    except services.VerificationError as exc:
        if exc.status == 400:
            form.add_error(None, exc.message)
            return _render_audit(request, batch, claim=_own_claim(request, data["claim"]), form=form, status=400)
        if request.htmx:
            return _render_audit(request, batch, notice=exc.message)
        messages.warning(request, exc.message)
    if request.htmx:
        return _render_audit(request, batch, undo=submission.judgment if submission and batch.status != "closed" else None)
    return redirect("verification:audit", batch_name=batch.name)


@login_required
@require_POST
def claim_restore(request, batch_name, claim_id):
    """Take a skipped item back (it comes after the item in hand)."""
    _verifier_only(request)
    batch = selectors.batch_for_verifier_or_404(verifier=request.user, name=batch_name)
    try:
        services.claim_restore(verifier=request.user, claim_id=claim_id)
    except services.VerificationError as exc:
        notice = exc.message
    else:
        notice = "The skipped item is back in your queue, after the item in hand."
    if request.htmx:
        return _render_audit(request, batch, notice=notice)
    messages.info(request, notice)
    return redirect("verification:audit", batch_name=batch.name)


def _own_claim(request, claim_id):
    from .models import Claim, ClaimStatus

    try:
        return (
            Claim.objects.select_related("item", "item__context__domain", "batch")
            .filter(pk=uuid.UUID(str(claim_id)), verifier=request.user, status=ClaimStatus.ACTIVE)
            .first()
        )
    except ValueError:
        return None


@login_required
@require_http_methods(["GET", "POST"])
def judgment_edit(request, judgment_id):
    """Change one of my recent answers (until the batch closes)."""
    _verifier_only(request)
    judgment = (
        Judgment.objects.select_related("item", "item__context__domain", "claim", "batch")
        .filter(pk=judgment_id, verifier=request.user)
        .first()
    )
    if judgment is None:
        raise Http404("no such answer")
    current = selectors.judgment_view_for(judgment=judgment)
    form = ChangeForm(request.POST or None, initial={"choice": current["choice"], "implausible": current["implausible"], "comment": current["comment"]})
    if request.method == "POST" and form.is_valid():
        try:
            services.judgment_change(
                verifier=request.user,
                judgment_id=judgment.pk,
                choice=form.cleaned_data["choice"],
                implausible=form.cleaned_data["implausible"],
                comment=form.cleaned_data["comment"],
            )
        except services.VerificationError as exc:
            form.add_error(None, exc.message)
        else:
            if request.htmx:
                return _render_audit(request, judgment.batch, notice="Answer changed.")
            messages.success(request, "Answer changed.")
            return redirect("verification:audit", batch_name=judgment.batch.name)
    if judgment.claim is not None:
        view = selectors.item_view_for(claim=judgment.claim)
    else:  # imported judgments have no claim: show the original order
        from .models import Claim

        view = selectors.item_view_for(claim=Claim(item=judgment.item, batch=judgment.batch, display_order="".join(OPTION_LETTERS), expires_at=judgment.created_at))
    context = {"judgment": judgment, "current": current, "item": view, "form": form, "batch": judgment.batch}
    if request.htmx:
        return render(request, "verification/change.html#change", context)
    return render(request, "verification/change.html", context, status=400 if form.errors else 200)
