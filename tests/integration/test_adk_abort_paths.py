"""Which ways of ending a turn make ADK 2.13 seal the call it left open.

ADK seals an aborted invocation (``events/_abort_events.py``, called from
``runners.Runner._synthesize_abort_events_if_needed``) only when the
invocation is *aborted*: ``InvocationContext.is_aborted``, i.e. the
``abort_signal`` passed to ``run_async`` was set (ADK's API server sets it when
an HTTP client disconnects). Cancelling the task, or closing the event stream
early, is treated as an early close and seals nothing; SIGKILL runs nothing at
all (test_sigkill.py). The other integration tests rely on the unsealed
paths, so this file pins them: if a future ADK seals them too, it fails here
first. A sealed call is answered in the store, so the view adds nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from adk_pairing import CallStatus, is_synthetic
from tests.adk_features import HAS_ABORT_SIGNAL, requires

from .conftest import make_spec
from .support.backends import Backend
from .support.scenario import (
    USER_ID,
    Harness,
    assert_every_request_valid,
    eventually,
    placeholder_ids,
)
from .support.scripted_model import call, calls, text, user_text

ABORTED = "INVOCATION_ABORTED"


@pytest.fixture
async def memory_backend(
    request: pytest.FixtureRequest,
    tmp_path: Any,
    open_store: Callable[[dict[str, Any]], Awaitable[Backend]],
) -> Backend:
    """Sealing is runner logic, independent of the store: one in-memory store."""
    return await open_store(make_spec("memory", request, tmp_path))


def _hang_then_text() -> list[Any]:
    return [calls(call("hang", {"reason": "slow"}, id="call_1")), text("Back.")]


async def _wait_for_stored_call(harness: Harness, session_id: str) -> None:
    async def stored() -> bool:
        events = await harness.stored_events(session_id)
        return any(e.get_function_calls() for e in events)

    await eventually(stored, what="the call event to be stored")


async def _end_turn(harness: Harness, session_id: str, how: str) -> None:
    abort_signal = asyncio.Event()
    # run_async takes abort_signal from google-adk 2.11; before, a run is only
    # ever ended by cancelling or closing its stream.
    extra = {"abort_signal": abort_signal} if HAS_ABORT_SIGNAL else {}
    stream = harness.runner.run_async(
        user_id=USER_ID,
        session_id=session_id,
        new_message=user_text("slow thing"),
        **extra,
    )
    if how == "break":
        async with contextlib.aclosing(stream) as events:
            async for event in events:
                if event.get_function_calls():
                    break
        return

    async def consume() -> None:
        async for _ in stream:
            pass

    task = asyncio.create_task(consume())
    await _wait_for_stored_call(harness, session_id)
    if how in ("abort_signal", "abort_signal+cancel"):
        abort_signal.set()
    if how in ("cancel", "abort_signal+cancel"):
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=10)


@pytest.mark.parametrize("how", ["cancel", "break"])
async def test_cancelling_or_closing_the_stream_early_leaves_the_call_unanswered_in_store(
    memory_backend: Backend, how: str
) -> None:
    harness = Harness.build(memory_backend, wrapped=True, steps=_hang_then_text())
    session_id = await harness.new_session()
    await _end_turn(harness, session_id, how)

    stored = await harness.stored_events(session_id)
    assert not any(e.error_code == ABORTED for e in stored)
    assert [c.call_id for c in await harness.unanswered_in_store(session_id)] == ["call_1"]
    await harness.turn(session_id, "hello?")
    assert_every_request_valid(harness.script)
    assert placeholder_ids(harness.script.last, CallStatus.MISSING.value) == ["call_1"]


@requires(HAS_ABORT_SIGNAL, "Runner.run_async(abort_signal=...) (added in 2.11)")
@pytest.mark.parametrize("how", ["abort_signal", "abort_signal+cancel"])
async def test_a_set_abort_signal_makes_adk_seal_the_call_so_the_view_adds_nothing(
    memory_backend: Backend, how: str
) -> None:
    harness = Harness.build(memory_backend, wrapped=True, steps=_hang_then_text())
    session_id = await harness.new_session()
    await _end_turn(harness, session_id, how)

    stored = await harness.stored_events(session_id)
    seals = [e for e in stored if e.error_code == ABORTED]
    assert len(seals) == 1
    assert [(r.id, r.response) for r in seals[0].get_function_responses()] == [
        ("call_1", {"error": "Invocation was aborted by client."})
    ]
    assert await harness.unanswered_in_store(session_id) == []
    assert not any(is_synthetic(e) for e in (await harness.view(session_id)).events)
