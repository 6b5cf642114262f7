"""What live metrics cost per `get_session`: nothing without a meter provider.

Usage: ``.venv/bin/python benchmarks/metrics_cost.py [--rounds N] [--json]``

Four variants read the same session in interleaved rounds (a seeded coin
picks the order) from an instant store: ADK's in-memory store with its
deep copy on every read left out (`InstantStore` hands back the stored
session), so a read is almost all decorator and any cost of ours shows as
much as it ever can. Real stores take 0.1-10 ms more per read.

- ``unwrapped``: the store alone;
- ``no hook``: the decorator with ``live_metrics`` replaced by a C call
  returning None (as if the metrics code were not there);
- ``shipped``: the decorator as shipped, no meter provider configured;
- ``recording``: the decorator recording into the OpenTelemetry SDK
  (`MeterProvider` with an in-memory reader).

The figures are medians of per-round ratios (benchmarks/timing.py explains
why): ``shipped ÷ no hook`` is the cost of the metrics with nothing
configured, and should be 1.00; ``recording ÷ shipped`` is what recording
costs; ``shipped ÷ unwrapped`` puts both against the read itself. Nothing
here passes or fails on speed.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import random
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from google.adk.events.event import Event  # noqa: E402
from google.adk.sessions.in_memory_session_service import InMemorySessionService  # noqa: E402
from google.genai import types  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from timing import quartiles  # noqa: E402

import adk_pairing.shells.service as service_module  # noqa: E402
from adk_pairing import PairingSessionService  # noqa: E402
from adk_pairing.shells import metrics  # noqa: E402

VARIANTS = ("unwrapped", "no hook", "shipped", "recording")
APP, USER = "bench", "u"


class InstantStore(InMemorySessionService):
    """ADK's in-memory store without the deep copy of the session on every read."""

    async def get_session(self, *, app_name: str, user_id: str, session_id: str, config=None):
        return self.sessions[app_name][user_id][session_id]


def _event(index: int, part: types.Part, role: str) -> Event:
    return Event(
        invocation_id=f"inv-{index}",
        author="assistant" if role == "model" else "user",
        timestamp=1_700_000_000.0 + index,
        content=types.Content(role=role, parts=[part]),
    )


def history(size: int, *, open_call: bool) -> list[Event]:
    """`size` events of answered calls; with `open_call`, the last call has no result."""
    events = []
    for index in range(size):
        call_id = f"c{index // 2}"
        if index % 2 == 0:
            part = types.Part(function_call=types.FunctionCall(id=call_id, name="f", args={}))
            events.append(_event(index, part, "model"))
        elif not (open_call and index == size - 1):
            response = types.FunctionResponse(id=call_id, name="f", response={"ok": True})
            events.append(_event(index, types.Part(function_response=response), "user"))
        else:
            events.append(_event(index, types.Part(text="next"), "user"))
    return events


async def measure(size: int, open_call: bool, rounds: int, seed: int) -> dict[str, Any]:
    store = InstantStore()
    session = await store.create_session(app_name=APP, user_id=USER, session_id="s")
    for event in history(size, open_call=open_call):
        await store.append_event(session, event)
    wrapped = PairingSessionService(store)
    reader = InMemoryMetricReader()
    recording = metrics.LiveMetrics(MeterProvider(metric_readers=[reader]))
    hooks = {
        "no hook": type(None),  # NoneType() is None, a C call
        "shipped": metrics.live_metrics,
        "recording": lambda: recording,
    }
    assert metrics.live_metrics() is None, "a meter provider is configured in this process"

    async def read(variant: str) -> int:
        service = store if variant == "unwrapped" else wrapped
        if variant in hooks:
            service_module.live_metrics = hooks[variant]
        started = time.perf_counter_ns()
        await service.get_session(app_name=APP, user_id=USER, session_id="s")
        return time.perf_counter_ns() - started

    coin = random.Random(seed)
    timings: dict[str, list[int]] = {variant: [] for variant in VARIANTS}
    gc.collect()
    gc.disable()
    try:
        for round_index in range(rounds + rounds // 10):
            order = list(VARIANTS)
            coin.shuffle(order)
            row = {variant: await read(variant) for variant in order}
            if round_index >= rounds // 10:  # the first tenth warms up
                for variant, elapsed in row.items():
                    timings[variant].append(elapsed)
            if round_index % 50 == 0:
                gc.collect()
    finally:
        gc.enable()
        service_module.live_metrics = metrics.live_metrics

    def ratio(top: str, bottom: str) -> list[float]:
        values = [t / b for t, b in zip(timings[top], timings[bottom], strict=True) if b > 0]
        q1, median, q3 = quartiles(values)
        return [round(median, 4), round(q1, 4), round(q3, 4)]

    return {
        "events": size,
        "open_call": open_call,
        "rounds": rounds,
        "median_us": {v: round(quartiles([t / 1e3 for t in timings[v]])[1], 2) for v in VARIANTS},
        "shipped/no_hook": ratio("shipped", "no hook"),
        "recording/shipped": ratio("recording", "shipped"),
        "shipped/unwrapped": ratio("shipped", "unwrapped"),
        "recorded_metrics": sorted(
            m.name
            for rm in reader.get_metrics_data().resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
        ),
    }


async def main_async(rounds: int) -> list[dict[str, Any]]:
    cases = [(10, True, rounds), (100, True, rounds), (1000, False, rounds)]
    return [
        await measure(size, open_call, case_rounds, seed=index)
        for index, (size, open_call, case_rounds) in enumerate(cases)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    logging.getLogger("adk_pairing").setLevel(logging.ERROR)  # the once-per-call warning
    rows = asyncio.run(main_async(args.rounds))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("ratios: median [q1, q3] of per-round ratios; times: median µs per get_session")
    for row in rows:
        print(
            f"{row['events']:>5} events{' + open call' if row['open_call'] else ''}: "
            f"shipped÷no-hook {row['shipped/no_hook']}  "
            f"recording÷shipped {row['recording/shipped']}  "
            f"shipped÷unwrapped {row['shipped/unwrapped']}  "
            f"µs {row['median_us']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
