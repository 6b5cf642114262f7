"""``adk-pairing scan``: which stored sessions hold unanswered function calls.

Reads every session of one app (optionally one user) through the inner,
unwrapped service, so it reports what is *stored*, and classifies each call
with `adk_pairing.analyze`. Sessions are fetched with bounded concurrency
(an ``asyncio.Semaphore``) and only findings are kept, so memory stays flat
however many sessions the store holds.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.session import Session
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from ..analysis import CallStatus, analyze
from ._common import CliError, explain, human_age, short
from ._store import OpenedStore, list_sessions_requires_user

logger = logging.getLogger("adk_pairing.cli")

#: Default number of sessions read at once: below SQLAlchemy's default pool
#: (5 + 10 overflow), so the scan never waits on the pool nor floods the server.
DEFAULT_CONCURRENCY = 8

FAIL_ON_CHOICES = ("never", "missing", "pending", "any")


@dataclass(frozen=True)
class Finding:
    """One unanswered call in one stored session."""

    app: str
    user: str
    session: str
    call_id: str | None
    name: str
    status: str
    event_id: str
    invocation_id: str
    call_time: float
    age_seconds: float


@dataclass
class ScanResult:
    """Counts and findings of one scan."""

    store: str
    app: str
    user: str | None
    read_only: str
    sessions_scanned: int = 0
    healthy_sessions: int = 0
    sessions_with_missing: int = 0
    sessions_with_pending: int = 0
    missing_calls: int = 0
    pending_calls: int = 0
    vanished_sessions: int = 0
    unreadable: list[dict[str, str]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    elapsed_seconds: float = 0.0

    def exit_code(self, fail_on: str) -> int:
        """1 when the scan found what `fail_on` names, else 0 (2 is for errors)."""
        found = {
            "never": False,
            "missing": self.missing_calls > 0,
            "pending": self.pending_calls > 0,
            "any": self.missing_calls + self.pending_calls > 0,
        }[fail_on]
        return 1 if found else 0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["findings"] = [asdict(f) for f in self.findings]
        return data


def findings_of(session: Session, now: float) -> list[Finding]:
    """The unanswered calls of one stored session, oldest first."""
    report = analyze(session.events)
    found: list[Finding] = []
    for call in report.calls:
        status = call.status
        if status is CallStatus.ANSWERED:
            continue
        event = session.events[call.event_index]
        found.append(
            Finding(
                app=session.app_name,
                user=session.user_id,
                session=session.id,
                call_id=call.call_id,
                name=call.name,
                status=status.value,
                event_id=event.id,
                invocation_id=event.invocation_id,
                call_time=event.timestamp,
                age_seconds=round(max(0.0, now - event.timestamp), 3),
            )
        )
    return found


async def scan_store(
    store: OpenedStore,
    *,
    app: str,
    user: str | None,
    concurrency: int = DEFAULT_CONCURRENCY,
    on_listed: Callable[[int], None] | None = None,
    on_session_done: Callable[[], None] | None = None,
) -> ScanResult:
    """Reads every session of `app` (and `user`) and collects unanswered calls."""
    if concurrency < 1:
        raise CliError("--concurrency must be at least 1")
    service: BaseSessionService = store.service
    if user is None and list_sessions_requires_user(service):
        raise CliError(
            f"{type(service).__name__} can only list the sessions of one user: pass --user USER_ID."
        )
    started = time.perf_counter()
    listing = await service.list_sessions(app_name=app, user_id=user)
    sessions = listing.sessions
    if on_listed is not None:
        on_listed(len(sessions))
    result = ScanResult(store=store.masked_uri, app=app, user=user, read_only=store.read_only)
    semaphore = asyncio.Semaphore(concurrency)
    now = time.time()

    def record(session: Session) -> None:
        result.sessions_scanned += 1
        found = findings_of(session, now)
        if not found:
            result.healthy_sessions += 1
            return
        missing = sum(1 for f in found if f.status == CallStatus.MISSING.value)
        pending = len(found) - missing
        result.missing_calls += missing
        result.pending_calls += pending
        result.sessions_with_missing += 1 if missing else 0
        result.sessions_with_pending += 1 if pending else 0
        result.findings.extend(found)

    async def read_one(listed: Session) -> None:
        try:
            session = await service.get_session(
                app_name=app, user_id=listed.user_id, session_id=listed.id
            )
            if session is None:
                # Deleted (or expired) between the listing and this read.
                result.vanished_sessions += 1
            else:
                record(session)
        except Exception as error:
            # Shown with its traceback under --debug; otherwise only the one-line reason.
            logger.warning(
                "could not read session %s of user %s", listed.id, listed.user_id, exc_info=True
            )
            result.unreadable.append(
                {"user": listed.user_id, "session": listed.id, "error": explain(error, None)}
            )
        finally:
            semaphore.release()
            if on_session_done is not None:
                on_session_done()

    # Acquiring before creating each task keeps at most `concurrency` reads
    # (and tasks) alive, so a store of millions of sessions costs no more memory.
    running: set[asyncio.Task[None]] = set()
    for listed in sessions:
        await semaphore.acquire()
        task = asyncio.create_task(read_one(listed))
        running.add(task)
        task.add_done_callback(running.discard)
    if running:
        await asyncio.gather(*running)
    result.findings.sort(key=lambda f: (f.status != "missing", f.call_time, f.user, f.session))
    result.unreadable.sort(key=lambda u: (u["user"], u["session"]))
    result.elapsed_seconds = round(time.perf_counter() - started, 3)
    return result


async def scan_with_progress(
    store: OpenedStore,
    *,
    app: str,
    user: str | None,
    concurrency: int,
    console: Console,
) -> ScanResult:
    """`scan_store` with a progress bar on `console` (used only on a terminal)."""
    with Progress(
        TextColumn("scanning"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("scan", total=None)
        return await scan_store(
            store,
            app=app,
            user=user,
            concurrency=concurrency,
            on_listed=lambda total: progress.update(task, total=total),
            on_session_done=lambda: progress.advance(task),
        )


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def render(result: ScanResult, console: Console, *, limit: int) -> None:
    """The human summary: one line of counts, then a table of findings."""
    scope = f"app={result.app} user={result.user if result.user is not None else '(all)'}"
    console.print(f"Store {result.store}  {scope}", markup=False)
    console.print(
        f"Scanned {_count(result.sessions_scanned, 'session')} in "
        f"{result.elapsed_seconds:.1f} s: {result.healthy_sessions:,} healthy, "
        f"{result.sessions_with_missing:,} with missing calls "
        f"({_count(result.missing_calls, 'call')}), "
        f"{result.sessions_with_pending:,} with pending calls "
        f"({_count(result.pending_calls, 'call')})",
        markup=False,
    )
    if result.vanished_sessions:
        console.print(
            f"{result.vanished_sessions:,} sessions disappeared between listing and reading",
            markup=False,
        )
    if result.findings:
        table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
        for column in ("user", "session", "call id", "name", "status", "age"):
            table.add_column(column, overflow="fold")
        for finding in result.findings[:limit]:
            style = "red" if finding.status == "missing" else "yellow"
            table.add_row(
                Text(short(finding.user, 24)),
                Text(short(finding.session, 38)),
                Text(finding.call_id or "(no id)"),
                Text(short(finding.name, 32)),
                Text(finding.status, style=style),
                human_age(finding.age_seconds),
            )
        console.print(table)
        hidden = len(result.findings) - limit
        if hidden > 0:
            console.print(f"… and {hidden:,} more calls (--limit, or --json for all)")
    for item in result.unreadable[:limit]:
        console.print(
            f"unreadable: user={item['user']} session={item['session']}: {item['error']}",
            markup=False,
        )
    if len(result.unreadable) > limit:
        console.print(f"… and {len(result.unreadable) - limit:,} more unreadable sessions")
