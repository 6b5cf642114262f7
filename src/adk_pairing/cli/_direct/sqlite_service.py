"""``SqliteSessionService``'s file (``sqlite:///…``), on a ``mode=ro`` connection.

One DDL on every supported version (``sessions/sqlite_session_service.py``,
``EVENTS_TABLE_SCHEMA``); events are ``Event.model_validate_json(event_data)``,
as its ``get_session`` does. Events come in ``timestamp`` order, ties broken on
the column the installed service breaks them on (``id`` or ``rowid``, depending
on the release): probed, not assumed (`adk_pairing.adk.probe_tie_break`). Where
ADK has no tie-break, ties come in ``id`` order here (ADK's own order is then
undefined).

The file is read with ``sqlite3`` on the event loop's thread: a page's queries
cannot overlap its triage, so the read-ahead of ``concurrency`` >= 2 changes
only when they run, never how many are in flight (one).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Sequence
from typing import Any

from google.adk.events.event import Event
from google.adk.sessions.base_session_service import BaseSessionService

from ...adk import sqlite_service_tie_break
from .._fast import CALL_MARKERS, LightEvent, light_event, parse_json
from ._paged import PagedReader
from .base import (
    ReadItem,
    SessionKey,
    StoreLayout,
    Unsupported,
    Window,
    rebuilt_sessions,
)


async def _open(service: BaseSessionService, sqlite_path: str | None) -> SqliteReader:
    if sqlite_path is None:
        raise Unsupported("the SQLite file path is unknown")
    return await SqliteReader.open(sqlite_path)


LAYOUT = StoreLayout(
    module="google.adk.sessions.sqlite_session_service",
    class_name="SqliteSessionService",
    open=_open,
)


def _light_json_row(text: str | bytes) -> LightEvent:
    return light_event(parse_json(text))


class SqliteReader(PagedReader):
    """``SqliteSessionService``'s file, on a ``mode=ro`` connection."""

    description = "SqliteSessionService tables"
    light = staticmethod(_light_json_row)

    def __init__(self, path: str, tie_break: str) -> None:
        from urllib.parse import quote

        self._connection = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True)
        columns = {row[1] for row in self._connection.execute("PRAGMA table_info(events)")}
        needed = {"app_name", "user_id", "session_id", "timestamp", "event_data"}
        if not needed <= columns:
            self._connection.close()
            raise Unsupported(f"events table lacks {sorted(needed - columns)}")
        self._tie_break = tie_break

    @classmethod
    async def open(cls, path: str) -> SqliteReader:
        return cls(path, await sqlite_service_tie_break() or "id")

    def close(self) -> None:
        self._connection.close()

    async def list_apps(self) -> list[str]:
        rows = self._connection.execute("SELECT DISTINCT app_name FROM sessions ORDER BY 1")
        return [row[0] for row in rows]

    async def count(self, window: Window) -> int | None:
        sql = "SELECT count(*) FROM sessions WHERE 1 = 1"
        params: list[Any] = []
        if window.apps is not None:
            sql += f" AND app_name IN ({','.join('?' for _ in window.apps)})"
            params.extend(window.apps)
        if window.user is not None:
            sql += " AND user_id = ?"
            params.append(window.user)
        return int(self._connection.execute(sql, params).fetchone()[0])

    async def fetch_page(
        self, fetching: Any, app: str, user: str | None, after: tuple[str, str] | None, limit: int
    ) -> Sequence[Any]:
        sql = "SELECT user_id, id, update_time FROM sessions WHERE app_name = ?"
        params: list[Any] = [app]
        if user is not None:
            sql += " AND user_id = ?"
            params.append(user)
        if after is not None:
            sql += " AND (user_id, id) > (?, ?)"
            params.extend(after)
        sql += " ORDER BY user_id, id LIMIT ?"
        params.append(limit)
        return self._connection.execute(sql, params).fetchall()

    async def fetch_rows(
        self, fetching: Any, app: str, keys: list[SessionKey]
    ) -> dict[tuple[str, str], list[Any]] | None:
        return self._rows(app, keys, only_calls=True)

    def _rows(
        self, app: str, kept: list[SessionKey], *, only_calls: bool
    ) -> dict[tuple[str, str], list[Any]]:
        """The `event_data` of the sessions in `kept`, in ``get_session``'s order.

        With `only_calls`, only the rows whose JSON names a call, a result or
        a rewind (`CALL_MARKERS`, by ``instr``: case-sensitive, unlike LIKE).
        """
        grouped: dict[tuple[str, str], list[Any]] = {(u, s): [] for u, s, _ in kept}
        marks = ",".join("(?, ?)" for _ in kept)
        params: list[Any] = [app]
        for user, sid, _ in kept:
            params.extend((user, sid))
        only = ""
        if only_calls:
            only = " AND (" + " OR ".join("instr(event_data, ?) > 0" for _ in CALL_MARKERS) + ")"
            params.extend(CALL_MARKERS)
        rows = self._connection.execute(
            "SELECT user_id, session_id, event_data FROM events WHERE app_name = ? "
            f"AND (user_id, session_id) IN (VALUES {marks}){only} "
            f"ORDER BY user_id, session_id, timestamp, {self._tie_break}",
            params,
        )
        for user, sid, data in rows:
            grouped[(user, sid)].append(data)
        return grouped

    async def full_read(
        self, confirming: Any, app: str, kept: list[SessionKey], timeout: float | None
    ) -> AsyncIterator[ReadItem]:
        """`kept`'s sessions rebuilt as the service's ``get_session`` does."""
        if not kept:
            return
        grouped = self._rows(app, kept, only_calls=False)
        for item in rebuilt_sessions(app, kept, grouped, Event.model_validate_json, timeout):
            yield item
