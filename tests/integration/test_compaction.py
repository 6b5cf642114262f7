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
from google.adk.apps import compaction as compaction_module
from google.adk.apps.app import App
from google.adk.apps.base_events_summarizer import BaseEventsSummarizer
from google.adk.apps.compaction import _run_compaction_for_sliding_window
from google.adk.events.event import Event
from google.adk.flows.llm_flows import contents as adk_contents
from google.adk.sessions.session import Session
from google.genai import types

from adk_pairing import PairingSessionService, is_synthetic
from adk_pairing.rules.checks import anthropic_pairing_violations
from tests.adk_features import ADK_VERSION
from tests.adk_request import build_request_contents_async

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


def _config(summarizer: BaseEventsSummarizer, interval: int) -> object:
    from google.adk.apps.app import EventsCompactionConfig

    return EventsCompactionConfig(
        summarizer=summarizer, compaction_interval=interval, overlap_size=0
    )


def app_with(summarizer: RecordingSummarizer, interval: int) -> App:
    return App(
        name="compaction_app",
        root_agent=LlmAgent(name="assistant", model="gemini-2.0-flash"),
        events_compaction_config=_config(summarizer, interval),
    )


async def run_sliding_window(app: App, session: Session, service: object) -> list[Event]:
    """ADK's sliding-window compaction; returns the compaction events it yields.

    Up to 1.39 it is a coroutine that appends its compaction event itself
    through `service`; later it is an async generator and the Runner appends.
    """
    result = _run_compaction_for_sliding_window(app, session, service)
    if inspect.isasyncgen(result):
        return [event async for event in result]
    await result
    return []


async def compaction_ranges(service: object, session: object, interval: int) -> list[list[Event]]:
    summarizer = RecordingSummarizer()
    await run_sliding_window(app_with(summarizer, interval), session, service)
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


async def test_compaction_covers_the_unwrapped_range_and_past_the_interrupted_call_only(
    backend: Backend,
) -> None:
    """README, "Compaction": the view may cover more, only from the unanswered call on."""
    wrapped, stored, view = await stored_and_view(backend, invocations=3)
    unwrapped_ranges = await compaction_ranges(backend.service, stored, interval=3)
    view_ranges = await compaction_ranges(wrapped, view, interval=3)
    assert len(unwrapped_ranges) == len(view_ranges) == 1
    plain = [e.id for e in unwrapped_ranges[0]]
    through_view = [e.id for e in view_ranges[0] if not is_synthetic(e)]
    assert through_view[: len(plain)] == plain
    call_index = next(i for i, e in enumerate(stored.events) if e.get_function_calls())
    if through_view != plain:
        # ADK stopped the unwrapped window right before the unanswered call
        # (`_truncate_events_before_pending_function_call` 1.39 - 2.0,
        # `_longest_self_contained_prefix` 2.6 - 2.11; 2.12 added a pass past
        # dead calls). Through the view it runs on to the window's end.
        assert hasattr(compaction_module, "_longest_self_contained_prefix") or hasattr(
            compaction_module, "_truncate_events_before_pending_function_call"
        )
        assert plain == [e.id for e in stored.events[:call_index]]
        assert through_view == [e.id for e in stored.events]
        # The call's placeholder is compacted with it, right after it.
        position = [e.id for e in view_ranges[0]].index(stored.events[call_index].id)
        assert is_synthetic(view_ranges[0][position + 1])
    else:
        assert through_view == [e.id for e in stored.events]


class FixedSummarizer(BaseEventsSummarizer):
    """Writes a fixed summary over whatever range ADK hands it, as a model would."""

    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        from google.adk.events.event_actions import EventActions, EventCompaction

        return Event(
            author="user",
            actions=EventActions(
                compaction=EventCompaction(
                    start_timestamp=events[0].timestamp,
                    end_timestamp=events[-1].timestamp,
                    compacted_content=types.Content(
                        role="model", parts=[types.Part(text="Summary of earlier turns.")]
                    ),
                )
            ),
        )


@pytest.mark.parametrize("held_open", [False, True], ids=["missing", "pending"])
async def test_requests_after_compaction_through_the_view_stay_valid_and_pair_a_late_result(
    backend: Backend, held_open: bool
) -> None:
    """The compaction the view leads ADK to write never breaks a request, unwrapped or not."""
    session_id = backend.new_session_id()
    session = await backend.service.create_session(
        app_name=backend.app_name, user_id=USER, session_id=session_id
    )
    for number in range(3):
        invocation = f"inv-{number}"
        await backend.service.append_event(
            session, text_event("user", f"turn {number}", invocation, "user")
        )
        if number == 1:
            event = call_event("toolu_lost", invocation)
            if held_open:
                event.long_running_tool_ids = {"toolu_lost"}
            await backend.service.append_event(session, event)
        else:
            await backend.service.append_event(
                session, text_event("assistant", "ok", invocation, "model")
            )
    wrapped = PairingSessionService(backend.service)
    key = {"app_name": backend.app_name, "user_id": USER, "session_id": session_id}
    view = await wrapped.get_session(**key)
    app = App(
        name="compaction_app",
        root_agent=LlmAgent(name="assistant", model="gemini-2.0-flash"),
        events_compaction_config=_config(FixedSummarizer(), interval=3),
    )
    # As the Runner does after a turn: compaction events go through the decorator.
    for compaction in await run_sliding_window(app, view, wrapped):
        await wrapped.append_event(view, compaction)

    stored_compactions = [
        event.actions.compaction
        for event in (await backend.service.get_session(**key)).events
        if event.actions is not None and event.actions.compaction is not None
    ]
    if any(isinstance(compaction, dict) for compaction in stored_compactions):
        # google-adk 1.20's DatabaseSessionService (schema 0, pickled actions)
        # reads the compaction back as a dict, which ADK's own request builder
        # cannot read (contents.py: `.start_timestamp`): unwrapped, no request
        # can be built at all, so there is nothing to compare.
        pytest.skip(
            f"google-adk {ADK_VERSION}'s {type(backend.service).__name__} returns a stored "
            "compaction as a dict its own request builder cannot use"
        )

    async def assert_both_valid() -> None:
        stored = await backend.service.get_session(**key)
        repaired = await wrapped.get_session(**key)
        for events in (stored.events, repaired.events):
            assert anthropic_pairing_violations(await build_request_contents_async(events)) == []

    await assert_both_valid()
    # The result arrives after all (a client posts it, or a late tool answers).
    late = Event(
        invocation_id="inv-late",
        author="user",
        content=types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id="toolu_lost", name="lookup", response={"ok": True}
                    )
                )
            ],
        ),
    )
    await wrapped.append_event(await wrapped.get_session(**key), late)
    if not hasattr(adk_contents, "_recover_compacted_function_calls"):
        # README, "Compaction": before 2.6 ADK cannot pair a result with a
        # call compaction covered; the trailing result makes the builder
        # raise, from the store too (the compaction event is stored). On
        # 1.39 - 2.0 compaction would have stopped before the call unwrapped;
        # on 1.20 it covers the call unwrapped as well.
        with pytest.raises(ValueError, match="No function call event found"):
            await assert_both_valid()
        return
    await assert_both_valid()
    request = await build_request_contents_async((await wrapped.get_session(**key)).events)
    calls = [p.function_call.id for c in request for p in c.parts or () if p.function_call]
    assert calls == ["toolu_lost"]  # the compacted call is back, right before its result
