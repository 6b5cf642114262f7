"""Small builders for ADK events, so unit tests read like the histories they describe."""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

_clock = itertools.count(1)
AGENT = "assistant"


def _stamp() -> float:
    return 1_700_000_000.0 + next(_clock)


def user_text(text: str = "hello", invocation_id: str = "inv-1") -> Event:
    return Event(
        invocation_id=invocation_id,
        author="user",
        timestamp=_stamp(),
        content=types.Content(role="user", parts=[types.Part(text=text)]),
    )


def call(call_id: str | None, name: str = "lookup") -> types.Part:
    return types.Part(function_call=types.FunctionCall(id=call_id, name=name, args={"q": "x"}))


def response(call_id: str | None, name: str = "lookup") -> types.Part:
    return types.Part(
        function_response=types.FunctionResponse(id=call_id, name=name, response={"ok": True})
    )


def model_event(
    parts: Iterable[types.Part],
    *,
    invocation_id: str = "inv-1",
    long_running: Iterable[str] | None = None,
    author: str = AGENT,
    branch: str | None = None,
) -> Event:
    return Event(
        invocation_id=invocation_id,
        author=author,
        branch=branch,
        timestamp=_stamp(),
        long_running_tool_ids=set(long_running) if long_running is not None else None,
        content=types.Content(role="model", parts=list(parts)),
    )


def response_event(
    parts: Iterable[types.Part],
    *,
    invocation_id: str = "inv-1",
    author: str = AGENT,
    branch: str | None = None,
) -> Event:
    return Event(
        invocation_id=invocation_id,
        author=author,
        branch=branch,
        timestamp=_stamp(),
        content=types.Content(role="user", parts=list(parts)),
    )


def rewind_event(before_invocation_id: str, invocation_id: str = "inv-rewind") -> Event:
    return Event(
        invocation_id=invocation_id,
        author="user",
        timestamp=_stamp(),
        actions=EventActions(rewind_before_invocation_id=before_invocation_id),
    )
