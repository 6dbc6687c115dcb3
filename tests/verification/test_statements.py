"""The queue's statements reach psycopg through its public API only: native placeholders, prepared."""
import psycopg
import pytest

from verification import statements


def test_placeholders_are_converted_once_to_postgresql_s_own():
    assert statements._native("SELECT %s, '50%%' LIKE x, %s FROM t WHERE a = %s") == (
        "SELECT $1, '50%' LIKE x, $2 FROM t WHERE a = $3"
    )


@pytest.mark.parametrize("exposure_allowed", [False, True])
def test_the_claim_statement_has_one_native_placeholder_per_argument(exposure_allowed):
    sql, tail = statements._claim_next_sql(exposure_allowed)
    native = statements._native(sql)
    assert "%s" not in native
    assert f"${6 + len(tail)}" in native and f"${7 + len(tail)}" not in native


def test_the_cursor_is_psycopg_s_public_raw_cursor():
    assert issubclass(statements._PreparedCursor, psycopg.RawCursor)
