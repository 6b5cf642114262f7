"""What README promises and the view keeps in step, pinned by value.

Each test here fails on a change to the code that the rest of the suite let
through: the metadata key spelled out, and the session state that a store
replaced (rather than updated) reaching the view the runner holds.
"""

from __future__ import annotations

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.session import Session

from adk_pairing import PairingSessionService, is_synthetic, repaired_events

from .events import call, model_event, user_text

APP, USER = "app", "user"


def test_synthetic_and_annotated_events_carry_the_metadata_key_readme_names() -> None:
    annotated, synthetic = repaired_events([model_event([call("c1")])])
    assert synthetic.custom_metadata["adk_pairing"]["synthetic"] is True
    assert synthetic.custom_metadata["adk_pairing"]["status"] == "missing"
    assert annotated.custom_metadata["adk_pairing"]["missing"] == ["c1"]
    assert set(synthetic.model_dump(mode="json")["custom_metadata"]) == {"adk_pairing"}


class _StateReplacingStore(InMemorySessionService):
    """A store whose append gives the session a new state dict instead of updating it."""

    async def append_event(self, session: Session, event: Event) -> Event:
        event = await super().append_event(session=session, event=event)
        session.state = {**session.state, "replaced_by_store": len(session.events)}
        return event


async def test_view_state_follows_a_store_that_replaces_the_state_dict() -> None:
    inner = _StateReplacingStore()
    service = PairingSessionService(inner)
    view = await service.create_session(app_name=APP, user_id=USER, state={"k": 1})
    event = user_text()
    event.actions = EventActions(state_delta={"k": 2})
    await service.append_event(view, event)
    assert view.state == {"k": 2, "replaced_by_store": 1}
    await service.append_event(view, model_event([call("c1")]))
    assert view.state == {"k": 2, "replaced_by_store": 2}
    assert any(is_synthetic(e) for e in view.events)
