"""``adk-pairing scan``: which stored sessions hold unanswered function calls.

Reads what is *stored* (never the repaired view) and classifies each call with
`adk_pairing.analyze`; this module only drives the reading and counts, into a
report (`_scan_report`: its records, the merging of shards and the text). A
name given that matches nothing stored is refused by `_scan_names`.

Two ways to read, same counts (``tests/integration/test_scan_direct.py``
proves it on every store):

* **direct** (`_direct`): the events of a batch of sessions at a time, from the
  store's own tables or keys. Used whenever the store's layout is one we read
  (ADK's SQL services on a known schema version, both Redis services). By
  default only the rows naming a call, a result or a rewind are fetched and
  only the analysed fields parsed (`_fast`); a session found broken that way
  is read again with ADK's own models and only that read is reported. With
  ``strict`` every event is rebuilt with ADK's ``Event`` model.
* **get_session**: ``list_sessions`` then ``get_session`` per session with
  bounded concurrency (an ``asyncio.Semaphore`` acquired before each task is
  created), for every other store, or when asked (``--reader get-session``).
  When ``--reader auto`` falls back to it, the result says why.

Without ``--app`` every app is scanned: the direct readers list the app names
the store holds; a store we cannot read around its service (in-memory, Vertex
AI, custom schemes) has no such listing in ADK (``BaseSessionService`` has
``list_sessions(app_name, user_id)`` only), so the scan stops and asks for
``--app``. Memory holds one batch (direct) or ``concurrency`` sessions
(get_session), plus the findings; with ``on_broken`` (``--json-lines``) the
findings are handed out as found and not kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import gc
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from google.adk.events.event import Event
from google.adk.sessions.base_session_service import BaseSessionService
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from ..adk import list_sessions_requires_user
from ._common import CliError, explain, no_adk_tables_message
from ._direct import direct_reader
from ._direct.base import (
    DEFAULT_BATCH_SIZE,
    ClearedSession,
    DirectReader,
    NoAdkTables,
    ReadItem,
    SessionTimedOut,
    Shard,
    StoredSession,
    UnreadableSession,
    Unsupported,
    Window,
)
from ._scan_names import no_app_listing_message, refuse_names_matching_nothing
from ._scan_report import Finding, ScanResult, findings_of
from ._stop import StopRequest
from ._store import OpenedStore

logger = logging.getLogger("adk_pairing.cli")

#: Default number of sessions read at once: below SQLAlchemy's default pool
#: (5 + 10 overflow), so the scan never waits on the pool nor floods the server.
DEFAULT_CONCURRENCY = 8

FAIL_ON_CHOICES = ("never", "missing", "pending", "any")


class ReaderChoice(enum.StrEnum):
    AUTO = "auto"
    DIRECT = "direct"
    GET_SESSION = "get-session"


@dataclass
class ScanOptions:
    """What to scan and how; `scan_store`'s knobs, as the CLI sets them."""

    apps: Sequence[str] | None = None
    user: str | None = None
    since: float | None = None
    until: float | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    batch_size: int = DEFAULT_BATCH_SIZE
    reader: ReaderChoice = ReaderChoice.AUTO
    #: Seconds one session may take (read and analysis); None: no limit.
    timeout: float | None = None
    #: Validate every event with ADK's models (the get_session path's counts exactly).
    strict: bool = False
    shard: Shard | None = None

    def window(self, apps: Sequence[str] | None) -> Window:
        """The sessions these options name, among `apps`: `Window`'s fields are options too."""
        named = {field.name: getattr(self, field.name) for field in dataclasses.fields(Window)}
        return Window(**{**named, "apps": apps})


@dataclass
class Hooks:
    """Callbacks for progress and streaming output (all optional)."""

    on_total: Callable[[int | None], None] | None = None
    on_session_done: Callable[[], None] | None = None
    #: Called with the findings of each broken session as it is found; when
    #: set, findings are not kept in the result (memory stays flat).
    on_broken: Callable[[list[Finding]], None] | None = None
    on_unreadable: Callable[[dict[str, str]], None] | None = None


async def scan_store(
    store: OpenedStore,
    options: ScanOptions,
    hooks: Hooks | None = None,
    stop: StopRequest | None = None,
) -> ScanResult:
    """Reads the sessions `options` name and collects their unanswered calls.

    When `stop` is requested (`_stop`), the reading is cancelled and the
    counts so far are returned, with `ScanResult.partial` set.
    """
    hooks = hooks or Hooks()
    if options.concurrency < 1:
        raise CliError("--concurrency must be at least 1")
    if options.batch_size < 1:
        raise CliError("--batch-size must be at least 1")
    started = time.perf_counter()
    apps = list(dict.fromkeys(options.apps)) if options.apps else None
    result = ScanResult(
        store=store.masked_uri,
        apps=apps or [],
        user=options.user,
        read_only=store.read_only,
        since=options.since,
        until=options.until,
        mode="strict" if options.strict else "fast",
        shard=None if options.shard is None else str(options.shard),
    )
    window = options.window(apps)

    reader, result.fallback_reason = await open_reader(store, options.reader, apps)
    stop = stop or StopRequest()

    async def read() -> None:
        if reader is not None and options.reader is not ReaderChoice.GET_SESSION:
            result.reader = f"direct: {reader.description}"
            await _scan_direct(reader, window, options, hooks, result, store.uri, stop)
        else:
            result.mode = "strict"  # get_session validates every event
            scanned = window
            if apps is None:
                if reader is None:
                    raise CliError(no_app_listing_message(store.service, result.fallback_reason))
                # --reader get-session without --app: the store's layout names the apps.
                result.fallback_reason = None
                result.apps = await reader.list_apps()
                scanned = dataclasses.replace(window, apps=result.apps)
            await _scan_with_get_session(store.service, scanned, options, hooks, result, store.uri)

    try:
        await _until_done_or_stopped(read(), stop, result)
        if apps is None and not result.apps:
            # The apps the direct reader met, also when stopped (listing them
            # first would cost Redis a second pass over every session).
            result.apps = sorted(result.per_app)
        if not result.partial:
            await refuse_names_matching_nothing(store, reader, window, result.per_app)
    finally:
        close_reader(reader)
    result.findings.sort(key=lambda f: (f.status != "missing", f.call_time, f.user, f.session))
    result.unreadable.sort(key=lambda u: (u["app"], u["user"], u["session"]))
    result.elapsed_seconds = round(time.perf_counter() - started, 3)
    return result


async def open_reader(
    store: OpenedStore, choice: ReaderChoice, apps: Sequence[str] | None
) -> tuple[DirectReader | None, str | None]:
    """The direct reader `choice` and `apps` call for (None: get_session), and why not direct.

    Raises `CliError` when the store holds no ADK tables, or `choice` is
    ``direct`` and the store's layout is not one read directly.
    """
    if choice is ReaderChoice.GET_SESSION and apps is not None:
        return None, None
    try:
        return await direct_reader(store.service, store.sqlite_path), None
    except NoAdkTables:
        raise CliError(no_adk_tables_message(store.masked_uri)) from None
    except Unsupported as why:
        if choice is ReaderChoice.DIRECT:
            raise CliError(f"--reader direct: cannot read this store directly: {why}") from None
        return None, str(why)


def close_reader(reader: DirectReader | None) -> None:
    close = getattr(reader, "close", None)
    if close is not None:
        close()


async def _until_done_or_stopped(
    reading: Coroutine[Any, Any, None], stop: StopRequest, result: ScanResult
) -> None:
    """Runs `reading` as its own task, the one `stop` cancels; a stop marks `result` partial.

    A task of its own, so that a stop's cancellation ends the reading and
    nothing else: what follows (closing the store, printing) runs unhindered.
    """
    task = asyncio.create_task(reading)
    with stop.guarding(task):
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:  # the command itself was cancelled
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            raise
    if task.cancelled():
        if not stop.requested:
            raise asyncio.CancelledError
        result.partial = True
    else:
        task.result()  # its exception, if any


async def refuse_unknown_app_or_user(store: OpenedStore, app: str, user: str) -> None:
    """Raises `CliError`, as `scan` does, when `app`, or `user` in it, names nothing stored.

    For ``show``, once it found no session of `user` in `app`.
    """
    reader, _ = await open_reader(store, ReaderChoice.AUTO, [app])
    try:
        await refuse_names_matching_nothing(store, reader, Window(apps=[app], user=user), ())
    finally:
        close_reader(reader)


def _handle(
    result: ScanResult,
    hooks: Hooks,
    app: str,
    user: str,
    session_id: str,
    events: list[Event],
    now: float,
) -> None:
    found = findings_of(app, user, session_id, events, now)
    result.record(app, found, keep=hooks.on_broken is None)
    if found and hooks.on_broken is not None:
        hooks.on_broken(found)


def _unreadable(
    result: ScanResult, hooks: Hooks, app: str, user: str, session: str, error: str
) -> None:
    item = result.record_unreadable(app, user, session, error)
    if hooks.on_unreadable is not None:
        hooks.on_unreadable(item)


def _why_unreadable(error: BaseException, uri: str) -> str:
    """One line on why a session could not be read, `uri`'s password masked.

    The store is named "the store" (the header shows it); the password is
    masked even where a driver echoes it outside a URI.
    """
    return explain(error, uri, store_name="the store")


async def _scan_direct(
    reader: DirectReader,
    window: Window,
    options: ScanOptions,
    hooks: Hooks,
    result: ScanResult,
    uri: str,
    stop: StopRequest,
) -> None:
    if hooks.on_total is not None:
        total = await reader.count(window)
        if total is not None and window.shard is not None:
            total = -(-total // window.shard.count)  # about a shard's share
        hooks.on_total(total)
    now = time.time()
    items: AsyncIterator[StoredSession | UnreadableSession | ClearedSession] = reader.read(
        window, options.batch_size, strict=options.strict, concurrency=options.concurrency
    )
    # Closed on every exit, so a stop ends the reader's queries and connections now.
    async with contextlib.aclosing(items):
        with start_up_frozen():
            async for item in items:
                _take(item, result, hooks, uri, now)
                if stop.requested:
                    # A reader that never suspends (sqlite3) is not reached by the
                    # cancellation; it stops here, after the session it read.
                    result.partial = True
                    return


@contextlib.contextmanager
def start_up_frozen() -> Iterator[None]:
    """Every object that exists now kept out of the cyclic collector's walks, meanwhile.

    A batch's objects survive long enough to reach the oldest generation, so
    the collector's full collections come often during a direct read, and
    each one would walk everything start-up made (ADK's modules and models,
    the drivers). Those live as long as the process: ``gc.freeze`` leaves them
    out. Thawed at the end unless something froze objects before (a server
    that froze its own before forking keeps its choice).
    """
    thawed = gc.get_freeze_count() == 0
    gc.freeze()
    try:
        yield
    finally:
        if thawed:
            gc.unfreeze()


def _take(item: ReadItem, result: ScanResult, hooks: Hooks, uri: str, now: float) -> None:
    """Counts one session the direct reader yielded."""
    if isinstance(item, ClearedSession):
        result.record(item.app, [], keep=False)
    elif isinstance(item, UnreadableSession):
        logger.warning(
            "could not read session %s of user %s", item.session, item.user, exc_info=item.error
        )
        reason = (
            str(item.error)
            if isinstance(item.error, SessionTimedOut)
            else _why_unreadable(item.error, uri)
        )
        _unreadable(result, hooks, item.app, item.user, item.session, reason)
    else:
        # The reader rebuilt the events (within the timeout); the analysis
        # left here costs ~2 % of that.
        _handle(result, hooks, item.app, item.user, item.session, item.events, now)
    if hooks.on_session_done is not None:
        hooks.on_session_done()


async def _scan_with_get_session(
    service: BaseSessionService,
    window: Window,
    options: ScanOptions,
    hooks: Hooks,
    result: ScanResult,
    uri: str,
) -> None:
    assert window.apps is not None
    if window.user is None and list_sessions_requires_user(service):
        raise CliError(
            f"{type(service).__name__} can only list the sessions of one user: pass --user USER_ID."
        )
    listed: list[tuple[str, str, str]] = []
    for app in window.apps:
        listing = await service.list_sessions(app_name=app, user_id=window.user)
        listed.extend(
            (app, s.user_id, s.id)
            for s in listing.sessions
            if window.wants(app, s.user_id, s.last_update_time)
            and window.in_shard(app, s.user_id, s.id)
        )
    if hooks.on_total is not None:
        hooks.on_total(len(listed))
    semaphore = asyncio.Semaphore(options.concurrency)
    now = time.time()

    async def read_one(app: str, user: str, session_id: str) -> None:
        try:
            session = await asyncio.wait_for(
                service.get_session(app_name=app, user_id=user, session_id=session_id),
                options.timeout,
            )
            if session is None:
                # Deleted (or expired) between the listing and this read.
                result.vanished_sessions += 1
            else:
                _handle(result, hooks, app, user, session_id, session.events, now)
        except TimeoutError:
            _unreadable(
                result, hooks, app, user, session_id, f"timed out after {options.timeout:g} s"
            )
        except Exception as error:
            # Shown with its traceback under --debug; otherwise only the one-line reason.
            logger.warning("could not read session %s of user %s", session_id, user, exc_info=True)
            _unreadable(result, hooks, app, user, session_id, _why_unreadable(error, uri))
        finally:
            semaphore.release()
            if hooks.on_session_done is not None:
                hooks.on_session_done()

    # Acquiring before creating each task keeps at most `concurrency` reads
    # (and tasks) alive, so a store of millions of sessions costs no more memory.
    running: set[asyncio.Task[None]] = set()
    try:
        for app, user, session_id in listed:
            await semaphore.acquire()
            task = asyncio.create_task(read_one(app, user, session_id))
            running.add(task)
            task.add_done_callback(running.discard)
        if running:
            await asyncio.gather(*running)
    finally:
        # A stop (or any failure) cancels the reads in flight and waits for them,
        # so none outlives the scan or writes to its counts afterwards.
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)


class RateColumn(ProgressColumn):
    """Sessions per second so far."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.0f} sessions/s" if speed else "")


def progress_bar(console: Console) -> Progress:
    """The scan's progress bar: sessions done of the total, rate and ETA."""
    return Progress(
        TextColumn("scanning"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )


async def scan_with_progress(
    store: OpenedStore,
    options: ScanOptions,
    hooks: Hooks,
    console: Console,
    stop: StopRequest | None = None,
) -> ScanResult:
    """`scan_store` with a progress bar, rate and ETA on `console` (only on a terminal)."""
    with progress_bar(console) as progress:
        task = progress.add_task("scan", total=None)
        return await scan_store(
            store,
            options,
            Hooks(
                on_total=lambda total: progress.update(task, total=total),
                on_session_done=lambda: progress.advance(task),
                on_broken=hooks.on_broken,
                on_unreadable=hooks.on_unreadable,
            ),
            stop,
        )
