"""A view compares like the session it shows: ADK's own session tests assert
``await svc.get_session(...) == await svc.create_session(...)``."""

from __future__ import annotations

import pytest
from google.adk.events.event import Event
from google.adk.sessions.session import Session
from google.genai import types

from adk_pairing import PairingSessionService, is_synthetic
from adk_pairing.passes.view import HAS_STORAGE_MARKER, view_state_of
from tests.adk_features import requires

from .conftest import backend_params
from .support.backends import Backend

USER = "user-1"


def _event(invocation_id: str, role: str, part: types.Part, author: str = "assistant") -> Event:
    return Event(
        invocation_id=invocation_id,
        author=author,
        content=types.Content(role=role, parts=[part]),
    )


def _call(call_id: str) -> Event:
    part = types.Part(function_call=types.FunctionCall(id=call_id, name="lookup", args={}))
    return _event("inv-1", "model", part)


def _result(call_id: str) -> Event:
    response = types.FunctionResponse(id=call_id, name="lookup", response={"ok": True})
    return _event("inv-1", "user", types.Part(function_response=response))


async def _two_views_and_the_store(
    service: PairingSessionService, backend: Backend, session_id: str
) -> tuple[Session, Session, Session]:
    """Two reads through the decorator, then one of the store itself."""
    reads = []
    for source in (service, service, backend.service):
        session = await source.get_session(
            app_name=backend.app_name, user_id=USER, session_id=session_id
        )
        assert session is not None
        reads.append(session)
    return reads[0], reads[1], reads[2]


async def test_a_fresh_read_equals_the_created_session_on_every_store(backend: Backend) -> None:
    service = PairingSessionService(backend.service)
    session_id = backend.new_session_id()
    created = await service.create_session(
        app_name=backend.app_name, user_id=USER, session_id=session_id, state={"k": 1}
    )
    read = await service.get_session(app_name=backend.app_name, user_id=USER, session_id=session_id)
    stored = await backend.service.get_session(
        app_name=backend.app_name, user_id=USER, session_id=session_id
    )
    assert read == created
    assert created == read
    assert read == stored
    assert stored == read


async def test_the_view_of_a_healthy_session_equals_the_stored_session(backend: Backend) -> None:
    service = PairingSessionService(backend.service)
    session_id = backend.new_session_id()
    view = await service.create_session(
        app_name=backend.app_name, user_id=USER, session_id=session_id
    )
    await service.append_event(view, _call("c1"))
    await service.append_event(view, _result("c1"))
    first, second, stored = await _two_views_and_the_store(service, backend, session_id)
    assert first == second
    assert first == stored
    assert stored == first


async def test_a_repaired_view_differs_from_the_stored_session_by_its_events(
    backend: Backend,
) -> None:
    service = PairingSessionService(backend.service)
    session_id = backend.new_session_id()
    view = await service.create_session(
        app_name=backend.app_name, user_id=USER, session_id=session_id
    )
    await service.append_event(view, _call("c1"))
    first, second, stored = await _two_views_and_the_store(service, backend, session_id)
    assert any(is_synthetic(event) for event in first.events)
    assert first == second
    assert first != stored
    assert stored != first
    stored_with_view_events = stored.model_copy(update={"events": list(first.events)})
    assert first == stored_with_view_events


#: The stores that keep a storage update marker on the session (ADK's DatabaseSessionService).
MARKER_KINDS = frozenset({"db-sqlite", "db-postgres"})


@pytest.mark.parametrize("backend_spec", backend_params(MARKER_KINDS), indirect=True)
@requires(HAS_STORAGE_MARKER, "Session._storage_update_marker (added in 1.39)")
async def test_the_view_carries_the_storage_marker_the_store_wrote_on_append(
    backend: Backend,
) -> None:
    service = PairingSessionService(backend.service)
    session_id = backend.new_session_id()
    view = await service.create_session(
        app_name=backend.app_name, user_id=USER, session_id=session_id
    )
    await service.append_event(view, _call("c1"))
    await service.append_event(view, _result("c1"))
    stored = await backend.service.get_session(
        app_name=backend.app_name, user_id=USER, session_id=session_id
    )
    inner = view_state_of(view).inner  # type: ignore[union-attr]
    view_marker = view.__pydantic_private__["_storage_update_marker"]
    assert view_marker == inner.__pydantic_private__["_storage_update_marker"]
    assert view_marker is not None
    assert view_marker == stored.__pydantic_private__["_storage_update_marker"]
