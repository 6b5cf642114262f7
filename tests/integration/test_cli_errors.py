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
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.database_session_service import DatabaseSessionService
from typer.testing import CliRunner

from adk_pairing.adk import close_session_service
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
    return f"sqlite+aiosqlite:///{_database_file(tmp_path / 'one.db')}"


@pytest.fixture
def postgres_up() -> None:
    require_server("PostgreSQL", PG_HOST, PG_PORT)


def test_bad_uri_scheme_is_one_line_with_examples() -> None:
    result = runner.invoke(app, ["scan", f"nosuchdb://u:{SECRET}@host/db", "--app", "a"])
    line = assert_one_line_error(
        result, "no session service serves the scheme", "postgresql+asyncpg"
    )
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


async def _pg_admin(sql: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(
        host=PG_HOST, port=PG_PORT, user="postgres", database="postgres"
    )
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


def test_postgres_database_without_adk_tables_is_left_untouched(postgres_up: None) -> None:
    """ADK would create its tables on first read; the read-only connection refuses."""
    import asyncpg

    name = f"adkp_cli_empty_{uuid.uuid4().hex[:8]}"
    admin = _pg_admin

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
    assert_one_line_error(result, "no session", "'nope'", "List them with: adk-pairing show")


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


def test_bad_reader_value_is_a_usage_error(sqlite_store: str) -> None:
    result = runner.invoke(app, ["scan", sqlite_store, "--app", "shop", "--reader", "x"])
    assert result.exit_code == 2, result.output
    assert "--reader" in result.output and "choose one of" in result.output


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


# -- the bad-input table: every wrong place an operator can point at, one line each ----


def _one_session(service: BaseSessionService, path: Path) -> Path:
    """`path`, once `service` has stored one session there (app shop, user alice, "known")."""

    async def create() -> None:
        try:
            await service.create_session(app_name="shop", user_id="alice", session_id="known")
        finally:
            await close_session_service(service)

    asyncio.run(create())
    return path


def _database_file(path: Path) -> Path:
    """A SQLite file written by ADK's DatabaseSessionService."""
    return _one_session(DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}"), path)


def _sqlite_service_file(path: Path) -> Path:
    """A SQLite file written by ADK's SqliteSessionService (adk web's store)."""
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    return _one_session(SqliteSessionService(db_path=str(path)), path)


def _empty_postgres_database(request: pytest.FixtureRequest) -> str:
    """A fresh PostgreSQL database without tables (dropped after the test)."""
    require_server("PostgreSQL", PG_HOST, PG_PORT)
    name = f"adkp_cli_bare_{uuid.uuid4().hex[:8]}"
    asyncio.run(_pg_admin(f'CREATE DATABASE "{name}"'))
    request.addfinalizer(
        lambda: asyncio.run(_pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    )
    return f"postgresql+asyncpg://postgres:{SECRET}@{PG_HOST}:{PG_PORT}/{name}"


def _bad_input(
    case: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], tuple[str, ...]]:
    """The command line of one case of the table, and what its one line must say."""
    sqlite = f"sqlite+aiosqlite:///{tmp_path}"
    if case == "nonexistent path":
        return ["scan", f"{sqlite}/typo.db"], ("no SQLite database at", "typo.db")
    if case == "directory":
        return ["scan", sqlite], ("is a directory, not a SQLite file",)
    if case == "non-SQLite file":
        (tmp_path / "notes.txt").write_text("not a database, only text\n" * 40)
        return ["scan", f"{sqlite}/notes.txt"], ("is not a SQLite database",)
    if case == "0-byte file":
        (tmp_path / "empty.db").touch()
        return ["scan", f"{sqlite}/empty.db"], ("has no ADK session tables", "empty file")
    if case == "DatabaseSessionService file as sqlite://":
        path = _database_file(tmp_path / "db.db")
        return ["scan", f"sqlite:///{path}"], (
            "written by DatabaseSessionService",
            f"use sqlite+aiosqlite:///{path}",
        )
    if case == "SqliteSessionService file as sqlite+aiosqlite://":
        path = _sqlite_service_file(tmp_path / "web.db")
        return ["scan", f"sqlite+aiosqlite:///{path}"], (
            "written by SqliteSessionService",
            f"use sqlite:///{path}",
        )
    if case == "empty PostgreSQL database":
        return ["scan", _empty_postgres_database(request)], ("has no ADK session tables",)
    if case == "unknown scheme":
        return ["scan", f"nosuchdb://u:{SECRET}@host/db", "--app", "a"], (
            "no session service serves the scheme 'nosuchdb'. Use one of",
            "postgresql+asyncpg",
        )
    if case == "missing driver extra":
        # The driver is absent as far as Python's import system can tell.
        monkeypatch.setitem(sys.modules, "asyncpg", None)
        uri = f"postgresql+asyncpg://postgres:{SECRET}@{PG_HOST}:{PG_PORT}/postgres"
        return ["scan", uri], ("needs asyncpg", "pip install")
    if case == "unknown session":
        path = _database_file(tmp_path / "db.db")
        args = ["show", f"sqlite+aiosqlite:///{path}", "--app", "shop", "--user", "alice"]
        return [*args, "--session", "nope"], (
            "no session 'nope'",
            "(known)",
            f"List them with: adk-pairing show sqlite+aiosqlite:///{path} --app shop --user alice",
        )
    if case == "unknown app":
        # SqliteSessionService's file, which every supported release reads directly.
        path = _sqlite_service_file(tmp_path / "web.db")
        return ["scan", f"sqlite:///{path}", "--app", "nosuchapp"], (
            "no app 'nosuchapp'",
            "it holds 1 app: 'shop'",
        )
    if case == "unknown user":
        path = _sqlite_service_file(tmp_path / "web.db")
        return ["scan", f"sqlite:///{path}", "--user", "bobb"], (
            "user 'bobb' has no session",
            "it holds 1 user: 'alice'",
        )
    if case == "unknown -o key":
        path = _database_file(tmp_path / "db.db")
        return ["scan", f"sqlite+aiosqlite:///{path}", "-o", "pool_sizee=3"], (
            "unknown -o option 'pool_sizee'",
            "pool_size, pool_timeout",
        )
    raise AssertionError(case)


BAD_INPUTS = (
    "nonexistent path",
    "directory",
    "non-SQLite file",
    "0-byte file",
    "DatabaseSessionService file as sqlite://",
    "SqliteSessionService file as sqlite+aiosqlite://",
    "empty PostgreSQL database",
    "unknown scheme",
    "missing driver extra",
    "unknown session",
    "unknown app",
    "unknown user",
    "unknown -o key",
)


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_is_one_line_naming_the_fix(
    case: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    args, needles = _bad_input(case, tmp_path, request, monkeypatch)
    line = assert_one_line_error(runner.invoke(app, args), *needles)
    # Never the read-only URL adk-pairing rewrote the operator's into.
    assert "REDACTED" not in line and "mode=ro" not in line, line


def test_a_read_only_file_is_scanned(tmp_path: Path) -> None:
    """The last row of the table is no error: a scan needs only read access to the file."""
    path = _database_file(tmp_path / "db.db")
    path.chmod(0o444)
    result = runner.invoke(app, ["scan", f"sqlite+aiosqlite:///{path}", "--app", "shop", "--json"])
    assert result.exit_code == 0, result.output
    assert '"sessions_scanned": 1' in result.stdout


def test_a_scan_that_reads_nothing_under_fail_on_exits_2(sqlite_store: str) -> None:
    window = ["--app", "shop", "--since", "2999-01-01"]
    result = runner.invoke(app, ["scan", sqlite_store, *window, "--fail-on", "any"])
    assert_one_line_error(result, "read no session", "--fail-on any")
    assert "Scanned 0 sessions" in result.stdout
    quiet = runner.invoke(app, ["scan", sqlite_store, *window])
    assert quiet.exit_code == 0, quiet.output  # without --fail-on, an empty window is an answer


# -- --jobs: an error found before forking, or by a worker, is still one line ------------


def _jobs_scan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), "scan", *args, "--jobs", "2"], capture_output=True, text=True, timeout=120
    )


def test_jobs_unreachable_postgres_is_one_line_before_any_worker() -> None:
    done = _jobs_scan(f"postgresql+asyncpg://postgres:{SECRET}@127.0.0.1:1/agents", "--app", "a")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: cannot connect")
    assert SECRET not in done.stderr


def test_jobs_an_error_of_the_workers_is_reported_once(sqlite_store: str) -> None:
    """Every worker finds the unknown user (its check runs after its scan): one line, exit 2."""
    done = _jobs_scan(sqlite_store, "--app", "shop", "--user", "nobody")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    # The wording depends on whether the store is read directly (google-adk 1.20: not).
    assert done.stderr.startswith("error: "), done.stderr
    assert "user 'nobody'" in done.stderr and "'shop'" in done.stderr, done.stderr


@pytest.fixture
def web_server_port():
    """A real local server on a free port that answers every request as a web server does."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            with connection:
                connection.recv(4096)
                connection.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
                stop.wait(0.5)  # open while the client reads the answer

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        listener.close()


@requires(HAS_ADK_REDIS, "google.adk.integrations.redis (added in 2.9)")
def test_a_redis_uri_at_a_service_that_is_not_redis_is_one_line(web_server_port) -> None:
    """redis-py's InvalidResponse ("Protocol Error: b'HTTP/1.1 400 …'"), which a raw "@"
    and "/" in a password can cause too by moving the host, is a host failure."""
    uri = f"redis://user:{SECRET}@127.0.0.1:{web_server_port}/0"
    result = runner.invoke(app, ["scan", uri, "--app", "a"])
    assert_one_line_error(result, "did not answer as a Redis server", "host and port")
