"""ADK's plugins and an agent callback beside `PairingPlugin`, over four interrupted histories.

Shared by ``test_request_after_others.py`` and ``test_request_before_others.py``:
`run_case` runs a real `Runner` with the scripted model over a history with
an interrupted call ``call_S`` (a killed process, a cancelled task, a
parallel turn partly answered, a call ADK holds open), then a new user
message after which the model calls one more tool (``call_T``) and answers;
`assert_the_guarantee` checks what the model received.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.llm_agent import LlmAgent
from google.adk.apps.app import App
from google.adk.events.event import Event
from google.adk.models.llm_request import LlmRequest
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.plugins.context_filter_plugin import ContextFilterPlugin
from google.adk.runners import Runner
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from adk_pairing import PairingPlugin, PairingSessionService, pair_request, repaired_events
from tests.adk_request import build_session_request_async

from .backends import Backend
from .scenario import AGENT_NAME, USER_ID, Harness, Toolbox, assert_every_rule_holds
from .scripted_model import Script, ScriptedClaude, call, calls, setup_label, text

INTERRUPTED = "call_S"
NEXT = "call_T"
#: How many contents the windows here keep.
WINDOW = 3


# -- the other code ------------------------------------------------------------


def holds_call(contents: list[types.Content] | None, call_id: str) -> bool:
    return any(
        part.function_call is not None and part.function_call.id == call_id
        for content in contents or ()
        for part in content.parts or ()
    )


#: A context window: the contents it keeps of the contents it is given.
Window = Callable[[list[types.Content]], Awaitable[list[types.Content]]]


@dataclass
class Kept:
    """Per request, whether the window kept the interrupted call's turn.

    When the window was never shown the call (ADK >= 2.10 drops an
    unanswered call before any callback runs, and here no plugin put it
    back before the window), what counts is what the window keeps of the
    request ADK builds from the history as the decorator's view shows it:
    the call answered where it stands.
    """

    requests: list[bool] = field(default_factory=list)
    #: For the agent callback: the agent's callback chain as ADK ran it, per request.
    chains: list[list[str]] = field(default_factory=list)

    async def record(
        self,
        shown: list[types.Content] | None,
        kept: list[types.Content] | None,
        callback_context: CallbackContext,
        window: Window,
    ) -> None:
        if holds_call(shown, INTERRUPTED):
            self.requests.append(holds_call(kept, INTERRUPTED))
            return
        invocation = callback_context._invocation_context
        session = invocation.session.model_copy(
            update={"events": repaired_events(invocation.session.events)}
        )
        request, _ = await build_session_request_async(
            session, invocation.session_service, agent=invocation.agent, branch=invocation.branch
        )
        self.requests.append(holds_call(await window(list(request.contents)), INTERRUPTED))


def last_contents(contents: list[types.Content]) -> list[types.Content]:
    return contents[-WINDOW:]


class RecordingContextFilter(ContextFilterPlugin):
    """ADK's ContextFilterPlugin, recording whether what it kept held the interrupted call."""

    def __init__(self, kept: Kept, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kept = kept

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> None:
        shown = list(llm_request.contents)
        await super().before_model_callback(
            callback_context=callback_context, llm_request=llm_request
        )
        await self.kept.record(shown, llm_request.contents, callback_context, self.window)

    async def window(self, contents: list[types.Content]) -> list[types.Content]:
        scratch = LlmRequest(contents=contents)
        context = cast(CallbackContext, None)  # the filter reads only the request
        await super().before_model_callback(callback_context=context, llm_request=scratch)
        return scratch.contents


def trim_callback(kept: Kept) -> Callable[..., None]:
    """An agent callback that keeps the last contents (a hand-written context window)."""

    async def window(contents: list[types.Content]) -> list[types.Content]:
        return last_contents(contents)

    async def keep_recent(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
        shown = list(llm_request.contents)
        llm_request.contents = last_contents(shown)
        await kept.record(shown, llm_request.contents, callback_context, window)
        chain = callback_context._invocation_context.agent.before_model_callback
        kept.chains.append([callback.__name__ for callback in chain])

    return keep_recent


def neighbour(kind: str, kept: Kept) -> BasePlugin | None:
    """One of ADK's own plugins, or None for the agent callback."""
    if kind == "context_filter_invocations":
        return RecordingContextFilter(kept, num_invocations_to_keep=1)
    if kind == "context_filter_custom":
        return RecordingContextFilter(kept, custom_filter=last_contents)
    if kind == "reflect_and_retry":
        from google.adk.plugins.reflect_retry_tool_plugin import ReflectAndRetryToolPlugin

        return ReflectAndRetryToolPlugin()
    if kind == "global_instruction":
        from google.adk.plugins.global_instruction_plugin import GlobalInstructionPlugin

        return GlobalInstructionPlugin(global_instruction="Answer briefly.")
    if kind == "logging":
        from google.adk.plugins.logging_plugin import LoggingPlugin

        return LoggingPlugin()
    if kind == "multimodal_tool_results":
        from google.adk.plugins.multimodal_tool_results_plugin import (
            MultimodalToolResultsPlugin,
        )

        return MultimodalToolResultsPlugin()
    assert kind == "agent_callback_window"
    return None


#: The other code beside PairingPlugin; the windows record what they kept.
NEIGHBOURS = (
    "context_filter_invocations",
    "context_filter_custom",
    "reflect_and_retry",
    "global_instruction",
    "logging",
    "multimodal_tool_results",
    "agent_callback_window",
)
WINDOWS = {"context_filter_invocations", "context_filter_custom", "agent_callback_window"}


#: Where ``MultimodalToolResultsPlugin`` keeps the parts a tool returned until
#: the next request, which it appends them to (its ``PARTS_RETURNED_BY_TOOLS_ID``).
PARTS_RETURNED = "temp:PARTS_RETURNED_BY_TOOLS_ID"


class Tools(Toolbox):
    """The suite's tools, plus one that leaves parts for ``MultimodalToolResultsPlugin``.

    It stores them where the plugin's ``after_tool_callback`` stores the parts a
    tool returns, and returns a dict: ADK's Anthropic converter cannot send a
    result holding ``Part`` objects (``json.dumps``), and what is tested here is
    the plugin's edit of the next request.
    """

    def tools(self) -> list[Any]:
        box = self

        def snapshot(city: str, tool_context: ToolContext) -> dict[str, str]:
            """Takes a picture of a city's sky."""
            box.started["snapshot"] += 1
            picture = types.Part(text=f"(a picture of the sky over {city})")
            tool_context.state[PARTS_RETURNED] = [picture]
            return {"picture": "attached"}

        return [*super().tools(), snapshot]


# -- the four interrupted histories ---------------------------------------------


def _user(message: str, invocation: str) -> Event:
    return Event(
        author="user",
        invocation_id=invocation,
        content=types.Content(role="user", parts=[types.Part(text=message)]),
    )


def _model(parts: list[types.Part], invocation: str, **kwargs: Any) -> Event:
    return Event(
        author=AGENT_NAME,
        invocation_id=invocation,
        content=types.Content(role="model", parts=parts),
        **kwargs,
    )


def _results(*answers: tuple[str, str, dict[str, Any]]) -> types.Content:
    return types.Content(
        role="user",
        parts=[
            types.Part(function_response=types.FunctionResponse(id=i, name=n, response=r))
            for i, n, r in answers
        ],
    )


def seeded(case: str) -> list[Event]:
    """The stored history each seeded case leaves, as ADK's runner writes it."""
    if case == "dead_process":
        return [
            _user("do the slow thing", "inv-1"),
            _model([call("hang", {"reason": "slow"}, id=INTERRUPTED)], "inv-1"),
        ]
    if case == "parallel_partly_answered":
        return [
            _user("weather and time in Oslo?", "inv-1"),
            _model(
                [
                    call("lookup", {"city": "Oslo"}, id="w1"),
                    call("hang", {"reason": "time"}, id=INTERRUPTED),
                ],
                "inv-1",
            ),
            Event(
                author=AGENT_NAME,
                invocation_id="inv-1",
                content=_results(("w1", "lookup", {"weather": "sunny"})),
            ),
        ]
    assert case == "held_open"
    return [
        _user("start the report", "inv-1"),
        _model(
            [call("start_job", {"name": "report"}, id=INTERRUPTED)],
            "inv-1",
            long_running_tool_ids={INTERRUPTED},
        ),
        _model([types.Part(text="The report is running.")], "inv-1"),
    ]


CASES = ("dead_process", "cancelled_task", "parallel_partly_answered", "held_open")


@dataclass
class Run:
    harness: Harness
    kept: Kept
    #: Requests the model received before the turn under test.
    before: int


async def run_case(
    backend: Backend,
    *,
    case: str,
    wrapped: bool,
    plugins: Callable[[PairingPlugin, BasePlugin | None], list[BasePlugin]],
    kind: str,
    composed: bool = False,
) -> Run:
    """`case`'s interrupted history, then one turn in which the model calls ``call_T``."""
    kept = Kept()
    other = neighbour(kind, kept)
    tool = "snapshot" if kind == "multimodal_tool_results" else "lookup"
    steps: list[Any] = []
    if case == "cancelled_task":
        steps.append(calls(call("hang", {"reason": "slow"}, id=INTERRUPTED)))
    steps += [calls(call(tool, {"city": "Oslo"}, id=NEXT)), text("Done.")]
    script = Script(steps=steps, setup=setup_label(wrapped=wrapped, pairing_plugin=True))
    toolbox = Tools()
    agent = LlmAgent(
        name=AGENT_NAME,
        model=ScriptedClaude(script=script),
        instruction="You are a test assistant.",
        tools=toolbox.tools(),
        before_model_callback=(
            [trim_callback(kept), pair_request]
            if composed
            else trim_callback(kept)
            if other is None
            else None
        ),
    )
    service = PairingSessionService(backend.service) if wrapped else backend.service
    app = App(name=backend.app_name, root_agent=agent, plugins=plugins(PairingPlugin(), other))
    harness = Harness(
        backend=backend,
        wrapped=wrapped,
        script=script,
        toolbox=toolbox,
        runner=Runner(app=app, session_service=service),
        service=service,
    )
    session_id = await harness.new_session()
    if case == "cancelled_task":
        await harness.interrupted_turn(session_id, "do the slow thing")
    else:
        session = await backend.service.get_session(
            app_name=backend.app_name, user_id=USER_ID, session_id=session_id
        )
        assert session is not None
        for event in seeded(case):
            await backend.service.append_event(session, event)
    before = len(script.requests)
    kept.requests.clear()
    kept.chains.clear()
    await harness.turn(session_id, "are you still there?")
    return Run(harness, kept, before)


def assert_the_guarantee(run: Run, kind: str, *, exact: bool = True) -> None:
    """Every request valid, no tool twice, ``call_S`` sent wherever the others kept it.

    With `exact`, sent exactly there: nothing after the window puts back a
    turn it cut. Without (a window before the plugin), the restore may send
    more of the history than the window would have kept.
    """
    script = run.harness.script
    assert_every_rule_holds(script)
    turn = script.requests[run.before :]
    assert len(turn) == 2, f"the turn made {len(turn)} model requests"
    sent = [holds_call(request.contents, INTERRUPTED) for request in turn]
    expected = run.kept.requests if kind in WINDOWS else [True, True]
    if exact:
        assert sent == expected, f"call_S sent per request: {sent}, kept: {expected}"
    else:
        lost = [n for n, (s, e) in enumerate(zip(sent, expected, strict=True)) if e and not s]
        assert not lost, f"call_S lost in request(s) {lost}: sent {sent}, kept {expected}"
    started = run.harness.toolbox.started
    assert started["hang"] <= 1
    assert started["lookup"] + started["snapshot"] == 1
    assert started["start_job"] == 0


def ours_first(ours: PairingPlugin, other: BasePlugin | None) -> list[BasePlugin]:
    return [ours] if other is None else [ours, other]


def no_plugin(ours: PairingPlugin, other: BasePlugin | None) -> list[BasePlugin]:
    return []
