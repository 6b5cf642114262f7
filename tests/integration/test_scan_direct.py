"""The direct reader counts exactly what the get_session path counts, on every real store.

Each store is seeded through ADK's own service (``create_session`` /
``append_event``) with two apps of sessions that exercise what a reader can
get wrong: calls answered and not, held-open calls, a rewind that annuls an
unanswered call, events with identical timestamps, a session without events,
and a row ADK cannot load (written with the store's own client, since ADK
never writes one). Both readers then scan it through the real CLI with a batch
of 2 sessions, so sessions fall in different batch windows, and must agree.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.base_session_service import BaseSessionService
from google.genai import types
from typer.testing import CliRunner

from adk_pairing.cli import app as cli_app
from tests.adk_features import HAS_SESSION_SCHEMAS, requires
from tests.conftest import require_server

from .support.backends import create_to_append

runner = CliRunner()


def _call(call_id: str, name: str) -> types.Part:
    return types.Part(function_call=types.FunctionCall(id=call_id, name=name, args={}))


def _response(call_id: str, name: str) -> types.Part:
    return types.Part(function_response=types.FunctionResponse(id=call_id, name=name, response={}))


def _event(author: str, invocation: str, *parts: types.Part, at: float, **extra: Any) -> Event:
    role = "user" if author == "user" or any(p.function_response for p in parts) else "model"
    return Event(
        invocation_id=invocation,
        author=author,
        timestamp=at,
        content=types.Content(role=role, parts=list(parts)),
        **extra,
    )


def plan(base: float) -> dict[str, list[Event]]:
    """session id -> events (user is derived from the id)."""
    t = base
    return {
        "healthy": [
            _event("user", "i1", types.Part(text="look"), at=t),
            _event("agent", "i1", _call("ok", "lookup"), at=t + 1),
            _event("agent", "i1", _response("ok", "lookup"), at=t + 2),
        ],
        "missing": [
            _event("user", "i1", types.Part(text="refund"), at=t),
            _event("agent", "i1", _call("m1", "refund"), at=t + 1),
            _event("user", "i2", types.Part(text="hello?"), at=t + 2),
        ],
        "pending": [
            _event("agent", "i1", _call("p1", "render"), at=t, long_running_tool_ids={"p1"}),
        ],
        # The rewind annuls invocation i2, whose call was never answered.
        "rewound": [
            _event("user", "i1", types.Part(text="one"), at=t),
            _event("agent", "i2", _call("r1", "ship"), at=t + 1),
            Event(
                invocation_id="i3",
                author="user",
                timestamp=t + 2,
                actions=EventActions(rewind_before_invocation_id="i2"),
            ),
        ],
        # Call and result at the same instant: each service's tie-break decides.
        "tied": [
            _event("agent", "i1", _call("t1", "lookup"), at=t, id="b-call"),
            _event("agent", "i1", _response("t1", "lookup"), at=t, id="a-response"),
        ],
        "empty": [],
        "malformed": [
            _event("agent", "i1", _call("x1", "refund"), at=t),
            _event("agent", "i1", types.Part(text="breaks"), at=t + 1),
        ],
    }


APPS = ("shop", "desk")
MALFORMED = "malformed"


def user_of(session: str) -> str:
    return "bob" if session in {"missing", "tied"} else "alice"


@dataclass
class Seeded:
    uri: str
    apps: list[str]
    options: list[str] = field(default_factory=list)
    #: Whether ADK's own listing silently skips the malformed session (Redis).
    listing_skips_malformed: bool = False
    requires_user: bool = False
    session_ids: dict[str, str] = field(default_factory=dict)


async def _ties_are_ordered(service: BaseSessionService) -> bool:
    """Whether the installed service orders events with equal timestamps at all.

    Before 2.9 both SQL services sort on the timestamp alone, so the order of
    a tie is the database's choice and may differ between two reads of ADK's
    own; such a session cannot be compared. Probed on a scratch store of the
    same class, as the direct reader probes it.
    """
    import tempfile

    from google.adk.sessions.database_session_service import DatabaseSessionService
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    from adk_pairing.adk import close_session_service, probe_tie_break

    if not isinstance(service, DatabaseSessionService | SqliteSessionService):
        return True  # Redis: a session's events are one stored list
    with tempfile.TemporaryDirectory() as scratch:
        if isinstance(service, SqliteSessionService):
            probe: BaseSessionService = SqliteSessionService(db_path=f"{scratch}/probe.db")
        else:
            probe = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{scratch}/probe.db")
        try:
            order = await probe_tie_break(probe)
        finally:
            await close_session_service(probe)
    # DatabaseSessionService orders by the ORM's id column, never by rowid.
    return order is not None if isinstance(service, SqliteSessionService) else order == "id"


async def _seed(service: BaseSessionService, apps: list[str], suffix: str) -> dict[str, str]:
    ids: dict[str, str] = {}
    base = time.time() - 600
    sessions = plan(base)
    if not await _ties_are_ordered(service):
        del sessions["tied"]
    try:
        for app_name in apps:
            for name, events in sessions.items():
                session_id = f"{name}-{suffix}-{app_name}"
                ids[f"{app_name}/{name}"] = session_id
                session = await create_to_append(
                    service, app_name=app_name, user_id=user_of(name), session_id=session_id
                )
                for event in events:
                    await service.append_event(session, event)
    finally:
        close = getattr(service, "close", None)
        if close is not None:
            await close()
    return ids


def _apps() -> list[str]:
    tag = uuid.uuid4().hex[:8]
    return [f"{name}_{tag}" for name in APPS]


def _sqlite_service_store(tmp_path: Path) -> Seeded:
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    path = tmp_path / "service.db"
    apps = _apps()
    ids = asyncio.run(_seed(SqliteSessionService(db_path=str(path)), apps, "s"))
    with sqlite3.connect(path) as connection:
        for app_name in apps:
            connection.execute(
                "UPDATE events SET event_data = '{not json' WHERE session_id = ? AND "
                "event_data LIKE '%breaks%'",
                (ids[f"{app_name}/{MALFORMED}"],),
            )
    return Seeded(f"sqlite:///{path}", apps, session_ids=ids)


def _database_store(uri: str, apps: list[str], corrupt: Callable[[list[str]], None]) -> Seeded:
    from google.adk.sessions.database_session_service import DatabaseSessionService

    ids = asyncio.run(_seed(DatabaseSessionService(db_url=uri), apps, "d"))
    corrupt([ids[f"{a}/{MALFORMED}"] for a in apps])
    return Seeded(uri, apps, session_ids=ids)


def _sqlite_corrupter(path: Path, column: str, broken: str) -> Callable[[list[str]], None]:
    """Sets `column` to `broken` in the events of the given sessions that mention "breaks"."""

    def corrupt(session_ids: list[str]) -> None:
        with sqlite3.connect(path) as connection:
            for session_id in session_ids:
                connection.execute(
                    f"UPDATE events SET {column} = ? "
                    f"WHERE session_id = ? AND {column} LIKE '%breaks%'",
                    (broken, session_id),
                )

    return corrupt


#: The direct reader rebuilds DatabaseSessionService events with ADK's own row
#: models, ``google.adk.sessions.schemas``; a release without them (1.20) is
#: scanned through get_session (`auto` falls back, and says so).
NEEDS_SCHEMAS = (
    "sessions.schemas (the row models the direct reader reads DatabaseSessionService with)"
)


def _db_sqlite_store(tmp_path: Path) -> Seeded:
    if not HAS_SESSION_SCHEMAS:
        pytest.skip(requires(False, NEEDS_SCHEMAS).kwargs["reason"])
    path = tmp_path / "database.db"

    corrupt = _sqlite_corrupter(path, "event_data", '{"content": 5, "author": "agent"}')
    return _database_store(f"sqlite+aiosqlite:///{path}", _apps(), corrupt)


def _db_sqlite_v0_store(tmp_path: Path) -> Seeded:
    """A store in ADK's legacy schema 0 (pickled actions, one column per field).

    ADK still reads and writes it: with no ``adk_internal_metadata`` table and
    an ``events.actions`` column it picks the v0 classes
    (``sessions/migration/_schema_check_utils.py:75``, 2.13).
    """
    v0 = pytest.importorskip(
        "google.adk.sessions.schemas.v0", reason="sessions.schemas exists from google-adk 1.2x"
    )
    from sqlalchemy import create_engine

    path = tmp_path / "database-v0.db"
    engine = create_engine(f"sqlite:///{path}")
    v0.Base.metadata.create_all(engine)
    engine.dispose()

    corrupt = _sqlite_corrupter(path, "content", '{"parts": 5}')
    seeded = _database_store(f"sqlite+aiosqlite:///{path}", _apps(), corrupt)
    with sqlite3.connect(path) as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    assert "adk_internal_metadata" not in tables  # ADK kept the store at schema 0
    return seeded


def _postgres_store(url: str) -> Seeded:
    if not HAS_SESSION_SCHEMAS:
        pytest.skip(requires(False, NEEDS_SCHEMAS).kwargs["reason"])
    import asyncpg

    async def run(session_ids: list[str]) -> None:
        connection = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
        try:
            await connection.execute(
                'UPDATE events SET event_data = \'{"content": 5, "author": "agent"}\'::jsonb '
                "WHERE session_id = ANY($1::text[]) AND event_data::text LIKE '%breaks%'",
                session_ids,
            )
        finally:
            await connection.close()

    return _database_store(url, _apps(), lambda ids: asyncio.run(run(ids)))


def _mariadb_store(url: str) -> Seeded:
    """ADK's DatabaseSessionService on MariaDB (``event_data`` is LONGTEXT there)."""
    if not HAS_SESSION_SCHEMAS:
        pytest.skip(requires(False, NEEDS_SCHEMAS).kwargs["reason"])
    from sqlalchemy.engine import make_url

    def corrupt(session_ids: list[str]) -> None:
        marks = ", ".join(["%s"] * len(session_ids))
        changed = mariadb_admin_rows(
            make_url(url).database,
            f"UPDATE events SET event_data = %s "
            f"WHERE session_id IN ({marks}) AND event_data LIKE '%%breaks%%'",
            ['{"content": 5, "author": "agent"}', *session_ids],
        )
        assert changed == len(session_ids)

    return _database_store(url, _apps(), corrupt)


def mariadb_admin_rows(database: str | None, statement: str, values: Any = ()) -> int:
    """Runs one statement on the local MariaDB test server; the rows it changed."""
    import pymysql

    from tests.conftest import MARIADB_HOST, MARIADB_PORT, MARIADB_USER

    connection = pymysql.connect(
        host=MARIADB_HOST, port=MARIADB_PORT, user=MARIADB_USER, database=database,
        autocommit=True,
    )  # fmt: skip
    try:
        with connection.cursor() as cursor:
            return cursor.execute(statement, values)
    finally:
        connection.close()


async def _redis_clean(url: str, patterns: list[str]) -> None:
    import redis.asyncio as redis

    client = redis.from_url(url)
    try:
        for pattern in patterns:
            keys = [key async for key in client.scan_iter(match=pattern)]
            if keys:
                await client.delete(*keys)
    finally:
        await client.aclose()


async def _redis_set(url: str, key: str, value: str) -> None:
    import redis.asyncio as redis

    client = redis.from_url(url)
    try:
        ttl = await client.ttl(key)
        await client.set(key, value, ex=ttl if ttl > 0 else None)
    finally:
        await client.aclose()


def _adk_redis_store(url: str, request: pytest.FixtureRequest) -> Seeded:
    from google.adk.integrations.redis import RedisSessionService, RedisSessionServiceConfig

    prefix = f"adkp-direct:{uuid.uuid4().hex[:10]}:"
    request.addfinalizer(lambda: asyncio.run(_redis_clean(url, [f"{prefix}*"])))
    apps = _apps()
    config = RedisSessionServiceConfig(uri=url, key_prefix=prefix)
    ids = asyncio.run(_seed(RedisSessionService(config=config), apps, "r"))
    for app_name in apps:
        key = f"{prefix}{app_name}:{user_of(MALFORMED)}:{ids[f'{app_name}/{MALFORMED}']}"
        asyncio.run(_redis_set(url, key, "{not json"))
    return Seeded(
        url, apps, ["-o", f"key_prefix={prefix}"], listing_skips_malformed=True, session_ids=ids
    )


COMMUNITY_SCHEME = "redis-community-test"


def _community_redis_store(url: str, request: pytest.FixtureRequest) -> Seeded:
    from google.adk.cli.service_registry import get_service_registry
    from google.adk_community.sessions.redis_session_service import RedisSessionService

    def factory(uri: str, **_: Any) -> RedisSessionService:
        return RedisSessionService(uri=uri.replace(f"{COMMUNITY_SCHEME}://", "redis://", 1))

    get_service_registry().register_session_service(COMMUNITY_SCHEME, factory)
    apps = _apps()
    suffix = uuid.uuid4().hex[:8]
    patterns = [p for a in apps for p in (f"app::{a}:*", f"app:{a}", f"user:{a}:*")]
    patterns.append(f"session:*-{suffix}-*")
    request.addfinalizer(lambda: asyncio.run(_redis_clean(url, patterns)))

    async def seed() -> dict[str, str]:
        service = RedisSessionService(uri=url)
        try:
            return await _seed(service, apps, suffix)
        finally:
            await service.cache.aclose()

    ids = asyncio.run(seed())
    for app_name in apps:
        asyncio.run(_redis_set(url, f"session:{ids[f'{app_name}/{MALFORMED}']}", "{not json"))
    uri = url.replace("redis://", f"{COMMUNITY_SCHEME}://", 1)
    return Seeded(uri, apps, listing_skips_malformed=True, requires_user=True, session_ids=ids)


SEEDED_KINDS = [
    "sqlite-service",
    "db-sqlite",
    "db-sqlite-v0",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("redis-adk", marks=pytest.mark.redis),
    pytest.param("redis-community", marks=pytest.mark.redis),
]

#: `SEEDED_KINDS` and MariaDB, for the tests where the SQL dialect matters (the
#: readers' queries and the update times' type): ``@pytest.mark.parametrize(
#: "seeded", WITH_MARIADB, indirect=True)``. Its store is seeded once per module;
#: the scans only read it.
WITH_MARIADB = [*SEEDED_KINDS, pytest.param("mariadb", marks=pytest.mark.mariadb)]


@pytest.fixture(scope="module")
def mariadb_seeded(mariadb_database: str) -> Seeded:
    from tests.conftest import mariadb_url_of

    return _mariadb_store(mariadb_url_of(mariadb_database))


@pytest.fixture(params=SEEDED_KINDS)
def seeded(request: pytest.FixtureRequest, tmp_path: Path) -> Seeded:
    kind = request.param
    if kind == "sqlite-service":
        return _sqlite_service_store(tmp_path)
    if kind == "db-sqlite":
        return _db_sqlite_store(tmp_path)
    if kind == "db-sqlite-v0":
        return _db_sqlite_v0_store(tmp_path)
    if kind == "postgres":
        require_server("PostgreSQL", "127.0.0.1", 5432)
        return _postgres_store(request.getfixturevalue("postgres_url"))
    if kind == "mariadb":
        return request.getfixturevalue("mariadb_seeded")
    url = request.getfixturevalue("redis_url")
    if kind == "redis-adk":
        pytest.importorskip(
            "google.adk.integrations.redis", reason="ADK's Redis service exists from 2.9"
        )
        return _adk_redis_store(url, request)
    return _community_redis_store(url, request)


def scan(seeded: Seeded, *args: str) -> dict[str, Any]:
    result = runner.invoke(cli_app, ["scan", seeded.uri, *seeded.options, "--json", *args])
    # Exit 2 is expected: the malformed session is unreadable (the scan is incomplete).
    assert result.exit_code in (0, 1, 2), result.output
    assert result.stdout.strip(), result.output
    return json.loads(result.stdout)


def _summary(report: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "sessions_scanned",
        "healthy_sessions",
        "sessions_with_missing",
        "sessions_with_pending",
        "missing_calls",
        "pending_calls",
    )
    return {
        "counts": {key: report[key] for key in keys},
        # Unreadable sessions are compared apart (Redis listings drop them).
        "per_app": {
            app: {k: v for k, v in counts.items() if k != "unreadable_sessions"}
            for app, counts in report["per_app"].items()
            if counts["sessions_scanned"]
        },
        "findings": sorted(
            (f["app"], f["user"], f["session"], f["call_id"], f["status"])
            for f in report["findings"]
        ),
    }


def _unreadable(report: dict[str, Any]) -> set[tuple[str, str]]:
    return {(u["app"], u["session"]) for u in report["unreadable"]}


@pytest.mark.parametrize(
    "mode",
    [[], ["--concurrency", "1"], ["--strict"], ["--strict", "--concurrency", "1"]],
    ids=["fast", "fast-one-query-at-a-time", "strict", "strict-one-query-at-a-time"],
)
@pytest.mark.parametrize("seeded", WITH_MARIADB, indirect=True)
def test_direct_and_get_session_readers_agree_on_every_count(
    seeded: Seeded, mode: list[str]
) -> None:
    apps = [arg for a in seeded.apps for arg in ("--app", a)]
    users = ["alice", "bob"] if seeded.requires_user else [None]
    for user in users:
        scope = [*apps, *(["--user", user] if user else [])]
        direct = scan(seeded, *scope, "--reader", "direct", "--batch-size", "2", *mode)
        slow = scan(seeded, *scope, "--reader", "get-session")
        assert direct["mode"] == ("strict" if "--strict" in mode else "fast")
        assert direct["reader"].startswith("direct: ")
        assert direct["fallback_reason"] is None
        assert slow["reader"] == "get_session"
        assert _summary(direct) == _summary(slow)
        # The unreadable session is reported by the direct reader in every store.
        malformed = {
            (a, seeded.session_ids[f"{a}/{MALFORMED}"])
            for a in seeded.apps
            if user in (None, user_of(MALFORMED))
        }
        assert _unreadable(direct) == malformed
        # ADK's Redis listings drop a session they cannot parse without a word
        # (integrations/redis/_redis_session_service.py:299; the community
        # service's _load_sessions); the SQL services raise from get_session.
        assert _unreadable(slow) == (set() if seeded.listing_skips_malformed else malformed)

    if seeded.requires_user:
        return
    direct = scan(seeded, *apps, "--batch-size", "3")
    # Per app: healthy, rewound, tied (on its service's order), empty / missing, pending.
    for app_name in seeded.apps:
        counts = direct["per_app"][app_name]
        assert counts["sessions_scanned"] == (6 if f"{app_name}/tied" in seeded.session_ids else 5)
        assert counts["sessions_with_pending"] == 1 and counts["pending_calls"] == 1
        assert counts["unreadable_sessions"] == 1
    found = {(f["session"].split("-")[0], f["call_id"]) for f in direct["findings"]}
    assert ("missing", "m1") in found and ("pending", "p1") in found
    assert not any(name == "rewound" for name, _ in found)  # the rewind annuls r1


def test_scan_without_app_covers_every_app_with_per_app_counts(seeded: Seeded) -> None:
    report = scan(seeded, *(["--user", "alice"] if seeded.requires_user else []))
    assert set(seeded.apps) <= set(report["apps"])
    assert set(seeded.apps) <= set(report["per_app"])
    for app_name in seeded.apps:
        per_app = report["per_app"][app_name]
        by_one = scan(
            seeded,
            "--app",
            app_name,
            "--reader",
            "get-session",
            *(["--user", "alice"] if seeded.requires_user else []),
        )
        assert per_app["sessions_scanned"] == by_one["sessions_scanned"]
        assert per_app["missing_calls"] == by_one["missing_calls"]
        assert per_app["pending_calls"] == by_one["pending_calls"]
    if not seeded.requires_user:
        # The get_session path without --app takes the app names from the layout too.
        slow = scan(seeded, "--reader", "get-session")
        assert slow["reader"] == "get_session" and set(seeded.apps) <= set(slow["apps"])
        for app_name in seeded.apps:
            assert (
                slow["per_app"][app_name]["missing_calls"]
                == (report["per_app"][app_name]["missing_calls"])
            )


@pytest.mark.parametrize("seeded", WITH_MARIADB, indirect=True)
def test_since_and_until_select_sessions_by_update_time(seeded: Seeded) -> None:
    scope = [a for name in seeded.apps for a in ("--app", name)]
    if seeded.requires_user:
        scope += ["--user", "alice"]
    everything = scan(seeded, *scope)
    assert everything["sessions_scanned"] > 0
    assert scan(seeded, *scope, "--until", "1h")["sessions_scanned"] == 0
    assert scan(seeded, *scope, "--since", "2030-01-01")["sessions_scanned"] == 0
    for bound in (["--since", "1h"], ["--since", "1m"], ["--until", "5m"]):
        slow = scan(seeded, *scope, *bound, "--reader", "get-session")
        assert _summary(scan(seeded, *scope, *bound)) == _summary(slow), bound


def test_json_lines_streams_one_record_per_broken_session_then_a_summary(
    seeded: Seeded,
) -> None:
    scope = [a for name in seeded.apps for a in ("--app", name)]
    if seeded.requires_user:
        scope += ["--user", "alice"]
    result = runner.invoke(cli_app, ["scan", seeded.uri, *seeded.options, "--json-lines", *scope])
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records[-1]["type"] == "summary"
    sessions = [r for r in records if r["type"] == "session"]
    summary = records[-1]
    broken = summary["sessions_scanned"] - summary["healthy_sessions"]
    assert len(sessions) == broken > 0
    assert sum(r["missing_calls"] for r in sessions) == summary["missing_calls"]
    assert [r for r in records if r["type"] == "unreadable"]
    assert result.exit_code == 2  # unreadable sessions make the scan incomplete


@requires(HAS_SESSION_SCHEMAS, NEEDS_SCHEMAS)
def test_an_unknown_schema_version_falls_back_to_get_session_and_says_so(tmp_path: Path) -> None:
    seeded = _db_sqlite_store(tmp_path)
    path = seeded.uri.removeprefix("sqlite+aiosqlite:///")
    with sqlite3.connect(path) as connection:
        changed = connection.execute(
            "UPDATE adk_internal_metadata SET value = '7' WHERE key = 'schema_version'"
        ).rowcount
    assert changed == 1
    scope = [a for name in seeded.apps for a in ("--app", name)]
    result = runner.invoke(cli_app, ["scan", seeded.uri, *scope])
    assert "not read directly: DatabaseSessionService schema version '7' is unknown" in (
        result.stdout
    )
    assert "Read by get_session" in result.stdout
    report = scan(seeded, *scope)
    assert report["reader"] == "get_session"
    assert "'7' is unknown" in report["fallback_reason"]
    refused = runner.invoke(cli_app, ["scan", seeded.uri, *scope, "--reader", "direct"])
    assert refused.exit_code == 2 and "cannot read this store directly" in refused.stderr


@requires(HAS_SESSION_SCHEMAS, NEEDS_SCHEMAS)
@pytest.mark.postgres
@pytest.mark.version_independent
def test_benchmark_compares_both_readers_on_a_small_seed() -> None:
    """benchmarks/seed_scan.py --compare-readers at smoke size: both readers, same counts."""
    import subprocess
    import sys

    require_server("PostgreSQL", "127.0.0.1", 5432)
    database = f"adk_pairing_scan_smoke_{uuid.uuid4().hex[:8]}"
    script = Path(__file__).parents[2] / "benchmarks" / "seed_scan.py"
    try:
        done = subprocess.run(
            [sys.executable, str(script), "--db", database, "--sessions", "40", "--events", "10",
             "--users", "4", "--missing-every", "5", "--pending-every", "7",
             "--compare-readers", "1"],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    finally:
        asyncio.run(_drop_database(database))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert sum("counts match the seed" in line for line in lines) == 2, done.stdout
    assert "read by direct: DatabaseSessionService schema 1" in done.stdout
    assert "read by get_session" in done.stdout
    assert any(line.startswith("best of 1: direct ") and "x CPU" in line for line in lines)


async def _drop_database(name: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(host="127.0.0.1", user="postgres", database="postgres")
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await connection.close()


@requires(HAS_SESSION_SCHEMAS, NEEDS_SCHEMAS)
@pytest.mark.parametrize("strict", [True, False], ids=["strict", "fast"])
async def test_direct_reader_reports_sessions_over_the_timeout_and_goes_on(
    tmp_path: Path, strict: bool
) -> None:
    """A timeout no rebuild can meet: every session with events is reported, none counted."""
    from adk_pairing.cli._store import open_read_only
    from adk_pairing.cli._store_scan import ReaderChoice, ScanOptions, scan_store

    seeded = await asyncio.to_thread(_db_sqlite_store, tmp_path)
    store = open_read_only(seeded.uri)
    try:
        options = ScanOptions(
            apps=seeded.apps, reader=ReaderChoice.DIRECT, batch_size=2, strict=strict
        )
        result = await scan_store(store, ScanOptions(**{**vars(options), "timeout": 1e-9}))
        untimed = await scan_store(store, options)
    finally:
        await store.close()
    timed_out = [u for u in result.unreadable if u["error"] == "timed out after 1e-09 s"]
    empty = len(seeded.apps)  # one session without events per app: rebuilt in no time
    assert result.sessions_scanned == result.healthy_sessions == empty
    assert len(untimed.unreadable) == len(seeded.apps)
    if strict:
        assert len(timed_out) == untimed.sessions_scanned - empty > 0
        # The malformed sessions still fail on their own error, before any clock is read.
        assert len(result.unreadable) - len(timed_out) == len(untimed.unreadable)
    else:
        # The fast path never reads the malformed row (it names no call): the
        # malformed sessions time out on their call rows like every other.
        assert len(timed_out) == untimed.sessions_scanned - empty + len(untimed.unreadable)
        assert len(result.unreadable) == len(timed_out)


def test_direct_reader_never_calls_the_services_get_session_or_list_sessions(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    from google.adk.sessions.database_session_service import DatabaseSessionService
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    classes: list[type] = [DatabaseSessionService, SqliteSessionService]
    for module in (
        "google.adk.integrations.redis",
        "google.adk_community.sessions.redis_session_service",
    ):
        try:
            classes.append(__import__(module, fromlist=["RedisSessionService"]).RedisSessionService)
        except ImportError:
            continue

    async def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the direct reader called the service")

    # The SQLite reader probes the installed service's tie-break once per
    # process, on a scratch file of its own: done before get_session is refused.
    from adk_pairing.adk import sqlite_service_tie_break

    asyncio.run(sqlite_service_tie_break())
    for cls in classes:
        monkeypatch.setattr(cls, "get_session", refuse)
        monkeypatch.setattr(cls, "list_sessions", refuse)
    report = scan(seeded, *[a for name in seeded.apps for a in ("--app", name)])
    assert report["reader"].startswith("direct: ")
    assert report["sessions_scanned"] > 0


def _merge(paths: list[Path], *args: str) -> Any:
    return runner.invoke(cli_app, ["scan", "--merge", *map(str, paths), *args])


def test_three_shards_merge_into_the_report_of_one_scan(seeded: Seeded, tmp_path: Path) -> None:
    scope = [a for name in seeded.apps for a in ("--app", name)]
    whole = scan(seeded, *scope, "--batch-size", "2")
    paths = []
    for index in range(3):
        report = scan(seeded, *scope, "--batch-size", "2", "--shard", f"{index}/3")
        assert report["shard"] == f"{index}/3"
        path = tmp_path / f"shard-{index}.json"
        path.write_text(json.dumps(report))
        paths.append(path)
    shard_sizes = [json.loads(p.read_text())["sessions_scanned"] for p in paths]
    assert sum(shard_sizes) == whole["sessions_scanned"]
    assert sum(size > 0 for size in shard_sizes) >= 2  # the hash really splits the store

    merged_run = _merge(paths, "--json")
    assert merged_run.exit_code == (2 if whole["unreadable"] else 0), merged_run.output
    merged = json.loads(merged_run.stdout)
    assert merged["merged_shards"] == 3 and merged["shard"] is None
    assert _summary(merged) == _summary(whole)
    assert merged["unreadable"] == whole["unreadable"]
    assert merged["per_app"] == whole["per_app"]
    assert merged["apps"] == whole["apps"]
    assert [f["event_id"] for f in merged["findings"]] == [f["event_id"] for f in whole["findings"]]

    # The get_session path puts every session in the same shard.
    if not seeded.requires_user:
        for index, size in enumerate(shard_sizes):
            slow = scan(seeded, *scope, "--reader", "get-session", "--shard", f"{index}/3")
            assert slow["sessions_scanned"] == size

    # A shard's --json-lines output merges as well as its --json.
    lines = runner.invoke(
        cli_app,
        ["scan", seeded.uri, *seeded.options, *scope, "--batch-size", "2", "--shard", "0/3",
         "--json-lines"],
    )  # fmt: skip
    streamed = tmp_path / "shard-0.jsonl"
    streamed.write_text(lines.stdout)
    from_lines = json.loads(_merge([streamed, *paths[1:]], "--json").stdout)
    assert _summary(from_lines) == _summary(whole)
    assert from_lines["unreadable"] == whole["unreadable"]

    missing_one = _merge(paths[:2])
    assert missing_one.exit_code == 2 and "shards 2/3 are missing" in missing_one.stderr
    twice = _merge([paths[0], paths[0], paths[1]])
    assert twice.exit_code == 2 and "are both shard 0/3" in twice.stderr


def _reject_a_text_row(seeded: Seeded, session_id: str) -> None:
    """Makes the "look" text row of `session_id` one ADK refuses (content is a number)."""
    broken = '{"author": "user", "invocation_id": "i1", "content": 5}'
    if seeded.uri.startswith(("sqlite:///", "sqlite+aiosqlite:///")):
        path = seeded.uri.split(":///", 1)[1]
        with sqlite3.connect(path) as connection:
            changed = connection.execute(
                "UPDATE events SET event_data = ? "
                "WHERE session_id = ? AND event_data LIKE '%\"look\"%'",
                (broken, session_id),
            ).rowcount
    else:
        import asyncpg

        async def run() -> int:
            url = seeded.uri.replace("postgresql+asyncpg://", "postgresql://")
            connection = await asyncpg.connect(url)
            try:
                status = await connection.execute(
                    "UPDATE events SET event_data = $1::jsonb "
                    "WHERE session_id = $2 AND event_data::text LIKE '%\"look\"%'",
                    broken,
                    session_id,
                )
            finally:
                await connection.close()
            return int(status.split()[-1])

        changed = asyncio.run(run())
    assert changed == 1


@pytest.mark.parametrize(
    "kind", ["sqlite-service", "db-sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_a_row_adk_rejects_in_a_healthy_session_is_readable_by_default_and_not_under_strict(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The one documented difference between the default mode and --strict (docs/cli.md)."""
    if kind == "sqlite-service":
        seeded = _sqlite_service_store(tmp_path)
    elif kind == "db-sqlite":
        seeded = _db_sqlite_store(tmp_path)
    else:
        require_server("PostgreSQL", "127.0.0.1", 5432)
        seeded = _postgres_store(request.getfixturevalue("postgres_url"))
    app_name = seeded.apps[0]
    healthy = seeded.session_ids[f"{app_name}/healthy"]
    _reject_a_text_row(seeded, healthy)
    scope = ["--app", app_name]

    fast = scan(seeded, *scope)
    strict = scan(seeded, *scope, "--strict")
    slow = scan(seeded, *scope, "--reader", "get-session")
    unreadable = {u["session"] for u in fast["unreadable"]}
    assert healthy not in unreadable  # the rejected row names no call: never fetched
    assert healthy in {u["session"] for u in strict["unreadable"]}
    assert {u["session"] for u in strict["unreadable"]} == {
        u["session"] for u in slow["unreadable"]
    }
    assert strict["unreadable_sessions"] == fast["unreadable_sessions"] + 1
    assert fast["healthy_sessions"] == strict["healthy_sessions"] + 1
    # Every finding is the same in both modes: findings are always confirmed.
    assert _summary(strict)["findings"] == _summary(fast)["findings"] == _summary(slow)["findings"]


@pytest.mark.parametrize(
    "kind", ["db-sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
@pytest.mark.parametrize("frozen_before", [False, True], ids=["thawed", "frozen-before"])
def test_a_direct_read_keeps_start_up_out_of_the_collector_and_thaws_only_its_own(
    kind: str, frozen_before: bool, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """While the direct reader reads, what existed before is frozen (`gc.freeze`).

    Afterwards the collector is as it was: thawed, unless the caller had
    frozen objects itself, whose choice stands. The counts are the loop's.
    """
    import gc

    from adk_pairing.cli._store import open_read_only
    from adk_pairing.cli._store_scan import Hooks, ReaderChoice, ScanOptions, scan_store

    if kind == "db-sqlite":
        seeded = _db_sqlite_store(tmp_path)
    else:
        require_server("PostgreSQL", "127.0.0.1", 5432)
        seeded = _postgres_store(request.getfixturevalue("postgres_url"))
    frozen_while_reading: list[int] = []

    async def run(reader: ReaderChoice) -> Any:
        store = open_read_only(seeded.uri)
        hooks = Hooks(on_session_done=lambda: frozen_while_reading.append(gc.get_freeze_count()))
        try:
            return await scan_store(store, ScanOptions(apps=seeded.apps, reader=reader), hooks)
        finally:
            await store.close()

    gc.unfreeze()
    if frozen_before:
        gc.freeze()
    held = gc.get_freeze_count()
    try:
        direct = asyncio.run(run(ReaderChoice.DIRECT))
        assert frozen_while_reading and min(frozen_while_reading) > held
        if frozen_before:
            assert gc.get_freeze_count() > held  # still frozen, the read's start-up too
        else:
            assert gc.get_freeze_count() == 0
        loop = asyncio.run(run(ReaderChoice.GET_SESSION))
    finally:
        gc.unfreeze()
    for counted in ("sessions_scanned", "healthy_sessions", "missing_calls", "pending_calls"):
        assert getattr(direct, counted) == getattr(loop, counted), counted
