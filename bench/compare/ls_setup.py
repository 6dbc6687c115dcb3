"""Migrate Label Studio's database and make its people (run by Label Studio's own python).

    LS_PYTHON bench/compare/ls_setup.py --ls-path SITE/label_studio --annotators 100

The environment carries the database (DJANGO_DB, POSTGRE_*) and LABEL_STUDIO_BASE_DATA_DIR.
Makes an owner and N annotators in one organization with legacy API tokens enabled (the
"Authorization: Token <key>" door), each with a token. Prints one JSON line:
{"owner_token": ..., "tokens": [...]}. Projects and tasks go through the HTTP API later.
"""
import argparse
import json
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ls-path", required=True)
    parser.add_argument("--annotators", type=int, default=100)
    args = parser.parse_args()
    sys.path[:1] = [args.ls_path, str(Path(__file__).resolve().parent)]
    from qc_ls_wsgi import configure

    configure()
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    from organizations.models import Organization
    from rest_framework.authtoken.models import Token
    from users.models import User

    owner = User.objects.create_user(email="qc-owner@example.org", username="qc-owner", password="qc-owner-password")
    org = Organization.create_organization(created_by=owner, title="queue compare", legacy_api_tokens_enabled=True)
    org.jwt.legacy_api_tokens_enabled = True
    org.jwt.save()
    owner.active_organization = org
    owner.save(update_fields=["active_organization"])
    tokens = []
    for i in range(args.annotators):
        user = User.objects.create_user(email=f"qc-a{i:03d}@example.org", username=f"qc-a{i:03d}", password=f"qc-a{i:03d}-pw")
        org.add_user(user)
        user.active_organization = org
        user.save(update_fields=["active_organization"])
        tokens.append(Token.objects.get_or_create(user=user)[0].key)
    print(json.dumps({"owner_token": Token.objects.get_or_create(user=owner)[0].key, "tokens": tokens}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
