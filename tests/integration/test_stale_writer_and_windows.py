"""Views keep the inner service's concurrency checks and its event windows intact."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.agents.run_config import RunConfig
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
from google.genai import types

from adk_pairing import CallStatus, PairingSessionService, analyze, is_synthetic
from tests.adk_features import STALE_WRITER_ERROR, requires

from .support.backends import Backend
from .support.scenario import (
    AGENT_NAME,
    USER_ID,
    Harness,
    assert_every_request_valid,
    placeholder_ids,
)
from .support.scripted_model import call, calls, text


def _said(author: str, *parts: types.Part) -> Event:
    return Event(author=author, content=types.Content(role="model", parts=list(parts)))


async def _stale_append_outcome(
    backend: Backend, service: BaseSessionService
) -> tuple[type[BaseException] | None, bool, int]:
    """Two readers of one session (whose last call is unanswered); both append.

    Returns the error type of the second (stale) append, whether the stale
    reader's events were left exactly as they were, and how many events the
    store holds afterwards.
    """
    session_id = backend.new_session_id()
    inner = backend.service
    seed = await inner.create_session(
        app_name=backend.app_name, user_id=USER_ID, session_id=session_id
    )
    await inner.append_event(seed, _said("user", types.Part(text="slow thing")))
    await inner.append_event(seed, _said(AGENT_NAME, call("hang", {"reason": "x"}, id="call_1")))

    async def read() -> Any:
        return await service.get_session(
            app_name=backend.app_name, user_id=USER_ID, session_id=session_id
        )

    fresh, stale = await read(), await read()
    await service.append_event(fresh, _said("user", types.Part(text="first writer")))
    stale_before = [(e.id, is_synthetic(e)) for e in stale.events]
    error: type[BaseException] | None = None
    try:
        await service.append_event(stale, _said("user", types.Part(text="second writer")))
    except Exception as caught:
        error = type(caught)
    untouched = stale_before == [(e.id, is_synthetic(e)) for e in stale.events]
    stored = await inner.get_session(
        app_name=backend.app_name, user_id=USER_ID, session_id=session_id
    )
    assert stored is not None
    return error, untouched, len(stored.events)


async def test_stale_view_append_raises_exactly_what_the_unwrapped_service_raises(
    backend: Backend,
) -> None:
    wrapped = await _stale_append_outcome(backend, PairingSessionService(backend.service))
    unwrapped = await _stale_append_outcome(backend, backend.service)

    assert wrapped == unwrapped
    error, untouched, stored_count = wrapped
    if backend.detects_stale_writers:
        assert error is STALE_WRITER_ERROR
        assert untouched, "a rejected append must leave the stale view as it was"
        assert stored_count == 3
    elif backend.loses_concurrent_writes:
        # The stale writer overwrites the whole stored session: the first
        # writer's event is gone, wrapped or not.
        assert error is None
        assert stored_count == 3
    else:
        assert error is None
        assert stored_count == 4


async def _history_with_open_calls(backend: Backend) -> tuple[Harness, str]:
    """Interrupted call, then an answered call, then a pending long-running call."""
    harness = Harness.build(
        backend,
        wrapped=True,
        steps=[
            calls(call("hang", {"reason": "slow"}, id="call_1")),
            calls(call("lookup", {"city": "Oslo"}, id="call_2")),
            text("Sunny."),
            calls(call("start_job", {"name": "report"}, id="call_3")),
        ],
    )
    session_id = await harness.new_session()
    await harness.interrupted_turn(session_id, "slow thing")
    await harness.turn(session_id, "weather?")
    await harness.turn(session_id, "start the report")
    return harness, session_id


def _assert_view_is_paired(events: list[Event]) -> None:
    """Every call in the view is answered, and each placeholder follows its call."""
    assert analyze(events).is_healthy
    for position, event in enumerate(events):
        if is_synthetic(event):
            assert position > 0
            call_ids = {c.id for c in events[position - 1].get_function_calls()}
            answered = {r.id for r in event.get_function_responses()}
            assert answered <= call_ids


async def test_every_event_window_of_a_repaired_session_is_a_paired_view(
    backend: Backend,
) -> None:
    harness, session_id = await _history_with_open_calls(backend)
    stored = await harness.stored_events(session_id)
    assert len(stored) == 8
    windows = [GetSessionConfig(num_recent_events=n) for n in range(len(stored) + 1)]
    windows += [GetSessionConfig(after_timestamp=e.timestamp) for e in stored]
    placeholders_seen = 0
    for window in windows:
        view = await harness.view(session_id, config=window)
        _assert_view_is_paired(view.events)
        placeholders_seen += sum(1 for e in view.events if is_synthetic(e))
    assert placeholders_seen > 0, "no window contained an open call: the test proves nothing"


@requires(
    "get_session_config" in RunConfig.model_fields, "RunConfig.get_session_config (a Runner window)"
)
@pytest.mark.parametrize("num_recent_events", [3, 7])
async def test_runner_with_a_session_window_sends_valid_requests(
    backend: Backend, num_recent_events: int
) -> None:
    """The window either holds the interrupted call (7) or starts after it (3)."""
    harness, session_id = await _history_with_open_calls(backend)
    harness.script.extend([text("Noted.")])
    window = GetSessionConfig(num_recent_events=num_recent_events)
    await harness.turn(session_id, "status?", run_config=RunConfig(get_session_config=window))

    assert_every_request_valid(harness.script)
    last = harness.script.last
    assert placeholder_ids(last, CallStatus.PENDING.value) == ["call_3"]
    expected_missing = ["call_1"] if num_recent_events == 7 else []
    assert placeholder_ids(last, CallStatus.MISSING.value) == expected_missing
