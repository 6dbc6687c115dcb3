"""Fill an empty database with a demo that looks like a real project (`make demo`).

Idempotent: run it again and nothing is duplicated. What it builds, from the bundled
real-format samples (demo/demo_data) and `demo_data/history.json`:

- the corpora, segmented, and the DialToM authors' sample items (four batches);
- synthetic retrospective items over the segmented contexts, in three finished (closed)
  batches that 22 simulated verifiers of different quality and speed worked over the last
  four weeks: their judgments come in through the judgments import (one bulk write), then
  are spread over working hours with seconds per item drawn around each one's pace; gold
  items in two of them; `esc-b01` was judged by the three weakest verifiers and is the
  batch the dashboard flags; `sami`, careless and too fast, is the outlier in People;
- the aggregation of those batches, one staff adjudication, release `v1` and two scored
  (simulated) models on the leaderboard;
- the live batches, worked through the real queue (claims, shuffled options, comments):
  the authors' items and `pfg-b02`, six questions a dialogue over a few segmented contexts
  (the batch where the dialogue folds from the second question on). What is left for
  `verifier` is 2 of 3 judgments done; what would collide with it under the context rule
  the simulated verifiers finish (`_finished_by_others`), so `verifier` can answer every
  retrospective question and still has prospective items, and meets the guidelines first;
- flags from across the four weeks, some handled by staff (a day later), the rest open.
"""
import json
import math
import random
import tempfile
from datetime import timedelta
from pathlib import Path

from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from accounts.models import Role, User
from accounts.services import person_create
from aggregation.models import ItemResult
from aggregation.services import aggregation_run_create, aggregation_run_execute, judgments_import
from annotation.models import Attribute, Batch, Context, ContinuationReveal, Item, Task, Variant
from references.models import ReferenceSet
from references.services import reference_set_create
from annotation.services import items_import
from demo.services import DEMO_DATA_DIR, demo_data_load
from releases import services as release_services
from releases.models import Release
from review import services as review_services
from review.item_summaries import item_summaries_flags_refresh
from review.models import Flag, FlagStatus
from scoring import services as scoring_services
from scoring.models import ModelRun
from verification import pair_tallies
from verification.models import Claim, Judgment, QueueSlot
from verification.services import batch_close, batch_open, item_claim_next, items_gold_set, judgment_submit

DEMO_PASSWORD = "dialtom-demo"
PEOPLE = [
    ("admin", Role.STAFF),
    ("verifier", Role.VERIFIER),
    ("crowd", Role.CROWD_WORKER),
    ("reader", Role.RELEASE_READER),
]
DEMO_REFERENCES = "demo-references"
MODELS = [("sim-model-strong", "Simulated model (strong)", 0.74), ("sim-model-weak", "Simulated model (weak)", 0.41)]
NOT_OPTIONS = ["NONE", "MULTIPLE"]


def _history() -> dict:
    return json.loads((DEMO_DATA_DIR / "history.json").read_text(encoding="utf-8"))


def _person(username: str, role: str) -> User:
    user = User.objects.filter(username=username).first()
    if user is None:
        user = person_create(username=username, email=f"{username}@demo.invalid", role=role)
        user.set_password(DEMO_PASSWORD)
        user.save(update_fields=["password"])
    return user


def _history_items(history: dict, rng: random.Random) -> list[dict]:
    """Retrospective items (JSONL records) over the segmented demo contexts, one batch per domain;
    the last few contexts of the live `rows` batch's domain go to it instead."""
    batch_of = {b["domain"]: b["name"] for b in history["batches"]}
    rows = history["live"]["rows"]
    contexts = list(Context.objects.filter(session__isnull=False).select_related("domain").order_by("context_id"))
    in_rows = {c.pk for c in [c for c in contexts if c.domain.code == rows["domain"]][-rows["contexts"]:]}
    records = []
    for context in contexts:
        domain = context.domain
        batch = rows["name"] if context.pk in in_rows else batch_of[domain.code]
        for attribute in Attribute.values:
            fmt = {"role": domain.recipient_role, "other": domain.initiator_role}
            options = [o.format(**fmt) for o in rng.sample(history["options"][attribute], 4)]
            records.append({
                "item_id": f"{context.context_id}-{attribute}", "context_id": context.context_id,
                "task": "retrospective", "attribute": attribute, "target_speaker": "recipient",
                "question": history["questions"][attribute].format(**fmt), "options": options,
                "answer": rng.choice("ABCD"), "variant": "hard", "batch": batch,
            })
    return records


def _answer(claim: Claim, *, accuracy: float, rng: random.Random) -> str:
    """A simulated verifier's choice (displayed letters): right with `accuracy`, else a plausible mistake."""
    intended = claim.item.answer
    if intended in claim.display_order and rng.random() < accuracy:
        return "ABCD"[claim.display_order.index(intended)]
    return rng.choice(["A", "B", "C", "D", "A", "B", "C", "D"] + NOT_OPTIONS)


def _import_history(*, batch: Batch, workers: list[tuple[User, float]], rng: random.Random) -> int:
    """A finished batch's judgments, through the import of judgments gathered elsewhere (one bulk
    write instead of a queue round trip per answer): three workers an item, every worker on gold."""
    rows = ["item_id,worker,label"]
    for item in batch.items.order_by("item_id"):
        for verifier, accuracy in (workers if item.is_gold else rng.sample(workers, 3)):
            if rng.random() < accuracy:
                label = item.answer
            else:
                label = rng.choice([x for x in "ABCD" if x != item.answer] + NOT_OPTIONS)
            rows.append(f"{item.item_id},{verifier.username},{label}")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{batch.name}-judgments.csv"
        path.write_text("\n".join(rows) + "\n", encoding="utf-8")
        return judgments_import(path=path)["created"]


def _simulate(*, batch: Batch, workers: list[tuple[User, float]], rng: random.Random, comments: list[str]) -> int:
    """Workers take turns claiming and answering until the queue has nothing left for any of them."""
    answered, active = 0, list(workers)
    while active:
        rng.shuffle(active)
        for worker in list(active):
            verifier, accuracy = worker
            claim = item_claim_next(verifier=verifier, batch=batch)
            if claim is None:
                active.remove(worker)
                continue
            comment = rng.choice(comments) if rng.random() < 0.12 else ""
            judgment_submit(verifier=verifier, claim_id=claim.pk, choice=_answer(claim, accuracy=accuracy, rng=rng),
                            idempotency_key=rng.randbytes(16).hex(), comment=comment, source="form")
            answered += 1
    return answered


def _finished_by_others(batches: list[Batch]) -> set[int]:
    """The live items the simulated verifiers finish (all k judgments), so that nothing left for
    `verifier` collides with the context rule whatever order they work in: the retrospective items
    of every dialogue that is, or shows the continuation of, a context with profile-bearing items
    in these batches (reading it would withhold them); and, of a context whose prospective items
    come both as hard and as counterfactual ones, one side, turn by turn (a verifier gets one
    profile-bearing item a context: `verifier` gets the other side)."""
    items = Item.objects.filter(batch__in=batches, is_gold=False).order_by()
    profile = items.filter(task=Task.PROSPECTIVE)
    profile_contexts = set(profile.values_list("context_id", flat=True))
    revealing = set(ContinuationReveal.objects.filter(continuation_of_id__in=profile_contexts).order_by()
                    .values_list("dialogue_id", flat=True))
    finished = set(items.filter(task=Task.RETROSPECTIVE, context_id__in=profile_contexts | revealing).values_list("pk", flat=True))
    variants: dict[int, set[str]] = {}
    for context_id, variant in profile.values_list("context_id", "variant"):
        variants.setdefault(context_id, set()).add(variant)
    both = sorted(c for c, v in variants.items() if {Variant.HARD, Variant.COUNTERFACTUAL} <= v)
    for n, context_id in enumerate(both):
        side = Variant.COUNTERFACTUAL if n % 2 == 0 else Variant.HARD
        finished |= set(profile.filter(context_id=context_id, variant=side).values_list("pk", flat=True))
    return finished


def _spread(*, batch: Batch, days_ago: tuple[int, int], pace: dict[int, float], rng: random.Random) -> None:
    """Move a batch's judgments into working hours across `days_ago` (first, last), each taking
    about its verifier's pace in seconds (log-normal), and their claims just before them."""
    now = timezone.now()
    start, end = now - timedelta(days=days_ago[0]), now - timedelta(days=days_ago[1])
    judgments = list(Judgment.objects.filter(batch=batch).order_by("id"))
    claims = []
    for n, judgment in enumerate(judgments):
        day = start + (end - start) * (n / max(len(judgments) - 1, 1))
        if day.weekday() == 6:
            day -= timedelta(days=1)
        moment = day.replace(hour=rng.randint(8, 19), minute=rng.randint(0, 59), second=rng.randint(0, 59))
        if moment > now:
            moment = now - timedelta(minutes=rng.randint(10, 600))
        seconds = max(2.0, rng.lognormvariate(math.log(pace.get(judgment.verifier_id, 35.0)), 0.45))
        judgment.created_at = judgment.updated_at = moment
        judgment.seconds_spent = round(seconds, 1)
        if judgment.claim_id:
            claims.append(Claim(pk=judgment.claim_id, claimed_at=moment - timedelta(seconds=seconds)))
    Judgment.objects.bulk_update(judgments, ["created_at", "updated_at", "seconds_spent"], batch_size=500)
    Claim.objects.bulk_update(claims, ["claimed_at"], batch_size=500)
    pair_tallies.pairs_rebuild(batch_ids=[batch.pk])  # issue 23: seconds moved under the summaries' feet


def _guidelines(batches: list[Batch]) -> None:
    text = (DEMO_DATA_DIR / "guidelines.md").read_text(encoding="utf-8")
    examples = json.loads((DEMO_DATA_DIR / "guideline-examples.json").read_text(encoding="utf-8"))
    for batch in batches:
        if not hasattr(batch, "guideline"):
            review_services.guideline_set(batch_name=batch.name, text=text, examples=examples,
                                          updated_by=User.objects.get(username="admin"))


def _weakest_item(batches: list[Batch]) -> str:
    """The aggregated item with the lowest posterior: the one a reviewer would look at first."""
    result = (ItemResult.objects.filter(batch__in=batches, item__is_gold=False)
              .select_related("item").order_by("posterior", "item__item_id").first())
    return result.item.item_id


def _flags(history: dict, *, admin: User) -> int:
    """Verifiers flag items they answered, in the finished batches and the live ones, a few
    minutes after answering: the flags spread over the four weeks. Staff handled some (a day
    later, as `status` says); the rest wait. The finished batches' judgments came through the
    import, without claims, so their flags are written as `flag_submit` would write them."""
    made = 0
    for spec in history["flags"]:
        judgments = Judgment.objects.filter(batch__name=spec["batch"], item__is_gold=False).order_by("id")
        judgment = judgments.filter(verifier__username=spec["by"]).first() or judgments.exclude(verifier__username="verifier").first()
        if judgment is None:
            continue
        if judgment.claim_id:
            flag = review_services.flag_submit(verifier=judgment.verifier, claim_id=judgment.claim_id,
                                               reason=spec["reason"], comment=spec["comment"])
        else:
            flag = Flag.objects.create(item_id=judgment.item_id, flagged_by=judgment.verifier,
                                       reason=spec["reason"], comment=spec["comment"])
            item_summaries_flags_refresh(item_ids=[judgment.item_id])  # issue 23: as flag_submit does
        made += 1
        if spec["status"] != FlagStatus.OPEN:
            review_services.flag_handle(flag_id=flag.pk, status=spec["status"], staff=admin, note=spec.get("note", ""))
        created = judgment.created_at + timedelta(minutes=2)
        handled = min(created + timedelta(days=1), timezone.now()) if spec["status"] != FlagStatus.OPEN else None
        Flag.objects.filter(pk=flag.pk).update(created_at=created, handled_at=handled)
    return made


def _release() -> Release:
    """Release v1 of the aggregated history (built now, in this process). Staff saw the warning
    about the flagged batch esc-b01 and went on: the release records it."""
    version = "v1"
    if (release_services.release_root() / version).exists():  # the files of an earlier demo: releases are immutable
        version = f"v1-demo-{timezone.now():%Y%m%d%H%M%S}"
    release = release_services.release_create(version=version, trigger="command", build=False, acknowledge_warnings=True)
    return release_services.release_build(release_id=release.pk)


def _models(*, release: Release, items: list[Item], rng: random.Random, admin: User) -> list[str]:
    names = []
    for name, model_name, accuracy in MODELS:
        lines = []
        for item in items:
            wrong = [x for x in "ABCD" if x != item.answer]
            lines.append(json.dumps({"item_id": item.item_id,
                                     "prediction": item.answer if rng.random() < accuracy else rng.choice(wrong)}))
        run = scoring_services.model_run_create(name=name, model_name=model_name, release=release.version,
                                                description="A simulated model of the demo.", lines=lines,
                                                source=f"{name}.jsonl", uploaded_by=admin)
        scoring_services.model_run_score(run_id=run.pk)
        names.append(name)
    return names


class Command(BaseCommand):
    help = "Load the demo data set, its simulated history and the demo accounts (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="print one JSON object of what was done, last")
        parser.add_argument("--url", default="http://127.0.0.1:8000/",
                            help="where the demo will be served, for the line that says where to log in (make demo passes its HOST and PORT)")

    def handle(self, *args, **options):
        as_json = options["json"]
        data = demo_data_load(stdout=None if as_json else self.stdout)
        people = {username: _person(username, role) for username, role in PEOPLE}
        history = _history()
        rng = random.Random(7)
        sims = {name: (_person(name, Role.VERIFIER), accuracy, pace) for name, accuracy, pace in history["verifiers"]}
        pace = {user.pk: seconds for user, _, seconds in sims.values()}
        summary = {"demo": data, "password": DEMO_PASSWORD, "judgments_simulated": 0, "aggregation_run": None,
                   "release": None, "models": [], "flags": 0, "reference_set": DEMO_REFERENCES}

        history_names = [b["name"] for b in history["batches"]]
        if not Batch.objects.filter(name__in=history_names).exists():
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "history-items.jsonl"
                path.write_text("".join(json.dumps(r) + "\n" for r in _history_items(history, rng)), encoding="utf-8")
                items_import(path=path)
        for spec in history["batches"]:
            batch = Batch.objects.get(name=spec["name"])
            if batch.judgments.exists():
                continue
            if spec["gold"]:
                ids = list(batch.items.order_by("item_id").values_list("item_id", flat=True)[: spec["gold"]])
                items_gold_set(item_ids=ids, is_gold=True)
            batch_open(name=batch.name, overlap=3, pools=["verifiers"], gold_rate=0.1 if spec["gold"] else 0.0)
            workers = [(sims[w][0], sims[w][1] * (1 - spec.get("noise", 0.0))) for w in spec["workers"]]
            with transaction.atomic():
                summary["judgments_simulated"] += _import_history(batch=batch, workers=workers, rng=rng)
                _spread(batch=batch, days_ago=tuple(spec["days_ago"]), pace=pace, rng=rng)
            batch_close(name=batch.name)  # finished work is closed: it leaves the verifiers' lists

        history_batches = list(Batch.objects.filter(name__in=history_names).order_by("name"))
        live_batches = list(Batch.objects.exclude(name__in=history_names).order_by("name"))  # the authors' items
        _guidelines(history_batches + live_batches)
        admin = people["admin"]
        if summary["judgments_simulated"]:
            run = aggregation_run_create(batch_ids=[b.pk for b in history_batches], trigger="command", dispatch=False)
            summary["aggregation_run"] = aggregation_run_execute(run_id=run.pk).pk
            review_services.adjudication_record(
                item_id=_weakest_item(history_batches), decision="drop", staff=admin,
                reason="Options B and C describe the same state; the verifiers split between them.")
        if not Release.objects.exists():
            summary["release"] = _release().version
        release = Release.objects.filter(status="ready").order_by("created_at").first()
        if release is not None and not ModelRun.objects.exists():
            items = list(Item.objects.filter(batch__in=history_batches, is_gold=False).order_by("item_id"))
            summary["models"] = _models(release=release, items=items, rng=rng, admin=admin)

        live = history["live"]
        finished = _finished_by_others(live_batches)
        for batch in live_batches:
            # Half done: the items left for `verifier` have `judgments_per_item` of their 3, the
            # ones that would collide with it all 3. Worked at those k, then set back to k=3 in
            # the same transaction, so the completion check that runs after the commit finds the
            # batch still open (no aggregation yet).
            if batch.judgments.exists():
                batch_open(name=batch.name, overlap=3, pools=["verifiers"])
                continue
            workers = [(sims[w][0], sims[w][1]) for w in live["workers"]]
            with transaction.atomic():
                batch, _ = batch_open(name=batch.name, overlap=live["judgments_per_item"], pools=["verifiers"])
                QueueSlot.objects.filter(batch=batch, item_id__in=finished).update(needed=3)  # the simulation's own k per item
                summary["judgments_simulated"] += _simulate(batch=batch, workers=workers, rng=rng, comments=history["comments"])
                batch_open(name=batch.name, overlap=3)
                _spread(batch=batch, days_ago=tuple(live["days_ago"]), pace=pace, rng=rng)

        if not Flag.objects.exists():
            summary["flags"] = _flags(history, admin=admin)
        if not ReferenceSet.objects.filter(name=DEMO_REFERENCES).exists():
            # Contexts for `crowd` to write reference inferences for (stratified by domain).
            reference_set_create(name=DEMO_REFERENCES, per_context=1, size=min(6, Context.objects.count()), seed=7)
        # --- issue 23: the staff pages' summaries, recounted (the history above is written around the services)
        from dashboard.summaries import summaries_rebuild  # noqa: PLC0415

        summaries_rebuild()
        # --- end issue 23
        summary["people"] = sorted(people) + sorted(sims)
        if as_json:
            self.stdout.write(json.dumps(summary, default=str))
            return
        self.stdout.write(self.style.SUCCESS(
            f"Simulated {summary['judgments_simulated']} judgments by {len(sims)} verifiers; "
            f"aggregation run: {summary['aggregation_run']}; release: {summary['release']}"))
        self.stdout.write(f"Log in at {options['url']} with password {DEMO_PASSWORD} as:")
        for username, role in PEOPLE:
            self.stdout.write(f"  {username:10} {Role(role).label}")
