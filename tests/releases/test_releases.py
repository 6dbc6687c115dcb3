import hashlib
import io
import json

import pandas as pd
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from accounts.models import Role
from releases import services
from releases.models import Release, ReleaseStatus
from tests.factories import StaffFactory, UserFactory

pytestmark = pytest.mark.django_db

RETAINED = ["esc-desire", "esc-prospective-1", "mi-belief", "mi-trust"]


def build(version="v1"):
    release = services.release_create(version=version, build=False)
    return services.release_build(release_id=release.id)


def api_client(user=None):
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def reader():
    return UserFactory(username="reader01", role=Role.RELEASE_READER)


def test_release_writes_retained_items_and_manifest(world, release_root):
    release = build()
    assert release.status == ReleaseStatus.READY and release.n_items == 4
    folder = release_root / "v1"
    lines = [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]
    assert [r["item_id"] for r in lines] == RETAINED
    trust = lines[3]
    assert trust["answer"] == "C" and trust["domain"] == "mi" and trust["task"] == "retrospective"
    assert trust["batch"] == "batch-a" and trust["n_judgments"] == 3 and trust["ds_posterior"] == 0.95
    assert trust["agreement"] == 0.91 and trust["release"] == "v1"
    assert trust["context"][0] == {"speaker": "initiator", "role": "counselor", "text": "So what brings you here today?"}
    assert "profile" not in trust
    prospective = lines[1]
    assert prospective["profile"]["trust"] == "trust of the client"
    # a prospective row keeps what the continuation follows, and its options turn by turn
    assert prospective["context"][0] == {"speaker": "initiator", "role": "supporter", "text": "How are you feeling today?"}
    assert prospective["continuations"] == [[{"speaker": "", "role": "", "text": o}] for o in prospective["options"]]
    assert "continuations" not in trust and trust["retained_by_authors"] is False
    assert prospective["attribute"] == "trust"  # the state its distractors were made for

    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest == release.manifest
    assert manifest["items"] == 4
    assert manifest["counts"]["task"] == {"prospective": 1, "retrospective": 3}
    assert manifest["counts"]["domain"] == {"esc": 2, "mi": 2}
    assert manifest["counts"]["attribute"] == {"belief": 1, "desire": 1, "trust": 2}
    assert manifest["retention"]["overall"]["retained"] == 4 and manifest["retention"]["overall"]["total"] == 6
    [agreement] = manifest["agreement"]
    assert agreement["batch"] == "batch-a" and agreement["ac1"] == 0.91 and agreement["ac1_ci"] == [0.85, 0.97]
    assert manifest["aggregation"]["runs"][0]["id"] == world.run2.id
    assert manifest["aggregation"]["runs"][0]["settings"] == {"threshold": 0.5, "method": "ds"}
    # Accepted crowd references only: crowd-1's six, not crowd-2's (submitted, not accepted).
    references = [json.loads(line) for line in (folder / "references.jsonl").read_text().splitlines()]
    assert manifest["references"] == 6 == len(references) and manifest["files"]["references.jsonl"]["rows"] == 6
    assert references[0] == {"context_id": "mi-s0001-w00", "worker": "crowd-1", "attribute": "belief",
                             "text": "crowd-1 thinks the client's belief is mixed"}
    for name in ("items.jsonl", "items.csv", "items.parquet"):
        assert manifest["files"][name]["sha256"] == hashlib.sha256((folder / name).read_bytes()).hexdigest()
        assert manifest["files"][name]["rows"] == 4


def test_jsonl_loads_with_datasets_and_parquet_with_pandas(world, release_root, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")  # a local file: never the network
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    build()
    folder = release_root / "v1"
    ds = datasets.load_dataset("json", data_files=str(folder / "items.jsonl"), cache_dir=str(tmp_path / "hf"))["train"]
    assert ds.num_rows == 4 and ds["item_id"] == RETAINED
    assert ds[3]["context"][1]["role"] == "client"
    frame = pd.read_parquet(folder / "items.parquet")
    assert list(frame["item_id"]) == RETAINED
    assert json.loads(frame.loc[3, "options"])[2].startswith("Option C")
    csv_frame = pd.read_csv(folder / "items.csv")
    assert list(csv_frame.columns) == list(frame.columns) and list(csv_frame["item_id"]) == RETAINED


def test_versions_are_immutable_and_validated(world):
    build("v1")
    with pytest.raises(Exception, match="already exists"):
        services.release_create(version="v1", build=False)
    with pytest.raises(Exception, match="letters"):
        services.release_create(version="../etc", build=False)
    assert services.release_create(build=False).version == "v2"
    # Building a ready release again changes nothing.
    before = Release.objects.get(version="v1").manifest
    assert services.release_build(release_id=Release.objects.get(version="v1").id).manifest == before


def test_make_release_json(world, release_root, capsys):
    call_command("make_release", "--version", "2026.1", "--json")
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["version"] == "2026.1" and result["status"] == "ready" and result["items"] == 4
    jsonl = result["files"]["items.jsonl"]
    assert jsonl["path"] == str(release_root / "2026.1" / "items.jsonl")
    assert jsonl["sha256"] == hashlib.sha256(open(jsonl["path"], "rb").read()).hexdigest()
    assert set(result["files"]) == {
        "items.jsonl", "items.csv", "items.parquet", "results.csv", "judgments.csv", "references.jsonl", "manifest.json",
        "report.json", "report.tex",
    }
    with pytest.raises(CommandError, match="--version"):
        call_command("make_release", "--version", "2026.1")


def _download(client, url, **headers):
    response = client.get(url, **headers)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return response, body


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_downloads_are_byte_identical_with_etag(world, release_root, fmt):
    release = build()
    client = api_client(reader())
    url = f"/api/v1/releases/v1/items?format={fmt}"
    first, body1 = _download(client, url)
    second, body2 = _download(client, url)
    assert first.status_code == 200 and body1 == body2
    name = f"items.{fmt}"
    assert body1 == (release_root / "v1" / name).read_bytes()
    assert first["ETag"] == f'"{release.files[name]["sha256"]}"' == f'"{hashlib.sha256(body1).hexdigest()}"'
    not_modified, _ = _download(client, url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert not_modified.status_code == 304


def test_filters(world):
    build()
    client = api_client(StaffFactory())
    response, body = _download(client, "/api/v1/releases/v1/items?format=jsonl&domain=mi")
    assert [json.loads(x)["item_id"] for x in body.splitlines()] == ["mi-belief", "mi-trust"]
    response, body = _download(client, "/api/v1/releases/v1/items?task=prospective")
    assert [json.loads(x)["item_id"] for x in body.splitlines()] == ["esc-prospective-1"]
    _, body = _download(client, "/api/v1/releases/v1/items?format=csv&attribute=desire&variant=easy")
    lines = body.decode().splitlines()
    assert lines[0].startswith("release,item_id") and len(lines) == 2 and ",esc-desire," in lines[1]
    _, body = _download(client, "/api/v1/releases/v1/items?format=parquet&domain=esc&task=retrospective")
    assert list(pd.read_parquet(io.BytesIO(body))["item_id"]) == ["esc-desire"]
    # A filtered download is a stable subset of the full file, with its own ETag.
    r1, b1 = _download(client, "/api/v1/releases/v1/items?domain=mi")
    r2, b2 = _download(client, "/api/v1/releases/v1/items?domain=mi")
    assert b1 == b2 and r1["ETag"] == r2["ETag"]
    full = (services.release_root() / "v1" / "items.jsonl").read_bytes()
    assert all(line in full.splitlines() for line in b1.splitlines())
    assert _download(client, "/api/v1/releases/v1/items?domain=mi", HTTP_IF_NONE_MATCH=r1["ETag"])[0].status_code == 304
    assert client.get("/api/v1/releases/v1/items?domain=xx").status_code == 400
    assert client.get("/api/v1/releases/v1/items?format=xlsx").status_code == 400
    assert client.get("/api/v1/releases/nope/items").status_code == 404


def test_list_and_manifest(world):
    build()
    client = api_client(reader())
    listing = client.get("/api/v1/releases/").json()
    assert listing[0]["version"] == "v1" and listing[0]["status"] == "ready" and listing[0]["n_items"] == 4
    assert "sha256" in listing[0]["files"]["items.jsonl"]
    manifest = client.get("/api/v1/releases/v1/").json()
    assert manifest["items"] == 4 and manifest["counts"]["domain"] == {"esc": 2, "mi": 2}


def test_access_control(world, verifier):
    build()
    anonymous = APIClient()
    for url in ("/api/v1/releases/", "/api/v1/releases/v1/", "/api/v1/releases/v1/items"):
        assert anonymous.get(url).status_code == 401
        assert api_client(verifier).get(url).status_code == 403
    # Readers read; only staff create.
    assert api_client(reader()).post("/api/v1/releases/", {"version": "v9"}).status_code == 403
    assert api_client(verifier).post("/api/v1/releases/", {"version": "v9"}).status_code == 403


def test_staff_creates_a_release_through_the_api(world, django_capture_on_commit_callbacks):
    client = api_client(StaffFactory())
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post("/api/v1/releases/", {"version": "api-1"}, format="json")
    assert response.status_code == 202 and response.json()["status"] == "waiting"  # handed over on commit
    assert len(callbacks) == 1  # the build is queued after commit
    assert client.post("/api/v1/releases/", {"version": "api-1"}, format="json").status_code == 400


def test_schema_lists_the_release_endpoints(client, staff):
    client.force_login(staff)  # the schema is for signed-in users (issue 20)
    response = client.get(reverse("api-schema"))
    body = response.content.decode()
    assert "/api/v1/releases/{version}/items" in body and "parquet" in body


def test_schema_validates_without_warnings():
    out = io.StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    assert "/api/v1/releases/{version}/items" in out.getvalue()


def test_make_release_async_queues_the_build(world, capsys, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        call_command("make_release", "--async", "--json")
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["version"] == "v1" and result["status"] == "waiting" and result["files"] == {}
    assert len(callbacks) == 1


def test_manifest_says_how_each_batch_was_allocated(world, release_root):
    from verification.models import AdaptiveOverlap

    AdaptiveOverlap.objects.create(batch=world.batch_a, k_min=2, k_max=5, policy={"k_min": 2, "k_max": 5, "max_risk": 0.03},
                                   rounds=3, settled=True)
    manifest = build().manifest
    assert manifest["overlap"] == [
        {"batch": "batch-a", "mode": "adaptive", "k_min": 2, "k_max": 5, "rounds": 3, "settled": True,
         "policy": {"k_min": 2, "k_max": 5, "max_risk": 0.03}},
    ]
    world.batch_a.adaptive_overlap.delete()
    assert build("v2").manifest["overlap"] == [{"batch": "batch-a", "mode": "fixed", "k": 3}]


def test_released_prospective_row_from_the_authors_files_keeps_state_key_and_turns():
    from releases.export import release_record

    # a row as releases.selectors gives it, for an item imported from the authors' pool
    row = {"item__item_id": "mi-s0000-w00-prospective-belief", "item__context__context_id": "mi-s0000-w00",
           "item__context__domain_id": "mi", "item__task": "prospective", "item__attribute": "belief",
           "item__variant": "hard", "item__target_speaker": "recipient", "item__question": "q",
           "item__options": ["counselor: Hi.\nclient: Hello.", "Well, then.\n counselor: Go on.", "c", "d"],
           "item__context__turns": [{"speaker": "recipient", "text": "I drink.", "source_role": "client"}],
           "item__profile": {"belief": "b"}, "item__metadata__state": "Belief", "item__metadata__key": "0, 0",
           "item__retained_by_authors": True, "batch_id": 1, "batch__name": "dialtom-mi-data-0-50", "label": "A",
           "posterior": 0.9, "mv_label": "A", "n_judgments": 3}
    record = release_record(row, version="v1", roles={"mi": {"initiator": "counselor", "recipient": "client"}},
                            agreement={})
    assert (record["state"], record["source_key"], record["retained_by_authors"]) == ("Belief", "0, 0", True)
    assert record["context"] == [{"speaker": "recipient", "role": "client", "text": "I drink."}]
    assert record["continuations"][0] == [{"speaker": "initiator", "role": "counselor", "text": "Hi."},
                                          {"speaker": "recipient", "role": "client", "text": "Hello."}]
    assert record["continuations"][1] == [{"speaker": "", "role": "", "text": "Well, then."},
                                          {"speaker": "initiator", "role": "counselor", "text": "Go on."}]


def test_release_csv_cells_stay_byte_for_byte_the_data():
    """Issue 12, break 10, decided: release files are data for programs (the CSV holds the
    JSONL's values exactly), so they are not neutralised for spreadsheets as the dashboard's are."""
    from releases.export import CsvLines

    assert CsvLines().line(["=1+1", "-2", "@x", "+y", "plain"]) == b"=1+1,-2,@x,+y,plain\n"


def test_a_carriage_return_in_a_release_text_is_quoted():
    """Python's csv writer left a lone \\r unquoted (readers see a line break there)."""
    import csv
    import io

    from releases.export import CsvLines

    line = CsvLines().line(["a\rb", 7])
    assert list(csv.reader(io.StringIO(line.decode(), newline=""))) == [["a\rb", "7"]]


def test_a_build_removes_what_killed_builds_left_but_not_a_live_build_s_folder(world, release_root):
    # Given the folders of two killed builds (this release's, and one of a release nobody builds)
    # and that of a release another worker is building right now
    release_root.mkdir(parents=True)
    Release.objects.create(version="v7", status=ReleaseStatus.BUILDING)
    for name in (".tmp-v1-0a1b2c3d", ".tmp-v9-x-5e6f7a8b", ".tmp-v7-11223344"):
        (release_root / name).mkdir()
        (release_root / name / "items.csv").write_text("half written")

    # When v1 is built
    release = build("v1")

    # Then only the live build's folder is left beside the release
    assert release.status == ReleaseStatus.READY
    assert sorted(p.name for p in release_root.iterdir()) == [".tmp-v7-11223344", "v1"]
