"""Migration 0006: prospective items without attribute get one, and the studio's ids follow.

Runs the real migrations backwards and forwards on the test database (transaction=True:
schema changes cannot run inside the rolled-back test transaction).
"""
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("annotation", "0005_references_moved_out")]
pytestmark = pytest.mark.django_db(transaction=True)


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _leaves():
    """Every app's last migration: going back to 0004 unapplies what depends on it, elsewhere too."""
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def test_prospective_rows_get_their_state_their_parents_or_belief():
    leaves = _leaves()
    apps = _migrate(BEFORE)
    try:
        Domain, Context, Item = (apps.get_model("annotation", m) for m in ("Domain", "Context", "Item"))
        mi = Domain.objects.get_or_create(code="mi", defaults={"name": "MI", "corpus": "AnnoMI",
                                                                "initiator_role": "counselor",
                                                                "recipient_role": "client"})[0]
        turns = [{"speaker": "initiator", "text": "Hello."}]
        c1 = Context.objects.create(context_id="mi-s0001-w00", domain=mi, session_key="mi-s0001", window_index=0, turns=turns)
        c2 = Context.objects.create(context_id="mi-s0002-w00", domain=mi, session_key="mi-s0002", window_index=0, turns=turns)
        common = {"question": "q", "options": ["a", "b", "c", "d"], "answer": "A"}
        # given: the release import's item (state in metadata), its easy variant built by scoring,
        # a hand-imported one without any state, and a retrospective item (untouched)
        Item.objects.create(item_id="mi-s0001-w00-prospective", context=c1, task="prospective", attribute="",
                            metadata={"source": "dialtom-release", "state": "Desires"}, **common)
        hard = Item.objects.get(item_id="mi-s0001-w00-prospective")
        Item.objects.create(item_id="mi-s0001-w00-prospective-easy", context=c1, task="prospective", attribute="",
                            variant="easy", parent=hard, metadata={"built_by": "easy_set_build"}, **common)
        Item.objects.create(item_id="custom-42", context=c2, task="prospective", attribute="", **common)
        Item.objects.create(item_id="mi-s0002-w00-trust", context=c2, task="retrospective", attribute="trust", **common)

        # when
        apps = _migrate(leaves)
        Item = apps.get_model("annotation", "Item")

        # then
        rows = {i.item_id: (i.attribute, i.metadata.get("attribute_assigned")) for i in Item.objects.all()}
        assert rows == {
            "mi-s0001-w00-prospective-desire": ("desire", None),  # from metadata.state
            "mi-s0001-w00-prospective-desire-easy": ("desire", None),  # from its parent
            "custom-42": ("belief", "migration 0006 default"),  # nothing known: the first attribute, marked
            "mi-s0002-w00-trust": ("trust", None),
        }
        with pytest.raises(Exception, match="item_attribute_valid"):
            Item.objects.create(item_id="x", context_id=c2.pk, task="prospective", attribute="", **common)
    finally:
        _migrate(leaves)
