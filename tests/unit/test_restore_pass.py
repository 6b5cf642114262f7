"""The pure half of the plugin's restore: which calls a request lacks, and the splice."""

from __future__ import annotations

from google.adk.events.event import Event
from google.genai import types

from adk_pairing.analysis import build_ledger
from adk_pairing.restore_pass import Splice, calls_the_request_lacks, splice


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
    assert splice(STORED, STORED, list(STORED)).outcome is Splice.NOTHING_TO_RESTORE


def test_the_repaired_build_replaces_the_stored_one() -> None:
    result = splice(list(STORED), STORED, REPAIRED)
    assert result.outcome is Splice.RESTORED
    assert result.contents == REPAIRED


def test_an_inserted_instruction_keeps_its_place_before_the_latest_user_turn() -> None:
    request = [STORED[0], NOTE, STORED[1]]
    result = splice(request, STORED, REPAIRED)
    assert result.outcome is Splice.RESTORED
    assert result.contents == [*REPAIRED[:3], NOTE, REPAIRED[3]]


def test_an_inserted_prefix_stays_first() -> None:
    result = splice([NOTE, *STORED], STORED, REPAIRED)
    assert result.contents == [NOTE, *REPAIRED]


def test_a_request_someone_else_changed_is_not_spliced() -> None:
    note_from_the_model = types.Content(role="model", parts=[types.Part(text="(note)")])
    assert (
        splice([*STORED, note_from_the_model], STORED, REPAIRED).outcome is Splice.CHANGED_BY_OTHERS
    )
    assert splice(STORED[:1], STORED, REPAIRED).outcome is Splice.CHANGED_BY_OTHERS
    assert splice([_user("edited"), STORED[1]], STORED, REPAIRED).outcome is (
        Splice.CHANGED_BY_OTHERS
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
