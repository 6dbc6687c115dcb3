from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from dialtom_site.commands import ReportCommand
from releases import services
from releases.models import ReleaseStatus


class Command(ReportCommand):
    help = "Create a release of the retained items: files under RELEASE_ROOT/<version>/ with a manifest."

    def create_parser(self, prog_name, subcommand, **kwargs):
        # `--version` names the release here, replacing Django's "print Django's version".
        kwargs.setdefault("conflict_handler", "resolve")
        return super().create_parser(prog_name, subcommand, **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("--version", dest="release_version", help="release version (default: the next vN)")
        parser.add_argument("--async", dest="run_async", action="store_true", help="queue the build on Celery and return")
        parser.add_argument(
            "--acknowledge-warnings", action="store_true",
            help="create the release although the results carry warnings (a flagged batch, items under their overlap)",
        )
        super().add_arguments(parser)

    def run(self, *, release_version=None, run_async=False, acknowledge_warnings=False, **options):
        try:
            release = services.release_create(
                version=release_version, trigger="command", build=run_async, acknowledge_warnings=acknowledge_warnings
            )
        except services.ReleaseWarnings as exc:
            lines = "\n  ".join(w["message"] for w in exc.warnings)
            raise CommandError(f"the current results carry warnings:\n  {lines}\nrerun with --acknowledge-warnings to release them") from exc
        except ValidationError as exc:
            raise CommandError(f"--version: {'; '.join(exc.messages)}") from exc
        if not run_async:
            try:
                release = services.release_build(release_id=release.id)
            except Exception as exc:  # noqa: BLE001
                raise CommandError(f"release {release.version} failed: {exc}") from exc
        release.refresh_from_db()
        return {
            "version": release.version,
            "status": release.status,
            "warnings": release.warnings,
            "items": release.n_items,
            "files": {name: {"path": meta["path"], "sha256": meta["sha256"]} for name, meta in release.files.items()},
        }

    def summary(self, report):
        yield f"release {report['version']}: {report['status']}, {report['items']} items"
        for warning in report["warnings"]:
            yield f"  warning: {warning['message']}"
        if report["status"] == ReleaseStatus.READY:
            for meta in report["files"].values():
                yield f"  {meta['sha256']}  {meta['path']}"
