"""A ValidationError as one line of text, for pages and commands alike."""
from django.core.exceptions import ValidationError


def validation_text(exc: ValidationError) -> str:
    """`field: message; other: message` (errors not tied to a field: the message alone)."""
    if not hasattr(exc, "error_dict"):
        return " ".join(exc.messages)
    return "; ".join(f"{field}: {' '.join(msgs)}" if field != "__all__" else " ".join(msgs)
                     for field, msgs in exc.message_dict.items())
