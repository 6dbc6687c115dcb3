"""Planner settings for one transaction."""
from __future__ import annotations


def jit_off(cursor) -> None:
    """No JIT compilation for the rest of the transaction (PostgreSQL; nothing elsewhere). A
    statement with a hundred expressions over a million rows (the study report's agreement
    sums, a release's lines) spent 7 of its 13 s compiling them at 400k items, for nothing: each
    runs once."""
    if cursor.db.vendor == "postgresql":
        cursor.execute("SET LOCAL jit = off")
