"""The service internals the direct reader reads exist in the installed release.

`adk_pairing.adk.internals` is the only module that reaches into a session
service's private or undocumented attributes. Each test here builds the real
service and uses what its adapter returns against the real store; when a
release renames the attribute, the adapter's `InternalsChanged` message (which
names the attribute and the release) is what fails the test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from adk_pairing.adk import close_session_service, internals
from adk_pairing.adk.internals import InternalsChanged
from tests.adk_features import HAS_ADK_REDIS
from tests.conftest import require_server


def _adapted(read: object, service: object) -> object:
    try:
        return read(service)  # type: ignore[operator]
    except InternalsChanged as changed:
        pytest.fail(str(changed))


async def test_database_session_service_engine(tmp_path: Path) -> None:
    from google.adk.sessions.database_session_service import DatabaseSessionService
    from sqlalchemy import text

    service = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{tmp_path / 'a.db'}")
    try:
        engine = _adapted(internals.database_engine, service)
        async with engine.connect() as connection:  # type: ignore[attr-defined]
            assert (await connection.execute(text("SELECT 1"))).scalar_one() == 1
    finally:
        await close_session_service(service)


@pytest.mark.redis
@pytest.mark.skipif(not HAS_ADK_REDIS, reason="ADK's RedisSessionService exists from 2.9")
async def test_adk_redis_session_service_client_and_prefix(redis_url: str) -> None:
    from google.adk.integrations.redis import RedisSessionService, RedisSessionServiceConfig

    require_server("Redis", "127.0.0.1", 6379)
    config = RedisSessionServiceConfig(uri=redis_url, key_prefix="adkp-adapter:")
    service = RedisSessionService(config=config)
    client, prefix = _adapted(internals.adk_redis_client, service)  # type: ignore[misc]
    try:
        assert prefix == "adkp-adapter:"
        assert await client.ping()
    finally:
        await client.aclose()


@pytest.mark.redis
async def test_community_redis_session_service_client(redis_url: str) -> None:
    community = pytest.importorskip(
        "google.adk_community.sessions.redis_session_service",
        reason="google-adk-community is not installed",
    )
    require_server("Redis", "127.0.0.1", 6379)
    service = community.RedisSessionService(uri=redis_url)
    client = _adapted(internals.community_redis_client, service)
    try:
        assert await client.ping()  # type: ignore[attr-defined]
    finally:
        await client.aclose()  # type: ignore[attr-defined]


class _RenamedService:
    """A service of a release that renamed every internal the adapters read."""


@pytest.mark.parametrize(
    ("read", "attribute"),
    [
        (internals.database_engine, "db_engine"),
        (internals.adk_redis_client, "_get_redis()"),
        (internals.community_redis_client, "cache"),
    ],
)
def test_a_renamed_internal_is_named_in_one_clear_message(read: object, attribute: str) -> None:
    with pytest.raises(InternalsChanged) as raised:
        read(_RenamedService())  # type: ignore[operator]
    message = str(raised.value)
    assert "_RenamedService of google-adk " in message
    assert f"has no {attribute} " in message
    assert "src/adk_pairing/adk/internals.py" in message


async def test_a_scan_falls_back_to_get_session_naming_the_renamed_internal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from google.adk.sessions.database_session_service import DatabaseSessionService

    from adk_pairing.cli._direct import Unsupported, direct_reader

    service = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{tmp_path / 'b.db'}")
    try:
        monkeypatch.delattr(service, "db_engine")
        with pytest.raises(Unsupported, match=r"has no db_engine \(its SQLAlchemy AsyncEngine\)"):
            await direct_reader(service, None)
    finally:
        monkeypatch.undo()
        await close_session_service(service)
