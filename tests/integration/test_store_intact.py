"""The store holds exactly what it would hold without adk-pairing.

A conversation that exercises every kind of open call runs twice on each
store (MariaDB too), once through `PairingSessionService` and once unwrapped,
with the same scripted model answers. The stored histories (read through the unwrapped
service) must be equal up to random ids, and the raw store (Redis values, SQL
rows) must not contain a single adk-pairing marker, while the view of the
same session does carry them (so the search is not vacuous).
"""

from __future__ import annotations

import pytest

from adk_pairing import METADATA_KEY, is_synthetic

from .conftest import WITH_MARIADB, backend_params
from .support.backends import Backend, assert_nothing_synthetic_stored, synthetic_markers
from .support.scenario import Harness, normalized_history
from .support.scripted_model import call, calls, function_responses, text

CONFIRMATION = "adk_request_confirmation"

SCRIPT = [
    calls(call("hang", {"reason": "slow"}, id="call_1")),
    text("Sorry, that was slow."),
    calls(
        call("lookup", {"city": "Oslo"}, id="call_2"),
        call("start_job", {"name": "report"}, id="call_3"),
    ),
    text("Sunny; the report is running."),
    text("Still running."),
    text("The report is ready."),
    calls(call("delete_file", {"path": "/tmp/old.log"}, id="call_4")),
    text("I need your approval."),
    text("Deleted."),
]


async def _conversation(harness: Harness) -> str:
    session_id = await harness.new_session()
    await harness.interrupted_turn(session_id, "slow thing")
    await harness.turn(session_id, "hello?")
    await harness.turn(session_id, "weather, and start the report")
    await harness.turn(session_id, "status?")
    await harness.turn(session_id, function_responses(("call_3", "start_job", {"rows": 7})))
    events = await harness.turn(session_id, "delete /tmp/old.log")
    (confirmation,) = [c for e in events for c in e.get_function_calls() if c.name == CONFIRMATION]
    await harness.turn(session_id, "what will that do?")
    await harness.turn(
        session_id, function_responses((confirmation.id, CONFIRMATION, {"confirmed": True}))
    )
    return session_id


@pytest.mark.parametrize("backend_spec", backend_params(WITH_MARIADB), indirect=True)
async def test_store_holds_exactly_what_the_unwrapped_service_stores_and_no_marker(
    backend: Backend,
) -> None:
    wrapped = Harness.build(backend, wrapped=True, steps=SCRIPT)
    unwrapped = Harness.build(backend, wrapped=False, steps=SCRIPT)
    wrapped_session = await _conversation(wrapped)
    unwrapped_session = await _conversation(unwrapped)

    assert not wrapped.script.steps and not unwrapped.script.steps
    assert wrapped.toolbox.finished == unwrapped.toolbox.finished
    stored = await wrapped.stored_events(wrapped_session)
    assert normalized_history(stored) == normalized_history(
        await unwrapped.stored_events(unwrapped_session)
    )
    assert not any(is_synthetic(e) for e in stored)
    assert not any(METADATA_KEY in (e.custom_metadata or {}) for e in stored)

    # The view of the same session carries the markers the raw search looks for.
    view = await wrapped.view(wrapped_session)
    assert any(is_synthetic(e) for e in view.events)
    view_text = "".join(e.model_dump_json() for e in view.events)
    assert all(marker in view_text for marker in synthetic_markers()[:3])

    raw = await backend.raw_storage_text()
    assert "call_1" in raw and "what will that do?" in raw, "the raw dump missed the session"
    assert_nothing_synthetic_stored(raw)
