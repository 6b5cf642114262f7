"""The library's bad-input table: each mistake is one typed error, one line, no secret.

The same table the CLI's ``test_bad_input_is_one_line_naming_the_fix`` runs, for
`create_session_service`, `PairingSessionService`, `register_pairing_schemes`
and the config loader: the issue's cases and those of docs/cli.md that apply
to a library (a missing file or an empty database is not an error there: the
service sets it up, as it would unwrapped). Failures that only a server can
show (a login, a database) are raised on first use, when ADK first connects,
against the real PostgreSQL server.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import sqlite3
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from adk_pairing import (
    ArgumentTypeError,
    ArgumentValueError,
    ConfigError,
    PairingError,
    StoreDatabaseError,
    StoreHostError,
    StoreLayoutError,
    StoreLoginError,
    UnsupportedSchemeError,
    UriPasswordError,
    create_session_service,
    load_session_service,
    register_pairing_schemes,
)
from tests.adk_features import ADK_VERSION, HAS_ADK_REDIS
from tests.conftest import PG_HOST, PG_PORT, require_server

SECRET = "s3cr3t-Pa55"
RAW = f"{SECRET}@x#y"  # a raw "@" and "#": SQLAlchemy ends the password at the "@"
ENCODED_WRONG = "wr%40ng-Pa55"  # percent-encoded, and simply wrong
PG = f"{PG_HOST}:{PG_PORT}"
#: The local Redis server, which has no password (a password in the URI is refused).
REDIS = "127.0.0.1:6379"


def _first_use(uri: str) -> Callable[[], Any]:
    """Builds the service for `uri` and reads from it: where ADK first connects."""

    async def read() -> None:
        service = create_session_service(uri)
        try:
            await service.list_sessions(app_name="a", user_id="u")
        finally:
            await service.close()

    return lambda: asyncio.run(read())


def _sqlite_service_file(path: Path) -> Path:
    """A file ``adk web``'s SqliteSessionService wrote, holding one session."""
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    async def write() -> None:
        await SqliteSessionService(db_path=str(path)).create_session(app_name="a", user_id="u")

    asyncio.run(write())
    return path


def _database_service_file(path: Path) -> Path:
    """A file DatabaseSessionService (sqlite+aiosqlite) wrote, holding one session."""
    from google.adk.sessions.database_session_service import DatabaseSessionService

    async def write() -> None:
        service = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}")
        try:
            await service.create_session(app_name="a", user_id="u")
        finally:
            await service.db_engine.dispose()

    asyncio.run(write())
    return path


def _case(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """(the call, the error type, what its one line must say, a file that must stay as it was)."""
    if name == "SqliteSessionService file as sqlite+aiosqlite":
        path = _sqlite_service_file(tmp_path / "web.db")
        call = lambda: create_session_service(f"pairing+sqlite+aiosqlite:///{path}")  # noqa: E731
        return call, StoreLayoutError, (f"use sqlite:///{path}",), path
    if name == "DatabaseSessionService file as sqlite":
        path = _database_service_file(tmp_path / "db.db")
        call = lambda: create_session_service(f"pairing+sqlite:///{path}")  # noqa: E731
        return call, StoreLayoutError, (f"use sqlite+aiosqlite:///{path}",), path
    if name == "uri None":
        return lambda: create_session_service(None), ArgumentTypeError, ("uri must be",), None
    if name == "uri of the wrong type to the constructor":
        from adk_pairing import PairingSessionService

        return lambda: PairingSessionService(uri=5), ArgumentTypeError, ("uri must be",), None
    if name == "unknown scheme pairing+foo":
        return (
            lambda: create_session_service("pairing+foo://x"),
            UnsupportedSchemeError,
            ("'foo'", "postgresql+asyncpg", "sqlite+aiosqlite", "redis"),
            None,
        )
    if name == "unknown scheme nosuchdb with a password":
        return (
            lambda: create_session_service(f"pairing+nosuchdb://u:{SECRET}@host/db"),
            UnsupportedSchemeError,
            ("'nosuchdb'", "u:***@host"),
            None,
        )
    if name == "no pairing+ prefix":
        return (
            lambda: create_session_service("sqlite+aiosqlite:///x.db"),
            UnsupportedSchemeError,
            ("pairing+sqlite+aiosqlite:///x.db",),
            None,
        )
    if name == "no scheme":
        return (
            lambda: create_session_service("pairing+sessions.db"),
            UnsupportedSchemeError,
            ("is not a session service URI",),
            None,
        )
    if name == "missing_text=5":
        return (
            lambda: create_session_service("pairing+memory://", missing_text=5),
            ArgumentTypeError,
            ("missing_text must be a string",),
            None,
        )
    if name == "analysis_cache_size='10'":
        return (
            lambda: create_session_service("pairing+memory://", analysis_cache_size="10"),
            ArgumentTypeError,
            ("analysis_cache_size must be a whole number",),
            None,
        )
    if name == "analysis_cache_size=-1":
        return (
            lambda: create_session_service("pairing+memory://", analysis_cache_size=-1),
            ArgumentValueError,
            ("analysis_cache_size must be a whole number of sessions >= 0",),
            None,
        )
    if name == "unknown Redis option":
        if not HAS_ADK_REDIS:
            pytest.skip(f"google-adk {ADK_VERSION} has no google.adk.integrations.redis (2.9)")
        return (
            lambda: create_session_service(f"pairing+redis://{REDIS}/0", key_prefx="x"),
            ArgumentValueError,
            ("Unknown option(s) ['key_prefx']",),
            None,
        )
    if name == "extra_schemes as one string":
        return (
            lambda: register_pairing_schemes(extra_schemes="mysql+asyncmy", registry=object()),
            ArgumentTypeError,
            ("extra_schemes must be a list",),
            None,
        )
    if name == "config key of the wrong type":
        path = tmp_path / "s.yaml"
        path.write_text(
            "session_service:\n  uri: pairing+memory://\n  pairing: {missing_text: 5}\n"
        )
        return (
            lambda: load_session_service(path),
            ConfigError,
            ("session_service.pairing.missing_text: wrong type",),
            None,
        )
    if name == "README password line, variable unset":
        path = tmp_path / "s.yaml"
        path.write_text(
            "session_service:\n  uri: pairing+sqlite+aiosqlite:///x.db\n"
            "  password: ${DB_PASSWORD}\n"
        )
        return (
            lambda: load_session_service(path, environ={}),
            ConfigError,
            ("DB_PASSWORD is not set", "${DB_PASSWORD:-}"),
            None,
        )
    if name == "raw @# in a PostgreSQL password":
        return (
            lambda: create_session_service(f"pairing+postgresql+asyncpg://postgres:{RAW}@{PG}/x"),
            UriPasswordError,
            ("percent-encode it: # as %23", "@ as %40"),
            None,
        )
    if name == "raw # in a Redis password":
        return (
            lambda: create_session_service(f"pairing+redis://:{SECRET}#x@127.0.0.1:6379/0"),
            UriPasswordError,
            ("percent-encode it: # as %23",),
            None,
        )
    if name == "SQLite path is a directory":
        return (
            lambda: create_session_service(f"pairing+sqlite+aiosqlite:///{tmp_path}"),
            StoreLayoutError,
            ("is a directory, not a SQLite file",),
            None,
        )
    if name == "SQLite path is not a SQLite file":
        path = tmp_path / "notes.txt"
        path.write_text("not a database\n" * 100)
        call = lambda: create_session_service(f"pairing+sqlite+aiosqlite:///{path}")  # noqa: E731
        return call, StoreLayoutError, ("is not a SQLite database",), path
    if name == "PostgreSQL role does not exist":
        require_server("PostgreSQL", PG_HOST, PG_PORT)
        return (
            _first_use(f"pairing+postgresql+asyncpg://nosuchrole:{SECRET}@{PG}/postgres"),
            StoreLoginError,
            ('rejected the login: role "nosuchrole" does not exist', "Fix the user name"),
            None,
        )
    if name == "PostgreSQL login refused, password already encoded":
        require_server("PostgreSQL", PG_HOST, PG_PORT)
        return (
            _first_use(f"pairing+postgresql+asyncpg://nosuchrole:{ENCODED_WRONG}@{PG}/postgres"),
            StoreLoginError,
            ("rejected the login", "if a % is meant literally"),
            None,
        )
    if name == "PostgreSQL database does not exist":
        require_server("PostgreSQL", PG_HOST, PG_PORT)
        return (
            _first_use(f"pairing+postgresql+asyncpg://postgres:{SECRET}@{PG}/nosuchdb_adkp"),
            StoreDatabaseError,
            ('database "nosuchdb_adkp" does not exist', "Fix the database name"),
            None,
        )
    if name == "nothing listening":
        return (
            _first_use(f"pairing+postgresql+asyncpg://postgres:{SECRET}@127.0.0.1:1/x"),
            StoreHostError,
            ("cannot connect to", "Is the server running"),
            None,
        )
    if name == "host does not resolve":
        return (
            _first_use(f"pairing+postgresql+asyncpg://postgres:{SECRET}@nosuchhost.invalid/x"),
            StoreHostError,
            ("cannot resolve the host of", "Check the host name"),
            None,
        )
    if name == "unknown engine keyword":
        return (
            lambda: create_session_service(
                f"pairing+sqlite+aiosqlite:///{tmp_path}/x.db", pool_sizee=10
            ),
            ArgumentTypeError,
            ("unknown keyword argument 'pool_sizee'", "it takes", "pool_size"),
            None,
        )
    if name == "PairingPlugin fill_missing_ids='yes'":
        from adk_pairing import PairingPlugin

        return (
            lambda: PairingPlugin(fill_missing_ids="yes"),
            ArgumentTypeError,
            ("fill_missing_ids must be True, False or None",),
            None,
        )
    if name == "MariaDB user does not exist":
        require_server("MariaDB", "127.0.0.1", 3306)
        return (
            _first_use(f"pairing+mysql+aiomysql://nosuchuser:{SECRET}@127.0.0.1:3306/mysql"),
            StoreLoginError,
            ("rejected the login: Access denied for user 'nosuchuser'", "Fix the user name"),
            None,
        )
    if name == "MariaDB database does not exist":
        require_server("MariaDB", "127.0.0.1", 3306)
        return (
            _first_use("pairing+mysql+aiomysql://root@127.0.0.1:3306/nosuchdb_adkp"),
            StoreDatabaseError,
            ("Unknown database 'nosuchdb_adkp'", "Fix the database name"),
            None,
        )
    if name.startswith("Redis "):
        if not HAS_ADK_REDIS:
            pytest.skip(f"google-adk {ADK_VERSION} has no google.adk.integrations.redis (2.9)")
        if "listening" not in name:
            require_server("Redis", "127.0.0.1", 6379)
    if name == "Redis password for a server that has none":
        return (
            _first_use(f"pairing+redis://:{SECRET}@{REDIS}/0"),
            StoreLoginError,
            ("redis://:***@127.0.0.1:6379/0 rejected the login", "remove the password"),
            None,
        )
    if name == "Redis user and password refused, password already encoded":
        return (
            _first_use(f"pairing+redis://nosuchuser:{ENCODED_WRONG}@{REDIS}/0"),
            StoreLoginError,
            ("invalid username-password pair", "Fix the user name or password", "%25"),
            None,
        )
    if name == "Redis nothing listening":
        return (
            _first_use(f"pairing+redis://:{SECRET}@127.0.0.1:1/0"),
            StoreHostError,
            ("cannot connect to redis://:***@127.0.0.1:1/0", "Is the server running"),
            None,
        )
    if name == "Redis host does not resolve":
        return (
            _first_use(f"pairing+redis://:{SECRET}@nosuchhost.invalid:6379/0"),
            StoreHostError,
            ("cannot resolve the host of redis://:***@nosuchhost.invalid", "Check the host name"),
            None,
        )
    if name == "Redis database number out of range":
        return (
            _first_use(f"pairing+redis://{REDIS}/99"),
            StoreDatabaseError,
            ("DB index is out of range", "Fix the database number"),
            None,
        )
    if name.startswith("driver not installed: "):
        scheme, module = name.removeprefix("driver not installed: ").split(" without ")
        if importlib.util.find_spec(module) is not None:
            pytest.skip(f"{module} is installed here")
        return (
            lambda: create_session_service(f"pairing+{scheme}://u:{SECRET}@{PG}/db"),
            UnsupportedSchemeError,
            (f"needs the module {module}, which is not installed", "pip install 'adk-pairing["),
            None,
        )
    if name == "synchronous driver mysql+pymysql":
        return (
            lambda: create_session_service(f"pairing+mysql+pymysql://u:{SECRET}@127.0.0.1/db"),
            UnsupportedSchemeError,
            ("mysql+aiomysql://", "pip install 'adk-pairing[mysql]'"),
            None,
        )
    if name == "mariadb+aiomysql":
        return (
            lambda: create_session_service(f"pairing+mariadb+aiomysql://u:{SECRET}@127.0.0.1/db"),
            UnsupportedSchemeError,
            ("use 'pairing+mysql+aiomysql://u:***@127.0.0.1/db'",),
            None,
        )
    if name == "redis:// on a google-adk without its Redis service":
        from adk_pairing.shells import factory

        monkeypatch.setattr(factory, "has_adk_redis_session_service", lambda: False)
        return (
            lambda: create_session_service(f"pairing+redis://:{SECRET}@{REDIS}/0"),
            UnsupportedSchemeError,
            ("needs google-adk >= 2.9", "PairingSessionService(RedisSessionService(uri="),
            None,
        )
    if name == "sqlite:// in a directory that does not exist":
        return (
            _first_use(f"pairing+sqlite:///{tmp_path}/nodir/sessions.db"),
            StoreDatabaseError,
            ("cannot open the SQLite database", "that its directory exists"),
            None,
        )
    if name == "load_config(None)":
        from adk_pairing import load_config

        return lambda: load_config(None), ArgumentTypeError, ("path must be",), None
    raise AssertionError(name)


CASES = [
    "SqliteSessionService file as sqlite+aiosqlite",
    "DatabaseSessionService file as sqlite",
    "uri None",
    "uri of the wrong type to the constructor",
    "unknown scheme pairing+foo",
    "unknown scheme nosuchdb with a password",
    "no pairing+ prefix",
    "no scheme",
    "missing_text=5",
    "analysis_cache_size='10'",
    "analysis_cache_size=-1",
    "unknown Redis option",
    "extra_schemes as one string",
    "config key of the wrong type",
    "README password line, variable unset",
    "raw @# in a PostgreSQL password",
    "raw # in a Redis password",
    "SQLite path is a directory",
    "SQLite path is not a SQLite file",
    "PostgreSQL role does not exist",
    "PostgreSQL login refused, password already encoded",
    "PostgreSQL database does not exist",
    "nothing listening",
    "host does not resolve",
    "unknown engine keyword",
    "PairingPlugin fill_missing_ids='yes'",
    "MariaDB user does not exist",
    "MariaDB database does not exist",
    "load_config(None)",
    "Redis password for a server that has none",
    "Redis user and password refused, password already encoded",
    "Redis nothing listening",
    "Redis host does not resolve",
    "Redis database number out of range",
    "driver not installed: postgresql without psycopg",
    "driver not installed: mysql+asyncmy without asyncmy",
    "synchronous driver mysql+pymysql",
    "mariadb+aiomysql",
    "redis:// on a google-adk without its Redis service",
    "sqlite:// in a directory that does not exist",
]


# A sqlite:// file that cannot be opened: aiosqlite's worker thread outlives the
# failed open and reports to the closed loop (unwrapped too).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize("name", CASES)
def test_library_bad_input_is_one_typed_line_naming_the_fix(name, tmp_path, monkeypatch):
    call, kind, needles, kept = _case(name, tmp_path, monkeypatch)
    before = hashlib.sha256(kept.read_bytes()).hexdigest() if kept else None

    with pytest.raises(kind) as raised:
        call()

    error = raised.value
    line = str(error)
    assert isinstance(error, PairingError), type(error)
    assert "\n" not in line, line
    assert SECRET not in line and "wr%40ng" not in line, line
    for needle in needles:
        assert needle in line, line
    # "percent-encode" only where the password, as written, holds a raw special character.
    assert ("percent-encode" in line) == ("raw" in name), line
    # Nothing printed with the exception (its cause chain included) shows the secret.
    shown = "".join(traceback.format_exception(error))
    assert SECRET not in shown
    if kept is not None:
        assert hashlib.sha256(kept.read_bytes()).hexdigest() == before


def _community_redis(uri: str) -> Any:
    from google.adk_community.sessions.redis_session_service import RedisSessionService

    return RedisSessionService(uri=uri)


def _adk_redis(uri: str) -> Any:
    if not HAS_ADK_REDIS:
        pytest.skip(f"google-adk {ADK_VERSION} has no google.adk.integrations.redis (2.9)")
    from adk_pairing.shells.factory import create_inner_session_service

    return create_inner_session_service(uri)


#: Each Redis session service: ADK's, from the URI, and google-adk-community's,
#: wrapped by hand (README's way on releases before ADK's own).
REDIS_SERVICES = {"adk": _adk_redis, "community": _community_redis}

#: A failure of each kind, with the password that must not show.
REDIS_FAILURES = {
    "login": (f"redis://:{SECRET}@{REDIS}/0", StoreLoginError),
    "host": (f"redis://:{SECRET}@127.0.0.1:1/0", StoreHostError),
}


async def _outcome(service: Any, method: str) -> Exception | None:
    """What `method` raises on `service` (None if it returns), the service closed after."""
    from adk_pairing.adk import close_session_service

    try:
        await _redis_call(service, method)
    except Exception as error:
        return error
    finally:
        await close_session_service(service)
    return None


async def _unwrapped_and_wrapped(
    build: Callable[[], Any], method: str
) -> tuple[Exception | None, Exception | None]:
    """What `method` raises on the service `build` makes, unwrapped and then wrapped."""
    from adk_pairing import PairingSessionService

    unwrapped = await _outcome(build(), method)
    return unwrapped, await _outcome(PairingSessionService(build()), method)


async def _redis_call(service: Any, method: str) -> None:
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session

    keys = {"app_name": "a", "user_id": "u"}
    if method == "create_session":
        await service.create_session(**keys)
    elif method == "list_sessions":
        await service.list_sessions(**keys)
    elif method == "append_event":
        await service.append_event(Session(id="s", **keys), Event(author="user"))
    else:
        await getattr(service, method)(session_id="s", **keys)


@pytest.mark.redis
@pytest.mark.parametrize("method", ["create_session", "get_session", "list_sessions",
                                    "delete_session", "append_event"])  # fmt: skip
@pytest.mark.parametrize("failure", sorted(REDIS_FAILURES))
@pytest.mark.parametrize("store", sorted(REDIS_SERVICES))
def test_a_redis_failure_is_our_line_and_still_the_error_the_store_raises(store, failure, method):
    """A caller's ``except redis.exceptions.…`` still catches it: never worse than unwrapped.

    Before, the decorator let redis-py's error through in its own words.
    """
    import redis.exceptions

    require_server("Redis", "127.0.0.1", 6379)
    uri, kind = REDIS_FAILURES[failure]

    original, error = asyncio.run(
        _unwrapped_and_wrapped(lambda: REDIS_SERVICES[store](uri), method)
    )

    if original is None:  # community's list_sessions logs the failure and lists nothing
        assert error is None
        return
    assert isinstance(original, redis.exceptions.RedisError), repr(original)
    assert isinstance(error, kind), repr(error)
    assert isinstance(error, type(original)), type(error).__mro__
    assert type(error.__cause__) is type(original)
    assert str(error.__cause__) == str(original)
    line = str(error)
    assert "\n" not in line and line.startswith(("redis://", "cannot connect to redis://")), line
    assert "127.0.0.1" in line
    shown = "".join(traceback.format_exception(error))
    assert SECRET not in shown
    assert shown.rstrip().endswith(line)


# aiosqlite's worker thread outlives a failed open and reports to the closed loop
# (unwrapped too: ADK's SqliteSessionService, not the decorator).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize("method", ["create_session", "get_session", "append_event"])
def test_a_sqlite_file_that_cannot_be_opened_is_our_line_and_still_sqlite3s_error(tmp_path, method):
    """ADK's SqliteSessionService opens its file on every call; before, sqlite3's bare words."""
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    path = tmp_path / "nodir" / "sessions.db"
    original, error = asyncio.run(
        _unwrapped_and_wrapped(lambda: SqliteSessionService(db_path=str(path)), method)
    )

    assert isinstance(original, sqlite3.OperationalError), repr(original)
    assert isinstance(error, StoreDatabaseError), repr(error)
    assert isinstance(error, sqlite3.OperationalError)
    assert type(error.__cause__) is type(original) and str(error.__cause__) == str(original)
    assert str(error).startswith(f"cannot open the SQLite database of sqlite:///{path}: ")
    assert not path.parent.exists()


def test_a_redis_error_that_is_no_login_host_or_database_failure_passes_as_it_is():
    """Only the three failures are translated; the store's other errors are its own."""
    import redis.exceptions

    from adk_pairing.shells.store_failures import store_error_typed

    assert store_error_typed(redis.exceptions.ResponseError("WRONGTYPE Operation"), None) is None
    assert store_error_typed(ConnectionRefusedError(111, "refused"), None) is None


def test_a_typed_redis_failure_pickles_as_both_classes():
    """An error sent between processes (a worker pool) keeps both classes and its line."""
    import pickle

    import redis.exceptions

    from adk_pairing.shells.store_failures import store_error_typed

    uri = f"redis://:{SECRET}@127.0.0.1:1/0"
    error = store_error_typed(redis.exceptions.ConnectionError("Error 111 connecting"), uri)
    back = pickle.loads(pickle.dumps(error))

    assert isinstance(back, StoreHostError) and isinstance(back, redis.exceptions.ConnectionError)
    assert str(back) == str(error) and SECRET not in str(back)


def _tables(path: Path) -> list[str]:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return sorted(row[0] for row in connection.execute("SELECT name FROM sqlite_master"))
    finally:
        connection.close()


def _round_trip(uri: str) -> int:
    """Creates a session through the decorator and reads it back; the events it holds."""

    async def run() -> int:
        service = create_session_service(uri)
        try:
            created = await service.create_session(app_name="a", user_id="u")
            read = await service.get_session(app_name="a", user_id="u", session_id=created.id)
            assert read is not None and read.id == created.id
            return len((await service.list_sessions(app_name="a", user_id="u")).sessions)
        finally:
            await service.close()

    return asyncio.run(run())


@pytest.mark.parametrize("scheme", ["sqlite", "sqlite+aiosqlite"])
def test_a_fresh_or_empty_sqlite_file_is_set_up_as_unwrapped(scheme, tmp_path):
    absent = tmp_path / "new.db"
    empty = tmp_path / "empty.db"
    empty.touch()

    assert _round_trip(f"pairing+{scheme}:///{absent}") == 1
    assert _round_trip(f"pairing+{scheme}:///{empty}") == 1
    assert "sessions" in _tables(empty)


def test_a_file_each_service_wrote_opens_with_its_own_scheme(tmp_path):
    web = _sqlite_service_file(tmp_path / "web.db")
    database = _database_service_file(tmp_path / "db.db")
    web_tables = _tables(web)

    assert _round_trip(f"pairing+sqlite:///{web}") == 2
    assert _round_trip(f"pairing+sqlite+aiosqlite:///{database}") == 2
    assert _tables(web) == web_tables
    assert "adk_internal_metadata" not in web_tables


def test_an_older_database_schema_file_is_refused_as_sqlite_and_left_as_it_was(tmp_path):
    """DatabaseSessionService's legacy (v0, pickled) schema is its layout too."""
    try:
        from google.adk.sessions.schemas.v0 import Base as BaseV0
    except ImportError:  # google-adk before the v1 schema: its one schema is the v0 one
        path = _database_service_file(tmp_path / "v0.db")
    else:
        from sqlalchemy import create_engine

        path = tmp_path / "v0.db"
        engine = create_engine(f"sqlite:///{path}")
        BaseV0.metadata.create_all(engine)
        engine.dispose()
    before = path.read_bytes()

    with pytest.raises(StoreLayoutError, match="written by DatabaseSessionService"):
        create_session_service(f"pairing+sqlite:///{path}")
    assert path.read_bytes() == before
    assert "adk_internal_metadata" not in _tables(path)


def test_the_readme_password_line_is_optional_when_the_variable_is_unset(tmp_path):
    from adk_pairing import load_config

    path = tmp_path / "s.yaml"
    uri = f"pairing+postgresql+asyncpg://agents@{PG}/agents"
    path.write_text(f"session_service:\n  uri: {uri}\n  password: ${{DB_PASSWORD:-}}\n")

    assert load_config(path, environ={}).uri == uri
    assert load_config(path, environ={"DB_PASSWORD": "p@ss"}).uri == uri.replace(
        "agents@", "agents:p%40ss@"
    )


# A server start costs ~13 s: the newest release only (CI's budget); the wiring
# tests start ADK's CLI with the same services.yaml on every release.
@pytest.mark.reliability
@pytest.mark.postgres
def test_adk_api_server_refuses_a_raw_password_at_start_up_with_the_fix(tmp_path, postgres_url):
    """README's command with an unencoded password: the log ends in the one line, once.

    Before, the server started and answered every session request with
    "Internal Server Error". ADK's CLI prints a traceback above the line for
    any service its factory cannot build; the last line is ours.
    """
    from .test_wiring_adk_cli import readme_api_server_args
    from .wiring_support import agents_copy, server_that_must_not_start

    agents_root = agents_copy(tmp_path)
    database = postgres_url.rsplit("/", 1)[1]
    uri = f"pairing+postgresql+asyncpg://postgres:{RAW}@{PG}/{database}"
    argv = readme_api_server_args(uri, agents_root)
    returncode, text = server_that_must_not_start(argv, tmp_path, tmp_path / "server.log")
    assert returncode != 0, text
    last = text.strip().splitlines()[-1]
    assert last.startswith("adk_pairing.shells.errors.UriPasswordError: the password in "), last
    assert "percent-encode it: # as %23" in last
    assert text.count("is not percent-encoded") == 1
    assert SECRET not in text


async def _pg(sql: str, database: str = "postgres") -> list[Any]:
    import asyncpg

    connection = await asyncpg.connect(
        host=PG_HOST, port=PG_PORT, user="postgres", database=database
    )
    try:
        return [tuple(row) for row in await connection.fetch(sql)]
    finally:
        await connection.close()


async def _maria(sql: str, database: str | None = None) -> list[Any]:
    import aiomysql

    connection = await aiomysql.connect(host="127.0.0.1", user="root", db=database, autocommit=True)
    try:
        async with connection.cursor() as cursor:
            await cursor.execute(sql)
            return list(await cursor.fetchall())
    finally:
        connection.close()


SERVERS = {
    # PostgreSQL rolls a failed set-up back: before, a raw ProgrammingError and no write.
    "postgresql": (
        _pg,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
        f"pairing+postgresql+asyncpg://postgres@{PG}/{{name}}",
        ("PostgreSQL", PG_HOST, PG_PORT),
    ),
    # MariaDB keeps what it created before the failure: before, adk_internal_metadata.
    "mariadb": (
        _maria,
        "SHOW TABLES",
        "pairing+mysql+aiomysql://root@127.0.0.1:3306/{name}",
        ("MariaDB", "127.0.0.1", 3306),
    ),
}


@pytest.mark.parametrize("server", sorted(SERVERS))
@pytest.mark.parametrize("table", ["sessions", "events", "app_states"])
def test_a_database_holding_another_applications_table_of_adks_name_is_refused_untouched(
    server, table
):
    admin, list_tables, uri, (label, host, port) = SERVERS[server]
    require_server(label, host, port)
    name = f"adkp_foreign_{table}_{uuid.uuid4().hex[:8]}"
    asyncio.run(admin(f"CREATE DATABASE {name}"))
    try:
        asyncio.run(admin(f"CREATE TABLE {table} (id INT PRIMARY KEY, payload TEXT)", name))
        before = sorted(asyncio.run(admin(list_tables, name)))

        with pytest.raises(StoreLayoutError) as refused:
            _first_use(uri.format(name=name))()

        assert f"{table} lacks app_name" in str(refused.value)
        assert "Name a database of its own" in str(refused.value)
        assert sorted(asyncio.run(admin(list_tables, name))) == before
    finally:
        asyncio.run(admin(f"DROP DATABASE IF EXISTS {name}"))


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_an_empty_database_and_one_adk_set_up_still_work(server):
    admin, _, uri, (label, host, port) = SERVERS[server]
    require_server(label, host, port)
    name = f"adkp_fresh_{uuid.uuid4().hex[:8]}"
    asyncio.run(admin(f"CREATE DATABASE {name}"))
    try:
        assert _round_trip(uri.format(name=name)) == 1  # sets the schema up, as unwrapped
        assert _round_trip(uri.format(name=name)) == 2  # finds its own tables
    finally:
        asyncio.run(admin(f"DROP DATABASE IF EXISTS {name}"))
