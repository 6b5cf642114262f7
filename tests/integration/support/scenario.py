"""Driving a real ADK `Runner` over a backend, wrapped or not, and interrupting it.

`Harness` builds one agent, one scripted model and one runner over a backend's
service, either the unwrapped inner service or `PairingSessionService(inner)`.
Interrupted turns are made the way production makes them: the runner runs in
an asyncio task, the tool it calls blocks, and once the call event is in the
store (read through the *unwrapped* service) the task is cancelled. ADK 2.13
only seals an aborted invocation (``_abort_events``) when the run was given an
``abort_signal`` that is set; a plain ``task.cancel()`` leaves the call
unanswered in the store, which `interrupted_turn` asserts.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import warnings
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from google.adk.agents.llm_agent import LlmAgent
from google.adk.agents.run_config import RunConfig
from google.adk.apps.app import App, ResumabilityConfig
from google.adk.events.event import Event
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.session import Session
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.genai import types

import adk_pairing
from adk_pairing import PairingSessionService, analyze, is_synthetic
from adk_pairing.adk.builder import NEWEST_BUILDER
from adk_pairing.ledger import CallStatus, TrackedCall
from adk_pairing.rules.checks import RULES

from .backends import Backend
from .scripted_model import (
    GEMINI_RULES,
    RecordedRequest,
    Script,
    ScriptedClaude,
    ScriptedGemini,
    ScriptedLiteLlm,
    Step,
    setup_label,
    user_text,
)

USER_ID = "user-1"
AGENT_NAME = "assistant"

#: Upper bound for one turn. Turns here take milliseconds; the bound only turns
#: a runner that loops forever (a broken view can make ADK do that) into a
#: failure instead of a hung suite. It is not a speed assertion.
TURN_TIMEOUT_SECONDS = 30.0


async def eventually(
    condition: Callable[[], Awaitable[bool]], *, timeout: float = 10.0, what: str = "condition"
) -> None:
    """Polls `condition` until it holds; fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    delay = 0.002
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)


class Toolbox:
    """The agent's tools, with counters that say what really ran.

    * ``lookup(city)``: an ordinary tool.
    * ``hang(reason)``: blocks until ``release()``; the way to make a turn die
      between its call and its response.
    * ``start_job(name)``: a `LongRunningFunctionTool` returning None, so ADK
      leaves its call pending until a client posts the result.
    * ``delete_file(path)``: requires confirmation (``require_confirmation=True``).
    """

    def __init__(self) -> None:
        self.started: Counter[str] = Counter()
        self.finished: Counter[str] = Counter()
        #: Reasons of the ``hang`` calls blocked right now: which turn's tool is
        #: running, when many turns share one toolbox.
        self.hanging: set[str] = set()
        self._gate = asyncio.Event()

    def release(self) -> None:
        """Lets every current and future ``hang`` call return."""
        self._gate.set()

    def tools(self) -> list[BaseTool | Callable[..., Any]]:
        box = self

        def lookup(city: str) -> dict[str, str]:
            """Returns the weather in a city."""
            box.started["lookup"] += 1
            box.finished["lookup"] += 1
            return {"city": city, "weather": "sunny"}

        async def hang(reason: str) -> dict[str, str]:
            """Does slow work that may never finish."""
            box.started["hang"] += 1
            box.hanging.add(reason)
            try:
                await box._gate.wait()
            finally:
                box.hanging.discard(reason)
            box.finished["hang"] += 1
            return {"reason": reason, "result": "done"}

        def start_job(name: str) -> None:
            """Starts a long-running job; its result arrives later."""
            box.started["start_job"] += 1
            box.finished["start_job"] += 1
            return None

        def delete_file(path: str) -> dict[str, str]:
            """Deletes a file (asks the user first)."""
            box.started["delete_file"] += 1
            box.finished["delete_file"] += 1
            return {"deleted": path}

        return [
            lookup,
            hang,
            LongRunningFunctionTool(start_job),
            FunctionTool(delete_file, require_confirmation=True),
        ]


class DrivesARunner:
    """Sessions and turns for a test that holds a `backend`, a `service` and a `runner`."""

    backend: Backend
    service: BaseSessionService
    runner: Runner

    async def new_session(self) -> str:
        session = await self.service.create_session(
            app_name=self.backend.app_name,
            user_id=USER_ID,
            session_id=self.backend.new_session_id(),
        )
        return session.id

    async def read(
        self, session_id: str, service: BaseSessionService | None = None, **kwargs: Any
    ) -> Session:
        """The session as `service` (this harness's own by default) returns it."""
        session = await (service or self.service).get_session(
            app_name=self.backend.app_name, user_id=USER_ID, session_id=session_id, **kwargs
        )
        assert session is not None
        return session

    async def send(self, session_id: str, message: types.Content, **kwargs: Any) -> None:
        """One turn, run to its end (bounded by `TURN_TIMEOUT_SECONDS`)."""
        async with asyncio.timeout(TURN_TIMEOUT_SECONDS):
            async for _ in self.runner.run_async(
                user_id=USER_ID, session_id=session_id, new_message=message, **kwargs
            ):
                pass


@dataclass
class Harness(DrivesARunner):
    """One runner over one backend, with the script and tools a test controls."""

    backend: Backend
    wrapped: bool
    script: Script
    toolbox: Toolbox
    runner: Runner
    service: BaseSessionService
    run_config: RunConfig | None = None

    @classmethod
    def build(
        cls,
        backend: Backend,
        *,
        wrapped: bool,
        steps: Iterable[Step] = (),
        model: str = "claude",
        strict: bool = False,
        resumable: bool = False,
        plugins: Sequence[BasePlugin] = (),
        toolbox: Toolbox | None = None,
    ) -> Harness:
        script = Script(
            steps=list(steps),
            strict=strict,
            setup=setup_label(wrapped=wrapped, pairing_plugin=has_pairing_plugin(plugins)),
            rules=GEMINI_RULES if model == "gemini" else RULES,
        )
        toolbox = toolbox or Toolbox()
        model_class = {"claude": ScriptedClaude, "gemini": ScriptedGemini}.get(
            model, ScriptedLiteLlm
        )
        agent = LlmAgent(
            name=AGENT_NAME,
            model=model_class(script=script),
            instruction="You are a test assistant.",
            tools=toolbox.tools(),
        )
        service: BaseSessionService = (
            PairingSessionService(backend.service) if wrapped else backend.service
        )
        resumability = None
        if resumable:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=r"\[EXPERIMENTAL\] ResumabilityConfig")
                resumability = ResumabilityConfig(is_resumable=True)
        app = App(
            name=backend.app_name,
            root_agent=agent,
            plugins=list(plugins),
            resumability_config=resumability,
        )
        runner = Runner(app=app, session_service=service)
        return cls(
            backend=backend,
            wrapped=wrapped,
            script=script,
            toolbox=toolbox,
            runner=runner,
            service=service,
        )

    # -- sessions -------------------------------------------------------------

    async def view(self, session_id: str, **kwargs: Any) -> Session:
        """The session as this harness's service returns it (a view when wrapped)."""
        return await self.read(session_id, **kwargs)

    async def stored_events(self, session_id: str) -> list[Event]:
        """What is really in the store, read through the unwrapped service."""
        session = await self.backend.service.get_session(
            app_name=self.backend.app_name, user_id=USER_ID, session_id=session_id
        )
        assert session is not None
        return session.events

    async def unanswered_in_store(self, session_id: str) -> list[TrackedCall]:
        # What the store holds, not what an older ADK's builder makes of it.
        report = analyze(await self.stored_events(session_id), traits=NEWEST_BUILDER)
        return [call for call in report.calls if call.status is not CallStatus.ANSWERED]

    # -- turns ----------------------------------------------------------------

    async def turn(
        self,
        session_id: str,
        message: types.Content | str | None,
        *,
        invocation_id: str | None = None,
        run_config: RunConfig | None = None,
    ) -> list[Event]:
        """Runs one turn to completion and returns the events it yielded."""
        if isinstance(message, str):
            message = user_text(message)
        events: list[Event] = []
        async with asyncio.timeout(TURN_TIMEOUT_SECONDS):
            async for event in self.runner.run_async(
                user_id=USER_ID,
                session_id=session_id,
                new_message=message,
                invocation_id=invocation_id,
                run_config=run_config or self.run_config,
            ):
                events.append(event)
        return events

    async def interrupted_turn(
        self,
        session_id: str,
        message: types.Content | str | None,
        *,
        tool: str = "hang",
        invocation_id: str | None = None,
    ) -> str:
        """Starts a turn, waits until its call to `tool` is stored and running, then cancels it.

        The cancel lands while the tool runs, as a killed or disconnected
        turn's does, and never in the middle of a store call made by the
        runner or a plugin: one such cancel, about one run in twenty, left the
        next write to a ``sqlite+aiosqlite`` store failing with "database is
        locked" after the busy timeout. Returns the interrupted invocation's id.
        Asserts that the store keeps the call unanswered (ADK did not seal the
        invocation).
        """
        if isinstance(message, str):
            message = user_text(message)
        before = await self._calls_named(session_id, tool)
        started_before = self.toolbox.started[tool]

        async def consume() -> None:
            async for _ in self.runner.run_async(
                user_id=USER_ID,
                session_id=session_id,
                new_message=message,
                invocation_id=invocation_id,
                run_config=self.run_config,
            ):
                pass

        task = asyncio.create_task(consume())

        async def call_is_stored_and_running() -> bool:
            if task.done():
                task.result()  # surfaces the error of a turn that died early
                raise AssertionError(f"the turn ended before calling {tool!r}")
            if self.toolbox.started[tool] == started_before:
                return False
            return len(await self._calls_named(session_id, tool)) > len(before)

        await eventually(
            call_is_stored_and_running, what=f"the call to {tool!r} to be stored and running"
        )
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        stored = await self._calls_named(session_id, tool)
        new_call_event = stored[-1]
        unanswered = {c.event_index for c in await self.unanswered_in_store(session_id)}
        events = await self.stored_events(session_id)
        index = next(i for i, e in enumerate(events) if e.id == new_call_event.id)
        assert index in unanswered, "ADK answered (sealed) the interrupted call in the store"
        return new_call_event.invocation_id

    async def _calls_named(self, session_id: str, name: str) -> list[Event]:
        return [
            event
            for event in await self.stored_events(session_id)
            if any(call.name == name for call in event.get_function_calls())
        ]


def has_pairing_plugin(plugins: Sequence[BasePlugin]) -> bool:
    """True when adk-pairing's request pass is among `plugins`."""
    plugin_type = getattr(adk_pairing, "PairingPlugin", None)
    return plugin_type is not None and any(isinstance(p, plugin_type) for p in plugins)


# -- comparing events ---------------------------------------------------------


def content_dump(content: types.Content | None) -> Any:
    return None if content is None else content.model_dump(mode="json", exclude_none=True)


def event_signature(event: Event) -> dict[str, Any]:
    """What an event says, without the fields a store may re-encode (timestamps)."""
    return {
        "id": event.id,
        "author": event.author,
        "invocation_id": event.invocation_id,
        "content": content_dump(event.content),
        "long_running_tool_ids": sorted(event.long_running_tool_ids or ()),
        "custom_metadata": event.custom_metadata,
        "error_code": event.error_code,
    }


def normalized_history(events: Sequence[Event]) -> list[dict[str, Any]]:
    """Events with random identifiers replaced by their order of first appearance.

    Two runs of the same script produce different event ids, invocation ids
    and ``adk-`` call ids; everything else (authors, contents, the relevant
    actions) must match exactly.
    """
    names: dict[str, str] = {}

    def stable(value: str | None, kind: str) -> str | None:
        if not value:
            return value
        if value not in names:
            names[value] = f"<{kind}{len(names)}>"
        return names[value]

    result: list[dict[str, Any]] = []
    for event in events:
        content = content_dump(event.content)
        for part in (content or {}).get("parts", []):
            for key in ("function_call", "function_response"):
                if key in part and part[key].get("id", "").startswith("adk-"):
                    part[key]["id"] = stable(part[key]["id"], "adk-id")
        actions = event.actions
        result.append(
            {
                "author": event.author,
                "invocation": stable(event.invocation_id, "inv"),
                "content": content,
                "long_running_tool_ids": sorted(
                    stable(i, "adk-id") if i.startswith("adk-") else i
                    for i in event.long_running_tool_ids or ()
                ),
                "state_delta": dict(actions.state_delta) if actions else {},
                "skip_summarization": actions.skip_summarization if actions else None,
                "requested_tool_confirmations": sorted(
                    (actions.requested_tool_confirmations or {}).keys()
                )
                if actions
                else [],
                "error_code": event.error_code,
                "custom_metadata": event.custom_metadata,
            }
        )
    return result


# -- assertions shared by scenarios -------------------------------------------


def assert_every_request_valid(script: Script) -> None:
    """Every request the model received satisfies Anthropic's pairing rule."""
    assert script.requests, "the model received no request at all"
    violations = script.all_violations()
    assert not violations, f"invalid requests reached the model: {violations}"


def assert_every_rule_holds(script: Script) -> None:
    """Every request the model received passes all four rules of `adk_pairing.rules.checks`."""
    assert script.requests, "the model received no request at all"
    violations = script.all_rule_violations()
    assert not violations, f"requests breaking a provider's rule reached the model: {violations}"


def placeholder_ids(request: RecordedRequest, status: str) -> list[str | None]:
    """Ids of the adk-pairing placeholders with `status` the model saw in `request`."""
    return [response.id for response in request.responses_with_status(status)]


def assert_no_placeholder_in_view(session: Session) -> None:
    """The view adds nothing: every call in it has a real (stored) answer."""
    synthetic = [e.id for e in session.events if is_synthetic(e)]
    assert not synthetic, f"the view still carries placeholders {synthetic}"
