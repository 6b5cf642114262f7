"""A parent's agent-tool call stays open while its child agent waits: it is pending.

From google-adk 2.6, an `LlmAgent` sub-agent with ``mode="single_turn"`` or
``mode="task"`` is called as a tool (``_SingleTurnAgentTool``,
``_TaskAgentTool``, ``tools/agent_tool.py``) and runs in the parent's session,
in the branch ``<child>@<call id>`` (``_BranchPath.create_sub_branch``). When
the child pauses on a long-running call, the parent's call has no result until
the child resumes: ADK holds it open, so the view's placeholder says "awaiting
a response", not "no result was recorded". (A plain ``AgentTool`` runs its
child in a session of its own and answers the parent's call at once, on every
release.)
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from typing import Any

import pytest
from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.llm_agent import LlmAgent
from google.adk.apps.app import App
from google.adk.events.event import Event
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.tools.long_running_tool import LongRunningFunctionTool

from adk_pairing import PairingSessionService, is_synthetic
from tests.adk_features import requires

from .support.backends import Backend
from .support.scenario import DrivesARunner
from .support.scripted_model import (
    VIEW_ALONE,
    Script,
    ScriptedClaude,
    call,
    calls,
    function_responses,
    text,
    user_text,
)

needs_agent_modes = requires(
    "mode" in LlmAgent.model_fields, "LlmAgent.mode (sub-agents called as tools, added in 2.6)"
)

PARENT_CALL, CHILD_CALL = "parent_1", "child_1"


def start_job(name: str) -> None:
    """Starts a long-running job; its result arrives later."""
    return None


class ParentAndChild(DrivesARunner):
    """A parent agent whose sub-agent "child" (in `mode`) waits on a long-running job."""

    def __init__(self, backend: Backend, mode: str, plugins: Sequence[BasePlugin] = ()) -> None:
        self.backend = backend
        self.child_script = Script(
            steps=[calls(call("start_job", {"name": "report"}, id=CHILD_CALL)), text("job done")],
            setup=VIEW_ALONE,
        )
        self.parent_script = Script(
            steps=[calls(call("child", {"request": "run the report"}, id=PARENT_CALL))]
            + [text("done")] * 3,
            setup=VIEW_ALONE,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            child = LlmAgent(
                name="child",
                description="Runs reports.",
                model=ScriptedClaude(script=self.child_script),
                tools=[LongRunningFunctionTool(start_job)],
                mode=mode,
            )
            parent = LlmAgent(
                name="parent", model=ScriptedClaude(script=self.parent_script), sub_agents=[child]
            )
        self.service = PairingSessionService(backend.service)
        app = App(name=backend.app_name, root_agent=parent, plugins=list(plugins))
        self.runner = Runner(app=app, session_service=self.service)

    async def run(self, session_id: str, message: Any) -> None:
        await self.send(session_id, message)

    async def placeholders(self, session_id: str) -> dict[str | None, str]:
        """Call id -> the status of its placeholder in a fresh read of the view."""
        return _placeholder_statuses((await self.read(session_id)).events)


def _placeholder_statuses(events: Sequence[Event]) -> dict[str | None, str]:
    """Call id -> the status of its placeholder among `events`."""
    return {
        entry["id"]: entry["status"]
        for event in events
        if is_synthetic(event)
        for entry in event.custom_metadata["adk_pairing"]["calls"]
    }


@needs_agent_modes
@pytest.mark.parametrize("mode", ["single_turn", "task"])
async def test_a_parent_call_is_pending_while_its_child_waits_on_a_long_running_call(
    backend: Backend, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    agents = ParentAndChild(backend, mode)
    session_id = await agents.new_session()
    with caplog.at_level(logging.WARNING, logger="adk_pairing"):
        await agents.run(session_id, user_text("run the report"))
        assert await agents.placeholders(session_id) == {
            PARENT_CALL: "pending",
            CHILD_CALL: "pending",
        }
    assert not [
        r for r in caplog.records if r.name == "adk_pairing" and PARENT_CALL in r.getMessage()
    ]


class HeldPlaceholders(BasePlugin):
    """Records, when a run ends, the placeholders in the session object the runner holds."""

    def __init__(self) -> None:
        super().__init__(name="held_placeholders")
        self.seen: list[dict[str | None, str]] = []

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        self.seen.append(_placeholder_statuses(invocation_context.session.events))


@needs_agent_modes
async def test_the_runners_own_view_marks_the_waiting_parent_call_pending_as_it_appends(
    backend: Backend,
) -> None:
    """The runner's session object is kept current append by append: the parent's
    call event is in it, with a placeholder, before the child's waiting call
    arrives; that arrival turns the placeholder to pending. Once the job's
    result is posted the child stops waiting: google-adk 2.13 then answers the
    parent's call, while <= 2.10 never does, so it is missing again."""
    held = HeldPlaceholders()
    agents = ParentAndChild(backend, "single_turn", plugins=[held])
    session_id = await agents.new_session()
    await agents.run(session_id, user_text("run the report"))
    await agents.run(
        session_id, function_responses((CHILD_CALL, "start_job", {"status": "finished"}))
    )
    stored = await agents.read(session_id, backend.service)
    answered = {r.id for e in stored.events for r in e.get_function_responses()}
    after_resume = {} if PARENT_CALL in answered else {PARENT_CALL: "missing"}
    assert held.seen == [{PARENT_CALL: "pending", CHILD_CALL: "pending"}, after_resume]
    assert await agents.placeholders(session_id) == after_resume
