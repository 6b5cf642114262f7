"""How much work the benchmark suites do, and the log quieting they share.

A leaf of benchmarks/: every suite module imports it, and it imports none of them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass


@dataclass
class Settings:
    """How much work each suite does (``--quick`` shrinks all of it)."""

    sizes: tuple[int, ...]
    append_sizes: tuple[int, ...]
    core_sizes: tuple[int, ...]
    memory_sizes: tuple[int, ...]
    turn_sizes: tuple[int, ...]
    request_sizes: tuple[int, ...]
    backends: tuple[str, ...]
    memory_backends: tuple[str, ...]
    max_rounds: int
    budget_s: float
    min_rounds: int
    target_min_rounds: int
    warmup: int
    core_limit_s: float
    pg_database: str
    append_seed_limit: int = 100
    #: The turn-cost suite (`turn_cost`): history sizes, timed turns per setup,
    #: shape ids, stores, and the projected seconds per turn past which a size is skipped.
    turn_cost_sizes: tuple[int, ...] = (100, 1_000, 3_000, 10_000)
    turn_cost_turns: int = 5
    turn_cost_shapes: tuple[str, ...] = ()
    turn_cost_backends: tuple[str, ...] = ("sqlite",)
    turn_cost_limit_s: float = 120.0

    def min_rounds_for(self, size: int) -> int:
        """More pairs up to the 1,000-event size the targets are set at, where calls are cheap."""
        return self.target_min_rounds if size <= 1_000 else self.min_rounds


def quiet_logs(*names: str) -> None:
    """Keeps these loggers' records (still emitted, at the same cost) off the console."""
    for name in names:
        logger = logging.getLogger(name)
        logger.addHandler(logging.NullHandler())
        logger.propagate = False


def quiet_adk_pairing_logs() -> None:
    """Keeps the once-per-call "unanswered call" warnings (still emitted) off the console."""
    quiet_logs("adk_pairing")
