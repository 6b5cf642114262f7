"""The session stores the integration suite runs on, opened from a plain spec.

A `BackendSpec` is a small JSON-able dict, so a child process (the SIGKILL
scenario) can reopen exactly the store its parent uses. `open_backend`
returns the *unwrapped* service plus a way to dump the store's raw contents
for this test (every Redis value, every SQL row of this test's app), which is
how the suite proves no adk-pairing marker is ever persisted.

Isolation: every test gets its own app name and session-id prefix; the ADK
Redis service also gets its own key prefix. google-adk-community's Redis
service has no key prefix (keys are ``session:<id>``, ``app::<app>:<user>``,
``app:<app>``, ``user:<app>:<user>``), so it is isolated by the unique app name
and session ids, and its keys are deleted when the backend closes.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from google.adk.sessions.base_session_service import BaseSessionService

from adk_pairing.adk import close_session_service

#: The backend kinds every test taking `backend` runs on, in the order tests are parametrized.
BACKEND_KINDS = (
    "memory",
    "sqlite",
    "db-sqlite",
    "db-postgres",
    "redis-adk",
    "redis-community",
)

#: ADK's DatabaseSessionService on MariaDB (mysql+aiomysql). The same service
#: class as db-sqlite and db-postgres, so only the tests where the SQL dialect
#: matters (the store left intact, ownership) take it, via `backend_params`.
MARIADB_KIND = "db-mariadb"

#: Every kind `open_backend` opens.
ALL_BACKEND_KINDS = (*BACKEND_KINDS, MARIADB_KIND)

#: Kinds whose inner service refuses an append from an out-of-date session object.
STALE_DETECTING_KINDS = frozenset({"sqlite", "db-sqlite", "db-postgres", MARIADB_KIND})


def _adk_redis_appends_in_a_transaction() -> bool:
    """Whether ADK's Redis service re-reads the stored session when appending.

    From google-adk 2.12 its ``append_event`` appends inside a Redis
    transaction to what is stored; 2.9 to 2.11 write the caller's session
    object back whole (``_redis_session_service.py:339`` in 2.9.2).
    """
    import inspect

    from adk_pairing.adk import has_adk_redis_session_service

    if not has_adk_redis_session_service():
        return True  # no such store on this version: nothing is lost
    from google.adk.integrations.redis import RedisSessionService

    return ".transaction(" in inspect.getsource(RedisSessionService.append_event)


#: Kinds whose append rewrites the whole stored session from the caller's
#: session object (google-adk-community's Redis service, and ADK's before
#: 2.12), so an append from an out-of-date object silently drops what others
#: appended since it was read.
LOSES_CONCURRENT_WRITES_KINDS = frozenset(
    {"redis-community"} | (set() if _adk_redis_appends_in_a_transaction() else {"redis-adk"})
)

#: Kinds whose store outlives the process that wrote it (of those every
#: `backend` test runs on; MariaDB's is too).
PERSISTENT_KINDS = frozenset(BACKEND_KINDS) - {"memory"}

SQL_TABLES = ("sessions", "events", "app_states", "user_states")


def synthetic_markers() -> tuple[str, ...]:
    """Strings only adk-pairing's views contain: its metadata key, its event-id
    prefix and its placeholder texts."""
    from adk_pairing.core.placeholders import (
        DEFAULT_MISSING_TEXT,
        DEFAULT_PENDING_TEXT,
        METADATA_KEY,
    )

    return (METADATA_KEY, "adk-pairing", DEFAULT_MISSING_TEXT[:40], DEFAULT_PENDING_TEXT[:40])


def assert_nothing_synthetic_stored(raw: str) -> None:
    """Fails if the raw store text contains any adk-pairing marker."""
    found = [marker for marker in synthetic_markers() if marker in raw]
    assert not found, f"adk-pairing markers {found} were persisted: {raw[:2000]}"


@dataclass
class Backend:
    """An open store for one test: the unwrapped service and how to inspect it."""

    kind: str
    spec: dict[str, Any]
    service: BaseSessionService
    app_name: str
    session_prefix: str
    _close: Callable[[], Awaitable[None]]
    _raw: Callable[[], Awaitable[str]]
    _counter: list[int] = field(default_factory=lambda: [0])

    @property
    def detects_stale_writers(self) -> bool:
        return self.kind in STALE_DETECTING_KINDS

    @property
    def loses_concurrent_writes(self) -> bool:
        return self.kind in LOSES_CONCURRENT_WRITES_KINDS

    def new_session_id(self) -> str:
        self._counter[0] += 1
        return f"{self.session_prefix}-{self._counter[0]}"

    async def raw_storage_text(self) -> str:
        """Everything this test's app has in the store, as stored (JSON/rows as text)."""
        return await self._raw()

    async def close(self) -> None:
        await self._close()


async def open_backend(spec: dict[str, Any]) -> Backend:
    """Opens the store `spec` describes; the caller must `close()` it."""
    kind = spec["kind"]
    opener = _OPENERS[kind]
    return await opener(spec)


# -- openers -----------------------------------------------------------------


def _base(spec: dict[str, Any]) -> dict[str, Any]:
    return {"spec": spec, "app_name": spec["app_name"], "session_prefix": spec["session_prefix"]}


async def _open_memory(spec: dict[str, Any]) -> Backend:
    from google.adk.sessions import InMemorySessionService

    service = InMemorySessionService()

    async def raw() -> str:
        sessions = service.sessions.get(spec["app_name"], {})
        dumped = [
            session.model_dump_json() for by_id in sessions.values() for session in by_id.values()
        ]
        return "\n".join(dumped)

    async def close() -> None:
        return None

    return Backend(kind="memory", service=service, _close=close, _raw=raw, **_base(spec))


def _sqlite_rows(path: str, app_name: str) -> str:
    connection = sqlite3.connect(path)
    try:
        lines: list[str] = []
        for table in SQL_TABLES:
            try:
                rows = connection.execute(
                    f"SELECT * FROM {table} WHERE app_name = ?",
                    (app_name,),
                ).fetchall()
            except sqlite3.OperationalError:
                continue  # table not created (yet) by this service
            lines.extend(f"{table}: {row!r}" for row in rows)
        return "\n".join(lines)
    finally:
        connection.close()


async def _open_sqlite(spec: dict[str, Any]) -> Backend:
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    service = SqliteSessionService(db_path=spec["path"])

    async def raw() -> str:
        return _sqlite_rows(spec["path"], spec["app_name"])

    return Backend(
        kind="sqlite",
        service=service,
        _close=functools.partial(close_session_service, service),
        _raw=raw,
        **_base(spec),
    )


async def _open_db_sqlite(spec: dict[str, Any]) -> Backend:
    from google.adk.sessions.database_session_service import DatabaseSessionService

    service = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{spec['path']}")

    async def raw() -> str:
        return _sqlite_rows(spec["path"], spec["app_name"])

    return Backend(
        kind="db-sqlite",
        service=service,
        _close=functools.partial(close_session_service, service),
        _raw=raw,
        **_base(spec),
    )


async def _open_db_postgres(spec: dict[str, Any]) -> Backend:
    from google.adk.sessions.database_session_service import DatabaseSessionService

    service = DatabaseSessionService(db_url=spec["url"])

    async def raw() -> str:
        import asyncpg

        dsn = spec["url"].replace("postgresql+asyncpg://", "postgresql://", 1)
        connection = await asyncpg.connect(dsn)
        try:
            lines: list[str] = []
            for table in SQL_TABLES:
                exists = await connection.fetchval("SELECT to_regclass($1)", table)
                if exists is None:
                    continue
                rows = await connection.fetch(
                    f"SELECT t::text AS row FROM {table} t WHERE app_name = $1",
                    spec["app_name"],
                )
                lines.extend(f"{table}: {row['row']}" for row in rows)
            return "\n".join(lines)
        finally:
            await connection.close()

    return Backend(
        kind="db-postgres",
        service=service,
        _close=functools.partial(close_session_service, service),
        _raw=raw,
        **_base(spec),
    )


async def create_to_append(service: BaseSessionService, **keys: Any) -> Any:
    """A new session to append to; on MySQL/MariaDB read back, as a Runner reads it.

    google-adk 1.39's ``DatabaseSessionService`` on MySQL/MariaDB refuses an
    append to the very object ``create_session`` returned ("modified in storage
    since it was loaded"): its revision marker keeps the time zone that the
    stored DATETIME drops. The session read back carries the stored marker.
    Other stores append to the created object, as most callers do.
    """
    created = await service.create_session(**keys)
    dialect = getattr(getattr(service, "db_engine", None), "dialect", None)
    if getattr(dialect, "name", None) not in ("mysql", "mariadb"):
        return created
    keys.setdefault("session_id", created.id)
    read = await service.get_session(**keys)
    assert read is not None, keys
    return read


def mariadb_rows(url: str, app_name: str | None, tables: tuple[str, ...] = SQL_TABLES) -> str:
    """The rows of `tables` (of `app_name`, or all), as text in a stable order.

    PyMySQL, the driver under aiomysql, so the dump shares nothing with the
    service's engine; a table the service has not created is skipped.
    """
    import pymysql
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    connection = pymysql.connect(
        host=parsed.host, port=parsed.port or 3306, user=parsed.username,
        password=parsed.password or "", database=parsed.database,
    )  # fmt: skip
    try:
        lines: list[str] = []
        with connection.cursor() as cursor:
            for table in tables:
                cursor.execute("SHOW TABLES LIKE %s", (table,))
                if cursor.fetchone() is None:
                    continue
                where = "" if app_name is None else " WHERE app_name = %s"
                cursor.execute(
                    f"SELECT * FROM `{table}`{where}", () if app_name is None else (app_name,)
                )
                lines.extend(sorted(f"{table}: {row!r}" for row in cursor.fetchall()))
        return "\n".join(lines)
    finally:
        connection.close()


async def _open_db_mariadb(spec: dict[str, Any]) -> Backend:
    import asyncio

    from google.adk.sessions.database_session_service import DatabaseSessionService

    service = DatabaseSessionService(db_url=spec["url"])

    async def raw() -> str:
        return await asyncio.to_thread(mariadb_rows, spec["url"], spec["app_name"])

    return Backend(
        kind=MARIADB_KIND,
        service=service,
        _close=functools.partial(close_session_service, service),
        _raw=raw,
        **_base(spec),
    )


async def _redis_dump(client: Any, patterns: list[str]) -> str:
    """GET/HGETALL/SMEMBERS every key matching `patterns`, as text."""
    lines: list[str] = []
    seen: set[Any] = set()
    for pattern in patterns:
        async for key in client.scan_iter(match=pattern):
            if key in seen:
                continue
            seen.add(key)
            kind = await client.type(key)
            kind = kind.decode() if isinstance(kind, bytes) else kind
            if kind == "string":
                value: Any = await client.get(key)
            elif kind == "hash":
                value = await client.hgetall(key)
            elif kind == "set":
                value = await client.smembers(key)
            elif kind == "list":
                value = await client.lrange(key, 0, -1)
            else:
                value = f"<{kind}>"
            lines.append(f"{key!r}: {_as_text(value)}")
    return "\n".join(lines)


def _as_text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, dict):
        return json.dumps({_as_text(k): _as_text(v) for k, v in value.items()})
    if isinstance(value, (set, list)):
        return json.dumps(sorted(_as_text(v) for v in value))
    return str(value)


async def _open_redis_adk(spec: dict[str, Any]) -> Backend:
    import redis.asyncio as redis_asyncio
    from google.adk.integrations.redis import RedisSessionService
    from google.adk.integrations.redis._config import RedisSessionServiceConfig

    # ADK's service has no close(); handing it our own client lets us close it.
    client = redis_asyncio.from_url(spec["url"], decode_responses=True)
    service = RedisSessionService(
        config=RedisSessionServiceConfig(uri=spec["url"], key_prefix=spec["prefix"]),
        redis_client=client,
    )

    async def raw() -> str:
        return await _redis_dump(client, [f"{spec['prefix']}*"])

    async def close() -> None:
        if spec.get("cleanup", True):
            keys = [key async for key in client.scan_iter(match=f"{spec['prefix']}*")]
            if keys:
                await client.delete(*keys)
        await client.aclose()

    return Backend(kind="redis-adk", service=service, _close=close, _raw=raw, **_base(spec))


async def _open_redis_community(spec: dict[str, Any]) -> Backend:
    from google.adk_community.sessions.redis_session_service import RedisSessionService

    service = RedisSessionService(uri=spec["url"])
    patterns = [
        f"session:{spec['session_prefix']}-*",
        f"app:{spec['app_name']}",
        f"app::{spec['app_name']}:*",
        f"user:{spec['app_name']}:*",
    ]

    async def raw() -> str:
        return await _redis_dump(service.cache, patterns)

    async def close() -> None:
        if spec.get("cleanup", True):
            keys: list[Any] = []
            for pattern in patterns:
                keys.extend([key async for key in service.cache.scan_iter(match=pattern)])
            if keys:
                await service.cache.delete(*keys)
        await service.cache.aclose()

    return Backend(kind="redis-community", service=service, _close=close, _raw=raw, **_base(spec))


_OPENERS: dict[str, Callable[[dict[str, Any]], Awaitable[Backend]]] = {
    "memory": _open_memory,
    "sqlite": _open_sqlite,
    "db-sqlite": _open_db_sqlite,
    "db-postgres": _open_db_postgres,
    MARIADB_KIND: _open_db_mariadb,
    "redis-adk": _open_redis_adk,
    "redis-community": _open_redis_community,
}
