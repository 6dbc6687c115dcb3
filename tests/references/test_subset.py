import json

import pytest
from django.core.management import CommandError, call_command

from references import services
from references.models import ReferenceSet, ReferenceSetContext

from .conftest import make_contexts


@pytest.fixture
def corpus(db):
    return make_contexts(10, "mi") + make_contexts(6, "esc") + make_contexts(4, "pfg")


def domains_of(reference_set):
    out = {}
    for code in reference_set.members.values_list("context__domain_id", flat=True):
        out[code] = out.get(code, 0) + 1
    return out


def test_stratified_sample_is_proportional_and_seeded(corpus):
    a = services.reference_set_create(name="a", size=10, per_context=3, seed=7)
    b = services.reference_set_create(name="b", size=10, per_context=3, seed=7)
    c = services.reference_set_create(name="c", size=10, per_context=3, seed=8)

    assert domains_of(a) == {"mi": 5, "esc": 3, "pfg": 2}
    order = lambda s: list(s.members.order_by("position").values_list("context__context_id", flat=True))  # noqa: E731
    assert order(a) == order(b)
    assert order(a) != order(c)
    assert a.source == ReferenceSet.Source.STRATIFIED and a.seed == 7


def test_sample_larger_than_corpus_is_refused(corpus):
    with pytest.raises(services.ReferenceWorkflowError, match="only 20 exist"):
        services.reference_set_create(name="big", size=21, per_context=3)


def test_command_with_json_prints_what_it_did(corpus, capsys):
    call_command("reference_subset", "--size", "5", "--per-context", "3", "--seed", "7", "--name", "main", "--json")
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["contexts"] == 5 and result["per_context"] == 3 and result["units"] == 30
    assert result["references_needed"] == 90 and result["attributes_per_worker"] == 6
    assert sum(result["by_domain"].values()) == 5
    assert ReferenceSetContext.objects.filter(reference_set__name="main").count() == 5


def test_command_with_ids_file(corpus, tmp_path, capsys):
    ids = tmp_path / "ids.txt"
    ids.write_text("# chosen by hand\nesc-s0001-w00\n\nmi-s0003-w00\n")
    call_command("reference_subset", "--ids", str(ids), "--per-context", "2", "--name", "hand",
                 "--attributes", "trust,Belief", "--attributes-per-worker", "1", "--json")
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result == {
        "reference_set": "hand", "source": "ids", "seed": None, "contexts": 2, "attributes": ["belief", "trust"],
        "per_context": 2, "attributes_per_worker": 1, "units": 4, "references_needed": 8, "by_domain": {"esc": 1, "mi": 1},
    }
    assert {tuple(a) for a in ReferenceSetContext.objects.values_list("attributes", flat=True)} == {("belief", "trust")}
    assert list(ReferenceSet.objects.get(name="hand").members.values_list("context__context_id", flat=True)) == [
        "esc-s0001-w00", "mi-s0003-w00",
    ]


def test_command_reports_bad_ids_by_file_and_line(corpus, tmp_path):
    ids = tmp_path / "ids.txt"
    ids.write_text("mi-s0001-w00\nnope-w01\nmi-s0001-w00\n")
    with pytest.raises(CommandError) as err:
        call_command("reference_subset", "--ids", str(ids), "--name", "bad")
    assert f"{ids}:2: context_id: unknown context 'nope-w01'" in str(err.value)
    assert f"{ids}:3: context_id: 'mi-s0001-w00' repeats line 1" in str(err.value)
    assert not ReferenceSet.objects.exists()


def test_staff_page_creates_a_set_from_an_uploaded_list(corpus, client, staff):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(staff)
    upload = SimpleUploadedFile("ids.txt", b"pfg-s0000-w00\npfg-s0001-w00\n")
    response = client.post(
        "/annotate/references/",
        {"name": "from-list", "size": "300", "per_context": "3", "seed": "7", "target_speaker": "recipient",
         "min_chars": "20", "ids_file": upload},
    )
    assert response.status_code == 302
    assert ReferenceSet.objects.get(name="from-list").members.count() == 2

    bad = SimpleUploadedFile("ids.txt", b"unknown-ctx\n")
    response = client.post("/annotate/references/", {"name": "bad", "per_context": "3", "ids_file": bad})
    assert response.status_code == 400
    assert "ids.txt:1: context_id: unknown context" in response.content.decode()


def test_set_pages_are_staff_only(corpus, client, workers):
    client.force_login(workers[0])
    assert client.get("/annotate/references/").status_code == 403
    assert client.get("/annotate/similarity/").status_code == 403
