"""Seeds a PostgreSQL store with many ADK sessions fast, for timing ``adk-pairing scan``.

Usage:

    .venv/bin/python benchmarks/seed_scan.py                      # 10,000 x 50, fresh database
    .venv/bin/python benchmarks/seed_scan.py --sessions 200 --events 20 --db adk_scan_small
    .venv/bin/python benchmarks/seed_scan.py --time-scan 1 8      # ... then time the scan
    .venv/bin/python benchmarks/seed_scan.py --no-seed --time-scan 1 8 --latency-ms 1
    .venv/bin/python benchmarks/seed_scan.py --no-seed --compare-readers 2   # direct vs get_session

How the rows are made so that they are exactly what ADK would store:

* the tables (and ADK's schema-version row) are created by ADK itself,
  ``DatabaseSessionService.prepare_tables()``;
* the first session is written through ``DatabaseSessionService`` (its real
  ``create_session`` / ``append_event``);
* every other session copies that session's rows as stored -- ``event_data``
  JSONB, ``timestamp`` and ``invocation_id`` columns -- with new session,
  event, invocation and call ids and shifted times, and is loaded with
  PostgreSQL's COPY in batches;
* at the end a few copied sessions are read back through ADK and must have
  the same pairing status as the template they were copied from.

Every ``--missing-every``-th session ends with a call that has no result
(missing), every ``--pending-every``-th with a long-running call (pending);
the script prints the counts a scan must report.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import resource
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
from google.adk.events.event import Event
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.genai import types

from adk_pairing import analyze
from adk_pairing.adk import close_session_service
from adk_pairing.cli._fast import parse_json

try:
    import orjson

    def dump_json(data: Any) -> str:
        return orjson.dumps(data).decode()
except ImportError:  # pragma: no cover - litellm brings orjson
    dump_json = json.dumps

HOST, PORT, USER = "127.0.0.1", 5432, "postgres"
BATCH_SESSIONS = 500


def _plain_url(database: str) -> str:
    return f"postgresql://{USER}@{HOST}:{PORT}/{database}"


def adk_url(database: str) -> str:
    return f"postgresql+asyncpg://{USER}@{HOST}:{PORT}/{database}"


def template_events(count: int, ending: str) -> list[Event]:
    """`count` events of a tool-using conversation; the last one sets its status."""
    base = time.time() - 3_600
    events: list[Event] = []

    def add(author: str, role: str, part: types.Part, **extra: Any) -> None:
        events.append(
            Event(
                invocation_id=f"inv-{len(events) // 4}",
                author=author,
                timestamp=base + len(events),
                content=types.Content(role=role, parts=[part]),
                **extra,
            )
        )

    while len(events) < count - 1:
        turn = len(events) // 4
        step = len(events) % 4
        if step == 0:
            add("user", "user", types.Part(text=f"question {turn}: where is order {turn}?"))
        elif step == 1:
            call = types.FunctionCall(id=f"call-{turn}", name="lookup", args={"order": turn})
            add("agent", "model", types.Part(function_call=call))
        elif step == 2:
            response = types.FunctionResponse(
                id=f"call-{turn}", name="lookup", response={"status": "shipped", "order": turn}
            )
            add("agent", "user", types.Part(function_response=response))
        else:
            add("agent", "model", types.Part(text=f"Order {turn} has shipped."))
    if ending == "missing":
        call = types.FunctionCall(id="call-last", name="refund", args={"order": 1})
        add("agent", "model", types.Part(function_call=call))
    elif ending == "pending":
        call = types.FunctionCall(id="call-last", name="render_report", args={})
        add("agent", "model", types.Part(function_call=call), long_running_tool_ids={"call-last"})
    else:
        add("agent", "model", types.Part(text="Anything else?"))
    return events


async def recreate_database(database: str) -> None:
    admin = await asyncpg.connect(_plain_url("postgres"))
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        await admin.execute(f'CREATE DATABASE "{database}"')
    finally:
        await admin.close()


async def write_templates(database: str, app: str, events: int) -> dict[str, str]:
    """One session per ending, written through ADK; returns ending -> session id."""
    service = DatabaseSessionService(db_url=adk_url(database))
    try:
        # Public from google-adk 2.x; older versions prepare inside create_session.
        prepare = getattr(service, "prepare_tables", None)
        if prepare is not None:
            await prepare()
        ids: dict[str, str] = {}
        for ending in ("healthy", "missing", "pending"):
            session = await service.create_session(
                app_name=app, user_id="template", session_id=f"template-{ending}"
            )
            for event in template_events(events, ending):
                await service.append_event(session, event)
            ids[ending] = session.id
        return ids
    finally:
        await close_session_service(service)


def _rewrite_ids(data: Any, mapping: dict[str, str]) -> Any:
    """Replaces call ids inside an event_data document (call and response parts)."""
    if isinstance(data, dict):
        return {
            key: (mapping.get(value, value) if key == "id" and isinstance(value, str) else
                  [mapping.get(v, v) for v in value] if key == "long_running_tool_ids" else
                  _rewrite_ids(value, mapping))
            for key, value in data.items()
        }  # fmt: skip
    if isinstance(data, list):
        return [_rewrite_ids(item, mapping) for item in data]
    return data


async def copy_sessions(
    database: str, app: str, count: int, users: int, missing_every: int, pending_every: int
) -> dict[str, int]:
    """COPYs `count` sessions shaped like the templates; returns the expected scan counts."""
    connection = await asyncpg.connect(_plain_url(database))
    try:
        templates: dict[str, list[asyncpg.Record]] = {}
        for ending in ("healthy", "missing", "pending"):
            templates[ending] = await connection.fetch(
                "SELECT id, invocation_id, timestamp, event_data FROM events "
                "WHERE app_name = $1 AND session_id = $2 ORDER BY timestamp, id",
                app,
                f"template-{ending}",
            )
        # The templates themselves are sessions of the app too.
        expected = {"sessions": 3, "missing_sessions": 1, "pending_sessions": 1}
        now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
        session_rows: list[tuple[Any, ...]] = []
        event_rows: list[tuple[Any, ...]] = []

        async def flush() -> None:
            await connection.copy_records_to_table(
                "sessions",
                records=session_rows,
                columns=["app_name", "user_id", "id", "state", "create_time", "update_time"],
            )
            await connection.copy_records_to_table(
                "events",
                records=event_rows,
                columns=[
                    "id", "app_name", "user_id", "session_id", "invocation_id",
                    "timestamp", "event_data",
                ],
            )  # fmt: skip
            session_rows.clear()
            event_rows.clear()

        for n in range(count - 3):
            ending = (
                "missing"
                if n % missing_every == 0
                else "pending"
                if n % pending_every == 1
                else "healthy"
            )
            expected["sessions"] += 1
            expected["missing_sessions"] += ending == "missing"
            expected["pending_sessions"] += ending == "pending"
            session_id = f"s-{n:07d}"
            user_id = f"user-{n % users:04d}"
            shift = datetime.timedelta(seconds=n)
            mapping: dict[str, str] = {}
            invocations: dict[str, str] = {}
            last_time = now
            for row in templates[ending]:
                data = parse_json(row["event_data"])
                for part in (data.get("content") or {}).get("parts") or []:
                    for key in ("function_call", "function_response"):
                        if key in part and part[key].get("id"):
                            old = part[key]["id"]
                            mapping.setdefault(old, f"{old}-{uuid.uuid4().hex[:8]}")
                data = _rewrite_ids(data, mapping)  # a fresh parse: nothing shared
                event_id = str(uuid.uuid4())
                invocation = invocations.setdefault(row["invocation_id"], f"e-{uuid.uuid4()}")
                stamp = row["timestamp"] + shift
                data["id"] = event_id
                data["invocation_id"] = invocation
                data["timestamp"] = stamp.replace(tzinfo=datetime.UTC).timestamp()
                event_rows.append(
                    (event_id, app, user_id, session_id, invocation, stamp, dump_json(data))
                )
                last_time = stamp
            session_rows.append((app, user_id, session_id, "{}", now, last_time))
            if len(session_rows) >= BATCH_SESSIONS:
                await flush()
        if session_rows:
            await flush()
        await connection.execute("ANALYZE sessions; ANALYZE events")
        return expected
    finally:
        await connection.close()


async def verify(database: str, app: str, events: int) -> None:
    """Reads copied sessions back through ADK: they must parse and keep their status."""
    connection = await asyncpg.connect(_plain_url(database))
    try:
        samples = await connection.fetch(
            "SELECT user_id, id FROM sessions WHERE app_name = $1 AND id LIKE 's-%' "
            "ORDER BY id LIMIT 3",
            app,
        )
    finally:
        await connection.close()
    service = DatabaseSessionService(db_url=adk_url(database))
    try:
        statuses = []
        for user_id, session_id in samples:
            session = await service.get_session(
                app_name=app, user_id=user_id, session_id=session_id
            )
            assert session is not None and len(session.events) == events, session_id
            report = analyze(session.events)
            statuses.append(
                "missing" if report.missing else "pending" if report.pending else "healthy"
            )
        assert statuses == ["missing", "pending", "healthy"], statuses
    finally:
        await close_session_service(service)


class LatencyProxy:
    """A TCP proxy to PostgreSQL that delays every chunk by `delay_ms` each way.

    It stands in for a server across a network: on localhost a scan is bound
    by CPU, and the benefit of `--concurrency` (hiding round trips) only shows
    when each round trip costs time. It runs in this process, so it affects
    only the connections of the scan being timed.
    """

    def __init__(self, delay_ms: float) -> None:
        self.delay = delay_ms / 1000
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._handle, HOST, 0)
        return self.server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def read() -> None:
            while True:
                data = await reader.read(65_536)
                await queue.put((loop.time() + self.delay, data))
                if not data:
                    return

        async def write() -> None:
            while True:
                due, data = await queue.get()
                await asyncio.sleep(max(0.0, due - loop.time()))
                if not data:
                    writer.close()
                    return
                writer.write(data)
                await writer.drain()

        await asyncio.gather(read(), write())

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection(HOST, PORT)
        await asyncio.gather(
            self._forward(client_r, server_w),
            self._forward(server_r, client_w),
            return_exceptions=True,
        )


async def time_scan(
    database: str, app: str, concurrency: int, latency_ms: float
) -> tuple[float, dict[str, Any]]:
    """Runs the real console script and returns (wall seconds, its JSON)."""
    script = Path(sys.executable).with_name("adk-pairing")
    proxy = LatencyProxy(latency_ms) if latency_ms > 0 else None
    url = adk_url(database)
    if proxy is not None:
        port = await proxy.start()
        url = url.replace(f"{HOST}:{PORT}", f"{HOST}:{port}")
    try:
        started = time.perf_counter()
        process = await asyncio.create_subprocess_exec(
            str(script), "scan", url, "--app", app, "--json", "--concurrency", str(concurrency),
            "--reader", "get-session",  # concurrency is the get_session path's knob
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        stdout, stderr = await process.communicate()
        elapsed = time.perf_counter() - started
    finally:
        if proxy is not None:
            await proxy.stop()
    if process.returncode not in (0, 1):
        raise SystemExit(f"scan failed ({process.returncode}): {stderr.decode().strip()}")
    return elapsed, json.loads(stdout)


def time_reader(database: str, app: str, reader: str) -> tuple[float, float, dict[str, Any]]:
    """Runs the console script with ``--reader``; returns (wall s, CPU s of the scan, JSON).

    CPU seconds are the child's user + system time (``RUSAGE_CHILDREN``): on a
    machine shared with other work they move less than wall time does.
    """
    script = Path(sys.executable).with_name("adk-pairing")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [str(script), "scan", adk_url(database), "--app", app, "--json", "--reader", reader],
        capture_output=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"scan failed ({done.returncode}): {done.stderr.decode().strip()}")
    return elapsed, cpu, json.loads(done.stdout)


def compare_readers(args: argparse.Namespace, expected: dict[str, int], rounds: int) -> None:
    """The direct reader against get_session, interleaved in one run (same load on both)."""
    figures: dict[str, list[tuple[float, float, float]]] = {"direct": [], "get-session": []}
    for round_number in range(1, rounds + 1):
        for reader in ("direct", "get-session"):
            wall, cpu, report = time_reader(args.db, args.app, reader)
            ok = (
                report["sessions_scanned"] == expected["sessions"]
                and report["sessions_with_missing"] == expected["missing_sessions"]
                and report["sessions_with_pending"] == expected["pending_sessions"]
            )
            scanning = report["elapsed_seconds"]
            figures[reader].append((scanning, wall, cpu))
            print(
                f"round {round_number} --reader {reader:11}: {scanning:6.1f} s scanning "
                f"({report['sessions_scanned'] / scanning:,.0f} sessions/s), {wall:6.1f} s wall, "
                f"{cpu:6.1f} s CPU; read by {report['reader']}; "
                f"counts {'match' if ok else 'DO NOT match'} the seed",
                flush=True,
            )
            if not ok:
                raise SystemExit("counts differ from the seed")
    best = {reader: min(rows) for reader, rows in figures.items()}
    direct, slow = best["direct"], best["get-session"]
    sessions = expected["sessions"]
    print(
        f"best of {rounds}: direct {sessions / direct[0]:,.0f} sessions/s, get_session "
        f"{sessions / slow[0]:,.0f} sessions/s; ratio {slow[0] / direct[0]:.1f}x scanning time, "
        f"{slow[1] / direct[1]:.1f}x wall, {slow[2] / direct[2]:.1f}x CPU"
    )


def every_for(broken_percent: float) -> tuple[int, int]:
    """(missing_every, pending_every) giving `broken_percent` broken sessions, 5:2.

    7 % is every 20th missing and every 50th pending; 1 % every 140th and
    every 350th. The two never coincide while one is even and the other's
    offset odd, so the shares add up.
    """
    return round(140 / broken_percent), round(350 / broken_percent)


async def seed(args: argparse.Namespace) -> dict[str, int]:
    started = time.perf_counter()
    await recreate_database(args.db)
    await write_templates(args.db, args.app, args.events)
    expected = await copy_sessions(
        args.db, args.app, args.sessions, args.users, args.missing_every, args.pending_every
    )
    await verify(args.db, args.app, args.events)
    print(
        f"seeded {expected['sessions']:,} sessions x {args.events} events into "
        f"{adk_url(args.db)} app={args.app} in {time.perf_counter() - started:.1f} s; "
        f"a scan must find {expected['missing_sessions']:,} sessions with a missing call "
        f"and {expected['pending_sessions']:,} with a pending call"
    )
    return expected


async def expected_counts(args: argparse.Namespace) -> dict[str, int]:
    """The counts a scan must report, read back from an already seeded database."""
    connection = await asyncpg.connect(_plain_url(args.db))
    try:
        sessions = await connection.fetchval(
            "SELECT count(*) FROM sessions WHERE app_name = $1", args.app
        )
    finally:
        await connection.close()
    copies = sessions - 3
    missing = 1 + len(range(0, copies, args.missing_every))
    pending = 1 + sum(
        1 for n in range(copies) if n % args.missing_every != 0 and n % args.pending_every == 1
    )
    return {"sessions": sessions, "missing_sessions": missing, "pending_sessions": pending}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--db", default="adk_pairing_scan_bench", help="database to (re)create")
    parser.add_argument("--app", default="scan_bench")
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=50)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--missing-every", type=int, default=20)
    parser.add_argument("--pending-every", type=int, default=50)
    parser.add_argument(
        "--broken-percent",
        type=float,
        help="share of broken sessions (5/7 missing, 2/7 pending); sets the two --*-every",
    )
    parser.add_argument(
        "--time-scan",
        metavar="CONCURRENCY",
        nargs="*",
        type=int,
        help="after seeding, time `adk-pairing scan` at these concurrencies (default 8)",
    )
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="time the scan through a local proxy adding this delay each way (a remote server)",
    )
    parser.add_argument(
        "--no-seed", action="store_true", help="reuse the database seeded by an earlier run"
    )
    parser.add_argument(
        "--compare-readers",
        metavar="ROUNDS",
        type=int,
        help="time `scan --reader direct` against `--reader get-session`, interleaved",
    )
    args = parser.parse_args()
    if args.broken_percent is not None:
        args.missing_every, args.pending_every = every_for(args.broken_percent)
    if args.events < 5 or args.sessions < 3:
        parser.error("need at least 5 events and 3 sessions")
    expected = asyncio.run(expected_counts(args) if args.no_seed else seed(args))
    if args.compare_readers:
        compare_readers(args, expected, args.compare_readers)
    if args.time_scan is not None:
        for concurrency in args.time_scan or [8]:
            elapsed, report = asyncio.run(
                time_scan(args.db, args.app, concurrency, args.latency_ms)
            )
            ok = (
                report["sessions_scanned"] == expected["sessions"]
                and report["sessions_with_missing"] == expected["missing_sessions"]
                and report["sessions_with_pending"] == expected["pending_sessions"]
            )
            print(
                f"adk-pairing scan --reader get-session --concurrency {concurrency}"
                f"{f' (+{args.latency_ms:g} ms each way)' if args.latency_ms else ''}: "
                f"{elapsed:.1f} s wall "
                f"({report['elapsed_seconds']:.1f} s scanning), "
                f"{report['sessions_scanned'] / report['elapsed_seconds']:,.0f} sessions/s; "
                f"counts {'match' if ok else 'DO NOT match'} the seed"
            )


if __name__ == "__main__":
    main()
