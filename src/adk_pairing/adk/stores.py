"""What the installed ADK's session stores offer, detected by feature.

The releases and ADK files behind each are tabled in docs/compatibility.md
("What the session stores offer, by release").
"""

from __future__ import annotations

import inspect
from typing import Any

from ._modules import module_exists

try:  # a release that raises its own error for a missing session
    from google.adk.errors.session_not_found_error import SessionNotFoundError
except ImportError:  # pragma: no cover - google-adk 1.x raised ValueError
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
    """Whether ADK ships its own Redis session service (google-adk >= 2.9)."""
    return module_exists("google.adk.integrations.redis")


def sqlite_service_parses_uris() -> bool:
    """Whether ``SqliteSessionService`` accepts ``sqlite:///path?mode=ro`` (>= 1.39).

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


async def close_session_service(service: Any) -> None:
    """Releases what `service` holds: its ``close()``, or its engine's pool.

    A ``close`` may be sync or async (ADK's are async). Without one (1.20's
    ``DatabaseSessionService``), a SQLAlchemy ``db_engine`` is disposed;
    anything else holds nothing we can release (1.20's ``SqliteSessionService``
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
