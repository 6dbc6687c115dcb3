"""Staff dashboard: one page of live fragments (htmx, every 10 s), CSV of every table, actions."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.models import User
from accounts.permissions import staff_required
from annotation.models import Batch
from dialtom_site.csvfiles import csv_writer
from releases import selectors as release_selectors
from releases import services as release_services

from . import actions, selectors

# rendered with the page: what staff look at first, above the fold
SECTIONS = ("progress", "agreement", "retention", "run")
# loaded when scrolled into view (hx-trigger="revealed"), not with the page: the staffing table (a
# per-context count), the agreement per task × domain, and the People and Releases cards below
LAZY_SECTIONS = ("staffing", "agreement_groups", "people", "releases")


def section_context(name: str, params=None, shared: dict | None = None) -> dict:
    """A section's context; `params` (the request's GET): `page` of its table (25 rows a page);
    `shared`: what the page's sections read once for all (the progress, read by two; the row URLs)."""
    page = (params or {}).get("page") or 1
    shared = {} if shared is None else shared
    context = {"versions": {name: shared["versions"][name] if "versions" in shared else selectors.section_version(name)}}
    context["urls"] = shared["urls"] if "urls" in shared else row_urls()
    if name == "progress":
        progress = shared.setdefault("progress", selectors.progress_by_batch(page=page, tallies=_tallies(shared)))
        return context | {
            "progress": progress,
            "throughput": selectors.throughput_by_day(),
            "adaptive": selectors.adaptive_overlap_by_batch(batch_ids=[b.id for b in progress["batches"]]),
        }
    if name == "staffing":
        batches = selectors.batches_page(page=page)
        return context | {"staffing": selectors.staffing_by_batch(batches=batches["rows"]), "staffing_page": batches["page"]}
    if name in ("agreement", "agreement_groups"):
        return context | {"agreement": selectors.agreement_overview(page=page, groups=name == "agreement_groups")}
    if name == "retention":
        retention = selectors.retention_overview()
        return context | {"retention": retention,
                          "funnel": selectors.retention_funnel(cells=retention["cells"], tallies=_tallies(shared))}
    if name == "people":
        people = selectors.verifier_stats(page=page)
        return context | {"verifiers": people["rows"], "people_page": people["page"], "crowd": selectors.crowd_worker_stats()}
    if name == "run":
        batches = shared["progress"] if "progress" in shared else selectors.progress_by_batch(page=page, tallies=_tallies(shared))
        return context | {"run": selectors.latest_aggregation_run(), "run_batches": _choices(batches["batches"]),
                          "run_page": batches["page"]}
    if name == "releases":
        return context | {
            "releases": list(release_selectors.releases_list()[:10]),
            "release_warnings": release_selectors.release_warnings(),
        }
    raise Http404(name)


def _tallies(shared: dict) -> list[dict]:
    """The tallies summed per task (`tally_sums_by_task`), read once for the sections of a page."""
    if "tallies" not in shared:
        shared["tallies"] = selectors.tally_sums_by_task()
    return shared["tallies"]


def row_urls() -> dict:
    """The prefixes of the per-row URLs (reversed once a page, not once a row)."""
    return {
        "batch": reverse("dashboard:batch-action", args=[0, "pause"]).removesuffix("0/pause/"),
        "verifier": reverse("dashboard:verifier-action", args=[0, "exclude"]).removesuffix("0/exclude/"),
        "guideline": reverse("review:guideline-edit", args=["x"]).removesuffix("x/guideline/"),
    }


@staff_required(area="The dashboard")
def index(request):
    context = {}
    versions, shared = {}, {"versions": selectors.section_versions(SECTIONS), "urls": row_urls()}
    for name in SECTIONS:
        section = section_context(name, request.GET, shared)
        versions.update(section.pop("versions"))
        context.update(section)
    context["versions"] = versions
    return render(request, "dashboard/index.html", context)


@staff_required(area="The dashboard")
def fragment(request, name: str):
    """One section. A poll sends the version it shows (`v`): 204 No Content while it is the same
    (one statement on the summaries), so an idle open tab costs next to nothing."""
    if name not in SECTIONS + LAZY_SECTIONS:
        raise Http404(name)
    if request.GET.get("v") and request.GET["v"] == selectors.section_version(name):
        return HttpResponse(status=204)
    return render(request, f"dashboard/index.html#{name}", section_context(name, request.GET))


def _pct(value):
    return "" if value is None else f"{value:.6f}"


def _num(value):
    return "" if value is None else f"{value:.3f}"


def csv_tables() -> dict:
    """name -> (header, rows function): every table of the page as CSV."""

    def progress():
        p = selectors.progress_by_batch(page=None)  # every batch, not the page on screen
        for b in p["batches"]:
            yield [b.name, b.status, b.items, b.done, b.needed, b.open, b.in_progress, b.complete, b.aggregated,
                   _num(b.rate_per_day), b.eta or ""]
        o = p["overall"]
        yield [o.name, "", o.items, o.done, p["needed"], o.open, o.in_progress, o.complete, o.aggregated,
               _num(p["rate_per_day"]), p["eta"] or ""]

    def throughput():
        for r in selectors.throughput_by_day():
            yield [r["day"], r["judgments"], r["cumulative"]]

    def agreement():
        for r in selectors.agreement_overview(page=None, groups=False)["batches"]:
            yield [r["batch"], r["run"], r["items"], r["judgments"], r["retained"], _pct(r["ac1"]), _pct(r["ac1_ci_low"]),
                   _pct(r["ac1_ci_high"]), _pct(r["kappa"]), _pct(r["alpha"]), int(r["flagged"])]

    def agreement_groups():
        for r in selectors.agreement_overview(page=None)["groups"]:
            yield [r["batch"], r["task"], r["domain"], r.get("items") or "", _pct(r.get("ac1")), _pct(r.get("ac1_ci_low")),
                   _pct(r.get("ac1_ci_high")), _pct(r.get("kappa")), _pct(r.get("alpha")), int(r["flagged"])]

    def retention(key):
        def rows():
            for r in selectors.retention_overview()[key]:
                yield [r["group"], r["retained"], r["total"], _pct(r["rate"])]

        return rows

    def retention_attribute():
        for r in selectors.retention_overview()["attribute"]:
            yield [r["group"], r["retained"], r["total"], _pct(r["rate"]),
                   *(value for task in ("retrospective", "prospective")
                     for value in (r[task]["retained"], r[task]["total"], _pct(r[task]["rate"])))]

    def retention_runs():
        for r in selectors.retention_overview()["runs"]:
            yield [r["run"], r["finished_at"] or "", r["retained"], r["total"], _pct(r["rate"]), _pct(r["retrospective"]),
                   _pct(r["prospective"]), _pct(r["change"])]

    def verifiers():
        for r in selectors.verifier_stats():
            yield [r["username"], int(r["excluded"]), r["judgments"], r["median_seconds"] if r["median_seconds"] is not None else "",
                   r["gold_judgments"], _pct(r["gold_accuracy"]), _pct(r["ds_accuracy"]), _pct(r["none_share"]),
                   _pct(r["multiple_share"]), r["top_letter"], _pct(r["top_letter_share"]), "; ".join(r["outliers"])]

    def crowd():
        for r in selectors.crowd_worker_stats():
            yield [r["username"], r["written"], r["sent_back"]]

    return {
        "progress": (["batch", "status", "items", "judgments_done", "judgments_needed", "open", "in_progress", "complete",
                      "aggregated", "judgments_per_day", "eta"], progress),
        "throughput": (["day", "judgments", "cumulative"], throughput),
        "agreement": (["batch", "run", "items", "judgments", "retained", "ac1", "ac1_ci_low", "ac1_ci_high", "kappa", "alpha",
                       "flagged"], agreement),
        "agreement_groups": (["batch", "task", "domain", "items", "ac1", "ac1_ci_low", "ac1_ci_high", "kappa", "alpha",
                              "flagged"], agreement_groups),
        "retention_task": (["task", "retained", "total", "rate"], retention("task")),
        "retention_domain": (["domain", "retained", "total", "rate"], retention("domain")),
        "retention_attribute": (["attribute", "retained", "total", "rate", "retrospective_retained", "retrospective_total",
                                 "retrospective_rate", "prospective_retained", "prospective_total", "prospective_rate"],
                                retention_attribute),
        "retention_runs": (["run", "finished_at", "retained", "total", "rate", "retrospective", "prospective", "change"],
                           retention_runs),
        "verifiers": (["verifier", "excluded", "judgments", "median_seconds", "gold_judgments", "gold_accuracy", "ds_accuracy",
                       "none_share", "multiple_share", "top_letter", "top_letter_share", "outliers"], verifiers),
        "crowd": (["worker", "contexts_written", "sent_back"], crowd),
    }


@staff_required(area="The dashboard")
def table_csv(request, name: str):
    tables = csv_tables()
    if name not in tables:
        raise Http404(name)
    header, rows = tables[name]
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="dialtom-{name}.csv"'
    writer = csv_writer(response, for_spreadsheets=True)
    writer.writerow(header)
    writer.writerows(rows())
    return response


def _done(request, section: str):
    if request.htmx:
        response = render(request, f"dashboard/index.html#{section}", section_context(section))
        return response
    return redirect("dashboard:index")


@staff_required(area="The dashboard")
@require_POST
def batch_action(request, batch_id: int, action: str):
    batch = get_object_or_404(Batch, pk=batch_id)
    handler = {"pause": actions.batch_pause, "close": actions.batch_close, "reopen": actions.batch_reopen}.get(action)
    if handler is None:
        raise Http404(action)
    try:
        handler(batch=batch, by=request.user)
        messages.success(request, f"Batch {batch.name}: {action} done.")
    except actions.ActionError as exc:
        messages.error(request, str(exc))
    return _done(request, "progress")


@staff_required(area="The dashboard")
@require_POST
def verifier_action(request, user_id: int, action: str):
    person = get_object_or_404(User, pk=user_id)
    if action not in ("exclude", "include"):
        raise Http404(action)
    reason = request.POST.get("reason", "").strip()[:500] or "excluded from the dashboard"
    actions.verifier_exclude(verifier=person, reason=reason, by=request.user, excluded=action == "exclude")
    messages.success(request, f"{person.username}: {'excluded from' if action == 'exclude' else 'included in'} aggregation.")
    return _done(request, "people")


def aggregation_choices(*, page=None) -> list[dict]:
    """The batches a run can cover (those that hold judgments; a page of 25 of all batches, or
    every one), each ticked by default when complete (every item has its k judgments):
    {"id", "name", "status", "done", "needed", "complete"}."""
    return _choices(selectors.progress_by_batch(page=page)["batches"])


def _choices(batches) -> list[dict]:
    return [
        {"id": b.id, "name": b.name, "status": b.status, "done": b.done, "needed": b.needed,
         "complete": bool(b.needed) and b.done >= b.needed}
        for b in batches if b.judged
    ]


@staff_required(area="The dashboard")
@require_POST
def aggregation_start(request):
    """Two steps: the batches ticked on the dashboard are shown back to confirm; the
    confirmation (`confirm=yes`) starts the run."""
    chosen = {int(pk) for pk in request.POST.getlist("batch") if pk.isdigit()}
    if request.POST.get("confirm") != "yes":
        rows = [row for row in aggregation_choices() if row["id"] in chosen]
        if not rows:
            messages.error(request, "Tick at least one batch to aggregate.")
            return redirect("dashboard:index")
        return render(request, "dashboard/aggregation_confirm.html", {"rows": rows})
    try:
        run = actions.aggregation_start(by=request.user, batch_ids=chosen)
        messages.success(request, f"Aggregation run #{run.pk} started.")
    except actions.ActionError as exc:
        messages.error(request, str(exc))
    return redirect("dashboard:index")


@staff_required(area="The dashboard")
@require_POST
def release_create(request):
    try:
        release = release_services.release_create(
            version=request.POST.get("version") or None,
            created_by=request.user,
            trigger="dashboard",
            acknowledge_warnings=request.POST.get("acknowledge_warnings") == "on",
        )
        note = f" with {len(release.warnings)} acknowledged warning(s)" if release.warnings else ""
        messages.success(request, f"Release {release.version} is being built{note}.")
    except release_services.ReleaseWarnings as exc:
        messages.error(
            request,
            "Not created: " + "; ".join(w["message"] for w in exc.warnings)
            + ". Tick “I have read the warnings” to release anyway.",
        )
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
    return _done(request, "releases")
