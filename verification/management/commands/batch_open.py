from verification.models import AdaptiveOverlap
from verification.queue import batch_staffing
from verification.services import batch_open

from ._base import JsonCommand


class Command(JsonCommand):
    help = ("Open (or reopen) a batch of imported items to pools of verifiers: batch_open NAME --overlap K --pool verifiers;"
            " an unknown NAME is refused unless --create")

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--overlap", type=int, help="judgments needed per item (k)")
        parser.add_argument("--k-min", type=int, help="adaptive overlap: judgments every item gets first")
        parser.add_argument("--k-max", type=int, help="adaptive overlap: at most this many, while the model is unsure")
        parser.add_argument("--pool", action="append", default=[], help="a pool to open it to (repeatable)")
        parser.add_argument("--lease-minutes", type=int)
        parser.add_argument("--gold-rate", type=float, help="share of gold items mixed into queues (0–1)")
        parser.add_argument("--create", action="store_true", help="create the batch if no batch has this name (empty until items name it)")
        super().add_arguments(parser)

    def run(self, **o):
        batch, created = batch_open(
            name=o["name"], overlap=o["overlap"], pools=o["pool"], lease_minutes=o["lease_minutes"], gold_rate=o["gold_rate"],
            k_min=o["k_min"], k_max=o["k_max"], create=o["create"],
        )
        adaptive = AdaptiveOverlap.objects.filter(batch=batch).first()
        result = {
            "batch": batch.name,
            "created": created,
            "status": batch.status,
            "overlap": batch.overlap,
            "adaptive_overlap": None if adaptive is None else adaptive.policy,
            "lease_minutes": batch.lease_minutes,
            "gold_rate": batch.gold_rate,
            "pools": sorted(batch.pools.values_list("name", flat=True)),
            "items": batch.items.count(),
            **batch_staffing(batch_ids=[batch.pk])[batch.pk].as_dict(),
        }
        return result

    def summary(self, report):
        policy = report["adaptive_overlap"]
        k = f"k={policy['k_min']}..{policy['k_max']} (adaptive)" if policy else f"k={report['overlap']}"
        yield f"batch {report['batch']} open to {', '.join(report['pools']) or 'no pool'}: {k}, {report['items']} items"
        yield (
            f"needs {report['verifiers_needed']} verifiers (per context: its retrospective items, and each"
            f" profile-bearing item, go to different people); its pools hold {report['verifiers_available']}"
        )
        if report["short"]:
            yield (
                "SHORT of verifiers: once a verifier has nothing left under the context rule, the queue falls"
                " back to least exposure and marks those judgments exposed"
            )
