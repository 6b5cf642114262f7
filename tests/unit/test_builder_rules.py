"""The rules that follow older ADK request builders, with their traits given explicitly.

Each rule is checked under the traits that switch it on and under the newest
builder's, so these tests run (and can fail) on any installed ADK. The probe
that detects the installed ADK's traits is checked against ADK's own functions
in `test_probe_matches_what_the_installed_builder_does`.
"""

from __future__ import annotations

import pytest
from google.adk.events.event import Event
from google.genai import types

from adk_pairing import repaired_events
from adk_pairing.adk.builder import NEWEST_BUILDER, BuilderTraits, builder_traits
from adk_pairing.core.placeholders import PlaceholderTexts
from adk_pairing.core.repair import place_repairs
from adk_pairing.ledger import analyze, build_ledger
from adk_pairing.ledger import pairing as ledger_pairing

from .events import call, model_event, response, response_event, user_text

BY_LAST_RESPONSE = BuilderTraits(
    history_pairs_by_last_response=True,
    latest_response_walks_back=True,
    drops_orphan_responses=False,
)
WALKS_BACK = BuilderTraits(history_pairs_by_last_response=False, latest_response_walks_back=True)


def statuses(events: list[Event], traits: BuilderTraits) -> list[tuple[str, str]]:
    return [(c.key, c.status.value) for c in analyze(events, traits=traits).calls]


def placeholders(events: list[Event], traits: BuilderTraits) -> list[str | None]:
    """Where the rules under `traits` place placeholders. Without `adk_pairing.rules.builder_check`,
    which checks an irregular view against the *installed* ADK's builder
    (tests/unit/test_builder_check.py)."""
    ledger = build_ledger(events, traits=traits)
    repaired = place_repairs(events, ledger, PlaceholderTexts()).events
    return [
        part.function_response.id
        for event in repaired
        if event not in events
        for part in (event.content.parts if event.content else None) or ()
        if part.function_response is not None
    ]


def reused_id_answered_then_interrupted() -> list[Event]:
    return [
        user_text("1", invocation_id="inv-1"),
        model_event([call("call_1")], invocation_id="inv-1"),
        response_event([response("call_1")], invocation_id="inv-1"),
        user_text("2", invocation_id="inv-2"),
        model_event([call("call_1")], invocation_id="inv-2"),
        user_text("3", invocation_id="inv-3"),
    ]


def test_last_response_builders_answer_every_call_with_an_id_some_response_carries() -> None:
    events = reused_id_answered_then_interrupted()
    assert statuses(events, BY_LAST_RESPONSE) == [("call_1", "answered"), ("call_1", "answered")]
    assert placeholders(events, BY_LAST_RESPONSE) == []
    # The newest builder pairs the response with the first call only.
    assert statuses(events, NEWEST_BUILDER) == [("call_1", "answered"), ("call_1", "missing")]
    assert placeholders(events, NEWEST_BUILDER) == ["call_1"]


@pytest.mark.parametrize(
    ("traits", "status"),
    [
        pytest.param(BY_LAST_RESPONSE, "answered", id="adk<=2.6"),
        pytest.param(NEWEST_BUILDER, "missing", id="newest"),
    ],
)
def test_a_carried_forward_ledger_keeps_its_builders_adapter(
    traits: BuilderTraits, status: str
) -> None:
    """`carry_forward` copies the adapter's state: under ADK <= 2.6 the ids some
    response carries still answer a later call with the id."""
    events = reused_id_answered_then_interrupted()
    carried = build_ledger(events[:4], traits=traits).carry_forward()
    for index, event in enumerate(events[4:], start=4):
        carried.observe(event, index)
    assert [(c.key, c.status.value) for c in carried.calls] == [("call_1", status)]
    assert statuses(events, traits)[-1] == ("call_1", status)


def test_last_response_builders_answer_an_earlier_call_with_a_later_response() -> None:
    events = [
        user_text("1", invocation_id="inv-1"),
        model_event([call("call_1")], invocation_id="inv-1"),
        user_text("2", invocation_id="inv-2"),
        model_event([call("call_1")], invocation_id="inv-2"),
        response_event([response("call_1")], invocation_id="inv-2"),
    ]
    assert placeholders(events, BY_LAST_RESPONSE) == []
    assert placeholders(events, NEWEST_BUILDER) == ["call_1"]


def test_last_response_builders_never_answer_a_call_beside_results() -> None:
    # Their map puts a response only after an event without responses, so a
    # reused id's call in an event of results stays unanswered, before or
    # after another response with the id.
    events = [
        user_text("1", invocation_id="inv-1"),
        model_event([call("call_1")], invocation_id="inv-1"),
        response_event([response("call_1")], invocation_id="inv-1"),
        model_event([response("call_2"), call("call_1")], invocation_id="inv-2"),
        response_event([response("call_1")], invocation_id="inv-2"),
    ]
    assert statuses(events, BY_LAST_RESPONSE)[-1] == ("call_1", "missing")
    assert statuses(events[:4], BY_LAST_RESPONSE)[-1] == ("call_1", "missing")
    assert statuses(events, NEWEST_BUILDER)[-1] == ("call_1", "answered")


def mid_turn_parallel_call_reusing_an_id() -> list[Event]:
    return [
        user_text("1", invocation_id="inv-1"),
        model_event([call("call_1")], invocation_id="inv-1"),
        response_event([response("call_1")], invocation_id="inv-1"),
        user_text("2", invocation_id="inv-2"),
        model_event([call("call_1"), call("call_2", "job")], invocation_id="inv-2"),
        response_event([response("call_1")], invocation_id="inv-2"),
    ]


def test_walk_back_builders_withhold_a_placeholder_between_a_reusing_call_and_its_result() -> None:
    events = mid_turn_parallel_call_reusing_an_id()
    assert placeholders(events, WALKS_BACK) == []
    # Withheld, not answered: the call keeps its status.
    assert statuses(events, WALKS_BACK)[-1] == ("call_2", "missing")
    assert placeholders(events, NEWEST_BUILDER) == ["call_2"]


def test_a_withheld_placeholder_comes_back_once_the_result_is_no_longer_last() -> None:
    events = [*mid_turn_parallel_call_reusing_an_id(), model_event([types.Part(text="started")])]
    assert placeholders(events, WALKS_BACK) == ["call_2"]
    # An event without parts is not in the request: the result is still last.
    events[-1] = Event(author="assistant", invocation_id="inv-2")
    assert placeholders(events, WALKS_BACK) == []


def test_walk_back_builders_keep_the_placeholder_when_no_older_call_shares_an_id() -> None:
    events = mid_turn_parallel_call_reusing_an_id()
    del events[:3]  # no earlier call_1
    assert placeholders(events, WALKS_BACK) == ["call_2"]


def test_a_withheld_call_answered_later_is_answered() -> None:
    events = [*mid_turn_parallel_call_reusing_an_id(), response_event([response("call_2", "job")])]
    assert statuses(events, WALKS_BACK)[-1] == ("call_2", "answered")


def test_observing_event_by_event_withholds_as_the_walk_does() -> None:
    events = mid_turn_parallel_call_reusing_an_id()
    from adk_pairing.ledger import PairingLedger

    ledger = PairingLedger(WALKS_BACK)
    observed = [ledger.observe(event, index) for index, event in enumerate(events)]
    assert not ledger.open_calls
    # The last event settles call_1 and withholds call_2: the view drops the placeholder.
    assert [(c.call_id, c.withheld) for c in observed[-1].settled] == [
        ("call_1", False),
        ("call_2", True),
    ]
    assert ledger.withholding
    resumed = ledger.carry_forward()
    assert resumed.withholding
    resumed.observe(response_event([response("call_2", "job")]), len(events))
    assert [c.status.value for c in resumed.calls] == ["answered"]
    assert not resumed.withholding and not resumed.open_calls


def test_a_call_sharing_its_part_with_text_gets_no_placeholder() -> None:
    combined = types.Part(
        text="let me look", function_call=types.FunctionCall(id="call_1", name="lookup")
    )
    events = [user_text(), model_event([combined]), user_text("next")]
    assert analyze(events).calls == ()
    assert repaired_events(events) == events


def test_probe_matches_what_the_installed_builder_does() -> None:
    """The traits are read from ADK's own functions; check them against the full builder."""
    from tests.adk_request import build_request_contents

    traits = builder_traits()
    events = reused_id_answered_then_interrupted()[:-1]
    events.append(user_text("3", invocation_id="inv-3"))
    contents = build_request_contents(events)
    first_call = next(i for i, c in enumerate(contents) if c.parts and c.parts[0].function_call)
    after_first = contents[first_call + 1].parts[0].function_response
    assert after_first is not None
    assert after_first.id == "call_1"
    walked = mid_turn_parallel_call_reusing_an_id()
    walked.insert(-1, response_event([response("call_2", "job")]))
    try:
        build_request_contents(walked)
        raised = False
    except ValueError:
        raised = True
    assert raised == traits.latest_response_walks_back


def test_withholding_a_call_withholds_open_calls_elsewhere_with_its_id() -> None:
    """ADK >= 2.10 drops a call whose id no response carries; a placeholder elsewhere would not."""
    events = [
        user_text("1", invocation_id="inv-1"),
        model_event([call("call_2")], invocation_id="inv-1"),
        model_event([call(None), call("call_2")], invocation_id="inv-1"),
        response_event([response(None)], invocation_id="inv-1"),
    ]
    assert placeholders(events, WALKS_BACK) == []
    assert placeholders(events, NEWEST_BUILDER) == ["call_2", "call_2"]
    events.append(model_event([types.Part(text="ok")], invocation_id="inv-1"))
    assert placeholders(events, WALKS_BACK) == ["call_2", "call_2"]


async def test_view_kept_by_appends_equals_a_fresh_read_through_withholding_and_release(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The release is not observed: a view kept by appends must rebuild, and match a fresh read."""
    from google.adk.sessions.in_memory_session_service import InMemorySessionService

    from adk_pairing import PairingSessionService, is_synthetic

    monkeypatch.setattr(ledger_pairing, "builder_traits", lambda: WALKS_BACK)
    for cache_size in (0, 16):
        service = PairingSessionService(InMemorySessionService(), analysis_cache_size=cache_size)
        view = await service.create_session(app_name="app", user_id="u", session_id="s")
        history = [
            *mid_turn_parallel_call_reusing_an_id(),
            Event(author="assistant", invocation_id="inv-2"),  # no content: not in a request
            model_event([types.Part(text="started")], invocation_id="inv-2"),
            response_event([response("call_2", "job")], invocation_id="inv-3"),
        ]
        seen_synthetic = []
        for event in history:
            await service.append_event(view, event)
            fresh = await service.get_session(app_name="app", user_id="u", session_id="s")
            assert [e.id for e in view.events] == [e.id for e in fresh.events]
            seen_synthetic.append(sum(map(is_synthetic, view.events)))
        # Placeholders for open calls; call_2 withheld while call_1's result is last
        # (also across the content-less event), back after the model's text, gone once answered.
        assert seen_synthetic == [0, 1, 0, 0, 1, 0, 0, 1, 0]


def test_an_orphan_result_after_the_result_does_not_end_the_hazard_where_adk_drops_it() -> None:
    """ADK 2.9 - 2.10 drop a result no call has the id of before looking for the last event."""
    events = [
        *mid_turn_parallel_call_reusing_an_id(),
        response_event([response("never_called")], invocation_id="inv-2"),
    ]
    assert placeholders(events, WALKS_BACK) == []
    # ADK <= 2.6 keeps it (and raises on it, stored or not): the hazard is over.
    assert placeholders(
        events, BY_LAST_RESPONSE._replace(history_pairs_by_last_response=False)
    ) == ["call_2"]


def results_of_two_call_events_after_a_parallel_call() -> list[Event]:
    """The last event answers calls of two events; the nearer one keeps a call open."""
    return [
        user_text("1", invocation_id="inv-1"),
        model_event([call("call_1")], invocation_id="inv-1"),
        model_event([call("call_2"), call("call_3", "job")], invocation_id="inv-1"),
        response_event([response("call_1"), response("call_2")], invocation_id="inv-1"),
    ]


def test_walk_back_builders_withhold_a_placeholder_before_results_of_two_call_events() -> None:
    """ADK's walk back raises when the trailing results answer calls of two events."""
    events = results_of_two_call_events_after_a_parallel_call()
    assert placeholders(events, WALKS_BACK) == []
    assert statuses(events, WALKS_BACK)[-1] == ("call_3", "missing")
    assert placeholders(events, NEWEST_BUILDER) == ["call_3"]
    # Once the results are no longer last, the placeholder is safe again.
    events.append(model_event([types.Part(text="done")], invocation_id="inv-1"))
    assert placeholders(events, WALKS_BACK) == ["call_3"]


def test_the_installed_builder_takes_the_view_when_one_branch_answers_two_call_events() -> None:
    """A result event of one branch answering calls of two events, one of them another branch's.

    The root agent's request shows every branch: there the stored history is
    the walk-back builders' plain case (the last call event holds one of the
    results), which a placeholder before the results would turn into a walk
    back that raises. Found by the plugin fuzz on google-adk 1.20.0.
    """
    from tests.adk_request import build_request_contents

    in_branch_b = model_event([call("c2")], invocation_id="inv-0")
    in_branch_b.branch = "fan.b"
    answers = response_event([response("c2"), response("c1")], invocation_id="inv-0", author="user")
    answers.branch = "fan.a"
    events = [model_event([call("c1")], invocation_id="inv-0"), in_branch_b, answers]
    build_request_contents(events)  # the stored history builds on every release
    build_request_contents(repaired_events(events))


def test_left_out_call_names_match_what_the_installed_builder_leaves_out() -> None:
    """An event asking the user for input is sent or left out, as the probe says."""
    from adk_pairing.adk import left_out_call_names
    from tests.adk_request import build_request_contents

    asks = model_event([call(None), call("c3", "adk_request_input")], invocation_id="inv-1")
    contents = build_request_contents([user_text("1"), asks, user_text("2")])
    sent_names = {
        part.function_call.name for c in contents for part in c.parts or () if part.function_call
    }
    assert ("adk_request_input" in left_out_call_names()) == (not sent_names)
    # Where it is left out, no placeholder answers the call beside it.
    events = [user_text("1"), asks, model_event([types.Part(text="ok")])]
    placed = [p for p in placeholders(events, builder_traits()) if p is None]
    assert bool(placed) == ("adk_request_input" not in left_out_call_names())
