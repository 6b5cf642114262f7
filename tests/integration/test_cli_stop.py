"""Stopping a scan: the first SIGINT or SIGTERM keeps the counts so far, a second exits at once.

Real processes (``python -m adk_pairing scan``) on real SQLite stores big
enough that a whole scan takes many seconds, both of ADK's layouts (the
``sqlite3`` reader never suspends between sessions; the aiosqlite one does),
under a pseudo-terminal (the progress bar is drawn) and in a pipe. The signal
is sent once the scan is seen reading: the progress bar on the terminal, or
the first broken session streamed by ``--json-lines`` (the progress bar shows a
rate once sessions are done). "It stopped" is
asserted by the counts (fewer sessions than the store holds), with only
generous bounds on time.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import pty
import select
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import NamedTuple

import pytest
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import BaseSessionService
from google.genai import types

from adk_pairing.adk import close_session_service

#: Sessions in each store: at a few thousand sessions a second at best, a
#: whole scan takes several seconds; the files stay under about 60 MB.
SESSIONS = 8_000
#: Where the scan can only go through ADK's get_session (google-adk 1.20's
#: DatabaseSessionService, no ``sessions.schemas``), at tens of milliseconds a
#: session: still a scan of tens of seconds, not minutes.
SESSIONS_THROUGH_GET_SESSION = 1_000
#: Every this many sessions one is broken, so --json-lines shows progress.
BROKEN_EVERY = 40
#: Seconds a stopped scan may take to end (loaded CI machines): generous, and
#: still far below the whole scan's time there.
STOP_BOUND = 60
COMMAND = [sys.executable, "-m", "adk_pairing", "scan"]
#: Named, because google-adk 1.20 (no sessions.schemas) reads DatabaseSessionService
#: stores through get_session only, which cannot list their apps.
APP = ["--app", "shop"]


def _event(author: str, part: types.Part) -> Event:
    role = "user" if author == "user" or part.function_response else "model"
    return Event(
        invocation_id=f"inv-{uuid.uuid4().hex[:8]}",
        author=author,
        timestamp=time.time(),
        content=types.Content(role=role, parts=[part]),
    )


async def _write_templates(service: BaseSessionService) -> None:
    """A healthy 15-event session ("tpl") and a broken one ("broken"), through ADK."""
    try:
        # The broken one first: the get_session loop lists sessions oldest first.
        broken = await service.create_session(app_name="shop", user_id="alice", session_id="broken")
        await service.append_event(broken, _event("user", types.Part(text="refund please")))
        refund = types.Part(function_call=types.FunctionCall(id="m1", name="refund"))
        await service.append_event(broken, _event("agent", refund))
        healthy = await service.create_session(app_name="shop", user_id="alice", session_id="tpl")
        for turn in range(5):
            call_id = f"c{turn}"
            for author, part in (
                ("user", types.Part(text=f"question {turn}")),
                ("agent", types.Part(function_call=types.FunctionCall(id=call_id, name="lookup"))),
                (
                    "agent",
                    types.Part(
                        function_response=types.FunctionResponse(
                            id=call_id, name="lookup", response={"ok": True}
                        )
                    ),
                ),
            ):
                await service.append_event(healthy, _event(author, part))
    finally:
        await close_session_service(service)


def _copy_sessions(path: Path, sessions: int) -> None:
    """`sessions` copies of the templates by SQL (the same rows, new session ids)."""
    db = sqlite3.connect(path)
    try:
        session_columns = [row[1] for row in db.execute("PRAGMA table_info(sessions)")]
        event_columns = [row[1] for row in db.execute("PRAGMA table_info(events)")]
        numbers = (
            "WITH RECURSIVE n(i) AS "
            f"(SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {sessions - 1})"
        )
        new_id = "printf('s%06d', i)"
        template = f"CASE WHEN i % {BROKEN_EVERY} = 0 THEN 'broken' ELSE 'tpl' END"
        for table, columns, key in (
            ("sessions", session_columns, "id"),
            ("events", event_columns, "session_id"),
        ):
            values = ", ".join(new_id if column == key else column for column in columns)
            db.execute(
                f"INSERT INTO {table} ({', '.join(columns)}) {numbers} "
                f"SELECT {values} FROM {table}, n WHERE {key} = {template}"
            )
        db.execute("DELETE FROM events WHERE session_id IN ('tpl', 'broken')")
        db.execute("DELETE FROM sessions WHERE id IN ('tpl', 'broken')")
        db.commit()
    finally:
        db.close()


class BigStore(NamedTuple):
    uri: str
    sessions: int


@pytest.fixture(scope="module", params=["sqlite", "sqlite+aiosqlite"])
def big_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> BigStore:
    """A store of many sessions in one of ADK's two SQLite layouts, its URI and size."""
    path = tmp_path_factory.mktemp("stop") / "big.db"
    sessions = SESSIONS
    if request.param == "sqlite":
        from google.adk.sessions.sqlite_session_service import SqliteSessionService

        service: BaseSessionService = SqliteSessionService(db_path=str(path))
    else:
        from google.adk.sessions.database_session_service import DatabaseSessionService

        service = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}")
        if importlib.util.find_spec("google.adk.sessions.schemas") is None:
            sessions = SESSIONS_THROUGH_GET_SESSION
    asyncio.run(_write_templates(service))
    _copy_sessions(path, sessions)
    return BigStore(f"{request.param}:///{path}", sessions)


class Output:
    """What a child wrote to one file descriptor, read without blocking."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.data = b""

    def pump(self, seconds: float) -> bool:
        """Reads for up to `seconds`; False once the writer is gone."""
        ready, _, _ = select.select([self.fd], [], [], seconds)
        if not ready:
            return True
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:  # a pty whose child side closed
            return False
        self.data += chunk
        return bool(chunk)

    def wait_for(self, needle: bytes, process: subprocess.Popen[bytes], limit: float) -> None:
        deadline = time.monotonic() + limit
        while needle not in self.data:
            assert process.poll() is None, f"ended before {needle!r}: {self.data[-2000:]!r}"
            assert time.monotonic() < deadline, f"no {needle!r} in {limit} s: {self.data!r}"
            self.pump(0.2)

    def drain(self) -> str:
        while self.pump(1):
            pass
        return self.data.decode(errors="replace")


def _ended(process: subprocess.Popen[bytes], *outputs: Output) -> tuple[int, float]:
    """Waits (within `STOP_BOUND`) for the exit; returns its code and the seconds taken."""
    started = time.monotonic()
    while process.poll() is None:
        assert time.monotonic() - started < STOP_BOUND, "the scan did not stop"
        for output in outputs:
            output.pump(0.05)
    return process.returncode, time.monotonic() - started


def _under_pty(uri: str, *args: str) -> tuple[subprocess.Popen[bytes], Output, Output]:
    """A scan with stderr on a pseudo-terminal (the progress bar) and stdout in a pipe."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [*COMMAND, uri, *APP, *args],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=follower,
        env={**os.environ, "COLUMNS": "120", "TERM": "xterm"},
    )
    os.close(follower)
    assert process.stdout is not None
    return process, Output(process.stdout.fileno()), Output(leader)


def _sigint_under_pty(uri: str, *args: str) -> tuple[int, str, str]:
    """SIGINT once the progress bar shows a rate; the exit code, stdout and the terminal."""
    process, stdout, terminal = _under_pty(uri, *args)
    try:
        terminal.wait_for(b"sessions/s", process, STOP_BOUND)
        process.send_signal(signal.SIGINT)
        code, _ = _ended(process, stdout, terminal)
    finally:
        process.kill()
    return code, stdout.drain(), terminal.drain()


def _in_pipe(uri: str, *args: str) -> tuple[subprocess.Popen[bytes], Output, Output]:
    process = subprocess.Popen(
        [*COMMAND, uri, *APP, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None and process.stderr is not None
    return process, Output(process.stdout.fileno()), Output(process.stderr.fileno())


def test_sigint_under_a_terminal_prints_the_partial_counts_and_exits_130(
    big_store: BigStore,
) -> None:
    code, report, screen = _sigint_under_pty(big_store.uri)
    assert code == 130, (report, screen)
    assert "partial: stopped before the end" in report, report
    scanned = int(report.split("Scanned ")[1].split(" session")[0].replace(",", ""))
    assert scanned < big_store.sessions, report
    assert "error: interrupted by SIGINT" in screen and "Traceback" not in screen, screen


def test_sigint_with_json_under_a_terminal_says_partial(big_store: BigStore) -> None:
    code, printed, _ = _sigint_under_pty(big_store.uri, "--json")
    report = json.loads(printed)
    assert code == 130
    assert report["partial"] is True
    assert report["sessions_scanned"] < big_store.sessions
    assert report["apps"] == ["shop"]  # the apps met so far, as a whole scan names them


@pytest.mark.parametrize(
    ("signal_number", "code", "reader"),
    [
        (signal.SIGTERM, 143, "auto"),
        (signal.SIGINT, 130, "get-session"),
    ],
)
def test_a_signal_in_a_pipe_stops_the_scan_with_a_partial_summary(
    big_store: BigStore, signal_number: int, code: int, reader: str
) -> None:
    """The first broken session streamed means the scan is reading; then the signal."""
    _signalled_in_a_pipe(big_store, signal_number, code, "--reader", reader)


def _signalled_in_a_pipe(
    big_store: BigStore, signal_number: int, code: int, *args: str
) -> list[dict[str, object]]:
    """Signals a ``--json-lines`` scan once it streams; checks the partial summary; its lines."""
    process, stdout, stderr = _in_pipe(big_store.uri, "--json-lines", *args)
    try:
        stdout.wait_for(b'"type": "session"', process, STOP_BOUND)
        process.send_signal(signal_number)
        exit_code, _ = _ended(process, stdout, stderr)
    finally:
        process.kill()
    lines = [json.loads(line) for line in stdout.drain().splitlines()]
    errors = stderr.drain()
    assert exit_code == code, errors
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["partial"] is True, summary
    assert summary["sessions_scanned"] < big_store.sessions  # type: ignore[operator]
    assert errors.count("\n") == 1 and signal.Signals(signal_number).name in errors, errors
    return lines


def test_a_second_signal_exits_at_once(big_store: BigStore) -> None:
    """The second signal exits 130 at once, unless the first stop had already ended the scan.

    Which of the two happens depends on timing; either way the code is 130
    and the whole store is not read.
    """
    _two_sigints_in_a_pipe(big_store)


def _two_sigints_in_a_pipe(big_store: BigStore, *args: str) -> list[int]:
    """Two SIGINTs to a streaming scan: exit 130, partial if the first stop finished; its children.

    The children are read once the scan streams, before either signal.
    """
    process, stdout, stderr = _in_pipe(big_store.uri, "--json-lines", *args)
    try:
        stdout.wait_for(b'"type": "session"', process, STOP_BOUND)
        children = _children(process.pid)
        process.send_signal(signal.SIGINT)
        # Apart, so that the interpreter sees two signals and not one pending flag.
        time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        code, _ = _ended(process, stdout, stderr)
    finally:
        process.kill()
    streamed, errors = stdout.drain(), stderr.drain()
    assert code == 130, errors
    if "stopped at once by a second SIGINT" not in errors:
        summary = json.loads(streamed.splitlines()[-1])
        assert summary["partial"] is True and summary["sessions_scanned"] < big_store.sessions
    return children


def test_a_whole_scan_of_the_store_is_not_partial(big_store: BigStore) -> None:
    """The control: without a signal the same scan reads every session and says so."""
    done = subprocess.run(
        [*COMMAND, big_store.uri, *APP, "--json"], capture_output=True, timeout=600, check=False
    )
    report = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert report["partial"] is False
    assert report["sessions_scanned"] == big_store.sessions
    assert report["sessions_with_missing"] == big_store.sessions // BROKEN_EVERY


# -- the same with worker processes (--jobs): the parent takes the signals -------------
# The workers run the one-process scan above on their shards, which every release's
# run already covers; forking, forwarding signals and merging reports is our code
# alone, so .ci/run runs these on the newest release only (version_independent).

JOBS = ["--jobs", "2"]


@pytest.mark.version_independent
def test_jobs_stop_on_sigint_under_a_terminal_with_the_partial_counts(
    big_store: BigStore,
) -> None:
    """Ctrl-C reaches the whole process group: the workers must stop once, with a report.

    The progress bar the parent draws from its workers' messages is what the
    signal waits for.
    """
    code, printed, screen = _sigint_under_pty(big_store.uri, "--json", *JOBS)
    assert code == 130, (printed, screen)
    report = json.loads(printed)
    assert report["partial"] is True and report["shard"] is None
    assert 0 < report["sessions_scanned"] < big_store.sessions
    assert screen.count("error:") == 1 and "interrupted by SIGINT" in screen, screen
    assert "Traceback" not in screen, screen


@pytest.mark.version_independent
def test_jobs_stop_on_a_sigterm_to_the_parent_in_a_pipe(big_store: BigStore) -> None:
    """`kill PID` reaches the parent alone: it stops its workers and sums what they read.

    (SIGINT to the parent alone is the next test's first signal.)
    """
    lines = _signalled_in_a_pipe(big_store, signal.SIGTERM, 143, *JOBS)
    summary = lines[-1]
    streamed = sum(1 for line in lines if line["type"] == "session")
    assert streamed == summary["sessions_with_missing"], summary


@pytest.mark.version_independent
def test_jobs_a_second_signal_exits_at_once_and_takes_the_workers(big_store: BigStore) -> None:
    workers = _two_sigints_in_a_pipe(big_store, *JOBS)
    assert len(workers) == 2, workers
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in workers):
        assert time.monotonic() < deadline, f"workers {workers} outlived the scan"
        time.sleep(0.05)


def _children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


@pytest.mark.version_independent
def test_jobs_give_the_report_of_one_process(big_store: BigStore) -> None:
    """Same counts, findings and their order, same shard; only the clock's fields differ."""

    def report(*args: str) -> dict[str, object]:
        done = subprocess.run(
            [*COMMAND, big_store.uri, *APP, "--json", *args],
            capture_output=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        del data["elapsed_seconds"]
        for finding in data["findings"]:
            del finding["age_seconds"]
        return data

    # Half the store (the test's time), split over three workers: still that shard.
    alone = report("--shard", "1/2")
    assert 0 < alone["sessions_scanned"] < big_store.sessions  # type: ignore[operator]
    assert alone["sessions_with_missing"], alone
    assert report("--shard", "1/2", "--jobs", "3") == alone
