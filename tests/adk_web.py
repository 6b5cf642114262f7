"""What ``adk web`` (the dev UI bundled in google-adk) decides from a session's events.

Rules copied from the chat component of its bundle (``cli/browser/main-*.js``,
the same in google-adk 1.39 to 2.13), so tests can state what a person sees
without a browser. `tests/browser/check_adk_web.py` checks them in one.
"""

from __future__ import annotations

from collections.abc import Iterable

from google.adk.events.event import Event

#: The placeholder of the box ``adk web`` draws under a long-running call.
ANSWER_BOX_PLACEHOLDER = "Enter your response..."


def adk_web_has_function_response(events: Iterable[Event], call_id: str) -> bool:
    """``hasFunctionResponse(id)``: whether ``adk web`` counts the call as answered.

    True when any event holds a response with the call's id whose
    ``response.status`` is not exactly ``"pending"``. A long-running call keeps
    its "Enter your response…" box while this is False.
    """
    return any(
        response.id == call_id and (response.response or {}).get("status") != "pending"
        for event in events
        for response in event.get_function_responses()
    )


def adk_web_shows_error(event: Event) -> bool:
    """Whether ``adk web`` draws an error box under the event (``errorCode || errorMessage``)."""
    return bool(event.error_code or event.error_message)
