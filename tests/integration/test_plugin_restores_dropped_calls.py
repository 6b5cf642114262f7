"""`PairingPlugin` alone keeps every call of the agent's history in the request, on every ADK.

From google-adk 2.10 ADK's request builder drops a call nothing answers before
any plugin runs; the plugin puts it back (`adk_pairing.passes.restore_pass`). Each
test drives a real `Runner` over a real store with the scripted model, and
asserts on the request the model received: the interrupted call is there,
answered (its real result or the view's placeholder), and the four rules hold
on the real converters. Histories a killed process leaves are written to the
store directly: the user's turn and the model's call event, nothing after. A
task cancelled mid-tool is `test_plugin_runner.py`'s
`test_plugin_alone_answers_an_interrupted_call_on_every_adk`.
"""

from __future__ import annotations

import logging

import pytest
from google.adk.events.event import Event
from google.genai import types

from adk_pairing import CallStatus, PairingPlugin
from tests.adk_features import adk_drops_unanswered_calls

from .conftest import backend_params
from .support.backends import PERSISTENT_KINDS, Backend
from .support.scenario import (
    USER_ID,
    Harness,
    assert_every_request_valid,
    assert_every_rule_holds,
)
from .support.scripted_model import RecordedRequest, call, calls, text, user_text

CONFIRMATION = "adk_request_confirmation"


def assert_answered(request: RecordedRequest, *call_ids: str) -> None:
    """Each of `call_ids` is a call in `request`, and some result with its id follows it."""
    sent = [c.id for c in request.function_calls]
    answered = [r.id for r in request.function_responses]
    for call_id in call_ids:
        assert call_id in sent, f"{call_id} is not in the request: calls {sent}"
        assert call_id in answered, f"{call_id} is unanswered: results {answered}"


async def store_history(harness: Harness, events: list[Event]) -> str:
    """A session whose stored history is `events`, written as ADK's runner writes them."""
    session_id = await harness.new_session()
    session = await harness.backend.service.get_session(
        app_name=harness.backend.app_name, user_id=USER_ID, session_id=session_id
    )
    assert session is not None
    for event in events:
        await harness.backend.service.append_event(session, event)
    return session_id


def user_event(message: str, invocation: str) -> Event:
    return Event(author="user", invocation_id=invocation, content=user_text(message))


def model_event(parts: list[types.Part], invocation: str) -> Event:
    return Event(
        author="assistant",
        invocation_id=invocation,
        content=types.Content(role="model", parts=parts),
    )


def result(call_id: str, name: str, payload: dict[str, object]) -> types.Part:
    return types.Part(
        function_response=types.FunctionResponse(id=call_id, name=name, response=payload)
    )


def killed_mid_tool() -> list[Event]:
    """A process killed while `hang` ran: the call is stored, nothing answers it."""
    return [
        user_event("do the slow thing", "inv-1"),
        model_event([call("hang", {"reason": "slow"}, id="call_1")], "inv-1"),
    ]


def parallel_partly_answered(*, with_text: bool) -> list[Event]:
    """The issue's example: ``get_weather`` answered, ``get_time`` never returned."""
    answer = [result("w1", "lookup", {"weather": "sunny"})]
    if with_text:
        answer.append(types.Part(text="(weather fetched)"))
    return [
        user_event("weather and time in Oslo?", "inv-1"),
        model_event(
            [call("lookup", {"city": "Oslo"}, id="w1"), call("hang", {"reason": "time"}, id="t1")],
            "inv-1",
        ),
        Event(
            author="assistant",
            invocation_id="inv-1",
            content=types.Content(role="user", parts=answer),
        ),
    ]


async def test_plugin_alone_restores_a_call_a_killed_process_left_unanswered(
    backend: Backend,
) -> None:
    harness = Harness.build(backend, wrapped=False, plugins=[PairingPlugin()], steps=[text("Ok.")])
    session_id = await store_history(harness, killed_mid_tool())
    await harness.turn(session_id, "are you still there?")

    assert_every_rule_holds(harness.script)
    last = harness.script.last
    assert_answered(last, "call_1")
    assert [r.id for r in last.responses_with_status(CallStatus.MISSING.value)] == ["call_1"]
    assert last.contents[-1].parts[-1].text == "are you still there?"
    assert harness.toolbox.started == {}


@pytest.mark.parametrize("with_text", [False, True], ids=["results-only", "result-and-text"])
@pytest.mark.parametrize("wrapped", [False, True], ids=["plugin-alone", "both"])
async def test_a_parallel_turn_partly_answered_keeps_both_calls(
    backend: Backend, wrapped: bool, with_text: bool
) -> None:
    # With text beside the result, no placeholder event keeps every rule, so
    # the view serves the stored events (`Fallback.ANSWERS_OUT_OF_ORDER` or
    # `UNPROVEN`): with both pieces the plugin is what keeps `t1`.
    harness = Harness.build(
        backend, wrapped=wrapped, plugins=[PairingPlugin()], steps=[text("Ok.")]
    )
    session_id = await store_history(harness, parallel_partly_answered(with_text=with_text))
    await harness.turn(session_id, "and?")

    assert_every_rule_holds(harness.script)
    last = harness.script.last
    assert_answered(last, "w1", "t1")
    assert {r.id: r.response for r in last.function_responses}["w1"] == {"weather": "sunny"}
    assert harness.toolbox.started == {}


async def test_the_decorator_alone_loses_the_call_of_a_fallback_where_adk_drops_it(
    backend: Backend,
) -> None:
    # What docs/request-pass.md states for the decorator alone on >= 2.10:
    # the view serves this history as stored, so ADK drops `t1`. Before 2.10
    # ADK sends it, answered or not as the view's check decides there.
    harness = Harness.build(backend, wrapped=True, steps=[text("Ok.")])
    session_id = await store_history(harness, parallel_partly_answered(with_text=True))
    await harness.turn(session_id, "and?")

    last = harness.script.last
    sent = [c.id for c in last.function_calls]
    if adk_drops_unanswered_calls():
        assert sent == ["w1"]
        assert_every_request_valid(harness.script)  # valid, but `t1` is gone
    else:
        assert sorted(sent) == ["t1", "w1"]


async def test_plugin_alone_answers_a_long_running_call_followed_by_user_text(
    backend: Backend,
) -> None:
    # ADK keeps a call it holds open on every release; no builder run is needed.
    harness = Harness.build(
        backend,
        wrapped=False,
        plugins=[PairingPlugin()],
        steps=[calls(call("start_job", {"name": "r"}, id="job_1")), text("Running."), text("Ok.")],
    )
    session_id = await harness.new_session()
    await harness.turn(session_id, "start the report")
    await harness.turn(session_id, "how is it going?")

    assert_every_rule_holds(harness.script)
    last = harness.script.last
    assert_answered(last, "job_1")
    assert [r.id for r in last.responses_with_status(CallStatus.PENDING.value)] == ["job_1"]
    assert harness.toolbox.started == {"start_job": 1}


@pytest.mark.parametrize("backend_spec", backend_params(PERSISTENT_KINDS), indirect=True)
@pytest.mark.parametrize("resume", [True, False], ids=["resumed", "new-message"])
async def test_a_resumable_app_killed_mid_tool_runs_the_tool_as_often_as_unwrapped(
    backend: Backend, resume: bool
) -> None:
    steps = [calls(call("hang", {"reason": "slow"}, id="call_1")), text("Done now.")]
    with_plugin = Harness.build(
        backend, wrapped=False, resumable=True, plugins=[PairingPlugin()], steps=steps
    )
    plain = Harness.build(backend, wrapped=False, resumable=True, steps=steps)

    for harness in (with_plugin, plain):
        session_id = await harness.new_session()
        invocation_id = await harness.interrupted_turn(session_id, "do the slow thing")
        harness.toolbox.release()
        if resume:
            await harness.turn(session_id, None, invocation_id=invocation_id)
        else:
            await harness.turn(session_id, "never mind, what now?")

    assert with_plugin.toolbox.started == plain.toolbox.started
    assert with_plugin.toolbox.finished == plain.toolbox.finished
    assert_every_rule_holds(with_plugin.script)
    last = with_plugin.script.last
    assert_answered(last, "call_1")
    if resume:
        # The resumed invocation ran the tool again: the real result, no placeholder.
        assert not last.responses_with_status(CallStatus.MISSING.value)


async def test_a_content_added_before_the_plugin_keeps_the_restore(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    # Another plugin appended a content: the start ADK built is still there, so
    # the dropped call goes back where ADK's builder would have put it.
    from google.adk.plugins.base_plugin import BasePlugin

    class AddsANote(BasePlugin):
        async def before_model_callback(self, *, callback_context, llm_request):  # type: ignore[no-untyped-def]
            llm_request.contents.append(
                types.Content(role="model", parts=[types.Part(text="(a note)")])
            )

    harness = Harness.build(
        backend,
        wrapped=False,
        plugins=[AddsANote(name="note"), PairingPlugin()],
        steps=[text("Ok."), text("Ok again.")],
    )
    session_id = await store_history(harness, killed_mid_tool())
    with caplog.at_level(logging.WARNING, logger="adk_pairing"):
        await harness.turn(session_id, "are you still there?")
        await harness.turn(session_id, "hello?")

    assert_every_rule_holds(harness.script)
    for request in harness.script.requests:
        assert_answered(request, "call_1")
    assert not [r for r in caplog.records if "could not be put back" in r.getMessage()]


async def test_the_restore_keeps_the_instruction_contents_adk_inserts(backend: Backend) -> None:
    # With a static instruction, ADK puts the agent's dynamic instruction into
    # the contents, before the latest user turn: the splice carries it over.
    harness = Harness.build(backend, wrapped=False, plugins=[PairingPlugin()], steps=[text("Ok.")])
    agent = harness.runner.agent
    agent.static_instruction = types.Content(
        role="user", parts=[types.Part(text="You are a test assistant.")]
    )
    agent.instruction = "Today's mood: cheerful."
    session_id = await store_history(harness, killed_mid_tool())
    await harness.turn(session_id, "are you still there?")

    assert_every_rule_holds(harness.script)
    last = harness.script.last
    assert_answered(last, "call_1")
    texts = last.texts()
    assert any("cheerful" in t for t in texts), texts
    assert texts[-1] == "are you still there?"


async def test_a_confirmation_flow_runs_the_tool_as_often_as_unwrapped(backend: Backend) -> None:
    # ADK holds its confirmation request open and leaves that event out of
    # the request: nothing the plugin restores may look like an approval.
    steps = [
        calls(call("delete_file", {"path": "/tmp/old.log"}, id="del_1")),
        text("I need your approval first."),
        text("Deleted."),
    ]
    with_plugin = Harness.build(backend, wrapped=False, plugins=[PairingPlugin()], steps=steps)
    plain = Harness.build(backend, wrapped=False, steps=steps)
    for harness in (with_plugin, plain):
        session_id = await harness.new_session()
        events = await harness.turn(session_id, "delete /tmp/old.log")
        (confirmation,) = [
            c for e in events for c in e.get_function_calls() if c.name == CONFIRMATION
        ]
        await harness.turn(session_id, "wait, what will that do?")
        assert harness.toolbox.started["delete_file"] == 0, "a plain message is not an approval"
        await harness.turn(
            session_id,
            types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            id=confirmation.id, name=CONFIRMATION, response={"confirmed": True}
                        )
                    )
                ],
            ),
        )

    assert with_plugin.toolbox.started == plain.toolbox.started == {"delete_file": 1}
    assert with_plugin.toolbox.finished == plain.toolbox.finished
    assert_every_rule_holds(with_plugin.script)
    assert with_plugin.script.last.function_responses[-1].response == {"deleted": "/tmp/old.log"}
