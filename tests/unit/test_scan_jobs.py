"""`--jobs`' split of a scan: the workers' shards cover the scan's sessions exactly once."""

from __future__ import annotations

from adk_pairing.cli._direct.base import Shard
from adk_pairing.cli._jobs import worker_shard
from adk_pairing.cli._scan_report import sum_reports

KEYS = [("shop", f"user-{n % 7}", f"s-{n}") for n in range(2_000)]


def _covered(shard: Shard) -> set[tuple[str, str, str]]:
    return {key for key in KEYS if shard.covers(*key)}


def test_the_workers_of_a_whole_scan_cover_every_session_once() -> None:
    parts = [_covered(worker_shard(None, j, 3)) for j in range(3)]
    assert sum(len(p) for p in parts) == len(KEYS)
    assert set().union(*parts) == set(KEYS)
    assert all(parts)


def test_the_workers_of_a_shard_cover_that_shard_once() -> None:
    for index in range(3):
        outer = Shard(index, 3)
        parts = [_covered(worker_shard(outer, j, 4)) for j in range(4)]
        assert sum(len(p) for p in parts) == len(_covered(outer))
        assert set().union(*parts) == _covered(outer)


def _report(apps: list[str], per_app: dict[str, int], partial: bool = False) -> dict[str, object]:
    counts = {
        "sessions_scanned": sum(per_app.values()),
        "healthy_sessions": sum(per_app.values()),
        "sessions_with_missing": 0,
        "sessions_with_pending": 0,
        "missing_calls": 0,
        "pending_calls": 0,
        "unreadable_sessions": 0,
    }
    return {
        **counts,
        "store": "s",
        "apps": apps,
        "user": None,
        "read_only": "yes",
        "reader": "direct",
        "fallback_reason": None,
        "since": None,
        "until": None,
        "mode": "fast",
        "partial": partial,
        "per_app": {app: {**counts, "sessions_scanned": n} for app, n in per_app.items()},
        "unreadable": [],
        "findings": [],
    }


def test_a_stopped_worker_makes_the_sum_partial_and_apps_are_those_met() -> None:
    summed = sum_reports([_report(["a"], {"a": 2}), _report(["a", "b"], {"a": 1, "b": 1}, True)])
    assert summed.partial is True
    assert summed.sessions_scanned == 4
    assert summed.apps == ["a", "b"]
    assert summed.per_app["a"].sessions_scanned == 3
