"""Calls ADK holds open on purpose: long-running tools and tool confirmations.

While such a call waits for its real result, the view answers it with a
"pending" placeholder so a request built in the meantime is valid; the
placeholder must never stand in for the real answer: when the real result or
the approval arrives, the model gets it, the tool runs exactly as often as
without adk-pairing, and no placeholder is left in the view.
"""

from __future__ import annotations

import pytest

from adk_pairing import CallStatus, is_synthetic

from .support.backends import Backend
from .support.scenario import (
    Harness,
    assert_every_request_valid,
    assert_no_placeholder_in_view,
    placeholder_ids,
)
from .support.scripted_model import (
    AnthropicPairingRejected,
    call,
    calls,
    function_responses,
    text,
)

CONFIRMATION = "adk_request_confirmation"


async def test_pending_long_running_call_is_answered_pending_until_its_real_result_arrives(
    backend: Backend,
) -> None:
    harness = Harness.build(
        backend,
        wrapped=True,
        steps=[
            calls(call("start_job", {"name": "report"}, id="job_1")),
            text("Still running."),
            text("The report is ready."),
        ],
    )
    session_id = await harness.new_session()
    await harness.turn(session_id, "start the report job")
    assert len(harness.script.requests) == 1, "ADK pauses after a long-running call"

    await harness.turn(session_id, "how is it going?")
    assert_every_request_valid(harness.script)
    assert placeholder_ids(harness.script.last, CallStatus.PENDING.value) == ["job_1"]

    await harness.turn(session_id, function_responses(("job_1", "start_job", {"rows": 42})))
    assert_every_request_valid(harness.script)
    last = harness.script.last
    assert [(r.id, r.response) for r in last.function_responses] == [("job_1", {"rows": 42})]
    assert_no_placeholder_in_view(await harness.view(session_id))
    assert harness.toolbox.finished["start_job"] == 1


async def test_pending_long_running_call_breaks_the_next_request_without_the_decorator(
    backend: Backend,
) -> None:
    """ADK 2.13 keeps a pending long-running call in the request (it is not an
    orphan to drop), so a plain user message after it is rejected by Anthropic."""
    harness = Harness.build(
        backend,
        wrapped=False,
        strict=True,
        steps=[calls(call("start_job", {"name": "report"}, id="job_1")), text("unused")],
    )
    session_id = await harness.new_session()
    await harness.turn(session_id, "start the report job")
    with pytest.raises(AnthropicPairingRejected):
        await harness.turn(session_id, "how is it going?")


@pytest.mark.parametrize("wrapped", [True, False], ids=["wrapped", "unwrapped"])
async def test_pending_confirmation_survives_a_plain_message_and_approval_runs_tool_once(
    backend: Backend, wrapped: bool
) -> None:
    harness = Harness.build(
        backend,
        wrapped=wrapped,
        steps=[
            calls(call("delete_file", {"path": "/tmp/old.log"}, id="del_1")),
            text("I need your approval first."),
            text("Deleted."),
        ],
    )
    session_id = await harness.new_session()
    events = await harness.turn(session_id, "delete /tmp/old.log")
    requests = [c for e in events for c in e.get_function_calls() if c.name == CONFIRMATION]
    assert len(requests) == 1
    confirmation_id = requests[0].id

    await harness.turn(session_id, "wait, what will that do?")
    assert harness.toolbox.started["delete_file"] == 0, "a plain message is not an approval"
    if wrapped:
        view = await harness.view(session_id)
        synthetic = [e for e in view.events if is_synthetic(e)]
        assert len(synthetic) == 1
        placeholder = synthetic[0]
        assert placeholder.author != "user"
        (response,) = [p.function_response for p in placeholder.content.parts]
        assert (response.id, response.name) == (confirmation_id, CONFIRMATION)
        assert response.response["status"] == CallStatus.PENDING.value
        assert "confirmed" not in response.response

    await harness.turn(
        session_id, function_responses((confirmation_id, CONFIRMATION, {"confirmed": True}))
    )
    assert harness.toolbox.finished["delete_file"] == 1
    assert_every_request_valid(harness.script)
    assert harness.script.last.function_responses[-1].response == {"deleted": "/tmp/old.log"}
    if wrapped:
        assert_no_placeholder_in_view(await harness.view(session_id))


async def test_same_turn_request_after_parallel_ordinary_and_long_running_call_is_valid(
    backend: Backend,
) -> None:
    """ADK calls the model again within the turn once the ordinary call returns,
    with the long-running call still unanswered."""
    steps = [
        calls(
            call("lookup", {"city": "Oslo"}, id="call_a"),
            call("start_job", {"name": "report"}, id="call_b"),
        ),
        text("Sunny; the report is on its way."),
    ]
    wrapped = Harness.build(backend, wrapped=True, steps=steps)
    session_id = await wrapped.new_session()
    await wrapped.turn(session_id, "weather, and start the report")

    assert len(wrapped.script.requests) == 2
    assert_every_request_valid(wrapped.script)
    second = wrapped.script.last
    assert placeholder_ids(second, CallStatus.PENDING.value) == ["call_b"]
    assert [r.id for r in second.function_responses] == ["call_a", "call_b"]
    assert not second.rules["gemini"], "answers must come in call order"


async def test_later_turns_answer_an_ordinary_then_long_running_call_in_call_order(
    backend: Backend,
) -> None:
    """ADK stores the ordinary call's result in an event of its own after the
    call event, and nothing for the long-running call: the view's placeholder
    for it must follow that result, or ADK's builder merges them as [B, A]."""
    steps = [
        calls(
            call("lookup", {"city": "Oslo"}, id="call_a"),
            call("start_job", {"name": "report"}, id="call_b"),
        ),
        text("Sunny; the report is on its way."),
        text("Still running."),
    ]
    harness = Harness.build(backend, wrapped=True, steps=steps)
    session_id = await harness.new_session()
    await harness.turn(session_id, "weather, and start the report")
    await harness.turn(session_id, "how is the report going?")

    assert_every_request_valid(harness.script)
    for request in harness.script.requests[1:]:
        assert [r.id for r in request.function_responses] == ["call_a", "call_b"]
        assert not request.rules["gemini"], request.rules["gemini"]
        assert not request.rules["openai_chat"], request.rules["openai_chat"]


async def test_same_turn_request_after_parallel_long_running_call_is_rejected_unwrapped(
    backend: Backend,
) -> None:
    steps = [
        calls(
            call("lookup", {"city": "Oslo"}, id="call_a"),
            call("start_job", {"name": "report"}, id="call_b"),
        ),
        text("unused"),
    ]
    unwrapped = Harness.build(backend, wrapped=False, strict=True, steps=steps)
    session_id = await unwrapped.new_session()
    with pytest.raises(AnthropicPairingRejected):
        await unwrapped.turn(session_id, "weather, and start the report")
    assert unwrapped.script.last.violations == [
        "message 1: tool_use ids ['call_b'] were found without tool_result blocks immediately after"
    ]
