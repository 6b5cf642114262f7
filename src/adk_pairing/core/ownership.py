"""Who owns a session, and which stores check it themselves.

A session belongs to the (``app_name``, ``user_id``) that created it, under
its ``id``. ADK's own stores look sessions up by all three, so a request for
another user's (or another app's) session finds nothing:

- ``InMemorySessionService``: ``sessions[app_name][user_id][session_id]``;
- ``DatabaseSessionService`` and ``SqliteSessionService``: the primary key is
  (app_name, user_id, id) and every query filters on it; but on MySQL and
  MariaDB the database compares those columns in a case-insensitive collation
  that ignores trailing spaces, so "ALICE" is served alice's session;
- ADK's ``RedisSessionService``: the key holds all three (``_session_key``),
  and ``list_sessions`` filters on app and user;
- ``VertexAiSessionService``: the engine is the app, and a session of another
  user is refused.

docs/compatibility.md gives the ADK file and line of each.

google-adk-community's ``RedisSessionService`` (0.5.0) does not: a session is
stored under ``session:<id>`` alone, so ``get_session`` returns whatever
session has that id, whoever asks; ``append_event`` overwrites
``session:<id>`` with the object it is given; ``delete_session`` deletes
``session:<id>`` (redis_session_service.py, ``get_session``,
``append_event``, ``delete_session``). Through the decorator that would hand
alice's session, repaired, to bob.

So the decorator checks ownership itself, but only for stores that do not:
`adk_pairing.adk.checks_ownership` (a probe of the installed ADK's classes)
trusts a method only when it is ADK's own implementation (a subclass that
overrides ``get_session`` is checked again) and, for ``DatabaseSessionService``,
only on PostgreSQL and SQLite; ADK's other stores pay nothing.
The rules are pure; the decorator's shell methods apply them.
"""

from __future__ import annotations

from collections.abc import Iterable

from google.adk.sessions.session import Session

from ..adk import SessionNotFoundError


def is_owned_by(session: Session, *, app_name: str, user_id: str, session_id: str) -> bool:
    """Whether `session` is the one (`app_name`, `user_id`, `session_id`) asked for."""
    return session.id == session_id and session.app_name == app_name and session.user_id == user_id


def owned_sessions(
    sessions: Iterable[Session], *, app_name: str, user_id: str | None
) -> list[Session]:
    """The sessions of `app_name` (and of `user_id`, unless None: every user of the app)."""
    return [
        session
        for session in sessions
        if session.app_name == app_name and (user_id is None or session.user_id == user_id)
    ]


def not_found(session_id: str) -> SessionNotFoundError:
    """The error ADK's stores raise when appending to a session they do not hold."""
    return SessionNotFoundError(f"Session {session_id} not found.")


def session_label(session: object) -> str:
    """How a log line names `session`: ``app=<app> user=<user> session=<id>``, never contents."""
    if session is None:
        return "<unknown session>"
    return key_label(tuple(getattr(session, field, "?") for field in ("app_name", "user_id", "id")))


def key_label(key: tuple[object, ...]) -> str:
    """`session_label` of the session with `key`: (app name, user id, session id)."""
    app_name, user_id, session_id = key
    return f"app={app_name} user={user_id} session={session_id}"
