"""Construction of the repaired event list and of its synthetic events."""

from __future__ import annotations

import pytest
from google.adk.events.event import Event

from adk_pairing import METADATA_KEY, PlaceholderTexts, is_synthetic, repaired_events
from adk_pairing.core import placeholders
from adk_pairing.core.placeholders import _direct_clone, synthetic_event_id
from adk_pairing.rules.checks import (
    anthropic_pairing_violations,
    gemini_violations,
    request_violations,
)
from tests.adk_features import requires
from tests.adk_request import build_request_contents

from .events import AGENT, call, model_event, response, response_event, user_text

needs_isolation_scope = requires(
    {"isolation_scope", "node_info"} <= set(Event.model_fields),
    "Event.isolation_scope / Event.node_info",
)
needs_node_info = requires("node_info" in Event.model_fields, "Event.node_info")


def contents(events: list[Event]) -> list:
    return [e.content for e in events if e.content is not None]


def test_healthy_history_is_returned_as_the_same_event_objects() -> None:
    events = [user_text(), model_event([call("c1")]), response_event([response("c1")])]
    repaired = repaired_events(events)
    assert repaired == events
    assert all(a is b for a, b in zip(repaired, events, strict=True))


def test_synthetic_result_follows_the_call_event_and_answers_every_open_call_in_order() -> None:
    call_event = model_event([call("c1"), call("c2", "other"), call("c3")])
    events = [user_text(), call_event, response_event([response("c3")]), user_text("x")]
    repaired = repaired_events(events)
    assert len(repaired) == len(events) + 1
    synthetic = repaired[2]
    assert is_synthetic(synthetic)
    assert [(r.id, r.name) for r in synthetic.get_function_responses()] == [
        ("c1", "lookup"),
        ("c2", "other"),
    ]
    assert repaired[3] is events[2]


def test_a_placeholder_carries_its_calls_id_exactly_as_stored() -> None:
    """An id stored as ``""`` is answered with ``""``: releases up to 2.9 pair by equal ids.

    With ``None`` there, google-adk 2.9's rearranger finds no call for the trailing
    placeholder and raises ("No function call event found"), where the stored history builds.
    """
    events = [user_text(), model_event([call(""), call(None, "other"), call("c1")])]
    synthetic = repaired_events(events)[-1]
    assert [(r.id, r.name) for r in synthetic.get_function_responses()] == [
        ("", "lookup"),
        (None, "other"),
        ("c1", "lookup"),
    ]
    build_request_contents(repaired_events(events))  # raises on 2.9.2 with None for ""


def test_placeholders_follow_the_later_result_of_an_earlier_call_of_their_event() -> None:
    """ADK merges a call event's result events in history order: [c1's result, placeholders]."""
    call_event = model_event([call("c1"), call("c2", "other"), call("c3")])
    events = [user_text(), call_event, response_event([response("c1")]), user_text("x")]
    repaired = repaired_events(events)
    assert repaired[2] is events[2]
    synthetic = repaired[3]
    assert is_synthetic(synthetic)
    assert [r.id for r in synthetic.get_function_responses()] == ["c2", "c3"]
    contents = build_request_contents(repaired)
    assert [p.function_response.id for p in contents[2].parts] == ["c1", "c2", "c3"]
    assert not gemini_violations(contents)


def test_open_calls_between_answered_ones_never_make_the_request_worse() -> None:
    """No one placement gives call order: the view is checked against ADK's builder."""
    call_event = model_event([call("c1"), call("c2", "other"), call("c3")])
    events = [user_text(), call_event, response_event([response("c2", "other")]), user_text("x")]
    stored = request_violations(build_request_contents(events))
    view = request_violations(build_request_contents(repaired_events(events)))
    for rule in ("anthropic", "openai_chat", "gemini"):
        assert view[rule] == [] or stored[rule] != [], rule


def test_synthetic_event_is_authored_by_the_calling_agent_never_user() -> None:
    repaired = repaired_events([model_event([call("c1")])])
    assert repaired[1].author == AGENT


def test_synthetic_event_for_a_user_authored_call_is_not_authored_user() -> None:
    repaired = repaired_events([model_event([call("c1")], author="user")])
    assert repaired[1].author not in ("user", "")


def test_synthetic_event_belongs_to_no_invocation_and_keeps_branch_and_time() -> None:
    call_event = model_event([call("c1")], branch="root.child", invocation_id="inv-7")
    synthetic = repaired_events([call_event])[1]
    assert synthetic.invocation_id == ""
    assert synthetic.branch == "root.child"
    assert synthetic.timestamp == call_event.timestamp


@needs_isolation_scope
def test_synthetic_event_keeps_isolation_scope_and_node_path() -> None:
    call_event = model_event([call("c1")], branch="root.child", invocation_id="inv-7")
    call_event.isolation_scope = "task-1"
    call_event.node_info.path = "wf/node@1"
    synthetic = repaired_events([call_event])[1]
    assert synthetic.invocation_id == ""
    assert synthetic.isolation_scope == "task-1"
    assert synthetic.node_info.path == "wf/node@1"
    assert synthetic.node_info is not call_event.node_info
    assert synthetic.timestamp == call_event.timestamp


def test_synthetic_event_id_is_deterministic_for_the_same_history() -> None:
    events = [user_text(), model_event([call("c1")])]
    assert repaired_events(events)[2].id == repaired_events(events)[2].id
    assert repaired_events(events)[2].id != events[1].id


def test_synthetic_event_id_names_its_call_event() -> None:
    call_event = model_event([call("c1")])
    assert synthetic_event_id(call_event) == "adk-pairing-" + call_event.id


def test_call_events_without_an_id_still_get_distinct_deterministic_ids() -> None:
    first, second = model_event([call("c1")]), model_event([call("c2")])
    first.id = second.id = ""
    ids = {synthetic_event_id(first), synthetic_event_id(second)}
    assert len(ids) == 2
    assert all(i.startswith("adk-pairing-") and len(i) > len("adk-pairing-") for i in ids)
    assert synthetic_event_id(first) == synthetic_event_id(first)


def test_metadata_marks_the_synthetic_event_and_its_status() -> None:
    events = [model_event([call("lro", "wait"), call("c2")], long_running=["lro"])]
    annotated, synthetic = repaired_events(events)
    marker = synthetic.custom_metadata[METADATA_KEY]
    assert marker["synthetic"] is True
    assert marker["status"] == "missing"
    assert [c["status"] for c in marker["calls"]] == ["pending", "missing"]
    assert annotated.custom_metadata[METADATA_KEY]["pending"] == ["lro"]
    assert annotated.custom_metadata[METADATA_KEY]["missing"] == ["c2"]


def test_only_pending_calls_give_a_pending_synthetic_event() -> None:
    events = [model_event([call("lro", "wait")], long_running=["lro"])]
    synthetic = repaired_events(events)[1]
    assert synthetic.custom_metadata[METADATA_KEY]["status"] == "pending"


def test_call_event_in_the_view_is_an_annotated_copy_and_the_stored_event_is_untouched() -> None:
    stored = model_event([call("c1")])
    stored.custom_metadata = {"mine": 1}
    before = stored.model_dump()
    annotated = repaired_events([stored])[0]
    assert annotated is not stored
    assert stored.model_dump() == before
    assert annotated.custom_metadata["mine"] == 1
    assert annotated.custom_metadata[METADATA_KEY]["missing"] == ["c1"]
    assert not is_synthetic(annotated)


def test_idless_call_is_annotated_by_function_name() -> None:
    annotated = repaired_events([model_event([call(None, "search")])])[0]
    assert annotated.custom_metadata[METADATA_KEY]["missing"] == ["search"]


def test_pending_and_missing_calls_read_different_texts_that_are_configurable() -> None:
    events = [model_event([call("lro", "wait"), call("c2")], long_running=["lro"])]
    default = repaired_events(events)[1].get_function_responses()
    assert "awaiting a response" in default[0].response["message"]
    assert "no result was recorded" in default[1].response["error"].lower()
    custom = repaired_events(events, PlaceholderTexts(missing="M", pending="P"))[1]
    assert [r.response for r in custom.get_function_responses()] == [
        {"status": "pending", "message": "P"},
        {"status": "missing", "error": "M"},
    ]


def test_confirmation_placeholder_keeps_the_request_name_so_adk_strips_it_from_requests() -> None:
    events = [model_event([call("conf-1", "adk_request_confirmation")])]
    synthetic = repaired_events(events)[1]
    assert synthetic.get_function_responses()[0].name == "adk_request_confirmation"
    assert synthetic.get_function_responses()[0].response["status"] == "pending"
    assert "confirmed" not in synthetic.get_function_responses()[0].response


def test_checker_rejects_the_unrepaired_history_and_accepts_the_repaired_one() -> None:
    events = [
        user_text(),
        model_event([call("c1"), call("c2")]),
        response_event([response("c2")]),
        user_text("are you there?"),
    ]
    assert anthropic_pairing_violations(contents(events))
    assert anthropic_pairing_violations(contents(repaired_events(events))) == []


def test_checker_rejects_results_that_come_after_another_block() -> None:
    events = [
        model_event([call("c1")]),
        user_text("interrupting"),
        response_event([response("c1")]),
    ]
    violations = anthropic_pairing_violations(contents(events))
    assert any("without tool_result blocks immediately after" in v for v in violations)


def test_synthetic_event_built_unvalidated_equals_what_validation_would_build() -> None:
    call_event = model_event([call("c1"), call("c2")])
    synthetic = repaired_events([call_event])[1]
    validated = Event.model_validate_json(synthetic.model_dump_json())
    assert validated == synthetic
    assert (
        validated.content.parts[0].function_response == synthetic.content.parts[0].function_response
    )


def test_clone_equals_pydantic_model_copy_and_shares_no_container() -> None:
    source = model_event([call("c1")], long_running=["c1"], branch="a.b")
    source.custom_metadata = {"k": "v"}
    update = {"custom_metadata": {"other": 1}, "branch": "c"}
    cloned, copied = _direct_clone(source, update), source.model_copy(update=update)
    assert cloned == copied
    assert cloned.model_fields_set == copied.model_fields_set
    assert cloned.model_dump_json() == copied.model_dump_json()
    assert cloned.__pydantic_private__ == copied.__pydantic_private__
    assert cloned.__pydantic_extra__ == copied.__pydantic_extra__
    # Like model_copy: a new field dict and marker set, untouched source.
    assert cloned.__dict__ is not source.__dict__
    assert cloned.model_fields_set is not source.model_fields_set
    assert source.custom_metadata == {"k": "v"} and source.branch == "a.b"


def test_direct_clone_is_in_use_with_the_installed_pydantic() -> None:
    # If this fails, views still work (through model_copy) but appends got slower.
    assert placeholders._clone is _direct_clone


def test_a_clone_that_stops_matching_model_copy_falls_back_to_model_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def drops_fields_set(template, update):  # what a pydantic change could cause
        clone = _direct_clone(template, update)
        object.__setattr__(clone, "__pydantic_fields_set__", set())
        return clone

    monkeypatch.setattr(placeholders, "_direct_clone", drops_fields_set)
    assert placeholders._choose_clone() is placeholders._model_copy

    def raises(template, update):
        raise AttributeError("__pydantic_private__")

    monkeypatch.setattr(placeholders, "_direct_clone", raises)
    assert placeholders._choose_clone() is placeholders._model_copy


@needs_node_info
def test_synthetic_event_copies_node_info_instead_of_sharing_it() -> None:
    call_event = model_event([call("c1")])
    call_event.node_info.path = "wf/node@1"
    synthetic = repaired_events([call_event])[1]
    synthetic.node_info.path = "changed"
    assert call_event.node_info.path == "wf/node@1"


def test_every_synthetic_event_has_its_own_actions() -> None:
    first, second = (repaired_events([model_event([call(c)])])[1] for c in ("a", "b"))
    assert first.actions is not second.actions
    first.actions.state_delta["k"] = 1
    assert second.actions.state_delta == {}


def test_a_second_result_for_the_answered_call_keeps_the_placeholders_in_call_order() -> None:
    """ADK takes the last result of a call: past the first, the placeholders would lead."""
    call_event = model_event([call("c1"), call("c2")])
    events = [user_text(), call_event, response_event([response("c1")])]
    events += [response_event([response("c1")]), user_text("x")]
    stored = request_violations(build_request_contents(events))
    view = request_violations(build_request_contents(repaired_events(events)))
    for rule in ("anthropic", "openai_chat", "gemini"):
        assert view[rule] == [] or stored[rule] != [], (rule, view[rule])
