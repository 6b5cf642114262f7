"""What shielding SQLite reads and appends from cancellation buys and costs.

Two measurements, each wrapped against unwrapped (and shielded against not) in the
same run, printed as ratios:

* **stress**: a read is cancelled after a random delay (0-3 ms: before, during or
  after its events query), then a write follows at once with a 0.2 s busy timeout,
  the cyclic garbage collector left on as in production. Counts the writes that
  failed with "database is locked" and the slowest write.
* **cost**: the median ratio of a shielded to an unshielded read through the
  decorator (and to the unwrapped read), over interleaved pairs; the same for
  appends (each appender writes its own session).

    .venv/bin/python benchmarks/shielded_reads.py [--cancels 300] [--rounds 300]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from google.adk.events.event import Event
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.genai import types
from settings import quiet_adk_pairing_logs
from sqlalchemy.exc import OperationalError

from adk_pairing import PairingSessionService

APP, USER = "app", "user"
BUSY_TIMEOUT_S = 0.2


def _text(index: int) -> Event:
    return Event(
        invocation_id=f"inv-{index}",
        author="agent",
        content=types.Content(role="model", parts=[types.Part(text=f"answer {index}")]),
    )


async def _store(path: Path, events: int) -> tuple[DatabaseSessionService, str]:
    store = DatabaseSessionService(
        db_url=f"sqlite+aiosqlite:///{path}", connect_args={"timeout": BUSY_TIMEOUT_S}
    )
    session = await store.create_session(app_name=APP, user_id=USER)
    for index in range(events):
        await store.append_event(session, _text(index))
    return store, session.id


async def stress(reader_kind: str, cancels: int, seed: int) -> tuple[int, float]:
    """(writes that failed as locked, slowest write in ms) over `cancels` cancelled reads."""
    chooser = random.Random(seed)
    with tempfile.TemporaryDirectory() as workdir:
        store, session_id = await _store(Path(workdir) / "s.db", 20)
        reader: BaseSessionService = (
            PairingSessionService(store) if reader_kind == "wrapped" else store
        )
        locked, slowest = 0, 0.0
        try:
            for index in range(cancels):
                read = asyncio.create_task(
                    reader.get_session(app_name=APP, user_id=USER, session_id=session_id)
                )
                await asyncio.sleep(chooser.uniform(0, 0.003))
                read.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await read
                started = time.perf_counter()
                try:
                    session = await store.get_session(
                        app_name=APP, user_id=USER, session_id=session_id
                    )
                    await store.append_event(session, _text(100 + index))
                except OperationalError as error:
                    if "locked" not in str(error):
                        raise
                    locked += 1
                slowest = max(slowest, time.perf_counter() - started)
        finally:
            if isinstance(reader, PairingSessionService):
                await reader.close()
            else:
                await store.close()
    return locked, slowest * 1000


async def _interleaved(
    calls: dict[str, Callable[[int], Awaitable[object]]], rounds: int
) -> dict[str, float]:
    """Median time of each call (us) and of shielded over unshielded and unwrapped,
    over `rounds` rounds that run every call once in a shuffled order."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    ratios: list[float] = []
    to_unwrapped: list[float] = []
    for round_number in range(rounds + 10):
        names = list(calls)
        random.Random(round_number).shuffle(names)
        took = {}
        for name in names:
            started = time.perf_counter()
            await calls[name](round_number)
            took[name] = time.perf_counter() - started
        if round_number < 10:
            continue  # warm-up
        for name, seconds in took.items():
            times[name].append(seconds)
        ratios.append(took["shielded"] / took["unshielded"])
        to_unwrapped.append(took["shielded"] / took["unwrapped"])
    medians = {name: statistics.median(values) * 1e6 for name, values in times.items()}
    return {
        **medians,
        "shielded/unshielded": statistics.median(ratios),
        "shielded/unwrapped": statistics.median(to_unwrapped),
    }


def _services(store: DatabaseSessionService) -> dict[str, BaseSessionService]:
    shielded = PairingSessionService(store)
    unshielded = PairingSessionService(store)
    unshielded._shield_calls = False  # the same decorator, calls not shielded
    assert shielded._shield_calls
    return {"unwrapped": store, "shielded": shielded, "unshielded": unshielded}


async def cost(events: int, rounds: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as workdir:
        store, session_id = await _store(Path(workdir) / "s.db", events)

        def reader(service: BaseSessionService) -> Callable[[int], Awaitable[object]]:
            return lambda _: service.get_session(app_name=APP, user_id=USER, session_id=session_id)

        row = await _interleaved(
            {name: reader(service) for name, service in _services(store).items()}, rounds
        )
        await store.close()
    return row


async def append_cost(rounds: int) -> dict[str, float]:
    """Each service appends to a session of its own (a view for the decorators)."""
    with tempfile.TemporaryDirectory() as workdir:
        store, _ = await _store(Path(workdir) / "s.db", 0)

        async def appender(service: BaseSessionService) -> Callable[[int], Awaitable[object]]:
            session = await service.create_session(app_name=APP, user_id=USER)
            return lambda index: service.append_event(session, _text(index))

        services = _services(store)
        row = await _interleaved(
            {name: await appender(service) for name, service in services.items()}, rounds
        )
        await store.close()
    return row


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cancels", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    quiet_adk_pairing_logs()
    print(f"stress: {args.cancels} reads cancelled at 0-3 ms, each followed by a write")
    for kind in ("unwrapped", "wrapped"):
        locked, slowest = await stress(kind, args.cancels, args.seed)
        print(f"  {kind:9}  writes locked: {locked:4}  slowest write: {slowest:7.1f} ms")
    print(f"cost: median of {args.rounds} interleaved reads, SQLite file")
    for events in (10, 100, 1000):
        row = await cost(events, args.rounds if events < 1000 else max(args.rounds // 5, 20))
        print(
            f"  {events:5} events: unwrapped {row['unwrapped']:8.0f} us  "
            f"unshielded {row['unshielded']:8.0f} us  shielded {row['shielded']:8.0f} us  "
            f"shielded/unshielded {row['shielded/unshielded']:.3f}  "
            f"shielded/unwrapped {row['shielded/unwrapped']:.3f}"
        )
    row = await append_cost(args.rounds)
    print(
        f"appends: median of {args.rounds} interleaved, SQLite file: "
        f"unwrapped {row['unwrapped']:8.0f} us  unshielded {row['unshielded']:8.0f} us  "
        f"shielded {row['shielded']:8.0f} us  "
        f"shielded/unshielded {row['shielded/unshielded']:.3f}  "
        f"shielded/unwrapped {row['shielded/unwrapped']:.3f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
