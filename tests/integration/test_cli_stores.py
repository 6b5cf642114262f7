"""`adk-pairing scan` and `show` against real stores seeded through ADK's own services.

Every test invokes the real Typer app (the object behind the ``adk-pairing``
console script) and reads real stores: SQLite through both of ADK's SQLite
services, PostgreSQL, and Redis. The seed has known healthy and broken
sessions, so the counts asserted are exact.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import BaseSessionService
from google.genai import types
from typer.testing import CliRunner

from adk_pairing.cli import app
from adk_pairing.core.placeholders import METADATA_KEY
from tests.adk_features import HAS_ADK_REDIS, HAS_SESSION_SCHEMAS, requires
from tests.conftest import require_server

from .support.backends import create_to_append

runner = CliRunner()

# -- seeding ----------------------------------------------------------------

USERS = ("alice", "bob")


def _call(call_id: str, name: str) -> types.Part:
    return types.Part(function_call=types.FunctionCall(id=call_id, name=name, args={"x": 1}))


def _response(call_id: str, name: str) -> types.Part:
    return types.Part(
        function_response=types.FunctionResponse(id=call_id, name=name, response={"ok": True})
    )


def _event(author: str, parts: list[types.Part], **extra: Any) -> Event:
    role = "user" if author == "user" or any(p.function_response for p in parts) else "model"
    return Event(
        invocation_id=f"inv-{uuid.uuid4().hex[:8]}",
        author=author,
        timestamp=time.time(),
        content=types.Content(role=role, parts=parts),
        **extra,
    )


def _text(author: str, text: str) -> Event:
    return _event(author, [types.Part(text=text)])


#: session id -> (user, events). Calls named `lookup` are answered, the others are not.
def seed_plan() -> dict[str, tuple[str, list[Event]]]:
    return {
        "healthy-text": ("bob", [_text("user", "hi"), _text("agent", "hello")]),
        "healthy-call": (
            "alice",
            [
                _text("user", "look it up"),
                _event("agent", [_call("c-ok", "lookup")]),
                _event("agent", [_response("c-ok", "lookup")]),
                _text("agent", "found it"),
            ],
        ),
        "missing-one": (
            "alice",
            [_text("user", "refund"), _event("agent", [_call("c-m1", "refund")])],
        ),
        "missing-two": (
            "bob",
            [
                _text("user", "two things"),
                _event("agent", [_call("c-m2", "charge"), _call("c-m3", "email")]),
                _text("user", "hello?"),
            ],
        ),
        "pending-one": (
            "alice",
            [
                _text("user", "long job"),
                _event("agent", [_call("c-p1", "render")], long_running_tool_ids={"c-p1"}),
            ],
        ),
        "mixed": (
            "alice",
            [
                _text("user", "everything"),
                _event(
                    "agent",
                    [_call("c-ok2", "lookup"), _call("c-m4", "ship"), _call("c-p2", "approve")],
                    long_running_tool_ids={"c-p2"},
                ),
                _event("agent", [_response("c-ok2", "lookup")]),
            ],
        ),
    }


#: What a scan of the whole seeded app must report.
EXPECTED_ALL = {
    "sessions_scanned": 6,
    "healthy_sessions": 2,
    "sessions_with_missing": 3,
    "sessions_with_pending": 2,
    "missing_calls": 4,
    "pending_calls": 2,
}
EXPECTED_FINDINGS = {
    ("alice", "missing-one", "c-m1", "refund", "missing"),
    ("bob", "missing-two", "c-m2", "charge", "missing"),
    ("bob", "missing-two", "c-m3", "email", "missing"),
    ("alice", "mixed", "c-m4", "ship", "missing"),
    ("alice", "pending-one", "c-p1", "render", "pending"),
    ("alice", "mixed", "c-p2", "approve", "pending"),
}


async def seed(service: BaseSessionService, app_name: str) -> None:
    """Writes the plan through the service's own create_session/append_event."""
    try:
        for session_id, (user, events) in seed_plan().items():
            session = await create_to_append(
                service, app_name=app_name, user_id=user, session_id=session_id
            )
            for event in events:
                await service.append_event(session, event)
        # Another app's broken session, which an `--app` scan must not count.
        other = await create_to_append(service, app_name=f"{app_name}_other", user_id="alice")
        await service.append_event(other, _event("agent", [_call("c-x", "refund")]))
    finally:
        close = getattr(service, "close", None)
        if close is not None:
            await close()


@dataclass
class Store:
    """A seeded store: the URI the CLI gets and extra CLI options it needs."""

    kind: str
    uri: str
    app: str
    options: list[str]
    path: Path | None = None


def _sql_service(uri: str) -> BaseSessionService:
    from google.adk.sessions.database_session_service import DatabaseSessionService

    return DatabaseSessionService(db_url=uri)


def _make_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    app_name = f"cli_{uuid.uuid4().hex[:10]}"
    if kind == "sqlite":
        from google.adk.sessions.sqlite_session_service import SqliteSessionService

        path = tmp_path / "adk-sqlite.db"
        asyncio.run(seed(SqliteSessionService(db_path=str(path)), app_name))
        return Store(kind, f"sqlite:///{path}", app_name, [], path)
    if kind == "db-sqlite":
        path = tmp_path / "adk-db.db"
        uri = f"sqlite+aiosqlite:///{path}"
        asyncio.run(seed(_sql_service(uri), app_name))
        return Store(kind, uri, app_name, [], path)
    if kind == "postgres":
        uri = request.getfixturevalue("postgres_url")
        asyncio.run(seed(_sql_service(uri), app_name))
        return Store(kind, uri, app_name, [])
    if kind == "mariadb":
        uri = request.getfixturevalue("mariadb_url")
        asyncio.run(seed(_sql_service(uri), app_name))
        return Store(kind, uri, app_name, [])
    if kind == "redis":
        from google.adk.integrations.redis import RedisSessionService, RedisSessionServiceConfig

        uri = request.getfixturevalue("redis_url")
        prefix = f"adkp-cli:{uuid.uuid4().hex[:10]}:"
        config = RedisSessionServiceConfig(uri=uri, key_prefix=prefix)
        asyncio.run(seed(RedisSessionService(config=config), app_name))
        request.addfinalizer(lambda: asyncio.run(_delete_redis_keys(uri, prefix)))
        return Store(kind, uri, app_name, ["-o", f"key_prefix={prefix}"])
    raise AssertionError(kind)


async def _delete_redis_keys(uri: str, prefix: str) -> None:
    import redis.asyncio as redis

    client = redis.from_url(uri)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


@pytest.fixture(
    params=[
        "sqlite",
        "db-sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param(
            "redis",
            marks=[
                pytest.mark.redis,
                requires(HAS_ADK_REDIS, "google.adk.integrations.redis (added in 2.9)"),
            ],
        ),
    ]
)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "postgres":
        require_server("PostgreSQL", "127.0.0.1", 5432)
    return _make_store(request.param, request, tmp_path)


SQL_STORES = ["db-sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]

#: `SQL_STORES` and MariaDB, for the tests where the SQL dialect matters:
#: ``@pytest.mark.parametrize("sql_store", SQL_STORES_WITH_MARIADB, indirect=True)``.
SQL_STORES_WITH_MARIADB = [*SQL_STORES, pytest.param("mariadb", marks=pytest.mark.mariadb)]


@pytest.fixture(params=SQL_STORES)
def sql_store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "postgres":
        require_server("PostgreSQL", "127.0.0.1", 5432)
    return _make_store(request.param, request, tmp_path)


def cli(*args: str) -> Any:
    return runner.invoke(app, list(args))


def scan_json(store: Store, *extra: str) -> tuple[int, dict[str, Any]]:
    result = cli("scan", store.uri, "--app", store.app, *store.options, "--json", *extra)
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


# -- scan -------------------------------------------------------------------


def test_scan_reports_exact_counts_and_calls_of_seeded_store(store: Store) -> None:
    code, report = scan_json(store)
    assert code == 0
    assert {key: report[key] for key in EXPECTED_ALL} == EXPECTED_ALL
    found = {
        (f["user"], f["session"], f["call_id"], f["name"], f["status"]) for f in report["findings"]
    }
    assert found == EXPECTED_FINDINGS
    assert report["unreadable"] == [] and report["vanished_sessions"] == 0
    assert all(f["age_seconds"] >= 0 and f["event_id"] for f in report["findings"])
    # Missing calls are listed first: they are the ones that break providers.
    statuses = [f["status"] for f in report["findings"]]
    assert statuses == sorted(statuses, key=lambda s: s != "missing")


def test_scan_of_one_user_counts_only_that_users_sessions(store: Store) -> None:
    _, report = scan_json(store, "--user", "bob")
    assert report["user"] == "bob"
    assert report["sessions_scanned"] == 2
    assert report["healthy_sessions"] == 1
    assert (report["sessions_with_missing"], report["missing_calls"]) == (1, 2)
    assert report["pending_calls"] == 0


@pytest.mark.parametrize(
    ("fail_on", "user", "expected_code"),
    [
        ("never", None, 0),
        ("missing", None, 1),
        ("pending", None, 1),
        ("any", None, 1),
        ("pending", "bob", 0),  # bob has missing calls but none pending
        ("missing", "bob", 1),
    ],
)
def test_fail_on_sets_exit_code_for_cron(
    sql_store: Store, fail_on: str, user: str | None, expected_code: int
) -> None:
    extra = ["--fail-on", fail_on] + (["--user", user] if user else [])
    result = cli("scan", sql_store.uri, "--app", sql_store.app, *extra)
    assert result.exit_code == expected_code, result.output


def test_an_app_the_store_does_not_hold_is_an_error_not_a_clean_scan(sql_store: Store) -> None:
    """A typo in --app must not pass --fail-on forever: exit 2, naming the apps there are."""
    result = cli("scan", sql_store.uri, "--app", "no_such_app", "--fail-on", "any", "--json")
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    if HAS_SESSION_SCHEMAS:
        # The store (shared by this test session's stores on PostgreSQL) holds this one's app.
        assert "no app 'no_such_app'" in line and "it holds" in line and "apps: '" in line, line
    else:  # google-adk 1.20 is read through get_session, which cannot list apps
        assert "no session in app 'no_such_app'" in line, line


def test_scan_text_lists_broken_sessions_without_progress_bar_off_a_terminal(
    sql_store: Store,
) -> None:
    result = cli("scan", sql_store.uri, "--app", sql_store.app)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert [line.rstrip() for line in out.splitlines()] == out.splitlines(), "trailing spaces"
    # The next step under missing calls: check the side effects; the store is never written.
    assert "Check its side effects" in out and "never writes to the store" in out
    assert "Scanned 6 sessions" in out
    assert "3 with missing calls (4 calls)" in out and "2 with pending calls (2 calls)" in out
    for _user, session, call_id, _name, _status in EXPECTED_FINDINGS:
        assert session in out and call_id in out
    assert "healthy-call" not in out and "c-ok" not in out
    assert "scanning" not in result.output  # the progress bar is for terminals only


def test_scan_limit_truncates_table_but_json_keeps_all(sql_store: Store) -> None:
    result = cli("scan", sql_store.uri, "--app", sql_store.app, "--limit", "2")
    assert "… and 4 more calls" in result.stdout
    _, report = scan_json(sql_store, "--limit", "2")
    assert len(report["findings"]) == 6


@pytest.mark.parametrize("concurrency", ["1", "3", "32"])
def test_scan_result_does_not_depend_on_concurrency(sql_store: Store, concurrency: str) -> None:
    _, report = scan_json(sql_store, "--concurrency", concurrency)
    assert {key: report[key] for key in EXPECTED_ALL} == EXPECTED_ALL


def test_scan_accepts_pairing_uri_and_reads_stored_data(sql_store: Store) -> None:
    result = cli("scan", "pairing+" + sql_store.uri, "--app", sql_store.app, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["missing_calls"] == 4


# -- reads only -------------------------------------------------------------


def _sqlite_snapshot(path: Path) -> dict[str, Any]:
    import sqlite3

    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in connection.execute("SELECT name FROM sqlite_master")]
        snapshot: dict[str, Any] = {"file_sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
        for table in ("sessions", "events", "app_states", "user_states"):
            if table in tables:
                snapshot[f"{table}_count"] = connection.execute(
                    f"SELECT count(*) FROM {table}"
                ).fetchone()[0]
        snapshot["session_update_times"] = connection.execute(
            "SELECT app_name, user_id, id, update_time FROM sessions ORDER BY 1, 2, 3"
        ).fetchall()
        snapshot["state_update_times"] = (
            connection.execute(
                "SELECT app_name, user_id, update_time FROM user_states ORDER BY 1, 2"
            ).fetchall()
            + connection.execute(
                "SELECT app_name, '', update_time FROM app_states ORDER BY 1"
            ).fetchall()
        )
        return snapshot
    finally:
        connection.close()


async def _postgres_snapshot(url: str) -> dict[str, Any]:
    import asyncpg

    connection = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        snapshot: dict[str, Any] = {}
        for table in ("sessions", "events", "app_states", "user_states", "adk_internal_metadata"):
            if await connection.fetchval("SELECT to_regclass($1)", table) is None:
                # google-adk 1.20 records no schema version: a table that must stay absent.
                snapshot[f"{table}_count"] = None
                continue
            snapshot[f"{table}_count"] = await connection.fetchval(f"SELECT count(*) FROM {table}")
        snapshot["session_update_times"] = [
            tuple(r)
            for r in await connection.fetch(
                "SELECT app_name, user_id, id, update_time FROM sessions ORDER BY 1, 2, 3"
            )
        ]
        snapshot["state_update_times"] = [
            tuple(r)
            for r in await connection.fetch(
                "SELECT app_name, user_id, update_time FROM user_states ORDER BY 1, 2"
            )
        ] + [
            tuple(r) for r in await connection.fetch("SELECT app_name, update_time FROM app_states")
        ]
        snapshot["events_md5"] = await connection.fetchval(
            "SELECT md5(string_agg(e::text, '|' ORDER BY app_name, user_id, session_id, id)) "
            "FROM events e"
        )
        return snapshot
    finally:
        await connection.close()


def _mariadb_snapshot(url: str) -> dict[str, Any]:
    """Every table of the database: its name, MariaDB's checksum and its rows in key order."""
    from sqlalchemy.engine import make_url

    from tests.conftest import mariadb_admin

    from .support.backends import mariadb_rows

    database = make_url(url).database
    tables = tuple(row[0] for row in mariadb_admin("SHOW TABLES", database=database))
    checksums = mariadb_admin(f"CHECKSUM TABLE {', '.join(tables)} EXTENDED", database=database)
    rows = mariadb_rows(url, None, tables)
    return {
        "tables": tables,
        "checksums": checksums,
        "events_count": rows.count("\nevents: ") + rows.startswith("events: "),
        "session_update_times": [line for line in rows.splitlines() if line[:10] == "sessions: "],
        "rows_sha256": hashlib.sha256(rows.encode()).hexdigest(),
    }


def _snapshot(store: Store) -> dict[str, Any]:
    if store.path is not None:
        return _sqlite_snapshot(store.path)
    if store.kind == "mariadb":
        return _mariadb_snapshot(store.uri)
    return asyncio.run(_postgres_snapshot(store.uri))


@pytest.mark.parametrize("sql_store", SQL_STORES_WITH_MARIADB, indirect=True)
def test_scan_and_show_never_write_to_the_store(sql_store: Store) -> None:
    before = _snapshot(sql_store)
    assert before["events_count"] > 0 and before["session_update_times"]
    # google-adk 1.20's DatabaseSessionService keeps events in columns, a layout
    # the direct reader does not read (it needs ADK's sessions.schemas): there
    # `auto` falls back to get_session, so `direct` would only be refused.
    direct_readable = HAS_SESSION_SCHEMAS or sql_store.uri.startswith("sqlite://")
    for args in (
        ["scan", sql_store.uri, "--app", sql_store.app],
        ["scan", sql_store.uri, "--app", sql_store.app, "--reader", "get-session"],
        ["scan", sql_store.uri, "--app", sql_store.app, "--since", "1d"]
        + (["--reader", "direct"] if direct_readable else []),
        ["scan", sql_store.uri, "--app", sql_store.app, "--user", "alice", "--json"],
        ["show", sql_store.uri, "--app", sql_store.app, "--user", "alice", "--session", "mixed"],
    ):
        result = cli(*args)
        assert result.exit_code == 0, result.output
    assert _snapshot(sql_store) == before


def test_scan_of_database_without_adk_tables_fails_instead_of_creating_them(
    tmp_path: Path,
) -> None:
    """Unguarded, ADK's DatabaseSessionService creates its tables on first read."""
    import sqlite3

    path = tmp_path / "not-adk.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE unrelated (x INTEGER)")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    result = cli("scan", f"sqlite+aiosqlite:///{path}", "--app", "any")
    assert result.exit_code == 2
    assert "has no ADK session tables" in result.stderr
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    with sqlite3.connect(path) as connection:
        tables = {r[0] for r in connection.execute("SELECT name FROM sqlite_master")}
    assert tables == {"unrelated"}


# -- show -------------------------------------------------------------------


def test_show_json_puts_a_synthetic_result_after_each_unanswered_call(store: Store) -> None:
    result = cli(
        "show", store.uri, "--app", store.app, "--user", "alice", "--session", "mixed",
        *store.options, "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    stored, view = shown["stored_events"], shown["view_events"]
    assert len(stored) == 3 and len(view) == 4
    # After c-ok2's result: ADK merges a call event's results in history order,
    # so the answers reach the model in call order.
    assert [e["synthetic"] for e in view] == [False, False, False, True]
    assert not any(e["synthetic"] for e in stored)
    call_parts = stored[1]["parts"]
    assert [(p["id"], p["status"]) for p in call_parts] == [
        ("c-ok2", "answered"),
        ("c-m4", "missing"),
        ("c-p2", "pending"),
    ]
    synthetic = view[3]
    assert synthetic["author"] == "agent"
    assert [(p["kind"], p["id"], p["status"]) for p in synthetic["parts"]] == [
        ("response", "c-m4", "missing"),
        ("response", "c-p2", "pending"),
    ]
    assert [c["call_id"] for c in shown["missing_calls"]] == ["c-m4"]
    assert [c["call_id"] for c in shown["pending_calls"]] == ["c-p2"]


def test_show_text_marks_synthetic_rows(sql_store: Store) -> None:
    result = cli(
        "show", sql_store.uri, "--app", sql_store.app, "--user", "alice",
        "--session", "missing-one",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "2 stored events, 3 in the view; 1 missing and 0 pending calls" in out
    synthetic_rows = [line for line in out.splitlines() if line.lstrip().startswith("+ ")]
    assert len(synthetic_rows) == 1
    assert "c-m1" in synthetic_rows[0] and "synthetic: missing" in synthetic_rows[0]
    assert f"metadata key '{METADATA_KEY}'" in out


def test_show_of_healthy_session_adds_nothing(sql_store: Store) -> None:
    result = cli(
        "show", sql_store.uri, "--app", sql_store.app, "--user", "alice",
        "--session", "healthy-call", "--json",
    )  # fmt: skip
    shown = json.loads(result.stdout)
    assert shown["stored_events"] == shown["view_events"]
    assert shown["missing_calls"] == shown["pending_calls"] == []


def test_scan_draws_a_progress_bar_on_a_terminal(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The console script with stderr on a pseudo-terminal: the bar is drawn there."""
    import os
    import pty
    import subprocess
    import sys

    store = _make_store("db-sqlite", request, tmp_path)
    script = Path(sys.executable).with_name("adk-pairing")
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [str(script), "scan", store.uri, "--app", store.app, "--json"],
            stdout=subprocess.PIPE,
            stderr=follower,
            timeout=60,
            check=False,
        )
        os.close(follower)
        follower = -1
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other end is closed
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    assert done.returncode == 0
    assert json.loads(done.stdout)["sessions_scanned"] == 6  # stdout stays clean JSON
    assert b"scanning" in drawn and b"6/6" in drawn
    assert b"sessions/s" in drawn and b"ETA" in drawn  # the rate and the time left
