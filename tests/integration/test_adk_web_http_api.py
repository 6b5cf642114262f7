"""What ``adk web`` shows over the decorator, asserted through its HTTP API.

One real ``adk web`` server (ADK's own CLI and FastAPI app) per module, on a
SQLite store behind ``pairing+sqlite+aiosqlite://``; see adk_web_support.py
for the scenes. The page draws an error box for an event with ``errorCode``
or ``errorMessage``, and an "Enter your response…" box under a long-running
call until `adk_web_has_function_response` (tests/adk_web.py); both are
decided from exactly the events these calls return. The same assertions run
in a real browser in tests/browser/check_adk_web.py (``make web-check``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adk_pairing.adk import adk_reads_error_code_of_responses
from adk_pairing.core.placeholders import DEFAULT_MISSING_TEXT, MISSING_ERROR_CODE
from tests.adk_web import adk_web_has_function_response, adk_web_shows_error

from .adk_web_support import (
    APPROVAL_APP,
    AdkWebClient,
    WebServer,
    adk_web,
    assert_store_holds_no_synthetic_row,
    held_open_call,
    model_texts,
    seed_broken_session,
    synthetic_events,
    user_answer,
    user_text,
)
from .wiring_support import DEMO_APP, INTERRUPTED_TOOL

APPROVAL_TOOL = "request_approval"
CONTINUATION = "Approval received, continuing:"
STILL_WAITING = "Still waiting for the approval."


@pytest.fixture(scope="module")
def web_server(tmp_path_factory) -> Iterator[WebServer]:
    with adk_web(tmp_path_factory.mktemp("adk-web")) as running:
        yield running


@pytest.fixture
def web_client(web_server) -> Iterator[AdkWebClient]:
    client = AdkWebClient(web_server)
    yield client
    client.close()


def test_broken_session_shows_an_error_for_the_missing_call_and_a_healthy_one_none(
    web_server, web_client
):
    broken = seed_broken_session(web_server)
    healthy = web_client.create_session(DEMO_APP)
    web_client.run(DEMO_APP, healthy, user_text("hello"))
    assert broken.session_id in web_client.list_sessions(DEMO_APP, broken.user_id)
    assert healthy in web_client.list_sessions(DEMO_APP)

    events = web_client.events(DEMO_APP, broken.session_id, broken.user_id)
    errors = [event for event in events if adk_web_shows_error(event)]
    assert len(errors) == 1, events
    (placeholder,) = errors[0].get_function_responses()
    assert (placeholder.id, placeholder.name) == (broken.call_id, INTERRUPTED_TOOL)
    assert placeholder.response == {"status": "missing", "error": DEFAULT_MISSING_TEXT}
    assert errors[0].error_message == DEFAULT_MISSING_TEXT
    expected_code = None if adk_reads_error_code_of_responses() else MISSING_ERROR_CODE
    assert errors[0].error_code == expected_code

    assert not any(adk_web_shows_error(event) for event in web_client.events(DEMO_APP, healthy))
    assert_store_holds_no_synthetic_row(web_server)


def test_held_open_call_keeps_its_answer_box_before_and_after_user_text(web_server, web_client):
    session = web_client.create_session(APPROVAL_APP)
    call = held_open_call(web_client.run(APPROVAL_APP, session, user_text("Book my flight")))

    before = web_client.events(APPROVAL_APP, session)
    (placeholder,) = synthetic_events(before)
    assert placeholder.get_function_responses()[0].response["status"] == "pending"
    assert not any(adk_web_shows_error(event) for event in before)
    assert not adk_web_has_function_response(before, call.id)

    reply = web_client.run(APPROVAL_APP, session, user_text("Any news?"))
    assert model_texts(reply) == [STILL_WAITING]
    after = web_client.events(APPROVAL_APP, session)
    assert len(synthetic_events(after)) == 1
    assert not adk_web_has_function_response(after, call.id)
    assert_store_holds_no_synthetic_row(web_server)


def test_answering_the_held_open_call_runs_its_continuation_and_drops_the_placeholder(
    web_server, web_client
):
    session = web_client.create_session(APPROVAL_APP)
    call = held_open_call(web_client.run(APPROVAL_APP, session, user_text("Book my flight")))
    assert synthetic_events(web_client.events(APPROVAL_APP, session))

    answer = user_answer(call.id, call.name, {"approved": True})
    continued = model_texts(web_client.run_sse(APPROVAL_APP, session, answer))
    assert continued == [f'{CONTINUATION} {{"approved": true}}']

    events = web_client.events(APPROVAL_APP, session)
    assert synthetic_events(events) == []
    assert adk_web_has_function_response(events, call.id)
    assert not any(adk_web_shows_error(event) for event in events)
    assert_store_holds_no_synthetic_row(web_server)
