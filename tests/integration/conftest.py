"""Fixtures for the integration suite: one real store per test, six kinds of store.

`backend` is parametrized over those six; a test that takes it runs once per
store. A test where the SQL dialect matters adds MariaDB (`WITH_MARIADB`).
PostgreSQL, MariaDB and Redis are only touched by the tests that need them,
and a missing server skips those (fails under CI=true, see tests/conftest.py).
"""

from __future__ import annotations

import gc
import json
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from adk_pairing.rules.checks import RULES
from tests.adk_features import HAS_ADK_REDIS, requires
from tests.conftest import (
    MARIADB_HOST,
    MARIADB_PORT,
    PG_HOST,
    PG_PORT,
    PG_USER,
    REDIS_URL,
    mariadb_url_of,
    require_server,
)

from .support.backends import (
    ALL_BACKEND_KINDS,
    BACKEND_KINDS,
    MARIADB_KIND,
    Backend,
    assert_nothing_synthetic_stored,
    open_backend,
)
from .support.scripted_model import REQUEST_LOG, SETUPS, VIEW_AND_PLUGIN

_MARKS = {
    "db-postgres": [pytest.mark.postgres],
    MARIADB_KIND: [pytest.mark.mariadb],
    "redis-adk": [
        pytest.mark.redis,
        requires(HAS_ADK_REDIS, "google.adk.integrations.redis (added in 2.9)"),
    ],
    "redis-community": [pytest.mark.redis],
}


#: The six kinds and MariaDB: ``@pytest.mark.parametrize("backend_spec",
#: backend_params(WITH_MARIADB), indirect=True)`` on a test taking `backend`.
WITH_MARIADB = ALL_BACKEND_KINDS


def backend_params(kinds: tuple[str, ...] | frozenset[str] = BACKEND_KINDS) -> list[Any]:
    """`pytest.param`s for `kinds`, in the suite's order, with server markers."""
    return [
        pytest.param(kind, id=kind, marks=_MARKS.get(kind, []))
        for kind in ALL_BACKEND_KINDS
        if kind in kinds
    ]


def make_spec(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """A fresh, isolated store description of `kind` for the requesting test."""
    token = uuid.uuid4().hex[:10]
    spec: dict[str, Any] = {
        "kind": kind,
        "app_name": f"app_{token}",
        "session_prefix": f"s{token}",
    }
    if kind in ("sqlite", "db-sqlite"):
        spec["path"] = str(tmp_path / f"{kind}-{token}.db")
    elif kind == "db-postgres":
        # The session-scoped database, so module-scoped fixtures can use this too.
        database = request.getfixturevalue("postgres_database")
        spec["url"] = f"postgresql+asyncpg://{PG_USER}@{PG_HOST}:{PG_PORT}/{database}"
    elif kind == MARIADB_KIND:
        require_server("MariaDB", MARIADB_HOST, MARIADB_PORT)
        spec["url"] = mariadb_url_of(request.getfixturevalue("mariadb_database"))
    elif kind in ("redis-adk", "redis-community"):
        require_server("Redis", "127.0.0.1", 6379)
        spec["url"] = REDIS_URL
        # Deliberately free of the "adk_pairing" marker the raw-store checks look for.
        spec["prefix"] = f"adkp-it:{token}:"
    return spec


@pytest.fixture
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the test, so a SQLite lock held by an
    abandoned cursor lasts until the test frees it (see test_adk_sqlite_cancel_lock.py)."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.fixture
async def open_store() -> AsyncIterator[Callable[[dict[str, Any]], Awaitable[Backend]]]:
    """Opens stores from specs during a test; every one is closed at the end."""
    opened: list[Backend] = []

    async def factory(spec: dict[str, Any]) -> Backend:
        backend = await open_backend(spec)
        opened.append(backend)
        return backend

    yield factory
    for backend in reversed(opened):
        await backend.close()


@pytest.fixture(params=backend_params())
def backend_spec(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """The spec of one isolated store of each kind.

    A sync fixture on purpose: resolving ``postgres_url`` may create the
    session's database with ``asyncio.run``, which cannot run inside the
    test's event loop.
    """
    if request.param == "db-postgres":
        require_server("PostgreSQL", "127.0.0.1", 5432)
    return make_spec(request.param, request, tmp_path)


@pytest.fixture
async def backend(
    backend_spec: dict[str, Any], open_store: Callable[[dict[str, Any]], Awaitable[Backend]]
) -> AsyncIterator[Backend]:
    """One isolated store of each kind; its service is closed after the test.

    After every test the store's raw contents (Redis values, SQL rows) are
    searched for anything adk-pairing adds to a view: nothing synthetic may
    ever be persisted, whatever the scenario did.
    """
    opened = await open_store(backend_spec)
    yield opened
    assert_nothing_synthetic_stored(await opened.raw_storage_text())


@pytest.fixture(autouse=True)
def requests_with_the_plugin_pass_every_rule() -> Iterator[None]:
    """Whatever the test asserts, every request a model received with the view and
    `PairingPlugin` both on passes all four rules of `adk_pairing.rules.checks`."""
    first = len(REQUEST_LOG)
    yield
    broken = [
        (number, request.broken_rules)
        for number, request in enumerate(REQUEST_LOG[first:])
        if request.setup == VIEW_AND_PLUGIN and request.broken_rules
    ]
    assert not broken, f"requests with view + plugin broke a provider's rule: {broken}"


def rule_table() -> dict[str, dict[str, list[int]]]:
    """For each rule and setup: [requests breaking the rule, requests recorded]."""
    table: dict[str, dict[str, list[int]]] = {
        rule: {setup: [0, 0] for setup in SETUPS} for rule in RULES
    }
    for request in REQUEST_LOG:
        if request.setup not in SETUPS:
            continue
        for rule in RULES:
            if rule not in request.rules:
                continue  # not checked on this model's requests (see Script.rules)
            cell = table[rule][request.setup]
            cell[1] += 1
            cell[0] += bool(request.rules.get(rule))
    return table


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The issue-12 table over every request the integration scenarios recorded.

    Set ``ADK_PAIRING_RULE_TABLE=path`` to also get it as JSON (with the tests
    behind each violation).
    """
    if not REQUEST_LOG:
        return
    table = rule_table()
    shown = [s for s in SETUPS if any(table[r][s][1] for r in RULES)]
    terminalreporter.section("requests breaking each provider rule (adk_pairing.rules.checks)")
    terminalreporter.write_line(" | ".join(["rule", *shown]))
    for rule in RULES:
        cells = [f"{table[rule][s][0]} of {table[rule][s][1]}" for s in shown]
        terminalreporter.write_line(" | ".join([rule, *cells]))
    target = os.environ.get("ADK_PAIRING_RULE_TABLE")
    if target:
        detail = {
            "table": table,
            "violations": [
                {"test": r.test, "setup": r.setup, "rules": r.broken_rules}
                for r in REQUEST_LOG
                if r.broken_rules
            ],
        }
        Path(target).write_text(json.dumps(detail, indent=1))
