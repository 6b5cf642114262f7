"""`adk_pairing.adk`: releasing a service's resources on every google-adk."""

from __future__ import annotations

from google.adk.sessions import InMemorySessionService

from adk_pairing import PairingSessionService
from adk_pairing.adk import close_session_service


class _AsyncClose:
    closed = False

    async def close(self) -> None:
        self.closed = True


class _SyncClose:
    closed = False

    def close(self) -> None:
        self.closed = True


class _Engine:
    disposed = False

    async def dispose(self) -> None:
        self.disposed = True


class _EngineOnly:
    """Like google-adk 1.20's DatabaseSessionService: an engine, no close()."""

    def __init__(self) -> None:
        self.db_engine = _Engine()


async def test_close_awaits_an_async_close_and_calls_a_sync_one() -> None:
    for service in (_AsyncClose(), _SyncClose()):
        await close_session_service(service)
        assert service.closed


async def test_a_service_without_close_has_its_engine_disposed() -> None:
    service = _EngineOnly()
    await close_session_service(service)
    assert service.db_engine.disposed


async def test_a_service_holding_nothing_closable_is_left_alone() -> None:
    await close_session_service(object())


class _StoreWithEngineOnly(InMemorySessionService):
    """A real ADK service with an engine and no close(), as 1.20's database store."""

    def __init__(self) -> None:
        super().__init__()
        self.db_engine = _Engine()


async def test_the_decorator_releases_an_inner_service_without_close() -> None:
    inner = _StoreWithEngineOnly()
    assert not hasattr(inner, "close")
    async with PairingSessionService(inner):
        pass
    assert inner.db_engine.disposed
