"""`adk-pairing scan` at store scale: issue 25's ratios, and the default mode, --strict, the loop.

Usage:

    .venv/bin/python benchmarks/scan_scale.py                  # the figures of RESULTS.md
    .venv/bin/python benchmarks/scan_scale.py --reuse          # keep an already seeded database
    .venv/bin/python benchmarks/scan_scale.py --only issue --no-loop --reuse --keep  # floor, scan
    .venv/bin/python benchmarks/scan_scale.py --only issue --no-loop --reuse --keep \
        --scan-jobs 1 2 --rounds 3          # the scan at --jobs 1 and 2, floor and scans x 3
    .venv/bin/python benchmarks/scan_scale.py --sessions 40 --events 6 --sqlite-sessions 20 \\
        --big-sessions 60 --big-events 5 --db adk_pairing_scan_smoke --json out.json

One run measures, on the same stores and in the same process tree:

* PostgreSQL (``DatabaseSessionService``), ``--sessions`` x ``--events`` seeded by
  `seed_scan` into ``--db``: the real console script with ``--reader
  get-session`` (the get_session loop at the CLI's default concurrency), the
  default mode and ``--strict``; wall time, the scan's own ``elapsed_seconds``,
  CPU seconds and peak RSS of each process (``os.wait4``), and the *floor*: one
  raw asyncpg read of the rows the default mode asks for (the session keys and
  the rows naming a call, a result or a rewind), plus one of every row;
* ``DatabaseSessionService`` on SQLite and ``SqliteSessionService``,
  ``--sqlite-sessions`` sessions copied inside SQLite from sessions ADK wrote;
* peak RSS of the default mode at ``--big-sessions`` x ``--big-events`` (a
  second database), and a projection to 1,000,000 sessions from the measured
  rates and memory growth.

Every scan's counts must equal the seed's. The databases are dropped at the
end unless ``--keep``. Ratios, not absolute times, are what compare across
runs: the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent))

import seed_scan

from adk_pairing.adk import close_session_service
from adk_pairing.cli._direct import JSONB_CALL_PATHS
from adk_pairing.cli._fast import CALL_MARKERS

PARTS = ("issue", "million", "postgres", "database", "sqlite", "scale")


@dataclass
class Run:
    """One `adk-pairing scan` process."""

    label: str
    wall: float
    scanning: float
    cpu: float
    peak_rss_mb: float
    sessions: int
    report: dict[str, Any]
    #: The largest ``VmHWM`` of the process's workers (``--jobs``), 0 without any.
    worker_peak_rss_mb: float = 0.0


def _peak_rss_kb(pid: int) -> int | None:
    """``VmHWM`` of `pid`: the peak RSS of its own address space.

    Not ``ru_maxrss``: Linux carries a forked child's high-water mark across
    ``exec``, so that would report this (large) parent's size.
    """
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as children:
            return [int(child) for child in children.read().split()]
    except OSError:
        return []


def run_scan(label: str, url: str, app: str, *extra: str) -> Run:
    """Runs the console script; wall, CPU and peak RSS of that process alone."""
    script = Path(sys.executable).with_name("adk-pairing")
    command = [str(script), "scan", url, "--app", app, "--json", *extra]
    started = time.perf_counter()
    peak_kb = worker_kb = 0
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=out, stderr=err)
        while True:
            # The high-water mark only grows: the last reading before exit is the peak.
            peak_kb = max(peak_kb, _peak_rss_kb(process.pid) or 0)
            for child in _children(process.pid):
                worker_kb = max(worker_kb, _peak_rss_kb(child) or 0)
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(0.05)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode not in (0, 1):
        raise SystemExit(f"{label} failed ({process.returncode}): {stderr.decode()[-2000:]}")
    report = json.loads(stdout)
    return Run(
        label=label,
        wall=wall,
        scanning=report["elapsed_seconds"],
        cpu=usage.ru_utime + usage.ru_stime,
        peak_rss_mb=peak_kb / 1024,
        sessions=report["sessions_scanned"],
        report=report,
        worker_peak_rss_mb=worker_kb / 1024,
    )


def check_counts(run: Run, expected: dict[str, int]) -> None:
    got = {
        "sessions": run.report["sessions_scanned"],
        "missing_sessions": run.report["sessions_with_missing"],
        "pending_sessions": run.report["sessions_with_pending"],
    }
    if got != expected:
        raise SystemExit(f"{run.label}: counts {got} differ from the seed's {expected}")


#: The default mode's row filter on PostgreSQL, as `_direct` sends it.
_PG_FILTER = " OR ".join(
    f"jsonb_path_exists(event_data, '{path}'::jsonpath)" for path in JSONB_CALL_PATHS
)


async def pg_floor(database: str, app: str, every_row: bool = True) -> dict[str, float]:
    """Seconds for one raw read: the default mode's rows, and (`every_row`) every event row."""
    connection = await asyncpg.connect(seed_scan._plain_url(database))
    try:
        figures: dict[str, float] = {}
        started = time.perf_counter()
        await connection.fetch(
            "SELECT user_id, id, update_time FROM sessions WHERE app_name = $1", app
        )
        await connection.fetch(
            "SELECT user_id, session_id, invocation_id, event_data::text FROM events "
            f"WHERE app_name = $1 AND ({_PG_FILTER}) ORDER BY user_id, session_id, timestamp, id",
            app,
        )
        figures["filtered"] = time.perf_counter() - started
        if not every_row:
            return figures
        started = time.perf_counter()
        await connection.fetch(
            "SELECT user_id, session_id, event_data::text FROM events WHERE app_name = $1", app
        )
        figures["every_row"] = time.perf_counter() - started
        return figures
    finally:
        await connection.close()


def sqlite_floor(path: Path, app: str) -> float:
    marks = " OR ".join("instr(event_data, ?) > 0" for _ in CALL_MARKERS)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        started = time.perf_counter()
        connection.execute(
            "SELECT user_id, id, update_time FROM sessions WHERE app_name = ?", (app,)
        ).fetchall()
        connection.execute(
            "SELECT user_id, session_id, event_data FROM events "
            f"WHERE app_name = ? AND ({marks}) ORDER BY user_id, session_id, timestamp",
            (app, *CALL_MARKERS),
        ).fetchall()
        return time.perf_counter() - started


async def drop_database(database: str) -> None:
    admin = await asyncpg.connect(seed_scan._plain_url("postgres"))
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    finally:
        await admin.close()


async def seeded_sessions(database: str, app: str) -> int | None:
    try:
        connection = await asyncpg.connect(seed_scan._plain_url(database))
    except asyncpg.InvalidCatalogNameError:
        return None
    try:
        return int(
            await connection.fetchval("SELECT count(*) FROM sessions WHERE app_name = $1", app)
        )
    finally:
        await connection.close()


def seed_args(
    database: str, app: str, sessions: int, events: int, broken_percent: float = 7.0
) -> argparse.Namespace:
    missing_every, pending_every = seed_scan.every_for(broken_percent)
    return argparse.Namespace(
        db=database,
        app=app,
        sessions=sessions,
        events=events,
        users=100,
        missing_every=missing_every,
        pending_every=pending_every,
    )


async def seed_postgres(args: argparse.Namespace, reuse: bool) -> dict[str, int]:
    if reuse and await seeded_sessions(args.db, args.app) == args.sessions:
        return await seed_scan.expected_counts(args)
    return await seed_scan.seed(args)


# -- SQLite stores: ADK writes three template sessions, SQLite copies them -------


async def _write_templates(service: Any, app: str, events: int) -> None:
    try:
        for ending in ("healthy", "missing", "pending"):
            session = await service.create_session(
                app_name=app, user_id="template", session_id=f"template-{ending}"
            )
            for event in seed_scan.template_events(events, ending):
                await service.append_event(session, event)
    finally:
        await close_session_service(service)


def _copy_in_sqlite(path: Path, app: str, sessions: int) -> dict[str, int]:
    """Copies the template sessions inside the file: the rows ADK wrote, new keys.

    Event ids and call ids repeat across sessions, as they may in a real
    store (ADK keys events by session).
    """
    expected = {"sessions": 3, "missing_sessions": 1, "pending_sessions": 1}
    with sqlite3.connect(path) as connection:
        session_columns = [r[1] for r in connection.execute("PRAGMA table_info(sessions)")]
        event_columns = [r[1] for r in connection.execute("PRAGMA table_info(events)")]
        select_session = ", ".join("?" if c in ("user_id", "id") else c for c in session_columns)
        select_event = ", ".join(
            "?" if c in ("user_id", "session_id") else c for c in event_columns
        )
        session_rows = []
        event_rows = []
        for n in range(sessions - 3):
            ending = "missing" if n % 20 == 0 else "pending" if n % 50 == 1 else "healthy"
            expected["sessions"] += 1
            expected["missing_sessions"] += ending == "missing"
            expected["pending_sessions"] += ending == "pending"
            user, session = f"user-{n % 100:04d}", f"s-{n:07d}"
            session_rows.append((user, session, f"template-{ending}"))
            event_rows.append((user, session, f"template-{ending}"))
        connection.executemany(
            f"INSERT INTO sessions ({', '.join(session_columns)}) "
            f"SELECT {select_session} FROM sessions WHERE app_name = '{app}' AND id = ?",
            session_rows,
        )
        connection.executemany(
            f"INSERT INTO events ({', '.join(event_columns)}) "
            f"SELECT {select_event} FROM events WHERE app_name = '{app}' AND session_id = ?",
            event_rows,
        )
        connection.execute("ANALYZE")
    return expected


def seed_sqlite(kind: str, path: Path, app: str, sessions: int, events: int) -> dict[str, int]:
    if kind == "sqlite":
        from google.adk.sessions.sqlite_session_service import SqliteSessionService

        service: Any = SqliteSessionService(db_path=str(path))
    else:
        from google.adk.sessions.database_session_service import DatabaseSessionService

        service = DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{path}")
    asyncio.run(_write_templates(service, app, events))
    return _copy_in_sqlite(path, app, sessions)


# -- issue 25's form: whole processes, start-up included ---------------------------


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f}/{five:.1f}/{fifteen:.1f}"


def issue_form(
    database: str, app: str, sessions: int, events: int, percent: float, reuse: bool,
    with_loop: bool = True, jobs: list[int] | None = None, rounds: int = 1,
) -> dict[str, Any]:  # fmt: skip
    """The scan against the get_session loop at one broken share, both in this run.

    Each is the whole console-script process (start-up included); the floor
    is one raw asyncpg read of the rows the scan keeps (session keys and the
    rows naming a call, a result or a rewind). Load average (1/5/15 min) is
    printed before each process: the machine is shared. Without `with_loop`
    only the floor and the scan run (the loop takes about an hour). The scan
    runs once per `jobs` value (``--jobs``; the first is the one compared
    with the loop), and floor and scans `rounds` times, interleaved.
    """
    expected = asyncio.run(
        seed_postgres(seed_args(database, app, sessions, events, percent), reuse)
    )
    url = seed_scan.adk_url(database)
    jobs = jobs or [1]
    loads: dict[str, Any] = {}
    floors: list[float] = []
    by_jobs: dict[int, list[Run]] = {n: [] for n in jobs}
    for round_number in range(rounds):
        suffix = f" #{round_number + 1}" if rounds > 1 else ""
        loads[f"floor{suffix}"] = load()
        floors.append(asyncio.run(pg_floor(database, app, every_row=False))["filtered"])
        for n in jobs:
            label = "scan" if n == 1 else f"scan --jobs {n}"
            loads[f"{label}{suffix}"] = load()
            extra = () if n == 1 else ("--jobs", str(n))
            one = run_scan(f"{label}{suffix}", url, app, *extra)
            check_counts(one, expected)
            by_jobs[n].append(one)
    floor = sorted(floors)[len(floors) // 2]
    scan = by_jobs[jobs[0]][0]
    runs = [one for round_runs in zip(*by_jobs.values(), strict=True) for one in round_runs]
    if with_loop:
        loads["loop"] = load()
        loop = run_scan("get_session loop", url, app, "--reader", "get-session")
        check_counts(loop, expected)
        runs.append(loop)
    loads["end"] = load()
    broken = expected["missing_sessions"] + expected["pending_sessions"]
    figures = {
        "sessions": expected["sessions"],
        "events": events,
        "broken_percent": 100 * broken / expected["sessions"],
        "floor_seconds": floor,
        "floor_rounds": floors,
        "runs": {r.label: {k: v for k, v in asdict(r).items() if k != "report"} for r in runs},
        "scanning_vs_floor": ratio(scan.scanning, floor),
        "wall_vs_floor": ratio(scan.wall, floor),
        "scanning_vs_floor_by_jobs": {
            n: [ratio(r.scanning, f) for r, f in zip(rs, floors, strict=True)]
            for n, rs in by_jobs.items()
        },
        "load_average": loads,
    }
    print(
        f"\nPostgreSQL {expected['sessions']:,} x {events}, {figures['broken_percent']:.1f}% "
        f"broken ({broken:,} sessions); floor {' / '.join(f'{f:.2f}' for f in floors)} s",
        flush=True,
    )
    for run in runs:
        print(
            f"  {run.label:20} wall {run.wall:8.2f} s  scanning {run.scanning:8.2f} s  "
            f"CPU {run.cpu:8.2f} s  peak RSS {run.peak_rss_mb:6.1f} MB "
            f"(workers {run.worker_peak_rss_mb:6.1f} MB)",
            flush=True,
        )
    for n, ratios in figures["scanning_vs_floor_by_jobs"].items():
        print(
            f"  --jobs {n}: scanning / floor of its round: "
            f"{', '.join(f'{r:.2f}x' for r in ratios)}",
            flush=True,
        )
    versus_loop = ""
    if with_loop:
        figures["wall_ratio"] = ratio(loop.wall, scan.wall)
        figures["cpu_ratio"] = ratio(loop.cpu, scan.cpu)
        versus_loop = (
            f"scan vs loop: {figures['wall_ratio']:.1f}x wall, {figures['cpu_ratio']:.1f}x CPU; "
        )
    print(
        f"  {versus_loop}scan = {figures['scanning_vs_floor']:.2f}x the floor scanning "
        f"({figures['wall_vs_floor']:.2f}x with start-up); load average {loads}",
        flush=True,
    )
    return figures


def million_store(
    database: str, app: str, sessions: int, events: int, percent: float, sample: int,
    reuse: bool, full_loop: bool,
) -> dict[str, Any]:  # fmt: skip
    """The scan of a store of `sessions` measured; the loop measured or projected.

    Unless `full_loop`, the loop is projected from two processes of the same
    run: one reading shard 0/`sample` of the store (every session listed, a
    `sample`-th read) and one listing only (``--since`` in the future: the
    same listing, nothing read); projected = listing + `sample` x (shard -
    listing), for wall time and CPU alike.
    """
    expected = asyncio.run(
        seed_postgres(seed_args(database, app, sessions, events, percent), reuse)
    )
    url = seed_scan.adk_url(database)
    loads = {"scan": load()}
    scan = run_scan("scan", url, app)
    check_counts(scan, expected)
    figures: dict[str, Any] = {"sessions": expected["sessions"], "events": events}
    figures["scan"] = {k: v for k, v in asdict(scan).items() if k != "report"}
    loads["loop"] = load()
    loop_flag = ("--reader", "get-session")
    if full_loop:
        loop = run_scan("get_session loop", url, app, *loop_flag)
        check_counts(loop, expected)
        loop_wall, loop_cpu, how = loop.wall, loop.cpu, "measured"
    else:
        shard = run_scan("loop, one shard", url, app, *loop_flag, "--shard", f"0/{sample}")
        listing = run_scan("loop, listing only", url, app, *loop_flag, "--since", "2100-01-01")
        loop_wall = listing.wall + sample * (shard.wall - listing.wall)
        loop_cpu = listing.cpu + sample * (shard.cpu - listing.cpu)
        how = f"projected from shard 0/{sample} ({shard.sessions:,} sessions)"
        figures["loop_sample"] = {
            r.label: {k: v for k, v in asdict(r).items() if k != "report"} for r in (shard, listing)
        }
    loads["end"] = load()
    figures.update(
        loop_wall=loop_wall, loop_cpu=loop_cpu, loop_how=how, load_average=loads,
        wall_ratio=ratio(loop_wall, scan.wall), cpu_ratio=ratio(loop_cpu, scan.cpu),
    )  # fmt: skip
    print(
        f"\nPostgreSQL {expected['sessions']:,} x {events}: scan wall {scan.wall:.1f} s, "
        f"scanning {scan.scanning:.1f} s, CPU {scan.cpu:.1f} s, peak RSS "
        f"{scan.peak_rss_mb:.0f} MB ({scan.sessions / scan.scanning:,.0f} sessions/s); "
        f"get_session loop {how}: wall {loop_wall:.0f} s, CPU {loop_cpu:.0f} s; "
        f"{figures['wall_ratio']:.1f}x wall, {figures['cpu_ratio']:.1f}x CPU; "
        f"load average {loads}",
        flush=True,
    )
    return figures


# -- the run ----------------------------------------------------------------------


def ratio(slow: float, fast: float) -> float:
    return slow / fast if fast > 0 else math.inf


def compare(label: str, url: str, app: str, expected: dict[str, int], floor: float) -> dict:
    runs = {
        "default": run_scan("default", url, app),
        "strict": run_scan("--strict", url, app, "--strict"),
        "get_session": run_scan("get_session loop", url, app, "--reader", "get-session"),
    }
    for run in runs.values():
        check_counts(run, expected)
    loop = runs["get_session"]
    figures = {
        "store": label,
        "sessions": expected["sessions"],
        "floor_seconds": floor,
        "runs": {
            name: {k: v for k, v in asdict(r).items() if k != "report"} for name, r in runs.items()
        },
        "default_vs_loop_wall": ratio(loop.wall, runs["default"].wall),
        "default_vs_loop_scanning": ratio(loop.scanning, runs["default"].scanning),
        "default_vs_loop_cpu": ratio(loop.cpu, runs["default"].cpu),
        "strict_vs_loop_wall": ratio(loop.wall, runs["strict"].wall),
        "strict_vs_loop_cpu": ratio(loop.cpu, runs["strict"].cpu),
        "default_vs_floor": ratio(runs["default"].scanning, floor),
    }
    print(f"\n{label}: {expected['sessions']:,} sessions; floor {floor:.2f} s", flush=True)
    for name, run in runs.items():
        print(
            f"  {name:12} wall {run.wall:7.2f} s  scanning {run.scanning:7.2f} s  "
            f"CPU {run.cpu:7.2f} s  peak RSS {run.peak_rss_mb:6.1f} MB  "
            f"{run.sessions / max(run.scanning, 1e-9):8,.0f} sessions/s",
            flush=True,
        )
    print(
        f"  default vs get_session loop: {figures['default_vs_loop_wall']:.1f}x wall, "
        f"{figures['default_vs_loop_scanning']:.1f}x scanning, "
        f"{figures['default_vs_loop_cpu']:.1f}x CPU; --strict: "
        f"{figures['strict_vs_loop_wall']:.1f}x wall, {figures['strict_vs_loop_cpu']:.1f}x CPU; "
        f"default = {figures['default_vs_floor']:.1f}x the floor",
        flush=True,
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--db", default="adk_pairing_scan_bench")
    parser.add_argument("--app", default="scan_bench")
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=50)
    parser.add_argument("--sqlite-sessions", type=int, default=2_000)
    parser.add_argument("--big-sessions", type=int, default=100_000)
    parser.add_argument("--big-events", type=int, default=10)
    parser.add_argument("--issue-sessions", type=int, default=100_000)
    parser.add_argument("--issue-events", type=int, default=20)
    parser.add_argument(
        "--broken-percent", type=float, nargs="+", default=[1.0, 7.0],
        help="issue 25's shares of broken sessions, one database and one comparison each",
    )  # fmt: skip
    parser.add_argument(
        "--no-loop", action="store_true",
        help="issue part: the floor and the scan only, not the get_session loop (about an hour)",
    )  # fmt: skip
    parser.add_argument(
        "--scan-jobs",
        nargs="+",
        type=int,
        default=[1, 2, 4],
        help="issue part: the scan's --jobs values, each run in turn (the first is the one "
        "compared with the loop)",
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="issue part: floor and scans this many times"
    )
    parser.add_argument("--million-sessions", type=int, default=1_000_000)
    parser.add_argument("--million-events", type=int, default=10)
    parser.add_argument("--million-broken-percent", type=float, default=1.0)
    parser.add_argument(
        "--million-sample", type=int, default=100,
        help="project the loop at --million-sessions from shard 0/N of it",
    )  # fmt: skip
    parser.add_argument("--million-full-loop", action="store_true", help="measure, not project")
    parser.add_argument("--reuse", action="store_true", help="keep a database already seeded")
    parser.add_argument("--keep", action="store_true", help="do not drop the databases")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=PARTS,
        default=list(PARTS),
        help="run only these parts (each part's ratios come from its own run)",
    )
    args = parser.parse_args()
    big_db = f"{args.db}_big"
    share_dbs = {p: f"{args.db}_p{p:g}".replace(".", "_") for p in args.broken_percent}
    million_db = f"{args.db}_million"
    figures: dict[str, Any] = {}
    try:
        if "issue" in args.only:
            figures["issue"] = {
                f"{percent:g}%": issue_form(
                    share_dbs[percent], args.app, args.issue_sessions, args.issue_events,
                    percent, args.reuse, not args.no_loop, args.scan_jobs, args.rounds,
                )
                for percent in args.broken_percent
            }  # fmt: skip
        if "million" in args.only:
            figures["million"] = million_store(
                million_db, args.app, args.million_sessions, args.million_events,
                args.million_broken_percent, args.million_sample, args.reuse,
                args.million_full_loop,
            )  # fmt: skip
        if "postgres" in args.only or "scale" in args.only:
            main_seed = seed_args(args.db, args.app, args.sessions, args.events)
            expected = asyncio.run(seed_postgres(main_seed, args.reuse))
        if "postgres" in args.only:
            url = seed_scan.adk_url(args.db)
            floors = asyncio.run(pg_floor(args.db, args.app))
            pg = compare(
                f"PostgreSQL DatabaseSessionService {args.sessions:,} x {args.events}",
                url, args.app, expected, floors["filtered"],
            )  # fmt: skip
            pg["floor_every_row_seconds"] = floors["every_row"]
            print(f"  (one raw read of every event row: {floors['every_row']:.2f} s)")
            figures["postgres"] = pg

        with tempfile.TemporaryDirectory(prefix="adk-pairing-scan-bench-") as scratch:
            for kind, scheme, label in (
                ("database", "sqlite+aiosqlite", "DatabaseSessionService on SQLite"),
                ("sqlite", "sqlite", "SqliteSessionService"),
            ):
                if kind not in args.only:
                    continue
                path = Path(scratch) / f"{kind}.db"
                counts = seed_sqlite(kind, path, args.app, args.sqlite_sessions, args.events)
                figures[kind] = compare(
                    f"{label} {args.sqlite_sessions:,} x {args.events}",
                    f"{scheme}:///{path}", args.app, counts, sqlite_floor(path, args.app),
                )  # fmt: skip

        if "scale" not in args.only:
            return
        big_seed = seed_args(big_db, args.app, args.big_sessions, args.big_events)
        big_expected = asyncio.run(seed_postgres(big_seed, args.reuse))
        small_run = run_scan("default", seed_scan.adk_url(args.db), args.app)
        check_counts(small_run, expected)
        big = run_scan("default", seed_scan.adk_url(big_db), args.app)
        check_counts(big, big_expected)
        small = asdict(small_run)
        growth_mb = (big.peak_rss_mb - small["peak_rss_mb"]) / (big.sessions - small["sessions"])
        rate = big.sessions / big.scanning
        million = 1_000_000
        figures["scale"] = {
            "big_sessions": big.sessions,
            "big_events": args.big_events,
            "big_peak_rss_mb": big.peak_rss_mb,
            "big_scanning_seconds": big.scanning,
            "big_rate": rate,
            "small_peak_rss_mb": small["peak_rss_mb"],
            "rss_growth_mb_per_session": growth_mb,
            "projected_million_seconds": million / rate,
            # A peak that did not grow with the store (the batch decides it) stays where it is.
            "projected_million_rss_mb": big.peak_rss_mb
            + max(growth_mb, 0.0) * (million - big.sessions),
        }
        scale = figures["scale"]
        print(
            f"\npeak RSS of the default mode: {small['peak_rss_mb']:.1f} MB at "
            f"{small['sessions']:,} sessions x {args.events}, {big.peak_rss_mb:.1f} MB at "
            f"{big.sessions:,} x {args.big_events} ({growth_mb * 1024:.3f} KB per session more); "
            f"{rate:,.0f} sessions/s there.\nprojection for 1,000,000 sessions x "
            f"{args.big_events}: {scale['projected_million_seconds'] / 60:.1f} min scanning, "
            f"{scale['projected_million_rss_mb']:.0f} MB peak RSS"
        )
    finally:
        if not args.keep:
            for database in (args.db, big_db, million_db, *share_dbs.values()):
                asyncio.run(drop_database(database))
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
