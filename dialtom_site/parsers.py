"""The API's JSON parser: what PostgreSQL or Python cannot take is a 400 here, once.

DRF's JSONParser answers 400 for malformed JSON but let through (issue 12, break 6):
- nesting 100,000 deep, a `RecursionError` (a 500) in the json module;
- `\\u0000` in a string, which PostgreSQL cannot store or compare (a 500 deep in psycopg);
- a lone surrogate (`\\ud800`), which cannot be encoded as UTF-8 (a 500 on save).
The depth limit is DIALTOM_JSON_MAX_DEPTH; no body the API accepts comes close to it.
"""
from __future__ import annotations


from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser



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
