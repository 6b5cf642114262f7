"""Helpers for the Redis layouts: one key holds a whole ``Session`` as JSON.

Both Redis services' ``get_session`` is ``Session.model_validate_json`` of
that value; a scan finds the keys with ``SCAN`` (never ``KEYS``) and reads
them with pipelined ``GET``s. Not a layout itself (its name starts with ``_``).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

from google.adk.sessions.session import Session

from .._fast import CALL_MARKER_BYTES, light_event, parse_json
from .base import ClearedSession, ReadItem, StoredSession, UnreadableSession, Window, fast_verdict

#: Keys per SCAN round trip and per pipeline.
REDIS_SCAN_COUNT = 500


def escape_glob(value: str) -> str:
    """`value` as a literal in a Redis MATCH pattern (as ADK's `_escape_glob`)."""
    return re.sub(r"([\\*?\[\]])", r"\\\1", value)


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def scan_keys(
    client: Any, pattern: str, kind: str | None, batch_size: int
) -> AsyncIterator[list[str]]:
    """Keys matching `pattern`, `batch_size` at a time, by SCAN (never KEYS)."""
    batch: list[str] = []
    options: dict[str, Any] = {"match": pattern, "count": REDIS_SCAN_COUNT}
    if kind is not None:
        options["_type"] = kind
    async for key in client.scan_iter(**options):
        batch.append(text(key))
        if len(batch) >= batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


async def get_many(client: Any, keys: list[str]) -> list[Any]:
    async with client.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.get(key)
        return list(await pipe.execute())


def rebuild_session(raw: Any, app: str, user: str, sid: str) -> ReadItem:
    """A stored ``Session`` JSON, parsed as both Redis services' get_session parse it."""
    try:
        session = Session.model_validate_json(raw)
    except Exception as error:
        return UnreadableSession(app, user, sid, error)
    return StoredSession(
        session.app_name, session.user_id, session.id, session.last_update_time, session.events
    )


def fast_session(raw: Any, app: str, user: str, sid: str, timeout: float | None) -> ReadItem:
    """A stored ``Session`` JSON by the fast path; the full parse when it finds something.

    `raw` is parsed once as plain JSON; its events become `LightEvent`s
    only when the document names a call, a result or a rewind at all.
    """
    data = raw.encode() if isinstance(raw, str) else raw
    try:
        session = parse_json(data)
        events = session.get("events") or ()
        if not isinstance(events, list):
            raise TypeError("events is not a list")
        update_time = float(
            session.get("last_update_time", session.get("lastUpdateTime", 0.0)) or 0.0
        )
        key = (
            session.get("app_name", session.get("appName")),
            session.get("user_id", session.get("userId")),
            session["id"],
        )
        if not all(isinstance(part, str) for part in key):
            raise TypeError("the session's app, user or id is not a string")
    except Exception:
        return rebuild_session(raw, app, user, sid)
    if not any(marker in data for marker in CALL_MARKER_BYTES):
        return ClearedSession(*key, update_time)
    verdict = fast_verdict(events, light_event, timeout)
    if isinstance(verdict, BaseException):
        return UnreadableSession(*key, verdict)
    if verdict:
        return rebuild_session(raw, app, user, sid)
    return ClearedSession(*key, update_time)


def read_session(raw: Any, app: str, user: str, sid: str, window: Window, strict: bool) -> ReadItem:
    """One stored document, by the fast path or (`strict`) ADK's own parse.

    The key names the session only for the error report: app and user ids may
    contain ':', so a readable session's own fields decide.
    """
    if strict:
        return rebuild_session(raw, app, user, sid)
    return fast_session(raw, app, user, sid, window.timeout)
