"""A list of attributes that works on PostgreSQL and on SQLite (the demo).

On PostgreSQL it is exactly `ArrayField(CharField)`: a `varchar(10)[]` column, the same
schema and queries as before. On any other database (SQLite, `make demo`) the list is
stored as JSON text, and the lookups the models and services use (`len`, `contained_by`,
`exact`) are written in SQLite's JSON functions, so the migrations, the check constraints
and the crowd workers' queue run there too.
"""
import json

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.fields.array import ArrayContainedBy, ArrayExact, ArrayLenTransform


def _postgres(connection) -> bool:
    return connection.vendor == "postgresql"


class AttributeListField(ArrayField):
    """`ArrayField` on PostgreSQL, a JSON list in a text column elsewhere."""

    def db_type(self, connection):
        return super().db_type(connection) if _postgres(connection) else "text"

    def cast_db_type(self, connection):
        return super().cast_db_type(connection) if _postgres(connection) else "text"

    def get_placeholder(self, value, compiler, connection):
        return super().get_placeholder(value, compiler, connection) if _postgres(connection) else "%s"

    def get_db_prep_value(self, value, connection, prepared=False):
        if _postgres(connection) or value is None or hasattr(value, "as_sql"):
            return super().get_db_prep_value(value, connection, prepared)
        return json.dumps(list(value))

    def from_db_value(self, value, expression, connection):
        return json.loads(value) if isinstance(value, str) else value


@AttributeListField.register_lookup
class AttributeListLen(ArrayLenTransform):
    def as_sqlite(self, compiler, connection):
        lhs, params = compiler.compile(self.lhs)
        return f"json_array_length({lhs})", params


@AttributeListField.register_lookup
class AttributeListContainedBy(ArrayContainedBy):
    """Every element is one of the given values. SQLite allows no subquery in a CHECK
    constraint, so this one strikes each allowed value (JSON-quoted) out of the text and
    asks that only the list's brackets, commas and spaces remain."""

    def __init__(self, lhs, rhs):
        self.allowed = list(rhs) if isinstance(rhs, (list, tuple)) else None
        super().__init__(lhs, rhs)

    def as_sqlite(self, compiler, connection):
        if self.allowed is None:
            raise NotImplementedError("contained_by on SQLite takes a list of values")
        sql, params = compiler.compile(self.lhs)
        for value in self.allowed:
            sql, params = f"replace({sql}, %s, '')", [*params, json.dumps(str(value))]
        return f"trim({sql}, '[], ') = ''", params


@AttributeListField.register_lookup
class AttributeListExact(ArrayExact):
    def __init__(self, lhs, rhs):
        self.value = list(rhs) if isinstance(rhs, (list, tuple)) else None
        super().__init__(lhs, rhs)

    def as_sqlite(self, compiler, connection):
        if self.value is None:
            raise NotImplementedError("exact on SQLite takes a list of values")
        sql, params = compiler.compile(self.lhs)
        return f"{sql} = %s", [*params, json.dumps([str(v) for v in self.value])]
