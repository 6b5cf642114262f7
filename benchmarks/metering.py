"""The decorator's own CPU time, measured without putting a clock on the wall-clock rounds.

Wall-clock ratios on a store that fsyncs or hands work to a thread vary by
±30% from one call to the next, which hides a 2% difference. Thread CPU time
does not: a `Stopwatch` between the decorator and the store adds up the CPU
time used inside the store, so the decorator's own time is the rest. Reading
the thread clock is a system call, so only one round in `METER_EVERY` is
metered, and the wall-clock figures come from the others.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable
from typing import Any

from backends import Backend
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import BaseSessionService, ListSessionsResponse
from google.adk.sessions.session import Session
from timing import Comparison

Row = dict[str, Any]


class Stopwatch(BaseSessionService):
    """Forwards to a store and adds up the CPU time its calls use on this thread.

    The metered decorator wraps a stopwatch around the store, so that the CPU
    time the decorator itself uses per call is the thread's CPU time for the
    whole call minus what was used inside the store. Thread CPU time leaves out
    waiting (disk, network, the store's worker threads), which makes it steady
    where wall-clock time on a store that fsyncs or hands work to a thread
    varies by ±30% from one call to the next and hides a 2% difference.

    Reading the thread clock is a system call (0.6-3 µs here, four per call),
    so metered calls are kept out of the wall-clock comparison: see
    `is_metered_round`.
    """

    def __init__(self, inner: BaseSessionService) -> None:
        self.inner = inner
        self.inside_cpu_ns = 0

    async def create_session(self, **kwargs: Any) -> Session:
        return await self.inner.create_session(**kwargs)

    async def get_session(self, **kwargs: Any) -> Session | None:
        start = time.thread_time_ns()
        try:
            return await self.inner.get_session(**kwargs)
        finally:
            self.inside_cpu_ns += time.thread_time_ns() - start

    async def list_sessions(self, **kwargs: Any) -> ListSessionsResponse:
        return await self.inner.list_sessions(**kwargs)

    async def delete_session(self, **kwargs: Any) -> None:
        await self.inner.delete_session(**kwargs)

    async def append_event(self, session: Session, event: Event) -> Event:
        start = time.thread_time_ns()
        try:
            return await self.inner.append_event(session, event)
        finally:
            self.inside_cpu_ns += time.thread_time_ns() - start

    async def own_cpu_ns(self, call: Callable[[], Any]) -> tuple[Any, int]:
        """Awaits `call()` and returns its result and the CPU time spent outside the store."""
        self.inside_cpu_ns = 0
        start = time.thread_time_ns()
        result = await call()
        return result, time.thread_time_ns() - start - self.inside_cpu_ns


#: One round in this many times the metered decorator instead of the plain one.
#: 5 is coprime with the four-event append cycle, so every event kind is
#: metered (and compared) equally often.
METER_EVERY = 5


def is_metered_round(index: int) -> bool:
    """Whether round `index` measures the decorator's CPU time rather than wall time.

    The wall-clock comparison uses only the other rounds, in which the
    decorator wraps the bare store exactly as an application would have it:
    the stopwatch's clock reads would otherwise count against the decorator
    (a few percent of a 150 µs in-memory append).
    """
    return index % METER_EVERY == METER_EVERY - 1


def with_metered_rounds(wall_rounds: int) -> int:
    """Rounds to run so that `wall_rounds` of them are timed by wall clock."""
    return wall_rounds + math.ceil(wall_rounds / (METER_EVERY - 1))


def wall_rounds(comparison: Comparison) -> Comparison:
    """The rounds timed by wall clock: every round but the metered ones."""
    return comparison.only(lambda i: not is_metered_round(i))


def comparison_row(comparison: Comparison, own_cpu_ns: dict[int, int]) -> Row:
    """The wall-clock figures of the plain rounds, and the CPU figure of the metered ones."""
    wall = wall_rounds(comparison)
    row: Row = wall.figures()
    # Only recorded rounds count: warm-up rounds may have been metered too.
    cpu = sorted(own_cpu_ns[i] for i in comparison.indices if is_metered_round(i))
    if cpu:
        row["own_cpu_ns"] = float(cpu[len(cpu) // 2])
        row["metered_rounds"] = len(cpu)
        row["cpu_ratio"] = 1 + row["own_cpu_ns"] / wall.unwrapped_median_ns
    return row


def plain_or_metered(
    plain: Callable[[int], Awaitable[object]],
    metered: Callable[[int], Awaitable[int]],
    own_cpu_ns: dict[int, int],
) -> Callable[[int], Awaitable[None]]:
    """The wrapped side of a comparison, round by round.

    `plain(i)` runs on wall-clock rounds; on metered rounds `metered(i)` runs
    instead and returns the decorator's own CPU time, kept in `own_cpu_ns[i]`.
    """

    async def call(index: int) -> None:
        if is_metered_round(index):
            own_cpu_ns[index] = await metered(index)
        else:
            await plain(index)

    return call


def cell_row(
    backend: Backend,
    size: int,
    health: str,
    synthetic: int,
    comparison: Comparison,
    own_cpu_ns: dict[int, int],
    **extra: Any,
) -> Row:
    """One results row: what was timed, and the figures of its comparison."""
    return {
        "backend": backend.name,
        "label": backend.label,
        "size": size,
        "health": health,
        **extra,
        "synthetic": synthetic,
        **comparison_row(comparison, own_cpu_ns),
    }
