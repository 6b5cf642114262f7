"""What the installed ADK decides from an event's fields, probed on ADK's own readers."""

from __future__ import annotations

import functools
from typing import Any

from ._modules import imported_or_none

_REHYDRATION = "google.adk.workflow.utils._rehydration_utils"


@functools.cache
def adk_reads_error_code_of_responses() -> bool:
    """Whether ADK decides anything from the ``error_code`` of a function-response event.

    No release reads it when it builds a request or routes a run, but newer
    ones take such an event for a final response (``Event.is_final_response``)
    and, with workflows, for a failed node's terminal event
    (``is_terminal_event``; docs/compatibility.md tables where). Probed on two
    events that differ only in ``error_code``; a failure of the probe answers
    True, the newest releases' answer.
    """
    from google.adk.events.event import Event
    from google.genai import types

    def response_event(**error: str) -> Event:
        response = types.FunctionResponse(id="probe", name="probe", response={"error": "x"})
        part = types.Part(function_response=response)
        return Event(author="probe", content=types.Content(role="user", parts=[part]), **error)

    try:
        plain, failed = response_event(), response_event(error_code="PROBE", error_message="x")
        readers: list[Any] = [Event.is_final_response]
        rehydration = imported_or_none(_REHYDRATION)
        if rehydration is not None:  # a release with workflows
            readers.append(rehydration.is_terminal_event)
        return any(bool(read(plain)) != bool(read(failed)) for read in readers)
    except Exception:  # an unforeseen release: assume it reads the field
        return True
