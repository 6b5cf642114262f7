"""The ledger reads exactly the event fields `adk_pairing.ledger.reads` declares.

Each event is handed to the ledger wrapped in objects that let it read the
declared fields only (its actions, content, parts and calls wrapped alike),
under every combination of builder traits. An undeclared read fails the test,
so a new read in the ledger cannot go unnoticed by what builds stand-ins from
the declaration (the scan's fast path); and every declared field is read on a
history that has each of them, so the declaration holds nothing stale.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any, cast

import pytest
from google.adk.events.event import Event
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adk_pairing.adk.builder import BuilderTraits
from adk_pairing.ledger import analyze, is_rewind
from adk_pairing.ledger.reads import (
    ACTIONS_FIELDS,
    CALL_FIELDS,
    CONTENT_FIELDS,
    EVENT_FIELDS,
    PART_FIELDS,
)

from .events import call, model_event, response, response_event, rewind_event, user_text
from .history_strategies import histories

#: Every builder's traits, those of no released ADK included.
ALL_TRAITS = [BuilderTraits(*flags) for flags in itertools.product((False, True), repeat=3)]
#: The declared fields of each object the ledger reaches, by the field that holds it.
HELD = {
    "actions": ACTIONS_FIELDS,
    "content": CONTENT_FIELDS,
    "parts": PART_FIELDS,
    "function_call": CALL_FIELDS,
    "function_response": CALL_FIELDS,
}
HAS_ISOLATION_SCOPE = "isolation_scope" in Event.model_fields


class UndeclaredRead(Exception):
    """Not an AttributeError: ``getattr(..., default)`` must not swallow it."""


class Reads:
    """Wraps events for the ledger and notes what it reads: (kind, field) pairs."""

    def __init__(self) -> None:
        self.declared: set[tuple[str, str]] = set()
        self.undeclared: set[tuple[str, str]] = set()
        # One wrapper per object, so the ledger sees the same object each time.
        self._wrappers: dict[int, Any] = {}
        self._kept: list[object] = []

    def events(self, events: Iterable[Event]) -> list[Event]:
        return [self.wrap(event, "event", EVENT_FIELDS) for event in events]

    def wrap(self, target: Any, kind: str, fields: tuple[str, ...]) -> Any:
        if target is None:
            return None
        if isinstance(target, list):
            return [self.wrap(item, kind, fields) for item in target]
        wrapper = self._wrappers.get(id(target))
        if wrapper is None:
            wrapper = self._wrappers[id(target)] = _Declared(self, target, kind, fields)
            self._kept.append(target)  # keeps id(target) from being reused
        return wrapper


class _Declared:
    __slots__ = ("_fields", "_kind", "_reads", "_target")

    def __init__(self, reads: Reads, target: object, kind: str, fields: tuple[str, ...]) -> None:
        self._reads = reads
        self._target = target
        self._kind = kind
        self._fields = fields

    def __getattr__(self, name: str) -> Any:
        if name not in self._fields:
            self._reads.undeclared.add((self._kind, name))
            raise UndeclaredRead(f"the ledger read {self._kind}.{name}")
        self._reads.declared.add((self._kind, name))
        value = getattr(self._target, name)  # AttributeError for a field this ADK lacks
        held = HELD.get(name)
        return value if held is None else self._reads.wrap(value, name, held)


def _run_the_ledger(events: list[Event]) -> Reads:
    reads = Reads()
    wrapped = reads.events(events)
    for traits in ALL_TRAITS:
        analyze(wrapped, traits=traits)
    for event in wrapped:
        is_rewind(event)
    assert not reads.undeclared, "declare them in adk_pairing.ledger.reads"
    return reads


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(max_steps=12), st.data())
def test_the_ledger_reads_only_the_declared_fields(
    events: list[Event], data: st.DataObject
) -> None:
    updates = st.fixed_dictionaries(
        {"branch": st.sampled_from((None, "fan", "fan.a", "root.child@call_1"))},
        optional={"isolation_scope": st.sampled_from((None, "call_1"))}
        if HAS_ISOLATION_SCOPE
        else {},
    )
    events = [event.model_copy(update=data.draw(updates)) for event in events]
    if data.draw(st.booleans(), label="rewind"):
        rewound = data.draw(st.sampled_from([event.invocation_id for event in events]))
        events.insert(data.draw(st.integers(0, len(events))), rewind_event(rewound))
    _run_the_ledger(events)


def every_field_history() -> list[Event]:
    """A history in which each declared field is set somewhere, and read."""
    signed_thought = types.Part(
        thought=True, thought_signature=b"sig", function_call=types.FunctionCall(name="lookup")
    )
    mixed = types.Part(text="let me look", function_call=types.FunctionCall(id="m", name="lookup"))
    # A child run of the call "task", scoped to it as a task run is.
    child = model_event([call("c")], author="child", branch="child@task", invocation_id="inv-2")
    if HAS_ISOLATION_SCOPE:
        child = child.model_copy(update={"isolation_scope": "task"})
    # "r" reused while open after an earlier answer, before any branch: the newest
    # builder then watches the events after it for a compaction.
    reused = [model_event([call("r")]), response_event([response("r")])]
    reused += [model_event([call("r")]), model_event([call("r")])]
    return [
        user_text(),
        *reused,
        model_event([call("a"), mixed, signed_thought], long_running=["a"], branch="fan.a"),
        model_event([call("task", "child")]),
        response_event([response("a")], branch="fan.a"),
        user_text("again", invocation_id="inv-2"),
        child,
        rewind_event("inv-2"),
        model_event([types.Part(text="done")]),
    ]


def test_every_declared_field_is_read() -> None:
    reads = _run_the_ledger(every_field_history())
    declared = {
        (kind, name) for kind, fields in [("event", EVENT_FIELDS), *HELD.items()] for name in fields
    }
    if not HAS_ISOLATION_SCOPE:  # google-adk before task runs: nothing to read
        declared.discard(("event", "isolation_scope"))
    assert declared - reads.declared == set(), "read by nothing: drop from adk_pairing.ledger.reads"


def test_an_undeclared_read_is_caught() -> None:
    """The wrappers can fail: reading an event's id, which the ledger never needs."""
    reads = Reads()
    (event,) = reads.events([user_text()])
    with pytest.raises(UndeclaredRead):
        cast("Any", event).id  # noqa: B018
    assert reads.undeclared == {("event", "id")}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=histories(malformed=True), split=st.integers(min_value=0, max_value=40))
def test_a_carried_ledger_of_an_irregular_history_holds_every_call(
    events: list[Event], split: int
) -> None:
    # The restore reads every call of an irregular history; the plugin's
    # per-session ledger is carried forward and walked on (`AnalysisCache`),
    # with the installed release's builder: it must hold what a fresh walk does.
    from adk_pairing.core.analysis_cache import AnalysisCache
    from adk_pairing.ledger import build_ledger

    cache = AnalysisCache(4)
    key = ("app", "user", "session")
    cache.ledger_for(key, events[: split % (len(events) + 1)])
    carried, fresh = cache.ledger_for(key, events), build_ledger(events)
    if fresh.irregular:
        assert carried.holds_every_call
        assert [(c.event_index, c.part_index, c.answered, c.withheld) for c in carried.calls] == [
            (c.event_index, c.part_index, c.answered, c.withheld) for c in fresh.calls
        ]
