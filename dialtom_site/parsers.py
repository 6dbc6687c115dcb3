"""The API's JSON parser: what PostgreSQL or Python cannot take is a 400 here, once.

DRF's JSONParser answers 400 for malformed JSON but let through (issue 12, break 6):
- nesting 100,000 deep, a `RecursionError` (a 500) in the json module;
- `\\u0000` in a string, which PostgreSQL cannot store or compare (a 500 deep in psycopg);
- a lone surrogate (`\\ud800`), which cannot be encoded as UTF-8 (a 500 on save).
The depth limit is DIALTOM_JSON_MAX_DEPTH; no body the API accepts comes close to it.
"""
from __future__ import annotations

import io

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import BaseParser, JSONParser



def has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def json_problem(data, *, max_depth: int) -> str | None:
    """Why a parsed JSON value is refused (depth, NUL, lone surrogate), or None. Iterative:
    a value that is itself too deep must not overflow the stack of its checker."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (list, dict)):
            if depth > max_depth:
                return f"JSON nested more than {max_depth} levels deep."
            children = value.items() if isinstance(value, dict) else ((None, v) for v in value)
            for key, child in children:
                if key is not None:
                    stack.append((key, depth))
                stack.append((child, depth + 1))
        elif isinstance(value, str):
            if "\x00" in value:
                return "JSON string contains a NUL character (\\u0000), which no field accepts."
            if has_lone_surrogate(value):
                return "JSON string contains a lone surrogate (not valid Unicode text)."
    return None


class StrictJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        max_depth = settings.DIALTOM_JSON_MAX_DEPTH
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"JSON parse error - nested more than {max_depth} levels deep.") from None
        problem = json_problem(data, max_depth=max_depth)
        if problem:
            raise ParseError(f"JSON parse error - {problem}")
        return data


class BodyTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "body_too_large"


class BoundedJSONParser(BaseParser):
    """StrictJSONParser for a door that takes bodies larger than DATA_UPLOAD_MAX_MEMORY_SIZE,
    up to its own bound: the setting named by `max_bytes_setting` (a 413 with the limit
    above it, judged by Content-Length before anything is read, then by what was read).

    DRF hands a JSONParser the request's `body`, which Django caps at
    DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB) for every view; this parser is not a JSONParser, so
    DRF hands it the stream. A list of 56,700 predictions (a model run on the whole
    benchmark) is about 3 MB (issue 25's full rehearsal was refused at that size)."""

    media_type = "application/json"
    max_bytes_setting = "DATA_UPLOAD_MAX_MEMORY_SIZE"

    def parse(self, stream, media_type=None, parser_context=None):
        limit = getattr(settings, self.max_bytes_setting)
        meta = parser_context["request"].META if parser_context and "request" in parser_context else {}
        try:
            declared = int(meta.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > limit:
            raise BodyTooLarge(self.too_large(limit))
        body = stream.read(limit + 1)
        if len(body) > limit:
            raise BodyTooLarge(self.too_large(limit))
        return StrictJSONParser().parse(io.BytesIO(body), media_type, parser_context)

    def too_large(self, limit: int) -> str:
        return f"The request body is larger than {limit} bytes ({self.max_bytes_setting})."
