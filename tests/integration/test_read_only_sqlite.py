"""`scan`/`show` open ADK's `SqliteSessionService` store read-only on every google-adk.

From 1.39 the service parses ``sqlite:///path?mode=ro``; 1.20 takes its path
as a plain file name, so the CLI gives it a read-only connection factory
instead (`adk_pairing.cli._store`). Either way reads work and SQLite itself
refuses a write.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from google.adk.sessions.sqlite_session_service import SqliteSessionService

from adk_pairing.adk import close_session_service
from adk_pairing.cli._store import open_read_only


async def test_sqlite_store_reads_through_the_cli_and_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "adk-sqlite.db"
    writer = SqliteSessionService(db_path=str(path))
    await writer.create_session(app_name="shop", user_id="alice", session_id="known")
    await close_session_service(writer)
    before = path.read_bytes()

    store = open_read_only(f"sqlite:///{path}")
    try:
        assert "mode=ro" in store.read_only
        session = await store.service.get_session(
            app_name="shop", user_id="alice", session_id="known"
        )
        assert session is not None and session.id == "known"
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            await store.service.create_session(app_name="shop", user_id="bob")
    finally:
        await store.close()
    assert path.read_bytes() == before
