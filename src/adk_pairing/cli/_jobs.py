"""``scan --jobs N``: one scan run by N worker processes, each reading a shard of its sessions.

Why processes: a direct scan's client work (parsing the kept rows, the
ledger, ADK's validation of the sessions it confirms) is Python on one core,
and at store scale it, not the database, sets the scan's pace. N workers
spread it over N cores; the database's share is unchanged (every worker still
pages through the session keys, a cheap index scan, and reads the rows of its
own sessions only).

How:

* the parent opens the store and its reader once, then closes them
  (`preflight`): a wrong URI or an unreachable server is one error, and the
  modules every worker needs are imported before forking, so no worker pays
  the start-up again;
* worker j of N scans shard j/N of the scan's sessions; under ``--shard K/M``
  it scans shard K + M*j of M*N, which is shard K/M split N ways (a CRC
  modulo M*N fixes it modulo M), so the report is still shard K/M's;
* each worker writes JSON lines to its own pipe: progress, each broken or
  unreadable session as found (``--json-lines``), and last its report (or
  its error); the parent prints what is streamed and sums the reports in
  worker order (`sum_reports`): the counts, findings and their order of one
  process. Each worker's memory is one scan's;
* stopping (`_stop`): the parent alone takes SIGINT and SIGTERM and forwards
  the first to the workers, which stop and report what they read; the
  parent prints the counts so far, marked partial. A second signal kills the
  workers and exits at once. A worker whose parent died stops at its next
  write to the pipe, or at once when its event loop sees the lifeline close.

Fork, not spawn: a spawned worker would import ADK again (seconds of start-up
each). The parent forks with no event loop running and no connection open.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import selectors
import signal
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..shells.masking import mask_secrets, mask_uri
from ._common import (
    EXIT_ERROR,
    EXIT_UNEXPECTED,
    CliError,
    output_policy,
    recognised,
    run,
    stderr_console,
    unexpected,
)
from ._direct.base import Shard
from ._printable import printable
from ._scan_report import ScanResult, broken_session_record, sum_reports
from ._stop import StopRequest, forward_signals, held, stop_on_forwarded_signals, stop_on_signals
from ._store import OpenedStore
from ._store_scan import Hooks, ScanOptions, close_reader, open_reader, progress_bar, scan_store

#: Seconds between two progress messages of a worker.
_PROGRESS_EVERY = 0.1


def worker_shard(shard: Shard | None, index: int, jobs: int) -> Shard:
    """Worker `index` of `jobs`' part of `shard` (the whole store when None)."""
    outer = shard or Shard(0, 1)
    return Shard(outer.index + outer.count * index, outer.count * jobs)


@dataclass
class Streamed:
    """What the parent does with the workers' streamed messages (all optional)."""

    on_broken: Callable[[dict[str, Any]], None] | None = None
    on_unreadable: Callable[[dict[str, str]], None] | None = None
    progress: bool = False


@dataclass
class _Worker:
    index: int
    pid: int
    fd: int
    buffer: bytes = b""
    report: dict[str, Any] | None = None
    error: tuple[str, int] | None = None
    #: Stopped before it opened the store: nothing read, no report.
    early: bool = False
    lines: list[bytes] = field(default_factory=list)


def scan_in_jobs(
    jobs: int,
    uri: str,
    open_store: Callable[[], OpenedStore],
    make_options: Callable[[], ScanOptions],
    streamed: Streamed,
    *,
    debug: bool,
) -> tuple[ScanResult, StopRequest]:
    """The scan `make_options` describes, run by `jobs` forked workers; its report and stop."""
    started = time.perf_counter()
    stop = StopRequest()

    async def preflight() -> ScanOptions:
        with stop_on_signals(stop):
            try:
                options = make_options()
                store = open_store()
                try:
                    reader, _ = await open_reader(store, options.reader, options.apps)
                    close_reader(reader)
                finally:
                    await store.close()
            except asyncio.CancelledError:
                if not stop.requested:
                    raise
                raise stop.nothing_read() from None
        return options

    options = run(preflight(), uri=uri, debug=debug)
    stop = StopRequest()
    workers: list[_Worker] = []
    lifeline_read, lifeline_write = os.pipe()
    with held():
        # Installed while held: a signal from now on reaches every worker forked below.
        forward_signals(stop, lambda: [w.pid for w in workers if w.pid])
        for index in range(jobs):
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the worker; measured by the CLI tests
                for other in workers:
                    os.close(other.fd)
                os.close(read_end)
                os.close(lifeline_write)
                part = dataclasses.replace(options, shard=worker_shard(options.shard, index, jobs))
                _worker(write_end, lifeline_read, uri, open_store, part, streamed, debug)
            os.close(write_end)
            workers.append(_Worker(index, pid, read_end))
    os.close(lifeline_read)
    try:
        _pump(workers, streamed, stop)
    except BaseException:
        # The output closed, or worse: no worker may block on a pipe nobody reads.
        _kill_others(workers, None)
        raise
    finally:
        _reap(workers)
        os.close(lifeline_write)
    failed = next((w for w in workers if w.error is not None), None)
    if failed is not None and failed.error is not None:
        message, code = failed.error
        raise CliError(message, exit_code=code)
    lost = [w for w in workers if w.report is None and not w.early]
    if lost:
        raise CliError(
            f"scan worker {lost[0].index + 1} of {jobs} ended without a report "
            "(killed, or out of memory?): scan again"
        )
    reports = [w.report for w in workers if w.report is not None]
    if not reports:
        raise stop.nothing_read()
    result = sum_reports(reports)
    result.shard = None if options.shard is None else str(options.shard)
    result.partial = result.partial or any(w.early for w in workers)
    result.elapsed_seconds = round(time.perf_counter() - started, 3)
    return result, stop


def _pump(workers: list[_Worker], streamed: Streamed, stop: StopRequest) -> None:
    """Reads every worker's messages until all pipes close; the first error stops the rest."""
    selector = selectors.DefaultSelector()
    for worker in workers:
        selector.register(worker.fd, selectors.EVENT_READ, worker)
    progress = progress_bar(stderr_console()) if streamed.progress else None
    totals: dict[int, int] = {}
    task = progress.add_task("scanning", total=None) if progress is not None else None
    with progress or contextlib.nullcontext():
        while selector.get_map():
            for key, _ in selector.select():
                worker: _Worker = key.data
                chunk = os.read(worker.fd, 1 << 16)
                if not chunk:
                    selector.unregister(worker.fd)
                    os.close(worker.fd)
                    worker.fd = -1
                    continue
                *complete, worker.buffer = (worker.buffer + chunk).split(b"\n")
                for line in complete:
                    kind, *args = json.loads(line)
                    if kind == "result":
                        worker.report = args[0]
                    elif kind == "error":
                        worker.error = (args[0], args[1])
                        _kill_others(workers, worker)
                    elif kind == "early":
                        worker.early = True
                    elif kind == "broken" and streamed.on_broken is not None:
                        streamed.on_broken(args[0])
                    elif kind == "unreadable" and streamed.on_unreadable is not None:
                        streamed.on_unreadable(args[0])
                    elif progress is not None and task is not None:
                        if kind == "total" and args[0] is not None:
                            totals[worker.index] = args[0]
                            progress.update(task, total=sum(totals.values()))
                        elif kind == "done":
                            progress.advance(task, args[0])
    selector.close()


def _kill_others(workers: list[_Worker], failed: _Worker | None) -> None:
    """A worker's error ends the scan: the others' reading is of no use."""
    for worker in workers:
        if worker is not failed and worker.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.pid, signal.SIGKILL)


def _reap(workers: list[_Worker]) -> None:
    """Waits for every worker: their CPU then counts as the parent's children's."""
    for worker in workers:
        if worker.pid:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(worker.pid, 0)
            worker.pid = 0
        if worker.fd >= 0:
            os.close(worker.fd)
            worker.fd = -1


def _worker(
    out_fd: int,
    lifeline: int,
    uri: str,
    open_store: Callable[[], OpenedStore],
    options: ScanOptions,
    streamed: Streamed,
    debug: bool,
) -> None:  # pragma: no cover - runs in the forked worker
    """A worker's whole life: its shard scanned, its messages written, then out (never returns)."""
    stop = StopRequest()
    stop_on_forwarded_signals(stop)
    out = os.fdopen(out_fd, "wb")

    def send(*message: Any) -> None:
        # ASCII: a lone surrogate from the store travels as JSON's escape of it.
        out.write(json.dumps(message).encode() + b"\n")
        out.flush()

    try:
        with output_policy(debug, uri):
            report = asyncio.run(_scan_part(lifeline, open_store, options, streamed, stop, send))
        send(*(("early",) if report is None else ("result", report)))
    except CliError as error:
        with contextlib.suppress(OSError):
            send("error", str(error), error.exit_code)
    except BrokenPipeError:
        pass  # the parent is gone
    except BaseException as error:
        if debug:
            os.write(2, printable(mask_secrets(traceback.format_exc(), uri)).encode())
        where = mask_uri(uri)
        known = recognised(error, uri, where)
        with contextlib.suppress(OSError):
            if known is not None:
                send("error", known, EXIT_ERROR)
            else:
                send("error", unexpected(error, uri, where), EXIT_UNEXPECTED)
    finally:
        with contextlib.suppress(OSError):
            out.flush()
        # No interpreter shutdown: the parent's objects are not this process's to tear down.
        os._exit(0)


async def _scan_part(
    lifeline: int,
    open_store: Callable[[], OpenedStore],
    options: ScanOptions,
    streamed: Streamed,
    stop: StopRequest,
    send: Callable[..., None],
) -> dict[str, Any] | None:
    """This worker's scan, its report as JSON; None when stopped before reading."""
    asyncio.get_running_loop().add_reader(lifeline, os._exit, 1)  # readable only at EOF
    done = 0
    last = time.monotonic()

    def session_done() -> None:
        nonlocal done, last
        done += 1
        now = time.monotonic()
        if now - last >= _PROGRESS_EVERY:
            send("done", done)
            done, last = 0, now

    hooks = Hooks(
        on_total=(lambda total: send("total", total)) if streamed.progress else None,
        on_session_done=session_done if streamed.progress else None,
        on_broken=(
            (lambda found: send("broken", broken_session_record(found)))
            if streamed.on_broken is not None
            else None
        ),
        on_unreadable=(
            (lambda item: send("unreadable", item)) if streamed.on_unreadable is not None else None
        ),
    )
    with stop.guarding(asyncio.current_task()):  # type: ignore[arg-type]
        try:
            store = open_store()
            try:
                result = await scan_store(store, options, hooks, stop)
            finally:
                await store.close()
        except asyncio.CancelledError:
            if not stop.requested:
                raise
            return None
    if done:
        send("done", done)
    return result.to_json()
