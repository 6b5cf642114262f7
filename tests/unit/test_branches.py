"""Who answers whom follows ADK's branch filter: each branch pairs within what it sees.

ADK's request builder shows an agent only the events of its own branch, its
ancestors' and branch-less ones, and pairs calls and results within that.
These properties pin the ledger to that rule on interleaved sibling branches
that reuse call ids, as `ParallelAgent` branches with model-issued ids do.
"""

from __future__ import annotations

import pytest
from google.adk.events.event import Event
from hypothesis import given, settings
from hypothesis import strategies as st

from adk_pairing.adk.builder import NEWEST_BUILDER, BuilderTraits
from adk_pairing.ledger import PairingLedger, analyze, build_ledger
from adk_pairing.ledger import pairing as ledger_pairing
from adk_pairing.wire import branch_shows

from .events import call, model_event, response, response_event, user_text


@pytest.fixture(autouse=True)
def newest_builder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The newest builder's rules; the older builders' are in test_builder_rules."""
    monkeypatch.setattr(ledger_pairing, "builder_traits", lambda: NEWEST_BUILDER)


def _adk_branch_filter():  # type: ignore[no-untyped-def]
    from google.adk.flows.llm_flows import contents

    return contents._is_event_belongs_to_branch


segments = st.sampled_from(["fan", "a", "a_0", "a_00", "b", "fan@1"])
branches = st.one_of(
    st.none(), st.just(""), st.lists(segments, min_size=1, max_size=3).map(".".join)
)


@settings(max_examples=300, deadline=None)
@given(branches, branches)
def test_branch_shows_what_adks_branch_filter_shows(
    agent_branch: str | None, event_branch: str | None
) -> None:
    event = Event(author="x", branch=event_branch)
    assert branch_shows(agent_branch, event_branch) == _adk_branch_filter()(agent_branch, event)


SIBLINGS = ("fan.a", "fan.b", "fan.c")

#: One step of one branch: call an id, or answer the branch's oldest open call.
steps = st.lists(
    st.tuples(st.sampled_from(SIBLINGS), st.booleans(), st.sampled_from(["call_0", "call_1"])),
    max_size=24,
)


def _interleaved(plan: list[tuple[str, bool, str]]) -> list[Event]:
    """Sibling branches calling and answering ids in one session, as they interleave."""
    events: list[Event] = [user_text()]
    open_in: dict[str, list[str]] = {branch: [] for branch in SIBLINGS}
    for branch, answers, call_id in plan:
        author = branch.rsplit(".", 1)[1]
        if answers and open_in[branch]:
            answered = open_in[branch].pop(0)
            events.append(response_event([response(answered)], author=author, branch=branch))
        else:
            open_in[branch].append(call_id)
            events.append(model_event([call(call_id)], author=author, branch=branch))
    return events


def _status_by_event(events: list[Event]) -> dict[str, str]:
    return {events[c.event_index].id: c.status.value for c in analyze(events).calls}


@settings(max_examples=200, deadline=None)
@given(steps)
def test_each_branch_answers_its_own_calls_however_branches_interleave(
    plan: list[tuple[str, bool, str]],
) -> None:
    """The whole session's ledger says of each call what the ledger of the events
    its branch sees says: no result in a sibling branch answers it."""
    events = _interleaved(plan)
    whole = _status_by_event(events)
    for branch in SIBLINGS:
        seen = [e for e in events if branch_shows(branch, e.branch)]
        for event_id, status in _status_by_event(seen).items():
            assert whole[event_id] == status


@settings(max_examples=100, deadline=None)
@given(steps)
def test_a_ledger_carried_forward_mid_session_pairs_branches_as_a_fresh_walk(
    plan: list[tuple[str, bool, str]],
) -> None:
    events = _interleaved(plan)
    fresh = build_ledger(events)
    expected = {i: [c.part_index for c in calls] for i, calls in fresh.open_calls.items()}
    for cut in range(len(events) + 1):
        first = PairingLedger()
        first.walk(events[:cut], 0)
        carried = first.carry_forward()
        for index in range(cut, len(events)):
            carried.observe(events[index], index)
        opened = {i: [c.part_index for c in calls] for i, calls in carried.open_calls.items()}
        assert opened == expected, f"carried forward after {cut} events"


def test_a_branchless_result_answers_the_newest_call_with_its_id_in_any_branch() -> None:
    """A client's result (no branch) is seen by every agent; the newest call wins."""
    events = [
        model_event([call("call_0")], author="a", branch="fan.a"),
        model_event([call("call_0")], author="b", branch="fan.b"),
        response_event([response("call_0")], author="user"),
    ]
    assert [c.status.value for c in analyze(events).calls] == ["missing", "answered"]


def test_a_result_in_a_child_branch_answers_the_call_of_its_parent_branch() -> None:
    events = [
        model_event([call("call_0")], author="root", branch="fan"),
        model_event([call("call_0")], author="b", branch="fan.b"),
        response_event([response("call_0")], author="root", branch="fan.a"),
    ]
    assert [c.status.value for c in analyze(events).calls] == ["answered", "missing"]


def test_the_view_check_builds_each_branchs_own_request() -> None:
    """One agent running in two branches (a workflow's ``worker@1`` and ``worker@2``):
    ADK builds each run's request from its own branch. The view's placeholder
    breaks run 1's request, which is valid as stored; run 2's request is broken
    as stored, and a check of one request over both branches would hide run 1's
    breakage behind it."""
    from google.genai import types

    from adk_pairing.core.placeholders import PlaceholderTexts
    from adk_pairing.core.repair import repair_history

    first, second = "fan.worker@1", "fan.worker@2"
    mixed = types.Part(
        text="and a text", function_call=types.FunctionCall(id="c9", name="lookup", args={})
    )
    events = [
        user_text(),
        model_event([call(None, "lookup"), call(None, "fetch")], author="worker", branch=first),
        response_event(
            [response(None, "lookup"), response(None, "lookup")], author="worker", branch=first
        ),
        model_event([mixed], author="worker", branch=second),
        response_event([response("c9")], author="worker", branch=second),
    ]
    ledger = build_ledger(events)
    assert ledger.irregular and ledger.open_calls
    repaired = repair_history(events, ledger, PlaceholderTexts())
    assert repaired.serves_some_as_stored
    assert repaired.events == events


def _one_long_id_in_two_branches() -> list[Event]:
    """The fuzz's last worse history (issue 26): one 20,000-character id, two branches.

    A held-open ``adk_request_input`` call in branch a and an ordinary call in
    branch b share the id; each sits in an event that also holds a result.
    Each branch's request is valid as stored and from the view. The request of
    an agent running above both (the root, after a ``ParallelAgent``) shows
    both branches: as stored, ADK's builder drops both calls (no result carries
    their id); with the view's placeholders both come back, one ``tool_use`` id
    twice.
    """
    long_id = "y" * 20_000
    return [
        user_text(),
        model_event([call(long_id, "adk_request_input"), response("o")], branch="fan.a"),
        model_event([call(long_id, "lookup"), response("o")], branch="fan.b"),
    ]


def test_the_view_check_builds_the_request_of_every_branch_above_an_agents_own() -> None:
    """ADK shows an agent in branch ``fan`` or at the root every event of ``fan.a``
    and ``fan.b`` (`adk_pairing.wire.branch_shows`): the check builds those
    requests too, so no request from the view of `_one_long_id_in_two_branches`
    is worse than the stored one. (Builders up to 2.6 raise on the stored
    history's stray results: nothing to be worse than there.)"""
    from google.adk.flows.llm_flows.contents import _get_contents

    from adk_pairing.core.placeholders import PlaceholderTexts
    from adk_pairing.core.repair import repair_history
    from adk_pairing.rules.checks import anthropic_violations

    def valid(history: list[Event], branch: str | None) -> bool | None:
        try:
            return not anthropic_violations(_get_contents(branch, list(history), "assistant"))
        except ValueError:
            return None

    events = _one_long_id_in_two_branches()
    ledger = build_ledger(events)
    assert ledger.irregular
    repaired = repair_history(events, ledger, PlaceholderTexts())
    verdicts = {
        branch: (valid(events, branch), valid(repaired.events, branch))
        for branch in (None, "fan", "fan.a", "fan.b")
    }
    assert not [b for b, (stored, view) in verdicts.items() if stored and not view], verdicts
    if verdicts[None][0]:  # the root's request is valid as stored: the view is not served
        assert repaired.serves_some_as_stored and repaired.events == events


def _sibling_answers_after_the_other_call() -> list[Event]:
    """Branch a calls ``call_0``, branch b calls ``call_0``, branch a answers its own."""
    return [
        user_text(),
        model_event([call("call_0")], author="a", branch="fan.a"),
        model_event([call("call_0")], author="b", branch="fan.b"),
        response_event([response("call_0")], author="a", branch="fan.a"),
    ]


@pytest.mark.parametrize(
    "traits",
    [
        pytest.param(BuilderTraits(True, True, False), id="adk<=2.6"),
        pytest.param(BuilderTraits(False, True, True), id="adk<=2.10"),
        pytest.param(NEWEST_BUILDER, id="newest"),
    ],
)
def test_every_builder_generation_leaves_only_the_unanswered_branchs_call_open(
    traits: BuilderTraits,
) -> None:
    """<= 2.6 answers every call with a response's id, but only in branches shown the
    response; <= 2.10's walk-back hazard needs the two events to be neighbours in
    one branch's request, which they are not here."""
    ledger = build_ledger(_sibling_answers_after_the_other_call(), traits=traits)
    assert {index: [c.author for c in calls] for index, calls in ledger.open_calls.items()} == {
        2: ["b"]
    }
