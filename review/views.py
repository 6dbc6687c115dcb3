"""Pages of the review app, thin doors onto services.py / selectors.py.

Verifiers: a batch's guidelines, and flagging the item in hand (htmx; plain POST works too).
Staff: the flag queue, the item list and drill-down with adjudication, agreement per verifier."""
import csv
import io
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotation.models import Batch, Item
from accounts.permissions import staff_required
from dialtom_site.errors import validation_text
from verification import selectors as verification_selectors

from . import item_list as item_list_reads
from . import selectors, services, verifier_agreement
from .forms import ITEM_SORTS, AdjudicationForm, FlagForm, FlagHandleForm, ItemBulkForm, ItemFilterForm
from .models import EXAMPLE_TOPICS, FlagStatus


# --- Verifiers ----------------------------------------------------------------------------


def _verifier_batch(request, batch_name):
    if not request.user.can_audit:
        raise PermissionDenied("guidelines and flags are for verifiers")
    return verification_selectors.batch_for_verifier_or_404(verifier=request.user, name=batch_name)


@login_required
def guidelines(request, batch_name):
    """The guidelines as a page of their own (the audit page shows them in a dialog, on `g`)."""
    batch = _verifier_batch(request, batch_name)
    return render(request, "review/guidelines_page.html", {"batch": batch, "guideline": selectors.guideline_for(batch=batch)})


@login_required
@require_POST
def flag(request, batch_name):
    batch = _verifier_batch(request, batch_name)
    form = FlagForm(request.POST)
    flagged, error = None, None
    if form.is_valid():
        try:
            flagged = services.flag_submit(verifier=request.user, claim_id=form.cleaned_data["claim"],
                                           reason=form.cleaned_data["reason"], comment=form.cleaned_data["comment"])
        except ValidationError as exc:
            error = validation_text(exc)
    else:
        error = _errors_text(form)
    if request.htmx:
        # htmx swaps 200s only: the problem is explained in place.
        return render(request, "review/_flag.html", {"flag_claim": form.data.get("claim"), "flagged": flagged,
                                                     "flag_error": error, "batch": batch, "flag_form": form})
    if error:
        messages.error(request, f"The flag was not saved: {error}")
    else:
        messages.success(request, "Thank you: the item is flagged for staff to look at.")
    return redirect("verification:audit", batch_name=batch.name)


# --- Staff --------------------------------------------------------------------------------


@staff_required(area="The review pages")
@require_http_methods(["GET", "POST"])
def flag_queue(request):
    if request.method == "POST":
        form = FlagHandleForm(request.POST)
        if form.is_valid():
            try:
                services.flag_handle(flag_id=int(request.POST.get("flag", 0)), status=form.cleaned_data["status"],
                                     staff=request.user, note=form.cleaned_data["note"])
                messages.success(request, f"Flag {form.cleaned_data['status']}.")
            except (ValidationError, ValueError) as exc:
                messages.error(request, f"Not saved: {exc}")
        return redirect(reverse("review:flags") + (f"?status={request.GET['status']}" if request.GET.get("status") else ""))
    status = request.GET.get("status", FlagStatus.OPEN)
    if status not in FlagStatus.values:
        status = FlagStatus.OPEN
    counts = selectors.flag_counts()  # issue 23: a page of the queue, counted by the kept tallies
    pages = max(1, -(-counts[status] // FLAGS_PAGE))
    page = min(max(1, int(request.GET["page"]) if request.GET.get("page", "").isdigit() else 1), pages)
    return render(request, "review/flags.html", {
        "flags": selectors.flags_queue(status=status)[(page - 1) * FLAGS_PAGE:page * FLAGS_PAGE], "status": status,
        "counts": counts, "page": page, "pages": pages, "comments": selectors.commented_judgments(), "statuses": FlagStatus.choices,
    })


FLAGS_PAGE = 50


def _errors_text(form) -> str:
    """A form's errors on one line: `field: message; field: message`."""
    return "; ".join(f"{f}: {' '.join(e)}" for f, e in form.errors.items())


@staff_required(area="The review pages")
def item_list(request):
    """The item list at any size (issue 23): filters, sort, keyset pages, a capped total; `q`
    jumps to an item by its id."""
    q = request.GET.get("q", "").strip()
    if q:
        if Item.objects.filter(item_id=q).exists():
            return redirect("review:item", item_id=q)
        messages.error(request, f"No item {q!r}.")
    form = ItemFilterForm(request.GET or None)
    page, status = None, 200
    if form.is_bound and not form.is_valid():
        status = 400
    else:
        try:
            page = item_list_reads.item_page(filters=form.cleaned_data if form.is_bound else {})
        except item_list_reads.BadCursor as exc:
            form.add_error(None, f"That page link is no longer valid ({exc}): start from the first page.")
            status = 400
    return render(request, "review/items.html", {"form": form, "page": page, **_item_list_links(request, page)},
                  status=status)


def _count_context(total: int, capped: bool, estimated: bool, *, later_url: str = "") -> dict:
    """What the list says of its total: exact, or PostgreSQL's estimate (then, on the page, the
    exact count is asked for once the page has loaded: `later_url`)."""
    text = f"{'about ' if estimated else ''}{total:,}{'+' if capped else ''}"
    return {"total_text": text, "total": total, "estimated": estimated, "later_url": later_url if estimated else "",
            "budget_ms": item_list_reads.COUNT_LATER_BUDGET_MS}


@staff_required(area="The review pages")
def item_list_count(request):
    """The exact count of a filtered list whose page showed an estimate (htmx, once the page has
    loaded), within a longer budget; past it, still the estimate, and said so."""
    form = ItemFilterForm(request.GET)
    if not form.is_valid():
        return HttpResponse("Bad filters: " + _errors_text(form), status=400,
                            content_type="text/plain; charset=utf-8")
    total, capped, estimated = item_list_reads.item_list_count(filters=form.cleaned_data)
    return render(request, "review/_item_count.html", {**_count_context(total, capped, estimated), "counted_later": True})


def _item_list_links(request, page) -> dict:
    """Links of the list page: the next and previous pages, each sort (its direction toggled), the query to come back to."""
    params = request.GET.copy()
    for key in ("after", "before", "q"):
        params.pop(key, None)
    links = {"back": params.urlencode()}
    if page is not None:
        links.update(_count_context(page.total, page.capped, page.estimated,
                                    later_url=reverse("review:items-count") + "?" + params.urlencode()))
        for name, cursor in (("next_url", page.next), ("previous_url", page.previous)):
            if cursor:
                there = params.copy()
                there["after" if name == "next_url" else "before"] = cursor
                links[name] = "?" + there.urlencode()
        sorts = []
        for sort in ITEM_SORTS:
            there = params.copy()
            there["sort"] = sort
            there["dir"] = "asc" if sort == page.sort and page.descending else ("desc" if sort == page.sort else "asc")
            sorts.append({"name": sort, "url": "?" + there.urlencode(), "current": sort == page.sort})
        links["sorts"] = sorts
    return links


@staff_required(area="The review pages")
@require_POST
def item_bulk(request):
    """A bulk action on the items ticked on a page of the list: keep or drop them with one
    reason, resolve their open flags, or export them as CSV."""
    form = ItemBulkForm(request.POST)
    back = reverse("review:items") + "?" + (request.POST.get("back", "") if "/" not in request.POST.get("back", "") else "")
    if not form.is_valid():
        messages.error(request, "Nothing done: " + _errors_text(form))
        return redirect(back)
    ids, action = form.cleaned_data["item"], form.cleaned_data["action"]
    if action == "export":
        return _items_csv(ids)
    try:
        if action == "resolve":
            n = services.flags_resolve(item_ids=ids, staff=request.user, note=form.cleaned_data["reason"])
            messages.success(request, f"{n} open flag{'s' if n != 1 else ''} resolved on {len(ids)} items.")
        else:
            services.adjudications_record_bulk(item_ids=ids, decision=action, reason=form.cleaned_data["reason"], staff=request.user)
            messages.success(request, f"{len(ids)} items: {action} recorded; the next release honours it.")
    except ValidationError as exc:
        messages.error(request, f"Nothing done: {validation_text(exc)}")
    return redirect(back)


def _items_csv(item_ids: list[str]) -> StreamingHttpResponse:
    def lines():
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=item_list_reads.EXPORT_COLUMNS)
        writer.writeheader()
        for row in item_list_reads.items_export(item_ids=item_ids):
            writer.writerow(row)
            if buffer.tell() > 65536:
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
        yield buffer.getvalue()

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="items.csv"'
    return response


@staff_required(area="The review pages")
@require_http_methods(["GET", "POST"])
def item_detail(request, item_id):
    form = AdjudicationForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                services.adjudication_record(item_id=item_id, decision=form.cleaned_data["decision"],
                                             reason=form.cleaned_data["reason"], staff=request.user)
            except ValidationError as exc:
                form.add_error(None, validation_text(exc))
            else:
                messages.success(request, f"{item_id}: {form.cleaned_data['decision']} recorded; the next release honours it.")
                return redirect("review:item", item_id=item_id)
        status = 400
    detail = selectors.item_detail(item_id=item_id)
    if detail is None:
        raise Http404("no such item")
    return render(request, "review/item.html", {**detail, "form": form}, status=status)


def _verifier_filters(request) -> dict:
    return {"batch": request.GET.get("batch", "").strip(), "task": request.GET.get("task", "")}


def _int(value, default: int) -> int:
    try:
        return max(0, int(value or default))
    except ValueError:
        return default


@staff_required(area="The review pages")
def verifiers(request):
    sort = request.GET.get("sort", "consensus")
    descending = request.GET.get("dir", "desc") != "asc"
    filters = _verifier_filters(request)
    min_judgments = _int(request.GET.get("min"), 0)
    data = verifier_agreement.verifier_agreement(
        **filters, min_judgments=min_judgments, sort=sort, descending=descending,
        page=_int(request.GET.get("page"), 1), pair_sort=request.GET.get("pair_sort", ""),
    )
    query = urlencode({**filters, "min": min_judgments})
    return render(request, "review/verifiers.html", {**data, "sort": sort, "descending": descending, "batch": filters["batch"],
                                                      "min": min_judgments, "sorts": verifier_agreement.SORTS, "query": query})


@staff_required(area="The review pages")
def verifier_pairs_csv(request):
    """Every pair of verifiers who co-judged an item, with the page's filters, as CSV."""
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="verifier-pairs.csv"'
    writer = csv.writer(response)
    writer.writerow(["verifier_a", "verifier_b", "co_judged", "agreed", "agreement"])
    for p in verifier_agreement.verifier_pairs(**_verifier_filters(request)):
        writer.writerow([p["verifier_a"], p["verifier_b"], p["co_judged"], p["agreed"], f"{p['agreement']:.4f}"])
    return response


@staff_required
@require_http_methods(["GET", "POST"])
def guideline_edit(request, batch_name):
    """Staff write a batch's guideline (Markdown) and an example per attribute; "Preview" shows
    what verifiers will see without saving, "Save" replaces the guideline."""
    other = request.GET.get("batch", "")  # the batch picker; only a batch that exists is followed
    if other and other != batch_name and Batch.objects.filter(name=other).exists():
        return redirect("review:guideline-edit", batch_name=other)
    batch = Batch.objects.filter(name=batch_name).first()
    if batch is None:
        raise Http404("no such batch")
    source = selectors.guideline_source(batch=batch)
    preview, error, status = None, None, 200
    if request.method == "POST":
        text = request.POST.get("text", "")
        examples = {code: request.POST.get(f"example-{code}", "") for code, _ in EXAMPLE_TOPICS}
        source = {**source, "text": text, "examples": examples}
        if request.POST.get("action") == "preview":
            preview = selectors.guideline_preview(text=text, examples=examples)
        else:
            try:
                services.guideline_set(batch_name=batch.name, text=text, examples=examples, updated_by=request.user)
            except ValidationError as exc:
                error, status = validation_text(exc), 400
            else:
                messages.success(request, f"Guideline of {batch.name} saved: verifiers see it from their next item.")
                return redirect("review:guideline-edit", batch_name=batch.name)
    examples = [(code, title, source["examples"].get(code, "")) for code, title in EXAMPLE_TOPICS]
    return render(request, "review/guideline_edit.html", {
        "batch": batch, "source": source, "examples": examples, "preview": preview, "error": error,
        "batches": selectors.batch_names(),
    }, status=status)
