"""`PairingSessionService`: a repaired view over any ADK session service.

The decorator hands out *views*: sessions whose ``events`` carry a synthetic
result after every call that nothing answers (see `adk_pairing.repair`). Each
view remembers the inner service's own session object, and every
``append_event`` on a view goes to the inner service with that object, never
with the view. So the inner service persists exactly what it would have
persisted unwrapped, its stale-writer checks see its own revision markers, and
nothing synthetic can reach the store.

After each append the view is brought up to date incrementally (O(parts of the
new event), plus a short backward scan when an older call gets answered), so it
always equals what ``get_session`` would return at that moment, including
inside a running turn.
"""

from __future__ import annotations

import logging
from bisect import bisect_left, insort
from collections import OrderedDict
from typing import Any

from google.adk.events.event import Event
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from google.genai import types
from pydantic import PrivateAttr

from .analysis import CallStatus, PairingLedger, build_ledger, has_rewind
from .repair import (
    PlaceholderTexts,
    annotate_call_event,
    make_synthetic_event,
    repaired_events,
)

logger = logging.getLogger("adk_pairing")

_HAS_STORAGE_MARKER = "_storage_update_marker" in Session.__private_attributes__


class _ViewState:
    """What a view needs to forward appends and stay current."""

    __slots__ = ("inner", "ledger", "placeholder_parts", "slot_order", "synthetic_at")

    def __init__(self, inner: Session, ledger: PairingLedger | None) -> None:
        self.inner = inner
        self.ledger = ledger
        # Stored-event index -> the synthetic event now placed after it.
        self.synthetic_at: dict[int, Event] = {}
        # The keys of `synthetic_at`, sorted: how many synthetic events precede
        # a stored index, hence where its synthetic event sits in the view.
        self.slot_order: list[int] = []
        # Stored-event index -> its placeholder parts by part index, reused each
        # time that event's synthetic result is re-rendered with fewer calls.
        self.placeholder_parts: dict[int, dict[int, types.Part]] = {}

    def index_slots(self, view_events: list[Event], ledger: PairingLedger) -> None:
        self.synthetic_at = _index_synthetic_events(view_events, ledger)
        self.slot_order = sorted(self.synthetic_at)
        self.placeholder_parts = {}


class PairedSession(Session):
    """A session as `PairingSessionService` returns it: a repaired view.

    It is a plain `Session` to every reader. The private link to the inner
    service's session object is what lets appends bypass the view.
    """

    _pairing: _ViewState | None = PrivateAttr(default=None)


class _OncePerCall:
    """Remembers which missing calls were already logged, within a memory bound."""

    def __init__(self, limit: int = 100_000) -> None:
        self._seen: OrderedDict[tuple[str, ...], None] = OrderedDict()
        self._limit = limit

    def first_time(self, key: tuple[str, ...]) -> bool:
        if key in self._seen:
            return False
        self._seen[key] = None
        if len(self._seen) > self._limit:
            self._seen.popitem(last=False)
        return True


_logged_missing_calls = _OncePerCall()


class PairingSessionService(BaseSessionService):
    """Wraps any `BaseSessionService` and repairs unanswered calls in what it returns.

    Args:
      inner: The session service that stores sessions. Required unless `uri`
        is given.
      uri: Instead of `inner`, a session-service URI (``pairing+<uri>`` or a
        plain inner URI) to build the inner service from, as ADK's
        ``services.yaml`` does with ``cls(uri=..., **kwargs)``.
      missing_text: What the model reads for a call with no recorded result.
      pending_text: What the model reads for a call ADK still holds open.
      **inner_kwargs: Passed to the inner service's factory when `uri` is used.
    """

    def __init__(
        self,
        inner: BaseSessionService | None = None,
        *,
        uri: str | None = None,
        missing_text: str | None = None,
        pending_text: str | None = None,
        **inner_kwargs: Any,
    ) -> None:
        if inner is not None and uri is not None:
            raise TypeError(
                "PairingSessionService takes either an inner service or uri=, not both."
            )
        if inner is None:
            if uri is None:
                raise TypeError(
                    "PairingSessionService needs the session service to wrap: "
                    "PairingSessionService(DatabaseSessionService(db_url=...)) or "
                    "PairingSessionService(uri='pairing+sqlite+aiosqlite:///sessions.db')."
                )
            from .factory import create_inner_session_service

            inner = create_inner_session_service(uri, **inner_kwargs)
        elif inner_kwargs:
            raise TypeError(
                f"Unexpected arguments {sorted(inner_kwargs)}: extra keyword arguments "
                "configure the inner service and are only accepted together with uri=."
            )
        if isinstance(inner, PairingSessionService):
            raise TypeError("The inner service is already a PairingSessionService; wrap it once.")
        if not isinstance(inner, BaseSessionService):
            raise TypeError(f"inner must be an ADK BaseSessionService, got {type(inner).__name__}.")
        self._inner = inner
        defaults = PlaceholderTexts()
        self._texts = PlaceholderTexts(
            missing=missing_text if missing_text is not None else defaults.missing,
            pending=pending_text if pending_text is not None else defaults.pending,
        )

    @property
    def inner(self) -> BaseSessionService:
        """The wrapped service; reading through it shows exactly what is stored."""
        return self._inner

    @property
    def texts(self) -> PlaceholderTexts:
        return self._texts

    # -- sessions -----------------------------------------------------------

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        session = await self._inner.create_session(
            app_name=app_name, user_id=user_id, state=state, session_id=session_id
        )
        return self._view_or_stored(session)

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        session = await self._inner.get_session(
            app_name=app_name, user_id=user_id, session_id=session_id, config=config
        )
        if session is None:
            return None
        return self._view_or_stored(session, log_missing=True)

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        return await self._inner.list_sessions(app_name=app_name, user_id=user_id)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await self._inner.delete_session(app_name=app_name, user_id=user_id, session_id=session_id)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        get_user_state = getattr(self._inner, "get_user_state", None)
        if get_user_state is None:  # google-adk releases before get_user_state existed
            raise NotImplementedError(
                f"{type(self._inner).__name__} does not support get_user_state."
            )
        return await get_user_state(app_name=app_name, user_id=user_id)

    async def flush(self) -> None:
        flush = getattr(self._inner, "flush", None)
        if flush is not None:
            await flush()

    async def close(self) -> None:
        """Closes the inner service (its engine, pool or client) if it can be closed."""
        close = getattr(self._inner, "close", None)
        if close is None:
            return
        result = close()
        if hasattr(result, "__await__"):
            await result

    async def __aenter__(self) -> PairingSessionService:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- events -------------------------------------------------------------

    async def append_event(self, session: Session, event: Event) -> Event:
        view_state = _view_state_of(session)
        if view_state is None:
            return await self._inner.append_event(session, event)
        inner = view_state.inner
        stored_before = len(inner.events)
        appended = await self._inner.append_event(inner, event)
        try:
            self._catch_up(session, view_state, stored_before)
        except Exception:
            logger.exception(
                "adk-pairing could not update the view of session %s; "
                "serving the stored events unrepaired; the next append rebuilds the view",
                _session_key(inner),
            )
            view_state.ledger = None
            session.events = list(inner.events)
        _mirror_fields(session, inner)
        return appended

    # -- views --------------------------------------------------------------

    def _view_or_stored(self, stored: Session, *, log_missing: bool = False) -> Session:
        """The repaired view of `stored`, or `stored` itself if repair fails."""
        try:
            view = self._build_view(stored)
            if log_missing:
                self._log_missing(stored, view._pairing.ledger)
            return view
        except Exception:
            logger.exception(
                "adk-pairing could not repair session %s; returning it as stored",
                _session_key(stored),
            )
            return stored

    def _build_view(self, stored: Session) -> PairedSession:
        events = stored.events
        ledger = build_ledger(events)
        view = PairedSession.model_construct(
            id=stored.id,
            app_name=stored.app_name,
            user_id=stored.user_id,
            state=stored.state,
            events=repaired_events(events, self._texts, ledger=ledger),
            last_update_time=stored.last_update_time,
        )
        view_state = _ViewState(stored, ledger)
        if ledger.open_calls:
            view_state.index_slots(view.events, ledger)
        view._pairing = view_state
        _mirror_fields(view, stored)
        return view

    def _catch_up(self, view: PairedSession, view_state: _ViewState, stored_before: int) -> None:
        inner_events = view_state.inner.events
        new_events = inner_events[stored_before:]
        if not new_events and len(inner_events) == stored_before:
            return
        ledger = view_state.ledger
        if (
            ledger is None
            or len(inner_events) < stored_before
            or any(has_rewind(e) for e in new_events)
        ):
            self._rebuild(view, view_state)
            return
        for offset, event in enumerate(new_events):
            index = stored_before + offset
            view.events.append(event)
            for changed in sorted(ledger.observe(event, index)):
                self._refresh_slot(view, view_state, changed)

    def _rebuild(self, view: PairedSession, view_state: _ViewState) -> None:
        events = view_state.inner.events
        ledger = build_ledger(events)
        view.events = repaired_events(events, self._texts, ledger=ledger)
        view_state.ledger = ledger
        view_state.index_slots(view.events, ledger)

    def _refresh_slot(self, view: PairedSession, view_state: _ViewState, index: int) -> None:
        """Re-renders the call event at stored `index` and its synthetic result."""
        stored_event = view_state.inner.events[index]
        open_calls = view_state.ledger.open_calls.get(index) if view_state.ledger else None
        previous = view_state.synthetic_at.pop(index, None)
        if previous is None:
            # A call event just appended: it is the view's last event.
            if open_calls:
                view.events[-1] = annotate_call_event(stored_event, open_calls)
                synthetic = make_synthetic_event(
                    stored_event,
                    open_calls,
                    self._texts,
                    view_state.placeholder_parts.setdefault(index, {}),
                )
                view.events.append(synthetic)
                view_state.synthetic_at[index] = synthetic
                insort(view_state.slot_order, index)
            return
        # Stored index i sits at i + (synthetic events before it) in the view,
        # and its synthetic event right after. Searching the view for it instead
        # costs O(history) per answer: quadratic over a long run of open calls.
        rank = bisect_left(view_state.slot_order, index)
        position = index + rank + 1
        if position >= len(view.events) or view.events[position] is not previous:
            position = _rfind_identity(view.events, previous)
        if open_calls:
            synthetic = make_synthetic_event(
                stored_event,
                open_calls,
                self._texts,
                view_state.placeholder_parts.setdefault(index, {}),
            )
            view.events[position - 1] = annotate_call_event(stored_event, open_calls)
            view.events[position] = synthetic
            view_state.synthetic_at[index] = synthetic
        else:
            view.events[position - 1] = stored_event
            del view.events[position]
            del view_state.slot_order[rank]
            view_state.placeholder_parts.pop(index, None)

    def _log_missing(self, stored: Session, ledger: PairingLedger) -> None:
        for calls in ledger.open_calls.values():
            for call in calls:
                if call.status is not CallStatus.MISSING:
                    continue
                call_event = stored.events[call.event_index]
                key = (stored.app_name, stored.user_id, stored.id, call_event.id, call.key)
                if _logged_missing_calls.first_time(key):
                    logger.warning(
                        "Unanswered function call %s (%s) has no recorded result; the view "
                        "answers it with a placeholder. app=%s user=%s session=%s",
                        call.call_id or "<no id>",
                        call.name,
                        stored.app_name,
                        stored.user_id,
                        stored.id,
                    )


def _index_synthetic_events(view_events: list[Event], ledger: PairingLedger) -> dict[int, Event]:
    """Maps each stored index with open calls to its synthetic event in the view."""
    slots: dict[int, Event] = {}
    position = 0
    for index in sorted(ledger.open_calls):
        # Each earlier slot adds one event, so stored index i sits at i + len(slots).
        position = index + len(slots) + 1
        slots[index] = view_events[position]
    return slots


def _rfind_identity(events: list[Event], target: Event) -> int:
    for position in range(len(events) - 1, -1, -1):
        if events[position] is target:
            return position
    raise LookupError("synthetic event is no longer in the view")


def _view_state_of(session: Session) -> _ViewState | None:
    """The view's link to its inner session; None for any other session.

    Reads pydantic's private-attribute dict directly: ``session._pairing``
    goes through ``BaseModel.__getattr__``, ~1.8 µs on every append.
    """
    if not isinstance(session, PairedSession):
        return None
    private = session.__pydantic_private__
    return private.get("_pairing") if private else None


def _mirror_fields(view: Session, stored: Session) -> None:
    """Keeps state, update time and the storage revision marker in step."""
    view.state = stored.state
    view.last_update_time = stored.last_update_time
    if _HAS_STORAGE_MARKER:
        # Direct read for the same reason as in `_view_state_of`.
        private = stored.__pydantic_private__
        view._storage_update_marker = private.get("_storage_update_marker") if private else None


def _session_key(session: Session) -> str:
    return f"app={session.app_name} user={session.user_id} session={session.id}"
