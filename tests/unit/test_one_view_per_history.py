"""One view per history: appends, a fresh read and a cached read must agree.

A session's view can reach a caller three ways: kept current event by event
by ``append_event`` (`adk_pairing.passes.view`), built by a fresh ``get_session``
that walks the whole history, or built by a ``get_session`` resumed from the
analysis cache (`adk_pairing.core.analysis_cache`). For every history they must be
the same list of events, or the model's request would depend on how the
session happened to be read; and the view kept by appends must stand on the
same repair as a fresh read's (checked whole by ADK's builder or not, the same
call events repaired or sent as stored), or its next append would go a way a
fresh read's would not. The histories here are deliberately hostile:
rewinds that carry content (calls, responses, text), rewinds of rewinds and
of unknown or their own invocations, and malformed events (text and a call in
one part, parts-less content, a response with no call before it, duplicate
call ids).

The attribution is also held to ADK's own rewind rule: no synthetic result
answers a call in an event ADK's request builder drops
(``events/_rewind_events.py``, ``_apply_rewinds``, from 2.6 on; inline in
``flows/llm_flows/contents.py`` before).

``python -m tests.unit.test_one_view_per_history 10000`` runs a seeded fuzz
over that many histories and prints how many disagreed.
"""

from __future__ import annotations

import asyncio
import logging
import random
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions import InMemorySessionService
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adk_pairing import PairedSession, PairingSessionService, is_synthetic
from adk_pairing.core.placeholders import METADATA_KEY

from .events import AGENT, call, model_event, response, response_event, user_text
from .test_service_shell import fingerprint, repair_of

APP, USER = "app", "user"
INVOCATIONS = ["inv-0", "inv-1", "inv-2", "inv-3"]
CALL_IDS = ["c1", "c2", "c3", None]
NAMES = ["lookup", "fetch"]
KINDS = [
    "user",
    "calls",
    "responses",
    "rewind",
    "rewind_with_content",
    "text_and_call_in_one_part",
    "parts_less_content",
    "duplicate_call_ids",
]

_T = TypeVar("_T")
Pick = Callable[[Sequence[_T]], _T]


def draw_history(pick: Pick[Any], length: int) -> list[Event]:
    """A history of `length` events, each choice made by `pick`."""
    events: list[Event] = []
    for _ in range(length):
        events.append(_draw_event(pick, pick(KINDS)))
    return events


def _draw_parts(pick: Pick[Any]) -> list[types.Part]:
    parts: list[types.Part] = []
    for _ in range(pick([1, 1, 2, 3])):
        kind = pick(["call", "response", "text"])
        if kind == "call":
            parts.append(call(pick(CALL_IDS), pick(NAMES)))
        elif kind == "response":
            parts.append(response(pick(CALL_IDS), pick(NAMES)))
        else:
            parts.append(types.Part(text="t"))
    return parts


def _draw_event(pick: Pick[Any], kind: str) -> Event:
    invocation = pick(INVOCATIONS)
    if kind == "user":
        return user_text("hi", invocation_id=invocation)
    if kind == "calls":
        calls = [call(pick(CALL_IDS), pick(NAMES)) for _ in range(pick([1, 2]))]
        held = [p.function_call.id for p in calls if p.function_call.id and pick([False, True])]
        return model_event(calls, invocation_id=invocation, long_running=held or None)
    if kind == "responses":
        parts = [response(pick(CALL_IDS), pick(NAMES)) for _ in range(pick([1, 2]))]
        return response_event(parts, invocation_id=invocation, author=pick([AGENT, "user"]))
    if kind in ("rewind", "rewind_with_content"):
        target = pick([*INVOCATIONS, "inv-unknown", invocation])
        content = (
            types.Content(role=pick(["user", "model"]), parts=_draw_parts(pick))
            if kind == "rewind_with_content"
            else None
        )
        return Event(
            invocation_id=invocation,
            author=pick(["user", AGENT]),
            content=content,
            actions=EventActions(rewind_before_invocation_id=target),
        )
    if kind == "text_and_call_in_one_part":
        part = types.Part(
            text="both", function_call=types.FunctionCall(id=pick(CALL_IDS), name="lookup")
        )
        return model_event([part], invocation_id=invocation)
    if kind == "parts_less_content":
        return Event(
            invocation_id=invocation,
            author=AGENT,
            content=types.Content(role="model", parts=pick([None, []])),
        )
    # duplicate_call_ids
    call_id = pick(CALL_IDS)
    return model_event([call(call_id), call(call_id, "fetch")], invocation_id=invocation)


async def _read(service: PairingSessionService, session_id: str) -> PairedSession:
    view = await service.get_session(app_name=APP, user_id=USER, session_id=session_id)
    assert isinstance(view, PairedSession)
    return view


async def disagreements(events: list[Event], read_after: Sequence[bool]) -> list[str]:
    """Where the three paths disagree over `events` (empty when they agree).

    Every event is appended through one view. A service with the analysis
    cache reads the session after the events `read_after` marks (each such
    read resumes from the one before) and at the end; a service without a
    cache walks the whole history at the same points.
    """
    inner = InMemorySessionService()
    cached = PairingSessionService(inner)
    walking = PairingSessionService(inner, analysis_cache_size=0)
    view = await cached.create_session(app_name=APP, user_id=USER)
    found: list[str] = []
    for position, event in enumerate(events):
        await cached.append_event(view, event)
        if read_after[position] or position == len(events) - 1:
            fresh_view = await _read(walking, view.id)
            resumed_view = await _read(cached, view.id)
            fresh = fingerprint(fresh_view.events)
            if fingerprint(view.events) != fresh:
                found.append(f"appended != fresh after event {position}")
            elif repair_of(view) != repair_of(fresh_view):
                found.append(f"appended repair != fresh after event {position}")
            if fingerprint(resumed_view.events) != fresh:
                found.append(f"resumed != fresh after event {position}")
    stored = await inner.get_session(app_name=APP, user_id=USER, session_id=view.id)
    found.extend(_answers_outside_adk_request(stored.events, view.events))
    return found


def _answers_outside_adk_request(stored: list[Event], view: list[Event]) -> list[str]:
    """Synthetic results for calls in events ADK's request builder drops."""
    try:
        from google.adk.events._rewind_events import _apply_rewinds
    except ImportError:  # before 2.6 the same loop was inline in contents.py
        return []
    kept = {id(event) for event in _apply_rewinds(stored)}
    by_id = {event.id: event for event in stored}
    return [
        f"synthetic result for dropped event {event.custom_metadata[METADATA_KEY]['call_event_id']}"
        for event in view
        if is_synthetic(event)
        and id(by_id[event.custom_metadata[METADATA_KEY]["call_event_id"]]) not in kept
    ]


class History(NamedTuple):
    events: list[Event]
    read_after: list[bool]

    def __repr__(self) -> str:  # a falsifying example, one line per event
        return "\n".join(
            f"{n:2} {e.invocation_id} rewind={e.actions.rewind_before_invocation_id} "
            f"read={read} {_parts_summary(e)}"
            for n, (e, read) in enumerate(zip(self.events, self.read_after, strict=True))
        )


def _parts_summary(event: Event) -> str:
    if event.content is None:
        return "no content"
    if event.content.parts is None:
        return "parts=None"
    return " ".join(
        f"call({p.function_call.id})"
        if p.function_call
        else f"resp({p.function_response.id})"
        if p.function_response
        else "text"
        for p in event.content.parts
    )


@st.composite
def histories(draw: st.DrawFn) -> History:
    length = draw(st.integers(min_value=1, max_value=14))
    events = draw_history(lambda options: draw(st.sampled_from(options)), length)
    read_after = draw(st.lists(st.booleans(), min_size=length, max_size=length))
    return History(events, read_after)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_appended_fresh_and_cached_views_are_one_view_for_every_history(history: History) -> None:
    assert asyncio.run(disagreements(history.events, history.read_after)) == []


def test_rewind_with_content_is_one_view_on_every_path() -> None:
    """ADK drops a rewind event with its content and annuls the rewound invocation."""
    rewind = user_text("rewind with text", invocation_id="inv-3")
    rewind.actions = EventActions(rewind_before_invocation_id="inv-2")
    events = [
        model_event([call("c1")], invocation_id="inv-1"),
        response_event([response("c1")], invocation_id="inv-2"),
        rewind,
    ]
    assert asyncio.run(disagreements(events, [True, False, False])) == []


def fuzz(count: int, seed: int = 13) -> dict[str, int]:
    """Draws `count` histories from a seeded generator; counts each kind of disagreement."""
    chooser = random.Random(seed)
    totals: dict[str, int] = {"histories": count, "disagreeing histories": 0}
    for _ in range(count):
        length = chooser.randint(1, 14)
        events = draw_history(chooser.choice, length)
        read_after = [chooser.random() < 0.5 for _ in range(length)]
        found = asyncio.run(disagreements(events, read_after))
        if found:
            totals["disagreeing histories"] += 1
        for kinds in {entry.split(" after")[0].split(" for ")[0] for entry in found}:
            totals[kinds] = totals.get(kinds, 0) + 1
    return totals


if __name__ == "__main__":
    logging.getLogger("adk_pairing").setLevel(logging.ERROR)
    print(fuzz(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000))
