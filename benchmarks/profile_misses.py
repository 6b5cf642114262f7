"""Profiles the paths behind the targets RESULTS.md reports as missed, with pyinstrument.

Usage (``make profile PROFILE_ARGS="..."`` runs the same):

    .venv/bin/python benchmarks/profile_misses.py                  # every path
    .venv/bin/python benchmarks/profile_misses.py cold-read --size 10000
    .venv/bin/python benchmarks/profile_misses.py wide-turn --html /tmp/profiles

Each path runs the same code the benchmark times, under pyinstrument's
sampling profiler, and prints the call tree of the decorator's share:

* ``cold-read``: `PairingSessionService` repairing freshly loaded sessions of
  `SqliteSessionService` with the analysis cache off (the first read of a
  session in a process);
* ``append``: a user / call / response / answer cycle appended through a view
  over `InMemorySessionService` (the store's own share included);
* ``wide-turn``: one event with ``size / 2`` parallel calls answered one
  response per event, appended through a view (incremental upkeep);
* ``pending-run``: ``size / 2`` long-running calls answered oldest first,
  appended through a view (incremental upkeep);
* ``plugin-wide-turn``, ``plugin-idless-turn``, ``plugin-reused-ids``: the
  turn-cost benchmark's plugin-only turns (`turn_cost.TURN_SHAPES`: one turn of
  ``size / 2`` parallel calls with a merged answer, ``size / 2`` id-less calls
  of one name, ids reused every turn) on `SqliteSessionService`; only
  `PairingPlugin`'s own callback is profiled, over `PLUGIN_TURNS` turns after
  a first one, so the tree splits what the plugin adds to those turns among its steps.

Stores are read outside the profiler where the path allows it (cold reads),
and the upkeep paths run over a list-backed store that does no work, so the
trees show the decorator rather than SQLite and pydantic-core frames.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from itertools import islice
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # run as a script from anywhere, or imported by a test
    sys.path.insert(0, str(HERE))

from pyinstrument import Profiler  # noqa: E402
from settings import quiet_adk_pairing_logs  # noqa: E402
from suites import _incremental  # noqa: E402
from turn_cost import TURN_SHAPES, ToolThenAnswerModel  # noqa: E402
from workloads import (  # noqa: E402
    APP,
    CORE_SHAPES,
    USER,
    Clock,
    realistic_history,
    turn_cycle,
)

from adk_pairing.shells.service import PairingSessionService  # noqa: E402

#: Sampling interval: fine enough for paths that take a few milliseconds.
INTERVAL_S = 0.0002


async def _cold_read(profiler: Profiler, size: int, rounds: int) -> None:
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    with tempfile.TemporaryDirectory() as folder:
        store = SqliteSessionService(str(Path(folder) / "sessions.db"))
        session = await store.create_session(app_name=APP, user_id=USER)
        for event in realistic_history(size, broken=True):
            await store.append_event(session, event)
        decorator = PairingSessionService(store, analysis_cache_size=0)
        for _ in range(rounds):
            stored = await store.get_session(app_name=APP, user_id=USER, session_id=session.id)
            # What get_session does after the store returns, and only that.
            profiler.start()
            decorator._view_or_stored(stored, log_missing=True, full_read=True)
            profiler.stop()


async def _append(profiler: Profiler, size: int, rounds: int) -> None:
    from google.adk.sessions import InMemorySessionService

    store = InMemorySessionService()
    session = await store.create_session(app_name=APP, user_id=USER)
    for event in realistic_history(size):
        await store.append_event(session, event)
    decorator = PairingSessionService(store)
    view = await decorator.get_session(app_name=APP, user_id=USER, session_id=session.id)
    events = list(islice(turn_cycle(Clock(start=time.time())), rounds))
    # One window for all appends: each takes less than a sampling interval.
    profiler.start()
    for event in events:
        await decorator.append_event(view, event)
    profiler.stop()


async def _upkeep(profiler: Profiler, shape: str, size: int) -> None:
    events = CORE_SHAPES[shape](size)
    # The benchmark's own upkeep path. Its garbage collection before the
    # appends and its check against a fresh read after them show up as
    # branches of their own, beside `append_event`. Collected here first, so
    # that collection finds only what the path itself made: with the
    # collector paused, earlier paths' garbage would otherwise make it the
    # whole tree and hide the decorator's frames.
    gc.collect()
    profiler.start()
    await _incremental(events)
    profiler.stop()


#: The turns a plugin path profiles, after a first one that is not profiled.
PLUGIN_TURNS = 5


async def _plugin_turns(profiler: Profiler, size: int, *, shape_id: str) -> None:
    from backends import open_backend
    from turns import _run_turn, _runner

    from adk_pairing import PairingPlugin

    class ProfiledPlugin(PairingPlugin):
        async def before_model_callback(self, **kwargs):  # type: ignore[no-untyped-def]
            profiler.start()
            try:
                return await super().before_model_callback(**kwargs)
            finally:
                profiler.stop()

    shape = TURN_SHAPES[shape_id]
    async with open_backend("sqlite", pg_database="unused") as backend:
        session_id = await backend.seeded_session(APP, USER, shape.build(size))
        model = ToolThenAnswerModel(call_id=shape.call_id)
        runner = _runner(model, backend.service, (ProfiledPlugin(),))
        for turn in range(PLUGIN_TURNS + 1):
            await _run_turn(runner, session_id)
            if turn == 0:
                # The first turn remembers what later ones reuse: not what a turn pays.
                profiler.reset()


PathRunner = Callable[[Profiler, int], Awaitable[None]]

PATHS: dict[str, tuple[str, PathRunner, int]] = {
    "cold-read": (
        "cold get_session on SqliteSessionService, 1% unanswered (decorator only)",
        lambda p, size: _cold_read(p, size, rounds=30),
        1_000,
    ),
    "append": (
        "append_event cycle through a view on InMemorySessionService (whole call)",
        lambda p, size: _append(p, size, rounds=400),
        1_000,
    ),
    "wide-turn": (
        "incremental upkeep: parallel calls, one answer/event",
        lambda p, size: _upkeep(p, "parallel calls, one answer/event", size),
        20_000,
    ),
    "pending-run": (
        "incremental upkeep: long run of pending calls",
        lambda p, size: _upkeep(p, "long run of pending calls", size),
        100_000,
    ),
    **{
        name: (
            f"PairingPlugin's callback over {PLUGIN_TURNS} plugin-only turns: "
            f"{TURN_SHAPES[shape_id].label}",
            # Bound now: a lambda made in the loop would see its last shape only.
            partial(_plugin_turns, shape_id=shape_id),
            3_000,
        )
        for name, shape_id in (
            ("plugin-wide-turn", "core-parallel-merged"),
            ("plugin-idless-turn", "core-idless"),
            ("plugin-reused-ids", "reused-answered"),
        )
    },
}


def profile_path(name: str, size: int | None = None, interval: float = INTERVAL_S) -> Profiler:
    """Runs one path under a fresh profiler (collector paused, as the benchmark does)."""
    _, run_path, default_size = PATHS[name]
    profiler = Profiler(interval=interval, async_mode="disabled")
    gc.collect()
    gc.disable()
    try:
        asyncio.run(run_path(profiler, size or default_size))
    finally:
        gc.enable()
    return profiler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help=f"any of {', '.join(PATHS)} (default: all)")
    parser.add_argument("--size", type=int, help="history size (default per path)")
    parser.add_argument("--html", type=Path, help="also write one HTML profile per path here")
    parser.add_argument(
        "--interval",
        type=float,
        default=INTERVAL_S,
        help=f"sampling interval in seconds (default {INTERVAL_S}); the samples are kept in "
        "memory with the collector paused, so a coarser one bounds a run on a busy machine",
    )
    args = parser.parse_args(argv)
    unknown = [name for name in args.paths if name not in PATHS]
    if unknown:
        parser.error(f"unknown path {', '.join(unknown)}; choose from {', '.join(PATHS)}")
    quiet_adk_pairing_logs()
    for name in args.paths or list(PATHS):
        title = PATHS[name][0]
        profiler = profile_path(name, args.size, args.interval)
        print(f"\n== {name}: {title}")
        print(profiler.output_text(unicode=True, color=False, show_all=False))
        if args.html:
            args.html.mkdir(parents=True, exist_ok=True)
            (args.html / f"{name}.html").write_text(profiler.output_html())
    return 0


if __name__ == "__main__":
    sys.exit(main())
