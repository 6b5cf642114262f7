"""Reading stored sessions straight from a store's tables or keys, in batches.

`scan` on ADK's ``get_session`` pays, per session, a pool check-out, a
transaction, four queries and an ORM load (about 9 ms for 50 events on a local
PostgreSQL, docs/cli.md). A scan needs none of the state merging nor the
per-session round trips, so for the layouts we can read we fetch the events of
many sessions at once and rebuild them exactly as ADK does:

* ``DatabaseSessionService`` (``postgresql+asyncpg://``, ``sqlite+aiosqlite://``
  ...). ADK records its schema version in ``adk_internal_metadata``
  (``sessions/migration/_schema_check_utils.py:45``): ``"1"`` is the JSON
  layout (``events.event_data``), ``"0"`` (or no metadata table and an
  ``events.actions`` column) the legacy pickled layout. Rows are loaded with
  the *installed* ADK's own ORM classes (``sessions/schemas/v0.py`` / ``v1.py``)
  and turned into events by their own ``to_event()``, so column types, pickle
  restrictions (``sessions/_restricted_pickle.py``, 2.9+) and the payload
  rules of each ADK version apply unchanged. Any other recorded version, or
  an ADK without the ``schemas`` package (1.20), is not read directly: the
  scan falls back to ``get_session`` and says why.
* ``SqliteSessionService`` (``sqlite://``): one DDL on every supported version
  (``sessions/sqlite_session_service.py``, ``EVENTS_TABLE_SCHEMA``); events are
  ``Event.model_validate_json(event_data)``, as its ``get_session`` does
  (2.13 ``:369``). The file is opened with ``mode=ro``.
* ADK's ``google.adk.integrations.redis.RedisSessionService`` (2.9+): one
  string key per session, ``{key_prefix}{app}:{user}:{session}``, holding the
  whole ``Session`` as JSON (``_redis_session_service.py:91``);
  ``get_session`` is ``Session.model_validate_json`` (``:247``). Keys are
  found with ``SCAN`` and read with pipelined ``GET``s.
* google-adk-community's ``RedisSessionService``: ``session:{id}`` holds the
  ``Session`` JSON; the set ``app::{app}:{user}`` lists a user's session ids
  (``RedisKeys`` in ``adk_community/sessions/redis_session_service.py``).
  Sets are found with ``SCAN``, members and sessions read in pipelines.

Event order is the installed ADK's. Its services sort by ``timestamp`` and break
ties differently by version: ``DatabaseSessionService`` on ``id`` from 2.9 (not at
all before: the database picks), ``SqliteSessionService`` on ``id`` in 2.9-2.11 and
on ``rowid`` from 2.12 (``sessions/sqlite_session_service.py:348``, 2.13). The
tie-break is read from the ``ORDER BY`` of the installed ``get_session``
(`tie_break`), not assumed from a version number; where ADK has none, events with
equal timestamps come in ``id`` order here (ADK's own order is then undefined).
Memory holds one batch of sessions (``batch_size`` sessions and their events),
never the whole store.
Nothing here writes: SQL connections are the read-only ones `_store` opened,
and the Redis readers issue only ``SCAN``, ``GET``, ``SMEMBERS`` and ``SCARD``.
"""

from __future__ import annotations

import datetime
import functools
import inspect
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from google.adk.events.event import Event
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.session import Session

#: Sessions fetched per batch by default: ~5,000 events of 50-event sessions.
DEFAULT_BATCH_SIZE = 100

#: Schema versions of DatabaseSessionService this module reads (as ADK records them).
KNOWN_DATABASE_SCHEMAS = ("0", "1")


@dataclass
class StoredSession:
    """One session as stored, its events rebuilt with ADK's own `Event` model."""

    app: str
    user: str
    session: str
    update_time: float
    events: list[Event]


@dataclass
class UnreadableSession:
    """A session whose stored form ADK itself could not load."""

    app: str
    user: str
    session: str
    error: BaseException


ReadItem = StoredSession | UnreadableSession


@dataclass(frozen=True)
class Window:
    """Which sessions to read: apps (None = all), one user, update-time bounds."""

    apps: Sequence[str] | None
    user: str | None
    since: float | None = None
    until: float | None = None
    #: Seconds rebuilding one session's events may take (SQL readers); None: no limit.
    timeout: float | None = None

    def wants_app(self, app: str) -> bool:
        return self.apps is None or app in self.apps

    def wants(self, app: str, user: str, update_time: float) -> bool:
        """Whether a session with these keys belongs to the window."""
        if not self.wants_app(app) or (self.user is not None and user != self.user):
            return False
        if self.since is not None and update_time < self.since:
            return False
        return self.until is None or update_time <= self.until


class DirectReader(Protocol):
    """What `scan` needs from a store read around ``get_session``."""

    #: Shown to the operator, e.g. "DatabaseSessionService schema 1 (JSON)".
    description: str

    async def list_apps(self) -> list[str]: ...

    async def count(self, window: Window) -> int | None:
        """About how many sessions `read` will yield (for progress), None if unknown."""
        ...

    def read(self, window: Window, batch_size: int) -> AsyncIterator[ReadItem]: ...


class SessionTimedOut(Exception):
    """Rebuilding one session's events took longer than the window's timeout."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"timed out after {timeout:g} s")


#: Events rebuilt between two looks at the clock (a look costs ~1 µs, an event ~55 µs).
_CLOCK_EVERY = 64


def rebuild(rows: Sequence[Any], convert: Any, timeout: float | None) -> list[Event]:
    """`convert` applied to every row, raising `SessionTimedOut` past `timeout` seconds."""
    if timeout is None:
        return [convert(row) for row in rows]
    deadline = time.monotonic() + timeout
    events: list[Event] = []
    for start in range(0, len(rows), _CLOCK_EVERY):
        events.extend(convert(row) for row in rows[start : start + _CLOCK_EVERY])
        if time.monotonic() > deadline:
            raise SessionTimedOut(timeout)
    return events


class Unsupported(Exception):
    """The store's layout is not one this module reads; the message says why."""


def _utc_epoch(value: Any) -> float:
    """A stored update time as epoch seconds, the way ADK's readers convert it.

    ADK stores naive UTC datetimes on PostgreSQL/SQLite (``schemas/shared.py``
    ``utc_datetime_to_timestamp``) and epoch floats in SqliteSessionService.
    """
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return value.timestamp()
    return float(value)


@functools.cache
def tie_break(service_class: type, candidates: tuple[tuple[str, str], ...]) -> str | None:
    """The column the installed ``get_session`` breaks timestamp ties on.

    `candidates` pairs a fragment of an ``ORDER BY`` with its column, most
    specific first. Read from the method's source, so a version that changes
    the order is followed without a version table; None when the source names
    none of them (or is unavailable).
    """
    try:
        source = inspect.getsource(service_class.get_session)
    except (OSError, TypeError):
        return None
    for fragment, column in candidates:
        if fragment in source:
            return column
    return None


#: ``SqliteSessionService.get_session``: 2.12+ "..., rowid DESC", 2.9-2.11 "..., id DESC".
SQLITE_TIE_BREAKS = (("rowid DESC", "rowid"), ("id DESC", "id"))
#: ``DatabaseSessionService.get_session`` 2.9+: ``StorageEvent.id.desc()``.
DATABASE_TIE_BREAKS = (("StorageEvent.id.desc()", "id"),)


# -- DatabaseSessionService ---------------------------------------------------


def _database_schema_classes(version: str) -> tuple[Any, Any]:
    """The installed ADK's (StorageSession, StorageEvent) ORM classes for `version`."""
    try:
        if version == "1":
            from google.adk.sessions.schemas.v1 import StorageEvent, StorageSession
        else:
            from google.adk.sessions.schemas.v0 import StorageEvent, StorageSession
    except ImportError as error:  # google-adk 1.20 has no schemas package
        raise Unsupported(
            f"the installed google-adk has no sessions.schemas package ({error})"
        ) from error
    return StorageSession, StorageEvent


async def _database_schema_version(engine: Any) -> str:
    """The schema version ADK recorded, detected as ADK detects it.

    ``sessions/migration/_schema_check_utils.py:45`` (2.13): the value of
    ``schema_version`` in ``adk_internal_metadata``; without that table, ``"0"``
    when ``events`` has ``actions`` and no ``event_data``.
    """
    from sqlalchemy import inspect, text

    def detect(connection: Any) -> str:
        inspector = inspect(connection)
        if inspector.has_table("adk_internal_metadata"):
            key = inspector.dialect.identifier_preparer.quote("key")
            row = connection.execute(
                text(f"SELECT value FROM adk_internal_metadata WHERE {key} = :key"),
                {"key": "schema_version"},
            ).fetchone()
            if row is None:
                raise Unsupported("adk_internal_metadata has no schema_version row")
            return str(row[0])
        if not inspector.has_table("events") or not inspector.has_table("sessions"):
            raise Unsupported("the database has no ADK sessions/events tables")
        columns = {c["name"] for c in inspector.get_columns("events")}
        if "actions" in columns and "event_data" not in columns:
            return "0"
        raise Unsupported(
            f"unrecognised events table (columns {sorted(columns)}) and no schema version"
        )

    async with engine.connect() as connection:
        return await connection.run_sync(detect)


class DatabaseReader:
    """``DatabaseSessionService`` tables, read with ADK's own ORM classes."""

    def __init__(self, engine: Any, version: str) -> None:
        self._engine = engine
        self._version = version
        self._session_model, self._event_model = _database_schema_classes(version)
        kind = "JSON" if version == "1" else "pickled actions"
        self.description = f"DatabaseSessionService schema {version} ({kind})"

    @classmethod
    async def open(cls, engine: Any) -> DatabaseReader:
        version = await _database_schema_version(engine)
        if version not in KNOWN_DATABASE_SCHEMAS:
            raise Unsupported(f"DatabaseSessionService schema version {version!r} is unknown")
        return cls(engine, version)

    async def list_apps(self) -> list[str]:
        from sqlalchemy import select

        model = self._session_model
        async with self._engine.connect() as connection:
            result = await connection.execute(
                select(model.app_name).distinct().order_by(model.app_name)
            )
            return [row[0] for row in result]

    async def count(self, window: Window) -> int | None:
        from sqlalchemy import func, select

        model = self._session_model
        query = select(func.count()).select_from(model)
        if window.apps is not None:
            query = query.where(model.app_name.in_(list(window.apps)))
        if window.user is not None:
            query = query.where(model.user_id == window.user)
        async with self._engine.connect() as connection:
            return int((await connection.execute(query)).scalar_one())

    async def read(self, window: Window, batch_size: int) -> AsyncIterator[ReadItem]:
        from sqlalchemy import select, tuple_
        from sqlalchemy.ext.asyncio import AsyncSession

        sessions, events = self._session_model, self._event_model
        apps = window.apps if window.apps is not None else await self.list_apps()
        async with AsyncSession(self._engine, expire_on_commit=False) as orm:
            for app in apps:
                after: tuple[str, str] | None = None
                while True:
                    # Keyset pages over the primary key: each page costs the
                    # same however deep into the table it is.
                    page = select(sessions.user_id, sessions.id, sessions.update_time).where(
                        sessions.app_name == app
                    )
                    if window.user is not None:
                        page = page.where(sessions.user_id == window.user)
                    if after is not None:
                        page = page.where(tuple_(sessions.user_id, sessions.id) > after)
                    page = page.order_by(sessions.user_id, sessions.id).limit(batch_size)
                    rows = (await orm.execute(page)).all()
                    if not rows:
                        break
                    after = (rows[-1][0], rows[-1][1])
                    kept = [
                        (user, sid, _utc_epoch(updated))
                        for user, sid, updated in rows
                        if window.wants(app, user, _utc_epoch(updated))
                    ]
                    if kept:
                        batch = self._batch(orm, app, kept, events, select, tuple_, window.timeout)
                        async for item in batch:
                            yield item
                    orm.expunge_all()
                    if len(rows) < batch_size:
                        break

    async def _batch(
        self,
        orm: Any,
        app: str,
        kept: list[tuple[str, str, float]],
        events: Any,
        select: Any,
        tuple_: Any,
        timeout: float | None,
    ) -> AsyncIterator[ReadItem]:
        keys = [(user, sid) for user, sid, _ in kept]
        if self._version == "1":
            # Schema 1's to_event() reads only the id, invocation_id, timestamp
            # and event_data columns (2.13 schemas/v1.py:225, 2.6 :236), so it
            # runs on a plain Core row (with the columns' own types applied):
            # a third of the cost of loading ORM objects.
            table = events.__table__
            source = select(table.c.user_id, table.c.session_id, *_v1_event_columns(table))
            columns = table.c
        else:
            # Schema 0's to_event() also reads properties of the ORM class
            # (long_running_tool_ids), so its rows are loaded as ORM objects.
            source = select(events)
            columns = events
        query = (
            source.where(columns.app_name == app)
            .where(tuple_(columns.user_id, columns.session_id).in_(keys))
            .order_by(columns.user_id, columns.session_id, columns.timestamp, columns.id)
        )
        grouped: dict[tuple[str, str], list[Any]] = {key: [] for key in keys}
        try:
            # One buffered fetch per batch (the batch bounds memory already):
            # streaming row by row costs a greenlet switch per row, 12 % of
            # the scan in a profile of 1,000 x 50 events.
            result = await orm.execute(query)
            rows = result.all() if self._version == "1" else result.scalars().all()
            for row in rows:
                grouped[(row.user_id, row.session_id)].append(row)
        except Exception as error:
            # A row ADK's own column types cannot load (e.g. a pickle the
            # restricted unpickler refuses) fails the whole batch: read its
            # sessions one at a time so only the broken one is reported.
            if len(kept) == 1:
                user, sid, _ = kept[0]
                yield UnreadableSession(app, user, sid, error)
                return
            for one in kept:
                async for item in self._batch(orm, app, [one], events, select, tuple_, timeout):
                    yield item
            return
        to_event = self._event_model.to_event
        for user, sid, updated in kept:
            try:
                rebuilt = rebuild(grouped[(user, sid)], to_event, timeout)
            except Exception as error:
                yield UnreadableSession(app, user, sid, error)
                continue
            yield StoredSession(app, user, sid, updated, rebuilt)


def _v1_event_columns(table: Any) -> tuple[Any, ...]:
    return (table.c.id, table.c.invocation_id, table.c.timestamp, table.c.event_data)


# -- SqliteSessionService -----------------------------------------------------


class SqliteReader:
    """``SqliteSessionService``'s file, on a ``mode=ro`` connection."""

    description = "SqliteSessionService tables"

    def __init__(self, path: str) -> None:
        from urllib.parse import quote

        self._connection = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True)
        columns = {row[1] for row in self._connection.execute("PRAGMA table_info(events)")}
        needed = {"app_name", "user_id", "session_id", "timestamp", "event_data"}
        if not needed <= columns:
            self._connection.close()
            raise Unsupported(f"events table lacks {sorted(needed - columns)}")

        from google.adk.sessions.sqlite_session_service import SqliteSessionService

        self._tie_break = tie_break(SqliteSessionService, SQLITE_TIE_BREAKS) or "id"

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

    async def read(self, window: Window, batch_size: int) -> AsyncIterator[ReadItem]:
        apps = window.apps if window.apps is not None else await self.list_apps()
        for app in apps:
            after = ("", "")
            first = True
            while True:
                sql = "SELECT user_id, id, update_time FROM sessions WHERE app_name = ?"
                params: list[Any] = [app]
                if window.user is not None:
                    sql += " AND user_id = ?"
                    params.append(window.user)
                if not first:
                    sql += " AND (user_id, id) > (?, ?)"
                    params.extend(after)
                sql += " ORDER BY user_id, id LIMIT ?"
                params.append(batch_size)
                rows = self._connection.execute(sql, params).fetchall()
                if not rows:
                    break
                first = False
                after = (rows[-1][0], rows[-1][1])
                kept = [
                    (user, sid, float(updated))
                    for user, sid, updated in rows
                    if window.wants(app, user, float(updated))
                ]
                for item in self._batch(app, kept, window.timeout):
                    yield item
                if len(rows) < batch_size:
                    break

    def _batch(
        self, app: str, kept: list[tuple[str, str, float]], timeout: float | None
    ) -> Iterable[ReadItem]:
        if not kept:
            return
        grouped: dict[tuple[str, str], list[str]] = {(u, s): [] for u, s, _ in kept}
        marks = ",".join("(?, ?)" for _ in kept)
        params: list[Any] = [app]
        for user, sid, _ in kept:
            params.extend((user, sid))
        rows = self._connection.execute(
            "SELECT user_id, session_id, event_data FROM events WHERE app_name = ? "
            f"AND (user_id, session_id) IN (VALUES {marks}) "
            f"ORDER BY user_id, session_id, timestamp, {self._tie_break}",
            params,
        )
        for user, sid, data in rows:
            grouped[(user, sid)].append(data)
        for user, sid, updated in kept:
            try:
                rebuilt = rebuild(grouped[(user, sid)], Event.model_validate_json, timeout)
            except Exception as error:
                yield UnreadableSession(app, user, sid, error)
                continue
            yield StoredSession(app, user, sid, updated, rebuilt)


# -- Redis ----------------------------------------------------------------------

#: Keys per SCAN round trip and per pipeline.
REDIS_SCAN_COUNT = 500


def _escape_glob(value: str) -> str:
    """`value` as a literal in a Redis MATCH pattern (as ADK's `_escape_glob`)."""
    return re.sub(r"([\\*?\[\]])", r"\\\1", value)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def _scan_keys(
    client: Any, pattern: str, kind: str | None, batch_size: int
) -> AsyncIterator[list[str]]:
    """Keys matching `pattern`, `batch_size` at a time, by SCAN (never KEYS)."""
    batch: list[str] = []
    options: dict[str, Any] = {"match": pattern, "count": REDIS_SCAN_COUNT}
    if kind is not None:
        options["_type"] = kind
    async for key in client.scan_iter(**options):
        batch.append(_text(key))
        if len(batch) >= batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


def _rebuild_session(raw: Any, app: str, user: str, sid: str) -> ReadItem:
    """A stored ``Session`` JSON, parsed as both Redis services' get_session parse it."""
    try:
        session = Session.model_validate_json(raw)
    except Exception as error:
        return UnreadableSession(app, user, sid, error)
    return StoredSession(
        session.app_name, session.user_id, session.id, session.last_update_time, session.events
    )


def _in_window(window: Window, item: ReadItem) -> bool:
    if isinstance(item, UnreadableSession):
        # No update time can be read from it: app and user decide.
        return window.wants_app(item.app) and window.user in (None, item.user)
    return window.wants(item.app, item.user, item.update_time)


async def _get_many(client: Any, keys: list[str]) -> list[Any]:
    async with client.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.get(key)
        return list(await pipe.execute())


class AdkRedisReader:
    """ADK's ``RedisSessionService`` keys: ``{prefix}{app}:{user}:{session}``."""

    def __init__(self, client: Any, key_prefix: str) -> None:
        self._client = client
        self._prefix = key_prefix
        self.description = f"ADK RedisSessionService keys {key_prefix}*"

    def _is_state_key(self, key: str) -> bool:
        rest = key[len(self._prefix) :]
        return rest.startswith(("user_state:", "app_state:"))

    async def list_apps(self) -> list[str]:
        apps: set[str] = set()
        async for item in self.read(Window(apps=None, user=None), REDIS_SCAN_COUNT):
            apps.add(item.app)
        return sorted(apps)

    def _patterns(self, window: Window) -> list[str]:
        prefix = _escape_glob(self._prefix)
        if window.apps is None:
            return [f"{prefix}*"]
        user = "" if window.user is None else f"{_escape_glob(window.user)}:"
        return [f"{prefix}{_escape_glob(app)}:{user}*" for app in window.apps]

    async def count(self, window: Window) -> int | None:
        # One SCAN pass over key names only (no values): cheap next to the GETs.
        total = 0
        for pattern in self._patterns(window):
            async for keys in _scan_keys(self._client, pattern, "string", REDIS_SCAN_COUNT):
                total += sum(1 for key in keys if not self._is_state_key(key))
        return total

    async def read(self, window: Window, batch_size: int) -> AsyncIterator[ReadItem]:
        for pattern in self._patterns(window):
            async for keys in _scan_keys(self._client, pattern, "string", batch_size):
                keys = [key for key in keys if not self._is_state_key(key)]
                for key, raw in zip(keys, await _get_many(self._client, keys), strict=True):
                    if not raw:
                        continue  # expired between SCAN and GET
                    item = self._rebuild(key, raw)
                    if _in_window(window, item):
                        yield item

    def _rebuild(self, key: str, raw: Any) -> ReadItem:
        # The key names the session only for the error report: app and user
        # ids may contain ':', so a readable session's own fields decide.
        app, _, rest = key[len(self._prefix) :].partition(":")
        user, _, sid = rest.partition(":")
        return _rebuild_session(raw, app, user, sid)


class CommunityRedisReader:
    """google-adk-community's ``RedisSessionService``: per-user sets, ``session:{id}``."""

    description = "google-adk-community RedisSessionService keys (app::APP:USER, session:ID)"
    _SET_PREFIX = "app::"

    def __init__(self, client: Any) -> None:
        self._client = client

    async def list_apps(self) -> list[str]:
        apps: set[str] = set()
        async for keys in _scan_keys(self._client, f"{self._SET_PREFIX}*", "set", 1000):
            apps.update(key[len(self._SET_PREFIX) :].partition(":")[0] for key in keys)
        return sorted(apps)

    def _patterns(self, window: Window) -> list[str]:
        apps = ["*"] if window.apps is None else [_escape_glob(a) for a in window.apps]
        user = "*" if window.user is None else _escape_glob(window.user)
        return [f"{self._SET_PREFIX}{app}:{user}" for app in apps]

    async def count(self, window: Window) -> int | None:
        total = 0
        for pattern in self._patterns(window):
            async for set_keys in _scan_keys(self._client, pattern, "set", REDIS_SCAN_COUNT):
                async with self._client.pipeline(transaction=False) as pipe:
                    for key in set_keys:
                        pipe.scard(key)
                    total += sum(await pipe.execute())
        return total

    async def read(self, window: Window, batch_size: int) -> AsyncIterator[ReadItem]:
        for pattern in self._patterns(window):
            async for set_keys in _scan_keys(self._client, pattern, "set", batch_size):
                async with self._client.pipeline(transaction=False) as pipe:
                    for key in set_keys:
                        pipe.smembers(key)
                    members = await pipe.execute()
                for set_key, ids in zip(set_keys, members, strict=True):
                    app, _, owner = set_key[len(self._SET_PREFIX) :].partition(":")
                    if not window.wants_app(app):
                        continue
                    ids = sorted(_text(i) for i in ids)
                    for start in range(0, len(ids), batch_size):
                        chunk = ids[start : start + batch_size]
                        raws = await _get_many(self._client, [f"session:{i}" for i in chunk])
                        for sid, raw in zip(chunk, raws, strict=True):
                            if not raw:
                                # Dangling id: its own list_sessions skips it too.
                                continue
                            item = _rebuild_session(raw, app, owner, sid)
                            if _in_window(window, item):
                                yield item


# -- choosing a reader ----------------------------------------------------------


async def direct_reader(service: BaseSessionService, sqlite_path: str | None) -> DirectReader:
    """The reader for `service`'s layout; raises `Unsupported` saying why there is none.

    Chosen by the service's class (what ADK built for the URI), then checked
    against what the store holds.
    """
    service_class = type(service)
    if service_class.__module__ == "adk_pairing.cli._store":
        # adk-pairing's own read-only subclass (google-adk 1.20's SQLite store):
        # the layout is its ADK base class's.
        service_class = service_class.__mro__[1]
    name = service_class.__name__
    module = service_class.__module__
    if name == "DatabaseSessionService" and module.startswith("google.adk.sessions"):
        engine = getattr(service, "db_engine", None)
        if engine is None:
            raise Unsupported("this DatabaseSessionService has no db_engine")
        return await DatabaseReader.open(engine)
    if name == "SqliteSessionService" and module.startswith("google.adk.sessions"):
        if sqlite_path is None:
            raise Unsupported("the SQLite file path is unknown")
        return SqliteReader(sqlite_path)
    if name == "RedisSessionService" and module.startswith("google.adk.integrations.redis"):
        get_client = getattr(service, "_get_redis", None)
        config = getattr(service, "config", None)
        if get_client is None or config is None:
            raise Unsupported("this RedisSessionService has no client/config to read with")
        return AdkRedisReader(get_client(), config.key_prefix)
    if name == "RedisSessionService" and module.startswith("google.adk_community"):
        client = getattr(service, "cache", None)
        if client is None:
            raise Unsupported("this community RedisSessionService has no client")
        return CommunityRedisReader(client)
    raise Unsupported(f"{name} ({module}) has no layout adk-pairing reads directly")
