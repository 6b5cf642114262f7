"""ParallelAgent branches that reuse a call id: each branch answers its own call.

Model-issued ids such as ``call_0`` repeat, and two branches of a
`ParallelAgent` run side by side, so their calls and results interleave in one
session. ADK's request builder shows an agent only the events of its own
branch, its ancestors' and branch-less ones (``_is_event_belongs_to_branch``,
``flows/llm_flows/contents.py`` up to 2.6, ``context/_contents.py`` from 2.10)
and pairs within what it keeps; so does the view.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from google.adk.agents.llm_agent import LlmAgent
from google.adk.agents.parallel_agent import ParallelAgent
from google.adk.apps.app import App
from google.adk.events.event import Event
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import BaseSessionService

from adk_pairing import PairingSessionService, is_synthetic
from adk_pairing.rules.checks import RULES

from .support.backends import Backend
from .support.scenario import DrivesARunner, eventually
from .support.scripted_model import (
    VIEW_ALONE,
    RecordedRequest,
    Script,
    ScriptedClaude,
    Step,
    call,
    calls,
    text,
    user_text,
)

REUSED_ID = "call_0"


class Branches(DrivesARunner):
    """A `ParallelAgent` "fan" over agents "a" and "b", each with its own scripted model."""

    def __init__(
        self,
        backend: Backend,
        steps: dict[str, list[Step]],
        tools: dict[str, list[Callable[..., Any]]],
    ) -> None:
        self.backend = backend
        self.scripts = {
            name: Script(steps=list(agent_steps), setup=VIEW_ALONE, rules=RULES)
            for name, agent_steps in steps.items()
        }
        agents = [
            LlmAgent(
                name=name,
                model=ScriptedClaude(script=self.scripts[name]),
                instruction=f"You are branch {name}.",
                tools=tools[name],
            )
            for name in steps
        ]
        self.inner: BaseSessionService = backend.service
        self.service = PairingSessionService(backend.service)
        app = App(name=backend.app_name, root_agent=ParallelAgent(name="fan", sub_agents=agents))
        self.runner = Runner(app=app, session_service=self.service)

    async def turn(self, session_id: str, message: str) -> None:
        await self.send(session_id, user_text(message))

    async def stored(self, session_id: str) -> list[Event]:
        return (await self.read(session_id, self.inner)).events

    async def view(self, session_id: str) -> list[Event]:
        return (await self.read(session_id)).events

    def rule_violations(self) -> list[str]:
        """Every request's violations, but strict alternation: a placeholder followed
        by the user's text is two user turns, which README documents for the view
        alone (`PairingPlugin` merges them)."""
        return [
            violation
            for script in self.scripts.values()
            for violation in script.all_rule_violations()
            if "strict_alternation" not in violation
        ]


def _placeholders(request: RecordedRequest) -> list[str | None]:
    return [
        response.id
        for status in ("missing", "pending")
        for response in request.responses_with_status(status)
    ]


async def test_two_branches_reusing_an_id_each_answer_their_own_call(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    def lookup(city: str) -> dict[str, str]:
        """Returns the weather in a city."""
        return {"city": city, "weather": "sunny"}

    branches = Branches(
        backend,
        steps={
            name: [calls(call("lookup", {"city": name}, id=REUSED_ID)), text(f"{name} done")]
            for name in ("a", "b")
        },
        tools={"a": [lookup], "b": [lookup]},
    )
    session_id = await branches.new_session()
    with caplog.at_level("WARNING", logger="adk_pairing"):
        await branches.turn(session_id, "go")
    stored = await branches.stored(session_id)
    call_branches = [e.branch for e in stored if e.get_function_calls()]
    assert call_branches == ["fan.a", "fan.b"] or call_branches == ["fan.b", "fan.a"]
    view = await branches.view(session_id)
    assert not [e for e in view if is_synthetic(e)]
    assert [e.id for e in view] == [e.id for e in stored]
    assert not [r for r in caplog.records if r.name == "adk_pairing"]
    assert not branches.rule_violations()


async def test_a_branch_left_unanswered_gets_its_placeholder_in_its_own_branch(
    backend: Backend,
) -> None:
    """Branch b's call hangs and the turn dies; branch a answered the same id after
    b's call was stored. Only b's call is unanswered, in b's branch."""
    b_started = asyncio.Event()
    release = asyncio.Event()

    async def lookup(city: str) -> dict[str, str]:
        """Returns the weather in a city."""
        await b_started.wait()  # a's result lands after b's call is stored
        return {"city": city, "weather": "sunny"}

    async def hang(reason: str) -> dict[str, str]:
        """Does slow work that may never finish."""
        b_started.set()
        await release.wait()
        return {"reason": reason}

    branches = Branches(
        backend,
        steps={
            "a": [calls(call("lookup", {"city": "Oslo"}, id=REUSED_ID)), text("a done"), text("a")],
            "b": [calls(call("hang", {"reason": "slow"}, id=REUSED_ID)), text("b again")],
        },
        tools={"a": [lookup], "b": [hang]},
    )
    session_id = await branches.new_session()

    async def consume() -> None:
        await branches.turn(session_id, "go")

    task = asyncio.create_task(consume())

    async def a_finished() -> bool:
        if task.done():
            task.result()
        return any(
            e.author == "a" and e.content and any(p.text == "a done" for p in e.content.parts or [])
            for e in await branches.stored(session_id)
        )

    # Cancel only once branch a has stored its last event, while b waits in its tool
    # with no write in flight: a task cancelled inside ADK 1.20's SQLite commit leaves
    # the database locked for every later write, which is not what this test is about.
    await eventually(a_finished, what="branch a's final text to be stored")
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    except BaseExceptionGroup as group:
        # Older ADK releases' ParallelAgent end a cancelled branch's generator
        # inside a task group, which raises the group rather than the cancel.
        if group.split((GeneratorExit, asyncio.CancelledError))[1] is not None:
            raise
    release.set()

    view = await branches.view(session_id)
    synthetic = [e for e in view if is_synthetic(e)]
    assert [(e.branch, [r.id for r in e.get_function_responses()]) for e in synthetic] == [
        ("fan.b", [REUSED_ID])
    ]
    await branches.turn(session_id, "again")
    a_request, b_request = branches.scripts["a"].last, branches.scripts["b"].last
    assert _placeholders(a_request) == []
    assert _placeholders(b_request) == [REUSED_ID]
    assert not branches.rule_violations()
