"""A call id reused while an earlier call with it is open, then answered (`note_reuse`).

Models number their calls per turn (``call_0``), so a turn that died leaves an
open ``call_0`` that every later turn reuses. Under the newest builder the
history is regular again once a call with the id is answered by its agent,
so its view is served without running ADK's builder on every append; ADK's
own builder, the installed release's, is the oracle that this is right where
the installed release has the newest builder, and that the shape must stay
irregular before that answer.
"""

from __future__ import annotations

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions, EventCompaction
from google.genai import types

from adk_pairing.adk.builder import NEWEST_BUILDER, BuilderTraits, builder_traits
from adk_pairing.core.placeholders import PlaceholderTexts
from adk_pairing.core.repair import place_repairs, repair_history
from adk_pairing.ledger import PairingLedger, build_ledger
from adk_pairing.ledger.open_calls import ANSWERED_IDS_REMEMBERED
from adk_pairing.rules.builder_check import view_never_worse
from adk_pairing.wire import IrregularShape
from tests.adk_features import ADK_VERSION, BUILDER_DROPS_UNANSWERED_CALLS, requires

from .events import call, model_event, response, response_event, user_text
from .test_builder_rules import BY_LAST_RESPONSE, WALKS_BACK

TEXTS = PlaceholderTexts()
REUSED = IrregularShape.CALL_ID_REUSED_WHILE_OPEN
OLDER = {"walks back": WALKS_BACK, "by last response": BY_LAST_RESPONSE}
newest_builder_installed = pytest.mark.skipif(
    builder_traits() != NEWEST_BUILDER,
    reason=f"google-adk {ADK_VERSION}'s request builder pairs reused ids the older ways",
)


def died_then_reused(*, answered: bool, author: str = "assistant") -> list[Event]:
    """``call_0`` whose turn died, then a turn that calls ``call_0`` again."""
    events = [
        user_text("1", invocation_id="inv-1"),
        model_event([call("call_0")], invocation_id="inv-1"),
        user_text("2", invocation_id="inv-2"),
        model_event([call("call_0")], invocation_id="inv-2", author=author),
    ]
    if answered:
        events.append(response_event([response("call_0")], invocation_id="inv-2", author=author))
    events.append(user_text("3", invocation_id="inv-3"))
    return events


def test_the_reuse_is_irregular_until_the_id_is_answered() -> None:
    before = died_then_reused(answered=False)
    assert build_ledger(before, traits=NEWEST_BUILDER).shapes == {REUSED}
    after = died_then_reused(answered=True)
    ledger = build_ledger(after, traits=NEWEST_BUILDER)
    assert not ledger.irregular
    assert list(ledger.open_calls) == [1]  # the call whose turn died


def test_observing_event_by_event_agrees_with_the_walk_and_survives_a_carry_forward() -> None:
    events = died_then_reused(answered=True)
    ledger = PairingLedger(NEWEST_BUILDER)
    for index, event in enumerate(events[:4]):
        ledger.observe(event, index)
    assert ledger.irregular
    resumed = ledger.carry_forward()
    for index, event in enumerate(events[4:], start=4):
        resumed.observe(event, index)
    assert not resumed.irregular


def answered_turn(call_id: str, turn: str) -> list[Event]:
    return [
        user_text(turn, invocation_id=turn),
        model_event([call(call_id)], invocation_id=turn),
        response_event([response(call_id)], invocation_id=turn),
    ]


def test_a_reuse_of_an_id_answered_before_is_regular_at_once() -> None:
    events = [*answered_turn("call_0", "inv-0"), *died_then_reused(answered=False)]
    ledger = build_ledger(events, traits=NEWEST_BUILDER)
    assert not ledger.irregular
    assert list(ledger.open_calls) == [4, 6]


def test_an_answer_adks_builder_leaves_out_does_not_count() -> None:
    """The fuzz found it: a confirmation answered under the id, which no request carries."""
    confirmation = "adk_request_confirmation"
    events = [
        user_text("0", invocation_id="inv-0"),
        model_event([call("call_0", confirmation)], invocation_id="inv-0"),
        response_event([response("call_0", confirmation)], invocation_id="inv-0"),
        *died_then_reused(answered=False),
    ]
    assert build_ledger(events, traits=NEWEST_BUILDER).shapes == {REUSED}


def test_a_compaction_after_the_reuse_makes_it_irregular_again() -> None:
    """A compaction may summarise the earlier answer away while the calls stay in the request."""
    events = [*answered_turn("call_0", "inv-0"), *died_then_reused(answered=False)]
    assert not build_ledger(events, traits=NEWEST_BUILDER).irregular
    summary = types.Content(role="model", parts=[types.Part(text="summary")])
    compaction = EventCompaction(start_timestamp=0.0, end_timestamp=1.0, compacted_content=summary)
    events.append(
        Event(author="user", invocation_id="inv-c", actions=EventActions(compaction=compaction))
    )
    assert build_ledger(events, traits=NEWEST_BUILDER).shapes == {REUSED}


def test_an_id_answered_before_but_forgotten_waits_for_its_answer() -> None:
    events = answered_turn("call_0", "inv-0")
    for n in range(ANSWERED_IDS_REMEMBERED):
        events += answered_turn(f"other_{n}", f"inv-other-{n}")
    events += died_then_reused(answered=False)
    assert build_ledger(events, traits=NEWEST_BUILDER).shapes == {REUSED}


@newest_builder_installed
def test_adks_builder_keeps_every_rule_on_the_view_of_an_id_answered_before() -> None:
    events = [*answered_turn("call_0", "inv-0"), *died_then_reused(answered=False)]
    repaired = repair_history(events, build_ledger(events), TEXTS)
    assert repaired.fallback is None and list(repaired.slots) == [4, 6]
    assert view_never_worse(events, repaired.events)


@pytest.mark.parametrize("traits", OLDER.values(), ids=OLDER.keys())
def test_older_builders_keep_it_irregular(traits: BuilderTraits) -> None:
    ledger = build_ledger(died_then_reused(answered=True), traits=traits)
    assert not ledger.open_calls or ledger.irregular


def test_two_agents_sharing_the_id_keep_it_irregular() -> None:
    events = died_then_reused(answered=True, author="helper")
    assert build_ledger(events, traits=NEWEST_BUILDER).irregular


def test_a_branch_before_the_answer_keeps_it_irregular() -> None:
    events = died_then_reused(answered=True)
    events.insert(4, model_event([call("other")], branch="root.sub"))
    assert REUSED in build_ledger(events, traits=NEWEST_BUILDER).shapes


@newest_builder_installed
def test_adks_builder_keeps_every_rule_on_the_view_once_the_id_is_answered() -> None:
    events = died_then_reused(answered=True)
    ledger = build_ledger(events)
    repaired = repair_history(events, ledger, TEXTS)
    assert repaired.fallback is None and list(repaired.slots) == [1]
    assert view_never_worse(events, repaired.events)


@newest_builder_installed
@requires(BUILDER_DROPS_UNANSWERED_CALLS, "drop_orphaned_function_calls")
def test_before_the_answer_adks_builder_would_get_one_id_twice_from_the_placeholders() -> None:
    events = died_then_reused(answered=False)
    unchecked = place_repairs(events, build_ledger(events), TEXTS)
    assert list(unchecked.slots) == [1, 3]
    assert not view_never_worse(events, unchecked.events)


def test_an_answer_event_is_asked_once_whether_the_builder_leaves_it_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Noting answers reads an event's parts once, not once per answer: a parallel
    turn of n calls answered in one event would otherwise cost n² part reads."""
    from adk_pairing.ledger import open_calls

    asked: list[int] = []
    real = open_calls.builder_leaves_out

    def counting(parts, names):  # type: ignore[no-untyped-def]
        asked.append(len(parts))
        return real(parts, names)

    monkeypatch.setattr(open_calls, "builder_leaves_out", counting)
    width = 50
    ids = [f"p{i}" for i in range(width)]
    events = [
        user_text(),
        model_event([call(call_id) for call_id in ids]),
        response_event([response(call_id) for call_id in ids]),
    ]
    ledger = PairingLedger(NEWEST_BUILDER)
    ledger.walk(events, 0)
    assert not ledger.open_calls
    assert asked == [width, width]  # the call event once (opening), the answer event once
