"""Appends cancelled at many points, on both SQLite-backed ADK stores: nothing locked, nothing half.

`PairingSessionService` shields its appends to a SQLite-backed store from the
caller's cancellation (see `adk_pairing.shells.service`): the caller gets
``CancelledError`` at once, and the write finishes in the background. Here an
append through the decorator is cancelled at every aiosqlite operation it
queues (while the operation runs in aiosqlite's thread, and one event-loop step
later) and at evenly spread sleep offsets across the append's duration: at
least 60 points per store. After each, once the service is closed:

* a write from a fresh service never meets "database is locked";
* the event is stored whole (content and state delta) or not at all;
* the session object the caller appended through holds the event exactly when
  the store does, and its view equals what is stored.

The same sweep over the unwrapped ``DatabaseSessionService`` must find at
least one lock, or it could not find one through the decorator either. The
collector is paused through each sweep, so a lock lasts until it is found.
The instrumentation only decides *when* to cancel; aiosqlite runs unchanged.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite.core
import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types

from adk_pairing import PairedSession, PairingSessionService, is_synthetic
from adk_pairing.adk import close_session_service
from tests.adk_features import STALE_WRITER_ERROR

APP, USER, SESSION = "app", "user", "session"
#: A short busy timeout, so a locked write fails in a fifth of a second, not five.
BUSY_TIMEOUT_S = 0.2
#: Cancel points per store, at least.
MIN_POINTS = 60
STORE_KINDS = ("db-sqlite", "sqlite")


def _open(kind: str, path: Path) -> BaseSessionService:
    if kind == "db-sqlite":
        return DatabaseSessionService(
            db_url=f"sqlite+aiosqlite:///{path}", connect_args={"timeout": BUSY_TIMEOUT_S}
        )
    return SqliteSessionService(db_path=str(path))


def _event(index: int) -> Event:
    return Event(
        invocation_id=f"inv-{index}",
        author="agent",
        content=types.Content(role="model", parts=[types.Part(text=f"answer {index}")]),
        actions=EventActions(state_delta={f"key-{index}": index}),
    )


def _is_stored_whole(stored: Event, sent: Event) -> bool:
    return (
        stored.author == sent.author
        and stored.invocation_id == sent.invocation_id
        and stored.content == sent.content
        and stored.actions.state_delta == sent.actions.state_delta
    )


def _is_locked(error: BaseException) -> bool:
    return "database is locked" in str(error)


class _Operations:
    """Counts the aiosqlite operations an armed append queues; signals the chosen one."""

    def __init__(self) -> None:
        self.armed = False
        self.queued = 0
        self.target = -1
        self.reached = asyncio.Event()

    def arm(self, target: int) -> None:
        self.armed, self.queued, self.target = True, 0, target
        self.reached.clear()

    def disarm(self) -> int:
        self.armed = False
        return self.queued

    def note_queued(self) -> None:
        if self.armed:
            if self.queued == self.target:
                self.reached.set()
            self.queued += 1


@pytest.fixture
def operations(monkeypatch: pytest.MonkeyPatch) -> _Operations:
    counter = _Operations()
    real_execute = aiosqlite.core.Connection._execute

    async def execute(self: aiosqlite.core.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
        counter.note_queued()
        return await real_execute(self, fn, *args, **kwargs)

    monkeypatch.setattr(aiosqlite.core.Connection, "_execute", execute)
    return counter


@dataclass(frozen=True)
class Point:
    """Cancel `steps` event-loop steps after the append queues operation `operation`,
    or, when `operation` is None, `offset_s` seconds after it started."""

    operation: int | None = None
    steps: int = 0
    offset_s: float = 0.0


@dataclass
class Outcome:
    point: Point
    cancelled: bool
    locked: bool
    stored: bool
    whole: bool
    held: bool
    view_is_store: bool


class Sweep:
    """One store, one service appending through it (wrapped or not), many cancels."""

    def __init__(self, kind: str, path: Path, wrapped: bool, operations: _Operations) -> None:
        self.kind, self.path, self.operations = kind, path, operations
        self.store = _open(kind, path)
        self.service = PairingSessionService(self.store) if wrapped else self.store
        self.appended = 10

    def next_event(self) -> Event:
        self.appended += 1
        return _event(self.appended)

    async def read(self, service: BaseSessionService) -> Any:
        return await service.get_session(app_name=APP, user_id=USER, session_id=SESSION)

    async def seed(self) -> None:
        session = await self.service.create_session(app_name=APP, user_id=USER, session_id=SESSION)
        for index in range(3):
            await self.service.append_event(session, _event(index))

    async def dry_run(self) -> tuple[int, float]:
        """How many aiosqlite operations, and how long, one uncancelled append takes."""
        session = await self.read(self.service)
        self.operations.arm(-1)
        started = time.perf_counter()
        await self.service.append_event(session, self.next_event())
        took = time.perf_counter() - started
        return self.operations.disarm(), took

    async def cancel_at(self, point: Point) -> Outcome:
        session = await self.read(self.service)
        event = self.next_event()
        self.operations.arm(point.operation if point.operation is not None else -1)
        append = asyncio.create_task(self.service.append_event(session, event))
        if point.operation is None:
            await asyncio.sleep(point.offset_s)
        else:
            reached = asyncio.create_task(self.operations.reached.wait())
            await asyncio.wait([append, reached], return_when=asyncio.FIRST_COMPLETED)
            reached.cancel()
            for _ in range(point.steps):
                await asyncio.sleep(0)
        append.cancel()
        try:
            await append
            cancelled = False
        except asyncio.CancelledError:
            cancelled = True
        self.operations.disarm()
        # Through the decorator, a read of the session waits for a shielded
        # append still running; unwrapped there is nothing left to wait for.
        await self.read(self.service)
        return await self.inspect(point, cancelled, session, event)

    async def inspect(self, point: Point, cancelled: bool, session: Any, event: Event) -> Outcome:
        fresh = _open(self.kind, self.path)
        try:
            stored = await self.read(fresh)
            stored_event = next((e for e in stored.events if e.id == event.id), None)
            key = f"key-{self.appended}"
            whole = (stored_event is None and key not in stored.state) or (
                stored_event is not None
                and _is_stored_whole(stored_event, event)
                and stored.state.get(key) == self.appended
            )
            held_ids = [e.id for e in session.events if not is_synthetic(e)]
            view_is_store = held_ids == [e.id for e in stored.events]
            locked = await self.write_from(fresh)
        finally:
            await close_session_service(fresh)
        return Outcome(
            point=point,
            cancelled=cancelled,
            locked=locked,
            stored=stored_event is not None,
            whole=whole,
            held=event.id in held_ids,
            view_is_store=view_is_store,
        )

    async def write_from(self, fresh: BaseSessionService) -> bool:
        """Whether a write from `fresh` met "database is locked" (then frees the lock)."""
        try:
            await fresh.append_event(await self.read(fresh), self.next_event())
            return False
        except Exception as error:
            if not _is_locked(error):
                raise
            gc.collect()  # frees the abandoned cursor, so the next point starts unlocked
            return True

    async def run(self, *, until_locked: bool = False) -> list[Outcome]:
        """The outcome at every point (or up to the first that left the store locked)."""
        try:
            await self.seed()
            runs = [await self.dry_run() for _ in range(3)]
            operations = max(queued for queued, _ in runs)
            took = statistics.median(took for _, took in runs)
            points = [
                Point(operation=index, steps=steps)
                for index in range(operations)
                for steps in (0, 1)
            ]
            offsets = max(20, MIN_POINTS - len(points))
            points += [
                Point(offset_s=took * 1.25 * index / (offsets - 1)) for index in range(offsets)
            ]
            assert len(points) >= MIN_POINTS
            outcomes: list[Outcome] = []
            for point in points:
                outcomes.append(await self.cancel_at(point))
                if until_locked and outcomes[-1].locked:
                    break
            return outcomes
        finally:
            await close_session_service(self.service)


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_an_append_through_the_decorator_cancelled_anywhere_locks_nothing_and_is_never_half(
    kind: str, tmp_path: Path, operations: _Operations, collector_paused: None
) -> None:
    outcomes = await Sweep(kind, tmp_path / "sessions.db", True, operations).run()
    assert [o.point for o in outcomes if o.locked] == []
    assert [o.point for o in outcomes if not o.whole] == []
    assert [o.point for o in outcomes if o.held != o.stored] == []
    assert [o.point for o in outcomes if not o.view_is_store] == []
    # Cancelled while one of its operations ran, the caller saw CancelledError at
    # once, and the write it had started was stored all the same.
    mid_operation = [o for o in outcomes if o.point.operation is not None and not o.point.steps]
    assert mid_operation and all(o.cancelled and o.stored for o in mid_operation)


async def test_the_same_sweep_finds_the_lock_on_the_unwrapped_database_store(
    tmp_path: Path, operations: _Operations, collector_paused: None
) -> None:
    """The sweep can fail: unwrapped, some cancelled append leaves the lock behind."""
    sweep = Sweep("db-sqlite", tmp_path / "sessions.db", False, operations)
    outcomes = await sweep.run(until_locked=True)
    assert any(o.locked for o in outcomes)
    # Unwrapped, every event is still stored whole or not at all.
    assert all(o.whole for o in outcomes)


# -- what the background write does after its caller is gone ----------------------


async def _seeded_view(kind: str, path: Path) -> tuple[PairingSessionService, PairedSession]:
    service = PairingSessionService(_open(kind, path))
    view = await service.create_session(app_name=APP, user_id=USER, session_id=SESSION)
    for index in range(3):
        await service.append_event(view, _event(index))
    assert isinstance(view, PairedSession)
    return service, view


async def _cancel_once_queued(
    service: PairingSessionService,
    view: PairedSession,
    event: Event,
    operations: _Operations,
) -> None:
    operations.arm(0)
    append = asyncio.create_task(service.append_event(view, event))
    await operations.reached.wait()
    append.cancel()
    with pytest.raises(asyncio.CancelledError):
        await append
    operations.disarm()


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_the_next_read_and_append_of_the_session_wait_for_the_cancelled_append(
    kind: str, tmp_path: Path, operations: _Operations
) -> None:
    """The next turn sees what was stored, and its append is not refused as stale."""
    service, view = await _seeded_view(kind, tmp_path / "sessions.db")
    try:
        event = _event(10)
        await _cancel_once_queued(service, view, event, operations)
        reread = await service.get_session(app_name=APP, user_id=USER, session_id=SESSION)
        assert reread is not None and reread.events[-1].id == event.id
        assert view.events[-1].id == event.id  # caught up in the background
        await service.append_event(view, _event(11))  # and current: not refused as stale
    finally:
        await service.close()


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_close_waits_for_an_append_whose_caller_was_cancelled(
    kind: str, tmp_path: Path, operations: _Operations
) -> None:
    service, view = await _seeded_view(kind, tmp_path / "sessions.db")
    event = _event(10)
    await _cancel_once_queued(service, view, event, operations)
    assert service._shielded_calls.in_flight
    await service.close()
    assert not service._shielded_calls.in_flight
    store = _open(kind, tmp_path / "sessions.db")
    try:
        stored = await store.get_session(app_name=APP, user_id=USER, session_id=SESSION)
        assert [e.id for e in stored.events][-1] == event.id
        assert stored.state["key-10"] == 10
        assert [e.id for e in view.events] == [e.id for e in stored.events]
    finally:
        await close_session_service(store)


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_a_background_append_that_fails_is_logged_and_leaves_no_phantom(
    kind: str,
    tmp_path: Path,
    operations: _Operations,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Refused as stale after its caller is gone: logged, never 'never retrieved'."""
    unretrieved: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: unretrieved.append(context))
    service, view = await _seeded_view(kind, tmp_path / "sessions.db")
    try:
        other = await service.get_session(app_name=APP, user_id=USER, session_id=SESSION)
        await service.append_event(other, _event(9))  # `view` is out of date now
        before = [e.id for e in view.events]
        with caplog.at_level(logging.ERROR, logger="adk_pairing"):
            await _cancel_once_queued(service, view, _event(10), operations)
            await service.close()
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(None)
    assert [e.id for e in view.events] == before
    assert "key-10" not in view.state
    failures = [r for r in caplog.records if "whose caller was cancelled failed" in r.message]
    assert len(failures) == 1 and isinstance(failures[0].exc_info[1], STALE_WRITER_ERROR)
    assert unretrieved == []


async def test_only_the_sqlite_backed_stores_are_shielded(tmp_path: Path) -> None:
    """One rule for reads and appends: ADK's two SQLite stores, subclasses included."""
    from google.adk.sessions import InMemorySessionService

    class OwnSqliteStore(SqliteSessionService):
        pass

    shielded = {
        "db-sqlite": _open("db-sqlite", tmp_path / "a.db"),
        "sqlite": _open("sqlite", tmp_path / "b.db"),
        "own sqlite subclass": OwnSqliteStore(db_path=str(tmp_path / "c.db")),
    }
    not_shielded = {
        "postgres": DatabaseSessionService(db_url="postgresql+asyncpg://nobody@127.0.0.1:1/none"),
        "memory": InMemorySessionService(),
    }
    try:
        assert {
            k: PairingSessionService(s)._shield_calls for k, s in shielded.items()
        } == dict.fromkeys(shielded, True)
        assert {
            k: PairingSessionService(s)._shield_calls for k, s in not_shielded.items()
        } == dict.fromkeys(not_shielded, False)
    finally:
        for store in [*shielded.values(), *not_shielded.values()]:
            await close_session_service(store)
