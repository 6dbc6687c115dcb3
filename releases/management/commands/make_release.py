import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from releases import services
from releases.models import ReleaseStatus


class Command(BaseCommand):
    help = "Create a release of the retained items: files under RELEASE_ROOT/<version>/ with a manifest."

    def create_parser(self, prog_name, subcommand, **kwargs):
        # `--version` names the release here, replacing Django's "print Django's version".
        kwargs.setdefault("conflict_handler", "resolve")
        return super().create_parser(prog_name, subcommand, **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("--version", dest="release_version", help="release version (default: the next vN)")
        parser.add_argument("--async", dest="run_async", action="store_true", help="queue the build on Celery and return")
        parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")

    def handle(self, *args, release_version=None, run_async=False, json=False, **options):
        try:
            release = services.release_create(version=release_version, trigger="command", build=run_async)
        except ValidationError as exc:
            raise CommandError(f"--version: {'; '.join(exc.messages)}") from exc
        if not run_async:
            try:
                release = services.release_build(release_id=release.id)
            except Exception as exc:  # noqa: BLE001
                raise CommandError(f"release {release.version} failed: {exc}") from exc
        result = {
            "version": release.version,
            "status": release.status,
            "items": release.n_items,
            "files": {name: {"path": meta["path"], "sha256": meta["sha256"]} for name, meta in release.files.items()},
        }
        if json:
            self.stdout.write(_json_dumps(result))
            return
        self.stdout.write(f"release {release.version}: {release.status}, {release.n_items} items")
        if release.status == ReleaseStatus.READY:
            for name, meta in result["files"].items():
                self.stdout.write(f"  {meta['sha256']}  {meta['path']}")


def _json_dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False)
