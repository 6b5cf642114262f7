"""The ``scan`` command's three modes, one function each, and the report they all end in.

* `merge_shards`: ``--merge FILE...``, the shards' reports merged, nothing read;
* `scan_in_jobs`: ``--jobs N`` with N >= 2, worker processes (`_jobs`);
* `scan_in_process`: the default, one process reading the store.

The two that read a store take one `StoreScan`: its URI, the factory's
``--option`` settings, the scan's settings and how the report is printed.
Each mode ends in `finish_scan`, which prints the report and exits with its
code.
The scan's own modules (and so ADK) are imported when the command runs, as
``--help`` never needs them; and at call time, where tests replace a name.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

import typer

from ._common import EXIT_ERROR, dumps, fail, run, stdout_console
from ._printable import json_text

if TYPE_CHECKING:
    from ._scan_report import ScanResult
    from ._stop import StopRequest
    from ._store import OpenedStore
    from ._store_scan import ScanOptions


@dataclass(frozen=True)
class Output:
    """How a scan's report is printed, and what ``--fail-on`` makes of it."""

    json_output: bool
    json_lines: bool
    limit: int
    fail_on: str


def check_choices(reader: str, output: Output) -> None:
    """Refuses, as click refuses a bad option, the values typer cannot check itself."""
    from ._store_scan import FAIL_ON_CHOICES, ReaderChoice

    if output.fail_on not in FAIL_ON_CHOICES:
        raise typer.BadParameter(
            f"{output.fail_on!r}; choose one of {', '.join(FAIL_ON_CHOICES)}",
            param_hint="--fail-on",
        )
    choices = [choice.value for choice in ReaderChoice]
    if reader not in choices:
        raise typer.BadParameter(
            f"{reader!r}; choose one of {', '.join(choices)}", param_hint="--reader"
        )
    if output.json_output and output.json_lines:
        raise typer.BadParameter("use --json or --json-lines, not both", param_hint="--json-lines")


def merge_shards(targets: Sequence[str] | None, output: Output, *, debug: bool) -> NoReturn:
    """``--merge``: the shards' ``--json`` outputs in `targets`, merged into one report."""
    from ._scan_report import load_report, merge_reports

    if not targets:
        raise typer.BadParameter("name the shards' JSON outputs", param_hint="FILE")
    if output.json_lines:
        raise typer.BadParameter("a merge prints --json or text", param_hint="--json-lines")

    async def merged() -> ScanResult:
        return merge_reports([(path, load_report(path)) for path in targets])

    finish_scan(run(merged(), uri=None, debug=debug), output)


def one_store(targets: Sequence[str] | None) -> str:
    """The one store URI a scan reads (not a merge's files)."""
    if not targets or len(targets) != 1:
        raise typer.BadParameter(
            "give one store URI (or --merge FILE... to merge shards' reports)", param_hint="URI"
        )
    return targets[0]


@dataclass(frozen=True)
class StoreScan:
    """One store's scan as the command line asks for it: what either mode reads."""

    uri: str
    #: The ``--option KEY=VALUE`` strings for the store's factory.
    option: list[str] | None
    #: The scan's settings, built where the scan runs (in each worker with ``--jobs``).
    make_options: Callable[[], ScanOptions]
    output: Output
    debug: bool

    def open_store(self) -> OpenedStore:
        """The store, read-only, built with the ``--option`` settings."""
        from ._store import open_read_only, parse_options

        return open_read_only(self.uri, parse_options(self.option))


def scan_in_jobs(jobs: int, scan: StoreScan) -> NoReturn:
    """``--jobs N``: `jobs` worker processes, one report."""
    from ._common import CliError, stderr_console
    from ._jobs import Streamed
    from ._jobs import scan_in_jobs as scan_in_workers

    output, debug = scan.output, scan.debug
    err = stderr_console()
    streamed = Streamed(
        on_broken=print_line if output.json_lines else None,
        on_unreadable=print_unreadable if output.json_lines else None,
        progress=err.is_terminal and not debug,
    )
    try:
        result, stopped = scan_in_workers(
            jobs, scan.uri, scan.open_store, scan.make_options, streamed, debug=debug
        )
    except CliError as error:  # a worker's, reported once
        fail(str(error), debug=debug, exit_code=error.exit_code, uri=scan.uri)
    finish_scan(result, output, stopped)


def scan_in_process(scan: StoreScan) -> NoReturn:
    """The default: this process reads the store, a progress bar on a terminal."""
    from ._common import stderr_console
    from ._scan_report import broken_session_record
    from ._stop import StopRequest, stop_on_signals
    from ._store_scan import Hooks, scan_store, scan_with_progress

    err = stderr_console()
    hooks = Hooks()
    if scan.output.json_lines:
        hooks = Hooks(
            on_broken=lambda found: print_line(broken_session_record(found)),
            on_unreadable=print_unreadable,
        )
    stop = StopRequest()

    async def go() -> ScanResult:
        with stop_on_signals(stop):
            try:
                return await scan_until_stopped()
            except asyncio.CancelledError:
                if not stop.requested:
                    raise
                # Stopped while the store was being opened: nothing was read.
                raise stop.nothing_read() from None

    async def scan_until_stopped() -> ScanResult:
        options = scan.make_options()
        store = scan.open_store()
        try:
            if err.is_terminal and not scan.debug:
                return await scan_with_progress(store, options, hooks, err, stop)
            return await scan_store(store, options, hooks, stop)
        finally:
            await store.close()

    result = run(go(), uri=scan.uri, debug=scan.debug)
    finish_scan(result, scan.output, stop)


def finish_scan(result: ScanResult, output: Output, stop: StopRequest | None = None) -> NoReturn:
    """Prints a scan's (or a merge's) report and exits with its code.

    A scan a signal stopped exits 128 + its number; one that read nothing
    exits 2 under ``--fail-on`` (it cannot tell a healthy store from a wrong
    one), as does one with unreadable sessions.
    """
    from ._common import stderr_console
    from ._scan_report import count_of as _count
    from ._scan_report import render

    err = stderr_console()
    if output.json_lines:
        summary = result.to_json()
        del summary["findings"], summary["unreadable"]
        print_line({"type": "summary", **summary})
    elif output.json_output:
        print(dumps(result.to_json()))
    else:
        render(result, stdout_console(), limit=output.limit)
    if result.partial and stop is not None:
        err.print(
            f"error: interrupted by {stop.signal_name}: the scan stopped after "
            f"{_count(result.sessions_scanned, 'session')}; the counts are partial",
            markup=False,
            soft_wrap=True,
        )
        # Out now, as asked: the interpreter's shutdown (seconds on a loaded
        # machine) would keep a stopped scan alive for nothing; the store is closed.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(stop.exit_code)
    if result.unreadable:
        err.print(
            f"error: {len(result.unreadable)} sessions could not be read; the scan is incomplete",
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_ERROR)
    if output.fail_on != "never" and result.sessions_scanned == 0:
        err.print(
            f"error: the scan read no session, so --fail-on {output.fail_on} cannot tell a healthy "
            "store from a wrong one: check the URI, --app, --user, --since and --until",
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_ERROR)
    raise typer.Exit(result.exit_code(output.fail_on))


def print_line(record: dict[str, object]) -> None:
    print(json_text(record, indent=None), flush=True)


def print_unreadable(item: dict[str, str]) -> None:
    """``--json-lines``: a session the scan could not read, as its own line."""
    print_line({"type": "unreadable", **item})
