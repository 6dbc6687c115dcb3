"""htmx/HTML doors of the reference workflow: the crowd worker's queue and form, staff pages."""
import uuid
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from accounts.permissions import staff_required

from . import selectors
from . import services, similarity
from annotation.models import Speaker
from .models import ReferenceSet, ReferenceSetContext, ReferenceSetStatus

FORM_TEMPLATE = "references/reference_form.html"


def crowd_worker_required(view):
    @wraps(view)
    @login_required
    def wrapper(request, *args, **kwargs):
        if not request.user.is_crowd_worker:
            raise PermissionDenied("crowd workers only")
        return view(request, *args, **kwargs)

    return wrapper


# --- crowd worker ---------------------------------------------------------------------


@login_required
def queue(request):
    """/annotate/: the worker's sets, work in progress, work sent back (with the reason), progress."""
    if request.user.is_project_staff and not request.user.is_crowd_worker:
        return redirect("references:sets")
    if not request.user.is_crowd_worker:
        raise PermissionDenied("crowd workers only")
    return render(request, "references/reference_queue.html", {"queues": selectors.reference_queue_for(worker=request.user)})


@require_POST
@crowd_worker_required
def claim_next(request, set_name):
    reference_set = get_object_or_404(ReferenceSet, name=set_name)
    try:
        assignment = services.reference_assignment_claim_next(worker=request.user, reference_set_id=reference_set.pk)
    except services.ReferenceWorkflowError as exc:
        messages.error(request, str(exc))
        return redirect("references:queue")
    if assignment is None:
        messages.info(request, f"Nothing left for you in {reference_set.name}. Thank you!")
        return redirect("references:queue")
    return redirect("references:work", assignment_id=assignment.pk)


def _form_context(request, assignment, shown: selectors.FormInitial, errors=None, idempotency_key=None):
    """The form's template context; `shown` is what the fields hold (the draft, or what was posted)."""
    texts = shown.texts
    reference_set = assignment.member.reference_set
    context = assignment.member.context
    fields = [
        {**f, "value": texts.get(f["name"], ""), "error": (errors or {}).get(f["name"], "")}
        for f in selectors.attribute_fields(assignment.attributes)
    ]
    target_role = context.domain.role_name(reference_set.target_speaker)
    return {
        "assignment": assignment,
        "reference_set": reference_set,
        "context": context,
        "turns": selectors.context_window(context=context),
        "target_role": target_role,
        "target_speaker": reference_set.target_speaker,
        "fields": fields,
        "errors": errors or {},
        "seconds_spent": round(shown.seconds_spent, 1),
        "draft_client_ts": shown.client_ts,
        "draft_client_id": shown.client_id,
        "idempotency_key": idempotency_key or uuid.uuid4(),
        "progress": selectors.reference_progress(texts=texts, min_chars=reference_set.min_chars, attributes=assignment.attributes),
        "editable": assignment.is_editable,
        "Speaker": Speaker,
    }


@require_http_methods(["GET", "POST"])
@crowd_worker_required
def work(request, assignment_id):
    """The form: GET shows it with the draft restored; POST submits (or saves the draft without JavaScript)."""
    assignment = selectors.reference_assignment_for_worker(worker=request.user, assignment_id=assignment_id)
    if assignment is None:
        raise Http404("no such assignment")
    errors_key = f"reference-errors:{assignment.pk}"
    if request.method == "GET":
        shown = selectors.reference_form_initial(assignment=assignment)
        errors = request.session.pop(errors_key, None)
        return render(request, FORM_TEMPLATE, _form_context(request, assignment, shown, errors), status=422 if errors else 200)

    texts = {a: request.POST.get(a, "") for a in assignment.attributes}
    seconds = request.POST.get("seconds_spent", 0)
    if request.POST.get("action") == "save":
        try:
            saved = services.reference_draft_save(
                worker=request.user, assignment_id=assignment.pk, texts=texts, seconds_spent=seconds
            )
        except services.ReferenceWorkflowError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Draft saved. {saved.warning}".strip())
        return redirect("references:work", assignment_id=assignment.pk)
    try:
        key = uuid.UUID(request.POST.get("idempotency_key", ""))
    except ValueError:
        key = uuid.uuid4()
    try:
        result = services.reference_submit(
            worker=request.user, assignment_id=assignment.pk, texts=texts, idempotency_key=key, seconds_spent=seconds
        )
    except services.ReferenceValidationError as exc:
        # Keep what was typed as the draft, then redirect (POST/redirect/GET: a reload never
        # posts again) to the form, which shows the draft with the messages next to the fields.
        services.reference_draft_save(worker=request.user, assignment_id=assignment.pk, texts=texts, seconds_spent=seconds)
        request.session[errors_key] = exc.errors
        return redirect("references:work", assignment_id=assignment.pk)
    except services.ReferenceWorkflowError as exc:
        messages.error(request, str(exc))
        return redirect("references:queue")
    if result.created:
        messages.success(request, f"Submitted your inferences for {assignment.member.context.context_id}.")
    if request.POST.get("then") == "next" and assignment.member.reference_set.status == ReferenceSetStatus.OPEN:
        try:
            following = services.reference_assignment_claim_next(
                worker=request.user, reference_set_id=assignment.member.reference_set_id
            )
        except services.ReferenceWorkflowError:
            following = None
        if following is not None:
            return redirect("references:work", assignment_id=following.pk)
    return redirect(reverse("references:queue"))


@require_POST
@crowd_worker_required
def autosave(request, assignment_id):
    """htmx, debounced: store the draft; answers the status line and the progress bar (out of band)."""
    assignment = selectors.reference_assignment_for_worker(worker=request.user, assignment_id=assignment_id)
    if assignment is None:
        return render(request, f"{FORM_TEMPLATE}#autosave-status", {"autosave_error": "not your assignment"}, status=409)
    texts = {a: request.POST.get(a, "") for a in assignment.attributes}
    try:
        saved = services.reference_draft_save(
            worker=request.user,
            assignment_id=assignment_id,
            texts=texts,
            seconds_spent=request.POST.get("seconds_spent", 0),
            client_ts=request.POST.get("client_ts"),
            client_id=request.POST.get("client_id", ""),
        )
    except services.ReferenceWorkflowError as exc:
        return render(request, f"{FORM_TEMPLATE}#autosave-status", {"autosave_error": str(exc)}, status=409)
    ctx = {
        "saved_at": saved.draft.updated_at,
        "autosave_warning": saved.warning,
        "autosave_stale": saved.stale,
        "progress": selectors.reference_progress(
            texts=saved.draft.texts, min_chars=assignment.member.reference_set.min_chars, attributes=assignment.attributes
        ),
        "oob": True,
    }
    return render(request, "references/reference_autosave.html", ctx)


# --- staff -------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@staff_required
def sets(request):
    """Staff: the reference sets, and a form to choose a new subset (stratified, seeded; or a list of ids)."""
    form = {"name": "", "size": 300, "per_context": 3, "seed": 7, "target_speaker": Speaker.RECIPIENT, "min_chars": 20,
            "attributes_per_worker": 6}
    chosen = selectors.attribute_fields()
    errors: list[str] = []
    if request.method == "POST":
        form.update({k: request.POST.get(k, v) for k, v in form.items()})
        picked = request.POST.getlist("attributes")
        chosen = [{**f, "checked": f["name"] in picked} for f in chosen]
        try:
            ids = None
            upload = request.FILES.get("ids_file")
            if upload:
                ids = services.context_ids_parse(lines=upload.read().splitlines(), filename=upload.name)
            reference_set = services.reference_set_create(
                name=form["name"].strip(),
                size=int(form["size"] or 0),
                per_context=int(form["per_context"] or 0),
                seed=int(form["seed"] or 0),
                context_ids=ids,
                target_speaker=form["target_speaker"],
                min_chars=int(form["min_chars"] or 0),
                attributes=services.attributes_clean(picked),
                attributes_per_worker=int(form["attributes_per_worker"] or 0),
                created_by=request.user,
            )
        except services.InputFormatError as exc:
            errors = exc.messages
        except (services.ReferenceWorkflowError, ValueError) as exc:
            errors = [str(exc)]
        else:
            messages.success(request, f"Created {reference_set.name} with {reference_set.members.count()} contexts.")
            return redirect("references:set", set_name=reference_set.name)
    else:
        chosen = [{**f, "checked": True} for f in chosen]
    ctx = {
        "sets": selectors.reference_sets_overview(), "form": form, "errors": errors, "speakers": Speaker.choices,
        "attribute_choices": chosen,
    }
    return render(request, "references/reference_sets.html", ctx, status=400 if errors else 200)


@require_http_methods(["GET", "POST"])
@staff_required
def set_detail(request, set_name):
    reference_set = get_object_or_404(ReferenceSet, name=set_name)
    if request.method == "POST":
        try:
            services.reference_set_status_set(reference_set_id=reference_set.pk, status=request.POST.get("status", ""))
        except services.ReferenceWorkflowError as exc:
            messages.error(request, str(exc))
        return redirect("references:set", set_name=set_name)
    ctx = {
        "reference_set": reference_set,
        "members": selectors.reference_set_members(reference_set=reference_set),
        "statuses": ReferenceSetStatus.choices,
        "next_review": selectors.reference_next_member_to_review(reference_set=reference_set),
    }
    return render(request, "references/reference_set_detail.html", ctx)


@require_http_methods(["GET", "POST"])
@staff_required
def review(request, set_name, member_id):
    """All references of one context side by side; accept, or send back with a reason."""
    member = get_object_or_404(
        ReferenceSetContext.objects.select_related("context__domain", "reference_set"), pk=member_id, reference_set__name=set_name
    )
    if request.method == "POST":
        assignment_id = request.POST.get("assignment", "")
        try:
            if request.POST.get("decision") == "accept":
                services.reference_accept(reviewer=request.user, assignment_id=assignment_id)
                messages.success(request, "Accepted.")
            elif request.POST.get("decision") == "send_back":
                services.reference_send_back(reviewer=request.user, assignment_id=assignment_id, reason=request.POST.get("reason", ""))
                messages.success(request, "Sent back to the worker.")
            else:
                messages.error(request, "decision: accept or send_back")
        except (services.ReferenceWorkflowError, ValueError) as exc:
            messages.error(request, str(exc))
        return redirect("references:review", set_name=set_name, member_id=member.pk)
    ctx = {
        "member": member,
        "reference_set": member.reference_set,
        "context": member.context,
        "turns": selectors.context_window(context=member.context),
        "target_role": member.context.domain.role_name(member.reference_set.target_speaker),
        "next_review": selectors.reference_next_member_to_review(reference_set=member.reference_set),
        **selectors.reference_review_for(member=member),
    }
    return render(request, "references/reference_review.html", ctx)


@require_http_methods(["GET", "POST"])
@staff_required
def similarity_runs(request):
    """Staff: upload model inferences (JSONL) and see BLEU / ROUGE-L per attribute for every run."""
    errors: list[str] = []
    if request.method == "POST":
        upload = request.FILES.get("file")
        set_name = request.POST.get("reference_set", "")
        reference_set = ReferenceSet.objects.filter(name=set_name).first() if set_name else None
        if upload is None:
            errors = ["file: choose a JSONL file of inferences"]
        elif set_name and reference_set is None:
            errors = [f"reference_set: no set called {set_name!r}"]
        else:
            try:
                records = similarity.inferences_parse(lines=upload.read().splitlines(), filename=upload.name)
            except services.InputFormatError as exc:
                errors = exc.messages
            else:
                run = similarity.similarity_run_create(
                    name=request.POST.get("name") or upload.name, records=records,
                    reference_set_id=reference_set.pk if reference_set else None, created_by=request.user,
                )
                messages.success(request, f"Scoring {len(records)} inferences in the background.")
                return redirect("references:similarity-run", run_id=run.pk)
    ctx = {"runs": selectors.similarity_runs_list(), "sets": ReferenceSet.objects.order_by("name"), "errors": errors}
    return render(request, "references/similarity_runs.html", ctx, status=400 if errors else 200)


@staff_required
def similarity_run(request, run_id):
    run = selectors.similarity_run_detail(run_id=run_id)
    if run is None:
        raise Http404("no such run")
    ctx = {"run": run, "scores": selectors.similarity_scores_ordered(run=run)}
    if request.htmx:
        return render(request, "references/similarity_run.html#scores", ctx)
    return render(request, "references/similarity_run.html", ctx)
