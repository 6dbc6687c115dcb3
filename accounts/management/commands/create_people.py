import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from accounts.services import PeopleInputError, api_token_for, login_link_path, people_create, people_parse_csv


class Command(BaseCommand):
    help = (
        "Create verifiers, crowd workers and staff from a CSV (username,email,role[,pools]) and print "
        "one-time login links; --json --tokens prints each username with an API token."
    )

    def add_arguments(self, parser):
        parser.add_argument("csv", help="path of the CSV file")
        parser.add_argument("--base-url", default=getattr(settings, "DIALTOM_BASE_URL", "http://127.0.0.1:8000"))
        parser.add_argument("--tokens", action="store_true", help="also create and print an API token per person")
        parser.add_argument("--json", action="store_true", help="print one JSON object, last")

    def handle(self, *args, **o):
        path = Path(o["csv"])
        try:
            text = path.read_text(encoding="utf-8-sig")
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror}") from None
        try:
            people = people_create(rows=people_parse_csv(text=text, filename=str(path)), filename=str(path))
        except PeopleInputError as exc:
            raise CommandError(str(exc)) from None
        base = o["base_url"].rstrip("/")
        rows = []
        for user in people:
            row = {"username": user.username, "role": user.role, "login_link": base + login_link_path(user=user)}
            if o["tokens"]:
                row["token"] = api_token_for(user=user)
            rows.append(row)
        if o["json"]:
            self.stdout.write(json.dumps({"created": len(rows), "people": rows}, sort_keys=True))
        else:
            for row in rows:
                self.stdout.write(f"{row['username']} ({row['role']}): {row['login_link']}" + (f"  token {row['token']}" if "token" in row else ""))
            self.stdout.write(f"{len(rows)} people created; each link logs in once.")
