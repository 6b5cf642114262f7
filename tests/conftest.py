"""Shared fixtures: real PostgreSQL, MariaDB and Redis servers on this machine.

Each test session gets its own PostgreSQL and MariaDB databases (created here,
dropped at the end) and each test its own Redis key prefix, so runs never see each
other's data. A server that does not answer skips the tests that need it,
except under ``CI=true``, where it fails them: CI must not go green by
skipping the stores it is meant to prove.
"""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import Iterator

import pytest

PG_HOST = os.environ.get("ADK_PAIRING_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("ADK_PAIRING_PG_PORT", "5432"))
PG_USER = os.environ.get("ADK_PAIRING_PG_USER", "postgres")
REDIS_URL = os.environ.get("ADK_PAIRING_REDIS_URL", "redis://127.0.0.1:6379/0")
MARIADB_HOST = os.environ.get("ADK_PAIRING_MARIADB_HOST", "127.0.0.1")
MARIADB_PORT = int(os.environ.get("ADK_PAIRING_MARIADB_PORT", "3306"))
MARIADB_USER = os.environ.get("ADK_PAIRING_MARIADB_USER", "root")

IN_CI = os.environ.get("CI", "").lower() == "true"

# litellm (the OpenAI chat check converts with ADK's LiteLlm) fetches its model
# price map from the internet on import unless told to use the bundled copy;
# every test's traffic stays on 127.0.0.1.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def require_server(name: str, host: str, port: int) -> None:
    """Skips (or under CI fails) the calling test when `name` is unreachable."""
    if _port_open(host, port):
        return
    message = f"{name} is not reachable at {host}:{port}"
    if IN_CI:
        pytest.fail(f"{message}; CI=true requires it (see scripts/ensure-services.sh)")
    pytest.skip(f"{message}; start it with `make services`")


async def _admin(sql: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(
        host=PG_HOST, port=PG_PORT, user=PG_USER, database="postgres"
    )
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A fresh, empty database for this test session; yields its name."""
    require_server("PostgreSQL", PG_HOST, PG_PORT)
    name = f"adk_pairing_test_{uuid.uuid4().hex[:12]}"
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    try:
        yield name
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def postgres_url(postgres_database: str) -> str:
    """SQLAlchemy URL (asyncpg driver) of this session's test database."""
    return f"postgresql+asyncpg://{PG_USER}@{PG_HOST}:{PG_PORT}/{postgres_database}"


def mariadb_admin(*statements: str, database: str | None = None) -> list[tuple]:
    """Runs `statements` on the local MariaDB as the test user; the last one's rows.

    PyMySQL, the synchronous driver aiomysql is built on (the ``mysql`` extra),
    so a sync fixture can call it inside or outside an event loop.
    """
    import pymysql

    connection = pymysql.connect(
        host=MARIADB_HOST, port=MARIADB_PORT, user=MARIADB_USER, database=database,
        autocommit=True,
    )  # fmt: skip
    try:
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
            return list(cursor.fetchall())
    finally:
        connection.close()


@pytest.fixture(scope="session")
def mariadb_database() -> Iterator[str]:
    """A fresh, empty MariaDB database for this test session; yields its name."""
    require_server("MariaDB", MARIADB_HOST, MARIADB_PORT)
    name = f"adk_pairing_test_{uuid.uuid4().hex[:12]}"
    mariadb_admin(f"CREATE DATABASE `{name}`")
    try:
        yield name
    finally:
        mariadb_admin(f"DROP DATABASE IF EXISTS `{name}`")


def mariadb_url_of(database: str) -> str:
    """The SQLAlchemy URL (aiomysql driver, README's form) of MariaDB `database`."""
    return f"mysql+aiomysql://{MARIADB_USER}@{MARIADB_HOST}:{MARIADB_PORT}/{database}"


@pytest.fixture
def mariadb_url(mariadb_database: str) -> str:
    """SQLAlchemy URL (aiomysql driver) of this session's MariaDB test database."""
    return mariadb_url_of(mariadb_database)


@pytest.fixture
def redis_url() -> str:
    """URL of the local Redis server (tests isolate themselves by key prefix)."""
    require_server("Redis", "127.0.0.1", 6379)
    return REDIS_URL


@pytest.fixture
def unique_prefix() -> str:
    """A key prefix no other test uses, for Redis-backed services."""
    return f"adk_pairing_test:{uuid.uuid4().hex[:12]}:"
