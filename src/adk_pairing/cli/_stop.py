"""Stopping a scan when asked: SIGINT (Ctrl-C) and SIGTERM (``kill``, Kubernetes).

The first signal stops the scan and keeps what it read: the task reading the
store is cancelled, which interrupts the query or the ``get_session`` calls in
flight, and a flag is raised for readers that never suspend between sessions
(the ``sqlite3`` one), which look at it after each session. The scan then
returns the counts so far, marked partial, and the command exits with
128 + the signal's number (130, 143). A second signal exits at once, with no
report (if it was not printed yet).

asyncio's own SIGINT handling is replaced while the scan runs: it cancels the
whole command (throwing the counts away) and knows nothing of SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

from ._common import CliError

#: The signals that stop a scan.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequest:
    """Whether a stop was asked for, by which signal, and which task it cancels."""

    def __init__(self) -> None:
        self.signal_number: int | None = None
        self._target: asyncio.Task[object] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def requested(self) -> bool:
        return self.signal_number is not None

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signal_number).name if self.signal_number else ""

    @property
    def exit_code(self) -> int:
        """128 + the signal's number, as a shell reports a process it stopped."""
        return 128 + (self.signal_number or signal.SIGINT)

    def nothing_read(self) -> CliError:
        """The error for a stop that came before any session was read (no counts to print)."""
        return CliError(
            f"interrupted by {self.signal_name} before any session was read",
            exit_code=self.exit_code,
        )

    @contextlib.contextmanager
    def guarding(self, task: asyncio.Task[object]) -> Iterator[None]:
        """Makes `task` the one a stop cancels, for the duration of the block."""
        previous, self._target = self._target, task
        self._loop = task.get_loop()
        if self.requested:
            task.cancel()
        try:
            yield
        finally:
            self._target = previous

    def request(self, signal_number: int) -> None:
        """The first signal: cancel the guarded task (the loop is woken to see it)."""
        self.signal_number = signal_number
        target, loop = self._target, self._loop
        if target is not None and not target.done():
            target.cancel()
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(lambda: None)


def _exit_now(signal_number: int) -> None:
    """The second signal: leave without a report (and show a cursor a progress bar hid)."""
    restore = "\x1b[?25h" if sys.stderr.isatty() else ""
    name = signal.Signals(signal_number).name
    os.write(2, f"{restore}\nerror: stopped at once by a second {name}\n".encode())
    os._exit(128 + signal_number)


def _quiet_closed_loop_callbacks() -> None:
    """Once stopping, a driver's worker thread (aiosqlite's) that finds the loop closed is quiet.

    The scan stops with an operation of the driver still running in its
    thread; when it finishes, the loop it reports to is closed and the thread
    dies with a traceback on stderr, although nothing was lost: the process is
    exiting with its partial report. Any other exception is reported as before.
    """
    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        if isinstance(args.exc_value, RuntimeError) and "Event loop is closed" in str(
            args.exc_value
        ):
            return
        previous(args)

    threading.excepthook = hook


@contextlib.contextmanager
def stop_on_signals(stop: StopRequest) -> Iterator[None]:
    """Routes SIGINT and SIGTERM to `stop` (guarding the current task) inside the block.

    Signals can only be handled in the main thread; elsewhere (an embedding
    application's worker thread) the block runs with the signals untouched.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(number: int, _frame: FrameType | None) -> None:
        if stop.requested:
            _exit_now(number)
        _quiet_closed_loop_callbacks()
        stop.request(number)

    previous = {number: signal.signal(number, on_signal) for number in STOP_SIGNALS}
    try:
        with stop.guarding(asyncio.current_task()):  # type: ignore[arg-type]
            yield
    finally:
        for number, handler in previous.items():
            # Once stopped, a second signal exits at once until the process ends
            # (printing the report and shutting down take a moment too).
            signal.signal(number, on_signal if stop.requested else handler)


# -- a scan run as worker processes (``--jobs``) -------------------------------------

#: How the parent of ``--jobs`` workers tells them which signal stopped it. Not
#: SIGINT and SIGTERM themselves: a Ctrl-C reaches the terminal's whole process
#: group and a service manager may signal every process of the unit, so a
#: worker that took those too would see two signals and exit without a report.
FORWARDED = {signal.SIGINT: signal.SIGUSR1, signal.SIGTERM: signal.SIGUSR2}
#: Every signal a worker's start must not miss: blocked around the fork (`held`).
_WORKER_SIGNALS = (*STOP_SIGNALS, *FORWARDED.values())


@contextlib.contextmanager
def held() -> Iterator[None]:
    """The stop signals held (pending, not lost) in the block: around forking workers."""
    signal.pthread_sigmask(signal.SIG_BLOCK, _WORKER_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _WORKER_SIGNALS)


def stop_on_forwarded_signals(stop: StopRequest) -> None:
    """In a worker (signals `held`): its parent's forwarded signal stops it; SIGINT/SIGTERM do not.

    The worker's first stop is its parent's: the parent decides when the
    worker exits at once (it kills it), so a repeated forward is ignored.
    """
    original = {forwarded: number for number, forwarded in FORWARDED.items()}

    def on_forwarded(number: int, _frame: FrameType | None) -> None:
        if not stop.requested:
            _quiet_closed_loop_callbacks()
            stop.request(original[number])

    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    for number in FORWARDED.values():
        signal.signal(number, on_forwarded)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _WORKER_SIGNALS)


def forward_signals(stop: StopRequest, workers: Callable[[], list[int]]) -> None:
    """In the parent of workers: the first signal is forwarded to them, a second kills them.

    A second signal exits at once, as a scan in one process does: the
    workers are killed first (they hold nothing but read-only connections).
    """

    def on_signal(number: int, _frame: FrameType | None) -> None:
        pids = workers()
        if stop.requested:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            _exit_now(number)
        stop.request(number)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, FORWARDED[number])

    for number in STOP_SIGNALS:
        signal.signal(number, on_signal)
