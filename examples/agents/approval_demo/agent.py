"""An agent whose one tool waits for a person: its call stays open until answered.

``request_approval`` is a long-running tool that returns nothing, so ADK stores
the call with no result and lists it in ``long_running_tool_ids``; ``adk web``
draws an "Enter your response…" box under it. Through adk-pairing's decorator
the session shows a "pending" placeholder after the call; the box stays,
because ``adk web`` ignores a response whose status is exactly ``"pending"``.

The model is scripted, so no provider is called, and it applies Anthropic's
pairing rule to every request (`adk_pairing.rules.checks`), as a strict provider
would:

* a request with no call to ``request_approval`` yet: it calls the tool;
* a request whose last turn answers that call (a person's answer, sent
  through the box): it continues with ``CONTINUATION`` and the answer;
* otherwise (the call is still open, the person wrote text): it says it is
  still waiting.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools import LongRunningFunctionTool
from google.genai import types

from adk_pairing.rules.checks import anthropic_pairing_violations

TOOL = "request_approval"
CONTINUATION = "Approval received, continuing:"
STILL_WAITING = "Still waiting for the approval."


def request_approval(purpose: str) -> None:
    """Asks a person to approve `purpose`; the answer arrives later."""
    return None


class UnpairedRequestError(RuntimeError):
    """What a strict provider would answer to a request with an unanswered call."""


def _text(text: str) -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


class ApprovalScriptModel(BaseLlm):
    """Calls the tool once, then waits for a real answer to continue."""

    model: str = "approval-demo-script"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        contents = list(llm_request.contents)
        violations = anthropic_pairing_violations(contents)
        if violations:
            raise UnpairedRequestError("; ".join(violations))
        called = any(
            part.function_call is not None and part.function_call.name == TOOL
            for content in contents
            for part in content.parts or ()
        )
        if not called:
            call = types.FunctionCall(name=TOOL, args={"purpose": "book the flight"})
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part(function_call=call)])
            )
            return
        last = contents[-1].parts or [] if contents else []
        answers = [
            part.function_response.response or {}
            for part in last
            if part.function_response is not None and part.function_response.name == TOOL
        ]
        real = [answer for answer in answers if answer.get("status") != "pending"]
        if real:
            yield _text(f"{CONTINUATION} {json.dumps(real[-1], sort_keys=True)}")
            return
        yield _text(STILL_WAITING)


root_agent = LlmAgent(
    name="approval_demo",
    model=ApprovalScriptModel(),
    instruction="Ask for approval, then continue once it arrives.",
    tools=[LongRunningFunctionTool(func=request_approval)],
)
