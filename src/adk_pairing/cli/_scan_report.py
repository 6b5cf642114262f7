"""The scan's report: its records and counts, merging shards' reports, and the text summary.

`adk_pairing.cli._store_scan` drives the reading and fills a `ScanResult`; this
module holds what a report is (`Finding`, `AppCounts`, `ScanResult`), how the
reports of N shards become one (`load_report`, `merge_reports`) and how a
report reads on a terminal (`render`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from google.adk.events.event import Event
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..ledger import CallStatus, analyze
from ._common import PIPE_WIDTH, CliError, human_age, print_table
from ._direct.base import Shard
from ._printable import printable


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
    #: The session's irregular shapes (`adk_pairing.wire.IrregularShape`), by name.
    shapes: list[str] = field(default_factory=list)


@dataclass
class AppCounts:
    """The counts of one app (and, summed, of the whole scan)."""

    sessions_scanned: int = 0
    healthy_sessions: int = 0
    sessions_with_missing: int = 0
    sessions_with_pending: int = 0
    missing_calls: int = 0
    pending_calls: int = 0
    unreadable_sessions: int = 0

    def add(self, found: Sequence[Finding]) -> None:
        self.sessions_scanned += 1
        if not found:
            self.healthy_sessions += 1
            return
        missing = sum(1 for f in found if f.status == CallStatus.MISSING.value)
        pending = len(found) - missing
        self.missing_calls += missing
        self.pending_calls += pending
        self.sessions_with_missing += 1 if missing else 0
        self.sessions_with_pending += 1 if pending else 0


@dataclass(kw_only=True)
class ScanResult(AppCounts):
    """Counts and findings of one scan: the counts (inherited) sum those of `per_app`."""

    store: str
    apps: list[str]
    user: str | None
    read_only: str
    #: "direct: <layout>" or "get_session".
    reader: str = "get_session"
    #: "fast" (findings confirmed by ADK's full validation) or "strict".
    mode: str = "fast"
    #: "K/N" when this scan covered one shard of the store; None for the whole store.
    shard: str | None = None
    #: How many shard reports `merge_reports` combined (0 for a scan).
    merged_shards: int = 0
    #: Why `--reader auto` did not read directly (None when it did, or was not asked to).
    fallback_reason: str | None = None
    since: float | None = None
    until: float | None = None
    vanished_sessions: int = 0
    per_app: dict[str, AppCounts] = field(default_factory=dict)
    unreadable: list[dict[str, str]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    elapsed_seconds: float = 0.0
    #: True when a signal stopped the scan: the counts are those read until then.
    partial: bool = False

    def exit_code(self, fail_on: str) -> int:
        """1 when the scan found what `fail_on` names, else 0 (2 is for errors)."""
        found = {
            "never": False,
            "missing": self.missing_calls > 0,
            "pending": self.pending_calls > 0,
            "any": self.missing_calls + self.pending_calls > 0,
        }[fail_on]
        return 1 if found else 0

    def record(self, app: str, found: list[Finding], *, keep: bool) -> None:
        for counts in (self.per_app.setdefault(app, AppCounts()), self):
            counts.add(found)
        if keep:
            self.findings.extend(found)

    def record_unreadable(self, app: str, user: str, session: str, error: str) -> dict[str, str]:
        for counts in (self.per_app.setdefault(app, AppCounts()), self):
            counts.unreadable_sessions += 1
        item = {"app": app, "user": user, "session": session, "error": error}
        self.unreadable.append(item)
        return item

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["findings"] = [asdict(f) for f in self.findings]
        data["per_app"] = {app: asdict(c) for app, c in sorted(self.per_app.items())}
        return data


def findings_of(
    app: str, user: str, session_id: str, events: list[Event], now: float
) -> list[Finding]:
    """The unanswered calls of one stored session, oldest first."""
    report = analyze(events)
    shapes = sorted(shape.value for shape in report.shapes)
    found: list[Finding] = []
    for call in report.calls:
        status = call.status
        if status is CallStatus.ANSWERED:
            continue
        event = events[call.event_index]
        found.append(
            Finding(
                app=app,
                user=user,
                session=session_id,
                call_id=call.call_id,
                name=call.name,
                status=status.value,
                event_id=event.id,
                invocation_id=event.invocation_id,
                call_time=event.timestamp,
                age_seconds=round(max(0.0, now - event.timestamp), 3),
                shapes=shapes,
            )
        )
    return found


def broken_session_record(found: Sequence[Finding]) -> dict[str, Any]:
    """One ``--json-lines`` record: a broken session (`found` is not empty) and its calls."""
    counts = AppCounts()
    counts.add(found)
    first = found[0]
    return {
        "type": "session",
        "app": first.app,
        "user": first.user,
        "session": first.session,
        "missing_calls": counts.missing_calls,
        "pending_calls": counts.pending_calls,
        "findings": [asdict(f) for f in found],
    }


#: Fields every shard of one scan must agree on to be merged.
_SAME_IN_EVERY_SHARD = ("store", "user", "since", "until", "mode", "read_only", "reader")
_COUNT_FIELDS = tuple(f.name for f in dataclasses.fields(AppCounts))


def load_report(path: str) -> dict[str, Any]:
    """A scan's ``--json`` output, or its ``--json-lines`` output as the same fields."""
    import json

    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except OSError as error:
        raise CliError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict) and "findings" in data:
        return data
    findings: list[dict[str, Any]] = []
    unreadable: list[dict[str, Any]] = []
    summary: dict[str, Any] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise CliError(f"{path}:{number} is not JSON: not a scan's --json output") from None
        kind = record.pop("type", None) if isinstance(record, dict) else None
        if kind == "session":
            findings.extend(record["findings"])
        elif kind == "unreadable":
            unreadable.append(record)
        elif kind == "summary":
            summary = record
    if summary is None:
        raise CliError(f"{path} holds no scan report (--json or --json-lines output)")
    return {**summary, "findings": findings, "unreadable": unreadable}


def merge_reports(reports: Sequence[tuple[str, dict[str, Any]]]) -> ScanResult:
    """N shards' reports (path, parsed JSON) as the report one scan of the store gives.

    Every shard 0..N-1 of the same N must be there exactly once, from scans
    of the same store with the same window and mode; the counts and the
    findings are then sums and unions (a session lies in exactly one shard).
    `elapsed_seconds` is the longest shard's.
    """
    if not reports:
        raise CliError("--merge needs the JSON outputs of the shards")
    shards: dict[int, str] = {}
    counts: set[int] = set()
    for path, report in reports:
        try:
            shard = Shard.parse(str(report.get("shard")))
        except ValueError:
            raise CliError(f"{path} is not a shard's report (scan --shard K/N --json)") from None
        counts.add(shard.count)
        if report.get("partial"):
            raise CliError(
                f"{path} is a partial scan (stopped by a signal): scan shard {shard} again"
            )
        if shard.index in shards:
            raise CliError(f"{path} and {shards[shard.index]} are both shard {shard}")
        shards[shard.index] = path
    if len(counts) != 1:
        raise CliError(f"the reports split the store into different N: {sorted(counts)}")
    (count,) = counts
    absent = sorted(set(range(count)) - shards.keys())
    if absent:
        names = ", ".join(f"{i}/{count}" for i in absent)
        raise CliError(f"shards {names} are missing: a merge needs all {count}")
    first_path, first = reports[0]
    for path, report in reports[1:]:
        for key in _SAME_IN_EVERY_SHARD:
            if report.get(key) != first.get(key):
                raise CliError(
                    f"{path} and {first_path} differ in {key} "
                    f"({report.get(key)!r} vs {first.get(key)!r}): not shards of one scan"
                )
    merged = sum_reports([report for _, report in reports])
    merged.merged_shards = count
    return merged


def sum_reports(reports: Sequence[dict[str, Any]]) -> ScanResult:
    """The reports of disjoint parts of one scan (``to_json`` form) as one report.

    Counts are summed, findings and unreadable sessions joined and sorted as
    one scan sorts them; `elapsed_seconds` is the longest part's and `partial`
    is set when any part was stopped.
    """
    first = reports[0]
    apps_lists = [report["apps"] for report in reports]
    same_apps = all(apps == apps_lists[0] for apps in apps_lists)
    merged = ScanResult(
        store=first["store"],
        apps=list(apps_lists[0]) if same_apps else sorted({a for apps in apps_lists for a in apps}),
        user=first["user"],
        read_only=first["read_only"],
        reader=first["reader"],
        fallback_reason=next((r["fallback_reason"] for r in reports if r["fallback_reason"]), None),
        since=first["since"],
        until=first["until"],
        mode=first["mode"],
        partial=any(report.get("partial") for report in reports),
    )
    for report in reports:
        for name in _COUNT_FIELDS:
            setattr(merged, name, getattr(merged, name) + report[name])
        merged.vanished_sessions += report.get("vanished_sessions", 0)
        for app, app_counts in report["per_app"].items():
            into = merged.per_app.setdefault(app, AppCounts())
            for name in _COUNT_FIELDS:
                setattr(into, name, getattr(into, name) + app_counts[name])
        merged.unreadable.extend(report["unreadable"])
        merged.findings.extend(Finding(**finding) for finding in report["findings"])
        merged.elapsed_seconds = max(merged.elapsed_seconds, report.get("elapsed_seconds", 0.0))
    if not same_apps:
        # Without --app each shard names the apps it met: one scan names all it met.
        merged.apps = sorted(merged.per_app)
    merged.findings.sort(key=lambda f: (f.status != "missing", f.call_time, f.user, f.session))
    merged.unreadable.sort(key=lambda u: (u["app"], u["user"], u["session"]))
    return merged


def count_of(number: int, noun: str) -> str:
    """``1 session``, ``2,000 sessions``."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def _counts_line(counts: AppCounts) -> str:
    return (
        f"{counts.healthy_sessions:,} healthy, "
        f"{counts.sessions_with_missing:,} with missing calls "
        f"({count_of(counts.missing_calls, 'call')}), "
        f"{counts.sessions_with_pending:,} with pending calls "
        f"({count_of(counts.pending_calls, 'call')})"
    )


#: Widths of the scan table's columns, and of a name quoted in a line; `--json` has them whole.
APP_WIDTH = 24
USER_WIDTH = 24
SESSION_WIDTH = 38
CALL_ID_WIDTH = 40
NAME_WIDTH = 32
#: Store strings quoted in a line (unreadable sessions, app names).
LINE_NAME_WIDTH = 80


def render(result: ScanResult, console: Console, *, limit: int) -> None:
    """The human summary: findings first, then the counts, which stay on screen.

    Every string from the store goes through `printable`: escaped, and cut to
    its column's width (``--json`` carries it whole).
    """

    def say(text: str) -> None:
        console.print(text, markup=False, emoji=False)

    apps = ",".join(printable(app, LINE_NAME_WIDTH) for app in result.apps) or "(none)"
    user = printable(result.user, LINE_NAME_WIDTH) if result.user is not None else "(all)"
    say(f"Store {printable(result.store)}  apps={apps} user={user}")
    notes = []
    if result.reader != "get_session":
        strict = result.mode == "strict"
        notes.append("every event validated (--strict)" if strict else "findings confirmed")
    if result.shard:
        notes.append(f"shard {result.shard}")
    if result.merged_shards:
        notes.append(f"{result.merged_shards} shards merged")
    extra = f" ({', '.join(notes)})" if notes else ""
    say(f"Read by {printable(result.reader)}{extra}")
    if result.fallback_reason:
        say(f"(not read directly: {printable(result.fallback_reason)}; used get_session)")
    several_apps = len(result.per_app) > 1
    shown = result.findings[:limit]
    if shown:
        table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
        columns = ("app",) if several_apps else ()
        for column in (*columns, "user", "session", "call id", "name", "status", "age"):
            table.add_column(column, overflow="fold")
        for finding in shown:
            style = "red" if finding.status == "missing" else "yellow"
            leading = (Text(printable(finding.app, APP_WIDTH)),) if several_apps else ()
            call_id = finding.call_id
            table.add_row(
                *leading,
                Text(printable(finding.user, USER_WIDTH)),
                Text(printable(finding.session, SESSION_WIDTH)),
                Text(printable(call_id, CALL_ID_WIDTH) if call_id else "(no id)"),
                Text(printable(finding.name, NAME_WIDTH)),
                Text(finding.status, style=style),
                human_age(finding.age_seconds),
            )
        print_table(console, table)
    hidden = len(result.findings) - len(shown)
    if hidden > 0 and shown:
        say(f"… and {count_of(hidden, 'more call')} not listed (--limit, or --json for all)")
    elif hidden > 0:
        say(f"{count_of(hidden, 'call')} not listed (--limit {limit}; --json lists them)")
    for item in result.unreadable[:limit]:
        where = " ".join(
            f"{key}={printable(item[key], LINE_NAME_WIDTH)}" for key in ("app", "user", "session")
        )
        say(f"unreadable: {where}: {printable(item['error'], 2 * PIPE_WIDTH)}")
    if len(result.unreadable) > limit:
        say(f"… and {len(result.unreadable) - limit:,} more unreadable sessions")
    if result.missing_calls:
        say(MISSING_NEXT_STEP)
    # The counts come last, so that they are what a terminal keeps on screen.
    if result.vanished_sessions:
        say(f"{result.vanished_sessions:,} sessions disappeared between listing and reading")
    stopped = " (partial: stopped before the end)" if result.partial else ""
    say(
        f"Scanned {count_of(result.sessions_scanned, 'session')}{stopped} in "
        f"{result.elapsed_seconds:.1f} s: {_counts_line(result)}"
    )
    if len(result.per_app) > 1 or (result.per_app and len(result.apps) > 1):
        for app, counts in sorted(result.per_app.items()):
            unreadable = (
                f", {counts.unreadable_sessions:,} unreadable" if counts.unreadable_sessions else ""
            )
            say(
                f"  app {printable(app, LINE_NAME_WIDTH)}: "
                f"{count_of(counts.sessions_scanned, 'session')}, "
                f"{_counts_line(counts)}{unreadable}"
            )


#: The footer under missing calls: what the finding means and what to do about it.
MISSING_NEXT_STEP = (
    "A missing call is one whose turn ended before its tool returned: the tool may or may "
    "not have run. Check its side effects (a refund issued, a message sent) before anyone "
    "repeats it. adk-pairing never writes to the store, so a session keeps showing missing "
    "here after PairingSessionService has repaired its next turns."
)
