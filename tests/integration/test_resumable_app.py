"""Resuming an interrupted invocation of a resumable app, with and without adk-pairing.

The placeholder a view puts after the interrupted call belongs to no invocation
(empty ``invocation_id``), so ADK's resume logic, which reads only the resumed
invocation's events, must decide exactly as it does unwrapped: here it runs the
interrupted tool again, and the tool completes exactly once in both cases.
"""

from __future__ import annotations

from adk_pairing import CallStatus

from .support.backends import Backend
from .support.scenario import (
    Harness,
    assert_every_request_valid,
    assert_no_placeholder_in_view,
    normalized_history,
)
from .support.scripted_model import call, calls, text


async def _interrupt_then_resume(harness: Harness) -> str:
    session_id = await harness.new_session()
    invocation_id = await harness.interrupted_turn(session_id, "do the slow thing")
    harness.toolbox.release()
    await harness.turn(session_id, None, invocation_id=invocation_id)
    return session_id


async def test_resumed_invocation_runs_the_interrupted_tool_exactly_as_often_as_unwrapped(
    backend: Backend,
) -> None:
    steps = [calls(call("hang", {"reason": "slow"}, id="call_1")), text("Done now.")]
    wrapped = Harness.build(backend, wrapped=True, resumable=True, steps=steps)
    unwrapped = Harness.build(backend, wrapped=False, resumable=True, steps=steps)

    wrapped_session = await _interrupt_then_resume(wrapped)
    unwrapped_session = await _interrupt_then_resume(unwrapped)

    assert wrapped.toolbox.finished == unwrapped.toolbox.finished == {"hang": 1}
    assert wrapped.toolbox.started == unwrapped.toolbox.started
    assert_every_request_valid(wrapped.script)
    # The resumed request carries the real result, not a placeholder.
    last = wrapped.script.last
    assert [(r.id, r.response) for r in last.function_responses] == [
        ("call_1", {"reason": "slow", "result": "done"})
    ]
    assert not last.responses_with_status(CallStatus.MISSING.value)
    assert_no_placeholder_in_view(await wrapped.view(wrapped_session))
    assert normalized_history(await wrapped.stored_events(wrapped_session)) == (
        normalized_history(await unwrapped.stored_events(unwrapped_session))
    )
