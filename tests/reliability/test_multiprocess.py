"""Three worker processes on the same PostgreSQL sessions, killed with SIGKILL as they go.

Each worker is a forked process (ADK already imported) running a wrapped
Runner with `PairingPlugin` and the seeded turns of `load` on sessions picked
at random from a pool all workers share, two sessions at a time. Before each
stretch of turns it reads the session through its decorator, whose analysis
cache resumes from what the same process read before while the other
processes append, and compares that view with a rebuild: `repaired_events`
over the stored history read right after (a read raced by another process's
append is counted apart, not compared). Every `TURNS_BETWEEN_KILLS` turns one
worker, picked by the seed, is killed with SIGKILL wherever it is (in a turn,
a tool, a store call) and a fresh one takes its place. At the end the
survivors are killed too, and this process reads every session from a cold
decorator, then again after each of two more turns, resumed from its cache.

Proven: every cached view equals its rebuild, every request the models
received (view + plugin) passes all four provider rules, and nothing
synthetic reaches the store. Errors the workers meet (another process
appended first) are printed, not asserted: the store raises them with or
without the decorator. Shown to fail: with the cache's resume not walking
the new events, 12 of the 18 final reads differ from their rebuilds.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import random
import signal
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from adk_pairing import PairingPlugin, is_synthetic, repaired_events
from tests.conftest import require_server
from tests.integration.conftest import make_spec
from tests.integration.support.backends import (
    Backend,
    assert_nothing_synthetic_stored,
    open_backend,
)
from tests.integration.support.scenario import (
    USER_ID,
    Harness,
    assert_every_rule_holds,
    event_signature,
)

from .load import (
    INTENT_WEIGHTS,
    LoadFigures,
    PolicyScript,
    drive_session,
    keep_out_of_the_rule_table,
    violations_by_rule,
)

pytestmark = pytest.mark.postgres

WORKERS = 3
SESSIONS = 6
LANES_PER_WORKER = 2
#: A worker is killed each time the workers together have finished this many
#: more turns, `KILLS` times; then all are killed. The run is bounded by work,
#: not time, so a busy machine is slower but does the same; `MAX_SECONDS` only
#: keeps a stuck run from hanging the suite.
TURNS_BETWEEN_KILLS = int(os.environ.get("RELIABILITY_MP_TURNS", "15"))
KILLS = 4
MAX_SECONDS = 240.0
SEED = 4242
#: No ``hang`` turns: a SIGKILL is the interruption here. With sessions shared
#: between processes, a model may read another process's newer message and
#: call ``hang`` for it, in a process whose driver never cancels it.
WORKER_INTENTS = {intent: w for intent, w in INTENT_WEIGHTS.items() if intent != "hang"}


async def _check_view(harness: Harness, session_id: str) -> str:
    """``equal``, ``differ`` or ``raced``: the decorator's view against a rebuild."""
    view = await harness.view(session_id)
    stored = await harness.stored_events(session_id)
    if [e.id for e in view.events if not is_synthetic(e)] != [e.id for e in stored]:
        return "raced"  # another process appended between the two reads
    rebuilt = repaired_events(stored)
    same = [event_signature(e) for e in view.events] == [event_signature(e) for e in rebuilt]
    return "equal" if same else "differ"


def _read_logs(logs: list[Path]) -> dict[str, Counter[str]]:
    """Everything the workers logged, summed: view checks, turns, errors, broken rules."""
    tally: dict[str, Counter[str]] = defaultdict(Counter)
    for log in logs:
        lines = log.read_text().splitlines() if log.exists() else []  # killed before it began
        for line in lines:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # the line a SIGKILL cut short
            for name, value in record.items():
                if isinstance(value, dict):
                    tally[name].update(value)
                elif isinstance(value, str):
                    tally[name][value] += 1
                else:
                    tally[name][name] += value
    return tally


def _worker(spec: dict[str, Any], session_ids: list[str], seed: int, out: str) -> None:
    """A worker process: turns and view checks on random sessions until killed."""

    checked = [0]  # requests of this worker already counted

    busy: set[str] = set()  # a session has one turn at a time within a process

    async def lane(harness: Harness, rng: random.Random, log: Any) -> None:
        while True:
            session_id = rng.choice([s for s in session_ids if s not in busy])
            busy.add(session_id)
            log({"check": await _check_view(harness, session_id)})
            figures = LoadFigures()
            await drive_session(
                harness, session_id, rng, rng.randint(1, 3), figures, WORKER_INTENTS
            )
            busy.discard(session_id)
            requests = harness.script.requests
            broken = violations_by_rule(requests[checked[0] :])
            checked[0] = len(requests)
            log({"turns": figures.turns, "errors": dict(figures.errors), "broken": broken})

    async def main() -> None:
        backend = await open_backend({**spec, "cleanup": False})
        harness = Harness.build(backend, wrapped=True, plugins=[PairingPlugin()])
        harness.script.steps = PolicyScript()
        with open(out, "a", buffering=1) as stream:

            def log(record: dict[str, Any]) -> None:
                stream.write(json.dumps(record) + "\n")

            log({"ready": True})
            await asyncio.gather(
                *(lane(harness, random.Random(seed * 31 + n), log) for n in range(LANES_PER_WORKER))
            )

    asyncio.run(main())


@pytest.fixture
def shared_spec(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    require_server("PostgreSQL", "127.0.0.1", 5432)
    return make_spec("db-postgres", request, tmp_path)


async def _create_sessions(spec: dict[str, Any]) -> list[str]:
    backend = await open_backend(spec)
    try:
        ids = [f"{spec['session_prefix']}-{n}" for n in range(SESSIONS)]
        for session_id in ids:
            await backend.service.create_session(
                app_name=spec["app_name"], user_id=USER_ID, session_id=session_id
            )
        return ids
    finally:
        await backend.close()


async def _final_checks(
    spec: dict[str, Any], session_ids: list[str]
) -> tuple[Counter[str], Harness, str]:
    """Each session read from a cold decorator, then after each of two more turns,
    resumed from the cache over the turn's events: a turn cut off in its tool
    (a new unanswered call) and a plain one (its request carries the
    placeholder, checked with the plugin on). And the raw rows."""
    backend: Backend = await open_backend(spec)
    try:
        harness = Harness.build(backend, wrapped=True, plugins=[PairingPlugin()])
        harness.script.steps = PolicyScript()
        outcomes: Counter[str] = Counter()

        async def check_every_session() -> None:
            for session_id in session_ids:
                outcomes[await _check_view(harness, session_id)] += 1

        await check_every_session()  # cold
        for session_id in session_ids:
            await harness.interrupted_turn(session_id, f"[hang:final:{session_id}]")
        await check_every_session()  # resumed over a new unanswered call
        for session_id in session_ids:
            await harness.turn(session_id, "are you there? [say:again:-]")
        await check_every_session()  # resumed over a turn whose request had its placeholder
        keep_out_of_the_rule_table(harness.script.requests)
        return outcomes, harness, await backend.raw_storage_text()
    finally:
        await backend.close()


def test_workers_killed_with_sigkill_keep_cached_views_equal_to_rebuilds(
    shared_spec: dict[str, Any],
    tmp_path: Path,
    figures: Callable[[str], None],
) -> None:
    session_ids = asyncio.run(_create_sessions(shared_spec))
    context = multiprocessing.get_context("fork")
    rng = random.Random(SEED)
    logs: list[Path] = []
    workers: list[Any] = []

    def start() -> Any:
        log = tmp_path / f"worker-{len(logs)}.jsonl"
        logs.append(log)
        process = context.Process(
            target=_worker, args=(shared_spec, session_ids, rng.randrange(2**31), str(log))
        )
        process.start()
        return process

    kills = 0
    began = time.monotonic()
    try:
        workers = [start() for _ in range(WORKERS)]
        next_kill_at = TURNS_BETWEEN_KILLS
        while kills < KILLS and time.monotonic() - began < MAX_SECONDS:
            time.sleep(0.2)
            if _read_logs(logs)["turns"]["turns"] < next_kill_at:
                continue
            next_kill_at += TURNS_BETWEEN_KILLS
            victim = rng.randrange(WORKERS)
            os.kill(workers[victim].pid, signal.SIGKILL)
            workers[victim].join()
            kills += 1
            workers[victim] = start()
    finally:
        for process in workers:
            if process.is_alive():
                os.kill(process.pid, signal.SIGKILL)
                kills += 1
            process.join()
    seconds = time.monotonic() - began

    tally = _read_logs(logs)
    checks, errors, broken = tally["check"], tally["errors"], tally["broken"]
    final, harness, raw = asyncio.run(_final_checks(shared_spec, session_ids))
    figures(
        f"{WORKERS} workers x {LANES_PER_WORKER} lanes on {SESSIONS} shared PostgreSQL sessions "
        f"for {seconds:.0f} s: {len(logs)} processes started ({tally['ready']['ready']} ready), "
        f"{kills} SIGKILLs, {tally['turns']['turns']} turns finished"
    )
    figures(
        f"cached view vs rebuild in the workers: {dict(checks)}; afterwards (cold, then "
        f"resumed after an interrupted and a plain turn): {dict(final)}"
    )
    figures(f"worker requests breaking each rule (view + plugin): {dict(broken)}")
    figures(
        f"two more turns on each session afterwards: {len(harness.script.requests)} requests, "
        f"breaking each rule {dict(violations_by_rule(harness.script.requests))}"
    )
    figures(f"worker errors: {sum(errors.values())}")
    for error, count in errors.most_common(3):
        figures(f"worker error x{count}: {error}")
    assert checks["differ"] == 0 and final["differ"] == 0
    assert checks["equal"] > 0 and final["equal"] == 3 * SESSIONS
    assert not +broken, f"requests with view + plugin broke a provider's rule: {broken}"
    assert_every_rule_holds(harness.script)
    assert_nothing_synthetic_stored(raw)
