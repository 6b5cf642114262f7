"""Which ADK session service wrote a store's tables, and refusing a service that would alter them.

ADK has two services for SQLite files, with tables of the same names in two
layouts: ``SqliteSessionService`` (``sqlite:///``, the ``adk web`` default)
and ``DatabaseSessionService`` (``sqlite+aiosqlite:///``, any schema version).
Each sets up its own schema on a file it opens: pointed at the other's file,
``DatabaseSessionService`` adds its ``adk_internal_metadata`` table and
records a schema version before its first read fails. The library and the
CLI both refuse that before the service is built, with the same line.

On a SQL server, ``DatabaseSessionService`` creates whatever of its tables
is missing on first use. Where a database already holds a ``sessions``,
``events``, ``app_states`` or ``user_states`` table of another application,
PostgreSQL rolls the failed set-up back (its DDL is transactional) with a
raw ``ProgrammingError``, and MySQL/MariaDB keep the tables created before
the failure. `refuse_foreign_tables` checks the first connection instead.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any
from urllib.parse import quote, urlsplit

from .errors import (
    StoreLayoutError,
    directory_message,
    foreign_tables_message,
    not_sqlite_message,
    other_layout_message,
)
from .masking import mask_uri

#: The SQLite schemes, by the ADK service that writes each layout.
SQLITE_SCHEME_OF = {
    "SqliteSessionService": "sqlite",
    "DatabaseSessionService": "sqlite+aiosqlite",
}


def sqlite_layout(path: str) -> tuple[str | None, list[str]]:
    """Which ADK service wrote the SQLite file at `path`, and the tables it holds.

    The two layouts share table names; their time columns tell them apart:
    ``SqliteSessionService`` declares ``update_time REAL`` (epoch seconds),
    ``DatabaseSessionService`` a ``DATETIME`` (both schema versions).
    Returns (None, tables) when there is no ``sessions`` table. Raises
    `sqlite3.DatabaseError` for a file that is not a SQLite database.
    The file is opened read-only.
    """
    connection = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True)
    try:
        tables = sorted(
            row[0]
            for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        )
        if "sessions" not in tables:
            return None, tables
        columns = {
            row[1]: str(row[2]).upper() for row in connection.execute("PRAGMA table_info(sessions)")
        }
    finally:
        connection.close()
    service = (
        "SqliteSessionService" if columns.get("update_time") == "REAL" else "DatabaseSessionService"
    )
    return service, tables


def service_file(uri: str, scheme: str) -> str | None:
    """The file ADK's service for `scheme` would open for `uri`, read as that service reads it.

    ``sqlite://`` goes through ADK's registry, which takes the URL's path less
    one leading slash, as written; ``sqlite+aiosqlite://`` through SQLAlchemy's
    URL parser. None for an in-memory database.
    """
    if scheme == "sqlite":
        path = urlsplit(uri).path
        path = path[1:] if path.startswith("/") else path
    else:
        from sqlalchemy.engine import make_url

        path = make_url(uri).database or ""
    return path if path and path != ":memory:" else None


def refuse_other_layout(uri: str, scheme: str) -> None:
    """Raises `StoreLayoutError` when `uri`'s file was written by the other SQLite service.

    A file that does not exist yet, is empty, or holds no ``sessions`` table is
    left to the service, which sets it up as it would unwrapped. A directory
    or a file that is not SQLite is refused too: the service could use neither.
    """
    path = service_file(uri, scheme)
    if path is None:
        return
    if os.path.isdir(path):
        raise StoreLayoutError(directory_message(path, mask_uri(uri)))
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        return
    try:
        service, _ = sqlite_layout(path)
    except sqlite3.DatabaseError as error:
        raise StoreLayoutError(not_sqlite_message(path, mask_uri(uri), error)) from None
    if service is None:
        return
    wanted = SQLITE_SCHEME_OF[service]
    if wanted != scheme:
        raise StoreLayoutError(other_layout_message(service, path, scheme, wanted))


#: The columns each of ``DatabaseSessionService``'s tables has in every
#: schema version it reads (the legacy pickled one and the JSON one).
DATABASE_SERVICE_COLUMNS: dict[str, frozenset[str]] = {
    "sessions": frozenset({"app_name", "user_id", "id", "state", "create_time", "update_time"}),
    "events": frozenset({"id", "app_name", "user_id", "session_id", "invocation_id", "timestamp"}),
    "app_states": frozenset({"app_name", "state", "update_time"}),
    "user_states": frozenset({"app_name", "user_id", "state", "update_time"}),
}

_TABLE_LIST = ", ".join(f"'{table}'" for table in DATABASE_SERVICE_COLUMNS)

#: The columns of those tables in the connection's default schema, by dialect.
_COLUMNS_QUERY = {
    "postgresql": (
        "SELECT table_name, column_name FROM information_schema.columns "
        f"WHERE table_schema = current_schema() AND table_name IN ({_TABLE_LIST})"
    ),
    "mysql": (
        "SELECT table_name, column_name FROM information_schema.columns "
        f"WHERE table_schema = DATABASE() AND table_name IN ({_TABLE_LIST})"
    ),
}
_COLUMNS_QUERY["mariadb"] = _COLUMNS_QUERY["mysql"]


def foreign_tables(dbapi_connection: Any, dialect: str) -> dict[str, list[str]]:
    """ADK's table names that hold another layout on this connection: name -> missing columns.

    Reads ``information_schema`` through the raw DBAPI connection and ends
    the transaction it opened. Empty for dialects it has no query for.
    """
    query = _COLUMNS_QUERY.get(dialect)
    if query is None:
        return {}
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(query)
        rows = cursor.fetchall()
    finally:
        cursor.close()
        dbapi_connection.rollback()
    found: dict[str, set[str]] = {}
    for table, column in rows:
        found.setdefault(str(table).lower(), set()).add(str(column).lower())
    return {
        table: sorted(DATABASE_SERVICE_COLUMNS[table] - columns)
        for table, columns in sorted(found.items())
        if DATABASE_SERVICE_COLUMNS[table] - columns
    }


def refuse_foreign_tables(dbapi_connection: Any, dialect: str, uri: str) -> None:
    """Raises `StoreLayoutError` when the database holds ADK's table names in another layout."""
    foreign = foreign_tables(dbapi_connection, dialect)
    if foreign:
        raise StoreLayoutError(foreign_tables_message(mask_uri(uri), foreign))
