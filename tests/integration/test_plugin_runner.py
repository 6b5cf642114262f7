"""`PairingPlugin` in a real Runner, alone and next to the decorator, on every store.

The model is `ScriptedClaude`, which records each request *as the model
received it*, i.e. after every plugin, and checks it against Anthropic's rule
with ADK's converter. On top of that every recorded request must satisfy the
four rules of `adk_pairing.rules.checks` (Anthropic, OpenAI chat via LiteLlm,
Gemini, strict alternation).
"""

from __future__ import annotations

import contextlib
import logging

import pytest
from google.genai import types

from adk_pairing import CallStatus, PairingPlugin
from adk_pairing.rules.checks import request_violations

from .conftest import backend_params
from .support.backends import PERSISTENT_KINDS, Backend
from .support.scenario import Harness, assert_every_request_valid, placeholder_ids
from .support.scripted_model import (
    Script,
    call,
    calls,
    function_responses,
    text,
)


def assert_every_request_satisfies_all_rules(script: Script) -> None:
    """All four rules of `adk_pairing.rules.checks`, on ADK's and LiteLlm's conversions."""
    assert_every_request_valid(script)
    for number, request in enumerate(script.requests):
        found = {rule: v for rule, v in request_violations(request.contents).items() if v}
        assert not found, f"request {number} breaks {found}"


def plugin_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "adk_pairing"
        and record.levelno == logging.WARNING
        and "repaired the model request" in record.getMessage()
    ]


async def held_open_job_then_user_text(
    backend: Backend,
    plugin: PairingPlugin,
    *,
    wrapped: bool,
    caplog: pytest.LogCaptureFixture | None = None,
    job_name: str = "r",
) -> tuple[Harness, str]:
    """Two turns in a new session: the model starts a long-running job
    (``job_1``, which ADK holds open), then the user asks "how is it going?".

    Logs are captured, when `caplog` is given, for the second turn only.
    Returns the harness and the session id.
    """
    harness = Harness.build(
        backend,
        wrapped=wrapped,
        plugins=[plugin],
        steps=[calls(call("start_job", {"name": job_name}, id="job_1")), text("Running.")],
    )
    session_id = await harness.new_session()
    await harness.turn(session_id, "start the report job")
    capturing = (
        caplog.at_level(logging.WARNING, logger="adk_pairing")
        if caplog is not None
        else contextlib.nullcontext()
    )
    with capturing:
        await harness.turn(session_id, "how is it going?")
    return harness, session_id


async def test_plugin_alone_answers_a_pending_call_followed_by_user_text(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    # ADK keeps a long-running call it holds open in the request on every
    # version; followed by plain user text, Anthropic rejects it.
    harness, session_id = await held_open_job_then_user_text(
        backend, PairingPlugin(), wrapped=False, caplog=caplog, job_name="secret-report"
    )

    assert_every_request_satisfies_all_rules(harness.script)
    last = harness.script.last
    assert placeholder_ids(last, CallStatus.PENDING.value) == ["job_1"]
    assert last.contents[-1].parts[-1].text == "how is it going?"
    warnings = plugin_warnings(caplog)
    assert len(warnings) == 1
    assert "placeholder(pending) job_1" in warnings[0]
    assert session_id in warnings[0]
    assert "secret-report" not in caplog.text  # never a payload


# The persistent stores only: on google-adk 2.13 `Harness.interrupted_turn`
# over an *unwrapped* InMemorySessionService times out waiting for the call
# to be stored and running (with the decorator it does not); not a plugin
# matter, and the claim is the same on every store.
@pytest.mark.parametrize("backend_spec", backend_params(PERSISTENT_KINDS), indirect=True)
async def test_plugin_alone_answers_an_interrupted_call_on_every_adk(
    backend: Backend,
) -> None:
    # From google-adk 2.10 the request builder drops a call nothing answers
    # before any plugin runs; the plugin puts it back (`adk_pairing.passes.restore_pass`).
    harness = Harness.build(
        backend,
        wrapped=False,
        plugins=[PairingPlugin()],
        steps=[calls(call("hang", {"reason": "slow"}, id="call_1")), text("Sorry.")],
    )
    session_id = await harness.new_session()
    await harness.interrupted_turn(session_id, "do the slow thing")
    await harness.turn(session_id, "are you still there?")

    assert_every_request_satisfies_all_rules(harness.script)
    last = harness.script.last
    assert [c.id for c in last.function_calls] == ["call_1"]
    assert placeholder_ids(last, CallStatus.MISSING.value) == ["call_1"]
    assert harness.toolbox.started == {"hang": 1}


async def test_plugin_alone_leaves_the_request_untouched_when_it_is_already_valid(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    harness = Harness.build(
        backend,
        wrapped=False,
        plugins=[PairingPlugin()],
        steps=[calls(call("lookup", {"city": "Oslo"}, id="c1")), text("Sunny."), text("Bye.")],
    )
    session_id = await harness.new_session()
    with caplog.at_level(logging.WARNING, logger="adk_pairing"):
        await harness.turn(session_id, "weather in Oslo?")
        await harness.turn(session_id, "thanks")
    assert_every_request_satisfies_all_rules(harness.script)
    assert plugin_warnings(caplog) == []


async def test_view_and_plugin_merge_the_views_placeholder_with_the_users_text_quietly(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    # The view answers the pending call in an event of its own, so the request
    # holds two user contents in a row; the plugin merges them, results first.
    harness, _ = await held_open_job_then_user_text(
        backend, PairingPlugin(), wrapped=True, caplog=caplog
    )

    assert_every_request_satisfies_all_rules(harness.script)
    last = harness.script.last
    merged = last.contents[-1]
    assert merged.parts[0].function_response.id == "job_1"
    assert merged.parts[-1].text == "how is it going?"
    assert plugin_warnings(caplog) == []


@pytest.mark.parametrize("older_result_first", [True, False], ids=["older-first", "newer-first"])
async def test_two_pending_calls_answered_in_either_order_keep_every_request_valid(
    backend: Backend, older_result_first: bool
) -> None:
    # ADK's rearranger cuts the history after the call the newest result
    # answers; with the older call's result posted after the newer call, that
    # drops the older real answer from the request.
    harness = Harness.build(
        backend,
        wrapped=True,
        plugins=[PairingPlugin()],
        steps=[
            calls(call("start_job", {"name": "a"}, id="job_1")),
            calls(call("start_job", {"name": "b"}, id="job_2")),
            text("First done."),
            text("Second done."),
            text("All good."),
        ],
    )
    session_id = await harness.new_session()
    await harness.turn(session_id, "start job a")
    await harness.turn(session_id, "start job b")
    order = ["job_1", "job_2"] if older_result_first else ["job_2", "job_1"]
    for job_id in order:
        await harness.turn(session_id, function_responses((job_id, "start_job", {"done": job_id})))
    await harness.turn(session_id, "status?")
    assert_every_request_satisfies_all_rules(harness.script)


async def test_text_and_call_in_one_part_keeps_the_call_and_its_result_paired(
    backend: Backend,
) -> None:
    # ADK's Anthropic converter sends only the text of such a part, orphaning
    # the result; the plugin splits the part first.
    mixed = types.Part(
        text="Let me look.",
        function_call=types.FunctionCall(id="c1", name="lookup", args={"city": "Oslo"}),
    )
    harness = Harness.build(
        backend,
        wrapped=True,
        plugins=[PairingPlugin()],
        steps=[calls(mixed), text("Sunny.")],
    )
    session_id = await harness.new_session()
    await harness.turn(session_id, "weather?")
    assert_every_request_satisfies_all_rules(harness.script)
    assert [c.id for c in harness.script.last.function_calls] == ["c1"]


async def test_plugin_answers_with_its_own_placeholder_text_when_given_one(
    backend: Backend,
) -> None:
    harness, _ = await held_open_job_then_user_text(
        backend, PairingPlugin(pending_text="Hold on, it is running."), wrapped=False
    )
    (placeholder,) = harness.script.last.responses_with_status(CallStatus.PENDING.value)
    assert placeholder.response["message"] == "Hold on, it is running."
