"""Fast inserts of many rows: PostgreSQL COPY where we are on PostgreSQL, bulk_create elsewhere.

Django 5.2's bulk_create on PostgreSQL sends each column as one array parameter (UNNEST);
with client-side binding psycopg quotes those arrays in Python, which for tens of
thousands of JSON values costs more than the insert itself (bench/results/imports.md).
COPY streams the rows as text instead, and rows given as dicts spare building a model
instance each. It runs in the caller's transaction, so an import stays all-or-nothing.
No primary keys come back: use it where none are needed.
"""
import itertools
import json
from collections.abc import Iterable, Iterator

from django.db import connection, models
from django.utils import timezone


def chunked(values: Iterable, size: int) -> Iterator[list]:
    """`values` in lists of `size` (the last one shorter)."""
    iterator = iter(values)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def bulk_insert(model: type[models.Model], rows: Iterable[dict], *, batch_size: int = 2000) -> int:
    """Insert rows given as `{field attname: value}`; missing fields take their default."""
    rows = list(rows)
    if not rows:
        return 0
    if connection.vendor != "postgresql":
        model.objects.bulk_create([model(**row) for row in rows], batch_size=batch_size)
        return len(rows)
    now = timezone.now()
    plan = []  # (column, attname, fallback, is_json)
    for field in model._meta.concrete_fields:
        if isinstance(field, models.AutoField):
            continue
        fallback = now if getattr(field, "auto_now_add", False) or getattr(field, "auto_now", False) else None
        if fallback is None and field.attname not in rows[0] and field.has_default():
            fallback = field.get_default()
        plan.append((field.column, field.attname, fallback, isinstance(field, models.JSONField)))
    quote = connection.ops.quote_name
    sql = f"COPY {quote(model._meta.db_table)} ({', '.join(quote(p[0]) for p in plan)}) FROM STDIN"
    # wrap_database_errors: a unique violation raises Django's IntegrityError, as bulk_create would
    with connection.wrap_database_errors, connection.cursor() as cursor, cursor.copy(sql) as copy:
        for row in rows:
            values = []
            for _, attname, fallback, is_json in plan:
                value = row.get(attname, fallback)
                values.append(json.dumps(value, ensure_ascii=False) if is_json and value is not None else value)
            copy.write_row(values)
    return len(rows)
