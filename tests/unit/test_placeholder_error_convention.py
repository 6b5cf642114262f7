"""A "missing" placeholder fails the way ADK marks a failed call; a pending one does not.

ADK 2.13 seals the calls of an aborted invocation with ``{'error': ...}``
responses and ``error_code``/``error_message`` on the event
(``events/_abort_events.py``); ``adk web`` draws an event's error as a red box
under the call. A synthetic "missing" event follows that convention with its
own code, on every release where ADK decides nothing from the code; a pending
placeholder carries no error and keeps ``status: "pending"``, the one value
``adk web``'s ``hasFunctionResponse`` ignores.
"""

from __future__ import annotations

from pathlib import Path

import google.adk
import pytest
from google.adk.events.event import Event

from adk_pairing import PlaceholderTexts, repaired_events
from adk_pairing.adk import adk_reads_error_code_of_responses
from adk_pairing.core.placeholders import MISSING_ERROR_CODE, placeholder_text
from tests.adk_request import build_request_contents
from tests.adk_web import adk_web_has_function_response

from .events import call, model_event, user_text

ADK_ABORT_CODE = "INVOCATION_ABORTED"


def without_error_fields(event: Event) -> Event:
    return event.model_copy(update={"error_code": None, "error_message": None})


def held_open_and_missing() -> list[Event]:
    return [
        user_text(),
        model_event([call("lro", "wait"), call("c2")], long_running=["lro"]),
        user_text("and now?", invocation_id="inv-2"),
    ]


def test_missing_result_reads_genai_error_key_and_pending_result_its_message() -> None:
    synthetic = repaired_events(held_open_and_missing(), PlaceholderTexts("M", "P"))[2]
    pending, missing = (r.response for r in synthetic.get_function_responses())
    assert pending == {"status": "pending", "message": "P"}
    assert missing == {"status": "missing", "error": "M"}
    assert [placeholder_text(pending), placeholder_text(missing)] == ["P", "M"]


def test_missing_synthetic_event_carries_error_message_and_our_code_where_adk_ignores_it() -> None:
    events = [user_text(), model_event([call("c1")])]
    synthetic = repaired_events(events, PlaceholderTexts(missing="gone"))[2]
    assert synthetic.error_message == "gone"
    assert synthetic.error_code != ADK_ABORT_CODE
    expected = None if adk_reads_error_code_of_responses() else MISSING_ERROR_CODE
    assert synthetic.error_code == expected


def test_pending_synthetic_event_carries_no_error() -> None:
    events = [user_text(), model_event([call("lro", "wait")], long_running=["lro"])]
    synthetic = repaired_events(events)[2]
    assert synthetic.get_function_responses()[0].response["status"] == "pending"
    assert synthetic.error_code is None
    assert synthetic.error_message is None


def test_adk_web_keeps_the_answer_box_of_a_held_open_call_and_closes_a_missing_one() -> None:
    view = repaired_events(held_open_and_missing())
    assert not adk_web_has_function_response(view, "lro"), "the answer box would disappear"
    assert adk_web_has_function_response(view, "c2")


def test_adk_web_bundle_still_skips_exactly_pending_responses() -> None:
    """The rule `adk_web_has_function_response` copies is the installed adk web's."""
    bundles = list((Path(google.adk.__file__).parent / "cli" / "browser").glob("main-*.js"))
    if not any("hasFunctionResponse(" in path.read_text() for path in bundles):
        pytest.skip(
            f"google-adk {google.adk.__version__}'s adk web has no hasFunctionResponse "
            "(it lists long-running calls from the streamed events only)"
        )
    source = "".join(path.read_text() for path in bundles)
    assert 'response?.status!=="pending"' in source


def test_error_fields_leave_is_final_response_as_it_was() -> None:
    synthetic = repaired_events([user_text(), model_event([call("c1")])])[2]
    assert synthetic.error_message
    assert synthetic.is_final_response() == without_error_fields(synthetic).is_final_response()


def test_error_fields_leave_the_request_adk_builds_unchanged() -> None:
    view = repaired_events(held_open_and_missing())
    plain = [without_error_fields(event) for event in view]
    with_errors = build_request_contents(view)
    assert with_errors == build_request_contents(plain)
    # The missing text still reaches the model, under "error".
    sent = [
        part.function_response.response
        for content in with_errors
        for part in content.parts or ()
        if part.function_response is not None
    ]
    assert {"status": "missing", "error": PlaceholderTexts().missing} in sent
