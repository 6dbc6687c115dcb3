"""Tables a page at a time: the staff pages show a page of rows and where it is among them
(`Page`), whatever the number of batches, people or a release's rows."""
from dataclasses import dataclass

from django.db.models import Count, Window

PAGE_SIZE = 25  # rows of a table a page


@dataclass
class Page:
    """One page of a table: `number` (from 1), `pages`, `total` rows."""

    number: int
    pages: int
    total: int

    @property
    def previous(self) -> int | None:
        return self.number - 1 if self.number > 1 else None

    @property
    def next(self) -> int | None:
        return self.number + 1 if self.number < self.pages else None


def page_number(number) -> int:
    """The page asked for (from 1; anything else: 1), before it is held to the last page."""
    try:
        return max(1, int(number))
    except (TypeError, ValueError):
        return 1


def page_bounds(number, total: int, *, size: int = PAGE_SIZE) -> tuple[Page, int, int]:
    """(the Page of `number` held to the last one, its first row, the row after its last)."""
    pages = max(1, -(-total // size))
    number = min(page_number(number), pages)
    return Page(number, pages, total), (number - 1) * size, number * size


def paged(queryset, number, *, counted_by=None, size: int = PAGE_SIZE) -> tuple[Page, list]:
    """A page of `queryset` (ordered) with its Page, in one statement: the total is a window count
    over all the rows (`COUNT(*) OVER ()`, computed before the LIMIT), so no separate count. Two
    statements when the page asked for holds no row (no rows at all, or a page past the last: the
    last page is shown). Rows come without the count (a values_list row loses its last column).

    `counted_by`: a queryset of as many rows that counts from an index alone: then the total is its
    count and the page a LIMIT that stops at its rows (two statements, each of a page's cost),
    where the window would read every row of the table at every load (7,938 batches at 4M items)."""
    if counted_by is not None:
        pager, lo, hi = page_bounds(number, counted_by.count(), size=size)
        return pager, (list(queryset[lo:hi]) if pager.total else [])
    number = page_number(number)
    lo = (number - 1) * size
    rows = list(queryset.annotate(page_total=Window(Count("*")))[lo:lo + size])
    if rows:
        first = rows[0]
        if isinstance(first, tuple):
            total, rows = first[-1], [row[:-1] for row in rows]
        else:
            total = first.page_total
        return page_bounds(number, total, size=size)[0], rows  # the page holds rows: it is not past the last
    pager, lo, hi = page_bounds(number, queryset.count(), size=size)
    return pager, (list(queryset[lo:hi]) if pager.total else [])
