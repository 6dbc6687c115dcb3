import json

from django.core.management.base import BaseCommand, CommandError

from accounts.models import User
from accounts.services import verifier_exclusion_set


class Command(BaseCommand):
    help = "Exclude a verifier's judgments from aggregation (kept, not used), or --include them again"

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--reason", default="")
        parser.add_argument("--include", action="store_true")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **o):
        user = User.objects.filter(username=o["username"]).first()
        if user is None:
            raise CommandError(f"username: no person named {o['username']!r}")
        user = verifier_exclusion_set(user=user, excluded=not o["include"], reason=o["reason"])
        result = {"username": user.username, "excluded_from_aggregation": user.excluded_from_aggregation, "reason": user.exclusion_reason}
        self.stdout.write(json.dumps(result, sort_keys=True) if o["json"] else f"{user.username}: {'excluded' if user.excluded_from_aggregation else 'included'}")
