from django.core.management.base import CommandError

from accounts.models import Pool
from scoring.services import baseline_pool_create, baseline_run_create

from ._base import JsonCommand


class Command(JsonCommand):
    help = "Human baselines: `baseline POOL --members a,b,c` makes a participant pool; `--score` queues its scoring."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("pool")
        parser.add_argument("--members", help="comma-separated usernames to add as baseline participants")
        parser.add_argument("--score", action="store_true", help="queue the pool's baseline scoring job")
        parser.add_argument("--release", default="", help="the ready release to score on (default: the latest)")

    def run(self, **options):
        summary = {"pool": options["pool"]}
        if options["members"]:
            usernames = [u.strip() for u in options["members"].split(",") if u.strip()]
            pool = baseline_pool_create(name=options["pool"], usernames=usernames)
            summary["members"] = pool.members.count()
        if options["score"]:
            pool = Pool.objects.filter(name=options["pool"]).first()
            if pool is None:
                raise CommandError(f"pool: unknown pool {options['pool']}")
            run = baseline_run_create(pool=pool, release=options["release"])
            summary["baseline_run"] = run.pk
            summary["release"] = run.release.version
        return summary
