"""BLEU / ROUGE-L between uploaded model inferences and the accepted references."""
import json
import time
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from references import services, similarity
from references.models import SimilarityRun, SimilarityRunStatus, SimilarityScore
from tests.factories import CrowdWorkerFactory, StaffFactory

from .conftest import GOOD_TEXTS, make_contexts, make_set, submit

# Two contexts, "belief" only, checked by hand:
#   ctx0 hypothesis "the client wants to drink less" (6 tokens)
#        references "the client wants to stop drinking" (6) and "she trusts the counselor" (4)
#   ctx1 hypothesis = its only reference, "he is afraid of being judged" (6)
# Clipped n-gram matches over the corpus (best reference count per n-gram):
#   1-grams 4/6 + 6/6 = 10/12; 2-grams 3/5 + 5/5 = 8/10; 3-grams 2/4 + 4/4 = 6/8; 4-grams 1/3 + 3/3 = 4/6
#   precision product 10/12 · 8/10 · 6/8 · 4/6 = 1/3; BLEU = 100 · (1/3)^(1/4) = 75.98 (lengths 12 = 12, no penalty)
# ROUGE-L (stemmed): ctx0 LCS "the client want to drink" = 5 of 6 and 6 → F 5/6 (the other reference is worse);
#   ctx1 F = 1; mean = (5/6 + 1) / 2 = 0.916667
HAND_BLEU = 75.98
HAND_ROUGE_L = 0.916667
REFS = {
    ("c0", "belief"): ["the client wants to stop drinking", "she trusts the counselor"],
    ("c1", "belief"): ["he is afraid of being judged"],
}
INFERENCES = [
    {"context_id": "c0", "attribute": "belief", "text": "the client wants to drink less"},
    {"context_id": "c1", "attribute": "belief", "text": "he is afraid of being judged"},
    {"context_id": "c2", "attribute": "belief", "text": "nothing to compare with"},
]


def test_scores_match_the_hand_computed_values():
    rows = {r["attribute"]: r for r in similarity.similarity_scores(inferences=INFERENCES, references=REFS)}
    assert set(rows) == {"belief", "all"}
    assert rows["belief"]["bleu"] == pytest.approx(HAND_BLEU, abs=0.01)
    assert rows["belief"]["rouge_l"] == pytest.approx(HAND_ROUGE_L, abs=1e-5)
    assert rows["belief"]["n_contexts"] == 2 and rows["belief"]["n_references"] == 3 and rows["belief"]["n_skipped"] == 1
    assert rows["all"]["bleu"] == rows["belief"]["bleu"]


def test_inference_file_errors_name_file_line_and_field(db):
    make_contexts(1)
    lines = [
        '{"context_id": "mi-s0000-w00", "attribute": "Beliefs", "text": "ok"}',
        "not json",
        '{"context_id": "mi-s0000-w00", "attribute": "mood", "text": "x"}',
        '{"context_id": "unknown", "attribute": "trust", "text": "x"}',
        '{"context_id": "mi-s0000-w00", "attribute": "belief", "text": "again"}',
        '{"context_id": "mi-s0000-w00", "attribute": "desire", "text": " "}',
    ]
    with pytest.raises(services.InputFormatError) as err:
        similarity.inferences_parse(lines=lines, filename="model.jsonl")
    assert err.value.messages == [
        "model.jsonl:2: json: invalid JSON (Expecting value, column 1)",
        "model.jsonl:3: attribute: 'mood' is not one of belief, desire, intention, emotion, knowledge, trust",
        "model.jsonl:4: context_id: unknown context 'unknown'",
        "model.jsonl:5: context_id: mi-s0000-w00 / belief repeats line 1",
        "model.jsonl:6: text: missing or empty",
    ]


def test_api_refuses_bad_uploads_with_reasons(client, staff, db):
    client.force_login(staff)
    upload = SimpleUploadedFile("m.jsonl", b'{"context_id": "x", "attribute": "belief", "text": "t"}\n')
    response = client.post("/api/v1/similarity-runs/", {"file": upload})
    assert response.status_code == 400
    assert response.json() == {"errors": ["m.jsonl:1: context_id: unknown context 'x'"]}
    assert not SimilarityRun.objects.exists()


def wait_for(run_id, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = SimilarityRun.objects.get(pk=run_id)
        if run.status in (SimilarityRunStatus.DONE, SimilarityRunStatus.FAILED):
            return run
        time.sleep(0.1)
    raise AssertionError(f"similarity run {run_id} still {run.status} after {timeout}s")


@pytest.mark.celery
def test_similarity_job_runs_in_the_real_worker(celery_worker, client):
    # Given accepted references for two contexts (three workers, each with their own belief text)
    c0, c1 = make_contexts(2, "esc")
    reference_set = make_set(contexts=[c0, c1], per_context=2, name="sim")
    staff = StaffFactory(username="admin01")
    beliefs = {
        (c0.context_id, "w1"): "the client wants to stop drinking",
        (c0.context_id, "w2"): "she trusts the counselor but not the doctor",
        (c1.context_id, "w1"): "he is afraid of being judged",
    }
    for name in ("w1", "w2"):
        worker = CrowdWorkerFactory(username=name)
        while (a := services.reference_assignment_claim_next(worker=worker, reference_set_id=reference_set.pk)) is not None:
            text = beliefs.get((a.member.context.context_id, name))
            if text is None:
                services.reference_submit(worker=worker, assignment_id=a.pk, texts=GOOD_TEXTS, idempotency_key=uuid.uuid4())
                continue  # submitted, not accepted: must not count
            submit(worker, a, texts=dict(GOOD_TEXTS, belief=text))
            services.reference_accept(reviewer=staff, assignment_id=a.pk)
    # the second reference of c0 is 8 tokens: LCS with the hypothesis is "the" → worse than the first, as above

    # When staff upload the model's inferences through the API
    client.force_login(staff)
    body = "\n".join(json.dumps(r) for r in [
        {"context_id": c0.context_id, "attribute": "belief", "text": "the client wants to drink less"},
        {"context_id": c1.context_id, "attribute": "belief", "text": "he is afraid of being judged"},
    ])
    response = client.post(
        "/api/v1/similarity-runs/",
        {"name": "model-x", "reference_set": "sim", "file": SimpleUploadedFile("x.jsonl", body.encode())},
    )
    assert response.status_code == 202, response.content
    run = wait_for(response.json()["id"])

    # Then the worker has stored BLEU and ROUGE-L per attribute, as checked by hand
    assert run.status == SimilarityRunStatus.DONE, run.error
    belief = SimilarityScore.objects.get(run=run, attribute="belief")
    assert belief.rouge_l == pytest.approx(HAND_ROUGE_L, abs=1e-5)
    assert belief.bleu == pytest.approx(HAND_BLEU, abs=0.01)
    detail = client.get(f"/api/v1/similarity-runs/{run.pk}/").json()
    assert detail["status"] == "done" and [s["attribute"] for s in detail["scores"]] == ["belief", "all"]
    page = client.get(f"/annotate/similarity/{run.pk}/").content.decode()
    assert "75.98" in page and "0.917" in page

    # Running the job again changes nothing
    similarity.similarity_run_compute(run_id=run.pk)
    assert SimilarityScore.objects.filter(run=run).count() == 2
