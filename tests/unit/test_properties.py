"""Property tests: for any generated history, the repaired view pairs every call.

Histories are built from turns: a user message, a model event with parallel
calls (ids drawn from a tiny pool so they repeat across turns, some without an
id, some long-running, sometimes a trailing text part), then results for a
subset of the calls, split over one or two events, sometimes followed by a
model reply. Two checks:

* placed next to their calls, results need no help from ADK: the repaired
  list converted with ADK's Anthropic converter must satisfy the rule;
* results may also arrive late (after later turns); then the history goes
  through ADK's own request builder first, as it would on the wire.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import pytest
from google.adk import __version__ as adk_version
from google.adk.events.event import Event
from google.genai import types
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from adk_pairing import analyze, is_synthetic, repaired_events
from adk_pairing.adk.builder import NEWEST_BUILDER, builder_traits
from adk_pairing.core.placeholders import PlaceholderTexts
from adk_pairing.core.repair import place_repairs
from adk_pairing.ledger import PairingLedger, TrackedCall, build_ledger
from adk_pairing.ledger.rewinds import live_runs
from adk_pairing.rules.checks import anthropic_pairing_violations
from tests.adk_features import (
    BUILDER_REJECTS_ORPHAN_RESPONSES,
    CHECKER_SEES_IDLESS_CALLS,
    known_gap,
)

from .events import AGENT, call, model_event, response, response_event, user_text

ID_POOL = ["call_1", "call_2", "call_3", "call_4"]
NAMES = ["search", "fetch"]


@dataclass(frozen=True)
class PlannedCall:
    call_id: str | None
    name: str
    long_running: bool
    answered: bool
    late: bool


@dataclass(frozen=True)
class PlannedTurn:
    calls: tuple[PlannedCall, ...]
    trailing_text: bool
    split_answers: bool
    model_reply: bool


@st.composite
def planned_turns(draw: st.DrawFn, allow_late: bool) -> PlannedTurn:
    count = draw(st.integers(min_value=0, max_value=4))
    ids = draw(st.lists(st.sampled_from(ID_POOL), min_size=count, max_size=count, unique=True))
    calls = []
    idless_names: set[str] = set()
    for call_id in ids:
        name = draw(st.sampled_from(NAMES))
        idless = draw(st.booleans()) and draw(st.booleans())
        if idless and allow_late and idless_names:
            # ADK's request builder merges the response events of one call event
            # keyed by response id, so two id-less calls answered by separate
            # events lose a result there even in a healthy history. Not ours to
            # fix (see the README's limitations); keep one id-less call per event.
            idless = False
        if idless:
            idless_names.add(name)
        calls.append(
            PlannedCall(
                call_id=None if idless else call_id,
                name=name,
                long_running=not idless and draw(st.booleans()) and draw(st.booleans()),
                answered=draw(st.booleans()),
                late=allow_late and not idless and draw(st.booleans()),
            )
        )
    return PlannedTurn(
        calls=tuple(calls),
        trailing_text=draw(st.booleans()),
        split_answers=draw(st.booleans()),
        model_reply=draw(st.booleans()),
    )


def build_history(turns: list[PlannedTurn]) -> list[Event]:
    """Turns the plan into ADK events; late results land after the last turn."""
    events: list[Event] = []
    late: list[types.Part] = []
    for number, turn in enumerate(turns):
        invocation = f"inv-{number}"
        events.append(user_text(f"turn {number}", invocation_id=invocation))
        if not turn.calls:
            events.append(model_event([types.Part(text="ok")], invocation_id=invocation))
            continue
        parts = [call(c.call_id, c.name) for c in turn.calls]
        if turn.trailing_text:
            parts.append(types.Part(text="let me check"))
        long_running = [c.call_id for c in turn.calls if c.long_running and c.call_id]
        events.append(model_event(parts, invocation_id=invocation, long_running=long_running))
        now = [response(c.call_id, c.name) for c in turn.calls if c.answered and not c.late]
        late.extend(response(c.call_id, c.name) for c in turn.calls if c.answered and c.late)
        groups = [now[:1], now[1:]] if turn.split_answers else [now]
        for group in groups:
            if group:
                events.append(response_event(group, invocation_id=invocation))
        if turn.model_reply:
            events.append(model_event([types.Part(text="done")], invocation_id=invocation))
    if late:
        events.append(response_event(late, invocation_id="inv-late", author="user"))
    return events


def contents_of(events: list[Event]) -> list[types.Content]:
    return [e.content for e in events if e.content is not None]


def adk_request_contents(events: list[Event]) -> list[types.Content]:
    """The contents ADK's request builder makes from `events` for the agent."""
    from google.adk.flows.llm_flows.contents import _get_contents

    if "preserve_function_call_ids" in inspect.signature(_get_contents).parameters:
        return _get_contents(None, events, AGENT, preserve_function_call_ids=True)
    # google-adk 1.20 has no such switch: it strips only its own "adk-" ids
    # (flows/llm_flows/functions.py:68), which these histories never use.
    return _get_contents(None, events, AGENT)


def newest_view(events: list[Event]) -> list[Event]:
    """The view's placements as the newest request builder needs them (older ones:
    test_builder_rules), without the check of irregular histories against the
    installed ADK's builder (`adk_pairing.rules.builder_check`,
    tests/unit/test_builder_check.py)."""
    ledger = build_ledger(events, traits=NEWEST_BUILDER)
    return place_repairs(events, ledger, PlaceholderTexts()).events


#: The claims about ADK's request below hold for builders that pair reused ids
#: by the newest call. Older ones (adk_pairing.adk.builder) attribute a
#: reused id's result elsewhere or raise on a walk back, so the view leaves such
#: calls as stored: the request is exactly the unwrapped one, never worse
#: (test_request_never_worse), and only PairingPlugin can make it valid. A
#: strict xfail, detected by the same probe the view switches on, so the mark
#: fails the run if the claim starts holding there.
view_alone_cannot_fix_reused_ids = pytest.mark.xfail(
    builder_traits() != NEWEST_BUILDER,
    reason=f"google-adk {adk_version}'s request builder mis-pairs reused ids "
    "(adk_pairing.adk.builder): the view keeps such calls as stored, never worse "
    "(test_request_never_worse); PairingPlugin repairs the request",
    strict=True,
)


turn_lists = st.lists(planned_turns(allow_late=False), min_size=1, max_size=6)
late_turn_lists = st.lists(planned_turns(allow_late=True), min_size=1, max_size=6)
common = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@common
@given(turn_lists)
def test_repaired_history_satisfies_anthropic_pairing(turns: list[PlannedTurn]) -> None:
    events = build_history(turns)
    assert anthropic_pairing_violations(contents_of(newest_view(events))) == []


def _turn(*calls: PlannedCall) -> PlannedTurn:
    return PlannedTurn(calls=calls, trailing_text=False, split_answers=False, model_reply=False)


#: Two id-less calls of one event, one answered (fails where the converter
#: gives both one fallback id).
IDLESS_HALF_ANSWERED = [
    _turn(
        PlannedCall(None, "search", False, False, False),
        PlannedCall(None, "search", False, True, False),
    )
]
#: ``call_1`` answered, then ``call_1`` reused and left unanswered next to an
#: answered ``call_2`` (fails where the builder checks the last response event).
REUSED_ID_BESIDE_AN_ANSWERED_CALL = [
    _turn(PlannedCall("call_1", "search", False, True, False)),
    _turn(
        PlannedCall("call_1", "search", False, False, False),
        PlannedCall("call_2", "fetch", False, True, False),
    ),
]


@known_gap(
    not CHECKER_SEES_IDLESS_CALLS,
    "ADK's Anthropic converter gives every id-less call one fallback id, so "
    "adk_pairing.rules.checks misses an unanswered id-less call beside an answered one "
    "(issue 11 item 4, checks.py)",
)
@common
@example(IDLESS_HALF_ANSWERED)
@given(turn_lists)
def test_unrepaired_history_fails_exactly_when_a_call_is_unanswered(
    turns: list[PlannedTurn],
) -> None:
    events = build_history(turns)
    healthy = analyze(events, traits=NEWEST_BUILDER).is_healthy
    assert (anthropic_pairing_violations(contents_of(events)) == []) == healthy


@common
@given(turn_lists)
def test_healthy_history_is_returned_unchanged(turns: list[PlannedTurn]) -> None:
    events = build_history(turns)
    repaired = newest_view(events)
    if analyze(events, traits=NEWEST_BUILDER).is_healthy:
        assert all(a is b for a, b in zip(repaired, events, strict=True))
        assert len(repaired) == len(events)
    else:
        assert len(repaired) > len(events)


@common
@given(turn_lists)
def test_view_keeps_every_stored_event_in_order_and_adds_only_marked_events(
    turns: list[PlannedTurn],
) -> None:
    events = build_history(turns)
    repaired = newest_view(events)
    kept = [e for e in repaired if not is_synthetic(e)]
    assert [e.id for e in kept] == [e.id for e in events]
    assert [e.content for e in kept] == [e.content for e in events]
    synthetic = [e for e in repaired if is_synthetic(e)]
    assert all(e.author != "user" and e.invocation_id == "" for e in synthetic)
    unanswered = [
        c for c in analyze(events, traits=NEWEST_BUILDER).calls if c.status.value != "answered"
    ]
    assert sum(len(e.get_function_responses()) for e in synthetic) == len(unanswered)


@common
@given(turn_lists)
def test_repairing_a_repaired_view_adds_nothing(turns: list[PlannedTurn]) -> None:
    repaired = newest_view(build_history(turns))
    assert analyze(repaired, traits=NEWEST_BUILDER).is_healthy
    assert len(newest_view(repaired)) == len(repaired)


@view_alone_cannot_fix_reused_ids
@common
@example(REUSED_ID_BESIDE_AN_ANSWERED_CALL)
@given(late_turn_lists)
def test_request_built_by_adk_from_the_view_satisfies_anthropic_pairing(
    turns: list[PlannedTurn],
) -> None:
    events = build_history(turns)
    assert anthropic_pairing_violations(adk_request_contents(repaired_events(events))) == []


@pytest.mark.parametrize("late", [False, True])
def test_guard_adk_request_from_an_unrepaired_history_can_violate_the_rule(late: bool) -> None:
    """Without the view, a pending long-running call reaches the wire unanswered."""
    events = [
        user_text("start"),
        model_event([call("lro-1", "wait")], long_running=["lro-1"]),
        user_text("anything new?"),
    ]
    if late:
        events.append(response_event([response("other")], author="user"))
        if BUILDER_REJECTS_ORPHAN_RESPONSES:
            # Older ADK refuses a result whose call is not in the history, with
            # or without the view: the view makes it no worse.
            for history in (events, repaired_events(events)):
                with pytest.raises(ValueError, match="No function call event found"):
                    adk_request_contents(history)
            return
    assert anthropic_pairing_violations(adk_request_contents(events))
    assert anthropic_pairing_violations(adk_request_contents(repaired_events(events))) == []


def _statuses(ledger: PairingLedger) -> list[tuple[int, int, str | None, str]]:
    return [(c.event_index, c.part_index, c.call_id, c.status.value) for c in ledger.calls]


@common
@given(late_turn_lists)
def test_walking_a_history_in_one_pass_equals_observing_it_event_by_event(
    turns: list[PlannedTurn],
) -> None:
    """`build_ledger`'s one-pass walk and the per-append `observe` apply the same rules."""
    events = build_history(turns)
    stepwise = PairingLedger(NEWEST_BUILDER)
    for index, event in enumerate(events):
        stepwise.observe(event, index)
    walked = build_ledger(events, traits=NEWEST_BUILDER)
    assert _statuses(walked) == _statuses(stepwise)
    assert {i: _statuses_of(walked.open_calls[i]) for i in walked.open_calls} == {
        i: _statuses_of(stepwise.open_calls[i]) for i in stepwise.open_calls
    }


def _statuses_of(calls: list[TrackedCall]) -> list[tuple[int, str | None, str]]:
    return [(c.part_index, c.call_id, c.status.value) for c in calls]


@given(st.lists(st.booleans(), max_size=30))
def test_live_runs_cover_exactly_the_live_events(live: list[bool]) -> None:
    covered = [False] * len(live)
    previous_stop = -1
    for start, stop in live_runs(live):
        assert previous_stop < start < stop  # ordered, non-empty, never adjacent
        covered[start:stop] = [True] * (stop - start)
        previous_stop = stop
    assert covered == live
