"""Seeded generator of event histories, well-formed and malformed, for the fuzz run.

`tests/unit/test_properties.py` draws well-formed turns with hypothesis; this
generator draws single events from a wider vocabulary, in any order, from a
`random.Random`, so ten thousand histories cost seconds and every run of a seed
is the same. What it produces, besides ordinary turns:

* call ids from a pool of four, one with a space and a non-ASCII letter
  (reused across turns and within one event: `id_kinds` says which a history has),
  calls without an id, long-running ids, confirmation requests;
* in some histories, ids from a second pool (`SPECIAL_IDS`): ids of 20,000
  characters, one that ADK's Anthropic converter keeps and one it rewrites;
  ``toolu_fallback_0`` and ``toolu_fallback_1``, which that converter keeps
  and also gives ids it rewrites (``_ToolUseIdSanitizer``, 1.39.1 and later),
  so two ids collide on the wire; an empty id, which LiteLlm sends as an
  id-less call does (``id or ""``); ADK's own ``adk-`` id, which google-adk
  1.20's builder strips; an id holding LiteLlm's ``__thought__`` separator;
* ADK's held-open requests (``adk_request_input``, ``adk_request_confirmation``,
  ``adk_request_credential``), most of them sharing an id with an ordinary call;
* branches: in some histories each call or result event runs in one of two
  sibling branches, their parent or none, so an id is called in two branches
  and a root agent is shown both;
* a ``Part`` holding text *and* a function call;
* responses to calls long answered, to ids never called, before any call,
  in the same event as their call, authored by the user or the agent;
* rewinds without content (as ADK writes them) and with content, to earlier
  invocations, to other rewinds and to invocations that never existed;
* a call beside ADK's confirmation request in one event, and events holding
  both calls and results (in branches, and before and after rewinds);
* events without content, with empty parts, and partial events.
"""

from __future__ import annotations

import random
from collections import Counter

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from adk_pairing.adk import left_out_call_names
from adk_pairing.ledger import is_rewind
from adk_pairing.wire import (
    HELD_OPEN_CALL_NAMES,
    anthropic_keeps_id,
    builder_leaves_out,
)
from tests.unit.events import AGENT, call, model_event, response, response_event, user_text

ID_POOL = ("c1", "c2", "c3", "ïd 1")
#: How the ids ADK gives calls itself start (``generate_client_function_call_id``).
ADK_OWN_ID_PREFIX = "adk-"
#: An id of 20,000 characters both converters keep, and one ADK's Anthropic converter rewrites.
LONG_ID = "L" * 20_000
LONG_REWRITTEN_ID = "L" * 19_999 + " "
#: Ids ADK's Anthropic converter keeps (`adk_pairing.wire.anthropic_keeps_id`) and also
#: gives, in request order, to ids it rewrites (``ïd 1``, `LONG_REWRITTEN_ID`).
FALLBACK_LOOKALIKES = ("toolu_fallback_0", "toolu_fallback_1")
#: LiteLlm sends ``id or ""`` (an empty id like a missing one), keeps a
#: ``__thought__`` separator as it is on the way out, and google-adk 1.20's
#: builder strips ADK's own ``adk-`` ids (`ADK_OWN_ID_PREFIX`).
LITELLM_IDS = ("", f"{ADK_OWN_ID_PREFIX}5c1e", "c1__thought__c2ln")
#: The second pool: a history draws each of these in with `SPECIAL_ID_CHANCE`.
SPECIAL_IDS = (LONG_ID, LONG_REWRITTEN_ID, *FALLBACK_LOOKALIKES, *LITELLM_IDS)
SPECIAL_ID_CHANCE = 0.1
ORDINARY_NAMES = ("lookup", "fetch")
NAMES = (*ORDINARY_NAMES, *sorted(HELD_OPEN_CALL_NAMES))
NAME_WEIGHTS = (10, 6, 1, 1, 1)
#: Sibling branches, their parent, and none (`adk_pairing.wire.branch_shows`).
BRANCHES = ("fan.a", "fan.b", "fan", None)
BRANCHED_CHANCE = 0.4

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
        self._ids: tuple[str, ...] = ID_POOL
        self._branches: tuple[str | None, ...] = (None,)

    def history(self, max_events: int = 14) -> list[Event]:
        rng = self.rng
        self._ids = ID_POOL + tuple(i for i in SPECIAL_IDS if rng.random() < SPECIAL_ID_CHANCE)
        self._branches = BRANCHES if rng.random() < BRANCHED_CHANCE else (None,)
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
            call_id = None if rng.random() < 0.12 else rng.choice(self._ids)
            name = rng.choices(NAMES, weights=NAME_WEIGHTS)[0]
            if called and rng.random() < 0.6:
                # A held-open request under an ordinary call's id, or the other way round.
                held = name in HELD_OPEN_CALL_NAMES
                others = [i for i, n in called if i and (n in HELD_OPEN_CALL_NAMES) != held]
                call_id = rng.choice(others) if others else call_id
            part = call(call_id, name)
            if rng.random() < 0.06:
                part.text = "and a text in the call's own part"
            parts.append(part)
            called.append((call_id, name))
            if call_id and rng.random() < 0.25:
                long_running.append(call_id)
        if rng.random() < 0.15 and called:
            # A result in a call event: its own call's, or an earlier one's.
            parts.insert(rng.randrange(len(parts) + 1), response(*rng.choice(called)))
        if rng.random() < 0.2:
            parts.append(types.Part(text="let me check"))
        author = AGENT if rng.random() < 0.95 else "helper"
        return model_event(
            parts,
            invocation_id=invocation,
            long_running=long_running or None,
            author=author,
            branch=rng.choice(self._branches),
        )

    def _responses(self, invocation: str, called: list[tuple[str | None, str]]) -> Event:
        rng = self.rng
        parts: list[types.Part] = []
        for _ in range(rng.randint(1, 3)):
            if called and rng.random() < 0.9:
                parts.append(response(*rng.choice(called[-4:])))
            else:
                parts.append(response(rng.choice((*self._ids, "never-called", None)), "lookup"))
        if rng.random() < 0.05:
            parts.append(types.Part(text="a text after the results"))
        author = "user" if rng.random() < 0.3 else AGENT
        return response_event(
            parts, invocation_id=invocation, author=author, branch=rng.choice(self._branches)
        )

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
#: The `ID_KINDS` that are malformations a failure may come from too (`traits`).
SHAPE_TRAITS = frozenset(
    {
        *(f"{name} sharing an id with an ordinary call" for name in HELD_OPEN_CALL_NAMES),
        "an event holding calls and results",
        "one id called in two sibling branches",
    }
)


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
        if builder_leaves_out(parts, left_out_call_names()) and any(
            c.name not in left_out_call_names() for c in event.get_function_calls()
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
    found.update(kind for kind in id_kinds(events) if kind in SHAPE_TRAITS)
    return found


#: What the fuzz run must reach (`id_kinds`): kinds of call id, and the shapes
#: around them that issue 26 found undrawn.
ID_KINDS = (
    "an id with a space",
    "a non-ASCII id",
    "an id called again",
    "an id of 20,000 characters",
    "a stored toolu_fallback_ id beside an id Anthropic's converter rewrites",
    "an empty id (LiteLlm sends it as an id-less call's)",
    "ADK's own adk- id",
    "an id holding LiteLlm's __thought__ separator",
    *(f"{name} sharing an id with an ordinary call" for name in sorted(HELD_OPEN_CALL_NAMES)),
    "an event holding calls and results",
    "an event holding calls and results, in a branch",
    "an event holding calls and results, and a rewind",
    "one id called in two sibling branches",
    "issue 26's worse shape: a held-open request and an ordinary call sharing an id, "
    "each beside a result, in two sibling branches",
)


def id_kinds(events: list[Event]) -> set[str]:
    """Which `ID_KINDS` `events` reach (``ïd 1`` of `ID_POOL` has the first two)."""
    calls = [c for e in events for c in e.get_function_calls()]
    ids = [c.id for c in calls if c.id]
    found = set()
    if any(" " in i for i in ids):
        found.add(ID_KINDS[0])
    if not all(i.isascii() for i in ids):
        found.add(ID_KINDS[1])
    if len(ids) != len(set(ids)):
        found.add(ID_KINDS[2])
    if any(len(i) >= 20_000 for i in ids):
        found.add(ID_KINDS[3])
    if set(ids) & set(FALLBACK_LOOKALIKES) and not all(anthropic_keeps_id(i) for i in ids):
        found.add(ID_KINDS[4])
    if any(c.id == "" for c in calls):
        found.add(ID_KINDS[5])
    if any(i.startswith(ADK_OWN_ID_PREFIX) for i in ids):
        found.add(ID_KINDS[6])
    if any("__thought__" in i for i in ids):
        found.add(ID_KINDS[7])
    ordinary = {c.id for c in calls if c.id and c.name not in HELD_OPEN_CALL_NAMES}
    for name in sorted(HELD_OPEN_CALL_NAMES):
        if any(c.name == name and c.id in ordinary for c in calls):
            found.add(f"{name} sharing an id with an ordinary call")
    mixed = [e for e in events if e.get_function_calls() and e.get_function_responses()]
    if mixed:
        found.add("an event holding calls and results")
    if any(e.branch for e in mixed):
        found.add("an event holding calls and results, in a branch")
    if mixed and any(is_rewind(e) for e in events):
        found.add("an event holding calls and results, and a rewind")
    branches_of: dict[str, set[str]] = {}
    for event in events:
        for c in event.get_function_calls():
            if c.id and event.branch in ("fan.a", "fan.b"):
                branches_of.setdefault(c.id, set()).add(event.branch)
    if any(len(b) == 2 for b in branches_of.values()):
        found.add("one id called in two sibling branches")
    if _the_issue_26_shape(mixed):
        found.add(ID_KINDS[-1])
    return found


def _the_issue_26_shape(mixed: list[Event]) -> bool:
    """Among events holding calls and results: a held-open and an ordinary call of one id,
    in two sibling branches."""
    siblings = ("fan.a", "fan.b")
    held, ordinary = set(), set()
    for event in mixed:
        if event.branch in siblings:
            for c in event.get_function_calls():
                side = held if c.name in HELD_OPEN_CALL_NAMES else ordinary
                side.add((c.id, event.branch))
    return any(
        (call_id, other) in ordinary
        for call_id, branch in held
        if call_id
        for other in siblings
        if other != branch
    )


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
