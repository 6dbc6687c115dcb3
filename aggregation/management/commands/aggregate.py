"""python manage.py aggregate (--all | --batch NAME ... | --due) [--sync] [--json]."""
import time

from django.core.management.base import CommandError

from aggregation import selectors, services
from aggregation.models import RunStatus
from annotation.models import Batch
from dialtom_site.commands import ReportCommand


class Command(ReportCommand):
    help = (
        "Aggregate batches (Dawid–Skene per batch, agreement, retention). Without --sync the run goes to "
        "Celery (a group of one task per batch and a chord callback) and the command waits for it."
    )

    def add_arguments(self, parser):
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--all", action="store_true", help="every batch that holds judgments")
        target.add_argument("--batch", action="append", metavar="NAME", help="a batch by name (repeatable)")
        target.add_argument(
            "--due", action="store_true", help="queue the automatic run of every complete batch that has none (the beat sweep)"
        )
        parser.add_argument("--sync", action="store_true", help="run in this process instead of Celery")
        parser.add_argument("--no-wait", action="store_true", help="queue the run and return at once")
        parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait for a queued run")
        super().add_arguments(parser)

    def run(self, **options):
        if options["due"]:
            return {"runs_started": services.batches_aggregate_due()}
        if options["all"]:
            batch_ids = selectors.batch_ids_audited()
            if not batch_ids:
                raise CommandError("no batch has judgments yet: nothing to aggregate")
        else:
            names = options["batch"]
            found = dict(Batch.objects.filter(name__in=names).values_list("name", "pk"))
            unknown = [n for n in names if n not in found]
            if unknown:
                raise CommandError(f"batch: unknown batch {', '.join(unknown)}")
            batch_ids = [found[n] for n in names]

        sync = options["sync"]
        run = services.aggregation_run_create(batch_ids=batch_ids, trigger="command", dispatch=not sync)
        if sync:
            try:
                run = services.aggregation_run_execute(run_id=run.pk)
            except Exception as exc:
                raise CommandError(f"run {run.pk} failed: {exc!r}") from exc
        elif options["no_wait"] or self._waits(run):
            run.refresh_from_db()
            return {"run": run.pk, "status": run.status, "batches": len(batch_ids)}
        else:
            deadline = time.monotonic() + options["timeout"]
            while True:
                run.refresh_from_db()
                if run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
                    break
                if time.monotonic() > deadline:
                    raise CommandError(f"run {run.pk} still {run.status} after {options['timeout']}s")
                time.sleep(0.2)
            if run.status == RunStatus.FAILED:
                raise CommandError(f"run {run.pk} failed: {run.error}")

        return selectors.run_summary(run=run)

    @staticmethod
    def _waits(run) -> bool:
        """The broker was down: the run waits for the jobs sweep; do not wait for it here."""
        run.refresh_from_db()
        return run.status == RunStatus.WAITING

    def summary(self, report):
        if "runs_started" in report:
            yield f"{len(report['runs_started'])} run(s) started: {report['runs_started']}"
            return
        if "totals" not in report:  # --no-wait, or the broker is down: queued, not done
            if report["status"] == RunStatus.WAITING:
                yield f"run {report['run']} waits for the broker ({report['batches']} batches): the jobs sweep queues it"
            else:
                yield f"run {report['run']} queued ({report['batches']} batches)"
            return
        for b in report["batches"]:
            ac1 = "-" if b["ac1"] is None else f"{b['ac1']:.3f}"
            ret = "-" if b["retention"] is None else f"{b['retention']:.1%}"
            yield f"{b['batch']}: {b['items']} items, {b['judgments']} judgments, retained {ret}, AC1 {ac1}"
        t = report["totals"]
        yield f"run {report['run']}: {t['batches']} batches, {t['items']} items, retained {t['retained']}"
