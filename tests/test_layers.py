"""The apps form layers (README, "Code map"): every import between apps points down, no
module imports one that imports it back, and no module is over 600 lines.

Read from the source as text (ast), so it runs without a database. Tests, migrations and
`bench/` are outside the rule. A lower app may still name a higher one as a string:
`include("review.urls")`, a task queued by name through `dialtom_site.jobs.task_named`.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# From the ground up; an app may import the apps of lower floors only (and its own).
FLOORS = [
    ["dialtom_site"],
    ["accounts", "annotation"],
    ["references", "verification"],
    ["aggregation", "studies"],
    ["review"],
    ["releases"],
    ["scoring"],
    ["report", "dashboard"],
    ["demo"],
]
FLOOR = {app: n for n, apps in enumerate(FLOORS) for app in apps}
MAX_LINES = 600


def _modules():
    for app in FLOOR:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts:
                yield app, path


def _imports(path: Path):
    """(module imported, line) for every absolute import, and relative ones made absolute."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            yield base, node.lineno
            for alias in node.names:  # `from . import services` imports a module
                yield f"{base}.{alias.name}", node.lineno


def _module_name(path: Path) -> str:
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


def test_every_import_between_apps_points_down():
    upward = []
    for app, path in _modules():
        for module, line in _imports(path):
            other = module.split(".")[0]
            if other in FLOOR and other != app and FLOOR[other] >= FLOOR[app]:
                upward.append(f"{path.relative_to(ROOT)}:{line} imports {other} ({app} is not above it)")
    assert not upward, "\n".join(sorted(set(upward)))


def test_no_module_imports_one_that_imports_it_back():
    names = {_module_name(path): path for _, path in _modules()}
    graph = {name: {m for m, _ in _imports(path) if m in names and m != name} for name, path in names.items()}
    circles = []
    state: dict[str, int] = {}

    def visit(node, trail):
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append(" -> ".join(trail[trail.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not circles, "\n".join(circles)


@pytest.mark.parametrize("app", sorted(FLOOR))
def test_no_module_is_over_600_lines(app):
    long = [f"{path.relative_to(ROOT)}: {n} lines" for a, path in _modules() if a == app
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
    assert not long, "\n".join(long)


def test_every_app_is_on_a_floor():
    apps = {p.parent.name for p in ROOT.glob("*/apps.py")}
    assert apps <= set(FLOOR), apps - set(FLOOR)
