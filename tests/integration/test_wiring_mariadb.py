"""The URI form on MariaDB: ``pairing+mysql+aiomysql://``, as README names it.

A real `Runner` turn (the example agent's scripted model) over a session whose
last turn died after a tool call: the model sees the call answered by the
placeholder, the store holds no answer to it and no adk-pairing metadata
afterwards (the model's own reply quotes the placeholder text, so the text
itself is no marker here), and ``close()`` ends the pool's connections on the
server. The decorator wrapping
`DatabaseSessionService` directly is run on MariaDB by test_store_intact.py
and test_ownership.py.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from google.adk.runners import Runner

from adk_pairing import METADATA_KEY, create_session_service, is_synthetic
from tests.conftest import mariadb_admin, mariadb_url_of

from .support.backends import mariadb_rows
from .test_wiring_runner import run_turn
from .wiring_support import (
    EXAMPLE_AGENTS,
    assert_model_saw_placeholder,
    demo_report,
    eventually,
    seed_interrupted_session,
)

pytestmark = pytest.mark.mariadb


@pytest.fixture
def demo_agent(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE_AGENTS))
    from pairing_demo.agent import root_agent

    return root_agent


@pytest.fixture
def own_database(mariadb_database):
    """A database of this test's own, so the connections to it are this test's."""
    name = f"{mariadb_database}_{uuid.uuid4().hex[:6]}"
    mariadb_admin(f"CREATE DATABASE `{name}`")
    try:
        yield name
    finally:
        mariadb_admin(f"DROP DATABASE IF EXISTS `{name}`")


def connections_to(database: str) -> int:
    rows = mariadb_admin(
        f"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '{database}'"
    )
    return int(rows[0][0])


async def test_the_mysql_uri_repairs_a_runner_turn_stores_nothing_and_closes(
    own_database, demo_agent
):
    url = mariadb_url_of(own_database)
    seeded = await seed_interrupted_session(url)

    service = create_session_service("pairing+" + url)
    async with Runner(
        app_name=seeded.app_name, agent=demo_agent, session_service=service
    ) as runner:
        texts = await run_turn(runner, seeded.user_id, seeded.session_id)
    assert_model_saw_placeholder(demo_report(texts), seeded)
    assert await asyncio.to_thread(connections_to, own_database) >= 1  # the pool's

    # The placeholder answered the call in the request only: nothing stored answers it.
    stored = await service.inner.get_session(
        app_name=seeded.app_name, user_id=seeded.user_id, session_id=seeded.session_id
    )
    assert [c.id for e in stored.events for c in e.get_function_calls()] == [seeded.call_id]
    assert not [r for e in stored.events for r in e.get_function_responses()]
    assert not any(is_synthetic(e) for e in stored.events)
    raw = await asyncio.to_thread(mariadb_rows, url, seeded.app_name)
    assert seeded.call_id in raw and METADATA_KEY not in raw

    await service.close()

    async def closed() -> bool:
        return await asyncio.to_thread(connections_to, own_database) == 0

    await eventually(closed, what=f"the connections to {own_database} to close")
