"""The release pages at any size (issue 23): a release keeps what its pages show of its manifest
(`Release.summary`) and the manifest's long lists a row each (`ManifestRow`), so the list and a
release's page read neither the manifest (3.8 MB of JSON at 4M items) nor more rows than they show."""
import importlib

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from releases import services
from releases.models import ManifestRow, Release, ReleaseStatus, manifest_rows, manifest_summary
from review.services import adjudication_record
from tests.factories import StaffFactory

pytestmark = pytest.mark.django_db


def _rows(release, kind):
    return list(ManifestRow.objects.filter(release=release, kind=kind).order_by("position").values_list("row", flat=True))


def test_a_build_keeps_the_manifest_s_summary_and_its_long_lists_a_row_each(world):
    staff = StaffFactory(username="admin-pages")
    adjudication_record(item_id="mi-trust", decision="drop", reason="B and C overlap", staff=staff)
    release = services.release_build(release_id=services.release_create(version="v1", build=False).id)
    manifest = release.manifest
    assert release.summary == manifest_summary(manifest)
    assert release.summary["retention_overall"] == manifest["retention"]["overall"]
    assert release.summary["files"] == manifest["files"] and release.summary["agreement"] == len(manifest["agreement"]) == 1
    assert _rows(release, "agreement") == manifest["agreement"]
    assert _rows(release, "adjudications") == manifest["adjudications"] and len(manifest["adjudications"]) == 1


def test_the_migration_fills_the_releases_built_before_it_as_a_build_does(world):
    release = services.release_build(release_id=services.release_create(version="v1", build=False).id)
    kept = (release.summary, _rows(release, "agreement"))
    Release.objects.filter(pk=release.pk).update(summary={})
    ManifestRow.objects.filter(release=release).delete()
    importlib.import_module("releases.migrations.0010_manifest_summary_and_rows").fill(apps, None)
    release.refresh_from_db()
    assert (release.summary, _rows(release, "agreement")) == kept


def _big_release(version: str, batches: int, decisions: int) -> Release:
    agreement = [{"batch": f"b{n:05d}", "run": n, "items": 504, "judgments": 1512, "retained": 400 + n % 50,
                  "ac1": 0.9, "ac1_ci": [0.88, 0.92], "ac1_se": 0.01, "kappa": 0.8, "alpha": 0.8} for n in range(batches)]
    adjudications = [{"item_id": f"item-{n:05d}", "decision": "drop", "reason": "overlap", "decided_by": "admin",
                      "decided_at": "2026-12-07T10:00:00"} for n in range(decisions)]
    manifest = {"items": 100, "counts": {"task": {"retrospective": 100}}, "agreement": agreement,
                "adjudications": adjudications, "retention": {"overall": {"retained": 100, "total": 120, "rate": 0.83}},
                "files": {"items.csv": {"sha256": "0" * 64, "bytes": 10, "rows": 100}}, "padding": "x" * 100_000}
    release = Release.objects.create(version=version, status=ReleaseStatus.READY, n_items=100, manifest=manifest,
                                     summary=manifest_summary(manifest))
    ManifestRow.objects.bulk_create(manifest_rows(release.pk, manifest))
    return release


def _get(client, url):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode(), [q["sql"] for q in queries.captured_queries]


def test_a_release_page_shows_its_batches_and_decisions_a_page_at_a_time_without_its_manifest(client, staff):
    client.force_login(staff)
    _big_release("big", batches=60, decisions=30)
    html, sql = _get(client, reverse("release-pages:detail", args=["big"]))
    assert '"releases_release"."manifest"' not in " ".join(sql)
    assert "<strong>60</strong> batches" in html and "<strong>30</strong> staff decisions" in html
    assert "<strong>100 / 120</strong> retained" in html
    assert html.count("<td>b0") == 25 and "<td>b00000</td>" in html and "<td>b00025</td>" not in html
    assert "page 1 of 3 (60 rows)" in html and "page 1 of 2 (30 rows)" in html
    assert 'href="/api/v1/releases/big/files/items.csv"' in html and 'href="/releases/big/manifest.json"' in html
    html, _ = _get(client, reverse("release-pages:detail", args=["big"]) + "?agreement=3&decisions=2")
    assert html.count("<td>b0") == 10 and "<td>b00050</td>" in html and "<td>b00059</td>" in html
    assert "<td>item-00025</td>" in html and "<td>item-00000</td>" not in html
    html, _ = _get(client, reverse("release-pages:detail", args=["big"]) + "?agreement=99")  # past the last: the last
    assert "page 3 of 3" in html


def test_the_release_pages_cost_the_same_statements_for_a_release_ten_times_larger(client, staff):
    client.force_login(staff)
    _big_release("small", batches=30, decisions=3)
    _big_release("large", batches=300, decisions=30)
    statements = {}
    for version in ("small", "large"):
        _, sql = _get(client, reverse("release-pages:detail", args=[version]))
        statements[version] = len(sql)
    assert statements["small"] == statements["large"]
    html, sql = _get(client, reverse("release-pages:list"))
    assert '"releases_release"."manifest"' not in " ".join(sql)
    assert html.count("100 / 120") == 2
    manifest = client.get(reverse("release-pages:manifest", args=["large"])).json()  # the whole, where asked for
    assert len(manifest["agreement"]) == 300
