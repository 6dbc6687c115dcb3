"""Pages of studies: the participant's path (enter → work → done) at /s/<token>/, and the
staff's study pages at /studies/. Thin doors onto services.py / selectors.py."""
import uuid

from django.contrib import messages
from django.contrib.auth import login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from accounts.views import client_ip
from annotation.models import Item
from references import selectors as reference_selectors
from references.services import ReferenceValidationError, ReferenceWorkflowError, reference_submit
from verification import selectors as verification_selectors
from verification.services import VerificationError, judgment_submit

from . import selectors, services
from .forms import BonusForm, OverrideForm, StudyForm
from .models import Platform, StudyStatus

# --- the participant's path -------------------------------------------------------------------


def _study_or_404(token: str):
    study = selectors.study_by_token(token=token)
    if study is None:
        raise Http404("no such study")
    return study


def _participant_here(request, study):
    participant = selectors.participant_for_user(user=request.user)
    return participant if participant is not None and participant.study_id == study.pk else None


@require_http_methods(["GET"])
def enter(request, token):
    """The study link. A wrong token is a 404; an id not of the platform's shape a 400; a
    preview (MTurk, before accepting the HIT) a read-only sample; otherwise the participant
    is found or made, logged in (no password) for the study's session, and sent to work."""
    study = _study_or_404(token)
    params = selectors.study_link_params(study=study, params=request.GET)
    if study.platform == Platform.MTURK and params.get("platform_session_id") == services.MTURK_PREVIEW:
        services.preview_entry_log(study=study, ip=client_ip(request), user_agent=request.META.get("HTTP_USER_AGENT", ""))
        return _frameable(render(request, "studies/preview.html", {"study": study, "sample": _sample(study)}))
    if study.platform == Platform.MTURK and request.headers.get("Sec-Fetch-Dest") == "iframe":
        # Inside MTurk's frame the session cookie (SameSite=Lax) is a third-party cookie the
        # browser does not send back: the task opens in a tab of its own, first-party.
        return _frameable(render(request, "studies/open_in_tab.html", {"study": study, "href": request.get_full_path()}))
    if not params["participant_id"]:
        if _participant_here(request, study) is not None:
            return redirect("studies:work", token=token)
        return render(request, "studies/message.html", {"study": study, "title": "Open this study from its platform",
                      "text": "This link works from the study's page on its crowd platform, which adds your id to it."},
                      status=400)
    if study.status == StudyStatus.CLOSED and not study.participants.filter(
            participant_id=params["participant_id"].strip().lower() if study.platform == Platform.PROLIFIC
            else params["participant_id"].strip()).exists():
        return render(request, "studies/message.html", {"study": study, "title": "This study is closed",
                      "text": "It takes no new participants. Please return it on your platform."}, status=410)
    try:
        arrival = services.participant_arrive(
            study=study, ip=client_ip(request), user_agent=request.META.get("HTTP_USER_AGENT", ""), **params
        )
    except services.StudyError as exc:
        return render(request, "studies/message.html", {"study": study, "title": "This link is not valid",
                      "text": exc.message}, status=exc.status)
    if request.user.pk != arrival.participant.user_id:
        login(request, arrival.participant.user, backend="django.contrib.auth.backends.ModelBackend")
    request.session.set_expiry(study.session_minutes * 60)  # the session ends with the study's time limit
    return redirect("studies:work", token=token)


MTURK_FRAME_ANCESTORS = "https://www.mturk.com https://workersandbox.mturk.com"


def _frameable(response):
    """MTurk shows an ExternalQuestion in a frame on its own site: let it (and only it)."""
    response.xframe_options_exempt = True
    response["Content-Security-Policy"] = (
        f"script-src 'self'; frame-ancestors {MTURK_FRAME_ANCESTORS}; object-src 'none'; base-uri 'self'; form-action 'self'"
    )
    return response


def _sample(study):
    """A read-only sample for a preview: the first item of the study's first batch, no claim, no answer key."""
    if study.is_writing:
        member = study.reference_set.members.select_related("context__domain").first()
        return {"turns": reference_selectors.context_window(context=member.context)} if member else None
    item = Item.objects.filter(batch__in=study.batches.all(), is_gold=False).select_related("context__domain").order_by("pk").first()
    if item is None:
        return None
    return {"question": item.question, "options": item.options,
            "turns": [{"role": item.context.domain.role_name(t.get("speaker")), "text": t.get("text", "")} for t in item.context.turns]}


def _participant_or_redirect(request, token):
    study = _study_or_404(token)
    participant = _participant_here(request, study)
    if participant is None:
        raise PermissionDenied("open this study from its link on your crowd platform")
    return study, participant


@require_http_methods(["GET", "POST"])
def work(request, token):
    """The participant's next item (or context to write), one at a time; POST answers it."""
    study, participant = _participant_or_redirect(request, token)
    errors, texts = None, {}
    if request.method == "POST":
        if study.is_writing:
            errors, texts = _write_submit(request, participant)
            if errors is None:
                return redirect("studies:work", token=token)
        else:
            _audit_submit(request, participant)
            return redirect("studies:work", token=token)
    try:
        next_work = services.participant_next_work(participant=participant)
    except services.StudyError as exc:
        return render(request, "studies/message.html", {"study": study, "title": "Busy", "text": exc.message}, status=exc.status)
    participant = next_work.participant
    if next_work.claim is None and next_work.assignment is None:
        return redirect("studies:done", token=token)
    context = {"study": study, "participant": participant, "phase": next_work.phase,
               "done": selectors.participant_items_done(participant=participant), "idempotency_key": uuid.uuid4()}
    if next_work.claim is not None:
        context["item"] = verification_selectors.item_view_for(claim=next_work.claim)
    else:
        assignment = next_work.assignment
        shown = reference_selectors.reference_form_initial(assignment=assignment)
        context.update({
            "assignment": assignment,
            "turns": reference_selectors.context_window(context=assignment.member.context),
            "fields": [{**f, "value": texts.get(f["name"], shown.texts.get(f["name"], "")),
                        "error": (errors or {}).get(f["name"], "")}
                       for f in reference_selectors.attribute_fields(assignment.attributes)],
            "errors": errors,
        })
    return render(request, "studies/work.html", context, status=422 if errors else 200)


def _audit_submit(request, participant) -> None:
    try:
        judgment_submit(
            verifier=participant.user, claim_id=request.POST.get("claim", ""), choice=request.POST.get("choice", ""),
            idempotency_key=request.POST.get("idempotency_key", ""), comment=request.POST.get("comment", ""),
            source="study",
        )
    except VerificationError as exc:
        messages.warning(request, exc.message)


def _write_submit(request, participant):
    assignment_id = request.POST.get("assignment", "")
    texts = {k: v for k, v in request.POST.items() if k in dict(reference_selectors.ATTRIBUTE_HELP)}
    try:
        key = uuid.UUID(request.POST.get("idempotency_key", ""))
    except ValueError:
        key = uuid.uuid4()
    try:
        assignment = reference_selectors.reference_assignment_for_worker(
            worker=participant.user, assignment_id=uuid.UUID(assignment_id))
    except ValueError:
        assignment = None
    if assignment is None:
        messages.warning(request, "That context is not yours.")
        return None, texts
    # active time measured by the server, from the claim to the submit (the ledger caps it)
    seconds = (timezone.now() - assignment.claimed_at).total_seconds()
    try:
        reference_submit(worker=participant.user, assignment_id=assignment.pk, texts=texts, idempotency_key=key,
                         seconds_spent=seconds)
    except ReferenceValidationError as exc:
        return exc.errors, texts
    except (ReferenceWorkflowError, ValueError) as exc:
        messages.warning(request, str(exc))
    return None, texts


@require_http_methods(["GET"])
def done(request, token):
    """The code, and the way back to the platform (Prolific's completion URL, or MTurk's form)."""
    study, participant = _participant_or_redirect(request, token)
    if not participant.is_finished:
        next_work = services.participant_next_work(participant=participant)
        participant = next_work.participant
        if not participant.is_finished:
            return redirect("studies:work", token=token)
    completion = selectors.completion_for(participant=participant)
    response = render(request, "studies/done.html", {"study": study, "participant": participant, "done": completion})
    if completion["mturk_action"]:
        # the completion form posts to MTurk: let the CSP's form-action allow that one address
        response["Content-Security-Policy"] = (
            "script-src 'self'; frame-ancestors 'none'; object-src 'none'; base-uri 'self'; "
            f"form-action 'self' {participant.return_to}"
        )
    return response


def participant_next_item_api(request, participant):
    """`GET /api/v1/next-item/` for a study participant (the middleware's door): the study's
    rules decide; `204` past the quota, once finished, or screened out."""
    try:
        next_work = services.participant_next_work(participant=participant)
    except services.StudyError as exc:
        return JsonResponse({"detail": exc.message, "code": "busy"}, status=exc.status)
    if next_work.claim is None:
        return HttpResponse(status=204)
    return JsonResponse(verification_selectors.item_view_for(claim=next_work.claim))


# --- staff ------------------------------------------------------------------------------------


def _staff_only(request):
    if not request.user.is_authenticated:
        return False
    if not request.user.is_project_staff:
        raise PermissionDenied("studies are for staff")
    return True


@require_http_methods(["GET", "POST"])
def study_list(request):
    if not _staff_only(request):
        return redirect(f"/accounts/login/?next={request.path}")
    from .models import Study

    form = StudyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            study = services.study_create(created_by=request.user, **form.service_kwargs())
        except services.StudyError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            messages.success(request, f"Study {study.name} created. Give the platform its link.")
            return redirect("studies:detail", name=study.name)
    studies = Study.objects.select_related("reference_set").prefetch_related("batches").order_by("name")
    return render(request, "studies/list.html", {"studies": studies, "form": form}, status=400 if form.errors else 200)


def _study_by_name(name):
    from .models import Study

    study = Study.objects.select_related("reference_set", "qualification_batch").filter(name=name).first()
    if study is None:
        raise Http404("no such study")
    return study


@require_http_methods(["GET"])
def study_detail(request, name):
    if not _staff_only(request):
        return redirect(f"/accounts/login/?next={request.path}")
    study = _study_by_name(name)
    ledger = selectors.study_ledger(study=study)
    return render(request, "studies/detail.html", {
        "study": study, "ledger": ledger, "rate": selectors.study_rate(study=study, ledger=ledger),
        "counts": selectors.study_counts(study=study), "url": selectors.study_url(study=study, base=request.build_absolute_uri("/")),
        "formats": selectors.EXPORT_FORMATS, "override_form": OverrideForm(), "bonus_form": BonusForm(),
    })


@require_http_methods(["GET"])
def study_payments(request, name, fmt):
    if not _staff_only(request):
        return redirect(f"/accounts/login/?next={request.path}")
    study = _study_by_name(name)
    if fmt not in selectors.EXPORT_FORMATS:
        raise Http404("no such format")
    body = selectors.payments_export(study=study, fmt=fmt)
    ext = "txt" if fmt == "prolific-bonus" else "csv"
    response = HttpResponse(body, content_type="text/plain; charset=utf-8" if ext == "txt" else "text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.name}-{fmt}.{ext}"'
    return response


@require_POST
def participant_action(request, name, pk):
    if not _staff_only(request):
        return redirect(f"/accounts/login/?next={request.path}")
    study = _study_by_name(name)
    participant = study.participants.filter(pk=pk).select_related("user", "study").first()
    if participant is None:
        raise Http404("no such participant")
    try:
        if request.POST.get("action") == "bonus":
            form = BonusForm(request.POST)
            if not form.is_valid():
                raise services.StudyError("give an amount and a reason")
            services.bonus_add(participant=participant, by=request.user, **form.cleaned_data)
            messages.success(request, f"Bonus added for {participant.participant_id}.")
        else:
            form = OverrideForm(request.POST)
            reason = form.data.get("reason", "")
            services.participant_stop_override(participant=participant, reason=reason, by=request.user)
            messages.success(request, f"{participant.participant_id} may work on; their judgments count again.")
    except services.StudyError as exc:
        messages.error(request, exc.message)
    return redirect("studies:detail", name=study.name)
