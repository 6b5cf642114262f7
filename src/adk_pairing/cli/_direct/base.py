"""What every direct reader shares: the window, shards, keyset pages, the one triage.

A store layout's module (one per layout, beside this one) supplies only what
is its own: how to list and count its sessions, the query of one page of
session keys, the rows of a page, and the full read through ADK's own models
that confirms a finding. Everything else is here, written once:

* `Window` and `Shard`: which sessions a scan reads;
* `keyset_pages`: pages of session keys over the primary key, filtered by the
  window and the shard;
* `triage`: the fast path's verdict on each session of a page (cleared,
  unreadable, or to confirm) and the confirmations gathered across pages;
* `read_ahead`: the ``concurrency`` rule. With ``concurrency`` >= 2 a reader
  fetches its next page while the current one is triaged (`prefetched`: at
  most two of its queries in flight); with 1 it fetches one page at a time.
  Every reader applies it the same way;
* `StoreLayout` and `is_service`: how the package registry finds the layout
  of a service, by what the service is (an instance of ADK's own class whose
  reads are that class's own), never by a class name.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import functools
import sys
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from google.adk.events.event import Event
from google.adk.sessions.base_session_service import BaseSessionService

from ...adk import internals
from .._fast import LightEvent, needs_confirmation

_T = TypeVar("_T")

#: Sessions fetched per batch by default: ~5,000 events of 50-event sessions.
DEFAULT_BATCH_SIZE = 100


@dataclass
class StoredSession:
    """One session as stored, its events rebuilt with ADK's own `Event` model."""

    app: str
    user: str
    session: str
    update_time: float
    events: list[Event]


@dataclass
class UnreadableSession:
    """A session whose stored form ADK itself could not load."""

    app: str
    user: str
    session: str
    error: BaseException


@dataclass
class ClearedSession:
    """A session the fast path read and found without an unanswered call."""

    app: str
    user: str
    session: str
    update_time: float


ReadItem = StoredSession | UnreadableSession | ClearedSession

#: (user, session id, update time as epoch seconds) of one session of an app.
SessionKey = tuple[str, str, float]


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `count` (0 <= index < count): the sessions whose key hashes to it.

    The hash is CRC-32 of the session's key as the store names it (app, user
    and session id), so every scan of the same store, anywhere, puts a
    session in the same shard, and N scans with indices 0..N-1 cover every
    session exactly once.
    """

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``K/N`` as a shard; raises ValueError saying what is wrong."""
        index, sep, count = text.partition("/")
        try:
            shard = cls(int(index), int(count))
        except ValueError:
            raise ValueError(f"{text!r} is not K/N, e.g. 0/3") from None
        if not sep or shard.count < 1 or not 0 <= shard.index < shard.count:
            raise ValueError(f"{text!r}: need 0 <= K < N, e.g. 0/3, 1/3 and 2/3")
        return shard

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def covers(self, *key: str) -> bool:
        if self.count == 1:
            return True
        return zlib.crc32("\x1f".join(key).encode()) % self.count == self.index


@dataclass(frozen=True)
class Window:
    """Which sessions to read: apps (None = all), one user, update-time bounds, a shard."""

    apps: Sequence[str] | None
    user: str | None
    since: float | None = None
    until: float | None = None
    #: Seconds rebuilding one session's events may take (SQL readers); None: no limit.
    timeout: float | None = None
    shard: Shard | None = None

    def wants_app(self, app: str) -> bool:
        return self.apps is None or app in self.apps

    def in_shard(self, app: str, user: str, session: str) -> bool:
        return self.shard is None or self.shard.covers(app, user, session)

    def wants(self, app: str, user: str, update_time: float) -> bool:
        """Whether a session with these keys belongs to the window (the shard aside)."""
        if not self.wants_app(app) or (self.user is not None and user != self.user):
            return False
        if self.since is not None and update_time < self.since:
            return False
        return self.until is None or update_time <= self.until

    def keeps(self, item: ReadItem) -> bool:
        """Whether an item read without a key-side filter belongs to the window."""
        if isinstance(item, UnreadableSession):
            # No update time can be read from it: app and user decide.
            return self.wants_app(item.app) and self.user in (None, item.user)
        return self.wants(item.app, item.user, item.update_time)


class DirectReader(Protocol):
    """What `scan` needs from a store read around ``get_session``."""

    #: Shown to the operator, e.g. "DatabaseSessionService schema 1 (JSON)".
    description: str

    async def list_apps(self) -> list[str]: ...

    async def count(self, window: Window) -> int | None:
        """About how many sessions `read` will yield (for progress), None if unknown."""
        ...

    def read(
        self, window: Window, batch_size: int, *, strict: bool = False, concurrency: int = 1
    ) -> AsyncIterator[ReadItem]:
        """Every session of `window`; `strict` rebuilds every event with ADK's models.

        At most `concurrency` of the reader's queries are in flight at once,
        and never more than two (`read_ahead`).
        """
        ...


class Unsupported(Exception):
    """The store's layout is not one the direct reader reads; the message says why."""


class NoAdkTables(Unsupported):
    """The store holds none of ADK's session tables: no service has written to it."""


# -- finding a store's layout ---------------------------------------------------


def adapted(read: Callable[[BaseSessionService], _T], service: BaseSessionService) -> _T:
    """`read(service)`, one of `adk.internals`; a renamed internal is `Unsupported` (fall back)."""
    try:
        return read(service)
    except internals.InternalsChanged as why:
        raise Unsupported(str(why)) from None


#: The methods whose results the direct reader reproduces.
_READS = ("get_session", "list_sessions")


def is_service(service: BaseSessionService, adk_class: type | None) -> bool:
    """Whether `service` reads as `adk_class` does: an instance, its reads not overridden.

    A subclass that only changes how connections are opened (adk-pairing's
    read-only SQLite service on google-adk 1.20) is the same store; one that
    overrides ``get_session`` or ``list_sessions`` may show something other
    than the stored rows, so it is read through those methods instead.
    """
    if adk_class is None or not isinstance(service, adk_class):
        return False
    kind = type(service)
    return all(getattr(kind, name, None) is getattr(adk_class, name, None) for name in _READS)


def loaded_class(module: str, name: str) -> type | None:
    """Class `name` of `module` if that module is imported, else None (nothing imported).

    A service is an instance of a class only once the class's module has been
    imported, so a layout whose module is not loaded cannot be the service's:
    finding the layout never imports a store's driver (redis, a community
    package) into a scan of another store.
    """
    found = getattr(sys.modules.get(module), name, None)
    return found if isinstance(found, type) else None


@dataclass(frozen=True)
class StoreLayout:
    """One layout the direct reader reads, as a store module declares it (``LAYOUT``).

    `module` and `class_name` locate the ADK (or community) class that writes
    the layout; `open` builds the reader for a service of that class (the
    SQLite path is the one `_store` opened, when known) and raises
    `Unsupported` saying why the store cannot be read directly.
    """

    module: str
    class_name: str
    open: Callable[[BaseSessionService, str | None], Awaitable[DirectReader]]

    def service_class(self) -> type | None:
        """The class, if its module is loaded (`loaded_class`), else None."""
        return loaded_class(self.module, self.class_name)


# -- rebuilding and the one triage -----------------------------------------------


class SessionTimedOut(Exception):
    """Rebuilding one session's events took longer than the window's timeout."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"timed out after {timeout:g} s")


#: Events rebuilt between two looks at the clock (a look costs ~1 µs, an event ~55 µs).
_CLOCK_EVERY = 64


def rebuild(rows: Sequence[Any], convert: Any, timeout: float | None) -> list[Event]:
    """`convert` applied to every row, raising `SessionTimedOut` past `timeout` seconds."""
    if timeout is None:
        return [convert(row) for row in rows]
    deadline = time.monotonic() + timeout
    events: list[Event] = []
    for start in range(0, len(rows), _CLOCK_EVERY):
        events.extend(convert(row) for row in rows[start : start + _CLOCK_EVERY])
        if time.monotonic() > deadline:
            raise SessionTimedOut(timeout)
    return events


def rebuilt_sessions(
    app: str,
    kept: Sequence[SessionKey],
    grouped: dict[tuple[str, str], list[Any]],
    convert: Callable[[Any], Event],
    timeout: float | None,
) -> Iterator[ReadItem]:
    """Each session of `kept` from its rows in `grouped`, by ADK's own `convert`.

    A session whose rows `convert` refuses (or that passes `timeout`) is
    reported unreadable; the others come with their rebuilt events.
    """
    for user, sid, updated in kept:
        try:
            rebuilt = rebuild(grouped[(user, sid)], convert, timeout)
        except Exception as error:
            yield UnreadableSession(app, user, sid, error)
            continue
        yield StoredSession(app, user, sid, updated, rebuilt)


def fast_verdict(
    rows: Sequence[Any], light: Callable[[Any], LightEvent], timeout: float | None
) -> bool | BaseException:
    """Whether a session read by the fast path needs its full read (True) or is healthy.

    A row the fast path cannot parse sends the session to the full read,
    whose verdict (unreadable, most likely) is reported. Returns the
    `SessionTimedOut` when the timeout passed.
    """
    if not rows:
        return False
    try:
        events = rebuild(rows, light, timeout)
    except SessionTimedOut as error:
        return error
    except Exception:
        return True
    return needs_confirmation(events)


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


# -- concurrency: one page fetched ahead -----------------------------------------


def read_ahead(source: AsyncIterator[_T], concurrency: int) -> AsyncIterator[_T]:
    """`source` fetched one item ahead when `concurrency` >= 2, else as it is.

    The one rule every reader applies to ``concurrency``: a reader's fetching
    is `source`, so with read-ahead at most two of its queries are in flight
    (the next page's and the current page's confirmation), with 1 one.
    """
    return prefetched(source) if concurrency >= 2 else source


async def prefetched(source: AsyncIterator[_T]) -> AsyncIterator[_T]:
    """`source`'s items, the next one fetched while the caller works on this one.

    One item is fetched ahead (a task and a queue of one): memory holds at
    most three of `source`'s items, and `source` runs one query at a time.
    """
    queue: asyncio.Queue[tuple[bool, Any]] = asyncio.Queue(maxsize=1)

    async def produce() -> None:
        try:
            async for item in source:
                await queue.put((False, item))
        except Exception as error:
            await queue.put((True, error))
        else:
            await queue.put((True, None))
        finally:
            await _close(source)

    producer = asyncio.create_task(produce())
    try:
        while True:
            done, value = await queue.get()
            if done:
                if value is not None:
                    raise value
                return
            yield value
    finally:
        producer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await producer


async def _close(source: AsyncIterator[Any]) -> None:
    aclose = getattr(source, "aclose", None)
    if aclose is not None:
        await aclose()


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
