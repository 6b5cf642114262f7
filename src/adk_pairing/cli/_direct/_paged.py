"""The paged layouts' read (the SQL ones): keyset pages of sessions, the one triage.

`PagedReader.read` is written once here; a layout's subclass supplies only
its queries. The fast path's verdict per session (`triage`) and the pages of
session keys (`keyset_pages`) are what any paged layout reads through.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from .._fast import LightEvent
from .base import (
    ClearedSession,
    ReadItem,
    SessionKey,
    UnreadableSession,
    Window,
    fast_verdict,
    read_ahead,
)

# -- the one triage -----------------------------------------------------------------

#: Sessions triaged between two turns of the event loop (the read-ahead's chance to run).
_YIELD_EVERY = 25

#: One page of the fast path: its app, its sessions' keys, and their kept rows by
#: (user, session), or None when the filtered read failed (ADK's full read decides).
FastPage = tuple[str, list[SessionKey], dict[tuple[str, str], list[Any]] | None]

#: The full read of some sessions of one app through ADK's own models.
Confirm = Callable[[str, list[SessionKey]], AsyncIterator[ReadItem]]


async def triage(
    pages: AsyncIterator[FastPage],
    light: Callable[[Any], LightEvent],
    confirm: Confirm,
    batch_size: int,
    timeout: float | None,
) -> AsyncIterator[ReadItem]:
    """The fast path's verdict on every session of `pages`; the broken ones confirmed.

    A session the fast path clears is yielded as `ClearedSession`; one it
    finds broken (or cannot read) is gathered and read again by `confirm`,
    at most `batch_size` at a time and one app at a time, and only what that
    full read finds is yielded.
    """
    waiting_app = ""
    waiting: list[SessionKey] = []

    async def flush() -> AsyncIterator[ReadItem]:
        keys = list(waiting)
        waiting.clear()
        async for item in confirm(waiting_app, keys):
            yield item

    async for app, keys, grouped in pages:
        if waiting and app != waiting_app:
            async for item in flush():
                yield item
        waiting_app = app
        for done, (user, sid, updated) in enumerate(keys, 1):
            if done % _YIELD_EVERY == 0:
                # Verdicts never suspend: without a turn of the event loop the
                # read-ahead could not send its next query until this page is
                # done, and the server would idle while the client parses.
                await asyncio.sleep(0)
            verdict = (
                True if grouped is None else fast_verdict(grouped.pop((user, sid)), light, timeout)
            )
            if isinstance(verdict, BaseException):
                yield UnreadableSession(app, user, sid, verdict)
            elif verdict:
                waiting.append((user, sid, updated))
                if len(waiting) >= batch_size:
                    async for item in flush():
                        yield item
            else:
                yield ClearedSession(app, user, sid, updated)
    if waiting:
        async for item in flush():
            yield item


async def paged_read(
    source: AsyncIterator[FastPage],
    concurrency: int,
    light: Callable[[Any], LightEvent] | None,
    confirm: Confirm,
    batch_size: int,
    timeout: float | None,
) -> AsyncIterator[ReadItem]:
    """A paged layout's read: `source` fetched ahead by `concurrency`, then triaged.

    Without `light` (strict, or no fast path) every page is read in full by
    `confirm`. Closing this closes `source`, so no fetch outlives the reader.
    """
    async with contextlib.aclosing(read_ahead(source, concurrency)) as pages:
        if light is None:
            async for app, keys, _ in pages:
                async for item in confirm(app, keys):
                    yield item
            return
        async with contextlib.aclosing(triage(pages, light, confirm, batch_size, timeout)) as items:
            async for item in items:
                yield item


# -- pages of session keys -------------------------------------------------------

#: One page of session keys of an app after `after` (None: from the start):
#: rows of (user, session id, stored update time), in key order, at most `limit`.
FetchPage = Callable[[tuple[str, str] | None, int], Awaitable[Sequence[Sequence[Any]]]]


def utc_epoch(value: Any) -> float:
    """A stored update time as epoch seconds, the way ADK's readers convert it.

    ADK stores naive UTC datetimes on PostgreSQL/SQLite (``schemas/shared.py``
    ``utc_datetime_to_timestamp``) and epoch floats in SqliteSessionService.
    """
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return value.timestamp()
    return float(value)


async def keyset_pages(
    fetch_page: FetchPage, app: str, window: Window, batch_size: int
) -> AsyncIterator[list[SessionKey]]:
    """The keys of `app`'s sessions in `window`, one non-empty page per `batch_size` read.

    Keyset pages over the primary key: each page costs the same however deep
    into the table it is.
    """
    after: tuple[str, str] | None = None
    while True:
        rows = await fetch_page(after, batch_size)
        if not rows:
            return
        after = (rows[-1][0], rows[-1][1])
        kept: list[SessionKey] = []
        for user, sid, stored in rows:
            updated = utc_epoch(stored)
            if window.wants(app, user, updated) and window.in_shard(app, user, sid):
                kept.append((user, sid, updated))
        if kept:
            yield kept
        if len(rows) < batch_size:
            return


#: The kept rows of some sessions of an app, by (user, session); None when that read failed.
FetchRows = Callable[[str, list[SessionKey]], Awaitable[dict[tuple[str, str], list[Any]] | None]]


async def app_pages(
    apps: Sequence[str],
    window: Window,
    batch_size: int,
    fetch_page: Callable[[str], FetchPage],
    fetch_rows: FetchRows | None,
) -> AsyncIterator[FastPage]:
    """Every app's `keyset_pages` as `FastPage`s: with `fetch_rows`, their kept rows too.

    `fetch_page(app)` reads that app's pages; without `fetch_rows` (strict, or a
    layout without a fast path) a page carries no rows and all of it is read in full.
    """
    for app in apps:
        async for keys in keyset_pages(fetch_page(app), app, window, batch_size):
            yield app, keys, None if fetch_rows is None else await fetch_rows(app, keys)


# -- the paged layouts' read --------------------------------------------------------


class PagedReader:
    """A layout read in keyset pages of sessions and rows (the SQL layouts).

    A subclass supplies the queries; `read` is written once here. `fetching`
    and `confirming` are the connections `connections` opens for a read
    (the same one with ``concurrency`` 1, or none for a layout that needs none).
    """

    #: The fast path's parser of one kept row, None where the layout has none.
    light: Callable[[Any], LightEvent] | None = None

    async def list_apps(self) -> list[str]:
        raise NotImplementedError

    @contextlib.asynccontextmanager
    async def connections(self, concurrency: int) -> AsyncIterator[tuple[Any, Any]]:
        """(fetching, confirming) for one read."""
        yield None, None

    async def fetch_page(
        self, fetching: Any, app: str, user: str | None, after: tuple[str, str] | None, limit: int
    ) -> Sequence[Sequence[Any]]:
        """A page of `app`'s session keys (see `FetchPage`), of `user` when given."""
        raise NotImplementedError

    async def fetch_rows(
        self, fetching: Any, app: str, keys: list[SessionKey]
    ) -> dict[tuple[str, str], list[Any]] | None:
        """The fast path's rows of `keys` by (user, session); None when that read failed."""
        raise NotImplementedError

    def full_read(
        self, confirming: Any, app: str, keys: list[SessionKey], timeout: float | None
    ) -> AsyncIterator[ReadItem]:
        """`keys`' sessions rebuilt by ADK's own models, as ``get_session`` does."""
        raise NotImplementedError

    async def read(
        self, window: Window, batch_size: int, *, strict: bool = False, concurrency: int = 1
    ) -> AsyncIterator[ReadItem]:
        apps = window.apps if window.apps is not None else await self.list_apps()
        light = None if strict else self.light
        async with self.connections(concurrency) as (fetching, confirming):
            pages = app_pages(
                apps,
                window,
                batch_size,
                lambda app: functools.partial(self.fetch_page, fetching, app, window.user),
                None if light is None else functools.partial(self.fetch_rows, fetching),
            )

            def confirm(app: str, keys: list[SessionKey]) -> AsyncIterator[ReadItem]:
                return self.full_read(confirming, app, keys, window.timeout)

            items = paged_read(pages, concurrency, light, confirm, batch_size, window.timeout)
            # Closed before the connections: no fetch outlives them.
            async with contextlib.aclosing(items):
                async for item in items:
                    yield item
