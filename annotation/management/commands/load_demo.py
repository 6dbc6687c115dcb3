"""Fill an empty database with the demo data set and demo accounts (`make demo`).

Idempotent: run it again and nothing is duplicated. The demo data are the bundled
real-format samples (annotation/demo_data): a few sessions of AnnoMI, ESConv and
PersuasionForGood, segmented into contexts, and items from the DialToM authors' release.
Simulated verifiers answer most of the queue so the dashboard has numbers to show; one
batch is left open for you to audit as `verifier`.
"""
import json
import random

from django.core.management.base import BaseCommand
from django.db import transaction

from accounts.models import Role, User
from accounts.services import person_create
from aggregation.services import aggregation_run_create, aggregation_run_execute
from annotation.models import Batch, Context
from references.models import ReferenceSet
from references.services import reference_set_create
from annotation.services import demo_data_load
from verification.services import batch_open, item_claim_next, judgment_submit

DEMO_PASSWORD = "dialtom-demo"
PEOPLE = [
    ("admin", Role.STAFF),
    ("verifier", Role.VERIFIER),
    ("crowd", Role.CROWD_WORKER),
    ("reader", Role.RELEASE_READER),
]
SIMULATED = [("sim-verifier-1", 0.92), ("sim-verifier-2", 0.85), ("sim-verifier-3", 0.75)]
LEFT_OPEN = "dialtom-pfg-prospective-easy"
DEMO_REFERENCES = "demo-references"


def _person(username: str, role: str) -> User:
    user = User.objects.filter(username=username).first()
    if user is None:
        user = person_create(username=username, email=f"{username}@demo.invalid", role=role)
        user.set_password(DEMO_PASSWORD)
        user.save(update_fields=["password"])
    return user


def _simulate(*, verifier: User, accuracy: float, batch: Batch, rng: random.Random) -> int:
    """Answer every item the queue hands this simulated verifier, right with `accuracy`."""
    answered = 0
    while (claim := item_claim_next(verifier=verifier, batch=batch)) is not None:
        intended = claim.item.answer
        if intended in claim.display_order and rng.random() < accuracy:
            choice = "ABCD"[claim.display_order.index(intended)]
        else:
            choice = rng.choice(["A", "B", "C", "D", "NONE"])
        judgment_submit(verifier=verifier, claim_id=claim.pk, choice=choice, idempotency_key=rng.randbytes(16).hex())
        answered += 1
    return answered


class Command(BaseCommand):
    help = "Load the demo data set and demo accounts (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="print one JSON object of what was done, last")

    def handle(self, *args, **options):
        as_json = options["json"]
        data = demo_data_load(stdout=None if as_json else self.stdout)
        people = {username: _person(username, role) for username, role in PEOPLE}
        simulated = [(_person(username, Role.VERIFIER), accuracy) for username, accuracy in SIMULATED]
        rng = random.Random(7)
        answered = 0
        batches = list(Batch.objects.order_by("name"))
        for batch in batches:
            batch_open(name=batch.name, overlap=3, pools=["verifiers"])
            workers = simulated[:1] if batch.name == LEFT_OPEN else simulated
            for verifier, accuracy in workers:
                with transaction.atomic():
                    answered += _simulate(verifier=verifier, accuracy=accuracy, batch=batch, rng=rng)
        if not ReferenceSet.objects.filter(name=DEMO_REFERENCES).exists():
            # Contexts for `crowd` to write reference inferences for (stratified by domain).
            reference_set_create(name=DEMO_REFERENCES, per_context=1, size=min(6, Context.objects.count()), seed=7)
        run = None
        if answered:
            run = aggregation_run_create(batch_ids=[b.pk for b in batches], trigger="command", dispatch=False)
            run = aggregation_run_execute(run_id=run.pk)
        summary = {
            "demo": data,
            "people": sorted(people) + [u.username for u, _ in simulated],
            "password": DEMO_PASSWORD,
            "judgments_simulated": answered,
            "aggregation_run": run.pk if run else None,
            "reference_set": DEMO_REFERENCES,
        }
        if as_json:
            self.stdout.write(json.dumps(summary, default=str))
            return
        self.stdout.write(self.style.SUCCESS(f"Simulated {answered} judgments; aggregation run: {summary['aggregation_run']}"))
        self.stdout.write("Log in at http://127.0.0.1:8000/ with password " + DEMO_PASSWORD + " as:")
        for username, role in PEOPLE:
            self.stdout.write(f"  {username:10} {Role(role).label}")
