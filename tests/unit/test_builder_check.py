"""The view's proof at the request (`adk_pairing.rules.builder_check`), on the installed google-adk.

What it must give: a view of an irregular history is served only when ADK's
own request builder, run on it, keeps valid every request it keeps valid on
the stored history; a regular history is never checked; the pairing rule it
checks with agrees with `adk_pairing.rules.checks` (ADK's real Anthropic converter);
and running ADK's builder here adds nothing to ADK's logs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from google.adk.events.event import Event
from google.genai import types

from adk_pairing import is_synthetic
from adk_pairing.adk.builder import NEWEST_BUILDER, BuilderTraits
from adk_pairing.core.placeholders import PlaceholderTexts
from adk_pairing.core.repair import Fallback, RepairedHistory, place_repairs, repair_history
from adk_pairing.ledger import analyze, build_ledger
from adk_pairing.rules import builder_check
from adk_pairing.rules.builder_check import (
    rule_holds,
    view_never_worse,
)
from adk_pairing.rules.checks import (
    anthropic_pairing_violations,
    anthropic_request,
    anthropic_violations,
    violations_of,
)
from adk_pairing.rules.provider_rules import (
    PROVIDER_RULES,
    anthropic_pairing,
    ids_merged_on_the_wire,
    unique_tool_use_ids,
)
from adk_pairing.rules.request_form import request_of_contents
from adk_pairing.wire import IrregularShape
from tests.adk_features import BUILDER_DROPS_UNANSWERED_CALLS, requires
from tests.reliability.histories import HistoryGenerator, describe

from .events import AGENT, call, model_event, response, response_event, user_text
from .test_properties import adk_request_contents

TEXTS = PlaceholderTexts()


def _valid(events: list[Event], agent: str = AGENT) -> bool | None:
    """Anthropic's whole rule on ADK's request for `agent` (real converter); None if ADK raised."""
    from google.adk.flows.llm_flows.contents import _get_contents

    try:
        contents = (
            adk_request_contents(events)
            if agent == AGENT
            else _get_contents(None, list(events), agent)
        )
    except Exception:
        return None
    return not anthropic_violations(contents)


def _placed(events: list[Event]) -> list[Event]:
    """The view as it would be without the proof: a placeholder after every open call."""
    return place_repairs(events, build_ledger(events), TEXTS).events


def _idless_results_after_a_placeholder() -> list[Event]:
    """Two id-less calls, and one event answering the second of them twice.

    The stored request pairs by position (two id-less calls, two id-less
    results). A placeholder for the first call would be a result event of its
    own, right after the call event, and ADK merges a call event's result
    events keyed by result id (``merge_function_response_events``, on every
    release from 1.20 to 2.13): the three id-less results share the key
    ``None`` and collapse into one.
    """
    return [
        user_text(),
        model_event([call(None, "lookup"), call(None, "fetch")]),
        response_event([response(None, "fetch"), response(None, "fetch")]),
    ]


def test_a_view_is_served_only_where_adks_request_from_it_is_never_worse() -> None:
    """Seeded histories, most of them irregular: the served events never break a valid request.

    The same claim as the reliability fuzz run, on fewer histories, so that
    CI checks it on every google-adk release it tests.
    """
    generator = HistoryGenerator(2)
    unproven = irregular = partly = 0
    for _ in range(600):
        events = generator.history()
        ledger = build_ledger(events)
        repaired = repair_history(events, ledger, TEXTS)
        irregular += ledger.irregular
        unproven += repaired.serves_some_as_stored
        if repaired.serves_some_as_stored:
            _assert_served_as_stored(events, repaired)
            partly += bool(repaired.slots)
        for agent in {AGENT, "helper"}:
            if _valid(events, agent):
                assert _valid(repaired.events, agent), describe(events)
    assert irregular > 100  # the generator does reach the proof
    print(f"{irregular} irregular histories, {unproven} with call events served as stored")
    print(f"{partly} of them keep the placeholders of other call events")


def _assert_served_as_stored(events: list[Event], repaired: RepairedHistory) -> None:
    """The call events `served_as_stored` are the stored objects, with no placeholder;
    every other call event with open calls keeps its repair."""
    served = set(map(id, repaired.events))
    synthetic_for = {
        e.custom_metadata["adk_pairing"]["call_event_id"]
        for e in repaired.events
        if is_synthetic(e)
    }
    assert repaired.served_as_stored
    for index in repaired.served_as_stored:
        assert id(events[index]) in served and index not in repaired.slots
        assert events[index].id not in synthetic_for
    assert [e.id for e in repaired.events if not is_synthetic(e)] == [e.id for e in events]
    assert len(synthetic_for) == len(repaired.slots)


def test_placeholders_an_id_keyed_merge_would_collapse_are_not_served() -> None:
    events = _idless_results_after_a_placeholder()
    ledger = build_ledger(events)
    assert ledger.irregular  # an id-less result no call waits for
    assert _valid(events) and not _valid(_placed(events))
    repaired = repair_history(events, ledger, TEXTS)
    assert repaired.serves_some_as_stored
    assert repaired.events == events and not any(is_synthetic(e) for e in repaired.events)


@pytest.mark.parametrize(
    ("shape", "events"),
    [
        (
            IrregularShape.CALL_ID_TWICE_IN_ONE_EVENT,
            [model_event([call("c1"), call("c1")])],
        ),
        (
            IrregularShape.CALL_ID_REUSED_WHILE_OPEN,
            [model_event([call("c1")]), user_text(), model_event([call("c1")])],
        ),
        (
            IrregularShape.NOT_SENT_AS_A_CALL,
            [model_event([call("c1").model_copy(update={"text": "and a text"})])],
        ),
        (
            IrregularShape.IDLESS_CALLS_IN_ONE_EVENT,
            [model_event([call(None), call(None, "fetch")])],
        ),
        (
            IrregularShape.ID_ANSWERED_TWICE_IN_ONE_EVENT,
            [model_event([call("c1")]), response_event([response("c1"), response("c1")])],
        ),
        (
            IrregularShape.CALLS_AND_RESULTS_IN_ONE_EVENT,
            [model_event([call("c1")]), model_event([call("c2"), response("c1")])],
        ),
        (
            IrregularShape.ANSWER_FROM_ANOTHER_AGENT,
            [
                model_event([call("c1")], author="helper"),
                response_event([response("c1")], author=AGENT),
            ],
        ),
        (
            IrregularShape.CALL_BESIDE_AN_ADK_REQUEST,
            [model_event([call("c1"), call("c2", "adk_request_confirmation")])],
        ),
        (
            IrregularShape.IDLESS_RESULT_NOTHING_WAITS_FOR,
            [user_text(), response_event([response(None)])],
        ),
    ],
)
def test_each_irregular_shape_is_named_on_the_ledger_and_the_report(
    shape: IrregularShape, events: list[Event]
) -> None:
    ledger = build_ledger(events, traits=NEWEST_BUILDER)
    assert ledger.irregular and shape in ledger.shapes, ledger.shapes
    assert shape in analyze(events, traits=NEWEST_BUILDER).shapes


@pytest.mark.parametrize(
    ("shape", "events"),
    [
        (
            "an interrupted call",
            [user_text(), model_event([call("c1")]), user_text("again")],
        ),
        (
            "an id reused after its call was answered (Gemini's call_1 on every turn)",
            [
                model_event([call("call_1")]),
                response_event([response("call_1")]),
                model_event([call("call_1")]),
            ],
        ),
        (
            "a long-running tool's progress updates under one id",
            [
                model_event([call("c1")], long_running=["c1"]),
                response_event([response("c1")]),
                response_event([response("c1")]),
            ],
        ),
        (
            "an id-less call answered (a release before ADK gave every call an id)",
            [model_event([call(None)]), response_event([response(None)])],
        ),
    ],
)
def test_histories_adk_writes_are_regular_and_never_run_the_builder(
    shape: str, events: list[Event], monkeypatch: pytest.MonkeyPatch
) -> None:
    def must_not_run(*args: object) -> bool:
        raise AssertionError("the proof ran on a regular history")

    monkeypatch.setattr("adk_pairing.core.repair.view_never_worse", must_not_run)
    ledger = build_ledger(events)
    assert not ledger.irregular, shape
    repair_history(events, ledger, TEXTS)


def _adk_requests(seed: int) -> Iterator[tuple[list[Event], list[types.Content]]]:
    """ADK's request from 400 seeded stored histories and from their unchecked views."""
    generator = HistoryGenerator(seed)
    for _ in range(400):
        events = generator.history()
        for history in (events, _placed(events)):
            try:
                contents = adk_request_contents(history)
            except Exception:
                continue
            yield history, contents


def pairing_holds(contents: list[types.Content]) -> bool:
    """Anthropic's pairing rule on `contents` as `wire` says the converter sends them."""
    return not anthropic_pairing(request_of_contents(contents))


def unique_call_ids_on_the_wire(contents: list[types.Content]) -> bool:
    """Anthropic's unique ids on `contents` as `wire` says the converter sends them."""
    return not unique_tool_use_ids(request_of_contents(contents))


def anthropic_holds(contents: list[types.Content]) -> bool:
    return rule_holds(PROVIDER_RULES["anthropic"], contents)


def test_the_pairing_rule_agrees_with_the_check_on_adks_real_converter() -> None:
    """The pairing rule on the contents, on ADK's requests from stored histories and views."""
    compared = failing = 0
    for history, contents in _adk_requests(seed=7):
        expected = not anthropic_pairing_violations(contents)
        assert pairing_holds(contents) == expected, describe(history)
        compared += 1
        failing += not expected
    assert compared > 600 and failing > 20  # both verdicts are exercised


def test_the_id_rule_without_the_converter_agrees_with_adks_real_converter() -> None:
    """What the check applies when ``anthropic`` is not installed, against ADK's converter.

    Less what only ADK's id sanitizer does (two distinct ids sent as one fallback,
    `adk_pairing.rules.provider_rules.ids_merged_on_the_wire`): without the ``anthropic``
    package there is no such sanitizer on the wire.
    """
    compared = duplicated = 0
    for history, contents in _adk_requests(seed=11):
        violations = anthropic_violations(contents)
        request = anthropic_request(contents)
        assert not isinstance(request, str)
        merged = ids_merged_on_the_wire(request)
        fallback = pairing_holds(contents) and unique_call_ids_on_the_wire(contents)
        assert fallback == (not [v for v in violations if v not in merged]), describe(history)
        assert anthropic_holds(contents) == (not violations)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(builder_check, "anthropic_converter_installed", lambda: False)
            assert anthropic_holds(contents) == fallback, describe(history)
        compared += 1
        duplicated += not unique_call_ids_on_the_wire(contents)
    assert compared > 600 and duplicated > 5  # both verdicts are exercised


def test_two_calls_sharing_a_non_ascii_id_are_one_tool_use_id_twice_on_the_wire() -> None:
    """ADK's Anthropic converter maps both ids to one fallback id: Anthropic refuses it."""
    shared = "réf 1"
    events = [
        user_text(),
        model_event([call(shared), call(shared)]),
        response_event([response(shared), response(shared)]),
    ]
    contents = adk_request_contents(events)
    assert pairing_holds(contents)  # every tool_use is answered...
    assert not unique_call_ids_on_the_wire(contents)  # ...but one id is used twice
    assert not anthropic_holds(contents)


def _reused_id_answered_out_of_the_calls_sight() -> list[Event]:
    """A call reusing an id whose response sits in a branch the call's is not shown.

    The later call event's placeholders, one event, are the last response
    with that id: a builder that pairs by the last response puts them after
    the earlier call too, for an agent above both branches (the fuzz run's
    history, reduced).
    """
    return [
        model_event([call("x")]),
        response_event([response("x")], branch="fan.a"),
        model_event([call("c1", "fetch"), call("x"), call("c2")], branch="fan"),
    ]


def test_an_id_answered_out_of_sight_is_irregular_where_the_last_response_pairs() -> None:
    events = _reused_id_answered_out_of_the_calls_sight()
    pairs_by_last_response = BuilderTraits(
        history_pairs_by_last_response=True, latest_response_walks_back=True
    )
    assert (
        IrregularShape.CALL_ID_ANSWERED_OUT_OF_SIGHT
        in build_ledger(events, traits=pairs_by_last_response).shapes
    )
    assert not build_ledger(events, traits=NEWEST_BUILDER).irregular


def test_a_reused_id_answered_out_of_the_calls_sight_never_breaks_openais_rule() -> None:
    """ADK's LiteLlm answers the calls the stored request leaves open (from 1.39.1), so
    that request keeps OpenAI's rule; the view's must too, for every agent."""
    pytest.importorskip("litellm")  # the view is held to OpenAI's rule once it is imported
    from google.adk.flows.llm_flows.contents import _get_contents

    events = _reused_id_answered_out_of_the_calls_sight()
    view = repair_history(events, build_ledger(events), TEXTS).events
    for branch in (None, "fan"):
        stored_request = _get_contents(branch, list(events), AGENT)
        if not violations_of("openai_chat", stored_request):
            view_request = _get_contents(branch, list(view), AGENT)
            assert not violations_of("openai_chat", view_request), branch


def test_proving_adds_nothing_to_adks_logs_and_leaves_them_on_otherwise(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """ADK's builder logs what it drops; it logs it again for the real request."""
    # An orphan result (ADK drops it, and says so on releases that log it).
    events = [*_idless_results_after_a_placeholder(), response_event([response("nobody")])]
    builder_logger = logging.getLogger("google_adk.google.adk.flows.llm_flows.contents")
    with caplog.at_level(logging.DEBUG, logger="google_adk"):
        view_never_worse(events, _placed(events))
        assert not [r for r in caplog.records if r.name.startswith("google_adk")]
        builder_logger.warning("ADK's own build, outside the proof")
        assert [r.getMessage() for r in caplog.records] == ["ADK's own build, outside the proof"]


def test_without_adks_builder_where_we_look_nothing_is_proven(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A release that moved ``_get_contents``: irregular views are served as stored, no error."""
    from adk_pairing.rules import builder_check

    def moved() -> None:
        raise AttributeError("module 'contents' has no attribute '_get_contents'")

    monkeypatch.setattr(builder_check, "_request_builder", moved)
    events = _idless_results_after_a_placeholder()
    assert not view_never_worse(events, _placed(events))
    repaired = repair_history(events, build_ledger(events), TEXTS)
    assert repaired.serves_some_as_stored and repaired.events == events


def _unprovable_spot_then_an_interrupted_call() -> list[Event]:
    """Issue 23's parallel turn (the weather answered beside a text, the time call never
    returned: no placement gives call order), then a later turn whose call was
    interrupted: an ordinary call, far from that spot."""
    return [
        user_text("weather and time?"),
        model_event([call("w", "get_weather"), call("t", "get_time")]),
        response_event([response("w", "get_weather"), types.Part(text="sunny so far")]),
        user_text("and in Oslo?"),
        model_event([call("c9")]),
        user_text("still there?"),
    ]


def test_only_the_call_event_the_builder_would_reorder_is_served_as_stored() -> None:
    """Issue 23, item 8: one unprovable spot no longer sends the whole session as stored.

    The ledger decides it from the builder's traits (`PairingLedger.serves_as_stored`),
    without running the builder; ADK's own builder is the oracle here. Where it
    accepts the whole view (a builder that keeps the unanswered call in the
    stored request, so it is invalid already), every call event is repaired.
    """
    events = _unprovable_spot_then_an_interrupted_call()
    ledger = build_ledger(events)
    assert ledger.placement(1) is None
    repaired = repair_history(events, ledger, TEXTS)
    if view_never_worse(events, _placed(events)):
        assert not repaired.serves_some_as_stored and list(repaired.slots) == [1, 4]
        return
    assert repaired.fallback is Fallback.ANSWERS_OUT_OF_ORDER
    assert repaired.served_as_stored == (1,)
    assert list(repaired.slots) == [4]  # the interrupted call keeps its placeholder
    _assert_served_as_stored(events, repaired)
    assert view_never_worse(events, repaired.events)


@requires(BUILDER_DROPS_UNANSWERED_CALLS, "drop of unanswered calls in its request builder")
def test_a_builder_that_drops_unanswered_calls_rejects_that_spot() -> None:
    """So the partial fallback above is exercised where ADK drops unanswered calls."""
    events = _unprovable_spot_then_an_interrupted_call()
    assert not view_never_worse(events, _placed(events))


def test_past_the_check_budget_the_call_events_not_yet_proven_are_served_as_stored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The search for provable call events is bounded; what it has not proven goes as stored."""
    from adk_pairing.core import repair

    # One id twice in one event makes the history irregular: its view is checked,
    # but for the interrupted call with an id nothing else holds (`placeable_apart`).
    events = [
        model_event([call("twice"), call("twice")]),
        response_event([response("twice"), response("twice")]),
        *_unprovable_spot_then_an_interrupted_call(),
        model_event([call("twice")]),
        user_text("and that one?"),
    ]
    ledger = build_ledger(events)
    assert ledger.irregular and ledger.placeable_apart(events) == {6}
    monkeypatch.setattr(repair, "MOST_PARTIAL_CHECKS", 0)
    monkeypatch.setattr(repair, "view_never_worse", lambda *args, **kwargs: False)
    repaired = repair_history(events, ledger, TEXTS)
    assert repaired.fallback is Fallback.UNPROVEN
    # Up to 2.6 the reused id's call gets no placeholder at all (a result carries its id).
    proven = tuple(index for index in ledger.open_calls if index != 6)
    assert 3 in proven and repaired.served_as_stored == proven
    assert list(repaired.slots) == [6]


def test_a_view_never_pushes_a_tools_real_result_out_of_the_request() -> None:
    """A reused id's placeholder must not cost the model a result the stored request shows.

    Fuzz-found (seed 1313): the input request and the tool call share an id in
    two branches, and one event answers both. ADK pairs results by id alone, so
    a placeholder there can take the tool's real result out of the request
    while every call stays in it, answered by the other function's result.
    """
    from adk_pairing.adk.builder import contents_builder
    from adk_pairing.rules.builder_check import results_carried

    events = [
        model_event([call("ïd 1", "adk_request_input")], branch="fan"),
        model_event([call("ïd 1", "fetch")], branch="fan.a"),
        response_event(
            [response("ïd 1", "fetch"), response("ïd 1", "adk_request_input")],
            branch="fan",
            invocation_id="inv-2",
        ),
    ]
    view = repair_history(events, build_ledger(events), TEXTS).events
    build = contents_builder()
    for branch in (None, "fan", "fan.a"):
        try:
            stored_request = build(list(events), AGENT, branch)
        except Exception:  # an older builder refuses the stored history: nothing to keep
            continue
        assert results_carried(stored_request) <= results_carried(build(view, AGENT, branch))


def test_idless_calls_a_stored_result_answers_go_as_stored_without_the_builder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ADK keeps one event of id-less results per call event: a placeholder event cannot join.

    The ledger knows it (`PairingLedger.collapses_idless_answers`), so ADK's
    builder is not run for it; run here, it rejects the placed view.
    """
    from adk_pairing.core import repair

    events = [
        user_text("three lookups"),
        model_event([call(None), call(None), call(None)]),
        response_event([response(None), response(None)]),
        user_text("and the third?"),
    ]
    ledger = build_ledger(events)
    assert IrregularShape.IDLESS_CALLS_IN_ONE_EVENT in ledger.shapes

    def not_asked(*args: object, **kwargs: object) -> bool:
        raise AssertionError("ADK's builder was asked")

    with monkeypatch.context() as patched:
        patched.setattr(repair, "view_never_worse", not_asked)
        repaired = repair_history(events, ledger, TEXTS)
    assert repaired.fallback is Fallback.UNPROVEN and repaired.served_as_stored == (1,)
    assert repaired.events == events and not repaired.slots
    assert not view_never_worse(events, _placed(events))


def test_a_new_call_in_an_irregular_history_is_answered_without_the_builder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The call a turn appends, with an id nothing else holds, is paired by ADK with its
    placeholders alone (`PairingLedger.placeable_apart`); run here, ADK's builder agrees."""
    from adk_pairing.core import repair

    events = [
        user_text("twice?"),
        model_event([call("twice"), call("twice")]),
        response_event([response("twice"), response("twice")]),
        user_text("next"),
        model_event([call("fresh_1"), call("fresh_2", "fetch")]),
    ]
    ledger = build_ledger(events)
    assert ledger.irregular and ledger.placeable_apart(events) == {4}

    def not_asked(*args: object, **kwargs: object) -> bool:
        raise AssertionError("ADK's builder was asked")

    with monkeypatch.context() as patched:
        patched.setattr(repair, "view_never_worse", not_asked)
        repaired = repair_history(events, ledger, TEXTS)
    assert list(repaired.slots) == [4] and not repaired.serves_some_as_stored
    assert view_never_worse(events, repaired.events)
    # An id another event carries is left to the check.
    reused = [*events[:4], model_event([call("fresh_1"), call("twice")])]
    assert build_ledger(reused).placeable_apart(reused) == set()
