"""The ledger's classification of calls: answered, pending, missing."""

from __future__ import annotations

import pytest

from adk_pairing.adk.builder import NEWEST_BUILDER
from adk_pairing.ledger import CallStatus, PairingLedger, analyze, live_event_mask
from adk_pairing.ledger import pairing as ledger_pairing

from .events import call, model_event, response, response_event, rewind_event, user_text


@pytest.fixture(autouse=True)
def newest_builder(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests state the newest request builder's rules; older ones: test_builder_rules."""
    monkeypatch.setattr(ledger_pairing, "builder_traits", lambda: NEWEST_BUILDER)


def statuses(events: list) -> list[tuple[str, str]]:
    return [(c.key, c.status.value) for c in analyze(events).calls]


def test_call_answered_by_a_later_response_with_its_id_is_answered() -> None:
    events = [user_text(), model_event([call("c1")]), response_event([response("c1")])]
    assert statuses(events) == [("c1", "answered")]
    assert analyze(events).is_healthy


def test_call_with_no_later_response_is_missing() -> None:
    events = [user_text(), model_event([call("c1")]), user_text("next")]
    assert statuses(events) == [("c1", "missing")]
    assert not analyze(events).is_healthy


def test_response_in_the_same_event_does_not_answer_the_call() -> None:
    events = [model_event([call("c1"), response("c1")])]
    assert statuses(events) == [("c1", "missing")]


def test_response_earlier_than_the_call_does_not_answer_it() -> None:
    events = [response_event([response("c1")]), model_event([call("c1")])]
    assert statuses(events) == [("c1", "missing")]


def test_reused_id_response_answers_only_the_newest_preceding_call() -> None:
    events = [
        model_event([call("call_1")], invocation_id="inv-1"),
        user_text("turn 2", invocation_id="inv-2"),
        model_event([call("call_1")], invocation_id="inv-2"),
        response_event([response("call_1")], invocation_id="inv-2"),
    ]
    assert statuses(events) == [("call_1", "missing"), ("call_1", "answered")]


def test_second_response_with_a_reused_id_does_not_reach_back_to_an_older_call() -> None:
    events = [
        model_event([call("call_1")]),
        model_event([call("call_1")]),
        response_event([response("call_1")]),
        response_event([response("call_1")]),
    ]
    assert statuses(events) == [("call_1", "missing"), ("call_1", "answered")]


def test_idless_calls_are_answered_by_idless_responses_of_the_same_name_in_order() -> None:
    events = [
        model_event([call(None, "search"), call(None, "search"), call(None, "fetch")]),
        response_event([response(None, "search")]),
    ]
    report = analyze(events)
    assert [(c.part_index, c.status) for c in report.calls] == [
        (0, CallStatus.ANSWERED),
        (1, CallStatus.MISSING),
        (2, CallStatus.MISSING),
    ]


def test_idless_response_belongs_to_the_newest_event_with_such_a_call() -> None:
    events = [
        model_event([call(None, "search")], invocation_id="inv-1"),
        user_text("again", invocation_id="inv-2"),
        model_event([call(None, "search")], invocation_id="inv-2"),
        response_event([response(None, "search")], invocation_id="inv-2"),
    ]
    assert [c.status.value for c in analyze(events).calls] == ["missing", "answered"]


def test_extra_idless_response_does_not_reach_back_to_an_older_open_call() -> None:
    events = [
        model_event([call(None, "search")]),
        model_event([call(None, "search")]),
        response_event([response(None, "search")]),
        response_event([response(None, "search")]),
    ]
    assert [c.status.value for c in analyze(events).calls] == ["missing", "answered"]


def test_response_with_an_id_does_not_answer_an_idless_call() -> None:
    events = [model_event([call(None, "search")]), response_event([response("x", "search")])]
    assert statuses(events) == [("search", "missing")]


def test_long_running_call_without_response_is_pending() -> None:
    events = [model_event([call("lro-1"), call("c2")], long_running=["lro-1"])]
    assert statuses(events) == [("lro-1", "pending"), ("c2", "missing")]


def test_confirmation_credential_and_input_requests_are_pending_by_name() -> None:
    events = [
        model_event(
            [
                call("a", "adk_request_confirmation"),
                call("b", "adk_request_credential"),
                call("c", "adk_request_input"),
            ]
        )
    ]
    assert [s for _, s in statuses(events)] == ["pending"] * 3


def test_answered_long_running_call_is_answered_not_pending() -> None:
    events = [
        model_event([call("lro-1")], long_running=["lro-1"]),
        user_text("meanwhile"),
        response_event([response("lro-1")], author="user"),
    ]
    assert statuses(events) == [("lro-1", "answered")]


def test_response_for_an_unknown_id_changes_nothing() -> None:
    events = [model_event([call("c1")]), response_event([response("other")])]
    assert statuses(events) == [("c1", "missing")]


def test_rewind_annuls_the_response_so_the_call_is_missing_again() -> None:
    events = [
        model_event([call("c1")], invocation_id="inv-1"),
        response_event([response("c1")], invocation_id="inv-2"),
        rewind_event("inv-2"),
    ]
    assert live_event_mask(events) == [True, False, False]
    assert statuses(events) == [("c1", "missing")]


def test_calls_annulled_by_a_rewind_need_no_answer() -> None:
    events = [
        user_text("one", invocation_id="inv-1"),
        model_event([call("c1")], invocation_id="inv-2"),
        rewind_event("inv-2"),
    ]
    assert statuses(events) == []
    assert analyze(events).is_healthy


def test_rewind_to_an_unknown_invocation_annuls_only_itself() -> None:
    events = [model_event([call("c1")]), rewind_event("never-seen")]
    assert live_event_mask(events) == [True, False]


def test_ledger_reports_which_events_changed_when_observing_incrementally() -> None:
    ledger = PairingLedger()
    first = model_event([call("a"), call("b")])
    assert ledger.observe(first, 0).changed == {0}
    assert [c.call_id for c in ledger.open_calls[0]] == ["a", "b"]
    answered_a = ledger.observe(response_event([response("a")]), 1)
    assert answered_a.changed == {0}
    assert [c.call_id for c in answered_a.settled] == ["a"]
    assert [c.call_id for c in ledger.open_calls[0]] == ["b"]
    assert ledger.observe(response_event([response("b")]), 2).changed == {0}
    assert ledger.open_calls == {}
    assert ledger.observe(user_text(), 3).changed == set()


def test_event_without_content_is_ignored() -> None:
    ledger = PairingLedger()
    assert ledger.observe(rewind_event("x"), 0).changed == set()
    assert ledger.calls == []


def test_rewind_is_found_on_content_less_events_as_adk_writes_them() -> None:
    from adk_pairing.ledger import build_ledger

    rewind = rewind_event("inv-2")
    assert rewind.content is None
    events = [
        model_event([call("c1")], invocation_id="inv-1"),
        response_event([response("c1")], invocation_id="inv-2"),
        rewind,
    ]
    assert [c.status.value for c in build_ledger(events).calls] == ["missing"]


@pytest.mark.parametrize(
    "traits",
    [
        NEWEST_BUILDER._replace(history_pairs_by_last_response=True),
        NEWEST_BUILDER._replace(latest_response_walks_back=True),
    ],
    ids=["pairs-by-last-response", "walks-back"],
)
def test_the_request_pass_bookkeeping_refuses_an_older_builders_traits(traits: object) -> None:
    """`answered_at` and `pass_over` model one result answering the call before it.

    Under an older builder's traits a result settles every call with its id or
    withholds calls, and both would silently go out of step: they refuse.
    """
    events = [model_event([call("c1")]), response_event([response("c1")])]
    with pytest.raises(ValueError, match="NEWEST_BUILDER"):
        PairingLedger(traits).walk(events, 0, [], answered_at=[])
    with pytest.raises(ValueError, match="NEWEST_BUILDER"):
        PairingLedger(traits).pass_over([("c1", "lookup")])
    answered_at: list[tuple[int, int]] = []
    PairingLedger(NEWEST_BUILDER).walk(events, 0, [], answered_at=answered_at)
    assert answered_at == [(1, 0)]
