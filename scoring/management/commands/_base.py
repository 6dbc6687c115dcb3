from django.core.management.base import CommandError

from dialtom_site.commands import ReportCommand
from scoring.services import InputErrors


class JsonCommand(ReportCommand):
    """Scoring commands: `InputErrors` (one `file:line: field: reason` per problem) stop them."""

    input_errors = (InputErrors,)


def read_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().splitlines()
    except OSError as exc:
        raise CommandError(f"{path}:0: file: cannot be read ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise CommandError(f"{path}:0: file: not UTF-8 ({exc.reason})") from exc
