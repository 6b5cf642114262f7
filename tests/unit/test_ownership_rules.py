"""The pure ownership rules: who owns a session, and which stores are trusted to check."""

from __future__ import annotations

import pytest
from google.adk.sessions import DatabaseSessionService, InMemorySessionService
from google.adk.sessions.session import Session
from google.adk.sessions.sqlite_session_service import SqliteSessionService

from adk_pairing.adk import checks_ownership
from adk_pairing.core.ownership import is_owned_by, owned_sessions


def _session(app: str, user: str, session_id: str) -> Session:
    return Session(id=session_id, app_name=app, user_id=user)


def test_a_session_is_owned_only_by_its_app_user_and_id():
    session = _session("shop", "alice", "s1")

    assert is_owned_by(session, app_name="shop", user_id="alice", session_id="s1")
    assert not is_owned_by(session, app_name="shop", user_id="bob", session_id="s1")
    assert not is_owned_by(session, app_name="bank", user_id="alice", session_id="s1")
    assert not is_owned_by(session, app_name="shop", user_id="alice", session_id="s2")


def test_a_listing_keeps_the_callers_sessions_or_every_user_of_the_app():
    sessions = [
        _session("shop", "alice", "a"),
        _session("shop", "bob", "b"),
        _session("x", "alice", "c"),
    ]

    assert [s.id for s in owned_sessions(sessions, app_name="shop", user_id="alice")] == ["a"]
    assert [s.id for s in owned_sessions(sessions, app_name="shop", user_id=None)] == ["a", "b"]


def test_adks_own_stores_are_trusted_and_an_override_is_not():
    class Careless(InMemorySessionService):
        async def get_session(self, **kwargs):  # a lookup by id alone
            return None

    class Tuned(InMemorySessionService):
        async def create_session(self, **kwargs):  # not one of the owner-checked methods
            return await super().create_session(**kwargs)

    assert checks_ownership(InMemorySessionService())
    assert checks_ownership(object.__new__(SqliteSessionService))
    assert checks_ownership(Tuned())
    assert not checks_ownership(Careless())


@pytest.mark.parametrize(
    ("url", "trusted"),
    [
        ("sqlite+aiosqlite:///:memory:", True),
        ("postgresql+asyncpg://u@127.0.0.1:1/db", True),
        # utf8mb4_general_ci: "ALICE" and "alice " find alice's row.
        ("mysql+aiomysql://u@127.0.0.1:1/db", False),
        ("mariadb+aiomysql://u@127.0.0.1:1/db", False),
    ],
)
async def test_a_database_store_is_trusted_only_where_its_keys_compare_exactly(url, trusted):
    service = DatabaseSessionService(db_url=url)  # no connection is made
    try:
        assert checks_ownership(service) is trusted
    finally:
        await service.db_engine.dispose()
    assert not checks_ownership(object.__new__(DatabaseSessionService))  # no engine: unknown
