"""The benchmark suites: get_session, append_event, the pure core, memory (and turns).

Each suite returns plain dict rows (what `report` renders and ``--json``
dumps). Before timing anything, every suite checks that the decorator really
produced a repaired view with the expected number of synthetic events: a
wrapper that silently fell back to the stored session would otherwise look
free.
"""

from __future__ import annotations

import asyncio
import gc
import random
import time
import tracemalloc
from collections.abc import Callable
from itertools import islice
from typing import Any

from backends import Backend, open_backend
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from metering import (
    Row,
    Stopwatch,
    cell_row,
    plain_or_metered,
    wall_rounds,
    with_metered_rounds,
)
from request_pass import bench_request_pass
from settings import Settings, quiet_adk_pairing_logs
from timing import Comparison, interleave, projected_seconds, timed_without_collector
from turn_cost import bench_turn_cost
from turns import bench_turn
from workloads import (
    APP,
    CACHE_SIZE_BY_READ,
    CORE_SHAPES,
    HEALTHS,
    TURN_KINDS,
    USER,
    Clock,
    realistic_history,
    turn_cycle,
    unanswered_call_count,
)

from adk_pairing import PairedSession, PairingSessionService
from adk_pairing.core.placeholders import is_synthetic
from adk_pairing.core.repair import repaired_events
from adk_pairing.ledger import analyze, build_ledger, live_event_mask


def _check_view(view: Session | None, stored_len: int, synthetic: int, where: str) -> None:
    if not isinstance(view, PairedSession):
        raise RuntimeError(f"{where}: the decorator did not return a repaired view")
    found = sum(1 for e in view.events if is_synthetic(e))
    if found != synthetic or len(view.events) != stored_len + synthetic:
        raise RuntimeError(
            f"{where}: view has {found} synthetic events of {len(view.events)}; "
            f"expected {synthetic} of {stored_len + synthetic}"
        )


async def _seeded(backend: Backend, size: int, health: str) -> tuple[str, int]:
    """A stored session of `size` realistic events; (its id, its unanswered calls)."""
    events = realistic_history(size, broken=health == "broken")
    return await backend.seeded_session(APP, USER, events), unanswered_call_count(events)


# -- get_session ---------------------------------------------------------------


async def bench_get_session(backend: Backend, settings: Settings, progress: Callable) -> list[Row]:
    inner = backend.service
    stopwatch = Stopwatch(inner)
    # Per read: the decorator as applications use it, and one over the stopwatch.
    services = {
        read: (
            PairingSessionService(inner, analysis_cache_size=size),
            PairingSessionService(stopwatch, analysis_cache_size=size),
        )
        for read, size in CACHE_SIZE_BY_READ.items()
    }
    rows: list[Row] = []
    for size in settings.sizes:
        for health in HEALTHS:
            session_id, synthetic = await _seeded(backend, size, health)
            for read, (wrapped, metered) in services.items():
                where = f"get_session {backend.name} {size} {health} {read}"
                # For a warm service this first read is the one it resumes from.
                for service in (wrapped, metered):
                    view = await service.get_session(
                        app_name=APP, user_id=USER, session_id=session_id
                    )
                    _check_view(view, size, synthetic, where)

                own_cpu: dict[int, int] = {}

                async def read_wrapped(
                    _: int, sid: str = session_id, wrapped: PairingSessionService = wrapped
                ) -> object:
                    return await wrapped.get_session(app_name=APP, user_id=USER, session_id=sid)

                async def read_metered(
                    _: int, sid: str = session_id, metered: PairingSessionService = metered
                ) -> int:
                    _view, cpu_ns = await stopwatch.own_cpu_ns(
                        lambda: metered.get_session(app_name=APP, user_id=USER, session_id=sid)
                    )
                    return cpu_ns

                async def read_unwrapped(_: int, sid: str = session_id) -> object:
                    return await inner.get_session(app_name=APP, user_id=USER, session_id=sid)

                comparison = await interleave(
                    plain_or_metered(read_wrapped, read_metered, own_cpu),
                    read_unwrapped,
                    max_rounds=settings.max_rounds,
                    budget_s=settings.budget_s,
                    min_rounds=with_metered_rounds(settings.min_rounds_for(size)),
                    # A 10,000-event read is ~0.3-0.8 s: one warm-up pair is plenty.
                    warmup=settings.warmup if size <= 1_000 else 1,
                )
                row = cell_row(backend, size, health, synthetic, comparison, own_cpu, read=read)
                if read == "cold":
                    # The floor bounds a walk of every event; a warm read walks none.
                    row["walk_ns"] = await _walk_floor(inner, session_id)
                rows.append(row)
                progress("get_session", row)
            await inner.delete_session(app_name=APP, user_id=USER, session_id=session_id)
    return rows


def _walk(events: list[Event]) -> None:
    for event in events:
        actions = event.actions
        if actions is not None:
            _ = actions.rewind_before_invocation_id
        content = event.content
        if content is not None:
            for part in content.parts or ():
                _ = part.function_call, part.function_response


async def _walk_floor(inner: BaseSessionService, session_id: str, repeats: int = 3) -> float:
    """Median ns to merely read every event's parts and rewind marker once.

    Any repair has to look at every call and response, so this is a lower
    bound on what a decorator can add to `get_session`. It is measured on a
    session just returned by the store, as the decorator sees it: freshly
    deserialised objects, mostly not in the CPU caches.
    """
    times: list[int] = []
    for _ in range(repeats):
        stored = await inner.get_session(app_name=APP, user_id=USER, session_id=session_id)
        times.append(timed_without_collector(time.perf_counter_ns, _walk, stored.events))
        del stored
    return sorted(times)[len(times) // 2]


# -- append_event --------------------------------------------------------------


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


async def bench_append_event(backend: Backend, settings: Settings, progress: Callable) -> list[Row]:
    """Appends the same kind of event to a view and to an unwrapped session, in turns.

    Two sessions start with equal histories (the same shape, their own ids)
    and each round appends the next event of a user / call / response /
    answer cycle to both, so both sides append the same kinds of event and the
    history stays within a few hundred events of its seeded size. Halfway,
    the sessions swap roles (at a turn boundary), so whatever the store does
    differently for one session's rows (pages, index splits) falls on both
    sides equally.
    """
    inner = backend.service
    stopwatch = Stopwatch(inner)
    wrapped = PairingSessionService(inner)
    # A view is not tied to the service that made it: metered rounds append to
    # the same view through a decorator over the stopwatch.
    metered = PairingSessionService(stopwatch)
    rows: list[Row] = []
    cycle = len(TURN_KINDS)
    phase_max = _round_up(max(cycle, settings.max_rounds // 2), cycle)
    for size in settings.append_sizes:
        for health in HEALTHS:
            first_id, synthetic = await _seeded(backend, size, health)
            second_id, _ = await _seeded(backend, size, health)
            where = f"append_event {backend.name} {size} {health}"
            # Seeds are stamped a day back; appends from now on, so stores that
            # order by timestamp read them back in append order.
            # The two streams draw from one clock in turn, so event i of either
            # stream is older than event i + 1 of the other: sessions swap
            # streams halfway and must still read back in append order.
            now = Clock(start=time.time(), step=0.001)
            needed = 2 * (cycle + phase_max)
            pairs = list(islice(zip(turn_cycle(now), turn_cycle(now), strict=True), needed))
            wrapped_events = [w for w, _ in pairs]
            unwrapped_events = [u for _, u in pairs]
            del pairs
            held = dict.fromkeys((first_id, second_id), size)
            comparison = Comparison()
            own_cpu: dict[int, int] = {}
            index = 0
            for view_id, plain_id in ((first_id, second_id), (second_id, first_id)):
                view = await wrapped.get_session(app_name=APP, user_id=USER, session_id=view_id)
                stored = await inner.get_session(app_name=APP, user_id=USER, session_id=plain_id)
                _check_view(view, held[view_id], synthetic, where)

                async def append_wrapped(
                    i: int, v: Session = view, ev: list = wrapped_events
                ) -> object:
                    return await wrapped.append_event(v, ev[i])

                async def append_metered(
                    i: int, v: Session = view, ev: list = wrapped_events
                ) -> int:
                    _appended, cpu_ns = await stopwatch.own_cpu_ns(
                        lambda: metered.append_event(v, ev[i])
                    )
                    return cpu_ns

                async def append_unwrapped(
                    i: int, s: Session = stored, ev: list = unwrapped_events
                ) -> object:
                    return await inner.append_event(s, ev[i])

                phase = await interleave(
                    plain_or_metered(append_wrapped, append_metered, own_cpu),
                    append_unwrapped,
                    max_rounds=phase_max,
                    budget_s=settings.budget_s / 2,
                    min_rounds=_round_up(
                        with_metered_rounds(max(1, settings.min_rounds_for(size) // 2)), cycle
                    ),
                    # Whole turns only: each phase starts and ends at a turn boundary.
                    warmup=cycle,
                    start_index=index,
                    round_multiple=cycle,
                )
                comparison.extend(phase)
                index += cycle + phase.rounds
                for sid in (view_id, plain_id):
                    held[sid] += cycle + phase.rounds
                # The view must still equal a fresh read, and the store must hold
                # exactly what was appended, no synthetic event among it.
                fresh = await wrapped.get_session(app_name=APP, user_id=USER, session_id=view_id)
                stored_now = await inner.get_session(app_name=APP, user_id=USER, session_id=view_id)
                if len(stored_now.events) != held[view_id]:
                    raise RuntimeError(f"{where}: the store holds {len(stored_now.events)} events")
                _check_view(fresh, held[view_id], synthetic, where + " (fresh read)")
                if [e.id for e in fresh.events] != [e.id for e in view.events]:
                    raise RuntimeError(f"{where}: the incrementally updated view drifted")
            row = cell_row(backend, size, health, synthetic, comparison, own_cpu)
            row["ratio_by_kind"] = {
                kind: wall_rounds(comparison).ratio_where(lambda i, k=k: i % cycle == k)
                for k, kind in enumerate(TURN_KINDS)
            }
            rows.append(row)
            progress("append_event", row)
            for sid in (first_id, second_id):
                await inner.delete_session(app_name=APP, user_id=USER, session_id=sid)
    return rows


# -- the pure core -------------------------------------------------------------


class _ListSessionService(BaseSessionService):
    """A store that only keeps session objects in a dict, O(1) per append.

    Used to time the decorator's incremental view maintenance on its own:
    ADK's InMemorySessionService scans the whole history on every append
    (its duplicate-event check), which would hide the decorator's cost.
    """

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        session = Session(
            id=session_id or f"s{len(self._sessions)}",
            app_name=app_name,
            user_id=user_id,
            state=state or {},
        )
        self._sessions[session.id] = session
        return session

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        return self._sessions.get(session_id)

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        return ListSessionsResponse(sessions=list(self._sessions.values()))

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        self._sessions.pop(session_id, None)


PATHS = ("view", "analyze", "incremental")


class _CollectorPaused:
    """Collects, then pauses the cyclic collector for one timed run.

    The core figures are meant to show how the algorithm scales. With the
    collector running, a full collection of a 100k-event heap (~0.3 s) lands
    inside some runs and not others, which says when CPython collects, not
    how the core grows. The store benchmarks keep the collector running.
    """

    def __enter__(self) -> None:
        gc.collect()
        gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        gc.enable()


def _median_time(fn: Callable[[], object], *, budget_s: float, max_rounds: int) -> float:
    """Median seconds of `fn` over as many runs as fit the budget (at least three)."""
    times: list[float] = []
    deadline = time.perf_counter() + budget_s
    while len(times) < 3 or (len(times) < max_rounds and time.perf_counter() < deadline):
        with _CollectorPaused():
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]


def _view_path(events: list[Event]) -> None:
    """What `get_session` adds: the ledger, then the repaired event list."""
    ledger = build_ledger(events, live_event_mask(events))
    repaired_events(events, ledger=ledger)


async def _incremental(events: list[Event]) -> float:
    """Seconds to append `events` one by one through the decorator (checked against a read)."""
    service = PairingSessionService(_ListSessionService())
    created = await service.create_session(app_name=APP, user_id=USER)
    view = await service.get_session(app_name=APP, user_id=USER, session_id=created.id)
    with _CollectorPaused():
        start = time.perf_counter()
        for event in events:
            await service.append_event(view, event)
        elapsed = time.perf_counter() - start
    fresh = await service.get_session(app_name=APP, user_id=USER, session_id=created.id)
    if [e.id for e in fresh.events] != [e.id for e in view.events]:
        raise RuntimeError("incremental view drifted from a fresh read")
    await service.delete_session(app_name=APP, user_id=USER, session_id=created.id)
    return elapsed


async def bench_core(settings: Settings, progress: Callable) -> list[Row]:
    """Times the pure core per shape and size; skips a path before a runaway size."""
    rows: list[Row] = []
    for shape, build in CORE_SHAPES.items():
        history: list[Row] = []
        for size in settings.core_sizes:
            row: Row = {"shape": shape, "size": size}
            events = build(size)
            report = analyze(events)
            row.update(
                events=len(events),
                parts=sum(len(e.content.parts) for e in events if e.content and e.content.parts),
                open_calls=sum(1 for c in report.calls if not c.answered),
            )
            del report
            timed: dict[str, Callable[[], object]] = {
                "view": lambda ev=events: _view_path(ev),
                "analyze": lambda ev=events: analyze(ev),
            }
            for path in PATHS:
                projected = projected_seconds(history, path, size)
                if projected > settings.core_limit_s:
                    row[f"{path}_skipped"] = f"skipped: projected {projected:,.0f} s"
                    continue
                if path == "incremental":
                    # Median of up to three runs, as long as they stay short.
                    runs = [await _incremental(events)]
                    while len(runs) < 3 and sum(runs) < settings.budget_s:
                        runs.append(await _incremental(events))
                    row["incremental_s"] = sorted(runs)[len(runs) // 2]
                else:
                    row[f"{path}_s"] = _median_time(
                        timed[path], budget_s=settings.budget_s, max_rounds=50
                    )
                previous = next((r for r in reversed(history) if f"{path}_s" in r), None)
                if previous is not None:
                    row[f"{path}_growth"] = row[f"{path}_s"] / previous[f"{path}_s"]
                    row[f"{path}_size_growth"] = size / previous["size"]
            rows.append(row)
            history.append(row)
            progress("core", row)
            del events
    return rows


# -- memory ----------------------------------------------------------------------


async def _traced(call: Callable) -> tuple[int, int, object]:
    """(peak, retained) bytes allocated by awaiting `call()`, and its result."""
    gc.collect()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    result = await call()
    current, peak = tracemalloc.get_traced_memory()
    return peak - base, current - base, result


async def _cache_entry_bytes(inner: BaseSessionService, session_id: str) -> int:
    """Bytes a first read through a new decorator leaves behind once its view is gone.

    That is the session's entry in the analysis cache. The same read without
    the decorator is subtracted, for whatever the store itself keeps.
    """
    service = PairingSessionService(inner)

    async def read_through_decorator() -> None:
        await service.get_session(app_name=APP, user_id=USER, session_id=session_id)

    async def read_bare() -> None:
        await inner.get_session(app_name=APP, user_id=USER, session_id=session_id)

    _, bare, _ = await _traced(read_bare)
    _, decorated, _ = await _traced(read_through_decorator)
    return decorated - bare


async def bench_memory(backend: Backend, settings: Settings, progress: Callable) -> list[Row]:
    """Peak and retained memory of reading a session, bare and through the decorator.

    The view is read cold (``analysis_cache_size=0``): a walk of the whole
    history is the most a read allocates. What the analysis cache keeps per
    session is measured apart, as what a first read leaves behind once its
    view is dropped.
    """
    wrapped = PairingSessionService(backend.service, analysis_cache_size=0)
    inner = backend.service
    rows: list[Row] = []
    for size in settings.memory_sizes:
        for health in HEALTHS:
            session_id, synthetic = await _seeded(backend, size, health)
            # Warm both paths (imports, prepared statements, pools) untraced.
            await wrapped.get_session(app_name=APP, user_id=USER, session_id=session_id)
            await inner.get_session(app_name=APP, user_id=USER, session_id=session_id)
            stored_peaks, stored_kept, view_peaks, view_kept = [], [], [], []
            order = random.Random(size)
            tracemalloc.start()
            try:
                for _ in range(3 if size <= 1_000 else 1):
                    pair = [("stored", inner), ("view", wrapped)]
                    order.shuffle(pair)
                    for kind, service in pair:
                        peak, kept, result = await _traced(
                            lambda s=service, sid=session_id: s.get_session(
                                app_name=APP, user_id=USER, session_id=sid
                            )
                        )
                        if kind == "view":
                            _check_view(
                                result,
                                size,
                                synthetic,
                                f"memory {backend.name} {size} {health}",
                            )
                            view_peaks.append(peak)
                            view_kept.append(kept)
                        else:
                            stored_peaks.append(peak)
                            stored_kept.append(kept)
                        del result
                cache_entry = await _cache_entry_bytes(inner, session_id)
            finally:
                tracemalloc.stop()
            stored_peak = sorted(stored_peaks)[len(stored_peaks) // 2]
            view_peak = sorted(view_peaks)[len(view_peaks) // 2]
            stored_retained = sorted(stored_kept)[len(stored_kept) // 2]
            view_retained = sorted(view_kept)[len(view_kept) // 2]
            row = {
                "backend": backend.name,
                "label": backend.label,
                "size": size,
                "health": health,
                "stored_peak": stored_peak,
                "view_peak": view_peak,
                "stored_retained": stored_retained,
                "view_retained": view_retained,
                "peak_ratio": view_peak / stored_peak,
                "retained_ratio": view_retained / stored_retained,
                "cache_entry": cache_entry,
            }
            rows.append(row)
            progress("memory", row)
            await inner.delete_session(app_name=APP, user_id=USER, session_id=session_id)
    return rows


# -- everything ------------------------------------------------------------------


async def run_all(settings: Settings, sections: tuple[str, ...], progress: Callable) -> dict:
    quiet_adk_pairing_logs()
    # Importing ADK leaves ~1M long-lived objects; every full collection walks
    # them (~70 ms here). Freezing them keeps the collectors the harness runs
    # between measurements cheap, and keeps a full collection of module
    # objects from landing at random in a timed call (on either side).
    gc.collect()
    gc.freeze()
    results: dict[str, Any] = {name: [] for name in sections}
    elapsed = dict.fromkeys(sections, 0.0)
    suites = {
        "get_session": bench_get_session,
        "append_event": bench_append_event,
        "memory": bench_memory,
        "turn": bench_turn,
    }
    store_sections = [s for s in sections if s in suites]
    for name in settings.backends:
        wanted = [s for s in store_sections if s != "memory" or name in settings.memory_backends]
        if not wanted:
            continue
        async with open_backend(name, pg_database=settings.pg_database) as backend:
            backend.append_seed_limit = settings.append_seed_limit
            for section in wanted:
                start = time.perf_counter()
                results[section] += await suites[section](backend, settings, progress)
                elapsed[section] += time.perf_counter() - start
    if "request" in sections:
        start = time.perf_counter()
        results["request"] = await bench_request_pass(settings, progress)
        elapsed["request"] = time.perf_counter() - start
    if "core" in sections:
        start = time.perf_counter()
        results["core"] = await bench_core(settings, progress)
        elapsed["core"] = time.perf_counter() - start
    if "turn_cost" in sections:
        start = time.perf_counter()
        results["turn_cost"] = await bench_turn_cost(settings, progress)
        elapsed["turn_cost"] = time.perf_counter() - start
    results["elapsed_s"] = elapsed
    return results


def run(settings: Settings, sections: tuple[str, ...], progress: Callable) -> dict:
    return asyncio.run(run_all(settings, sections, progress))
