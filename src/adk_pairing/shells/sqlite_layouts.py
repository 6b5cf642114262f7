"""Which of ADK's two SQLite session services wrote a file, and refusing the other one.

ADK has two services for SQLite files, with tables of the same names in two
layouts: ``SqliteSessionService`` (``sqlite:///``, the ``adk web`` default)
and ``DatabaseSessionService`` (``sqlite+aiosqlite:///``, any schema version).
Each sets up its own schema on a file it opens: pointed at the other's file,
``DatabaseSessionService`` adds its ``adk_internal_metadata`` table and
records a schema version before its first read fails. The library and the
CLI both refuse that before the service is built, with the same line.
"""

from __future__ import annotations

import os
import sqlite3
from urllib.parse import quote, urlsplit

from .errors import (
    StoreLayoutError,
    directory_message,
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
