"""Every way an operator can point the CLI at the wrong place: one line, exit code 2.

The failures are real: a port nothing listens on, a PostgreSQL role that does
not exist (the local server trusts every existing role, so a wrong *password*
is accepted and cannot be the test), a database that does not exist, a session
id nobody stored. Passwords in the URIs must never be printed.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from google.adk.sessions.database_session_service import DatabaseSessionService
from typer.testing import CliRunner

from adk_pairing.adk_compat import close_session_service
from adk_pairing.cli import app
from tests.adk_features import HAS_ADK_REDIS, requires
from tests.conftest import PG_HOST, PG_PORT, require_server

runner = CliRunner()
SECRET = "s3cr3t-Pa55"
SCRIPT = Path(sys.executable).with_name("adk-pairing")


def assert_one_line_error(result: object, *needles: str) -> str:
    """Exit 2, a single ``error:`` line on stderr, no traceback, no password."""
    assert result.exit_code == 2, result.output
    stderr = result.stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in result.output
    assert SECRET not in result.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def sqlite_store(tmp_path: Path) -> str:
    uri = f"sqlite+aiosqlite:///{tmp_path / 'one.db'}"

    async def create() -> None:
        service = DatabaseSessionService(db_url=uri)
        try:
            await service.create_session(app_name="shop", user_id="alice", session_id="known")
        finally:
            await close_session_service(service)

    asyncio.run(create())
    return uri


@pytest.fixture
def postgres_up() -> None:
    require_server("PostgreSQL", PG_HOST, PG_PORT)


def test_bad_uri_scheme_is_one_line_with_examples() -> None:
    result = runner.invoke(app, ["scan", f"nosuchdb://u:{SECRET}@host/db", "--app", "a"])
    line = assert_one_line_error(result, "bad store URI", "postgresql+asyncpg://")
    assert "nosuchdb://u:***@host/db" in line


def test_uri_without_scheme_is_rejected() -> None:
    result = runner.invoke(
        app, ["show", "sessions.db", "--app", "a", "--user", "u", "--session", "s"]
    )
    assert_one_line_error(result, "is not a store URI")


def test_memory_uri_is_rejected_as_having_nothing_to_read() -> None:
    assert_one_line_error(
        runner.invoke(app, ["scan", "memory://", "--app", "a"]), "nothing to read"
    )


def test_missing_sqlite_file_is_reported_and_not_created(tmp_path: Path) -> None:
    path = tmp_path / "typo.db"
    result = runner.invoke(app, ["scan", f"sqlite+aiosqlite:///{path}", "--app", "a"])
    assert_one_line_error(result, "no SQLite database at", str(path))
    assert not path.exists()


def test_unreachable_postgres_says_cannot_connect_and_masks_password() -> None:
    uri = f"postgresql+asyncpg://postgres:{SECRET}@127.0.0.1:1/agents"
    result = runner.invoke(app, ["scan", uri, "--app", "a"])
    assert_one_line_error(result, "cannot connect to", "postgres:***@127.0.0.1:1", "Is the server")


@requires(HAS_ADK_REDIS, "google.adk.integrations.redis (added in 2.9)")
def test_unreachable_redis_says_cannot_connect_and_masks_password() -> None:
    result = runner.invoke(app, ["scan", f"redis://:{SECRET}@127.0.0.1:1/0", "--app", "a"])
    assert_one_line_error(result, "cannot connect to", "redis://:***@127.0.0.1:1/0")


def test_nonexistent_postgres_role_is_a_login_error(postgres_up: None) -> None:
    role = f"no_such_role_{uuid.uuid4().hex[:6]}"
    uri = f"postgresql+asyncpg://{role}:{SECRET}@{PG_HOST}:{PG_PORT}/postgres"
    result = runner.invoke(app, ["scan", uri, "--app", "a"])
    assert_one_line_error(result, "rejected the login", f'role "{role}" does not exist')


def test_nonexistent_postgres_database_names_the_database(postgres_up: None) -> None:
    name = f"no_such_db_{uuid.uuid4().hex[:6]}"
    uri = f"postgresql+asyncpg://postgres@{PG_HOST}:{PG_PORT}/{name}"
    result = runner.invoke(app, ["scan", uri, "--app", "a"])
    assert_one_line_error(result, f'database "{name}" does not exist', "database name")


def test_postgres_database_without_adk_tables_is_left_untouched(postgres_up: None) -> None:
    """ADK would create its tables on first read; the read-only connection refuses."""
    import asyncpg

    name = f"adkp_cli_empty_{uuid.uuid4().hex[:8]}"

    async def admin(sql: str) -> None:
        connection = await asyncpg.connect(
            host=PG_HOST, port=PG_PORT, user="postgres", database="postgres"
        )
        try:
            await connection.execute(sql)
        finally:
            await connection.close()

    async def tables() -> list[str]:
        connection = await asyncpg.connect(
            host=PG_HOST, port=PG_PORT, user="postgres", database=name
        )
        try:
            rows = await connection.fetch(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
            )
            return [r[0] for r in rows]
        finally:
            await connection.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        uri = f"postgresql+asyncpg://postgres@{PG_HOST}:{PG_PORT}/{name}"
        result = runner.invoke(app, ["scan", uri, "--app", "a"])
        assert_one_line_error(result, "has no ADK session tables", "read-only")
        assert asyncio.run(tables()) == []
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def test_unknown_session_says_how_to_list_sessions(sqlite_store: str) -> None:
    result = runner.invoke(
        app, ["show", sqlite_store, "--app", "shop", "--user", "alice", "--session", "nope"]
    )
    assert_one_line_error(result, "no session", "'nope'", "adk-pairing scan")


def test_known_session_is_shown(sqlite_store: str) -> None:
    """The control for the test above: the same store and ids, but a real session."""
    result = runner.invoke(
        app, ["show", sqlite_store, "--app", "shop", "--user", "alice", "--session", "known"]
    )
    assert result.exit_code == 0, result.output


def test_bad_fail_on_value_is_a_usage_error(sqlite_store: str) -> None:
    result = runner.invoke(app, ["scan", sqlite_store, "--app", "shop", "--fail-on", "sometimes"])
    assert result.exit_code == 2
    assert "--fail-on" in result.output


def test_debug_prints_the_traceback_with_password_masked() -> None:
    uri = f"postgresql+asyncpg://postgres:{SECRET}@127.0.0.1:1/agents"
    result = runner.invoke(app, ["scan", uri, "--app", "a", "--debug"])
    assert result.exit_code == 2
    assert "Traceback" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("error: cannot connect")
    assert SECRET not in result.output


def test_console_script_exits_2_with_one_line_and_no_traceback() -> None:
    uri = f"postgresql+asyncpg://postgres:{SECRET}@127.0.0.1:1/agents"
    done = subprocess.run(
        [str(SCRIPT), "scan", uri, "--app", "a"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: cannot connect")
    assert SECRET not in done.stderr
