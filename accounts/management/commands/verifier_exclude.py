from django.core.management.base import CommandError

from accounts.models import User
from accounts.services import verifier_exclusion_set
from dialtom_site.commands import ReportCommand


class Command(ReportCommand):
    help = "Exclude a verifier's judgments from aggregation (kept, not used), or --include them again"

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--reason", default="")
        parser.add_argument("--include", action="store_true")
        super().add_arguments(parser)

    def run(self, **o):
        user = User.objects.filter(username=o["username"]).first()
        if user is None:
            raise CommandError(f"username: no person named {o['username']!r}")
        user = verifier_exclusion_set(user=user, excluded=not o["include"], reason=o["reason"])
        return {"username": user.username, "excluded_from_aggregation": user.excluded_from_aggregation, "reason": user.exclusion_reason}

    def summary(self, report):
        yield f"{report['username']}: {'excluded' if report['excluded_from_aggregation'] else 'included'}"
