"""The calls-lost oracle (`tests.calls_lost`), on requests ADK's own builder makes.

It must see a loss where the model is not told it acted (an interrupted call,
unwrapped: dropped from 2.10, sent unanswered before), none where every call
has a result, and none where the view answers the call; and it must count
only the calls ADK would show the agent at all.
"""

from __future__ import annotations

import asyncio

import pytest
from google.adk.agents.callback_context import CallbackContext
from google.adk.events.event import Event
from google.adk.models.llm_request import LlmRequest
from google.adk.sessions import InMemorySessionService
from google.genai import types

from adk_pairing import PairingPlugin, PairingSessionService
from adk_pairing.core.repair import repaired_events
from tests import calls_lost as oracle
from tests.calls_lost import (
    BEFORE_THE_PLUGIN,
    COUNTED,
    SETUPS,
    SentCall,
    calls_lost,
    calls_that_count,
    lost_per_setup,
    request_contents,
    sent_calls,
)

from .events import call, model_event, response, response_event, user_text
from .test_properties import adk_request_contents

UNWRAPPED, DECORATOR, PLUGIN, BOTH = SETUPS


def _interrupted() -> list[Event]:
    return [user_text("weather?"), model_event([call("c1")]), user_text("still there?")]


def test_an_interrupted_call_is_lost_in_the_unwrapped_request() -> None:
    history = _interrupted()
    assert [(c.call_id, c.name) for c in calls_that_count(history)] == [("c1", "lookup")]
    lost = calls_lost(history, adk_request_contents(history))
    assert [(c.call_id, c.name) for c in lost] == [("c1", "lookup")]


def test_no_call_is_lost_when_every_call_has_a_result() -> None:
    history = [
        user_text(),
        model_event([call("c1"), call("c2", "fetch")]),
        response_event([response("c1"), response("c2", "fetch")]),
        user_text("thanks"),
    ]
    assert len(calls_that_count(history)) == 2
    assert calls_lost(history, adk_request_contents(history)) == []


def test_the_views_placeholder_keeps_the_interrupted_call() -> None:
    history = _interrupted()
    assert calls_lost(history, adk_request_contents(repaired_events(history))) == []


def test_a_parallel_turn_answered_in_part_by_an_event_with_text_loses_the_other_call() -> None:
    """The issue's shape: weather answered beside a text, time never returned."""
    history = [
        user_text(),
        model_event([call("w", "get_weather"), call("t", "get_time")]),
        response_event([response("w", "get_weather"), types.Part(text="partial answer")]),
        user_text("and the time?"),
    ]
    lost = calls_lost(history, adk_request_contents(history))
    assert [(c.call_id, c.name) for c in lost] == [("t", "get_time")]


def test_only_calls_adk_shows_the_agent_count() -> None:
    """Another agent's call reaches this agent as text, another branch's not at all."""
    history = [
        user_text(),
        model_event([call("h1")], author="helper"),
        model_event([call("b1")], branch="other"),
        model_event([call("a1")], branch="mine"),
    ]
    assert [c.call_id for c in calls_that_count(history, branch="mine")] == ["a1"]


def test_the_oracles_result_carries_the_calls_id_as_stored() -> None:
    """A tool answers a call stored with ``""`` with ``""``, never None.

    Older rearrangers pair results with calls by equal ids: with None, an
    earlier event holding a ``""`` result and a call kept its place in the
    oracle's build though a real result would leave it out, so the view's
    request (whose placeholder says ``""``) was charged with its call.
    """
    history = [
        user_text(),
        model_event([response("", "fetch"), call("", "fetch")]),
        model_event([call("", "fetch")]),
        user_text("again"),
    ]
    results = [e for e in oracle.with_real_results(history) if e not in history]
    ids = [p.function_response.id for e in results for p in e.content.parts]  # type: ignore[union-attr]
    assert ids == ["", ""]


def test_a_renamed_id_is_matched_by_name_and_position() -> None:
    history = [user_text(), model_event([call("c1")]), user_text("again")]
    received = [
        types.Content(role="user", parts=[types.Part(text="hello")]),
        types.Content(role="model", parts=[call("c1-renamed")]),
        types.Content(role="user", parts=[response("c1-renamed")]),
    ]
    assert calls_lost(history, received) == []
    received[-1] = types.Content(role="user", parts=[types.Part(text="again")])
    assert len(calls_lost(history, received)) == 1  # there, but unanswered


def test_a_result_answers_the_newest_earlier_call_with_its_id() -> None:
    contents = [
        types.Content(role="model", parts=[call("c1")]),
        types.Content(role="user", parts=[response("c1")]),
        types.Content(role="model", parts=[call("c1"), call(None, "fetch")]),
        types.Content(role="user", parts=[response(None, "fetch")]),
    ]
    assert sent_calls(contents) == [
        SentCall("c1", "lookup", True),
        SentCall("c1", "lookup", False),
        SentCall(None, "fetch", True),
    ]


def test_a_result_never_answers_a_call_in_its_own_content() -> None:
    """Malformed, but fuzzed: a model content holding a call and a result with its id."""
    contents = [
        types.Content(role="model", parts=[call("c1"), response("c1")]),
        types.Content(role="user", parts=[types.Part(text="and?")]),
    ]
    assert sent_calls(contents) == [SentCall("c1", "lookup", False)]


def test_the_plugin_runs_on_the_request_adk_built_for_a_real_session() -> None:
    """`request_contents` drives the plugin's public callback; the view alone, no plugin."""

    async def measure() -> tuple[int, int]:
        inner = InMemorySessionService()
        service = PairingSessionService(inner)
        session = await service.create_session(app_name="a", user_id="u", session_id="s")
        for event in _interrupted():
            await service.append_event(session, event)
        stored = await inner.get_session(app_name="a", user_id="u", session_id="s")
        view = await service.get_session(app_name="a", user_id="u", session_id="s")
        assert stored is not None and view is not None
        history = stored.events
        by_view = calls_lost(history, await request_contents(view, service))
        both = calls_lost(history, await request_contents(view, service, plugin=PairingPlugin()))
        return len(by_view), len(both)

    assert asyncio.run(measure()) == (0, 0)


def _an_id_less_result_beside_the_last_call() -> list[Event]:
    """From the malformed fuzz: the last event holds a result no call has, beside a call."""
    return [model_event([call("c1")]), model_event([response(None), call("c2", "fetch")])]


def _adk_refuses(history: list[Event]) -> bool:
    try:
        adk_request_contents(history)
    except ValueError:  # up to 2.10: "No function call event found for function responses"
        return True
    return False


def test_a_request_adk_refuses_before_the_plugin_runs_is_not_the_plugins_loss() -> None:
    history = _an_id_less_result_beside_the_last_call()
    lost = asyncio.run(lost_per_setup(history))
    assert lost[PLUGIN] == lost[BOTH] == lost[DECORATOR] == 0
    if _adk_refuses(history):
        # Still lost, to the store: no request is sent without the decorator.
        assert lost[UNWRAPPED] == lost[BEFORE_THE_PLUGIN] == lost[COUNTED] == 1
    else:
        assert lost[BEFORE_THE_PLUGIN] == 0


class _DoesNothing(PairingPlugin):
    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> None:
        return None


class _Raises(PairingPlugin):
    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> None:
        raise ValueError("the plugin's own failure")


@pytest.mark.parametrize("plugin", [_DoesNothing, _Raises])
def test_the_plugin_alone_is_charged_for_what_its_own_request_loses(
    plugin: type[PairingPlugin], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(oracle, "PairingPlugin", plugin)
    lost = asyncio.run(lost_per_setup(_interrupted()))
    assert lost[PLUGIN] == lost[UNWRAPPED] == 1
    assert lost[BEFORE_THE_PLUGIN] == 0
