"""What the verification services refuse with: every door turns it into its own answer."""


class VerificationError(Exception):
    """A refused request; `status` is the HTTP status the API answers with."""

    def __init__(self, message: str, *, code: str = "invalid", status: int = 400, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.field = field
