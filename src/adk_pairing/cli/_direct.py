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

Two modes. By default (the fast path, `_fast`) the SQL readers ask the database
only for the rows that name a call, a result or a rewind, and every reader
parses only the fields the analysis reads; a session that path finds broken is
read again with ADK's own row models as above, and only that is reported
(`ClearedSession` is a session the fast path found healthy). With ``strict``
every event is rebuilt by ADK, as ``get_session`` does.

Event order is the installed ADK's. Its services sort by ``timestamp`` and break
ties differently by version: ``DatabaseSessionService`` on ``id`` from 2.9 (not at
all before: the database picks), ``SqliteSessionService`` on ``id`` in 2.9-2.11 and
on ``rowid`` from 2.12 (``sessions/sqlite_session_service.py:348``, 2.13). For
``SqliteSessionService`` the order is probed (`probe_tie_break`): the installed
service writes events with equal timestamps to a scratch file and reads them back.
Where ADK has no tie-break, events with equal timestamps come in ``id`` order here
(ADK's own order is then undefined).

`Shard` splits a store by a stable hash of each session's key, so N scans cover
every session exactly once. Memory holds one batch of sessions (``batch_size``
sessions and their events), never the whole store: three batches when the fast
path on ``DatabaseSessionService`` fetches the next batch while parsing one (with
``concurrency`` >= 2; two queries in flight), else one query at a time. Nothing
here writes: SQL connections are the read-only ones `_store` opened, and the Redis
readers issue only ``SCAN``, ``GET``, ``SMEMBERS`` and ``SCARD``.
The services' private attributes are read in `_adapters` only.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import re
import sqlite3
import tempfile
import time
import zlib
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from google.adk.events.event import Event
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.session import Session

from . import _adapters
from ._fast import (
    CALL_MARKER_BYTES,
    CALL_MARKERS,
    LightEvent,
    light_event,
    needs_confirmation,
    parse_json,
)

logger = logging.getLogger("adk_pairing.cli")

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


@dataclass
class ClearedSession:
    """A session the fast path read and found without an unanswered call."""

    app: str
    user: str
    session: str
    update_time: float


ReadItem = StoredSession | UnreadableSession | ClearedSession


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `count` (0 <= index < count): the sessions whose key hashes to it.

    The hash is CRC-32 of the session's key as the store names it (app, user
    and session id), so every scan of the same store, anywhere, puts a
    session in the same shard, and N scans with indices 0..N-1 cover every
    session exactly once.
    """

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``K/N`` as a shard; raises ValueError saying what is wrong."""
        index, sep, count = text.partition("/")
        try:
            shard = cls(int(index), int(count))
        except ValueError:
            raise ValueError(f"{text!r} is not K/N, e.g. 0/3") from None
        if not sep or shard.count < 1 or not 0 <= shard.index < shard.count:
            raise ValueError(f"{text!r}: need 0 <= K < N, e.g. 0/3, 1/3 and 2/3")
        return shard

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def covers(self, *key: str) -> bool:
        if self.count == 1:
            return True
        return zlib.crc32("\x1f".join(key).encode()) % self.count == self.index


@dataclass(frozen=True)
class Window:
    """Which sessions to read: apps (None = all), one user, update-time bounds, a shard."""

    apps: Sequence[str] | None
    user: str | None
    since: float | None = None
    until: float | None = None
    #: Seconds rebuilding one session's events may take (SQL readers); None: no limit.
    timeout: float | None = None
    shard: Shard | None = None

    def wants_app(self, app: str) -> bool:
        return self.apps is None or app in self.apps

    def in_shard(self, app: str, user: str, session: str) -> bool:
        return self.shard is None or self.shard.covers(app, user, session)

    def wants(self, app: str, user: str, update_time: float) -> bool:
        """Whether a session with these keys belongs to the window (the shard aside)."""
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

    def read(
        self, window: Window, batch_size: int, *, strict: bool = False, concurrency: int = 1
    ) -> AsyncIterator[ReadItem]:
        """Every session of `window`; `strict` rebuilds every event with ADK's models.

        At most `concurrency` queries are in flight at once.
        """
        ...


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


class NoAdkTables(Unsupported):
    """The store holds none of ADK's session tables: no service has written to it."""


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


#: Event ids written in this order by `probe_tie_break`: neither their id order
#: nor the reverse of the insertion order is the insertion order.
_PROBE_IDS = ("c", "a", "d", "b")


async def probe_tie_break(service: BaseSessionService) -> str | None:
    """How `service`'s ``get_session`` orders events with equal timestamps.

    `service` must be a fresh, writable store (a scratch file): the probe
    writes one session of four events with the same timestamp through the
    service and reads it back. Returns ``"rowid"`` (insertion order), ``"id"``
    (the events' ids), or None when the order is neither (no tie-break).
    """
    session = await service.create_session(app_name="probe", user_id="probe", session_id="probe")
    stamp = time.time()
    for event_id in _PROBE_IDS:
        event = Event(id=event_id, invocation_id="probe", author="user", timestamp=stamp)
        await service.append_event(session, event)
    read = await service.get_session(app_name="probe", user_id="probe", session_id="probe")
    order = tuple(event.id for event in read.events) if read is not None else ()
    if order == _PROBE_IDS:
        return "rowid"
    if order == tuple(sorted(_PROBE_IDS)):
        return "id"
    return None


_sqlite_tie_break: list[str | None] = []


async def sqlite_service_tie_break() -> str | None:
    """`probe_tie_break` of the installed ``SqliteSessionService`` (probed once)."""
    if not _sqlite_tie_break:
        from google.adk.sessions.sqlite_session_service import SqliteSessionService

        from ..adk_compat import close_session_service

        with tempfile.TemporaryDirectory(prefix="adk-pairing-probe-") as scratch:
            service = SqliteSessionService(db_path=str(Path(scratch) / "probe.db"))
            try:
                _sqlite_tie_break.append(await probe_tie_break(service))
            finally:
                await close_session_service(service)
    return _sqlite_tie_break[0]


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
            raise NoAdkTables("the database has no ADK sessions/events tables")
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

    async def read(
        self, window: Window, batch_size: int, *, strict: bool = False, concurrency: int = 1
    ) -> AsyncIterator[ReadItem]:
        from sqlalchemy import select, tuple_
        from sqlalchemy.ext.asyncio import AsyncSession

        apps = window.apps if window.apps is not None else await self.list_apps()
        if not strict and self._version == "1":
            async for item in self._fast_read(window, apps, batch_size, concurrency):
                yield item
            return
        events = self._event_model
        async with AsyncSession(self._engine, expire_on_commit=False) as orm:
            for app in apps:
                async for kept in self._pages(orm, app, window, batch_size):
                    batch = self._batch(orm, app, kept, events, select, tuple_, window.timeout)
                    async for item in batch:
                        yield item
                    orm.expunge_all()

    async def _pages(
        self, orm: Any, app: str, window: Window, batch_size: int
    ) -> AsyncIterator[list[tuple[str, str, float]]]:
        """The keys of `app`'s sessions in `window`, `batch_size` sessions a page."""
        from sqlalchemy import select, tuple_

        sessions = self._session_model
        after: tuple[str, str] | None = None
        while True:
            # Keyset pages over the primary key: each page costs the same
            # however deep into the table it is.
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
                return
            after = (rows[-1][0], rows[-1][1])
            kept = [
                (user, sid, _utc_epoch(updated))
                for user, sid, updated in rows
                if window.wants(app, user, _utc_epoch(updated)) and window.in_shard(app, user, sid)
            ]
            if kept:
                yield kept
            if len(rows) < batch_size:
                return

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

    async def _fast_read(
        self, window: Window, apps: Sequence[str], batch_size: int, concurrency: int
    ) -> AsyncIterator[ReadItem]:
        """Schema 1 by the fast path: only rows naming a call, result or rewind.

        With `concurrency` >= 2 the rows of the next batch are fetched on a
        second connection while this one's are parsed (`prefetched`), so the
        database's work and the parsing overlap; at most two queries are in
        flight. Sessions to confirm are gathered across batches (at most
        `batch_size`, of one app) and read in full together.
        """
        from sqlalchemy import select, tuple_
        from sqlalchemy.ext.asyncio import AsyncSession

        async with contextlib.AsyncExitStack() as stack:
            confirming = await stack.enter_async_context(
                AsyncSession(self._engine, expire_on_commit=False)
            )
            fetching = confirming
            if concurrency >= 2:
                fetching = await stack.enter_async_context(
                    AsyncSession(self._engine, expire_on_commit=False)
                )
            batches = self._fast_batches(fetching, window, apps, batch_size)
            if fetching is not confirming:
                batches = prefetched(batches)
            # Closed first (the stack unwinds in reverse): no fetch outlives its session.
            batches = await stack.enter_async_context(contextlib.aclosing(batches))
            pending_app = ""
            pending: list[tuple[str, str, float]] = []

            async def confirm() -> AsyncIterator[ReadItem]:
                events = self._event_model
                full = self._batch(
                    confirming, pending_app, pending, events, select, tuple_, window.timeout
                )
                async for item in full:
                    yield item
                confirming.expunge_all()
                pending.clear()

            async for app, kept, grouped in batches:
                if pending and app != pending_app:
                    async for item in confirm():
                        yield item
                pending_app = app
                for user, sid, updated in kept:
                    # No rows (the fast read failed): ADK's full read decides.
                    verdict = (
                        True
                        if grouped is None
                        else _fast_verdict(grouped.pop((user, sid)), _light_v1_row, window.timeout)
                    )
                    if isinstance(verdict, BaseException):
                        yield UnreadableSession(app, user, sid, verdict)
                    elif verdict:
                        pending.append((user, sid, updated))
                        if len(pending) >= batch_size:
                            async for item in confirm():
                                yield item
                    else:
                        yield ClearedSession(app, user, sid, updated)
            if pending:
                async for item in confirm():
                    yield item

    async def _fast_batches(
        self, orm: Any, window: Window, apps: Sequence[str], batch_size: int
    ) -> AsyncIterator[tuple[str, list[tuple[str, str, float]], dict[Any, list[Any]] | None]]:
        """Per page of sessions: (app, their keys, their kept rows by key or None).

        None when the filtered query failed: whatever it met, ADK's own full
        read says what is wrong.
        """
        for app in apps:
            async for kept in self._pages(orm, app, window, batch_size):
                yield app, kept, await self._fast_rows(orm, app, kept)

    async def _fast_rows(
        self, orm: Any, app: str, kept: list[tuple[str, str, float]]
    ) -> dict[Any, list[Any]] | None:
        keys = [(user, sid) for user, sid, _ in kept]
        grouped: dict[Any, list[Any]] = {key: [] for key in keys}
        try:
            if self._engine.dialect.driver == "asyncpg":
                rows = await self._fast_rows_asyncpg(orm, app, keys)
            else:
                rows = (await orm.execute(self._fast_query(app, keys))).all()
        except Exception:
            logger.debug("fast read of a batch failed; reading it in full", exc_info=True)
            if orm.in_transaction():
                await orm.rollback()
            return None
        for user, sid, invocation, text in rows:
            grouped[(user, sid)].append((invocation, text))
        return grouped

    def _fast_query(self, app: str, keys: list[tuple[str, str]]) -> Any:
        """The rows of `keys` naming a call, result or rewind, in ``get_session``'s order."""
        from sqlalchemy import Text, cast, select, tuple_

        columns = self._event_model.__table__.c
        return (
            select(
                columns.user_id,
                columns.session_id,
                columns.invocation_id,
                cast(columns.event_data, Text),
            )
            .where(columns.app_name == app)
            .where(tuple_(columns.user_id, columns.session_id).in_(keys))
            .where(_names_a_call(columns.event_data, self._engine.dialect.name))
            .order_by(columns.user_id, columns.session_id, columns.timestamp, columns.id)
        )

    async def _fast_rows_asyncpg(
        self, orm: Any, app: str, keys: list[tuple[str, str]]
    ) -> Sequence[Any]:
        """`_fast_query` as SQL on the session's own asyncpg connection.

        The same statement, in its transaction; asyncpg's records skip
        SQLAlchemy's per-row result handling, which the filtered rows
        (about half of a store's) would otherwise pay.
        """
        table = self._event_model.__table__
        quote = self._engine.dialect.identifier_preparer.quote
        paths = " OR ".join(
            f"jsonb_path_exists(event_data, ${n}::jsonpath)"
            for n in range(4, 4 + len(JSONB_CALL_PATHS))
        )
        sql = (
            "SELECT user_id, session_id, invocation_id, event_data::text "
            f"FROM {quote(table.name)} WHERE app_name = $1 "
            "AND (user_id, session_id) IN (SELECT * FROM unnest($2::text[], $3::text[])) "
            f"AND ({paths}) ORDER BY user_id, session_id, timestamp, id"
        )
        connection = await orm.connection()
        raw = await connection.get_raw_connection()
        users = [user for user, _ in keys]
        sids = [sid for _, sid in keys]
        return await raw.driver_connection.fetch(sql, app, users, sids, *JSONB_CALL_PATHS)


_T = TypeVar("_T")


async def prefetched(source: AsyncIterator[_T]) -> AsyncIterator[_T]:
    """`source`'s items, the next one fetched while the caller works on this one.

    One item is fetched ahead (a task and a queue of one): memory holds at
    most three of `source`'s items, and `source` runs one query at a time.
    """
    queue: asyncio.Queue[tuple[bool, Any]] = asyncio.Queue(maxsize=1)

    async def produce() -> None:
        try:
            async for item in source:
                await queue.put((False, item))
        except Exception as error:
            await queue.put((True, error))
        else:
            await queue.put((True, None))
        finally:
            await _close(source)

    producer = asyncio.create_task(produce())
    try:
        while True:
            done, value = await queue.get()
            if done:
                if value is not None:
                    raise value
                return
            yield value
    finally:
        producer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await producer


async def _close(source: AsyncIterator[Any]) -> None:
    aclose = getattr(source, "aclose", None)
    if aclose is not None:
        await aclose()


#: PostgreSQL (``event_data`` is JSONB): the members that make an event matter.
#: SQL/JSON paths in lax mode, so a member of an unexpected type is skipped,
#: never an error; both spellings ADK's models read.
JSONB_CALL_PATHS = (
    "$.content.parts[*] ? (exists(@.function_call) || exists(@.function_response)"
    " || exists(@.functionCall) || exists(@.functionResponse))",
    "$.actions ? (exists(@.rewind_before_invocation_id) || exists(@.rewindBeforeInvocationId))",
)


def _names_a_call(event_data: Any, dialect: str) -> Any:
    """A condition true for every stored event naming a call, a result or a rewind.

    On PostgreSQL the JSONB members are tested in place (turning JSONB into
    text to match it costs more than the rest of the read); elsewhere the
    column is text and a substring search for `CALL_MARKERS` is conservative:
    a text part that merely mentions ``function_call`` is fetched too, and
    found harmless.
    """
    from sqlalchemy import Text, cast, func, literal, or_

    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import JSONPATH

        paths = (cast(literal(path), JSONPATH) for path in JSONB_CALL_PATHS)
        return or_(*(func.jsonb_path_exists(event_data, path) for path in paths))
    text = cast(event_data, Text)
    if dialect == "sqlite":
        # instr is a plain byte search; LIKE folds case on every byte.
        return or_(*(func.instr(text, marker) > 0 for marker in CALL_MARKERS))
    return or_(*(text.contains(marker) for marker in CALL_MARKERS))


def _light_v1_row(row: tuple[str | None, str]) -> LightEvent:
    invocation, text = row
    return light_event(parse_json(text), invocation)


def _light_json_row(text: str | bytes) -> LightEvent:
    return light_event(parse_json(text))


def _fast_verdict(rows: Sequence[Any], convert: Any, timeout: float | None) -> bool | BaseException:
    """Whether a session read by the fast path needs its full read (True) or is healthy.

    A row the fast path cannot parse sends the session to the full read,
    whose verdict (unreadable, most likely) is reported. Returns the
    `SessionTimedOut` when the timeout passed.
    """
    if not rows:
        return False
    try:
        events = rebuild(rows, convert, timeout)
    except SessionTimedOut as error:
        return error
    except Exception:
        return True
    return needs_confirmation(events)


def _v1_event_columns(table: Any) -> tuple[Any, ...]:
    return (table.c.id, table.c.invocation_id, table.c.timestamp, table.c.event_data)


# -- SqliteSessionService -----------------------------------------------------


class SqliteReader:
    """``SqliteSessionService``'s file, on a ``mode=ro`` connection."""

    description = "SqliteSessionService tables"

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

    async def read(
        self, window: Window, batch_size: int, *, strict: bool = False, concurrency: int = 1
    ) -> AsyncIterator[ReadItem]:
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
                    if window.wants(app, user, float(updated)) and window.in_shard(app, user, sid)
                ]
                batch = self._batch if strict else self._fast_batch
                for item in batch(app, kept, window.timeout):
                    yield item
                if len(rows) < batch_size:
                    break

    def _rows(
        self, app: str, kept: list[tuple[str, str, float]], *, only_calls: bool
    ) -> dict[tuple[str, str], list[str]]:
        """The `event_data` of the sessions in `kept`, in ``get_session``'s order.

        With `only_calls`, only the rows whose JSON names a call, a result or
        a rewind (`CALL_MARKERS`, by ``instr``: case-sensitive, unlike LIKE).
        """
        grouped: dict[tuple[str, str], list[str]] = {(u, s): [] for u, s, _ in kept}
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

    def _fast_batch(
        self, app: str, kept: list[tuple[str, str, float]], timeout: float | None
    ) -> Iterable[ReadItem]:
        if not kept:
            return
        grouped = self._rows(app, kept, only_calls=True)
        confirm: list[tuple[str, str, float]] = []
        for user, sid, updated in kept:
            verdict = _fast_verdict(grouped.pop((user, sid)), _light_json_row, timeout)
            if isinstance(verdict, BaseException):
                yield UnreadableSession(app, user, sid, verdict)
            elif verdict:
                confirm.append((user, sid, updated))
            else:
                yield ClearedSession(app, user, sid, updated)
        yield from self._batch(app, confirm, timeout)

    def _batch(
        self, app: str, kept: list[tuple[str, str, float]], timeout: float | None
    ) -> Iterable[ReadItem]:
        if not kept:
            return
        grouped = self._rows(app, kept, only_calls=False)
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


def _fast_session(raw: Any, app: str, user: str, sid: str, timeout: float | None) -> ReadItem:
    """A stored ``Session`` JSON by the fast path; the full parse when it finds something.

    `raw` is parsed once as plain JSON; its events become `LightEvent`s
    only when the document names a call, a result or a rewind at all.
    """
    data = raw.encode() if isinstance(raw, str) else raw
    try:
        session = parse_json(data)
        events = session.get("events") or ()
        if not isinstance(events, list):
            raise TypeError("events is not a list")
        update_time = float(
            session.get("last_update_time", session.get("lastUpdateTime", 0.0)) or 0.0
        )
        key = (
            session.get("app_name", session.get("appName")),
            session.get("user_id", session.get("userId")),
            session["id"],
        )
        if not all(isinstance(part, str) for part in key):
            raise TypeError("the session's app, user or id is not a string")
    except Exception:
        return _rebuild_session(raw, app, user, sid)
    if not any(marker in data for marker in CALL_MARKER_BYTES):
        return ClearedSession(*key, update_time)
    verdict = _fast_verdict(events, light_event, timeout)
    if isinstance(verdict, BaseException):
        return UnreadableSession(*key, verdict)
    if verdict:
        return _rebuild_session(raw, app, user, sid)
    return ClearedSession(*key, update_time)


def _read_session(
    raw: Any, app: str, user: str, sid: str, window: Window, strict: bool
) -> ReadItem:
    if strict:
        return _rebuild_session(raw, app, user, sid)
    return _fast_session(raw, app, user, sid, window.timeout)


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

    def _key_parts(self, key: str) -> tuple[str, str, str]:
        """(app, user, session) as the key names them (ids may contain ':')."""
        app, _, rest = key[len(self._prefix) :].partition(":")
        user, _, sid = rest.partition(":")
        return app, user, sid

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

    async def read(
        self, window: Window, batch_size: int, *, strict: bool = False, concurrency: int = 1
    ) -> AsyncIterator[ReadItem]:
        for pattern in self._patterns(window):
            async for keys in _scan_keys(self._client, pattern, "string", batch_size):
                keys = [
                    key
                    for key in keys
                    if not self._is_state_key(key) and window.in_shard(*self._key_parts(key))
                ]
                if not keys:
                    continue
                for key, raw in zip(keys, await _get_many(self._client, keys), strict=True):
                    if not raw:
                        continue  # expired between SCAN and GET
                    # The key names the session only for the error report: app
                    # and user ids may contain ':', so a readable session's own
                    # fields decide.
                    item = _read_session(raw, *self._key_parts(key), window, strict)
                    if _in_window(window, item):
                        yield item


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

    async def read(
        self, window: Window, batch_size: int, *, strict: bool = False, concurrency: int = 1
    ) -> AsyncIterator[ReadItem]:
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
                    ids = sorted(sid for sid in map(_text, ids) if window.in_shard(app, owner, sid))
                    for start in range(0, len(ids), batch_size):
                        chunk = ids[start : start + batch_size]
                        raws = await _get_many(self._client, [f"session:{i}" for i in chunk])
                        for sid, raw in zip(chunk, raws, strict=True):
                            if not raw:
                                # Dangling id: its own list_sessions skips it too.
                                continue
                            item = _read_session(raw, app, owner, sid, window, strict)
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
    try:
        if name == "DatabaseSessionService" and module.startswith("google.adk.sessions"):
            return await DatabaseReader.open(_adapters.database_engine(service))
        if name == "SqliteSessionService" and module.startswith("google.adk.sessions"):
            if sqlite_path is None:
                raise Unsupported("the SQLite file path is unknown")
            return await SqliteReader.open(sqlite_path)
        if name == "RedisSessionService" and module.startswith("google.adk.integrations.redis"):
            return AdkRedisReader(*_adapters.adk_redis_client(service))
        if name == "RedisSessionService" and module.startswith("google.adk_community"):
            return CommunityRedisReader(_adapters.community_redis_client(service))
    except _adapters.InternalsChanged as why:
        raise Unsupported(str(why)) from None
    raise Unsupported(f"{name} ({module}) has no layout adk-pairing reads directly")
