"""The request guarantee (issue 12): every request passes all four provider rules.

Each scenario runs through a real `Runner` under three setups, on every store:

* ``plain ADK``: the unwrapped store, no plugin;
* ``view alone``: `PairingSessionService` over the store;
* ``view+plugin``: the view and `PairingPlugin` in the app.

Every request the scripted model receives is checked against the four rules
of `adk_pairing.rules.checks` (Anthropic, OpenAI chat through LiteLlm, Gemini,
strict alternation); with view + plugin none may break any rule (asserted
here and, for every integration test, by the conftest). The counts per rule
and setup are printed at the end of the run (``ADK_PAIRING_RULE_TABLE=path``
writes them as JSON).

A scenario's ``breaks`` pins what it exists for: the rules its requests break
without the plugin, so it cannot quietly stop reproducing its problem.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import pytest
from google.adk.events.event import Event
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from adk_pairing import PairingPlugin

from .support.backends import Backend
from .support.scenario import AGENT_NAME, USER_ID, Harness, assert_every_rule_holds
from .support.scripted_model import (
    PLAIN_ADK,
    VIEW_ALONE,
    VIEW_AND_PLUGIN,
    call,
    calls,
    function_responses,
    text,
)

CONFIRMATION = "adk_request_confirmation"

Play = Callable[[Harness, str], Awaitable[None]]


@dataclass(frozen=True)
class Scenario:
    """A script, how to play it, and the rules it breaks without the plugin.

    ``breaks`` pins what a scenario exists for: for each setup, the rules some
    request of it must break (so the scenario cannot quietly stop reproducing
    its problem). Measured on google-adk 1.20.0 and 2.13.0.
    """

    steps: Callable[[], list[LlmResponse]]
    play: Play
    model: str = "claude"
    breaks: dict[str, tuple[str, ...]] = field(default_factory=dict)


# -- scenarios ------------------------------------------------------------------


async def _healthy(h: Harness, sid: str) -> None:
    await h.turn(sid, "weather?")
    await h.turn(sid, "thanks")


async def _interrupted_at_end(h: Harness, sid: str) -> None:
    await h.turn(sid, "weather?")
    await h.interrupted_turn(sid, "slow thing")
    await h.turn(sid, "hello?")


async def _interrupted_in_middle(h: Harness, sid: str) -> None:
    await h.interrupted_turn(sid, "slow thing")
    await h.turn(sid, "hello?")
    await h.turn(sid, "weather?")


async def _pending_then_result(h: Harness, sid: str) -> None:
    await h.turn(sid, "start the report job")
    await h.turn(sid, "how is it going?")
    await h.turn(sid, function_responses(("job_1", "start_job", {"rows": 42})))


async def _confirmation(h: Harness, sid: str) -> None:
    events = await h.turn(sid, "delete /tmp/old.log")
    (request,) = [c for e in events for c in e.get_function_calls() if c.name == CONFIRMATION]
    await h.turn(sid, "wait, what will that do?")
    await h.turn(sid, function_responses((request.id, CONFIRMATION, {"confirmed": True})))


async def _one_turn(h: Harness, sid: str) -> None:
    await h.turn(sid, "weather, and start the report")


async def _reused_id_interrupted(h: Harness, sid: str) -> None:
    await h.turn(sid, "weather?")
    await h.interrupted_turn(sid, "slow thing")
    await h.turn(sid, "hello?")


async def _two_turns(h: Harness, sid: str) -> None:
    await h.turn(sid, "weather in Oslo?")
    await h.turn(sid, "and in Bergen?")
    await h.turn(sid, "thanks")


async def _older_result_first(h: Harness, sid: str) -> None:
    """Two long-running calls pending; job_a's result is posted after job_b was
    called, then job_b's. ADK's ``_rearrange_events_for_latest_function_response``
    (2.13.0 flows/llm_flows/tools/_rearranger.py:378) cuts the history after
    job_b's call for the last request and drops job_a's real answer."""
    await h.turn(sid, "start job a")
    await h.turn(sid, "start job b")
    await h.turn(sid, function_responses(("job_a", "start_job", {"rows": 1})))
    await h.turn(sid, function_responses(("job_b", "start_job", {"rows": 2})))
    await h.turn(sid, "both done?")


async def _newer_result_first(h: Harness, sid: str) -> None:
    await h.turn(sid, "start job a")
    await h.turn(sid, "start job b")
    await h.turn(sid, function_responses(("job_b", "start_job", {"rows": 2})))
    await h.turn(sid, function_responses(("job_a", "start_job", {"rows": 1})))
    await h.turn(sid, "both done?")


async def _stored_id_less_call(h: Harness, sid: str) -> None:
    """A call stored without any id (another writer, an older ADK)."""
    inner = h.backend.service
    stored = await inner.get_session(app_name=h.backend.app_name, user_id=USER_ID, session_id=sid)
    assert stored is not None
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
    await h.turn(sid, "hello?")


def _text_and_call_in_one_part() -> LlmResponse:
    both = types.Part(
        text="Let me look that up.",
        function_call=types.FunctionCall(name="lookup", args={"city": "Oslo"}, id="mixed_1"),
    )
    return LlmResponse(content=types.Content(role="model", parts=[both]))


SCENARIOS: dict[str, Scenario] = {
    "healthy": Scenario(
        lambda: [calls(call("lookup", {"city": "Oslo"}, id="c1")), text("Sunny."), text("ok")],
        _healthy,
    ),
    "interrupted-at-end": Scenario(
        lambda: [
            calls(call("lookup", {"city": "Oslo"}, id="c1")),
            text("Sunny."),
            calls(call("hang", {"reason": "slow"}, id="c2")),
            text("Back."),
        ],
        _interrupted_at_end,
        # the placeholder (a user-role content) is followed by the user's text
        breaks={VIEW_ALONE: ("strict_alternation",)},
    ),
    "interrupted-in-middle": Scenario(
        lambda: [
            calls(call("hang", {"reason": "slow"}, id="c1")),
            text("Sorry, that died."),
            calls(call("lookup", {"city": "Oslo"}, id="c2")),
            text("Sunny."),
        ],
        _interrupted_in_middle,
    ),
    "interrupted-at-end-gemini": Scenario(
        lambda: [
            calls(call("lookup", {"city": "Oslo"})),
            text("Sunny."),
            calls(call("hang", {"reason": "slow"})),
            text("Back."),
        ],
        _interrupted_at_end,
        model="gemini",
    ),
    "partial-parallel-with-text": Scenario(
        lambda: [
            calls(call("lookup", {"city": "Oslo"}, id="c1")),
            text("Sunny."),
            calls(
                call("lookup", {"city": "Bergen"}, id="c2"),
                call("hang", {"reason": "slow"}, id="c3"),
                text="Checking both.",
            ),
            text("Back."),
        ],
        _interrupted_at_end,
    ),
    "pending-long-running": Scenario(
        lambda: [
            calls(call("start_job", {"name": "report"}, id="job_1")),
            text("Still running."),
            text("The report is ready."),
        ],
        _pending_then_result,
    ),
    "confirmation": Scenario(
        lambda: [
            calls(call("delete_file", {"path": "/tmp/old.log"}, id="del_1")),
            text("I need your approval first."),
            text("Deleted."),
        ],
        _confirmation,
    ),
    "parallel-ordinary-and-long-running": Scenario(
        lambda: [
            calls(
                call("lookup", {"city": "Oslo"}, id="call_a"),
                call("start_job", {"name": "report"}, id="call_b"),
            ),
            text("Sunny; the report is on its way."),
        ],
        _one_turn,
    ),
    "reused-id-interrupted": Scenario(
        lambda: [
            calls(call("lookup", {"city": "Oslo"}, id="call_1")),
            text("Sunny."),
            calls(call("hang", {"reason": "slow"}, id="call_1")),
            text("Back."),
        ],
        _reused_id_interrupted,
    ),
    "duplicate-ids-answered": Scenario(
        lambda: [
            calls(call("lookup", {"city": "Oslo"}, id="call_1")),
            text("Sunny."),
            calls(call("lookup", {"city": "Bergen"}, id="call_1")),
            text("Rainy."),
            text("You are welcome."),
        ],
        _two_turns,
        breaks={PLAIN_ADK: ("anthropic",), VIEW_ALONE: ("anthropic",)},
    ),
    "out-of-order-older-result-first": Scenario(
        lambda: [
            calls(call("start_job", {"name": "a"}, id="job_a")),
            calls(call("start_job", {"name": "b"}, id="job_b")),
            text("Job a is done."),
            text("Job b is done."),
            text("Yes."),
        ],
        _older_result_first,
        breaks={PLAIN_ADK: ("anthropic",), VIEW_ALONE: ("anthropic",)},
    ),
    "out-of-order-newer-result-first": Scenario(
        lambda: [
            calls(call("start_job", {"name": "a"}, id="job_a")),
            calls(call("start_job", {"name": "b"}, id="job_b")),
            text("Job b is done."),
            text("Job a is done."),
            text("Yes."),
        ],
        _newer_result_first,
    ),
    "text-and-call-in-one-part": Scenario(
        lambda: [_text_and_call_in_one_part(), text("Sunny."), text("ok")],
        _healthy,
        breaks={PLAIN_ADK: ("anthropic",), VIEW_ALONE: ("anthropic",)},
    ),
    "litellm-model-calls-without-ids": Scenario(
        lambda: [calls(call("lookup", {"city": "Oslo"})), text("Sunny."), text("ok")],
        _healthy,
        model="litellm",
    ),
    "litellm-stored-call-without-id": Scenario(
        lambda: [text("Hello.")],
        _stored_id_less_call,
        model="litellm",
        breaks={PLAIN_ADK: ("openai_chat",), VIEW_ALONE: ("openai_chat",)},
    ),
}

SETUP_OPTIONS = {
    PLAIN_ADK: {"wrapped": False, "plugin": False},
    VIEW_ALONE: {"wrapped": True, "plugin": False},
    VIEW_AND_PLUGIN: {"wrapped": True, "plugin": True},
}


async def play(backend: Backend, name: str, setup: str, *, extra_plugins: tuple = ()) -> Harness:
    scenario = SCENARIOS[name]
    options = SETUP_OPTIONS[setup]
    plugins = [*extra_plugins, *([PairingPlugin()] if options["plugin"] else [])]
    harness = Harness.build(
        backend,
        wrapped=options["wrapped"],
        steps=scenario.steps(),
        model=scenario.model,
        plugins=plugins,
    )
    session_id = await harness.new_session()
    await scenario.play(harness, session_id)
    harness.toolbox.release()
    return harness


@pytest.mark.parametrize("setup", list(SETUP_OPTIONS))
@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_scenario_requests_pass_every_rule_with_view_and_plugin(
    backend: Backend, name: str, setup: str
) -> None:
    """Runs under every setup (for the table); with view + plugin every rule holds,
    without the plugin the scenario breaks the rules it exists for."""
    harness = await play(backend, name, setup)
    assert harness.script.requests
    assert not harness.script.steps, "the scenario left scripted responses unused"
    if setup == VIEW_AND_PLUGIN:
        assert_every_rule_holds(harness.script)
    for rule in SCENARIOS[name].breaks.get(setup, ()):
        broken = [v for r in harness.script.requests for v in r.rules.get(rule, [])]
        assert broken, f"{name} under {setup} was expected to break the {rule} rule"


# -- next to ADK's ToolCallIntegrityPlugin ----------------------------------------


def _integrity_plugin() -> object | None:
    try:
        from google.adk.plugins import ToolCallIntegrityPlugin
    except ImportError:
        return None
    return ToolCallIntegrityPlugin(secret_key=b"k" * 32)


@pytest.mark.parametrize("name", ["interrupted-at-end", "pending-long-running", "healthy"])
async def test_pairing_plugin_coexists_with_adk_tool_call_integrity_plugin(
    backend: Backend, name: str
) -> None:
    integrity = _integrity_plugin()
    if integrity is None:
        import google.adk

        pytest.skip(
            f"google-adk {google.adk.__version__} has no ToolCallIntegrityPlugin (added in 2.11)"
        )
    harness = await play(backend, name, VIEW_AND_PLUGIN, extra_plugins=(integrity,))
    assert_every_rule_holds(harness.script)
    assert not harness.script.steps
    # ADK's plugin was at work: it stamped the stored calls (and let the tools run).
    session_id = await _only_session(harness)
    stamped = [
        e
        for e in await harness.stored_events(session_id)
        if any(k.endswith("fc_hmac") for k in (e.custom_metadata or {}))
    ]
    assert stamped, "ToolCallIntegrityPlugin stamped no call"


async def _only_session(harness: Harness) -> str:
    listed = await harness.backend.service.list_sessions(
        app_name=harness.backend.app_name, user_id=USER_ID
    )
    (session,) = listed.sessions
    return session.id
