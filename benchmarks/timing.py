"""Interleaved wrapped/unwrapped timing and the statistics the tables print.

Machine drift (frequency scaling, a neighbour's test run on this 2-core box,
the database's own caches) moves both variants alike when they run back to
back, so every round times one wrapped and one unwrapped call, in an order a
seeded coin picks. The figure reported is the median of the per-round ratios:
a ratio of two calls made a millisecond apart is far steadier than a ratio of
two medians taken minutes apart.

The cyclic garbage collector is paused inside timed calls (as `timeit` does)
and run between pairs instead. Left running, it made the figures lie: reading
a 1,000-event session from PostgreSQL took either ~65 ms or ~105 ms depending
on whether a full collection (of SQLAlchemy's ORM reference cycles, which
both sides create) fell inside the call, and the allocation counts of the two
calls resonated so that it fell in the unwrapped call most rounds: 0.69×,
"faster when wrapped". The decorator itself creates no reference cycles (its
view, ledger and synthetic events are freed by reference counting), so
pausing the collector hides no cost it causes.
"""

from __future__ import annotations

import gc
import math
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

AsyncCall = Callable[[int], Awaitable[object]]


def quartiles(values: list[float]) -> tuple[float, float, float]:
    """(first quartile, median, third quartile); degenerate lists repeat their value."""
    if not values:
        return (math.nan, math.nan, math.nan)
    if len(values) == 1:
        return (values[0], values[0], values[0])
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return (q1, q2, q3)


@dataclass
class Comparison:
    """Paired timings of a wrapped and an unwrapped call, in nanoseconds."""

    wrapped_ns: list[int] = field(default_factory=list)
    unwrapped_ns: list[int] = field(default_factory=list)
    #: The round index each pair was called with (warm-up rounds excluded).
    indices: list[int] = field(default_factory=list)

    @property
    def rounds(self) -> int:
        return len(self.wrapped_ns)

    def extend(self, other: Comparison) -> None:
        """Adds the pairs of `other` (another phase of the same measurement)."""
        self.wrapped_ns += other.wrapped_ns
        self.unwrapped_ns += other.unwrapped_ns
        self.indices += other.indices

    @property
    def ratios(self) -> list[float]:
        return [w / u for w, u in zip(self.wrapped_ns, self.unwrapped_ns, strict=True) if u > 0]

    @property
    def ratio(self) -> float:
        """Median of the per-round wrapped ÷ unwrapped ratios (the headline figure)."""
        return quartiles(self.ratios)[1]

    @property
    def ratio_iqr(self) -> tuple[float, float]:
        q1, _, q3 = quartiles(self.ratios)
        return (q1, q3)

    def only(self, keep: Callable[[int], bool]) -> Comparison:
        """The pairs whose round index passes `keep`."""
        chosen = [
            (w, u, i)
            for w, u, i in zip(self.wrapped_ns, self.unwrapped_ns, self.indices, strict=True)
            if keep(i)
        ]
        return Comparison(
            [w for w, _, _ in chosen], [u for _, u, _ in chosen], [i for _, _, i in chosen]
        )

    def ratio_where(self, keep: Callable[[int], bool]) -> float:
        """Median ratio over the rounds whose index passes `keep` (e.g. one event kind)."""
        return self.only(keep).ratio

    @property
    def ratio_ci95(self) -> tuple[float, float]:
        """A 95% confidence interval for the median ratio (order statistics, no model).

        With n ratios, the median lies between the order statistics
        n/2 ± 0.98·√n with 95% confidence, whatever their distribution. On a
        store whose calls vary by ±30% round to round (an fsync, a thread
        handoff), this is what says whether 1.02 and 1.00 can be told apart.
        """
        ordered = sorted(self.ratios)
        n = len(ordered)
        if n == 0:
            return (math.nan, math.nan)
        half_width = 0.98 * math.sqrt(n)
        low = max(0, math.floor(n / 2 - half_width))
        high = min(n - 1, math.ceil(n / 2 + half_width))
        return (ordered[low], ordered[high])

    @property
    def wrapped_median_ns(self) -> float:
        return quartiles([float(v) for v in self.wrapped_ns])[1]

    @property
    def unwrapped_median_ns(self) -> float:
        return quartiles([float(v) for v in self.unwrapped_ns])[1]

    @property
    def added_ns(self) -> float:
        """Median per-round difference: what the decorator adds to one call."""
        diffs = [float(w - u) for w, u in zip(self.wrapped_ns, self.unwrapped_ns, strict=True)]
        return quartiles(diffs)[1]

    def figures(self) -> dict[str, float | int]:
        """The figures a results row reports for these pairs."""
        q1, q3 = self.ratio_iqr
        low, high = self.ratio_ci95
        return {
            "rounds": self.rounds,
            "wrapped_ns": self.wrapped_median_ns,
            "unwrapped_ns": self.unwrapped_median_ns,
            "added_ns": self.added_ns,
            "ratio": self.ratio,
            "ratio_q1": q1,
            "ratio_q3": q3,
            "ratio_ci_low": low,
            "ratio_ci_high": high,
        }


#: Collect between pairs once this many tracked objects were allocated since
#: the last collection. Collecting before *every* call instead walks the heap
#: each time and leaves the CPU caches cold: a 130 µs in-memory append then
#: measured 700 µs.
COLLECT_AFTER = 20_000


def timed_without_collector(
    clock: Callable[[], int], call: Callable[..., object], *args: Any
) -> int:
    """What `clock` (a ``time.*_ns`` function) advances while ``call(*args)`` runs, GC paused."""
    gc.disable()
    try:
        start = clock()
        call(*args)
        return clock() - start
    finally:
        gc.enable()


async def awaited_without_collector(
    clock: Callable[[], int], call: Callable[..., Awaitable[object]], *args: Any
) -> int:
    """What `clock` advances while ``await call(*args)`` runs, GC paused (see the module)."""
    gc.disable()
    try:
        start = clock()
        await call(*args)
        return clock() - start
    finally:
        gc.enable()


async def _timed(call: AsyncCall, round_index: int) -> int:
    return await awaited_without_collector(time.perf_counter_ns, call, round_index)


def collect_if_due() -> None:
    """Collects between timed calls once enough was allocated (`COLLECT_AFTER`)."""
    if gc.get_count()[0] > COLLECT_AFTER:
        gc.collect()


def projected_seconds(history: list[dict[str, Any]], path: str, size: int) -> float:
    """Extrapolates ``row[f"{path}_s"]`` at the previous sizes of `history` to `size`.

    The growth exponent is the one measured between the two previous sizes
    (linear when only one was measured), so a quadratic path is caught one
    size before it would run for minutes.
    """
    measured = [r for r in history if f"{path}_s" in r]
    if not measured:
        return math.inf if history else 0.0
    last = measured[-1]
    exponent = 1.0
    if len(measured) >= 2:
        before = measured[-2]
        growth = last[f"{path}_s"] / before[f"{path}_s"]
        exponent = max(1.0, math.log(growth) / math.log(last["size"] / before["size"]))
    return last[f"{path}_s"] * (size / last["size"]) ** exponent


async def interleave(
    wrapped: AsyncCall,
    unwrapped: AsyncCall,
    *,
    max_rounds: int,
    budget_s: float,
    min_rounds: int = 5,
    warmup: int = 2,
    start_index: int = 0,
    round_multiple: int = 1,
) -> Comparison:
    """Times `wrapped` and `unwrapped` in pairs.

    Runs `warmup` unrecorded pairs, then as many recorded pairs as fit in
    `budget_s` seconds (at least `min_rounds`, at most `max_rounds`, and a
    multiple of `round_multiple`). Each callable gets the round index, counted
    from `start_index`, so append benchmarks can hand each round a fresh event.
    """
    gc.collect()
    index = start_index
    for _ in range(warmup):
        await _timed(wrapped, index)
        await _timed(unwrapped, index)
        index += 1
        collect_if_due()
    result = Comparison()
    # A seeded coin decides the order of each pair: alternating strictly would
    # tie the order to the event kind in the four-event append cycle.
    coin = random.Random(20240611)
    deadline = time.perf_counter() + budget_s
    while result.rounds % round_multiple or (
        result.rounds < max_rounds
        and (result.rounds < min_rounds or time.perf_counter() < deadline)
    ):
        if coin.random() < 0.5:
            w = await _timed(wrapped, index)
            u = await _timed(unwrapped, index)
        else:
            u = await _timed(unwrapped, index)
            w = await _timed(wrapped, index)
        result.wrapped_ns.append(w)
        result.unwrapped_ns.append(u)
        result.indices.append(index)
        index += 1
        collect_if_due()
    return result


def format_duration(ns: float) -> str:
    """A duration with a unit that keeps three significant digits readable."""
    if math.isnan(ns):
        return "n/a"
    magnitude = abs(ns)
    if magnitude < 1_000:
        return f"{ns:.0f} ns"
    if magnitude < 1_000_000:
        return f"{ns / 1_000:.1f} µs"
    if magnitude < 1_000_000_000:
        return f"{ns / 1_000_000:.2f} ms"
    return f"{ns / 1_000_000_000:.2f} s"
