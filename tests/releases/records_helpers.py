"""What the tests of the release records share: counting what builds make, and a maker (the
import's follow-up) that has made every record and holds its transaction open."""
import contextlib
import threading

from django.db import connection, transaction

from releases import records, services


def made_by_builds(monkeypatch) -> list[int]:
    """What each build's check (`records.records_refresh`) made, from now on: [] when it checked none."""
    made, refresh = [], records.records_refresh

    def counted(**kwargs):
        made.append(refresh(**kwargs))
        return made[-1]

    monkeypatch.setattr(records, "records_refresh", counted)
    return made


@contextlib.contextmanager
def maker_holding():
    """`with maker_holding() as maker:` a thread has made every record (`maker["made"]` of them,
    `services.release_records_refresh`) and not committed yet; it commits when the block ends."""
    holding, go, maker = threading.Event(), threading.Event(), {}

    def make_and_hold():
        try:
            with transaction.atomic():
                maker["made"] = services.release_records_refresh()
                holding.set()
                assert go.wait(30)
        finally:
            holding.set()
            connection.close()  # this thread's own

    thread = threading.Thread(target=make_and_hold)
    thread.start()
    try:
        assert holding.wait(30) and "made" in maker, "the maker did not make the records"
        yield maker
    finally:
        go.set()
        thread.join(60)
