"""demo_data_load: the project's own demo files ingest, segment and import, twice over."""
import io

import pytest

from annotation.models import Context, Item, Session
from demo.services import DEMO_DATA_DIR, demo_data_load

pytestmark = pytest.mark.django_db


def test_demo_data_carries_its_licence():
    assert (DEMO_DATA_DIR / "dialtom-release" / "LICENSE").read_text().startswith("MIT License")


def test_demo_data_load_is_idempotent():
    out = io.StringIO()
    report = demo_data_load(stdout=out)
    assert {c: r["created"]["sessions"] for c, r in report["ingest"].items()} == {"annomi": 3, "esconv": 2, "pfg": 8}
    assert report["dialtom"]["retrospective"] == 6 and report["dialtom"]["easy"] == 6
    counts = (Session.objects.count(), Context.objects.count(), Item.objects.count())
    assert counts[1] > 17 and counts[2] == 30  # 6 retrospective, 9 prospective, 6 easy, 9 counterfactual
    assert "ingest annomi: 3 sessions created" in out.getvalue()

    again = demo_data_load()
    assert (Session.objects.count(), Context.objects.count(), Item.objects.count()) == counts
    assert again["segment"]["created"]["contexts"] == 0 and again["dialtom"]["created"]["items"] == 0
