"""What a model callback reaches of ADK's run, and ADK's contents processor run once more.

A ``before_model_callback`` gets a ``CallbackContext``; the invocation it
belongs to (the session, the agent, the branch, the session service) is kept
in that context's private field ``_invocation_context``, which `invocation_of`
alone reads. `rerun_contents_processor` runs ADK's own contents request
processor on other events, so that whatever arguments the installed release
passes its builder, they are those of the real request. docs/compatibility.md
says where each is in ADK's source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .builder import builder_logs_quieted

if TYPE_CHECKING:
    from google.adk.events.event import Event
    from google.adk.models.llm_request import LlmRequest
    from google.genai import types


def invocation_of(callback_context: object) -> Any:
    """The invocation context ADK keeps in `callback_context`, or None for another object.

    ADK's callback contexts keep it private (``_invocation_context``) and
    expose only parts of it; the plugin needs the session, the agent, the
    branch and the session service, so it is read here, in one place.
    """
    return getattr(callback_context, "_invocation_context", None)


async def rerun_contents_processor(
    invocation: Any, llm_request: LlmRequest, events: list[Event]
) -> list[types.Content]:
    """What ADK's contents request processor builds for `llm_request` from `events`.

    The processor reads the session's events, the agent, the branch and the
    run config from the invocation context and ``previous_interaction_id``
    from the request, and writes only the request's contents. So it runs on
    a shallow copy of the context (a pydantic model, as is its session)
    whose session holds `events`, into a fresh request with the same model
    and interaction: the real request and context are untouched. Its log
    records are quieted (ADK logged the real build).
    """
    from google.adk.flows.llm_flows.contents import request_processor
    from google.adk.models.llm_request import LlmRequest

    session = invocation.session
    context = invocation.model_copy(
        update={"session": session.model_copy(update={"events": events})}
    )
    request = LlmRequest(model=llm_request.model)
    interaction = getattr(llm_request, "previous_interaction_id", None)
    if interaction is not None:
        request.previous_interaction_id = interaction
    with builder_logs_quieted():
        async for _ in request_processor.run_async(context, request):
            pass
    return list(request.contents)
