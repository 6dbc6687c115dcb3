"""Issue 21 item 5: every file a release's manifest lists downloads at
/api/v1/releases/<version>/files/<name> (staff and release readers; the SHA-256 as ETag),
and the release page links each one."""
import hashlib

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.models import Role
from releases import services
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

FILES = ["items.csv", "items.jsonl", "items.parquet", "judgments.csv", "references.jsonl", "results.csv", "manifest.json"]


def _client(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def built(world):
    return services.release_build(release_id=services.release_create(version="v1", build=False).id)


def _body(response):
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_every_manifest_file_downloads_with_its_sha256_as_etag(built, release_root):
    reader = UserFactory(username="reader01", role=Role.RELEASE_READER)
    client = _client(reader)
    for name in FILES:
        response = client.get(reverse("releases:file", args=["v1", name]))
        assert response.status_code == 200, name
        body = _body(response)
        assert body == (release_root / "v1" / name).read_bytes()
        sha = hashlib.sha256(body).hexdigest()
        assert response["ETag"] == f'"{sha}"'
        assert name == "manifest.json" or built.manifest["files"][name]["sha256"] == sha
        again = client.get(reverse("releases:file", args=["v1", name]), HTTP_IF_NONE_MATCH=f'"{sha}"')
        assert again.status_code == 304 and again["ETag"] == f'"{sha}"'
    assert client.get(reverse("releases:file", args=["v1", "judgments.csv"]))["Content-Type"].startswith("text/csv")


def test_names_outside_the_manifest_and_other_people_are_refused(built, release_root, verifier):
    (release_root / "secret.txt").write_text("not a release file")
    reader = _client(UserFactory(username="reader01", role=Role.RELEASE_READER))
    for name in ("nope.csv", "..", "%2e%2e", "..%2fsecret.txt", ".tmp-v1"):
        assert reader.get(f"/api/v1/releases/v1/files/{name}").status_code == 404, name
    assert reader.get("/api/v1/releases/v1/files/../secret.txt").status_code == 404
    assert reader.get(reverse("releases:file", args=["v9", "items.csv"])).status_code == 404
    assert _client(verifier).get(reverse("releases:file", args=["v1", "items.csv"])).status_code == 403
    assert APIClient().get(reverse("releases:file", args=["v1", "items.csv"])).status_code in (401, 403)


def test_the_release_page_links_every_file(built, client):
    client.force_login(UserFactory(username="reader01", role=Role.RELEASE_READER))
    html = client.get(reverse("release-pages:detail", args=["v1"])).content.decode()
    for name in FILES:
        assert f'href="/api/v1/releases/v1/files/{name}"' in html, name


def test_the_schema_lists_the_files_endpoint(client, staff):
    client.force_login(staff)  # the schema is for signed-in users
    schema = client.get("/api/schema/").content.decode()
    assert "/api/v1/releases/{version}/files/{name}" in schema
