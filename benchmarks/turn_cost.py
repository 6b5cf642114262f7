"""Turn cost: the process CPU of whole `Runner` turns on long, broken and irregular sessions.

Run it as a section of ``benchmarks/run.py`` from the repository root::

    .venv/bin/python benchmarks/run.py --sections turn_cost --output /tmp/turn_cost.md
    .venv/bin/python benchmarks/run.py --sections turn_cost --quick     # seconds, prints only

Against another worktree's ``adk_pairing`` (this harness, that source; the
results name the source they imported)::

    PYTHONPATH=../other/src:. .venv/bin/python benchmarks/run.py --sections turn_cost \\
        --turn-cost-sizes 1000,3000 --turn-cost-shapes reused-interrupted,parallel-open \\
        --output /tmp/other.md --json /tmp/other.json

A missing call stays missing in the store, so what its repair costs is paid on
every later turn of the session. This suite measures that per turn, as a user
pays it: a real `Runner` over a real store (ADK's `SqliteSessionService` by
default), an agent with one tool and a scripted model that calls the tool, then
answers (4 events and 2 model requests per turn), on a session seeded directly
in the store with one of `TURN_SHAPES`. Three setups, each on its own copy of
the session: unwrapped, the decorator with `PairingPlugin` ("wrapped +
plugin"), and the plugin over the bare store ("plugin only"). Every round runs
one turn of each setup in a seeded random order (interleaved, so a neighbour's
load falls on all three alike) and records the process CPU time of each turn
(``time.process_time_ns``, so the store's worker thread counts; the collector
paused inside the turn, see `timing`). A cell's figures are the medians over
its rounds of the per-round ratio to unwrapped and of the per-round added CPU.

Before anything is timed, one checked turn per setup records what the model
was sent: each request's calls must be answered by the next content and each
result must answer the previous content's calls (the strictest providers'
rule), and the turn's last request must carry every call the store holds. A
setup that fails is still timed; its check column says what failed. The
unwrapped setup is held to nothing (it shows what ADK sends by itself).

A size whose turns would run past ``--turn-cost-limit`` seconds each, judged
from the shape's smaller sizes, is skipped and says so. Nothing here passes or
fails on speed: the targets are reported as met or missed.
"""

from __future__ import annotations

import random
import sys
import time
from collections import Counter
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from backends import Backend, open_backend
from google.adk.events.event import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import BaseSessionService
from google.genai import types
from metering import Row
from pydantic import PrivateAttr
from settings import Settings, quiet_logs
from timing import (
    Comparison,
    awaited_without_collector,
    collect_if_due,
    format_duration,
    projected_seconds,
    quartiles,
)
from turns import _run_turn, _runner
from workloads import (
    APP,
    CORE_SHAPES,
    TOOL,
    USER,
    Clock,
    parallel_interrupted_turn,
    realistic_history,
    usage_metadata,
)

import adk_pairing
from adk_pairing import PairingPlugin, PairingSessionService

#: Setup id -> what the tables call it. The first is the baseline of every ratio.
SETUPS = {
    "unwrapped": "unwrapped",
    "wrapped_plugin": "wrapped + plugin",
    "plugin_only": "plugin only",
}
BASELINE = "unwrapped"
#: The targets of issue 33, per setup other than unwrapped.
RATIO_TARGET = 1.05
RATIO_TARGET_SIZES = (1_000, 3_000)
GROWTH_TARGET = 1.5
GROWTH_SIZES = (1_000, 10_000)
#: The sizes a full run measures.
TURN_COST_SIZES = (100, 1_000, 3_000, 10_000)


@dataclass(frozen=True)
class TurnShape:
    """A stored history, and the id the scripted model gives the call of each new turn."""

    label: str
    build: Callable[[int], list[Event]]
    #: None: the model sends no id and ADK gives the call a fresh ``adk-`` id.
    call_id: str | None = None


def _old_turn(size: int) -> int:
    """The turn a tenth of the way into a history of `size` events: long before the new turns."""
    return size // 4 // 10


def _reused_id(_turn: int) -> str:
    return "call_0"


def _parallel_open(size: int) -> list[Event]:
    """`size` realistic events, one old turn of which called 20 tools at once and died."""
    clock = Clock()
    head = realistic_history(4 * _old_turn(size), clock=clock)
    parallel = parallel_interrupted_turn(clock, 20, turn=_old_turn(size))
    return head + parallel + realistic_history(size - len(head) - len(parallel), clock=clock)


#: Shape id (for ``--turn-cost-shapes``) -> shape. The first five are issue 33's
#: table; the ``core-`` ones are `workloads.CORE_SHAPES` (the pure-core suite's
#: adversarial histories, whose size counts function parts) seeded as sessions.
TURN_SHAPES: dict[str, TurnShape] = {
    "healthy": TurnShape("healthy", lambda n: realistic_history(n)),
    "interrupted": TurnShape(
        "one old interrupted call, unique ids",
        lambda n: realistic_history(n, interrupted={_old_turn(n)}),
    ),
    "reused-interrupted": TurnShape(
        "ids reused per turn (call_0), one old call_0 interrupted",
        lambda n: realistic_history(n, interrupted={_old_turn(n)}, call_id_for=_reused_id),
        call_id="call_0",
    ),
    "reused-answered": TurnShape(
        "ids reused per turn (call_0), all answered",
        lambda n: realistic_history(n, call_id_for=_reused_id),
        call_id="call_0",
    ),
    "parallel-open": TurnShape(
        "20 parallel calls answered one event each, one left open", _parallel_open
    ),
    **{
        shape_id: TurnShape(
            f"core: {name}",
            CORE_SHAPES[name],
            # That history's calls are all call_1; the new turns' calls keep to it.
            call_id="call_1" if shape_id == "core-reused" else None,
        )
        for shape_id, name in (
            ("core-realistic", "realistic (1% unanswered)"),
            ("core-reused", "reused ids (call_1)"),
            ("core-parallel-merged", "parallel calls, merged answer"),
            ("core-parallel-each", "parallel calls, one answer/event"),
            ("core-pending-run", "long run of pending calls"),
            ("core-idless", "id-less calls, same name"),
        )
    },
}


# -- the scripted model and what it was sent -----------------------------------


@dataclass(frozen=True)
class RequestPairing:
    """What one request carried: its calls, and how many calls or results go unpaired."""

    calls: int
    unpaired: int


def _key(part: types.FunctionCall | types.FunctionResponse) -> tuple[str | None, str | None]:
    # ADK strips its own ``adk-`` ids from the request, so id-less parts pair by name.
    return (part.id, part.name)


def request_pairing(contents: Sequence[types.Content]) -> RequestPairing:
    """Counts the calls of `contents` and the calls and results the strict rule leaves unpaired.

    The rule: the content after one with calls answers exactly those calls, and
    a result answers a call of the content right before it. Written here
    independently of adk_pairing, so the check does not trust what it checks.
    """
    calls = unpaired = 0
    asked: Counter[tuple[str | None, str | None]] = Counter()
    for content in contents:
        parts = content.parts or ()
        answered = Counter(_key(p.function_response) for p in parts if p.function_response)
        unpaired += (asked - answered).total() + (answered - asked).total()
        asked = Counter(_key(p.function_call) for p in parts if p.function_call)
        calls += asked.total()
    return RequestPairing(calls, unpaired + asked.total())


class ToolThenAnswerModel(BaseLlm):
    """Calls the agent's tool when the request ends on the user's words, answers after the result.

    While inspecting (only in the checked turn), it records `request_pairing`
    of every request; timed turns skip that walk, which would add the same
    history-sized cost to every setup and flatten the ratios.
    """

    model: str = "scripted-tool-then-answer"
    #: The id the model gives its calls (None: ADK assigns one).
    call_id: str | None = None
    _inspecting: bool = PrivateAttr(default=False)
    _seen: list[RequestPairing] = PrivateAttr(default_factory=list)
    _calls_made: int = PrivateAttr(default=0)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        if self._inspecting:
            self._seen.append(request_pairing(llm_request.contents))
        contents = llm_request.contents
        last = contents[-1].parts[-1] if contents and contents[-1].parts else None
        if last is not None and last.function_response is not None:
            part = types.Part(text="Iberia and the Benelux grew through larger orders.")
        else:
            self._calls_made += 1
            call = types.FunctionCall(
                id=self.call_id, name=TOOL, args={"query": f"regional growth #{self._calls_made}"}
            )
            part = types.Part(function_call=call)
        yield LlmResponse(
            content=types.Content(role="model", parts=[part]), usage_metadata=usage_metadata()
        )


def _stored_calls(events: list[Event]) -> int:
    return sum(
        1 for e in events for p in (e.content.parts if e.content else None) or () if p.function_call
    )


async def _checked_turn(
    runner: Runner, model: ToolThenAnswerModel, store: BaseSessionService, session_id: str
) -> tuple[int, str]:
    """Runs one turn inspecting its requests: (its process CPU ns, "ok" or what failed)."""
    model._inspecting, model._seen = True, []
    try:
        cpu_ns = await awaited_without_collector(
            time.process_time_ns, _run_turn, runner, session_id
        )
    finally:
        model._inspecting = False
    stored = await store.get_session(app_name=APP, user_id=USER, session_id=session_id)
    assert stored is not None
    problems = []
    if len(model._seen) != 2:
        problems.append(f"{len(model._seen)} model requests, not 2")
    if model._seen:
        missing = _stored_calls(stored.events) - model._seen[-1].calls
        if missing:
            problems.append(f"{missing} of the store's calls missing from the request")
        unpaired = max(seen.unpaired for seen in model._seen)
        if unpaired:
            problems.append(f"{unpaired} calls or results unpaired")
    return cpu_ns, "; ".join(problems) or "ok"


# -- the suite -------------------------------------------------------------------


def _setups(
    store: BaseSessionService,
) -> dict[str, tuple[BaseSessionService, tuple[BasePlugin, ...]]]:
    """Each setup's session service and plugins, fresh for every cell (no state carried over)."""
    return {
        "unwrapped": (store, ()),
        "wrapped_plugin": (PairingSessionService(store), (PairingPlugin(),)),
        "plugin_only": (store, (PairingPlugin(),)),
    }


async def _cell(
    backend: Backend, shape_id: str, size: int, turns: int, order: random.Random
) -> Row:
    """One shape at one size: a checked turn, then `turns` interleaved rounds, per setup."""
    shape = TURN_SHAPES[shape_id]
    store = backend.service
    model = ToolThenAnswerModel(call_id=shape.call_id)
    sessions: dict[str, str] = {}
    events = 0
    for setup in SETUPS:
        history = shape.build(size)
        events = len(history)
        sessions[setup] = await backend.seeded_session(APP, USER, history)
        del history
    runners = {
        setup: _runner(model, service, plugins)
        for setup, (service, plugins) in _setups(store).items()
    }
    first_turn_ns: dict[str, int] = {}
    checks: dict[str, str] = {}
    for setup in SETUPS:
        first_turn_ns[setup], checks[setup] = await _checked_turn(
            runners[setup], model, store, sessions[setup]
        )
        collect_if_due()
    cpu_ns: dict[str, list[int]] = {setup: [] for setup in SETUPS}
    for _ in range(turns):
        for setup in order.sample(list(SETUPS), k=len(SETUPS)):
            cpu_ns[setup].append(
                await awaited_without_collector(
                    time.process_time_ns, _run_turn, runners[setup], sessions[setup]
                )
            )
            collect_if_due()
    for session_id in sessions.values():
        await store.delete_session(app_name=APP, user_id=USER, session_id=session_id)
    row: Row = {
        "store": backend.name,
        "label": backend.label,
        "shape": shape_id,
        "shape_label": shape.label,
        "size": size,
        "events": events,
        "turns": turns,
        "cpu_ns": cpu_ns,
        "first_turn_ns": first_turn_ns,
        "checks": checks,
        "unwrapped_ns": quartiles([float(ns) for ns in cpu_ns[BASELINE]])[1],
        "setups": {},
    }
    for setup in SETUPS:
        if setup == BASELINE:
            continue
        pairs = Comparison(cpu_ns[setup], cpu_ns[BASELINE], list(range(turns)))
        q1, q3 = pairs.ratio_iqr
        row["setups"][setup] = {
            "ratio": pairs.ratio,
            "ratio_q1": q1,
            "ratio_q3": q3,
            "median_ns": pairs.wrapped_median_ns,
            "added_ns": pairs.added_ns,
        }
    return row


def adk_pairing_source() -> str:
    """Where the adk_pairing being measured was imported from (its ``src`` directory)."""
    return str(Path(adk_pairing.__file__).resolve().parent.parent)


async def bench_turn_cost(settings: Settings, progress: Callable) -> list[Row]:
    """Every shape of `settings.turn_cost_shapes` at every size, on every turn-cost store."""
    print(f"  turn_cost: adk_pairing from {adk_pairing_source()}", file=sys.stderr)
    # ADK warns on every request whose unanswered calls its builder drops; printed, the
    # warnings bury the progress lines. Every setup that triggers one still pays for it.
    quiet_logs("google_adk.google.adk.flows.llm_flows.tools._rearranger")
    rows: list[Row] = []
    order = random.Random(20261204)
    for name in settings.turn_cost_backends:
        async with open_backend(name, pg_database=settings.pg_database) as backend:
            # Seed every history in bulk, however small: the turns are what is timed.
            backend.append_seed_limit = 0
            history: dict[str, list[Row]] = {shape: [] for shape in settings.turn_cost_shapes}
            for size in settings.turn_cost_sizes:
                for shape_id in settings.turn_cost_shapes:
                    projected = projected_seconds(history[shape_id], "turn", size)
                    if projected > settings.turn_cost_limit_s:
                        row = {
                            "store": name,
                            "label": backend.label,
                            "shape": shape_id,
                            "shape_label": TURN_SHAPES[shape_id].label,
                            "size": size,
                            "skipped": f"skipped: a turn projected at {projected:,.0f} s",
                        }
                    else:
                        row = await _cell(backend, shape_id, size, settings.turn_cost_turns, order)
                        slowest = max(
                            quartiles([float(ns) for ns in cpu])[1]
                            for cpu in row["cpu_ns"].values()
                        )
                        history[shape_id].append({"size": size, "turn_s": slowest / 1e9})
                    rows.append(row)
                    progress("turn_cost", row)
    return rows


# -- figures and tables ----------------------------------------------------------


def _ratio_cell(figures: dict[str, float]) -> str:
    return f"{figures['ratio']:.2f} [{figures['ratio_q1']:.2f}–{figures['ratio_q3']:.2f}]"


def turn_cost_table(rows: list[Row]) -> tuple[list[str], list[list[str]]]:
    """Per store, shape and size: unwrapped CPU per turn, each setup's ratio and added CPU."""
    others = [s for s in SETUPS if s != BASELINE]
    header = [
        "store",
        "history",
        "size",
        "events",
        "turns",
        "unwrapped CPU/turn",
        *(f"{SETUPS[s]} ÷ unwrapped" for s in others),
        *(f"{SETUPS[s]} adds/turn" for s in others),
        "request check",
    ]
    body = []
    for r in rows:
        cells = [r["store"], r["shape_label"], f"{r['size']:,}"]
        if "skipped" in r:
            body.append(cells + [r["skipped"]] + ["-"] * (len(header) - 4))
            continue
        failed = {SETUPS[s]: v for s, v in r["checks"].items() if s != BASELINE and v != "ok"}
        body.append(
            cells
            + [f"{r['events']:,}", str(r["turns"]), format_duration(r["unwrapped_ns"])]
            + [_ratio_cell(r["setups"][s]) for s in others]
            + [format_duration(r["setups"][s]["added_ns"]) for s in others]
            + ["; ".join(f"{k}: {v}" for k, v in failed.items()) or "ok"]
        )
    return header, body


def added_growth(rows: list[Row]) -> list[Row]:
    """Per store, shape and setup: the added CPU per turn at each size, and its growth.

    The growth is added(top) ÷ added(base): base is 1,000 events when measured
    (else the smallest size), top the largest size measured above it. A cost
    proportional to what a turn appends does not grow (1×); one that walks the
    history grows with it (10× from 1,000 to 10,000).
    """
    measured = [r for r in rows if "skipped" not in r]
    found: list[Row] = []
    keys = dict.fromkeys((r["store"], r["shape"]) for r in measured)
    for store, shape in keys:
        cells = sorted(
            (r for r in measured if (r["store"], r["shape"]) == (store, shape)),
            key=lambda r: r["size"],
        )
        sizes = [r["size"] for r in cells]
        base = GROWTH_SIZES[0] if GROWTH_SIZES[0] in sizes else sizes[0]
        for setup in (s for s in SETUPS if s != BASELINE):
            added = {r["size"]: r["setups"][setup]["added_ns"] for r in cells}
            above = [s for s in sizes if s > base]
            growth: float | None = None
            if above and added[base] > 0:
                growth = added[above[-1]] / added[base]
            found.append(
                {
                    "store": store,
                    "shape": shape,
                    "shape_label": cells[0]["shape_label"],
                    "setup": setup,
                    "added_ns": added,
                    "base": base,
                    "top": above[-1] if above else None,
                    "growth": growth,
                }
            )
    return found


def turn_cost_growth_table(rows: list[Row]) -> tuple[list[str], list[list[str]]]:
    """The added CPU per turn at every size, and its growth from the base size to the top one."""
    growths = added_growth(rows)
    sizes = sorted({s for g in growths for s in g["added_ns"]})
    header = ["store", "history", "setup", *(f"adds at {s:,}" for s in sizes), "growth"]
    body = []
    for g in growths:
        if g["growth"] is not None:
            growth = f"{g['growth']:.2f}× ({g['base']:,} → {g['top']:,})"
        elif g["top"] is None:
            growth = "one size only"
        else:
            growth = f"n/a (adds nothing at {g['base']:,})"
        body.append(
            [g["store"], g["shape_label"], SETUPS[g["setup"]]]
            + [format_duration(g["added_ns"][s]) if s in g["added_ns"] else "-" for s in sizes]
            + [growth]
        )
    return header, body


def turn_cost_ratios(rows: list[Row]) -> list[tuple[str, float]]:
    """Every ratio the suite computed, labelled (what run.py checks for validity)."""
    return [
        (f"turn_cost {r['store']} {r['shape']} {r['size']} {setup}", figures["ratio"])
        for r in rows
        if "skipped" not in r
        for setup, figures in r["setups"].items()
    ]


def turn_cost_targets(rows: list[Row]) -> list[tuple[str, str, bool | None]]:
    """(target, measured, met) for issue 33's two turn targets; met is None when not measured."""
    found: list[tuple[str, str, bool | None]] = []
    at_sizes = [r for r in rows if "skipped" not in r and r["size"] in RATIO_TARGET_SIZES]
    for setup in (s for s in SETUPS if s != BASELINE):
        target = (
            f"turn cost, {SETUPS[setup]} ≤ {RATIO_TARGET:.2f}× unwrapped at "
            f"{' and '.join(f'{s:,}' for s in RATIO_TARGET_SIZES)} events, every history"
        )
        if not at_sizes:
            found.append((target, "-", None))
            continue
        worst = max(at_sizes, key=lambda r: r["setups"][setup]["ratio"])
        ratio = worst["setups"][setup]["ratio"]
        measured = f"worst {ratio:.2f} ({worst['shape']}, {worst['size']:,})"
        found.append((target, measured, ratio <= RATIO_TARGET))
    growths = [
        g
        for g in added_growth(rows)
        if (g["base"], g["top"]) == GROWTH_SIZES and g["growth"] is not None
    ]
    target = (
        f"turn cost, added CPU per turn at {GROWTH_SIZES[1]:,} events ≤ "
        f"{GROWTH_TARGET}× that at {GROWTH_SIZES[0]:,}, every history"
    )
    if growths:
        worst_growth = max(growths, key=lambda g: g["growth"])
        measured = (
            f"worst {worst_growth['growth']:.2f}× ({worst_growth['shape']}, "
            f"{SETUPS[worst_growth['setup']]})"
        )
        found.append((target, measured, worst_growth["growth"] <= GROWTH_TARGET))
    else:
        found.append((target, "-", None))
    return found
