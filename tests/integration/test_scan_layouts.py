"""The direct reader finds a store's layout by what its service is.

Each store layout is one module of `adk_pairing.cli._direct` declaring
``LAYOUT``; `direct_reader` picks the one whose ADK class the service is an
instance of and reads as (`is_service`), never by a class name. Real services
on real SQLite files here.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from adk_pairing.adk import close_session_service
from adk_pairing.cli._direct import Unsupported, direct_reader, layouts
from tests.adk_features import HAS_SESSION_SCHEMAS


def test_every_store_module_declares_its_layout() -> None:
    assert set(layouts()) >= {"database", "sqlite_service", "adk_redis", "community_redis"}


@pytest.mark.skipif(not HAS_SESSION_SCHEMAS, reason="google-adk < 1.21 has no sessions.schemas")
async def test_a_subclass_keeping_adks_reads_is_read_directly(tmp_path: Path) -> None:
    from google.adk.sessions.database_session_service import DatabaseSessionService

    class LoggingService(DatabaseSessionService):
        async def append_event(self, session: Any, event: Any) -> Any:
            return await super().append_event(session, event)

    service = LoggingService(db_url=f"sqlite+aiosqlite:///{tmp_path / 'a.db'}")
    try:
        await service.create_session(app_name="shop", user_id="u", session_id="s")
        reader = await direct_reader(service, None)
        assert reader.description.startswith("DatabaseSessionService schema 1")
    finally:
        await close_session_service(service)


async def test_a_subclass_overriding_get_session_is_read_through_get_session(
    tmp_path: Path,
) -> None:
    from google.adk.sessions.database_session_service import DatabaseSessionService

    class FilteringService(DatabaseSessionService):
        async def get_session(self, **kwargs: Any) -> Any:
            return await super().get_session(**kwargs)

    service = FilteringService(db_url=f"sqlite+aiosqlite:///{tmp_path / 'b.db'}")
    try:
        with pytest.raises(Unsupported, match=r"FilteringService .* has no layout"):
            await direct_reader(service, None)
    finally:
        await close_session_service(service)


def test_finding_a_layout_imports_no_other_stores_driver(tmp_path: Path) -> None:
    # A fresh process: the test session itself has imported every store.
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from google.adk.sessions.sqlite_session_service import SqliteSessionService
        from adk_pairing.cli._direct import direct_reader

        async def main():
            path = {str(tmp_path / "c.db")!r}
            service = SqliteSessionService(db_path=path)
            await service.create_session(app_name="shop", user_id="u", session_id="s")
            reader = await direct_reader(service, path)
            print(reader.description)
            print(sorted(m for m in sys.modules if m.split(".")[0] == "redis"
                         or m.startswith("google.adk_community")))

        asyncio.run(main())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    description, imported = done.stdout.strip().splitlines()[-2:]
    assert description == "SqliteSessionService tables"
    assert imported == "[]"
