"""Interrupted turns, on every store, through a real Runner: the next request is valid.

Each interrupted turn is made the way production makes one: the runner's task
is cancelled while a tool is still running, after the call event is in the
store. `Harness.interrupted_turn` asserts, through the unwrapped service, that
the store really keeps the call unanswered (ADK 2.13 does not seal a plain
cancellation). The model is `ScriptedClaude`: ADK treats it as an id-pairing
provider, and every request it receives is checked against Anthropic's rule.
"""

from __future__ import annotations

import pytest
from google.adk.events.event import Event
from google.genai import types

from adk_pairing import CallStatus, analyze
from adk_pairing.adk.builder import NEWEST_BUILDER, builder_traits
from adk_pairing.ledger import build_ledger
from tests.adk_features import BUILDER_CAN_PRESERVE_CALL_IDS

from .support.backends import Backend
from .support.scenario import (
    AGENT_NAME,
    USER_ID,
    Harness,
    assert_every_request_valid,
    placeholder_ids,
)
from .support.scripted_model import AnthropicPairingRejected, call, calls, text


async def test_interrupted_turn_at_end_of_history_gives_next_request_a_missing_result(
    backend: Backend,
) -> None:
    harness = Harness.build(
        backend,
        wrapped=True,
        steps=[calls(call("hang", {"reason": "slow"}, id="call_1")), text("Sorry, retrying.")],
    )
    session_id = await harness.new_session()
    await harness.interrupted_turn(session_id, "do the slow thing")

    await harness.turn(session_id, "are you still there?")

    assert_every_request_valid(harness.script)
    last = harness.script.last
    assert placeholder_ids(last, CallStatus.MISSING.value) == ["call_1"]
    assert [c.id for c in last.function_calls] == ["call_1"]
    assert last.texts()[-1] == "are you still there?"
    # The store is untouched: the call is still unanswered there.
    assert [c.call_id for c in await harness.unanswered_in_store(session_id)] == ["call_1"]


async def test_interrupted_turn_in_middle_of_history_stays_paired_in_every_later_request(
    backend: Backend,
) -> None:
    harness = Harness.build(
        backend,
        wrapped=True,
        steps=[
            calls(call("hang", {"reason": "slow"}, id="call_1")),
            calls(call("lookup", {"city": "Oslo"}, id="call_2")),
            text("Sunny in Oslo."),
            text("You're welcome."),
        ],
    )
    session_id = await harness.new_session()
    await harness.interrupted_turn(session_id, "do the slow thing")
    await harness.turn(session_id, "weather in Oslo?")
    await harness.turn(session_id, "thanks")

    assert_every_request_valid(harness.script)
    last = harness.script.last
    assert placeholder_ids(last, CallStatus.MISSING.value) == ["call_1"]
    assert [r.id for r in last.function_responses] == ["call_1", "call_2"]
    assert last.texts() == [
        "do the slow thing",
        "weather in Oslo?",
        "Sunny in Oslo.",
        "thanks",
    ]


@pytest.mark.parametrize("trailing_text", [None, "Let me check both."], ids=["calls", "calls+text"])
async def test_partially_answered_parallel_turn_gets_a_result_only_for_the_unanswered_call(
    backend: Backend, trailing_text: str | None
) -> None:
    """Two parallel calls, one answered in the store, the other never.

    ADK 2.13 answers parallel calls with one merged event once all of them
    return, so a runner cannot leave exactly one answered. The turn is made by a
    real interrupted run (both calls unanswered), then the result of the quick
    call is stored on its own, as a writer that records results per call does.
    """
    harness = Harness.build(
        backend,
        wrapped=True,
        steps=[
            calls(
                call("lookup", {"city": "Oslo"}, id="call_a"),
                call("hang", {"reason": "slow"}, id="call_b"),
                text=trailing_text,
            ),
            text("One of them finished."),
        ],
    )
    session_id = await harness.new_session()
    invocation_id = await harness.interrupted_turn(session_id, "check two things")
    stored = await backend.service.get_session(
        app_name=backend.app_name, user_id=USER_ID, session_id=session_id
    )
    assert stored is not None
    await backend.service.append_event(
        stored,
        Event(
            invocation_id=invocation_id,
            author=AGENT_NAME,
            content=types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            id="call_a", name="lookup", response={"weather": "sunny"}
                        )
                    )
                ],
            ),
        ),
    )
    stored_calls = {
        c.call_id: c.status for c in analyze(await harness.stored_events(session_id)).calls
    }
    assert stored_calls == {"call_a": CallStatus.ANSWERED, "call_b": CallStatus.MISSING}

    await harness.turn(session_id, "so?")

    assert_every_request_valid(harness.script)
    last = harness.script.last
    assert placeholder_ids(last, CallStatus.MISSING.value) == ["call_b"]
    assert sorted(r.id for r in last.function_responses) == ["call_a", "call_b"]
    if trailing_text is not None:
        assert trailing_text in last.texts()


@pytest.mark.parametrize("model", ["claude", "gemini"])
async def test_model_calls_without_ids_are_stored_with_adk_ids_and_repaired_by_them(
    backend: Backend, model: str
) -> None:
    """ADK gives an id-less model call an ``adk-`` id before storing it
    (``populate_client_function_call_id``); the placeholder answers that id.
    ADK keeps ``adk-`` ids in requests to id-pairing providers (Claude) and
    strips them from call and response alike for the others (Gemini)."""
    harness = Harness.build(
        backend,
        wrapped=True,
        model=model,
        steps=[
            calls(call("lookup", {"city": "Oslo"})),
            text("Sunny."),
            calls(call("hang", {"reason": "slow"})),
            text("Back."),
        ],
    )
    session_id = await harness.new_session()
    await harness.turn(session_id, "weather?")
    await harness.interrupted_turn(session_id, "slow thing")
    await harness.turn(session_id, "hello?")

    stored_ids = [
        c.id for e in await harness.stored_events(session_id) for c in e.get_function_calls()
    ]
    assert len(stored_ids) == 2
    assert all(i and i.startswith("adk-") for i in stored_ids)
    assert_every_request_valid(harness.script)
    last = harness.script.last
    # google-adk 1.20's request builder strips adk- ids for every model (it has
    # no preserve_function_call_ids); the request is valid either way.
    keeps_ids = model == "claude" and BUILDER_CAN_PRESERVE_CALL_IDS
    expected_ids = stored_ids if keeps_ids else [None, None]
    assert [c.id for c in last.function_calls] == expected_ids
    assert placeholder_ids(last, CallStatus.MISSING.value) == [expected_ids[1]]


async def test_stored_calls_without_ids_are_answered_by_name(backend: Backend) -> None:
    """A call stored with no id at all (another writer, an older ADK) is kept by
    ADK's request builder, so unwrapped it breaks every later request; the view
    answers it with an id-less response of the same name."""
    session_id = backend.new_session_id()
    inner = backend.service
    stored = await inner.create_session(
        app_name=backend.app_name, user_id=USER_ID, session_id=session_id
    )
    await inner.append_event(
        stored,
        Event(author="user", content=types.Content(role="user", parts=[types.Part(text="hi")])),
    )
    await inner.append_event(
        stored,
        Event(
            author=AGENT_NAME,
            content=types.Content(role="model", parts=[call("lookup", {"city": "Oslo"})]),
        ),
    )
    assert [c.id for e in (await _events(backend, session_id)) for c in e.get_function_calls()] == [
        None
    ]

    unwrapped = Harness.build(backend, wrapped=False, steps=[text("hm")], strict=True)
    with pytest.raises(AnthropicPairingRejected):
        await unwrapped.turn(session_id, "and?")

    wrapped = Harness.build(backend, wrapped=True, steps=[text("Sunny, probably.")], strict=True)
    await wrapped.turn(session_id, "and now?")
    assert_every_request_valid(wrapped.script)
    placeholders = wrapped.script.last.responses_with_status(CallStatus.MISSING.value)
    assert [(p.id, p.name) for p in placeholders] == [(None, "lookup")]


async def test_reused_call_id_interrupted_in_a_later_turn_is_answered_in_that_turn(
    backend: Backend,
) -> None:
    """Gemini-style ids repeat (``call_1`` in every turn). ADK 2.13 keeps the
    second, unanswered ``call_1`` because *some* response with that id exists,
    so unwrapped the request is invalid; the view answers the second call."""
    steps = [
        calls(call("lookup", {"city": "Oslo"}, id="call_1")),
        text("Sunny."),
        calls(call("hang", {"reason": "slow"}, id="call_1")),
        text("Back."),
    ]
    wrapped = Harness.build(backend, wrapped=True, steps=steps)
    session_id = await wrapped.new_session()
    await wrapped.turn(session_id, "weather?")
    await wrapped.interrupted_turn(session_id, "slow thing")
    await wrapped.turn(session_id, "hello?")

    assert_every_request_valid(wrapped.script)
    last = wrapped.script.last
    assert [c.id for c in last.function_calls] == ["call_1", "call_1"]
    responses = last.function_responses
    assert [r.id for r in responses] == ["call_1", "call_1"]
    assert responses[0].response == {"city": "Oslo", "weather": "sunny"}
    unwrapped = Harness.build(backend, wrapped=False, steps=[text("?")])
    await unwrapped.turn(session_id, "hello again?")
    if builder_traits().history_pairs_by_last_response:
        # ADK <= 2.6 sends the last call_1 result after both calls; a
        # placeholder would have displaced it, so the view adds none.
        assert responses[1].response == responses[0].response
        assert not unwrapped.script.last.violations
        return
    assert responses[1].response["status"] == CallStatus.MISSING.value
    assert unwrapped.script.last.violations, "ADK was expected to keep the reused id"


async def _events(backend: Backend, session_id: str) -> list[Event]:
    session = await backend.service.get_session(
        app_name=backend.app_name, user_id=USER_ID, session_id=session_id
    )
    assert session is not None
    return session.events


async def test_a_model_reusing_the_id_of_its_interrupted_call_gets_valid_requests(
    backend: Backend,
) -> None:
    """Models that number their calls per turn (``call_1``) reuse an id while the
    interrupted call with it is still unanswered: an irregular history, whose view
    `adk_pairing.rules.builder_check` checks against ADK's own builder on every read and append,
    but under the newest builder only until a call with the id is answered (it then pairs
    the id as the view does, `OpenCallIndex.note_reuse`). Every request stays valid, and
    nothing synthetic reaches the store."""
    steps = [
        calls(call("hang", {"reason": "slow"}, id="call_1")),
        calls(call("lookup", {"city": "Oslo"}, id="call_1")),
        text("Sunny."),
    ]
    wrapped = Harness.build(backend, wrapped=True, steps=steps)
    session_id = await wrapped.new_session()
    await wrapped.interrupted_turn(session_id, "slow thing")
    await wrapped.turn(session_id, "weather?")

    stored = await _events(backend, session_id)
    assert analyze(stored).calls
    assert build_ledger(stored).irregular == (builder_traits() != NEWEST_BUILDER)
    assert_every_request_valid(wrapped.script)
    last = wrapped.script.last
    assert [c.id for c in last.function_calls] == ["call_1", "call_1"]
    statuses = [r.response.get("status") for r in last.function_responses]
    if builder_traits().history_pairs_by_last_response:
        # ADK <= 2.6 sends the last call_1 result after both calls (see above).
        assert statuses == [None, None]
    else:
        assert statuses == [CallStatus.MISSING.value, None]  # then the real result
    assert not [e for e in stored if not e.invocation_id]  # no synthetic event stored
