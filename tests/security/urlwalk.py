"""Every URL Django knows, with its path parameters filled from a fixture.

`all_urls(objects)` walks `get_resolver().url_patterns` (so URLs that other apps add are
covered as soon as they are merged) and builds a concrete path for each pattern:
- path converters and regex groups are filled by the parameter's name (`pk`, `object_id`,
  `batch`, `version`, `item_id`, ...) from the fixture's objects; for the admin's
  `<app>/<model>/<object_id>/` the model is read from the path itself;
- the generated path must resolve back to the same view, or it is reported as skipped
  (the test prints skips, and fails if a URL can't be generated at all).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from django.apps import apps
from django.urls import Resolver404, URLPattern, URLResolver, get_resolver, resolve
from django.urls.resolvers import RegexPattern, RoutePattern

STAFF_ONLY = re.compile(
    r"^/(admin|dashboard|staff)/|release|export|aggregat|/runs?/|leaderboard|scor|review|exclude|"
    r"/batches/[^/]+/(pause|close|open|assign|status)|people|pools?/|gold",
    re.I,
)
# What anonymous visitors may see (200): the login page and the password reset pages. The
# OpenAPI schema and its docs need a login or a token since issue 20 (break 6).
PUBLIC_NAMES = {"login", "password_reset", "password_reset_done"}


@dataclass(frozen=True)
class Url:
    path: str
    name: str | None
    pattern: str

    @property
    def staff_only(self) -> bool:
        # The admin's own login/logout pages are doors, not rooms: anyone may knock.
        return bool(STAFF_ONLY.search(self.path)) and self.path not in {"/admin/login/", "/admin/logout/"}

    @property
    def is_api(self) -> bool:
        return self.path.startswith("/api/")


def _walk(patterns, prefix=()):
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from _walk(p.url_patterns, prefix + (p.pattern,))
        elif isinstance(p, URLPattern):
            yield prefix + (p.pattern,), p


def _model_from_path(built: str):
    match = re.search(r"admin/(\w+)/(\w+)/$", built)
    if not match:
        return None
    try:
        return apps.get_model(match.group(1), match.group(2))
    except LookupError:
        return None


def _value(name: str, converter: str, built: str, objects: dict) -> str:
    """A value for one parameter: by name, from the fixture; else something plausible."""
    lname = name.lower()
    model = _model_from_path(built)
    if model is not None and lname in {"object_id", "pk", "id"}:
        first = model._default_manager.order_by("pk").first()
        return str(first.pk) if first else "1"
    if lname in {"content_type_id"}:
        from django.contrib.contenttypes.models import ContentType

        return str(ContentType.objects.get_for_model(objects["user"]).pk)
    for key, value in objects.get("by_name", {}).items():
        if lname == key or (lname.endswith("_id") and lname[:-3] == key) or lname.endswith("_" + key):
            return str(value(converter)) if callable(value) else str(value)
    # `<int:pk>` below a path segment that names a model (`/judgments/<pk>/`)
    segment = built.rstrip("/").rsplit("/", 1)[-1].lower().replace("-", "_").rstrip("s")
    for key, value in objects.get("by_segment", {}).items():
        if segment.startswith(key):
            return str(value(converter)) if callable(value) else str(value)
    if lname in {"format"}:
        return "json"
    if lname in {"app_label"}:
        return "annotation"
    if lname in {"url"}:
        return "no-such-page/"
    if converter == "int":
        return "1"
    if converter == "uuid":
        return "00000000-0000-4000-8000-000000000000"
    return "x"


_ROUTE_PARAM = re.compile(r"<(?:(?P<conv>[^>:]+):)?(?P<name>[^>]+)>")


def _fill_route(route: str, built: str, objects: dict) -> str:
    out, pos = "", 0
    for m in _ROUTE_PARAM.finditer(route):
        out += route[pos:m.start()]
        out += _value(m.group("name"), m.group("conv") or "str", built + out, objects)
        pos = m.end()
    return out + route[pos:]


def _fill_regex(regex: str, built: str, objects: dict) -> str:
    regex = regex.lstrip("^").rstrip("$").removesuffix("\\Z")
    out, i = "", 0
    while i < len(regex):
        if regex.startswith("(?P<", i):
            name = regex[i + 4:regex.index(">", i)]
            depth, j = 0, i
            while True:  # the matching parenthesis
                if regex[j] == "\\":
                    j += 2
                    continue
                depth += {"(": 1, ")": -1}.get(regex[j], 0)
                if depth == 0:
                    break
                j += 1
            body = regex[regex.index(">", i) + 1:j]
            choices = body.split("|")
            if len(choices) > 1 and all(re.fullmatch(r"[\w-]+", c) for c in choices):
                out += choices[0] if name != "app_label" else ("annotation" if "annotation" in choices else choices[0])
            else:
                out += _value(name, "regex", built + out, objects)
            i = j + 1
        elif regex[i] == "\\":
            out += regex[i + 1]
            i += 2
        elif regex[i] in "?*+":
            i += 1
        else:
            out += regex[i]
            i += 1
    return out


def all_urls(objects: dict) -> tuple[list[Url], list[str]]:
    """(urls, skipped): one concrete Url per pattern, and the patterns that could not be built."""
    urls, skipped = [], []
    for chain, pattern in _walk(get_resolver().url_patterns):
        built = "/"
        for part in chain:
            if isinstance(part, RoutePattern):
                built += _fill_route(str(part._route), built, objects)
            elif isinstance(part, RegexPattern):
                built += _fill_regex(part._regex, built, objects)
        label = "".join(str(p) for p in chain)
        try:
            match = resolve(built)
        except Resolver404:
            skipped.append(f"{label} -> {built} (does not resolve)")
            continue
        if match.func != pattern.callback and match.url_name != pattern.name:
            continue  # shadowed by an earlier pattern (e.g. admin/login/): that one is walked instead
        urls.append(Url(path=built, name=pattern.name, pattern=label))
    return urls, skipped
