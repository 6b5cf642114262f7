"""What the installed ADK's session stores offer, detected by feature.

The releases and ADK files behind each are tabled in docs/compatibility.md
("What the session stores offer, by release").
"""

from __future__ import annotations

import inspect
import tempfile
import time
from pathlib import Path
from typing import Any

from google.adk.events.event import Event
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.session import Session

from ._modules import module_exists

try:  # a release that raises its own error for a missing session
    from google.adk.errors.session_not_found_error import SessionNotFoundError
except ImportError:  # pragma: no cover - an older release raises ValueError
    SessionNotFoundError = ValueError  # type: ignore[misc,assignment]

#: The first google-adk release with ``google.adk.integrations.redis``.
MIN_ADK_FOR_REDIS = "2.9"

#: How to serve Redis on an older google-adk, for error messages and README.
REDIS_ALTERNATIVE = (
    "google-adk-community's RedisSessionService, wrapped by hand: "
    "PairingSessionService(RedisSessionService(uri=<the redis URI>)) with "
    "`from google.adk_community.sessions.redis_session_service import RedisSessionService` "
    "(pip install 'adk-pairing[redis]')"
)


def has_adk_redis_session_service() -> bool:
    """Whether ADK ships its own Redis session service (from `MIN_ADK_FOR_REDIS`)."""
    return module_exists("google.adk.integrations.redis")


def sqlite_service_parses_uris() -> bool:
    """Whether ``SqliteSessionService`` accepts ``sqlite:///path?mode=ro`` (``_parse_db_path``).

    Older ones hand ``db_path`` to ``aiosqlite.connect`` as a file name.
    """
    from google.adk.sessions import sqlite_session_service

    return hasattr(sqlite_session_service, "_parse_db_path")


def is_sqlite_backed(inner: object) -> bool:
    """Whether `inner` keeps its sessions in SQLite.

    ADK's `DatabaseSessionService` on a SQLite engine, or its
    `SqliteSessionService` (subclasses included): the stores whose reads and
    appends are shielded from cancellation.
    """
    names = {cls.__name__ for cls in type(inner).__mro__}
    if "SqliteSessionService" in names:
        return True
    if "DatabaseSessionService" not in names:
        return False
    dialect = getattr(getattr(inner, "db_engine", None), "dialect", None)
    return getattr(dialect, "name", None) == "sqlite"


#: Marks a state key that did not exist before an append.
_ABSENT = object()


class SessionObjectBeforeAppend:
    """What an append is about to change in the session object, to take it back (`restore`).

    ADK's base ``append_event`` updates the session object it is given (the
    event's state delta into ``state``, temporary keys included, then the
    event onto ``events``) before a store such as Redis writes it; when that
    write raises, the object holds what the store does not. Noted before the
    append: the number of events and what the event's own state keys held
    (O(delta), not O(state)).
    """

    __slots__ = ("_session", "_state", "event_count")

    def __init__(self, session: Session, event: Event) -> None:
        self._session = session
        #: How many events the session object held before the append.
        self.event_count = len(session.events)
        delta = event.actions.state_delta if event.actions is not None else None
        state = session.state
        self._state = {key: state.get(key, _ABSENT) for key in delta} if delta else None

    def restore(self) -> None:
        """Takes back what a failed append left in the session object (no phantom)."""
        session = self._session
        del session.events[self.event_count :]
        if self._state:
            state = session.state
            for key, value in self._state.items():
                if value is _ABSENT:
                    state.pop(key, None)
                else:
                    state[key] = value


async def close_session_service(service: Any) -> None:
    """Releases what `service` holds: its ``close()``, or its engine's pool.

    A ``close`` may be sync or async (ADK's are async). Without one (an older
    ``DatabaseSessionService``), a SQLAlchemy ``db_engine`` is disposed;
    anything else holds nothing we can release (an older ``SqliteSessionService``
    opens a connection per call).
    """
    close = getattr(service, "close", None)
    if callable(close):
        result = close()
        if inspect.isawaitable(result):
            await result
        return
    engine = getattr(service, "db_engine", None)
    dispose = getattr(engine, "dispose", None)
    if callable(dispose):
        result = dispose()
        if inspect.isawaitable(result):
            await result


def list_sessions_requires_user(service: BaseSessionService) -> bool:
    """Whether the service's ``list_sessions`` has no default for ``user_id``.

    ADK's own services accept ``user_id=None`` (all users of the app), but a
    service may require it: google-adk-community's ``RedisSessionService``
    declares ``user_id: str`` and, given ``None``, silently lists nothing.
    """
    try:
        parameter = inspect.signature(service.list_sessions).parameters.get("user_id")
    except (TypeError, ValueError):
        return False
    return parameter is not None and parameter.default is inspect.Parameter.empty


def database_drops_subsecond_times(db_url: str) -> bool:
    """Whether ADK's ``DatabaseSessionService`` would keep `db_url`'s times to the second.

    ADK's column type for times gives MySQL microseconds (``DATETIME(6)``) when
    the SQLAlchemy dialect is named ``"mysql"``. SQLAlchemy names its MariaDB
    dialect (``mariadb+aiomysql://``, ``mariadb+asyncmy://``) ``"mariadb"``,
    which gets plain ``DATETIME`` (and ``TEXT`` for events): the store keeps
    whole seconds, and each append's revision check compares them with the
    microseconds it wrote, so a session takes one append and then refuses every
    next one as stale (older releases, which have no such check, reorder the
    events of one second instead). Probed on the installed ADK's own column
    type, so a release that types MariaDB too passes.
    """
    try:
        from sqlalchemy.engine import make_url

        url = make_url(db_url)
        if url.get_backend_name() not in ("mysql", "mariadb"):
            return False
        try:
            from google.adk.sessions.schemas.shared import PreciseTimestamp
        except ImportError:  # a release without ``sessions.schemas`` defines it beside the service
            from google.adk.sessions.database_session_service import (  # type: ignore[no-redef]
                PreciseTimestamp,
            )
        column_type = PreciseTimestamp().load_dialect_impl(url.get_dialect()())
    except Exception:  # not a URL SQLAlchemy parses, or no such type: ADK will say
        return False
    return not getattr(column_type, "fsp", None)


#: The methods through which a session reaches a caller or is changed.
OWNER_CHECKED_METHODS = ("get_session", "list_sessions", "delete_session", "append_event")

#: ADK's services, which look sessions up by (app_name, user_id, id).
SELF_CHECKING_SERVICES = frozenset(
    {
        "google.adk.sessions.in_memory_session_service.InMemorySessionService",
        "google.adk.sessions.database_session_service.DatabaseSessionService",
        "google.adk.sessions.sqlite_session_service.SqliteSessionService",
        "google.adk.sessions.vertex_ai_session_service.VertexAiSessionService",
        "google.adk.integrations.redis._redis_session_service.RedisSessionService",
    }
)


#: SQL dialects on which ``DatabaseSessionService``'s key columns compare exactly
#: (byte for byte) by default. MySQL and MariaDB compare them in the table's
#: collation (ADK's tables take the database default, utf8mb4_general_ci on
#: MariaDB): case-insensitive and blind to trailing spaces, so a lookup as
#: "ALICE" or "alice " finds alice's session. SQL Server's default collation is
#: case-insensitive too.
EXACT_KEY_DIALECTS = frozenset({"postgresql", "sqlite"})


def checks_ownership(service: BaseSessionService) -> bool:
    """Whether `service` itself refuses sessions of another app or user.

    True only when each of `OWNER_CHECKED_METHODS` is the implementation of
    one of ADK's own services (found on the class, so a subclass that
    overrides one of them is not trusted), and, for ``DatabaseSessionService``,
    when its database compares the keys exactly (`EXACT_KEY_DIALECTS`).
    """
    for name in OWNER_CHECKED_METHODS:
        method = getattr(type(service), name, None)
        owner = getattr(method, "__qualname__", "").rpartition(".")[0]
        if f"{getattr(method, '__module__', '')}.{owner}" not in SELF_CHECKING_SERVICES:
            return False
    if "DatabaseSessionService" in {cls.__name__ for cls in type(service).__mro__}:
        dialect = getattr(getattr(service, "db_engine", None), "dialect", None)
        return getattr(dialect, "name", None) in EXACT_KEY_DIALECTS
    return True


#: Event ids written in this order by `probe_tie_break`: neither their id order
#: nor the reverse of the insertion order is the insertion order.
_PROBE_IDS = ("c", "a", "d", "b")


async def probe_tie_break(service: BaseSessionService) -> str | None:
    """How `service`'s ``get_session`` orders events with equal timestamps.

    `service` must be a fresh, writable store (a scratch file): the probe
    writes one session of four events with the same timestamp through the
    service and reads it back. Returns ``"rowid"`` (insertion order), ``"id"``
    (the events' ids), or None when the order is neither (no tie-break).
    """
    session = await service.create_session(app_name="probe", user_id="probe", session_id="probe")
    stamp = time.time()
    for event_id in _PROBE_IDS:
        event = Event(id=event_id, invocation_id="probe", author="user", timestamp=stamp)
        await service.append_event(session, event)
    read = await service.get_session(app_name="probe", user_id="probe", session_id="probe")
    order = tuple(event.id for event in read.events) if read is not None else ()
    if order == _PROBE_IDS:
        return "rowid"
    if order == tuple(sorted(_PROBE_IDS)):
        return "id"
    return None


_sqlite_tie_break: list[str | None] = []


async def sqlite_service_tie_break() -> str | None:
    """`probe_tie_break` of the installed ``SqliteSessionService`` (probed once)."""
    if not _sqlite_tie_break:
        from google.adk.sessions.sqlite_session_service import SqliteSessionService

        with tempfile.TemporaryDirectory(prefix="adk-pairing-probe-") as scratch:
            service = SqliteSessionService(db_path=str(Path(scratch) / "probe.db"))
            try:
                _sqlite_tie_break.append(await probe_tie_break(service))
            finally:
                await close_session_service(service)
    return _sqlite_tie_break[0]
