"""Where placeholders go when later events answered some of a call event's calls.

`adk_pairing.ledger.placement` says where, as a rule; ADK's own request
builder, the installed release's, is the oracle: the view it is placed in is
served whole (no `Fallback`), and the request ADK builds from it answers every
call in call order, which is Gemini's rule and the strictest of them.
"""

from __future__ import annotations

import pytest
from google.adk.events.event import Event

from adk_pairing.adk.builder import NEWEST_BUILDER, BuilderTraits
from adk_pairing.core.placeholders import PlaceholderTexts
from adk_pairing.core.repair import place_repairs, repair_history
from adk_pairing.ledger import build_ledger
from adk_pairing.rules.checks import violations_of
from adk_pairing.rules.provider_rules import PROVIDER_RULES

from .events import call, model_event, response, response_event, user_text
from .test_builder_rules import BY_LAST_RESPONSE, WALKS_BACK
from .test_properties import adk_request_contents

TEXTS = PlaceholderTexts()
TRAITS = {"newest": NEWEST_BUILDER, "walks back": WALKS_BACK, "by last response": BY_LAST_RESPONSE}


def parallel_answered_one_event_each(width: int, answered: int, *, then_text: bool) -> list[Event]:
    """A model event with `width` parallel calls; the first `answered` answered one event each."""
    ids = [f"call_{n}" for n in range(width)]
    events = [user_text("go"), model_event([call(i) for i in ids])]
    events += [response_event([response(i)]) for i in ids[:answered]]
    if then_text:
        events.append(user_text("what happened?", invocation_id="inv-2"))
    return events


def anchor_of_the_call_event(events: list[Event], traits: BuilderTraits) -> int | None:
    ledger = build_ledger(events, traits=traits)
    (slot,) = place_repairs(events, ledger, TEXTS).slots.values()
    return slot.anchor


@pytest.mark.parametrize("traits", TRAITS.values(), ids=TRAITS.keys())
@pytest.mark.parametrize("then_text", [True, False], ids=["then text", "last"])
def test_placeholders_go_after_a_run_of_events_each_answering_the_call_event(
    traits: BuilderTraits, then_text: bool
) -> None:
    events = parallel_answered_one_event_each(5, 3, then_text=then_text)
    assert anchor_of_the_call_event(events, traits) == 4  # the third answer's event


@pytest.mark.parametrize("then_text", [True, False], ids=["then text", "last"])
def test_adks_builder_answers_every_call_in_order_from_that_view(then_text: bool) -> None:
    events = parallel_answered_one_event_each(5, 3, then_text=then_text)
    repaired = repair_history(events, build_ledger(events), TEXTS)
    assert repaired.fallback is None and list(repaired.slots) == [1]
    contents = adk_request_contents(repaired.events)
    for name in ("anthropic", "gemini"):
        assert violations_of(PROVIDER_RULES[name], contents) == [], name


def test_a_run_broken_by_another_event_takes_no_placeholders() -> None:
    events = parallel_answered_one_event_each(5, 2, then_text=True)
    events.append(response_event([response("call_2")]))
    assert anchor_of_the_call_event(events, NEWEST_BUILDER) is None


def test_an_event_of_the_run_with_other_parts_ends_it() -> None:
    events = parallel_answered_one_event_each(5, 2, then_text=False)
    events.append(response_event([response("call_2"), response("other")]))
    assert anchor_of_the_call_event(events, NEWEST_BUILDER) is None


def test_answers_not_all_before_the_open_calls_take_no_placeholders() -> None:
    events = parallel_answered_one_event_each(5, 0, then_text=False)
    events += [response_event([response("call_0")]), response_event([response("call_3")])]
    assert anchor_of_the_call_event(events, NEWEST_BUILDER) is None
