"""The demo's smoke run (`scripts/demo_smoke.py`, which .ci/run points at `make demo` on a clean
clone) against a live server on the demo data: every role logs in, opens its home page and an item."""
import importlib.util
from pathlib import Path

from django.core.management import call_command

SCRIPT = Path(__file__).parents[2] / "scripts" / "demo_smoke.py"


def _smoke():
    spec = importlib.util.spec_from_file_location("demo_smoke", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_role_logs_in_and_opens_its_home_page_and_an_item(live_server, live_server_requests, capsys):
    """On the session's live server, whose door the browser tests shut between tests."""
    call_command("load_demo", "--json")
    live_server_requests.open()
    try:
        status = _smoke().main(["demo_smoke.py", live_server.url])
    finally:
        live_server_requests.wait_until_quiet()
        live_server_requests.shut()

    out = capsys.readouterr().out
    assert status == 0, out
    assert out.count("demo smoke: ok:") == 4 and "/annotate/work/" in out
