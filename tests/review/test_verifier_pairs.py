"""/review/verifiers/: the verifier × verifier matrix, its CSV and GET /api/v1/verifier-pairs/, read
from the kept tallies in a fixed number of queries (the world of tests/dashboard/world.py)."""
import csv
import io

import pytest
from django.urls import reverse

from review import verifier_agreement
from tests.dashboard.world import make_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(db):
    return make_world()


def test_the_matrix_has_every_pair_with_its_share_and_count(world):
    data = verifier_agreement.verifier_agreement(batch="batch-a", sort="username", descending=False)
    assert [r["username"] for r in data["matrix"]] == ["verifier-1", "verifier-2", "verifier-3"]
    cells = {(r["username"], c["other"]): c for r in data["matrix"] for c in r["cells"]}
    assert cells[("verifier-1", "verifier-1")]["self"]
    assert (cells[("verifier-1", "verifier-2")]["n"], cells[("verifier-1", "verifier-2")]["rate"]) == (6, pytest.approx(5 / 6))
    assert cells[("verifier-3", "verifier-1")]["rate"] == pytest.approx(2 / 6)
    assert data["pairs"] == 3
    ordered = verifier_agreement.verifier_agreement(batch="batch-a", sort="username", descending=False, pair_sort="verifier-3")
    assert [r["username"] for r in ordered["matrix"]] == ["verifier-3", "verifier-1", "verifier-2"]


def test_the_task_filter_and_an_unknown_batch(world):
    pro = verifier_agreement.verifier_pairs(batch="batch-a", task="prospective")
    retro = verifier_agreement.verifier_pairs(batch="batch-a", task="retrospective")
    both = verifier_agreement.verifier_pairs(batch="batch-a")
    assert [p["co_judged"] for p in both] == [a["co_judged"] + b["co_judged"] for a, b in zip(pro, retro)]
    assert verifier_agreement.verifier_pairs(batch="nope") == []


def test_the_page_is_a_real_table_in_a_fixed_number_of_queries(client, staff, world, django_assert_max_num_queries):
    client.force_login(staff)
    with django_assert_max_num_queries(12):
        html = client.get(reverse("review:verifiers"), {"sort": "username", "dir": "asc"}).content.decode()
    assert 'id="pair-matrix"' in html and '<th scope="row">verifier-1</th>' in html
    assert "83 %" in html.split('id="pair-matrix"')[1]  # the share is written, not only a colour
    assert "pairs.csv" in html


def test_the_csv_and_the_api_give_every_pair(client, staff, world):
    client.force_login(staff)
    response = client.get(reverse("review:verifier-pairs-csv"), {"batch": "batch-a"})
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert response["Content-Type"].startswith("text/csv")
    assert {(r["verifier_a"], r["verifier_b"], r["co_judged"]) for r in rows} >= {("verifier-1", "verifier-2", "6")}
    api = client.get("/api/v1/verifier-pairs/", {"batch": "batch-a", "task": "retrospective"}).json()
    assert api and set(api[0]) == {"verifier_a", "verifier_b", "co_judged", "agreed", "agreement"}
    assert "/api/v1/verifier-pairs/" in client.get("/api/schema/").content.decode()


def test_verifiers_are_paged(client, staff, world, monkeypatch):
    monkeypatch.setattr(verifier_agreement, "PAGE_SIZE", 2)
    first = verifier_agreement.verifier_agreement(sort="username", descending=False)
    second = verifier_agreement.verifier_agreement(sort="username", descending=False, page=2)
    assert (first["pages"], first["count"]) == (2, 3)
    assert [r["username"] for r in first["verifiers"] + second["verifiers"]] == ["verifier-1", "verifier-2", "verifier-3"]


def test_the_rebuild_command_reports_what_it_rebuilt(world):
    from django.core.management import call_command

    out = io.StringIO()
    call_command("verifier_summaries_rebuild", "--json", stdout=out)
    assert '"pair_totals": 6' in out.getvalue()


def test_the_median_read_in_sql_is_that_of_the_buckets(world):
    from collections import defaultdict

    from verification.models import VerifierSecondsTotal
    from verification.pair_tallies import median_of_buckets

    buckets = defaultdict(lambda: defaultdict(int))
    for v, bucket, n in VerifierSecondsTotal.objects.values_list("verifier__username", "bucket", "judgments"):
        buckets[v][bucket] += n
    rows = verifier_agreement.verifier_agreement()["verifiers"]
    assert rows and {r["username"]: r["median_seconds"] for r in rows} == {v: median_of_buckets(b) for v, b in buckets.items()}
    assert {r["username"]: r["judgments"] for r in rows} == {v: sum(b.values()) for v, b in buckets.items()}
