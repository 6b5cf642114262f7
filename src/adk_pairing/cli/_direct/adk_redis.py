"""ADK's own ``google.adk.integrations.redis.RedisSessionService``, where ADK has one.

One string key per session, ``{key_prefix}{app}:{user}:{session}``, holding
the whole ``Session`` as JSON; ``get_session`` is ``Session.model_validate_json``.
Keys are found with ``SCAN`` and read with pipelined ``GET``s; with
``concurrency`` >= 2 the next batch of keys and values is fetched while this
one is parsed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from google.adk.sessions.base_session_service import BaseSessionService

from ...adk import internals
from ._session_json import REDIS_SCAN_COUNT, escape_glob, get_many, read_session, scan_keys
from .base import ReadItem, StoreLayout, Window, adapted, read_ahead


async def _open(service: BaseSessionService, sqlite_path: str | None) -> AdkRedisReader:
    return AdkRedisReader(*adapted(internals.adk_redis_client, service))


LAYOUT = StoreLayout(
    module="google.adk.integrations.redis._redis_session_service",
    class_name="RedisSessionService",
    open=_open,
)


class AdkRedisReader:
    """ADK's ``RedisSessionService`` keys: ``{prefix}{app}:{user}:{session}``."""

    def __init__(self, client: Any, key_prefix: str) -> None:
        self._client = client
        self._prefix = key_prefix
        self.description = f"ADK RedisSessionService keys {key_prefix}*"

    def _is_state_key(self, key: str) -> bool:
        rest = key[len(self._prefix) :]
        return rest.startswith(("user_state:", "app_state:"))

    async def list_apps(self) -> list[str]:
        apps: set[str] = set()
        async for item in self.read(Window(apps=None, user=None), REDIS_SCAN_COUNT):
            apps.add(item.app)
        return sorted(apps)

    def _key_parts(self, key: str) -> tuple[str, str, str]:
        """(app, user, session) as the key names them (ids may contain ':')."""
        app, _, rest = key[len(self._prefix) :].partition(":")
        user, _, sid = rest.partition(":")
        return app, user, sid

    def _patterns(self, window: Window) -> list[str]:
        prefix = escape_glob(self._prefix)
        if window.apps is None:
            return [f"{prefix}*"]
        user = "" if window.user is None else f"{escape_glob(window.user)}:"
        return [f"{prefix}{escape_glob(app)}:{user}*" for app in window.apps]

    async def count(self, window: Window) -> int | None:
        # One SCAN pass over key names only (no values): cheap next to the GETs.
        total = 0
        for pattern in self._patterns(window):
            async for keys in scan_keys(self._client, pattern, "string", REDIS_SCAN_COUNT):
                total += sum(1 for key in keys if not self._is_state_key(key))
        return total

    async def read(
        self, window: Window, batch_size: int, *, strict: bool = False, concurrency: int = 1
    ) -> AsyncIterator[ReadItem]:
        batches = read_ahead(self._batches(window, batch_size), concurrency)
        async for keys, raws in batches:
            for key, raw in zip(keys, raws, strict=True):
                if not raw:
                    continue  # expired between SCAN and GET
                item = read_session(raw, *self._key_parts(key), window, strict)
                if window.keeps(item):
                    yield item

    async def _batches(
        self, window: Window, batch_size: int
    ) -> AsyncIterator[tuple[list[str], list[Any]]]:
        """(session keys, their stored values) of `window`, a batch at a time."""
        for pattern in self._patterns(window):
            async for keys in scan_keys(self._client, pattern, "string", batch_size):
                keys = [
                    key
                    for key in keys
                    if not self._is_state_key(key) and window.in_shard(*self._key_parts(key))
                ]
                if keys:
                    yield keys, await get_many(self._client, keys)
