"""`PairingPlugin`'s own decisions: which texts, whether to fill ids, failing open.

The Runner behaviour is in tests/integration/test_plugin_runner.py; these pin
the shell's choices with stand-in contexts (pure logic, no I/O).
"""

from __future__ import annotations

import logging
import uuid
from types import SimpleNamespace

import pytest
from google.adk.events.event import Event
from google.adk.models.anthropic_llm import AnthropicLlm
from google.adk.models.google_llm import Gemini
from google.adk.models.llm_request import LlmRequest
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.sessions import InMemorySessionService
from google.genai import types

from adk_pairing import PairingPlugin, PairingSessionService, PlaceholderTexts
from adk_pairing.ledger import held_open_call_ids
from adk_pairing.wire import pairs_calls_by_id


def request_with_idless_dangling_call() -> LlmRequest:
    return LlmRequest(
        contents=[
            types.Content(role="user", parts=[types.Part(text="hi")]),
            types.Content(
                role="model",
                parts=[types.Part(function_call=types.FunctionCall(name="lookup", args={}))],
            ),
            types.Content(role="user", parts=[types.Part(text="again")]),
        ]
    )


def context(model: object = None, session_service: object = None, events: list | None = None):
    session = SimpleNamespace(app_name="app", user_id="u", id="s-1", events=events or [])
    invocation = SimpleNamespace(
        session=session,
        session_service=session_service,
        agent=SimpleNamespace(canonical_model=model),
    )
    return SimpleNamespace(_invocation_context=invocation)


def test_plugin_is_an_adk_base_plugin_that_adk_cli_can_instantiate_by_name() -> None:
    # ADK's --extra_plugins calls plugin_class(name=qualified_name).
    plugin = PairingPlugin(name="adk_pairing.PairingPlugin")
    assert isinstance(plugin, BasePlugin)
    assert plugin.name == "adk_pairing.PairingPlugin"


def test_plugin_without_texts_takes_the_decorators_texts() -> None:
    service = PairingSessionService(InMemorySessionService(), pending_text="wait", missing_text="?")
    assert PairingPlugin().texts_for(service) == PlaceholderTexts(missing="?", pending="wait")
    assert PairingPlugin(missing_text="own").texts_for(service) == PlaceholderTexts(
        missing="own", pending="wait"
    )
    assert PairingPlugin().texts_for(InMemorySessionService()) == PlaceholderTexts()


def test_ids_are_filled_for_models_that_pair_by_id_only() -> None:
    assert pairs_calls_by_id(AnthropicLlm(model="claude-x"))
    assert not pairs_calls_by_id(Gemini(model="gemini-2.5-flash"))
    assert not pairs_calls_by_id(None)


@pytest.mark.parametrize(
    ("model", "expected_id"),
    [(AnthropicLlm(model="claude-x"), "call_pairing_1"), (Gemini(model="gemini-x"), None)],
    ids=["anthropic", "gemini"],
)
async def test_plugin_fills_ids_per_the_agents_model(
    model: object, expected_id: str | None
) -> None:
    request = request_with_idless_dangling_call()
    await PairingPlugin().before_model_callback(
        callback_context=context(model), llm_request=request
    )
    assert request.contents[1].parts[0].function_call.id == expected_id
    assert request.contents[2].parts[0].function_response.id == expected_id


async def test_plugin_reads_held_open_ids_from_the_session_events() -> None:
    request = request_with_idless_dangling_call()
    request.contents[1].parts[0].function_call.id = "job_1"
    events = [call_event("job_1", held_open=True)]
    await PairingPlugin().before_model_callback(
        callback_context=context(events=events), llm_request=request
    )
    placeholder = request.contents[2].parts[0].function_response
    assert placeholder.response["status"] == "pending"


def call_event(call_id: str, *, held_open: bool) -> Event:
    return Event(
        author="assistant",
        invocation_id="i",
        long_running_tool_ids={call_id} if held_open else None,
        content=types.Content(
            role="model",
            parts=[types.Part(function_call=types.FunctionCall(id=call_id, name="job", args={}))],
        ),
    )


def test_an_id_is_held_open_only_while_its_newest_call_is() -> None:
    """A model id once held open, then reused by an ordinary call, is that call's now."""
    held_then_plain = [call_event("call_1", held_open=True), call_event("call_1", held_open=False)]
    plain_then_held = [call_event("call_1", held_open=False), call_event("call_1", held_open=True)]
    assert held_open_call_ids(held_then_plain) == set()
    assert held_open_call_ids(plain_then_held) == {"call_1"}
    no_calls = Event(author="user", invocation_id="i", long_running_tool_ids={"call_2"})
    assert held_open_call_ids([*plain_then_held, no_calls]) == {"call_1"}


async def test_plugin_sends_the_request_as_built_when_the_repair_fails(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("adk_pairing.shells.plugin.repair_contents", broken)
    request = request_with_idless_dangling_call()
    contents = request.contents
    with caplog.at_level(logging.ERROR, logger="adk_pairing"):
        result = await PairingPlugin().before_model_callback(
            callback_context=context(), llm_request=request
        )
    assert result is None
    assert request.contents is contents
    assert "app=app user=u session=s-1" in caplog.text


async def test_a_builder_refusing_the_restored_history_is_logged_once_and_not_retried(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Releases up to 2.10 refuse some malformed placements: the request pass alone then runs."""
    builds: list[int] = []

    async def build(invocation: object, llm_request: LlmRequest, events: list) -> list:
        builds.append(len(events))
        if len(events) > 2:  # over the repaired events: the stored history has two
            raise ValueError("No function call event found")
        return list(llm_request.contents)

    monkeypatch.setattr("adk_pairing.shells.plugin.rerun_contents_processor", build)
    events = [
        Event(author="user", invocation_id="i", content=types.Content(role="user", parts=[])),
        call_event("job_1", held_open=False),
    ]
    plugin = PairingPlugin()
    callback_context = context(events=events)
    # The once-per-session log is process-wide: a session of this test's own.
    callback_context._invocation_context.session.id = f"refused-{uuid.uuid4().hex}"
    with caplog.at_level(logging.WARNING, logger="adk_pairing"):
        for _ in range(3):
            request = LlmRequest(
                contents=[types.Content(role="user", parts=[types.Part(text="hi")])]
            )
            await plugin.before_model_callback(
                callback_context=callback_context, llm_request=request
            )
            assert [c.role for c in request.contents] == ["user"]
    # One restore tried, repaired build first, so the stored build is never needed;
    # the same request shape is not tried again.
    assert builds == [3]
    ours = [r for r in caplog.records if r.name.startswith("adk_pairing")]
    refused = [r for r in ours if "refused" in r.getMessage()]
    assert len(refused) == 1 and "ValueError" in refused[0].getMessage(), caplog.text
    assert not [r for r in ours if r.levelno >= logging.ERROR], caplog.text


async def test_sessions_that_need_no_rewrite_do_not_push_out_one_that_does(monkeypatch) -> None:
    # The plugin remembers a few sessions' last rewrites (`REMEMBERED_REWRITES`):
    # a server's many healthy sessions must not take those places, or the
    # memory stops serving exactly the sessions that need it.
    from adk_pairing.shells.plugin import REMEMBERED_REWRITES

    from .test_request_memo import _as_adk_copies, _Resumptions, _turn

    counts = _Resumptions(monkeypatch)
    plugin = PairingPlugin(fill_missing_ids=True)

    async def send(session_id: str, contents: list[types.Content]) -> None:
        callback = context()
        callback._invocation_context.session.id = session_id
        await plugin.before_model_callback(
            callback_context=callback, llm_request=LlmRequest(contents=contents)
        )

    reusing: list[types.Content] = []
    for turn in range(3):
        reusing = _as_adk_copies(reusing) + _turn("call_0", f"question {turn}")
        await send("reuses-ids", reusing)
    resumed = counts.resumed
    assert resumed >= 1
    for healthy in range(REMEMBERED_REWRITES + 8):
        await send(f"healthy-{healthy}", _turn(f"own_{healthy}", "hello"))
    reusing = _as_adk_copies(reusing) + _turn("call_0", "question 3")
    await send("reuses-ids", reusing)
    assert counts.resumed == resumed + 1
