"""Flags per status (`FlagTally`, issue 23): moved by the services that raise and handle flags, in
their transaction, so the flag queue's tabs count without a pass over the flags."""
from django.db import IntegrityError, transaction
from django.db.models import Count, F

from .models import Flag, FlagTally


def flag_moved(*, before: str | None, after: str | None, n: int = 1) -> None:
    """`n` flags went from status `before` (None: new) to `after`."""
    if not n or before == after:
        return
    for status, delta in ((before, -n), (after, n)):
        if status is None:
            continue
        if FlagTally.objects.filter(status=status).update(n=F("n") + delta):
            continue
        try:
            with transaction.atomic():
                FlagTally.objects.create(status=status, n=delta)
        except IntegrityError:
            FlagTally.objects.filter(status=status).update(n=F("n") + delta)


def flag_tallies_rebuild() -> None:
    FlagTally.objects.all().delete()
    FlagTally.objects.bulk_create(
        [FlagTally(status=s, n=n) for s, n in Flag.objects.values_list("status").annotate(n=Count("id")).order_by("status")]
    )
