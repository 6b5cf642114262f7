"""What checking an irregular history's view costs (`adk_pairing.rules.builder_check`),
vs unwrapped.

Usage: ``.venv/bin/python benchmarks/irregular_sessions.py [--events N] [--rounds N] [--json]``

A history is irregular when ADK's request builder could misplace a placeholder
in it (a call id reused while the earlier call with it is open, and the other
shapes `adk_pairing.ledger` names). While such a session has unanswered
calls, every read checks the view with two runs of ADK's own request builder
per agent, and every append rebuilds the view and checks it again. A regular
session pays none of that. Three sessions of ``--events`` events on ADK's
``SqliteSessionService`` (a file in a temporary directory), each read and
appended to through the decorator and without it, in interleaved rounds:

- ``regular, 1% unanswered``: `workloads.realistic_history` with broken turns;
- ``irregular, unanswered``: the same, plus a last turn whose model calls
  ``call_1`` twice in one event and gets no answer (ADK never writes this; a
  model that numbers its calls per turn, interrupted, does);
- ``irregular, all answered``: the same shape, answered, so nothing to check.

Each figure is the median [q1, q3] of per-round ratios wrapped ÷ unwrapped
(benchmarks/timing.py explains why), for a warm ``get_session`` (the analysis
is cached; the proof is not) and for ``append_event`` of a user message.
Nothing here passes or fails on speed; the figures are in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from google.adk.events.event import Event  # noqa: E402
from google.adk.sessions.sqlite_session_service import SqliteSessionService  # noqa: E402
from google.genai import types  # noqa: E402
from settings import quiet_adk_pairing_logs  # noqa: E402
from timing import quartiles  # noqa: E402
from workloads import AGENT, Clock, realistic_history, user_text_event  # noqa: E402

from adk_pairing import PairingSessionService  # noqa: E402
from adk_pairing.ledger import build_ledger  # noqa: E402

APP, USER = "bench", "u"


def _reused_id_turn(answered: bool) -> list[Event]:
    """A model event calling ``call_1`` twice in one event, answered or not."""
    calls = [
        types.Part(function_call=types.FunctionCall(id="call_1", name="lookup", args={"n": n}))
        for n in range(2)
    ]
    turn = [
        user_text_event(Clock(start=time.time() - 1), "inv-reused"),
        Event(
            invocation_id="inv-reused",
            author=AGENT,
            content=types.Content(role="model", parts=calls),
        ),
    ]
    if answered:
        response = types.FunctionResponse(id="call_1", name="lookup", response={"ok": True})
        turn.append(
            Event(
                invocation_id="inv-reused",
                author=AGENT,
                content=types.Content(role="user", parts=[types.Part(function_response=response)]),
            )
        )
    return turn


def histories(size: int) -> dict[str, list[Event]]:
    return {
        "regular, 1% unanswered": realistic_history(size, broken=True),
        "irregular, unanswered": realistic_history(size, broken=True) + _reused_id_turn(False),
        "irregular, all answered": realistic_history(size) + _reused_id_turn(True),
    }


async def _timed(call: Any) -> int:
    gc.disable()
    try:
        started = time.perf_counter_ns()
        await call()
        return time.perf_counter_ns() - started
    finally:
        gc.enable()


async def measure(name: str, events: list[Event], rounds: int, seed: int) -> dict[str, Any]:
    chooser = random.Random(seed)
    clock = Clock(start=time.time())  # after every stored event
    ledger = build_ledger(events)
    with tempfile.TemporaryDirectory() as workdir:
        store = SqliteSessionService(str(Path(workdir) / "s.db"))
        wrapped = PairingSessionService(store)
        sessions = {}
        for variant in ("wrapped", "unwrapped"):
            session = await store.create_session(app_name=APP, user_id=USER)
            for event in events:
                await store.append_event(session, event)
            sessions[variant] = session.id
        services = {"wrapped": wrapped, "unwrapped": store}

        def read(variant: str) -> Any:
            return lambda: services[variant].get_session(
                app_name=APP, user_id=USER, session_id=sessions[variant]
            )

        views = {v: await read(v)() for v in services}  # warm: the analysis is cached
        read_ratios: list[float] = []
        append_ratios: list[float] = []
        for index in range(rounds):
            order = ["wrapped", "unwrapped"]
            chooser.shuffle(order)
            times = {v: await _timed(read(v)) for v in order}
            read_ratios.append(times["wrapped"] / times["unwrapped"])
            chooser.shuffle(order)
            times = {}
            for variant in order:
                event = user_text_event(clock, f"inv-append-{index}", index)
                times[variant] = await _timed(
                    lambda v=variant, e=event: services[v].append_event(views[v], e)
                )
            append_ratios.append(times["wrapped"] / times["unwrapped"])
        await wrapped.close()
    return {
        "history": name,
        "events": len(events),
        "irregular": ledger.irregular,
        "unanswered": sum(len(calls) for calls in ledger.open_calls.values()),
        "get_session wrapped/unwrapped": quartiles(read_ratios),
        "append_event wrapped/unwrapped": quartiles(append_ratios),
    }


async def main_async(size: int, rounds: int) -> list[dict[str, Any]]:
    return [
        await measure(name, events, rounds, seed)
        for seed, (name, events) in enumerate(histories(size).items())
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    quiet_adk_pairing_logs()
    rows = asyncio.run(main_async(args.events, args.rounds))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("median [q1, q3] of per-round ratios, wrapped ÷ unwrapped, SqliteSessionService")
    for row in rows:

        def fmt(key: str, row: dict[str, Any] = row) -> str:
            q1, median, q3 = row[key]
            return f"{median:.2f} [{q1:.2f}, {q3:.2f}]"

        print(
            f"{row['history']:<26} {row['events']:>5} events, {row['unanswered']} unanswered: "
            f"get_session {fmt('get_session wrapped/unwrapped')}  "
            f"append_event {fmt('append_event wrapped/unwrapped')}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
