"""A parallel turn whose answers no placement keeps in call order, decided without ADK's builder.

`PairingLedger.serves_as_stored` says, from the builder's traits, whether
such a call event goes as stored or keeps placeholders right after it. ADK's
own builder is the oracle here (`view_never_worse` on the installed release):
whatever the ledger decides must be a view the builder check accepts, and a
call event goes as stored only where its placeholders would break a rule the
view keeps.
"""

from __future__ import annotations

from google.adk.events.event import Event
from google.genai import types
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from adk_pairing.core import repair
from adk_pairing.core.placeholders import PlaceholderTexts
from adk_pairing.core.repair import repair_history
from adk_pairing.ledger import build_ledger
from adk_pairing.rules.builder_check import view_never_worse
from adk_pairing.rules.provider_rules import gemini
from tests.adk_features import BUILDER_DROPS_UNANSWERED_CALLS, requires

from .events import call, model_event, response, response_event, user_text
from .test_properties import adk_request_contents

TEXTS = PlaceholderTexts()


@st.composite
def parallel_turns(draw: st.DrawFn) -> list[Event]:
    """One or two turns of 2–5 parallel calls with fresh ids, some answered, in any grouping.

    Answers arrive in events of one or more results, in any order, some with
    a text beside them, some after a model reply; a call may be marked
    long-running, and one call may have no id.
    """
    events: list[Event] = []
    for turn in range(draw(st.integers(min_value=1, max_value=2))):
        invocation = f"inv-{turn}"
        events.append(user_text(f"turn {turn}", invocation_id=invocation))
        count = draw(st.integers(min_value=2, max_value=5))
        # At most one id-less call in the history: ADK pairs id-less results
        # by name across events, which no placement decides (README's limits).
        idless = draw(st.integers(0, count * 3)) if turn == 0 else -1
        ids = [None if number == idless else f"t{turn}c{number}" for number in range(count)]
        long_running = [i for i in ids if i is not None and draw(st.integers(0, 7)) == 0]
        events.append(
            model_event(
                [call(call_id, f"tool{n}") for n, call_id in enumerate(ids)],
                invocation_id=invocation,
                long_running=long_running,
            )
        )
        answered = [n for n in range(count) if draw(st.booleans())]
        order = draw(st.permutations(answered))
        position = 0
        while position < len(order):
            size = draw(st.integers(min_value=1, max_value=len(order) - position))
            parts = [response(ids[n], f"tool{n}") for n in order[position : position + size]]
            if draw(st.integers(0, 3)) == 0:
                parts.append(types.Part(text="so far"))
            if draw(st.integers(0, 4)) == 0:
                events.append(model_event([types.Part(text="working")], invocation_id=invocation))
            events.append(response_event(parts, invocation_id=invocation))
            position += size
    events.append(user_text("and now?", invocation_id="inv-last"))
    return events


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parallel_turns())
def test_the_ledgers_decision_is_proven_by_adks_builder(events: list[Event]) -> None:
    ledger = build_ledger(events)
    if ledger.irregular:
        return  # checked whole, as before (tests/unit/test_builder_check.py)
    checks = 0
    real_check = repair.view_never_worse

    def counted(*args: object, **kwargs: object) -> bool:
        nonlocal checks
        checks += 1
        return real_check(*args, **kwargs)  # type: ignore[arg-type]

    repair.view_never_worse = counted  # not monkeypatch: hypothesis runs many examples
    try:
        repaired = repair_history(events, ledger, TEXTS)
    finally:
        repair.view_never_worse = real_check
    # Fresh ids: no result or mark carries an open call's id elsewhere, so
    # the ledger knows unless an id-less call's results pair by name.
    unplaced = [index for index in ledger.open_calls if ledger.placement(index) is None]
    idless = any(
        part.function_call.id is None
        for index in unplaced
        for part in events[index].content.parts
        if part.function_call is not None
    )
    assert checks == 0 or idless
    assert view_never_worse(events, repaired.events), _brief(events)
    assert set(repaired.slots) | set(repaired.served_as_stored) == set(ledger.open_calls)
    event(
        "some call event served as stored"
        if repaired.served_as_stored
        else "placeholders out of call order"
        if unplaced
        else "every placement in call order"
    )
    if repaired.served_as_stored:
        _assert_adk_answers_in_call_order(events, repaired.served_as_stored)


def _assert_adk_answers_in_call_order(events: list[Event], indices: tuple[int, ...]) -> None:
    """What `serves_as_stored` claims of ADK's request: the open calls of each call
    event at `indices` are gone, and the next content answers the rest in call order."""
    contents = adk_request_contents(events)
    for index in indices:
        open_ids = {call.call_id for call in build_ledger(events).open_calls[index]}
        assert not open_ids & {
            part.function_call.id
            for content in contents
            for part in content.parts or ()
            if part.function_call is not None
        }, _brief(events)
        kept_ids = [
            part.function_call.id
            for part in events[index].content.parts
            if part.function_call is not None and part.function_call.id not in open_ids
        ]
        (position,) = (
            position
            for position, content in enumerate(contents)
            if [p.function_call.id for p in content.parts or () if p.function_call] == kept_ids
        )
        assert gemini(contents[position : position + 2]) == [], _brief(events)


@requires(BUILDER_DROPS_UNANSWERED_CALLS, "drop of unanswered calls in its request builder")
def test_an_open_id_a_result_carries_elsewhere_is_left_to_the_builder() -> None:
    """Where the builder keeps such a call depends on which events a request shows."""
    events = [
        user_text("first"),
        model_event([call("a")]),
        response_event([response("a")]),
        user_text("again"),
        model_event([call("b", "second"), call("a", "first")]),
        response_event([response("b", "second"), types.Part(text="beside")]),
        user_text("and now?"),
    ]
    ledger = build_ledger(events)
    assert not ledger.irregular and ledger.placement(4) is None
    assert ledger.serves_as_stored([4], events) == {4: None}
    repaired = repair_history(events, ledger, TEXTS)
    assert repaired.checked
    assert view_never_worse(events, repaired.events), _brief(events)


def _brief(events: list[Event]) -> str:
    """The history in one line: each event's author and parts (C: call, R: result, T: text)."""

    def part(p: types.Part) -> str:
        if p.function_call is not None:
            return f"C({p.function_call.id})"
        if p.function_response is not None:
            return f"R({p.function_response.id})"
        return "T"

    return " | ".join(
        f"{e.author}: {' '.join(part(p) for p in (e.content.parts or ()) if e.content)}"
        + (f" long-running {sorted(e.long_running_tool_ids)}" if e.long_running_tool_ids else "")
        for e in events
    )
