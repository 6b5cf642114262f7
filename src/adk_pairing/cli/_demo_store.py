"""The demo's SQLite store as its file holds it: row digests, marker search, a copy.

Step 3's proof that the repair wrote nothing rests on these, so none goes
through ADK.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from pathlib import Path


def event_rows(db_path: Path) -> dict[tuple[str, ...], str]:
    """sha256 of every raw row of the ``events`` table, keyed by primary key.

    Read with the standard ``sqlite3`` module, not through ADK: the point is
    to look at the bytes the store holds, not at ADK's reading of them.
    """
    connection = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        cursor = connection.execute("SELECT * FROM events")
        columns = [d[0] for d in cursor.description]
        key_columns = [columns.index(c) for c in ("app_name", "user_id", "session_id", "id")]
        rows: dict[tuple[str, ...], str] = {}
        for row in cursor:
            key = tuple(str(row[i]) for i in key_columns)
            rows[key] = hashlib.sha256(repr(tuple(row)).encode()).hexdigest()
        return rows
    finally:
        connection.close()


def rows_containing(db_path: Path, markers: tuple[str, ...]) -> int:
    """How many rows of any table contain one of `markers` in any column."""
    connection = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        tables = [
            name
            for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
        ]
        found = 0
        for table in tables:
            for row in connection.execute(f'SELECT * FROM "{table}"'):
                text = repr(tuple(row))
                if any(marker in text for marker in markers):
                    found += 1
        return found
    finally:
        connection.close()


def digest(rows: dict[tuple[str, ...], str], keys: list[tuple[str, ...]]) -> str:
    combined = hashlib.sha256()
    for key in keys:
        combined.update(repr(key).encode())
        combined.update(rows.get(key, "<absent>").encode())
    return combined.hexdigest()


def copy_store(source: Path, target: Path) -> None:
    """A consistent copy through SQLite's backup API (it honours any journal)."""
    with (
        contextlib.closing(sqlite3.connect(source)) as src,
        contextlib.closing(sqlite3.connect(target)) as dst,
    ):
        src.backup(dst)
