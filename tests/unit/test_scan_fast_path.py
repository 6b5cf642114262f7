"""The scan's fast path finds every session the full read finds broken, and nothing else.

The fast path (``adk_pairing.cli._fast``) sees only the stored rows that name a
call, a result or a rewind, parsed into objects with only the fields the
analysis reads. These properties run the core's `analyze` both ways over
generated histories, well-formed and malformed, on the JSON ADK stores.
"""

from __future__ import annotations

import json

import pytest
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adk_pairing import analyze
from adk_pairing.cli._fast import (
    CALL_MARKERS,
    UnexpectedShape,
    light_event,
    needs_confirmation,
)
from adk_pairing.ledger.reads import EVENT_FIELDS
from tests.adk_features import ADK_VERSION
from tests.unit.events import call, model_event, user_text
from tests.unit.history_strategies import histories
from tests.unit.test_ledger_reads import HELD, every_field_history

common = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _stored_rows(events: list[Event]) -> list[str]:
    """Each event as ``DatabaseSessionService`` / ``SqliteSessionService`` store it."""
    return [event.model_dump_json(exclude_none=True) for event in events]


def _fast_events(events: list[Event]) -> list:
    """What the fast path builds: the rows the stores' filter keeps, lightly parsed."""
    kept = [row for row in _stored_rows(events) if any(m in row for m in CALL_MARKERS)]
    return [light_event(json.loads(row)) for row in kept]


def _statuses(report) -> list[tuple[str | None, str, str]]:
    return [(call.call_id, call.name, call.status.value) for call in report.calls]


@common
@given(histories(max_steps=12))
def test_fast_path_reports_the_statuses_of_the_full_read(events: list[Event]) -> None:
    assert _statuses(analyze(_fast_events(events))) == _statuses(analyze(events))


#: Branches as ADK writes them: ParallelAgent branches, and a child run named by its call.
BRANCHES = (None, "fan", "fan.a", "fan.b", "root.child@call_0", "root.child@call_1")


@common
@given(histories(max_steps=12), st.data())
def test_fast_path_reports_the_statuses_of_the_full_read_in_branches_and_child_runs(
    events: list[Event], data: st.DataObject
) -> None:
    """The ledger reads each event's branch and isolation scope too; so must the fast path."""
    branched = [
        event.model_copy(
            update={
                "branch": data.draw(st.sampled_from(BRANCHES)),
                **(
                    {"isolation_scope": data.draw(st.sampled_from((None, "call_0")))}
                    if "isolation_scope" in Event.model_fields
                    else {}
                ),
            }
        )
        for event in events
    ]
    assert _statuses(analyze(_fast_events(branched))) == _statuses(analyze(branched))


@pytest.mark.skipif(
    "isolation_scope" not in Event.model_fields,
    reason=f"google-adk {ADK_VERSION} has no Event.isolation_scope (added in 2.6)",
)
def test_fast_path_sees_a_task_run_hold_its_call_open() -> None:
    parent = model_event([call("parent_1", "child")], author="parent")
    child = model_event([call("child_1", "lookup")], author="child", branch="child@parent_1")
    child.isolation_scope = "parent_1"
    events = [user_text(), parent, child]
    assert _statuses(analyze(events))[0] == ("parent_1", "child", "pending")
    assert _statuses(analyze(_fast_events(events))) == _statuses(analyze(events))


@common
@given(histories(max_steps=12), st.integers(min_value=0, max_value=11))
def test_a_session_the_full_read_finds_broken_is_always_confirmed(
    events: list[Event], rewind_at: int
) -> None:
    # A rewind, when one is placed, may annul events the filter never fetched
    # (the first rows of its invocation): the session is then always re-read.
    if rewind_at < len(events):
        target = events[rewind_at].invocation_id
        events = [
            *events,
            Event(
                invocation_id="rewinder",
                author="user",
                actions=EventActions(rewind_before_invocation_id=target),
            ),
        ]
        assert needs_confirmation(_fast_events(events))
    if not analyze(events).is_healthy:
        assert needs_confirmation(_fast_events(events))


def test_light_events_read_camel_case_aliases_too() -> None:
    call = types.FunctionCall(id="c1", name="refund", args={})
    event = Event(
        invocation_id="i1",
        author="agent",
        content=types.Content(role="model", parts=[types.Part(function_call=call)]),
        long_running_tool_ids={"c1"},
    )
    stored = event.model_dump_json(exclude_none=True, by_alias=True)
    assert "functionCall" in stored and "function_call" not in stored
    assert any(marker in stored for marker in CALL_MARKERS)
    light = light_event(json.loads(stored))
    assert (
        _statuses(analyze([light])) == _statuses(analyze([event])) == [("c1", "refund", "pending")]
    )


def _as_the_ledger_reads(target: object, fields: tuple[str, ...]) -> dict[str, object]:
    """The declared fields of an event (or of what it holds), as the ledger reads them.

    Only their truth is read of ``thought_signature`` (bytes in an ``Event``,
    base64 text in its JSON) and of empty values.
    """
    seen: dict[str, object] = {}
    for name in fields:
        value = getattr(target, name, None)  # isolation_scope: absent before google-adk 2.6
        held = HELD.get(name)
        if held is not None and value is not None:
            values = value if isinstance(value, list) else [value]
            seen[name] = [_as_the_ledger_reads(item, held) for item in values]
        elif name == "thought_signature":
            seen[name] = bool(value)
        elif isinstance(value, set):
            seen[name] = frozenset(value) or None
        else:
            seen[name] = value or None
    return seen


@common
@given(histories(max_steps=12), st.booleans())
def test_light_events_carry_every_declared_field_as_the_event_holds_it(
    events: list[Event], by_alias: bool
) -> None:
    """`adk_pairing.ledger.reads` names the fields; `light_event` must fill each one."""
    for event in [*events, *every_field_history()]:
        stored = event.model_dump_json(exclude_none=True, by_alias=by_alias)
        light = light_event(json.loads(stored))
        assert _as_the_ledger_reads(light, EVENT_FIELDS) == _as_the_ledger_reads(
            event, EVENT_FIELDS
        )


@pytest.mark.parametrize(
    "document",
    [
        5,
        {"content": 5},
        {"content": {"parts": 7}},
        {"content": {"parts": [{"function_call": "c1"}]}},
        {"content": {"parts": [{"function_call": {"id": 3, "name": "x"}}]}},
        {"actions": {"rewind_before_invocation_id": ["i1"]}},
        {"long_running_tool_ids": "c1"},
    ],
)
def test_a_field_of_a_type_adk_never_writes_is_refused(document: object) -> None:
    with pytest.raises(UnexpectedShape):
        light_event(document)


@pytest.mark.parametrize(
    "number",
    ["18446744073709551616", "-9223372036854775809", "123456789012345678901234567890", "NaN"],
)
def test_confirmation_rows_decode_as_adks_own_read_beyond_64_bit_integers(number: str) -> None:
    """orjson gives an integer outside 64 bits as a float; ADK's read (json.loads) an int."""
    from adk_pairing.cli._direct.database import stored_json

    document = f'{{"usage_metadata": {{"prompt_token_count": {number}}}, "id": "e1"}}'
    decoded = stored_json(document)
    expected = json.loads(document)
    assert repr(decoded) == repr(expected)  # repr: NaN is not equal to itself
    assert type(decoded["usage_metadata"]["prompt_token_count"]) is type(
        expected["usage_metadata"]["prompt_token_count"]
    )
