from verification.services import batch_open

from ._base import JsonCommand


class Command(JsonCommand):
    help = "Open (create or reopen) a batch to pools of verifiers: batch_open NAME --overlap K --pool verifiers"

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--overlap", type=int, help="judgments needed per item (k)")
        parser.add_argument("--pool", action="append", default=[], help="a pool to open it to (repeatable)")
        parser.add_argument("--lease-minutes", type=int)
        parser.add_argument("--gold-rate", type=float, help="share of gold items mixed into queues (0–1)")
        super().add_arguments(parser)

    def run(self, **o):
        batch, created = batch_open(
            name=o["name"], overlap=o["overlap"], pools=o["pool"], lease_minutes=o["lease_minutes"], gold_rate=o["gold_rate"]
        )
        result = {
            "batch": batch.name,
            "created": created,
            "status": batch.status,
            "overlap": batch.overlap,
            "lease_minutes": batch.lease_minutes,
            "gold_rate": batch.gold_rate,
            "pools": sorted(batch.pools.values_list("name", flat=True)),
            "items": batch.items.count(),
        }
        return result

    def summary(self, report):
        yield f"batch {report['batch']} open to {', '.join(report['pools']) or 'no pool'}: k={report['overlap']}, {report['items']} items"
