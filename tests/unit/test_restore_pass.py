"""The pure half of the plugin's restore: which calls a request lacks, and the splice."""

from __future__ import annotations

from google.adk.events.event import Event
from google.genai import types

from adk_pairing.ledger import PairingLedger, build_ledger
from adk_pairing.passes.restore_pass import (
    RestoreOutcome,
    calls_the_request_lacks,
    ends_with_a_result_reaching_back,
    place,
    restoration,
    splice,
)


def _user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def _model_calls(*ids: str | None, name: str = "lookup") -> types.Content:
    return types.Content(
        role="model",
        parts=[types.Part(function_call=types.FunctionCall(id=i, name=name)) for i in ids],
    )


def _results(*ids: str) -> types.Content:
    return types.Content(
        role="user",
        parts=[
            types.Part(function_response=types.FunctionResponse(id=i, name="lookup", response={}))
            for i in ids
        ],
    )


def _event(content: types.Content, *, branch: str | None = None) -> Event:
    author = "user" if content.role == "user" and not content.parts[0].function_response else "a"
    return Event(author=author, invocation_id="i", content=content, branch=branch)


STORED = [_user("hi"), _user("again?")]
REPAIRED = [_user("hi"), _model_calls("c1"), _results("c1"), _user("again?")]
NOTE = _user("(dynamic instruction)")


def test_identical_builds_need_no_restore() -> None:
    assert splice(STORED, STORED, list(STORED)).outcome is RestoreOutcome.NOTHING_TO_RESTORE


def test_the_repaired_build_replaces_the_stored_one() -> None:
    result = splice(list(STORED), STORED, REPAIRED)
    assert result.outcome is RestoreOutcome.RESTORED
    assert result.contents == REPAIRED


def test_an_inserted_instruction_keeps_its_place_before_the_latest_user_turn() -> None:
    request = [STORED[0], NOTE, STORED[1]]
    result = splice(request, STORED, REPAIRED)
    assert result.outcome is RestoreOutcome.RESTORED
    assert result.contents == [*REPAIRED[:3], NOTE, REPAIRED[3]]


def test_an_inserted_prefix_stays_first() -> None:
    result = splice([NOTE, *STORED], STORED, REPAIRED)
    assert result.contents == [NOTE, *REPAIRED]


def test_a_request_someone_else_changed_is_not_spliced() -> None:
    note_from_the_model = types.Content(role="model", parts=[types.Part(text="(note)")])
    changed = splice([*STORED, note_from_the_model], STORED, REPAIRED)
    assert changed.outcome is RestoreOutcome.CHANGED_BY_OTHERS
    assert splice(STORED[:1], STORED, REPAIRED).outcome is RestoreOutcome.CHANGED_BY_OTHERS
    assert splice([_user("edited"), STORED[1]], STORED, REPAIRED).outcome is (
        RestoreOutcome.CHANGED_BY_OTHERS
    )


def test_a_dropped_open_call_is_lacking_and_a_sent_one_is_not() -> None:
    events = [_event(_user("hi")), _event(_model_calls("c1")), _event(_user("again?"))]
    ledger = build_ledger(events)
    lacking = calls_the_request_lacks(ledger, events, STORED, None)
    assert [call.call_id for call in lacking] == ["c1"]
    sent = [STORED[0], _model_calls("c1"), STORED[1]]
    assert calls_the_request_lacks(ledger, events, sent, None) == []


def test_a_healthy_history_lacks_nothing() -> None:
    events = [_event(_user("hi")), _event(_model_calls("c1")), _event(_results("c1"))]
    assert calls_the_request_lacks(build_ledger(events), events, [], None) == []


def test_a_call_in_a_branch_the_agent_does_not_see_is_not_lacking() -> None:
    events = [_event(_user("hi")), _event(_model_calls("c1"), branch="root.left")]
    ledger = build_ledger(events)
    assert calls_the_request_lacks(ledger, events, STORED, "root.right") == []
    assert len(calls_the_request_lacks(ledger, events, STORED, "root.left")) == 1


def test_an_idless_open_call_is_lacking_only_when_misplaced() -> None:
    # ADK's builder never drops a call without an id; its rearranger can put one on the user's side.
    events = [_event(_user("hi")), _event(_model_calls(None))]
    assert calls_the_request_lacks(build_ledger(events), events, STORED, None) == []
    misplaced = [_user("hi"), types.Content(role="user", parts=_model_calls(None).parts)]
    assert len(calls_the_request_lacks(build_ledger(events), events, misplaced, None)) == 1


def test_an_open_call_on_the_users_side_is_lacking_though_its_id_is_sent() -> None:
    # ADK's rearranger can leave a call next to results, where the request pass must drop
    # it, while a model content carries the same id (a reused id, in the histories that do this).
    events = [_event(_user("hi")), _event(_model_calls("c1"))]
    ledger = build_ledger(events)
    on_the_users_side = types.Content(role="user", parts=_model_calls("c1").parts)
    sent = [_user("hi"), _model_calls("c1"), on_the_users_side]
    assert [c.event_index for c in calls_the_request_lacks(ledger, events, sent, None)] == [1]
    assert calls_the_request_lacks(ledger, events, sent[:2], None) == []


def _adk_result(call_id: str | None) -> types.Content:
    return types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(id=call_id, name="lookup", response={})
            )
        ],
    )


def _irregular(*later: types.Content) -> tuple[list[Event], PairingLedger]:
    """Two id-less calls in one event, one left open (an irregular history), then `later`."""
    contents = [_user("hi"), _model_calls(None, None), _adk_result(None), *later]
    events = [_event(content) for content in contents]
    ledger = build_ledger(events)
    assert ledger.irregular
    return events, ledger


def test_an_adk_id_stripped_from_the_request_is_not_a_call_cut() -> None:
    # A new turn whose call ADK gave an `adk-` id: a Gemini request carries it without its id.
    events, ledger = _irregular(_model_calls("adk-7f3a"), _adk_result("adk-7f3a"))
    stripped = [_user("hi"), _model_calls(None, None), _adk_result(None)]
    as_gemini_gets_it = [*stripped, _model_calls(None), _adk_result(None)]
    assert calls_the_request_lacks(ledger, events, as_gemini_gets_it, None) == []
    as_claude_gets_it = [*stripped, _model_calls("adk-7f3a"), _adk_result("adk-7f3a")]
    assert calls_the_request_lacks(ledger, events, as_claude_gets_it, None) == []
    # Cut, whatever the model: the history's id-less calls are all there, this one is not.
    cut = calls_the_request_lacks(ledger, events, stripped, None)
    assert [call.call_id for call in cut] == ["adk-7f3a"]


def test_an_idless_call_cut_from_an_irregular_history_is_lacking() -> None:
    events, ledger = _irregular(_user("again?"))
    cut = calls_the_request_lacks(ledger, events, [_user("hi"), _user("again?")], None)
    assert [(call.call_id, call.event_index) for call in cut] == [(None, 1), (None, 1)]


# -- the restore remembered: `restoration` and `place` -----------------------------

FOUND = restoration(STORED, REPAIRED)
LATER_TURN = [_model_calls("c2"), _results("c2"), _user("and now?")]


def test_a_restoration_is_the_middle_the_repaired_build_replaces() -> None:
    assert FOUND.head == (STORED[0],)
    assert FOUND.stored_region == ()
    assert FOUND.repaired_region == tuple(REPAIRED[1:3])


def test_a_later_request_gets_the_calls_where_the_builder_put_them() -> None:
    request = [*STORED, *LATER_TURN]
    placed = place(FOUND, request)
    assert placed.outcome is RestoreOutcome.RESTORED
    assert placed.contents == [*REPAIRED, *LATER_TURN]


def test_what_another_plugin_added_after_the_calls_place_stays() -> None:
    tail = STORED[1].model_copy(update={"parts": [*STORED[1].parts, types.Part(text="(a part)")]})
    placed = place(FOUND, [STORED[0], tail])
    assert placed.outcome is RestoreOutcome.RESTORED
    assert placed.contents == [*REPAIRED[:3], tail]


def test_an_inserted_instruction_stays_where_it_was() -> None:
    placed = place(FOUND, [STORED[0], NOTE, STORED[1]])
    assert placed.outcome is RestoreOutcome.RESTORED
    assert placed.contents == [*REPAIRED[:3], NOTE, REPAIRED[3]]


def test_placed_contents_are_copies() -> None:
    placed = place(FOUND, list(STORED))
    assert placed.contents is not None
    placed.contents[1].parts.append(types.Part(text="edited by a later callback"))
    assert FOUND.repaired_region[0].parts == REPAIRED[1].parts


def test_a_placed_region_reuses_the_requests_own_parts_and_copies_only_what_was_put_back() -> None:
    """A parallel turn of many calls costs a comparison per part, not a deep copy of each."""
    stored = [_user("hi"), _model_calls("c1", "c3"), _results("c1", "c3"), _user("again?")]
    repaired = [
        _user("hi"),
        _model_calls("c1", "c2", "c3"),
        _results("c1", "c3", "c2"),
        _user("again?"),
    ]
    found = restoration(stored, repaired)
    request = [content.model_copy(deep=True) for content in stored]  # ADK copies per build
    placed = place(found, request)
    assert placed.outcome is RestoreOutcome.RESTORED
    assert placed.contents == repaired
    calls, results = placed.contents[1], placed.contents[2]
    assert calls.parts[0] is request[1].parts[0] and calls.parts[2] is request[1].parts[1]
    assert results.parts[0] is request[2].parts[0] and results.parts[1] is request[2].parts[1]
    put_back = (calls.parts[1], results.parts[2])
    assert put_back[0] is not found.repaired_region[0].parts[1]
    assert put_back[1] is not found.repaired_region[1].parts[2]
    put_back[1].function_response.response["edited"] = "by a later callback"
    assert found.repaired_region[1].parts[2].function_response.response == {}


def test_a_window_keeping_the_calls_place_keeps_the_calls() -> None:
    stored = [_user("one"), _user("two"), _user("three")]
    repaired = [stored[0], stored[1], _model_calls("c1"), _results("c1"), stored[2]]
    found = restoration(stored, repaired)
    placed = place(found, stored[1:])
    assert placed.outcome is RestoreOutcome.RESTORED
    assert placed.contents == repaired[1:]


def test_a_window_after_the_calls_place_left_them_out() -> None:
    assert place(FOUND, [STORED[1]], rest=[STORED[1]]).outcome is RestoreOutcome.LEFT_OUT
    stored = [_user("one"), _user("two"), _user("three")]
    found = restoration(stored, [stored[0], _model_calls("c1"), _results("c1"), *stored[1:]])
    # A window inside the remembered start, after the calls' place.
    assert place(found, stored[2:]).outcome is RestoreOutcome.CHANGED_BY_OTHERS
    assert place(found, stored[2:], rest=stored[1:]).outcome is RestoreOutcome.LEFT_OUT


def test_a_start_that_is_not_what_adk_built_is_changed() -> None:
    greeting = types.Content(role="model", parts=[types.Part(text="hello")])
    placed = place(FOUND, [greeting, *STORED], rest=STORED[1:])
    assert placed.outcome is RestoreOutcome.CHANGED_BY_OTHERS
    assert place(FOUND, [_model_calls("x"), STORED[1]]).outcome is RestoreOutcome.CHANGED_BY_OTHERS


def test_a_request_ending_before_the_stored_start_is_changed() -> None:
    stored = [_user("one"), _model_calls("c0"), _results("c0"), _user("two")]
    repaired = [*stored[:3], _model_calls("c1"), _results("c1"), stored[3]]
    found = restoration(stored, repaired)
    assert place(found, stored[:2]).outcome is RestoreOutcome.CHANGED_BY_OTHERS


def _answered_call_turn(call_id: str, *, branch: str | None = None) -> list[Event]:
    return [
        _event(_model_calls(call_id), branch=branch),
        _event(_results(call_id), branch=branch),
    ]


def test_a_result_answering_the_event_before_it_is_left_in_place() -> None:
    assert not ends_with_a_result_reaching_back([_event(_user("hi")), *_answered_call_turn("c1")])
    assert not ends_with_a_result_reaching_back([_event(_user("hi"))])


def test_a_result_for_an_older_call_reaches_back() -> None:
    events = [_event(_model_calls("c1")), _event(_user("meanwhile")), _event(_results("c1"))]
    assert ends_with_a_result_reaching_back(events)
    other_branch = [
        _event(_model_calls("c1"), branch="a"),
        _event(_results("c1"), branch="b"),
    ]
    assert ends_with_a_result_reaching_back(other_branch)
    assert ends_with_a_result_reaching_back([_event(_results("c1"))])


def test_calls_placed_before_everything_are_not_certain() -> None:
    # Whether the request's first user content is the user's or one ADK
    # inserted cannot be told with nothing before the calls: ADK's builder decides.
    stored = [_user("hi")]
    found = restoration(stored, [_model_calls("c1"), _results("c1"), *stored])
    assert found.stored_start == ()
    assert place(found, [NOTE, *stored]).outcome is RestoreOutcome.CHANGED_BY_OTHERS
