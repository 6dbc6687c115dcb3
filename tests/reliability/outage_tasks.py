"""Tasks the broker-outage test gives a real worker (imported by settings_broker_outage.py only)."""
import time
from pathlib import Path

from celery import shared_task


@shared_task(acks_late=True, ignore_result=True)
def hold(marker: str, seconds: float) -> None:
    """Write `<marker>.started`, work for `seconds`, write `<marker>.done`: a task in flight."""
    Path(marker + ".started").write_text("")
    time.sleep(seconds)
    Path(marker + ".done").write_text("")
