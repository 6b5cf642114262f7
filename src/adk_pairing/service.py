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
from bisect import bisect_left
from collections import OrderedDict
from typing import Any

from google.adk.events.event import Event
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from pydantic import PrivateAttr

from .analysis import CallStatus, PairingLedger, build_ledger, is_rewind
from .analysis_cache import DEFAULT_ANALYSIS_CACHE_SIZE, AnalysisCache, SessionKey
from .repair import PlaceholderTexts, RepairedHistory, RepairedSlot, repair_history

logger = logging.getLogger("adk_pairing")

_HAS_STORAGE_MARKER = "_storage_update_marker" in Session.__private_attributes__


class _ViewState:
    """What a view needs to forward appends and stay current."""

    __slots__ = ("inner", "ledger", "slot_order", "slots")

    def __init__(self, inner: Session, ledger: PairingLedger | None) -> None:
        self.inner = inner
        self.ledger = ledger
        # Stored-event index -> the repair of that call event, while it has
        # open calls; each slot knows the synthetic event it placed.
        self.slots: dict[int, RepairedSlot] = {}
        # The keys of `slots`, sorted: how many synthetic events precede a
        # stored index, hence where its synthetic event sits in the view.
        self.slot_order: list[int] = []

    def index_slots(self, repaired: RepairedHistory) -> None:
        self.slots = repaired.slots
        self.slot_order = list(repaired.slots)  # built in index order


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
      analysis_cache_size: How many sessions' analysis to remember between
        reads (about 1 kB each unless calls are open), so that the
        next full read of a session walks only the events appended since.
        0 walks the whole history on every read; None means the default,
        `DEFAULT_ANALYSIS_CACHE_SIZE`.
      **inner_kwargs: Passed to the inner service's factory when `uri` is used.
    """

    def __init__(
        self,
        inner: BaseSessionService | None = None,
        *,
        uri: str | None = None,
        missing_text: str | None = None,
        pending_text: str | None = None,
        analysis_cache_size: int | None = None,
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
        if analysis_cache_size is None:
            analysis_cache_size = DEFAULT_ANALYSIS_CACHE_SIZE
        if (
            isinstance(analysis_cache_size, bool)
            or not isinstance(analysis_cache_size, int)
            or analysis_cache_size < 0
        ):
            raise ValueError(
                f"analysis_cache_size must be a whole number of sessions >= 0 (0 turns the "
                f"cache off), got {analysis_cache_size!r}."
            )
        self._inner = inner
        self._analysis_cache = AnalysisCache(analysis_cache_size)
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

    @property
    def analysis_cache_size(self) -> int:
        """How many sessions' analysis this service remembers between reads (0: none)."""
        return self._analysis_cache.size

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
        self._analysis_cache.forget(_cache_key(session))
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
            self._analysis_cache.forget((app_name, user_id, session_id))
            return None
        full_read = config is None or (
            config.num_recent_events is None and config.after_timestamp is None
        )
        return self._view_or_stored(session, log_missing=True, full_read=full_read)

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        return await self._inner.list_sessions(app_name=app_name, user_id=user_id)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        self._analysis_cache.forget((app_name, user_id, session_id))
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

    def _view_or_stored(
        self, stored: Session, *, log_missing: bool = False, full_read: bool = False
    ) -> Session:
        """The repaired view of `stored`, or `stored` itself if repair fails."""
        try:
            ledger = self._ledger_for(stored, full_read=full_read)
            view = self._build_view(stored, ledger)
            if log_missing:
                self._log_missing(stored, ledger)
            return view
        except Exception:
            logger.exception(
                "adk-pairing could not repair session %s; returning it as stored",
                _session_key(stored),
            )
            self._analysis_cache.forget(_cache_key(stored))
            return stored

    def _ledger_for(self, stored: Session, *, full_read: bool) -> PairingLedger:
        """The ledger of `stored`'s history, walking only events not seen before.

        Only a full read (no window) is resumed from, or remembered: a window
        is not a prefix of the history the next full read returns.
        """
        if not full_read:
            return build_ledger(stored.events)
        return self._analysis_cache.ledger_for(_cache_key(stored), stored.events)

    def _build_view(self, stored: Session, ledger: PairingLedger) -> PairedSession:
        repaired = repair_history(stored.events, ledger, self._texts)
        view = PairedSession.model_construct(
            id=stored.id,
            app_name=stored.app_name,
            user_id=stored.user_id,
            state=stored.state,
            events=repaired.events,
            last_update_time=stored.last_update_time,
        )
        view_state = _ViewState(stored, ledger)
        if repaired.slots:
            view_state.index_slots(repaired)
        view._pairing = view_state
        _mirror_fields(view, stored)
        return view

    def _catch_up(self, view: PairedSession, view_state: _ViewState, stored_before: int) -> None:
        inner_events = view_state.inner.events
        stored_now = len(inner_events)
        if stored_now == stored_before:
            return
        ledger = view_state.ledger
        new_events = inner_events[stored_before:]
        if (
            ledger is None
            or stored_now < stored_before
            or ledger.withholding  # its release is not observed: see PairingLedger
            or _holds_a_rewind(new_events)
        ):
            self._rebuild(view, view_state)
            return
        view_events = view.events
        index = stored_before
        for event in new_events:
            view_events.append(event)
            settled, opened = ledger.observe(event, index)
            if settled:
                touched: dict[int, None] = {}
                for call in settled:
                    view_state.slots[call.event_index].settle(call.part_index)
                    touched[call.event_index] = None
                for call_index in touched:
                    self._refresh_slot(view, view_state, call_index)
            if opened is not None:
                self._open_slot(view, view_state, opened)
            index += 1

    def _rebuild(self, view: PairedSession, view_state: _ViewState) -> None:
        events = view_state.inner.events
        ledger = build_ledger(events)
        repaired = repair_history(events, ledger, self._texts)
        view.events = repaired.events
        view_state.ledger = ledger
        view_state.index_slots(repaired)

    def _open_slot(self, view: PairedSession, view_state: _ViewState, index: int) -> None:
        """Repairs the call event just appended at stored `index` (the view's last event)."""
        calls = view_state.ledger.open_calls[index]  # all of a new event's calls are open
        slot = RepairedSlot(view_state.inner.events[index], calls, self._texts)
        view.events[-1], synthetic = slot.render()
        view.events.append(synthetic)
        view_state.slots[index] = slot
        view_state.slot_order.append(index)  # the newest index is the largest

    def _refresh_slot(self, view: PairedSession, view_state: _ViewState, index: int) -> None:
        """Re-renders the call event at stored `index` after some of its calls were answered."""
        slot = view_state.slots[index]
        previous = slot.synthetic
        # Stored index i sits at i + (synthetic events before it) in the view,
        # and its synthetic event right after. Searching the view for it instead
        # costs O(history) per answer: quadratic over a long run of open calls.
        rank = bisect_left(view_state.slot_order, index)
        position = index + rank + 1
        if position >= len(view.events) or view.events[position] is not previous:
            position = _rfind_identity(view.events, previous)
        if slot:
            view.events[position - 1], view.events[position] = slot.render()
            return
        view.events[position - 1] = slot.call_event
        del view.events[position]
        del view_state.slot_order[rank]
        del view_state.slots[index]

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


def _holds_a_rewind(events: list[Event]) -> bool:
    return any(map(is_rewind, events))  # map: no generator frame per append


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
    """Keeps state, update time and the storage revision marker in step.

    Runs on every append, so it assigns only what changed: each assignment
    goes through pydantic's ``__setattr__``. The state is usually the very
    dict the inner service updates in place.
    """
    if view.state is not stored.state:
        view.state = stored.state
    # Straight into the field values: the field is already marked set (the
    # view is built with it), and pydantic's __setattr__ adds two frames.
    view.__dict__["last_update_time"] = stored.last_update_time
    if _HAS_STORAGE_MARKER:
        # Direct reads for the same reason as in `_view_state_of`.
        marker = (stored.__pydantic_private__ or {}).get("_storage_update_marker")
        if marker is not (view.__pydantic_private__ or {}).get("_storage_update_marker"):
            view._storage_update_marker = marker


def _cache_key(session: Session) -> SessionKey:
    return (session.app_name, session.user_id, session.id)


def _session_key(session: Session) -> str:
    return f"app={session.app_name} user={session.user_id} session={session.id}"
