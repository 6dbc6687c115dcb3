from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError

from accounts.services import PeopleInputError, api_token_for, login_link_path, people_create, people_parse_csv
from dialtom_site.commands import ReportCommand


class Command(ReportCommand):
    help = (
        "Create verifiers, crowd workers and staff from a CSV (username,email,role[,pools]) and print "
        "one-time login links; --json --tokens prints each username with an API token."
    )

    def add_arguments(self, parser):
        parser.add_argument("csv", help="path of the CSV file")
        parser.add_argument("--base-url", default=getattr(settings, "DIALTOM_BASE_URL", "http://127.0.0.1:8000"))
        parser.add_argument("--tokens", action="store_true", help="also create and print an API token per person")
        super().add_arguments(parser)

    def run(self, **o):
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
        return {"created": len(rows), "people": rows}

    def summary(self, report):
        for row in report["people"]:
            yield f"{row['username']} ({row['role']}): {row['login_link']}" + (f"  token {row['token']}" if "token" in row else "")
        yield f"{report['created']} people created; each link logs in once."
