"""The bytes a provider's prompt cache sees: a turn's first request, converted as ADK sends it.

Used by ``test_request_bytes.py`` in its own process and, through ``python -m
tests.integration.support.request_bytes``, in a fresh one. A session holding
an interrupted call (the user's message, then the agent's call that nothing
answers) is stored in a SQLite file; each turn runs a real `Runner` over it
with the decorator, the plugin or both, and the first request the model
receives is converted with ADK's Anthropic converter
(`adk_pairing.rules.checks.to_anthropic_messages`) and serialized message by
message. Nothing here imports litellm, so the fresh process starts quickly.
"""

from __future__ import annotations

import asyncio
import copy
import json
import sys
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents.llm_agent import LlmAgent
from google.adk.apps.app import App
from google.adk.events.event import Event
from google.adk.models.anthropic_llm import AnthropicLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.genai import types

from adk_pairing import PairingPlugin, PairingSessionService
from adk_pairing.adk import close_session_service
from adk_pairing.rules.checks import to_anthropic_messages

APP_NAME = "bytes_app"
USER_ID = "ada"
SESSION_ID = "cached"
AGENT_NAME = "assistant"
#: setup -> (the decorator, the plugin)
SETUPS = {"decorator": (True, False), "plugin": (False, True), "both": (True, True)}


class RecordingClaude(AnthropicLlm):
    """A model ADK treats as Claude; it records each request's contents and answers in text."""

    model: str = "recording-claude"
    seen: list[list[types.Content]]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.seen.append(copy.deepcopy(list(llm_request.contents)))
        text = f"Answer {len(self.seen)}."
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


def _service(path: str) -> DatabaseSessionService:
    return DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}")


def _text(role: str, text: str) -> types.Content:
    return types.Content(role=role, parts=[types.Part(text=text)])


async def seed(path: str) -> None:
    """A session in `path` whose last turn died while its tool ran (the call stays unanswered)."""
    service = _service(path)
    try:
        session = await service.create_session(
            app_name=APP_NAME, user_id=USER_ID, session_id=SESSION_ID
        )
        call = types.FunctionCall(id="call_S", name="hang", args={"reason": "slow"})
        for event in (
            Event(author="user", invocation_id="inv-1", content=_text("user", "refund #7")),
            Event(
                author=AGENT_NAME,
                invocation_id="inv-1",
                content=types.Content(role="model", parts=[types.Part(function_call=call)]),
            ),
        ):
            await service.append_event(session, event)
    finally:
        await close_session_service(service)


def _hang(reason: str) -> dict[str, str]:
    """Does slow work (never run here: the model only answers in text)."""
    raise AssertionError("no tool runs in these turns")


async def first_requests(path: str, setup: str, messages: list[str]) -> list[list[str]]:
    """Each turn's first request, as the JSON of each Anthropic message, one turn per message."""
    wrapped, with_plugin = SETUPS[setup]
    inner = _service(path)
    service: BaseSessionService = PairingSessionService(inner) if wrapped else inner
    model = RecordingClaude(seen=[])
    agent = LlmAgent(name=AGENT_NAME, model=model, instruction="Be brief.", tools=[_hang])
    plugins: list[BasePlugin] = [PairingPlugin()] if with_plugin else []
    runner = Runner(
        app=App(name=APP_NAME, root_agent=agent, plugins=plugins), session_service=service
    )
    found: list[list[str]] = []
    try:
        for message in messages:
            before = len(model.seen)
            async for _ in runner.run_async(
                user_id=USER_ID, session_id=SESSION_ID, new_message=_text("user", message)
            ):
                pass
            found.append(serialized(model.seen[before]))
    finally:
        await close_session_service(inner)
    return found


def serialized(contents: list[types.Content]) -> list[str]:
    """Each message ADK's Anthropic converter makes of `contents`, as canonical JSON."""
    return [
        json.dumps(message, sort_keys=True, separators=(",", ":"), default=_plain)
        for message in to_anthropic_messages(contents)
    ]


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json", exclude_none=True) if callable(dump) else str(value)


def main() -> None:
    """``python -m ... <message> <setup>=<path>...``: each setup's `first_requests`, as JSON."""
    message, *runs = sys.argv[1:]

    async def all_setups() -> dict[str, list[list[str]]]:
        found = {}
        for run in runs:
            setup, path = run.split("=", 1)
            found[setup] = await first_requests(path, setup, [message])
        return found

    print(json.dumps(asyncio.run(all_setups())))


if __name__ == "__main__":
    main()
