"""The plain Runner setup, on real stores: it repairs, and closing releases the engine.

`PairingSessionService(DatabaseSessionService(db_url=...))` is what most users
write. These tests drive a real `Runner` (with the example agent's scripted
model) over it and then prove that leaving ``async with`` / calling
``close()`` disposes the inner engine: PostgreSQL no longer lists the
connections (tagged with a unique ``application_name`` passed as an engine
option, which also proves engine options reach the real connection), and
aiosqlite's worker threads are gone.
"""

from __future__ import annotations

import threading
import uuid

import pytest
from google.adk.runners import Runner
from google.adk.sessions import DatabaseSessionService
from google.genai import types

from adk_pairing import PairingSessionService, create_session_service

from .wiring_support import (
    EXAMPLE_AGENTS,
    assert_model_saw_placeholder,
    demo_report,
    eventually,
    pg_connection_count,
    seed_interrupted_session,
)

pytestmark = pytest.mark.postgres


@pytest.fixture
def demo_agent(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE_AGENTS))
    from pairing_demo.agent import root_agent

    return root_agent


def tagged_engine_options(tag: str) -> dict:
    return {"connect_args": {"server_settings": {"application_name": tag}}}


async def run_turn(runner: Runner, user_id: str, session_id: str) -> list[str]:
    message = types.Content(role="user", parts=[types.Part(text="Where is my booking?")])
    texts = []
    async for event in runner.run_async(
        user_id=user_id, session_id=session_id, new_message=message
    ):
        for part in (event.content.parts if event.content else None) or ():
            texts.append(part.text)
    return texts


async def test_async_with_wrapped_database_service_runs_repaired_turn_then_closes_pool(
    postgres_url, demo_agent
):
    seeded = await seed_interrupted_session(postgres_url)
    tag = f"adkp-wiring-{uuid.uuid4().hex[:10]}"

    async with PairingSessionService(
        DatabaseSessionService(db_url=postgres_url, **tagged_engine_options(tag))
    ) as session_service:
        async with Runner(
            app_name=seeded.app_name, agent=demo_agent, session_service=session_service
        ) as runner:
            texts = await run_turn(runner, seeded.user_id, seeded.session_id)
        assert_model_saw_placeholder(demo_report(texts), seeded)
        # The pool keeps its connection between turns...
        assert await pg_connection_count(postgres_url, tag) >= 1

    # ...and leaving the block disposed the engine, closing it on the server too.
    async def closed() -> bool:
        return await pg_connection_count(postgres_url, tag) == 0

    await eventually(closed, what=f"PostgreSQL connections tagged {tag} to close")


async def test_uri_factory_passes_engine_options_and_close_disposes_them(postgres_url):
    tag = f"adkp-wiring-{uuid.uuid4().hex[:10]}"
    service = create_session_service(
        "pairing+" + postgres_url, pool_size=2, **tagged_engine_options(tag)
    )
    session = await service.create_session(app_name="wiring_factory", user_id="u")
    fetched = await service.get_session(
        app_name="wiring_factory", user_id="u", session_id=session.id
    )
    assert fetched is not None
    assert service.inner.db_engine.pool.size() == 2
    assert await pg_connection_count(postgres_url, tag) >= 1

    await service.close()

    async def closed() -> bool:
        return await pg_connection_count(postgres_url, tag) == 0

    await eventually(closed, what=f"PostgreSQL connections tagged {tag} to close")


def _aiosqlite_threads() -> set[threading.Thread]:
    # aiosqlite runs each connection on its own thread, named after its worker.
    return {
        thread for thread in threading.enumerate() if "_connection_worker_thread" in thread.name
    }


@pytest.mark.parametrize("how", ["async with", "close()"])
async def test_closing_wrapped_sqlite_service_ends_aiosqlite_connection(tmp_path, demo_agent, how):
    db_url = f"sqlite+aiosqlite:///{tmp_path}/sessions.db"
    seeded = await seed_interrupted_session(db_url)
    # Threads of closed connections end shortly after close(); only new ones count.
    before = _aiosqlite_threads()

    service = PairingSessionService(DatabaseSessionService(db_url=db_url))
    async with Runner(
        app_name=seeded.app_name, agent=demo_agent, session_service=service
    ) as runner:
        texts = await run_turn(runner, seeded.user_id, seeded.session_id)
    assert_model_saw_placeholder(demo_report(texts), seeded)
    ours = _aiosqlite_threads() - before
    assert ours, "the pool should hold an open aiosqlite connection between turns"

    if how == "async with":
        async with service:
            pass
    else:
        await service.close()

    async def closed() -> bool:
        return not any(thread.is_alive() for thread in ours)

    await eventually(closed, what="the aiosqlite connection thread to end")
