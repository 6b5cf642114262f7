"""When the store fails in the middle of an append, the view still equals the store.

Real faults on real servers: the PostgreSQL backend serving the append is
terminated with ``pg_terminate_backend`` (before the event's INSERT, and at
COMMIT), and the Redis connection of ADK's ``RedisSessionService`` is closed
with ``CLIENT KILL`` inside its write transaction; plus a stale writer. After
each, the view shows no event and no state the store does not hold, equals a
fresh read, and the next append through the same view works and is shown.

The Redis case is the one that leaves a phantom: ADK's base ``append_event``
puts the event into the session object, and its state delta into the state,
before the Redis service writes (``integrations/redis/_redis_session_service.py:349``
in 2.13). The instrumentation here only decides *when* the connection dies; the
stores' own code runs unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types
from sqlalchemy.exc import DBAPIError

from adk_pairing import PairedSession, PairingSessionService, is_synthetic
from tests.adk_features import ADK_VERSION, STALE_WRITER_ERROR

from .conftest import backend_params, make_spec
from .support.backends import Backend, assert_nothing_synthetic_stored

USER = "fault-user"


@pytest.fixture
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """Sync on purpose: resolving the PostgreSQL database may call ``asyncio.run``."""
    return make_spec(request.param, request, tmp_path)


AGENT = "agent"


def _event(invocation: str, *parts: types.Part, author: str = AGENT, **actions: Any) -> Event:
    return Event(
        invocation_id=invocation,
        author=author,
        content=types.Content(role="user" if author == "user" else "model", parts=list(parts)),
        actions=EventActions(**actions),
    )


def _call(call_id: str) -> types.Part:
    return types.Part(function_call=types.FunctionCall(id=call_id, name="lookup", args={}))


def _result(call_id: str) -> types.Part:
    return types.Part(
        function_response=types.FunctionResponse(id=call_id, name="lookup", response={"ok": 1})
    )


def _fingerprint(events: list[Event]) -> list[tuple[Any, ...]]:
    return [(e.id, e.author, e.invocation_id, e.content, e.custom_metadata) for e in events]


async def _seeded_view(service: PairingSessionService, backend: Backend) -> PairedSession:
    view = await service.create_session(
        app_name=backend.app_name, user_id=USER, session_id=backend.new_session_id()
    )
    assert isinstance(view, PairedSession)
    for event in [
        _event("inv-1", types.Part(text="look it up"), author="user"),
        _event("inv-1", _call("c1")),
        _event("inv-1", _result("c1"), state_delta={"kept": "yes"}),
        _event("inv-2", _call("c2")),  # open: the view answers it
    ]:
        await service.append_event(view, event)
    return view


def _failing_event() -> Event:
    """A call event with a state delta (temp and session keys): all of it must vanish."""
    return _event("inv-3", _call("c3"), state_delta={"doomed": 1, "temp:doomed": 1})


async def _assert_view_is_the_store(
    service: PairingSessionService, backend: Backend, view: PairedSession
) -> None:
    stored = await backend.service.get_session(
        app_name=backend.app_name, user_id=USER, session_id=view.id
    )
    assert [e.id for e in view.events if not is_synthetic(e)] == [e.id for e in stored.events]
    fresh = await service.get_session(app_name=backend.app_name, user_id=USER, session_id=view.id)
    assert _fingerprint(view.events) == _fingerprint(fresh.events)
    assert {k: v for k, v in view.state.items() if "doomed" in k} == {}
    assert view.state.get("kept") == "yes"


async def _after_the_fault(
    service: PairingSessionService, backend: Backend, view: PairedSession, failed: Event
) -> None:
    """The view equals the store now, after the next append, and after a rebuild."""
    assert failed.id not in {e.id for e in view.events}
    await _assert_view_is_the_store(service, backend, view)
    await service.append_event(view, _event("inv-2", _result("c2")))  # the next append works
    await _assert_view_is_the_store(service, backend, view)
    assert not any(is_synthetic(e) for e in view.events)
    # A rewind makes the view rebuild from the inner session object: a phantom
    # left there would reappear now.
    rewind = Event(
        invocation_id="inv-4",
        author="user",
        actions=EventActions(rewind_before_invocation_id="inv-2"),
    )
    await service.append_event(view, rewind)
    await _assert_view_is_the_store(service, backend, view)
    assert_nothing_synthetic_stored(await backend.raw_storage_text())


# -- PostgreSQL: pg_terminate_backend -----------------------------------------


@contextlib.contextmanager
def _backend_terminated(service: Any, at: str) -> Iterator[list[int]]:
    """Terminates the PostgreSQL backend serving the next event INSERT or COMMIT.

    Yields a list that receives the terminated backend's pid. The kill comes
    from a separate admin connection, exactly as an operator or a failover would.
    """
    import asyncpg
    from sqlalchemy import event as sqlalchemy_event
    from sqlalchemy.util import await_only

    engine = service.db_engine.sync_engine
    dsn = engine.url.render_as_string(hide_password=False).replace("+asyncpg", "")
    killed: list[int] = []

    async def terminate(pid: int) -> None:
        admin = await asyncpg.connect(dsn)
        try:
            await admin.execute("SELECT pg_terminate_backend($1)", pid)
        finally:
            await admin.close()

    def kill(connection: Any) -> None:
        if killed:
            return
        pid = connection.connection.driver_connection.get_server_pid()  # asyncpg's own
        killed.append(pid)
        await_only(terminate(pid))

    def before_insert(connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if at == "insert" and statement.lstrip().upper().startswith("INSERT INTO EVENTS"):
            kill(connection)

    def before_commit(connection: Any) -> None:
        if at == "commit":
            kill(connection)

    sqlalchemy_event.listen(engine, "before_cursor_execute", before_insert)
    sqlalchemy_event.listen(engine, "commit", before_commit)
    try:
        yield killed
    finally:
        sqlalchemy_event.remove(engine, "before_cursor_execute", before_insert)
        sqlalchemy_event.remove(engine, "commit", before_commit)


@pytest.mark.parametrize("at", ["insert", "commit"])
@pytest.mark.parametrize("store_spec", backend_params({"db-postgres"}), indirect=True)
async def test_backend_terminated_mid_append_leaves_the_view_equal_to_the_store(
    store_spec: dict[str, Any], at: str, open_store: Callable[..., Any]
) -> None:
    backend = await open_store(store_spec)
    service = PairingSessionService(backend.service)
    view = await _seeded_view(service, backend)
    failed = _failing_event()
    with _backend_terminated(backend.service, at) as killed, pytest.raises(DBAPIError):
        await service.append_event(view, failed)
    assert killed, "the fault was never injected"
    await _after_the_fault(service, backend, view, failed)


# -- Redis: CLIENT KILL ---------------------------------------------------------


@contextlib.contextmanager
def _connection_killed_at_command(commands_to_skip: int) -> Iterator[list[str]]:
    """Kills, with CLIENT KILL from an admin connection, the Redis connection
    about to send the command after the first `commands_to_skip`.

    The kill lands on a checked-out connection: redis-py replaces a dead idle
    connection when it is checked out, and turns a connection lost inside a
    WATCH transaction into a retry, so neither would surface.
    """
    import redis.asyncio as redis_asyncio
    from redis.asyncio.connection import AbstractConnection

    real_send_command = AbstractConnection.send_command
    sent: list[None] = []
    killed: list[str] = []

    async def send_command(self: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(None)
        if len(sent) == commands_to_skip + 1:
            host, port = self._writer.get_extra_info("sockname")[:2]
            admin = redis_asyncio.Redis(host="127.0.0.1", port=6379)
            try:
                await admin.execute_command("CLIENT", "KILL", "ADDR", f"{host}:{port}")
            finally:
                await admin.aclose()
            killed.append(f"{host}:{port}")
        return await real_send_command(self, *args, **kwargs)

    AbstractConnection.send_command = send_command  # type: ignore[method-assign]
    try:
        yield killed
    finally:
        AbstractConnection.send_command = real_send_command  # type: ignore[method-assign]


@pytest.mark.parametrize("store_spec", backend_params({"redis-adk"}), indirect=True)
async def test_redis_connection_killed_mid_append_leaves_no_phantom_in_the_view(
    store_spec: dict[str, Any], open_store: Callable[..., Any]
) -> None:
    pytest.importorskip(
        "google.adk.integrations.redis",
        reason=f"google-adk {ADK_VERSION} has no google.adk.integrations.redis (added in 2.9)",
    )
    backend = await open_store(store_spec)
    service = PairingSessionService(backend.service)
    view = await _seeded_view(service, backend)
    # Its app-state key makes the service read that state after the in-memory
    # append and before its write transaction: the kill lands there.
    failed = _event("inv-3", _call("c3"), state_delta={"app:doomed": 1, "temp:doomed": 1})
    # Command 1 is the service's EXISTS check, command 2 the app state's GET.
    with (
        _connection_killed_at_command(commands_to_skip=1) as killed,
        pytest.raises(Exception, match=r"(?i)connection|closed|reset"),
    ):
        await service.append_event(view, failed)
    assert killed, "the fault was never injected"
    await _after_the_fault(service, backend, view, failed)


# -- a stale writer -------------------------------------------------------------


@pytest.mark.parametrize("store_spec", backend_params({"db-postgres", "db-sqlite"}), indirect=True)
async def test_stale_writer_error_leaves_the_view_as_it_was_and_a_reread_appends(
    store_spec: dict[str, Any], open_store: Callable[..., Any]
) -> None:
    backend = await open_store(store_spec)
    service = PairingSessionService(backend.service)
    view = await _seeded_view(service, backend)
    other = await service.get_session(app_name=backend.app_name, user_id=USER, session_id=view.id)
    await service.append_event(other, _event("inv-9", types.Part(text="other writer")))
    before = _fingerprint(view.events)
    failed = _failing_event()
    with pytest.raises(STALE_WRITER_ERROR):
        await service.append_event(view, failed)
    # As unwrapped: the stale view stays exactly as it was (no phantom, no
    # doomed state) and keeps refusing until it is read again.
    assert _fingerprint(view.events) == before
    assert {k: v for k, v in view.state.items() if "doomed" in k} == {}
    with pytest.raises(STALE_WRITER_ERROR):
        await service.append_event(view, _event("inv-3", types.Part(text="still stale")))
    reread = await service.get_session(app_name=backend.app_name, user_id=USER, session_id=view.id)
    assert isinstance(reread, PairedSession)
    await _after_the_fault(service, backend, reread, failed)
