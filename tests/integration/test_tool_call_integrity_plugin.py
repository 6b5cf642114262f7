"""ADK's own `ToolCallIntegrityPlugin` beside the decorator and `PairingPlugin`.

The integrity plugin (google-adk 2.11+) stamps every function call it sees
emitted with an HMAC in the event's ``custom_metadata``, verifies every stamp
in ``session.events`` before each run, and before each tool call verifies every
stored copy of the call and that the tool runs with one copy's arguments. The
session it reads is the one the runner got from its service: through the
decorator, the view. A view that changed a call's id, name, arguments,
invocation, branch or author, dropped the stamps from its metadata, or showed
a call twice would make ADK refuse the run.

Each scenario runs through a real `Runner` over a real store, unwrapped with
the integrity plugin, and wrapped with it and `PairingPlugin` in both orders:
an interrupted call, a parallel turn partly answered, a confirmation, an
interrupted invocation of a resumable app resumed, and a long-running call
whose result arrives turns later. Asserted: no `ToolCallIntegrityError` the
unwrapped run did not raise, and every tool started and finished exactly as
often as unwrapped. A run with another key shows the harness would see the
error if there were one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types

from adk_pairing import PairingPlugin, is_synthetic
from tests.adk_features import HAS_TOOL_CALL_INTEGRITY_PLUGIN, requires

from .conftest import backend_params, make_spec
from .support.backends import Backend
from .support.scenario import AGENT_NAME, USER_ID, Harness
from .support.scripted_model import Step, call, calls, function_responses, text

pytestmark = requires(
    HAS_TOOL_CALL_INTEGRITY_PLUGIN, "google.adk.plugins.ToolCallIntegrityPlugin (added in 2.11)"
)

KEY = b"integrity-test-key-0123456789abcdef"
CONFIRMATION = "adk_request_confirmation"
#: ``custom_metadata`` key the integrity plugin keeps its stamps under.
STAMPS_KEY = "__adk_internal_fc_hmac"


def _integrity(key: bytes = KEY) -> BasePlugin:
    from google.adk.plugins import ToolCallIntegrityPlugin

    return ToolCallIntegrityPlugin(secret_key=key)


#: (label, wrapped, plugins) for each setup; the first is the reference.
SETUPS: list[tuple[str, bool, Callable[[], list[BasePlugin]]]] = [
    ("unwrapped", False, lambda: [_integrity()]),
    ("integrity first", True, lambda: [_integrity(), PairingPlugin()]),
    ("pairing first", True, lambda: [PairingPlugin(), _integrity()]),
]


@pytest.fixture
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """Sync on purpose: resolving the PostgreSQL database may call ``asyncio.run``."""
    return make_spec(request.param, request, tmp_path)


STORES = pytest.mark.parametrize(
    "store_spec",
    backend_params({"memory", "sqlite", "db-sqlite", "db-postgres", "redis-adk"}),
    indirect=True,
)


def _integrity_error(error: BaseException) -> BaseException | None:
    """The `ToolCallIntegrityError` behind `error` (ADK re-raises plugin errors)."""
    from google.adk.plugins import ToolCallIntegrityError

    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ToolCallIntegrityError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


async def _outcome(turn: Awaitable[Any]) -> str:
    """ "ok", or "ToolCallIntegrityError" when the integrity plugin stopped the turn."""
    try:
        await turn
    except Exception as error:
        if _integrity_error(error) is None:
            raise
        return "ToolCallIntegrityError"
    return "ok"


Scenario = Callable[[Harness, Backend], Awaitable[list[str]]]


async def _interrupted_call(harness: Harness, backend: Backend) -> list[str]:
    session_id = await harness.new_session()
    await harness.interrupted_turn(session_id, "do the slow thing")
    return [await _outcome(harness.turn(session_id, "are you still there?"))]


async def _parallel_partly_answered(harness: Harness, backend: Backend) -> list[str]:
    """A real interrupted parallel turn, then the quick call's result stored on its own
    (ADK answers parallel calls in one event once all return, so a runner cannot
    leave exactly one answered)."""
    session_id = await harness.new_session()
    invocation_id = await harness.interrupted_turn(session_id, "check two things")
    stored = await backend.service.get_session(
        app_name=backend.app_name, user_id=USER_ID, session_id=session_id
    )
    assert stored is not None
    result = types.FunctionResponse(id="call_a", name="lookup", response={"weather": "sunny"})
    await backend.service.append_event(
        stored,
        Event(
            invocation_id=invocation_id,
            author=AGENT_NAME,
            content=types.Content(role="user", parts=[types.Part(function_response=result)]),
        ),
    )
    return [await _outcome(harness.turn(session_id, "so?"))]


async def _confirmation(harness: Harness, backend: Backend) -> list[str]:
    session_id = await harness.new_session()
    events = await harness.turn(session_id, "delete /tmp/old.log")
    (request,) = [c for e in events for c in e.get_function_calls() if c.name == CONFIRMATION]
    outcomes = [await _outcome(harness.turn(session_id, "wait, what will that do?"))]
    approval = function_responses((request.id, CONFIRMATION, {"confirmed": True}))
    outcomes.append(await _outcome(harness.turn(session_id, approval)))
    return outcomes


async def _resumed(harness: Harness, backend: Backend) -> list[str]:
    session_id = await harness.new_session()
    invocation_id = await harness.interrupted_turn(session_id, "do the slow thing")
    harness.toolbox.release()
    return [await _outcome(harness.turn(session_id, None, invocation_id=invocation_id))]


async def _late_long_running_result(harness: Harness, backend: Backend) -> list[str]:
    session_id = await harness.new_session()
    outcomes = [await _outcome(harness.turn(session_id, "start the report job"))]
    outcomes.append(await _outcome(harness.turn(session_id, "how is it going?")))
    result = function_responses(("job_1", "start_job", {"rows": 42}))
    outcomes.append(await _outcome(harness.turn(session_id, result)))
    return outcomes


#: name -> (scenario, scripted model steps, resumable app)
SCENARIOS: dict[str, tuple[Scenario, Sequence[Step], bool]] = {
    "interrupted call": (
        _interrupted_call,
        [calls(call("hang", {"reason": "slow"}, id="call_1")), text("Yes, sorry.")],
        False,
    ),
    "parallel turn partly answered": (
        _parallel_partly_answered,
        [
            calls(
                call("lookup", {"city": "Oslo"}, id="call_a"),
                call("hang", {"reason": "slow"}, id="call_b"),
            ),
            text("One of them finished."),
        ],
        False,
    ),
    "confirmation": (
        _confirmation,
        [
            calls(call("delete_file", {"path": "/tmp/old.log"}, id="del_1")),
            text("I need your approval first."),
            text("Deleted."),
        ],
        False,
    ),
    "resumed invocation": (
        _resumed,
        [calls(call("hang", {"reason": "slow"}, id="call_1")), text("Done now.")],
        True,
    ),
    "late long-running result": (
        _late_long_running_result,
        [
            calls(call("start_job", {"name": "report"}, id="job_1")),
            text("Still running."),
            text("The report is ready."),
        ],
        False,
    ),
}


async def _stamped_calls(harness: Harness, session_ids: list[str]) -> int:
    stamped = 0
    for session_id in session_ids:
        for event in await harness.stored_events(session_id):
            if event.get_function_calls():
                assert STAMPS_KEY in (event.custom_metadata or {}), event
                stamped += 1
    return stamped


@STORES
@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_the_integrity_plugin_refuses_nothing_more_and_tools_run_as_often_as_unwrapped(
    store_spec: dict[str, Any], open_store: Callable[..., Any], scenario: str
) -> None:
    backend = await open_store(store_spec)
    run, steps, resumable = SCENARIOS[scenario]
    results: dict[str, tuple[list[str], dict[str, int], dict[str, int]]] = {}
    for label, wrapped, plugins in SETUPS:
        harness = Harness.build(
            backend, wrapped=wrapped, steps=list(steps), resumable=resumable, plugins=plugins()
        )
        outcomes = await run(harness, backend)
        results[label] = (outcomes, dict(harness.toolbox.started), dict(harness.toolbox.finished))
        sessions = await harness.service.list_sessions(app_name=backend.app_name, user_id=USER_ID)
        # The plugin was at work: every stored call event carries its stamps.
        assert await _stamped_calls(harness, [s.id for s in sessions.sessions]) > 0
    reference = results["unwrapped"]
    for label, result in results.items():
        assert result == reference, f"{label}: {result} != unwrapped {reference}"
    # Unwrapped, ADK raised nothing either: the scenarios are ones it accepts.
    assert set(reference[0]) == {"ok"}


@STORES
async def test_another_key_is_refused_through_the_decorator_as_unwrapped(
    store_spec: dict[str, Any], open_store: Callable[..., Any]
) -> None:
    """The harness sees the error when there is one: stamps made with one key fail
    verification under another, wrapped as unwrapped."""
    backend = await open_store(store_spec)
    for _, wrapped, plugins in SETUPS[:2]:
        harness = Harness.build(
            backend,
            wrapped=wrapped,
            steps=[calls(call("lookup", {"city": "Oslo"}, id="call_1")), text("Sunny.")],
            plugins=plugins(),
        )
        session_id = await harness.new_session()
        assert await _outcome(harness.turn(session_id, "weather in Oslo?")) == "ok"
        other = Harness.build(
            backend,
            wrapped=wrapped,
            steps=[text("unused")],
            plugins=[_integrity(b"another-key-0123456789abcdefghijk"), PairingPlugin()],
        )
        assert await _outcome(other.turn(session_id, "and now?")) == "ToolCallIntegrityError"


@STORES
async def test_the_view_keeps_every_stamp_and_adds_no_call(
    store_spec: dict[str, Any], open_store: Callable[..., Any]
) -> None:
    """What the integrity plugin reads through the decorator: the stored calls with
    their stamps, and synthetic events that hold results only."""
    backend = await open_store(store_spec)
    harness = Harness.build(
        backend,
        wrapped=True,
        steps=[calls(call("hang", {"reason": "slow"}, id="call_1")), text("Yes.")],
        plugins=[_integrity(), PairingPlugin()],
    )
    session_id = await harness.new_session()
    await harness.interrupted_turn(session_id, "do the slow thing")
    view = await harness.view(session_id)
    stored = await harness.stored_events(session_id)
    synthetic = [e for e in view.events if is_synthetic(e)]
    assert synthetic and all(not e.get_function_calls() for e in synthetic)
    shown = [
        (e.id, [c.model_dump() for c in e.get_function_calls()], e.custom_metadata[STAMPS_KEY])
        for e in view.events
        if e.get_function_calls()
    ]
    kept = [
        (e.id, [c.model_dump() for c in e.get_function_calls()], e.custom_metadata[STAMPS_KEY])
        for e in stored
        if e.get_function_calls()
    ]
    assert shown == kept
