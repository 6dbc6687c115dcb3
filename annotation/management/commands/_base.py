"""Shared by the annotation commands: bad input (`parsers.InputError`) becomes a CommandError
`file:line: field: reason`; `--json` as in every command (dialtom_site.commands)."""
from dialtom_site.commands import ReportCommand as BaseReportCommand

from annotation.parsers import InputError


class ReportCommand(BaseReportCommand):
    input_errors = (InputError, ValueError)


def domain_lines(domains: dict, keys: tuple[str, ...]):
    for code, row in domains.items():
        yield f"  {code}: " + ", ".join(f"{key.replace('_', ' ')} {row[key]}" for key in keys)


def problem_lines(report: dict):
    """The report's skipped parts and warnings, one line each: `skipped file:line [key]: field: reason`."""
    for kind in ("skipped", "warnings"):
        for p in report.get(kind, []):
            yield f"{kind.rstrip('s')} {p['file']}:{p['line']} [{p['key']}]: {p['field']}: {p['reason']}"
