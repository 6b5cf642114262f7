"""`PairingSessionService`: a repaired view over any ADK session service.

The decorator is a shell: it delegates every call to the inner service, hands
what the inner service returned to the view (`adk_pairing.passes.view`) to
build or bring up to date, logs unanswered calls
(`adk_pairing.shells.view_warnings`), and fails open. The rules live below
it: which calls are answered in `adk_pairing.ledger`, the synthetic results
in `adk_pairing.core.repair`, the view and its upkeep on every append in
`adk_pairing.passes.view`, what is remembered between reads in
`adk_pairing.core.analysis_cache`, and the shielded calls of a SQLite store in
`adk_pairing.shells.shielding`. What stays here:

* Every ``append_event`` on a view goes to the inner service with the inner
  service's own session object, never with the view, so the store persists
  exactly what it would have persisted unwrapped and nothing synthetic can
  reach it.
* Failing open: if the view cannot be built or kept current, the caller gets
  the stored session (a read) or the stored events unrepaired (an append),
  with a logged error; never an exception the inner service would not raise.
* Only a full read (no ``GetSessionConfig`` window) is resumed from, or
  remembered in, the analysis cache: a window is not a prefix of the history
  the next full read returns.
* A failed append leaves no phantom: ADK's base ``append_event`` puts the event
  into the session object before a store such as ``RedisSessionService``
  writes it, so when the write raises, the inner session holds an event the
  store does not.
  The decorator takes it out again and leaves the view as it was, so the view
  never shows it and the next append starts from what the store holds.
* Reads and appends of a SQLite-backed store (``DatabaseSessionService`` over
  SQLite, ADK's ``SqliteSessionService``) are shielded from the caller's
  cancellation. Cancelled while it awaits a query, a read or an append of
  ``DatabaseSessionService`` leaves the database locked until the cyclic
  garbage collector runs (the statement still runs in aiosqlite's thread;
  SQLAlchemy closes the connection without closing the cursor; see
  benchmarks/RESULTS.md and docs/compatibility.md), and every
  later write fails with "database is locked". Shielded, the caller still
  gets ``CancelledError`` at once; the call finishes in the background,
  closing its cursor. For a read that costs no database work that was not
  happening anyway (aiosqlite cannot stop a running statement). For an
  append it means the event is stored whole, with its state, and then shown
  in the session object (the view caught up, as for any append): an event
  whose append has started is what the agent did, and a locked store is worse
  than storing it. A background append that fails is logged and, as any
  failed append, leaves no event behind. Later reads and appends of the same
  session through this service wait for it, so the next turn sees what was
  stored, and `close` waits for every one. Other stores are not shielded:
  cancelling their calls does stop work on the server, and leaves no lock.
"""

from __future__ import annotations

import logging
import time
from typing import Any, TypeVar

from google.adk.events.event import Event
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session

from ..adk import (
    SessionObjectBeforeAppend,
    checks_ownership,
    close_session_service,
    is_sqlite_backed,
)
from ..core.analysis_cache import DEFAULT_ANALYSIS_CACHE_SIZE, AnalysisCache, SessionKey
from ..core.ownership import (
    is_owned_by,
    not_found,
    owned_sessions,
    session_label,
)
from ..core.placeholders import PlaceholderTexts
from ..core.repair import repair_history
from ..ledger import PairingLedger, build_ledger
from ..passes.view import PairedSession, ViewState, mirror_fields, paired_view, view_state_of
from .errors import (
    ArgumentTypeError,
    ArgumentValueError,
    UnsupportedSchemeError,
    require_pairing_options,
    require_type,
)
from .factory import URI_ARGUMENT, create_inner_session_service
from .masking import mask_uri
from .metrics import live_metrics
from .shielding import ShieldedCalls
from .store_failures import StoreErrorsTyped
from .uris import PAIRING_PREFIX, is_pairing_uri
from .view_warnings import log_missing_calls, log_unproven, shape_name

__all__ = ["PairingSessionService", "create_session_service"]

logger = logging.getLogger("adk_pairing")

_T = TypeVar("_T")


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
        require_pairing_options(missing_text, pending_text, analysis_cache_size)
        inner = _inner_service(inner, uri, inner_kwargs)
        analysis_cache_size = _cache_size(analysis_cache_size)
        self._inner = inner
        self._store_errors_typed = StoreErrorsTyped(inner)
        # Stores that do not refuse other owners' sessions themselves (see
        # adk_pairing.core.ownership) are checked here; ADK's own stores pay nothing.
        self._check_owner = not checks_ownership(inner)
        self._shield_calls = is_sqlite_backed(inner)
        self._shielded_calls = ShieldedCalls()
        self._analysis_cache = AnalysisCache(analysis_cache_size)
        self._texts = PlaceholderTexts().with_overrides(missing=missing_text, pending=pending_text)

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
        with self._store_errors_typed:
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
        if self._shield_calls:
            await self._shielded_calls.after_writes_to((app_name, user_id, session_id))
        read = self._inner.get_session(
            app_name=app_name, user_id=user_id, session_id=session_id, config=config
        )
        with self._store_errors_typed:
            session = await (self._shielded_calls.run(read) if self._shield_calls else read)
        if session is None or (
            self._check_owner
            and not is_owned_by(session, app_name=app_name, user_id=user_id, session_id=session_id)
        ):
            self._analysis_cache.forget((app_name, user_id, session_id))
            return None
        full_read = config is None or (
            config.num_recent_events is None and config.after_timestamp is None
        )
        metrics = live_metrics()  # None unless a meter provider is configured
        if metrics is None:
            return self._view_or_stored(session, log_missing=True, full_read=full_read)
        started = time.perf_counter()
        view = self._view_or_stored(session, log_missing=True, full_read=full_read)
        metrics.record_read(app_name, time.perf_counter() - started)
        return view

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        with self._store_errors_typed:
            listed = await self._inner.list_sessions(app_name=app_name, user_id=user_id)
        if self._check_owner:
            listed.sessions = owned_sessions(listed.sessions, app_name=app_name, user_id=user_id)
        return listed

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        self._analysis_cache.forget((app_name, user_id, session_id))
        with self._store_errors_typed:
            if self._check_owner and not await self._may_change(app_name, user_id, session_id):
                return  # as for a session that does not exist: nothing to delete
            await self._inner.delete_session(
                app_name=app_name, user_id=user_id, session_id=session_id
            )

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        get_user_state = getattr(self._inner, "get_user_state", None)
        if get_user_state is None:  # google-adk releases before get_user_state existed
            raise NotImplementedError(
                f"{type(self._inner).__name__} does not support get_user_state."
            )
        with self._store_errors_typed:
            return await get_user_state(app_name=app_name, user_id=user_id)

    async def flush(self) -> None:
        flush = getattr(self._inner, "flush", None)
        if flush is not None:
            with self._store_errors_typed:
                await flush()

    async def close(self) -> None:
        """Releases what the inner service holds: its ``close()``, or its engine's pool.

        Waits first for shielded reads and appends whose callers were
        cancelled, so none is left running against a closed engine and no
        event whose append started is lost. An inner service without a
        ``close`` has its SQLAlchemy ``db_engine`` disposed instead
        (`adk_pairing.adk.close_session_service`).
        """
        await self._shielded_calls.drain()
        await close_session_service(self._inner)

    async def __aenter__(self) -> PairingSessionService:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- events -------------------------------------------------------------

    async def append_event(self, session: Session, event: Event) -> Event:
        view_state = view_state_of(session)
        with self._store_errors_typed:
            # A view's inner session passed the owner check when it was read;
            # any other session object is checked against what is stored.
            if (
                view_state is None
                and self._check_owner
                and not await self._may_change(session.app_name, session.user_id, session.id)
            ):
                raise not_found(session.id)
            if not self._shield_calls:
                if view_state is None:
                    return await self._inner.append_event(session, event)
                return await self._append_to_view(session, view_state, event)
            key = _cache_key(session)
            await self._shielded_calls.after_writes_to(key)
            write = (
                self._inner.append_event(session, event)
                if view_state is None
                else self._append_to_view(session, view_state, event)
            )
            return await self._shielded_calls.run(write, writes_to=key)

    async def _append_to_view(
        self, session: PairedSession, view_state: ViewState, event: Event
    ) -> Event:
        """Appends through the view's inner session, then brings the view up to date."""
        inner = view_state.inner
        # ADK's append changes the object before the store writes it.
        before = SessionObjectBeforeAppend(inner, event)
        try:
            appended = await self._inner.append_event(inner, event)
        except BaseException:
            before.restore()  # no phantom event or state in the view's inner session
            raise
        try:
            view_state.catch_up(session, before.event_count)
        except Exception:
            logger.exception(
                "adk-pairing could not update the view of session %s; "
                "serving the stored events unrepaired; the next append rebuilds the view",
                session_label(inner),
            )
            view_state.serve_unrepaired(session)
            if metrics := live_metrics():
                metrics.count_fallback(inner.app_name, "append")
        mirror_fields(session, inner)
        return appended

    async def _may_change(self, app_name: str, user_id: str, session_id: str) -> bool:
        """False when the store holds `session_id` for another app or user."""
        stored = await self._inner.get_session(
            app_name=app_name, user_id=user_id, session_id=session_id
        )
        return stored is None or is_owned_by(
            stored, app_name=app_name, user_id=user_id, session_id=session_id
        )

    # -- views --------------------------------------------------------------

    def _view_or_stored(
        self, stored: Session, *, log_missing: bool = False, full_read: bool = False
    ) -> Session:
        """The repaired view of `stored`, or `stored` itself if repair fails."""
        try:
            ledger = self._ledger_for(stored, full_read=full_read)
            repaired = repair_history(stored.events, ledger, self._texts)
            view = paired_view(stored, ledger, repaired, self._texts)
            if log_missing:
                metrics = live_metrics()
                if repaired.fallback is not None:
                    shape = shape_name(repaired.fallback, ledger.shapes)
                    log_unproven(stored, shape, repaired)
                    if metrics:
                        metrics.count_fallback(stored.app_name, "unproven", shape)
                answered = [call for index in repaired.slots for call in ledger.open_calls[index]]
                log_missing_calls(stored, answered)
                if metrics and answered:
                    metrics.count_placeholders(answered, stored.app_name)
            return view
        except Exception:
            logger.exception(
                "adk-pairing could not repair session %s; returning it as stored",
                session_label(stored),
            )
            self._analysis_cache.forget(_cache_key(stored))
            if metrics := live_metrics():
                metrics.count_fallback(stored.app_name, "read")
            return stored

    def _ledger_for(self, stored: Session, *, full_read: bool) -> PairingLedger:
        """The ledger of `stored`'s history, walking only events not seen before.

        Only a full read (no window) is resumed from, or remembered: a window
        is not a prefix of the history the next full read returns.
        """
        if not full_read:
            return build_ledger(stored.events)
        return self._analysis_cache.ledger_for(_cache_key(stored), stored.events)


def _inner_service(
    inner: BaseSessionService | None, uri: str | None, inner_kwargs: dict[str, Any]
) -> BaseSessionService:
    """The service to wrap: `inner`, or the one `uri` names; refuses every other combination."""
    if inner is not None and uri is not None:
        raise ArgumentTypeError(
            "PairingSessionService takes either an inner service or uri=, not both."
        )
    require_type("uri", uri, str, URI_ARGUMENT, optional=True)
    if inner is None:
        if uri is None:
            raise ArgumentTypeError(
                "PairingSessionService needs the session service to wrap: "
                "PairingSessionService(DatabaseSessionService(db_url=...)) or "
                "PairingSessionService(uri='pairing+sqlite+aiosqlite:///sessions.db')."
            )
        inner = create_inner_session_service(uri, **inner_kwargs)
    elif inner_kwargs:
        raise ArgumentTypeError(
            f"Unexpected arguments {sorted(inner_kwargs)}: extra keyword arguments "
            "configure the inner service and are only accepted together with uri=."
        )
    if isinstance(inner, PairingSessionService):
        raise ArgumentTypeError(
            "The inner service is already a PairingSessionService; wrap it once."
        )
    if not isinstance(inner, BaseSessionService):
        raise ArgumentTypeError(
            f"inner must be an ADK BaseSessionService, got {type(inner).__name__}."
        )
    return inner


def _cache_size(analysis_cache_size: int | None) -> int:
    """`analysis_cache_size`, the default for None; refuses anything but a whole number >= 0."""
    if analysis_cache_size is None:
        analysis_cache_size = DEFAULT_ANALYSIS_CACHE_SIZE
    if (
        isinstance(analysis_cache_size, bool)
        or not isinstance(analysis_cache_size, int)
        or analysis_cache_size < 0
    ):
        raise ArgumentValueError(
            f"analysis_cache_size must be a whole number of sessions >= 0 (0 turns the "
            f"cache off), got {analysis_cache_size!r}."
        )
    return analysis_cache_size


def _cache_key(session: Session) -> SessionKey:
    return (session.app_name, session.user_id, session.id)


def create_session_service(
    uri: str,
    *,
    missing_text: str | None = None,
    pending_text: str | None = None,
    analysis_cache_size: int | None = None,
    **inner_kwargs: Any,
) -> PairingSessionService:
    """A `PairingSessionService` around the service ADK builds for ``pairing+<inner-uri>``.

    The keyword names are those of `PairingSessionService` and of the
    ``pairing:`` block of a config file, so one vocabulary serves all three.

    Args:
      uri: ``pairing+`` followed by any URI ADK accepts, e.g.
        ``pairing+postgresql+asyncpg://user:pw@db:5432/agents``.
      missing_text: What the model reads for a call with no recorded result.
      pending_text: What the model reads for a call ADK still holds open.
      analysis_cache_size: How many sessions' analysis the decorator remembers
        between reads; 0 turns that off. `PairingSessionService`'s default
        when omitted.
      **inner_kwargs: Passed to the inner service's factory
        (see `create_inner_session_service`), e.g. ``pool_size=10``.

    Raises:
      ArgumentTypeError: An argument of the wrong type (a `TypeError`).
      UnsupportedSchemeError: `uri` lacks the ``pairing+`` prefix (the message
        shows the corrected URI, password masked) or names a scheme no service
        here serves (the message lists those that are).
      UriPasswordError, StoreLayoutError: see `create_inner_session_service`.
      ValueError: `analysis_cache_size` is below 0, or the inner service
        cannot be built.

    A store that refuses the login, or whose host or database is wrong, is
    found on first use, when ADK first connects (`StoreLoginError`, `StoreHostError`,
    `StoreDatabaseError`). For Redis and ``sqlite://``, whose services connect
    on every call, each call raises them, each still an instance of the
    driver's own class (redis-py's, sqlite3's) and chained from its error.
    """
    require_type("uri", uri, str, URI_ARGUMENT, optional=False)
    require_pairing_options(missing_text, pending_text, analysis_cache_size)
    if not is_pairing_uri(uri):
        raise UnsupportedSchemeError(
            f"create_session_service expects a {PAIRING_PREFIX}<uri> URI, got "
            f"{mask_uri(uri)!r}. Did you mean {mask_uri(PAIRING_PREFIX + uri)!r}? "
            "(For the unwrapped service, call "
            "adk_pairing.shells.factory.create_inner_session_service.)"
        )
    return PairingSessionService(
        create_inner_session_service(uri, **inner_kwargs),
        missing_text=missing_text,
        pending_text=pending_text,
        analysis_cache_size=analysis_cache_size,
    )
