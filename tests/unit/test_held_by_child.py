"""A call stays pending while the child run it started waits (google-adk >= 2.6 agent modes)."""

from __future__ import annotations

import pytest
from google.adk.events.event import Event
from hypothesis import given, settings
from hypothesis import strategies as st

from adk_pairing.adk.builder import NEWEST_BUILDER, BuilderTraits
from adk_pairing.ledger import PairingLedger, analyze, build_ledger
from adk_pairing.ledger import pairing as ledger_pairing
from adk_pairing.wire import held_by_child
from tests.adk_features import requires

from .events import call, model_event, response, response_event, user_text

try:
    from google.adk.events._branch_path import _BranchPath
except ImportError:  # before 2.6
    _BranchPath = None  # type: ignore[assignment,misc]

TRAITS = [
    pytest.param(BuilderTraits(True, True, False), id="adk<=2.6"),
    pytest.param(BuilderTraits(False, True, True), id="adk<=2.10"),
    pytest.param(NEWEST_BUILDER, id="newest"),
]

segments = st.tuples(
    st.sampled_from(["child", "parent", "node"]),
    st.sampled_from(["", "@", "@1", "@call_7", "@a@b"]),
).map("".join)
branches = st.lists(segments, min_size=1, max_size=4).map(".".join)


@requires(_BranchPath is not None, "events._branch_path (added in 2.6)")
@settings(max_examples=300, deadline=None)
@given(branches)
def test_a_waiting_event_holds_every_call_adk_names_in_its_branch(branch: str) -> None:
    assert set(held_by_child(branch, None, waits=True)) == _BranchPath.from_string(branch).run_ids


def test_a_task_event_that_does_not_wait_holds_only_the_call_it_is_scoped_to() -> None:
    assert held_by_child("parent@p1.task@t1", "t1", waits=False) == ["t1"]
    assert held_by_child("parent@p1.task@t1", None, waits=False) == []


def _parent_and_child(child_call: Event) -> list[Event]:
    return [
        user_text(),
        model_event([call("parent_1", "child")], author="parent"),
        child_call,
    ]


def _waiting_child() -> Event:
    return model_event(
        [call("child_1", "start_job")],
        author="child",
        branch="child@parent_1",
        long_running=["child_1"],
    )


@pytest.mark.parametrize("traits", TRAITS)
def test_a_parent_call_is_pending_while_its_child_waits(traits: BuilderTraits) -> None:
    report = analyze(_parent_and_child(_waiting_child()), traits=traits)
    assert [(c.call_id, c.status.value) for c in report.calls] == [
        ("parent_1", "pending"),
        ("child_1", "pending"),
    ]


@pytest.mark.parametrize("traits", TRAITS)
def test_a_parent_call_whose_child_died_on_an_ordinary_call_is_missing(
    traits: BuilderTraits,
) -> None:
    child = model_event([call("child_1", "lookup")], author="child", branch="child@parent_1")
    report = analyze(_parent_and_child(child), traits=traits)
    assert [(c.call_id, c.status.value) for c in report.calls] == [
        ("parent_1", "missing"),
        ("child_1", "missing"),
    ]


@requires("isolation_scope" in Event.model_fields, "Event.isolation_scope (added in 2.6)")
def test_a_task_run_holds_its_call_open_until_the_task_ends() -> None:
    child = model_event([call("child_1", "lookup")], author="child", branch="child@parent_1")
    child.isolation_scope = "parent_1"
    events = _parent_and_child(child)
    report = analyze(events, traits=NEWEST_BUILDER)
    assert [(c.call_id, c.status.value) for c in report.calls] == [
        ("parent_1", "pending"),
        ("child_1", "missing"),
    ]
    events.append(response_event([response("parent_1", "child")], author="parent"))
    assert analyze(events, traits=NEWEST_BUILDER).calls[0].status.value == "answered"


def test_a_grandchild_waiting_holds_its_parent_and_grandparent_calls() -> None:
    events = [
        user_text(),
        model_event([call("p1", "child")], author="parent"),
        model_event([call("c1", "grandchild")], author="child", branch="child@p1"),
        model_event(
            [call("g1", "start_job")],
            author="grandchild",
            branch="child@p1.grandchild@c1",
            long_running=["g1"],
        ),
    ]
    assert [c.status.value for c in analyze(events, traits=NEWEST_BUILDER).calls] == [
        "pending",
        "pending",
        "pending",
    ]


def test_observing_the_waiting_child_reports_the_parent_call_it_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ledger_pairing, "builder_traits", lambda: NEWEST_BUILDER)
    events = _parent_and_child(_waiting_child())
    ledger = PairingLedger()
    ledger.walk(events[:2], 0)
    observation = ledger.observe(events[2], 2)
    assert [c.call_id for c in observation.held] == ["parent_1"]
    assert observation.changed == {1, 2}
    fresh = build_ledger(events)
    assert [(c.call_id, c.status) for c in ledger.calls] == [
        (c.call_id, c.status) for c in fresh.calls
    ]


@pytest.mark.parametrize("traits", TRAITS)
def test_a_parent_call_is_missing_again_once_its_child_stops_waiting(
    traits: BuilderTraits,
) -> None:
    """google-adk <= 2.10 resumes the child but never answers the parent's call."""
    events = [
        *_parent_and_child(_waiting_child()),
        response_event([response("child_1", "start_job")], author="user"),
    ]
    events[-1].branch = "child@parent_1"
    report = analyze(events, traits=traits)
    assert [(c.call_id, c.status.value) for c in report.calls] == [
        ("parent_1", "missing"),
        ("child_1", "answered"),
    ]


def test_observing_the_child_stop_waiting_reports_the_parent_call_it_released(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ledger_pairing, "builder_traits", lambda: NEWEST_BUILDER)
    answer = response_event([response("child_1", "start_job")], author="user")
    answer.branch = "child@parent_1"
    events = [*_parent_and_child(_waiting_child()), answer]
    ledger = PairingLedger()
    ledger.walk(events[:3], 0)
    carried = ledger.carry_forward()
    observation = carried.observe(events[3], 3)
    assert [c.call_id for c in observation.held] == ["parent_1"]
    assert [c.status.value for c in carried.open_calls[1]] == ["missing"]


def test_the_request_pass_counts_a_call_waiting_on_its_child_as_held_open() -> None:
    """`PairingPlugin` answers such a call as pending too, should it have to."""
    from adk_pairing.ledger import held_open_call_ids

    waiting = _parent_and_child(_waiting_child())
    assert held_open_call_ids(waiting) == {"parent_1", "child_1"}
    answer = response_event([response("child_1", "start_job")], author="user")
    answer.branch = "child@parent_1"
    # The child's call is answered, and the parent's is no longer held by it.
    assert held_open_call_ids([*waiting, answer]) == set()
