"""The agent the demo runs: a real `LlmAgent` on a scripted model and a slow tool.

No provider is called. The scripted model answers the first user message
with one function call carrying an Anthropic-style id (``toolu_…``): ADK keeps
model-issued ids in requests, while it strips the ``adk-…`` ids it invents
itself for models that do not pair by id, and the pairing rule is about ids.
Every request the model receives is recorded, so the demo can inspect the
contents of the exact `LlmRequest` ADK built.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import PrivateAttr

APP_NAME = "refund_desk"
USER_ID = "demo-user"
AGENT_NAME = "support_agent"
TOOL_NAME = "issue_refund"
CALL_ID = "toolu_01DemoRefundA1042"
FIRST_MESSAGE = "Please refund order A-1042 (25 EUR)."
NEXT_MESSAGE = "Did the refund for A-1042 go through?"
#: Printed by the tool (in the child process) once it is running.
TOOL_STARTED = "tool-started"
#: How long the tool would run if nobody killed it.
TOOL_SECONDS = 600


class ScriptedModel(BaseLlm):
    """A model whose answers are fixed, and which records every request."""

    _requests: list[list[types.Content]] = PrivateAttr(default_factory=list)

    @property
    def requests(self) -> list[list[types.Content]]:
        """The contents of every request received, copied as they arrived."""
        return self._requests

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self._requests.append([c.model_copy(deep=True) for c in llm_request.contents])
        last = llm_request.contents[-1] if llm_request.contents else None
        last_text = "".join(p.text or "" for p in (last.parts or [])) if last else ""
        if last_text == FIRST_MESSAGE:
            call = types.FunctionCall(
                id=CALL_ID, name=TOOL_NAME, args={"order_id": "A-1042", "amount_eur": 25}
            )
            parts = [types.Part(function_call=call)]
        else:
            parts = [types.Part(text="I have no confirmation of that refund; let me check first.")]
        yield LlmResponse(content=types.Content(role="model", parts=parts))


async def issue_refund(order_id: str, amount_eur: float) -> dict[str, object]:
    """Refunds an order. Slow on purpose: the demo kills the process meanwhile."""
    print(TOOL_STARTED, flush=True)
    sys.stdout.flush()
    await asyncio.sleep(TOOL_SECONDS)
    return {"refunded": True, "order_id": order_id, "amount_eur": amount_eur}


def build_agent(model: ScriptedModel) -> LlmAgent:
    """The support agent, identical in the child and in the parent."""
    return LlmAgent(
        name=AGENT_NAME,
        model=model,
        instruction="You handle refunds.",
        tools=[issue_refund],
    )


def user_message(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])
