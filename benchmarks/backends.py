"""The stores the benchmarks wrap, opened the way an application would open them.

Each backend is a real ADK session service on a real store: an embedded SQLite
file (ADK's own `SqliteSessionService`, and `DatabaseSessionService` over
``sqlite+aiosqlite``), the local PostgreSQL server (a dedicated database,
dropped and recreated by every run) and the local Redis server (a key prefix
unique to the run). The decorator and the bare service share one inner
instance, so they share its connections and caches too.

Seeding: appending 10,000 events one `append_event` at a time costs 4-14 ms an
event on the durable stores (a commit each), and Redis rewrites the whole
session on every append, so large histories are bulk-loaded instead, with the
backend's *own* serialisation (ADK's ORM mapping for `DatabaseSessionService`,
the same INSERT and ``model_dump_json`` for `SqliteSessionService`, the same
session document for Redis). Small histories (≤ `Backend.append_seed_limit`
events, 100 by default) and every in-memory history go through the unwrapped
service's `append_event`. Every seeded session is read back through the unwrapped
service and compared event id by event id before it is timed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from google.adk.events.event import Event
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.session import Session

from adk_pairing.adk import close_session_service, has_adk_redis_session_service

PG_HOST = os.environ.get("ADK_PAIRING_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("ADK_PAIRING_PG_PORT", "5432"))
PG_USER = os.environ.get("ADK_PAIRING_PG_USER", "postgres")
REDIS_URL = os.environ.get("ADK_PAIRING_REDIS_URL", "redis://127.0.0.1:6379/0")

#: Benchmark name -> what the table calls it.
BACKEND_LABELS = {
    "inmemory": "InMemorySessionService",
    "sqlite": "SqliteSessionService (file)",
    "db-sqlite": "DatabaseSessionService sqlite+aiosqlite",
    "postgres": "DatabaseSessionService postgresql+asyncpg",
    "redis": "RedisSessionService (adk.integrations.redis)",
}
#: The stores this google-adk has: ADK's Redis service exists from 2.9.
ALL_BACKENDS = tuple(
    name for name in BACKEND_LABELS if name != "redis" or has_adk_redis_session_service()
)

BulkSeed = Callable[[Session, list[Event]], Awaitable[None]]


@dataclass
class Backend:
    """An opened store: the unwrapped service and how to bulk-load it."""

    name: str
    service: BaseSessionService
    bulk_seed: BulkSeed | None
    #: Histories up to this size are seeded through the service's own append_event.
    append_seed_limit: int = 100

    @property
    def label(self) -> str:
        return BACKEND_LABELS[self.name]

    async def seeded_session(self, app_name: str, user_id: str, events: list[Event]) -> str:
        """Creates a session holding `events`, verifies it, and returns its id."""
        session = await self.service.create_session(app_name=app_name, user_id=user_id)
        if self.bulk_seed is None or len(events) <= self.append_seed_limit:
            for event in events:
                await self.service.append_event(session, event)
        else:
            await self.bulk_seed(session, events)
        stored = await self.service.get_session(
            app_name=app_name, user_id=user_id, session_id=session.id
        )
        if stored is None or [e.id for e in stored.events] != [e.id for e in events]:
            raise RuntimeError(f"{self.name}: seeded session does not read back as written")
        return session.id


async def _pg_admin(sql: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(
        host=PG_HOST, port=PG_PORT, user=PG_USER, database="postgres"
    )
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


def _database_bulk_seed(service: BaseSessionService) -> BulkSeed:
    """Bulk insert through ADK's ORM mapping, as `append_event` would write each row.

    The mapping helpers are private and newer than google-adk 2.9
    (``_get_schema_classes``, ``_uses_naive_datetime``); without them the
    events go through ``append_event`` one by one (slower seeding, same rows).
    """
    if not (hasattr(service, "_get_schema_classes") and hasattr(service, "_uses_naive_datetime")):

        async def append_each(session: Session, events: list[Event]) -> None:
            for event in events:
                await service.append_event(session, event)

        return append_each

    async def seed(session: Session, events: list[Event]) -> None:
        schema = service._get_schema_classes()
        async with service.database_session_factory() as sql_session:
            row = await sql_session.get(
                schema.StorageSession, (session.app_name, session.user_id, session.id)
            )
            sql_session.add_all(schema.StorageEvent.from_event(session, e) for e in events)
            update_time = datetime.fromtimestamp(events[-1].timestamp, UTC)
            if service._uses_naive_datetime():
                update_time = update_time.replace(tzinfo=None)
            row.update_time = update_time
            await sql_session.commit()

    return seed


def _sqlite_bulk_seed(service: BaseSessionService) -> BulkSeed:
    """The INSERT `SqliteSessionService.append_event` runs, once for all rows."""

    async def seed(session: Session, events: list[Event]) -> None:
        rows = [
            (
                e.id,
                session.app_name,
                session.user_id,
                session.id,
                e.invocation_id,
                e.timestamp,
                e.model_dump_json(exclude_none=True),
            )
            for e in events
        ]
        async with service._get_db_connection() as db:
            await db.executemany(
                "INSERT INTO events (id, app_name, user_id, session_id, invocation_id,"
                " timestamp, event_data) VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            await db.execute(
                "UPDATE sessions SET update_time=? WHERE app_name=? AND user_id=? AND id=?",
                (events[-1].timestamp, session.app_name, session.user_id, session.id),
            )
            await db.commit()

    return seed


def _redis_bulk_seed(service: BaseSessionService) -> BulkSeed:
    """Writes the session document `RedisSessionService.append_event` would end with."""

    async def seed(session: Session, events: list[Event]) -> None:
        client = service._get_redis()
        key = service._session_key(session.app_name, session.user_id, session.id)
        stored = Session.model_validate_json(await client.get(key))
        stored.events.extend(events)
        stored.last_update_time = events[-1].timestamp
        ttl = service.config.ttl_seconds
        await client.set(key, stored.model_dump_json(), ex=ttl if ttl > 0 else None)

    return seed


@asynccontextmanager
async def open_backend(name: str, *, pg_database: str) -> AsyncIterator[Backend]:
    """Opens backend `name` on a fresh store and removes what it created afterwards."""
    if name == "inmemory":
        from google.adk.sessions import InMemorySessionService

        yield Backend(name, InMemorySessionService(), None)
        return
    if name in ("sqlite", "db-sqlite"):
        workdir = tempfile.mkdtemp(prefix="adk_pairing_bench_")
        try:
            if name == "sqlite":
                from google.adk.sessions.sqlite_session_service import SqliteSessionService

                service = SqliteSessionService(os.path.join(workdir, "sessions.db"))
                bulk = _sqlite_bulk_seed(service)
            else:
                from google.adk.sessions import DatabaseSessionService

                service = DatabaseSessionService(
                    f"sqlite+aiosqlite:///{os.path.join(workdir, 'sessions.db')}"
                )
                bulk = _database_bulk_seed(service)
            try:
                yield Backend(name, service, bulk)
            finally:
                await close_session_service(service)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        return
    if name == "postgres":
        from google.adk.sessions import DatabaseSessionService

        await _pg_admin(f'DROP DATABASE IF EXISTS "{pg_database}" WITH (FORCE)')
        await _pg_admin(f'CREATE DATABASE "{pg_database}"')
        service = DatabaseSessionService(
            f"postgresql+asyncpg://{PG_USER}@{PG_HOST}:{PG_PORT}/{pg_database}"
        )
        try:
            yield Backend(name, service, _database_bulk_seed(service))
        finally:
            await close_session_service(service)
            await _pg_admin(f'DROP DATABASE IF EXISTS "{pg_database}" WITH (FORCE)')
        return
    if name == "redis":
        from google.adk.integrations.redis import RedisSessionService, RedisSessionServiceConfig

        prefix = f"adk_pairing_bench:{uuid.uuid4().hex[:12]}:"
        service = RedisSessionService(RedisSessionServiceConfig(uri=REDIS_URL, key_prefix=prefix))
        try:
            yield Backend(name, service, _redis_bulk_seed(service))
        finally:
            client = service._get_redis()
            keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
            if keys:
                await client.delete(*keys)
            await client.aclose()
        return
    raise ValueError(f"unknown backend {name!r}; choose from {', '.join(ALL_BACKENDS)}")
