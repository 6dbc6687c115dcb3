"""python manage.py jobs_sweep [--json]: what Celery beat's `jobs-sweep` does, once, now."""
from dialtom_site import jobs
from dialtom_site.commands import ReportCommand


class Command(ReportCommand):
    help = (
        "Queue every background job (aggregation run, release build, model or baseline scoring) that waited "
        "for the broker, and mark failed and queue again the jobs of workers that stopped beating."
    )

    def run(self, **options):
        return jobs.jobs_sweep()

    def summary(self, report):
        for kind, ids in report.items():
            if any(ids.values()):
                yield f"{kind}: " + ", ".join(f"{key} {value}" for key, value in ids.items() if value)
        if not any(any(ids.values()) for ids in report.values()):
            yield "nothing to do"
