"""Compaction decides the same on the view as on the stored session.

ADK's sliding-window compaction counts invocation ids among the session's
events (`apps/compaction.py`). A synthetic event belongs to no invocation, so
an interrupted session must not reach the compaction interval one invocation
early through the view. ADK's own compaction code runs here on every store;
the summarizer is a recorder (it only reports what it was asked to summarize)
because writing a summary would need a real model.
"""

from __future__ import annotations

import inspect

import pytest
from google.adk.agents.llm_agent import LlmAgent
from google.adk.apps.app import App
from google.adk.apps.base_events_summarizer import BaseEventsSummarizer
from google.adk.apps.compaction import _run_compaction_for_sliding_window
from google.adk.events.event import Event
from google.adk.sessions.session import Session
from google.genai import types

from adk_pairing import PairingSessionService, is_synthetic
from tests.adk_features import COMPACTION_COVERS_MORE_THROUGH_THE_VIEW, known_gap

from .support.backends import Backend

USER = "user-1"

pytestmark = pytest.mark.filterwarnings("ignore:.*EventsCompactionConfig.*:UserWarning")


class RecordingSummarizer(BaseEventsSummarizer):
    """Records each range ADK asks to summarize; writes no summary."""

    def __init__(self) -> None:
        self.ranges: list[list[Event]] = []

    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        self.ranges.append(list(events))
        return None


def text_event(author: str, text: str, invocation_id: str, role: str) -> Event:
    return Event(
        invocation_id=invocation_id,
        author=author,
        content=types.Content(role=role, parts=[types.Part(text=text)]),
    )


def call_event(call_id: str, invocation_id: str) -> Event:
    part = types.Part(function_call=types.FunctionCall(id=call_id, name="lookup", args={}))
    return Event(
        invocation_id=invocation_id,
        author="assistant",
        content=types.Content(role="model", parts=[part]),
    )


def app_with(summarizer: RecordingSummarizer, interval: int) -> App:
    from google.adk.apps.app import EventsCompactionConfig

    return App(
        name="compaction_app",
        root_agent=LlmAgent(name="assistant", model="gemini-2.0-flash"),
        events_compaction_config=EventsCompactionConfig(
            summarizer=summarizer, compaction_interval=interval, overlap_size=0
        ),
    )


async def compaction_ranges(service: object, session: object, interval: int) -> list[list[Event]]:
    summarizer = RecordingSummarizer()
    run = _run_compaction_for_sliding_window(app_with(summarizer, interval), session, service)
    if inspect.isasyncgen(run):  # google-adk >= 2.x yields the compaction events
        async for _ in run:
            pass
    else:  # before, a coroutine appends them itself
        await run
    return summarizer.ranges


async def seed(backend: Backend, invocations: int) -> str:
    """`invocations` turns; the second one dies after its call event."""
    session_id = backend.new_session_id()
    session = await backend.service.create_session(
        app_name=backend.app_name, user_id=USER, session_id=session_id
    )
    for number in range(invocations):
        invocation = f"inv-{number}"
        await backend.service.append_event(
            session, text_event("user", f"turn {number}", invocation, "user")
        )
        if number == 1:
            await backend.service.append_event(session, call_event("toolu_lost", invocation))
        else:
            await backend.service.append_event(
                session, text_event("assistant", "ok", invocation, "model")
            )
    return session_id


async def stored_and_view(
    backend: Backend, invocations: int
) -> tuple[PairingSessionService, Session, Session]:
    """A seeded session read unwrapped and through the decorator."""
    session_id = await seed(backend, invocations=invocations)
    wrapped = PairingSessionService(backend.service)
    key = {"app_name": backend.app_name, "user_id": USER, "session_id": session_id}
    return wrapped, await backend.service.get_session(**key), await wrapped.get_session(**key)


async def test_interrupted_session_does_not_reach_the_compaction_interval_early(
    backend: Backend,
) -> None:
    wrapped, stored, view = await stored_and_view(backend, invocations=2)
    assert any(is_synthetic(e) for e in view.events)
    assert await compaction_ranges(backend.service, stored, interval=3) == []
    assert await compaction_ranges(wrapped, view, interval=3) == []
    # Control: at the interval, both trigger (the recorder really is consulted).
    assert await compaction_ranges(backend.service, stored, interval=2) != []
    assert await compaction_ranges(wrapped, view, interval=2) != []


@known_gap(
    COMPACTION_COVERS_MORE_THROUGH_THE_VIEW,
    "sliding-window compaction covers more stored events through the view than "
    "unwrapped (1.39-2.11; issue 11 items 2-3, the view)",
)
async def test_compaction_covers_the_same_stored_events_through_the_view(
    backend: Backend,
) -> None:
    wrapped, stored, view = await stored_and_view(backend, invocations=3)
    unwrapped_ranges = await compaction_ranges(backend.service, stored, interval=3)
    view_ranges = await compaction_ranges(wrapped, view, interval=3)
    assert len(unwrapped_ranges) == len(view_ranges) == 1
    assert [e.id for e in view_ranges[0] if not is_synthetic(e)] == [
        e.id for e in unwrapped_ranges[0]
    ]
