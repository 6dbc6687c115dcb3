"""Orders that do not depend on the database's collation.

A release's files are in `item_id` order, and that order must be the same on every server: the
same data gives the same bytes, and a model builder who sorts the ids in Python (`sorted()`,
code-point order) gets the file's order. A database's default collation decides otherwise: the
official PostgreSQL image initialises its databases in `en_US.utf8`, which ignores punctuation and
case at first (`a_1`, `A-1`, `a-b`, `ab`), where SQLite and `C` compare code points (`A-1`, `a-b`,
`a_1`, `ab`). So these orders name their collation: `C` on PostgreSQL (also the cheaper sort: bytes
compared, no locale), `BINARY` on SQLite; in UTF-8 both are code-point order.
"""
from __future__ import annotations

from django.db import connection
from django.db.models import F
from django.db.models.functions import Collate

_CODE_POINTS = {"postgresql": "C", "sqlite": "BINARY"}


def code_points(name: str) -> Collate:
    """For `order_by`: the field `name` in code-point order, on the default connection's database."""
    return Collate(F(name), _CODE_POINTS[connection.vendor])


def code_points_sql(sql: str) -> str:
    """SQL (PostgreSQL): the text expression `sql` in code-point order, for an ORDER BY."""
    return f'{sql} COLLATE "{_CODE_POINTS["postgresql"]}"'
