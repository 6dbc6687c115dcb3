"""The staff's item list at any size (issue 23): filters, sorts, keyset pages across ties, a
capped count, bulk actions, the API's filters and its 400s, and who may see it."""
import csv
import io
import random

import pytest
from django.urls import reverse

from annotation.models import ItemSummary
from review import item_list
from review.forms import ItemFilterForm
from review.models import Adjudication, Flag, FlagStatus
from tests.factories import BatchFactory, ContextFactory, ItemFactory, UserFactory, api_for, domain

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def exact_counts(monkeypatch):
    """The counts here are exact whatever the machine's load: past the page's 10 ms budget (a busy CI
    machine) the list shows the planner's estimate, which the budget's own tests below check."""
    monkeypatch.setattr(item_list, "COUNT_BUDGET_MS", 2_000)  # below the later count's 3,000


@pytest.fixture
def world():
    """24 items over two batches and two domains, with summaries full of ties."""
    rng = random.Random(7)
    batches = [BatchFactory(name="mi-b01"), BatchFactory(name="esc-b01")]
    items = []
    for n in range(24):
        context = ContextFactory(domain=domain("mi" if n % 3 else "esc"))
        items.append(ItemFactory(context=context, batch=batches[n % 2], attribute=["belief", "trust", "emotion"][n % 3],
                                 variant=["hard", "easy"][n % 4 == 0], task=["retrospective", "prospective"][n % 5 == 0], answer="A"))
    for n, item in enumerate(items):
        aggregated = n % 6 != 5
        ItemSummary.objects.filter(pk=item.pk).update(
            judgments=rng.choice([0, 3, 3, 4]), flags_open=rng.choice([0, 0, 1, 2]), flags_total=3,
            label=rng.choice("AB") if aggregated else "", posterior=rng.choice([0.5, 0.9, 0.99]) if aggregated else -1.0,
            agreement=rng.choice([1 / 3, 2 / 3, 1.0]) if aggregated else -1.0, n_agree=2 if aggregated else None,
            retained=rng.choice([True, False]) if aggregated else None, decision=rng.choice(["", "", "keep", "drop"]),
        )
    ItemSummary.objects.filter(posterior__gte=0).exclude(label="A").update(disagrees=True)
    ItemSummary.objects.filter(posterior__gte=0, label="A").update(disagrees=False)
    return {"items": items, "batches": batches}


def _filters(**params) -> dict:
    form = ItemFilterForm({k: str(v) for k, v in params.items()}, known_only=True)
    assert form.is_valid(), form.errors
    return form.cleaned_data


def _ids(rows) -> list[str]:
    return [row.item.item_id for row in rows]


def _all(**params) -> list[ItemSummary]:
    return list(ItemSummary.objects.select_related("item").filter(pk__in=item_list.items_filtered(filters=_filters(**params)).values("pk")))


@pytest.mark.parametrize("params, keep", [
    ({"batch": "mi-b01"}, lambda s: s.batch.name == "mi-b01"),
    ({"domain": "esc"}, lambda s: s.domain == "esc"),
    ({"task": "retrospective"}, lambda s: s.task == "retrospective"),
    ({"attribute": "trust"}, lambda s: s.attribute == "trust"),
    ({"variant": "easy"}, lambda s: s.variant == "easy"),
    ({"retained": "yes"}, lambda s: s.retained is True),
    ({"retained": "no"}, lambda s: s.retained is False),
    ({"posterior_min": 0.6, "posterior_max": 0.95}, lambda s: 0.6 <= s.posterior <= 0.95),
    ({"posterior_max": 0.6}, lambda s: 0 <= s.posterior <= 0.6),
    ({"disagrees": "yes"}, lambda s: s.disagrees is True),
    ({"flagged": "yes"}, lambda s: s.flags_open > 0),
    ({"flagged": "no"}, lambda s: s.flags_open == 0),
    ({"decided": "yes"}, lambda s: s.decision != ""),
    ({"decided": "no"}, lambda s: s.decision == ""),
    ({"decided": "drop", "domain": "mi"}, lambda s: s.decision == "drop" and s.domain == "mi"),
])
def test_filters(world, params, keep):
    everything = list(ItemSummary.objects.select_related("batch", "item"))
    expected = sorted(s.item.item_id for s in everything if keep(s))
    assert expected and len(expected) < len(everything)
    page = item_list.item_page(filters=_filters(size=500, sort="item", **params))
    assert sorted(_ids(page.rows)) == expected
    assert (page.total, page.capped) == (len(expected), False)


@pytest.mark.parametrize("sort, column", [(s, c) for s, c in item_list.SORT_COLUMNS.items()])
@pytest.mark.parametrize("direction", ["asc", "desc"])
def test_keyset_pages_walk_every_item_once_in_order_across_ties(world, sort, column, direction):
    everything = list(ItemSummary.objects.select_related("item"))
    key = (lambda s: (getattr(s, column), s.item_id)) if column else (lambda s: s.item_id)
    expected = [s.item.item_id for s in sorted(everything, key=key, reverse=direction == "desc")]

    seen, pages, after = [], [], None
    while True:
        page = item_list.item_page(filters=_filters(sort=sort, dir=direction, size=5, **({"after": after} if after else {})))
        pages.append(page)
        seen += _ids(page.rows)
        if page.next is None:
            break
        after = page.next
    assert seen == expected
    assert pages[0].previous is None and len(pages) == 5

    # and back from the last page by `previous`
    back, before = _ids(pages[-1].rows), pages[-1].previous
    while before:
        page = item_list.item_page(filters=_filters(sort=sort, dir=direction, size=5, before=before))
        back = _ids(page.rows) + back
        before = page.previous
    assert back == expected


def test_count_is_capped(world, monkeypatch):
    monkeypatch.setattr(item_list, "COUNT_CAP", 10)
    page = item_list.item_page(filters=_filters())
    assert (page.total, page.capped) == (10, True)
    assert item_list.item_page(filters=_filters(batch="mi-b01", attribute="trust")).capped is False


def test_a_count_past_its_time_budget_is_the_planners_estimate_and_says_so(world):
    """A combination of filters matching a few items spread over millions cannot be counted from an
    index: past COUNT_BUDGET_MS PostgreSQL cancels the count, the list shows its plan's estimate, and
    the connection's own statement_timeout is as it was."""
    from django.db import connection
    from django.db.models import BooleanField
    from django.db.models.expressions import RawSQL

    def timeout():
        with connection.cursor() as cursor:
            cursor.execute("SHOW statement_timeout")
            return cursor.fetchone()[0]

    before = timeout()
    assert item_list.bounded_count(ItemSummary.objects.all(), budget_ms=10_000) == (24, False)
    slow = ItemSummary.objects.filter(RawSQL("pg_sleep(0.05) IS NOT NULL", [], output_field=BooleanField()))
    n, estimated = item_list.bounded_count(slow, budget_ms=20)  # 24 rows × 50 ms: cancelled
    assert estimated is True and n >= 1
    assert timeout() == before and ItemSummary.objects.count() == 24  # the connection goes on as it was


def test_a_count_whose_plan_costs_more_than_its_ceiling_is_not_tried(world, client, staff, monkeypatch):
    """A count PostgreSQL's plan says would cost more than COUNT_MAX_COST is not run on the page (it
    would only burn its budget): the plan's estimate at once, in one statement; the page then asks
    for the exact count, which has no ceiling."""
    import re
    from html import unescape

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        n, estimated = item_list.bounded_count(ItemSummary.objects.all(), budget_ms=10_000, max_cost=0)
    assert estimated is True and n >= 1
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["EXPLAIN"]
    assert item_list.bounded_count(ItemSummary.objects.all(), budget_ms=10_000, max_cost=1e9) == (24, False)
    with CaptureQueriesContext(connection) as queries:  # no ceiling (the count asked for later): no plan read
        assert item_list.bounded_count(ItemSummary.objects.all(), budget_ms=10_000) == (24, False)
    assert not any(q["sql"].startswith("EXPLAIN") for q in queries.captured_queries)
    monkeypatch.setattr(item_list, "COUNT_MAX_COST", 0)
    client.force_login(staff)
    html = client.get(reverse("review:items"), {"batch": "mi-b01"}).content.decode()
    assert "about" in html and "estimate" in html
    later = unescape(re.search(r'hx-get="([^"]+)"', html).group(1))
    fragment = client.get(later).content.decode()
    assert "12 items" in fragment and "about" not in fragment


def test_an_estimated_count_reads_about_on_the_page_and_in_the_api(world, client, staff, monkeypatch):
    monkeypatch.setattr(item_list, "bounded_count", lambda queryset, budget_ms, max_cost=None: (1234, True))
    client.force_login(staff)
    html = client.get(reverse("review:items"), {"batch": "mi-b01"}).content.decode()
    assert "about 1,234 items" in html and "estimate" in html
    body = api_for(staff).get("/api/v1/items/", {"batch": "mi-b01"}).json()
    assert (body["count"], body["count_capped"], body["count_estimated"]) == (1234, False, True)
    monkeypatch.setattr(item_list, "bounded_count", lambda queryset, budget_ms, max_cost=None: (12_000, True))
    assert "about 10,000+ items" in client.get(reverse("review:items")).content.decode()


def test_an_estimated_page_asks_for_the_exact_count_once_it_has_loaded(world, client, staff, verifier, monkeypatch):
    """A count over its page budget: the page says "about", and asks /review/items-count/ (htmx,
    on load) for the exact count with the filters it shows, within the longer budget."""
    import re
    from html import unescape

    real = item_list.bounded_count
    budgets = []

    def page_too_slow(queryset, budget_ms, max_cost=None):
        budgets.append(budget_ms)
        return (1234, True) if budget_ms == item_list.COUNT_BUDGET_MS else real(queryset, budget_ms=budget_ms)

    monkeypatch.setattr(item_list, "bounded_count", page_too_slow)
    client.force_login(staff)
    html = client.get(reverse("review:items"), {"batch": "mi-b01", "sort": "judgments"}).content.decode()
    assert "about 1,234 items" in html
    later = unescape(re.search(r'hx-get="([^"]+)"', html).group(1))
    assert later.startswith(reverse("review:items-count")) and "batch=mi-b01" in later
    fragment = client.get(later).content.decode()
    assert budgets[-1] == item_list.COUNT_LATER_BUDGET_MS > item_list.COUNT_BUDGET_MS
    assert "12 items" in fragment and "about" not in fragment and "hx-get" not in fragment  # mi-b01 holds 12

    # past the longer budget too: still the estimate, said so, and not asked for again
    monkeypatch.setattr(item_list, "bounded_count", lambda queryset, budget_ms, max_cost=None: (1234, True))
    fragment = client.get(later).content.decode()
    assert "about 1,234 items" in fragment and "hx-get" not in fragment and "took over" in fragment
    assert client.get(reverse("review:items-count"), {"posterior_min": "2"}).status_code == 400
    client.force_login(verifier)
    assert client.get(later).status_code == 403


def test_the_page_lists_sorts_and_pages_in_a_fixed_number_of_statements(world, client, staff, django_assert_max_num_queries):
    client.force_login(staff)
    url = reverse("review:items")
    # session, user, batch, the count's plan, the count (in a savepoint with its time budget: 5), page, its items
    with django_assert_max_num_queries(11):
        response = client.get(url, {"batch": "mi-b01", "sort": "judgments", "dir": "desc", "size": 5})
    assert response.status_code == 200
    html = response.content.decode()
    assert "12 items" in html and 'rel="next"' in html
    assert client.get(url, {"after": "garbage"}).status_code == 400
    assert client.get(url, {"posterior_min": "2"}).status_code == 400
    item = world["items"][0]
    assert client.get(url, {"q": item.item_id})["Location"] == reverse("review:item", args=[item.item_id])


def test_verifiers_never_reach_the_list_nor_its_api(world, client, verifier):
    client.force_login(verifier)
    assert client.get(reverse("review:items")).status_code == 403
    assert client.post(reverse("review:items-bulk"), {"item": [world["items"][0].item_id], "action": "export"}).status_code == 403
    assert api_for(verifier).get("/api/v1/items/").status_code == 403
    client.logout()
    assert client.get(reverse("review:items")).status_code == 302


def test_bulk_keep_drop_resolve_and_export(world, client, staff):
    client.force_login(staff)
    items = world["items"][:3]
    ids = [i.item_id for i in items]
    verifier = UserFactory(username="v-flag")
    for item in items:
        Flag.objects.create(item=item, flagged_by=verifier, reason="question_unclear")
    bulk = reverse("review:items-bulk")

    response = client.post(bulk, {"item": ids, "action": "drop", "reason": "", "back": "batch=mi-b01"})
    assert response.status_code == 302 and response["Location"] == reverse("review:items") + "?batch=mi-b01"
    assert not Adjudication.objects.exists()  # no reason: nothing done

    client.post(bulk, {"item": ids, "action": "drop", "reason": "options overlap"})
    assert sorted(Adjudication.objects.values_list("item__item_id", flat=True)) == sorted(ids)
    assert set(ItemSummary.objects.filter(item__item_id__in=ids).values_list("decision", flat=True)) == {"drop"}
    assert not Flag.objects.filter(status=FlagStatus.OPEN).exists()  # a decision resolves the open flags

    gold = ItemFactory(is_gold=True, batch=world["batches"][0])
    client.post(bulk, {"item": [ids[0], gold.item_id], "action": "keep", "reason": "fine"})
    assert Adjudication.objects.count() == 3  # a gold item refuses the lot

    Flag.objects.update(status=FlagStatus.OPEN)
    ItemSummary.objects.filter(item__in=items).update(flags_open=1)
    client.post(bulk, {"item": ids[:2], "action": "resolve", "reason": "fixed"})
    assert Flag.objects.filter(status=FlagStatus.OPEN).count() == 1
    assert list(ItemSummary.objects.filter(item__in=items).order_by("item__item_id").values_list("flags_open", flat=True)) \
        == [0 if i in ids[:2] else 1 for i in sorted(ids)]

    response = client.post(bulk, {"item": ids, "action": "export"})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["item_id"] for r in rows] == sorted(ids)
    assert rows[0]["decision"] == "drop" and rows[0]["intended"] == "A"


def test_api_filters_pages_and_refuses_bad_filters_with_reasons(world, staff):
    api = api_for(staff)
    response = api.get("/api/v1/items/", {"batch": "esc-b01", "sort": "posterior", "dir": "desc", "size": 5})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["count"] == 12 and body["count_capped"] is False and len(body["results"]) == 5
    assert {r["batch"] for r in body["results"]} == {"esc-b01"}
    assert body["previous"] is None and "after=" in body["next"]
    second = api.get(body["next"]).json()
    assert not {r["item_id"] for r in second["results"]} & {r["item_id"] for r in body["results"]}
    no_aggregate = [r for r in api.get("/api/v1/items/", {"size": 500}).json()["results"] if r["posterior"] is None]
    assert no_aggregate and all(r["label"] is None and r["agreement"] is None for r in no_aggregate)

    for params, field, reason in [
        ({"batch": "nope"}, "batch", "no batch named 'nope'"),
        ({"sort": "colour"}, "sort", "colour"),
        ({"posterior_min": "0.9", "posterior_max": "0.1"}, "posterior_max", "must not be below"),
        ({"posterior_min": "x"}, "posterior_min", "number"),
        ({"flaged": "yes"}, "__all__", "unknown parameter 'flaged'"),
        ({"after": "garbage"}, "after", "not a cursor"),
        ({"size": "5000"}, "size", "500"),
    ]:
        response = api.get("/api/v1/items/", params)
        assert response.status_code == 400, params
        assert reason in " ".join(response.json()[field]), response.json()


def test_the_api_is_in_the_schema(staff):
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    parameters = {p["name"] for p in schema["paths"]["/api/v1/items/"]["get"]["parameters"]}
    assert {"batch", "domain", "task", "attribute", "variant", "retained", "posterior_min", "posterior_max",
            "disagrees", "flagged", "decided", "sort", "dir", "after", "before", "size"} <= parameters
