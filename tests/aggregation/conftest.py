import pytest

from . import synthetic


@pytest.fixture(scope="session")
def synthetic_dir(tmp_path_factory):
    """60 contexts -> 420 items in 3 batches of 140, 1,260 judgments by 22 workers."""
    return synthetic.generate(tmp_path_factory.mktemp("synthetic"), contexts=60, batch_size=140)


@pytest.fixture
def loaded(db, synthetic_dir):
    from aggregation.services import judgments_import

    batches = synthetic.load_items(synthetic_dir)
    judgments_import(path=synthetic_dir / "judgments.csv")
    return batches
