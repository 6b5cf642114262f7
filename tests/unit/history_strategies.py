"""Hypothesis strategies for session histories, well-formed and malformed.

A history is a run of steps, each one of what ADK or a damaged store can leave
behind: user text, a model event with parallel calls (ids from a pool of three
so they repeat across turns and inside one event, some without an id, some
long-running, some sharing their `Part` with text), results for some of them
right away or any number of turns later (split over events, authored by the
agent or by the user), a result whose id no call has made yet, and model text.
Each user text starts a new invocation, as a `Runner` turn does.
"""

from __future__ import annotations

import itertools

from google.adk.events.event import Event
from google.genai import types
from hypothesis import strategies as st

AGENT = "assistant"
ID_POOL = ("call_1", "call_2", "call_3")
NAMES = ("lookup", "fetch")

_clock = itertools.count(1)


def _stamp() -> float:
    return 1_700_000_000.0 + next(_clock)


def _call_part(call_id: str | None, name: str, with_text: bool) -> types.Part:
    call = types.FunctionCall(id=call_id, name=name, args={"q": "x"})
    if with_text:
        # Malformed: one Part holding both. ADK's Anthropic converter reads the
        # text first and drops the call (models/anthropic_llm.py, part_to_message_block).
        return types.Part(text="let me look", function_call=call)
    return types.Part(function_call=call)


def _response_part(call_id: str | None, name: str) -> types.Part:
    return types.Part(
        function_response=types.FunctionResponse(id=call_id, name=name, response={"ok": True})
    )


@st.composite
def histories(draw: st.DrawFn, *, max_steps: int = 10, malformed: bool = True) -> list[Event]:
    """A history of up to `max_steps` steps; `malformed` allows the damaged shapes."""
    events: list[Event] = []
    invocation = "inv-0"
    owed: list[tuple[str | None, str]] = []  # calls made and not yet answered
    turn = 0
    for _ in range(draw(st.integers(min_value=1, max_value=max_steps))):
        kind = draw(
            st.sampled_from(
                ["user", "calls", "calls", "answer", "model_text"]
                + (["stray_answer"] if malformed else [])
            )
        )
        if kind == "user" or not events:
            turn += 1
            invocation = f"inv-{turn}"
            events.append(
                Event(
                    invocation_id=invocation,
                    author="user",
                    timestamp=_stamp(),
                    content=types.Content(role="user", parts=[types.Part(text=f"turn {turn}")]),
                )
            )
            if kind == "user":
                continue
        if kind == "calls":
            count = draw(st.integers(min_value=1, max_value=3))
            ids = draw(
                st.lists(
                    st.sampled_from(ID_POOL), min_size=count, max_size=count, unique=not malformed
                )
            )
            parts: list[types.Part] = []
            long_running: set[str] = set()
            made: list[tuple[str | None, str]] = []
            for call_id in ids:
                name = draw(st.sampled_from(NAMES))
                idless = draw(st.integers(min_value=0, max_value=5)) == 0
                effective_id = None if idless else call_id
                # Not on id-less calls: Anthropic pairs those by position
                # through the converter's fallback ids, so a dropped id-less
                # call shifts which result answers which call; the checker
                # is being reworked for id-less calls (issue 11, item 4).
                with_text = (
                    malformed
                    and effective_id is not None
                    and draw(st.integers(min_value=0, max_value=5)) == 0
                )
                parts.append(_call_part(effective_id, name, with_text))
                if effective_id and draw(st.integers(min_value=0, max_value=4)) == 0:
                    long_running.add(effective_id)
                made.append((effective_id, name))
            if draw(st.booleans()):
                parts.append(types.Part(text="checking"))
            events.append(
                Event(
                    invocation_id=invocation,
                    author=AGENT,
                    timestamp=_stamp(),
                    long_running_tool_ids=long_running or None,
                    content=types.Content(role="model", parts=parts),
                )
            )
            # Answer some now (as the tool step of the same turn would).
            now = [c for c in made if draw(st.booleans())]
            owed.extend(c for c in made if c not in now)
            if now:
                events.append(_response_event(now, invocation, AGENT))
        elif kind == "answer" and owed:
            chosen = draw(st.lists(st.sampled_from(owed), min_size=1, max_size=2, unique=True))
            for call in chosen:
                owed.remove(call)
            author = draw(st.sampled_from([AGENT, "user"]))
            events.append(_response_event(chosen, invocation, author))
        elif kind == "stray_answer":
            call_id = draw(st.sampled_from(ID_POOL))
            events.append(
                _response_event([(call_id, draw(st.sampled_from(NAMES)))], invocation, AGENT)
            )
        elif kind == "model_text":
            events.append(
                Event(
                    invocation_id=invocation,
                    author=AGENT,
                    timestamp=_stamp(),
                    content=types.Content(role="model", parts=[types.Part(text="done")]),
                )
            )
    return events


def _response_event(calls: list[tuple[str | None, str]], invocation: str, author: str) -> Event:
    return Event(
        invocation_id=invocation,
        author=author,
        timestamp=_stamp(),
        content=types.Content(
            role="user", parts=[_response_part(call_id, name) for call_id, name in calls]
        ),
    )


def describe(events: list[Event]) -> str:
    """One short line per event, for failure messages: author, invocation, parts."""
    lines = []
    for event in events:
        bits = []
        for part in (event.content.parts if event.content else None) or ():
            if part.function_call is not None:
                text = "+text" if part.text else ""
                bits.append(f"call({part.function_call.id},{part.function_call.name}{text})")
            elif part.function_response is not None:
                answer = part.function_response
                payload = answer.response or {}
                status = payload.get("status", "") if isinstance(payload, dict) else ""
                bits.append(f"resp({answer.id},{answer.name}{status and ',' + status})")
            elif part.text:
                bits.append("text")
        long_running = sorted(event.long_running_tool_ids or ())
        lines.append(
            f"{event.author}@{event.invocation_id or '-'}: {' '.join(bits)}"
            + (f" lr={long_running}" if long_running else "")
        )
    return "\n".join(lines)
