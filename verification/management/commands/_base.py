"""Verification commands: a refused action (`VerificationError`) stops them with its field and reason."""
from dialtom_site.commands import ReportCommand
from verification.services import VerificationError


class JsonCommand(ReportCommand):
    input_errors = (VerificationError,)

    def error_text(self, exc: VerificationError) -> str:
        return f"{exc.field or 'input'}: {exc.message}"
