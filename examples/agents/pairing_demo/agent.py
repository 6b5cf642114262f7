"""An agent whose model reports what it received instead of calling a provider.

The model applies Anthropic's pairing rule to every request, with ADK's own
Anthropic converter (`adk_pairing.rules.checks`): a request with an unanswered
``tool_use`` raises, as a strict provider would reject it. Otherwise it
answers with a JSON report of the calls and results it was shown, so a test
(or a person in ``adk web``) can see the placeholder result adk-pairing put
after an interrupted call.

Run it with the pairing decorator in front of a real store, from the agents
root whose ``services.yaml`` registers the ``pairing+`` schemes, e.g.::

    adk api_server \
      --session_service_uri "pairing+sqlite+aiosqlite:///sessions.db" \
      examples/agents

In a real deployment the model is a provider model, e.g.
``model="anthropic/claude-sonnet-4-5"`` via LiteLLM or ADK's ``Claude``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from adk_pairing.core.placeholders import placeholder_text
from adk_pairing.rules.checks import anthropic_pairing_violations


class UnpairedRequestError(RuntimeError):
    """What a strict provider would answer to a request with an unanswered call."""


def describe_request(contents: list[types.Content]) -> dict[str, Any]:
    """The calls and results a request holds, in order."""
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for content in contents:
        for part in content.parts or ():
            if part.function_call is not None:
                calls.append({"id": part.function_call.id, "name": part.function_call.name})
            if part.function_response is not None:
                response = part.function_response.response or {}
                results.append(
                    {
                        "id": part.function_response.id,
                        "name": part.function_response.name,
                        "status": response.get("status", "answered"),
                        "message": placeholder_text(response),
                    }
                )
    return {"contents": len(contents), "calls": calls, "results": results}


class PairingReportModel(BaseLlm):
    """A scripted model: rejects unpaired requests, reports paired ones."""

    model: str = "pairing-demo-reporter"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        contents = list(llm_request.contents)
        violations = anthropic_pairing_violations(contents)
        if violations:
            raise UnpairedRequestError("; ".join(violations))
        report = {"paired": True, **describe_request(contents)}
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text=json.dumps(report))])
        )


root_agent = LlmAgent(
    name="pairing_demo",
    model=PairingReportModel(),
    instruction="Report the tool calls and results you were given.",
)
