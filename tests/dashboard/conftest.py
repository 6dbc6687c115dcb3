import pytest

from .world import make_world


@pytest.fixture
def world(db):
    return make_world()
