"""``DatabaseSessionService``'s tables (``postgresql+asyncpg://``, ``sqlite+aiosqlite://`` ...).

ADK records its schema version in ``adk_internal_metadata``
(``sessions/migration/_schema_check_utils.py``): ``"1"`` is the JSON layout
(``events.event_data``), ``"0"`` (or no metadata table and an
``events.actions`` column) the legacy pickled layout. Rows are loaded with the
*installed* ADK's own ORM classes (``sessions/schemas/v0.py`` / ``v1.py``) and
turned into events by their own ``to_event()``, so column types, pickle
restrictions (``sessions/_restricted_pickle.py``, where ADK has it) and the
payload rules of each ADK version apply unchanged. Any other recorded version,
or an ADK without the ``schemas`` package, is not read directly: the scan
falls back to ``get_session`` and says why.

Events come in ``timestamp`` order, ties broken on ``id`` as ADK does where it
breaks them (where it does not, the database picks; ``id`` order here). The fast path (schema 1)
asks the database only for the rows naming a call, a result or a rewind; on
PostgreSQL through asyncpg directly, and so are schema 1's confirmations (the
rows ADK's column types would give, `stored_json`). Two connections: the pages and their rows
on one (fetched ahead with ``concurrency`` >= 2), the confirmations on the other.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

from google.adk.sessions.base_session_service import BaseSessionService

from ...adk import internals
from .._fast import CALL_MARKERS, LightEvent, light_event, parse_json
from ._paged import PagedReader
from .base import (
    NoAdkTables,
    ReadItem,
    SessionKey,
    StoreLayout,
    UnreadableSession,
    Unsupported,
    Window,
    adapted,
    rebuilt_sessions,
)

logger = logging.getLogger("adk_pairing.cli")

#: Schema versions of DatabaseSessionService this module reads (as ADK records them).
KNOWN_DATABASE_SCHEMAS = ("0", "1")

#: PostgreSQL (``event_data`` is JSONB): the members that make an event matter.
#: SQL/JSON paths in lax mode, so a member of an unexpected type is skipped,
#: never an error; both spellings ADK's models read.
JSONB_CALL_PATHS = (
    "$.content.parts[*] ? (exists(@.function_call) || exists(@.function_response)"
    " || exists(@.functionCall) || exists(@.functionResponse))",
    "$.actions ? (exists(@.rewind_before_invocation_id) || exists(@.rewindBeforeInvocationId))",
)


async def _open(service: BaseSessionService, sqlite_path: str | None) -> DatabaseReader:
    return await DatabaseReader.open(adapted(internals.database_engine, service))


LAYOUT = StoreLayout(
    module="google.adk.sessions.database_session_service",
    class_name="DatabaseSessionService",
    open=_open,
)


def _schema_classes(version: str) -> tuple[Any, Any]:
    """The installed ADK's (StorageSession, StorageEvent) ORM classes for `version`."""
    try:
        if version == "1":
            from google.adk.sessions.schemas.v1 import StorageEvent, StorageSession
        else:
            from google.adk.sessions.schemas.v0 import StorageEvent, StorageSession
    except ImportError as error:  # an ADK without the schemas package
        raise Unsupported(
            f"the installed google-adk has no sessions.schemas package ({error})"
        ) from error
    return StorageSession, StorageEvent


async def _schema_version(engine: Any) -> str:
    """The schema version ADK recorded, detected as ADK detects it.

    ``sessions/migration/_schema_check_utils.py``: the value of
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


class DatabaseReader(PagedReader):
    """``DatabaseSessionService`` tables, read with ADK's own ORM classes."""

    def __init__(self, engine: Any, version: str) -> None:
        # The fast path reads schema 1's JSON; schema 0's pickles only ADK reads.
        self.light = _light_v1_row if version == "1" else None
        self._engine = engine
        self._version = version
        self._session_model, self._event_model = _schema_classes(version)
        kind = "JSON" if version == "1" else "pickled actions"
        self.description = f"DatabaseSessionService schema {version} ({kind})"

    @classmethod
    async def open(cls, engine: Any) -> DatabaseReader:
        version = await _schema_version(engine)
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

    @contextlib.asynccontextmanager
    async def connections(self, concurrency: int) -> AsyncIterator[tuple[Any, Any]]:
        """Two ORM sessions with read-ahead (pages and rows; confirmations), else one."""
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
            yield fetching, confirming

    async def fetch_page(
        self, orm: Any, app: str, user: str | None, after: tuple[str, str] | None, limit: int
    ) -> Sequence[Any]:
        from sqlalchemy import select, tuple_

        if self._engine.dialect.driver == "asyncpg":
            return await self._page_asyncpg(orm, app, user, after, limit)
        sessions = self._session_model
        page = select(sessions.user_id, sessions.id, sessions.update_time).where(
            sessions.app_name == app
        )
        if user is not None:
            page = page.where(sessions.user_id == user)
        if after is not None:
            page = page.where(tuple_(sessions.user_id, sessions.id) > after)
        page = page.order_by(sessions.user_id, sessions.id).limit(limit)
        return (await orm.execute(page)).all()

    async def _page_asyncpg(
        self, orm: Any, app: str, user: str | None, after: tuple[str, str] | None, limit: int
    ) -> Sequence[Any]:
        """`fetch_page`'s statement on the session's own asyncpg connection.

        Every worker of a ``--jobs`` scan pages through all the keys, so
        SQLAlchemy's per-statement and per-row handling would be paid once per worker.
        """
        quote = self._engine.dialect.identifier_preparer.quote
        where = ["app_name = $1"]
        values: list[Any] = [app]
        if user is not None:
            values.append(user)
            where.append(f"user_id = ${len(values)}")
        if after is not None:
            values.extend(after)
            where.append(f"(user_id, id) > (${len(values) - 1}, ${len(values)})")
        values.append(limit)
        sql = (
            f"SELECT user_id, id, update_time FROM {quote(self._session_model.__table__.name)} "
            f"WHERE {' AND '.join(where)} ORDER BY user_id, id LIMIT ${len(values)}"
        )
        connection = await orm.connection()
        raw = await connection.get_raw_connection()
        return await raw.driver_connection.fetch(sql, *values)

    async def full_read(
        self, orm: Any, app: str, kept: list[SessionKey], timeout: float | None
    ) -> AsyncIterator[ReadItem]:
        """`kept`'s sessions rebuilt by the installed ADK's own ``to_event``."""
        async for item in self._rebuilt(orm, app, kept, timeout):
            yield item
        orm.expunge_all()

    async def _rebuilt(
        self, orm: Any, app: str, kept: list[SessionKey], timeout: float | None
    ) -> AsyncIterator[ReadItem]:
        from sqlalchemy import select, tuple_

        if not kept:
            return
        events = self._event_model
        keys = [(user, sid) for user, sid, _ in kept]
        if self._version == "1":
            # Schema 1's to_event() reads only the id, invocation_id, timestamp
            # and event_data columns, so it runs on a plain Core row (with the
            # columns' own types applied): a third of the cost of loading ORM objects.
            table = events.__table__
            c = table.c
            source = select(
                c.user_id, c.session_id, c.id, c.invocation_id, c.timestamp, c.event_data
            )
            columns = c
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
            if self._version == "1" and self._engine.dialect.driver == "asyncpg":
                rows: Sequence[Any] = await self._full_rows_asyncpg(orm, app, keys)
            else:
                # One buffered fetch per batch (the batch bounds memory already):
                # streaming row by row costs a greenlet switch per row.
                result = await orm.execute(query)
                rows = result.all() if self._version == "1" else result.scalars().all()
            for row in rows:
                grouped[(row.user_id, row.session_id)].append(row)
        except Exception as error:
            if orm.in_transaction():
                # A statement the server refused leaves the transaction unusable
                # for the one-at-a-time reads below.
                await orm.rollback()
            # A row ADK's own column types cannot load (e.g. a pickle the
            # restricted unpickler refuses) fails the whole batch: read its
            # sessions one at a time so only the broken one is reported.
            if len(kept) == 1:
                user, sid, _ = kept[0]
                yield UnreadableSession(app, user, sid, error)
                return
            for one in kept:
                async for item in self._rebuilt(orm, app, [one], timeout):
                    yield item
            return
        for item in rebuilt_sessions(app, kept, grouped, events.to_event, timeout):
            yield item

    async def _full_rows_asyncpg(
        self, orm: Any, app: str, keys: list[tuple[str, str]]
    ) -> list[StoredEventRow]:
        """The confirming query's rows on the session's own asyncpg connection.

        The same rows, order and values as through SQLAlchemy (``event_data``
        as the JSON ADK's column type decodes, `stored_json`), without its
        per-row result handling and its pure-JSON decoding, which cost the
        confirmations as much as half of ADK's own ``to_event``.
        """
        quote = self._engine.dialect.identifier_preparer.quote
        sql = (
            "SELECT user_id, session_id, id, invocation_id, timestamp, event_data::text "
            f"FROM {quote(self._event_model.__table__.name)} WHERE app_name = $1 "
            "AND (user_id, session_id) IN (SELECT * FROM unnest($2::text[], $3::text[])) "
            "ORDER BY user_id, session_id, timestamp, id"
        )
        connection = await orm.connection()
        raw = await connection.get_raw_connection()
        users = [user for user, _ in keys]
        sids = [sid for _, sid in keys]
        records = await raw.driver_connection.fetch(sql, app, users, sids)
        return [
            StoredEventRow(user, sid, event_id, invocation, stamp, stored_json(text))
            for user, sid, event_id, invocation, stamp, text in records
        ]

    async def fetch_rows(
        self, orm: Any, app: str, kept: list[SessionKey]
    ) -> dict[tuple[str, str], list[Any]] | None:
        keys = [(user, sid) for user, sid, _ in kept]
        grouped: dict[tuple[str, str], list[Any]] = {key: [] for key in keys}
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


class StoredEventRow:
    """One ``events`` row of schema 1: the columns ADK's ``to_event`` reads, and the keys."""

    __slots__ = ("event_data", "id", "invocation_id", "session_id", "timestamp", "user_id")

    def __init__(
        self,
        user_id: str,
        session_id: str,
        event_id: str,
        invocation_id: str,
        timestamp: Any,
        event_data: Any,
    ) -> None:
        self.user_id = user_id
        self.session_id = session_id
        self.id = event_id
        self.invocation_id = invocation_id
        self.timestamp = timestamp
        self.event_data = event_data


#: A run of digits as long as the shortest integer orjson may not give as an int.
_LONG_DIGIT_RUN = re.compile(r"[0-9]{19,}")


def stored_json(text: str | None) -> Any:
    """A JSONB value's text decoded as SQLAlchemy's asyncpg dialect decodes it for ADK.

    That dialect uses the standard library's ``json.loads``. orjson gives the
    same objects for every document both accept, except integers outside
    64 bits (below -2**63 or above 2**64 - 1): orjson 3.13 gives those as
    floats, and older releases refuse them. A document with a run of 19 or
    more digits anywhere (a string included: a cheap, conservative test), and
    one orjson refuses (``NaN``, for one), is decoded by ``json.loads``.
    """
    if text is None:
        return None
    if _LONG_DIGIT_RUN.search(text) is None:
        try:
            return parse_json(text)
        except ValueError:
            pass
    return json.loads(text)


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
