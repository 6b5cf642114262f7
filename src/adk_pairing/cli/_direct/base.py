"""What every direct reader shares: the window, shards, rebuilding, the read-ahead.

A store layout's module (one per layout, beside this one) supplies only what
is its own: how to list and count its sessions, the query of one page of
session keys, the rows of a page, and the full read through ADK's own models
that confirms a finding. Everything else is written once, here or, for the
paged (SQL) layouts, in `_paged`:

* `Window` and `Shard`: which sessions a scan reads;
* `_paged.keyset_pages`: pages of session keys over the primary key, filtered
  by the window and the shard;
* `_paged.triage`: the fast path's verdict on each session of a page
  (cleared, unreadable, or to confirm; `fast_verdict` here) and the
  confirmations gathered across pages;
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
    read-only SQLite service where ADK's takes no URI) is the same store; one that
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


# -- rebuilding a session, and the fast path's verdict on one ------------------


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
