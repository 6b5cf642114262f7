"""google-adk-community's ``RedisSessionService``.

``session:{id}`` holds the ``Session`` JSON; the set ``app::{app}:{user}``
lists a user's session ids (``RedisKeys`` in
``adk_community/sessions/redis_session_service.py``). Sets are found with
``SCAN``, members and sessions read in pipelines; with ``concurrency`` >= 2 the
next batch of sessions is fetched while this one is parsed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from google.adk.sessions.base_session_service import BaseSessionService

from ...adk import internals
from ._session_json import REDIS_SCAN_COUNT, escape_glob, get_many, read_session, scan_keys, text
from .base import ReadItem, StoreLayout, Window, adapted, read_ahead


async def _open(service: BaseSessionService, sqlite_path: str | None) -> CommunityRedisReader:
    return CommunityRedisReader(adapted(internals.community_redis_client, service))


LAYOUT = StoreLayout(
    module="google.adk_community.sessions.redis_session_service",
    class_name="RedisSessionService",
    open=_open,
)


class CommunityRedisReader:
    """google-adk-community's ``RedisSessionService``: per-user sets, ``session:{id}``."""

    description = "google-adk-community RedisSessionService keys (app::APP:USER, session:ID)"
    _SET_PREFIX = "app::"

    def __init__(self, client: Any) -> None:
        self._client = client

    async def list_apps(self) -> list[str]:
        apps: set[str] = set()
        async for keys in scan_keys(self._client, f"{self._SET_PREFIX}*", "set", 1000):
            apps.update(key[len(self._SET_PREFIX) :].partition(":")[0] for key in keys)
        return sorted(apps)

    def _patterns(self, window: Window) -> list[str]:
        apps = ["*"] if window.apps is None else [escape_glob(a) for a in window.apps]
        user = "*" if window.user is None else escape_glob(window.user)
        return [f"{self._SET_PREFIX}{app}:{user}" for app in apps]

    async def count(self, window: Window) -> int | None:
        total = 0
        for pattern in self._patterns(window):
            async for set_keys in scan_keys(self._client, pattern, "set", REDIS_SCAN_COUNT):
                async with self._client.pipeline(transaction=False) as pipe:
                    for key in set_keys:
                        pipe.scard(key)
                    total += sum(await pipe.execute())
        return total

    async def read(
        self, window: Window, batch_size: int, *, strict: bool = False, concurrency: int = 1
    ) -> AsyncIterator[ReadItem]:
        batches = read_ahead(self._batches(window, batch_size), concurrency)
        async for app, owner, ids, raws in batches:
            for sid, raw in zip(ids, raws, strict=True):
                if not raw:
                    # Dangling id: its own list_sessions skips it too.
                    continue
                item = read_session(raw, app, owner, sid, window, strict)
                if window.keeps(item):
                    yield item

    async def _batches(
        self, window: Window, batch_size: int
    ) -> AsyncIterator[tuple[str, str, list[str], list[Any]]]:
        """(app, user, session ids, their stored values) of `window`, a batch at a time."""
        for pattern in self._patterns(window):
            async for set_keys in scan_keys(self._client, pattern, "set", batch_size):
                async with self._client.pipeline(transaction=False) as pipe:
                    for key in set_keys:
                        pipe.smembers(key)
                    members = await pipe.execute()
                for set_key, ids in zip(set_keys, members, strict=True):
                    app, _, owner = set_key[len(self._SET_PREFIX) :].partition(":")
                    if not window.wants_app(app):
                        continue
                    ids = sorted(sid for sid in map(text, ids) if window.in_shard(app, owner, sid))
                    for start in range(0, len(ids), batch_size):
                        chunk = ids[start : start + batch_size]
                        raws = await get_many(self._client, [f"session:{i}" for i in chunk])
                        yield app, owner, chunk, raws
