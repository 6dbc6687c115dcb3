import pytest

from dashboard.summaries import summaries_rebuild

from .world import make_world


@pytest.fixture
def world(db):
    world = make_world()
    summaries_rebuild()  # the factories go around the services that keep the summaries
    return world
