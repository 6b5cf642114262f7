"""Seeded generator of event histories, well-formed and malformed, for the fuzz run.

`tests/unit/test_properties.py` draws well-formed turns with hypothesis; this
generator draws single events from a wider vocabulary, in any order, from a
`random.Random`, so ten thousand histories cost seconds and every run of a seed
is the same. What it produces, besides ordinary turns:

* call ids from a pool of four, one with a space and a non-ASCII letter
  (reused across turns and within one event: `id_kinds` says which a history has),
  calls without an id, long-running ids, confirmation requests;
* a ``Part`` holding text *and* a function call;
* responses to calls long answered, to ids never called, before any call,
  in the same event as their call, authored by the user or the agent;
* rewinds without content (as ADK writes them) and with content, to earlier
  invocations, to other rewinds and to invocations that never existed;
* a call beside ADK's confirmation request in one event;
* events without content, with empty parts, and partial events.
"""

from __future__ import annotations

import random
from collections import Counter

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from adk_pairing.analysis import is_rewind
from adk_pairing.wire import LEFT_OUT_CALL_NAMES, builder_leaves_out
from tests.unit.events import AGENT, call, model_event, response, response_event, user_text

ID_POOL = ("c1", "c2", "c3", "ïd 1")
NAMES = ("lookup", "fetch", "adk_request_confirmation")

#: Event kind -> weight.
KINDS: dict[str, int] = {
    "user_text": 18,
    "calls": 24,
    "responses": 22,
    "model_text": 10,
    "rewind": 6,
    "empty": 3,
    "partial": 2,
}


class HistoryGenerator:
    """``HistoryGenerator(seed).history()`` returns the next history of the seed."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def history(self, max_events: int = 14) -> list[Event]:
        rng = self.rng
        invocations: list[str] = []
        called: list[tuple[str | None, str]] = []
        events: list[Event] = []
        for _ in range(rng.randint(1, max_events)):
            kind = rng.choices(list(KINDS), weights=list(KINDS.values()))[0]
            if kind == "user_text" or not invocations:
                invocations.append(f"inv-{len(invocations)}")
            invocation = invocations[-1]
            if kind == "user_text":
                events.append(user_text(f"message {len(events)}", invocation_id=invocation))
            elif kind == "calls":
                events.append(self._calls(invocation, called))
            elif kind == "responses":
                events.append(self._responses(invocation, called))
            elif kind == "model_text":
                events.append(model_event([types.Part(text="ok")], invocation_id=invocation))
            elif kind == "rewind":
                events.append(self._rewind(invocations))
            elif kind == "empty":
                event = model_event([], invocation_id=invocation)
                if rng.random() < 0.5:
                    event.content = None
                events.append(event)
            else:
                event = model_event([types.Part(text="thinking")], invocation_id=invocation)
                event.partial = True
                events.append(event)
        return events

    def _calls(self, invocation: str, called: list[tuple[str | None, str]]) -> Event:
        rng = self.rng
        parts: list[types.Part] = []
        long_running: list[str] = []
        for _ in range(rng.randint(1, 3)):
            call_id = None if rng.random() < 0.12 else rng.choice(ID_POOL)
            name = rng.choices(NAMES, weights=(10, 6, 1))[0]
            part = call(call_id, name)
            if rng.random() < 0.06:
                part.text = "and a text in the call's own part"
            parts.append(part)
            called.append((call_id, name))
            if call_id and rng.random() < 0.25:
                long_running.append(call_id)
        if rng.random() < 0.03 and called:
            parts.append(response(*rng.choice(called)))  # a response in its call's event
        if rng.random() < 0.2:
            parts.append(types.Part(text="let me check"))
        author = AGENT if rng.random() < 0.95 else "helper"
        return model_event(
            parts,
            invocation_id=invocation,
            long_running=long_running or None,
            author=author,
        )

    def _responses(self, invocation: str, called: list[tuple[str | None, str]]) -> Event:
        rng = self.rng
        parts: list[types.Part] = []
        for _ in range(rng.randint(1, 3)):
            if called and rng.random() < 0.9:
                parts.append(response(*rng.choice(called[-4:])))
            else:
                parts.append(response(rng.choice((*ID_POOL, "never-called", None)), "lookup"))
        if rng.random() < 0.05:
            parts.append(types.Part(text="a text after the results"))
        author = "user" if rng.random() < 0.3 else AGENT
        return response_event(parts, invocation_id=invocation, author=author)

    def _rewind(self, invocations: list[str]) -> Event:
        rng = self.rng
        target = rng.choice(invocations) if rng.random() < 0.85 else "inv-never"
        invocations.append(f"inv-{len(invocations)}")
        event = user_text("rewound and said this", invocation_id=invocations[-1])
        if rng.random() < 0.5:
            event.content = None
        event.actions = EventActions(rewind_before_invocation_id=target)
        return event


NO_TRAIT = "none of these"


def traits(events: list[Event]) -> set[str]:
    """The malformations in `events` a failure may come from (empty for a plain history)."""
    found: set[str] = set()
    calls: Counter[str] = Counter()
    results: Counter[str] = Counter()
    open_ids: set[str | None] = set()
    for event in events:
        if is_rewind(event):
            found.add("a rewind with content" if event.content else "a rewind")
        parts = event.content.parts or () if event.content else ()
        if builder_leaves_out(parts) and any(
            c.name not in LEFT_OUT_CALL_NAMES for c in event.get_function_calls()
        ):
            found.add("a call beside ADK's confirmation request")
        if any(part.function_call and part.text for part in parts):
            found.add("text and a call in one part")
        ids = [c.id for c in event.get_function_calls() if c.id]
        if any(not i.isascii() or " " in i for i in ids):
            found.add("a call id with spaces or non-ASCII characters")
        if len(ids) != len(set(ids)):
            found.add("a call id twice in one event")
        if open_ids.intersection(ids):
            found.add("a call id reused while an earlier call with it is open")
        open_ids.update(ids)
        open_ids.difference_update(r.id for r in event.get_function_responses())
        calls.update(c.id or c.name for c in event.get_function_calls())
        results.update(r.id or r.name for r in event.get_function_responses())
    if any(count > calls[key] for key, count in results.items()):
        found.add("more results than calls for an id")
    return found


#: The kinds of call id the fuzz run must reach (`id_kinds`).
ID_KINDS = ("an id with a space", "a non-ASCII id", "an id called again")


def id_kinds(events: list[Event]) -> set[str]:
    """Which `ID_KINDS` the calls in `events` carry (``ïd 1`` of `ID_POOL` has the first two)."""
    ids = [c.id for e in events for c in e.get_function_calls() if c.id]
    found = set()
    if any(" " in i for i in ids):
        found.add(ID_KINDS[0])
    if not all(i.isascii() for i in ids):
        found.add(ID_KINDS[1])
    if len(ids) != len(set(ids)):
        found.add(ID_KINDS[2])
    return found


def describe(events: list[Event]) -> str:
    """One short line per event: who, which invocation, what parts, which rewind."""

    def part(p: types.Part) -> str:
        if p.function_call:
            text = "+text" if p.text else ""
            return f"call({p.function_call.id},{p.function_call.name}){text}"
        if p.function_response:
            return f"response({p.function_response.id},{p.function_response.name})"
        return "text" if p.text else "?"

    lines = []
    for event in events:
        parts = [part(p) for p in event.content.parts or ()] if event.content else None
        line = f"{event.author}@{event.invocation_id} {parts}"
        if event.long_running_tool_ids:
            line += f" long_running={sorted(event.long_running_tool_ids)}"
        if event.actions.rewind_before_invocation_id:
            line += f" rewind_before={event.actions.rewind_before_invocation_id}"
        if event.partial:
            line += " partial"
        lines.append(line)
    return " | ".join(lines)
