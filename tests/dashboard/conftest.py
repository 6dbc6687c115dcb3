import pytest

from .world import make_world


@pytest.fixture
def world(db):
    return make_world()  # it rebuilds the summaries: the factories go around the services that keep them
