"""The request contents ADK builds from a session, without a model call.

`build_request_contents` runs ADK's own contents request processor
(``google.adk.flows.llm_flows.contents.request_processor``, present under that
name on every release from 1.20 to 2.13) on an `InvocationContext` over the
given events, exactly as `BaseLlmFlow` runs it before each model call: branch
and rewind filtering, compaction, other-agent fencing, both rearrangers, the
orphan pruning of later releases and the id stripping. Only the model call is
left out, so a property test can build thousands of requests a second.

The agent's model is an `AnthropicLlm` subclass: releases that tell id-pairing
providers apart (``_is_id_pairing_model``) then keep call ids as they do for
Claude, the provider whose rule `adk_pairing.rules.checks` checks.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncGenerator, Sequence

from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.llm_agent import LlmAgent
from google.adk.events.event import Event
from google.adk.flows.llm_flows import contents as adk_contents
from google.adk.models.anthropic_llm import AnthropicLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.sessions.session import Session
from google.genai import types

AGENT_NAME = "assistant"


class _NeverCalledClaude(AnthropicLlm):
    """Claude as far as ADK's request builder can tell; never asked for anything."""

    model: str = "never-called-claude"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:  # pragma: no cover - never called
        raise AssertionError("build_request_contents makes no model call")
        yield  # an async generator, like the method it overrides


@functools.cache
def agent_named(name: str) -> LlmAgent:
    """An agent called `name` whose model is `_NeverCalledClaude` (one per name)."""
    return LlmAgent(name=name, model=_NeverCalledClaude(), instruction="Test agent.")


_AGENT = agent_named(AGENT_NAME)
_SERVICE = InMemorySessionService()


async def build_request_async(
    events: Sequence[Event], *, agent: LlmAgent = _AGENT, branch: str | None = None
) -> tuple[LlmRequest, InvocationContext]:
    """The request ADK would send `agent` for a session holding `events`, and its context.

    The context is the one the request was built in, so a plugin's
    ``before_model_callback`` can be run on it through a real
    ``CallbackContext(context)``, as ADK runs it: the session it reads is the
    one the request came from, and ``context.agent.canonical_model`` is the
    model ADK would call.
    """
    session = Session(id="session", app_name="app", user_id="user", events=list(events))
    return await build_session_request_async(session, _SERVICE, agent=agent, branch=branch)


async def build_session_request_async(
    session: Session,
    session_service: BaseSessionService,
    *,
    agent: LlmAgent = _AGENT,
    branch: str | None = None,
) -> tuple[LlmRequest, InvocationContext]:
    """`build_request_async` over a session a service returned (a view, or a stored one)."""
    context = InvocationContext(
        session_service=session_service,
        invocation_id="e-request-probe",
        agent=agent,
        session=session,
        branch=branch,
    )
    request = LlmRequest(model=agent.model.model if not isinstance(agent.model, str) else None)
    async for _ in adk_contents.request_processor.run_async(context, request):
        pass
    return request, context


async def build_request_contents_async(
    events: Sequence[Event], *, agent: LlmAgent = _AGENT, branch: str | None = None
) -> list[types.Content]:
    """The contents of the request ADK would send `agent` for a session holding `events`."""
    request, _ = await build_request_async(events, agent=agent, branch=branch)
    return list(request.contents or ())


def build_request_contents(events: Sequence[Event], **kwargs: object) -> list[types.Content]:
    """`build_request_contents_async`, for synchronous (hypothesis) tests."""
    return asyncio.run(build_request_contents_async(events, **kwargs))  # type: ignore[arg-type]
