import pytest

from tests.dashboard.world import make_world


@pytest.fixture
def world(db):
    return make_world()


@pytest.fixture(autouse=True)
def release_root(tmp_path, settings):
    settings.RELEASE_ROOT = tmp_path / "releases"
    return settings.RELEASE_ROOT
